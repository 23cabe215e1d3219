//! The slow path of placement in the kernels before v5.5, taken by fork and exec (and by a
//! wake-up on a domain with `SD_BALANCE_WAKE`, which sd_init() sets only below an
//! asymmetric-capacity level from v4.10): find_idlest_group(), find_idlest_cpu() (from v4.15
//! find_idlest_group_cpu()) and the walk down the domains of kernel/sched/fair.c, each
//! release of [`super::LegacyVersion`] running its own:
//!
//! - v4.6-v4.9: find_idlest_group() on source_load()/target_load() at the domain's
//!   `forkexec_idx` (`wake_idx` for a wake-up) against half the domain's `imbalance_pct`
//!   ([`find_idlest_group_v4_6`]); v4.9 adds find_idlest_cpu()'s one-CPU shortcut
//!   (eaecf41f5abf).
//! - v4.10-v4.14: 6b94780e45c1 and its series ([`idlest_group::find_idlest_group_v4_10`]):
//!   the runnable load against `NICE_0_LOAD * (imbalance_pct - 100) / 100`, the cfs_rq's
//!   `load_avg` for near-ties at `imbalance_scale`, the spare-capacity rule (skipped at fork,
//!   which is how every lbsim fork and every kernel fork comes here).
//! - v4.15-v5.4: the local group's loads start at `ULONG_MAX`; the walk becomes
//!   find_idlest_cpu(), which gives up on a domain without allowed CPUs, syncs the task's
//!   PELT signal before the walk (not at fork) and starts from `this_cpu`
//!   ([`find_idlest_cpu_slow_path`]).
//! - v4.18-v5.4: the `SD_NUMA` "stay local" rule (2c83362734da).
//! - v5.4: find_idlest_group_cpu() falls back to a CPU running only `SCHED_IDLE` tasks
//!   (3c29e651e16d).
//!
//! KERNEL-HISTORY has the dates; ids marked `[U]` in [`super::version`] are unverified.

use lbsim_rq::TaskId;
use lbsim_topology::{CpuId, GroupId, SchedDomain, SchedGroup, SdFlag};

mod idlest_group;
#[cfg(test)]
mod tests;

pub use self::idlest_group::{capacity_spare_wake, cpu_util_wake, find_idlest_group_v4_10};

use super::LegacyState;
use crate::cost::WorkAccount;
use crate::ctx::BalanceCtx;
use crate::fork::{available_idle_cpu, sched_idle_cpu, sync_entity_load_avg};
use crate::lb::SCHED_CAPACITY_SCALE;
use crate::state::BalanceState;

/// Follows fair.c: find_idlest_group() of the release: v4.6's
/// ([`find_idlest_group_v4_6`]) up to v4.9, v4.10's ([`find_idlest_group_v4_10`]) from
/// v4.10 to v5.4.
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
    if lg.version.find_idlest_group_load_avg() {
        find_idlest_group_v4_10(ctx, st, lg, sd, p, this_cpu, sd_flag, work)
    } else {
        find_idlest_group_v4_6(ctx, st, lg, sd, p, this_cpu, sd_flag, work)
    }
}

/// find_idlest_group()'s load index (v4.6-v5.4): `sd->forkexec_idx`, or `sd->wake_idx` when
/// `sd_flag` has `SD_BALANCE_WAKE`.
pub(super) fn forkexec_load_idx(lg: &LegacyState, sd: &SchedDomain, sd_flag: u32) -> usize {
    let idx = lg.load_idx(sd);
    if sd_flag & SdFlag::BalanceWake.bit() != 0 {
        idx.wake_idx
    } else {
        idx.forkexec_idx
    }
}

/// Follows fair.c: find_idlest_group() (v4.6-v4.9): the least loaded group of `sd` (a
/// domain of `this_cpu`) that `p` may run in, or `None` to stay in the local group.
///
/// The load index is `sd->forkexec_idx` (`sd->wake_idx` when `sd_flag` has
/// `SD_BALANCE_WAKE`; both 0 in every sd_init() of these kernels). A group's load is the sum
/// over all its CPUs of source_load() for the local group and target_load() for the others
/// ("bias balancing toward cpus of our domain"), times `SCHED_CAPACITY_SCALE` over the
/// group's capacity. Groups without an allowed CPU are skipped. The idlest remote group is
/// chosen only if `100 * local < (100 + (imbalance_pct - 100) / 2) * idlest`; a tie of
/// remote groups keeps the first in the domain's ring. Every CPU read counts in `work`.
#[allow(clippy::too_many_arguments)]
pub fn find_idlest_group_v4_6(
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
    let load_idx = forkexec_load_idx(lg, sd, sd_flag);
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

/// Follows fair.c: find_idlest_cpu() (v4.6-v4.14; find_idlest_group_cpu() v4.15-v5.4): the
/// idlest allowed CPU of `group`.
///
/// From v4.9 a group of one CPU gives that CPU unscanned ("Check if we have any choice").
/// Among idle CPUs, the one in the shallowest idle state (`idle_get_state()`'s
/// `exit_latency`), and among equally deep ones (or ones in no state) the one that went idle
/// last (`idle_stamp`); if none is idle, (v5.4) the first CPU running only `SCHED_IDLE`
/// tasks met before any idle one, else the least weighted_cpuload(). `this_cpu` wins a load
/// tie (v4.6's `load == min_load && i == this_cpu`), which never happens since `group` is
/// never the local one; the later releases' dropping of the term is therefore not modelled.
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
    let mut si_cpu: Option<CpuId> = None;
    let sched_idle = lg.version.sis_sched_idle();
    let cpus_mask = &ctx.tasks[p].cpus_mask;
    let span = ctx.topo.span(group.span);
    if lg.version.find_idlest_cpu_no_choice()
        && group.group_weight == 1
        && let Some(first) = span.iter().next()
    {
        return first;
    }
    for i in span.iter().filter(|&i| cpus_mask.test(i)) {
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
        } else if shallowest_idle_cpu.is_none() && si_cpu.is_none() {
            if sched_idle && sched_idle_cpu(ctx, i) {
                si_cpu = Some(i);
                continue;
            }
            let load = lg.weighted_cpuload(ctx, i);
            if load < min_load || (load == min_load && i == this_cpu) {
                min_load = load;
                least_loaded_cpu = i;
            }
        }
    }
    shallowest_idle_cpu.or(si_cpu).unwrap_or(least_loaded_cpu)
}

/// Follows fair.c: the slow path of select_task_rq_fair() (v4.6-v4.14; from v4.15 in
/// find_idlest_cpu()): the walk [`find_idlest_walk`] from `level`, starting from `prev_cpu`
/// up to v4.14. From v4.15: `prev_cpu` if the domain at `level` has no CPU `p` may run on;
/// otherwise, except at fork, sync_entity_load_avg() brings `p`'s PELT signal to its last
/// cfs_rq's clock (for the spare-capacity rule), and the walk starts from `cpu`.
#[allow(clippy::too_many_arguments)]
pub fn find_idlest_cpu_slow_path(
    ctx: &mut BalanceCtx<'_>,
    st: &BalanceState,
    lg: &LegacyState,
    level: usize,
    cpu: CpuId,
    prev_cpu: CpuId,
    p: TaskId,
    sd_flag: u32,
    work: &mut WorkAccount,
) -> CpuId {
    if !lg.version.find_idlest_cpu_slow_path() {
        return find_idlest_walk(ctx, st, lg, level, cpu, prev_cpu, p, sd_flag, work);
    }
    let span = ctx.topo.span(ctx.topo.domains(cpu)[level].span);
    if !span.intersects(&ctx.tasks[p].cpus_mask) {
        return prev_cpu;
    }
    if sd_flag & SdFlag::BalanceFork.bit() == 0 {
        sync_entity_load_avg(ctx, p);
    }
    find_idlest_walk(ctx, st, lg, level, cpu, cpu, p, sd_flag, work)
}

/// Follows fair.c: select_task_rq_fair() (v4.6-v4.14), its slow path, and find_idlest_cpu()
/// (v4.15-v5.4), its loop: from `sd` (the domain of
/// `cpu` at `level`, the highest with `sd_flag`) down. At each level with `sd_flag`, the
/// idlest group and its idlest CPU; if there is no group, or the CPU is `cpu`, go down to
/// `cpu`'s child domain; otherwise continue on the new CPU from its highest domain with
/// `sd_flag` below the span just balanced. The answer is the last CPU found, or `new_cpu`
/// (`prev_cpu` up to v4.14, `cpu` from v4.15) if none was.
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
