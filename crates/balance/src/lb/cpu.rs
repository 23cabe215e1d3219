//! Reading runqueues and CPUs for the balancer, following kernel/sched/fair.c and core.c
//! (v6.6-v6.12): idle_cpu(), `rq->ttwu_pending`, sched_smt_active(), is_core_idle(),
//! cpu_load(), cpu_runnable(), cpu_util_cfs(), cpu_util_cfs_boost(), capacity_of(),
//! arch_scale_cpu_capacity(), check_cpu_capacity(), update_cpu_capacity() /
//! scale_rt_capacity(), sched_reduced_capacity(), arch_asym_cpu_priority(),
//! sched_asym_prefer(), sched_use_asym_prio(), sched_asym() and task_on_cpu().

use crate::params::LbFeat;
use lbsim_rq::rq::Rq;
use lbsim_rq::task::TaskId;
use lbsim_topology::{CpuId, SchedDomain, SdFlag, Topology};

use crate::ctx::BalanceCtx;

pub(super) fn rq<'c>(ctx: &'c BalanceCtx<'_>, cpu: CpuId) -> &'c Rq {
    &ctx.rqs[cpu.index()]
}

/// Follows core.c: idle_cpu() (v6.6-v6.12), at the pass's time `at_ns`: the CPU runs its
/// idle task, has nothing queued and no wake-up on its wake list (`rq->ttwu_pending`, or a
/// wake-up the engine reports sent by `at_ns`).
pub fn idle_cpu(ctx: &BalanceCtx<'_>, cpu: CpuId, at_ns: u64) -> bool {
    idle_cpu_with(ctx, cpu, || at_ns)
}

/// [`idle_cpu`] with the time given by `at_ns`, called only if a wake-up may be pending
/// beyond the runqueue's own flag (lbsim's: the pass's clock is a computation, and the
/// balancer asks for it at every CPU it reads).
#[inline]
pub fn idle_cpu_with(ctx: &BalanceCtx<'_>, cpu: CpuId, at_ns: impl FnOnce() -> u64) -> bool {
    let r = rq(ctx, cpu);
    debug_assert_eq!(r.cpu, cpu);
    idle_cpu_of(ctx, r, || ctx.pending.none_pending(), at_ns)
}

/// Follows core.c: idle_cpu() (v6.12), as [`idle_cpu_with`], for the runqueue `r` of its
/// CPU, with
/// [`crate::ctx::PendingWakeups::none_pending`] given by `none_pending` (a loop over CPUs
/// reads it once), asked only if the runqueue itself is idle.
#[inline]
pub fn idle_cpu_of(
    ctx: &BalanceCtx<'_>,
    r: &Rq,
    none_pending: impl FnOnce() -> bool,
    at_ns: impl FnOnce() -> u64,
) -> bool {
    rq_idle_own(r) && (none_pending() || !ctx.pending.ttwu_pending_at(r.cpu, at_ns()))
}

/// [`idle_cpu`]'s test of the runqueue alone (nothing running or queued, `rq->ttwu_pending`
/// clear): the whole answer when no wake-up IPI may be in flight
/// ([`crate::ctx::PendingWakeups::none_pending`]).
#[inline]
pub fn rq_idle_own(r: &lbsim_rq::Rq) -> bool {
    r.curr.is_none() && r.nr_running == 0 && !r.ttwu_pending()
}

/// `rq->ttwu_pending` at `at_ns`: set by the runqueue, or by a wake-up IPI already sent.
pub fn ttwu_pending(ctx: &BalanceCtx<'_>, cpu: CpuId, at_ns: u64) -> bool {
    ttwu_pending_with(ctx, cpu, || at_ns)
}

/// [`ttwu_pending`] with the time given by `at_ns`, called only if a wake-up IPI may be in
/// flight ([`crate::ctx::PendingWakeups::none_pending`] is false).
#[inline]
pub fn ttwu_pending_with(ctx: &BalanceCtx<'_>, cpu: CpuId, at_ns: impl FnOnce() -> u64) -> bool {
    rq(ctx, cpu).ttwu_pending()
        || (!ctx.pending.none_pending() && ctx.pending.ttwu_pending_at(cpu, at_ns()))
}

/// `sched_smt_active()`: some core has more than one hardware thread.
pub fn sched_smt_active(topo: &Topology) -> bool {
    topo.machine().has_smt()
}

/// Follows fair.c: is_core_idle() (v6.6-v6.12): every other SMT sibling of `cpu` is idle.
pub fn is_core_idle(ctx: &BalanceCtx<'_>, cpu: CpuId, at_ns: u64) -> bool {
    ctx.topo
        .machine()
        .smt_siblings(cpu)
        .iter()
        .all(|&s| s == cpu || idle_cpu(ctx, s, at_ns))
}

/// Follows fair.c: cpu_load() (v6.6-v6.12): `rq->cfs.avg.load_avg`.
///
/// With the experiment feature `LB_TIP_AVG_HIGH` (seed 003, never merged; EXPERIMENTS.md):
/// when the instantaneous weight exceeds twice the average (`load.weight > 2 * load_avg`,
/// both in the 10-bit domain), the load read is `load_avg + min(NICE_0_LOAD,
/// load.weight / 2)`, so a runqueue that just received tasks looks loaded at once.
pub fn cpu_load(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cpu_load_lb(ctx.features.enabled(LbFeat::LbTipAvgHigh))
}

/// Follows fair.c: cpu_runnable() (v6.6-v6.12): `rq->cfs.avg.runnable_avg`.
pub fn cpu_runnable(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cfs.avg.avg.runnable_avg
}

/// Follows fair.c: cpu_util_cfs() (v6.6-v6.12): `cpu_util(cpu, NULL, -1, 0)`.
pub fn cpu_util_cfs(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cpu_util_cfs(ctx.tasks)
}

/// Follows fair.c: cpu_util_cfs_boost() (v6.6-v6.12): `cpu_util(cpu, NULL, -1, 1)`.
pub fn cpu_util_cfs_boost(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cpu_util_cfs_boost(ctx.tasks)
}

/// `capacity_of(cpu)`: `rq->cpu_capacity`.
pub fn capacity_of(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cpu_capacity()
}

/// `arch_scale_cpu_capacity(cpu)`.
pub fn arch_scale_cpu_capacity(topo: &Topology, cpu: CpuId) -> u64 {
    u64::from(topo.machine().capacity(cpu))
}

/// Follows fair.c: check_cpu_capacity() (v6.6-v6.12): the CPU lost more than
/// `imbalance_pct - 100` percent of its capacity to rt/dl/irq.
pub fn check_cpu_capacity(ctx: &BalanceCtx<'_>, cpu: CpuId, sd: &SchedDomain) -> bool {
    capacity_of(ctx, cpu) * u64::from(sd.imbalance_pct)
        < arch_scale_cpu_capacity(ctx.topo, cpu) * 100
}

/// Follows fair.c: update_cpu_capacity() / scale_rt_capacity() (v6.12, no hardware
/// pressure): the capacity left to CFS after rt, dl and irq, at least 1; stored in
/// `rq->cpu_capacity`.
pub(super) fn update_cpu_capacity(ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> u64 {
    let max = arch_scale_cpu_capacity(ctx.topo, cpu);
    let r = &ctx.rqs[cpu.index()];
    let capacity = lbsim_pelt::scale_rt_capacity(max, &r.avg_rt, &r.avg_dl, &r.avg_irq).max(1);
    ctx.rqs.update_cpu_capacity(cpu.index(), capacity);
    capacity
}

/// Follows fair.c: sched_reduced_capacity() (v6.6-v6.12): exactly one CFS task on a CPU
/// with reduced capacity.
pub(super) fn sched_reduced_capacity(ctx: &BalanceCtx<'_>, cpu: CpuId, sd: &SchedDomain) -> bool {
    rq(ctx, cpu).cfs.h_nr_running == 1 && check_cpu_capacity(ctx, cpu, sd)
}

/// `arch_asym_cpu_priority()`: the generic default, `-cpu` (lower-numbered CPUs preferred).
fn arch_asym_cpu_priority(cpu: CpuId) -> i64 {
    -i64::from(cpu.0)
}

/// `sched_asym_prefer(a, b)`.
pub(super) fn sched_asym_prefer(a: CpuId, b: CpuId) -> bool {
    arch_asym_cpu_priority(a) > arch_asym_cpu_priority(b)
}

/// Follows fair.c: sched_use_asym_prio() (v6.6-v6.12).
pub(super) fn sched_use_asym_prio(
    ctx: &BalanceCtx<'_>,
    sd: &SchedDomain,
    cpu: CpuId,
    at_ns: u64,
) -> bool {
    if !sd.flags.contains(SdFlag::AsymPacking) {
        return false;
    }
    if !sched_smt_active(ctx.topo) {
        return true;
    }
    sd.flags.contains(SdFlag::ShareCpucapacity) || is_core_idle(ctx, cpu, at_ns)
}

/// Follows fair.c: sched_asym() (v6.6-v6.12).
pub(super) fn sched_asym(
    ctx: &BalanceCtx<'_>,
    sd: &SchedDomain,
    dst_cpu: CpuId,
    src_cpu: CpuId,
    at_ns: u64,
) -> bool {
    sched_use_asym_prio(ctx, sd, dst_cpu, at_ns) && sched_asym_prefer(dst_cpu, src_cpu)
}

/// `task_on_cpu(rq, p)`: `p` is the task running on `cpu`.
pub(super) fn task_on_cpu(ctx: &BalanceCtx<'_>, cpu: CpuId, p: TaskId) -> bool {
    rq(ctx, cpu).curr == Some(p)
}

/// Follows fair.c: task_h_load() (v6.12): `p`'s load as the root cfs_rq of the runqueue it
/// is on sees it ([`Rq::task_h_load`]: its `load_avg` without task groups, else scaled by
/// its groups' `h_load`).
#[inline]
pub fn task_h_load(ctx: &BalanceCtx<'_>, p: TaskId) -> u64 {
    let cpu = ctx.tasks[p].cpu;
    ctx.rqs[cpu.index()].task_h_load(ctx.tasks, p)
}
