//! One task on one otherwise idle CPU: feed run-state changes, read signals.
//!
//! [`OneTaskCpu`] drives the PELT functions of this crate in the order the
//! kernel calls them on the wake-up, preemption, tick and sleep paths of a
//! single CPU with a single fair task, so that a caller who only has a
//! sequence of `(time, state)` changes gets the kernel's signals for it.

use crate::avg::SchedAvg;
use crate::cfs_rq::{CfsRqAvg, CfsRqLoad, SeLoad, UpdateFlags, update_load_avg_se};
use crate::clock::RqClockPelt;
use crate::consts::SCHED_CAPACITY_SCALE;
use crate::init::{RunnableInit, init_entity_runnable_average, post_init_entity_util_avg};
use crate::util_est::{util_est_dequeue, util_est_enqueue, util_est_update};

/// What the task is doing from a given instant on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Blocked: not on the runqueue. The CPU is idle.
    Sleeping,
    /// Queued but not running: the CPU is busy with work this model does not
    /// track (a higher scheduling class, say), so its PELT clock runs as on a
    /// busy CPU.
    Runnable,
    /// Running on the CPU.
    Running,
}

/// The fixed parameters of a [`OneTaskCpu`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OneTaskCpuConfig {
    /// The task's `se_weight()` (1024 for nice 0).
    pub weight: u64,
    /// `arch_scale_cpu_capacity()` of the CPU, 1..=1024.
    pub cpu_capacity: u64,
    /// `arch_scale_freq_capacity()` of the CPU (its current frequency out of
    /// its highest, scaled to 1024).
    pub freq_capacity: u64,
    /// The `UTIL_EST` sched feature.
    pub util_est: bool,
    /// Start as a freshly forked task (fork-time initialisation, then
    /// `post_init_entity_util_avg()` and attach on its first enqueue) instead of
    /// an attached task whose history has fully decayed.
    pub new_task: bool,
}

impl Default for OneTaskCpuConfig {
    fn default() -> Self {
        Self {
            weight: 1024,
            cpu_capacity: SCHED_CAPACITY_SCALE,
            freq_capacity: SCHED_CAPACITY_SCALE,
            util_est: true,
            new_task: false,
        }
    }
}

/// One fair task on one CPU that runs nothing else, with the task's, the
/// cfs_rq's and the rq clock's PELT state.
///
/// Time starts at 0 with every clock at 0. Times passed in must not decrease
/// (an earlier time changes nothing). Every change goes through the kernel's
/// path for it (v6.12 order):
/// - wake-up (`Sleeping` to `Runnable`/`Running`): `update_rq_clock()` on the
///   idle rq, `util_est_enqueue()`, `enqueue_entity()`'s
///   `update_load_avg(UPDATE_TG | DO_ATTACH)`, and for `Running`
///   `set_next_entity()`'s `update_load_avg(UPDATE_TG)`;
/// - sleep (to `Sleeping`): `util_est_dequeue()`, `util_est_update()`,
///   `dequeue_entity()`'s `update_load_avg(UPDATE_TG)`, then the rq goes idle
///   (`update_idle_rq_clock_pelt()`);
/// - preemption (`Running` to `Runnable`): `put_prev_entity()`'s
///   `update_load_avg(0)`; `Runnable` to `Running`: `set_next_entity()`;
/// - [`OneTaskCpu::update`] without a change: a running task's tick
///   (`entity_tick()`: `update_load_avg(UPDATE_TG)`), a runnable task's
///   `update_load_avg(0)`, or for a sleeping task the blocked-load update of the
///   idle CPU (`update_cfs_rq_load_avg()`) plus a sync of the task
///   (`__update_load_avg_blocked_se()`).
///
/// Deliberate difference: the kernel treats an entity whose `last_update_time`
/// is 0 as not attached (it skips aging it, and attaches it on enqueue). Here
/// time starts at 0, so the attached, fully decayed entity of the default mode
/// also has `last_update_time` 0 until its first whole 1024-ns unit is
/// accounted; until then it is aged as an attached entity (the update that
/// update_load_avg() would make if its timestamp were non-zero), and only the
/// new task's first enqueue attaches.
#[derive(Debug, Clone)]
pub struct OneTaskCpu {
    cfg: OneTaskCpuConfig,
    se: SchedAvg,
    cfs_rq: CfsRqAvg,
    clock: RqClockPelt,
    state: TaskState,
    needs_attach: bool,
}

impl OneTaskCpu {
    /// The CPU at time 0 with the task in `state`. With
    /// [`OneTaskCpuConfig::new_task`] the task is forked and woken at time 0
    /// (and blocks at once if `state` is `Sleeping`).
    #[must_use]
    pub fn new(cfg: OneTaskCpuConfig, state: TaskState) -> Self {
        let mut cpu = Self {
            cfg,
            se: SchedAvg::default(),
            cfs_rq: CfsRqAvg::default(),
            clock: RqClockPelt::default(),
            state: TaskState::Sleeping,
            needs_attach: false,
        };
        if cfg.new_task {
            // sched_fork(): init_entity_runnable_average(); wake_up_new_task():
            // post_init_entity_util_avg(), then activate_task().
            cpu.se = init_entity_runnable_average(cfg.weight);
            post_init_entity_util_avg(
                &mut cpu.se,
                &cpu.cfs_rq,
                cfg.cpu_capacity,
                cfg.weight,
                RunnableInit::UtilAvg,
            );
            cpu.needs_attach = true;
            cpu.set_state(0, TaskState::Running);
            cpu.set_state(0, state);
        } else {
            cpu.set_state(0, state);
        }
        cpu
    }

    /// The task entity's signal (`se->avg`).
    #[must_use]
    pub const fn se(&self) -> &SchedAvg {
        &self.se
    }

    /// The cfs_rq's signal and pending removals.
    #[must_use]
    pub const fn cfs_rq(&self) -> &CfsRqAvg {
        &self.cfs_rq
    }

    /// The rq's PELT clock.
    #[must_use]
    pub const fn clock(&self) -> &RqClockPelt {
        &self.clock
    }

    /// What the task is doing now.
    #[must_use]
    pub const fn state(&self) -> TaskState {
        self.state
    }

    /// The fixed parameters.
    #[must_use]
    pub const fn config(&self) -> &OneTaskCpuConfig {
        &self.cfg
    }

    fn update_clock(&mut self, now: u64) {
        let idle = self.state == TaskState::Sleeping;
        self.clock
            .update_rq_clock(now, 0, idle, self.cfg.cpu_capacity, self.cfg.freq_capacity);
    }

    fn cfs_load(&self, queued: bool, curr: bool) -> CfsRqLoad {
        CfsRqLoad {
            load_weight: if queued { self.cfg.weight } else { 0 },
            h_nr_running: u64::from(queued),
            curr,
        }
    }

    fn update_se_and_cfs_rq(
        &mut self,
        se_load: SeLoad,
        cfs_load: CfsRqLoad,
        mut flags: UpdateFlags,
    ) {
        let now = self.clock.rq_clock_pelt();
        let util_est = self.cfg.util_est;
        if self.se.last_update_time == 0 && !self.needs_attach {
            // Attached since time 0 (see the type's doc): age it as the kernel
            // ages an attached entity, then let update_load_avg() skip it.
            update_load_avg_se(now, &mut self.se, &se_load, util_est);
            flags = flags | UpdateFlags::SKIP_AGE_LOAD;
        }
        self.cfs_rq
            .update_load_avg(&mut self.se, now, &se_load, &cfs_load, flags, util_est);
    }

    /// Brings every signal up to `now`, the task having kept its state since
    /// the last call.
    pub fn update(&mut self, now: u64) {
        self.update_clock(now);
        self.update_current();
    }

    fn update_current(&mut self) {
        let w = self.cfg.weight;
        match self.state {
            TaskState::Running => {
                // entity_tick(): update_load_avg(cfs_rq, curr, UPDATE_TG).
                let cfs_load = self.cfs_load(true, true);
                self.update_se_and_cfs_rq(
                    SeLoad::task(w, true, true),
                    cfs_load,
                    UpdateFlags::UPDATE_TG,
                );
            }
            TaskState::Runnable => {
                let cfs_load = self.cfs_load(true, false);
                self.update_se_and_cfs_rq(
                    SeLoad::task(w, true, false),
                    cfs_load,
                    UpdateFlags::NONE,
                );
            }
            TaskState::Sleeping => {
                // Blocked-load update of the idle CPU, and a sync of the task.
                let now = self.clock.rq_clock_pelt();
                let cfs_load = self.cfs_load(false, false);
                self.cfs_rq.update_cfs_rq_load_avg(now, &cfs_load);
                self.cfs_rq.sync_entity_load_avg(&mut self.se, w);
            }
        }
    }

    /// The task changes to `new` at `now` (after doing what it did since the
    /// last call up to `now`). Setting the current state is an
    /// [`OneTaskCpu::update`].
    pub fn set_state(&mut self, now: u64, new: TaskState) {
        self.update_clock(now);
        let w = self.cfg.weight;
        let util_est = self.cfg.util_est;
        match (self.state, new) {
            (old, new) if old == new => self.update_current(),
            (TaskState::Sleeping, _) => {
                // enqueue_task_fair(): util_est_enqueue(), enqueue_entity().
                util_est_enqueue(&mut self.cfs_rq, &self.se, util_est);
                let mut flags = UpdateFlags::UPDATE_TG;
                if self.needs_attach {
                    flags = flags | UpdateFlags::DO_ATTACH;
                    self.needs_attach = false;
                }
                let cfs_load = self.cfs_load(false, false);
                self.update_se_and_cfs_rq(SeLoad::task(w, false, false), cfs_load, flags);
                // account_entity_enqueue(); se->on_rq = 1.
                self.state = TaskState::Runnable;
                if new == TaskState::Running {
                    self.pick(w);
                }
            }
            (TaskState::Runnable, TaskState::Running) => self.pick(w),
            (TaskState::Running, TaskState::Runnable) => {
                // put_prev_entity(): update_load_avg(cfs_rq, prev, 0); curr = NULL.
                let cfs_load = self.cfs_load(true, true);
                self.update_se_and_cfs_rq(SeLoad::task(w, true, true), cfs_load, UpdateFlags::NONE);
                self.state = TaskState::Runnable;
            }
            (old, _) => {
                // dequeue_task_fair() (v6.12): util_est_dequeue(),
                // util_est_update(), then dequeue_entity().
                let curr = old == TaskState::Running;
                util_est_dequeue(&mut self.cfs_rq, &self.se, util_est);
                util_est_update(&mut self.se, true, self.cfg.cpu_capacity, util_est);
                let cfs_load = self.cfs_load(true, curr);
                self.update_se_and_cfs_rq(
                    SeLoad::task(w, true, curr),
                    cfs_load,
                    UpdateFlags::UPDATE_TG,
                );
                // account_entity_dequeue(); se->on_rq = 0; put_prev_entity()
                // does not update a dequeued entity; the rq goes idle.
                self.state = TaskState::Sleeping;
                self.clock
                    .update_idle_rq_clock_pelt(self.cfs_rq.avg.util_sum, 0, 0);
            }
        }
    }

    /// set_next_entity(): update_load_avg(UPDATE_TG) while `cfs_rq->curr` is
    /// still NULL, then the task becomes curr.
    fn pick(&mut self, w: u64) {
        let cfs_load = self.cfs_load(true, false);
        self.update_se_and_cfs_rq(
            SeLoad::task(w, true, false),
            cfs_load,
            UpdateFlags::UPDATE_TG,
        );
        self.state = TaskState::Running;
    }
}

#[cfg(test)]
mod tests;
