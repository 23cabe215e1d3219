//! PELT constants and the `runnable_avg_yN_inv` decay table.
//!
//! The table and `LOAD_AVG_MAX` are generated at compile time the way
//! Documentation/scheduler/sched-pelt.c generates kernel/sched/sched-pelt.h
//! (HALFLIFE 32, SHIFT 32). The generator computes `y = 0.5^(1/32)` and the
//! powers `y^i` in double precision; here the same real numbers are computed in
//! 2^-62 fixed point with integer arithmetic only (a bisection for the 32nd root
//! of 1/2, then repeated multiplication), and each entry is truncated exactly as
//! the generator's `unsigned int` conversion truncates. `LOAD_AVG_MAX` then comes
//! from the generator's own integer recurrence `max = ((max * y_inv) >> 32) +
//! 1024`. The unit tests check every entry and `LOAD_AVG_MAX` against the values
//! the kernel publishes in sched-pelt.h.

/// Half-life of the PELT series in periods: `y^LOAD_AVG_PERIOD == 1/2`.
///
/// Follows sched-pelt.h: `LOAD_AVG_PERIOD` (v6.6-v6.12).
pub const LOAD_AVG_PERIOD: u32 = 32;

pub use lbsim_kernel::{SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SHIFT, SCHED_FIXEDPOINT_SHIFT};

/// Length of one PELT period in 1024-ns units (so one period is 1024 * 1024 ns).
pub const PELT_PERIOD_UNITS: u64 = 1024;

/// `n > LOAD_AVG_PERIOD * 63` periods decay any u64 to 0 (`decay_load()` cut-off).
pub const DECAY_CUTOFF_PERIODS: u64 = LOAD_AVG_PERIOD as u64 * 63;

/// Bits of fraction in the fixed-point numbers used by the table generator.
const FRAC_BITS: u32 = 62;
/// 1.0 in the generator's fixed point.
const FIX_ONE: u128 = 1 << FRAC_BITS;
/// 0.5 in the generator's fixed point.
const FIX_HALF: u128 = 1 << (FRAC_BITS - 1);

/// `x^32` in fixed point (five truncating squarings).
const fn fix_pow32(x: u128) -> u128 {
    let mut v = x;
    let mut i = 0;
    while i < 5 {
        v = (v * v) >> FRAC_BITS;
        i += 1;
    }
    v
}

/// `y = 0.5^(1/32)` in 2^-62 fixed point: the largest `y` whose (truncated)
/// 32nd power does not exceed 1/2, found by bisection.
const fn fix_y() -> u128 {
    // Invariant: fix_pow32(lo) <= 1/2 < fix_pow32(hi).
    let mut lo = FIX_HALF;
    let mut hi = FIX_ONE;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fix_pow32(mid) <= FIX_HALF {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The table: entry `i` is `(u32)((2^32 - 1) * y^i)`, truncated.
const fn gen_runnable_avg_yn_inv() -> [u32; LOAD_AVG_PERIOD as usize] {
    let y = fix_y();
    let mut table = [0u32; LOAD_AVG_PERIOD as usize];
    let mut pow = FIX_ONE; // y^0
    let mut i = 0;
    while i < LOAD_AVG_PERIOD as usize {
        table[i] = ((u32::MAX as u128 * pow) >> FRAC_BITS) as u32;
        pow = (pow * y) >> FRAC_BITS;
        i += 1;
    }
    table
}

/// `LOAD_AVG_MAX` by the generator's integer recurrence, with
/// `y_inv = (u32)((2^32 - 1) * y)` (the table's entry 1): starting from 1024,
/// repeat `max = ((max * y_inv) >> 32) + 1024` until it stops changing.
/// Returns the converged value and the number of steps that changed it.
const fn gen_load_avg_max(y_inv: u32) -> (u64, u32) {
    let mut max: u64 = 1024;
    let mut steps = 0;
    loop {
        let next = ((max * y_inv as u64) >> 32) + 1024;
        if next == max {
            return (max, steps);
        }
        max = next;
        steps += 1;
    }
}

/// Precomputed fixed inverse multiplies for multiplication by `y^n`,
/// `n < LOAD_AVG_PERIOD`: entry `n` is `floor((2^32 - 1) * y^n)`.
///
/// Follows sched-pelt.h: `runnable_avg_yN_inv[]` (v6.6-v6.12), generated as
/// Documentation/scheduler/sched-pelt.c does (see the module doc).
pub const RUNNABLE_AVG_YN_INV: [u32; LOAD_AVG_PERIOD as usize] = gen_runnable_avg_yn_inv();

const LOAD_AVG_MAX_GEN: (u64, u32) = gen_load_avg_max(RUNNABLE_AVG_YN_INV[1]);

/// The maximum possible PELT sum of an always-running signal (47742), the
/// converged value of `1024 * (1 + y + y^2 + ...)` in the generator's
/// truncating integer arithmetic.
///
/// Follows sched-pelt.h: `LOAD_AVG_MAX` (v6.6-v6.12).
pub const LOAD_AVG_MAX: u64 = LOAD_AVG_MAX_GEN.0;

/// Number of steps of the `LOAD_AVG_MAX` recurrence that change its value
/// (346; the generator's `LOAD_AVG_MAX_N`, once published by the kernel, is
/// this minus one).
pub const LOAD_AVG_MAX_STEPS: u32 = LOAD_AVG_MAX_GEN.1;

/// The smallest PELT divider: `LOAD_AVG_MAX - 1024`.
///
/// Follows pelt.h: `PELT_MIN_DIVIDER` (v6.6-v6.12).
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;

/// `UTIL_EST_WEIGHT_SHIFT`: a new util_est sample weighs 1/4.
///
/// Follows include/linux/sched.h (v6.9-v6.12).
pub const UTIL_EST_WEIGHT_SHIFT: u32 = 2;

/// `UTIL_AVG_UNCHANGED`: the most significant bit of `sched_avg.util_est`,
/// set when util_est was last updated and cleared by the next PELT update of
/// util_avg (`cfs_se_util_change()`).
///
/// Follows include/linux/sched.h (v6.9-v6.12 single-field layout).
pub const UTIL_AVG_UNCHANGED: u32 = 0x8000_0000;

/// `UTIL_EST_MARGIN`: ~1% of the capacity scale (10).
///
/// Follows fair.c: `UTIL_EST_MARGIN` (v6.9-v6.12).
pub const UTIL_EST_MARGIN: u32 = (SCHED_CAPACITY_SCALE / 100) as u32;

#[cfg(test)]
mod tests;
