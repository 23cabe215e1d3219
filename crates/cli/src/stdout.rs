//! Writing a command's report to standard output: a closed pipe (`lbsim ... | head`) ends the
//! output quietly; any other failure (a full disk, `> /dev/full`) is an error saying that
//! writing standard output failed.

use std::io::{self, Write};

/// Writes `text` to standard output and flushes it.
///
/// # Errors
/// One line: `writing standard output failed: ...` with the OS error.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    finish(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

/// What a write to standard output came to: `Ok` for success or a closed pipe, else the
/// error naming standard output.
///
/// # Errors
/// `r`'s error, unless it is a closed pipe.
pub fn finish(r: io::Result<()>) -> anyhow::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::anyhow!("writing standard output failed: {e}")),
        Ok(()) => Ok(()),
    }
}

#[cfg(test)]
mod tests;
