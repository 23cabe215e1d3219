//! How much to move and from which group, following kernel/sched/fair.c (v6.6-v6.12):
//! sibling_imbalance(), adjust_numa_imbalance(), calculate_imbalance() and
//! find_busiest_group() (sched_balance_find_src_group() since v6.10), with the
//! `PREFER_SIBLING_NR_DIFF` experiment switch ([`prefer_sibling_force`]).

use crate::params::LbFeat;
use lbsim_topology::{GroupId, SdFlag};

use crate::ctx::BalanceCtx;
use crate::state::BalanceState;

use super::group_stats::{smt_vs_nonsmt_groups, update_sd_lb_stats_with};
use super::memo::SdMemo;
use super::types::{GroupType, MigrationType, SdLbStats, SgLbStats};
use super::{LbEnv, NUMA_IMBALANCE_MIN, Pass, SCHED_CAPACITY_SCALE};

/// Follows fair.c: sibling_imbalance() (v6.6-v6.12): the task-count difference between the
/// busiest and the local group, normalised by their core counts (rounded), with an empty
/// local group always offered 2 when busiest has more than one task.
pub fn sibling_imbalance(
    dst_idle: bool,
    ncores_busiest: u32,
    ncores_local: u32,
    busiest: &SgLbStats,
    local: &SgLbStats,
) -> i64 {
    if !dst_idle || busiest.sum_nr_running == 0 {
        return 0;
    }
    let (nb, nl) = (i64::from(ncores_busiest), i64::from(ncores_local));
    if nb == nl {
        return (i64::from(busiest.sum_nr_running) - i64::from(local.sum_nr_running)).max(0);
    }
    let mut imbalance =
        (nl * i64::from(busiest.sum_nr_running) - nb * i64::from(local.sum_nr_running)).max(0);
    imbalance = (2 * imbalance + nl + nb) / (nl + nb);
    if imbalance <= 1 && local.sum_nr_running == 0 && busiest.sum_nr_running > 1 {
        imbalance = 2;
    }
    imbalance
}

/// Follows fair.c: adjust_numa_imbalance() (v6.0-v6.12): with at most `imb_numa_nr` tasks
/// on the destination, an imbalance of up to NUMA_IMBALANCE_MIN tasks is allowed (0).
pub fn adjust_numa_imbalance(imbalance: i64, dst_running: i64, imb_numa_nr: i64) -> i64 {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imbalance
}

/// Whether `PREFER_SIBLING_NR_DIFF` is off and the pre-2017 prefer-sibling rule applies.
///
/// The experiment switch (seed 004; EXPERIMENTS.md, KERNEL-MODEL §7e) within the v6.6
/// structure:
/// - **on** (v6.6+): find_busiest_group() forces a balance for prefer_sibling only if
///   `sibling_imbalance() > 1`, and calculate_imbalance() moves half that difference, so a
///   one-task difference between sibling groups is left alone.
/// - **off** (the rule before Srikar Dronamraju's 2017 patch, from Nikhil Rao's 2010
///   "group_capacity to 1 only if local group has extra capacity"): an idle destination
///   whose local group has spare capacity treats a busiest group with more than one task
///   as lacking capacity (`group_no_capacity`, hence overloaded), and that kernel's
///   calculate_imbalance() then balanced load: for a difference of one task
///   fix_small_imbalance() set the imbalance to one task's load, so the lone extra task
///   moved, and moved back at the next balance of the other side. In the v6.6 structure
///   this is: the force_balance condition becomes `busiest.sum_nr_running > 1`, and the
///   prefer_sibling migrate_task imbalance is at least one task.
///
/// This returns true when the off-rule forces a balance (`env.idle` and the busiest group
/// has more than one task); the caller has checked prefer_sibling and a has_spare local.
pub fn prefer_sibling_force(ctx: &BalanceCtx<'_>, env: &LbEnv, busiest: &SgLbStats) -> bool {
    !ctx.features.enabled(LbFeat::PreferSiblingNrDiff)
        && env.idle.is_idle()
        && busiest.sum_nr_running > 1
}

/// Follows fair.c: calculate_imbalance() (v6.6-v6.12): the migration type and the amount.
/// With `NO_PREFER_SIBLING_NR_DIFF`, see [`prefer_sibling_force`].
pub fn calculate_imbalance(ctx: &BalanceCtx<'_>, env: &mut LbEnv, sds: &mut SdLbStats) {
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let local = &mut sds.local_stat;
    let busiest = &sds.busiest_stat;
    match busiest.group_type {
        GroupType::MisfitTask => {
            if sd.flags.contains(SdFlag::AsymCpucapacity) {
                env.migration_type = MigrationType::Misfit;
                env.imbalance = 1;
            } else {
                env.migration_type = MigrationType::Load;
                env.imbalance = busiest.group_misfit_task_load as i64;
            }
            return;
        }
        GroupType::AsymPacking => {
            env.migration_type = MigrationType::Task;
            env.imbalance = i64::from(busiest.sum_h_nr_running);
            return;
        }
        GroupType::SmtBalance | GroupType::Imbalanced => {
            env.migration_type = MigrationType::Task;
            env.imbalance = 1;
            return;
        }
        _ => {}
    }
    if local.group_type == GroupType::HasSpare {
        if busiest.group_type > GroupType::FullyBusy && !sd.flags.contains(SdFlag::ShareLlc) {
            env.migration_type = MigrationType::Util;
            env.imbalance = (local.group_capacity.max(local.group_util) - local.group_util) as i64;
            if env.idle.is_idle() && env.imbalance == 0 {
                env.migration_type = MigrationType::Task;
                env.imbalance = 1;
            }
            return;
        }
        env.migration_type = MigrationType::Task;
        if busiest.group_weight == 1 || sds.prefer_sibling {
            let (nb, nl) = (
                sds.busiest.map_or(0, |g| topo.group(g).cores),
                sds.local.map_or(0, |g| topo.group(g).cores),
            );
            env.imbalance = sibling_imbalance(env.idle.is_idle(), nb, nl, busiest, local);
        } else {
            env.imbalance = (i64::from(local.idle_cpus) - i64::from(busiest.idle_cpus)).max(0);
        }
        if sd.flags.contains(SdFlag::Numa) {
            env.imbalance = adjust_numa_imbalance(
                env.imbalance,
                i64::from(local.sum_nr_running) + 1,
                i64::from(sd.imb_numa_nr),
            );
        }
        env.imbalance >>= 1;
        if sds.prefer_sibling && env.imbalance == 0 && prefer_sibling_force(ctx, env, busiest) {
            env.imbalance = 1;
        }
        return;
    }
    if local.group_type < GroupType::Overloaded {
        local.avg_load = local.group_load * SCHED_CAPACITY_SCALE / local.group_capacity;
        if local.avg_load >= busiest.avg_load {
            env.imbalance = 0;
            return;
        }
        sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity;
        if local.avg_load >= sds.avg_load {
            env.imbalance = 0;
            return;
        }
    }
    env.migration_type = MigrationType::Load;
    let a = (busiest.avg_load.wrapping_sub(sds.avg_load)).wrapping_mul(busiest.group_capacity);
    let b = (sds.avg_load.wrapping_sub(local.avg_load)).wrapping_mul(local.group_capacity);
    env.imbalance = (a.min(b) / SCHED_CAPACITY_SCALE) as i64;
}

/// What find_busiest_group() found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FbgResult {
    /// The busiest group, if there is an imbalance to fix.
    pub busiest: Option<GroupId>,
    /// The domain statistics (for tests and traces).
    pub sds: SdLbStats,
}

/// Follows fair.c: find_busiest_group() (v6.6; sched_balance_find_src_group() since v6.10):
/// the early exits in the kernel's order, then calculate_imbalance(). Sets `env.imbalance`
/// (0 when balanced). With `NO_PREFER_SIBLING_NR_DIFF` the prefer-sibling exit uses the
/// pre-2017 rule (see [`prefer_sibling_force`]).
#[inline]
pub fn find_busiest_group(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &mut LbEnv,
    pass: &mut Pass,
) -> FbgResult {
    find_busiest_group_with(ctx, st, env, None, pass)
}

/// [`find_busiest_group`] with the group statistics `memo` kept from the load_balance()'s
/// previous attempt, if it has one (see [`SdMemo`]).
pub(super) fn find_busiest_group_with(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &mut LbEnv,
    memo: Option<&mut SdMemo>,
    pass: &mut Pass,
) -> FbgResult {
    let mut sds = match memo {
        Some(memo) => update_sd_lb_stats_with::<true>(ctx, st, env, Some(memo), pass),
        None => update_sd_lb_stats_with::<false>(ctx, st, env, None, pass),
    };
    let ctx: &BalanceCtx<'_> = ctx;
    let topo = ctx.topo;
    let balanced = |env: &mut LbEnv, sds: SdLbStats| {
        env.imbalance = 0;
        FbgResult { busiest: None, sds }
    };
    if sds.busiest.is_none() {
        return balanced(env, sds);
    }
    let busiest = sds.busiest_stat;
    let local = sds.local_stat;
    let force = 'checks: {
        if busiest.group_type == GroupType::MisfitTask {
            break 'checks true;
        }
        // !is_rd_overutilized() && rd->pd: no perf domain is modelled, never taken.
        if busiest.group_type == GroupType::AsymPacking
            || busiest.group_type == GroupType::Imbalanced
        {
            break 'checks true;
        }
        if local.group_type > busiest.group_type {
            return balanced(env, sds);
        }
        if local.group_type == GroupType::Overloaded {
            if local.avg_load >= busiest.avg_load {
                return balanced(env, sds);
            }
            sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity;
            if local.avg_load >= sds.avg_load {
                return balanced(env, sds);
            }
            let pct = u64::from(env.sd(topo).imbalance_pct);
            if 100 * busiest.avg_load <= pct * local.avg_load {
                return balanced(env, sds);
            }
        }
        if sds.prefer_sibling && local.group_type == GroupType::HasSpare {
            let force = if ctx.features.enabled(LbFeat::PreferSiblingNrDiff) {
                let (nb, nl) = (
                    sds.busiest.map_or(0, |g| topo.group(g).cores),
                    sds.local.map_or(0, |g| topo.group(g).cores),
                );
                sibling_imbalance(env.idle.is_idle(), nb, nl, &busiest, &local) > 1
            } else {
                prefer_sibling_force(ctx, env, &busiest)
            };
            st.checks
                .prefer_sibling_exit(ctx, env, &sds, force, pass.now_ns(ctx));
            if force {
                break 'checks true;
            }
        }
        if busiest.group_type != GroupType::Overloaded {
            if !env.idle.is_idle() {
                return balanced(env, sds);
            }
            if busiest.group_type == GroupType::SmtBalance
                && smt_vs_nonsmt_groups(
                    sds.local.map(|g| topo.group(g)),
                    sds.busiest.map(|g| topo.group(g)),
                )
            {
                break 'checks true;
            }
            if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                return balanced(env, sds);
            }
            if busiest.sum_h_nr_running == 1 {
                return balanced(env, sds);
            }
        }
        true
    };
    debug_assert!(force);
    calculate_imbalance(ctx, env, &mut sds);
    st.checks
        .imbalance_calculated(ctx, env, &sds, pass.now_ns(ctx));
    FbgResult {
        busiest: if env.imbalance != 0 {
            sds.busiest
        } else {
            None
        },
        sds,
    }
}
