//! The tick, following kernel/sched/core.c and fair.c of v6.12: `sched_tick()` with
//! `task_tick_fair()`, `update_misfit_status()`, `task_fits_cpu()` and
//! `update_blocked_averages()`.

use lbsim_pelt::{update_dl_rq_load_avg, update_irq_load_avg, update_rt_rq_load_avg};

use crate::entity::TaskId;
use crate::task::Tasks;

use super::{Rq, fits_capacity, task_util_est};

impl Rq {
    // ---------------------------------------------------------------------------------
    // Tick

    /// The periodic scheduler tick on this CPU. Returns [`Rq::need_resched`].
    ///
    /// Follows core.c: `sched_tick()` (v6.12): update the clock, then the current task's
    /// `task_tick_fair()`: `entity_tick()` (`update_curr()`, PELT; under legacy CFS
    /// `check_preempt_tick()`) and `update_misfit_status()`. The balance trigger
    /// (`sched_balance_trigger()`) is the caller's.
    pub fn sched_tick(&mut self, tasks: &mut Tasks, now_ns: u64) -> bool {
        self.update_rq_clock(now_ns);
        if let Some(curr) = self.curr {
            if self.groups.is_some() {
                self.task_tick_fair_h(tasks, curr);
            } else {
                let params = self.params;
                let clock = self.cfs_clock();
                self.cfs.entity_tick(tasks, curr, clock, &params);
            }
            self.update_misfit_status(tasks, Some(curr));
        }
        self.need_resched()
    }

    /// Follows fair.c: `update_misfit_status()` (v6.12): on an asymmetric-capacity machine, a
    /// task that could go to a bigger allowed CPU and does not fit this one makes this rq
    /// misfit with its load (at least 1).
    pub fn update_misfit_status(&mut self, tasks: &Tasks, p: Option<TaskId>) {
        if !self.asym_cpucap_active {
            return;
        }
        let misfit = match p {
            None => 0,
            Some(p) => {
                let t = &tasks[p];
                if t.nr_cpus_allowed == 1
                    || self.capacity_orig == t.max_allowed_capacity
                    || self.task_fits_cpu(tasks, p)
                {
                    0
                } else {
                    self.task_h_load(tasks, p).max(1)
                }
            }
        };
        self.misfit_task_load = misfit;
    }

    /// Follows fair.c: `task_fits_cpu()` / `util_fits_cpu()` without uclamp:
    /// `fits_capacity(task_util_est(p), capacity_of(cpu))`.
    pub fn task_fits_cpu(&self, tasks: &Tasks, p: TaskId) -> bool {
        fits_capacity(task_util_est(tasks, p), self.cpu_capacity)
    }

    /// Decay the blocked PELT signals of this runqueue. Returns whether anything decayed.
    ///
    /// Follows fair.c: `sched_balance_update_blocked_averages()` (v6.12) for one flat rq:
    /// `__update_blocked_others()` (rt, dl, irq; no hw pressure) and `__update_blocked_fair()`
    /// (`update_cfs_rq_load_avg()`; with task groups every cfs_rq of the leaf list, see
    /// `Rq::update_blocked_fair_h`), then `has_blocked_load` from what still decays.
    pub fn update_blocked_averages(&mut self, tasks: &mut Tasks, now_ns: u64) -> bool {
        self.update_rq_clock(now_ns);
        let now = self.rq_clock_pelt();
        let mut decayed = update_rt_rq_load_avg(now, &mut self.avg_rt, false);
        decayed |= update_dl_rq_load_avg(now, &mut self.avg_dl, false);
        decayed |= update_irq_load_avg(
            self.clocks.clock,
            &mut self.avg_irq,
            0,
            self.capacity_orig,
            self.freq_capacity,
        );
        let others_blocked =
            self.avg_rt.util_avg != 0 || self.avg_dl.util_avg != 0 || self.avg_irq.util_avg != 0;
        if self.groups.is_some() {
            let (d, cfs_blocked) = self.update_blocked_fair_h(tasks, now);
            self.has_blocked_load = others_blocked || cfs_blocked;
            return decayed | d;
        }
        let load = self.cfs.pelt_load();
        decayed |= self.cfs.avg.update_cfs_rq_load_avg(now, &load);
        let cfs_blocked = self.cfs.avg.avg.load_avg != 0 || self.cfs.avg.avg.util_avg != 0;
        self.has_blocked_load = others_blocked || cfs_blocked;
        decayed
    }
}
