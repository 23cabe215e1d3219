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
//! What is kept: update_sd_lb_stats()'s refresh of the local group's capacity (always
//! done at CPU_IDLE), its charge for every CPU of every group (the kernel reads them all),
//! and find_busiest_group()'s `env->imbalance` and `migration_type`. What it would also
//! write is left to the full path: the decision record's group counts (`--check`), the
//! trace, and `rd->overload` (written only at the top level). Debug builds run the full
//! find_busiest_group() after the shortcut and check that it balances too.

use lbsim_topology::SdFlag;

use crate::ctx::BalanceCtx;
use crate::lb::{CpuIdleType, LbEnv, MigrationType, Pass};
use crate::state::BalanceState;

use super::LegacyState;
use super::group_stats::{child_prefer_sibling, update_group_capacity};

/// Follows fair.c: find_busiest_group() (v4.6-v5.4) with its update_sd_lb_stats(), for a
/// pass whose outcome is "balanced" before the statistics (see the module doc): returns
/// `true` after doing what those two functions would have done (the local group's
/// capacity refresh, the CPUs' charge, `env->imbalance = 0`), or `false`, having done
/// nothing, when the shortcut does not apply and the full functions must run.
///
/// Applies to a first pass (`env->cpus` untrimmed, so the groups' CPUs are all in it and
/// `dst_cpu` is the balancing CPU) at CPU_IDLE in a domain below the top level, without
/// SD_OVERLAP, whose local group is one CPU, with the decision record and the trace off.
pub fn find_busiest_group_settled(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    env: &mut LbEnv,
    pass: &mut Pass,
) -> bool {
    if env.idle != CpuIdleType::Idle || env.cpus_trimmed || st.checks.enabled || st.trace.enabled {
        return false;
    }
    let topo = ctx.topo;
    let doms = topo.domains(env.sd_cpu);
    let sd = &doms[env.level];
    if sd.flags.contains(SdFlag::Overlap) || doms.get(env.level + 1).is_none() {
        return false;
    }
    if lg.version.group_misfit_task() && sd.flags.contains(SdFlag::AsymCpucapacity) {
        return false;
    }
    let mut ids = topo.group_ids(sd);
    let Some(local) = ids.next().map(|g| topo.group(g)) else {
        return false;
    };
    if local.group_weight != 1 {
        return false;
    }
    debug_assert!(topo.span(local.span).test(env.dst_cpu));
    let child = env.level.checked_sub(1).map(|l| &doms[l]);
    // With SD_PREFER_SIBLING below, a group with two tasks may be demoted to overloaded
    // (v4.6: `sum_nr_running > 1`; v4.12+: one more than the local group's, at least 0).
    let prefer_sibling = child_prefer_sibling(child, lg.version);
    let mut scanned = topo.span_cpus(local.span).len();
    for gid in ids {
        let sg = topo.group(gid);
        if st.sgc(sg.sgc).imbalance {
            return false;
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
            return false;
        }
        scanned += cpus.len();
    }
    #[cfg(debug_assertions)]
    let (env_before, work_before) = (env.clone(), pass.work);
    update_group_capacity(ctx, st, lg, env.sd_cpu, env.level);
    pass.work.cpus_scanned += scanned as u32;
    env.migration_type = MigrationType::Load;
    env.imbalance = 0;
    #[cfg(debug_assertions)]
    {
        // The full functions, run again: the capacity refresh gives the same values a
        // second time, and the charges are put back.
        let mut full_env = env_before;
        let charged = pass.work;
        pass.work = work_before;
        let fbg = super::imbalance::find_busiest_group(ctx, st, lg, &mut full_env, pass);
        debug_assert_eq!(pass.work, charged, "the shortcut charged otherwise");
        pass.work = charged;
        debug_assert!(
            fbg.busiest.is_none() && full_env.imbalance == 0,
            "CPU{} level {}: find_busiest_group() did not balance",
            env.sd_cpu.0,
            env.level
        );
    }
    true
}
