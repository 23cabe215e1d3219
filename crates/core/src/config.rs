//! A run's configuration: [`SimConfig`] (machine, workload, features, tunables, costs,
//! engine knobs, duration, seed) and why a run can fail ([`SimError`]).

use std::sync::Arc;

use lbsim_balance::cost::CostModel;
use lbsim_rq::{Features, Tunables};
use lbsim_topology::Topology;
use lbsim_workload::WorkloadSpec;

pub use crate::params::{EngineTunables, Governor, MachineModel};

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
    /// The machine model's knobs (cpuidle governor, SMT sharing, cost spreads).
    pub machine: MachineModel,
    /// The kernel release the run follows (`--kernel`), as (major, minor); `None`: lbsim's
    /// v6.12 model. It decides which balancer implementation runs (before v5.5: the
    /// pre-rework one).
    pub kernel: Option<(u32, u32)>,
    /// How long to simulate, ns (the workload may end earlier).
    pub duration_ns: u64,
    /// The master seed.
    pub seed: u64,
    /// Check invariants after every event and stop at the first violation.
    pub check: bool,
    /// Declared cgroup v2 task groups: (path, `cpu.weight`) (`--cgroup /a/b:weight=300`,
    /// scenario `[cgroups]`). A group a workload names (`cgroup=`) but no entry declares has
    /// weight 100; with neither, the run has no task groups at all.
    pub cgroups: Vec<(String, u64)>,
    /// Autogroup nices: (session, nice) (`--autogroup N:nice=V`, scenario `[autogroups]`;
    /// lbsim's syntax for `echo V > /proc/PID/autogroup` by a task of session N). A session
    /// without one has nice 0; a later entry for a session wins.
    pub autogroups: Vec<(u32, i32)>,
}

/// Why a run could not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The workload names a CPU the machine does not have.
    #[error("the workload uses CPU {cpu} but the machine has CPUs 0-{last}")]
    NoSuchCpu {
        /// The CPU the workload names.
        cpu: u32,
        /// The machine's last CPU.
        last: u32,
    },
    /// The task groups cannot be built (a bad path or weight, or the legacy CFS pick).
    #[error("cgroups: {0}")]
    Cgroup(String),
    /// The workload could not be run (a fork beyond the limit, an unsupported action).
    #[error("workload: {0}")]
    Workload(String),
    /// The trace grew past the number of records the caller allowed (`Sim::with_trace_limit`).
    #[error("the trace passed {limit} records at {time_ns} ns")]
    TraceLimit {
        /// The limit.
        limit: u64,
        /// Simulated time when it passed.
        time_ns: u64,
    },
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
