//! Wake-up, fork and migration on a runqueue, following kernel/sched/core.c and fair.c of
//! v6.12: `wakeup_preempt()`, `check_preempt_wakeup_fair()` (and v6.1's
//! `check_preempt_wakeup()` for `sched_policy=cfs`), `ttwu_do_activate()`, `ttwu_runnable()`,
//! `sched_ttwu_pending()`, `task_fork_fair()` (v6.1), `wake_up_new_task()`,
//! `migrate_task_rq_fair()`, `task_dead_fair()`, the balancer's `detach_task()` /
//! `attach_task()` halves, and `set_task_cpu()`.

use lbsim_pelt::{RunnableInit, init_util_avg_full_scale, post_init_entity_util_avg};
use lbsim_topology::CpuId;

use crate::cfs_rq::CfsRq;
use crate::entity::{DequeueFlags, EnqueueFlags, TaskId, WakeFlags};
use crate::params::RqFeat;
use crate::task::{TaskState, Tasks};
use crate::tunables::FairPick;

use super::{Rq, SCHED_CLOCK_OFFSET_NS, update_avg};

impl Rq {
    // ---------------------------------------------------------------------------------
    // Wakeup, fork, migration

    /// Preempt the current task with a newly queued one if needed.
    ///
    /// Follows core.c: `wakeup_preempt()` (v6.12): the idle task is always preempted.
    pub fn wakeup_preempt(&mut self, tasks: &mut Tasks, p: TaskId, wake_flags: WakeFlags) {
        match self.curr {
            None => self.cfs.resched_curr(),
            Some(curr) if self.groups.is_some() => {
                self.check_preempt_wakeup_fair_h(tasks, curr, p, wake_flags)
            }
            Some(curr) => match self.params.pick {
                FairPick::Eevdf => self.check_preempt_wakeup_fair(tasks, curr, p, wake_flags),
                FairPick::Cfs => self.check_preempt_wakeup_cfs(tasks, curr, p, wake_flags),
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
        if params.pick != FairPick::Cfs {
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
    /// (`post_init_entity_util_avg()`; with `NO_POST_INIT_UTIL_AVG` the full scale, as v4.6's
    /// `init_entity_runnable_average()` left it), enqueued with `ENQUEUE_INITIAL`, and may preempt
    /// (`WF_FORK`).
    pub fn wake_up_new_task(&mut self, tasks: &mut Tasks, p: TaskId, now_ns: u64) {
        debug_assert_eq!(tasks[p].state, TaskState::New);
        tasks[p].cpu = self.cpu;
        tasks[p].wake_cpu = self.cpu;
        self.update_rq_clock(now_ns);
        let weight = tasks[p].se.se_weight();
        let runnable_init = if self.params.features.enabled(RqFeat::RunnableAvgInitUtil) {
            RunnableInit::UtilAvg
        } else {
            RunnableInit::CpuScale
        };
        // cfs_rq_of(se): the task's group cfs_rq with task groups.
        let cfs_avg = &self.task_cfs(tasks, p).avg;
        if self.params.features.enabled(RqFeat::PostInitUtilAvg) {
            post_init_entity_util_avg(
                &mut tasks[p].se.avg,
                cfs_avg,
                self.capacity_orig,
                weight,
                runnable_init,
            );
        } else {
            init_util_avg_full_scale(&mut tasks[p].se.avg, self.capacity_orig, runnable_init);
        }
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
        if self.params.pick == FairPick::Cfs && !migrating {
            let min = self.cfs.min_vruntime;
            let se = &mut tasks[p].se;
            se.vruntime = se.vruntime.wrapping_sub(min);
        }
        if !migrating {
            let k = tasks[p].tg as usize;
            let curr_is_idle = self.curr.is_none();
            let clocks = &self.clocks;
            let cfs = match self.groups.as_deref_mut() {
                Some(g) if k != 0 => &mut g.cfs[k],
                _ => &mut self.cfs,
            };
            let se = &mut tasks[p].se;
            let w = se.se_weight();
            cfs.avg.remove_entity_load_avg(&mut se.avg, w);
            let sched_clock = now_ns + SCHED_CLOCK_OFFSET_NS;
            cfs.avg
                .migrate_se_pelt_lag(&mut se.avg, w, clocks, curr_is_idle, sched_clock);
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
        let k = tasks[p].tg as usize;
        let cfs = match self.groups.as_deref_mut() {
            Some(g) if k != 0 => &mut g.cfs[k],
            _ => &mut self.cfs,
        };
        let se = &mut tasks[p].se;
        let w = se.se_weight();
        cfs.avg.remove_entity_load_avg(&mut se.avg, w);
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
}

/// Move a task's CPU, running the fair class's migration hook on its old runqueue.
///
/// Follows core.c: `set_task_cpu()` (v6.12): if the CPU changes, `migrate_task_rq_fair()` on
/// the source and `se.nr_migrations++`; then `__set_task_cpu()`: `task_cpu(p) = new_cpu` and
/// `p->wake_cpu = new_cpu`, so the next wake-up searches from where the task last ran
/// whoever moved it (a wake-up, the load balancer, the stopper). `src` must be the task's
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
    tasks[p].wake_cpu = new_cpu;
}
