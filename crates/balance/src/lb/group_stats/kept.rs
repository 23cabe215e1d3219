//! The memo's side of update_sd_lb_stats()'s loop (see [`super::super::memo`]): a group's
//! result taken from the memo or computed and kept, the replay of the leading groups whose
//! results all stand, and what a kept result charges. lbsim's own bookkeeping around
//! fair.c's update_sg_lb_stats() (v6.6-v6.12), which the parent module follows.

use lbsim_topology::{SchedGroup, Topology};

use crate::ctx::BalanceCtx;
use crate::rqs::SumsView;
use crate::state::BalanceState;

use super::super::cpu::rq_idle_own;
use super::super::memo::SdMemo;
use super::super::types::SgLbStats;
use super::super::{LbEnv, Pass};
use super::{SdGroup, SdSums, SgInvariants, add_totals, update_sg_lb_stats_with};
// Only check_replayed(), a debug build's check, reads these.
#[cfg(debug_assertions)]
use super::super::types::SdLbStats;
#[cfg(debug_assertions)]
use super::{is_local_group, update_sd_pick_busiest};

/// One group's update_sg_lb_stats() as a memo keeps it (see [`super::super::memo`]): the
/// statistics, whether a CPU had more than one task (what it ORs into `sg_overloaded`), the
/// CPUs it read (what it charges), and whether it read the pass's clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(in crate::lb) struct GroupStats {
    /// `sgs`.
    pub(in crate::lb) sgs: SgLbStats,
    /// A CPU of the group had more than one task.
    pub(in crate::lb) overloaded: bool,
    /// The CPUs read.
    pub(in crate::lb) scanned: u32,
    /// The statistics may depend on the pass's clock: a wake-up IPI may be in flight and
    /// an idle-looking CPU of the group in `env->cpus` was asked whether one had reached it
    /// by then. (A CPU cleared from `env->cpus` is not read at all, so it cannot make the
    /// result depend on the clock, and a result that counts it as timed would not equal
    /// the one kept for the same group when no IPI was in flight.)
    pub(in crate::lb) timed: bool,
}

/// [`update_sg_lb_stats_with`] for the `g`-th group from `memo`, where it kept the result
/// and that result is still exact, and computed and kept in `memo` otherwise. Debug builds
/// recompute a reused result and compare.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn kept_group_stats<'c, 'm>(
    ctx: &'c BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    inv: &SgInvariants<'_>,
    view: &mut Option<SumsView<'c>>,
    memo: &'m mut SdMemo,
    g: SdGroup,
    acc: &mut SdSums,
    pass: &mut Pass,
) -> &'m GroupStats {
    let SdGroup {
        k,
        gid,
        local_group,
    } = g;
    let sg = ctx.topo.group(gid);
    if memo.is_fresh(st, k, sg) {
        memo.note_reused(1);
        #[cfg(debug_assertions)]
        {
            let computed = group_stats(ctx, st, env, inv, view, sg, local_group, pass);
            debug_assert_eq!(
                memo.kept(k).stats,
                computed,
                "a kept group's statistics differ from update_sg_lb_stats()"
            );
        }
    } else {
        let stats = group_stats(ctx, st, env, inv, view, sg, local_group, pass);
        memo.keep(st, k, gid, sg, stats);
    }
    let stats = &memo.kept(k).stats;
    charge(stats, &mut acc.sg_overloaded, pass);
    stats
}

/// [`update_sg_lb_stats_with`] with what it reports besides the statistics, what it
/// charges, and whether it may have read the pass's clock, gathered for a memo.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn group_stats<'c>(
    ctx: &'c BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    inv: &SgInvariants<'_>,
    view: &mut Option<SumsView<'c>>,
    group: &SchedGroup,
    local_group: bool,
    pass: &mut Pass,
) -> GroupStats {
    let mut overloaded = false;
    let before = pass.work.cpus_scanned;
    let sgs = update_sg_lb_stats_with(
        ctx,
        st,
        env,
        inv,
        view,
        group,
        local_group,
        &mut overloaded,
        pass,
    );
    let scanned = pass.work.cpus_scanned - before;
    pass.work.cpus_scanned = before;
    // The CPU loop asks for the clock of a CPU of `env->cpus` whose runqueue looks idle,
    // when a wake-up IPI may be in flight (idle_cpu_of()); it skips the other CPUs before
    // reading anything of them, and the group sums answer only when no IPI is in flight.
    let rqs: &[lbsim_rq::Rq] = ctx.rqs;
    let timed = !inv.none_pending
        && ctx
            .topo
            .span_cpus(group.span)
            .iter()
            .any(|&i| (inv.cpus_whole || env.cpus.test(i)) && rq_idle_own(&rqs[i.index()]));
    GroupStats {
        sgs,
        overloaded,
        scanned,
        timed,
    }
}

/// The first groups of update_sd_lb_stats()'s loop outside `SD_OVERLAP` and
/// `SD_ASYM_CPUCAPACITY` domains, as long as each keeps its result in `memo`: each is
/// counted ([`charge`], [`add_totals`]) and the first is the local group, but none is offered to
/// update_sd_pick_busiest(), whose answers are those of the previous attempt (see
/// [`update_sd_lb_stats_with`](super::update_sd_lb_stats_with)): the busiest candidate after them is the one the memo kept,
/// set in `acc` with its index in `busiest_k`. Returns how many groups were replayed.
pub(super) fn replay_groups(
    topo: &Topology,
    st: &mut BalanceState,
    memo: &mut SdMemo,
    acc: &mut SdSums,
    busiest_k: &mut Option<u32>,
    pass: &mut Pass,
) -> usize {
    if !memo.any_fresh() {
        return 0;
    }
    let n = memo.n_groups();
    let mut k = 0;
    while k < n {
        let kept = memo.kept(k);
        if !memo.is_fresh(st, k, topo.group(kept.gid)) {
            break;
        }
        charge(&kept.stats, &mut acc.sg_overloaded, pass);
        st.checks.group_classified(kept.stats.sgs.group_type);
        add_totals(&kept.stats.sgs, acc);
        if k == 0 {
            acc.sds.local = Some(kept.gid);
            acc.sds.local_stat = kept.stats.sgs;
        }
        *busiest_k = kept.busiest_after;
        k += 1;
    }
    memo.restore_busiest(*busiest_k, &mut acc.sds);
    memo.note_replayed(k);
    k
}

/// Debug builds' check of [`replay_groups`]: each of the first `replayed` groups, recomputed
/// where the kernel's loop computes it (the pass's work as it stood before the group was
/// charged), equals the result `memo` kept, and update_sd_pick_busiest(), offered them in
/// turn, picks the busiest candidate the replay restored in `sds`.
#[cfg(debug_assertions)]
#[allow(clippy::too_many_arguments)]
pub(super) fn check_replayed<'c>(
    ctx: &'c BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    inv: &SgInvariants<'_>,
    view: &mut Option<SumsView<'c>>,
    memo: &SdMemo,
    replayed: usize,
    sds: &SdLbStats,
    pass: &mut Pass,
) {
    let topo = ctx.topo;
    let end = pass.work.cpus_scanned;
    let charged: u32 = (0..replayed).map(|k| memo.kept(k).stats.scanned).sum();
    pass.work.cpus_scanned = end - charged;
    let mut picked = SdLbStats::default();
    for k in 0..replayed {
        let kept = memo.kept(k);
        let sg = topo.group(kept.gid);
        let local_group = is_local_group(topo, false, k, sg, env.dst_cpu);
        let computed = group_stats(ctx, st, env, inv, view, sg, local_group, pass);
        assert_eq!(
            kept.stats, computed,
            "a replayed group's statistics differ from update_sg_lb_stats()"
        );
        if local_group {
            picked.local = Some(kept.gid);
            picked.local_stat = computed.sgs;
        } else if update_sd_pick_busiest(ctx, st, env, &picked, sg, &computed.sgs) {
            picked.busiest = Some(kept.gid);
            picked.busiest_stat = computed.sgs;
        }
        pass.work.cpus_scanned += computed.scanned;
    }
    assert_eq!(pass.work.cpus_scanned, end);
    assert_eq!(
        (picked.busiest, picked.busiest_stat),
        (sds.busiest, sds.busiest_stat),
        "update_sd_pick_busiest() picks another busiest candidate among the replayed groups"
    );
}

/// What update_sg_lb_stats() leaves besides a group's statistics, for a result a memo
/// kept: its part of `sg_overloaded`, and the CPUs it read added to the pass's work.
#[inline(always)]
fn charge(stats: &GroupStats, sg_overloaded: &mut bool, pass: &mut Pass) {
    if stats.overloaded {
        *sg_overloaded = true;
    }
    pass.work.cpus_scanned += stats.scanned;
}
