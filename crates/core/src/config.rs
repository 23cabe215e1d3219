//! A run's configuration: [`SimConfig`] (machine, workload, features, tunables, costs,
//! engine knobs, duration, seed) and why a run can fail ([`SimError`]).

use std::sync::Arc;

use lbsim_balance::cost::CostModel;
use lbsim_rq::{Features, Tunables};
use lbsim_topology::Topology;
use lbsim_workload::WorkloadSpec;

/// Engine tunables (set with `--set NAME=VALUE` like the kernel's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineTunables {
    /// Background kernel-thread wake-ups per second per CPU (a pinned `kworker/N` that runs
    /// briefly); 0 turns the noise off. The default, 1, is the rate of the most regular
    /// per-CPU kernel work on a quiet server (vmstat_update runs once a second per CPU):
    /// seed 004's `perf stat` saw about one context switch per ebizzy thread per second.
    pub background_wakeups_hz: u64,
    /// How long each background wake-up runs (work at capacity 1024), ns.
    pub background_run_ns: u64,
    /// Largest per-CPU tick phase offset, ns: each CPU's tick fires at
    /// `k * TICK_NSEC + phase`, `phase` drawn from the seed in `[0, tick_jitter_ns)`.
    /// Kernel ticks are aligned across CPUs up to interrupt jitter (no `skew_tick`), so the
    /// default is small.
    pub tick_jitter_ns: u64,
}

impl Default for EngineTunables {
    fn default() -> Self {
        EngineTunables {
            background_wakeups_hz: 1,
            background_run_ns: 20_000,
            tick_jitter_ns: 20_000,
        }
    }
}

impl EngineTunables {
    /// Tunable names, in printing order.
    pub const NAMES: [&'static str; 3] = [
        "background_wakeups_hz",
        "background_run_ns",
        "tick_jitter_ns",
    ];

    fn slot(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "background_wakeups_hz" => &mut self.background_wakeups_hz,
            "background_run_ns" => &mut self.background_run_ns,
            "tick_jitter_ns" => &mut self.tick_jitter_ns,
            _ => return None,
        })
    }

    /// Whether `name` is an engine tunable.
    pub fn is_tunable(name: &str) -> bool {
        Self::NAMES.contains(&name)
    }

    /// Sets tunable `name` from its text value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), SimError> {
        let v: u64 = value.trim().parse().map_err(|_| SimError::BadTunable {
            name: name.to_owned(),
            value: value.to_owned(),
        })?;
        *self.slot(name).ok_or_else(|| SimError::UnknownTunable {
            name: name.to_owned(),
            valid: Self::NAMES.join(", "),
        })? = v;
        Ok(())
    }

    /// `(name, value)` pairs in [`EngineTunables::NAMES`] order.
    pub fn entries(&self) -> [(&'static str, u64); 3] {
        let mut copy = *self;
        Self::NAMES.map(|n| (n, *copy.slot(n).expect("listed")))
    }
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The machine's sched domains.
    pub topology: Arc<Topology>,
    /// The tasks to run.
    pub workload: WorkloadSpec,
    /// Sched features.
    pub features: Features,
    /// Scheduler tunables (built for the machine's CPU count).
    pub tunables: Tunables,
    /// Scheduler-work costs.
    pub cost: CostModel,
    /// Engine tunables.
    pub engine: EngineTunables,
    /// How long to simulate, ns (the workload may end earlier).
    pub duration_ns: u64,
    /// The master seed.
    pub seed: u64,
    /// Check invariants after every event and stop at the first violation.
    pub check: bool,
}

/// Why a run could not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// An unknown engine tunable.
    #[error("unknown engine tunable `{name}` (valid: {valid})")]
    UnknownTunable {
        /// What was given.
        name: String,
        /// The valid names.
        valid: String,
    },
    /// A tunable's value does not parse.
    #[error("tunable `{name}`: `{value}` is not a non-negative integer")]
    BadTunable {
        /// The tunable.
        name: String,
        /// What was given.
        value: String,
    },
    /// The workload names a CPU the machine does not have.
    #[error("the workload uses CPU {cpu} but the machine has CPUs 0-{last}")]
    NoSuchCpu {
        /// The CPU the workload names.
        cpu: u32,
        /// The machine's last CPU.
        last: u32,
    },
    /// The workload could not be run (a fork beyond the limit, an unsupported action).
    #[error("workload: {0}")]
    Workload(String),
    /// An invariant broke (a model bug); `--check` stops here.
    #[error("invariant violated at {time_ns} ns on cpu {cpu}{task}: {detail}")]
    Invariant {
        /// Simulated time of the violation.
        time_ns: u64,
        /// The CPU concerned.
        cpu: u32,
        /// The task concerned (formatted), or empty.
        task: String,
        /// What broke, and the decision that broke it.
        detail: String,
    },
}
