//! The slow path of placement in the kernels before v5.5, taken by fork and exec (and by a
//! wake-up on a domain with `SD_BALANCE_WAKE`, which sd_init() sets only below an
//! asymmetric-capacity level from v4.10): find_idlest_group() and find_idlest_cpu() of
//! kernel/sched/fair.c v4.6, on source_load()/target_load() at the domain's
//! `forkexec_idx` (`wake_idx` for a wake-up) and half the domain's `imbalance_pct`, and the
//! walk down the domains that select_task_rq_fair() (v4.6) does with them.
//!
//! Deliberately not modelled: v4.10's rework of find_idlest_group() (6b94780e45c1 and its
//! series: `runnable_load` beside `avg_load`, the spare-capacity rule, `imbalance_scale`)
//! and its v4.14-v4.17 follow-ups (find_idlest_group_cpu(), the `sync_entity_load_avg()`
//! before the walk). Every release of [`super::LegacyVersion`] runs v4.6's functions here;
//! on a machine without idle CPUs they pick the same group as the v4.10 code whenever the
//! groups' loads differ by more than the allowance.

use lbsim_rq::TaskId;
use lbsim_topology::{CpuId, GroupId, SchedDomain, SchedGroup, SdFlag};

use super::LegacyState;
use crate::cost::WorkAccount;
use crate::ctx::BalanceCtx;
use crate::fork::available_idle_cpu;
use crate::lb::SCHED_CAPACITY_SCALE;
use crate::state::BalanceState;

/// Follows fair.c: find_idlest_group() (v4.6): the least loaded group of `sd` (a domain of
/// `this_cpu`) that `p` may run in, or `None` to stay in the local group.
///
/// The load index is `sd->forkexec_idx` (`sd->wake_idx` when `sd_flag` has
/// `SD_BALANCE_WAKE`; both 0 in every sd_init() of these kernels). A group's load is the sum
/// over all its CPUs of source_load() for the local group and target_load() for the others
/// ("bias balancing toward cpus of our domain"), times `SCHED_CAPACITY_SCALE` over the
/// group's capacity. Groups without an allowed CPU are skipped. The idlest remote group is
/// chosen only if `100 * local < (100 + (imbalance_pct - 100) / 2) * idlest`; a tie of
/// remote groups keeps the first in the domain's ring. Every CPU read counts in `work`.
#[allow(clippy::too_many_arguments)]
pub fn find_idlest_group(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    lg: &LegacyState,
    sd: &SchedDomain,
    p: TaskId,
    this_cpu: CpuId,
    sd_flag: u32,
    work: &mut WorkAccount,
) -> Option<GroupId> {
    let topo = ctx.topo;
    let cpus_mask = &ctx.tasks[p].cpus_mask;
    let idx = lg.load_idx(sd);
    let load_idx = if sd_flag & SdFlag::BalanceWake.bit() != 0 {
        idx.wake_idx
    } else {
        idx.forkexec_idx
    };
    let imbalance = 100 + (u64::from(sd.imbalance_pct) - 100) / 2;
    let mut idlest = None;
    let mut min_load = u64::MAX;
    let mut this_load = 0u64;
    work.domains += 1;
    for gid in topo.group_ids(sd) {
        let group = topo.group(gid);
        let span = topo.span(group.span);
        if !span.intersects(cpus_mask) {
            continue;
        }
        let local_group = span.test(this_cpu);
        let mut avg_load = 0u64;
        for i in span.iter() {
            work.cpus_scanned += 1;
            avg_load += if local_group {
                lg.source_load(ctx, i, load_idx)
            } else {
                lg.target_load(ctx, i, load_idx)
            };
        }
        avg_load = avg_load * SCHED_CAPACITY_SCALE / st.sgc(group.sgc).capacity.max(1);
        if local_group {
            this_load = avg_load;
        } else if avg_load < min_load {
            min_load = avg_load;
            idlest = Some(gid);
        }
    }
    // `100*this_load < imbalance*min_load`, in unsigned long.
    let idlest = idlest?;
    if 100u64.wrapping_mul(this_load) < imbalance.wrapping_mul(min_load) {
        return None;
    }
    Some(idlest)
}

/// Follows fair.c: find_idlest_cpu() (v4.6): the idlest allowed CPU of `group`.
///
/// Among idle CPUs, the one in the shallowest idle state (`idle_get_state()`'s
/// `exit_latency`), and among equally deep ones (or ones in no state) the one that went idle
/// last (`idle_stamp`); if none is idle, the least weighted_cpuload(), `this_cpu` winning a
/// tie (it is never in a remote group). v4.6 has no one-CPU shortcut and no SCHED_IDLE rule.
pub fn find_idlest_cpu(
    ctx: &BalanceCtx<'_>,
    lg: &LegacyState,
    group: &SchedGroup,
    p: TaskId,
    this_cpu: CpuId,
    work: &mut WorkAccount,
) -> CpuId {
    let mut min_load = u64::MAX;
    let mut min_exit_latency = u32::MAX;
    let mut latest_idle_timestamp = 0u64;
    let mut least_loaded_cpu = this_cpu;
    let mut shallowest_idle_cpu: Option<CpuId> = None;
    let cpus_mask = &ctx.tasks[p].cpus_mask;
    for i in ctx
        .topo
        .span(group.span)
        .iter()
        .filter(|&i| cpus_mask.test(i))
    {
        work.cpus_scanned += 1;
        if available_idle_cpu(ctx, i) {
            let rq = &ctx.rqs[i.index()];
            let idle = rq.idle_get_state();
            let idle_stamp = rq.idle_stamp().unwrap_or(0);
            if let Some(exit_latency) = idle
                && exit_latency < min_exit_latency
            {
                min_exit_latency = exit_latency;
                latest_idle_timestamp = idle_stamp;
                shallowest_idle_cpu = Some(i);
            } else if idle.is_none_or(|e| e == min_exit_latency)
                && idle_stamp > latest_idle_timestamp
            {
                latest_idle_timestamp = idle_stamp;
                shallowest_idle_cpu = Some(i);
            }
        } else if shallowest_idle_cpu.is_none() {
            let load = lg.weighted_cpuload(ctx, i);
            if load < min_load || (load == min_load && i == this_cpu) {
                min_load = load;
                least_loaded_cpu = i;
            }
        }
    }
    shallowest_idle_cpu.unwrap_or(least_loaded_cpu)
}

/// Follows fair.c: select_task_rq_fair() (v4.6), its slow path: from `sd` (the domain of
/// `cpu` at `level`, the highest with `sd_flag`) down. At each level with `sd_flag`, the
/// idlest group and its idlest CPU; if there is no group, or the CPU is `cpu`, go down to
/// `cpu`'s child domain; otherwise continue on the new CPU from its highest domain with
/// `sd_flag` below the span just balanced. The answer is the last CPU found, or `new_cpu`
/// (the caller's `prev_cpu`) if none was.
#[allow(clippy::too_many_arguments)]
pub fn find_idlest_walk(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    lg: &LegacyState,
    level: usize,
    mut cpu: CpuId,
    mut new_cpu: CpuId,
    p: TaskId,
    sd_flag: u32,
    work: &mut WorkAccount,
) -> CpuId {
    let topo = ctx.topo;
    let mut sd = Some(level);
    while let Some(lvl) = sd {
        let dom = &topo.domains(cpu)[lvl];
        let child = lvl.checked_sub(1);
        if dom.flags.bits() & sd_flag == 0 {
            sd = child;
            continue;
        }
        let Some(group) = find_idlest_group(ctx, st, lg, dom, p, cpu, sd_flag, work) else {
            sd = child;
            continue;
        };
        new_cpu = find_idlest_cpu(ctx, lg, topo.group(group), p, cpu, work);
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
