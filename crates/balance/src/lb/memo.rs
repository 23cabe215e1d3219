//! The group statistics of a load_balance()'s previous attempt, kept for the next one after
//! a `goto redo` (lbsim's own bookkeeping, not a kernel structure).
//!
//! After LBF_ALL_PINNED, load_balance() (sched_balance_rq() since v6.10) clears the busiest
//! CPU from `env->cpus` and goes back to `redo:`, where find_busiest_group() recomputes
//! update_sg_lb_stats() for every group of the domain. A newly idle pass on a machine of
//! pinned tasks makes one more attempt per busiest CPU it clears (5.8 on average in
//! `lbsim repro newidle-bailout`, over the sixteen groups of an LLC); between two of them,
//! most groups read exactly what they read before. [`SdMemo`] keeps each
//! group's result ([`GroupStats`]: its `sgs`, its part of `sg_overloaded` and the CPUs it
//! read) and hands it back when nothing that result was computed from can have changed. The
//! cost model still charges every group and every CPU the kernel reads: a reused group adds
//! the CPUs it read before, which are the CPUs it would read now.
//!
//! What update_sg_lb_stats() of group `sg` reads, and why a kept result is still the one it
//! would compute:
//! - the runqueues of the CPUs of `sg` that are in `env->cpus` (their load, util, runnable,
//!   task counts, idleness, misfit load, capacity): a runqueue changes only through a
//!   mutable borrow, which [`crate::rqs::Rqs`] logs ([`crate::rqs::Rqs::change_pos`]), or
//!   through the writes it does not log, of fields none of these is (the clocks,
//!   `next_balance`, `max_idle_balance_cost`; [`crate::rqs::Rqs::update_rq_clock`]); a group
//!   holding a CPU logged since the result was computed is recomputed (all groups, if the log
//!   no longer goes back that far or too many CPUs changed);
//! - `env->cpus`: only cleared within one load_balance(), never set, and every CPU cleared
//!   since is recorded ([`SdMemo::cpu_cleared`]); a group holding one is recomputed;
//! - whether a wake-up IPI has reached an idle-looking CPU by the pass's clock: a result that
//!   may have asked ([`GroupStats::timed`]: an IPI may have been in flight and a CPU of the
//!   group in `env->cpus` looked idle) is never reused; one that counted idle CPUs while no IPI was in
//!   flight is reused only while none is;
//! - `sgc->capacity` and `sgc->imbalance`, which balances of other CPUs (and
//!   update_group_capacity()) rewrite between attempts: compared with the values the result
//!   holds;
//! - `env->dst_cpu` (which group is local; sched_group_asym()), `env->sd`, `env->idle` and
//!   `LB_TIP_AVG_HIGH`: the memo belongs to one load_balance() (one `env->sd`, one
//!   `env->idle`), and a different `dst_cpu` (an LBF_DST_PINNED retarget) or feature drops it;
//! - sched_group_asym() also reads the SMT siblings of `dst_cpu`, which may lie outside the
//!   group: a group with an `asym_prefer_cpu` is never reused.
//!
//! update_sd_lb_stats() counts every group on every attempt as before (its CPUs charged, its
//! type given to the checks, its load, capacity and util added, the root domain's flags).
//! It offers a group to update_sd_pick_busiest() unless every group before it, and the group
//! itself, kept their results: the busiest candidate after such a run is the one the
//! previous attempt had there, which the memo keeps per group (outside `SD_OVERLAP` and
//! `SD_ASYM_CPUCAPACITY` domains, where update_sd_pick_busiest() reads nothing else that can
//! change). Debug builds recompute every reused group and compare, and offer the replayed
//! groups to update_sd_pick_busiest() to check that it picks the busiest candidate kept.
//!
//! Keeping costs lbsim a copy of every group's result, which pays only if the search is
//! redone: a memo keeps from the attempt after a `goto redo`, and from the first attempt if
//! the previous load_balance() of the same domain redid (`BalanceState::lb_redid`). A
//! load_balance() without a memo runs update_sd_lb_stats()'s loop with no memo code (its own
//! instantiation) and the same update_sg_lb_stats() as with one, so that the balances that
//! never redo (nearly all of them on a big machine) pay nothing for it.

use lbsim_topology::{CpuId, GroupId, SchedDomain, SchedGroup, SdFlag, SpanId, Topology};
use smallvec::SmallVec;

use crate::ctx::BalanceCtx;
use crate::rqs::ChangePos;
use crate::state::BalanceState;

use super::group_stats::GroupStats;
use super::types::SdLbStats;

/// How many changed CPUs an attempt looks for in each group before recomputing them all.
const DIRTY_MAX: usize = 16;

/// One group's kept result.
#[derive(Clone, Copy, Debug)]
pub(super) struct Kept {
    /// update_sg_lb_stats()'s result.
    pub(super) stats: GroupStats,
    /// The group.
    pub(super) gid: GroupId,
    /// update_sd_lb_stats()'s busiest candidate once this group was counted: the index of
    /// its group in the domain, if any.
    pub(super) busiest_after: Option<u32>,
    /// The group's span.
    span: SpanId,
    /// `sgc->imbalance` as read.
    sg_imbalanced: bool,
    /// Whether the result may be reused at all (neither timed nor asym-packing).
    reusable: bool,
    /// This attempt: no CPU of the group changed or was cleared from `env->cpus`, and the
    /// result may be reused (its group capacity is compared where it is read).
    fresh: bool,
}

/// The group statistics of the previous attempt of one load_balance() (see the module doc).
/// `Default` is an empty memo.
#[derive(Clone, Debug)]
pub struct SdMemo {
    /// `groups` holds a result for every group of the domain, in order.
    valid: bool,
    /// `env->dst_cpu` the results were computed for.
    dst_cpu: CpuId,
    /// `LB_TIP_AVG_HIGH` as they were computed.
    tip_avg_high: bool,
    /// The runqueue change log's position before they were computed.
    pos: ChangePos,
    /// CPUs cleared from `env->cpus` since.
    cleared: SmallVec<[CpuId; 4]>,
    /// Per group of the domain, in update_sd_lb_stats()'s order (the first `n`; the vector
    /// may be longer, kept from a domain with more groups).
    groups: Vec<Kept>,
    /// How many groups the domain has.
    n: usize,
    /// This attempt: CPUs whose groups are recomputed.
    dirty: SmallVec<[u32; DIRTY_MAX]>,
    /// This attempt: every group is recomputed.
    all_dirty: bool,
    /// Groups whose kept result was reused since the memo was last emptied (for tests).
    reused: u32,
    /// Of those, groups replayed ahead of update_sd_pick_busiest() (for tests).
    replayed: u32,
    /// An attempt of the load_balance() holding the memo ended in `goto redo` (for
    /// `BalanceState::lb_redid`).
    redone: bool,
}

impl Default for SdMemo {
    fn default() -> SdMemo {
        SdMemo {
            valid: false,
            dst_cpu: CpuId(0),
            tip_avg_high: false,
            pos: ChangePos::default(),
            cleared: SmallVec::new(),
            groups: Vec::new(),
            n: 0,
            dirty: SmallVec::new(),
            all_dirty: true,
            reused: 0,
            replayed: 0,
            redone: false,
        }
    }
}

impl SdMemo {
    /// Empties the memo (keeping its vector's allocation), for another load_balance().
    pub(crate) fn reset(&mut self) {
        self.valid = false;
        self.cleared.clear();
        self.reused = 0;
        self.replayed = 0;
        self.redone = false;
    }

    /// An attempt of the load_balance() holding the memo ended in `goto redo`.
    pub(crate) fn set_redone(&mut self) {
        self.redone = true;
    }

    /// Whether an attempt of the load_balance() holding the memo ended in `goto redo`.
    pub(crate) fn redone(&self) -> bool {
        self.redone
    }

    /// `cpu` has been cleared from `env->cpus`.
    pub(crate) fn cpu_cleared(&mut self, cpu: CpuId) {
        if self.cleared.len() == self.cleared.inline_size() {
            self.valid = false;
        } else {
            self.cleared.push(cpu);
        }
    }

    /// Starts an attempt's update_sd_lb_stats() for `dst_cpu` in domain `sd`: finds which
    /// kept results may be reused (none on the first attempt; `none_pending`: no
    /// wake-up IPI is in flight; `overlap`: the domain's groups may share CPUs), and notes
    /// where the runqueue change log stands now, before anything is read.
    pub(super) fn start(
        &mut self,
        ctx: &BalanceCtx<'_>,
        dst_cpu: CpuId,
        tip_avg_high: bool,
        none_pending: bool,
        sd: &SchedDomain,
    ) {
        let topo = ctx.topo;
        let overlap = sd.flags.contains(SdFlag::Overlap);
        let mut ids = topo.group_ids(sd);
        let n = ids.len();
        let pos = ctx.rqs.change_pos();
        self.dirty.clear();
        self.all_dirty =
            !self.valid || self.dst_cpu != dst_cpu || self.tip_avg_high != tip_avg_high;
        if !self.all_dirty {
            let dirty = &mut self.dirty;
            dirty.extend(self.cleared.iter().map(|c| c.0));
            let mut overflow = false;
            let held = ctx.rqs.changed_between(self.pos, pos, |c| {
                if !dirty.contains(&c) {
                    if dirty.len() == DIRTY_MAX {
                        overflow = true;
                    } else {
                        dirty.push(c);
                    }
                }
            });
            self.all_dirty = !held || overflow;
        }
        if self.all_dirty {
            if let Some(gid) = ids.next()
                && self.groups.len() < n
            {
                let blank = Kept {
                    stats: GroupStats::default(),
                    gid,
                    busiest_after: None,
                    span: topo.group(gid).span,
                    sg_imbalanced: false,
                    reusable: false,
                    fresh: false,
                };
                self.groups.resize(n, blank);
            }
            self.n = n;
        } else {
            debug_assert_eq!(self.n, n);
            self.mark_fresh(topo, none_pending, overlap);
        }
        self.valid = false;
        self.cleared.clear();
        self.dst_cpu = dst_cpu;
        self.tip_avg_high = tip_avg_high;
        self.pos = pos;
    }

    /// Sets each group's `fresh`: reusable, counting no idle CPU unless no IPI is in flight,
    /// and holding none of the CPUs in `dirty` (outside `SD_OVERLAP` each of those is in
    /// one group only).
    fn mark_fresh(&mut self, topo: &Topology, none_pending: bool, overlap: bool) {
        let groups = &mut self.groups[..self.n];
        for kept in groups.iter_mut() {
            kept.fresh = kept.reusable && (kept.stats.sgs.idle_cpus == 0 || none_pending);
        }
        for &c in &self.dirty {
            for kept in groups.iter_mut() {
                if topo.span(kept.span).test(CpuId(c)) {
                    kept.fresh = false;
                    if !overlap {
                        break;
                    }
                }
            }
        }
    }

    /// Whether the kept result of group `sg`, the `k`-th, is the one update_sg_lb_stats()
    /// would compute now.
    #[inline]
    pub(super) fn is_fresh(&self, st: &BalanceState, k: usize, sg: &SchedGroup) -> bool {
        if self.all_dirty {
            return false;
        }
        let kept = &self.groups[k];
        let sgc = st.sgc(sg.sgc);
        kept.fresh
            && kept.stats.sgs.group_capacity == sgc.capacity
            && kept.sg_imbalanced == sgc.imbalance
    }

    /// Whether the kept results may be reused in this attempt at all (not its first, nor
    /// one after too many changes).
    #[inline]
    pub(super) fn any_fresh(&self) -> bool {
        !self.all_dirty
    }

    /// Counts `n` groups whose kept result was reused.
    #[inline]
    pub(super) fn note_reused(&mut self, n: usize) {
        self.reused += n as u32;
    }

    /// Counts `n` groups whose kept result was reused and replayed ahead of
    /// update_sd_pick_busiest().
    #[inline]
    pub(super) fn note_replayed(&mut self, n: usize) {
        self.reused += n as u32;
        self.replayed += n as u32;
    }

    /// Groups whose kept result was reused since the memo was last emptied.
    #[cfg(test)]
    pub(crate) fn reused(&self) -> u32 {
        self.reused
    }

    /// Of [`SdMemo::reused`], the groups replayed ahead of update_sd_pick_busiest().
    #[cfg(test)]
    pub(crate) fn replayed(&self) -> u32 {
        self.replayed
    }

    /// How many groups have a kept result.
    #[inline]
    pub(super) fn n_groups(&self) -> usize {
        self.n
    }

    /// The kept result of the `k`-th group (computed in this attempt, or fresh).
    #[inline]
    pub(super) fn kept(&self, k: usize) -> &Kept {
        &self.groups[k]
    }

    /// Keeps the result of group `gid` (`sg`), the `k`-th, computed in this attempt by
    /// update_sg_lb_stats() as `stats`.
    #[inline(always)]
    pub(super) fn keep(
        &mut self,
        st: &BalanceState,
        k: usize,
        gid: GroupId,
        sg: &SchedGroup,
        stats: GroupStats,
    ) {
        let kept = &mut self.groups[k];
        kept.stats = stats;
        kept.gid = gid;
        kept.span = sg.span;
        kept.sg_imbalanced = st.sgc(sg.sgc).imbalance;
        kept.reusable = !kept.stats.timed && sg.asym_prefer_cpu.is_none();
    }

    /// Notes update_sd_lb_stats()'s busiest candidate (an index) once the `k`-th group was
    /// counted.
    #[inline]
    pub(super) fn set_busiest_after(&mut self, k: usize, busiest_k: Option<u32>) {
        self.groups[k].busiest_after = busiest_k;
    }

    /// Sets `sds`'s busiest candidate to the `busiest_k`-th group with its kept statistics
    /// (none if `None`).
    #[inline]
    pub(super) fn restore_busiest(&self, busiest_k: Option<u32>, sds: &mut SdLbStats) {
        if let Some(b) = busiest_k {
            let kept = &self.groups[b as usize];
            sds.busiest = Some(kept.gid);
            sds.busiest_stat = kept.stats.sgs;
        }
    }

    /// Ends the attempt's update_sd_lb_stats(): every group's result is kept.
    pub(super) fn finish(&mut self) {
        self.valid = true;
    }
}

#[cfg(test)]
mod tests;
