//! Tasks and per-CPU runqueues of the Linux kernel's fair class: weights, the EEVDF pick of
//! v6.6–v6.12 (and, selectable with `sched_policy=cfs`, the legacy CFS pick of v6.1), delayed
//! dequeue, wakeup preemption, the tick, sleep/wake/fork/migration bookkeeping with PELT, and
//! the parameters they read: the sched features and the fair-class tunables, declared in
//! [`params`] (the registry machinery is `lbsim_kernel::params`).
//!
//! It follows kernel/sched/fair.c and core.c of v6.12 (read in a v6.12.20 tree; v6.6 behaviour
//! is [`params::v6_6`]: the v6.12-only features off), fair.c of v6.1 for the legacy CFS pick,
//! and kernel/sched/features.h of v6.1, v6.6 and v6.12. Each function names the kernel function
//! it follows. Task groups (CONFIG_FAIR_GROUP_SCHED, cgroup v2 `cpu.weight`) are [`group`]
//! and `rq/hier.rs`: a runqueue given a [`TaskGroupTree`] walks the hierarchy as v6.12 does;
//! one without stays flat and runs the flat code unchanged; autogroups are groups of the same
//! tree ([`group::autogroup`]); a task moves between groups by [`Rq::sched_move_task`]
//! (core.c v6.12, the one attribute change modelled with `DEQUEUE_SAVE`/`ENQUEUE_RESTORE`).
//! Deliberately left out: `cpu.idle`, task groups under the legacy CFS pick, CFS bandwidth,
//! other scheduling classes (their PELT signals exist and stay 0), uclamp, EAS, NUMA
//! balancing, hrtick, core scheduling, the other attribute changes (renice, policy).
//!
//! # How the engine drives a runqueue
//!
//! Every call takes the simulated time `now_ns` where the kernel starts with
//! `update_rq_clock()`; reschedule requests are data ([`Rq::need_resched`]).
//! - Create: [`Task::new`] into [`Tasks`]; under legacy CFS [`Rq::task_fork_fair`] on the
//!   forking CPU; choose a CPU (balancer); [`Rq::wake_up_new_task`] there.
//! - Wake: if the task is still queued (`DELAY_DEQUEUE`), [`Rq::ttwu_runnable`] on its CPU;
//!   else choose a CPU (balancer), [`set_task_cpu`] from the old runqueue if it changes, then
//!   [`Rq::ttwu_do_activate`] on the target (directly, or later from the wake list with
//!   [`Rq::sched_ttwu_pending`] while [`Rq::ttwu_pending`] is set).
//! - Tick: [`Rq::sched_tick`]; then the balance trigger (balancer).
//! - Schedule (when `need_resched`, or the current task blocks/exits/yields):
//!   [`Rq::__schedule_prev`], [`Rq::pick_next_task_fair`] (on `None`: newidle balancing, and
//!   pick again if it pulled; else [`Rq::pick_next_task_idle`]), [`Rq::context_switch`].
//!   [`Rq::schedule`] does all four without balancing. Exits end with [`Rq::task_dead_fair`].
//! - Balancer moves: [`Rq::detach_task`] on the source, [`Rq::attach_task`] on the destination;
//!   blocked load: [`Rq::update_blocked_averages`]; reads: [`Rq::cpu_load`],
//!   [`Rq::cpu_load_lb`], [`Rq::cpu_runnable`], [`Rq::cpu_util`], [`Rq::cpu_util_cfs`],
//!   [`Rq::cpu_util_cfs_boost`], [`Rq::task_h_load`], [`Rq::capacity_of`],
//!   [`Rq::check_cpu_capacity`], [`fits_capacity`], [`capacity_greater`], `rq.cfs.cfs_tasks()`
//!   (scanned from the tail), [`Task::exec_start`].
//! - Invariants: [`Rq::check_invariants`].

pub mod cfs_rq;
pub mod entity;
pub mod group;
pub mod params;
pub mod rq;
pub mod task;
pub mod tunables;
pub mod weights;

pub use cfs_rq::{CfsClock, CfsRq};
pub use entity::{
    DequeueFlags, EnqueueFlags, EntityStore, SchedEntity, TaskId, WakeFlags, group_se_id, se_group,
};
pub use group::{RqGroups, SharedTaskGroups, TaskGroupError, TaskGroupTree};
pub use params::RqFeat;
pub use rq::{
    PrevAction, Rq, RqError, SCHED_CAPACITY_SCALE, SCHED_CLOCK_OFFSET_NS, capacity_greater,
    fits_capacity, set_task_cpu, task_runnable, task_util, task_util_est, task_util_est_raw,
};
pub use task::{OnRq, Policy, SchedInfo, Task, TaskState, Tasks};
pub use tunables::{FairPick, Features, SchedParams, TunableScaling, Tunables};
pub use weights::{LoadWeight, NICE_0_LOAD, calc_delta, calc_delta_fair};
