//! What the engine observed during a run: plain data the engine fills, reports read.

use serde::{Deserialize, Serialize};

use crate::ids::{ProbeTag, TaskRef};
use crate::spec::TaskSpec;

/// One task's counters at the end of the run (the engine's `struct task_struct` statistics).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskObservation {
    /// The task's name (from its [`TaskSpec`]).
    pub name: String,
    /// Its [`crate::Part`] index.
    pub part: u16,
    /// Its fairness group.
    pub group: String,
    /// When the engine created it; `None` for a task of the spec it did not create: a
    /// [`TaskSpec::spawned`] thread whose creator never got to spawn it, or one whose start is
    /// after the run's end. Such tasks are left out of [`RunObservations::part_tasks`].
    pub created_ns: Option<u64>,
    /// When it exited, if it did.
    pub exited_ns: Option<u64>,
    /// Time on a CPU (`se.sum_exec_runtime`).
    pub runtime_ns: u64,
    /// Work completed, in ns at capacity 1024 (runtime scaled by the capacity of the CPUs it
    /// ran on).
    pub work_ns: u64,
    /// Time runnable but not running (`sched_info.run_delay`).
    pub wait_ns: u64,
    /// The longest single stretch runnable but not running (after a wake-up or a preemption),
    /// as `perf sched latency`'s "Max delay".
    pub max_wait_ns: u64,
    /// Its waits to run (`sched_info.pcount`, one per arrival on a CPU, plus one for a wait
    /// still going on when the run ended), as `perf sched latency` counts its delays.
    pub nr_waits: u64,
    /// The wait still going on when the run ended (runnable, not yet run), ns; not in
    /// `wait_ns`, which counts completed waits as `run_delay` does.
    pub final_wait_ns: u64,
    /// Times it was switched out voluntarily (blocked or slept).
    pub nr_voluntary_switches: u64,
    /// Times it was preempted.
    pub nr_involuntary_switches: u64,
    /// Times it changed CPU (`se.nr_migrations`).
    pub nr_migrations: u64,
    /// The CPU it last ran on.
    pub last_cpu: Option<u32>,
}

impl TaskObservation {
    /// Zeroed counters for a task created at `created_ns`.
    pub fn new(spec: &TaskSpec, created_ns: u64) -> TaskObservation {
        TaskObservation {
            created_ns: Some(created_ns),
            ..TaskObservation::not_created(spec)
        }
    }

    /// The entry of a task of the spec not created yet (it keeps its [`TaskRef`]).
    pub fn not_created(spec: &TaskSpec) -> TaskObservation {
        TaskObservation {
            name: spec.name.clone(),
            part: spec.part,
            group: spec.group.clone(),
            created_ns: None,
            exited_ns: None,
            runtime_ns: 0,
            work_ns: 0,
            wait_ns: 0,
            max_wait_ns: 0,
            nr_waits: 0,
            final_wait_ns: 0,
            nr_voluntary_switches: 0,
            nr_involuntary_switches: 0,
            nr_migrations: 0,
            last_cpu: None,
        }
    }

    /// Context switches away from the task (`nr_switches` in `/proc/<pid>/sched`).
    pub fn nr_switches(&self) -> u64 {
        self.nr_voluntary_switches + self.nr_involuntary_switches
    }
}

/// One [`crate::Action::Probe`] as the engine recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRecord {
    /// The task that executed the probe.
    pub task: TaskRef,
    /// When.
    pub time_ns: u64,
    /// What it means.
    pub tag: ProbeTag,
    /// Its value.
    pub value: u64,
}

/// One wake-up as the engine measured it: from `try_to_wake_up` to the task running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeupSample {
    /// The woken task.
    pub task: TaskRef,
    /// When it was woken.
    pub wake_ns: u64,
    /// Until it ran.
    pub latency_ns: u64,
}

/// Everything a report needs from a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunObservations {
    /// When the run ended (the last event processed, or the duration limit).
    pub sim_time_ns: u64,
    /// Every task of the run, indexed by [`TaskRef`] (initial tasks, then forked ones).
    pub tasks: Vec<TaskObservation>,
    /// Every probe, in the order executed (non-decreasing time).
    pub probes: Vec<ProbeRecord>,
    /// Every wake-up, in the order the woken tasks ran.
    pub wakeups: Vec<WakeupSample>,
}

impl RunObservations {
    /// The tasks of part `part`, with their [`TaskRef`]s.
    pub fn part_tasks(&self, part: u16) -> impl Iterator<Item = (TaskRef, &TaskObservation)> {
        self.tasks
            .iter()
            .enumerate()
            .filter(move |(_, t)| t.part == part && t.created_ns.is_some())
            .map(|(i, t)| (TaskRef(i as u32), t))
    }

    /// The probes of part `part` with the given tag.
    pub fn part_probes(&self, part: u16, tag: ProbeTag) -> impl Iterator<Item = &ProbeRecord> {
        self.probes.iter().filter(move |p| {
            p.tag == tag
                && self
                    .tasks
                    .get(p.task.index())
                    .is_some_and(|t| t.part == part)
        })
    }
}
