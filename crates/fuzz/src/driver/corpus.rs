//! The seed corpus: `fuzz/corpus/<target>/*`, read in name order.

use std::path::Path;

/// The seed inputs of `target` under `root` (sorted by file name, so runs are repeatable);
/// one empty input when the directory is missing or empty.
///
/// # Errors
/// A file cannot be read.
pub fn load(root: &Path, target: &str) -> std::io::Result<Vec<Vec<u8>>> {
    let dir = root.join("fuzz/corpus").join(target);
    let mut paths: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    let mut out = paths
        .iter()
        .map(std::fs::read)
        .collect::<std::io::Result<Vec<_>>>()?;
    if out.is_empty() {
        out.push(Vec::new());
    }
    Ok(out)
}
