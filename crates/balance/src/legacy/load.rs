//! The load the pre-v5.5 balancer reads from a runqueue: `runnable_load_avg`,
//! cfs_rq_runnable_load_avg() (with seed 003's `LB_TIP_AVG_HIGH`), weighted_cpuload(),
//! cpu_avg_load_per_task() and cpu_util(), following kernel/sched/fair.c of v4.6 (and
//! KERNEL-HISTORY §2.1, §4).

use lbsim_rq::Rq;
use lbsim_rq::Tasks;

use crate::lb::NICE_0_LOAD;

/// `cfs_rq->runnable_load_avg` (v4.6-v5.6): the load average of the entities queued on the
/// CPU's cfs_rq (the running one included).
///
/// Deliberately differs from the kernel: v4.6 keeps a decayed sum of its own
/// (`runnable_load_sum`, accrued and decayed inside the cfs_rq's own __update_load_avg()
/// call, on the cfs_rq's 1024 us periods, with `runnable_load_avg` recomputed from it only
/// when a period ends; enqueue_entity_load_avg() adds the entity's `load_avg`/`load_sum`,
/// dequeue_entity_load_avg() subtracts them, each clamped at 0), which the runqueue crate of
/// v6.x does not track. lbsim sums the queued entities' `se.avg.load_avg` when asked. The
/// two are not the same: each entity's average decays on its own periods (its own
/// `period_contrib`), so its share of the kernel's sum and its own average differ by up to
/// one period's decay (about 2%), and the kernel's value is stale between period ends. A CPU
/// a task left therefore keeps a residue of up to about 2% of that task's load in the
/// kernel (or, below 0, the clamp hides part of the next task's), where lbsim's sum is
/// exactly that of the tasks queued. Seed 003's message-thread CPU is where it would show:
/// a residue keeps wake_affine()'s `this_load` off 0 (docs/experiments.md, "Why lbsim's
/// base stacks in fewer runs"). Entities left queued by DELAY_DEQUEUE (v6.12, absent from
/// these kernels) are not counted.
pub fn runnable_load_avg(rq: &Rq, tasks: &Tasks) -> u64 {
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
