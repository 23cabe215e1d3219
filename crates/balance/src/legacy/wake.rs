//! Wake-up and fork/exec placement of the kernels before v5.5: select_task_rq_fair() of
//! kernel/sched/fair.c v4.6 and its changes to v5.4, by [`super::LegacyVersion`]:
//! `want_affine` (wake_wide(), v4.9's wake_cap()), the bottom-up domain walk, wake_affine()
//! (v4.6: the load comparison with effective_load(); v4.13: by LLC and NUMA node; v4.14:
//! wake_affine_idle()/wake_affine_weight() under `WA_*`; v4.16: returning a CPU), the fast
//! path ([`super::sis`]) and the slow path ([`super::fork`]); and idle_cpu() as these
//! kernels had it.
//!
//! Reused from today's path ([`crate::wake`]) because the kernel's code was the same in
//! v4.6-v5.4: record_wakee() and wake_wide() (v4.6 = v6.12; only the caller of record_wakee()
//! moved, see [`super::LegacyVersion::record_wakee_in_task_waking`]), core.c's select_task_rq()
//! wrapper (is_cpu_allowed(), select_fallback_rq(), ttwu_stat()), the `has_idle_cores` hint
//! (test_idle_cores(), set_idle_cores(), __update_idle_core(), v4.9-v6.12) and lbsim's
//! `IDLE_RESERVE` marks.
//!
//! Deliberately left out, as in today's path: group scheduling (effective_load() and
//! task_h_load() are those of the root task group), NUMA balancing (v4.13's
//! numa_wake_affine() is the `!CONFIG_NUMA_BALANCING` one), PF_EXITING wakers, energy-aware
//! placement.

use lbsim_rq::TaskId;
use lbsim_topology::{CpuId, Cpumask, SchedDomain};

use super::fork::find_idlest_cpu_slow_path;
use super::sis::select_idle_sibling;
use super::{LegacyState, LegacyVersion};
use crate::cost::WorkAccount;
use crate::ctx::{BalanceCtx, Placement, WakeFlags};
use crate::lb::{capacity_of, idle_cpu as idle_cpu_v6};
use crate::params::LbFeat;
use crate::state::BalanceState;
use crate::wake::{
    WakeState, idle_reserve_placed, idle_reserved_for_other, is_cpu_allowed, record_wakee,
    select_fallback_rq, ttwu_stat, wake_wide,
};
use lbsim_topology::SdFlag;

/// `capacity_margin` (v4.9-v5.4): 1280, a task fits a CPU with 20% to spare.
pub const CAPACITY_MARGIN: u64 = 1280;

/// The legacy placement's own state: per CPU, `avg_scan_cost` of its LLC domain (each CPU
/// has its own `struct sched_domain`, and select_idle_cpu() reads the waking CPU's), and the
/// scratch mask of select_idle_core() (`select_idle_mask`).
#[derive(Clone, Debug)]
pub struct LegacyWakeState {
    /// `this_sd->avg_scan_cost` per CPU, in ns (0 at boot).
    pub avg_scan_cost: Vec<u64>,
    /// `select_idle_mask` (one per CPU in the kernel; decisions do not nest).
    pub select_idle_mask: Cpumask,
}

impl LegacyWakeState {
    /// The state at boot of a machine of `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> LegacyWakeState {
        LegacyWakeState {
            avg_scan_cost: vec![0; nr_cpus],
            select_idle_mask: Cpumask::new(nr_cpus),
        }
    }
}

/// Follows core.c: idle_cpu() (v4.6 and v5.4, the same): the CPU runs its idle task, has
/// nothing queued, and (SMP) its `rq->wake_list` is empty. v5.8 replaced the list test by
/// `rq->ttwu_pending`; lbsim's view of either is the same (a remote wake-up queued on the
/// CPU and not yet delivered by its IPI: the flag is set when the list is filled and cleared
/// when the IPI drains it), so this is today's test, [`crate::lb::idle_cpu`]. With lbsim's
/// `IDLE_RESERVE`, a CPU reserved for another task than `p` is busy.
pub fn idle_cpu(ctx: &BalanceCtx<'_>, wake: &WakeState, p: TaskId, cpu: CpuId) -> bool {
    idle_cpu_v6(ctx, cpu, ctx.now_ns) && !idle_reserved_for_other(ctx, wake, cpu, p)
}

/// Follows fair.c: effective_load() (v4.6-v4.12) for the root task group: `wl`. lbsim has no
/// task groups; the kernel returns `wl` at once when `tg` has no parent (and the function is
/// `return wl;` without CONFIG_FAIR_GROUP_SCHED), so a weight change `wl` on a CPU changes
/// its load by exactly `wl` and the group weight change `wg` plays no part.
pub fn effective_load(wl: i64, _wg: i64) -> i64 {
    wl
}

/// Follows fair.c: wake_affine() (v4.6-v4.12): whether to wake `p` on `this_cpu` rather than
/// `prev_cpu`, comparing the two CPUs' loads at `sd`'s `wake_idx` (0: weighted_cpuload(),
/// i.e. `runnable_load_avg`, tipped by `LB_TIP_AVG_HIGH`).
///
/// `load = source_load(prev, idx)`, `this_load = target_load(this, idx)`; a sync wake-up
/// adds effective_load(-w, -w) to this_load and effective_load(0, -w) to load, `w` the
/// waker's `se.avg.load_avg`. Then `this_eff_load = 100 * capacity_of(prev)` and
/// `prev_eff_load = (100 + (imbalance_pct - 100) / 2) * capacity_of(this)`; if `this_load >
/// 0` they are multiplied by `this_load + effective_load(w_p, w_p)` and `load +
/// effective_load(0, w_p)`, `w_p` the wakee's `se.avg.load_avg`. Affine iff `this_eff_load
/// <= prev_eff_load` (counting `ttwu_move_affine`). Signed 64-bit arithmetic (`s64`).
#[allow(clippy::too_many_arguments)]
pub fn wake_affine_v4_6(
    ctx: &BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &LegacyState,
    level: usize,
    p: TaskId,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
    work: &mut WorkAccount,
) -> bool {
    let sd = &ctx.topo.domains(this_cpu)[level];
    let idx = lg.load_idx(sd).wake_idx;
    work.cpus_scanned += 2;
    let mut load = lg.source_load(ctx, prev_cpu, idx) as i64;
    let mut this_load = lg.target_load(ctx, this_cpu, idx) as i64;
    if sync {
        // The idle task (a wake-up from an idle CPU) carries no load.
        let weight = ctx.rqs[this_cpu.index()]
            .curr
            .map_or(0, |c| ctx.tasks[c].se.avg.load_avg) as i64;
        this_load += effective_load(-weight, -weight);
        load += effective_load(0, -weight);
    }
    let weight = ctx.tasks[p].se.avg.load_avg as i64;
    let mut this_eff_load: i64 = 100;
    this_eff_load *= capacity_of(ctx, prev_cpu) as i64;
    let mut prev_eff_load: i64 = 100 + (i64::from(sd.imbalance_pct) - 100) / 2;
    prev_eff_load *= capacity_of(ctx, this_cpu) as i64;
    if this_load > 0 {
        this_eff_load *= this_load + effective_load(weight, weight);
        prev_eff_load *= load + effective_load(0, weight);
    }
    let balanced = this_eff_load <= prev_eff_load;
    if balanced {
        st.schedstat.sd_mut(this_cpu, level).ttwu_move_affine += 1;
    }
    balanced
}

/// Follows fair.c: wake_affine() (v4.13, 3fed382b46ba): true when `this_cpu` and `prev_cpu`
/// share the LLC (select_idle_sibling() decides anyway); otherwise numa_wake_affine(), which
/// without CONFIG_NUMA_BALANCING (lbsim models no NUMA balancing) is true as well, counting
/// `ttwu_move_affine`.
pub fn wake_affine_numa(
    ctx: &BalanceCtx<'_>,
    st: &mut BalanceState,
    level: usize,
    this_cpu: CpuId,
    prev_cpu: CpuId,
) -> bool {
    if ctx.topo.cpus_share_cache(prev_cpu, this_cpu) {
        return true;
    }
    st.schedstat.sd_mut(this_cpu, level).ttwu_move_affine += 1;
    true
}

/// Follows fair.c: wake_affine_idle() (v4.14-v4.15: a yes/no; v4.16-v5.4: a CPU). v4.14: the
/// waking CPU if it is idle, or for a sync wake-up if the waker is its only task. v4.16: an
/// idle waking CPU counts only if it shares the LLC with `prev_cpu` (an interrupt's wake-up
/// must not drag tasks across nodes), and then an idle `prev_cpu` is preferred to it.
/// `None` is no opinion (the kernel's `nr_cpumask_bits`, or false). (v5.10+ adds the idle
/// `prev_cpu` fallback that today's [`crate::wake::wake_affine_idle`] has.)
pub fn wake_affine_idle(
    ctx: &BalanceCtx<'_>,
    v: LegacyVersion,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
) -> Option<CpuId> {
    let idle = |c| idle_cpu_v6(ctx, c, ctx.now_ns);
    if v.recent_used_cpu() {
        if idle(this_cpu) && ctx.topo.cpus_share_cache(this_cpu, prev_cpu) {
            return Some(if idle(prev_cpu) { prev_cpu } else { this_cpu });
        }
    } else if idle(this_cpu) {
        return Some(this_cpu);
    }
    if sync && ctx.rqs[this_cpu.index()].nr_running == 1 {
        return Some(this_cpu);
    }
    None
}

/// Follows fair.c: wake_affine_weight() (v4.14-v5.4): the waking CPU's load
/// (target_load() at `wake_idx`; cpu_runnable_load() from v5.3) with the wakee added (a sync
/// wake-up first removes the waker, taking the waking CPU at once if the waker alone
/// outweighs it) against the previous CPU's load (source_load()) without the wakee, each
/// times the other CPU's capacity, `WA_BIAS` weighing them 100 and `100 + (imbalance_pct -
/// 100) / 2`. v4.14-v4.15: the waking CPU iff its side is `<=`; v4.16+ (082f764a2f3f): iff
/// `<`, a sync wake-up adding 1 to the previous side. The task loads are `task_h_load()` of
/// the root group, the tasks' `se.avg.load_avg`. Signed 64-bit arithmetic.
pub fn wake_affine_weight(
    ctx: &BalanceCtx<'_>,
    lg: &LegacyState,
    sd: &SchedDomain,
    p: TaskId,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
) -> Option<CpuId> {
    let v = lg.version;
    let idx = lg.load_idx(sd).wake_idx;
    let wa_bias = ctx.features.enabled(LbFeat::WaBias);
    let mut this_eff_load = lg.target_load(ctx, this_cpu, idx) as i64;
    let mut prev_eff_load = lg.source_load(ctx, prev_cpu, idx) as i64;
    if sync {
        let current_load = ctx.rqs[this_cpu.index()]
            .curr
            .map_or(0, |c| ctx.tasks[c].se.avg.load_avg) as i64;
        if current_load > this_eff_load {
            return Some(this_cpu);
        }
        this_eff_load -= current_load;
    }
    let task_load = ctx.tasks[p].se.avg.load_avg as i64;
    this_eff_load += task_load;
    if wa_bias {
        this_eff_load *= 100;
    }
    this_eff_load *= capacity_of(ctx, prev_cpu) as i64;
    prev_eff_load -= task_load;
    if wa_bias {
        prev_eff_load *= 100 + (i64::from(sd.imbalance_pct) - 100) / 2;
    }
    prev_eff_load *= capacity_of(ctx, this_cpu) as i64;
    let affine = if v.recent_used_cpu() {
        if sync {
            prev_eff_load += 1;
        }
        this_eff_load < prev_eff_load
    } else {
        this_eff_load <= prev_eff_load
    };
    affine.then_some(this_cpu)
}

/// Follows fair.c: wake_affine() of the release: the CPU to hand to select_idle_sibling(),
/// `this_cpu` when the wake-up is affine, else `prev_cpu`. v4.6-v4.12:
/// [`wake_affine_v4_6`]; v4.13: [`wake_affine_numa`]; v4.14+: `WA_IDLE`'s
/// [`wake_affine_idle`], else `WA_WEIGHT`'s [`wake_affine_weight`], counting
/// `ttwu_move_affine` when one chose a CPU (v4.16+ that CPU, which may be an idle `prev_cpu`).
#[allow(clippy::too_many_arguments)]
pub fn wake_affine(
    ctx: &BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &LegacyState,
    level: usize,
    p: TaskId,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
    work: &mut WorkAccount,
) -> CpuId {
    let v = lg.version;
    if !v.wake_affine_numa() {
        let affine = wake_affine_v4_6(ctx, st, lg, level, p, this_cpu, prev_cpu, sync, work);
        return if affine { this_cpu } else { prev_cpu };
    }
    if !v.wake_affine_idle_weight() {
        return if wake_affine_numa(ctx, st, level, this_cpu, prev_cpu) {
            this_cpu
        } else {
            prev_cpu
        };
    }
    let sd = &ctx.topo.domains(this_cpu)[level];
    work.cpus_scanned += 2;
    let mut target = None;
    if ctx.features.enabled(LbFeat::WaIdle) {
        target = wake_affine_idle(ctx, v, this_cpu, prev_cpu, sync);
    }
    if ctx.features.enabled(LbFeat::WaWeight) && target.is_none() {
        target = wake_affine_weight(ctx, lg, sd, p, this_cpu, prev_cpu, sync);
    }
    let Some(target) = target else {
        return prev_cpu;
    };
    st.schedstat.sd_mut(this_cpu, level).ttwu_move_affine += 1;
    // v4.14-v4.15 answered yes/no: yes meant the waking CPU.
    if v.recent_used_cpu() {
        target
    } else {
        this_cpu
    }
}

/// Follows fair.c: wake_cap() (v4.9-v5.4): on a machine whose CPUs differ in capacity by an
/// eighth or more of the largest, a wake-up is not affine when `p` does not fit the smaller
/// of the waking and the previous CPU (`min_cap * 1024 < task_util * capacity_margin`). The
/// capacities are this balancer's `capacity_orig` (589 on an SMT thread before v5.0), the
/// largest the root domain's `max_cpu_capacity`. `task_util` is the task's `util_avg` (v4.9;
/// v4.17+ would read util_est), not synced to its CPU first (lbsim syncs a sleeping task's
/// signal only in the slow path).
pub fn wake_cap(
    ctx: &BalanceCtx<'_>,
    lg: &LegacyState,
    p: TaskId,
    cpu: CpuId,
    prev_cpu: CpuId,
) -> bool {
    let min_cap = lg.capacity_orig[prev_cpu.index()].min(lg.capacity_orig[cpu.index()]);
    let max_cap = lg.capacity_orig.iter().copied().max().unwrap_or(0);
    if max_cap - min_cap < max_cap >> 3 {
        return false;
    }
    min_cap * 1024 < ctx.tasks[p].se.avg.util_avg * CAPACITY_MARGIN
}

/// Follows fair.c: select_task_rq_fair() (v4.6, with the changes to v5.4): where `p` (last
/// on `prev_cpu`) should run, decided on `this_cpu`.
///
/// For a wake-up (`SD_BALANCE_WAKE`, lbsim's `WF_TTWU`): from v4.8 record_wakee() (before,
/// the caller ran it); `want_affine` unless wake_wide(), (v4.9+) wake_cap() or the waking CPU
/// is not allowed. This CPU's domains are walked bottom-up (every level has
/// `SD_LOAD_BALANCE`): the first `SD_WAKE_AFFINE` domain spanning `prev_cpu` becomes
/// `affine_sd` and ends the walk; otherwise a domain with `sd_flag` is remembered, the walk
/// stopping at one without it unless `want_affine`. With `affine_sd` the slow path is off and
/// wake_affine() (if the CPUs differ) may move the target to `this_cpu`. Without a remembered
/// domain a wake-up takes select_idle_sibling() (v4.16+: then the waker's `recent_used_cpu`
/// becomes `this_cpu` if `want_affine`); with one, the slow path [`find_idlest_cpu_slow_path`] from it.
///
/// With lbsim's `IDLE_RESERVE`, an idle CPU the fast path hands out is reserved for `p`.
#[allow(clippy::too_many_arguments)]
pub fn select_task_rq_fair(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &LegacyState,
    lw: &mut LegacyWakeState,
    wake: &mut WakeState,
    p: TaskId,
    prev_cpu: CpuId,
    this_cpu: CpuId,
    wake_flags: WakeFlags,
    work: &mut WorkAccount,
) -> CpuId {
    let v = lg.version;
    let sync = wake_flags.contains(WakeFlags::SYNC);
    let cpu = this_cpu;
    let mut new_cpu = prev_cpu;
    let mut want_affine = false;
    // SD_BALANCE_* and lbsim's WF_* share the low nibble (WF_TTWU = SD_BALANCE_WAKE).
    let sd_flag = wake_flags.bits() & 0xF;
    let ttwu = sd_flag & SdFlag::BalanceWake.bit() != 0;

    if ttwu {
        if !v.record_wakee_in_task_waking() {
            record_wakee(ctx, wake, p, this_cpu);
        }
        let wake_cap_v = v.wake_cap() && wake_cap(ctx, lg, p, cpu, prev_cpu);
        want_affine =
            !wake_wide(ctx, wake, p, this_cpu) && !wake_cap_v && ctx.tasks[p].cpus_mask.test(cpu);
    }

    let topo = ctx.topo;
    let mut affine_sd = None;
    let mut sd: Option<usize> = None;
    for (level, tmp) in topo.domains(cpu).iter().enumerate() {
        if want_affine
            && tmp.flags.contains(SdFlag::WakeAffine)
            && topo.span(tmp.span).test(prev_cpu)
        {
            affine_sd = Some(level);
            break;
        }
        if tmp.flags.bits() & sd_flag != 0 {
            sd = Some(level);
        } else if !want_affine {
            break;
        }
    }

    if let Some(level) = affine_sd {
        sd = None;
        if cpu != prev_cpu {
            new_cpu = wake_affine(ctx, st, lg, level, p, cpu, prev_cpu, sync, work);
        }
    }

    match sd {
        None if ttwu => {
            new_cpu =
                select_idle_sibling(ctx, st, lg, lw, wake, p, prev_cpu, new_cpu, this_cpu, work);
            if v.recent_used_cpu()
                && want_affine
                && let Some(curr) = ctx.rqs[this_cpu.index()].curr
            {
                ctx.tasks[curr].recent_used_cpu = cpu;
            }
            idle_reserve_placed(ctx, wake, p, new_cpu);
        }
        None => {}
        Some(level) => {
            new_cpu = find_idlest_cpu_slow_path(ctx, st, lg, level, cpu, new_cpu, p, sd_flag, work);
        }
    }
    new_cpu
}

/// Follows core.c: select_task_rq() (v4.6-v5.4) with the fair class's
/// [`select_task_rq_fair`]: a task allowed on one CPU goes there unasked; an answer outside
/// the task's affinity is replaced by select_fallback_rq(); a wake-up counts
/// `ttwu_wake_remote` (ttwu_stat()). Up to v4.7, try_to_wake_up() first ran
/// task_waking_fair(), whose record_wakee() flips the waker whatever the task's affinity.
#[allow(clippy::too_many_arguments)]
pub fn select_task_rq(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &LegacyState,
    lw: &mut LegacyWakeState,
    wake: &mut WakeState,
    p: TaskId,
    prev_cpu: CpuId,
    this_cpu: CpuId,
    wake_flags: WakeFlags,
) -> Placement {
    let mut work = WorkAccount::default();
    let ttwu = wake_flags.contains(WakeFlags::TTWU);
    if ttwu && lg.version.record_wakee_in_task_waking() {
        record_wakee(ctx, wake, p, this_cpu);
    }
    let mut cpu = if ctx.tasks[p].nr_cpus_allowed > 1 {
        select_task_rq_fair(
            ctx, st, lg, lw, wake, p, prev_cpu, this_cpu, wake_flags, &mut work,
        )
    } else {
        ctx.tasks[p]
            .cpus_mask
            .first()
            .expect("a task's affinity holds at least one CPU")
    };
    if !is_cpu_allowed(ctx, p, cpu) {
        cpu = select_fallback_rq(ctx, ctx.tasks[p].cpu, p);
    }
    if ttwu {
        ttwu_stat(ctx, st, this_cpu, cpu);
    }
    Placement { cpu, work }
}

#[cfg(test)]
mod tests;
