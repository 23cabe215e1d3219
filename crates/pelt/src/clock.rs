//! The PELT clock of a runqueue: `clock_pelt`, capacity and frequency
//! invariance, and lost idle time.

use crate::consts::{LOAD_AVG_MAX, SCHED_CAPACITY_SHIFT};

/// `v * s >> SCHED_CAPACITY_SHIFT`: scales `v` by a capacity out of 1024.
///
/// Follows sched.h: cap_scale() (v6.6-v6.12).
#[inline]
#[must_use]
pub const fn cap_scale(v: u64, s: u64) -> u64 {
    v.wrapping_mul(s) >> SCHED_CAPACITY_SHIFT
}

/// The time bases of one runqueue that PELT uses.
///
/// `clock_pelt` advances with `clock_task` scaled by the CPU's capacity and
/// current frequency while something runs, so a slow CPU accrues less util for
/// the same wall time; when the runqueue goes idle it jumps back to
/// `clock_task` (the "stolen" idle time shows up as idle time). If the CPU was
/// saturated, that jump is recorded in `lost_idle_time` instead, so the signal
/// does not see idle time that never existed. Every PELT signal of the rq
/// (cfs, rt, dl) is updated with [`RqClockPelt::rq_clock_pelt`].
///
/// All values are nanoseconds. Without CONFIG_CFS_BANDWIDTH,
/// `cfs_rq_clock_pelt() == rq_clock_pelt()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct RqClockPelt {
    /// `rq->clock`: the CPU's sched_clock at its last update.
    pub clock: u64,
    /// `rq->clock_task`: `clock` minus the time spent in interrupts.
    pub clock_task: u64,
    /// `rq->clock_pelt`.
    pub clock_pelt: u64,
    /// `rq->lost_idle_time`.
    pub lost_idle_time: u64,
    /// `rq->clock_idle`: `rq->clock` when the rq last went idle (for
    /// migrate_se_pelt_lag()).
    pub clock_idle: u64,
    /// `rq->clock_pelt_idle`: `rq_clock_pelt()` when the rq last went idle.
    pub clock_pelt_idle: u64,
}

/// `((LOAD_AVG_MAX - 1024) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX`: the
/// util_sum at or above which a runqueue counts as fully busy when it goes
/// idle (u32, as in the kernel).
pub const LOST_IDLE_UTIL_SUM_THRESHOLD: u32 =
    (((LOAD_AVG_MAX - 1024) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX) as u32;

impl RqClockPelt {
    /// Advances the rq clocks to `now` (the CPU's `sched_clock_cpu()`), of which
    /// `irq_delta` ns were spent in interrupts since the last update (clamped to
    /// the elapsed time). Time going backwards changes nothing. Returns the
    /// interrupt time accounted; when it is non-zero the kernel then calls
    /// `update_irq_load_avg(rq, irq_delta)` (see
    /// [`update_irq_load_avg`](crate::update_irq_load_avg), with [`RqClockPelt::clock`]).
    ///
    /// `curr_is_idle` is `is_idle_task(rq->curr)` during the elapsed time;
    /// `cpu_capacity` and `freq_capacity` are `arch_scale_cpu_capacity()` and
    /// `arch_scale_freq_capacity()` (1024 = biggest CPU at its top frequency).
    ///
    /// Follows core.c: update_rq_clock() and update_rq_clock_task() (v6.6-v6.12)
    /// with CONFIG_IRQ_TIME_ACCOUNTING and no steal time.
    #[inline]
    pub fn update_rq_clock(
        &mut self,
        now: u64,
        irq_delta: u64,
        curr_is_idle: bool,
        cpu_capacity: u64,
        freq_capacity: u64,
    ) -> u64 {
        let delta = now.wrapping_sub(self.clock);
        if (delta as i64) < 0 {
            return 0;
        }
        self.clock = self.clock.wrapping_add(delta);

        let irq_delta = irq_delta.min(delta);
        let delta = delta - irq_delta;
        self.clock_task = self.clock_task.wrapping_add(delta);
        self.update_rq_clock_pelt(delta, curr_is_idle, cpu_capacity, freq_capacity);
        irq_delta
    }

    /// Advances `clock_pelt` by `delta` ns of `clock_task` (already added to
    /// `clock_task`): scaled by the CPU's capacity, then by its frequency, while
    /// something runs; resynced to `clock_task` while the rq is idle.
    ///
    /// Follows pelt.h: update_rq_clock_pelt() (v6.6-v6.12).
    #[inline]
    pub fn update_rq_clock_pelt(
        &mut self,
        delta: u64,
        curr_is_idle: bool,
        cpu_capacity: u64,
        freq_capacity: u64,
    ) {
        if curr_is_idle {
            // The rq is idle, we can sync to clock_task.
            self.update_idle_clock_pelt();
            return;
        }
        // Scale the elapsed time to reflect the real amount of computation.
        let delta = cap_scale(delta, cpu_capacity);
        let delta = cap_scale(delta, freq_capacity);
        self.clock_pelt = self.clock_pelt.wrapping_add(delta);
    }

    /// Called when the rq is about to go idle (the end of pick_next_task_fair()
    /// with nothing to run): if the rq was saturated (the util_sums of its cfs,
    /// rt and dl signals reach [`LOST_IDLE_UTIL_SUM_THRESHOLD`]), the gap between
    /// `clock_task` and `clock_pelt` is lost idle time; then `clock_pelt` syncs to
    /// `clock_task`.
    ///
    /// Follows pelt.h: update_idle_rq_clock_pelt() (v6.6-v6.12), including its
    /// u32 sum of the three util_sums.
    pub fn update_idle_rq_clock_pelt(
        &mut self,
        cfs_util_sum: u32,
        rt_util_sum: u32,
        dl_util_sum: u32,
    ) {
        let util_sum = cfs_util_sum
            .wrapping_add(rt_util_sum)
            .wrapping_add(dl_util_sum);

        // A saturated rq has no idle time to steal: the potential idle time is lost.
        if util_sum >= LOST_IDLE_UTIL_SUM_THRESHOLD {
            self.lost_idle_time = self
                .lost_idle_time
                .wrapping_add(self.clock_task.wrapping_sub(self.clock_pelt));
        }
        self.update_idle_clock_pelt();
    }

    /// The rq is idle: sync `clock_pelt` to `clock_task` and record the idle
    /// timestamps.
    ///
    /// Follows pelt.h: _update_idle_rq_clock_pelt() (v6.6-v6.12).
    fn update_idle_clock_pelt(&mut self) {
        self.clock_pelt = self.clock_task;
        self.clock_idle = self.clock;
        self.clock_pelt_idle = self.rq_clock_pelt();
    }

    /// The time every PELT signal of this rq is updated with: `clock_pelt -
    /// lost_idle_time`.
    ///
    /// Follows pelt.h: rq_clock_pelt() (v6.6-v6.12); also `cfs_rq_clock_pelt()`
    /// without CONFIG_CFS_BANDWIDTH.
    #[inline]
    #[must_use]
    pub const fn rq_clock_pelt(&self) -> u64 {
        self.clock_pelt.wrapping_sub(self.lost_idle_time)
    }
}

#[cfg(test)]
mod tests;
