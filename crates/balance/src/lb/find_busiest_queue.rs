//! Follows fair.c: find_busiest_queue() (v6.6; sched_balance_find_src_rq() since v6.10): the
//! busiest runqueue of the busiest group.

use crate::params::LbFeat;
use lbsim_topology::{CpuId, SchedGroup, SdFlag};

use crate::ctx::BalanceCtx;

use super::cpu::{
    capacity_of, check_cpu_capacity, cpu_load, cpu_util_cfs, cpu_util_cfs_boost, rq, sched_asym,
};
use super::types::MigrationType;
use super::{LbEnv, Pass, capacity_greater};

/// Follows fair.c: find_busiest_queue() (v6.6; sched_balance_find_src_rq() since v6.10).
///
/// With `LB_UTIL_SKIP_SINGLE` (v5.7, seed 000) migrate_util skips a runqueue with at most
/// one CFS task: its only task is running and cannot be detached. Without it (the v5.5-v5.6
/// rule) such a runqueue can be chosen for its utilization. migrate_util reads
/// `cpu_util_cfs_boost()` (v6.5 on); with `NO_LB_UTIL_RUNNABLE_BOOST` it reads `cpu_util_cfs()`
/// as v5.7-v6.4 did, so a runqueue of stacked tasks whose runnable_avg is high but whose
/// util_avg is low loses to one running a single task. Ties keep the first CPU. With
/// `LB_BUSIEST_NR_RUNNABLE` (v6.14) a runqueue's count leaves out its delayed-dequeue tasks.
pub fn find_busiest_queue(
    ctx: &BalanceCtx<'_>,
    env: &LbEnv,
    group: &SchedGroup,
    pass: &mut Pass,
) -> Option<CpuId> {
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let at = pass.now_ns(ctx);
    let mut busiest: Option<CpuId> = None;
    let (mut busiest_util, mut busiest_load, mut busiest_capacity, mut busiest_nr) =
        (0u64, 0u64, 1u64, 0u32);
    for &i in topo.span_cpus(group.span) {
        if !env.cpus.test(i) {
            continue;
        }
        pass.work.cpus_scanned += 1;
        let r = rq(ctx, i);
        // fbq_classify_rq() is `regular` and env->fbq_type `all` without NUMA balancing.
        let nr_running = if ctx.features.enabled(LbFeat::LbBusiestNrRunnable) {
            r.cfs.h_nr_running - r.cfs.h_nr_delayed
        } else {
            r.cfs.h_nr_running
        };
        if nr_running == 0 {
            continue;
        }
        let capacity = capacity_of(ctx, i);
        if sd.flags.contains(SdFlag::AsymCpucapacity)
            && !capacity_greater(capacity_of(ctx, env.dst_cpu), capacity)
            && nr_running == 1
        {
            continue;
        }
        if sched_asym(ctx, sd, i, env.dst_cpu, at) && nr_running == 1 {
            continue;
        }
        match env.migration_type {
            MigrationType::Load => {
                let load = cpu_load(ctx, i);
                if nr_running == 1 && load as i64 > env.imbalance && !check_cpu_capacity(ctx, i, sd)
                {
                    continue;
                }
                if load * busiest_capacity > busiest_load * capacity {
                    busiest_load = load;
                    busiest_capacity = capacity;
                    busiest = Some(i);
                }
            }
            MigrationType::Util => {
                let util = if ctx.features.enabled(LbFeat::LbUtilRunnableBoost) {
                    cpu_util_cfs_boost(ctx, i)
                } else {
                    cpu_util_cfs(ctx, i)
                };
                if ctx.features.enabled(LbFeat::LbUtilSkipSingle) && nr_running <= 1 {
                    continue;
                }
                if busiest_util < util {
                    busiest_util = util;
                    busiest = Some(i);
                }
            }
            MigrationType::Task => {
                if busiest_nr < nr_running {
                    busiest_nr = nr_running;
                    busiest = Some(i);
                }
            }
            MigrationType::Misfit => {
                if r.misfit_task_load > busiest_load {
                    busiest_load = r.misfit_task_load;
                    busiest = Some(i);
                }
            }
        }
    }
    busiest
}
