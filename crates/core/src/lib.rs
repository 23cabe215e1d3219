//! The kernel's core scheduler (core.c) as a state machine over lbsim's runqueues.
//!
//! [`Core`] holds the machine's runqueues, the tasks and their programs, and the per-CPU state
//! that is not the runqueue's (scheduler overhead in progress, interrupts off, the wake list,
//! the tick). It handles one [`Ev`] at a time at the time the engine gives it, and hands back
//! [`Effects`]: events to schedule and scheduled events to cancel. It owns no clock and no
//! queue: `lbsim-sim`'s engine does, and applies the effects in order.
//!
//! It follows the kernel's control flow at the points where scheduling happens, each in its
//! own module and named after the kernel function it stands for:
//! - `ttwu.rs`: `try_to_wake_up()`: `select_task_rq()` through the [`Balancer`](lbsim_balance::ctx::Balancer),
//!   `set_task_cpu()` on a CPU change, then `ttwu_queue()`: a remote wake-up to a CPU that
//!   does not share the waker's LLC, or to an idle CPU, goes through the wake list (sets
//!   `rq->ttwu_pending`, sends an IPI that arrives after `cost_ipi_ns`); otherwise
//!   `ttwu_do_activate()` runs at once and a reschedule IPI goes to the target if needed.
//! - `schedule.rs`: `__schedule()`: put the previous task back (or block it),
//!   pick, newly idle balance when nothing is runnable (the CPU keeps interrupts off
//!   meanwhile, so wake-up IPIs and timers wait for it to finish), context switch.
//! - `tick.rs`: `sched_tick()`: per-CPU periodic tick with a per-CPU phase,
//!   stopped while the CPU is idle (nohz) and restarted on the next tick boundary when work
//!   arrives; then the balancer's trigger (SCHED_SOFTIRQ runs at once on the same CPU) and
//!   nohz kick.
//! - [`cpuidle`]: the idle loop: the menu governor picks each idle CPU's state and whether
//!   its tick stops; a wake-up of a CPU in a state waits for the state's exit time.
//! - `stopper.rs`: the active-balance stopper preempts the busiest CPU's task,
//!   runs the balancer's `active_load_balance_cpu_stop()`, then the CPU schedules again.
//! - `fork.rs` and `syscalls.rs`: task creation, and what each
//!   action of a task's program (lbsim-workload) asks of the kernel.
//!
//! Work is time at capacity 1024: a task running on a CPU of capacity `c` completes
//! `c / 1024` ns of work per ns. Scheduler overhead (context switches, wake-ups, balancing)
//! is charged through the [`CostModel`](lbsim_balance::cost::CostModel) to the CPU that does
//! it: during that time the CPU makes no progress on user work.
//!
//! Beside the state machine, each with one job: `account.rs` (busy/idle time,
//! runtime, idle-while-overloaded), `finish.rs` (the run's tables), `spec_tasks.rs` (the
//! spec's tasks until created: names and shared prototypes), [`check`]
//! (the invariants under `--check`), `tracepoints.rs` and [`trace`] (the
//! scheduler trace), [`metrics`], [`rng`].
//!
//! Determinism: every random draw comes from a stream of the run's seed
//! ([`rng::SeedStreams`]); no host state is read.

pub mod check;
pub mod config;
mod core;
pub mod effects;
pub mod log;
pub mod metrics;
pub mod params;
pub mod result;
pub mod rng;
pub mod series;
pub mod trace;

mod account;
pub mod cpuidle;
mod finish;
mod fork;
mod progress;
mod schedule;
mod smt;
mod spec_tasks;
mod state;
mod stopper;
mod syscalls;
mod tick;
mod tracepoints;
mod ttwu;

pub use crate::config::{EngineTunables, Governor, MachineModel, SimConfig, SimError};
pub use crate::core::Core;
pub use crate::effects::{Effect, Effects, Ev, EventKey};
pub use crate::result::{CpuResult, GroupFairness, RunResult, TaskGroupShare, TaskResult};
pub use crate::series::CpuSeries;

/// What every module of the core uses.
mod prelude {
    pub(crate) use lbsim_balance::ctx::{
        BalanceCtx, BalanceOutcome, Balancer, IlbKick, NewidleStep, StopperRequest, WakeFlags,
    };
    pub(crate) use lbsim_balance::schedstat::CpuSchedstat;
    pub(crate) use lbsim_kernel::Policy;
    pub(crate) use lbsim_rq::{
        PrevAction, Rq, SchedParams, Task, TaskId, TaskState, Tasks, set_task_cpu,
    };
    pub(crate) use lbsim_topology::{CpuId, Cpumask};
    pub(crate) use lbsim_workload::{
        Action, Outcome, ProbeRecord, ProgramState, RunObservations, SyncState, TaskObservation,
        TaskRef, Wakes, WakeupSample,
    };
    pub(crate) use rand_pcg::Pcg64Mcg;
    pub(crate) use slotmap::SecondaryMap;
    pub(crate) use std::sync::Arc;

    pub(crate) use crate::account::IwoSummary;
    pub(crate) use crate::check;
    pub(crate) use crate::config::{SimConfig, SimError};
    pub(crate) use crate::core::{Core, NOT_CREATED};
    pub(crate) use crate::effects::{Effects, Ev, EventKey};
    pub(crate) use crate::metrics::{Samples, fairness};
    pub(crate) use crate::params::CoreFeat;
    pub(crate) use crate::result::{
        CpuResult, GroupFairness, RunResult, TaskGroupShare, TaskResult,
    };
    pub(crate) use crate::rng::{SeedStreams, Stream, below};
    pub(crate) use crate::state::{CpuState, Cur, Kind, TaskRun, Waking, Wakings};
}
