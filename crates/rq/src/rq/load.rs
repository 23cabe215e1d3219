//! The load and utilization getters the balancer reads, following kernel/sched/fair.c of
//! v6.12: `cpu_load()` (and lbsim's `LB_TIP_AVG_HIGH` read), `cpu_load_without()`,
//! `cpu_runnable()`, `cpu_runnable_without()`, `cpu_util()`, `cpu_util_cfs()`,
//! `cpu_util_cfs_boost()`, `cpu_util_without()`, `task_h_load()`, `capacity_of()`,
//! `check_cpu_capacity()`, and the task getters `task_util()`, `_task_util_est()`,
//! `task_util_est()`, `task_runnable()`.

use lbsim_pelt::UTIL_AVG_UNCHANGED;
use lbsim_topology::CpuId;

use crate::entity::TaskId;
use crate::params::RqFeat;
use crate::task::Tasks;
use crate::weights::NICE_0_LOAD;

use super::Rq;

impl Rq {
    // ---------------------------------------------------------------------------------
    // Getters the load balancer reads

    /// `cpu_load(rq)`: `cfs.avg.load_avg` (the PELT load, not the instantaneous weight).
    #[inline]
    pub fn cpu_load(&self) -> u64 {
        self.cfs.avg.avg.load_avg
    }

    /// The load the balancer reads: [`Rq::cpu_load`], or with `LB_TIP_AVG_HIGH` (lbsim, seed
    /// 003, never merged; the caller says whether it is on) tipped towards the queued weight
    /// when the average lags it: if `load.weight > 2 * load_avg`,
    /// `load_avg + min(NICE_0_LOAD, load.weight / 2)`.
    #[inline]
    pub fn cpu_load_lb(&self, tip_avg_high: bool) -> u64 {
        let load_avg = self.cpu_load();
        if tip_avg_high {
            let weight = self.root_load_weight();
            if weight > 2 * load_avg {
                return load_avg + NICE_0_LOAD.min(weight / 2);
            }
        }
        load_avg
    }

    /// Follows fair.c: `cpu_load_without()`: the load without `p`'s contribution, if it has
    /// one here.
    pub fn cpu_load_without(&self, tasks: &Tasks, p: TaskId) -> u64 {
        let t = &tasks[p];
        if t.cpu != self.cpu || t.se.avg.last_update_time == 0 {
            return self.cpu_load();
        }
        self.cpu_load().saturating_sub(self.task_h_load(tasks, p))
    }

    /// `cpu_runnable(rq)`: `cfs.avg.runnable_avg`.
    #[inline]
    pub fn cpu_runnable(&self) -> u64 {
        self.cfs.avg.avg.runnable_avg
    }

    /// Follows fair.c: `cpu_runnable_without()`.
    pub fn cpu_runnable_without(&self, tasks: &Tasks, p: TaskId) -> u64 {
        let t = &tasks[p];
        if t.cpu != self.cpu || t.se.avg.last_update_time == 0 {
            return self.cpu_runnable();
        }
        self.cpu_runnable().saturating_sub(t.se.avg.runnable_avg)
    }

    /// The CFS utilization of this CPU, optionally predicting `p` moving to `dst_cpu`
    /// (`dst_cpu == None` is the kernel's -1: `p` leaves).
    ///
    /// Follows fair.c: `cpu_util()` (v6.12): `util_avg` (max with `runnable_avg` if `boost`),
    /// minus `p`'s util if it leaves this CPU or plus it if it comes here; with `UTIL_EST` the
    /// max with the enqueued estimate (plus `p`'s if it comes here, minus if it is queued
    /// here); capped at `capacity_orig`. The kernel's `current == p` exec-race check is not
    /// modelled.
    #[inline]
    pub fn cpu_util(
        &self,
        tasks: &Tasks,
        p: Option<TaskId>,
        dst_cpu: Option<CpuId>,
        boost: bool,
    ) -> u64 {
        let avg = &self.cfs.avg.avg;
        let mut util = avg.util_avg;
        if boost {
            util = util.max(avg.runnable_avg);
        }
        if let Some(p) = p {
            let t = &tasks[p];
            if t.cpu == self.cpu && dst_cpu != Some(self.cpu) {
                util = util.saturating_sub(t.se.avg.util_avg);
            } else if t.cpu != self.cpu && dst_cpu == Some(self.cpu) {
                util += t.se.avg.util_avg;
            }
        }
        if self.params.feat(RqFeat::UtilEst) {
            let mut util_est = u64::from(avg.util_est);
            if let Some(p) = p {
                let est = u64::from(tasks[p].se.avg.util_est_value());
                if dst_cpu == Some(self.cpu) {
                    util_est += est;
                } else if tasks[p].on_rq_queued() {
                    util_est = util_est.saturating_sub(est);
                }
            }
            util = util.max(util_est);
        }
        util.min(self.capacity_orig)
    }

    /// `cpu_util_cfs(cpu)`: `cpu_util(cpu, NULL, -1, 0)`.
    #[inline]
    pub fn cpu_util_cfs(&self, tasks: &Tasks) -> u64 {
        self.cpu_util(tasks, None, None, false)
    }

    /// `cpu_util_cfs_boost(cpu)`: `cpu_util(cpu, NULL, -1, 1)`.
    pub fn cpu_util_cfs_boost(&self, tasks: &Tasks) -> u64 {
        self.cpu_util(tasks, None, None, true)
    }

    /// Follows fair.c: `cpu_util_without()`: `cpu_util(cpu, p, -1, 0)` if `p` contributes here.
    pub fn cpu_util_without(&self, tasks: &Tasks, p: TaskId) -> u64 {
        let t = &tasks[p];
        let p = if t.cpu != self.cpu || t.se.avg.last_update_time == 0 {
            None
        } else {
            Some(p)
        };
        self.cpu_util(tasks, p, None, false)
    }

    /// `task_h_load(p)`: without task groups `p->se.avg.load_avg`; with them the task's share
    /// of the root cfs_rq's load through its groups' `h_load` (see `rq/hier.rs`).
    #[inline]
    pub fn task_h_load(&self, tasks: &Tasks, p: TaskId) -> u64 {
        if self.groups.is_some() {
            return self.task_h_load_h(tasks, p);
        }
        tasks[p].se.avg.load_avg
    }

    /// `capacity_of(cpu)`: `rq->cpu_capacity`.
    pub fn capacity_of(&self) -> u64 {
        self.cpu_capacity
    }

    /// `check_cpu_capacity(rq, sd)`: the CPU lost more than `imbalance_pct - 100` percent of its
    /// capacity to other classes and irq (`cpu_capacity * imbalance_pct < capacity_orig * 100`).
    pub fn check_cpu_capacity(&self, imbalance_pct: u64) -> bool {
        self.cpu_capacity * imbalance_pct < self.capacity_orig * 100
    }
}

/// `_task_util_est(p)`: the task's util_est without the `UTIL_AVG_UNCHANGED` flag.
pub fn task_util_est_raw(tasks: &Tasks, p: TaskId) -> u64 {
    u64::from(tasks[p].se.avg.util_est & !UTIL_AVG_UNCHANGED)
}

/// `task_util(p)`: `se.avg.util_avg`.
pub fn task_util(tasks: &Tasks, p: TaskId) -> u64 {
    tasks[p].se.avg.util_avg
}

/// `task_util_est(p)`: `max(task_util(p), _task_util_est(p))`.
pub fn task_util_est(tasks: &Tasks, p: TaskId) -> u64 {
    lbsim_pelt::task_util_est(&tasks[p].se.avg)
}

/// `task_runnable(p)`: `se.avg.runnable_avg`.
pub fn task_runnable(tasks: &Tasks, p: TaskId) -> u64 {
    tasks[p].se.avg.runnable_avg
}
