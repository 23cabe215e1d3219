//! The per-CPU runqueue (`struct rq`) and the fair class's task-level operations.
//!
//! Follows kernel/sched/core.c and fair.c of v6.12 (v6.12.20 tree): `update_rq_clock()`,
//! `enqueue_task()`/`dequeue_task()`, `activate_task()`/`deactivate_task()`, `block_task()`,
//! `ttwu_do_activate()`, `ttwu_runnable()`, `wake_up_new_task()`, `set_task_cpu()`,
//! `__schedule()` (as [`Rq::__schedule_prev`], [`Rq::pick_next_task_fair`],
//! [`Rq::pick_next_task_idle`], [`Rq::context_switch`]), `sched_tick()`; fair.c:
//! `enqueue_task_fair()`, `dequeue_task_fair()`, `dequeue_entities()`, `pick_next_task_fair()`,
//! `put_prev_task_fair()`, `set_next_task_fair()`, `task_tick_fair()`,
//! `check_preempt_wakeup_fair()` (and v6.1's `check_preempt_wakeup()` / `task_fork_fair()` for
//! `sched_policy=cfs`), `migrate_task_rq_fair()`, `update_misfit_status()`, and the load
//! getters the balancer reads (`cpu_load()`, `cpu_util()`, ...).
//!
//! Every operation that the kernel starts with `update_rq_clock()` takes `now_ns` (the
//! simulated `sched_clock()`) and updates the clock first; updating twice at the same time is
//! a no-op. Decisions are data: a reschedule request sets [`Rq::need_resched`]; the caller
//! (the engine) schedules.
//!
//! Not modelled: other scheduling classes (the rt/dl/irq PELT signals exist and decay but stay
//! 0), uclamp, EAS (`overutilized`), `DEQUEUE_SAVE`/`ENQUEUE_RESTORE` attribute changes other
//! than a move between task groups (`rq/hier.rs`) and reweighting, NUMA balancing, hrtick, core scheduling, `nr_uninterruptible`/iowait.
//!
//! Files: this one holds [`Rq`] itself, its clocks, state predicates, sched_info, the
//! enqueue/dequeue path and the invariant check; `rq/wakeup.rs` wake-up, wake-up preemption,
//! fork, migration and [`set_task_cpu`]; `rq/schedule.rs` `__schedule()`'s parts and
//! `yield_task_fair()`; `rq/tick.rs` `sched_tick()`, the misfit status and
//! `update_blocked_averages()`; `rq/load.rs` the load and utilization getters the balancer
//! reads; `rq/hier.rs` the same operations through a task-group hierarchy.

mod fields;
mod hier;
mod load;
mod schedule;
mod tick;
mod wakeup;

use lbsim_pelt::{RqClockPelt, SchedAvg, util_est_dequeue, util_est_enqueue, util_est_update};
use lbsim_topology::CpuId;
use thiserror::Error;

use crate::cfs_rq::{CfsClock, CfsRq};
use crate::entity::{DequeueFlags, EnqueueFlags, TaskId};
use crate::params::RqFeat;
use crate::task::{OnRq, Tasks};
use crate::tunables::SchedParams;
use crate::weights::scale_load_down;

pub use self::load::{task_runnable, task_util, task_util_est, task_util_est_raw};
pub use self::wakeup::set_task_cpu;

pub use lbsim_kernel::SCHED_CAPACITY_SCALE;

/// `sched_clock()` at simulated time 0: the runqueue clocks read `now_ns + SCHED_CLOCK_OFFSET_NS`.
///
/// The kernel's clocks are far from 0 when tasks run, and PELT uses `last_update_time == 0` to
/// mean "not attached": an entity attached while a cfs_rq's clock is below 1024 ns would keep
/// that sentinel and never age. lbsim therefore boots the machine 2^20 ns (about 1 ms, a whole
/// number of 1024 ns PELT units, so window phases are unchanged) before the simulation starts.
/// Only differences of runqueue clocks matter to the model; [`Rq::jiffies`] removes the offset.
pub const SCHED_CLOCK_OFFSET_NS: u64 = 1 << 20;

/// How the current task leaves the CPU at a `__schedule()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrevAction {
    /// It stays runnable (preemption, yield, or no change): an involuntary switch.
    Preempt,
    /// It blocks (`prev_state != TASK_RUNNING`): `block_task()` with `DEQUEUE_SLEEP`, which
    /// `DELAY_DEQUEUE` may delay. A voluntary switch.
    Block,
    /// It exits (`TASK_DEAD`, a special state): `block_task()` with `DEQUEUE_SPECIAL`, never
    /// delayed. A voluntary switch.
    Exit,
    /// It leaves for a CPU its new affinity allows (its own `sched_setaffinity()` excluded this
    /// one). Follows core.c: affine_move_task() and migration_cpu_stop() (v6.12) in outcome:
    /// the kernel's caller sleeps in `wait_for_completion()` (a sleep `DELAY_DEQUEUE` may
    /// delay), the stopper moves it if it is still queued (`move_queued_task()` to
    /// `cpumask_any_and_distribute()` of the new mask) or sets its `wake_cpu`, and
    /// `complete_all()` wakes it, on an allowed CPU either way. lbsim's deliberately differs
    /// in how: `block_task()` with `DEQUEUE_SPECIAL` (never delayed), and the caller wakes it
    /// through `select_task_rq()`. A voluntary switch.
    Move,
}

pub use lbsim_kernel::{capacity_greater, fits_capacity};

/// `update_avg()` (sched.h): `*avg += (sample - *avg) / 8`, signed, truncating.
#[inline]
fn update_avg(avg: &mut u64, sample: u64) {
    let diff = sample.wrapping_sub(*avg) as i64;
    *avg = avg.wrapping_add((diff / 8) as u64);
}

/// A broken runqueue invariant (a model bug), from [`Rq::check_invariants`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RqError {
    /// A counter or sum disagrees with what the runqueue holds.
    #[error("cpu {cpu}: runqueue invariant broken: {detail}")]
    Invariant {
        /// The runqueue's CPU.
        cpu: u32,
        /// What disagrees, with both values.
        detail: String,
    },
}

/// `struct rq`: one CPU's runqueue (fair class only; flat unless given task groups).
#[derive(Clone, Debug)]
pub struct Rq {
    /// `cpu_of(rq)`.
    pub cpu: CpuId,
    /// `rq->nr_running`: runnable tasks of all classes (here: fair tasks, including delayed ones).
    pub nr_running: u32,
    /// `rq->cfs`.
    pub cfs: CfsRq,
    /// `rq->curr`: the task on the CPU; `None` is the idle task.
    pub curr: Option<TaskId>,
    /// `rq->clock`, `clock_task`, `clock_pelt`, `lost_idle_time`, `clock_idle`,
    /// `clock_pelt_idle`.
    pub clocks: RqClockPelt,
    /// `rq->avg_rt` (no rt tasks are modelled: decays to and stays at 0).
    pub avg_rt: SchedAvg,
    /// `rq->avg_dl`.
    pub avg_dl: SchedAvg,
    /// `rq->avg_irq`.
    pub avg_irq: SchedAvg,
    /// `rq->avg_idle`: average idle period (ns), starts at `2 * migration_cost`.
    pub avg_idle: u64,
    /// `rq->idle_stamp`: `rq_clock` when newidle balancing started (the kernel uses 0 for
    /// none). Set by the balancer, consumed by the next wakeup (`ttwu_do_activate()`).
    pub(crate) idle_stamp: Option<u64>,
    /// `rq->idle_state`: the exit latency (us) of the idle state the CPU is in, while it is
    /// in one (`None`: not in an idle state, or no cpuidle driver).
    pub(crate) idle_state: Option<u32>,
    /// `rq->max_idle_balance_cost`: starts at `migration_cost`.
    pub(crate) max_idle_balance_cost: u64,
    /// `rq->ttwu_pending`: a queued remote wakeup (wake-up IPI) has not been processed.
    pub(crate) ttwu_pending: bool,
    /// `rq->next_balance` in jiffies (lbsim jiffies: simulated time / `TICK_NSEC`, see
    /// [`Rq::jiffies`]).
    pub(crate) next_balance: u64,
    /// `rq->misfit_task_load`.
    pub misfit_task_load: u64,
    /// `rq->cpu_capacity` (`capacity_of()`), maintained by the balancer's
    /// `update_cpu_capacity()`; starts at `capacity_orig`.
    pub(crate) cpu_capacity: u64,
    /// `arch_scale_cpu_capacity(cpu)` (`capacity_orig`).
    pub capacity_orig: u64,
    /// `arch_scale_freq_capacity(cpu)`: 1024 (no DVFS modelled).
    pub freq_capacity: u64,
    /// `sched_asym_cpucap_active()`: the machine has CPUs of different capacities.
    pub(crate) asym_cpucap_active: bool,
    /// `rq->has_blocked_load` (NO_HZ): PELT signals still decaying.
    pub(crate) has_blocked_load: bool,
    /// `rq->nr_switches`.
    pub nr_switches: u64,
    /// The features and tunables this runqueue reads.
    pub params: SchedParams,
    /// Set by [`Rq::__schedule_prev`]: prev blocked, so the switch is voluntary.
    prev_voluntary: bool,
    /// The task groups' per-CPU state (`None`: the run declares no group, the hierarchy is
    /// flat and no group code runs).
    pub(crate) groups: Option<Box<crate::group::RqGroups>>,
}

impl Rq {
    /// An empty runqueue. Follows core.c: `sched_init()`: `avg_idle = 2 * migration_cost`,
    /// `max_idle_balance_cost = migration_cost`, `cpu_capacity = SCHED_CAPACITY_SCALE` (here
    /// `capacity_orig` directly, as the first `update_cpu_capacity()` would set it without
    /// rt/irq pressure).
    pub fn new(cpu: CpuId, capacity_orig: u64, params: SchedParams) -> Rq {
        Rq {
            cpu,
            nr_running: 0,
            cfs: CfsRq::new(),
            curr: None,
            clocks: RqClockPelt::default(),
            avg_rt: SchedAvg::default(),
            avg_dl: SchedAvg::default(),
            avg_irq: SchedAvg::default(),
            avg_idle: 2 * params.migration_cost_ns,
            idle_stamp: None,
            idle_state: None,
            max_idle_balance_cost: params.migration_cost_ns,
            ttwu_pending: false,
            next_balance: 0,
            misfit_task_load: 0,
            cpu_capacity: capacity_orig,
            capacity_orig,
            freq_capacity: SCHED_CAPACITY_SCALE,
            asym_cpucap_active: false,
            has_blocked_load: false,
            nr_switches: 0,
            params,
            prev_voluntary: false,
            groups: None,
        }
    }

    // ---------------------------------------------------------------------------------
    // Clocks

    /// Follows core.c: `update_rq_clock()` / `update_rq_clock_task()` and pelt.h:
    /// `update_rq_clock_pelt()` (v6.12): `clock` and `clock_task` advance to `now_ns` (no irq or
    /// steal time); `clock_pelt` advances scaled by capacity and frequency, or is resynced to
    /// `clock_task` while idle.
    #[inline]
    pub fn update_rq_clock(&mut self, now_ns: u64) {
        self.clocks.update_rq_clock(
            now_ns + SCHED_CLOCK_OFFSET_NS,
            0,
            self.curr.is_none(),
            self.capacity_orig,
            self.freq_capacity,
        );
    }

    /// `rq_clock(rq)` (simulated time plus [`SCHED_CLOCK_OFFSET_NS`]).
    #[inline]
    pub fn rq_clock(&self) -> u64 {
        self.clocks.clock
    }

    /// `rq_clock_task(rq)`.
    #[inline]
    pub fn rq_clock_task(&self) -> u64 {
        self.clocks.clock_task
    }

    /// `rq_clock_pelt(rq)`: `clock_pelt - lost_idle_time`.
    #[inline]
    pub fn rq_clock_pelt(&self) -> u64 {
        self.clocks.rq_clock_pelt()
    }

    /// lbsim jiffies at the rq clock: simulated time / `TICK_NSEC`.
    pub fn jiffies(&self) -> u64 {
        self.rq_clock().saturating_sub(SCHED_CLOCK_OFFSET_NS) / self.params.tick_nsec
    }

    fn cfs_clock(&self) -> CfsClock {
        CfsClock {
            task: self.clocks.clock_task,
            pelt: self.clocks.rq_clock_pelt(),
        }
    }

    /// `TIF_NEED_RESCHED` of the current task: something asked for a reschedule.
    pub fn need_resched(&self) -> bool {
        self.cfs.need_resched
    }

    // ---------------------------------------------------------------------------------
    // State predicates

    /// `idle_cpu()`: running the idle task, nothing queued, no pending wakeup.
    pub fn idle_cpu(&self) -> bool {
        self.curr.is_none() && self.nr_running == 0 && !self.ttwu_pending
    }

    /// `sched_idle_rq()`: only `SCHED_IDLE` tasks are runnable.
    pub fn sched_idle_rq(&self) -> bool {
        self.nr_running != 0 && self.nr_running == self.cfs.idle_h_nr_running
    }

    // ---------------------------------------------------------------------------------
    // sched_info (run delay)

    /// stats.h: `sched_info_enqueue()`.
    fn sched_info_enqueue(&self, tasks: &mut Tasks, p: TaskId) {
        let si = &mut tasks[p].sched_info;
        if si.last_queued.is_none() {
            si.last_queued = Some(self.rq_clock());
        }
    }

    /// stats.h: `sched_info_dequeue()`.
    fn sched_info_dequeue(&self, tasks: &mut Tasks, p: TaskId) {
        let si = &mut tasks[p].sched_info;
        if let Some(q) = si.last_queued.take() {
            si.run_delay += self.rq_clock().saturating_sub(q);
        }
    }

    /// stats.h: `sched_info_arrive()`.
    fn sched_info_arrive(&self, tasks: &mut Tasks, p: TaskId) {
        let now = self.rq_clock();
        let si = &mut tasks[p].sched_info;
        let Some(q) = si.last_queued.take() else {
            return;
        };
        si.run_delay += now.saturating_sub(q);
        si.last_arrival = now;
        si.pcount += 1;
    }

    // ---------------------------------------------------------------------------------
    // Enqueue / dequeue

    /// Follows core.c: `enqueue_task()` (v6.12). The clock must be current.
    pub fn enqueue_task(&mut self, tasks: &mut Tasks, p: TaskId, flags: EnqueueFlags) {
        self.enqueue_task_fair(tasks, p, flags);
        if !flags.contains(EnqueueFlags::RESTORE) {
            self.sched_info_enqueue(tasks, p);
        }
    }

    /// Follows core.c: `dequeue_task()` (v6.12). Returns false only for a delayed sleep.
    pub fn dequeue_task(&mut self, tasks: &mut Tasks, p: TaskId, flags: DequeueFlags) -> bool {
        if !flags.contains(DequeueFlags::SAVE) {
            self.sched_info_dequeue(tasks, p);
        }
        self.dequeue_task_fair(tasks, p, flags)
    }

    /// Follows core.c: `activate_task()` (v6.12): a migrating task is enqueued with
    /// `ENQUEUE_MIGRATED`, then marked `TASK_ON_RQ_QUEUED`.
    pub fn activate_task(&mut self, tasks: &mut Tasks, p: TaskId, mut flags: EnqueueFlags) {
        if tasks[p].on_rq_migrating() {
            flags |= EnqueueFlags::MIGRATED;
        }
        self.enqueue_task(tasks, p, flags);
        tasks[p].on_rq = OnRq::Queued;
    }

    /// Follows core.c: `deactivate_task()` (v6.12): mark `TASK_ON_RQ_MIGRATING`, dequeue.
    pub fn deactivate_task(&mut self, tasks: &mut Tasks, p: TaskId, flags: DequeueFlags) {
        debug_assert!(!flags.contains(DequeueFlags::SLEEP));
        tasks[p].on_rq = OnRq::Migrating;
        self.dequeue_task(tasks, p, flags);
    }

    /// Follows core.c: `block_task()` (v6.12): a sleep dequeue; `__block_task()` (`on_rq = 0`)
    /// unless the dequeue was delayed.
    pub fn block_task(&mut self, tasks: &mut Tasks, p: TaskId, flags: DequeueFlags) {
        if self.dequeue_task(tasks, p, DequeueFlags::SLEEP | flags) {
            tasks[p].on_rq = OnRq::No;
        }
    }

    /// Follows fair.c: `enqueue_task_fair()` (v6.12.y, flat): add the task's util_est (unless a
    /// delayed task is only moving), requeue a delayed task in place (`ENQUEUE_DELAYED`), or
    /// enqueue its entity and count it.
    pub fn enqueue_task_fair(&mut self, tasks: &mut Tasks, p: TaskId, flags: EnqueueFlags) {
        if self.groups.is_some() {
            self.enqueue_task_fair_h(tasks, p, flags);
            return;
        }
        let params = self.params;
        let clock = self.cfs_clock();
        let delayed = tasks[p].se.sched_delayed;
        if !(delayed && (tasks[p].on_rq_migrating() || flags.contains(EnqueueFlags::RESTORE))) {
            util_est_enqueue(
                &mut self.cfs.avg,
                &tasks[p].se.avg,
                params.feat(RqFeat::UtilEst),
            );
        }
        if flags.contains(EnqueueFlags::DELAYED) {
            self.cfs.requeue_delayed_entity(tasks, p, clock, &params);
            return;
        }
        let task_new = !flags.contains(EnqueueFlags::WAKEUP);
        let h_nr_delayed = u32::from(task_new && delayed);
        debug_assert!(!tasks[p].se.on_rq, "enqueue_task_fair() of a queued entity");
        self.cfs.enqueue_entity(tasks, p, flags, clock, &params);
        self.cfs.h_nr_running += 1;
        self.cfs.idle_h_nr_running += u32::from(tasks[p].has_idle_policy());
        self.cfs.h_nr_delayed += h_nr_delayed;
        self.nr_running += 1;
    }

    /// Follows fair.c: `dequeue_task_fair()` (v6.12.y): remove the util_est (unless a delayed
    /// task is only moving), update it on sleep, dequeue the entity. Returns false if the
    /// dequeue was delayed.
    pub fn dequeue_task_fair(&mut self, tasks: &mut Tasks, p: TaskId, flags: DequeueFlags) -> bool {
        let util_est = self.params.feat(RqFeat::UtilEst);
        let t = &tasks[p];
        if !(t.se.sched_delayed && (t.on_rq_migrating() || flags.contains(DequeueFlags::SAVE))) {
            util_est_dequeue(&mut self.cfs.avg, &t.se.avg, util_est);
        }
        util_est_update(
            &mut tasks[p].se.avg,
            flags.contains(DequeueFlags::SLEEP),
            self.capacity_orig,
            util_est,
        );
        if self.groups.is_some() {
            return self.dequeue_entities_h(tasks, p, flags);
        }
        self.dequeue_entities(tasks, p, flags)
    }

    /// Follows fair.c: `dequeue_entities()` (v6.12.y, flat): dequeue the entity (false if
    /// delayed), uncount it, and after completing a delayed dequeue finish the block
    /// (`__block_task()`).
    fn dequeue_entities(&mut self, tasks: &mut Tasks, p: TaskId, flags: DequeueFlags) -> bool {
        if self.groups.is_some() {
            return self.dequeue_entities_h(tasks, p, flags);
        }
        let params = self.params;
        let clock = self.cfs_clock();
        let was_sched_idle = self.sched_idle_rq();
        let task_sleep = flags.contains(DequeueFlags::SLEEP);
        let task_delayed = flags.contains(DequeueFlags::DELAYED);
        let idle = u32::from(tasks[p].has_idle_policy());
        let h_nr_delayed = u32::from(!task_sleep && !task_delayed && tasks[p].se.sched_delayed);
        let migrating = tasks[p].on_rq_migrating();
        if !self
            .cfs
            .dequeue_entity(tasks, p, flags, migrating, clock, &params)
        {
            return false;
        }
        self.cfs.h_nr_running -= 1;
        self.cfs.idle_h_nr_running -= idle;
        self.cfs.h_nr_delayed -= h_nr_delayed;
        self.nr_running -= 1;
        // Balance early to pull high priority tasks.
        if !was_sched_idle && self.sched_idle_rq() {
            self.next_balance = self.jiffies();
        }
        if task_delayed {
            debug_assert!(task_sleep);
            tasks[p].on_rq = OnRq::No;
        }
        true
    }

    // ---------------------------------------------------------------------------------
    // Invariants

    /// Check that the counters and sums agree with what the runqueue holds: `nr_running`,
    /// `h_nr_running`, `h_nr_delayed`, `load.weight` against the queued tasks; the timeline
    /// against the queued entities other than `curr`, and its tree's order, balance and cached
    /// minima; `avg_vruntime`/`avg_load` against a recomputation; `cfs_tasks` against the
    /// queued tasks.
    pub fn check_invariants(&self, tasks: &Tasks) -> Result<(), RqError> {
        let here: Vec<TaskId> = tasks
            .iter()
            .filter(|(_, t)| t.cpu == self.cpu)
            .map(|(id, _)| id)
            .collect();
        self.check_invariants_of(tasks, &here)
    }

    /// [`Rq::check_invariants`] given the tasks whose `task_cpu()` is this CPU (`here`, in
    /// any order; others are ignored), so that a check of every runqueue reads each task
    /// once rather than once per CPU.
    pub fn check_invariants_of(&self, tasks: &Tasks, here: &[TaskId]) -> Result<(), RqError> {
        if self.groups.is_some() {
            return self.check_invariants_h(tasks, here);
        }
        let err = |detail: String| {
            Err(RqError::Invariant {
                cpu: self.cpu.0,
                detail,
            })
        };
        let cfs = &self.cfs;
        let mut nr = 0u32;
        let mut delayed = 0u32;
        let mut weight = 0u64;
        let mut in_tree = 0usize;
        let mut avg: i64 = 0;
        let mut avg_load = 0u64;
        for &id in here {
            let t = &tasks[id];
            if t.cpu != self.cpu || !t.se.on_rq {
                continue;
            }
            nr += 1;
            delayed += u32::from(t.se.sched_delayed);
            weight += t.se.load.weight;
            if cfs.curr != Some(id) {
                in_tree += 1;
                let w = scale_load_down(t.se.load.weight);
                avg = avg.wrapping_add(
                    (t.se.vruntime.wrapping_sub(cfs.min_vruntime) as i64).wrapping_mul(w as i64),
                );
                avg_load += w;
                if !cfs.in_timeline(tasks, id) {
                    return err(format!(
                        "queued task {id:?} is neither curr nor in the timeline"
                    ));
                }
            }
            if !cfs.on_cfs_tasks(tasks, id) {
                return err(format!("queued task {id:?} is not on cfs_tasks"));
            }
        }
        if nr != cfs.nr_running || nr != cfs.h_nr_running || nr != self.nr_running {
            return err(format!(
                "queued {nr}, cfs.nr_running {}, h_nr_running {}, rq.nr_running {}",
                cfs.nr_running, cfs.h_nr_running, self.nr_running
            ));
        }
        if delayed != cfs.h_nr_delayed {
            return err(format!(
                "delayed {delayed}, h_nr_delayed {}",
                cfs.h_nr_delayed
            ));
        }
        if weight != cfs.load.weight {
            return err(format!(
                "queued weight {weight}, load.weight {}",
                cfs.load.weight
            ));
        }
        if in_tree != cfs.timeline().len() || cfs.cfs_tasks().len() != nr as usize {
            return err(format!(
                "timeline {} (expected {in_tree}), cfs_tasks {} (expected {nr})",
                cfs.timeline().len(),
                cfs.cfs_tasks().len()
            ));
        }
        if let Err(detail) = cfs.check_timeline() {
            return err(detail);
        }
        if avg != cfs.avg_vruntime || avg_load != cfs.avg_load {
            return err(format!(
                "avg_vruntime {} / avg_load {}, recomputed {avg} / {avg_load}",
                cfs.avg_vruntime, cfs.avg_load
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
