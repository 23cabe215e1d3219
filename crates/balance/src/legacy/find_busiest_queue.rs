//! Follows fair.c: find_busiest_queue() (v4.6, with v4.20's misfit and asymmetric-capacity
//! rules): the runqueue of the busiest group to pull from.

use lbsim_topology::{CpuId, SchedGroup, SdFlag};

use crate::ctx::BalanceCtx;
use crate::lb::{LbEnv, MigrationType, Pass, check_cpu_capacity};

use super::LegacyState;

/// Follows fair.c: find_busiest_queue() (v4.6-v5.4), without NUMA balancing (no fbq_type
/// filter): per CPU of the group in `env->cpus`,
/// - (v4.20+) for a misfit source, the largest `misfit_task_load` wins;
/// - (v4.20+, SD_ASYM_CPUCAPACITY) a single-task runqueue bigger than the destination is
///   skipped;
/// - a single-task runqueue whose weighted_cpuload() exceeds the imbalance is skipped
///   unless its capacity is reduced (check_cpu_capacity());
/// - the largest `weighted_cpuload / capacity` wins, compared by cross-multiplying
///   (`wl * busiest_capacity > busiest_load * capacity`, from load 0 and capacity 1, so a
///   runqueue with no load is never picked).
pub fn find_busiest_queue(
    ctx: &BalanceCtx<'_>,
    lg: &LegacyState,
    env: &LbEnv,
    group: &SchedGroup,
    pass: &mut Pass,
) -> Option<CpuId> {
    let sd = env.sd(ctx.topo);
    let mut busiest = None;
    let mut busiest_load = 0u64;
    let mut busiest_capacity = 1u64;
    for i in ctx
        .topo
        .span(group.span)
        .iter()
        .filter(|&c| env.cpus.test(c))
    {
        pass.work.cpus_scanned += 1;
        let r = &ctx.rqs[i.index()];
        if lg.version.group_misfit_task() && env.migration_type == MigrationType::Misfit {
            if r.misfit_task_load > busiest_load {
                busiest_load = r.misfit_task_load;
                busiest = Some(i);
            }
            continue;
        }
        let capacity = r.cpu_capacity();
        if lg.version.group_misfit_task()
            && sd.flags.contains(SdFlag::AsymCpucapacity)
            && ctx.rqs[env.dst_cpu.index()].cpu_capacity() < capacity
            && r.nr_running == 1
        {
            continue;
        }
        let wl = lg.weighted_cpuload(ctx, i);
        if r.nr_running == 1 && wl as i64 > env.imbalance && !check_cpu_capacity(ctx, i, sd) {
            continue;
        }
        if wl.wrapping_mul(busiest_capacity) > busiest_load.wrapping_mul(capacity) {
            busiest_load = wl;
            busiest_capacity = capacity;
            busiest = Some(i);
        }
    }
    busiest
}
