//! The soak: random scenarios ([`crate::draw`]: every preset, random machines up to 256
//! CPUs, random features, tunables, kernel profiles, cpuidle on or off) through the `lbsim`
//! binary under `--check`, one child process per scenario with a time limit, so a crash or a
//! hang is caught. Any failure prints the `lbsim run ...` command that replays it.

// The soak measures wall-clock time (its length, each run's time limit): it is tooling.
#![allow(clippy::disallowed_methods)]

use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::draw::{Bounds, Scenario, scenario};
use crate::driver::rng::Rng;

/// The soak's bounds.
pub const SOAK_BOUNDS: Bounds = Bounds {
    max_cpus: 256,
    max_threads: 64,
    presets: true,
    duration_ms: (5, 50),
};

/// What a soak does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `lbsim` binary (a release build).
    pub lbsim: PathBuf,
    /// How long to go on.
    pub time: Duration,
    /// The seed of the scenarios.
    pub seed: u64,
    /// Longest one run may take, in CPU time (default 300 s: `--check` on a 256-CPU machine
    /// with tens of tbench clients takes a minute or two, a hang takes for ever).
    pub timeout: Duration,
}

/// How one run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It ran.
    Ok,
    /// lbsim refused the scenario with a one-line error (a feature the profile lacks, ...).
    Refused(String),
    /// An invariant violation, a crash, a hang or a malformed error: a bug.
    Failed(String),
}

/// What a soak found.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Scenarios run.
    pub runs: u64,
    /// Of them, refused by lbsim.
    pub refused: u64,
    /// The failures, with their replay commands.
    pub failures: Vec<String>,
}

/// Runs scenarios until `plan.time` has passed.
pub fn soak(plan: &Plan) -> Summary {
    let start = Instant::now();
    let mut rng = Rng::new(plan.seed);
    let mut out = Summary::default();
    while start.elapsed() < plan.time {
        let s = scenario(&mut rng, &SOAK_BOUNDS);
        out.runs += 1;
        match run_one(plan, &s) {
            Verdict::Ok => {}
            Verdict::Refused(_) => out.refused += 1,
            Verdict::Failed(why) => {
                let line = format!("{why}\n  replay: {}", s.command());
                eprintln!("soak: FAILED: {line}");
                out.failures.push(line);
            }
        }
        if out.runs % 10 == 0 {
            eprintln!(
                "soak: {} runs in {:.0}s, {} refused, {} failed",
                out.runs,
                start.elapsed().as_secs_f64(),
                out.refused,
                out.failures.len()
            );
        }
    }
    out
}

/// Runs `s` in a child `lbsim` and judges how it ended.
pub fn run_one(plan: &Plan, s: &Scenario) -> Verdict {
    let mut child = match Command::new(&plan.lbsim)
        .args(s.args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Verdict::Failed(format!("cannot start {}: {e}", plan.lbsim.display())),
    };
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    // The limit is on the run's CPU time (`/proc/PID/schedstat`; wall time where that file
    // is missing), so that a slow `--check` run on a busy machine is not taken for a hang,
    // and a hang (time never advancing, CPU always busy) still is.
    let schedstat = format!("/proc/{}/schedstat", child.id());
    let ran = || {
        std::fs::read_to_string(&schedstat)
            .ok()
            .and_then(|s| {
                s.split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
            })
            .map_or_else(|| start.elapsed(), Duration::from_nanos)
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if ran() > plan.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Verdict::Failed(format!("waiting for lbsim: {e}")),
        }
    };
    let text = reader.join().unwrap_or_default();
    judge(status.map(|s| s.code()), &text, plan.timeout)
}

/// The verdict on a run that exited with `code` (`None`: killed after `timeout`; `Some(None)`:
/// ended by a signal) and printed `stderr`.
pub fn judge(code: Option<Option<i32>>, stderr: &str, timeout: Duration) -> Verdict {
    let last = stderr.lines().last().unwrap_or("").to_owned();
    match code {
        None => Verdict::Failed(format!("hang: still running after {timeout:?} of CPU time")),
        Some(None) => Verdict::Failed(format!("killed by a signal: {last}")),
        Some(Some(0)) => Verdict::Ok,
        Some(Some(_)) if stderr.contains("invariant violated") => {
            Verdict::Failed(format!("invariant: {last}"))
        }
        Some(Some(2))
            if last.starts_with("lbsim: error: ")
                && stderr.lines().all(|l| l.starts_with("lbsim: ")) =>
        {
            Verdict::Refused(last)
        }
        Some(Some(c)) => Verdict::Failed(format!("exit {c}: {}", stderr.trim_end())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_judged_by_how_they_end() {
        let t = Duration::from_secs(1);
        assert_eq!(judge(Some(Some(0)), "", t), Verdict::Ok);
        assert!(matches!(
            judge(Some(Some(2)), "lbsim: error: --kernel `4.6`: no\n", t),
            Verdict::Refused(_)
        ));
        for (code, text) in [
            (
                Some(Some(2)),
                "lbsim: error: invariant violated at 5 ns on cpu 0: x\n",
            ),
            (Some(Some(101)), "thread 'main' panicked at x\n"),
            (Some(Some(2)), "lbsim: error: two\nlines\n"),
            (Some(None), ""),
            (None, ""),
        ] {
            assert!(matches!(judge(code, text, t), Verdict::Failed(_)), "{text}");
        }
    }
}
