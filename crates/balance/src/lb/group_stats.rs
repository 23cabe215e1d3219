//! Group statistics of one domain, following kernel/sched/fair.c (v6.6-v6.12):
//! group_has_capacity(), group_is_overloaded(), group_classify(), update_group_capacity(),
//! update_sg_lb_stats(), update_sd_pick_busiest(), update_idle_cpu_scan() and
//! update_sd_lb_stats().

use crate::params::LbFeat;
use lbsim_topology::{CpuId, GroupId, SchedDomain, SchedGroup, SdFlag, Topology};

use crate::rqs::{SpanSums, SumsView};

use crate::ctx::BalanceCtx;
use crate::state::{BalanceState, msecs_to_jiffies};

use super::cpu::{
    capacity_of, idle_cpu_of, idle_cpu_with, sched_asym, sched_asym_prefer, sched_reduced_capacity,
    update_cpu_capacity,
};
use super::memo::SdMemo;
use super::types::{CpuIdleType, GroupType, SdLbStats, SgLbStats};
use super::{LbEnv, Pass, SCHED_CAPACITY_SCALE, capacity_greater};

mod kept;
pub(in crate::lb) use kept::GroupStats;
#[cfg(debug_assertions)]
use kept::check_replayed;
use kept::{kept_group_stats, replay_groups};

/// Follows fair.c: group_has_capacity() (v6.6-v6.12): fewer tasks than CPUs, or neither
/// runnable nor util exceeds the capacity by more than imbalance_pct.
pub fn group_has_capacity(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    let pct = u64::from(imbalance_pct);
    if sgs.sum_nr_running < sgs.group_weight {
        return true;
    }
    if sgs.group_capacity * pct < sgs.group_runnable * 100 {
        return false;
    }
    sgs.group_capacity * 100 > sgs.group_util * pct
}

/// Follows fair.c: group_is_overloaded() (v6.6-v6.12): more tasks than CPUs, and util or
/// runnable exceeds the capacity by more than imbalance_pct.
pub fn group_is_overloaded(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    let pct = u64::from(imbalance_pct);
    if sgs.sum_nr_running <= sgs.group_weight {
        return false;
    }
    if sgs.group_capacity * 100 < sgs.group_util * pct {
        return true;
    }
    sgs.group_capacity * pct < sgs.group_runnable * 100
}

/// Follows fair.c: group_classify() (v6.6-v6.12): the first matching type of overloaded,
/// imbalanced (`sg_imbalanced`: the group's `sgc->imbalance`), asym_packing, smt_balance,
/// misfit_task, fully_busy, has_spare.
pub fn group_classify(imbalance_pct: u32, sg_imbalanced: bool, sgs: &SgLbStats) -> GroupType {
    if group_is_overloaded(imbalance_pct, sgs) {
        return GroupType::Overloaded;
    }
    if sg_imbalanced {
        return GroupType::Imbalanced;
    }
    if sgs.group_asym_packing {
        return GroupType::AsymPacking;
    }
    if sgs.group_smt_balance {
        return GroupType::SmtBalance;
    }
    if sgs.group_misfit_task_load != 0 {
        return GroupType::MisfitTask;
    }
    if !group_has_capacity(imbalance_pct, sgs) {
        return GroupType::FullyBusy;
    }
    GroupType::HasSpare
}

/// Follows fair.c: update_group_capacity() / update_cpu_capacity() (v6.6-v6.12): refreshes
/// the capacity of `cpu`'s local group at `level` and its `next_update`.
pub fn update_group_capacity(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    cpu: CpuId,
    level: usize,
) {
    let topo = ctx.topo;
    let doms = topo.domains(cpu);
    let sd = &doms[level];
    let sdg = topo.local_group(sd);
    let interval = msecs_to_jiffies(st.sd(cpu, level).balance_interval, ctx.hz)
        .clamp(1, st.max_load_balance_interval);
    st.set_sgc_next_update(sdg.sgc, ctx.jiffies + interval);
    if level == 0 {
        let capacity = update_cpu_capacity(ctx, cpu);
        st.set_sgc_capacity(sdg.sgc, capacity, capacity, capacity);
        return;
    }
    let child = &doms[level - 1];
    let (mut capacity, mut min_capacity, mut max_capacity) = (0u64, u64::MAX, 0u64);
    if child.flags.contains(SdFlag::Overlap) {
        for c in topo.span(sdg.span).iter() {
            let cap = capacity_of(ctx, c);
            capacity += cap;
            min_capacity = min_capacity.min(cap);
            max_capacity = max_capacity.max(cap);
        }
    } else {
        for g in topo.groups(child) {
            let s = st.sgc(g.sgc);
            capacity += s.capacity;
            min_capacity = min_capacity.min(s.min_capacity);
            max_capacity = max_capacity.max(s.max_capacity);
        }
    }
    st.set_sgc_capacity(sdg.sgc, capacity, min_capacity, max_capacity);
}

/// Follows fair.c: smt_balance() (v6.6-v6.12).
fn smt_balance(env: &LbEnv, sgs: &SgLbStats, group: &SchedGroup) -> bool {
    env.idle.is_idle() && group.flags.contains(SdFlag::ShareCpucapacity) && sgs.sum_h_nr_running > 1
}

/// Follows fair.c: sched_group_asym() (v6.6 sched_asym(); v6.12 form). `at_ns` gives the
/// pass's time, read only for a group with an `asym_prefer_cpu`. A group without one
/// (every group outside `SD_ASYM_PACKING` domains) is answered first: the kernel's two
/// tests are both needed for a `true` and read nothing that changes.
#[inline]
fn sched_group_asym(
    ctx: &BalanceCtx<'_>,
    env: &LbEnv,
    sgs: &SgLbStats,
    group: &SchedGroup,
    at_ns: impl FnOnce() -> u64,
) -> bool {
    let Some(prefer) = group.asym_prefer_cpu else {
        return false;
    };
    if group.flags.contains(SdFlag::ShareCpucapacity) && sgs.group_weight - sgs.idle_cpus != 1 {
        return false;
    }
    sched_asym(ctx, env.sd(ctx.topo), env.dst_cpu, prefer, at_ns())
}

/// What the CPU loop of update_sg_lb_stats() adds up: the stats' sums and misfit load,
/// whether a CPU had more than one task (`sg_overloaded`), and the CPUs read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CpuSums {
    sgs: SgLbStats,
    overloaded: bool,
    scanned: u32,
}

/// The CPU loop of update_sg_lb_stats(), CPU by CPU, as the kernel runs it, at the time of
/// `pass`'s clock (read only if a CPU's idleness depends on it). What every CPU's reads
/// share is read once per pass (`inv`); `env->cpus` is tested per CPU only once a CPU has
/// been cleared from it or the domain's groups overlap (otherwise it holds the whole group).
fn sum_cpus(
    ctx: &BalanceCtx<'_>,
    env: &LbEnv,
    inv: &SgInvariants<'_>,
    group: &SchedGroup,
    local_group: bool,
    pass: &Pass,
) -> CpuSums {
    let mut at = None;
    let mut clock = || *at.get_or_insert_with(|| pass.now_ns_cold(ctx));
    let rqs: &[lbsim_rq::Rq] = ctx.rqs;
    let mut out = CpuSums {
        sgs: SgLbStats::default(),
        overloaded: false,
        scanned: 0,
    };
    let sgs = &mut out.sgs;
    let cpus = ctx.topo.span_cpus(group.span);
    debug_assert!(!inv.cpus_whole || cpus.iter().all(|&i| env.cpus.test(i)));
    for &i in cpus {
        if !inv.cpus_whole && !env.cpus.test(i) {
            continue;
        }
        out.scanned += 1;
        let r = &rqs[i.index()];
        // cpu_load(), cpu_util_cfs(), cpu_runnable(), with LB_TIP_AVG_HIGH read once a pass
        let load = r.cpu_load_lb(inv.tip_avg_high);
        debug_assert_eq!(load, super::cpu::cpu_load(ctx, i));
        sgs.group_load += load;
        sgs.group_util += r.cpu_util_cfs(ctx.tasks);
        sgs.group_runnable += r.cpu_runnable();
        debug_assert_eq!(r.cpu_runnable(), super::cpu::cpu_runnable(ctx, i));
        sgs.sum_h_nr_running += r.cfs.h_nr_running;
        let nr_running = r.nr_running;
        sgs.sum_nr_running += nr_running;
        if nr_running > 1 {
            out.overloaded = true;
        }
        // cpu_overutilized() is false without an energy model (v6.10+; in v6.6 it only
        // fed rd->overutilized, which nothing reads without a perf domain).
        if nr_running == 0 && idle_cpu_of(ctx, r, || inv.none_pending, &mut clock) {
            debug_assert!(idle_cpu_with(ctx, i, || pass.now_ns(ctx)));
            sgs.idle_cpus += 1;
            continue;
        }
        if local_group {
            continue;
        }
        if inv.asym_cpucapacity {
            if sgs.group_misfit_task_load < r.misfit_task_load {
                sgs.group_misfit_task_load = r.misfit_task_load;
                out.overloaded = true;
            }
        } else if inv.idle
            && sched_reduced_capacity(ctx, i, inv.sd)
            && sgs.group_misfit_task_load < load
        {
            sgs.group_misfit_task_load = load;
        }
    }
    out
}

/// The CPU loop's result from a group's sums that [`crate::rqs::Rqs`] keeps, as
/// [`usable_sums`] found them.
#[inline(always)]
fn sum_cpus_from_spans(s: &SpanSums) -> CpuSums {
    CpuSums {
        sgs: s.summed_stats(),
        overloaded: s.overloaded_cpus > 0,
        scanned: s.nr_cpus,
    }
}

/// The group sums of `group` when they give what the CPU loop of update_sg_lb_stats() adds
/// up: every CPU of the group is in `env->cpus`, no wake-up is pending beyond the
/// runqueues' own `ttwu_pending`, and no misfit load can arise (a local group; or no
/// `SD_ASYM_CPUCAPACITY` and, for an idle balance, no CPU with reduced capacity). `None`
/// otherwise.
#[inline(always)]
fn usable_sums<'c>(
    ctx: &'c BalanceCtx<'_>,
    env: &LbEnv,
    inv: &SgInvariants<'_>,
    view: &mut Option<SumsView<'c>>,
    group: &SchedGroup,
    local_group: bool,
) -> Option<SpanSums> {
    let topo = ctx.topo;
    let sd = inv.sd;
    // `sums_usable` holds only while `env->cpus` is the whole span, which holds every group.
    debug_assert!(!inv.sums_usable || inv.cpus_whole);
    debug_assert!(!inv.sums_usable || topo.span_is_subset(group.span, &env.cpus));
    if !inv.sums_usable
        || group.group_weight < inv.min_cpus
        || (!local_group && sd.flags.contains(SdFlag::AsymCpucapacity))
    {
        return None;
    }
    let s = *view
        .get_or_insert_with(|| ctx.rqs.sums_view(topo, ctx.tasks, inv.tip_avg_high))
        .get(group.span)?;
    // check_cpu_capacity() holds only below the original capacity while imbalance_pct is
    // at least 100.
    if !local_group && env.idle.is_idle() && (s.reduced_cpus > 0 || sd.imbalance_pct < 100) {
        return None;
    }
    Some(s)
}

/// Follows fair.c: update_sg_lb_stats() (v6.6-v6.12). Counts one CPU scanned per CPU the
/// kernel reads. Deliberately differs in how: the CPU loop's sums come from the sums kept
/// per group ([`crate::rqs`]) where those equal it (checked against the loop in debug
/// builds), and from the loop otherwise. The CPUs read are added to the pass's work last,
/// so that the loop's idle_cpu() and sched_group_asym() both read the pass's clock as of
/// the group's start (and read it only if they need it).
pub fn update_sg_lb_stats(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    group: &SchedGroup,
    local_group: bool,
    sg_overloaded: &mut bool,
    pass: &mut Pass,
) -> SgLbStats {
    let inv = SgInvariants::of(ctx, env);
    let mut view = None;
    update_sg_lb_stats_with(
        ctx,
        st,
        env,
        &inv,
        &mut view,
        group,
        local_group,
        sg_overloaded,
        pass,
    )
}

/// What [`update_sg_lb_stats`] reads the same way for every group of one
/// update_sd_lb_stats(), read once by the caller: `env->sd`, whether the group sums may
/// answer at all (no wake-up pending beyond the runqueues' own flags, no CPU cleared from
/// `env->cpus`), their size threshold and `LB_TIP_AVG_HIGH`. None of it changes during
/// update_sd_lb_stats(): `env` is borrowed shared, and what it writes (group capacities,
/// runqueue capacities) is none of these.
#[derive(Clone, Copy, Debug)]
struct SgInvariants<'t> {
    sd: &'t SchedDomain,
    sums_usable: bool,
    min_cpus: u32,
    tip_avg_high: bool,
    /// No wake-up IPI may be in flight ([`crate::ctx::PendingWakeups::none_pending`]).
    none_pending: bool,
    /// `env->cpus` holds every CPU of every group: none has been cleared from the domain's
    /// span, and every group lies inside the span (a topology invariant, also of
    /// `SD_OVERLAP` domains, whose groups build_overlap_sched_groups() takes from
    /// find_descended_sibling(), commit 585b6d2723dc, which the topology crate follows;
    /// checked for random machines by its `tests/properties.rs`).
    cpus_whole: bool,
    /// `env->sd` has `SD_ASYM_CPUCAPACITY`.
    asym_cpucapacity: bool,
    /// `env->idle` as a truth value.
    idle: bool,
}

impl<'t> SgInvariants<'t> {
    fn of(ctx: &BalanceCtx<'t>, env: &LbEnv) -> SgInvariants<'t> {
        let sd = env.sd(ctx.topo);
        let none_pending = ctx.pending.none_pending();
        SgInvariants {
            sd,
            sums_usable: !env.cpus_trimmed && none_pending,
            min_cpus: crate::rqs::span_sums_min_cpus(ctx.topo),
            tip_avg_high: ctx.features.enabled(LbFeat::LbTipAvgHigh),
            none_pending,
            cpus_whole: !env.cpus_trimmed,
            asym_cpucapacity: sd.flags.contains(SdFlag::AsymCpucapacity),
            idle: env.idle.is_idle(),
        }
    }
}

/// [`update_sg_lb_stats`] with its invariants read by the caller, and the group sums'
/// view (`view`) taken by the first group that reads it and kept by the caller for the
/// next groups while the runqueues do not change.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn update_sg_lb_stats_with<'c>(
    ctx: &'c BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    inv: &SgInvariants<'_>,
    view: &mut Option<SumsView<'c>>,
    group: &SchedGroup,
    local_group: bool,
    sg_overloaded: &mut bool,
    pass: &mut Pass,
) -> SgLbStats {
    let sums = usable_sums(ctx, env, inv, view, group, local_group);
    update_sg_lb_stats_from(
        ctx,
        st,
        env,
        inv,
        sums,
        group,
        local_group,
        sg_overloaded,
        pass,
    )
}

/// [`update_sg_lb_stats_with`] with the group's sums as [`usable_sums`] gave them (one
/// function, not inlined, so that the CPU loop inlined in it stays one copy).
#[allow(clippy::too_many_arguments)]
fn update_sg_lb_stats_from(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    inv: &SgInvariants<'_>,
    sums: Option<SpanSums>,
    group: &SchedGroup,
    local_group: bool,
    sg_overloaded: &mut bool,
    pass: &mut Pass,
) -> SgLbStats {
    let sd = inv.sd;
    let sums = match sums.as_ref().map(sum_cpus_from_spans) {
        Some(fast) => {
            debug_assert_eq!(
                fast,
                sum_cpus(ctx, env, inv, group, local_group, pass),
                "the group sums differ from the CPU loop"
            );
            fast
        }
        None => sum_cpus(ctx, env, inv, group, local_group, pass),
    };
    if sums.overloaded {
        *sg_overloaded = true;
    }
    let mut sgs = sums.sgs;
    sgs.group_capacity = st.sgc(group.sgc).capacity;
    sgs.group_weight = group.group_weight;
    if !local_group
        && env.idle.is_idle()
        && sgs.sum_h_nr_running > 0
        && sched_group_asym(ctx, env, &sgs, group, || pass.now_ns(ctx))
    {
        sgs.group_asym_packing = true;
    }
    if !local_group && smt_balance(env, &sgs, group) {
        sgs.group_smt_balance = true;
    }
    sgs.group_type = group_classify(sd.imbalance_pct, st.sgc(group.sgc).imbalance, &sgs);
    if sgs.group_type == GroupType::Overloaded {
        sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity;
    }
    pass.work.cpus_scanned += sums.scanned;
    sgs
}

/// Follows fair.c: smt_vs_nonsmt_groups() (v6.6-v6.12).
pub(super) fn smt_vs_nonsmt_groups(sg1: Option<&SchedGroup>, sg2: Option<&SchedGroup>) -> bool {
    match (sg1, sg2) {
        (Some(a), Some(b)) => {
            a.flags.contains(SdFlag::ShareCpucapacity) != b.flags.contains(SdFlag::ShareCpucapacity)
        }
        _ => false,
    }
}

/// Follows fair.c: update_sd_pick_busiest() (v6.6-v6.12): whether `sg` (with `sgs`) is
/// busier than the current `sds.busiest`.
pub fn update_sd_pick_busiest(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    sds: &SdLbStats,
    sg: &SchedGroup,
    sgs: &SgLbStats,
) -> bool {
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let busiest = &sds.busiest_stat;
    let busiest_sg = sds.busiest.map(|id| topo.group(id));
    if sgs.sum_h_nr_running == 0 {
        return false;
    }
    let asym_cap = sd.flags.contains(SdFlag::AsymCpucapacity);
    if asym_cap
        && sgs.group_type == GroupType::MisfitTask
        && (!capacity_greater(capacity_of(ctx, env.dst_cpu), st.sgc(sg.sgc).max_capacity)
            || sds.local_stat.group_type != GroupType::HasSpare)
    {
        return false;
    }
    if sgs.group_type > busiest.group_type {
        return true;
    }
    if sgs.group_type < busiest.group_type {
        return false;
    }
    let has_spare_rule = |sgs: &SgLbStats| -> bool {
        if sgs.idle_cpus > busiest.idle_cpus {
            return false;
        }
        !(sgs.idle_cpus == busiest.idle_cpus && sgs.sum_nr_running <= busiest.sum_nr_running)
    };
    match sgs.group_type {
        GroupType::Overloaded => return sgs.avg_load > busiest.avg_load,
        GroupType::Imbalanced => return false,
        GroupType::AsymPacking => {
            let (Some(b), Some(s)) = (
                busiest_sg.and_then(|g| g.asym_prefer_cpu),
                sg.asym_prefer_cpu,
            ) else {
                return false;
            };
            return sched_asym_prefer(b, s);
        }
        GroupType::MisfitTask => {
            return sgs.group_misfit_task_load > busiest.group_misfit_task_load;
        }
        GroupType::SmtBalance if sgs.idle_cpus != 0 || busiest.idle_cpus != 0 => {
            if !has_spare_rule(sgs) {
                return false;
            }
        }
        GroupType::SmtBalance | GroupType::FullyBusy => {
            if sgs.avg_load < busiest.avg_load {
                return false;
            }
            if sgs.avg_load == busiest.avg_load
                && busiest_sg.is_some_and(|b| b.flags.contains(SdFlag::ShareCpucapacity))
            {
                return false;
            }
        }
        GroupType::HasSpare => {
            if smt_vs_nonsmt_groups(busiest_sg, Some(sg)) {
                return !(sg.flags.contains(SdFlag::ShareCpucapacity) && sgs.sum_h_nr_running <= 1);
            }
            if !has_spare_rule(sgs) {
                return false;
            }
        }
    }
    if asym_cap
        && sgs.group_type <= GroupType::FullyBusy
        && capacity_greater(st.sgc(sg.sgc).min_capacity, capacity_of(ctx, env.dst_cpu))
    {
        return false;
    }
    true
}

/// Follows fair.c: update_idle_cpu_scan() (v6.1-v6.12): SIS_UTIL's scan budget for the LLC,
/// written on periodic (not newly idle) balances of the LLC domain.
#[inline(always)]
fn update_idle_cpu_scan(ctx: &BalanceCtx<'_>, st: &mut BalanceState, env: &LbEnv, sum_util: u64) {
    update_idle_cpu_scan_of(ctx, st, env.dst_cpu, env.sd(ctx.topo), env.idle, || {
        sum_util
    });
}

/// [`update_idle_cpu_scan`] for a balance of `sd` pulling to `dst_cpu` at `idle`, with the
/// domain's summed utilization asked of `sum_util` only when the budget is written.
#[inline(always)]
pub(super) fn update_idle_cpu_scan_of(
    ctx: &BalanceCtx<'_>,
    st: &mut BalanceState,
    dst_cpu: CpuId,
    sd: &SchedDomain,
    idle: CpuIdleType,
    sum_util: impl FnOnce() -> u64,
) {
    if !ctx.features.enabled(LbFeat::SisUtil) || idle == CpuIdleType::NewlyIdle {
        return;
    }
    let topo = ctx.topo;
    let llc_weight = u64::from(topo.sd_llc_size(dst_cpu));
    if u64::from(sd.span_weight) != llc_weight {
        return;
    }
    let sum_util = sum_util();
    let Some(share) = st.sd_llc_shared_mut(topo, dst_cpu) else {
        return;
    };
    let x = sum_util / llc_weight;
    let pct = u64::from(sd.imbalance_pct);
    let tmp = (x * x * pct * pct / (10000 * SCHED_CAPACITY_SCALE)).min(SCHED_CAPACITY_SCALE);
    let y = (SCHED_CAPACITY_SCALE - tmp) * llc_weight / SCHED_CAPACITY_SCALE;
    share.nr_idle_scan = y as u32;
}

/// Whether group `sg`, the `k`-th of its domain, is the local group of a pass pulling to
/// `dst_cpu`: `update_sd_lb_stats()`'s `cpumask_test_cpu(env->dst_cpu, sched_group_span(sg))`
/// (fair.c, v6.12 and v4.x alike). The groups of a domain without `SD_OVERLAP` partition its
/// span, and the first one (`sd->groups`) holds `sd_cpu` and its whole balance mask, where
/// `dst_cpu` is: there lbsim answers `k == 0` without reading a span (a shortcut giving the
/// same answer; debug builds test the span too).
pub(crate) fn is_local_group(
    topo: &Topology,
    overlap: bool,
    k: usize,
    sg: &SchedGroup,
    dst_cpu: CpuId,
) -> bool {
    let local_group = if overlap {
        topo.span(sg.span).test(dst_cpu)
    } else {
        k == 0
    };
    debug_assert_eq!(
        local_group,
        topo.span(sg.span).test(dst_cpu),
        "the local group is not sd->groups"
    );
    local_group
}

/// What update_sd_lb_stats() adds up over the groups.
struct SdSums {
    sds: SdLbStats,
    sum_util: u64,
    sg_overloaded: bool,
}

/// Follows fair.c: update_sd_lb_stats() (v6.6-v6.12): statistics of every group (local
/// first), the busiest candidate, `prefer_sibling` from the busiest group's flags, the root
/// domain's overloaded flag at the top level, and SIS_UTIL's scan budget.
///
/// In a domain without `SD_OVERLAP` the local group is the first (`sd->groups`, see
/// `is_local_group()`), so its capacity update, the first thing the kernel's loop does,
/// runs before the loop here, in the same order; the loop then only reads the runqueues
/// and keeps one view of the group sums for all the groups.
pub fn update_sd_lb_stats(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &LbEnv,
    pass: &mut Pass,
) -> SdLbStats {
    update_sd_lb_stats_with::<false>(ctx, st, env, None, pass)
}

/// [`update_sd_lb_stats`] with the groups' results that `memo` kept from the previous
/// attempt of the same load_balance(), reused where they are exact (see [`SdMemo`]); this
/// attempt's are kept in it for the next. `KEEP` is whether there is a memo: an attempt
/// without one runs a copy of the loop without any memo code, [`update_sd_lb_stats`]'s.
///
/// Outside `SD_OVERLAP` and `SD_ASYM_CPUCAPACITY` domains, while the groups met so far all
/// keep their results, the loop replays them: update_sd_pick_busiest() is a function of
/// the results of the groups before (the busiest candidate so far and the local group's,
/// read only under `SD_ASYM_CPUCAPACITY`, with `capacity_of(dst_cpu)` and the group
/// capacities' bounds), so after a run of unchanged groups the busiest candidate is the one
/// the previous attempt had after them, which the memo keeps per group. Every group is
/// still counted (its CPUs charged, its type given to the checks, its load and capacity
/// added) in the kernel's order.
pub(super) fn update_sd_lb_stats_with<const KEEP: bool>(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &LbEnv,
    memo: Option<&mut SdMemo>,
    pass: &mut Pass,
) -> SdLbStats {
    let mut memo = if KEEP { memo } else { None };
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let mut acc = SdSums {
        sds: SdLbStats::default(),
        sum_util: 0,
        sg_overloaded: false,
    };
    let overlap = sd.flags.contains(SdFlag::Overlap);
    let inv = SgInvariants::of(ctx, env);
    if let Some(memo) = memo.as_deref_mut() {
        memo.start(ctx, env.dst_cpu, inv.tip_avg_high, inv.none_pending, sd);
    }
    let mut busiest_k = None;
    if overlap {
        for (k, gid) in topo.group_ids(sd).enumerate() {
            let sg = topo.group(gid);
            let local_group = is_local_group(topo, overlap, k, sg, env.dst_cpu);
            if local_group {
                update_local_capacity(ctx, st, env, sg);
            }
            let g = SdGroup {
                k,
                gid,
                local_group,
            };
            sd_group_stats::<KEEP>(
                ctx,
                st,
                env,
                &inv,
                &mut None,
                memo.as_deref_mut(),
                g,
                &mut acc,
                &mut busiest_k,
                pass,
            );
        }
    } else {
        if let Some(first) = topo.group_ids(sd).next() {
            update_local_capacity(ctx, st, env, topo.group(first));
        }
        let ctx: &BalanceCtx<'_> = ctx;
        let mut view = None;
        let replayed = match memo.as_deref_mut() {
            Some(memo) if !inv.asym_cpucapacity => {
                let replayed = replay_groups(topo, st, memo, &mut acc, &mut busiest_k, pass);
                #[cfg(debug_assertions)]
                check_replayed(
                    ctx, st, env, &inv, &mut view, memo, replayed, &acc.sds, pass,
                );
                replayed
            }
            _ => 0,
        };
        let mut ids = topo.group_ids(sd).enumerate();
        if replayed > 0 {
            ids.nth(replayed - 1);
        }
        for (k, gid) in ids {
            let local_group = is_local_group(topo, overlap, k, topo.group(gid), env.dst_cpu);
            let g = SdGroup {
                k,
                gid,
                local_group,
            };
            sd_group_stats::<KEEP>(
                ctx,
                st,
                env,
                &inv,
                &mut view,
                memo.as_deref_mut(),
                g,
                &mut acc,
                &mut busiest_k,
                pass,
            );
        }
    }
    if let Some(memo) = memo {
        memo.finish();
    }
    let SdSums {
        mut sds,
        sum_util,
        sg_overloaded,
    } = acc;
    if let Some(b) = sds.busiest {
        sds.prefer_sibling = topo.group(b).flags.contains(SdFlag::PreferSibling);
    }
    if env.level + 1 == topo.domains(env.sd_cpu).len() {
        st.rd.overloaded = sg_overloaded;
        st.rd.overutilized = false;
    }
    update_idle_cpu_scan(ctx, st, env, sum_util);
    sds
}

/// Follows fair.c: update_sd_lb_stats() (v6.6-v6.12), its refresh of the local group's
/// capacity: on every balance but a newly idle one, and on a newly idle one once
/// `next_update` has come.
fn update_local_capacity(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &LbEnv,
    sg: &SchedGroup,
) {
    if env.idle != CpuIdleType::NewlyIdle || ctx.jiffies >= st.sgc(sg.sgc).next_update {
        update_group_capacity(ctx, st, env.sd_cpu, env.level);
    }
}

/// Which group of the domain update_sd_lb_stats()'s loop is at: the `k`-th, `gid`, and
/// whether it is the local group.
#[derive(Clone, Copy, Debug)]
struct SdGroup {
    k: usize,
    gid: GroupId,
    local_group: bool,
}

/// Follows fair.c: update_sd_lb_stats() (v6.6-v6.12), the body of its loop over the
/// groups: a group's statistics (from `memo` where it kept them, see [`SdMemo`]), then the
/// local group's or the busiest candidate's, and the domain's totals. `busiest_k` is the
/// index of the busiest candidate so far, which the memo keeps after each group. Without a
/// memo (`KEEP` false) this is the kernel's loop body and nothing else.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sd_group_stats<'c, const KEEP: bool>(
    ctx: &'c BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &LbEnv,
    inv: &SgInvariants<'_>,
    view: &mut Option<SumsView<'c>>,
    memo: Option<&mut SdMemo>,
    g: SdGroup,
    acc: &mut SdSums,
    busiest_k: &mut Option<u32>,
    pass: &mut Pass,
) {
    let SdGroup {
        k,
        gid,
        local_group,
    } = g;
    let sg = ctx.topo.group(gid);
    if let Some(memo) = memo.filter(|_| KEEP) {
        let sgs = &kept_group_stats(ctx, st, env, inv, view, memo, g, acc, pass).sgs;
        if pick_group(ctx, st, env, acc, sg, g, sgs) {
            *busiest_k = Some(k as u32);
        }
        memo.set_busiest_after(k, *busiest_k);
        return;
    }
    let sums = usable_sums(ctx, env, inv, view, sg, local_group);
    if let Some(s) = &sums
        && s.sum_h_nr_running == 0
        && !local_group
        && !st.checks.enabled
    {
        count_group_without_tasks(ctx, st, env, inv, view, sg, s, acc, pass);
        return;
    }
    let sgs = update_sg_lb_stats_from(
        ctx,
        st,
        env,
        inv,
        sums,
        sg,
        local_group,
        &mut acc.sg_overloaded,
        pass,
    );
    pick_group(ctx, st, env, acc, sg, g, &sgs);
}

/// Follows fair.c: update_sd_lb_stats() (v6.6-v6.12), its loop body for a group other than
/// the local one without a CFS task, whose sums (`s`) give what update_sg_lb_stats() adds
/// up: update_sd_pick_busiest() refuses such a group before reading anything else (`if
/// (!sgs->sum_h_nr_running) return false;`), so all the loop keeps of it is what it adds
/// to the domain's totals (load, capacity, utilization, `sg_overloaded` from its CPUs with
/// more than one task) and the CPUs it reads. Deliberately differs in how: the group's
/// type is not classified (only the decision record reads it, and with the record on the
/// full path runs); debug builds compute the full statistics and compare.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn count_group_without_tasks<'c>(
    ctx: &'c BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    inv: &SgInvariants<'_>,
    view: &mut Option<SumsView<'c>>,
    sg: &SchedGroup,
    s: &SpanSums,
    acc: &mut SdSums,
    pass: &mut Pass,
) {
    let group_capacity = st.sgc(sg.sgc).capacity;
    #[cfg(debug_assertions)]
    {
        let mut full_pass = pass.clone();
        let mut overloaded = false;
        let full = update_sg_lb_stats_with(
            ctx,
            st,
            env,
            inv,
            view,
            sg,
            false,
            &mut overloaded,
            &mut full_pass,
        );
        assert_eq!(
            (
                full.sum_h_nr_running,
                full.group_load,
                full.group_util,
                full.group_capacity
            ),
            (0, s.group_load, s.group_util, group_capacity),
            "a group without tasks counted otherwise"
        );
        assert_eq!(overloaded, s.overloaded_cpus > 0);
        assert_eq!(
            full_pass.work.cpus_scanned,
            pass.work.cpus_scanned + s.nr_cpus
        );
        assert!(!update_sd_pick_busiest(ctx, st, env, &acc.sds, sg, &full));
    }
    #[cfg(not(debug_assertions))]
    let _ = (ctx, env, inv, view);
    if s.overloaded_cpus > 0 {
        acc.sg_overloaded = true;
    }
    acc.sds.total_load += s.group_load;
    acc.sds.total_capacity += group_capacity;
    acc.sum_util += s.group_util;
    pass.work.cpus_scanned += s.nr_cpus;
}

/// Follows fair.c: update_sd_lb_stats() (v6.6-v6.12), what its loop does with group `g`'s
/// statistics: the local group's, or offered as the busiest candidate (true if taken), and
/// the group counted.
#[inline(always)]
fn pick_group(
    ctx: &BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &LbEnv,
    acc: &mut SdSums,
    sg: &SchedGroup,
    g: SdGroup,
    sgs: &SgLbStats,
) -> bool {
    st.checks.group_classified(sgs.group_type);
    let sds = &mut acc.sds;
    let mut picked = false;
    if g.local_group {
        sds.local = Some(g.gid);
        sds.local_stat = *sgs;
    } else if update_sd_pick_busiest(ctx, st, env, sds, sg, sgs) {
        sds.busiest = Some(g.gid);
        sds.busiest_stat = *sgs;
        picked = true;
    }
    add_totals(sgs, acc);
    picked
}

/// What update_sd_lb_stats() adds up of every group whatever it picks: the domain's totals.
#[inline(always)]
fn add_totals(sgs: &SgLbStats, acc: &mut SdSums) {
    acc.sds.total_load += sgs.group_load;
    acc.sds.total_capacity += sgs.group_capacity;
    acc.sum_util += sgs.group_util;
}
