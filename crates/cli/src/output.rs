//! Writing a file lbsim produces (`lbsim run --trace`, and any later output to a path): whole
//! or not at all, and never over an existing file unless the user passes `--force`.
//!
//! [`OutputFile::new`] checks the target before any work is done (it must not exist, unless
//! forced, and its directory must); [`OutputFile::write`] writes a temporary file beside the
//! target, flushes and syncs it, and only then moves it into place: a hard link, which fails
//! if the target appeared meanwhile, or with `--force` a rename over it. On any failure (a
//! full disk, a file-size limit, a write error of the producer) the temporary file is removed
//! and the target is left as it was.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};

/// A path lbsim will write, named by a flag.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    flag: &'static str,
    force: bool,
}

/// How the finished temporary file reached the target.
enum Placed {
    Renamed,
    Linked,
}

/// Removes the temporary file when dropped, unless it was moved into place.
struct Temp<'a>(Option<&'a Path>);

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl OutputFile {
    /// Checks that `path` (given to `flag`) can be written: it does not exist (any kind of
    /// file, a dangling symbolic link included) unless `force`, and its directory exists.
    ///
    /// # Errors
    /// One line naming the flag and the file; for an existing file, it says to pass `--force`.
    pub fn new(flag: &'static str, path: &Path, force: bool) -> anyhow::Result<OutputFile> {
        let shown = path.display();
        match path.symlink_metadata() {
            Ok(m) if m.is_dir() => bail!("{flag} {shown}: is a directory, not a file"),
            Ok(_) if !force => {
                bail!("{flag} {shown}: the file exists; pass --force to overwrite it")
            }
            _ => {}
        }
        let dir = parent(path);
        if !dir.is_dir() {
            bail!(
                "{flag} {shown}: the directory {} does not exist",
                dir.display()
            );
        }
        Ok(OutputFile {
            path: path.to_owned(),
            flag,
            force,
        })
    }

    /// The target.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the file with `produce` through a temporary file beside it, then moves it into
    /// place.
    ///
    /// # Errors
    /// One line naming the flag, the file and what failed; the target is then untouched and
    /// the temporary file removed.
    pub fn write(
        &self,
        produce: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> anyhow::Result<()> {
        let shown = self.path.display();
        let flag = self.flag;
        let (tmp, file) = self
            .create_temp()
            .with_context(|| format!("{flag} {shown}: cannot create a temporary file beside it"))?;
        let guard = Temp(Some(&tmp));
        let mut w = BufWriter::new(file);
        produce(&mut w)
            .and_then(|()| w.flush())
            .and_then(|()| w.get_ref().sync_all())
            .map_err(|e| {
                anyhow!("{flag} {shown}: writing the file failed ({e}); nothing was written")
            })?;
        drop(w);
        // Without --force a hard link places it: it never replaces a file, so one created
        // since `new` is kept. A file system without hard links gets a rename after a check.
        let placed = if self.force {
            std::fs::rename(&tmp, &self.path).map(|()| Placed::Renamed)
        } else {
            match std::fs::hard_link(&tmp, &self.path) {
                Ok(()) => Ok(Placed::Linked),
                Err(e)
                    if e.kind() != io::ErrorKind::AlreadyExists
                        && self.path.symlink_metadata().is_err() =>
                {
                    std::fs::rename(&tmp, &self.path).map(|()| Placed::Renamed)
                }
                Err(e) => Err(e),
            }
        };
        match placed {
            // Nothing is left under the temporary name.
            Ok(Placed::Renamed) => std::mem::forget(guard),
            // The guard removes the temporary name; the target keeps the data.
            Ok(Placed::Linked) => drop(guard),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => bail!(
                "{flag} {shown}: the file appeared while lbsim ran; pass --force to overwrite it"
            ),
            Err(e) => bail!("{flag} {shown}: cannot move the finished file into place: {e}"),
        }
        Ok(())
    }

    /// A new file beside the target, named after it and this process.
    fn create_temp(&self) -> io::Result<(PathBuf, std::fs::File)> {
        let name = self
            .path
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let dir = parent(&self.path);
        let mut last = None;
        for i in 0..100u32 {
            let tmp = dir.join(format!(".{name}.lbsim-tmp-{}-{i}", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
            {
                Ok(f) => return Ok((tmp, f)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
    }
}

/// The directory of `path` (`.` for a bare file name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests;
