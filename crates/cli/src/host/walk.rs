//! Reads the files `lbsim_topology::host::sysfs` needs from a directory tree: only the
//! directories and files its patterns name (`sysfs::descend`, `sysfs::wanted`), each file
//! capped, symlinks not followed (sysfs's `cpuN/nodeM` and `subsystem` links lead
//! elsewhere; a copy's `cpu/` and `node/` are real directories).

use std::path::Path;

use anyhow::{Context as _, bail};
use lbsim_topology::host::sysfs::{self, SysfsFiles};

use crate::budget::MachineBudget;

/// The most bytes read of one file: far above any cpulist or distance row lbsim accepts
/// (8192 CPUs, 1024 nodes).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The files under `root` that the sysfs reader reads.
///
/// # Errors
/// `root` is not a directory, holds more CPU directories than `--max-cpus`, or a file
/// cannot be read; the message names the path.
pub fn read_tree(root: &str, budget: &MachineBudget) -> anyhow::Result<SysfsFiles> {
    let top = Path::new(root);
    if !top.join("cpu").is_dir() {
        bail!(
            "{}: no such directory (sysfs:DIR takes a copy of /sys/devices/system, holding cpu/ and node/)",
            top.join("cpu").display()
        );
    }
    let mut files = SysfsFiles::new(root);
    walk(top, "", budget, &mut files)?;
    Ok(files)
}

fn walk(top: &Path, rel: &str, budget: &MachineBudget, out: &mut SysfsFiles) -> anyhow::Result<()> {
    let dir = top.join(rel);
    let mut entries: Vec<(String, std::fs::FileType)> = Vec::new();
    let listing =
        std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for e in listing {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        let ty = e
            .file_type()
            .with_context(|| format!("cannot read {}", e.path().display()))?;
        entries.push((e.file_name().to_string_lossy().into_owned(), ty));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    if rel == "cpu" {
        let nr = entries
            .iter()
            .filter(|(n, t)| {
                t.is_dir()
                    && sysfs::descend(&format!("cpu/{n}"))
                    && n.starts_with("cpu")
                    && n[3..].bytes().all(|b| b.is_ascii_digit())
            })
            .count();
        if nr > budget.max_cpus as usize {
            bail!(
                "{}: {nr} CPU directories, more than the limit of {} (--max-cpus N raises it, up to {})",
                dir.display(),
                budget.max_cpus,
                lbsim_topology::machine::MAX_CPUS
            );
        }
    }
    for (name, ty) in entries {
        let child = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if ty.is_dir() && sysfs::descend(&child) {
            walk(top, &child, budget, out)?;
        } else if ty.is_file() && sysfs::wanted(&child) {
            let path = top.join(&child);
            let text =
                read_capped(&path).with_context(|| format!("cannot read {}", path.display()))?;
            out.insert(&child, &text);
        }
    }
    Ok(())
}

fn read_capped(path: &Path) -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        bail!("larger than {MAX_FILE_BYTES} bytes");
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("not UTF-8 text"))
}
