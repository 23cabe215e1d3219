//! The load the pre-v5.5 balancer reads from a runqueue: `runnable_load_avg` (kept by the
//! runqueue's root cfs_rq per release, `lbsim_pelt::RunnableLoad`),
//! cfs_rq_runnable_load_avg() (with seed 003's `LB_TIP_AVG_HIGH`), weighted_cpuload(),
//! cpu_avg_load_per_task() and cpu_util(), following kernel/sched/fair.c of v4.6 (and
//! KERNEL-HISTORY §2.1, §4).

use lbsim_rq::Rq;
use lbsim_rq::Tasks;

use crate::lb::NICE_0_LOAD;

/// `cfs_rq->runnable_load_avg` (v4.6-v5.6) of the CPU's root cfs_rq.
///
/// Follows fair.c of v4.6-v5.6: the cfs_rq's own decayed sum, which the runqueue keeps
/// when the run follows a kernel profile before v5.7 ([`lbsim_pelt::RunnableLoad`]:
/// accrued with the queued weight on the cfs_rq's periods, the average recomputed only
/// when a period ends, an entity's `load_avg`/`load_sum` added at enqueue and subtracted,
/// clamped at 0, at dequeue). It therefore lags the queued tasks' own averages by up to a
/// period's decay, and a CPU a task left keeps a residue until it decays (seed 003's
/// message-thread CPU: docs/experiments.md, "Why lbsim's base stacks in fewer runs").
///
/// A runqueue that keeps no such sum (one built by hand for a unit test, without a kernel
/// profile) reads lbsim's stand-in instead: the sum of the queued tasks' `se.avg.load_avg`
/// (entities left queued by v6.12's DELAY_DEQUEUE, absent from these kernels, not counted).
pub fn runnable_load_avg(rq: &Rq, tasks: &Tasks) -> u64 {
    let kept = &rq.cfs.avg.runnable_load;
    if kept.form.tracked() {
        return kept.avg;
    }
    rq.cfs
        .cfs_tasks()
        .filter(|&p| !tasks[p].se.sched_delayed)
        .map(|p| tasks[p].se.avg.load_avg)
        .sum()
}

/// Follows fair.c: cfs_rq_runnable_load_avg() (v4.6), with seed 003's patch
/// (`LB_TIP_AVG_HIGH`, /work/shared/seeds/003_683fe9f44b3c1881.txt): when
/// `cfs_rq->load.weight > 2 * runnable_load_avg`, the average is tipped up by
/// `min(NICE_0_LOAD, load.weight / 2)`, so a runqueue that just received tasks looks loaded
/// at once. Weights are in v4.6's unscaled units (nice 0 = 1024), as the seed ran.
#[inline]
pub fn cfs_rq_runnable_load_avg(rq: &Rq, tasks: &Tasks, tip_avg_high: bool) -> u64 {
    let avg = runnable_load_avg(rq, tasks);
    let weight = rq.cfs.load.weight;
    if tip_avg_high && weight > avg * 2 {
        return avg + NICE_0_LOAD.min(weight / 2);
    }
    avg
}

/// Follows fair.c: weighted_cpuload() (v4.6; cpu_runnable_load() from v5.3):
/// `cfs_rq_runnable_load_avg(&rq->cfs)`.
#[inline]
pub fn weighted_cpuload(rq: &Rq, tasks: &Tasks, tip_avg_high: bool) -> u64 {
    cfs_rq_runnable_load_avg(rq, tasks, tip_avg_high)
}

/// Follows fair.c: cpu_avg_load_per_task() (v4.6-v5.4): weighted_cpuload() per CFS task,
/// 0 without tasks.
pub fn cpu_avg_load_per_task(rq: &Rq, tasks: &Tasks, tip_avg_high: bool) -> u64 {
    let nr = u64::from(rq.cfs.h_nr_running);
    if nr == 0 {
        return 0;
    }
    weighted_cpuload(rq, tasks, tip_avg_high) / nr
}

/// Follows fair.c: cpu_util() (v4.6; v4.17+ with util_est when `UTIL_EST` is on, as the
/// runqueue's cpu_util_cfs() reads it): the CFS utilization capped at `capacity_orig`
/// (the legacy balancer's, which is 589 on an SMT thread before v5.0).
pub fn cpu_util(rq: &Rq, tasks: &Tasks, capacity_orig: u64) -> u64 {
    rq.cpu_util_cfs(tasks).min(capacity_orig)
}
