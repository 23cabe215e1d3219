//! One target's fuzz loop, in the worker process: the seed corpus as it is, then seeded
//! mutations of it (inputs the target accepted join the pool), until a count or a time is
//! reached. A panic is caught and its input saved; a watchdog thread saves an input that
//! runs past the time limit and ends the process. The limit is on the CPU time of the thread
//! running the input (`/proc/<pid>/task/<tid>/schedstat`), so a worker starved on a busy
//! machine is not taken for a hang; without that file, on wall-clock time.

// The driver measures wall-clock time (time limits, executions per second): it is tooling,
// not a model crate.
#![allow(clippy::disallowed_methods)]

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{corpus, mutate, replay_command, rng::Rng, save_artifact};
use crate::Target;

/// Exit code of a worker that caught a panic (its input saved).
pub const EXIT_CRASH: i32 = 1;
/// Exit code of a worker whose watchdog saw an input run too long (its input saved).
pub const EXIT_TIMEOUT: i32 = 3;

/// Most inputs kept in the pool (seeds and accepted mutations).
const MAX_POOL: usize = 1024;

/// What one worker does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The target.
    pub target: &'static Target,
    /// The mutation seed.
    pub seed: u64,
    /// Stop after this many inputs, if given.
    pub runs: Option<u64>,
    /// Stop after this long, if given.
    pub time: Option<Duration>,
    /// Longest one input may run.
    pub timeout: Duration,
    /// The repository root (`fuzz/corpus`, `fuzz/artifacts`).
    pub root: PathBuf,
    /// Where each input is written before it runs (the supervisor saves it if we die).
    pub current: PathBuf,
}

/// What one worker did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Inputs run.
    pub execs: u64,
    /// Inputs the target accepted.
    pub accepted: u64,
    /// Size of the pool at the end.
    pub pool: usize,
}

/// Runs `plan`; on a panic, saves the input and returns the artifact's path as the error.
///
/// # Errors
/// A panic (the message names the saved input and its replay command), or an I/O error.
pub fn run(plan: &Plan) -> Result<Summary, String> {
    let name = plan.target.name;
    let mut pool = corpus::load(&plan.root, name).map_err(|e| format!("{name}: corpus: {e}"))?;
    let seeds = pool.len();
    let current =
        File::create(&plan.current).map_err(|e| format!("{}: {e}", plan.current.display()))?;
    let started = Arc::new(AtomicU64::new(u64::MAX));
    let epoch = Instant::now();
    let clock = InputClock::of_this_thread(epoch);
    watchdog(plan, Arc::clone(&started), clock.clone());
    std::panic::set_hook(Box::new(move |info| {
        eprintln!("lbsim-fuzz: {name}: panic: {info}");
    }));
    let mut rng = Rng::new(plan.seed);
    let mut summary = Summary {
        execs: 0,
        accepted: 0,
        pool: 0,
    };
    let mut input = Vec::new();
    loop {
        if plan.runs.is_some_and(|n| summary.execs >= n)
            || plan.time.is_some_and(|t| epoch.elapsed() >= t)
        {
            break;
        }
        let i = summary.execs as usize;
        if i < seeds {
            input.clone_from(&pool[i]);
        } else {
            input.clone_from(&pool[(rng.next_u64() % pool.len() as u64) as usize]);
            mutate::mutate(&mut rng, &mut input, &pool, plan.target.dict);
        }
        current
            .set_len(0)
            .and_then(|()| current.write_all_at(&input, 0))
            .map_err(|e| format!("{}: {e}", plan.current.display()))?;
        started.store(clock.now_ms(), Ordering::SeqCst);
        let outcome = catch_unwind(AssertUnwindSafe(|| (plan.target.run)(&input)));
        started.store(u64::MAX, Ordering::SeqCst);
        summary.execs += 1;
        match outcome {
            Ok(true) => {
                summary.accepted += 1;
                if i >= seeds && pool.len() < MAX_POOL {
                    pool.push(input.clone());
                }
            }
            Ok(false) => {}
            Err(_) => {
                let path = save_artifact(&plan.root, name, "crash", &input)
                    .map_err(|e| format!("{name}: saving the input: {e}"))?;
                return Err(format!(
                    "{name}: panic on input {} (saved as {}); replay: {}",
                    summary.execs,
                    path.display(),
                    replay_command(name, &path)
                ));
            }
        }
    }
    summary.pool = pool.len();
    Ok(summary)
}

/// The clock an input's run time is measured on: the CPU time of the thread running inputs
/// when `/proc` gives it, else wall-clock time since `epoch`.
#[derive(Clone, Debug)]
struct InputClock {
    /// `/proc/<pid>/task/<tid>/schedstat` of the input thread.
    schedstat: Option<PathBuf>,
    epoch: Instant,
}

impl InputClock {
    /// The clock of the calling thread.
    fn of_this_thread(epoch: Instant) -> InputClock {
        let schedstat = std::fs::read_link("/proc/thread-self")
            .ok()
            .map(|rel| PathBuf::from("/proc").join(rel).join("schedstat"))
            .filter(|p| cpu_ns(p).is_some());
        InputClock { schedstat, epoch }
    }

    /// Milliseconds on this clock.
    fn now_ms(&self) -> u64 {
        match self.schedstat.as_deref().and_then(cpu_ns) {
            Some(ns) => ns / 1_000_000,
            None => self.epoch.elapsed().as_millis() as u64,
        }
    }
}

/// The first field of a `schedstat` file: ns spent on a CPU.
fn cpu_ns(path: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Starts the thread that ends the process when one input runs past `plan.timeout` on
/// `clock`, saving the input first.
fn watchdog(plan: &Plan, started: Arc<AtomicU64>, clock: InputClock) {
    let plan = plan.clone();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let at = started.load(Ordering::SeqCst);
            if at == u64::MAX {
                continue;
            }
            let ran = clock.now_ms().saturating_sub(at);
            if Duration::from_millis(ran) < plan.timeout {
                continue;
            }
            let name = plan.target.name;
            let data = std::fs::read(&plan.current).unwrap_or_default();
            match save_artifact(&plan.root, name, "timeout", &data) {
                Ok(path) => eprintln!(
                    "lbsim-fuzz: {name}: an input ran longer than {:?} (saved as {}); replay: {}",
                    plan.timeout,
                    path.display(),
                    replay_command(name, &path)
                ),
                Err(e) => eprintln!("lbsim-fuzz: {name}: an input hung; saving it: {e}"),
            }
            std::process::exit(EXIT_TIMEOUT);
        }
    });
}
