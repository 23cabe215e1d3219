//! select_idle_sibling() of the kernels before v5.5: v4.6's walk of the LLC's domains for a
//! wholly idle group, and v4.9's rewrite (10e2f1acd010) with select_idle_core(),
//! select_idle_cpu() and select_idle_smt(), as it changed to v5.4: the `avg_idle /
//! avg_scan_cost` cut-off (v4.9-v4.10, `SIS_AVG_CPU` from v4.11), `SIS_PROP` (v4.13),
//! `recent_used_cpu` (v4.16), SCHED_IDLE CPUs in select_idle_cpu() (v5.4).
//!
//! The idle test is [`super::wake::idle_cpu`] (v4.6-v5.7: the wake list counts as busy),
//! with lbsim's `IDLE_RESERVE` marks. Read from fair.c of v4.6 (KERNEL-HISTORY §3.3 and a
//! copy of its select_idle_sibling() in a derived scheduler class) and of v4.18-v4.19.
//!
//! Deliberately differs: `avg_scan_cost` moves towards the scan's simulated time, the cost
//! model's `cost_lb_cpu_ns` per runqueue read, where the kernel measures local_clock(); the
//! cluster level lbsim builds on cluster machines (v5.16's SD_CLUSTER, absent from these
//! kernels) is walked by v4.6's loop like any level below the LLC; `SIS_AVG_CPU` (off in
//! every release that has it, and not in lbsim's registry) is always off.

use lbsim_rq::TaskId;
use lbsim_topology::{CpuId, Cpumask, SchedDomain};

use super::LegacyState;
use super::wake::{LegacyWakeState, idle_cpu};
use crate::cost::WorkAccount;
use crate::ctx::BalanceCtx;
use crate::fork::sched_idle_cpu;
use crate::lb::sched_smt_active;
use crate::params::LbFeat;
use crate::state::BalanceState;
use crate::wake::{WakeState, set_idle_cores, test_idle_cores};

/// The wake-up search: the context, the `IDLE_RESERVE` marks, the task placed.
#[allow(missing_debug_implementations)]
pub struct Search<'c, 'a> {
    /// The balancing context.
    pub ctx: &'c BalanceCtx<'a>,
    /// The placement state of today's path (the `IDLE_RESERVE` marks).
    pub wake: &'c WakeState,
    /// The task being placed.
    pub p: TaskId,
}

impl Search<'_, '_> {
    fn idle(&self, cpu: CpuId) -> bool {
        idle_cpu(self.ctx, self.wake, self.p, cpu)
    }

    fn allowed(&self, cpu: CpuId) -> bool {
        self.ctx.tasks[self.p].cpus_mask.test(cpu)
    }
}

/// `for_each_cpu_wrap(cpu, mask, start)` over a mask that may lose CPUs during the walk:
/// from `start` up, then from 0 below `start`, each CPU tested in the mask as it is then.
fn wrap_next(mask: &Cpumask, n: usize, start: usize, k: &mut usize) -> Option<CpuId> {
    while *k < n {
        let c = CpuId(((start + *k) % n) as u32);
        *k += 1;
        if mask.test(c) {
            return Some(c);
        }
    }
    None
}

/// Follows fair.c: select_idle_sibling() (v4.6): `target` if it is idle; `prev` (the task's
/// CPU) if it differs, shares the cache with `target` and is idle; otherwise, from sd_llc of
/// `target` down to the lowest level (`for_each_lower_domain()`), the first group (in each
/// domain's ring, from the one holding `target`) that holds an allowed CPU and whose every
/// CPU is idle and not `target`: its first allowed CPU. Higher levels first, so a whole idle
/// core is found before an idle sibling. Else `target`.
pub fn select_idle_sibling_v4_6(
    s: &Search<'_, '_>,
    prev: CpuId,
    target: CpuId,
    work: &mut WorkAccount,
) -> CpuId {
    let topo = s.ctx.topo;
    work.cpus_scanned += 1;
    if s.idle(target) {
        return target;
    }
    if prev != target && topo.cpus_share_cache(prev, target) {
        work.cpus_scanned += 1;
        if s.idle(prev) {
            return prev;
        }
    }
    let Some(llc) = topo.sd_llc(target) else {
        return target;
    };
    let cpus_mask = &s.ctx.tasks[s.p].cpus_mask;
    for level in (0..=llc).rev() {
        let sd = &topo.domains(target)[level];
        'groups: for gid in topo.group_ids(sd) {
            let span = topo.span(topo.group(gid).span);
            if !span.intersects(cpus_mask) {
                continue;
            }
            for i in span.iter() {
                work.cpus_scanned += 1;
                if i == target || !s.idle(i) {
                    continue 'groups;
                }
            }
            return span
                .iter()
                .find(|&c| cpus_mask.test(c))
                .expect("the group intersects the task's affinity");
        }
    }
    target
}

/// Follows fair.c: select_idle_core() (v4.9-v5.4): on an SMT machine whose LLC is marked as
/// having an idle core, the first core of `sd` (the LLC) ∩ the task's affinity, from `target`
/// round, whose SMT siblings are all idle (each core's siblings are dropped from the scan);
/// none found clears `has_idle_cores`.
pub fn select_idle_core(
    s: &Search<'_, '_>,
    st: &mut BalanceState,
    cpus: &mut Cpumask,
    sd: &SchedDomain,
    target: CpuId,
    work: &mut WorkAccount,
) -> Option<CpuId> {
    let ctx = s.ctx;
    let topo = ctx.topo;
    if !sched_smt_active(topo) || !test_idle_cores(ctx, st, target) {
        return None;
    }
    cpus.clear_all();
    cpus.or_assign(topo.span(sd.span));
    cpus.and_assign(&ctx.tasks[s.p].cpus_mask);
    let n = topo.nr_cpus();
    let mut k = 0;
    while let Some(core) = wrap_next(cpus, n, target.index(), &mut k) {
        let mut idle = true;
        for cpu in topo.machine().smt_mask(core).iter() {
            cpus.clear(cpu);
            work.cpus_scanned += 1;
            if !s.idle(cpu) {
                idle = false;
            }
        }
        if idle {
            return Some(core);
        }
    }
    set_idle_cores(ctx, st, target, false);
    None
}

/// Follows fair.c: select_idle_smt() (v4.9-v5.4): on an SMT machine, an idle allowed SMT
/// sibling of `target` (`target` itself is busy by now).
pub fn select_idle_smt(s: &Search<'_, '_>, target: CpuId, work: &mut WorkAccount) -> Option<CpuId> {
    let topo = s.ctx.topo;
    if !sched_smt_active(topo) {
        return None;
    }
    for cpu in topo.machine().smt_mask(target).iter() {
        if !s.allowed(cpu) {
            continue;
        }
        work.cpus_scanned += 1;
        if s.idle(cpu) {
            return Some(cpu);
        }
    }
    None
}

/// Follows fair.c: select_idle_cpu() (v4.9-v5.4): the first idle allowed CPU of `sd` (the
/// LLC of `target`), scanning from `target` round.
///
/// The bounds come from the waking CPU (`this_cpu`): its runqueue's `avg_idle` over 512
/// against `avg_scan_cost` of its own LLC domain (+1 from v4.13). v4.9-v4.10 give up when
/// `avg_idle / 512 < avg_scan_cost`; v4.11-v5.4 only under `SIS_AVG_CPU` (off). From v4.13,
/// `SIS_PROP` limits the scan to `nr = span_weight * avg_idle / avg_cost` CPUs when that
/// product exceeds `4 * avg_cost`, else to 4: `if (!--nr)` gives up before the nr-th CPU
/// (counting CPUs outside the affinity), without updating the cost. A scan that ran moves
/// `avg_scan_cost` an eighth of the way to its time (signed, on u64). v5.4 also takes a CPU
/// that runs only SCHED_IDLE tasks.
pub fn select_idle_cpu(
    s: &Search<'_, '_>,
    lg: &LegacyState,
    lw: &mut LegacyWakeState,
    sd: &SchedDomain,
    this_cpu: CpuId,
    target: CpuId,
    work: &mut WorkAccount,
) -> Option<CpuId> {
    let ctx = s.ctx;
    let topo = ctx.topo;
    let v = lg.version;
    topo.sd_llc(this_cpu)?;
    let scan_cost = lw.avg_scan_cost[this_cpu.index()];
    let avg_idle = ctx.rqs[this_cpu.index()].avg_idle / 512;
    let avg_cost = if v.sis_prop() {
        scan_cost + 1
    } else {
        scan_cost
    };
    // 4.9-4.10 always; 4.11+ only with SIS_AVG_CPU, which is off (not in the registry).
    if !v.sis_avg_cpu_feature() && avg_idle < avg_cost {
        return None;
    }
    let mut nr = i64::MAX;
    if v.sis_prop() && ctx.features.enabled(LbFeat::SisProp) {
        let span_avg = u64::from(sd.span_weight) * avg_idle;
        nr = if span_avg > 4 * avg_cost {
            (span_avg / avg_cost) as i64
        } else {
            4
        };
    }
    let span = topo.span(sd.span);
    let n = topo.nr_cpus();
    let mut k = 0;
    let mut scanned = 0u64;
    let mut found = None;
    while let Some(cpu) = wrap_next(span, n, target.index(), &mut k) {
        nr -= 1;
        if nr == 0 {
            return None;
        }
        if !s.allowed(cpu) {
            continue;
        }
        work.cpus_scanned += 1;
        scanned += 1;
        if s.idle(cpu) || (v.sis_sched_idle() && sched_idle_cpu(ctx, cpu)) {
            found = Some(cpu);
            break;
        }
    }
    let time = scanned * ctx.cost.lb_cpu_ns;
    let delta = (time.wrapping_sub(scan_cost) as i64) / 8;
    lw.avg_scan_cost[this_cpu.index()] = scan_cost.wrapping_add(delta as u64);
    found
}

/// Follows fair.c: select_idle_sibling(p, prev, target) (v4.9-v5.4): `target` if idle;
/// `prev` if it differs, shares the cache with `target` and is idle; from v4.16 the task's
/// `recent_used_cpu` if it is neither, shares the cache, is idle and allowed (it then
/// becomes `prev`); then, in `target`'s LLC, select_idle_core(), select_idle_cpu(),
/// select_idle_smt(); else `target`. Before v4.9, [`select_idle_sibling_v4_6`].
#[allow(clippy::too_many_arguments)]
pub fn select_idle_sibling(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &LegacyState,
    lw: &mut LegacyWakeState,
    wake: &WakeState,
    p: TaskId,
    prev: CpuId,
    target: CpuId,
    this_cpu: CpuId,
    work: &mut WorkAccount,
) -> CpuId {
    let v = lg.version;
    if !v.sis_rewrite() {
        let s = Search { ctx, wake, p };
        return select_idle_sibling_v4_6(&s, prev, target, work);
    }
    let topo = ctx.topo;
    {
        let s = Search { ctx, wake, p };
        work.cpus_scanned += 1;
        if s.idle(target) {
            return target;
        }
        if prev != target && topo.cpus_share_cache(prev, target) {
            work.cpus_scanned += 1;
            if s.idle(prev) {
                return prev;
            }
        }
    }
    if v.recent_used_cpu() {
        let recent = ctx.tasks[p].recent_used_cpu;
        if recent != prev && recent != target && topo.cpus_share_cache(recent, target) {
            work.cpus_scanned += 1;
            let s = Search { ctx, wake, p };
            if s.idle(recent) && s.allowed(recent) {
                ctx.tasks[p].recent_used_cpu = prev;
                return recent;
            }
        }
    }
    let Some(llc) = topo.sd_llc(target) else {
        return target;
    };
    let sd = &topo.domains(target)[llc];
    let ctx: &BalanceCtx<'_> = ctx;
    let s = Search { ctx, wake, p };
    let mut cpus = std::mem::replace(&mut lw.select_idle_mask, Cpumask::new(0));
    let core = select_idle_core(&s, st, &mut cpus, sd, target, work);
    lw.select_idle_mask = cpus;
    if let Some(i) = core {
        return i;
    }
    if let Some(i) = select_idle_cpu(&s, lg, lw, sd, this_cpu, target, work) {
        return i;
    }
    if let Some(i) = select_idle_smt(&s, target, work) {
        return i;
    }
    target
}
