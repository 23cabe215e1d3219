//! A balancing pass at CPU_IDLE whose outcome find_busiest_group() (v4.6-v5.4) decides
//! from task counts and idle CPUs, before any load is read: lbsim's shortcut for the passes
//! the nohz idle balancer runs on behalf of idle CPUs (in their SMT domains, each CPU its
//! own group, and in their MC domains, each core a group), with the same result and the
//! same side effects as the full statistics.
//!
//! Why the outcome is known. At CPU_IDLE, find_busiest_group() balances unless the busiest
//! group is forced (`group_imbalanced`; `group_no_capacity` with a local group that has
//! capacity, from v4.15; `group_misfit_task`, from v4.20) or passes its tests; for a busiest
//! group that is not `group_overloaded` the last test is `local->idle_cpus <=
//! busiest->idle_cpus + 1`, which always holds when the local group is one CPU (its
//! `idle_cpus` is at most 1) and otherwise holds if it holds for every other group. So if
//! no other group of the domain can be overloaded, imbalanced or misfit, and every other
//! group passes the idle test, whichever group update_sd_pick_busiest() picks, the domain
//! is balanced: `env->imbalance = 0`, no busiest group. A group is `group_overloaded` only
//! through `group_no_capacity`: group_is_overloaded() (more tasks than CPUs) or, with the
//! child's SD_PREFER_SIBLING, the demotion of a group with more than one task (v4.12+:
//! more than one task more than the local group); `group_imbalanced` only through its
//! `sgc->imbalance`; `group_misfit_task` only on SD_ASYM_CPUCAPACITY from v4.20. Task
//! counts, idle CPUs and flags read here answer all of it without the loads or the
//! utilization.
//!
//! A pass whose local group is one CPU runs without load_balance()'s machinery (no
//! `struct lb_env`, no `redo:` loop) and does what load_balance() does then: counts the
//! pass (`lb_count`, the domain charge); should_we_balance(), which always balances when
//! the local group is the CPU alone (it is the group's first idle CPU or its balance CPU),
//! with its one CPU read; update_sd_lb_stats()'s refresh of the local group's capacity
//! (always done at CPU_IDLE) and its charge for every CPU of every group (the kernel reads
//! them all); `lb_nobusyg`; and the `out_balanced:` tail (`load_balance::out_balanced()`:
//! the parent group's imbalance flag, `lb_balanced`, `nr_balance_failed`,
//! `balance_interval`). A larger local group is decided inside load_balance(), after its
//! should_we_balance() (which may stop the pass first), in place of find_busiest_group():
//! the same capacity refresh, charge and `lb_nobusyg`. A pass that would write more takes
//! the full path: with the decision record on (`--check`), with the trace on, or at the
//! top level (where update_sd_lb_stats() writes `rd->overload`). Debug builds run the full
//! find_busiest_group() (and for a one-CPU local group should_we_balance()) beside the
//! shortcut and check that they balance too, with the same charges.

use lbsim_topology::domains::GroupIds;
use lbsim_topology::{CpuId, SchedDomain, SchedGroup, SdFlag};

use crate::ctx::BalanceCtx;
use crate::lb::{CpuIdleType, LbEnv, Pass};
use crate::params::LbFeat;
use crate::state::BalanceState;

use super::LegacyState;
use super::group_stats::{child_prefer_sibling, rq_idle, update_group_capacity};
use super::load_balance::{Exit, out_balanced, parent_sgc};

/// Whether find_busiest_group() (v4.6-v5.4) balances `cpu`'s domain at `level` at CPU_IDLE
/// before any load is read (see the module doc), for a first pass (`env->cpus` untrimmed,
/// `dst_cpu` the balancing CPU): a domain below the top level, without SD_OVERLAP, whose
/// other groups have no `sgc->imbalance`, no misfit rule (SD_ASYM_CPUCAPACITY from v4.20),
/// at most as many CFS tasks as CPUs, none that the child's SD_PREFER_SIBLING could demote
/// (v4.6: more than one task; v4.12+ `PREFER_SIBLING_NR_DIFF`: more than one more than the
/// local group), and, when the local group has more than one CPU, at most one idle CPU
/// fewer than the local group. Returns the number of CPUs update_sd_lb_stats() reads (every
/// CPU of every group), or `None`.
///
/// `pass` is the pass as find_busiest_group() would start it. Its clock is read only when the
/// local group has more than one CPU (the caller then passes the pass as it stands after
/// should_we_balance()): idle_cpu() of a group's CPU is asked at the clock
/// update_sg_lb_stats() would read for that group, after the groups before it were charged.
#[inline(always)]
pub(super) fn settled_scan(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    lg: &LegacyState,
    (cpu, doms): (CpuId, &[SchedDomain]),
    level: usize,
    pass: &Pass,
) -> Option<u32> {
    let topo = ctx.topo;
    debug_assert!(std::ptr::eq(doms, topo.domains(cpu)));
    let sd = &doms[level];
    // check_asym_packing() may pull before the group statistics decide; the topology crate
    // builds no SD_ASYM_PACKING today, but such a domain takes the full path.
    if sd.flags.contains(SdFlag::Overlap)
        || sd.flags.contains(SdFlag::AsymPacking)
        || doms.get(level + 1).is_none()
    {
        return None;
    }
    if lg.version.group_misfit_task() && sd.flags.contains(SdFlag::AsymCpucapacity) {
        return None;
    }
    let mut ids = topo.group_ids(sd);
    let local = topo.group(ids.next()?);
    debug_assert!(topo.span(local.span).test(cpu));
    let child = level.checked_sub(1).map(|l| &doms[l]);
    let prefer_sibling = child_prefer_sibling(child, lg.version);
    if local.group_weight == 1 {
        // At most one idle CPU here: the idle test holds for every group.
        let local_nr = ctx.rqs[cpu.index()].cfs.h_nr_running;
        let most = demotable_above(ctx, prefer_sibling, local_nr);
        return others_settled::<false>(ctx, st, ids, most, 0, 1, pass);
    }
    settled_groups(ctx, st, ids, local, prefer_sibling, pass)
}

/// [`settled_scan`] for a local group of more than one CPU (`local`; `ids` the domain's
/// other groups).
#[inline(never)]
fn settled_groups(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    ids: GroupIds<'_>,
    local: &SchedGroup,
    prefer_sibling: bool,
    pass: &Pass,
) -> Option<u32> {
    let cpus = ctx.topo.span_cpus(local.span);
    let ipi_in_flight = !ctx.pending.none_pending();
    let (local_nr, local_idle) = group_counts::<true>(ctx, cpus, ipi_in_flight, pass, 0);
    let most = demotable_above(ctx, prefer_sibling, local_nr);
    if local_idle > 1 {
        others_settled::<true>(ctx, st, ids, most, local_idle, cpus.len(), pass)
    } else {
        others_settled::<false>(ctx, st, ids, most, 0, cpus.len(), pass)
    }
}

/// The most CFS tasks a non-local group may have without update_sd_lb_stats() demoting it
/// to overloaded under the child's SD_PREFER_SIBLING (`prefer_sibling`; a local group with
/// `local_nr` tasks): 1 (v4.6), or `local_nr + 1` with `PREFER_SIBLING_NR_DIFF` (v4.12+).
/// Without the flag, no limit.
#[inline(always)]
fn demotable_above(ctx: &BalanceCtx<'_>, prefer_sibling: bool, local_nr: u32) -> u32 {
    if !prefer_sibling {
        u32::MAX
    } else if ctx.features.enabled(LbFeat::PreferSiblingNrDiff) {
        local_nr + 1
    } else {
        1
    }
}

/// Whether every group of `ids` is settled (no `sgc->imbalance`, at most `min(group_weight,
/// most)` CFS tasks and, if `IDLE_TEST`, at least `local_idle - 1` idle CPUs); returns
/// `scanned` plus their CPUs, or `None`.
#[inline(always)]
fn others_settled<const IDLE_TEST: bool>(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    ids: GroupIds<'_>,
    most: u32,
    local_idle: u32,
    mut scanned: usize,
    pass: &Pass,
) -> Option<u32> {
    let ipi_in_flight = IDLE_TEST && !ctx.pending.none_pending();
    for gid in ids {
        let sg = ctx.topo.group(gid);
        if st.sgc(sg.sgc).imbalance {
            return None;
        }
        let cpus = ctx.topo.span_cpus(sg.span);
        let (sum_nr_running, idle_cpus) =
            group_counts::<IDLE_TEST>(ctx, cpus, ipi_in_flight, pass, scanned as u32);
        if sum_nr_running > sg.group_weight.min(most) || (IDLE_TEST && local_idle > idle_cpus + 1) {
            return None;
        }
        scanned += cpus.len();
    }
    Some(scanned as u32)
}

/// A group's `sum_nr_running` (CFS tasks) and, if `IDLE`, its `idle_cpus` as
/// update_sg_lb_stats() counts them (`nr_running == 0` and idle_cpu()). A wake-up IPI in
/// flight (`ipi_in_flight`) is asked about at the clock update_sg_lb_stats() reads for the
/// group: `pass` with the `before` CPUs of the groups ahead of it charged.
#[inline(always)]
fn group_counts<const IDLE: bool>(
    ctx: &BalanceCtx<'_>,
    cpus: &[CpuId],
    ipi_in_flight: bool,
    pass: &Pass,
    before: u32,
) -> (u32, u32) {
    let at = || {
        let mut work = pass.work;
        work.cpus_scanned += before;
        let at_start = Pass {
            start_ns: pass.start_ns,
            work,
            ..Pass::default()
        };
        at_start.now_ns(ctx)
    };
    let (mut nr, mut idle_cpus) = (0u32, 0u32);
    for &c in cpus {
        let r = &ctx.rqs[c.index()];
        nr += r.cfs.h_nr_running;
        if IDLE && r.nr_running == 0 && rq_idle(ctx, r, c, ipi_in_flight, at) {
            idle_cpus += 1;
        }
    }
    (nr, idle_cpus)
}

/// What find_busiest_group() does in a settled pass (`settled_scan()` gave `scanned`) but
/// count its result: update_sd_lb_stats()'s refresh of the local group's capacity (always
/// done at CPU_IDLE) and its charge for every CPU of every group. (The caller counts no
/// busiest group, `lb_nobusyg`.)
#[inline(always)]
fn find_busiest_group_settled(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    this_cpu: CpuId,
    level: usize,
    scanned: u32,
    pass: &mut Pass,
) {
    update_group_capacity(ctx, st, lg, this_cpu, level);
    pass.work.cpus_scanned += scanned;
}

/// Follows fair.c: load_balance() (v4.6-v5.4) for a pass at CPU_IDLE (the caller's test)
/// whose local group is one CPU and that find_busiest_group() balances before any load is
/// read (`settled_scan()`; the decision record and the trace off): returns `true` after
/// doing what load_balance() does then (see the module doc; `ld_moved` is 0 and
/// `continue_balancing` stays set), or `false`, having done nothing, when load_balance()
/// must run.
pub(super) fn load_balance_settled(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    this_cpu: CpuId,
    level: usize,
    pass: &mut Pass,
) -> bool {
    if st.checks.enabled || st.trace.enabled {
        return false;
    }
    let topo = ctx.topo;
    let doms = topo.domains(this_cpu);
    // A local group of more CPUs is tried after should_we_balance(), in load_balance().
    if topo.local_group(&doms[level]).group_weight != 1 {
        return false;
    }
    let idle = CpuIdleType::Idle;
    let Some(scanned) = settled_scan(ctx, st, lg, (this_cpu, doms), level, pass) else {
        return false;
    };
    pass.work.domains += 1;
    // The pass is counted, and find_busiest_group() finds no busiest group (one lookup of
    // the domain's counters for both).
    let lb = st.schedstat.sd_mut(this_cpu, level).lb_mut(idle);
    lb.lb_count += 1;
    lb.lb_nobusyg += 1;
    // should_we_balance(): the local group's one CPU.
    pass.work.cpus_scanned += 1;
    #[cfg(debug_assertions)]
    let work_before = pass.work;
    find_busiest_group_settled(ctx, st, lg, this_cpu, level, scanned, pass);
    #[cfg(debug_assertions)]
    {
        let mut env = super::load_balance::first_env(topo, lg, this_cpu, level, idle);
        let charged = pass.work;
        pass.work = work_before;
        pass.work.cpus_scanned -= 1;
        debug_assert!(super::load_balance::should_we_balance(ctx, &env, pass));
        debug_assert_eq!(
            pass.work, work_before,
            "should_we_balance() charged otherwise"
        );
        pass.work = charged;
        check_against_full_pass(ctx, st, lg, &mut env, work_before, pass);
        super::load_balance::put_back_env(topo, lg, env);
    }
    let parent_sgc = parent_sgc(topo, doms, level);
    let at = (this_cpu, level, idle);
    out_balanced(
        st,
        lg.version,
        &doms[level],
        parent_sgc,
        at,
        Exit::Balanced,
        false,
    );
    true
}

/// Follows fair.c: find_busiest_group() (v4.6-v5.4) for a first pass at CPU_IDLE whose
/// local group has more than one CPU, after should_we_balance() said this CPU balances:
/// when `settled_scan()` finds the domain balanced before any load is read (the decision
/// record and the trace off), does what find_busiest_group() does then
/// (`lb_nobusyg` counted, `env->imbalance` 0) and returns `true`; otherwise `false`,
/// having done nothing. (A one-CPU local group was tried before `env` was built, by
/// `load_balance_settled()`.)
pub(super) fn find_busiest_group_counted(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    env: &mut LbEnv,
    pass: &mut Pass,
) -> bool {
    if env.idle != CpuIdleType::Idle
        || env.cpus_trimmed
        || st.checks.enabled
        || st.trace.enabled
        || ctx.topo.local_group(env.sd(ctx.topo)).group_weight == 1
    {
        return false;
    }
    debug_assert_eq!(env.dst_cpu, env.sd_cpu);
    let doms = ctx.topo.domains(env.sd_cpu);
    let Some(scanned) = settled_scan(ctx, st, lg, (env.sd_cpu, doms), env.level, pass) else {
        return false;
    };
    #[cfg(debug_assertions)]
    let work_before = pass.work;
    find_busiest_group_settled(ctx, st, lg, env.sd_cpu, env.level, scanned, pass);
    st.schedstat
        .sd_mut(env.sd_cpu, env.level)
        .lb_mut(CpuIdleType::Idle)
        .lb_nobusyg += 1;
    #[cfg(debug_assertions)]
    check_against_full_pass(ctx, st, lg, env, work_before, pass);
    env.imbalance = 0;
    true
}

/// Debug builds: the full find_busiest_group() on the pass as it stood before the shortcut
/// (`work_before`) balances too, and charges what the shortcut charged. The capacity
/// refresh gives the same values a second time; the charges are put back.
#[cfg(debug_assertions)]
fn check_against_full_pass(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    env: &mut LbEnv,
    work_before: crate::cost::WorkAccount,
    pass: &mut Pass,
) {
    let charged = pass.work;
    pass.work = work_before;
    let fbg = super::imbalance::find_busiest_group(ctx, st, lg, env, pass);
    debug_assert_eq!(pass.work, charged, "the shortcut charged otherwise");
    pass.work = charged;
    debug_assert!(
        fbg.busiest.is_none() && env.imbalance == 0,
        "CPU{} level {}: find_busiest_group() would not have balanced",
        env.sd_cpu.0,
        env.level
    );
}
