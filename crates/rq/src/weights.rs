//! Load weights and the fixed-point `delta * weight / lw.weight` of the fair class.
//!
//! Follows kernel/sched/core.c: `sched_prio_to_weight[]`, `sched_prio_to_wmult[]`,
//! `set_load_weight()` and kernel/sched/fair.c: `__update_inv_weight()`, `__calc_delta()`,
//! `calc_delta_fair()` (v6.12; identical in v6.6).
//!
//! **Weights are stored in the 10-bit domain.** On 64-bit kernels `se->load.weight` holds
//! `scale_load(w) = w << 10` (so `NICE_0_LOAD` is 2^20), and every consumer of interest goes
//! through `scale_load_down()` first. lbsim stores `w` itself (1024 for nice 0). The results are
//! bit-identical: `__calc_delta()` starts from `scale_load_down(weight)`, `__update_inv_weight()`
//! divides by `scale_load_down(lw->weight)`, PELT and EEVDF use `scale_load_down()` / `se_weight()`,
//! and the ratios of scaled weights (`reweight_entity()`'s `vlag * old / new`) truncate the same
//! way because the common factor 1024 cancels exactly. The one place the kernel's scaled value
//! differs, `scale_load_down(w) = max(2, w >> 10)`, is kept by [`scale_load_down`].

pub use lbsim_kernel::weights::{
    MAX_NICE, MIN_NICE, SCHED_PRIO_TO_WEIGHT, SCHED_PRIO_TO_WMULT, WEIGHT_IDLEPRIO, WMULT_CONST,
    WMULT_IDLEPRIO, WMULT_SHIFT,
};
pub use lbsim_kernel::{NICE_0_LOAD, SCHED_FIXEDPOINT_SHIFT};

/// `struct load_weight`: a weight and its cached inverse (0 = not computed yet).
///
/// `weight` is in the 10-bit domain (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadWeight {
    /// `load_weight::weight` (unscaled).
    pub weight: u64,
    /// `load_weight::inv_weight`: `2^32 / weight`, or 0 when it must be recomputed.
    pub inv_weight: u32,
}

impl LoadWeight {
    /// The weight of a task of the given nice value and policy class.
    ///
    /// Follows core.c: `set_load_weight()` (v6.12): `SCHED_IDLE` tasks get `WEIGHT_IDLEPRIO` and
    /// `WMULT_IDLEPRIO`; the others index both tables with `nice + 20`. `nice` is clamped to
    /// `[MIN_NICE, MAX_NICE]` as `PRIO_TO_NICE(static_prio)` always is.
    pub fn for_task(nice: i32, idle_policy: bool) -> LoadWeight {
        if idle_policy {
            return LoadWeight {
                weight: WEIGHT_IDLEPRIO,
                inv_weight: WMULT_IDLEPRIO,
            };
        }
        let idx = (nice.clamp(MIN_NICE, MAX_NICE) - MIN_NICE) as usize;
        LoadWeight {
            weight: u64::from(SCHED_PRIO_TO_WEIGHT[idx]),
            inv_weight: SCHED_PRIO_TO_WMULT[idx],
        }
    }

    /// Follows fair.c: `update_load_add()`: add and invalidate the inverse.
    pub fn add(&mut self, inc: u64) {
        self.weight += inc;
        self.inv_weight = 0;
    }

    /// Follows fair.c: `update_load_sub()`: subtract and invalidate the inverse.
    pub fn sub(&mut self, dec: u64) {
        debug_assert!(
            self.weight >= dec,
            "load_weight underflow: {} - {}",
            self.weight,
            dec
        );
        self.weight -= dec;
        self.inv_weight = 0;
    }

    /// Follows fair.c: `update_load_set()`.
    pub fn set(&mut self, w: u64) {
        self.weight = w;
        self.inv_weight = 0;
    }

    /// The inverse weight `__calc_delta()` uses: the cached one, or the one
    /// `__update_inv_weight()` would compute.
    ///
    /// Follows fair.c: `__update_inv_weight()` (v6.12). The kernel caches the result in place;
    /// lbsim computes it without mutating, which gives the same value.
    pub fn inv_weight(&self) -> u32 {
        if self.inv_weight != 0 {
            return self.inv_weight;
        }
        let w = scale_load_down(self.weight);
        if w >= u64::from(WMULT_CONST) {
            1
        } else {
            // w == 0 gives WMULT_CONST; otherwise WMULT_CONST / w fits in u32.
            u64::from(WMULT_CONST)
                .checked_div(w)
                .map_or(WMULT_CONST, |q| q as u32)
        }
    }
}

/// `scale_load_down()` applied to a weight already in lbsim's 10-bit domain:
/// `max(2, w)` for a non-zero weight, 0 for 0 (the kernel's `max(2UL, w >> 10)`).
pub fn scale_load_down(w: u64) -> u64 {
    if w == 0 { 0 } else { w.max(2) }
}

/// The kernel's `scale_load_down()` of a scaled weight (a group entity's or a cfs_rq's sum
/// of them): `max(2, w >> 10)` for a non-zero weight, 0 for 0.
pub fn scale_load_down_scaled(w: u64) -> u64 {
    if w == 0 {
        0
    } else {
        (w >> SCHED_FIXEDPOINT_SHIFT).max(2)
    }
}

/// `fls()`: the 1-based index of the most significant set bit, 0 for 0.
fn fls(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// `delta_exec * weight / lw.weight` in the kernel's fixed point.
///
/// Follows fair.c: `__calc_delta()` (v6.12, 64-bit). `fact = scale_load_down(weight)` is
/// multiplied by the 32-bit inverse of `lw`; whenever a product spills over 32 bits it is shifted
/// right by `fls()` of its high word and the final shift shrinks to match, then
/// `mul_u64_u32_shr(delta_exec, fact, shift)` is taken with a 128-bit product.
pub fn calc_delta(delta_exec: u64, weight: u64, lw: &LoadWeight) -> u64 {
    let mut fact = scale_load_down(weight);
    let mut shift = WMULT_SHIFT;
    let inv = lw.inv_weight();

    let fact_hi = (fact >> 32) as u32;
    if fact_hi != 0 {
        let fs = fls(fact_hi);
        shift -= fs;
        fact >>= fs;
    }

    // mul_u32_u32(): both operands are 32-bit here.
    fact = u64::from(fact as u32) * u64::from(inv);

    let fact_hi = (fact >> 32) as u32;
    if fact_hi != 0 {
        let fs = fls(fact_hi);
        shift -= fs;
        fact >>= fs;
    }

    mul_u64_u32_shr(delta_exec, fact as u32, shift)
}

/// `mul_u64_u32_shr()`: `(a * mul) >> shift` with a 128-bit intermediate.
pub fn mul_u64_u32_shr(a: u64, mul: u32, shift: u32) -> u64 {
    ((u128::from(a) * u128::from(mul)) >> shift) as u64
}

/// Virtual time for `delta` ns of real time run by an entity of weight `lw`:
/// `delta * NICE_0_LOAD / w`, exact for nice 0.
///
/// Follows fair.c: `calc_delta_fair()` (v6.12).
pub fn calc_delta_fair(delta: u64, lw: &LoadWeight) -> u64 {
    if lw.weight != NICE_0_LOAD {
        calc_delta(delta, NICE_0_LOAD, lw)
    } else {
        delta
    }
}

#[cfg(test)]
mod tests;
