//! Decision records: the balancer's own invariants, checked where each decision is taken.
//!
//! Four of the invariants of lbsim's invariant suites are about what a balancing pass
//! decides, and are best checked at the point where it decides:
//!
//! 1. [`Rule::UtilSkipSingle`]: with `LB_UTIL_SKIP_SINGLE`, a migrate_util balance never
//!    picks a source runqueue with one CFS task or none (find_busiest_queue()).
//! 5. [`Rule::NewidleBailOnPending`]: with `NEWIDLE_BAIL_ON_PENDING`, a newly idle
//!    load_balance() pass never pulls onto a CPU that already had a runnable task or a
//!    pending wake-up when the pass began (at its should_we_balance()).
//! 6. [`Rule::PreferSiblingNrDiff`]: with `PREFER_SIBLING_NR_DIFF`, prefer_sibling never
//!    forces a balance (find_busiest_group()'s early exit, calculate_imbalance()'s
//!    migrate_task amount) for a task-count difference of one or less.
//! 7. [`Rule::DetachLoopMax`], [`Rule::DetachEmptiesSource`]: detach_tasks() examines at
//!    most `loop_max` tasks per pass (the `loop` count lives across LBF_NEED_BREAK and is
//!    reset by a LBF_DST_PINNED retarget or a `goto redo`), and never leaves the source
//!    runqueue empty for an idle destination.
//!
//! `lb.rs`, `lb/` and `newidle.rs` call the `Checks` methods at those points with what they
//! decided; each method re-derives the rule from the runqueues, independently of the code
//! that applied it, so a broken rule is seen even when the code that should apply it is
//! what broke. The record lives in [`crate::state::BalanceState::checks`].
//!
//! Two modes:
//! - **enabled** (`lbsim run --check`, `SimConfig::check`: the engine turns it on through
//!   [`crate::ctx::Balancer::checks`]): the first violation is kept, with the time, the
//!   CPU, the task and the decision that broke the rule, for the engine to report and stop;
//!   counters record how often each interesting situation arose (the "sometimes" side of
//!   each rule, so a test suite can assert it was not vacuous).
//! - **disabled** (the default): nothing is recorded; in debug builds the rules are still
//!   evaluated (they are O(1)) and a violation panics through `debug_assert!`.
//!
//! Nothing here changes a decision: recording is read-only for the model.

use std::fmt;

use crate::params::LbFeat;
use lbsim_rq::task::TaskId;
use lbsim_topology::{CpuId, SdFlag};

use crate::ctx::BalanceCtx;
use crate::lb::{CpuIdleType, GroupType, LbEnv, MigrationType, SdLbStats, ttwu_pending};

/// A balancer rule that a decision can break.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// With `LB_UTIL_SKIP_SINGLE`, migrate_util never picks a source with `nr_running <= 1`.
    UtilSkipSingle,
    /// With `NEWIDLE_BAIL_ON_PENDING`, a newly idle pass never pulls onto a CPU that had a
    /// runnable task or a pending wake-up when the pass began.
    NewidleBailOnPending,
    /// With `PREFER_SIBLING_NR_DIFF`, prefer_sibling never forces a balance for a task-count
    /// difference of one or less.
    PreferSiblingNrDiff,
    /// detach_tasks() examines at most `loop_max` tasks per pass.
    DetachLoopMax,
    /// detach_tasks() never empties the source runqueue for an idle destination.
    DetachEmptiesSource,
    /// The pre-v5.5 balancer (`crate::legacy`): find_busiest_queue() picks a CPU of the
    /// busiest group within `env->cpus`, other than the destination, and the imbalance
    /// find_busiest_group() handed it is not negative.
    LegacyBusiestQueue,
}

impl Rule {
    /// Every rule, in the order of the invariant list.
    pub const ALL: [Rule; 6] = [
        Rule::UtilSkipSingle,
        Rule::NewidleBailOnPending,
        Rule::PreferSiblingNrDiff,
        Rule::DetachLoopMax,
        Rule::DetachEmptiesSource,
        Rule::LegacyBusiestQueue,
    ];

    /// A short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::UtilSkipSingle => "LB_UTIL_SKIP_SINGLE",
            Rule::NewidleBailOnPending => "NEWIDLE_BAIL_ON_PENDING",
            Rule::PreferSiblingNrDiff => "PREFER_SIBLING_NR_DIFF",
            Rule::DetachLoopMax => "detach_tasks loop_max",
            Rule::DetachEmptiesSource => "detach_tasks keeps the source's last task",
            Rule::LegacyBusiestQueue => "legacy find_busiest_queue picks from the busiest group",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The first broken rule: where, when, and the decision that broke it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Simulated time of the decision (the pass's own clock), ns.
    pub time_ns: u64,
    /// The balancing CPU (the destination of the pass).
    pub cpu: CpuId,
    /// The task concerned, if one is.
    pub task: Option<TaskId>,
    /// The rule broken.
    pub rule: Rule,
    /// The decision, with the values it was taken on.
    pub decision: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ns, cpu {}: {} broken: {}",
            self.time_ns, self.cpu.0, self.rule, self.decision
        )
    }
}

/// How often each situation a rule is about arose (counted only while enabled).
///
/// These are the "sometimes" side of the rules: a suite that asserts the rules held should
/// also assert that these are non-zero summed over its cases, so it cannot pass vacuously.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckCounts {
    /// load_balance() passes from `redo:` (each should_we_balance() call).
    pub lb_passes: u64,
    /// Passes that found a busiest runqueue, per migration type ([`MigrationType::index`]).
    pub migration_types: [u64; 4],
    /// Groups classified by update_sg_lb_stats(), per [`GroupType`] (in its order).
    pub group_types: [u64; 7],
    /// Busiest groups chosen by find_busiest_group(), per [`GroupType`].
    pub busiest_group_types: [u64; 7],
    /// migrate_util passes that picked a source runqueue.
    pub migrate_util_passes: u64,
    /// Of which the source had `nr_running <= 1` (only allowed without
    /// `LB_UTIL_SKIP_SINGLE`).
    pub migrate_util_single_source: u64,
    /// Newly idle balances begun.
    pub newidle_begun: u64,
    /// Newly idle balances begun with a wake-up already pending (they return at once).
    pub newidle_begun_pending: u64,
    /// Newly idle load_balance() passes that began with a runnable task or a wake-up
    /// pending on the destination.
    pub newidle_passes_pending: u64,
    /// Of which pulled a task anyway (only allowed without `NEWIDLE_BAIL_ON_PENDING`).
    pub newidle_pulls_despite_pending: u64,
    /// prefer_sibling decisions about an idle destination, a has_spare local group and a
    /// busiest group with more than one task, whose task-count difference was at most one
    /// (the case `PREFER_SIBLING_NR_DIFF` is about).
    pub prefer_sibling_small_diff: u64,
    /// Of which forced a balance anyway (only allowed without `PREFER_SIBLING_NR_DIFF`).
    pub prefer_sibling_small_forced: u64,
    /// prefer_sibling decisions that forced a balance for a difference of two or more.
    pub prefer_sibling_forced: u64,
    /// detach_tasks() calls.
    pub detach_calls: u64,
    /// detach_tasks() passes that examined exactly `loop_max` tasks.
    pub detach_at_loop_max: u64,
    /// detach_tasks() calls for an idle destination that left the source with a single
    /// queued task and nothing running (the last task the rule keeps).
    pub detach_kept_last: u64,
    /// Passes that met a task not allowed on the destination (LBF_SOME_PINNED).
    pub some_pinned: u64,
    /// Passes that found every task pinned (LBF_ALL_PINNED).
    pub all_pinned: u64,
    /// Active balances requested (stopper requests).
    pub active_balance_requests: u64,
    /// Runqueues the pre-v5.5 find_busiest_queue() picked ([`Rule::LegacyBusiestQueue`]).
    pub legacy_busiest_queues: u64,
}

impl CheckCounts {
    /// Adds `other` to `self` (for totals over many runs).
    pub fn add(&mut self, other: &CheckCounts) {
        let add_arr = |a: &mut [u64], b: &[u64]| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        self.lb_passes += other.lb_passes;
        add_arr(&mut self.migration_types, &other.migration_types);
        add_arr(&mut self.group_types, &other.group_types);
        add_arr(&mut self.busiest_group_types, &other.busiest_group_types);
        self.migrate_util_passes += other.migrate_util_passes;
        self.migrate_util_single_source += other.migrate_util_single_source;
        self.newidle_begun += other.newidle_begun;
        self.newidle_begun_pending += other.newidle_begun_pending;
        self.newidle_passes_pending += other.newidle_passes_pending;
        self.newidle_pulls_despite_pending += other.newidle_pulls_despite_pending;
        self.prefer_sibling_small_diff += other.prefer_sibling_small_diff;
        self.prefer_sibling_small_forced += other.prefer_sibling_small_forced;
        self.prefer_sibling_forced += other.prefer_sibling_forced;
        self.detach_calls += other.detach_calls;
        self.detach_at_loop_max += other.detach_at_loop_max;
        self.detach_kept_last += other.detach_kept_last;
        self.some_pinned += other.some_pinned;
        self.all_pinned += other.all_pinned;
        self.active_balance_requests += other.active_balance_requests;
        self.legacy_busiest_queues += other.legacy_busiest_queues;
    }
}

/// What a load_balance() pass looked like when it began (see [`Checks::lb_pass_begin`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassStart {
    /// A newly idle pass whose destination had a runnable task or a pending wake-up.
    pub newidle_pending: bool,
    /// `pass.work.tasks_examined` when the current detach sequence began.
    pub examined_base: u32,
}

/// The balancer's decision record (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checks {
    /// Record violations and counters (`SimConfig::check`); otherwise only debug builds
    /// evaluate the rules, and panic on a violation.
    pub enabled: bool,
    /// The first violation seen while enabled.
    pub first_violation: Option<Violation>,
    /// The "sometimes" counters.
    pub counts: CheckCounts,
}

/// The kernel's task-count difference between the busiest and the local group, normalised
/// by their core counts: `nr_busiest - nr_local` for groups of equal size, else the rounded
/// per-core difference `(2 * (nl * B - nb * L) + nl + nb) / (nl + nb)` (at least 0), and 2
/// when the local group is empty and the busiest has more than one task.
///
/// A reference for [`Rule::PreferSiblingNrDiff`], written from the definition of
/// sibling_imbalance() (fair.c, v6.6-v6.12), independently of `lb/imbalance.rs`.
pub fn task_count_difference(
    cores_busiest: u32,
    cores_local: u32,
    nr_busiest: u32,
    nr_local: u32,
) -> i64 {
    let (b, l) = (i64::from(nr_busiest), i64::from(nr_local));
    let (nb, nl) = (i64::from(cores_busiest), i64::from(cores_local));
    if nb == nl || nb + nl == 0 {
        return (b - l).max(0);
    }
    let per_core = ((nl * b - nb * l).max(0) * 2 + nl + nb) / (nl + nb);
    if per_core <= 1 && l == 0 && b > 1 {
        2
    } else {
        per_core
    }
}

impl Checks {
    /// Whether rules are evaluated at all: when enabled, and in debug builds.
    #[inline]
    fn active(&self) -> bool {
        self.enabled || cfg!(debug_assertions)
    }

    fn count(&mut self, f: impl FnOnce(&mut CheckCounts)) {
        if self.enabled {
            f(&mut self.counts);
        }
    }

    fn violate(&mut self, v: Violation) {
        if self.enabled {
            self.first_violation.get_or_insert(v);
        } else {
            debug_assert!(false, "balancer invariant broken at {v}");
        }
    }

    /// A load_balance() pass (from `redo:`) begins at `at_ns`, before should_we_balance().
    pub fn lb_pass_begin(
        &mut self,
        ctx: &BalanceCtx<'_>,
        env: &LbEnv,
        examined: u32,
        at_ns: u64,
    ) -> PassStart {
        let mut start = PassStart {
            newidle_pending: false,
            examined_base: examined,
        };
        if !self.active() {
            return start;
        }
        self.count(|c| c.lb_passes += 1);
        if env.idle == CpuIdleType::NewlyIdle {
            let dst = env.dst_cpu;
            start.newidle_pending =
                ctx.rqs[dst.index()].nr_running > 0 || ttwu_pending(ctx, dst, at_ns);
            if start.newidle_pending {
                self.count(|c| c.newidle_passes_pending += 1);
            }
        }
        start
    }

    /// Group statistics were computed: `sgs.group_type` of one group.
    pub fn group_classified(&mut self, group_type: GroupType) {
        self.count(|c| c.group_types[group_type as usize] += 1);
    }

    /// find_busiest_group()'s prefer_sibling early exit with a has_spare local group:
    /// `forced` is whether it forced the balance. Checks [`Rule::PreferSiblingNrDiff`].
    pub fn prefer_sibling_exit(
        &mut self,
        ctx: &BalanceCtx<'_>,
        env: &LbEnv,
        sds: &SdLbStats,
        forced: bool,
        at_ns: u64,
    ) {
        if !self.active() {
            return;
        }
        let diff = sds_task_count_difference(ctx, sds);
        let small = diff <= 1;
        let interesting = env.idle.is_idle() && sds.busiest_stat.sum_nr_running > 1 && small;
        self.count(|c| {
            if interesting {
                c.prefer_sibling_small_diff += 1;
                if forced {
                    c.prefer_sibling_small_forced += 1;
                }
            } else if forced {
                c.prefer_sibling_forced += 1;
            }
        });
        if forced && small && ctx.features.enabled(LbFeat::PreferSiblingNrDiff) {
            self.violate(Violation {
                time_ns: at_ns,
                cpu: env.dst_cpu,
                task: None,
                rule: Rule::PreferSiblingNrDiff,
                decision: format!(
                    "find_busiest_group at level {} forced a balance for prefer_sibling with a \
                     task-count difference of {diff} (busiest {} tasks, local {} tasks)",
                    env.level, sds.busiest_stat.sum_nr_running, sds.local_stat.sum_nr_running
                ),
            });
        }
    }

    /// calculate_imbalance() set `env.imbalance` and `env.migration_type`. Checks
    /// [`Rule::PreferSiblingNrDiff`] on the amount: where the migrate_task imbalance comes
    /// from the prefer-sibling rule, a difference of one or less must give nothing to move.
    pub fn imbalance_calculated(
        &mut self,
        ctx: &BalanceCtx<'_>,
        env: &LbEnv,
        sds: &SdLbStats,
        at_ns: u64,
    ) {
        if !self.active() || !ctx.features.enabled(LbFeat::PreferSiblingNrDiff) {
            return;
        }
        let (b, l) = (&sds.busiest_stat, &sds.local_stat);
        let early = matches!(
            b.group_type,
            GroupType::MisfitTask
                | GroupType::AsymPacking
                | GroupType::SmtBalance
                | GroupType::Imbalanced
        );
        let sd = env.sd(ctx.topo);
        let util_path = b.group_type > GroupType::FullyBusy && !sd.flags.contains(SdFlag::ShareLlc);
        let sibling_path = sds.prefer_sibling
            && !early
            && l.group_type == GroupType::HasSpare
            && !util_path
            && env.migration_type == MigrationType::Task;
        if !sibling_path || env.imbalance <= 0 {
            return;
        }
        let diff = sds_task_count_difference(ctx, sds);
        if diff <= 1 {
            self.violate(Violation {
                time_ns: at_ns,
                cpu: env.dst_cpu,
                task: None,
                rule: Rule::PreferSiblingNrDiff,
                decision: format!(
                    "calculate_imbalance at level {} asked prefer_sibling to move {} task(s) \
                     for a task-count difference of {diff} (busiest {} tasks, local {} tasks)",
                    env.level, env.imbalance, b.sum_nr_running, l.sum_nr_running
                ),
            });
        }
    }

    /// find_busiest_queue() chose `busiest` (find_busiest_group() having classified the
    /// busiest group as `busiest_group_type`). Checks [`Rule::UtilSkipSingle`].
    pub fn busiest_queue(
        &mut self,
        ctx: &BalanceCtx<'_>,
        env: &LbEnv,
        busiest_group_type: GroupType,
        busiest: CpuId,
        at_ns: u64,
    ) {
        if !self.active() {
            return;
        }
        let mt = env.migration_type;
        self.count(|c| {
            c.migration_types[mt.index()] += 1;
            c.busiest_group_types[busiest_group_type as usize] += 1;
        });
        if mt != MigrationType::Util {
            return;
        }
        let nr = ctx.rqs[busiest.index()].cfs.h_nr_running;
        self.count(|c| {
            c.migrate_util_passes += 1;
            if nr <= 1 {
                c.migrate_util_single_source += 1;
            }
        });
        if nr <= 1 && ctx.features.enabled(LbFeat::LbUtilSkipSingle) {
            self.violate(Violation {
                time_ns: at_ns,
                cpu: env.dst_cpu,
                task: ctx.rqs[busiest.index()].curr,
                rule: Rule::UtilSkipSingle,
                decision: format!(
                    "find_busiest_queue at level {} picked cpu {} (nr_running {nr}, util {}) \
                     as the migrate_util source for imbalance {}",
                    env.level,
                    busiest.0,
                    ctx.rqs[busiest.index()].cpu_util_cfs_boost(ctx.tasks),
                    env.imbalance
                ),
            });
        }
    }

    /// The pre-v5.5 find_busiest_queue() (fair.c v4.6-v5.4) chose `busiest` from the group
    /// spanning `group_span`. Checks [`Rule::LegacyBusiestQueue`], from the definitions
    /// rather than the code that applied them: v4.6-v5.4 find_busiest_queue() walks
    /// `for_each_cpu_and(i, sched_group_cpus(group), env->cpus)` (`sched_group_span()` from
    /// v4.13); the destination is in
    /// the local group, never the busiest (load_balance()'s `BUG_ON(busiest ==
    /// env->dst_cpu)`); and calculate_imbalance() takes its amount as a minimum of
    /// excesses over averages that its early exit has made positive, or as
    /// fix_small_imbalance()'s `busiest->load_per_task`, so it is never negative.
    pub fn legacy_busiest_queue(
        &mut self,
        ctx: &BalanceCtx<'_>,
        env: &LbEnv,
        group_span: lbsim_topology::SpanId,
        busiest: CpuId,
        at_ns: u64,
    ) {
        if !self.active() {
            return;
        }
        self.count(|c| c.legacy_busiest_queues += 1);
        let in_group = ctx.topo.span(group_span).test(busiest);
        let allowed = env.cpus.test(busiest);
        if in_group && allowed && busiest != env.dst_cpu && env.imbalance >= 0 {
            return;
        }
        self.violate(Violation {
            time_ns: at_ns,
            cpu: env.dst_cpu,
            task: None,
            rule: Rule::LegacyBusiestQueue,
            decision: format!(
                "find_busiest_queue at level {} picked cpu {} (in the busiest group: {in_group}, \
                 in env->cpus: {allowed}) for destination cpu {} with imbalance {}",
                env.level, busiest.0, env.dst_cpu.0, env.imbalance
            ),
        });
    }

    /// detach_tasks() returned `detached`; `start.examined_base` and `examined` are
    /// `pass.work.tasks_examined` at the start of this detach sequence and now. Checks
    /// [`Rule::DetachLoopMax`] and [`Rule::DetachEmptiesSource`].
    pub fn detached(
        &mut self,
        ctx: &BalanceCtx<'_>,
        env: &LbEnv,
        start: &PassStart,
        examined: u32,
        detached: u32,
        at_ns: u64,
    ) {
        if !self.active() {
            return;
        }
        let n = examined - start.examined_base;
        let src = &ctx.rqs[env.src_cpu.index()];
        let (some_pinned, at_max) = (
            env.flags & crate::lb::lbf::SOME_PINNED != 0,
            n == env.loop_max,
        );
        let kept_last = env.idle.is_idle() && src.nr_running == 1 && src.curr.is_none();
        self.count(|c| {
            c.detach_calls += 1;
            c.detach_at_loop_max += u64::from(at_max);
            c.detach_kept_last += u64::from(kept_last);
            c.some_pinned += u64::from(some_pinned);
        });
        if n > env.loop_max {
            self.violate(Violation {
                time_ns: at_ns,
                cpu: env.dst_cpu,
                task: env.tasks.last().copied(),
                rule: Rule::DetachLoopMax,
                decision: format!(
                    "detach_tasks from cpu {} at level {} examined {n} tasks with loop_max {} \
                     (source nr_running {})",
                    env.src_cpu.0, env.level, env.loop_max, src.nr_running
                ),
            });
        }
        if env.idle.is_idle() && detached > 0 && src.nr_running == 0 {
            self.violate(Violation {
                time_ns: at_ns,
                cpu: env.dst_cpu,
                task: env.tasks.last().copied(),
                rule: Rule::DetachEmptiesSource,
                decision: format!(
                    "detach_tasks for an idle destination ({:?}) at level {} took the last \
                     {detached} task(s) of cpu {}",
                    env.idle, env.level, env.src_cpu.0
                ),
            });
        }
    }

    /// Detached tasks were attached to `env.dst_cpu` by a pass that began as `start`.
    /// Checks [`Rule::NewidleBailOnPending`].
    pub fn attached(
        &mut self,
        ctx: &BalanceCtx<'_>,
        env: &LbEnv,
        start: &PassStart,
        task: Option<TaskId>,
        at_ns: u64,
    ) {
        if !self.active() || env.idle != CpuIdleType::NewlyIdle || !start.newidle_pending {
            return;
        }
        self.count(|c| c.newidle_pulls_despite_pending += 1);
        if ctx.features.enabled(LbFeat::NewidleBailOnPending) {
            self.violate(Violation {
                time_ns: at_ns,
                cpu: env.dst_cpu,
                task,
                rule: Rule::NewidleBailOnPending,
                decision: format!(
                    "newly idle load_balance at level {} pulled from cpu {} although cpu {} \
                     had a runnable task or a pending wake-up when the pass began",
                    env.level, env.src_cpu.0, env.dst_cpu.0
                ),
            });
        }
    }

    /// The pass ended with every task examined pinned (LBF_ALL_PINNED).
    pub fn all_pinned(&mut self) {
        self.count(|c| c.all_pinned += 1);
    }

    /// The pass asked for the active-balance stopper.
    pub fn active_balance_requested(&mut self) {
        self.count(|c| c.active_balance_requests += 1);
    }

    /// A newly idle balance begins; `pending` is whether a wake-up is already pending.
    pub fn newidle_begin(&mut self, pending: bool) {
        self.count(|c| {
            c.newidle_begun += 1;
            c.newidle_begun_pending += u64::from(pending);
        });
    }
}

fn sds_task_count_difference(ctx: &BalanceCtx<'_>, sds: &SdLbStats) -> i64 {
    let cores = |g: Option<lbsim_topology::GroupId>| g.map_or(0, |g| ctx.topo.group(g).cores);
    task_count_difference(
        cores(sds.busiest),
        cores(sds.local),
        sds.busiest_stat.sum_nr_running,
        sds.local_stat.sum_nr_running,
    )
}

#[cfg(test)]
mod tests;
