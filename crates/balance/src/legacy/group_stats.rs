//! Group statistics of one domain before v5.5, following kernel/sched/fair.c of v4.6
//! (with the v4.12, v4.15, v4.20 and v5.0-v5.4 changes as [`LegacyVersion`] decides):
//! update_cpu_capacity(), update_group_capacity(), group_has_capacity(),
//! group_is_overloaded(), group_classify(), update_sg_lb_stats(), update_sd_pick_busiest()
//! and update_sd_lb_stats().

use lbsim_topology::{CpuId, SchedDomain, SchedGroup, SdFlag, Topology};

use crate::ctx::BalanceCtx;
use crate::lb::{
    CpuIdleType, LbEnv, Pass, SCHED_CAPACITY_SCALE, arch_scale_cpu_capacity, idle_cpu_with,
    is_local_group, rq_idle_own,
};
use crate::params::LbFeat;
use crate::state::{BalanceState, msecs_to_jiffies};

use super::LegacyState;
use super::cpu_load::{get_sd_load_idx, source_load, target_load};
use super::load::{cpu_util, weighted_cpuload};
use super::types::{LegacyGroupType, SdLbStats, SgLbStats};
use super::version::LegacyVersion;

/// `capacity_margin` (v4.20-v5.4): 1280, about 20% (group_smaller_min_cpu_capacity(),
/// group_smaller_max_cpu_capacity()).
pub const CAPACITY_MARGIN: u64 = 1280;

/// `smt_gain` of an SMT domain (sd_init(), until v4.20): 1178, that is 589 per thread of a
/// two-thread core.
pub const SMT_GAIN: u64 = 1178;

/// Follows the generic arch_scale_cpu_capacity(sd, cpu) of v4.6-v4.20 (kernel/sched/sched.h
/// `default_scale_cpu_capacity()`): `smt_gain / span_weight` in an SMT domain of more than
/// one CPU, else the CPU's capacity. From v5.0 (no `smt_gain`) the CPU's capacity.
///
/// Deliberately differs from the kernel: arm and arm64 override the function with their
/// CPU's capacity (no SMT gain); lbsim applies the generic one on every machine with SMT,
/// which is what x86 (and so the seeds' machines) ran.
pub fn legacy_scale_cpu_capacity(
    topo: &Topology,
    sd: Option<&SchedDomain>,
    cpu: CpuId,
    version: LegacyVersion,
) -> u64 {
    if version.smt_gain()
        && let Some(sd) = sd
        && sd.flags.contains(SdFlag::ShareCpucapacity)
        && sd.span_weight > 1
    {
        return SMT_GAIN / u64::from(sd.span_weight);
    }
    arch_scale_cpu_capacity(topo, cpu)
}

/// Follows fair.c: update_cpu_capacity() (v4.6): `cpu_capacity_orig` from
/// [`legacy_scale_cpu_capacity`] at the lowest level, then the share left by rt (lbsim:
/// `scale_rt_capacity()` of the PELT rt/dl/irq signals, v4.19+; v4.6-v4.18 used `rt_avg`,
/// which is the same 1024 with no rt tasks), at least 1; written to `rq->cpu_capacity`
/// and the legacy state's `capacity_orig`.
///
/// `sd` is the CPU's lowest domain, the one [`LegacyState::new`] computed `capacity_orig`
/// from; the value depends only on the topology and the release, both fixed, so the kernel's
/// store of the same value again is read instead (debug builds compute it).
#[inline]
pub fn update_cpu_capacity(
    ctx: &mut BalanceCtx<'_>,
    lg: &mut LegacyState,
    cpu: CpuId,
    sd: &SchedDomain,
) -> u64 {
    let orig = lg.capacity_orig[cpu.index()];
    debug_assert_eq!(
        orig,
        legacy_scale_cpu_capacity(ctx.topo, Some(sd), cpu, lg.version)
    );
    debug_assert!(std::ptr::eq(sd, &ctx.topo.domains(cpu)[0]));
    let r = &mut ctx.rqs[cpu.index()];
    let capacity = lbsim_pelt::scale_rt_capacity(orig, &r.avg_rt, &r.avg_dl, &r.avg_irq).max(1);
    r.update_cpu_capacity(capacity);
    capacity
}

/// Follows fair.c: update_group_capacity() (v4.6; min/max_capacity from v4.10/v4.20 are
/// kept too, as today's [`crate::lb::update_group_capacity`] does): `next_update` one
/// balance interval ahead; the lowest level takes its CPU's capacity, a higher level sums
/// its child's groups (each CPU's capacity when the child overlaps).
pub fn update_group_capacity(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    cpu: CpuId,
    level: usize,
) {
    let topo = ctx.topo;
    let doms = topo.domains(cpu);
    let sd = &doms[level];
    let sdg = topo.local_group(sd);
    let interval = msecs_to_jiffies(st.sd(cpu, level).balance_interval, ctx.hz)
        .clamp(1, st.max_load_balance_interval);
    st.set_sgc_next_update(sdg.sgc, ctx.jiffies + interval);
    if level == 0 {
        let capacity = update_cpu_capacity(ctx, lg, cpu, sd);
        st.set_sgc_capacity(sdg.sgc, capacity, capacity, capacity);
        return;
    }
    let child = &doms[level - 1];
    let (mut capacity, mut min_capacity, mut max_capacity) = (0u64, u64::MAX, 0u64);
    if child.flags.contains(SdFlag::Overlap) {
        for c in topo.span(sdg.span).iter() {
            let cap = ctx.rqs[c.index()].cpu_capacity();
            capacity += cap;
            min_capacity = min_capacity.min(cap);
            max_capacity = max_capacity.max(cap);
        }
    } else {
        for g in topo.groups(child) {
            let s = st.sgc(g.sgc);
            capacity += s.capacity;
            min_capacity = min_capacity.min(s.min_capacity);
            max_capacity = max_capacity.max(s.max_capacity);
        }
    }
    st.set_sgc_capacity(sdg.sgc, capacity, min_capacity, max_capacity);
}

/// Follows fair.c: group_has_capacity() (v4.6-v5.4): fewer tasks than CPUs, or the
/// utilization below the capacity by more than imbalance_pct.
pub fn group_has_capacity(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    if sgs.sum_nr_running < sgs.group_weight {
        return true;
    }
    sgs.group_capacity * 100 > sgs.group_util * u64::from(imbalance_pct)
}

/// Follows fair.c: group_is_overloaded() (v4.6-v5.4): more tasks than CPUs and the
/// utilization above the capacity by more than imbalance_pct.
pub fn group_is_overloaded(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    if sgs.sum_nr_running <= sgs.group_weight {
        return false;
    }
    sgs.group_capacity * 100 < sgs.group_util * u64::from(imbalance_pct)
}

/// Follows fair.c: group_classify() (v4.6-v5.4): `group_no_capacity` gives overloaded,
/// the group's `sgc->imbalance` imbalanced, (v4.20+) a misfit task misfit, else other.
pub fn group_classify(
    version: LegacyVersion,
    sg_imbalanced: bool,
    sgs: &SgLbStats,
) -> LegacyGroupType {
    if sgs.group_no_capacity {
        return LegacyGroupType::Overloaded;
    }
    if sg_imbalanced {
        return LegacyGroupType::Imbalanced;
    }
    if version.group_misfit_task() && sgs.group_misfit_task_load != 0 {
        return LegacyGroupType::MisfitTask;
    }
    LegacyGroupType::Other
}

/// Follows fair.c: idle_cpu() ([`idle_cpu_with`]) of `cpu`, whose runqueue is `r`, for a
/// scan that asked once whether a wake-up IPI may be in flight (`ipi_in_flight`): when none
/// may be, the answer is the runqueue's own (nothing running or queued, no wake-up queued on
/// it), which is what idle_cpu_with() gives then, without asking again.
#[inline]
pub(super) fn rq_idle(
    ctx: &BalanceCtx<'_>,
    r: &lbsim_rq::Rq,
    cpu: CpuId,
    ipi_in_flight: bool,
    at_ns: impl FnOnce() -> u64,
) -> bool {
    if ipi_in_flight {
        return idle_cpu_with(ctx, cpu, at_ns);
    }
    let idle = rq_idle_own(r);
    debug_assert_eq!(idle, idle_cpu_with(ctx, cpu, at_ns));
    idle
}

/// Follows fair.c: update_sg_lb_stats() (v4.6): per CPU of the group (in `env->cpus`),
/// `group_load` += target_load() for the local group or source_load() for the others at
/// the domain's load index, `group_util` += cpu_util(), `sum_nr_running` +=
/// `cfs.h_nr_running`, `sum_weighted_load` += weighted_cpuload(), an idle CPU with
/// nothing queued counts in `idle_cpus`, and `nr_running > 1` sets `overload`; (v4.20+,
/// on SD_ASYM_CPUCAPACITY) the largest `misfit_task_load`. Then `avg_load =
/// group_load * 1024 / group_capacity`, `load_per_task = sum_weighted_load /
/// sum_nr_running` (v5.3+: `group_load / sum_nr_running`), `group_no_capacity =
/// group_is_overloaded()` and the group type.
#[allow(clippy::too_many_arguments)]
pub fn update_sg_lb_stats(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    lg: &LegacyState,
    env: &LbEnv,
    group: &SchedGroup,
    local_group: bool,
    overload: &mut bool,
    pass: &mut Pass,
) -> SgLbStats {
    let scan = SgScan::new(ctx, lg, env);
    sg_lb_stats(ctx, st, lg, env, &scan, group, local_group, overload, pass)
}

/// What update_sg_lb_stats() reads the same for every group of one domain's pass: the
/// domain, its load index, the switches and the release's rules (lbsim's: computed once per
/// update_sd_lb_stats() rather than once per group).
struct SgScan<'a> {
    sd: &'a SchedDomain,
    load_idx: usize,
    tip_avg_high: bool,
    lb_bias: bool,
    /// Misfit loads count here (v4.20+, on SD_ASYM_CPUCAPACITY).
    misfit: bool,
    /// v5.3+: `load_per_task` from `group_load`.
    load_per_task_from_group_load: bool,
    /// Every CPU of every group of the domain is in `env->cpus`, so the scan need not test
    /// them: no CPU has been cleared from it (`env.cpus_trimmed`) and it holds every active
    /// CPU (before v5.4) or the domain's span, which holds its groups unless they overlap.
    cpus_all: bool,
    /// Whether a wake-up IPI may be in flight
    /// ([`crate::ctx::PendingWakeups::none_pending`], which no part of the pass changes),
    /// asked once per domain rather than once per group: when none may be, idle_cpu() is the
    /// runqueue's own answer.
    ipi_in_flight: bool,
}

impl<'a> SgScan<'a> {
    #[inline(always)]
    fn new(ctx: &BalanceCtx<'a>, lg: &LegacyState, env: &LbEnv) -> SgScan<'a> {
        let sd = env.sd(ctx.topo);
        SgScan {
            sd,
            load_idx: get_sd_load_idx(&lg.load_idx(sd), env.idle),
            tip_avg_high: lg.tip_avg_high(ctx),
            lb_bias: lg.lb_bias_on(),
            misfit: lg.version.group_misfit_task() && sd.flags.contains(SdFlag::AsymCpucapacity),
            load_per_task_from_group_load: lg.version.load_per_task_from_group_load(),
            cpus_all: !env.cpus_trimmed
                && (!lg.version.v5_4_load_balance_tail() || !sd.flags.contains(SdFlag::Overlap)),
            ipi_in_flight: !ctx.pending.none_pending(),
        }
    }
}

/// [`update_sg_lb_stats`] with the domain's invariants read (inlined into the group loop
/// of [`update_sd_lb_stats`], whose invariants then stay in registers across groups).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sg_lb_stats(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    lg: &LegacyState,
    env: &LbEnv,
    scan: &SgScan<'_>,
    group: &SchedGroup,
    local_group: bool,
    overload: &mut bool,
    pass: &mut Pass,
) -> SgLbStats {
    let topo = ctx.topo;
    let (load_idx, tip_avg_high, lb_bias) = (scan.load_idx, scan.tip_avg_high, scan.lb_bias);
    // The pass clock when the scan starts, for idle_cpu(), read only if a wake-up may be in
    // flight ([`idle_cpu_with`]). The CPUs read are counted in `scanned` and charged after
    // the loop, so that the pass (and its clock) stays as it was at the start meanwhile.
    let pass_at_start = &*pass;
    let at = || pass_at_start.now_ns(ctx);
    let ipi_in_flight = scan.ipi_in_flight;
    let mut scanned = 0u32;
    let mut sgs = SgLbStats::default();
    for &i in topo.span_cpus(group.span) {
        debug_assert!(
            !scan.cpus_all || env.cpus.test(i),
            "CPU{} not in env->cpus",
            i.0
        );
        if !scan.cpus_all && !env.cpus.test(i) {
            continue;
        }
        scanned += 1;
        let r = &ctx.rqs[i.index()];
        // weighted_cpuload(), which source_load()/target_load() start from, read once.
        let weighted = weighted_cpuload(r, ctx.tasks, tip_avg_high);
        let cpu_load = &lg.cpu_load[i.index()];
        let load = if local_group {
            target_load(cpu_load, weighted, load_idx, lb_bias)
        } else {
            source_load(cpu_load, weighted, load_idx, lb_bias)
        };
        sgs.group_load += load;
        sgs.group_util += cpu_util(r, ctx.tasks, lg.capacity_orig[i.index()]);
        sgs.sum_nr_running += r.cfs.h_nr_running;
        if r.nr_running > 1 {
            *overload = true;
        }
        sgs.sum_weighted_load += weighted;
        if r.nr_running == 0 && rq_idle(ctx, r, i, ipi_in_flight, at) {
            sgs.idle_cpus += 1;
        }
        if scan.misfit && sgs.group_misfit_task_load < r.misfit_task_load {
            sgs.group_misfit_task_load = r.misfit_task_load;
        }
    }
    pass.work.cpus_scanned += scanned;
    let sgc = st.sgc(group.sgc);
    sgs.group_capacity = sgc.capacity.max(1);
    sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity;
    if sgs.sum_nr_running != 0 {
        let sum = if scan.load_per_task_from_group_load {
            sgs.group_load
        } else {
            sgs.sum_weighted_load
        };
        sgs.load_per_task = sum / u64::from(sgs.sum_nr_running);
    }
    sgs.group_weight = group.group_weight;
    sgs.group_no_capacity = group_is_overloaded(scan.sd.imbalance_pct, &sgs);
    sgs.group_type = group_classify(lg.version, sgc.imbalance, &sgs);
    sgs
}

/// Follows fair.c: update_sd_pick_busiest() (v4.6, with v4.20's misfit rules): a higher
/// group type wins, a lower one loses; at an equal type only a strictly higher `avg_load`
/// wins. v4.20+: a misfit group is refused unless the local group has capacity and its
/// maximum capacity exceeds the group's by `capacity_margin`
/// (group_smaller_max_cpu_capacity()); on SD_ASYM_CPUCAPACITY a group with no more tasks
/// than CPUs is refused when the local group's CPUs are smaller
/// (group_smaller_min_cpu_capacity()), and of two misfit groups the
/// one with the larger misfit load wins. (SD_ASYM_PACKING is not built by the topology
/// crate, so its tail, which only matters there, is left out.)
#[inline]
pub fn update_sd_pick_busiest(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    sds: &SdLbStats,
    sg: &SchedGroup,
    sgs: &SgLbStats,
    version: LegacyVersion,
) -> bool {
    let busiest = &sds.busiest_stat;
    // `env->sd`, read by the v4.20+ rules only.
    let sd = || env.sd(ctx.topo);
    if version.group_misfit_task() && sgs.group_type == LegacyGroupType::MisfitTask {
        let local = sds.local.map(|g| ctx.topo.group(g));
        let smaller = local.is_some_and(|l| {
            st.sgc(sg.sgc).max_capacity * CAPACITY_MARGIN
                < st.sgc(l.sgc).max_capacity * SCHED_CAPACITY_SCALE
        });
        if !smaller || !group_has_capacity(sd().imbalance_pct, &sds.local_stat) {
            return false;
        }
    }
    if sgs.group_type > busiest.group_type {
        return true;
    }
    if sgs.group_type < busiest.group_type {
        return false;
    }
    if sgs.avg_load <= busiest.avg_load {
        return false;
    }
    if version.group_misfit_task() && sd().flags.contains(SdFlag::AsymCpucapacity) {
        if let Some(l) = sds.local.map(|g| ctx.topo.group(g))
            && sgs.sum_nr_running <= sgs.group_weight
            && st.sgc(l.sgc).min_capacity * CAPACITY_MARGIN
                < st.sgc(sg.sgc).min_capacity * SCHED_CAPACITY_SCALE
        {
            return false;
        }
        if sgs.group_type == LegacyGroupType::MisfitTask
            && sgs.group_misfit_task_load < busiest.group_misfit_task_load
        {
            return false;
        }
    }
    true
}

/// Whether the level below `level` of `cpu` has SD_PREFER_SIBLING in the release
/// `version` (the parent reads it from its child): SMT and the DIE/PKG levels always, MC
/// from v4.15, every non-NUMA level from v4.20, NUMA never. lbsim's topology carries
/// today's flags, so the release decides here.
pub fn child_prefer_sibling(child: Option<&SchedDomain>, version: LegacyVersion) -> bool {
    let Some(child) = child else {
        return false;
    };
    if child.flags.contains(SdFlag::Numa) {
        return false;
    }
    if version.group_misfit_task() {
        return true;
    }
    if child.flags.contains(SdFlag::ShareCpucapacity) {
        return true;
    }
    if child.flags.contains(SdFlag::ShareLlc) {
        return version.mc_prefer_sibling();
    }
    true
}

/// Follows fair.c: update_sd_lb_stats() (v4.6): every group of the domain, local first:
/// the local group's capacity is refreshed (at newidle only once `next_update` has
/// passed); with the child's SD_PREFER_SIBLING a non-local group is demoted to
/// `group_no_capacity` if the local group has capacity and it has more than one task
/// (v4.12+: more than one task more than the local group); update_sd_pick_busiest();
/// totals over every group. At the top level, `rd->overload` is written.
pub fn update_sd_lb_stats(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    env: &LbEnv,
    pass: &mut Pass,
) -> SdLbStats {
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let doms = topo.domains(env.sd_cpu);
    let child = env.level.checked_sub(1).map(|l| &doms[l]);
    let prefer_sibling = child_prefer_sibling(child, lg.version);
    let mut sds = SdLbStats::default();
    let mut overload = false;
    let feat_nr_diff = ctx.features.enabled(LbFeat::PreferSiblingNrDiff);
    let scan = SgScan::new(ctx, lg, env);
    let overlap = sd.flags.contains(SdFlag::Overlap);
    for (k, gid) in topo.group_ids(sd).enumerate() {
        let sg = topo.group(gid);
        let local_group = is_local_group(topo, overlap, k, sg, env.dst_cpu);
        if local_group {
            sds.local = Some(gid);
            if env.idle != CpuIdleType::NewlyIdle || ctx.jiffies >= st.sgc(sg.sgc).next_update {
                // The kernel passes env->sd and env->dst_cpu: the domain is the balancing
                // CPU's (its `balance_interval` and `sd->groups`), even after a DST_PINNED
                // retarget moved dst_cpu. dst_cpu itself only counts at the lowest level,
                // where no retarget happens (the local group is the CPU alone), so
                // `env.sd_cpu` stands for both, as in the v6.12 pass.
                update_group_capacity(ctx, st, lg, env.sd_cpu, env.level);
            }
        }
        let mut sgs = sg_lb_stats(
            ctx,
            st,
            lg,
            env,
            &scan,
            sg,
            local_group,
            &mut overload,
            pass,
        );
        st.checks.group_classified(sgs.group_type.as_group_type());
        if local_group {
            sds.local_stat = sgs;
        } else {
            // `PREFER_SIBLING_NR_DIFF` (05b40e057734, v4.12; the profiles switch it on from
            // 4.12, as LegacyVersion::prefer_sibling_nr_diff() dates it), so that seed 004's
            // A/B runs on its own release.
            let bigger = if feat_nr_diff {
                sgs.sum_nr_running > sds.local_stat.sum_nr_running + 1
            } else {
                sgs.sum_nr_running > 1
            };
            if prefer_sibling
                && sds.local.is_some()
                && group_has_capacity(sd.imbalance_pct, &sds.local_stat)
                && bigger
            {
                sgs.group_no_capacity = true;
                sgs.group_type = group_classify(lg.version, st.sgc(sg.sgc).imbalance, &sgs);
            }
            if update_sd_pick_busiest(ctx, st, env, &sds, sg, &sgs, lg.version) {
                sds.busiest = Some(gid);
                sds.busiest_stat = sgs;
            }
        }
        sds.total_load += sgs.group_load;
        sds.total_capacity += sgs.group_capacity;
    }
    if doms.get(env.level + 1).is_none() {
        st.rd.overloaded = overload;
    }
    sds
}
