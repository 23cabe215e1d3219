//! What a run measured: [`RunResult`] with its per-task, per-CPU and per-group tables.

use lbsim_workload::RunObservations;

use crate::metrics::{Fairness, Percentiles};

/// Per-CPU results of a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CpuResult {
    /// The CPU.
    pub cpu: u32,
    /// Time with a task on the CPU, ns.
    pub busy_ns: u64,
    /// Time idle, ns.
    pub idle_ns: u64,
    /// Time-averaged `nr_running`.
    pub avg_nr_running: f64,
    /// `rq->nr_switches`.
    pub nr_switches: u64,
    /// Idle-state usage and tick stops, when a cpuidle governor ran on the CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpuidle: Option<crate::cpuidle::CpuidleStats>,
}

/// Per-task results of a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TaskResult {
    /// The task's name.
    pub name: String,
    /// Its fairness group (shared with its observation).
    pub group: std::sync::Arc<str>,
    /// The CPU it was last on.
    pub cpu: u32,
    /// Time on a CPU, ns.
    pub runtime_ns: u64,
    /// Work completed (ns at capacity 1024).
    pub work_ns: u64,
    /// Time runnable but waiting (`sched_info.run_delay`), ns.
    pub wait_ns: u64,
    /// `se.nr_migrations`.
    pub nr_migrations: u64,
    /// Voluntary plus involuntary context switches.
    pub nr_switches: u64,
    /// Its task group's cgroup path (`cgroup=`), `None` in the root cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// The autogroup it runs in (`session=N` in the root cgroup with
    /// `sched_autogroup_enabled`): `/autogroup-N`, as `/proc/PID/autogroup` names it; `None`
    /// otherwise (its cgroup's group, or the root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autogroup: Option<String>,
    /// For a task that moved between task groups (rt-app's phase `taskgroup`): each stretch
    /// in one group, in order, the last one in its group at the end (`cgroup`/`autogroup`
    /// above). Empty (and absent from JSON) for a task that never moved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub task_group_stints: Vec<TaskGroupStint>,
}

/// A stretch of a task's run in one task group.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TaskGroupStint {
    /// The group as `task_group_path()` names it (`/` for the root group).
    pub cgroup: String,
    /// When the task entered it (its creation for the first stint), ns.
    pub from_ns: u64,
    /// Its time on a CPU while in it, ns.
    pub runtime_ns: u64,
}

/// The CPU time of one task group's tasks (`cpu.stat`'s `usage_usec` of a cgroup, summed
/// from its tasks; nested groups' tasks count in their own group only). A task that moved
/// between groups counts in each group it was in, with the time it ran while there.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TaskGroupShare {
    /// The task group's path as the kernel's sched debug files print it
    /// (`task_group_path()`): the cgroup path, `/autogroup-N` for an autogroup, `/` for the
    /// root group's tasks.
    pub cgroup: String,
    /// Workload tasks that were in it (a task that moved counts in each of its groups).
    pub tasks: usize,
    /// Their time on a CPU, ns.
    pub runtime_ns: u64,
    /// That time over all workload tasks' time on a CPU.
    pub share: f64,
}

/// Fairness of one group of tasks.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GroupFairness {
    /// The group label.
    pub group: String,
    /// Number of tasks.
    pub tasks: usize,
    /// Least over greatest work done.
    pub min_max_ratio: f64,
    /// Jain's index of work done.
    pub jain: f64,
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Simulated time covered, ns.
    pub sim_time_ns: u64,
    /// Task migrations (the sum of `se.nr_migrations`, as perf's cpu-migrations counts them).
    pub migrations: u64,
    /// Context switches of the workload's tasks (voluntary plus involuntary, as perf's
    /// context-switches counts them for a process).
    pub context_switches: u64,
    /// Time some CPU sat idle while another CPU had a runnable, waiting task allowed to run
    /// on it, ns.
    pub idle_while_overloaded_ns: u64,
    /// Wake-up latencies of the workload's tasks (wake to running), ns.
    pub wakeup_latency: Percentiles,
    /// Fairness of work done over the largest group of workload tasks.
    pub fairness: Fairness,
    /// Fairness per group.
    pub groups: Vec<GroupFairness>,
    /// CPU time per task group, when the run declares task groups (else empty).
    pub task_groups: Vec<TaskGroupShare>,
    /// Per-task results (workload tasks, in creation order).
    pub tasks: Vec<TaskResult>,
    /// Per-CPU results.
    pub cpus: Vec<CpuResult>,
    /// What the workload's reports are computed from.
    pub observations: RunObservations,
    /// Events processed.
    pub events: u64,
    /// FNV-1a hash of the event stream `(time, kind, cpu or task)`.
    pub event_hash: u64,
    /// /proc/schedstat at the end of the run as text: left `None` by the core, and filled by
    /// a front end that shows it, from [`RunResult::schedstat_counters`] in the layout it
    /// wants (formatting it costs megabytes of text at 4096 CPUs).
    pub schedstat: Option<String>,
    /// The counters behind [`RunResult::schedstat`] and the `timestamp` (jiffies) they were
    /// read at, to print them in another version's layout
    /// (`Schedstat::format_version`).
    pub schedstat_counters: Option<(lbsim_balance::schedstat::Schedstat, u64)>,
    /// What the invariant checks saw (with [`SimConfig::check`](crate::SimConfig::check)).
    pub checks: Option<crate::check::CheckReport>,
    /// The scheduler trace, for a run made with [`Core::with_trace`](crate::Core::with_trace).
    pub trace: Option<crate::trace::Trace>,
    /// Per-CPU time series, for a run made with
    /// [`Core::with_cpu_series`](crate::Core::with_cpu_series).
    pub cpu_series: Option<crate::series::CpuSeries>,
}
