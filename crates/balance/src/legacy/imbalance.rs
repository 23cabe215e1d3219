//! How much to move, and from which group, before v5.5: fix_small_imbalance(),
//! calculate_imbalance() and find_busiest_group(), following kernel/sched/fair.c of v4.6
//! (with the v4.7, v4.15, v4.19 and v4.20 changes as [`LegacyVersion`] decides). The
//! arithmetic is the kernel's `unsigned long` (64-bit, wrapping where the kernel's would).

use lbsim_topology::GroupId;

use crate::ctx::BalanceCtx;
use crate::lb::{CpuIdleType, LbEnv, MigrationType, NICE_0_LOAD, Pass, SCHED_CAPACITY_SCALE};
use crate::state::BalanceState;

use super::LegacyState;
use super::group_stats::{group_has_capacity, update_sd_lb_stats};
use super::load::cpu_avg_load_per_task;
use super::types::{LegacyGroupType, SdLbStats};
use super::version::LegacyVersion;

/// Follows fair.c: fix_small_imbalance() (v4.6-v5.4): the imbalance is smaller than one of
/// the busiest group's tasks, so no task would move; decide whether moving one
/// (`busiest->load_per_task`) is still worth it.
///
/// 1. `imbn = 2`; a local group with no task takes `dst_avg_load_per_task`
///    (cpu_avg_load_per_task(dst_cpu)) as its `load_per_task`; else if the busiest group's
///    tasks are bigger than the local group's, `imbn = 1`.
/// 2. With `scaled = busiest->load_per_task * 1024 / busiest->group_capacity`: if
///    `busiest->avg_load + scaled >= local->avg_load + scaled * imbn`, move one task.
/// 3. Otherwise move one task only if that raises the capacity used (`capa_move >
///    capa_now`, computed as the kernel does).
///
/// Returns the new `env->imbalance`, or `None` to leave it as it was.
pub fn fix_small_imbalance(sds: &mut SdLbStats, dst_avg_load_per_task: u64) -> Option<u64> {
    let local = &mut sds.local_stat;
    let busiest = &sds.busiest_stat;
    let mut imbn = 2u64;
    if local.sum_nr_running == 0 {
        local.load_per_task = dst_avg_load_per_task;
    } else if busiest.load_per_task > local.load_per_task {
        imbn = 1;
    }
    let scaled_busy_load_per_task =
        busiest.load_per_task * SCHED_CAPACITY_SCALE / busiest.group_capacity.max(1);
    if busiest.avg_load.wrapping_add(scaled_busy_load_per_task)
        >= local
            .avg_load
            .wrapping_add(scaled_busy_load_per_task.wrapping_mul(imbn))
    {
        return Some(busiest.load_per_task);
    }
    let mut capa_now = 0u64;
    capa_now = capa_now.wrapping_add(
        busiest
            .group_capacity
            .wrapping_mul(busiest.load_per_task.min(busiest.avg_load)),
    );
    capa_now = capa_now.wrapping_add(
        local
            .group_capacity
            .wrapping_mul(local.load_per_task.min(local.avg_load)),
    );
    capa_now /= SCHED_CAPACITY_SCALE;
    let mut capa_move = 0u64;
    if busiest.avg_load > scaled_busy_load_per_task {
        capa_move = capa_move.wrapping_add(
            busiest.group_capacity.wrapping_mul(
                busiest
                    .load_per_task
                    .min(busiest.avg_load - scaled_busy_load_per_task),
            ),
        );
    }
    let tmp = if busiest.avg_load.wrapping_mul(busiest.group_capacity)
        < busiest.load_per_task.wrapping_mul(SCHED_CAPACITY_SCALE)
    {
        busiest.avg_load.wrapping_mul(busiest.group_capacity) / local.group_capacity.max(1)
    } else {
        busiest.load_per_task.wrapping_mul(SCHED_CAPACITY_SCALE) / local.group_capacity.max(1)
    };
    capa_move = capa_move.wrapping_add(
        local
            .group_capacity
            .wrapping_mul(local.load_per_task.min(local.avg_load.wrapping_add(tmp))),
    );
    capa_move /= SCHED_CAPACITY_SCALE;
    if capa_move > capa_now {
        return Some(busiest.load_per_task);
    }
    None
}

/// Follows fair.c: calculate_imbalance() (v4.6, with v4.7's unit of `load_above_capacity`
/// and v4.20's misfit boost): returns `env->imbalance`.
///
/// 1. An imbalanced busiest group's `load_per_task` is capped at the domain's `avg_load`.
/// 2. If the busiest group is not above the domain average, or the local group not below
///    it (v4.20+: unless busiest is misfit), the imbalance is 0 and fix_small_imbalance()
///    decides.
/// 3. If both groups are overloaded, `load_above_capacity = sum_nr_running * 1024 -
///    group_capacity` (v4.7+: times `NICE_0_LOAD / group_capacity`); unlimited if not
///    positive.
/// 4. `imbalance = min(min(busiest.avg - sds.avg, load_above_capacity) * busiest_cap,
///    (sds.avg - local.avg) * local_cap) / 1024`; (v4.20+) at least the misfit load.
/// 5. Below `busiest->load_per_task`, fix_small_imbalance() decides.
pub fn calculate_imbalance(
    version: LegacyVersion,
    sds: &mut SdLbStats,
    dst_avg_load_per_task: u64,
) -> u64 {
    let misfit =
        version.group_misfit_task() && sds.busiest_stat.group_type == LegacyGroupType::MisfitTask;
    if sds.busiest_stat.group_type == LegacyGroupType::Imbalanced {
        sds.busiest_stat.load_per_task = sds.busiest_stat.load_per_task.min(sds.avg_load);
    }
    let (local, busiest) = (sds.local_stat, sds.busiest_stat);
    if !misfit && (busiest.avg_load <= sds.avg_load || local.avg_load >= sds.avg_load) {
        return fix_small_imbalance(sds, dst_avg_load_per_task).unwrap_or(0);
    }
    let mut load_above_capacity = u64::MAX;
    if busiest.group_type == LegacyGroupType::Overloaded
        && local.group_type == LegacyGroupType::Overloaded
    {
        load_above_capacity = u64::from(busiest.sum_nr_running) * SCHED_CAPACITY_SCALE;
        if load_above_capacity > busiest.group_capacity {
            load_above_capacity -= busiest.group_capacity;
            if version.load_above_capacity_scaled() {
                load_above_capacity =
                    load_above_capacity * NICE_0_LOAD / busiest.group_capacity.max(1);
            }
        } else {
            load_above_capacity = u64::MAX;
        }
    }
    let max_pull = busiest
        .avg_load
        .wrapping_sub(sds.avg_load)
        .min(load_above_capacity);
    let mut imbalance = max_pull.wrapping_mul(busiest.group_capacity).min(
        sds.avg_load
            .wrapping_sub(local.avg_load)
            .wrapping_mul(local.group_capacity),
    ) / SCHED_CAPACITY_SCALE;
    if misfit {
        imbalance = (imbalance as i64).max(busiest.group_misfit_task_load as i64) as u64;
    }
    if imbalance < busiest.load_per_task {
        return fix_small_imbalance(sds, dst_avg_load_per_task).unwrap_or(imbalance);
    }
    imbalance
}

/// What find_busiest_group() found.
#[derive(Clone, Debug)]
pub struct LegacyFbg {
    /// The busiest group, if the domain is to be balanced.
    pub busiest: Option<GroupId>,
    /// The statistics it was decided on.
    pub sds: SdLbStats,
}

/// Follows fair.c: find_busiest_group() (v4.6; exit order of KERNEL-HISTORY §2.6):
///
/// 1. update_sd_lb_stats(); check_asym_packing() at idle and newidle (the topology crate
///    builds no SD_ASYM_PACKING, so it never applies);
/// 2. no busiest group, or one without tasks: balanced;
/// 3. `sds.avg_load = 1024 * total_load / total_capacity`;
/// 4. force: a `group_imbalanced` busiest; at CPU_NEWLY_IDLE (v4.15+: CPU_IDLE too) a
///    local group with capacity against a busiest group without; (v4.20+) a misfit
///    busiest;
/// 5. balanced: `local.avg_load >= busiest.avg_load`, or `local.avg_load >= sds.avg_load`;
/// 6. at CPU_IDLE, balanced if busiest is not overloaded and the local group has at most
///    one idle CPU more; otherwise balanced if `100 * busiest->avg_load <=
///    imbalance_pct * local->avg_load`;
/// 7. force_balance: calculate_imbalance(); (v4.19+) no group when it gave 0.
///
/// Sets `env->imbalance` (0 when balanced) and, for a misfit busiest, `migrate_misfit`
/// (v4.20's `env->src_grp_type == group_misfit_task`).
pub fn find_busiest_group(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    env: &mut LbEnv,
    pass: &mut Pass,
) -> LegacyFbg {
    let mut sds = update_sd_lb_stats(ctx, st, lg, env, pass);
    let version = lg.version;
    env.migration_type = MigrationType::Load;
    let balanced = |env: &mut LbEnv, sds: SdLbStats| {
        env.imbalance = 0;
        LegacyFbg { busiest: None, sds }
    };
    let Some(busiest_group) = sds.busiest else {
        return balanced(env, sds);
    };
    let (local, busiest) = (sds.local_stat, sds.busiest_stat);
    if busiest.sum_nr_running == 0 {
        return balanced(env, sds);
    }
    sds.avg_load = SCHED_CAPACITY_SCALE * sds.total_load / sds.total_capacity.max(1);
    let sd = env.sd(ctx.topo);
    let pct = u64::from(sd.imbalance_pct);
    let idle_for_force = if version.force_balance_any_idle() {
        env.idle != CpuIdleType::NotIdle
    } else {
        env.idle == CpuIdleType::NewlyIdle
    };
    let force = busiest.group_type == LegacyGroupType::Imbalanced
        || (idle_for_force
            && group_has_capacity(sd.imbalance_pct, &local)
            && busiest.group_no_capacity)
        || (version.group_misfit_task() && busiest.group_type == LegacyGroupType::MisfitTask);
    if !force {
        if local.avg_load >= busiest.avg_load || local.avg_load >= sds.avg_load {
            return balanced(env, sds);
        }
        if env.idle == CpuIdleType::Idle {
            if busiest.group_type != LegacyGroupType::Overloaded
                && local.idle_cpus <= busiest.idle_cpus + 1
            {
                return balanced(env, sds);
            }
        } else if 100 * busiest.avg_load <= pct * local.avg_load {
            return balanced(env, sds);
        }
    }
    if version.group_misfit_task() && busiest.group_type == LegacyGroupType::MisfitTask {
        env.migration_type = MigrationType::Misfit;
    }
    let dst_lpt = cpu_avg_load_per_task(
        &ctx.rqs[env.dst_cpu.index()],
        ctx.tasks,
        lg.tip_avg_high(ctx),
    );
    env.imbalance = calculate_imbalance(version, &mut sds, dst_lpt) as i64;
    if version.fbg_null_on_zero_imbalance() && env.imbalance == 0 {
        return LegacyFbg { busiest: None, sds };
    }
    LegacyFbg {
        busiest: Some(busiest_group),
        sds,
    }
}
