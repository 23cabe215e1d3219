//! A balancing pass at CPU_IDLE whose outcome find_busiest_group() (v4.6-v5.4) decides
//! before any load is read: lbsim's shortcut for the passes the nohz idle balancer runs on
//! behalf of idle CPUs in their SMT domains (each CPU its own group), with the same result
//! and the same side effects as the full statistics.
//!
//! Why the outcome is known. At CPU_IDLE, find_busiest_group() balances unless the busiest
//! group is forced (`group_imbalanced`; `group_no_capacity` with a local group that has
//! capacity, from v4.15; `group_misfit_task`, from v4.20) or passes its tests; for a busiest
//! group that is not `group_overloaded` the last test is `local->idle_cpus <=
//! busiest->idle_cpus + 1`, which always holds when the local group is one CPU (its
//! `idle_cpus` is at most 1). So if no other group of the domain can be overloaded,
//! imbalanced or misfit, whichever group update_sd_pick_busiest() picks, the domain is
//! balanced: `env->imbalance = 0`, no busiest group. A group is `group_overloaded` only
//! through `group_no_capacity`: group_is_overloaded() (more tasks than CPUs) or, with the
//! child's SD_PREFER_SIBLING, the demotion of a group with more than one task (v4.12+:
//! more than one task more than the local group); `group_imbalanced` only through its
//! `sgc->imbalance`; `group_misfit_task` only on SD_ASYM_CPUCAPACITY from v4.20. Task
//! counts and flags read here answer all three without the loads, the utilization or the
//! idle tests.
//!
//! Such a pass runs without load_balance()'s machinery (no `struct lb_env`, no `redo:`
//! loop) and does what load_balance() does then: counts the pass (`lb_count`, the domain
//! charge); should_we_balance(), which always balances when the local group is the CPU
//! alone (it is the group's first idle CPU or its balance CPU), with its one CPU read;
//! update_sd_lb_stats()'s refresh of the local group's capacity (always done at CPU_IDLE)
//! and its charge for every CPU of every group (the kernel reads them all); `lb_nobusyg`;
//! and the `out_balanced:` tail (`load_balance::out_balanced()`: the parent group's
//! imbalance flag, `lb_balanced`, `nr_balance_failed`, `balance_interval`). A pass that
//! would write more takes the full path: with the decision record on (`--check`), with
//! the trace on, or at the top level (where update_sd_lb_stats() writes `rd->overload`).
//! Debug builds run should_we_balance() and the full find_busiest_group() beside the
//! shortcut and check that they balance too.

use lbsim_topology::{CpuId, SdFlag};

use crate::ctx::BalanceCtx;
use crate::lb::{CpuIdleType, Pass};
use crate::state::BalanceState;

use super::LegacyState;
use super::group_stats::{child_prefer_sibling, update_group_capacity};
use super::load_balance::{Exit, out_balanced, parent_sgc};

/// Whether find_busiest_group() (v4.6-v5.4) balances `cpu`'s domain at `level` at CPU_IDLE
/// before any load is read (see the module doc), for a first pass (`env->cpus` untrimmed,
/// `dst_cpu` the balancing CPU): a domain below the top level, without SD_OVERLAP, whose
/// local group is `cpu` alone, whose other groups have no `sgc->imbalance`, no misfit rule
/// (SD_ASYM_CPUCAPACITY from v4.20), and at most as many CFS tasks as CPUs (at most one with
/// the child's SD_PREFER_SIBLING). Returns the number of CPUs update_sd_lb_stats() reads
/// (every CPU of every group), or `None`.
pub(super) fn settled_scan(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    lg: &LegacyState,
    cpu: CpuId,
    level: usize,
) -> Option<u32> {
    let topo = ctx.topo;
    let doms = topo.domains(cpu);
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
    if local.group_weight != 1 {
        return None;
    }
    debug_assert!(topo.span(local.span).test(cpu));
    let child = level.checked_sub(1).map(|l| &doms[l]);
    // With SD_PREFER_SIBLING below, a group with two tasks may be demoted to overloaded
    // (v4.6: `sum_nr_running > 1`; v4.12+: one more than the local group's, at least 0).
    let prefer_sibling = child_prefer_sibling(child, lg.version);
    let mut scanned = topo.span_cpus(local.span).len();
    for gid in ids {
        let sg = topo.group(gid);
        if st.sgc(sg.sgc).imbalance {
            return None;
        }
        let cpus = topo.span_cpus(sg.span);
        let sum_nr_running: u32 = cpus
            .iter()
            .map(|c| ctx.rqs[c.index()].cfs.h_nr_running)
            .sum();
        let most = if prefer_sibling {
            sg.group_weight.min(1)
        } else {
            sg.group_weight
        };
        if sum_nr_running > most {
            return None;
        }
        scanned += cpus.len();
    }
    Some(scanned as u32)
}

/// Follows fair.c: load_balance() (v4.6-v5.4) for a pass at CPU_IDLE (the caller's test)
/// that find_busiest_group() balances before any load is read (`settled_scan()`; the
/// decision record and the trace off): returns `true` after doing what load_balance() does
/// then (see the module doc; `ld_moved` is 0 and `continue_balancing` stays set), or
/// `false`, having done nothing, when load_balance() must run.
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
    let idle = CpuIdleType::Idle;
    let Some(scanned) = settled_scan(ctx, st, lg, this_cpu, level) else {
        return false;
    };
    let topo = ctx.topo;
    let doms = topo.domains(this_cpu);
    #[cfg(debug_assertions)]
    let work_before = pass.work;
    pass.work.domains += 1;
    // The pass is counted, and find_busiest_group() finds no busiest group (one lookup of
    // the domain's counters for both).
    let lb = st.schedstat.sd_mut(this_cpu, level).lb_mut(idle);
    lb.lb_count += 1;
    lb.lb_nobusyg += 1;
    // should_we_balance(): the local group's one CPU.
    pass.work.cpus_scanned += 1;
    // find_busiest_group() -> update_sd_lb_stats().
    update_group_capacity(ctx, st, lg, this_cpu, level);
    pass.work.cpus_scanned += scanned;
    #[cfg(debug_assertions)]
    check_against_full_pass(ctx, st, lg, this_cpu, level, work_before, pass);
    let parent_sgc = parent_sgc(topo, this_cpu, level);
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

/// Debug builds: should_we_balance() and the full find_busiest_group() on the pass as it
/// stood before the shortcut (`work_before`) balance too, and charge what it charged. The
/// capacity refresh gives the same values a second time; the charges are put back.
#[cfg(debug_assertions)]
fn check_against_full_pass(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    this_cpu: CpuId,
    level: usize,
    work_before: crate::cost::WorkAccount,
    pass: &mut Pass,
) {
    let charged = pass.work;
    let mut env = super::load_balance::first_env(ctx.topo, lg, this_cpu, level, CpuIdleType::Idle);
    pass.work = work_before;
    pass.work.domains += 1;
    let balance = super::load_balance::should_we_balance(ctx, &env, pass);
    let fbg = super::imbalance::find_busiest_group(ctx, st, lg, &mut env, pass);
    debug_assert_eq!(pass.work, charged, "the shortcut charged otherwise");
    pass.work = charged;
    debug_assert!(
        balance && fbg.busiest.is_none() && env.imbalance == 0,
        "CPU{} level {level}: load_balance() would not have balanced",
        this_cpu.0
    );
    super::load_balance::put_back_env(ctx.topo, lg, env);
}
