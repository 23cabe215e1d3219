//! The slow path of task placement: the idlest group and CPU, walking down the domains, as
//! fork and exec (and any domain with `SD_BALANCE_WAKE`) place a task; and the capacity
//! fitness tests the fast path shares.
//!
//! Follows kernel/sched/fair.c of v6.12 (read in a 6.12.67 tree; the functions modelled here
//! carry no out-of-tree code there), cross-checked with v6.6, where these functions have the
//! same logic under their older names:
//! - `sched_balance_find_dst_cpu()` (`find_idlest_cpu()` before v6.10),
//! - `sched_balance_find_dst_group()` (`find_idlest_group()`), with `update_sg_wakeup_stats()`
//!   and `update_pick_idlest()`,
//! - `sched_balance_find_dst_group_cpu()` (`find_idlest_group_cpu()`),
//! - `util_fits_cpu()`, `asym_fits_cpu()`, `task_fits_cpu()`, `sync_entity_load_avg()`,
//!   `cpu_load_without()`, `task_running_on_cpu()`, `idle_cpu_without()`.
//!
//! The group classification, `adjust_numa_imbalance()` and the load getters are the load
//! balancer's ([`crate::lb`]): the kernel shares them between both paths, and so do we.
//!
//! Idle depth comes from the core model: `rq->idle_state` ([`lbsim_rq::Rq::idle_get_state`])
//! is the state the cpuidle governor put the CPU in.
//!
//! Deliberately left out: uclamp (`uclamp_is_used()` is false, so `util_fits_cpu()` is
//! `fits_capacity(util, capacity_of(cpu))` and never returns -1), core scheduling cookies
//! (always match), NUMA balancing
//! (`p->numa_preferred_nid` is `NUMA_NO_NODE`), and group scheduling (`task_h_load()` is the
//! task's `load_avg`).

use lbsim_rq::TaskId;
use lbsim_rq::task::OnRq;
use lbsim_topology::machine::MAX_CPUS;
use lbsim_topology::{CpuId, GroupId, SchedDomain, SchedGroup, SdFlag, Topology};

use crate::cost::WorkAccount;
use crate::ctx::BalanceCtx;
use crate::lb::{
    GroupType, NICE_0_LOAD, SCHED_CAPACITY_SCALE, SgLbStats, adjust_numa_imbalance, capacity_of,
    cpu_load, fits_capacity, group_classify, idle_cpu, idle_cpu_of, ttwu_pending,
};
use crate::params::LbFeat;
use crate::rqs::{SpanSums, SumsView};
use crate::state::BalanceState;

mod idlest_index;
use idlest_index::DstPick;
pub(crate) use idlest_index::IdlestIndex;

/// `NR_CPUS`: the kernel's compile-time CPU limit, which `p->nr_cpus_allowed` is compared
/// with to tell a task with restricted affinity (lbsim's largest machine size).
pub const NR_CPUS: u32 = MAX_CPUS as u32;

// ---------------------------------------------------------------------------
// Capacity fitness (shared with the fast path).
// ---------------------------------------------------------------------------

/// `sched_asym_cpucap_active()`: the machine has CPUs of different capacities (a domain was
/// built with `SD_ASYM_CPUCAPACITY`).
pub fn sched_asym_cpucap_active(ctx: &BalanceCtx<'_>) -> bool {
    ctx.topo.has_asym_cpucapacity()
}

/// Follows fair.c: util_fits_cpu() (v6.6-v6.12) with uclamp's defaults (`uclamp_min` 0,
/// `uclamp_max` 1024): uclamp is not modelled, `uclamp_is_used()` is false, and the kernel
/// then returns `fits_capacity(util, capacity_of(cpu))` (1 or 0; never -1, which only a
/// `uclamp_min` boost can produce).
pub fn util_fits_cpu(ctx: &BalanceCtx<'_>, util: u64, cpu: CpuId) -> i32 {
    i32::from(fits_capacity(util, capacity_of(ctx, cpu)))
}

/// Follows fair.c: asym_fits_cpu() (v6.6-v6.12): on an asymmetric-capacity machine the task's
/// utilization (`util`, its `task_util_est()`) must fit the CPU; elsewhere every CPU fits.
pub fn asym_fits_cpu(ctx: &BalanceCtx<'_>, util: u64, cpu: CpuId) -> bool {
    if sched_asym_cpucap_active(ctx) {
        return util_fits_cpu(ctx, util, cpu) > 0;
    }
    true
}

/// Follows fair.c: task_fits_cpu() (v6.6-v6.12): `util_fits_cpu(task_util_est(p), uclamp
/// defaults, cpu) > 0`.
pub fn task_fits_cpu(ctx: &BalanceCtx<'_>, p: TaskId, cpu: CpuId) -> bool {
    util_fits_cpu(ctx, task_util_est(ctx, p), cpu) > 0
}

/// `task_util_est(p)`: `max(util_avg, util_est)` of the task's PELT signal.
pub fn task_util_est(ctx: &BalanceCtx<'_>, p: TaskId) -> u64 {
    lbsim_pelt::task_util_est(&ctx.tasks[p].se.avg)
}

/// Follows fair.c: sync_entity_load_avg() (v6.6-v6.12): decay a dequeued task's PELT signal
/// to the `last_update_time` of the cfs_rq it last ran on (no lock on that runqueue is taken
/// in the kernel; lbsim reads it directly).
pub fn sync_entity_load_avg(ctx: &mut BalanceCtx<'_>, p: TaskId) {
    let cpu = ctx.tasks[p].cpu;
    let last_update_time = ctx.rqs[cpu.index()].task_cfs_last_update_time(ctx.tasks, p);
    let se = &mut ctx.tasks[p].se;
    let weight = se.se_weight();
    lbsim_pelt::update_load_avg_blocked_se(last_update_time, &mut se.avg, weight);
}

// ---------------------------------------------------------------------------
// Per-CPU quantities "without p".
// ---------------------------------------------------------------------------

/// Follows fair.c: cpu_load_without() (v6.6-v6.12): the CPU's load without `p`'s contribution,
/// if `p` last ran here and is not new. The load is [`crate::lb::cpu_load`], so
/// `LB_TIP_AVG_HIGH` tips it as it tips every `cpu_load()` read (the 2016 patch changed the
/// function this one calls).
#[inline]
pub fn cpu_load_without(ctx: &BalanceCtx<'_>, cpu: CpuId, p: TaskId) -> u64 {
    let t = &ctx.tasks[p];
    if t.cpu != cpu || t.se.avg.last_update_time == 0 {
        return cpu_load(ctx, cpu);
    }
    cpu_load(ctx, cpu).saturating_sub(crate::lb::cpu::task_h_load(ctx, p))
}

/// Follows fair.c: task_running_on_cpu() (v6.6-v6.12): 1 if `p` counts in `cpu`'s
/// `nr_running` (it last ran there, is not new, and is queued).
pub fn task_running_on_cpu(ctx: &BalanceCtx<'_>, cpu: CpuId, p: TaskId) -> u32 {
    let t = &ctx.tasks[p];
    if t.cpu != cpu || t.se.avg.last_update_time == 0 {
        return 0;
    }
    u32::from(t.on_rq == OnRq::Queued)
}

/// Follows fair.c: idle_cpu_without() (v6.6-v6.12): `cpu` would be idle without `p` (the
/// caller has checked that `nr_running` without `p` is 0): it runs the idle task or `p`, and
/// has no wake-up pending at the decision time.
pub fn idle_cpu_without(ctx: &BalanceCtx<'_>, cpu: CpuId, p: TaskId) -> bool {
    let rq = &ctx.rqs[cpu.index()];
    if rq.curr.is_some() && rq.curr != Some(p) {
        return false;
    }
    !ttwu_pending(ctx, cpu, ctx.now_ns)
}

/// `available_idle_cpu(cpu)` at the decision time: `idle_cpu()` (no paravirt preemption).
pub fn available_idle_cpu(ctx: &BalanceCtx<'_>, cpu: CpuId) -> bool {
    idle_cpu(ctx, cpu, ctx.now_ns)
}

/// `sched_idle_cpu(cpu)`: only `SCHED_IDLE` tasks are runnable there.
pub fn sched_idle_cpu(ctx: &BalanceCtx<'_>, cpu: CpuId) -> bool {
    ctx.rqs[cpu.index()].sched_idle_rq()
}

// ---------------------------------------------------------------------------
// The idlest group.
// ---------------------------------------------------------------------------

/// Follows fair.c: update_sg_wakeup_stats() (v6.6-v6.12): the statistics of `group` as if
/// `p` were not queued anywhere: load, util and runnable without `p`, task counts without
/// `p`, idle CPUs (ignoring `p`), and on an asymmetric-capacity domain a misfit mark unless
/// `p` fits one of the group's CPUs. Every CPU of the group is read (`work`). Deliberately
/// differs in how: where `p` adds nothing to the group, the sums come from those kept per
/// group ([`crate::rqs`]; checked against the CPU loop in debug builds).
pub fn update_sg_wakeup_stats(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    sd: &SchedDomain,
    group: &SchedGroup,
    p: TaskId,
    work: &mut WorkAccount,
) -> SgLbStats {
    let inv = WakeupInvariants::of(ctx, sd, p);
    update_sg_wakeup_stats_with(ctx, st, sd, group, p, &inv, &mut None, work)
}

/// What [`update_sg_wakeup_stats`] reads the same way for every group of one
/// sched_balance_find_dst_group() call (nothing it reads changes during the call: the
/// context is borrowed shared), so that the caller reads it once.
#[derive(Clone, Copy, Debug)]
struct WakeupInvariants {
    /// The domain has `SD_ASYM_CPUCAPACITY`.
    asym: bool,
    /// `p`'s CPU (`task_cpu(p)`).
    p_cpu: CpuId,
    /// `p` adds to its CPU's sums: it is not new (cpu_load_without() and the others
    /// subtract it), or it is that CPU's current task (idle_cpu_without()).
    p_counts: bool,
    /// The group sums may answer at all: no asymmetric capacities, no wake-up pending
    /// beyond the runqueues' own flags.
    sums_usable: bool,
    /// [`crate::rqs::span_sums_min_cpus`].
    min_cpus: u32,
    /// `LB_TIP_AVG_HIGH`.
    tip_avg_high: bool,
}

impl WakeupInvariants {
    fn of(ctx: &BalanceCtx<'_>, sd: &SchedDomain, p: TaskId) -> WakeupInvariants {
        let asym = sd.flags.contains(SdFlag::AsymCpucapacity);
        let t = &ctx.tasks[p];
        WakeupInvariants {
            asym,
            p_cpu: t.cpu,
            p_counts: t.se.avg.last_update_time != 0 || ctx.rqs[t.cpu.index()].curr == Some(p),
            sums_usable: !asym && ctx.pending.none_pending(),
            min_cpus: crate::rqs::span_sums_min_cpus(ctx.topo),
            tip_avg_high: ctx.features.enabled(crate::params::LbFeat::LbTipAvgHigh),
        }
    }
}

/// [`update_sg_wakeup_stats`] with its invariants read by the caller, and the group sums'
/// view (`view`) taken by the first group that reads it and kept for the call's other groups.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn update_sg_wakeup_stats_with<'c>(
    ctx: &'c BalanceCtx<'_>,
    st: &BalanceState,
    sd: &SchedDomain,
    group: &SchedGroup,
    p: TaskId,
    inv: &WakeupInvariants,
    view: &mut Option<SumsView<'c>>,
    work: &mut WorkAccount,
) -> SgLbStats {
    let Some(s) = wakeup_sums_from_spans(ctx, group, inv, view) else {
        return update_sg_wakeup_stats_by_cpu(ctx, st, sd, group, p, inv.asym, work);
    };
    let mut sgs = s.summed_stats();
    debug_assert_eq!(
        (sgs, s.nr_cpus),
        wakeup_sums_cpu_by_cpu(ctx, group, p, inv.asym),
        "the group sums differ from the CPU loop"
    );
    work.cpus_scanned += s.nr_cpus;
    wakeup_stats_finish(st, sd, group, &mut sgs);
    sgs
}

/// [`update_sg_wakeup_stats_with`] through the CPU loop ([`wakeup_sums`]). Not inlined, so
/// that its caller's path through the group sums (the common one on big machines) stays
/// short.
#[inline(never)]
fn update_sg_wakeup_stats_by_cpu(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    sd: &SchedDomain,
    group: &SchedGroup,
    p: TaskId,
    asym: bool,
    work: &mut WorkAccount,
) -> SgLbStats {
    let (mut sgs, scanned) = wakeup_sums(ctx, group, p, asym);
    debug_assert_eq!(
        (sgs, scanned),
        wakeup_sums_cpu_by_cpu(ctx, group, p, asym),
        "the CPU loop with p read once differs from the kernel's"
    );
    work.cpus_scanned += scanned;
    wakeup_stats_finish(st, sd, group, &mut sgs);
    sgs
}

/// The end of update_sg_wakeup_stats(), once the CPUs are summed: the group's capacity and
/// weight, its type, and for a fully busy or overloaded group its average load.
#[inline(always)]
fn wakeup_stats_finish(
    st: &BalanceState,
    sd: &SchedDomain,
    group: &SchedGroup,
    sgs: &mut SgLbStats,
) {
    let sgc = st.sgc(group.sgc);
    sgs.group_capacity = sgc.capacity;
    sgs.group_weight = group.group_weight;
    sgs.group_type = group_classify(sd.imbalance_pct, sgc.imbalance, sgs);
    if matches!(sgs.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
        sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity;
    }
}

/// The CPU loop of update_sg_wakeup_stats(), and the CPUs it read, with what it reads of
/// `p` read once (lbsim's): `p` adds to no CPU but its own (`task_cpu(p)`), so on every other
/// CPU the getters "without `p`" are the plain ones (`cpu_load()`, `cpu_util_cfs()`,
/// `cpu_runnable()`), `task_running_on_cpu()` is 0 and idle_cpu_without() tests `curr` and a
/// pending wake-up; `p`'s own CPU takes the kernel's calls. Checked against
/// [`wakeup_sums_cpu_by_cpu`] in debug builds.
fn wakeup_sums(
    ctx: &BalanceCtx<'_>,
    group: &SchedGroup,
    p: TaskId,
    asym: bool,
) -> (SgLbStats, u32) {
    let mut sgs = SgLbStats::default();
    let mut scanned = 0;
    if asym {
        sgs.group_misfit_task_load = 1;
    }
    let p_cpu = ctx.tasks[p].cpu;
    let none_pending = ctx.pending.none_pending();
    let tip_avg_high = ctx.features.enabled(LbFeat::LbTipAvgHigh);
    for &i in ctx.topo.span_cpus(group.span) {
        scanned += 1;
        let rq = &ctx.rqs[i.index()];
        if i == p_cpu {
            add_cpu_without(ctx, i, p, &mut sgs);
        } else {
            sgs.group_load += rq.cpu_load_lb(tip_avg_high);
            sgs.group_util += rq.cpu_util_cfs(ctx.tasks);
            sgs.group_runnable += rq.cpu_runnable();
            sgs.sum_h_nr_running += rq.cfs.h_nr_running;
            sgs.sum_nr_running += rq.nr_running;
            // idle_cpu_without(): `curr` is the idle task or `p`, no wake-up pending.
            if rq.nr_running == 0
                && (rq.curr.is_none() || rq.curr == Some(p))
                && !rq.ttwu_pending()
                && (none_pending || !ctx.pending.ttwu_pending_at(i, ctx.now_ns))
            {
                sgs.idle_cpus += 1;
            }
        }
        if asym && sgs.group_misfit_task_load != 0 && task_fits_cpu(ctx, p, i) {
            sgs.group_misfit_task_load = 0;
        }
    }
    (sgs, scanned)
}

/// One CPU of update_sg_wakeup_stats()'s loop as the kernel reads it (v6.6-v6.12): the
/// getters "without `p`" (cpu_load_without(), cpu_util_without(), cpu_runnable_without()),
/// the task counts less task_running_on_cpu(), and idle_cpu_without() when nothing else runs.
#[inline]
fn add_cpu_without(ctx: &BalanceCtx<'_>, i: CpuId, p: TaskId, sgs: &mut SgLbStats) {
    let rq = &ctx.rqs[i.index()];
    sgs.group_load += cpu_load_without(ctx, i, p);
    sgs.group_util += rq.cpu_util_without(ctx.tasks, p);
    sgs.group_runnable += rq.cpu_runnable_without(ctx.tasks, p);
    let local = task_running_on_cpu(ctx, i, p);
    sgs.sum_h_nr_running += rq.cfs.h_nr_running - local;
    let nr_running = rq.nr_running - local;
    sgs.sum_nr_running += nr_running;
    if nr_running == 0 && idle_cpu_without(ctx, i, p) {
        sgs.idle_cpus += 1;
    }
}

/// The CPU loop of update_sg_wakeup_stats(), CPU by CPU, as the kernel runs it; and the
/// CPUs it read (what debug builds compare the faster ways with).
fn wakeup_sums_cpu_by_cpu(
    ctx: &BalanceCtx<'_>,
    group: &SchedGroup,
    p: TaskId,
    asym: bool,
) -> (SgLbStats, u32) {
    let mut sgs = SgLbStats::default();
    let mut scanned = 0;
    if asym {
        sgs.group_misfit_task_load = 1;
    }
    for &i in ctx.topo.span_cpus(group.span) {
        scanned += 1;
        add_cpu_without(ctx, i, p, &mut sgs);
        if asym && sgs.group_misfit_task_load != 0 && task_fits_cpu(ctx, p, i) {
            sgs.group_misfit_task_load = 0;
        }
    }
    (sgs, scanned)
}

/// The group sums of [`crate::rqs::Rqs`] for `group`, when they give the CPU loop's result:
/// `p` adds nothing to any CPU of the group (it is on none of them, or it has never been
/// attached and runs nowhere), no wake-up is pending beyond the runqueues' own flags, and the
/// domain has no asymmetric capacities (misfit needs each CPU). `None` otherwise.
#[inline(always)]
fn wakeup_sums_from_spans<'v, 'c: 'v>(
    ctx: &'c BalanceCtx<'_>,
    group: &SchedGroup,
    inv: &WakeupInvariants,
    view: &'v mut Option<SumsView<'c>>,
) -> Option<&'v SpanSums> {
    if !inv.sums_usable
        || group.group_weight < inv.min_cpus
        || (inv.p_counts && ctx.topo.span(group.span).test(inv.p_cpu))
    {
        return None;
    }
    view.get_or_insert_with(|| ctx.rqs.sums_view(ctx.topo, ctx.tasks, inv.tip_avg_high))
        .get(group.span)
}

/// `p` may run on every CPU (`p->nr_cpus_allowed` is the machine's CPU count), so that every
/// span is a subset of its mask without testing it (lbsim's shortcut: most tasks are allowed
/// every CPU; checked in debug builds).
#[inline]
pub(crate) fn allowed_everywhere(ctx: &BalanceCtx<'_>, p: TaskId) -> bool {
    let t = &ctx.tasks[p];
    let full = t.nr_cpus_allowed as usize == t.cpus_mask.nr_cpu_ids();
    debug_assert!(!full || t.cpus_mask.weight() == t.cpus_mask.nr_cpu_ids());
    full
}

/// Follows fair.c: update_pick_idlest() (v6.6-v6.12): whether `group` (with `sgs`) is idler
/// than the idlest so far: a lower group type; at equal type the lower `avg_load`
/// (fully_busy, overloaded), the larger `max_capacity` (misfit), or the more idle CPUs and
/// then the lower util (has_spare). The other types never occur on this path. `idlest` is the
/// idlest group so far (a group of `topo`), looked up only for misfit's `max_capacity`.
#[inline]
pub fn update_pick_idlest(
    st: &BalanceState,
    topo: &Topology,
    idlest: Option<GroupId>,
    idlest_sgs: &SgLbStats,
    group: &SchedGroup,
    sgs: &SgLbStats,
) -> bool {
    if sgs.group_type < idlest_sgs.group_type {
        return true;
    }
    if sgs.group_type > idlest_sgs.group_type {
        return false;
    }
    match sgs.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => {
            if idlest_sgs.avg_load <= sgs.avg_load {
                return false;
            }
        }
        GroupType::Imbalanced | GroupType::AsymPacking | GroupType::SmtBalance => return false,
        GroupType::MisfitTask => {
            // The kernel dereferences `idlest`; the sentinel (overloaded) never compares
            // equal to misfit, so an idlest group exists here.
            let idlest_max = idlest.map_or(0, |g| st.sgc(topo.group(g).sgc).max_capacity);
            if idlest_max >= st.sgc(group.sgc).max_capacity {
                return false;
            }
        }
        GroupType::HasSpare => {
            if idlest_sgs.idle_cpus > sgs.idle_cpus {
                return false;
            }
            if idlest_sgs.idle_cpus == sgs.idle_cpus && idlest_sgs.group_util <= sgs.group_util {
                return false;
            }
        }
    }
    true
}

/// Follows fair.c: sched_balance_find_dst_group() (v6.10-v6.12; find_idlest_group() in v6.6):
/// the idlest group of `sd` (a domain of `this_cpu`) for `p`, or `None` to stay in the local
/// group.
///
/// Groups without a CPU in `p`'s affinity are skipped. The idlest non-local group is compared
/// with the local one: a lower type wins outright; at equal type, fully_busy/overloaded move
/// only if the idlest is lighter by the imbalance allowance (`1024 * (pct - 100) / 100`) and
/// by `imbalance_pct`, and on `SD_NUMA` never if the idlest plus the allowance is not lighter;
/// misfit moves to a larger `max_capacity`; has_spare moves to more idle CPUs, except that on
/// `SD_NUMA` the task stays while `adjust_numa_imbalance()` allows the idle-CPU difference
/// (with `imb_numa_nr` capped by the task's allowed CPUs in the local group).
pub fn sched_balance_find_dst_group(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    sd: &SchedDomain,
    p: TaskId,
    this_cpu: CpuId,
    work: &mut WorkAccount,
) -> Option<GroupId> {
    let pick = find_dst_group_loop(ctx, st, sd, p, this_cpu, work);
    find_dst_group_decide(ctx, st, sd, p, &pick)
}

/// sched_balance_find_dst_group()'s loop over the groups of `sd`: the idlest non-local group
/// allowed to `p` by update_pick_idlest() (from overloaded with `avg_load` `u32::MAX`), and
/// the local group, with their statistics.
#[inline(always)]
fn find_dst_group_loop(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    sd: &SchedDomain,
    p: TaskId,
    this_cpu: CpuId,
    work: &mut WorkAccount,
) -> DstPick {
    let topo = ctx.topo;
    let cpus_mask = &ctx.tasks[p].cpus_mask;
    let mut pick = DstPick {
        idlest_sgs: SgLbStats {
            avg_load: u64::from(u32::MAX),
            group_type: GroupType::Overloaded,
            ..SgLbStats::default()
        },
        ..DstPick::default()
    };
    work.domains += 1;
    // Every group holds a CPU of the domain's span (its own in a partition, the CPU it was
    // built from in an overlapping domain), so when `p` may run on the whole span every
    // group intersects its mask (lbsim's shortcut: one test per domain, not per group;
    // checked in debug builds).
    let all_allowed = allowed_everywhere(ctx, p) || topo.span_is_subset(sd.span, cpus_mask);
    let inv = WakeupInvariants::of(ctx, sd, p);
    let mut view = None;
    for gid in topo.group_ids(sd) {
        let group = topo.group(gid);
        let span = topo.span(group.span);
        debug_assert!(!all_allowed || span.intersects(cpus_mask));
        if !all_allowed && !span.intersects(cpus_mask) {
            continue;
        }
        let local_group = span.test(this_cpu);
        let sgs = update_sg_wakeup_stats_with(ctx, st, sd, group, p, &inv, &mut view, work);
        if local_group {
            pick.local = Some(gid);
            pick.local_sgs = sgs;
        } else if update_pick_idlest(st, topo, pick.idlest, &pick.idlest_sgs, group, &sgs) {
            pick.idlest = Some(gid);
            pick.idlest_sgs = sgs;
        }
    }
    pick
}

/// sched_balance_find_dst_group() with the group loop answered by the index
/// ([`IdlestIndex`]) where no group's statistics depend on `p`: `p` may run on every CPU of
/// `sd` and adds nothing to any of them (it is new, or on no CPU of `sd`), no wake-up is
/// pending beyond the runqueues' own flags, and `sd` is neither `SD_ASYM_CPUCAPACITY` nor
/// `SD_OVERLAP` (whose groups the kernel builds for each CPU apart, so that no two CPUs
/// share a list). Debug builds run the loop too and compare.
fn find_dst_group_indexed(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    sd: &SchedDomain,
    p: TaskId,
    this_cpu: CpuId,
    work: &mut WorkAccount,
) -> Option<GroupId> {
    if sd.nr_groups() < idlest_index::MIN_GROUPS {
        return sched_balance_find_dst_group(ctx, st, sd, p, this_cpu, work);
    }
    let topo = ctx.topo;
    let inv = WakeupInvariants::of(ctx, sd, p);
    let usable = inv.sums_usable
        && !sd.flags.contains(SdFlag::Overlap)
        && !(inv.p_counts && topo.span(sd.span).test(inv.p_cpu))
        && (allowed_everywhere(ctx, p) || topo.span_is_subset(sd.span, &ctx.tasks[p].cpus_mask));
    let before = *work;
    let pick = if usable {
        st.idlest_index
            .borrow_mut()
            .pick(ctx, st, sd, p, this_cpu, &inv, work)
    } else {
        None
    };
    let Some(pick) = pick else {
        return sched_balance_find_dst_group(ctx, st, sd, p, this_cpu, work);
    };
    if cfg!(debug_assertions) {
        let mut w = before;
        let by_loop = find_dst_group_loop(ctx, st, sd, p, this_cpu, &mut w);
        assert_eq!(
            pick, by_loop,
            "the idlest-group index differs from the loop"
        );
        assert_eq!(
            *work, w,
            "the idlest-group index charges differently from the loop"
        );
    }
    find_dst_group_decide(ctx, st, sd, p, &pick)
}

/// The end of sched_balance_find_dst_group(): the idlest group against the local one.
#[inline(always)]
fn find_dst_group_decide(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    sd: &SchedDomain,
    p: TaskId,
    pick: &DstPick,
) -> Option<GroupId> {
    let topo = ctx.topo;
    let cpus_mask = &ctx.tasks[p].cpus_mask;
    let (local_sgs, idlest_sgs) = (&pick.local_sgs, &pick.idlest_sgs);
    let idlest = pick.idlest?;
    let Some(local) = pick.local else {
        return Some(idlest);
    };
    if local_sgs.group_type < idlest_sgs.group_type {
        return None;
    }
    if local_sgs.group_type > idlest_sgs.group_type {
        return Some(idlest);
    }
    let pct = u64::from(sd.imbalance_pct);
    match local_sgs.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => {
            let imbalance = NICE_0_LOAD * (pct - 100) / 100;
            if sd.flags.contains(SdFlag::Numa)
                && idlest_sgs.avg_load + imbalance >= local_sgs.avg_load
            {
                return None;
            }
            if idlest_sgs.avg_load >= local_sgs.avg_load + imbalance {
                return None;
            }
            if 100 * local_sgs.avg_load <= pct * idlest_sgs.avg_load {
                return None;
            }
        }
        GroupType::Imbalanced | GroupType::AsymPacking | GroupType::SmtBalance => return None,
        GroupType::MisfitTask => {
            let local_max = st.sgc(topo.group(local).sgc).max_capacity;
            if local_max >= st.sgc(topo.group(idlest).sgc).max_capacity {
                return None;
            }
        }
        GroupType::HasSpare => {
            if sd.flags.contains(SdFlag::Numa) {
                // CONFIG_NUMA_BALANCING's preferred-node checks are no-ops: no task has a
                // preferred node (NUMA_NO_NODE).
                let mut imb_numa_nr = i64::from(sd.imb_numa_nr);
                if ctx.tasks[p].nr_cpus_allowed != NR_CPUS {
                    let allowed_local = topo.span(topo.group(local).span).weight_and(cpus_mask);
                    imb_numa_nr = imb_numa_nr.min(allowed_local as i64);
                }
                let imbalance =
                    (i64::from(local_sgs.idle_cpus) - i64::from(idlest_sgs.idle_cpus)).abs();
                if adjust_numa_imbalance(
                    imbalance,
                    i64::from(local_sgs.sum_nr_running) + 1,
                    imb_numa_nr,
                ) == 0
                {
                    return None;
                }
            }
            if local_sgs.idle_cpus >= idlest_sgs.idle_cpus {
                return None;
            }
        }
    }
    Some(idlest)
}

/// Follows fair.c: sched_balance_find_dst_group_cpu() (v6.10-v6.12; find_idlest_group_cpu()
/// in v6.6): the idlest allowed CPU of `group`.
///
/// A one-CPU group answers its CPU without looking. Otherwise, over the allowed CPUs in order:
/// a CPU running only SCHED_IDLE tasks is taken at once; an idle CPU in a shallower idle state
/// (`idle_get_state()`, the declared `exit_latency`) than any seen becomes the candidate, and
/// one in an equally deep state, or in none (NULL: not inside `cpuidle_enter_state()`, or no
/// cpuidle driver), replaces it if it went idle more recently (larger `idle_stamp`). If no CPU
/// is idle, the least loaded one (the kernel starts from `this_cpu`, which a group of busy
/// CPUs always beats). Deliberately differs in how, not what: when no CPU of the group is in
/// the runqueues' mask of CPUs that may be idle and `p` may run on all of them, the least
/// loaded CPU is found from the group sums' per-CPU loads without the idle tests, for a
/// group large enough that the balancer keeps the sums for it anyway (checked against the
/// loop in debug builds); every CPU is charged either way.
pub fn sched_balance_find_dst_group_cpu(
    ctx: &BalanceCtx<'_>,
    group: &SchedGroup,
    p: TaskId,
    this_cpu: CpuId,
    work: &mut WorkAccount,
) -> CpuId {
    let cpus = ctx.topo.span_cpus(group.span);
    if group.group_weight == 1 {
        return *cpus.first().expect("a sched group spans at least one CPU");
    }
    let all_allowed =
        allowed_everywhere(ctx, p) || ctx.topo.span_is_subset(group.span, &ctx.tasks[p].cpus_mask);
    if all_allowed
        && group.group_weight >= crate::rqs::span_sums_min_cpus(ctx.topo)
        && no_idle_candidate(ctx, group)
    {
        let cpu = least_loaded_cpu(ctx, group, this_cpu);
        if cfg!(debug_assertions) {
            let mut w = WorkAccount::default();
            let by_loop = find_dst_group_cpu_loop(ctx, group, p, this_cpu, true, &mut w);
            assert_eq!(
                cpu, by_loop,
                "the least loaded CPU differs from the loop's answer"
            );
            assert_eq!(w.cpus_scanned, group.group_weight);
        }
        work.cpus_scanned += group.group_weight;
        return cpu;
    }
    find_dst_group_cpu_loop(ctx, group, p, this_cpu, all_allowed, work)
}

/// No CPU of `group` is idle or runs only SCHED_IDLE tasks: none is in the runqueues' mask
/// of CPUs that may be ([`crate::rqs::Rqs::idle_candidates`]).
fn no_idle_candidate(ctx: &BalanceCtx<'_>, group: &SchedGroup) -> bool {
    let candidates = ctx.rqs.idle_candidates();
    let span = ctx.topo.span(group.span).as_words();
    span.iter().zip(candidates.iter()).all(|(s, c)| s & c == 0)
}

/// sched_balance_find_dst_group_cpu()'s answer when no CPU of the group is idle or runs only
/// SCHED_IDLE tasks and `p` may run on all of them: the first CPU of the least `cpu_load()`
/// (the kernel starts from `this_cpu` and `ULONG_MAX`, and replaces on a strictly lower
/// load), read from the group sums' per-CPU array (lbsim's: one array, not every runqueue).
fn least_loaded_cpu(ctx: &BalanceCtx<'_>, group: &SchedGroup, this_cpu: CpuId) -> CpuId {
    let tip_avg_high = ctx.features.enabled(LbFeat::LbTipAvgHigh);
    let view = ctx.rqs.sums_view(ctx.topo, ctx.tasks, tip_avg_high);
    let mut min_load = u64::MAX;
    let mut least_loaded_cpu = this_cpu;
    for &i in ctx.topo.span_cpus(group.span) {
        let load = view.cpu_load(i);
        debug_assert_eq!(load, cpu_load(ctx, i));
        if load < min_load {
            min_load = load;
            least_loaded_cpu = i;
        }
    }
    least_loaded_cpu
}

/// sched_balance_find_dst_group_cpu()'s loop over the CPUs of `group` (of more than one
/// CPU); `all_allowed`: `p` may run on every CPU of it.
fn find_dst_group_cpu_loop(
    ctx: &BalanceCtx<'_>,
    group: &SchedGroup,
    p: TaskId,
    this_cpu: CpuId,
    all_allowed: bool,
    work: &mut WorkAccount,
) -> CpuId {
    let cpus = ctx.topo.span_cpus(group.span);
    let mut min_load = u64::MAX;
    let mut min_exit_latency = u32::MAX;
    let mut latest_idle_timestamp = 0u64;
    let mut least_loaded_cpu = this_cpu;
    let mut shallowest_idle_cpu: Option<CpuId> = None;
    let cpus_mask = &ctx.tasks[p].cpus_mask;
    // The group's CPUs in order from its list (what for_each_cpu_and() visits); the mask is
    // tested per CPU only if `p` may not run on all of them. What every CPU's test reads
    // the same way (whether a wake-up IPI may be in flight, `LB_TIP_AVG_HIGH`) is read
    // once, and the CPUs read are added to `work` when the loop ends.
    let none_pending = ctx.pending.none_pending();
    let tip_avg_high = ctx.features.enabled(LbFeat::LbTipAvgHigh);
    let mut scanned = 0u32;
    let mut found = None;
    for &i in cpus {
        if !all_allowed && !cpus_mask.test(i) {
            continue;
        }
        scanned += 1;
        let rq = &ctx.rqs[i.index()];
        // sched_idle_cpu()
        if rq.sched_idle_rq() {
            found = Some(i);
            break;
        }
        // available_idle_cpu(): idle_cpu() at the decision time.
        let idle = idle_cpu_of(ctx, rq, || none_pending, || ctx.now_ns);
        debug_assert_eq!(idle, available_idle_cpu(ctx, i));
        if idle {
            let idle = rq.idle_get_state();
            let idle_stamp = rq.idle_stamp().unwrap_or(0);
            if let Some(exit_latency) = idle
                && exit_latency < min_exit_latency
            {
                // The shallowest idle state wins, whatever its idle_stamp.
                min_exit_latency = exit_latency;
                latest_idle_timestamp = idle_stamp;
                shallowest_idle_cpu = Some(i);
            } else if idle.is_none_or(|e| e == min_exit_latency)
                && idle_stamp > latest_idle_timestamp
            {
                // Equally deep: the most recently idled CPU may have a warmer cache.
                latest_idle_timestamp = idle_stamp;
                shallowest_idle_cpu = Some(i);
            }
        } else if shallowest_idle_cpu.is_none() {
            // cpu_load(), with LB_TIP_AVG_HIGH read once a call
            let load = rq.cpu_load_lb(tip_avg_high);
            debug_assert_eq!(load, cpu_load(ctx, i));
            if load < min_load {
                min_load = load;
                least_loaded_cpu = i;
            }
        }
    }
    work.cpus_scanned += scanned;
    if let Some(i) = found {
        return i;
    }
    shallowest_idle_cpu.unwrap_or(least_loaded_cpu)
}

/// Follows fair.c: sched_balance_find_dst_cpu() (v6.10-v6.12; find_idlest_cpu() in v6.6): the
/// slow path, from `sd` (the domain of `cpu` at `level`, the highest with `sd_flag`) down.
///
/// If `p` may run nowhere in `sd`, it stays on `prev_cpu`. Otherwise (syncing a waking or
/// exec'ing task's PELT signal first) at each level with `sd_flag` the idlest group is found
/// and its idlest CPU; if that is `cpu` itself the walk goes down `cpu`'s child domain,
/// otherwise it continues on the new CPU from its highest domain with `sd_flag` smaller than
/// the level just done. In a domain of eight groups or more where no group's statistics
/// depend on `p`, the idlest group comes from lbsim's index of the domain's groups
/// (`fork/idlest_index.rs`), which answers what the kernel's loop answers and charges the
/// same work.
#[allow(clippy::too_many_arguments)]
pub fn sched_balance_find_dst_cpu(
    ctx: &mut BalanceCtx<'_>,
    st: &BalanceState,
    level: usize,
    mut cpu: CpuId,
    prev_cpu: CpuId,
    p: TaskId,
    sd_flag: u32,
    work: &mut WorkAccount,
) -> CpuId {
    let topo = ctx.topo;
    let mut new_cpu = cpu;
    let span = topo.span(topo.domains(cpu)[level].span);
    if !span.intersects(&ctx.tasks[p].cpus_mask) {
        return prev_cpu;
    }
    if sd_flag & SdFlag::BalanceFork.bit() == 0 {
        sync_entity_load_avg(ctx, p);
    }
    let ctx: &BalanceCtx<'_> = ctx;
    let mut sd: Option<usize> = Some(level);
    while let Some(lvl) = sd {
        let dom = &topo.domains(cpu)[lvl];
        let child = lvl.checked_sub(1);
        if dom.flags.bits() & sd_flag == 0 {
            sd = child;
            continue;
        }
        let Some(group) = find_dst_group_indexed(ctx, st, dom, p, cpu, work) else {
            sd = child;
            continue;
        };
        new_cpu = sched_balance_find_dst_group_cpu(ctx, topo.group(group), p, cpu, work);
        if new_cpu == cpu {
            sd = child;
            continue;
        }
        cpu = new_cpu;
        let weight = dom.span_weight;
        sd = None;
        for (l, tmp) in topo.domains(cpu).iter().enumerate() {
            if weight <= tmp.span_weight {
                break;
            }
            if tmp.flags.bits() & sd_flag != 0 {
                sd = Some(l);
            }
        }
    }
    new_cpu
}

#[cfg(test)]
mod tests;
