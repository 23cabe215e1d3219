//! Tasks (`struct task_struct`, the parts the fair class and the load balancer read).
//!
//! Follows include/linux/sched.h and core.c: `__sched_fork()`, `set_load_weight()`,
//! `sched_info` (kernel/sched/stats.h) of v6.12.

use std::sync::Arc;

use lbsim_topology::{CpuId, Cpumask};
use slotmap::SlotMap;

pub use crate::entity::TaskId;
use crate::entity::{EntityStore, SchedEntity};
use crate::weights::LoadWeight;

pub use lbsim_kernel::Policy;

/// What a task is doing, from the simulator's point of view.
///
/// A task that went to sleep with negative lag under `DELAY_DEQUEUE` is [`TaskState::Sleeping`]
/// while its entity is still queued (`se.on_rq && se.sched_delayed`, `on_rq == Queued`), as in
/// the kernel (`__state` is not `TASK_RUNNING`, `p->on_rq` is 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Forked, not yet woken by `wake_up_new_task()` (`TASK_NEW`).
    New,
    /// On a CPU (`rq->curr`).
    Running,
    /// Runnable, waiting on a runqueue.
    Queued,
    /// Blocked.
    Sleeping,
    /// Exited (`TASK_DEAD`).
    Exited,
}

/// `p->on_rq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OnRq {
    /// 0: not queued.
    No,
    /// `TASK_ON_RQ_QUEUED`.
    Queued,
    /// `TASK_ON_RQ_MIGRATING`: being moved between runqueues by `deactivate_task()` /
    /// `activate_task()`.
    Migrating,
}

/// `struct sched_info` (schedstats' run delay accounting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SchedInfo {
    /// `pcount`: times the task arrived on a CPU.
    pub pcount: u64,
    /// `run_delay`: total ns spent runnable but waiting.
    pub run_delay: u64,
    /// `last_arrival`: `rq_clock` when it last arrived on a CPU.
    pub last_arrival: u64,
    /// `last_queued`: `rq_clock` when it started waiting (the kernel uses 0 for "not waiting";
    /// lbsim uses `None` so that a wait starting at time 0 is counted).
    pub last_queued: Option<u64>,
}

/// A task.
#[derive(Clone, Debug)]
pub struct Task {
    /// `comm` (a boxed `str`: 8 bytes less per task than a `String`; nothing renames a task).
    pub name: Box<str>,
    /// `policy`.
    pub policy: Policy,
    /// `PRIO_TO_NICE(static_prio)`.
    pub nice: i32,
    /// `cpus_mask`: the CPUs the task may run on. Shared: the tasks of one affinity point to
    /// one mask (a 4096-CPU mask is 512 bytes; the kernel's is in each task_struct, but
    /// nothing changes a task's mask in place, only `set_cpus_allowed_ptr()` replaces it).
    pub cpus_mask: Arc<Cpumask>,
    /// `nr_cpus_allowed`.
    pub nr_cpus_allowed: u32,
    /// `se`.
    pub se: SchedEntity,
    /// What the task is doing.
    pub state: TaskState,
    /// `p->on_rq`.
    pub on_rq: OnRq,
    /// `task_cpu(p)`: the CPU whose runqueue the task is (or was last) on.
    pub cpu: CpuId,
    /// `wake_cpu`: the CPU a wakeup starts its search from.
    pub wake_cpu: CpuId,
    /// `recent_used_cpu` (select_idle_sibling()).
    pub recent_used_cpu: CpuId,
    /// `wakee_flips` (wake_wide(), record_wakee()).
    pub wakee_flips: u32,
    /// `wakee_flip_decay_ts` (jiffies).
    pub wakee_flip_decay_ts: u64,
    /// `last_wakee`.
    pub last_wakee: Option<TaskId>,
    /// `max_allowed_capacity`: the largest CPU capacity in `cpus_mask` (misfit detection;
    /// set by whoever knows the machine, see `set_task_max_allowed_capacity()`).
    pub max_allowed_capacity: u64,
    /// `nvcsw`: voluntary context switches (the task blocked).
    pub nvcsw: u64,
    /// `nivcsw`: involuntary context switches (the task was preempted or yielded).
    pub nivcsw: u64,
    /// `sched_info`.
    pub sched_info: SchedInfo,
    /// `task_group(p)`: the index of the task's group in the run's
    /// [`crate::group::TaskGroupTree`] (0: the root group).
    pub tg: u32,
}

impl Task {
    /// A freshly forked task on `cpu` (not queued yet).
    ///
    /// Follows core.c: `sched_fork()` / `__sched_fork()` / `set_load_weight()` (v6.12):
    /// weight from the nice value (`WEIGHT_IDLEPRIO` for `SCHED_IDLE`), `slice =
    /// base_slice_ns`, PELT initialised to a full-weight load (`init_entity_runnable_average()`).
    pub fn new(
        name: impl Into<Box<str>>,
        policy: Policy,
        nice: i32,
        cpus_mask: impl Into<Arc<Cpumask>>,
        cpu: CpuId,
        base_slice_ns: u64,
    ) -> Task {
        let idle = policy == Policy::Idle;
        let load = LoadWeight::for_task(nice, idle);
        let cpus_mask = cpus_mask.into();
        let nr_cpus_allowed = cpus_mask.weight() as u32;
        Task {
            name: name.into(),
            policy,
            nice,
            cpus_mask,
            nr_cpus_allowed,
            se: SchedEntity::new(load, idle, base_slice_ns),
            state: TaskState::New,
            on_rq: OnRq::No,
            cpu,
            wake_cpu: cpu,
            recent_used_cpu: cpu,
            wakee_flips: 0,
            wakee_flip_decay_ts: 0,
            last_wakee: None,
            max_allowed_capacity: lbsim_pelt::SCHED_CAPACITY_SCALE,
            nvcsw: 0,
            nivcsw: 0,
            sched_info: SchedInfo::default(),
            tg: 0,
        }
    }

    /// `task_has_idle_policy(p)`.
    pub fn has_idle_policy(&self) -> bool {
        self.policy == Policy::Idle
    }

    /// `normal_policy(p->policy)`: only `SCHED_NORMAL` preempts on wakeup.
    pub fn normal_policy(&self) -> bool {
        self.policy == Policy::Normal
    }

    /// `task_on_rq_queued(p)`.
    pub fn on_rq_queued(&self) -> bool {
        self.on_rq == OnRq::Queued
    }

    /// `task_on_rq_migrating(p)`.
    pub fn on_rq_migrating(&self) -> bool {
        self.on_rq == OnRq::Migrating
    }

    /// `se.nr_migrations`.
    pub fn nr_migrations(&self) -> u64 {
        self.se.nr_migrations
    }

    /// `nvcsw`: voluntary switches.
    pub fn nr_voluntary_switches(&self) -> u64 {
        self.nvcsw
    }

    /// `nivcsw`: involuntary switches.
    pub fn nr_involuntary_switches(&self) -> u64 {
        self.nivcsw
    }

    /// `se.sum_exec_runtime`: total ns run (accounted up to the last `update_curr()`).
    pub fn sum_exec_runtime(&self) -> u64 {
        self.se.sum_exec_runtime
    }

    /// `sched_info.run_delay`: total ns spent waiting while runnable.
    pub fn run_delay(&self) -> u64 {
        self.sched_info.run_delay
    }

    /// `se.exec_start`: when the task was last accounted running (task_hot() reads it).
    pub fn exec_start(&self) -> u64 {
        self.se.exec_start
    }
}

/// All tasks, by id.
pub type Tasks = SlotMap<TaskId, Task>;

impl EntityStore for Tasks {
    #[inline]
    fn se(&self, id: TaskId) -> &SchedEntity {
        &self[id].se
    }
    #[inline]
    fn se_mut(&mut self, id: TaskId) -> &mut SchedEntity {
        &mut self[id].se
    }
}
