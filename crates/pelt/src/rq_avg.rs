//! The rq-level rt, dl and irq utilization signals, and the capacity left to
//! the fair class (`scale_rt_capacity()`).
//!
//! Each is a plain [`SchedAvg`] whose load, runnable and running inputs are one
//! flag. The hardware-pressure signal (`update_hw_load_avg()`) is not modelled:
//! callers without HW pressure pass the CPU's full capacity as `max`.

use crate::avg::SchedAvg;
use crate::clock::cap_scale;

/// Updates `rq->avg_rt` to `now` (`rq_clock_pelt()`); `running` is whether an
/// rt task was `rq->curr` since the last update. Returns whether the average
/// was recomputed.
///
/// Follows pelt.c: update_rt_rq_load_avg() (v6.6-v6.12); a signal at zero with no rt
/// task running takes [`SchedAvg::update_decayed_idle`] (the same result).
#[inline]
pub fn update_rt_rq_load_avg(now: u64, avg_rt: &mut SchedAvg, running: bool) -> bool {
    if !running && avg_rt.load_avg_is_decayed() {
        return avg_rt.update_decayed_idle(now);
    }
    let r = u64::from(running);
    if avg_rt.update_load_sum(now, r, r, running) {
        avg_rt.update_load_avg(1);
        return true;
    }
    false
}

/// Updates `rq->avg_dl` to `now` (`rq_clock_pelt()`); `running` is whether a
/// deadline task was `rq->curr` since the last update.
///
/// Follows pelt.c: update_dl_rq_load_avg() (v6.6-v6.12); a signal at zero with no
/// deadline task running takes [`SchedAvg::update_decayed_idle`] (the same result).
#[inline]
pub fn update_dl_rq_load_avg(now: u64, avg_dl: &mut SchedAvg, running: bool) -> bool {
    if !running && avg_dl.load_avg_is_decayed() {
        return avg_dl.update_decayed_idle(now);
    }
    let r = u64::from(running);
    if avg_dl.update_load_sum(now, r, r, running) {
        avg_dl.update_load_avg(1);
        return true;
    }
    false
}

/// Accounts `running` ns of interrupt time ending at `rq_clock` (`rq->clock`,
/// not the PELT clock: irq time is not in `clock_task`). The time is first
/// scaled by frequency and capacity; the signal decays up to `rq_clock -
/// running` as idle and then accrues `running` as busy, i.e. the interrupts are
/// assumed to have happened just before the update.
///
/// Follows pelt.c: update_irq_load_avg() (v6.6-v6.12, CONFIG_HAVE_SCHED_AVG_IRQ); a
/// signal at zero with no irq time takes [`SchedAvg::update_decayed_idle`] (the same
/// result).
#[inline]
pub fn update_irq_load_avg(
    rq_clock: u64,
    avg_irq: &mut SchedAvg,
    running: u64,
    cpu_capacity: u64,
    freq_capacity: u64,
) -> bool {
    let running = cap_scale(running, freq_capacity);
    let running = cap_scale(running, cpu_capacity);
    if running == 0 && avg_irq.load_avg_is_decayed() {
        // The second update below has no time to account (lbsim: the decayed shortcut).
        return avg_irq.update_decayed_idle(rq_clock);
    }

    let mut ret = avg_irq.update_load_sum(rq_clock.wrapping_sub(running), 0, 0, false);
    ret |= avg_irq.update_load_sum(rq_clock, 1, 1, true);
    if ret {
        avg_irq.update_load_avg(1);
    }
    ret
}

/// `util * (max - irq) / max`: removes the irq share of the time from a
/// utilization measured in task time.
///
/// Follows sched.h: scale_irq_capacity() (v6.6-v6.12).
#[inline]
#[must_use]
pub const fn scale_irq_capacity(util: u64, irq: u64, max: u64) -> u64 {
    util.wrapping_mul(max.wrapping_sub(irq)) / max
}

/// The capacity left to the fair class on a CPU: from `max` take away the rt
/// and dl util, then scale by the share of time not spent in interrupts. 1 when
/// irq or rt+dl use it all. The caller stores `max(result, 1)` as
/// `rq->cpu_capacity` (the result is never 0 here, the kernel's
/// update_cpu_capacity() guards anyway).
///
/// `max` is `get_actual_cpu_capacity()` (v6.10+) or
/// `arch_scale_cpu_capacity()` (v6.6-v6.9); the two differ only under hardware
/// or cpufreq pressure, which is not modelled.
///
/// Follows fair.c: scale_rt_capacity() (v6.6-v6.12).
#[must_use]
pub fn scale_rt_capacity(
    max: u64,
    avg_rt: &SchedAvg,
    avg_dl: &SchedAvg,
    avg_irq: &SchedAvg,
) -> u64 {
    let irq = avg_irq.util_avg;
    if irq >= max {
        return 1;
    }
    // avg_rt.util_avg and avg_dl.util_avg track binary running signals.
    let used = avg_rt.util_avg.wrapping_add(avg_dl.util_avg);
    if used >= max {
        return 1;
    }
    let free = max - used;
    scale_irq_capacity(free, irq, max)
}

#[cfg(test)]
mod tests;
