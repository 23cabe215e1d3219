//! Runs a worker as a child process under an address-space limit (`ulimit -v`), and saves
//! the input it was running if it dies (out of memory, stack overflow, any signal).

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::worker::{EXIT_CRASH, EXIT_TIMEOUT, Summary};
use super::{replay_command, save_artifact};

/// How a worker ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran its inputs.
    Done(Summary),
    /// It found a failing input (the message names the saved file and the replay command).
    Failed(String),
}

/// Runs `exe worker ARGS...` (the worker of target `target`, writing each input to
/// `current`) with at most `mem_mb` MiB of address space.
///
/// # Errors
/// The worker cannot be started, or ended without a summary or an artifact.
pub fn run_worker(
    exe: &Path,
    root: &Path,
    target: &str,
    current: &Path,
    mem_mb: u64,
    args: &[String],
) -> Result<Outcome, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v \"$0\" && exec \"$@\"")
        .arg((mem_mb * 1024).to_string())
        .arg(exe)
        .arg("worker")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{target}: cannot start the worker: {e}"))?;
    let stderr = child.stderr.take().expect("piped");
    let forward = std::thread::spawn(move || {
        let mut kind = None;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("memory allocation of") {
                kind = Some("oom");
            } else if line.contains("overflowed its stack") {
                kind = Some("stack-overflow");
            }
            eprintln!("{line}");
        }
        kind
    });
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{target}: worker: {e}"))?;
    let kind = forward.join().unwrap_or(None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => parse_summary(&stdout)
            .map(Outcome::Done)
            .ok_or_else(|| format!("{target}: the worker printed no summary")),
        Some(EXIT_CRASH | EXIT_TIMEOUT) => Ok(Outcome::Failed(format!(
            "{target}: {}",
            stdout.lines().last().unwrap_or("failed (see above)")
        ))),
        _ => {
            // Died without reporting: an abort (out of memory, stack overflow) or a signal.
            let data = std::fs::read(current).unwrap_or_default();
            let kind = kind.unwrap_or("crash");
            let path: PathBuf = save_artifact(root, target, kind, &data)
                .map_err(|e| format!("{target}: saving the input: {e}"))?;
            Ok(Outcome::Failed(format!(
                "{target}: the worker died ({}, {kind}) on the input saved as {}; replay: {}",
                out.status,
                path.display(),
                replay_command(target, &path)
            )))
        }
    }
}

/// The worker's last stdout line: `execs=N accepted=N pool=N`.
pub fn parse_summary(stdout: &str) -> Option<Summary> {
    let line = stdout.lines().rev().find(|l| l.starts_with("execs="))?;
    let mut v = line
        .split_whitespace()
        .map(|kv| kv.split_once('=').and_then(|(_, v)| v.parse::<u64>().ok()));
    Some(Summary {
        execs: v.next()??,
        accepted: v.next()??,
        pool: v.next()?? as usize,
    })
}

/// The line [`parse_summary`] reads.
pub fn summary_line(s: &Summary) -> String {
    format!("execs={} accepted={} pool={}", s.execs, s.accepted, s.pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_round_trips() {
        let s = Summary {
            execs: 2000,
            accepted: 17,
            pool: 25,
        };
        assert_eq!(
            parse_summary(&format!("noise\n{}\n", summary_line(&s))),
            Some(s)
        );
        assert_eq!(parse_summary("execs=x"), None);
    }
}
