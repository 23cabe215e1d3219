//! The legacy CFS pick of the cfs_rq (`sched_policy=cfs`), following kernel/sched/fair.c of
//! v6.1 (checked against a v6.1.y tree): `__sched_period()`, `sched_idle_cfs_rq()`,
//! `sched_slice()`, `sched_vslice()`, `entity_is_long_sleeper()`, `place_entity()` with
//! `GENTLE_FAIR_SLEEPERS`/`START_DEBIT` (as `place_entity_cfs()`), `wakeup_gran()`,
//! `wakeup_preempt_entity()`, `check_preempt_tick()` and the min-vruntime pick with the
//! next/last/skip buddies (`pick_next_entity()`, as `pick_next_entity_cfs()`).

use crate::entity::{EntityStore, SchedEntity, TaskId};
use crate::params::RqFeat;
use crate::tunables::{FairPick, SchedParams};
use crate::weights::{NICE_0_LOAD, calc_delta, calc_delta_fair};

use super::{CfsRq, before, max_vruntime};

impl CfsRq {
    // ---------------------------------------------------------------------------------
    // Legacy CFS (v6.1)

    /// v6.1 `__sched_period()`: `sched_latency`, stretched to `nr * min_granularity` beyond
    /// `sched_nr_latency` tasks.
    pub fn __sched_period(nr_running: u64, params: &SchedParams) -> u64 {
        if nr_running > params.sched_nr_latency {
            nr_running * params.min_granularity_ns
        } else {
            params.latency_ns
        }
    }

    /// `sched_idle_cfs_rq()`: the cfs_rq has only `SCHED_IDLE` entities.
    fn sched_idle_cfs_rq(&self) -> bool {
        self.nr_running != 0 && self.nr_running == self.idle_nr_running
    }

    /// The wall-time slice of an entity: its weight's share of the period.
    ///
    /// Follows v6.1 fair.c: `sched_slice()`: with `ALT_PERIOD` the period counts the rq's
    /// `h_nr_running` (flat: this cfs_rq's), plus the entity if it is not queued yet (whose
    /// weight then joins the load); with `BASE_SLICE` the result is at least
    /// `min_granularity` (`idle_min_granularity` for an idle entity among non-idle ones).
    pub fn sched_slice<E: EntityStore>(&self, ents: &E, id: TaskId, params: &SchedParams) -> u64 {
        let se = ents.se(id);
        let mut nr_running = u64::from(self.nr_running);
        if params.feat(RqFeat::AltPeriod) {
            nr_running = u64::from(self.h_nr_running);
        }
        let mut slice = Self::__sched_period(nr_running + u64::from(!se.on_rq), params);
        let mut load = self.load;
        if !se.on_rq {
            load.add(se.load.weight);
        }
        slice = calc_delta(slice, se.load.weight, &load);
        if params.feat(RqFeat::BaseSlice) {
            let min_gran = if se.idle && !self.sched_idle_cfs_rq() {
                params.idle_min_granularity_ns
            } else {
                params.min_granularity_ns
            };
            slice = slice.max(min_gran);
        }
        slice
    }

    /// v6.1 `sched_vslice()`: `calc_delta_fair(sched_slice())`.
    pub fn sched_vslice<E: EntityStore>(&self, ents: &E, id: TaskId, params: &SchedParams) -> u64 {
        calc_delta_fair(self.sched_slice(ents, id, params), &ents.se(id).load)
    }

    /// v6.1 (v6.1.y) `entity_is_long_sleeper()`: slept more than `2^63 / NICE_0_LOAD` ns.
    fn entity_is_long_sleeper(se: &SchedEntity, clock_task: u64) -> bool {
        if se.exec_start == 0 {
            return false;
        }
        if clock_task <= se.exec_start {
            return false;
        }
        clock_task - se.exec_start > (1u64 << 63) / NICE_0_LOAD
    }

    /// Follows v6.1 fair.c: `place_entity()`: a new task starts a vslice after
    /// `min_vruntime` (`START_DEBIT`); a waking one gets at most `sched_latency` of credit
    /// (half with `GENTLE_FAIR_SLEEPERS`; `min_granularity` for an idle entity), never moving
    /// backwards unless it slept for ages.
    pub fn place_entity_cfs<E: EntityStore>(
        &self,
        ents: &mut E,
        id: TaskId,
        initial: bool,
        clock_task: u64,
        params: &SchedParams,
    ) {
        let mut vruntime = self.min_vruntime;
        if initial && params.feat(RqFeat::StartDebit) {
            vruntime = vruntime.wrapping_add(self.sched_vslice(ents, id, params));
        }
        let se = ents.se_mut(id);
        if !initial {
            let mut thresh = if se.idle {
                params.min_granularity_ns
            } else {
                params.latency_ns
            };
            if params.feat(RqFeat::GentleFairSleepers) {
                thresh >>= 1;
            }
            vruntime = vruntime.wrapping_sub(thresh);
        }
        se.vruntime = if Self::entity_is_long_sleeper(se, clock_task) {
            vruntime
        } else {
            max_vruntime(se.vruntime, vruntime)
        };
    }

    /// v6.1 `wakeup_gran()`: `wakeup_granularity` in `se`'s virtual time.
    fn wakeup_gran(se: &SchedEntity, params: &SchedParams) -> u64 {
        calc_delta_fair(params.wakeup_granularity_ns, &se.load)
    }

    /// Should `se` preempt `curr`? -1: no (`se` is not behind), 0: within the granularity,
    /// 1: yes.
    ///
    /// Follows v6.1 fair.c: `wakeup_preempt_entity()`.
    pub fn wakeup_preempt_entity<E: EntityStore>(
        ents: &E,
        curr: TaskId,
        se: TaskId,
        params: &SchedParams,
    ) -> i32 {
        let (c, s) = (ents.se(curr), ents.se(se));
        let vdiff = c.vruntime.wrapping_sub(s.vruntime) as i64;
        if vdiff <= 0 {
            return -1;
        }
        let gran = Self::wakeup_gran(s, params) as i64;
        if vdiff > gran { 1 } else { 0 }
    }

    /// Tick-time preemption of a task that ran its share.
    ///
    /// Follows v6.1 fair.c: `check_preempt_tick()`: reschedule when curr ran longer than
    /// `min(sched_slice, sched_latency)` since it was picked, or, after at least
    /// `min_granularity`, when it is further than that ahead of the leftmost in vruntime.
    pub fn check_preempt_tick<E: EntityStore>(
        &mut self,
        ents: &E,
        curr: TaskId,
        params: &SchedParams,
    ) {
        let ideal_runtime = self.sched_slice(ents, curr, params).min(params.latency_ns);
        let cse = ents.se(curr);
        let delta_exec = cse.sum_exec_runtime - cse.prev_sum_exec_runtime;
        if delta_exec > ideal_runtime {
            self.resched_curr();
            self.clear_buddies(curr);
            return;
        }
        if delta_exec < params.min_granularity_ns {
            return;
        }
        let Some(first) = self.__pick_first_entity(FairPick::Cfs) else {
            return;
        };
        let delta = cse.vruntime.wrapping_sub(ents.se(first).vruntime) as i64;
        if delta < 0 {
            return;
        }
        if delta as u64 > ideal_runtime {
            self.resched_curr();
        }
    }

    /// Follows v6.1 fair.c: `pick_next_entity()`: the leftmost by vruntime (or `curr` if it is
    /// further left), avoiding the skip buddy and preferring the next, then the last buddy,
    /// when that is not more than a wakeup granularity unfair. `curr` is passed only if queued.
    pub(super) fn pick_next_entity_cfs<E: EntityStore>(
        &self,
        ents: &E,
        curr: Option<TaskId>,
        params: &SchedParams,
    ) -> Option<TaskId> {
        let vr = |id: TaskId| ents.se(id).vruntime;
        let first = self.__pick_first_entity(FairPick::Cfs);
        let mut left = first;
        if let Some(c) = curr
            && left.is_none_or(|l| before(vr(c), vr(l)))
        {
            left = Some(c);
        }
        let left = left?;
        let mut se = left;
        if self.skip == Some(se) {
            let second = if Some(se) == curr {
                first
            } else {
                match (self.successor_by_vruntime(ents, se), curr) {
                    (None, c) => c,
                    (Some(s), Some(c)) if before(vr(c), vr(s)) => Some(c),
                    (s, _) => s,
                }
            };
            if let Some(second) = second
                && Self::wakeup_preempt_entity(ents, second, left, params) < 1
            {
                se = second;
            }
        }
        if let Some(next) = self
            .next
            .filter(|&n| Self::wakeup_preempt_entity(ents, n, left, params) < 1)
        {
            se = next;
        } else if let Some(last) = self
            .last
            .filter(|&l| Self::wakeup_preempt_entity(ents, l, left, params) < 1)
        {
            se = last;
        }
        Some(se)
    }
}
