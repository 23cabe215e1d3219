//! `cfs_rq->runnable_load_avg` / `runnable_load_sum` of the kernels before v5.7: a decayed
//! sum of the cfs_rq's own, kept beside `cfs_rq->avg` (v4.6-v4.14: `struct cfs_rq` fields;
//! v4.15-v5.6: `cfs_rq->avg.runnable_load_*`), removed by 0dacee1bfa70 ("sched/pelt: Remove
//! unused runnable load average", v5.7).
//!
//! The rule, in every release that has it:
//! - the cfs_rq's own PELT update (`__update_load_avg(..., cfs_rq)` in v4.6-v4.11,
//!   `___update_load_avg()` with the `cfs_rq` argument in v4.12-v4.14,
//!   `___update_load_sum()` with `runnable = scale_load_down(cfs_rq->runnable_weight)` in
//!   v4.15-v5.6) accrues the queued weight into `runnable_load_sum` and decays it on the
//!   cfs_rq's 1024-unit periods, in step with `load_sum`;
//! - `runnable_load_avg` is recomputed from the sum only when a period ended
//!   (`decayed`): `sum / LOAD_AVG_MAX` up to v4.12, `sum / (LOAD_AVG_MAX - 1024 +
//!   period_contrib)` from v4.13 (625ed2bf049d, "sched/cfs: Make util/load_avg more
//!   stable");
//! - enqueue adds the entity's `load_avg` and (weighted) `load_sum`
//!   (enqueue_entity_load_avg() v4.6-v4.14, enqueue_runnable_load_avg() v4.15-v5.6), dequeue
//!   subtracts them clamped at 0 (`max_t(long/s64, ..., 0)` in v4.6, sub_positive() later).
//!
//! So the average is stale between period ends, and a CPU a task left keeps a residue (or,
//! clamped, loses part of the next task's share) until the sum decays.
//!
//! What lbsim runs: the cfs_rq's period structure (`last_update_time`, `period_contrib`) is
//! that of its v6.x signal ([`crate::CfsRqAvg::avg`]), which this sum follows step for step;
//! the entities' own signals are v6.x PELT too (the load_sum unweighted, the entity's weight
//! applied at enqueue, as v4.15+ does with `se_runnable(se)`). Only the sum's own arithmetic
//! is per release ([`RunnableLoadForm`]). An entity's sum is on the same scale in every
//! release (at most `LOAD_AVG_MAX - 1024 + period_contrib` per unit of weight); before v4.13
//! only the divider of the averages differed.
//!
//! Deliberate differences: a new or migrated entity's sums are added as lbsim's
//! attach_entity_load_avg() (v6.x, like v5.1+'s f207934fb79d) rebuilt them from its
//! `load_avg`, where v4.6-v5.0 added the sums it brought (a new task's `load_avg *
//! LOAD_AVG_MAX` in v4.6, which v6.x's init does not keep); a queued entity's reweight
//! (renice) leaves the sums alone, as v4.6-v4.14 do, where v4.15-v5.6's reweight_entity()
//! moved the entity's share out and back in; with task groups a group entity's share is its
//! `load_avg`, where v4.15-v5.6 propagated a separate runnable average into it.

use crate::avg::{SchedAvg, decay_load};
use crate::consts::{LOAD_AVG_MAX, LOAD_AVG_MAX_STEPS, LOAD_AVG_PERIOD, PELT_PERIOD_UNITS};

/// Which release's `runnable_load_avg` a cfs_rq keeps, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum RunnableLoadForm {
    /// None (v5.7+, and lbsim's v6.x runs): the fields are not kept.
    #[default]
    Off,
    /// v4.6: __update_load_avg() adds the open period's rest undecayed, decays by
    /// `periods + 1`, adds __compute_runnable_contrib(periods) in its loop form; divider
    /// 47742.
    V4_6,
    /// v4.11: as v4.6, with __compute_runnable_contrib() reading `__accumulated_sum_N32[]`
    /// (which differs from the loop by one unit at whole multiples of 32 periods).
    V4_11,
    /// v4.13-v5.6: accumulate_sum() (d1 decayed by `y^p`, the v6.x arithmetic) and the
    /// divider `LOAD_AVG_MAX - 1024 + period_contrib`.
    V4_13,
}

impl RunnableLoadForm {
    /// The form of release `major.minor`: [`RunnableLoadForm::Off`] from v5.7 on (and before
    /// v4.6, which lbsim does not model).
    #[must_use]
    pub const fn for_release(major: u32, minor: u32) -> RunnableLoadForm {
        let v = major * 100 + minor;
        if v < 406 || v >= 507 {
            RunnableLoadForm::Off
        } else if v < 411 {
            RunnableLoadForm::V4_6
        } else if v < 412 {
            RunnableLoadForm::V4_11
        } else {
            // v4.12 has accumulate_sum() with the 47742 divider; lbsim has no 4.12 profile
            // and takes it as v4.13.
            RunnableLoadForm::V4_13
        }
    }

    /// Whether the fields are kept.
    #[must_use]
    pub const fn tracked(self) -> bool {
        !matches!(self, RunnableLoadForm::Off)
    }
}

/// `cfs_rq->runnable_load_avg` and `runnable_load_sum` (v4.6-v5.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct RunnableLoad {
    /// The release whose rules apply ([`RunnableLoadForm::Off`]: nothing is kept).
    pub form: RunnableLoadForm,
    /// `runnable_load_sum`: weight times time, decayed.
    pub sum: u64,
    /// `runnable_load_avg`.
    pub avg: u64,
}

/// `runnable_avg_yN_sum[n]` (v4.6-v4.11): `sum_{i=1..n} 1024 * y^i`, truncated.
const RUNNABLE_AVG_YN_SUM: [u32; LOAD_AVG_PERIOD as usize + 1] = [
    0, 1002, 1982, 2941, 3880, 4798, 5697, 6576, 7437, 8279, 9103, 9909, 10698, 11470, 12226,
    12966, 13690, 14398, 15091, 15769, 16433, 17082, 17718, 18340, 18949, 19545, 20128, 20698,
    21256, 21802, 22336, 22859, 23371,
];

/// `LOAD_AVG_MAX_N` (v4.6-v4.11): 345 periods.
const LOAD_AVG_MAX_N: u64 = LOAD_AVG_MAX_STEPS as u64 - 1;

/// decay_load() of v4.6-v4.11: `val` itself for `n == 0`, else v6.x's.
fn decay_load_v4_6(val: u64, n: u64) -> u64 {
    if n == 0 { val } else { decay_load(val, n) }
}

/// `sum_{i=1..n} 1024 * y^i`.
///
/// Follows fair.c: __compute_runnable_contrib() of v4.6 (`table == false`: halve and add
/// `runnable_avg_yN_sum[32]` while more than 32 periods remain, then decay the rest) or
/// of v4.11 (`table == true`: `__accumulated_sum_N32[n / 32]`, the same recurrence
/// tabulated, then decay by `n % 32`).
fn compute_runnable_contrib(n: u64, table: bool) -> u32 {
    let period = u64::from(LOAD_AVG_PERIOD);
    if n <= period {
        return RUNNABLE_AVG_YN_SUM[n as usize];
    }
    if n >= LOAD_AVG_MAX_N {
        return LOAD_AVG_MAX as u32;
    }
    let top = RUNNABLE_AVG_YN_SUM[LOAD_AVG_PERIOD as usize];
    let mut contrib: u32 = 0;
    let mut n = n;
    if table {
        // __accumulated_sum_N32[k]: k steps of contrib = contrib / 2 + yN_sum[32].
        for _ in 0..n / period {
            contrib = contrib / 2 + top;
        }
        n %= period;
    } else {
        loop {
            contrib = contrib / 2 + top;
            n -= period;
            if n <= period {
                break;
            }
        }
    }
    let contrib = decay_load_v4_6(u64::from(contrib), n) as u32;
    contrib + RUNNABLE_AVG_YN_SUM[n as usize]
}

impl RunnableLoad {
    /// The cfs_rq's own update: accrue `weight` (`scale_load_down(cfs_rq->load.weight)`,
    /// or `runnable_weight` from v4.15, the same for a cfs_rq of tasks) over `delta`
    /// 1024-ns units from the position `period_contrib` of the cfs_rq's open period, and
    /// recompute the average if a period ended. Called with the cfs_rq signal's state
    /// before its own update of the same span; returns whether a period ended.
    ///
    /// Follows fair.c: __update_load_avg() (v4.6, v4.11: the `cfs_rq` branches),
    /// accumulate_sum() and ___update_load_avg() (v4.13-v4.14), ___update_load_sum() and
    /// ___update_load_avg() (v4.15-v5.6: `runnable_load_sum`, `runnable_load_avg`). The
    /// frequency scaling `cap_scale(delta, scale_freq)` is the identity (lbsim's PELT
    /// clock carries the invariance).
    #[inline]
    pub fn accrue(&mut self, delta: u64, period_contrib: u32, weight: u64) -> bool {
        match self.form {
            RunnableLoadForm::Off => false,
            RunnableLoadForm::V4_6 | RunnableLoadForm::V4_11 => {
                let table = self.form == RunnableLoadForm::V4_11;
                let mut delta = delta;
                let delta_w = u64::from(period_contrib);
                let mut decayed = false;
                if delta + delta_w >= PELT_PERIOD_UNITS {
                    decayed = true;
                    let d1 = PELT_PERIOD_UNITS - delta_w;
                    self.sum = self.sum.wrapping_add(weight.wrapping_mul(d1));
                    delta -= d1;
                    let periods = delta / PELT_PERIOD_UNITS;
                    delta %= PELT_PERIOD_UNITS;
                    self.sum = decay_load_v4_6(self.sum, periods + 1);
                    let contrib = u64::from(compute_runnable_contrib(periods, table));
                    self.sum = self.sum.wrapping_add(weight.wrapping_mul(contrib));
                }
                self.sum = self.sum.wrapping_add(weight.wrapping_mul(delta));
                if decayed {
                    self.avg = self.sum / LOAD_AVG_MAX;
                }
                decayed
            }
            RunnableLoadForm::V4_13 => {
                let mut sa = SchedAvg {
                    load_sum: self.sum,
                    period_contrib,
                    ..SchedAvg::default()
                };
                let decayed = sa.accumulate_sum(delta, weight, 0, false) != 0;
                self.sum = sa.load_sum;
                if decayed {
                    self.avg = self.sum / u64::from(sa.get_pelt_divider());
                }
                decayed
            }
        }
    }

    /// Adds an entity: `runnable_load_avg += se load_avg`, `runnable_load_sum += weight *
    /// se load_sum` (`load_sum` unweighted, as lbsim's v6.x entity signal keeps it).
    ///
    /// Follows fair.c: enqueue_entity_load_avg() (v4.6-v4.14),
    /// enqueue_runnable_load_avg() (v4.15-v5.6).
    pub fn enqueue(&mut self, load_avg: u64, weight: u64, load_sum: u64) {
        if !self.form.tracked() {
            return;
        }
        self.avg = self.avg.wrapping_add(load_avg);
        self.sum = self.sum.wrapping_add(weight.wrapping_mul(load_sum));
    }

    /// Removes an entity, each field clamped at 0.
    ///
    /// Follows fair.c: dequeue_entity_load_avg() (v4.6-v4.14, `max_t(long, ..., 0)` and
    /// `max_t(s64, ..., 0)`), dequeue_runnable_load_avg() (v4.15-v5.6, sub_positive()).
    pub fn dequeue(&mut self, load_avg: u64, weight: u64, load_sum: u64) {
        if !self.form.tracked() {
            return;
        }
        self.avg = self.avg.saturating_sub(load_avg);
        self.sum = self.sum.saturating_sub(weight.wrapping_mul(load_sum));
    }
}

#[cfg(test)]
mod tests;
