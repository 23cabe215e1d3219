//! find_idlest_group() as v4.10 reworked it and v4.15 and v4.18 amended it (to v5.4): the
//! runnable load against an absolute allowance, `avg_load` for near-ties, the group with the
//! most spare capacity, and the NUMA "stay local" rule.

use lbsim_rq::{RqFeat, TaskId};
use lbsim_topology::{CpuId, GroupId, SchedDomain, SdFlag};

use super::super::LegacyState;
use super::super::load::cpu_util;
use super::forkexec_load_idx;
use crate::cost::WorkAccount;
use crate::ctx::BalanceCtx;
use crate::lb::{NICE_0_LOAD, SCHED_CAPACITY_SCALE};
use crate::state::BalanceState;

/// Follows fair.c: cpu_util_wake() (v4.10-v4.19; cpu_util_without() in v4.20-v5.4): the
/// CPU's utilization without `p`'s, if `p` last ran here and is not new (`last_update_time`
/// set); otherwise cpu_util() (with util_est from v4.17).
///
/// The "without" case: `util_avg - min(util_avg, task_util(p))` (`task_util` is the task's
/// `util_avg`); then, from v4.17 (f9be3e5961c5, "sched/fair: Use util_est in LB and WU
/// paths") with `UTIL_EST` on, the max of that and the cfs_rq's
/// `util_est.enqueued`: when other tasks are runnable there, their estimate can exceed the
/// decayed average and leaves less spare capacity. In v4.17-v4.19 the estimate is taken
/// whole (`p`, asleep at a wake-up, is not in it); from v4.20 (c469933e7721, "sched/fair:
/// Fix cpu_util_wake() for 'execl' type workloads") `_task_util_est(p)` is first subtracted
/// from it when `p` is queued (the kernel also when `p` is `current`, an exec). Capped at
/// `capacity_orig` either way.
///
/// Sources read: v4.20+'s cpu_util_without() in a stored copy of mainline's function (its
/// comment naming the cases it covers, the `task_on_rq_queued(p) || current == p`
/// subtraction); the v4.17-v4.19 function is that without the subtraction, as the title of
/// c469933e7721 says, and as vendor copies of the v4.17-era function show in structure
/// (their discount of `p`'s own util differs). The commit ids are not checked against a
/// kernel tree (the mirror could not be fetched here).
///
/// Deliberately differs: the kernel's `_task_util_est(p)` before v6.9 is
/// `max(ewma, enqueued)` of a two-field `util_est`; lbsim keeps v6.12's one field
/// (`util_est_value()`), which is what it subtracts. The `current == p` case is not modelled
/// (as in lbsim's v6.12 cpu_util()).
pub fn cpu_util_wake(ctx: &BalanceCtx<'_>, lg: &LegacyState, cpu: CpuId, p: TaskId) -> u64 {
    let rq = &ctx.rqs[cpu.index()];
    let capacity_orig = lg.capacity_orig[cpu.index()];
    let t = &ctx.tasks[p];
    if t.cpu != cpu || t.se.avg.last_update_time == 0 {
        return cpu_util(rq, ctx.tasks, capacity_orig);
    }
    let mut util = rq.cfs.avg.avg.util_avg.saturating_sub(t.se.avg.util_avg);
    if rq.params.feat(RqFeat::UtilEst) {
        let mut estimated = u64::from(rq.cfs.avg.avg.util_est);
        if lg.version.util_without_queued_est() && t.on_rq_queued() {
            estimated = estimated.saturating_sub(u64::from(t.se.avg.util_est_value()));
        }
        util = util.max(estimated);
    }
    util.min(capacity_orig)
}

/// Follows fair.c: capacity_spare_wake() (v4.10-v4.19; capacity_spare_without() in
/// v4.20-v5.4): `max(capacity_of(cpu) - cpu_util_wake(cpu, p), 0)`.
pub fn capacity_spare_wake(ctx: &BalanceCtx<'_>, lg: &LegacyState, cpu: CpuId, p: TaskId) -> u64 {
    ctx.rqs[cpu.index()]
        .cpu_capacity()
        .saturating_sub(cpu_util_wake(ctx, lg, cpu, p))
}

/// Follows fair.c: find_idlest_group() (v4.10-v5.4): the group of `sd` (a domain of
/// `this_cpu`) where `p` should go, or `None` to stay in the local group.
///
/// Per group with an allowed CPU, over all its CPUs: `runnable_load`, the sum of
/// source_load() (local group) or target_load() (others) at `forkexec_idx` (`wake_idx` for
/// `SD_BALANCE_WAKE`; from v5.3 weighted_cpuload() itself); `avg_load`, the sum of the
/// cfs_rq's `load_avg` (runnable and blocked load); both times `SCHED_CAPACITY_SCALE` over
/// the group's capacity; and the largest capacity_spare_wake(). With
/// `imbalance = NICE_0_LOAD * (imbalance_pct - 100) / 100` and
/// `imbalance_scale = 100 + (imbalance_pct - 100) / 2`, a remote group becomes the idlest if
/// its runnable load is below the idlest's by more than `imbalance`, or if it is within
/// `imbalance` of it and `100 * min_avg_load > imbalance_scale * avg_load`; the remote group
/// with the most spare capacity (first on ties) is kept beside it.
///
/// Then, except at fork (`SD_BALANCE_FORK`: the new task has no utilization yet): stay if the
/// local spare capacity exceeds `task_util(p) / 2` and `imbalance_scale * this_spare >
/// 100 * most_spare`; else take the most-spare group if its spare exceeds `task_util(p) / 2`.
/// Otherwise, with an idlest group: (v4.18+) on an `SD_NUMA` domain stay if
/// `min_runnable_load + imbalance >= this_runnable_load`; stay if the idlest's runnable load
/// exceeds the local one by more than `imbalance`, or if it is within it and
/// `100 * this_avg_load < imbalance_scale * min_avg_load`; else go to the idlest.
///
/// The local group's loads start at 0 up to v4.14 and at `ULONG_MAX` from v4.15, which
/// matters only when `p` may not run in it. Unsigned-long arithmetic wraps as in C.
/// `task_util(p)` is lbsim's `util_avg` of the task (no util_est: v4.10-v5.4 read the
/// average). Every CPU read counts in `work`.
#[allow(clippy::too_many_arguments)]
pub fn find_idlest_group_v4_10(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    lg: &LegacyState,
    sd: &SchedDomain,
    p: TaskId,
    this_cpu: CpuId,
    sd_flag: u32,
    work: &mut WorkAccount,
) -> Option<GroupId> {
    let v = lg.version;
    let topo = ctx.topo;
    let cpus_mask = &ctx.tasks[p].cpus_mask;
    let load_idx = forkexec_load_idx(lg, sd, sd_flag);
    let pct = u64::from(sd.imbalance_pct);
    let imbalance_scale = 100 + (pct - 100) / 2;
    let imbalance = NICE_0_LOAD * (pct - 100) / 100;
    let local_init = if v.find_idlest_cpu_slow_path() {
        u64::MAX
    } else {
        0
    };
    let mut idlest = None;
    let mut most_spare_sg = None;
    let mut min_runnable_load = u64::MAX;
    let mut this_runnable_load = local_init;
    let mut min_avg_load = u64::MAX;
    let mut this_avg_load = local_init;
    let mut most_spare = 0u64;
    let mut this_spare = 0u64;
    work.domains += 1;
    for gid in topo.group_ids(sd) {
        let group = topo.group(gid);
        let span = topo.span(group.span);
        if !span.intersects(cpus_mask) {
            continue;
        }
        let local_group = span.test(this_cpu);
        let mut runnable_load = 0u64;
        let mut avg_load = 0u64;
        let mut max_spare_cap = 0u64;
        for i in span.iter() {
            work.cpus_scanned += 1;
            runnable_load += if local_group {
                lg.source_load(ctx, i, load_idx)
            } else {
                lg.target_load(ctx, i, load_idx)
            };
            avg_load += ctx.rqs[i.index()].cfs.avg.avg.load_avg;
            max_spare_cap = max_spare_cap.max(capacity_spare_wake(ctx, lg, i, p));
        }
        let capacity = st.sgc(group.sgc).capacity.max(1);
        avg_load = avg_load * SCHED_CAPACITY_SCALE / capacity;
        runnable_load = runnable_load * SCHED_CAPACITY_SCALE / capacity;
        if local_group {
            this_runnable_load = runnable_load;
            this_avg_load = avg_load;
            this_spare = max_spare_cap;
        } else {
            if min_runnable_load > runnable_load.wrapping_add(imbalance) {
                min_runnable_load = runnable_load;
                min_avg_load = avg_load;
                idlest = Some(gid);
            } else if runnable_load < min_runnable_load.wrapping_add(imbalance)
                && 100u64.wrapping_mul(min_avg_load) > imbalance_scale.wrapping_mul(avg_load)
            {
                min_avg_load = avg_load;
                idlest = Some(gid);
            }
            if most_spare < max_spare_cap {
                most_spare = max_spare_cap;
                most_spare_sg = Some(gid);
            }
        }
    }

    if sd_flag & SdFlag::BalanceFork.bit() == 0 {
        let half_util = ctx.tasks[p].se.avg.util_avg / 2;
        if this_spare > half_util
            && imbalance_scale.wrapping_mul(this_spare) > 100u64.wrapping_mul(most_spare)
        {
            return None;
        }
        if most_spare > half_util {
            return most_spare_sg;
        }
    }

    let idlest = idlest?;
    if v.find_idlest_numa_stay_local()
        && sd.flags.contains(SdFlag::Numa)
        && min_runnable_load.wrapping_add(imbalance) >= this_runnable_load
    {
        return None;
    }
    if min_runnable_load > this_runnable_load.wrapping_add(imbalance) {
        return None;
    }
    if this_runnable_load < min_runnable_load.wrapping_add(imbalance)
        && 100u64.wrapping_mul(this_avg_load) < imbalance_scale.wrapping_mul(min_avg_load)
    {
        return None;
    }
    Some(idlest)
}
