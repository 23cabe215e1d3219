//! The signals of a new task.

use crate::avg::SchedAvg;
use crate::cfs_rq::CfsRqAvg;

/// The signal of a task entity at fork: everything zero except `load_avg`,
/// which starts at the full weight so the task looks heavy until its signal
/// settles. `last_update_time` is 0, so its first enqueue attaches it.
///
/// Follows fair.c: init_entity_runnable_average() (v6.6-v6.12), task entity.
#[must_use]
pub fn init_entity_runnable_average(weight: u64) -> SchedAvg {
    SchedAvg {
        load_avg: weight,
        ..SchedAvg::default()
    }
}

/// What a new task's `runnable_avg` starts at (the last line of
/// post_init_entity_util_avg()).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunnableInit {
    /// `sa->runnable_avg = sa->util_avg`: no waiting time so far (v5.8-rc3 on,
    /// commit e21cf43406a1 "sched/cfs: change initial value of runnable_avg").
    #[default]
    UtilAvg,
    /// `sa->runnable_avg = cpu_scale`: the task looks as if it had always been
    /// runnable (v5.7 to v5.8-rc2, from 9f68395333ad "sched/pelt: Add a new
    /// runnable average signal"). A group of freshly forked tasks is then
    /// classified overloaded by its runnable_avg at once.
    CpuScale,
}

/// Extrapolates a new fair task's initial util_avg from its cfs_rq at wake-up:
/// `cfs_rq.util_avg * weight / (cfs_rq.load_avg + 1)`, capped at half the
/// capacity the cfs_rq leaves free (`(cpu_capacity - cfs_rq.util_avg) / 2`), or
/// that cap if the cfs_rq has no utilization; nothing when the cap is not
/// positive. `runnable_avg` is set equal to `util_avg`, or with
/// [`RunnableInit::CpuScale`] (the v5.7 kernel) to `cpu_capacity`.
///
/// `cpu_capacity` is `arch_scale_cpu_capacity()` of the CPU the task wakes on,
/// `weight` its `se_weight()`. Only the fair-class case is modelled (a task of
/// another class would instead get `last_update_time = cfs_rq_clock_pelt()`).
///
/// Follows fair.c: post_init_entity_util_avg() (v6.6-v6.12; v5.7 with
/// [`RunnableInit::CpuScale`]).
pub fn post_init_entity_util_avg(
    se: &mut SchedAvg,
    cfs_rq: &CfsRqAvg,
    cpu_capacity: u64,
    weight: u64,
    runnable_init: RunnableInit,
) {
    // `long cap = (long)(cpu_scale - cfs_rq->avg.util_avg) / 2;` where the
    // subtraction is unsigned and the division signed.
    let cap = (cpu_capacity.wrapping_sub(cfs_rq.avg.util_avg) as i64) / 2;

    if cap > 0 {
        let cap = cap as u64;
        if cfs_rq.avg.util_avg != 0 {
            se.util_avg = cfs_rq.avg.util_avg.wrapping_mul(weight);
            se.util_avg /= cfs_rq.avg.load_avg.wrapping_add(1);
            if se.util_avg > cap {
                se.util_avg = cap;
            }
        } else {
            se.util_avg = cap;
        }
    }
    se.runnable_avg = match runnable_init {
        RunnableInit::UtilAvg => se.util_avg,
        RunnableInit::CpuScale => cpu_capacity,
    };
}

/// A new task's util_avg in the kernels before post_init_entity_util_avg(): the full scale,
/// `scale_load_down(SCHED_LOAD_SCALE)` = 1024, whatever its CPU's capacity or load, so that a
/// new task looks as busy as a CPU until its signal settles. `runnable_avg` (a v5.7 signal
/// the v4.6 kernel did not have) follows `runnable_init` as in
/// [`post_init_entity_util_avg`].
///
/// Follows fair.c: init_entity_runnable_average() (v4.3-v4.6: from the PELT rewrite
/// 9d89c257dfb9 to 2b8c41daba32 "sched/fair: Initiate a new task's util avg to a bounded
/// value", v4.7). Deliberately differs: v4.6 also
/// set `util_sum = util_avg * LOAD_AVG_MAX`, `load_sum = load_avg * LOAD_AVG_MAX` and
/// `period_contrib = 1023`, the sums of its own PELT; lbsim's PELT (v6.12's) derives the sums
/// from the averages when the task is attached ([`CfsRq::attach_entity_load_avg`]), so the
/// averages are what carries over.
///
/// [`CfsRq::attach_entity_load_avg`]: crate::cfs_rq::CfsRqAvg::attach_entity_load_avg
pub fn init_util_avg_full_scale(se: &mut SchedAvg, cpu_capacity: u64, runnable_init: RunnableInit) {
    se.util_avg = crate::consts::SCHED_CAPACITY_SCALE;
    se.runnable_avg = match runnable_init {
        RunnableInit::UtilAvg => se.util_avg,
        RunnableInit::CpuScale => cpu_capacity,
    };
}

#[cfg(test)]
mod tests;
