//! The EEVDF pick of the cfs_rq, following kernel/sched/fair.c of v6.12 (checked against a
//! v6.12.20 tree): `entity_key()`, `avg_vruntime_add()`/`_sub()`/`_update()`,
//! `avg_vruntime()`, `vruntime_eligible()`, `entity_eligible()`, `entity_lag()`,
//! `update_entity_lag()`, `pick_eevdf()`, `update_deadline()`, `did_preempt_short()`,
//! `do_preempt_short()`, `place_entity()`, and the delayed dequeue's `set_delayed()`,
//! `clear_delayed()` and `requeue_delayed_entity()`.

use lbsim_pelt::UpdateFlags;

use crate::entity::{EnqueueFlags, EntityStore, SchedEntity, TaskId, se_group};
use crate::params::RqFeat;
use crate::tunables::{FairPick, SchedParams};
use crate::weights::{calc_delta_fair, scale_load_down};

use super::{CfsClock, CfsRq, before};

impl CfsRq {
    // ---------------------------------------------------------------------------------
    // avg_vruntime

    /// `entity_key()`: `(s64)(v - min_vruntime)`.
    #[inline]
    fn entity_key(&self, vruntime: u64) -> i64 {
        vruntime.wrapping_sub(self.min_vruntime) as i64
    }

    /// Follows fair.c: `avg_vruntime_add()`.
    pub(super) fn avg_vruntime_add(&mut self, vruntime: u64, weight: u64) {
        let key = self.entity_key(vruntime);
        self.avg_vruntime = self
            .avg_vruntime
            .wrapping_add(key.wrapping_mul(weight as i64));
        self.avg_load += weight;
    }

    /// Follows fair.c: `avg_vruntime_sub()`.
    pub(super) fn avg_vruntime_sub(&mut self, vruntime: u64, weight: u64) {
        let key = self.entity_key(vruntime);
        self.avg_vruntime = self
            .avg_vruntime
            .wrapping_sub(key.wrapping_mul(weight as i64));
        self.avg_load -= weight;
    }

    /// Follows fair.c: `avg_vruntime_update()`: `min_vruntime` moved by `delta`.
    pub(super) fn avg_vruntime_update(&mut self, delta: i64) {
        self.avg_vruntime = self
            .avg_vruntime
            .wrapping_sub((self.avg_load as i64).wrapping_mul(delta));
    }

    /// The sums including `curr` when it is queued: `(avg, load)` as `avg_vruntime()` and
    /// `vruntime_eligible()` build them.
    fn sums_with_curr<E: EntityStore>(&self, ents: &E) -> (i64, i64) {
        let mut avg = self.avg_vruntime;
        let mut load = self.avg_load as i64;
        if let Some(c) = self.curr {
            let se = ents.se(c);
            if se.on_rq {
                let weight = scale_load_down(se.load.weight) as i64;
                avg = avg.wrapping_add(self.entity_key(se.vruntime).wrapping_mul(weight));
                load += weight;
            }
        }
        (avg, load)
    }

    /// The weighted average vruntime `V` of the queued entities (including `curr`), rounded
    /// towards minus infinity so that `avg_vruntime() + 0` is always eligible.
    ///
    /// Follows fair.c: `avg_vruntime()` (v6.12): a negative sum is lowered by `load - 1` before
    /// the truncating `div_s64()`.
    pub fn avg_vruntime<E: EntityStore>(&self, ents: &E) -> u64 {
        let (mut avg, load) = self.sums_with_curr(ents);
        if load != 0 {
            if avg < 0 {
                avg -= load - 1;
            }
            avg /= load;
        }
        self.min_vruntime.wrapping_add(avg as u64)
    }

    /// Whether an entity at `vruntime` is eligible (lag >= 0): `Σ (v_i - v0) w_i >= (v - v0) Σ w_i`,
    /// by cross-multiplication.
    ///
    /// Follows fair.c: `vruntime_eligible()` (v6.12; `entity_eligible()` in v6.6).
    pub fn vruntime_eligible<E: EntityStore>(&self, ents: &E, vruntime: u64) -> bool {
        let (avg, load) = self.sums_with_curr(ents);
        avg >= self.entity_key(vruntime).wrapping_mul(load)
    }

    /// Follows fair.c: `entity_eligible()`.
    pub fn entity_eligible<E: EntityStore>(&self, ents: &E, id: TaskId) -> bool {
        self.vruntime_eligible(ents, ents.se(id).vruntime)
    }

    /// `V - v`, clamped to `±calc_delta_fair(max(2 * slice, TICK_NSEC))`.
    ///
    /// Follows fair.c: `entity_lag()` (v6.12; the same limit in v6.6).
    pub fn entity_lag(avruntime: u64, se: &SchedEntity, tick_nsec: u64) -> i64 {
        let vlag = avruntime.wrapping_sub(se.vruntime) as i64;
        let limit = calc_delta_fair((2 * se.slice).max(tick_nsec), &se.load) as i64;
        vlag.clamp(-limit, limit)
    }

    /// Follows fair.c: `update_entity_lag()`: `se->vlag = entity_lag(avg_vruntime(), se)`.
    pub fn update_entity_lag<E: EntityStore>(&self, ents: &mut E, id: TaskId, tick_nsec: u64) {
        debug_assert!(
            ents.se(id).on_rq,
            "update_entity_lag() of a dequeued entity"
        );
        let avruntime = self.avg_vruntime(ents);
        let se = ents.se_mut(id);
        se.vlag = Self::entity_lag(avruntime, se, tick_nsec);
    }

    // ---------------------------------------------------------------------------------
    // EEVDF

    /// Earliest Eligible Virtual Deadline First.
    ///
    /// Follows fair.c: `pick_eevdf()` (v6.12): a lone entity is returned without checks; `curr`
    /// counts only if queued and eligible; with `RUN_TO_PARITY` a `curr` whose `vlag` still
    /// equals its `deadline` (it has neither used its slice nor been de-protected by
    /// `PREEMPT_SHORT`) is kept; otherwise the eligible timeline entity with the earliest
    /// deadline wins, and `curr` replaces it only with a strictly earlier deadline.
    pub fn pick_eevdf<E: EntityStore>(&self, ents: &E, params: &SchedParams) -> Option<TaskId> {
        let mut curr = self.curr;
        if self.nr_running == 1 {
            return match curr {
                Some(c) if ents.se(c).on_rq => Some(c),
                _ => self.__pick_first_entity(FairPick::Eevdf),
            };
        }
        if let Some(c) = curr
            && (!ents.se(c).on_rq || !self.entity_eligible(ents, c))
        {
            curr = None;
        }
        if params.feat(RqFeat::RunToParity)
            && let Some(c) = curr
            && ents.se(c).vlag as u64 == ents.se(c).deadline
        {
            return Some(c);
        }
        // The in-order first eligible node: earliest deadline, then earliest insertion.
        debug_assert_eq!(self.timeline.order(), FairPick::Eevdf);
        let (avg, load) = self.sums_with_curr(ents);
        let best = self
            .timeline
            .first_eligible(|v| avg >= self.entity_key(v).wrapping_mul(load));
        match (best, curr) {
            (None, c) => c,
            (Some(b), Some(c)) if before(ents.se(c).deadline, b.deadline) => Some(c),
            (Some(b), _) => Some(b.id),
        }
    }

    /// Follows fair.c: `update_deadline()` (v6.12): once `vruntime` reaches the deadline, take a
    /// new slice (`base_slice_ns` unless custom) and a new deadline `vruntime + slice/w`.
    /// Returns true when a new slice was taken (the caller reschedules).
    pub fn update_deadline(se: &mut SchedEntity, base_slice_ns: u64) -> bool {
        if before(se.vruntime, se.deadline) {
            return false;
        }
        if !se.custom_slice {
            se.slice = base_slice_ns;
        }
        se.deadline = se
            .vruntime
            .wrapping_add(calc_delta_fair(se.slice, &se.load));
        true
    }

    /// Follows fair.c: `did_preempt_short()` (v6.12): curr lost its slice protection to a
    /// shorter-slice wakeup and is no longer eligible.
    pub(super) fn did_preempt_short<E: EntityStore>(
        &self,
        ents: &E,
        curr: TaskId,
        params: &SchedParams,
    ) -> bool {
        if !params.feat(RqFeat::PreemptShort) {
            return false;
        }
        let se = ents.se(curr);
        if se.vlag as u64 == se.deadline {
            return false;
        }
        !self.entity_eligible(ents, curr)
    }

    /// Follows fair.c: `do_preempt_short()` (v6.12): may the waking `pse` (shorter slice,
    /// eligible) cut `se`'s protection short?
    pub fn do_preempt_short<E: EntityStore>(
        &self,
        ents: &E,
        pse: TaskId,
        se: TaskId,
        params: &SchedParams,
    ) -> bool {
        if !params.feat(RqFeat::PreemptShort) {
            return false;
        }
        let (p, s) = (ents.se(pse), ents.se(se));
        if p.slice >= s.slice {
            return false;
        }
        if !self.entity_eligible(ents, pse) {
            return false;
        }
        if before(p.deadline, s.deadline) {
            return true;
        }
        !self.entity_eligible(ents, se)
    }

    /// Place an entity on enqueue.
    ///
    /// Follows fair.c: `place_entity()` (v6.12): `vruntime = V - lag` where, with `PLACE_LAG`
    /// and a non-empty queue, the saved lag is inflated by `(W + w) / W` so that it survives
    /// the entity's own effect on `V`; with `PLACE_REL_DEADLINE` a relative deadline saved at a
    /// migration is made absolute again; otherwise `deadline = vruntime + vslice`, halved for a
    /// new task with `PLACE_DEADLINE_INITIAL`.
    pub fn place_entity<E: EntityStore>(
        &self,
        ents: &mut E,
        id: TaskId,
        flags: EnqueueFlags,
        params: &SchedParams,
    ) {
        let vruntime = self.avg_vruntime(ents);
        let mut lag: i64 = 0;
        let mut load: i64 = 0;
        if params.feat(RqFeat::PlaceLag) && self.nr_running != 0 {
            load = self.avg_load as i64;
            if let Some(c) = self.curr {
                let cse = ents.se(c);
                if cse.on_rq {
                    load += scale_load_down(cse.load.weight) as i64;
                }
            }
        }
        let se = ents.se_mut(id);
        if !se.custom_slice {
            se.slice = params.base_slice_ns;
        }
        let mut vslice = calc_delta_fair(se.slice, &se.load);
        if params.feat(RqFeat::PlaceLag) && self.nr_running != 0 {
            lag = se.vlag;
            lag = lag.wrapping_mul(load + scale_load_down(se.load.weight) as i64);
            if load == 0 {
                load = 1;
            }
            lag /= load;
        }
        se.vruntime = vruntime.wrapping_sub(lag as u64);
        if params.feat(RqFeat::PlaceRelDeadline) && se.rel_deadline {
            se.deadline = se.deadline.wrapping_add(se.vruntime);
            se.rel_deadline = false;
            return;
        }
        if params.feat(RqFeat::PlaceDeadlineInitial) && flags.contains(EnqueueFlags::INITIAL) {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice);
    }

    /// Mark an entity delayed. Follows fair.c: `set_delayed()` (v6.12.y): a task counts in
    /// this cfs_rq's `h_nr_delayed` (its ancestors' are the hierarchy walk's); a group entity,
    /// whose cfs_rq is empty, changes no count.
    pub(super) fn set_delayed<E: EntityStore>(&mut self, ents: &mut E, id: TaskId) {
        ents.se_mut(id).sched_delayed = true;
        if se_group(id).is_none() {
            self.h_nr_delayed += 1;
        }
    }

    /// Follows fair.c: `clear_delayed()` (v6.12.y), as [`CfsRq::set_delayed`].
    pub(super) fn clear_delayed<E: EntityStore>(&mut self, ents: &mut E, id: TaskId) {
        ents.se_mut(id).sched_delayed = false;
        if se_group(id).is_none() {
            self.h_nr_delayed -= 1;
        }
    }

    /// Give a (group) entity of this cfs_rq a new scaled weight.
    ///
    /// Follows fair.c: `reweight_entity()` and `reweight_eevdf()` (v6.12): a queued entity
    /// has its outstanding run accounted, leaves the timeline and the load, and keeps its lag
    /// and relative deadline at the 0-lag point `V` scaled by `old / new` (`div_s64()` of the
    /// scaled weights, truncating); a dequeued one has its saved `vlag` scaled. Its PELT load
    /// leaves at the old weight, is recomputed from `load_sum` at the new one and comes back
    /// (`reweight_entity_load_avg()`), and a queued entity rejoins the load and the timeline.
    pub fn reweight_entity<E: EntityStore>(
        &mut self,
        ents: &mut E,
        id: TaskId,
        weight: u64,
        clock: CfsClock,
        params: &SchedParams,
    ) {
        let is_curr = self.curr == Some(id);
        let on_rq = ents.se(id).on_rq;
        let old_weight = ents.scaled_weight(id);
        let mut avruntime = 0;
        if on_rq {
            self.update_curr(ents, clock, params);
            avruntime = self.avg_vruntime(ents);
            if !is_curr {
                self.__dequeue_entity(ents, id);
            }
            self.load.sub(ents.se(id).load.weight);
            self.load_scaled -= old_weight;
        }
        let old_se_weight = ents.se(id).se_weight();
        let se = ents.se_mut(id);
        if on_rq {
            // reweight_eevdf()
            if avruntime != se.vruntime {
                let vlag = Self::entity_lag(avruntime, se, params.tick_nsec);
                let vlag = vlag.wrapping_mul(old_weight as i64) / weight as i64;
                se.vruntime = avruntime.wrapping_sub(vlag as u64);
            }
            let vslice = se.deadline.wrapping_sub(avruntime) as i64;
            let vslice = vslice.wrapping_mul(old_weight as i64) / weight as i64;
            se.deadline = avruntime.wrapping_add(vslice as u64);
        } else {
            se.vlag = se.vlag.wrapping_mul(old_weight as i64) / weight as i64;
        }
        ents.set_scaled_weight(id, weight);
        let new_se_weight = ents.se(id).se_weight();
        self.avg
            .reweight_entity_load_avg(&mut ents.se_mut(id).avg, old_se_weight, new_se_weight);
        if on_rq {
            self.load.add(ents.se(id).load.weight);
            self.load_scaled += weight;
            if !is_curr {
                self.__enqueue_entity(ents, id);
            }
        }
    }

    /// Wake a delayed entity in place.
    ///
    /// Follows fair.c: `requeue_delayed_entity()` (v6.12): with `DELAY_ZERO`, positive lag is
    /// dropped and the entity re-placed at the 0-lag point (re-inserted into the timeline);
    /// then PELT is updated and the delay cleared.
    pub fn requeue_delayed_entity<E: EntityStore>(
        &mut self,
        ents: &mut E,
        id: TaskId,
        clock: CfsClock,
        params: &SchedParams,
    ) {
        debug_assert!(ents.se(id).sched_delayed && ents.se(id).on_rq);
        self.timeline_order(params.pick);
        let is_curr = self.curr == Some(id);
        if params.feat(RqFeat::DelayZero) {
            self.update_entity_lag(ents, id, params.tick_nsec);
            if ents.se(id).vlag > 0 {
                self.nr_running -= 1;
                if !is_curr {
                    self.__dequeue_entity(ents, id);
                }
                ents.se_mut(id).vlag = 0;
                self.place_entity(ents, id, EnqueueFlags::NONE, params);
                if !is_curr {
                    self.__enqueue_entity(ents, id);
                }
                self.nr_running += 1;
            }
        }
        self.update_load_avg(ents, id, clock.pelt, UpdateFlags::NONE, params);
        self.clear_delayed(ents, id);
    }
}
