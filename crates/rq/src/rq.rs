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
//! 0), uclamp, EAS (`overutilized`), `DEQUEUE_SAVE`/`ENQUEUE_RESTORE` attribute changes and
//! reweighting, NUMA balancing, hrtick, core scheduling, `nr_uninterruptible`/iowait.
//! `task_h_load()` is the `!CONFIG_FAIR_GROUP_SCHED` one (`se.avg.load_avg`).

use lbsim_pelt::{
    RqClockPelt, RunnableInit, SchedAvg, UTIL_AVG_UNCHANGED, post_init_entity_util_avg,
    update_dl_rq_load_avg, update_irq_load_avg, update_rt_rq_load_avg, util_est_dequeue,
    util_est_enqueue, util_est_update,
};
use lbsim_topology::CpuId;
use thiserror::Error;

use crate::cfs_rq::{CfsClock, CfsRq};
use crate::entity::{DequeueFlags, EnqueueFlags, TaskId, WakeFlags};
use crate::params::RqFeat;
use crate::task::{OnRq, TaskState, Tasks};
use crate::tunables::{SchedParams, SchedPolicy};
use crate::weights::{NICE_0_LOAD, calc_delta_fair, scale_load_down};

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

/// `struct rq`: one CPU's runqueue (fair class only, flat hierarchy).
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
    pub idle_stamp: Option<u64>,
    /// `rq->max_idle_balance_cost`: starts at `migration_cost`.
    pub max_idle_balance_cost: u64,
    /// `rq->ttwu_pending`: a queued remote wakeup (wake-up IPI) has not been processed.
    pub ttwu_pending: bool,
    /// `rq->next_balance` in jiffies (lbsim jiffies: simulated time / `TICK_NSEC`, see
    /// [`Rq::jiffies`]).
    pub next_balance: u64,
    /// `rq->misfit_task_load`.
    pub misfit_task_load: u64,
    /// `rq->cpu_capacity` (`capacity_of()`), maintained by the balancer's
    /// `update_cpu_capacity()`; starts at `capacity_orig`.
    pub cpu_capacity: u64,
    /// `arch_scale_cpu_capacity(cpu)` (`capacity_orig`).
    pub capacity_orig: u64,
    /// `arch_scale_freq_capacity(cpu)`: 1024 (no DVFS modelled).
    pub freq_capacity: u64,
    /// `sched_asym_cpucap_active()`: the machine has CPUs of different capacities.
    pub asym_cpucap_active: bool,
    /// `rq->has_blocked_load` (NO_HZ): PELT signals still decaying.
    pub has_blocked_load: bool,
    /// `rq->nr_switches`.
    pub nr_switches: u64,
    /// The features and tunables this runqueue reads.
    pub params: SchedParams,
    /// Set by [`Rq::__schedule_prev`]: prev blocked, so the switch is voluntary.
    prev_voluntary: bool,
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
        }
    }

    // ---------------------------------------------------------------------------------
    // Clocks

    /// Follows core.c: `update_rq_clock()` / `update_rq_clock_task()` and pelt.h:
    /// `update_rq_clock_pelt()` (v6.12): `clock` and `clock_task` advance to `now_ns` (no irq or
    /// steal time); `clock_pelt` advances scaled by capacity and frequency, or is resynced to
    /// `clock_task` while idle.
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
    pub fn rq_clock(&self) -> u64 {
        self.clocks.clock
    }

    /// `rq_clock_task(rq)`.
    pub fn rq_clock_task(&self) -> u64 {
        self.clocks.clock_task
    }

    /// `rq_clock_pelt(rq)`: `clock_pelt - lost_idle_time`.
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
        self.dequeue_entities(tasks, p, flags)
    }

    /// Follows fair.c: `dequeue_entities()` (v6.12.y, flat): dequeue the entity (false if
    /// delayed), uncount it, and after completing a delayed dequeue finish the block
    /// (`__block_task()`).
    fn dequeue_entities(&mut self, tasks: &mut Tasks, p: TaskId, flags: DequeueFlags) -> bool {
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
    // Wakeup, fork, migration

    /// Preempt the current task with a newly queued one if needed.
    ///
    /// Follows core.c: `wakeup_preempt()` (v6.12): the idle task is always preempted.
    pub fn wakeup_preempt(&mut self, tasks: &mut Tasks, p: TaskId, wake_flags: WakeFlags) {
        match self.curr {
            None => self.cfs.resched_curr(),
            Some(curr) => match self.params.policy {
                SchedPolicy::Eevdf => self.check_preempt_wakeup_fair(tasks, curr, p, wake_flags),
                SchedPolicy::Cfs => self.check_preempt_wakeup_cfs(tasks, curr, p, wake_flags),
            },
        }
    }

    /// Follows fair.c: `check_preempt_wakeup_fair()` (v6.12, flat): set the next buddy if
    /// `NEXT_BUDDY` (not for forks or delayed tasks); nothing more if a reschedule is pending
    /// or `WAKEUP_PREEMPTION` is off; a non-idle wakee preempts an idle curr; `SCHED_BATCH` and
    /// `SCHED_IDLE` wakees never preempt; else update curr, let a shorter-slice eligible wakee
    /// cancel curr's slice protection (`PREEMPT_SHORT`), and preempt if `pick_eevdf()` would
    /// now choose the wakee.
    fn check_preempt_wakeup_fair(
        &mut self,
        tasks: &mut Tasks,
        curr: TaskId,
        p: TaskId,
        wake_flags: WakeFlags,
    ) {
        if curr == p {
            return;
        }
        let params = self.params;
        if params.feat(RqFeat::NextBuddy)
            && !wake_flags.contains(WakeFlags::FORK)
            && !tasks[p].se.sched_delayed
        {
            self.cfs.set_next_buddy(tasks, p);
        }
        if self.cfs.need_resched || !params.feat(RqFeat::WakeupPreemption) {
            return;
        }
        let (cse_is_idle, pse_is_idle) = (tasks[curr].se.idle, tasks[p].se.idle);
        if cse_is_idle && !pse_is_idle {
            self.cfs.resched_curr();
            return;
        }
        if cse_is_idle != pse_is_idle || !tasks[p].normal_policy() {
            return;
        }
        let clock = self.cfs_clock();
        self.cfs.update_curr(tasks, clock, &params);
        if self.cfs.do_preempt_short(tasks, p, curr, &params) {
            let se = &mut tasks[curr].se;
            if se.vlag as u64 == se.deadline {
                se.vlag = se.deadline.wrapping_add(1) as i64;
            }
        }
        if self.cfs.pick_eevdf(tasks, &params) == Some(p) {
            self.cfs.resched_curr();
        }
    }

    /// Follows v6.1 fair.c: `check_preempt_wakeup()` (flat): next buddy with `NEXT_BUDDY` once
    /// `sched_nr_latency` tasks are queued; an idle-policy curr is preempted by a non-idle
    /// wakee; only `SCHED_NORMAL` wakees preempt, when they are more than a wakeup granularity
    /// behind curr in vruntime (then they become the next buddy, and curr the last buddy with
    /// `LAST_BUDDY`).
    fn check_preempt_wakeup_cfs(
        &mut self,
        tasks: &mut Tasks,
        curr: TaskId,
        p: TaskId,
        wake_flags: WakeFlags,
    ) {
        if curr == p {
            return;
        }
        let params = self.params;
        let scale = u64::from(self.cfs.nr_running) >= params.sched_nr_latency;
        let mut next_buddy_marked = false;
        if params.feat(RqFeat::NextBuddy) && scale && !wake_flags.contains(WakeFlags::FORK) {
            self.cfs.set_next_buddy(tasks, p);
            next_buddy_marked = true;
        }
        if self.cfs.need_resched {
            return;
        }
        let preempt = if tasks[curr].has_idle_policy() && !tasks[p].has_idle_policy() {
            true
        } else {
            if !tasks[p].normal_policy() || !params.feat(RqFeat::WakeupPreemption) {
                return;
            }
            let (cse_is_idle, pse_is_idle) = (tasks[curr].se.idle, tasks[p].se.idle);
            if cse_is_idle && !pse_is_idle {
                true
            } else {
                if cse_is_idle != pse_is_idle {
                    return;
                }
                let clock = self.cfs_clock();
                self.cfs.update_curr(tasks, clock, &params);
                if CfsRq::wakeup_preempt_entity(tasks, curr, p, &params) == 1 {
                    if !next_buddy_marked {
                        self.cfs.set_next_buddy(tasks, p);
                    }
                    true
                } else {
                    false
                }
            }
        };
        if !preempt {
            return;
        }
        self.cfs.resched_curr();
        if !tasks[curr].se.on_rq {
            return;
        }
        if params.feat(RqFeat::LastBuddy) && scale {
            self.cfs.set_last_buddy(tasks, curr);
        }
    }

    /// Queue a woken task here and check preemption.
    ///
    /// Follows core.c: `ttwu_do_activate()` (v6.12): enqueue with `ENQUEUE_WAKEUP` (plus
    /// `ENQUEUE_MIGRATED` for `WF_MIGRATED`, `ENQUEUE_RQ_SELECTED` for `WF_RQ_SELECTED`),
    /// `wakeup_preempt()`, mark it running, and if this CPU was newly idle fold the idle time
    /// into `avg_idle` (capped at `2 * max_idle_balance_cost`). The task's CPU must already be
    /// this one (see [`set_task_cpu`]).
    pub fn ttwu_do_activate(
        &mut self,
        tasks: &mut Tasks,
        p: TaskId,
        wake_flags: WakeFlags,
        now_ns: u64,
    ) {
        debug_assert_eq!(
            tasks[p].cpu, self.cpu,
            "ttwu_do_activate() on the wrong CPU"
        );
        self.update_rq_clock(now_ns);
        let mut en_flags = EnqueueFlags::WAKEUP | EnqueueFlags::NOCLOCK;
        if wake_flags.contains(WakeFlags::RQ_SELECTED) {
            en_flags |= EnqueueFlags::RQ_SELECTED;
        }
        if wake_flags.contains(WakeFlags::MIGRATED) {
            en_flags |= EnqueueFlags::MIGRATED;
        }
        self.activate_task(tasks, p, en_flags);
        self.wakeup_preempt(tasks, p, wake_flags);
        tasks[p].state = TaskState::Queued;
        if let Some(stamp) = self.idle_stamp.take() {
            let delta = self.rq_clock().wrapping_sub(stamp);
            let max = 2 * self.max_idle_balance_cost;
            update_avg(&mut self.avg_idle, delta);
            if self.avg_idle > max {
                self.avg_idle = max;
            }
        }
    }

    /// Wake a task that is still queued here (a delayed-dequeued sleeper, or one woken before
    /// it got off the CPU). Returns false if the task is not queued (the caller then does a
    /// full wakeup: select a CPU, [`set_task_cpu`], [`Rq::ttwu_do_activate`]).
    ///
    /// Follows core.c: `ttwu_runnable()` (v6.12): requeue a delayed task with
    /// `ENQUEUE_DELAYED`; if it is not the running task, `wakeup_preempt()`.
    pub fn ttwu_runnable(
        &mut self,
        tasks: &mut Tasks,
        p: TaskId,
        wake_flags: WakeFlags,
        now_ns: u64,
    ) -> bool {
        if !tasks[p].on_rq_queued() {
            return false;
        }
        debug_assert_eq!(tasks[p].cpu, self.cpu);
        self.update_rq_clock(now_ns);
        if tasks[p].se.sched_delayed {
            self.enqueue_task(tasks, p, EnqueueFlags::NOCLOCK | EnqueueFlags::DELAYED);
        }
        if self.curr != Some(p) {
            self.wakeup_preempt(tasks, p, wake_flags);
            tasks[p].state = TaskState::Queued;
        } else {
            tasks[p].state = TaskState::Running;
        }
        true
    }

    /// Process this CPU's wake list (the wake-up IPI).
    ///
    /// Follows core.c: `sched_ttwu_pending()` (v6.12): each wakee is activated with only
    /// `WF_MIGRATED` (if it changed CPU), then `ttwu_pending` is cleared.
    pub fn sched_ttwu_pending(
        &mut self,
        tasks: &mut Tasks,
        wakees: impl IntoIterator<Item = (TaskId, bool)>,
        now_ns: u64,
    ) {
        self.update_rq_clock(now_ns);
        for (p, migrated) in wakees {
            let wf = if migrated {
                WakeFlags::MIGRATED
            } else {
                WakeFlags::NONE
            };
            self.ttwu_do_activate(tasks, p, wf, now_ns);
        }
        self.ttwu_pending = false;
    }

    /// Legacy-CFS fork placement, done on the forking CPU's runqueue before the child's first
    /// wakeup. Does nothing under EEVDF (v6.12 `task_fork_fair()` only sets the misfit
    /// capacity, which [`crate::task::Task::max_allowed_capacity`] holds).
    ///
    /// Follows v6.1 fair.c: `task_fork_fair()`: start from the parent's (`curr`'s) vruntime,
    /// `place_entity(initial)`, swap with the parent if `child_runs_first`, and make the
    /// vruntime relative to this `min_vruntime` for the enqueue on the chosen CPU.
    pub fn task_fork_fair(&mut self, tasks: &mut Tasks, child: TaskId, now_ns: u64) {
        let params = self.params;
        if params.policy != SchedPolicy::Cfs {
            return;
        }
        self.update_rq_clock(now_ns);
        let clock = self.cfs_clock();
        let curr = self.cfs.curr;
        if let Some(c) = curr {
            self.cfs.update_curr(tasks, clock, &params);
            tasks[child].se.vruntime = tasks[c].se.vruntime;
        }
        self.cfs
            .place_entity_cfs(tasks, child, true, clock.task, &params);
        if let Some(c) = curr
            && params.child_runs_first
            && (tasks[c].se.vruntime.wrapping_sub(tasks[child].se.vruntime) as i64) < 0
        {
            let (cv, pv) = (tasks[c].se.vruntime, tasks[child].se.vruntime);
            tasks[c].se.vruntime = pv;
            tasks[child].se.vruntime = cv;
            self.cfs.resched_curr();
        }
        let min = self.cfs.min_vruntime;
        let se = &mut tasks[child].se;
        se.vruntime = se.vruntime.wrapping_sub(min);
    }

    /// Wake a new task on this CPU for the first time.
    ///
    /// Follows core.c: `wake_up_new_task()` (v6.12): the task is placed here (`__set_task_cpu()`,
    /// no migration hook), its util_avg extrapolated from this cfs_rq
    /// (`post_init_entity_util_avg()`), enqueued with `ENQUEUE_INITIAL`, and may preempt
    /// (`WF_FORK`).
    pub fn wake_up_new_task(&mut self, tasks: &mut Tasks, p: TaskId, now_ns: u64) {
        debug_assert_eq!(tasks[p].state, TaskState::New);
        tasks[p].cpu = self.cpu;
        self.update_rq_clock(now_ns);
        let weight = tasks[p].se.se_weight();
        let runnable_init = if self.params.features.enabled(RqFeat::RunnableAvgInitUtil) {
            RunnableInit::UtilAvg
        } else {
            RunnableInit::CpuScale
        };
        post_init_entity_util_avg(
            &mut tasks[p].se.avg,
            &self.cfs.avg,
            self.capacity_orig,
            weight,
            runnable_init,
        );
        self.activate_task(tasks, p, EnqueueFlags::INITIAL | EnqueueFlags::NOCLOCK);
        tasks[p].state = TaskState::Queued;
        self.wakeup_preempt(tasks, p, WakeFlags::FORK);
    }

    /// The task leaves this (its old) CPU.
    ///
    /// Follows fair.c: `migrate_task_rq_fair()` (v6.12): a task that is not being moved by the
    /// load balancer (a wakeup migration) leaves its load to be removed lazily
    /// (`remove_entity_load_avg()`), decayed over the idle time this CPU has not accounted
    /// (`migrate_se_pelt_lag()`); either way `last_update_time = 0` so the destination
    /// attaches it. Under legacy CFS a waking task's vruntime is first made relative
    /// (v6.1, `TASK_WAKING`).
    pub fn migrate_task_rq_fair(&mut self, tasks: &mut Tasks, p: TaskId, now_ns: u64) {
        let migrating = tasks[p].on_rq_migrating();
        if self.params.policy == SchedPolicy::Cfs && !migrating {
            let min = self.cfs.min_vruntime;
            let se = &mut tasks[p].se;
            se.vruntime = se.vruntime.wrapping_sub(min);
        }
        if !migrating {
            let se = &mut tasks[p].se;
            let w = se.se_weight();
            self.cfs.avg.remove_entity_load_avg(&mut se.avg, w);
            let sched_clock = now_ns + SCHED_CLOCK_OFFSET_NS;
            self.cfs.avg.migrate_se_pelt_lag(
                &mut se.avg,
                w,
                &self.clocks,
                self.curr.is_none(),
                sched_clock,
            );
        }
        tasks[p].se.avg.last_update_time = 0;
    }

    /// A task exits: its remaining load leaves this runqueue.
    ///
    /// Follows fair.c: `task_dead_fair()` (v6.12): finish a delayed dequeue if one is pending,
    /// then `remove_entity_load_avg()`.
    pub fn task_dead_fair(&mut self, tasks: &mut Tasks, p: TaskId, now_ns: u64) {
        if tasks[p].se.sched_delayed {
            self.update_rq_clock(now_ns);
            self.dequeue_entities(tasks, p, DequeueFlags::SLEEP | DequeueFlags::DELAYED);
        }
        let se = &mut tasks[p].se;
        let w = se.se_weight();
        self.cfs.avg.remove_entity_load_avg(&mut se.avg, w);
        tasks[p].state = TaskState::Exited;
    }

    /// Load balancer: take a queued, not running task off this runqueue for `dst_cpu`.
    ///
    /// Follows fair.c: `detach_task()` (v6.12): `deactivate_task(DEQUEUE_NOCLOCK)` (PELT
    /// detaches the entity synchronously) and [`set_task_cpu`].
    pub fn detach_task(&mut self, tasks: &mut Tasks, p: TaskId, dst_cpu: CpuId, now_ns: u64) {
        debug_assert!(self.curr != Some(p), "detach_task() of the running task");
        self.update_rq_clock(now_ns);
        self.deactivate_task(tasks, p, DequeueFlags::NOCLOCK);
        set_task_cpu(self, tasks, p, dst_cpu, now_ns);
    }

    /// Load balancer: put a detached task on this runqueue.
    ///
    /// Follows fair.c: `attach_task()` (v6.12): `activate_task(ENQUEUE_NOCLOCK)` (which adds
    /// `ENQUEUE_MIGRATED`) and `wakeup_preempt()`.
    pub fn attach_task(&mut self, tasks: &mut Tasks, p: TaskId, now_ns: u64) {
        debug_assert_eq!(tasks[p].cpu, self.cpu);
        self.update_rq_clock(now_ns);
        self.activate_task(tasks, p, EnqueueFlags::NOCLOCK);
        self.wakeup_preempt(tasks, p, WakeFlags::NONE);
    }

    // ---------------------------------------------------------------------------------
    // __schedule()

    /// The first part of `__schedule()`: update the clock and, if the current task blocks or
    /// exits, dequeue it (`block_task()` with `DEQUEUE_NOCLOCK`, plus `DEQUEUE_SPECIAL` on exit).
    /// Then call [`Rq::pick_next_task_fair`] (and, if it returns `None`, newidle balancing and
    /// again, or [`Rq::pick_next_task_idle`]), then [`Rq::context_switch`].
    pub fn __schedule_prev(&mut self, tasks: &mut Tasks, action: PrevAction, now_ns: u64) {
        self.update_rq_clock(now_ns);
        self.prev_voluntary = false;
        let Some(prev) = self.curr else {
            return;
        };
        match action {
            PrevAction::Preempt => {}
            PrevAction::Block => {
                tasks[prev].state = TaskState::Sleeping;
                self.block_task(tasks, prev, DequeueFlags::NOCLOCK);
                self.prev_voluntary = true;
            }
            PrevAction::Exit => {
                tasks[prev].state = TaskState::Exited;
                self.block_task(tasks, prev, DequeueFlags::NOCLOCK | DequeueFlags::SPECIAL);
                self.prev_voluntary = true;
            }
        }
    }

    /// Pick the next fair task and make it current; `None` means nothing is runnable (the
    /// caller may run newidle balancing and call again, then [`Rq::pick_next_task_idle`]).
    ///
    /// Follows fair.c: `pick_next_task_fair()` / `pick_task_fair()` (v6.12, flat): update a
    /// queued curr, `pick_next_entity()`; a delayed entity that gets picked is dequeued for
    /// good (`DEQUEUE_SLEEP | DEQUEUE_DELAYED`) and the pick retried; if the pick differs from
    /// `prev`, put prev back and set the pick (`put_prev_entity()`, `set_next_entity()`,
    /// `__set_next_task_fair()`: move it to the head of `cfs_tasks`, update misfit status).
    pub fn pick_next_task_fair(&mut self, tasks: &mut Tasks) -> Option<TaskId> {
        let params = self.params;
        let clock = self.cfs_clock();
        let p = loop {
            if self.cfs.nr_running == 0 {
                return None;
            }
            if let Some(c) = self.cfs.curr
                && tasks[c].se.on_rq
            {
                self.cfs.update_curr(tasks, clock, &params);
            }
            let se = self
                .cfs
                .pick_next_entity(tasks, &params)
                .expect("a cfs_rq with nr_running > 0 has an entity");
            if tasks[se].se.sched_delayed {
                self.dequeue_entities(tasks, se, DequeueFlags::SLEEP | DequeueFlags::DELAYED);
                continue;
            }
            break se;
        };
        let prev = self.curr;
        if prev != Some(p) {
            if let Some(prev) = prev
                && self.cfs.curr == Some(prev)
            {
                self.cfs.put_prev_entity(tasks, prev, clock, &params);
            }
            self.cfs.set_next_entity(tasks, p, clock, &params);
            self.__set_next_task_fair(tasks, p, true);
        }
        Some(p)
    }

    /// Nothing to run: switch to the idle task.
    ///
    /// Follows fair.c: the idle tail of `pick_next_task_fair()` (`update_idle_rq_clock_pelt()`:
    /// account lost idle time if the CPU was saturated) and core.c `put_prev_set_next_task()`
    /// (`put_prev_task_fair()` of the previous task).
    pub fn pick_next_task_idle(&mut self, tasks: &mut Tasks) {
        self.clocks.update_idle_rq_clock_pelt(
            self.cfs.avg.avg.util_sum,
            self.avg_rt.util_sum,
            self.avg_dl.util_sum,
        );
        if let Some(prev) = self.curr
            && self.cfs.curr == Some(prev)
        {
            self.put_prev_task_fair(tasks, prev);
        }
    }

    /// Follows fair.c: `put_prev_task_fair()` (flat): `put_prev_entity()`.
    pub fn put_prev_task_fair(&mut self, tasks: &mut Tasks, prev: TaskId) {
        let params = self.params;
        let clock = self.cfs_clock();
        self.cfs.put_prev_entity(tasks, prev, clock, &params);
    }

    /// Follows fair.c: `set_next_task_fair()` (flat): `set_next_entity()` then
    /// `__set_next_task_fair()`.
    pub fn set_next_task_fair(&mut self, tasks: &mut Tasks, p: TaskId, first: bool) {
        let params = self.params;
        let clock = self.cfs_clock();
        self.cfs.set_next_entity(tasks, p, clock, &params);
        self.__set_next_task_fair(tasks, p, first);
    }

    /// Follows fair.c: `__set_next_task_fair()` (v6.12): a queued task moves to the head of
    /// `cfs_tasks` (most recently used); on a real pick, update the misfit status.
    fn __set_next_task_fair(&mut self, tasks: &mut Tasks, p: TaskId, first: bool) {
        if tasks[p].on_rq_queued() {
            self.cfs.cfs_tasks_move_to_head(p);
        }
        if !first {
            return;
        }
        debug_assert!(!tasks[p].se.sched_delayed);
        self.update_misfit_status(tasks, Some(p));
    }

    /// The end of `__schedule()`: clear the reschedule request and, if the task changes, count
    /// the switch (`nr_switches`, and `nvcsw` or `nivcsw` of prev) and do the schedstats run
    /// delay accounting (`sched_info_switch()`). Returns whether the task changed.
    ///
    /// Follows core.c: `__schedule()` / `prepare_task_switch()` (v6.12).
    pub fn context_switch(&mut self, tasks: &mut Tasks, next: Option<TaskId>) -> bool {
        let prev = self.curr;
        self.cfs.need_resched = false;
        let voluntary = std::mem::take(&mut self.prev_voluntary);
        if prev == next {
            return false;
        }
        self.nr_switches += 1;
        if let Some(prev) = prev {
            let t = &mut tasks[prev];
            if voluntary {
                t.nvcsw += 1;
            } else {
                t.nivcsw += 1;
            }
            if t.state == TaskState::Running {
                t.state = TaskState::Queued;
                self.sched_info_enqueue(tasks, prev);
            }
        }
        if let Some(next) = next {
            self.sched_info_arrive(tasks, next);
            tasks[next].state = TaskState::Running;
        }
        self.curr = next;
        true
    }

    /// A whole `__schedule()` for a runqueue that does no newidle balancing: the steps above in
    /// order. Returns the task now running (`None`: idle).
    pub fn schedule(
        &mut self,
        tasks: &mut Tasks,
        action: PrevAction,
        now_ns: u64,
    ) -> Option<TaskId> {
        self.__schedule_prev(tasks, action, now_ns);
        let next = self.pick_next_task_fair(tasks);
        if next.is_none() {
            self.pick_next_task_idle(tasks);
        }
        self.context_switch(tasks, next);
        next
    }

    /// The current task yields.
    ///
    /// Follows fair.c: `yield_task_fair()` (v6.12: push curr's deadline one slice later; v6.1:
    /// make it the skip buddy). The caller then schedules with [`PrevAction::Preempt`].
    pub fn yield_task_fair(&mut self, tasks: &mut Tasks, now_ns: u64) {
        let Some(curr) = self.curr else {
            return;
        };
        if self.nr_running == 1 {
            return;
        }
        self.cfs.clear_buddies(curr);
        let params = self.params;
        match params.policy {
            SchedPolicy::Eevdf => {
                self.update_rq_clock(now_ns);
                let clock = self.cfs_clock();
                self.cfs.update_curr(tasks, clock, &params);
                let se = &mut tasks[curr].se;
                se.deadline = se
                    .deadline
                    .wrapping_add(calc_delta_fair(se.slice, &se.load));
            }
            SchedPolicy::Cfs => {
                if tasks[curr].policy != crate::task::Policy::Batch {
                    self.update_rq_clock(now_ns);
                    let clock = self.cfs_clock();
                    self.cfs.update_curr(tasks, clock, &params);
                }
                self.cfs.skip = Some(curr);
            }
        }
    }

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
            let params = self.params;
            let clock = self.cfs_clock();
            self.cfs.entity_tick(tasks, curr, clock, &params);
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
    /// (`update_cfs_rq_load_avg()`), then `has_blocked_load` from what still decays.
    pub fn update_blocked_averages(&mut self, now_ns: u64) -> bool {
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
        let load = self.cfs.pelt_load();
        decayed |= self.cfs.avg.update_cfs_rq_load_avg(now, &load);
        let cfs_blocked = self.cfs.avg.avg.load_avg != 0 || self.cfs.avg.avg.util_avg != 0;
        self.has_blocked_load = others_blocked || cfs_blocked;
        decayed
    }

    // ---------------------------------------------------------------------------------
    // Getters the load balancer reads

    /// `cpu_load(rq)`: `cfs.avg.load_avg` (the PELT load, not the instantaneous weight).
    pub fn cpu_load(&self) -> u64 {
        self.cfs.avg.avg.load_avg
    }

    /// The load the balancer reads: [`Rq::cpu_load`], or with `LB_TIP_AVG_HIGH` (lbsim, seed
    /// 003, never merged; the caller says whether it is on) tipped towards the queued weight
    /// when the average lags it: if `load.weight > 2 * load_avg`,
    /// `load_avg + min(NICE_0_LOAD, load.weight / 2)`.
    pub fn cpu_load_lb(&self, tip_avg_high: bool) -> u64 {
        let load_avg = self.cpu_load();
        if tip_avg_high {
            let weight = scale_load_down(self.cfs.load.weight);
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

    /// `task_h_load(p)` without group scheduling: `p->se.avg.load_avg`.
    pub fn task_h_load(&self, tasks: &Tasks, p: TaskId) -> u64 {
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

    // ---------------------------------------------------------------------------------
    // Invariants

    /// Check that the counters and sums agree with what the runqueue holds: `nr_running`,
    /// `h_nr_running`, `h_nr_delayed`, `load.weight` against the queued tasks; the timeline
    /// against the queued entities other than `curr`; `avg_vruntime`/`avg_load` against a
    /// recomputation; `cfs_tasks` against the queued tasks.
    pub fn check_invariants(&self, tasks: &Tasks) -> Result<(), RqError> {
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
        for (id, t) in tasks.iter() {
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
                if !cfs.timeline().any(|n| n == id) {
                    return err(format!(
                        "queued task {id:?} is neither curr nor in the timeline"
                    ));
                }
            }
            if !cfs.cfs_tasks().any(|n| n == id) {
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
        if avg != cfs.avg_vruntime || avg_load != cfs.avg_load {
            return err(format!(
                "avg_vruntime {} / avg_load {}, recomputed {avg} / {avg_load}",
                cfs.avg_vruntime, cfs.avg_load
            ));
        }
        Ok(())
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

/// Move a task's CPU, running the fair class's migration hook on its old runqueue.
///
/// Follows core.c: `set_task_cpu()` (v6.12): if the CPU changes, `migrate_task_rq_fair()` on
/// the source and `se.nr_migrations++`; then `task_cpu(p) = new_cpu`. `src` must be the task's
/// current runqueue.
pub fn set_task_cpu(src: &mut Rq, tasks: &mut Tasks, p: TaskId, new_cpu: CpuId, now_ns: u64) {
    debug_assert_eq!(
        tasks[p].cpu, src.cpu,
        "set_task_cpu() with the wrong source runqueue"
    );
    if tasks[p].cpu != new_cpu {
        src.migrate_task_rq_fair(tasks, p, now_ns);
        tasks[p].se.nr_migrations += 1;
    }
    tasks[p].cpu = new_cpu;
}

#[cfg(test)]
mod tests;
