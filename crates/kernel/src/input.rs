//! Reading a file a user names (an rt-app workload, a machine, a scenario): at most
//! [`MAX_INPUT_BYTES`], so that `/dev/zero` or a huge file is refused with an error naming it
//! instead of exhausting memory.

use std::io::Read as _;
use std::path::Path;

/// The largest input file lbsim reads: 16 MiB, far above any machine, scenario or rt-app file
/// (the largest example is a few KiB).
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// Why an input file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The file cannot be opened or read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The file holds more than the limit.
    #[error("the file is larger than lbsim's {limit}-byte limit for input files")]
    TooLarge {
        /// The limit, [`MAX_INPUT_BYTES`].
        limit: u64,
    },
}

/// The bytes of `path`, if it holds at most [`MAX_INPUT_BYTES`].
///
/// # Errors
/// The OS error, or [`InputError::TooLarge`] after reading one byte past the limit (a
/// character device such as `/dev/zero` has no size to check first).
pub fn read_capped(path: &Path) -> Result<Vec<u8>, InputError> {
    read_at_most(path, MAX_INPUT_BYTES)
}

fn read_at_most(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge { limit });
    }
    Ok(bytes)
}

/// The text of `path`, if it holds at most [`MAX_INPUT_BYTES`] of UTF-8.
///
/// # Errors
/// Those of [`read_capped`], and [`std::io::ErrorKind::InvalidData`] for text that is not
/// UTF-8.
pub fn read_to_string_capped(path: &Path) -> Result<String, InputError> {
    String::from_utf8(read_capped(path)?).map_err(|_| {
        InputError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })
}

#[cfg(test)]
mod tests;
