//! Entity and cfs_rq signals, and their attach, detach and lazy removal.
//!
//! This is the PELT part of kernel/sched/fair.c (`update_load_avg()` and its
//! helpers) plus the entity/cfs_rq wrappers of pelt.c. Nothing here knows about
//! runqueues: the caller passes in, at each update, what the kernel would read
//! from the rq at that moment ([`SeLoad`], [`CfsRqLoad`]).
//!
//! These are the task-entity paths: `propagate_entity_load_avg()` returns 0 for a
//! task, and the group parts (`add_tg_cfs_propagate()` on attach, detach and
//! removal, `update_tg_load_avg()`) are in `group.rs`, which wraps these
//! functions ([`update_load_avg_tg`](crate::update_load_avg_tg) and friends);
//! [`LoadAvgUpdate`] reports when the kernel would call `update_tg_load_avg()`.

use crate::avg::SchedAvg;
use crate::consts::{PELT_MIN_DIVIDER, SCHED_FIXEDPOINT_SHIFT};
use crate::runnable_load::RunnableLoad;

/// What the kernel reads about a sched entity when it updates the entity's
/// signal: the arguments of `___update_load_sum()` in `__update_load_avg_se()`.
///
/// Follows pelt.c: __update_load_avg_se() (v6.6-v6.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeLoad {
    /// `se_weight(se)`: `scale_load_down(se->load.weight)` (1024 for nice 0).
    pub weight: u64,
    /// `se->on_rq`: queued (waiting or running).
    pub on_rq: bool,
    /// `se_runnable(se)`: for a task, `!!se->on_rq`.
    pub runnable: u64,
    /// `cfs_rq->curr == se`: the entity is the one running.
    pub curr: bool,
}

impl SeLoad {
    /// A task entity: `runnable` follows `on_rq`.
    #[must_use]
    pub const fn task(weight: u64, on_rq: bool, curr: bool) -> Self {
        Self {
            weight,
            on_rq,
            runnable: on_rq as u64,
            curr,
        }
    }
}

/// What the kernel reads about a cfs_rq when it updates the cfs_rq's signal:
/// the arguments of `___update_load_sum()` in `__update_load_avg_cfs_rq()`.
///
/// Follows pelt.c: __update_load_avg_cfs_rq() (v6.6-v6.12; v6.14 renamed the
/// count to `h_nr_runnable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CfsRqLoad {
    /// `scale_load_down(cfs_rq->load.weight)`: the sum of the queued entities'
    /// weights (see [`scale_load_down`]).
    pub load_weight: u64,
    /// `cfs_rq->h_nr_running`: the number of runnable tasks below this cfs_rq.
    pub h_nr_running: u64,
    /// `cfs_rq->curr != NULL`: one of its entities is running.
    pub curr: bool,
}

/// `scale_load_down(w)` on a 64-bit kernel: drops the fixed-point resolution
/// of a `load.weight`, keeping a non-zero weight at least 2.
///
/// Follows sched.h: scale_load_down() (v6.6-v6.12, CONFIG_64BIT).
#[inline]
#[must_use]
pub const fn scale_load_down(w: u64) -> u64 {
    if w == 0 {
        0
    } else {
        let w = w >> SCHED_FIXEDPOINT_SHIFT;
        if w < 2 { 2 } else { w }
    }
}

/// The optional actions of `update_load_avg()`.
///
/// Follows fair.c: the `UPDATE_TG`, `SKIP_AGE_LOAD`, `DO_ATTACH` and `DO_DETACH`
/// flags (v6.6-v6.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UpdateFlags(u32);

impl UpdateFlags {
    /// No flag.
    pub const NONE: Self = Self(0);
    /// Propagate a decayed load to the task group (`update_tg_load_avg()`).
    pub const UPDATE_TG: Self = Self(0x1);
    /// Do not age the entity (only the cfs_rq).
    pub const SKIP_AGE_LOAD: Self = Self(0x2);
    /// Attach the entity if it is not attached (`last_update_time == 0`):
    /// set by `enqueue_entity()`.
    pub const DO_ATTACH: Self = Self(0x4);
    /// Detach the entity: set by `dequeue_entity()` for a task the load
    /// balancer is migrating (`TASK_ON_RQ_MIGRATING`).
    pub const DO_DETACH: Self = Self(0x8);

    /// Whether every flag of `other` is set in `self`.
    #[must_use]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The raw bits (the kernel's values).
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }
}

impl core::ops::BitOr for UpdateFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// What one [`CfsRqAvg::update_load_avg`] did, for the caller to act on what
/// lies outside PELT (cpufreq, task-group load).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadAvgUpdate {
    /// `update_cfs_rq_load_avg()` returned true: the cfs_rq decayed or applied
    /// pending removals.
    pub decayed: bool,
    /// The entity was attached (`DO_ATTACH` and `last_update_time == 0`).
    pub attached: bool,
    /// The entity was detached (`DO_DETACH`).
    pub detached: bool,
    /// The kernel called `cfs_rq_util_change()` (a cpufreq update).
    pub cfs_rq_util_change: bool,
    /// The kernel called `update_tg_load_avg()`.
    pub update_tg_load_avg: bool,
}

/// Load removed from a cfs_rq by tasks that migrated away while asleep,
/// applied lazily at its next update.
///
/// Follows sched.h: `cfs_rq->removed` (v6.6-v6.12), without the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Removed {
    /// Number of removals since the last update.
    pub nr: u32,
    /// Sum of the removed entities' `load_avg`.
    pub load_avg: u64,
    /// Sum of the removed entities' `util_avg`.
    pub util_avg: u64,
    /// Sum of the removed entities' `runnable_avg`.
    pub runnable_avg: u64,
}

/// The PELT state of one cfs_rq: its signal and its pending removals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct CfsRqAvg {
    /// `cfs_rq->avg`; `util_est` here is the sum of the enqueued tasks'
    /// estimates (root cfs_rq only in the kernel).
    pub avg: SchedAvg,
    /// `cfs_rq->removed`.
    pub removed: Removed,
    /// Not kernel state: what the kernel's 32-bit `max_t(u32, ...)` has cut from the u64
    /// sums so far, so that `--check` can tell this kernel behaviour from a bug.
    pub truncated: SumsTruncated,
    /// `runnable_load_avg` / `runnable_load_sum` of the kernels before v5.7 (kept only
    /// when its `form` says so; see [`RunnableLoad`]).
    pub runnable_load: RunnableLoad,
}

/// The amounts by which `max_t(u32, sum, avg * PELT_MIN_DIVIDER)` left `load_sum` and
/// `runnable_sum` below `max(sum, avg * PELT_MIN_DIVIDER)` computed in 64 bits, summed
/// over the cfs_rq's life (saturating; not decayed). Not kernel state, and read by nothing
/// in the model.
///
/// The kernel (v6.6-v6.12) loses `2^32` of sum, about 91,900 units of average, whenever a
/// cfs_rq's `load_sum` is above `u32::MAX` at a dequeue, a detach or a removal (one nice
/// -20 task and a few nice-0 ones are enough), and likewise `runnable_sum` with about 90
/// runnable tasks; the next update then recomputes the average from the cut sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct SumsTruncated {
    /// Cut from `load_sum`.
    pub load_sum: u64,
    /// Cut from `runnable_sum`.
    pub runnable_sum: u64,
    /// The number of cuts.
    pub nr: u64,
    /// What the floor `avg * PELT_MIN_DIVIDER` (and `sub_positive()`'s or `add_positive()`'s
    /// clamp at 0 before it) added to `load_sum` over what plain signed arithmetic on the
    /// sum would have left (saturating; not decayed): the sum may be that much above its
    /// entities' (see `floor_load_sum()`).
    pub load_raised: u64,
    /// The same for `runnable_sum`.
    pub runnable_raised: u64,
    /// The same for `util_sum` (the u32 `max_t(u32, ...)` of util, never cut).
    pub util_raised: u64,
}

/// What a floor kept over the signed result `unclamped` of the change before it, added to
/// `raised` (see [`floor_load_sum`]).
#[inline]
fn record_raise(kept: u64, unclamped: i128, raised: &mut u64) {
    let up = i128::from(kept) - unclamped;
    if up > 0 {
        *raised = raised.saturating_add(up.min(i128::from(u64::MAX)) as u64);
    }
}

/// `max_t(u32, load_sum, load_avg * PELT_MIN_DIVIDER)` after a change that took `load_sum`
/// to `unclamped` in signed arithmetic (before `sub_positive()`/`add_positive()` clamped it
/// at 0), recording the cut (see [`max_t_u32_min_divider`]) and what the clamps raised the
/// sum by in [`SumsTruncated::load_raised`].
///
/// The kernel (fair.c v6.12: dequeue_load_avg(), update_cfs_rq_load_avg()'s removal,
/// update_tg_cfs_load()) compares the sum with the average after each change, and the
/// average is a snapshot of the last period boundary the cfs_rq crossed, moved since by
/// each change's `delta_avg` while the sum moved by its `delta_sum`, which is not
/// `delta_avg * divider` (an entity's average is its own snapshot): the floor raises the sum
/// to the average's level whenever the changes took more from the sum than the average times the
/// divider, and the raise stays in the sum, decaying with it, above what its entities hold.
#[inline]
pub(crate) fn floor_load_sum(sum: u64, avg: u64, unclamped: i128, t: &mut SumsTruncated) -> u64 {
    let kept = max_t_u32_min_divider(sum, avg, &mut t.load_sum, &mut t.nr);
    record_raise(kept, unclamped, &mut t.load_raised);
    kept
}

/// [`floor_load_sum`] for `runnable_sum` and `runnable_avg`.
#[inline]
pub(crate) fn floor_runnable_sum(
    sum: u64,
    avg: u64,
    unclamped: i128,
    t: &mut SumsTruncated,
) -> u64 {
    let kept = max_t_u32_min_divider(sum, avg, &mut t.runnable_sum, &mut t.nr);
    record_raise(kept, unclamped, &mut t.runnable_raised);
    kept
}

/// `max_t(u32, util_sum, util_avg * PELT_MIN_DIVIDER)` on the u32 `util_sum`, recording
/// what it and the clamp at 0 before it raised the sum over `unclamped` (see
/// [`floor_load_sum`]).
#[inline]
pub(crate) fn floor_util_sum(sum: u32, avg: u64, unclamped: i128, t: &mut SumsTruncated) -> u32 {
    let kept = sum.max(avg.wrapping_mul(PELT_MIN_DIVIDER) as u32);
    record_raise(u64::from(kept), unclamped, &mut t.util_raised);
    kept
}

/// `sub_positive()`: unsigned subtract, clamped at 0 on underflow.
#[inline]
pub(crate) fn sub_positive_u64(var: &mut u64, val: u64) {
    let res = var.wrapping_sub(val);
    *var = if res > *var { 0 } else { res };
}

/// `sub_positive()` on a u32 field (the subtrahend is converted to u32 first,
/// as `typeof(*ptr) val = (_val)` does).
#[inline]
pub(crate) fn sub_positive_u32(var: &mut u32, val: u32) {
    let res = var.wrapping_sub(val);
    *var = if res > *var { 0 } else { res };
}

/// `max_t(u32, sum, avg * PELT_MIN_DIVIDER)` on a u64 sum. The kernel
/// (v6.6-v6.12) compares, and keeps, both values truncated to 32 bits, even for
/// the u64 `load_sum` and `runnable_sum`; this reproduces that truncation.
/// `cut` accumulates what the truncation took (see [`SumsTruncated`]).
#[inline]
pub(crate) fn max_t_u32_min_divider(sum: u64, avg: u64, cut: &mut u64, nr: &mut u64) -> u64 {
    let floor = avg.wrapping_mul(PELT_MIN_DIVIDER);
    let kept = u64::from((sum as u32).max(floor as u32));
    let lost = sum.max(floor) - kept;
    if lost != 0 {
        *cut = cut.saturating_add(lost);
        *nr += 1;
    }
    kept
}

/// Updates a task entity's signal to `now` with what it was doing since its
/// last update. Returns whether the averages were recomputed.
///
/// Follows pelt.c: __update_load_avg_se() (v6.6-v6.12): `load = on_rq`,
/// `runnable = se_runnable`, `running = curr`, averaged with `se_weight`; a
/// recomputation clears the [`UTIL_AVG_UNCHANGED`](crate::UTIL_AVG_UNCHANGED)
/// flag when the `UTIL_EST` feature is on (`cfs_se_util_change()`).
#[inline]
pub fn update_load_avg_se(now: u64, se: &mut SchedAvg, load: &SeLoad, util_est: bool) -> bool {
    if se.update_load_sum(now, u64::from(load.on_rq), load.runnable, load.curr) {
        se.update_load_avg(load.weight);
        cfs_se_util_change(se, util_est);
        return true;
    }
    false
}

/// Decays the signal of an entity that is not queued anywhere (blocked or
/// migrating) up to `now`. Returns whether the averages were recomputed.
///
/// Follows pelt.c: __update_load_avg_blocked_se() (v6.6-v6.12).
pub fn update_load_avg_blocked_se(now: u64, se: &mut SchedAvg, weight: u64) -> bool {
    if se.update_load_sum(now, 0, 0, false) {
        se.update_load_avg(weight);
        return true;
    }
    false
}

/// Clears the [`UTIL_AVG_UNCHANGED`](crate::UTIL_AVG_UNCHANGED) flag: util_avg
/// has been updated since util_est was.
///
/// Follows pelt.h: cfs_se_util_change() (v6.9-v6.12 single-field util_est).
pub fn cfs_se_util_change(se: &mut SchedAvg, util_est: bool) {
    if !util_est {
        return;
    }
    se.util_est &= !crate::consts::UTIL_AVG_UNCHANGED;
}

impl CfsRqAvg {
    /// Updates the cfs_rq's own signal to `now`. Returns whether the averages
    /// were recomputed.
    ///
    /// Follows pelt.c: __update_load_avg_cfs_rq() (v6.6-v6.12): `load =
    /// scale_load_down(load.weight)`, `runnable = h_nr_running`, `running = curr
    /// != NULL`, averaged with weight 1.
    ///
    /// Before v5.7 the same update also accrues and decays the cfs_rq's
    /// `runnable_load_sum` with the queued weight ([`RunnableLoad::accrue`], over the span
    /// this update consumes, from the signal's position before it), when kept.
    #[inline]
    pub fn update_load_avg_cfs_rq(&mut self, now: u64, load: &CfsRqLoad) -> bool {
        if self.runnable_load.form.tracked() {
            let delta = now.wrapping_sub(self.avg.last_update_time);
            if (delta as i64) >= 0 && delta >> 10 != 0 {
                self.runnable_load
                    .accrue(delta >> 10, self.avg.period_contrib, load.load_weight);
            }
        }
        if self
            .avg
            .update_load_sum(now, load.load_weight, load.h_nr_running, load.curr)
        {
            self.avg.update_load_avg(1);
            return true;
        }
        false
    }

    /// Applies the pending removals, then updates the signal to `now`.
    /// Returns true if the load decayed or load was removed.
    ///
    /// Follows fair.c: update_cfs_rq_load_avg() (v6.6-v6.12): each removed avg is
    /// subtracted from the avg and `avg * divider` from the sum (clamped at 0),
    /// then each sum is raised to at least `avg * PELT_MIN_DIVIDER` (see
    /// `max_t_u32_min_divider` for the kernel's 32-bit truncation). The task-group
    /// propagation of the removed runnable sum is
    /// [`update_cfs_rq_load_avg_tg`](crate::update_cfs_rq_load_avg_tg)'s.
    #[inline]
    pub fn update_cfs_rq_load_avg(&mut self, now: u64, load: &CfsRqLoad) -> bool {
        let mut decayed = false;
        if self.removed.nr != 0 {
            let divider = u64::from(self.avg.get_pelt_divider());
            let removed = core::mem::take(&mut self.removed);
            let sa = &mut self.avg;

            let r = removed.load_avg;
            let unclamped = i128::from(sa.load_sum) - i128::from(r.wrapping_mul(divider));
            sub_positive_u64(&mut sa.load_avg, r);
            sub_positive_u64(&mut sa.load_sum, r.wrapping_mul(divider));
            let t = &mut self.truncated;
            sa.load_sum = floor_load_sum(sa.load_sum, sa.load_avg, unclamped, t);

            let r = removed.util_avg;
            let unclamped = i128::from(sa.util_sum) - i128::from(r.wrapping_mul(divider) as u32);
            sub_positive_u64(&mut sa.util_avg, r);
            sub_positive_u32(&mut sa.util_sum, r.wrapping_mul(divider) as u32);
            sa.util_sum = floor_util_sum(sa.util_sum, sa.util_avg, unclamped, t);

            let r = removed.runnable_avg;
            let unclamped = i128::from(sa.runnable_sum) - i128::from(r.wrapping_mul(divider));
            sub_positive_u64(&mut sa.runnable_avg, r);
            sub_positive_u64(&mut sa.runnable_sum, r.wrapping_mul(divider));
            sa.runnable_sum = floor_runnable_sum(sa.runnable_sum, sa.runnable_avg, unclamped, t);

            decayed = true;
        }
        decayed |= self.update_load_avg_cfs_rq(now, load);
        decayed
    }

    /// Adds an entity's load to the cfs_rq: `load_avg += se.load_avg`,
    /// `load_sum += weight * se.load_sum`.
    ///
    /// Follows fair.c: enqueue_load_avg() (v6.6-v6.12).
    pub fn enqueue_load_avg(&mut self, se: &SchedAvg, weight: u64) {
        self.avg.load_avg = self.avg.load_avg.wrapping_add(se.load_avg);
        self.avg.load_sum = self
            .avg
            .load_sum
            .wrapping_add(weight.wrapping_mul(se.load_sum));
    }

    /// Removes an entity's load from the cfs_rq, clamped at 0, keeping
    /// `load_sum >= load_avg * PELT_MIN_DIVIDER`.
    ///
    /// Follows fair.c: dequeue_load_avg() (v6.6-v6.12), including the 32-bit
    /// `max_t(u32, ...)` truncation of `load_sum`.
    pub fn dequeue_load_avg(&mut self, se: &SchedAvg, weight: u64) {
        let unclamped =
            i128::from(self.avg.load_sum) - i128::from(weight.wrapping_mul(se.load_sum));
        sub_positive_u64(&mut self.avg.load_avg, se.load_avg);
        sub_positive_u64(&mut self.avg.load_sum, weight.wrapping_mul(se.load_sum));
        let t = &mut self.truncated;
        self.avg.load_sum = floor_load_sum(self.avg.load_sum, self.avg.load_avg, unclamped, t);
    }

    /// Attaches an entity: aligns its PELT window with the cfs_rq's, rebuilds
    /// its sums from its averages and adds both to the cfs_rq.
    ///
    /// Must follow [`CfsRqAvg::update_cfs_rq_load_avg`] at the same `now`.
    ///
    /// Follows fair.c: attach_entity_load_avg() (v6.6-v6.12): `util_sum =
    /// util_avg * divider`, `runnable_sum = runnable_avg * divider`, `load_sum =
    /// load_avg * divider / weight` or 1 when that product does not exceed the
    /// weight, with the cfs_rq's divider.
    pub fn attach_entity_load_avg(&mut self, se: &mut SchedAvg, weight: u64) {
        let divider = self.avg.get_pelt_divider();

        se.last_update_time = self.avg.last_update_time;
        se.period_contrib = self.avg.period_contrib;

        se.util_sum = se.util_avg.wrapping_mul(u64::from(divider)) as u32;
        se.runnable_sum = se.runnable_avg.wrapping_mul(u64::from(divider));

        se.load_sum = se.load_avg.wrapping_mul(u64::from(divider));
        se.load_sum = if weight < se.load_sum {
            se.load_sum / weight
        } else {
            1
        };

        self.enqueue_load_avg(se, weight);
        self.avg.util_avg = self.avg.util_avg.wrapping_add(se.util_avg);
        self.avg.util_sum = self.avg.util_sum.wrapping_add(se.util_sum);
        self.avg.runnable_avg = self.avg.runnable_avg.wrapping_add(se.runnable_avg);
        self.avg.runnable_sum = self.avg.runnable_sum.wrapping_add(se.runnable_sum);
    }

    /// Detaches an entity: subtracts its averages and sums from the cfs_rq
    /// (clamped at 0, sums kept `>= avg * PELT_MIN_DIVIDER`). The entity keeps
    /// its own signal.
    ///
    /// Must follow [`CfsRqAvg::update_cfs_rq_load_avg`] at the same `now`.
    ///
    /// Follows fair.c: detach_entity_load_avg() (v6.6-v6.12).
    pub fn detach_entity_load_avg(&mut self, se: &SchedAvg, weight: u64) {
        self.dequeue_load_avg(se, weight);

        let t = &mut self.truncated;
        let unclamped = i128::from(self.avg.util_sum) - i128::from(se.util_sum);
        sub_positive_u64(&mut self.avg.util_avg, se.util_avg);
        sub_positive_u32(&mut self.avg.util_sum, se.util_sum);
        self.avg.util_sum = floor_util_sum(self.avg.util_sum, self.avg.util_avg, unclamped, t);

        let unclamped = i128::from(self.avg.runnable_sum) - i128::from(se.runnable_sum);
        sub_positive_u64(&mut self.avg.runnable_avg, se.runnable_avg);
        sub_positive_u64(&mut self.avg.runnable_sum, se.runnable_sum);
        self.avg.runnable_sum =
            floor_runnable_sum(self.avg.runnable_sum, self.avg.runnable_avg, unclamped, t);
    }

    /// Updates an entity and its cfs_rq at `now`, in the kernel's order: age the
    /// entity (if it is attached and `SKIP_AGE_LOAD` is not set), update the
    /// cfs_rq (applying removals), then attach (`DO_ATTACH` and
    /// `se.last_update_time == 0`), or detach (`DO_DETACH`).
    ///
    /// `se_load` and `cfs_load` are what the rq holds at this moment (before the
    /// caller's own enqueue/dequeue accounting). `util_est` is the `UTIL_EST`
    /// sched feature.
    ///
    /// Follows fair.c: update_load_avg() (v6.6-v6.12) for a task entity (no
    /// group propagation).
    ///
    /// `#[inline]`: rustc without LTO inlines a non-generic function into another crate
    /// only when marked so; the runqueue's callers (every tick, pick and dequeue) ignore
    /// the [`LoadAvgUpdate`], which inlined is then not built.
    #[inline]
    pub fn update_load_avg(
        &mut self,
        se: &mut SchedAvg,
        now: u64,
        se_load: &SeLoad,
        cfs_load: &CfsRqLoad,
        flags: UpdateFlags,
        util_est: bool,
    ) -> LoadAvgUpdate {
        // Track the task's load average to carry it to a new CPU after migration.
        if se.last_update_time != 0 && !flags.contains(UpdateFlags::SKIP_AGE_LOAD) {
            update_load_avg_se(now, se, se_load, util_est);
        }

        let decayed = self.update_cfs_rq_load_avg(now, cfs_load);
        // propagate_entity_load_avg() returns 0 for a task entity.

        let mut out = LoadAvgUpdate {
            decayed,
            ..LoadAvgUpdate::default()
        };
        if se.last_update_time == 0 && flags.contains(UpdateFlags::DO_ATTACH) {
            // Enqueueing a task on a new CPU (or a new task).
            self.attach_entity_load_avg(se, se_load.weight);
            out.attached = true;
            out.cfs_rq_util_change = true;
            out.update_tg_load_avg = true;
        } else if flags.contains(UpdateFlags::DO_DETACH) {
            // Dequeueing a task the load balancer migrates.
            self.detach_entity_load_avg(se, se_load.weight);
            out.detached = true;
            out.cfs_rq_util_change = true;
            out.update_tg_load_avg = true;
        } else if decayed {
            out.cfs_rq_util_change = true;
            out.update_tg_load_avg = flags.contains(UpdateFlags::UPDATE_TG);
        }
        out
    }

    /// Decays a dequeued entity to the cfs_rq's `last_update_time` without
    /// touching the cfs_rq.
    ///
    /// Follows fair.c: sync_entity_load_avg() (v6.6-v6.12, 64-bit: no
    /// `last_update_time_copy` dance).
    pub fn sync_entity_load_avg(&self, se: &mut SchedAvg, weight: u64) {
        update_load_avg_blocked_se(self.avg.last_update_time, se, weight);
    }

    /// A sleeping task leaves this cfs_rq (wake-up migration or exit): sync it,
    /// then record its averages in [`CfsRqAvg::removed`] for the next
    /// [`CfsRqAvg::update_cfs_rq_load_avg`] to subtract.
    ///
    /// The kernel then sets `se.last_update_time = 0` in migrate_task_rq_fair()
    /// so that the next enqueue attaches; that is left to the caller (after
    /// [`CfsRqAvg::migrate_se_pelt_lag`] if it models NO_HZ).
    ///
    /// Follows fair.c: remove_entity_load_avg() (v6.6-v6.12).
    pub fn remove_entity_load_avg(&mut self, se: &mut SchedAvg, weight: u64) {
        self.sync_entity_load_avg(se, weight);
        self.removed.nr += 1;
        self.removed.util_avg = self.removed.util_avg.wrapping_add(se.util_avg);
        self.removed.load_avg = self.removed.load_avg.wrapping_add(se.load_avg);
        self.removed.runnable_avg = self.removed.runnable_avg.wrapping_add(se.runnable_avg);
    }

    /// Changes a (possibly queued) entity's weight: its load leaves the cfs_rq
    /// at the old weight, its `load_avg` is recomputed from its `load_sum` at
    /// the new weight, and it comes back.
    ///
    /// Follows fair.c: the PELT part of reweight_entity() (v6.6-v6.12); the
    /// `load.weight`, vruntime and lag parts are the rq's.
    pub fn reweight_entity_load_avg(
        &mut self,
        se: &mut SchedAvg,
        old_weight: u64,
        new_weight: u64,
    ) {
        self.dequeue_load_avg(se, old_weight);
        let divider = u64::from(se.get_pelt_divider());
        se.load_avg = new_weight.wrapping_mul(se.load_sum) / divider;
        self.enqueue_load_avg(se, new_weight);
    }

    /// Estimates the idle time a NO_HZ-idle source CPU has not accounted yet and
    /// decays a migrating entity over it.
    ///
    /// `src_curr_is_idle` is `is_idle_task(rq->curr)` of the source rq,
    /// `sched_clock_now` the source CPU's `sched_clock_cpu()`. Without
    /// CONFIG_CFS_BANDWIDTH (no throttled time).
    ///
    /// Follows fair.c: migrate_se_pelt_lag() (v6.6-v6.12, CONFIG_NO_HZ_COMMON).
    pub fn migrate_se_pelt_lag(
        &self,
        se: &mut SchedAvg,
        weight: u64,
        src: &crate::clock::RqClockPelt,
        src_curr_is_idle: bool,
        sched_clock_now: u64,
    ) {
        if se.load_avg_is_decayed() {
            return;
        }
        // Limited to an idle source CPU, where the clock is most likely stale.
        if !src_curr_is_idle {
            return;
        }
        let throttled = 0u64;
        let lut = self.avg.last_update_time;
        let mut now = src.clock_pelt_idle.wrapping_sub(throttled);
        if now < lut {
            now = lut;
        } else {
            now = now.wrapping_add(sched_clock_now.wrapping_sub(src.clock_idle));
        }
        update_load_avg_blocked_se(now, se, weight);
    }
}

#[cfg(test)]
mod tests;
