//! Task groups: the share arithmetic and the PELT propagation of group scheduling
//! (CONFIG_FAIR_GROUP_SCHED, CONFIG_SMP, 64-bit), as pure functions over the state the
//! kernel keeps per task group, per cfs_rq and per group entity.
//!
//! It follows kernel/sched/fair.c of v6.12 (`calc_group_shares()`, `update_cfs_group()`,
//! `update_tg_load_avg()`, `clear_tg_load_avg()`, the `update_tg_cfs_*()` family,
//! `propagate_entity_load_avg()`, `skip_blocked_update()`, `cfs_rq_is_decayed()`,
//! `update_cfs_rq_h_load()`, `task_h_load()`), the group parts of `update_load_avg()`,
//! `update_cfs_rq_load_avg()` and attach/detach, `__sched_group_set_shares()`'s clamp, and
//! `cpu_weight_write_u64()` of core.c with `sched_weight_from_cgroup()` of sched.h.
//!
//! Units. `tg->shares` and a group entity's `se->load.weight` are in the kernel's scaled
//! 64-bit form ([`scale_load`]: nice 0 is `1 << 20`): a group entity's weight is a quotient
//! whose low 10 bits are not zero in general, and a parent cfs_rq's `load.weight` sums those
//! scaled values before `scale_load_down()`, so the 10-bit domain lbsim-rq keeps for tasks is
//! not exact for group entities. Everything PELT multiplies by is, as in the rest of this
//! crate, `se_weight()` = [`scale_load_down`](crate::scale_load_down) of that, and a cfs_rq's weight is passed as
//! `scale_load_down(cfs_rq->load.weight)` (as [`CfsRqLoad::load_weight`] is).
//!
//! Who keeps what: [`TaskGroup`] is the per-group state shared by all CPUs (`tg->shares`,
//! `tg->load_avg`); [`CfsRqTg`] the group-scheduling fields of one `struct cfs_rq` (the root
//! cfs_rq has them too); the group entity's own signal is an ordinary [`SchedAvg`]. Nothing
//! here walks a hierarchy: the caller passes the levels ([`GroupRq`], [`HLoadLevel`]).
//!
//! Deliberately left out: CFS bandwidth (`throttled_hierarchy()` is never true), the
//! `!CONFIG_SMP` variants, 32-bit kernels, the locking and `READ_ONCE`/`WRITE_ONCE`
//! (one CPU's view, sequentially), tracepoints, and sched_ext's `scx_group_set_weight()`.

use crate::avg::SchedAvg;
use crate::cfs_rq::{
    CfsRqAvg, CfsRqLoad, LoadAvgUpdate, SeLoad, UpdateFlags, floor_load_sum, floor_runnable_sum,
    floor_util_sum, update_load_avg_se,
};
use crate::consts::{SCHED_CAPACITY_SHIFT, SCHED_FIXEDPOINT_SHIFT};
use crate::error::PeltError;

/// `MIN_SHARES`: the smallest `tg->shares` (before [`scale_load`]), and, unscaled, the floor
/// of [`calc_group_shares`].
///
/// Follows sched.h: `MIN_SHARES` (v6.12, `1UL << 1`).
pub const MIN_SHARES: u64 = 1 << 1;

/// `MAX_SHARES`: the largest `tg->shares` before [`scale_load`].
///
/// Follows sched.h: `MAX_SHARES` (v6.12, `1UL << 18`).
pub const MAX_SHARES: u64 = 1 << 18;

/// `CGROUP_WEIGHT_MIN`, `CGROUP_WEIGHT_DFL`, `CGROUP_WEIGHT_MAX`: the cgroup v2 `cpu.weight`
/// range and default.
///
/// Follows include/linux/cgroup.h (v6.12).
pub const CGROUP_WEIGHT_MIN: u64 = 1;
/// See [`CGROUP_WEIGHT_MIN`].
pub const CGROUP_WEIGHT_DFL: u64 = 100;
/// See [`CGROUP_WEIGHT_MIN`].
pub const CGROUP_WEIGHT_MAX: u64 = 10_000;

/// `NSEC_PER_MSEC`: the rate limit of [`update_tg_load_avg`].
pub const NSEC_PER_MSEC: u64 = 1_000_000;

/// `scale_load(w)` on a 64-bit kernel: `w << SCHED_FIXEDPOINT_SHIFT`.
///
/// Follows sched.h: scale_load() (v6.12, CONFIG_64BIT).
#[inline]
#[must_use]
pub const fn scale_load(w: u64) -> u64 {
    w << SCHED_FIXEDPOINT_SHIFT
}

/// `NICE_0_LOAD` in the kernel's scaled form: a new group's `tg->shares` and its entities'
/// initial `load.weight` (`alloc_fair_sched_group()`, `init_tg_cfs_entry()`), and
/// `ROOT_TASK_GROUP_LOAD`.
pub const NICE_0_LOAD_SCALED: u64 = scale_load(1024);

/// `DIV_ROUND_CLOSEST_ULL(x, d)` for unsigned operands: `(x + d / 2) / d`.
#[inline]
const fn div_round_closest_ull(x: u64, d: u64) -> u64 {
    x.wrapping_add(d / 2) / d
}

/// A cgroup v2 `cpu.weight` (1..10000, default 100) as a scheduler weight in the 10-bit
/// domain: `round(cgrp_weight * 1024 / 100)`, so 100 gives 1024 (nice 0), 1 gives 10, 10000
/// gives 102400.
///
/// Follows sched.h: sched_weight_from_cgroup() (v6.12; until v6.11 the same expression was
/// inline in core.c's cpu_weight_write_u64()).
#[inline]
#[must_use]
pub const fn sched_weight_from_cgroup(cgrp_weight: u64) -> u64 {
    div_round_closest_ull(cgrp_weight.wrapping_mul(1024), CGROUP_WEIGHT_DFL)
}

/// The `cpu.weight` a 10-bit-domain weight reads back as, clamped to 1..10000.
///
/// Follows sched.h: sched_weight_to_cgroup() (v6.12).
#[inline]
#[must_use]
pub const fn sched_weight_to_cgroup(weight: u64) -> u64 {
    let w = div_round_closest_ull(weight.wrapping_mul(CGROUP_WEIGHT_DFL), 1024);
    if w < CGROUP_WEIGHT_MIN {
        CGROUP_WEIGHT_MIN
    } else if w > CGROUP_WEIGHT_MAX {
        CGROUP_WEIGHT_MAX
    } else {
        w
    }
}

/// The `tg->shares` a write of `cpu.weight` sets: out of range is an error (`-ERANGE`);
/// otherwise [`sched_weight_from_cgroup`], [`scale_load`], then clamped to
/// `[scale_load(MIN_SHARES), scale_load(MAX_SHARES)]` (a no-op for 1..10000, whose weights
/// are 10..102400).
///
/// Follows core.c: cpu_weight_write_u64() and fair.c: __sched_group_set_shares()'s clamp
/// (v6.12). The root group refuses (`-EINVAL`) and an unchanged value returns early in the
/// kernel; both are the caller's, as is reweighting the group's entities afterwards.
///
/// # Errors
///
/// [`PeltError::CpuWeightOutOfRange`] outside 1..=10000.
pub fn tg_shares_from_cpu_weight(cgrp_weight: u64) -> Result<u64, PeltError> {
    if !(CGROUP_WEIGHT_MIN..=CGROUP_WEIGHT_MAX).contains(&cgrp_weight) {
        return Err(PeltError::CpuWeightOutOfRange {
            weight: cgrp_weight,
        });
    }
    let shares = scale_load(sched_weight_from_cgroup(cgrp_weight));
    Ok(shares.clamp(scale_load(MIN_SHARES), scale_load(MAX_SHARES)))
}

/// The state of a task group that all CPUs share.
///
/// Follows sched.h: the `shares` and `load_avg` fields of `struct task_group` (v6.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskGroup {
    /// `tg == &root_task_group`: the root group, whose `load_avg` is never maintained.
    pub root: bool,
    /// `tg->shares`, scaled ([`scale_load`]).
    pub shares: u64,
    /// `tg->load_avg` (`atomic_long_t`): the sum of its cfs_rqs' `tg_load_avg_contrib`.
    pub load_avg: i64,
}

impl TaskGroup {
    /// A new child group: `shares = NICE_0_LOAD` (cpu.weight 100), no load.
    #[must_use]
    pub const fn new(shares: u64) -> Self {
        Self {
            root: false,
            shares,
            load_avg: 0,
        }
    }

    /// The root task group (`ROOT_TASK_GROUP_LOAD` shares).
    #[must_use]
    pub const fn root() -> Self {
        Self {
            root: true,
            shares: NICE_0_LOAD_SCALED,
            load_avg: 0,
        }
    }
}

/// The group-scheduling fields of one cfs_rq (any cfs_rq, the root one included).
///
/// Follows sched.h: `last_update_tg_load_avg`, `tg_load_avg_contrib`, `propagate`,
/// `prop_runnable_sum`, `h_load` and `last_h_load_update` of `struct cfs_rq` (v6.12).
/// `h_load_next` is not kept: [`update_cfs_rq_h_load`] is given the chain it would follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct CfsRqTg {
    /// `sched_clock_cpu()` (ns) at the last change of `tg->load_avg` by this cfs_rq.
    pub last_update_tg_load_avg: u64,
    /// This cfs_rq's `avg.load_avg` as last added to `tg->load_avg`.
    pub tg_load_avg_contrib: u64,
    /// `propagate`: a change is pending for the group entity above (0 or 1, a `long`).
    pub propagate: i64,
    /// `prop_runnable_sum`: the unweighted load sum to propagate to the group entity.
    pub prop_runnable_sum: i64,
    /// `h_load`: this cfs_rq's share of the root cfs_rq's `load_avg`.
    pub h_load: u64,
    /// `last_h_load_update`: the jiffy `h_load` was computed at.
    pub last_h_load_update: u64,
}

/// A group's weight on one CPU: `tg->shares` times this CPU's part of the group's load,
///
/// ```text
///   shares = tg_shares * load / (tg->load_avg - tg_load_avg_contrib + load)
///   load   = max(scale_load_down(grq->load.weight), grq->avg.load_avg)
/// ```
///
/// (no division when the denominator is 0), clamped to `[MIN_SHARES, tg_shares]`. Signed
/// `long` arithmetic throughout; the result is scaled like `tg_shares`, but the floor
/// `MIN_SHARES` is not: the smallest weight is 2, i.e. 2/1024 of a nice-0 task's weight.
///
/// `load_weight` is `scale_load_down(grq->load.weight)`, `load_avg` is `grq->avg.load_avg`.
///
/// Follows fair.c: calc_group_shares() (v6.12, CONFIG_SMP).
#[must_use]
pub fn calc_group_shares(tg: &TaskGroup, load_weight: u64, load_avg: u64, grq: &CfsRqTg) -> u64 {
    let tg_shares = tg.shares as i64;
    let load = load_weight.max(load_avg) as i64;
    let mut tg_weight = tg.load_avg;
    // Ensure tg_weight >= load.
    tg_weight = tg_weight.wrapping_sub(grq.tg_load_avg_contrib as i64);
    tg_weight = tg_weight.wrapping_add(load);
    let mut shares = tg_shares.wrapping_mul(load);
    if tg_weight != 0 {
        shares = shares.wrapping_div(tg_weight);
    }
    // clamp_t(long, shares, MIN_SHARES, tg_shares)
    shares.max(MIN_SHARES as i64).min(tg_shares) as u64
}

/// What weight a group entity gets: `Some(shares)` when [`calc_group_shares`] differs from
/// the entity's `load.weight` (both scaled) and the kernel would call `reweight_entity()`
/// (the caller's: [`CfsRqAvg::reweight_entity_load_avg`] for the PELT part, with
/// [`scale_load_down`](crate::scale_load_down) of both weights), `None` when it keeps its weight.
///
/// Follows fair.c: update_cfs_group() (v6.12.0) for a group entity. Without bandwidth
/// control the group is never throttled. v6.13 and the v6.12.y stable releases (commit
/// 66951e4860d3, "sched/fair: Fix update_cfs_group() vs DELAY_DEQUEUE") also return early
/// when the group cfs_rq's `load.weight` is 0; v6.12.0 does not, and neither does this.
#[must_use]
pub fn update_cfs_group(
    se_load_weight: u64,
    tg: &TaskGroup,
    gcfs_load_weight: u64,
    gcfs_load_avg: u64,
    gcfs: &CfsRqTg,
) -> Option<u64> {
    let shares = calc_group_shares(tg, gcfs_load_weight, gcfs_load_avg, gcfs);
    (se_load_weight != shares).then_some(shares)
}

/// Brings `tg->load_avg` up to date with this cfs_rq's `load_avg`, at most once per
/// millisecond of `sched_clock_cpu()` (`now_ns`) and only when the change exceeds 1/64 of
/// the last contribution: `|load_avg - contrib| > contrib / 64`. Returns whether
/// `tg->load_avg` changed.
///
/// Nothing for the root group or an inactive CPU (`cpu_active`). The rate limit compares
/// `now_ns - last_update_tg_load_avg` in u64, and `last_update_tg_load_avg` starts at 0, so
/// nothing is published in the first millisecond of `sched_clock`; a delta that is filtered
/// out does not restart the millisecond.
///
/// Follows fair.c: update_tg_load_avg() (v6.12: the 1 ms rate limit is v6.7's commit
/// 1528c661c24b, the `cpu_active()` test v6.8's "Fix tg->load when offlining a CPU").
pub fn update_tg_load_avg(
    tg: &mut TaskGroup,
    cfs: &mut CfsRqTg,
    load_avg: u64,
    cpu_active: bool,
    now_ns: u64,
) -> bool {
    if tg.root || !cpu_active {
        return false;
    }
    if now_ns.wrapping_sub(cfs.last_update_tg_load_avg) < NSEC_PER_MSEC {
        return false;
    }
    let delta = load_avg.wrapping_sub(cfs.tg_load_avg_contrib) as i64;
    // abs(long) compared with an unsigned long: the comparison is unsigned.
    if delta.wrapping_abs() as u64 > cfs.tg_load_avg_contrib / 64 {
        tg.load_avg = tg.load_avg.wrapping_add(delta);
        cfs.tg_load_avg_contrib = load_avg;
        cfs.last_update_tg_load_avg = now_ns;
        return true;
    }
    false
}

/// Withdraws this cfs_rq's whole contribution from `tg->load_avg` (CPU going offline),
/// without rate limit. Nothing for the root group.
///
/// Follows fair.c: clear_tg_load_avg() (v6.12), called by clear_tg_offline_cfs_rqs().
pub fn clear_tg_load_avg(tg: &mut TaskGroup, cfs: &mut CfsRqTg, now_ns: u64) {
    if tg.root {
        return;
    }
    let delta = 0i64.wrapping_sub(cfs.tg_load_avg_contrib as i64);
    tg.load_avg = tg.load_avg.wrapping_add(delta);
    cfs.tg_load_avg_contrib = 0;
    cfs.last_update_tg_load_avg = now_ns;
}

impl CfsRqTg {
    /// Records an unweighted load-sum change for the group entity above this cfs_rq to pick
    /// up at its next update.
    ///
    /// Follows fair.c: add_tg_cfs_propagate() (v6.12).
    pub fn add_tg_cfs_propagate(&mut self, runnable_sum: i64) {
        self.propagate = 1;
        self.prop_runnable_sum = self.prop_runnable_sum.wrapping_add(runnable_sum);
    }
}

/// `add_positive()` on an unsigned long: add a signed value, 0 if a negative one wrapped.
#[inline]
fn add_positive_u64(var: &mut u64, val: i64) {
    let res = var.wrapping_add(val as u64);
    *var = if val < 0 && res > *var { 0 } else { res };
}

/// `add_positive()` on a u32 field with a `long` value: the sum is taken in `long` and kept
/// in 32 bits, then 0 if a negative value made it larger.
#[inline]
fn add_positive_u32(var: &mut u32, val: i64) {
    let res = i64::from(*var).wrapping_add(val) as u32;
    *var = if val < 0 && res > *var { 0 } else { res };
}

/// Copies the group cfs_rq's `util_avg` into its group entity (sum rebuilt with the parent's
/// divider, in u32) and applies the difference to the parent cfs_rq, clamped at 0, keeping
/// `util_sum >= util_avg * PELT_MIN_DIVIDER`.
///
/// Follows fair.c: update_tg_cfs_util() (v6.12).
pub fn update_tg_cfs_util(cfs: &mut CfsRqAvg, se: &mut SchedAvg, gcfs: &SchedAvg) {
    let delta_avg = gcfs.util_avg.wrapping_sub(se.util_avg) as i64;
    if delta_avg == 0 {
        return;
    }
    let divider = cfs.avg.get_pelt_divider();
    se.util_avg = gcfs.util_avg;
    let new_sum = se.util_avg.wrapping_mul(u64::from(divider)) as u32;
    let delta_sum = i64::from(new_sum) - i64::from(se.util_sum);
    se.util_sum = new_sum;

    let unclamped = i128::from(cfs.avg.util_sum) + i128::from(delta_sum);
    add_positive_u64(&mut cfs.avg.util_avg, delta_avg);
    add_positive_u32(&mut cfs.avg.util_sum, delta_sum);
    let t = &mut cfs.truncated;
    cfs.avg.util_sum = floor_util_sum(cfs.avg.util_sum, cfs.avg.util_avg, unclamped, t);
}

/// Copies the group cfs_rq's `runnable_avg` into its group entity and applies the difference
/// to the parent, like [`update_tg_cfs_util`]. The entity's new `runnable_sum` is computed
/// in a u32 (`u32 new_sum`), so it wraps once `runnable_avg * divider` passes `2^32` (a
/// group with about 90 runnable tasks), and the parent's floor is the 32-bit `max_t(u32,
/// ...)` of the other sums (recorded in [`CfsRqAvg::truncated`]).
///
/// Follows fair.c: update_tg_cfs_runnable() (v6.12).
pub fn update_tg_cfs_runnable(cfs: &mut CfsRqAvg, se: &mut SchedAvg, gcfs: &SchedAvg) {
    let delta_avg = gcfs.runnable_avg.wrapping_sub(se.runnable_avg) as i64;
    if delta_avg == 0 {
        return;
    }
    let divider = cfs.avg.get_pelt_divider();
    se.runnable_avg = gcfs.runnable_avg;
    let new_sum = se.runnable_avg.wrapping_mul(u64::from(divider)) as u32;
    let delta_sum = i64::from(new_sum).wrapping_sub(se.runnable_sum as i64);
    se.runnable_sum = u64::from(new_sum);

    let unclamped = i128::from(cfs.avg.runnable_sum) + i128::from(delta_sum);
    add_positive_u64(&mut cfs.avg.runnable_avg, delta_avg);
    add_positive_u64(&mut cfs.avg.runnable_sum, delta_sum);
    let t = &mut cfs.truncated;
    cfs.avg.runnable_sum =
        floor_runnable_sum(cfs.avg.runnable_sum, cfs.avg.runnable_avg, unclamped, t);
}

/// Applies the group cfs_rq's pending `prop_runnable_sum` to its group entity's load and to
/// the parent cfs_rq, then clears it.
///
/// An addition (`>= 0`) is added to the entity's `load_sum` and capped at the parent's
/// divider; a removal estimates the group's unweighted sum as `load_sum /
/// scale_load_down(load.weight)` (0 for an empty group; `div_u64()`'s u32 divisor) and never
/// raises the entity's. Either is then raised to the entity's running sum (`util_sum >>
/// 10`); the entity's `load_sum` becomes that and its `load_avg` `se_weight * sum /
/// divider`; the parent gets the differences (clamped at 0) and its 32-bit `max_t(u32, ...)`
/// floor. If the entity's `load_avg` would not change nothing is updated, not even
/// `load_sum`, but the pending sum is still consumed.
///
/// `se_weight` is `scale_load_down(se->load.weight)`; `gcfs_load_weight` is
/// `scale_load_down(gcfs_rq->load.weight)`.
///
/// Follows fair.c: update_tg_cfs_load() (v6.12).
pub fn update_tg_cfs_load(
    cfs: &mut CfsRqAvg,
    se: &mut SchedAvg,
    se_weight: u64,
    gcfs: &SchedAvg,
    gcfs_load_weight: u64,
    gcfs_tg: &mut CfsRqTg,
) {
    let mut runnable_sum = gcfs_tg.prop_runnable_sum;
    if runnable_sum == 0 {
        return;
    }
    gcfs_tg.prop_runnable_sum = 0;

    let divider = cfs.avg.get_pelt_divider();
    if runnable_sum >= 0 {
        // Add runnable, capped at the maximum a sum can reach now.
        runnable_sum = runnable_sum.wrapping_add(se.load_sum as i64);
        runnable_sum = runnable_sum.min(i64::from(divider));
    } else {
        // Estimate the group's unweighted sum, assuming its tasks equally runnable.
        let mut load_sum = 0u64;
        if gcfs_load_weight != 0 {
            load_sum = gcfs.load_sum / u64::from(gcfs_load_weight as u32);
        }
        // Never inflate the entity's own.
        runnable_sum = se.load_sum.min(load_sum) as i64;
    }

    // Runnable cannot be below running.
    let running_sum = i64::from(se.util_sum >> SCHED_CAPACITY_SHIFT);
    runnable_sum = runnable_sum.max(running_sum);

    let load_sum = se_weight.wrapping_mul(runnable_sum as u64);
    let load_avg = load_sum / u64::from(divider);

    let delta_avg = load_avg.wrapping_sub(se.load_avg) as i64;
    if delta_avg == 0 {
        return;
    }
    let delta_sum = load_sum.wrapping_sub(se_weight.wrapping_mul(se.load_sum)) as i64;

    se.load_sum = runnable_sum as u64;
    se.load_avg = load_avg;
    let unclamped = i128::from(cfs.avg.load_sum) + i128::from(delta_sum);
    add_positive_u64(&mut cfs.avg.load_avg, delta_avg);
    add_positive_u64(&mut cfs.avg.load_sum, delta_sum);
    let t = &mut cfs.truncated;
    cfs.avg.load_sum = floor_load_sum(cfs.avg.load_sum, cfs.avg.load_avg, unclamped, t);
}

/// The cfs_rq a group entity owns, as its updates read it.
#[derive(Debug)]
pub struct GroupRq<'a> {
    /// `gcfs_rq->avg`.
    pub avg: &'a SchedAvg,
    /// `scale_load_down(gcfs_rq->load.weight)`.
    pub load_weight: u64,
    /// The group cfs_rq's group-scheduling fields.
    pub tg: &'a mut CfsRqTg,
}

/// Moves a group cfs_rq's pending change into its group entity and the parent cfs_rq: if the
/// group cfs_rq has `propagate` set, clears it, passes its `prop_runnable_sum` on to the
/// parent's, then applies [`update_tg_cfs_util`], [`update_tg_cfs_runnable`] and
/// [`update_tg_cfs_load`]. Returns whether it did (the kernel's 1: the parent counts as
/// decayed).
///
/// `cfs`/`cfs_tg` are the parent cfs_rq (where the entity is queued), `se`/`se_weight` the
/// group entity. For a task entity the kernel returns 0: callers simply do not call this.
///
/// Follows fair.c: propagate_entity_load_avg() (v6.12).
pub fn propagate_entity_load_avg(
    cfs: &mut CfsRqAvg,
    cfs_tg: &mut CfsRqTg,
    se: &mut SchedAvg,
    se_weight: u64,
    gcfs: GroupRq<'_>,
) -> bool {
    if gcfs.tg.propagate == 0 {
        return false;
    }
    gcfs.tg.propagate = 0;
    cfs_tg.add_tg_cfs_propagate(gcfs.tg.prop_runnable_sum);

    update_tg_cfs_util(cfs, se, gcfs.avg);
    update_tg_cfs_runnable(cfs, se, gcfs.avg);
    update_tg_cfs_load(cfs, se, se_weight, gcfs.avg, gcfs.load_weight, gcfs.tg);
    true
}

/// Whether the blocked-load update may skip a group entity: its `load_avg` and `util_avg`
/// are 0 and its group cfs_rq has no pending propagation.
///
/// Follows fair.c: skip_blocked_update() (v6.12).
#[must_use]
pub fn skip_blocked_update(se: &SchedAvg, gcfs: &CfsRqTg) -> bool {
    if se.load_avg != 0 || se.util_avg != 0 {
        return false;
    }
    gcfs.propagate == 0
}

/// Whether a cfs_rq may leave the leaf list: nothing queued (`load.weight == 0`), its
/// `load_sum`, `util_sum` and `runnable_sum` all 0, and no child cfs_rq before it on the
/// list (`child_on_list`, the caller's `child_cfs_rq_on_list()`).
///
/// Follows fair.c: cfs_rq_is_decayed() (v6.12.0, CONFIG_SMP) without load_avg_is_decayed()'s
/// `SCHED_WARN_ON(load_avg || util_avg || runnable_avg)`. v6.18 and the v6.12.y stable
/// releases (the fix of 1528c661c24b's rate limit, Aug 2025) also require
/// `tg_load_avg_contrib == 0`; v6.12.0 does not, and neither does this.
#[must_use]
pub fn cfs_rq_is_decayed(load_weight: u64, avg: &SchedAvg, child_on_list: bool) -> bool {
    if load_weight != 0 {
        return false;
    }
    if !avg.load_avg_is_decayed() {
        return false;
    }
    !child_on_list
}

/// [`CfsRqAvg::update_cfs_rq_load_avg`] with the group part: pending removals also queue
/// their runnable sum for the group entity above, as `-(long)(removed_runnable * divider) >>
/// SCHED_CAPACITY_SHIFT` (an arithmetic shift of a negative `long`: it rounds towards minus
/// infinity, so a removal of `r` propagates `-ceil(r * divider / 1024)`).
///
/// Follows fair.c: update_cfs_rq_load_avg() (v6.12) with CONFIG_FAIR_GROUP_SCHED.
pub fn update_cfs_rq_load_avg_tg(
    cfs: &mut CfsRqAvg,
    cfs_tg: &mut CfsRqTg,
    now: u64,
    load: &CfsRqLoad,
) -> bool {
    if cfs.removed.nr != 0 {
        let divider = u64::from(cfs.avg.get_pelt_divider());
        let removed = cfs.removed.runnable_avg.wrapping_mul(divider) as i64;
        cfs_tg.add_tg_cfs_propagate(removed.wrapping_neg() >> SCHED_CAPACITY_SHIFT);
    }
    cfs.update_cfs_rq_load_avg(now, load)
}

/// [`CfsRqAvg::attach_entity_load_avg`] with the group part: the entity's rebuilt
/// `load_sum` is queued for the group entity above (`add_tg_cfs_propagate(cfs_rq,
/// se->avg.load_sum)`).
///
/// Follows fair.c: attach_entity_load_avg() (v6.12) with CONFIG_FAIR_GROUP_SCHED.
pub fn attach_entity_load_avg_tg(
    cfs: &mut CfsRqAvg,
    cfs_tg: &mut CfsRqTg,
    se: &mut SchedAvg,
    weight: u64,
) {
    cfs.attach_entity_load_avg(se, weight);
    cfs_tg.add_tg_cfs_propagate(se.load_sum as i64);
}

/// [`CfsRqAvg::detach_entity_load_avg`] with the group part: minus the entity's `load_sum`
/// is queued for the group entity above.
///
/// Follows fair.c: detach_entity_load_avg() (v6.12) with CONFIG_FAIR_GROUP_SCHED.
pub fn detach_entity_load_avg_tg(
    cfs: &mut CfsRqAvg,
    cfs_tg: &mut CfsRqTg,
    se: &SchedAvg,
    weight: u64,
) {
    cfs.detach_entity_load_avg(se, weight);
    cfs_tg.add_tg_cfs_propagate(se.load_sum.wrapping_neg() as i64);
}

/// [`CfsRqAvg::update_load_avg`] for any entity of a group hierarchy: age the entity (a
/// group entity with `se_load.runnable` = its group's `h_nr_running`), update the cfs_rq
/// with [`update_cfs_rq_load_avg_tg`], propagate a group entity's pending change
/// ([`propagate_entity_load_avg`], when `group` is given), then attach or detach with
/// [`attach_entity_load_avg_tg`] / [`detach_entity_load_avg_tg`]. The returned
/// `update_tg_load_avg` says when the caller must call [`update_tg_load_avg`] for this
/// cfs_rq (with its `avg.load_avg` after this update).
///
/// `group` is the cfs_rq the entity owns (`None` for a task).
///
/// Follows fair.c: update_load_avg() (v6.12) with CONFIG_FAIR_GROUP_SCHED.
#[allow(clippy::too_many_arguments)]
pub fn update_load_avg_tg(
    cfs: &mut CfsRqAvg,
    cfs_tg: &mut CfsRqTg,
    se: &mut SchedAvg,
    now: u64,
    se_load: &SeLoad,
    cfs_load: &CfsRqLoad,
    flags: UpdateFlags,
    util_est: bool,
    group: Option<GroupRq<'_>>,
) -> LoadAvgUpdate {
    if se.last_update_time != 0 && !flags.contains(UpdateFlags::SKIP_AGE_LOAD) {
        update_load_avg_se(now, se, se_load, util_est);
    }
    let mut decayed = update_cfs_rq_load_avg_tg(cfs, cfs_tg, now, cfs_load);
    if let Some(g) = group {
        decayed |= propagate_entity_load_avg(cfs, cfs_tg, se, se_load.weight, g);
    }

    let mut out = LoadAvgUpdate {
        decayed,
        ..LoadAvgUpdate::default()
    };
    if se.last_update_time == 0 && flags.contains(UpdateFlags::DO_ATTACH) {
        attach_entity_load_avg_tg(cfs, cfs_tg, se, se_load.weight);
        out.attached = true;
        out.cfs_rq_util_change = true;
        out.update_tg_load_avg = true;
    } else if flags.contains(UpdateFlags::DO_DETACH) {
        detach_entity_load_avg_tg(cfs, cfs_tg, se, se_load.weight);
        out.detached = true;
        out.cfs_rq_util_change = true;
        out.update_tg_load_avg = true;
    } else if decayed {
        out.cfs_rq_util_change = true;
        out.update_tg_load_avg = flags.contains(UpdateFlags::UPDATE_TG);
    }
    out
}

/// One level of a task's hierarchy on one CPU, for [`update_cfs_rq_h_load`]: a cfs_rq and
/// the group entity that owns it.
#[derive(Debug)]
pub struct HLoadLevel<'a> {
    /// The cfs_rq's `avg.load_avg` (`cfs_rq_load_avg()`).
    pub load_avg: u64,
    /// The `avg.load_avg` of the group entity owning this cfs_rq (ignored for the root).
    pub se_load_avg: u64,
    /// The cfs_rq's group-scheduling fields (`h_load`, `last_h_load_update`).
    pub tg: &'a mut CfsRqTg,
}

/// Computes `h_load` top-down along `chain` (index 0 is the task's cfs_rq, the last entry
/// the root cfs_rq) at jiffy `now`: nothing if the task's cfs_rq was computed this jiffy;
/// otherwise walk up to the first level computed this jiffy, or to the root, whose `h_load`
/// becomes its `load_avg`; then down, each child's `h_load` being `parent.h_load *
/// se.load_avg / (parent.load_avg + 1)` (unsigned long, wrapping product), stamped `now`.
///
/// Follows fair.c: update_cfs_rq_h_load() (v6.12), with the chain standing for the
/// `se->parent` / `h_load_next` pointers.
pub fn update_cfs_rq_h_load(chain: &mut [HLoadLevel<'_>], now: u64) {
    let Some(top) = chain.len().checked_sub(1) else {
        return;
    };
    if chain[0].tg.last_h_load_update == now {
        return;
    }
    // Walk up: the first ancestor already computed this jiffy, else the root.
    let mut start = top;
    for (i, level) in chain.iter().enumerate().skip(1) {
        if level.tg.last_h_load_update == now {
            start = i;
            break;
        }
    }
    if start == top && chain[top].tg.last_h_load_update != now {
        chain[top].tg.h_load = chain[top].load_avg;
        chain[top].tg.last_h_load_update = now;
    }
    // Walk down.
    for i in (0..start).rev() {
        let parent_h = chain[i + 1].tg.h_load;
        let parent_load = chain[i + 1].load_avg;
        let load = parent_h.wrapping_mul(chain[i].se_load_avg) / parent_load.wrapping_add(1);
        chain[i].tg.h_load = load;
        chain[i].tg.last_h_load_update = now;
    }
}

/// A task's load as the balancer weighs it: its `load_avg` times its cfs_rq's `h_load`
/// over the cfs_rq's `load_avg + 1`, after [`update_cfs_rq_h_load`] on `chain` (index 0 is
/// the task's cfs_rq).
///
/// Follows fair.c: task_h_load() (v6.12, CONFIG_FAIR_GROUP_SCHED).
pub fn task_h_load(task_load_avg: u64, chain: &mut [HLoadLevel<'_>], now: u64) -> u64 {
    update_cfs_rq_h_load(chain, now);
    let Some(own) = chain.first() else {
        return task_load_avg;
    };
    task_load_avg.wrapping_mul(own.tg.h_load) / own.load_avg.wrapping_add(1)
}

#[cfg(test)]
mod tests;
