//! The stable-toolchain fuzz driver: seeded byte mutations of the committed seed corpus
//! (`fuzz/corpus/<target>/`), run in a worker process under an address-space limit, with
//! panics caught, a per-input time limit, and every failing input saved under
//! `fuzz/artifacts/<target>/` with the command that replays it.
//!
//! [`supervise`] starts one [`worker`] per target as a child process (`ulimit -v`), so that an
//! abort (out of memory, stack overflow) is caught too: the worker writes each input to a
//! file before running it, and the supervisor saves that file when the worker dies.

pub mod corpus;
pub mod mutate;
pub mod rng;
pub mod supervise;
pub mod worker;

use std::path::{Path, PathBuf};

/// The replay command of a saved input.
pub fn replay_command(target: &str, file: &Path) -> String {
    format!(
        "cargo xtask fuzz --target {target} --replay {}",
        file.display()
    )
}

/// Saves `data` as `fuzz/artifacts/<target>/<kind>-<hash>` under `root`; returns the path.
///
/// # Errors
/// The directory or file cannot be written.
pub fn save_artifact(
    root: &Path,
    target: &str,
    kind: &str,
    data: &[u8],
) -> std::io::Result<PathBuf> {
    let dir = root.join("fuzz/artifacts").join(target);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{kind}-{:016x}", rng::hash(data)));
    std::fs::write(&path, data)?;
    Ok(path)
}
