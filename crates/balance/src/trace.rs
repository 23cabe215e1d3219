//! The balancer's trace records: what a traced run (`lbsim run --trace`) shows of the
//! balancer's decisions.
//!
//! Mainline has no load-balance tracepoint, so lbsim records two kinds of event here:
//! - [`LbEvent::Migrate`]: a task the balancer moved (fair.c: detach_task(), whose
//!   set_task_cpu() fires the kernel's `sched_migrate_task` tracepoint), from a periodic,
//!   idle or newly idle load_balance() or from the active-balance stopper;
//! - [`LbEvent::Balance`]: one load_balance() that got past should_we_balance(), with what
//!   find_busiest_group() and find_busiest_queue() found and how it ended, in the spirit of
//!   the `sched_load_balance` event of Android kernels.
//!
//! The engine turns recording on through [`crate::ctx::Balancer::trace`] and drains the
//! records after each call into the balancer. Recording is read-only for the model: a traced
//! run makes the same decisions as an untraced one.

use lbsim_rq::task::TaskId;
use lbsim_topology::CpuId;

use crate::lb::{CpuIdleType, GroupType, MigrationType};

/// The balancer's trace buffer.
#[derive(Clone, Debug, Default)]
pub struct LbTrace {
    /// Whether records are kept.
    pub enabled: bool,
    /// Records since the last drain, in the order the decisions were taken.
    pub events: Vec<LbEvent>,
}

impl LbTrace {
    /// Keeps `ev` if recording is on.
    pub fn push(&mut self, ev: LbEvent) {
        if self.enabled {
            self.events.push(ev);
        }
    }
}

/// One balancer trace record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbEvent {
    /// A task moved by the balancer (`sched_migrate_task`).
    Migrate {
        /// Simulated time of the detach (the balancing pass's clock), ns.
        time_ns: u64,
        /// The CPU the record is shown on: the CPU balanced for by load_balance() (the
        /// destination; for a nohz idle balance lbsim does not record which CPU ran it), the
        /// source for the stopper.
        on_cpu: CpuId,
        /// The task.
        task: TaskId,
        /// Where it was queued.
        orig_cpu: CpuId,
        /// Where it goes.
        dest_cpu: CpuId,
    },
    /// One load_balance() past should_we_balance().
    Balance(LbRecord),
}

/// How a traced load_balance() ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbOutcome {
    /// find_busiest_group() found no imbalance (`out_balanced`).
    Balanced,
    /// find_busiest_queue() found no source runqueue (`out_balanced`).
    NoBusiestQueue,
    /// Every task of the source was pinned (`out_all_pinned`).
    AllPinned,
    /// Nothing moved, and the running task of the source may not run here
    /// (`out_one_pinned`).
    OnePinned,
    /// `ld_moved` tasks moved.
    Moved,
    /// Nothing moved (the stopper may have been asked to push the running task).
    Failed,
}

impl LbOutcome {
    /// A short name for traces.
    pub const fn name(self) -> &'static str {
        match self {
            LbOutcome::Balanced => "balanced",
            LbOutcome::NoBusiestQueue => "no_busiest_rq",
            LbOutcome::AllPinned => "all_pinned",
            LbOutcome::OnePinned => "one_pinned",
            LbOutcome::Moved => "moved",
            LbOutcome::Failed => "failed",
        }
    }
}

/// What one load_balance() decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LbRecord {
    /// Simulated time at the end of the pass (its own clock), ns.
    pub time_ns: u64,
    /// The balancing CPU (`this_cpu`).
    pub cpu: CpuId,
    /// The domain's level in `cpu`'s hierarchy (0 = lowest).
    pub level: usize,
    /// `env->idle`.
    pub idle: CpuIdleType,
    /// The local group's type.
    pub local: GroupType,
    /// The busiest group's type, if there was a busiest group.
    pub busiest: Option<GroupType>,
    /// `env->migration_type`.
    pub migration_type: MigrationType,
    /// `env->imbalance` as calculate_imbalance() set it (0 when balanced), before
    /// detach_tasks() consumed it.
    pub imbalance: i64,
    /// The source runqueue find_busiest_queue() chose.
    pub src_cpu: Option<CpuId>,
    /// `ld_moved`.
    pub ld_moved: u32,
    /// How it ended.
    pub outcome: LbOutcome,
    /// The domain's `nr_balance_failed` afterwards.
    pub nr_balance_failed: u32,
    /// The domain's `balance_interval` afterwards, ms.
    pub balance_interval: u64,
    /// Whether the active-balance stopper was asked to push the source's running task.
    pub active_balance: bool,
}
