//! `struct sched_avg` and the core PELT arithmetic of kernel/sched/pelt.c.

use crate::consts::{
    DECAY_CUTOFF_PERIODS, LOAD_AVG_MAX, LOAD_AVG_PERIOD, PELT_MIN_DIVIDER, PELT_PERIOD_UNITS,
    RUNNABLE_AVG_YN_INV, SCHED_CAPACITY_SHIFT, UTIL_AVG_UNCHANGED,
};

/// One PELT signal: the kernel's `struct sched_avg`.
///
/// The same structure tracks a task entity (`se->avg`), a cfs_rq
/// (`cfs_rq->avg`) and the rq-level rt, dl and irq signals. Field types and
/// widths are the kernel's on a 64-bit build (`unsigned long` is `u64`).
///
/// Follows include/linux/sched.h: `struct sched_avg` (v6.9-v6.12 layout, with
/// the single-field `util_est`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SchedAvg {
    /// PELT time (ns) up to which the sums are accounted; only whole 1024-ns
    /// units are ever consumed. `0` on a task entity means "not attached to any
    /// cfs_rq yet" (new or migrated task), see `DO_ATTACH`.
    pub last_update_time: u64,
    /// Sum of `load * contrib` (for an entity: runnable time; for a cfs_rq:
    /// queued weight times time).
    pub load_sum: u64,
    /// Sum of `runnable * contrib << SCHED_CAPACITY_SHIFT`.
    pub runnable_sum: u64,
    /// Sum of `contrib << SCHED_CAPACITY_SHIFT` while running.
    pub util_sum: u32,
    /// Part of the current (incomplete) period already accounted, in 1024-ns
    /// units (`0..1024`).
    pub period_contrib: u32,
    /// `weight * load_sum / divider`.
    pub load_avg: u64,
    /// `runnable_sum / divider`.
    pub runnable_avg: u64,
    /// `util_sum / divider`.
    pub util_avg: u64,
    /// Estimated utilization: for a task the EWMA of its util_avg at dequeue
    /// (bit 31 is [`UTIL_AVG_UNCHANGED`]); for a cfs_rq the sum over its
    /// enqueued tasks.
    pub util_est: u32,
}

/// `val * y^n`, truncated.
///
/// Follows pelt.c: decay_load() (v6.6-v6.12): zero beyond `LOAD_AVG_PERIOD * 63`
/// periods, one right shift per whole half-life, then a 64x32-bit multiply by
/// the table entry keeping the high part (`mul_u64_u32_shr(val, inv, 32)`).
#[inline]
#[must_use]
pub const fn decay_load(val: u64, n: u64) -> u64 {
    DecayBy::periods(n).load(val)
}

/// [`decay_load`] by one `n`, split once into its shift (whole half-lives) and its table
/// entry: [`DecayBy::load`] of a value is `decay_load(value, n)`. Beyond the cut-off both
/// are 0, and the product by 0 is the 0 decay_load() returns there; below a half-life the
/// shift is 0. lbsim's: accumulate_sum() decays three sums and two segment terms by the same
/// `n`, and splits it once.
#[derive(Clone, Copy)]
struct DecayBy {
    shift: u32,
    inv: u32,
}

impl DecayBy {
    /// The split of `n` periods.
    #[inline]
    const fn periods(n: u64) -> DecayBy {
        if n > DECAY_CUTOFF_PERIODS {
            return DecayBy { shift: 0, inv: 0 };
        }
        let n = n as u32;
        DecayBy {
            shift: n / LOAD_AVG_PERIOD,
            inv: RUNNABLE_AVG_YN_INV[(n % LOAD_AVG_PERIOD) as usize],
        }
    }

    /// `decay_load(val, n)`.
    #[inline]
    const fn load(self, val: u64) -> u64 {
        mul_u64_u32_shr(val >> self.shift, self.inv, 32)
    }
}

/// `(a * mul) >> shift` with a full 96-bit product, truncated to 64 bits.
///
/// Follows include/linux/math64.h: mul_u64_u32_shr().
#[inline]
const fn mul_u64_u32_shr(a: u64, mul: u32, shift: u32) -> u64 {
    ((a as u128 * mul as u128) >> shift) as u64
}

/// The contribution of a span that crossed `periods` period boundaries:
/// `d1 * y^p + 1024 * (y + ... + y^(p-1)) + d3`.
///
/// Follows pelt.c: __accumulate_pelt_segments() (v6.6-v6.12), including its
/// u32 truncations; the middle term is `LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX,
/// p) - 1024`.
#[inline]
#[must_use]
pub const fn accumulate_pelt_segments(periods: u64, d1: u32, d3: u32) -> u32 {
    segments_by(DecayBy::periods(periods), d1, d3)
}

/// [`accumulate_pelt_segments`] with its periods split ([`DecayBy`]).
#[inline]
const fn segments_by(decay: DecayBy, d1: u32, d3: u32) -> u32 {
    let c1 = decay.load(d1 as u64) as u32;
    let c2 = LOAD_AVG_MAX
        .wrapping_sub(decay.load(LOAD_AVG_MAX))
        .wrapping_sub(1024) as u32;
    let c3 = d3;
    c1.wrapping_add(c2).wrapping_add(c3)
}

/// Maximum value `load_sum` (and, shifted by [`SCHED_CAPACITY_SHIFT`],
/// `util_sum` and `runnable_sum`) of a 0/1 signal can hold at a position
/// `period_contrib` inside the current period; the same value as
/// [`SchedAvg::get_pelt_divider`].
#[inline]
#[must_use]
pub const fn pelt_divider(period_contrib: u32) -> u32 {
    (PELT_MIN_DIVIDER + period_contrib as u64) as u32
}

impl SchedAvg {
    /// Accumulates `delta` 1024-ns units into the sums, decaying them first if
    /// period boundaries were crossed. Returns the number of boundaries crossed.
    ///
    /// Follows pelt.c: accumulate_sum() (v6.6-v6.12): `load`, `runnable` are
    /// multipliers, `running` a flag; when `load` is 0 no contribution is computed
    /// (the caller has already zeroed `runnable` and `running`).
    #[inline]
    pub fn accumulate_sum(&mut self, delta: u64, load: u64, runnable: u64, running: bool) -> u64 {
        let mut contrib = delta as u32; // p == 0 -> delta < 1024
        let mut delta = delta.wrapping_add(u64::from(self.period_contrib));
        let periods = delta / PELT_PERIOD_UNITS;

        // Step 1: decay old *_sum if we crossed period boundaries.
        if periods != 0 {
            let decay = DecayBy::periods(periods);
            self.load_sum = decay.load(self.load_sum);
            self.runnable_sum = decay.load(self.runnable_sum);
            self.util_sum = decay.load(u64::from(self.util_sum)) as u32;

            // Step 2.
            delta %= PELT_PERIOD_UNITS;
            if load != 0 {
                contrib = segments_by(decay, 1024 - self.period_contrib, delta as u32);
            }
        }
        self.period_contrib = delta as u32;

        if load != 0 {
            self.load_sum = self
                .load_sum
                .wrapping_add(load.wrapping_mul(u64::from(contrib)));
        }
        if runnable != 0 {
            self.runnable_sum = self
                .runnable_sum
                .wrapping_add(runnable.wrapping_mul(u64::from(contrib)) << SCHED_CAPACITY_SHIFT);
        }
        if running {
            self.util_sum = self.util_sum.wrapping_add(contrib << SCHED_CAPACITY_SHIFT);
        }
        periods
    }

    /// Brings the sums up to `now` (ns). Returns `true` only if at least one
    /// period boundary was crossed, i.e. when the averages should be recomputed
    /// with [`SchedAvg::update_load_avg`].
    ///
    /// Follows pelt.c: ___update_load_sum() (v6.6-v6.12): time going backwards
    /// resyncs `last_update_time` and changes nothing else; only whole 1024-ns
    /// units are consumed; `load == 0` forces `runnable` and `running` to 0.
    #[inline]
    pub fn update_load_sum(&mut self, now: u64, load: u64, runnable: u64, running: bool) -> bool {
        let Some(delta) = self.consume_units(now) else {
            return false;
        };

        let (runnable, running) = if load == 0 {
            (0, false)
        } else {
            (runnable, running)
        };

        self.accumulate_sum(delta, load, runnable, running) != 0
    }

    /// The head of ___update_load_sum(): the whole 1024-ns units elapsed since
    /// `last_update_time`, which moves on by them; `None` when none elapsed, or when time
    /// went backwards (then `last_update_time` resyncs to `now`).
    ///
    /// Follows pelt.c: ___update_load_sum() (v6.6-v6.12), its first lines.
    #[inline]
    fn consume_units(&mut self, now: u64) -> Option<u64> {
        let delta = now.wrapping_sub(self.last_update_time);
        // This should only happen when time goes backwards.
        if (delta as i64) < 0 {
            self.last_update_time = now;
            return None;
        }
        // 1024 ns is the unit of measurement.
        let delta = delta >> 10;
        if delta == 0 {
            return None;
        }
        self.last_update_time = self.last_update_time.wrapping_add(delta << 10);
        Some(delta)
    }

    /// [`SchedAvg::update_load_sum`] then, if a period boundary was crossed,
    /// [`SchedAvg::update_load_avg`], for a signal whose sums are all zero and that
    /// accrues nothing (`load == 0`): the same result (zero sums decay to zero, and zero
    /// sums give zero averages) with only the time bookkeeping (`last_update_time`,
    /// `period_contrib`) done. lbsim's: an idle CPU's rt, dl and irq signals are updated
    /// at every blocked-load update and are zero when no such task or interrupt ran.
    #[inline]
    pub fn update_decayed_idle(&mut self, now: u64) -> bool {
        debug_assert!(self.load_avg_is_decayed());
        let Some(delta) = self.consume_units(now) else {
            return false;
        };
        let delta = delta.wrapping_add(u64::from(self.period_contrib));
        self.period_contrib = (delta % PELT_PERIOD_UNITS) as u32;
        if delta / PELT_PERIOD_UNITS == 0 {
            return false;
        }
        self.load_avg = 0;
        self.runnable_avg = 0;
        self.util_avg = 0;
        true
    }

    /// Recomputes the averages from the sums: `load_avg = load * load_sum /
    /// divider`, `runnable_avg = runnable_sum / divider`, `util_avg = util_sum /
    /// divider`.
    ///
    /// Follows pelt.c: ___update_load_avg() (v6.6-v6.12).
    #[inline]
    pub fn update_load_avg(&mut self, load: u64) {
        let divider = u64::from(self.get_pelt_divider());
        self.load_avg = load.wrapping_mul(self.load_sum) / divider;
        self.runnable_avg = self.runnable_sum / divider;
        self.util_avg = u64::from(self.util_sum) / divider;
    }

    /// The maximum reachable sum at the current position in the period:
    /// `LOAD_AVG_MAX - 1024 + period_contrib`.
    ///
    /// Follows pelt.h: get_pelt_divider() (v6.6-v6.12).
    #[inline]
    #[must_use]
    pub const fn get_pelt_divider(&self) -> u32 {
        pelt_divider(self.period_contrib)
    }

    /// The task's utilization estimate without the [`UTIL_AVG_UNCHANGED`] flag.
    ///
    /// Follows fair.c: _task_util_est() (v6.9-v6.12).
    #[inline]
    #[must_use]
    pub const fn util_est_value(&self) -> u32 {
        self.util_est & !UTIL_AVG_UNCHANGED
    }

    /// Whether every signal has fully decayed: all sums zero (the averages are
    /// then necessarily zero too).
    ///
    /// Follows fair.c: load_avg_is_decayed() (v6.6-v6.12), without its
    /// consistency warning.
    #[inline]
    #[must_use]
    pub const fn load_avg_is_decayed(&self) -> bool {
        self.load_sum == 0 && self.util_sum == 0 && self.runnable_sum == 0
    }
}

#[cfg(test)]
mod tests;
