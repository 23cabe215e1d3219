//! The menu cpuidle governor: which idle state a CPU enters, and whether its tick stops.
//!
//! Follows drivers/cpuidle/governors/menu.c (v6.12): `menu_select()`, `menu_reflect()`,
//! `menu_update()`, `get_typical_interval()`, `which_bucket()`, `performance_multiplier()`,
//! in the kernel's integer arithmetic. Inputs the kernel reads from elsewhere come in
//! [`MenuInput`]: `tick_nohz_get_sleep_length()` (the next timer event, and the next
//! clock event including the tick), `tick_nohz_tick_stopped()`,
//! `cpuidle_governor_latency_req()`.
//!
//! Deliberate differences: no state is ever disabled by the user (`states_usage[i].disable`),
//! and `nr_iowait_cpu()` is 0 (lbsim has no block I/O), so the iowait half of the buckets is
//! never used and the performance multiplier is 1.

use lbsim_topology::IdleState;

/// `BUCKETS`: six magnitudes of the expected idle time, doubled by "iowait pending".
pub const BUCKETS: usize = 12;
/// `INTERVAL_SHIFT`.
pub const INTERVAL_SHIFT: u32 = 3;
/// `INTERVALS`: the ring of recent idle durations.
pub const INTERVALS: usize = 1 << INTERVAL_SHIFT;
/// `RESOLUTION`: the correction factors' fixed point, times [`DECAY`].
pub const RESOLUTION: u64 = 1024;
/// `DECAY`.
pub const DECAY: u64 = 8;
/// `MAX_INTERESTING`: idle periods longer than this count as perfectly predicted, ns.
pub const MAX_INTERESTING_NS: u64 = 50_000 * 1000;
/// `RESIDENCY_THRESHOLD_NS` (governors/gov.h): below it menu skips the timer query.
pub const RESIDENCY_THRESHOLD_NS: u64 = 15 * 1000;
/// `KTIME_MAX`.
pub const KTIME_MAX: u64 = i64::MAX as u64;
/// `NSEC_PER_USEC`.
const NSEC_PER_USEC: u64 = 1000;

/// What `menu_select()` reads besides its own state.
#[derive(Clone, Copy, Debug)]
pub struct MenuInput<'a> {
    /// The driver's states, state 0 first.
    pub states: &'a [IdleState],
    /// `cpuidle_governor_latency_req()`, ns (no PM QoS request: 2000 s).
    pub latency_req_ns: u64,
    /// `tick_nohz_get_sleep_length()`: time to the next timer event with the tick stopped, ns
    /// ([`KTIME_MAX`] when none is queued).
    pub sleep_length_ns: u64,
    /// Its `delta_next`: time to the next clock event (the tick, if it runs, or an earlier
    /// timer), ns.
    pub delta_tick_ns: u64,
    /// `tick_nohz_tick_stopped()`.
    pub tick_stopped: bool,
    /// `TICK_NSEC`.
    pub tick_nsec: u64,
    /// `nr_iowait_cpu()` (0 in lbsim).
    pub nr_iowaiters: u32,
}

/// `menu_select()`'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The state to enter.
    pub idx: usize,
    /// `*stop_tick`: whether the idle loop may stop the tick.
    pub stop_tick: bool,
}

/// How the last idle period ended, as `cpuidle_enter_state()` records it for
/// `menu_reflect()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastIdle {
    /// `dev->last_state_idx`.
    pub state_idx: usize,
    /// `dev->last_residency_ns`: from entry to the end of the exit, ns.
    pub residency_ns: u64,
    /// `tick_nohz_idle_got_tick()`: the tick woke the CPU.
    pub tick_wakeup: bool,
    /// `dev->poll_time_limit`: a polling state ran out of time.
    pub poll_time_limit: bool,
}

/// `struct menu_device`, one per CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MenuDevice {
    needs_update: bool,
    last: Option<LastIdle>,
    next_timer_ns: u64,
    bucket: usize,
    correction_factor: [u32; BUCKETS],
    intervals: [u32; INTERVALS],
    interval_ptr: usize,
}

impl Default for MenuDevice {
    /// `menu_enable_device()`: every correction factor at unity.
    fn default() -> MenuDevice {
        MenuDevice {
            needs_update: false,
            last: None,
            next_timer_ns: 0,
            bucket: 0,
            correction_factor: [(RESOLUTION * DECAY) as u32; BUCKETS],
            intervals: [0; INTERVALS],
            interval_ptr: 0,
        }
    }
}

/// `which_bucket()`.
pub fn which_bucket(duration_ns: u64, nr_iowaiters: u32) -> usize {
    let bucket = if nr_iowaiters > 0 { BUCKETS / 2 } else { 0 };
    let us = NSEC_PER_USEC;
    bucket
        + if duration_ns < 10 * us {
            0
        } else if duration_ns < 100 * us {
            1
        } else if duration_ns < 1000 * us {
            2
        } else if duration_ns < 10_000 * us {
            3
        } else if duration_ns < 100_000 * us {
            4
        } else {
            5
        }
}

/// `performance_multiplier()`: 1 + 10 per task waiting for I/O on this CPU.
fn performance_multiplier(nr_iowaiters: u32) -> u64 {
    1 + 10 * u64::from(nr_iowaiters)
}

impl MenuDevice {
    /// The recorded idle durations, us (for tests and traces).
    pub fn intervals(&self) -> &[u32; INTERVALS] {
        &self.intervals
    }

    /// The correction factor of `bucket` (8192 is 1.0).
    pub fn correction_factor(&self, bucket: usize) -> u32 {
        self.correction_factor[bucket]
    }

    /// `get_typical_interval()`: the average of the recent idle durations if they are
    /// steady enough (standard deviation at most 20 us, or at most a sixth of the average
    /// with at least 6 samples), dropping the largest ones while 7 or more remain;
    /// otherwise `UINT_MAX`.
    pub fn get_typical_interval(&self) -> u32 {
        let mut thresh = i32::MAX as u32;
        loop {
            let mut min = u32::MAX;
            let mut max = 0u32;
            let mut sum = 0u64;
            let mut divisor = 0u64;
            for &value in &self.intervals {
                if value <= thresh {
                    sum += u64::from(value);
                    divisor += 1;
                    max = max.max(value);
                    min = min.min(value);
                }
            }
            if max == 0 {
                return u32::MAX;
            }
            let avg = if divisor == INTERVALS as u64 {
                sum >> INTERVAL_SHIFT
            } else {
                sum / divisor
            };
            let mut variance = 0u64;
            for &value in &self.intervals {
                if value <= thresh {
                    let diff = i64::from(value) - avg as i64;
                    variance = variance.wrapping_add((diff * diff) as u64);
                }
            }
            if divisor == INTERVALS as u64 {
                variance >>= INTERVAL_SHIFT;
            } else {
                variance /= divisor;
            }
            if variance <= u64::MAX / 36
                && ((avg * avg > variance * 36 && divisor * 4 >= INTERVALS as u64 * 3)
                    || variance <= 400)
            {
                return avg as u32;
            }
            if divisor * 4 <= INTERVALS as u64 * 3 {
                return u32::MAX;
            }
            thresh = max - 1;
        }
    }

    /// `menu_select()`.
    pub fn select(&mut self, inp: &MenuInput<'_>) -> Selection {
        let states = inp.states;
        let mut latency_req = inp.latency_req_ns;
        let mut stop_tick = true;
        if self.needs_update {
            self.update(states, inp.tick_nsec);
            self.needs_update = false;
        }
        let nr_iowaiters = inp.nr_iowaiters;
        let mut predicted_ns = u64::from(self.get_typical_interval()) * NSEC_PER_USEC;
        let delta_tick;
        if predicted_ns > RESIDENCY_THRESHOLD_NS {
            // tick_nohz_get_sleep_length(&delta_tick).
            self.next_timer_ns = inp.sleep_length_ns;
            delta_tick = inp.delta_tick_ns;
            self.bucket = which_bucket(self.next_timer_ns, nr_iowaiters);
            // Round up the result for half microseconds.
            let scale = u128::from(RESOLUTION * DECAY * NSEC_PER_USEC);
            let timer_us = (scale / 2
                + u128::from(self.next_timer_ns) * u128::from(self.correction_factor[self.bucket]))
                / scale;
            let timer_ns = u64::try_from(timer_us * u128::from(NSEC_PER_USEC)).unwrap_or(u64::MAX);
            predicted_ns = predicted_ns.min(timer_ns);
        } else {
            // The next timer is not looked up: assume it far away and the tick half a tick
            // away.
            self.next_timer_ns = KTIME_MAX;
            delta_tick = inp.tick_nsec / 2;
            self.bucket = which_bucket(KTIME_MAX, nr_iowaiters);
        }
        if states.len() <= 1
            || latency_req == 0
            || self.next_timer_ns < states[1].target_residency_ns
            || latency_req < states[1].exit_latency_ns
        {
            // State 0 it is; keep the tick running if it polls.
            return Selection {
                idx: 0,
                stop_tick: !states.first().is_some_and(|s| s.polling),
            };
        }
        if inp.tick_stopped {
            // A short prediction is distrusted once the tick is stopped: a shallow state
            // could then last long.
            if predicted_ns < inp.tick_nsec {
                predicted_ns = self.next_timer_ns;
            }
        } else {
            let interactivity_req = predicted_ns / performance_multiplier(nr_iowaiters);
            latency_req = latency_req.min(interactivity_req);
        }
        let mut idx: Option<usize> = None;
        for (i, s) in states.iter().enumerate() {
            let cur = *idx.get_or_insert(i);
            if s.target_residency_ns > predicted_ns {
                // Use a physical state rather than polling, unless a timer is due soon.
                if states[cur].polling
                    && s.exit_latency_ns <= latency_req
                    && s.target_residency_ns <= self.next_timer_ns
                {
                    predicted_ns = s.target_residency_ns;
                    idx = Some(i);
                    break;
                }
                if predicted_ns < inp.tick_nsec {
                    break;
                }
                if !inp.tick_stopped {
                    // A shallow state and the tick kept: waking early does no harm, and
                    // the governor runs again at the next tick.
                    predicted_ns = states[cur].target_residency_ns;
                    break;
                }
                // The tick is stopped: rather than get stuck shallow, take this state if
                // its residency fits before the next clock event.
                let mut pick = cur;
                if states[cur].target_residency_ns < inp.tick_nsec
                    && s.target_residency_ns <= delta_tick
                {
                    pick = i;
                }
                return Selection {
                    idx: pick,
                    stop_tick,
                };
            }
            if s.exit_latency_ns > latency_req {
                break;
            }
            idx = Some(i);
        }
        let mut idx = idx.unwrap_or(0);
        // Keep the tick for a polling state or a predicted idle shorter than a tick.
        if (states[idx].polling || predicted_ns < inp.tick_nsec) && !inp.tick_stopped {
            stop_tick = false;
            if idx > 0 && states[idx].target_residency_ns > delta_tick {
                // The state's residency does not fit before the tick: go shallower.
                for i in (0..idx).rev() {
                    idx = i;
                    if states[i].target_residency_ns <= delta_tick {
                        break;
                    }
                }
            }
        }
        Selection { idx, stop_tick }
    }

    /// `menu_reflect()`: how the idle period ended; folded in at the next selection.
    pub fn reflect(&mut self, last: LastIdle) {
        self.last = Some(last);
        self.needs_update = true;
    }

    /// `menu_update()`: learn from the last idle period.
    fn update(&mut self, states: &[IdleState], tick_nsec: u64) {
        let Some(last) = self.last else {
            return;
        };
        let Some(target) = states.get(last.state_idx) else {
            return;
        };
        // Make sure the coefficients do not exceed unity.
        let measured_ns = self
            .measured(last, target, tick_nsec)
            .min(self.next_timer_ns);
        let mut new_factor = u64::from(self.correction_factor[self.bucket]);
        new_factor -= new_factor / DECAY;
        if self.next_timer_ns > 0 && measured_ns < MAX_INTERESTING_NS {
            new_factor += RESOLUTION * measured_ns / self.next_timer_ns;
        } else {
            // Idle so long that it counts as a perfect prediction.
            new_factor += RESOLUTION;
        }
        self.correction_factor[self.bucket] = new_factor as u32;
        // ktime_to_us(): truncating, stored as unsigned int.
        self.intervals[self.interval_ptr] = (measured_ns / NSEC_PER_USEC) as u32;
        self.interval_ptr = (self.interval_ptr + 1) % INTERVALS;
    }

    fn measured(&self, last: LastIdle, target: &IdleState, tick_nsec: u64) -> u64 {
        if last.tick_wakeup && self.next_timer_ns > tick_nsec {
            // The tick woke the CPU although no timer was due within it: assume the CPU
            // could have idled long.
            9 * MAX_INTERESTING_NS / 10
        } else if target.polling && last.poll_time_limit {
            // Polling ran out of time: assume the next timer would have woken it.
            self.next_timer_ns
        } else {
            let m = last.residency_ns;
            // Deduct the exit latency, unless the state was never really reached.
            if m > 2 * target.exit_latency_ns {
                m - target.exit_latency_ns
            } else {
                m / 2
            }
        }
    }
}
