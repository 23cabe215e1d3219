//! The boundary between the core model and the balancer.
//!
//! The engine calls a [`Balancer`] at the kernel's decision points (wake-up, fork and exec
//! placement; the tick; SCHED_SOFTIRQ; a CPU going newly idle; the active-balance stopper;
//! a CPU entering or leaving nohz idle). The balancer reads and changes the runqueues through
//! [`BalanceCtx`], exactly where the kernel's code changes them (detach and attach of the
//! tasks it migrates), and returns what it did as data: the chosen CPU or the migrations,
//! requests for the engine (a stopper to queue, an idle load balancer to kick), and a
//! [`WorkAccount`] that the engine charges in simulated time through the [`CostModel`].
//!
//! Time inside a pass: the kernel's balancing takes time, and things happen meanwhile. A
//! pass computes its own clock as `now_ns + cost.charge(work done so far)` and asks
//! [`PendingWakeups::ttwu_pending_at`] whether a wake-up has been queued to a CPU by then
//! (the kernel's `rq->ttwu_pending`, set by the waker on another CPU). This is how a wake-up
//! that arrives while a newly idle balance is scanning becomes visible to
//! `should_we_balance()`; the engine delivers the wake-up itself only after the pass ends,
//! as the kernel (running newidle with interrupts off) does.

pub use lbsim_rq::WakeFlags;
use lbsim_rq::{Features, TaskId, Tasks, Tunables};
use lbsim_topology::{CpuId, Topology};
use smallvec::SmallVec;

use crate::cost::{CostModel, WorkAccount};
use crate::rqs::Rqs;

/// Answers whether a remote wake-up has been queued on a CPU's wake list by a given time.
pub trait PendingWakeups {
    /// Whether a wake-up IPI for `cpu` has been sent at or before `at_ns` and not yet
    /// handled (the kernel's `rq->ttwu_pending`).
    fn ttwu_pending_at(&self, cpu: CpuId, at_ns: u64) -> bool;

    /// Whether [`PendingWakeups::ttwu_pending_at`] is false for every CPU at every time (so
    /// that sums over CPUs need not ask it).
    fn none_pending(&self) -> bool {
        false
    }
}

/// A [`PendingWakeups`] with no wake-up ever pending, for tests and single-CPU use.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPendingWakeups;

impl PendingWakeups for NoPendingWakeups {
    fn ttwu_pending_at(&self, _cpu: CpuId, _at_ns: u64) -> bool {
        false
    }

    fn none_pending(&self) -> bool {
        true
    }
}

/// What a balancer may read and change: the machine's runqueues and tasks at `now_ns`.
pub struct BalanceCtx<'a> {
    /// Simulated time of the decision, in ns.
    pub now_ns: u64,
    /// The kernel's `jiffies` at `now_ns`.
    pub jiffies: u64,
    /// Ticks per second.
    pub hz: u32,
    /// Sched domains and groups.
    pub topo: &'a Topology,
    /// One runqueue per CPU, indexed by CPU id.
    pub rqs: &'a mut Rqs,
    /// Every task.
    pub tasks: &'a mut Tasks,
    /// The sched features in force.
    pub features: Features,
    /// The scheduler tunables in force.
    pub tunables: &'a Tunables,
    /// The simulated-time cost of balancer work.
    pub cost: &'a CostModel,
    /// Wake-ups queued on CPUs' wake lists.
    pub pending: &'a dyn PendingWakeups,
}

impl std::fmt::Debug for BalanceCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BalanceCtx")
            .field("now_ns", &self.now_ns)
            .field("jiffies", &self.jiffies)
            .field("hz", &self.hz)
            .field("nr_cpus", &self.rqs.len())
            .finish_non_exhaustive()
    }
}

/// A placement decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The CPU the task is to run on.
    pub cpu: CpuId,
    /// The work the decision took (CPUs scanned), charged to the deciding CPU.
    pub work: WorkAccount,
}

/// A task moved between runqueues by a balancing pass (already detached and attached).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The task.
    pub task: TaskId,
    /// Where it was queued.
    pub src: CpuId,
    /// Where it is queued now.
    pub dst: CpuId,
}

/// A request to run the active-balance stopper on `busiest`, pushing to `push_cpu`
/// (`stop_one_cpu_nowait(active_load_balance_cpu_stop)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopperRequest {
    /// The CPU whose running task is to be pushed.
    pub busiest: CpuId,
    /// The CPU that asked, where the task should go.
    pub push_cpu: CpuId,
}

/// `NOHZ_*_KICK` flags (sched.h, v6.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NohzFlags(pub u32);

impl NohzFlags {
    /// Run rebalance_domains for idle CPUs (`NOHZ_BALANCE_KICK`, bit 0).
    pub const BALANCE: NohzFlags = NohzFlags(0x1);
    /// Update blocked load (`NOHZ_STATS_KICK`, bit 1).
    pub const STATS: NohzFlags = NohzFlags(0x2);
    /// Newly idle blocked-load update (`NOHZ_NEWILB_KICK`, bit 2).
    pub const NEWILB: NohzFlags = NohzFlags(0x4);
    /// Update nohz.next_balance (`NOHZ_NEXT_KICK`, bit 3).
    pub const NEXT: NohzFlags = NohzFlags(0x8);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: NohzFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of both sets.
    pub const fn union(self, other: NohzFlags) -> NohzFlags {
        NohzFlags(self.0 | other.0)
    }

    /// Whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// An IPI to the idle load balancer (`kick_ilb()`): the engine delivers it after the IPI
/// latency and then runs SCHED_SOFTIRQ on `ilb_cpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IlbKick {
    /// The idle CPU chosen to balance on behalf of the others.
    pub ilb_cpu: CpuId,
    /// What it is asked to do.
    pub flags: NohzFlags,
}

/// What the tick's balancing hooks decided (`sched_balance_trigger()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickOutcome {
    /// Raise SCHED_SOFTIRQ on this CPU (`jiffies >= rq->next_balance`).
    pub raise_softirq: bool,
    /// Kick an idle load balancer (`nohz_balancer_kick()`).
    pub kick: Option<IlbKick>,
    /// Work done, charged to this CPU.
    pub work: WorkAccount,
}

/// What a balancing pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BalanceOutcome {
    /// Tasks moved, in the order they were moved.
    pub migrations: SmallVec<[Migration; 4]>,
    /// Stoppers to queue for active balance.
    pub stoppers: SmallVec<[StopperRequest; 1]>,
    /// Idle-load-balancer kicks to send.
    pub kicks: SmallVec<[IlbKick; 1]>,
    /// Work done, charged to the balancing CPU.
    pub work: WorkAccount,
    /// Simulated time the pass took (normally `cost.charge(&work)`; a pass that stops
    /// early on a pending wake-up reports the time up to that point).
    pub elapsed_ns: u64,
    /// For a newly idle pass: whether a CFS task is now queued on this CPU
    /// (`sched_balance_newidle()` > 0).
    pub pulled_task: bool,
}

/// One step of a newly idle balance (see [`Balancer::newidle_begin`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewidleStep {
    /// What this step did; `elapsed_ns` is this step's simulated duration, and
    /// `pulled_task` is meaningful once `done`.
    pub outcome: BalanceOutcome,
    /// The newly idle balance is over.
    pub done: bool,
}

/// The balancer, called by the core model at the kernel's decision points.
///
/// Implementations: `KernelBalancer` (fair.c v6.6-v6.12 with the experiment switches) and
/// [`crate::TrivialBalancer`] (never migrates; wakes on the previous CPU).
pub trait Balancer {
    /// Chooses the CPU for a waking (`WF_TTWU`), forked (`WF_FORK`) or exec'ing (`WF_EXEC`)
    /// task `p`, which last ran on `prev_cpu`; the decision runs on `this_cpu` (the
    /// waker's, or the parent's, CPU). Follows core.c: select_task_rq() ->
    /// fair.c: select_task_rq_fair().
    fn select_task_rq(
        &mut self,
        ctx: &mut BalanceCtx<'_>,
        p: TaskId,
        prev_cpu: CpuId,
        this_cpu: CpuId,
        wake_flags: WakeFlags,
    ) -> Placement;

    /// The balancing hooks of a busy CPU's tick: sched_balance_trigger() and
    /// nohz_balancer_kick().
    fn tick(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> TickOutcome;

    /// SCHED_SOFTIRQ on `cpu`: sched_balance_softirq() (nohz idle balance if this CPU was
    /// kicked as idle load balancer, else rebalance_domains for itself).
    fn softirq(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> BalanceOutcome;

    /// `cpu` found no CFS task to run: sched_balance_newidle(), as one step.
    ///
    /// Equivalent to [`Balancer::newidle_begin`] followed by [`Balancer::newidle_continue`]
    /// until done, with nothing happening elsewhere in between (tests use it; the engine
    /// drives the steps in simulated time instead).
    fn newidle(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> BalanceOutcome {
        let mut step = self.newidle_begin(ctx, cpu);
        let mut out = BalanceOutcome::default();
        loop {
            out.migrations
                .extend(step.outcome.migrations.iter().copied());
            out.stoppers.extend(step.outcome.stoppers.iter().copied());
            out.kicks.extend(step.outcome.kicks.iter().copied());
            out.work.add(&step.outcome.work);
            out.elapsed_ns += step.outcome.elapsed_ns;
            out.pulled_task = step.outcome.pulled_task;
            if step.done {
                return out;
            }
            ctx.now_ns += step.outcome.elapsed_ns;
            step = self.newidle_continue(ctx, cpu);
        }
    }

    /// `cpu` found no CFS task to run: the first step of sched_balance_newidle().
    ///
    /// A newly idle balance takes simulated time, and the kernel runs it with the runqueue
    /// lock dropped: other CPUs go on meanwhile, and a wake-up can be queued on this CPU.
    /// The balancer therefore runs it in steps, each ending where the kernel looks for a
    /// pending wake-up or a queued task (the start of sched_balance_newidle(), every
    /// should_we_balance() call, the domain loop's check after each domain). The engine
    /// runs the next step ([`Balancer::newidle_continue`]) when this one's `elapsed_ns`
    /// has passed, after processing whatever happened on other CPUs in between.
    fn newidle_begin(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> NewidleStep;

    /// The next step of the newly idle balance begun by [`Balancer::newidle_begin`] on
    /// `cpu` (only called while the last step returned `done == false`).
    fn newidle_continue(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> NewidleStep;

    /// The stopper queued by an earlier [`StopperRequest`] runs on `busiest`:
    /// active_load_balance_cpu_stop().
    fn active_balance(&mut self, ctx: &mut BalanceCtx<'_>, req: StopperRequest) -> BalanceOutcome;

    /// `cpu` switches to its idle task: the idle-core bookkeeping of `__update_idle_core()`
    /// (called from `set_next_task_idle()`), whether or not the tick then stops.
    fn idle_enter(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId);

    /// `cpu` stops its tick in the idle loop and enters nohz idle: nohz_balance_enter_idle().
    /// (Leaving nohz idle is the balancer's own business: nohz_balancer_kick() calls
    /// nohz_balance_exit_idle() on the first busy tick, inside [`Balancer::tick`].)
    fn nohz_enter_idle(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId);

    /// `p` starts running on `cpu` (set_next_task): lets IDLE_RESERVE release a reservation.
    fn task_running(&mut self, _ctx: &mut BalanceCtx<'_>, _p: TaskId, _cpu: CpuId) {}

    /// The /proc/schedstat counters this balancer keeps, if any; the engine fills the
    /// per-CPU `cpu<N>` counters (schedule, wake-up and run-delay accounting) itself.
    fn schedstat_mut(&mut self) -> Option<&mut crate::schedstat::Schedstat> {
        None
    }

    /// The balancer's decision record ([`crate::check::Checks`]), if it keeps one: the engine
    /// enables it under `SimConfig::check`, reports its first violation and its counters.
    fn checks(&mut self) -> Option<&mut crate::check::Checks> {
        None
    }

    /// The balancer's trace buffer ([`crate::trace::LbTrace`]), if it keeps one: the engine
    /// enables it when it traces and drains it after each call.
    fn trace(&mut self) -> Option<&mut crate::trace::LbTrace> {
        None
    }
}

/// A boxed balancer is a balancer, so the core can run one chosen at run time.
impl<B: Balancer + ?Sized> Balancer for Box<B> {
    fn select_task_rq(
        &mut self,
        ctx: &mut BalanceCtx<'_>,
        p: TaskId,
        prev_cpu: CpuId,
        this_cpu: CpuId,
        wake_flags: WakeFlags,
    ) -> Placement {
        (**self).select_task_rq(ctx, p, prev_cpu, this_cpu, wake_flags)
    }
    fn tick(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> TickOutcome {
        (**self).tick(ctx, cpu)
    }
    fn softirq(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> BalanceOutcome {
        (**self).softirq(ctx, cpu)
    }
    fn newidle(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> BalanceOutcome {
        (**self).newidle(ctx, cpu)
    }
    fn newidle_begin(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> NewidleStep {
        (**self).newidle_begin(ctx, cpu)
    }
    fn newidle_continue(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> NewidleStep {
        (**self).newidle_continue(ctx, cpu)
    }
    fn active_balance(&mut self, ctx: &mut BalanceCtx<'_>, req: StopperRequest) -> BalanceOutcome {
        (**self).active_balance(ctx, req)
    }
    fn idle_enter(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) {
        (**self).idle_enter(ctx, cpu)
    }
    fn nohz_enter_idle(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) {
        (**self).nohz_enter_idle(ctx, cpu)
    }
    fn task_running(&mut self, ctx: &mut BalanceCtx<'_>, p: TaskId, cpu: CpuId) {
        (**self).task_running(ctx, p, cpu)
    }
    fn schedstat_mut(&mut self) -> Option<&mut crate::schedstat::Schedstat> {
        (**self).schedstat_mut()
    }
    fn checks(&mut self) -> Option<&mut crate::check::Checks> {
        (**self).checks()
    }
    fn trace(&mut self) -> Option<&mut crate::trace::LbTrace> {
        (**self).trace()
    }
}
