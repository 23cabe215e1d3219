//! util_est: the estimated utilization of tasks and of the root cfs_rq.
//!
//! v6.9 turned `struct util_est {enqueued, ewma}` into a single `unsigned int`
//! per task and per cfs_rq and made the fast ramp-up unconditional; this module
//! follows that layout (v6.9-v6.12). The `UTIL_EST` sched feature is the
//! `util_est` parameter of each function.
//!
//! The kernel's call order differs between releases: v6.9-v6.11 call
//! util_est_dequeue(), then dequeue the entity (updating its PELT signal), then
//! util_est_update(); v6.12 (delayed dequeue) calls util_est_dequeue() and
//! util_est_update() before dequeueing the entity. These functions take the
//! values they read at the moment they are called; the order is the caller's.

use crate::avg::SchedAvg;
use crate::cfs_rq::CfsRqAvg;
use crate::consts::{UTIL_AVG_UNCHANGED, UTIL_EST_MARGIN, UTIL_EST_WEIGHT_SHIFT};

/// `max(util_avg, util_est)` of a task (the flag masked off).
///
/// Follows fair.c: task_util_est() (v6.9-v6.12).
#[inline]
#[must_use]
pub fn task_util_est(se: &SchedAvg) -> u64 {
    se.util_avg.max(u64::from(se.util_est_value()))
}

/// Adds the task's estimate to the cfs_rq's on enqueue.
///
/// Follows fair.c: util_est_enqueue() (v6.9-v6.12).
pub fn util_est_enqueue(cfs_rq: &mut CfsRqAvg, se: &SchedAvg, util_est: bool) {
    if !util_est {
        return;
    }
    cfs_rq.avg.util_est = cfs_rq.avg.util_est.wrapping_add(se.util_est_value());
}

/// Removes the task's estimate from the cfs_rq's on dequeue, clamped at 0.
///
/// Follows fair.c: util_est_dequeue() (v6.9-v6.12).
pub fn util_est_dequeue(cfs_rq: &mut CfsRqAvg, se: &SchedAvg, util_est: bool) {
    if !util_est {
        return;
    }
    let enqueued = cfs_rq.avg.util_est;
    cfs_rq.avg.util_est = enqueued - enqueued.min(se.util_est_value());
}

/// Folds the task's util_avg at the end of an activation into its estimate.
///
/// Skipped when the dequeue is not a sleep, or when util_avg has not been
/// updated since the last estimate (the [`UTIL_AVG_UNCHANGED`] flag). An
/// increase is taken at once; a decrease within [`UTIL_EST_MARGIN`] keeps the
/// estimate; a decrease while the task was starved (`util_avg + margin <
/// runnable_avg`) keeps it too; otherwise the estimate moves a quarter of the
/// way down. A task whose util_avg exceeds the CPU's capacity leaves the
/// estimate (and the flag) untouched. `cpu_capacity` is
/// `arch_scale_cpu_capacity()` of the task's CPU.
///
/// Follows fair.c: util_est_update() (v6.9-v6.12; later releases dropped the
/// capacity check).
pub fn util_est_update(se: &mut SchedAvg, task_sleep: bool, cpu_capacity: u64, util_est: bool) {
    if !util_est {
        return;
    }
    // Skip when the task has not completed an activation (e.g. migration).
    if !task_sleep {
        return;
    }
    let mut ewma = se.util_est;
    // The PELT values have not changed since enqueue time.
    if ewma & UTIL_AVG_UNCHANGED != 0 {
        return;
    }
    // `unsigned int dequeued = task_util(p)`.
    let dequeued = se.util_avg as u32;

    'done: {
        // Reset the EWMA on utilization increases.
        if ewma <= dequeued {
            ewma = dequeued;
            break 'done;
        }
        // Skip when the estimate is already ~1% close to its last value.
        let last_ewma_diff = ewma - dequeued;
        if last_ewma_diff < UTIL_EST_MARGIN {
            break 'done;
        }
        // Skip when we cannot grant that there was idle time on this CPU.
        if u64::from(dequeued) > cpu_capacity {
            return;
        }
        // Skip when the task did not get all the CPU time it wanted.
        if u64::from(dequeued.wrapping_add(UTIL_EST_MARGIN)) < se.runnable_avg {
            break 'done;
        }
        // ewma(t) = w * task_util(p) + (1 - w) * ewma(t-1), w = 1/4.
        ewma <<= UTIL_EST_WEIGHT_SHIFT;
        ewma = ewma.wrapping_sub(last_ewma_diff);
        ewma >>= UTIL_EST_WEIGHT_SHIFT;
    }
    se.util_est = ewma | UTIL_AVG_UNCHANGED;
}

#[cfg(test)]
mod tests;
