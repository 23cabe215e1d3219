//! `__schedule()` on a runqueue, following kernel/sched/core.c and fair.c of v6.12: its first
//! part ([`Rq::__schedule_prev`]), `pick_next_task_fair()`, `pick_next_task_idle()`,
//! `put_prev_task_fair()`, `set_next_task_fair()`, `context_switch()`, and
//! `yield_task_fair()`.

use crate::entity::{DequeueFlags, TaskId};
use crate::task::{TaskState, Tasks};
use crate::tunables::FairPick;
use crate::weights::calc_delta_fair;

use super::{PrevAction, Rq};

impl Rq {
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
            PrevAction::Move => {
                tasks[prev].state = TaskState::Sleeping;
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
        if self.groups.is_some() {
            return self.pick_next_task_fair_h(tasks);
        }
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
            && self.fair_curr_is(tasks, prev)
        {
            self.put_prev_task_fair(tasks, prev);
        }
    }

    /// Follows fair.c: `put_prev_task_fair()` (flat): `put_prev_entity()`.
    pub fn put_prev_task_fair(&mut self, tasks: &mut Tasks, prev: TaskId) {
        if self.groups.is_some() {
            self.put_prev_task_fair_h(tasks, prev);
            return;
        }
        let params = self.params;
        let clock = self.cfs_clock();
        self.cfs.put_prev_entity(tasks, prev, clock, &params);
    }

    /// Follows fair.c: `set_next_task_fair()` (flat): `set_next_entity()` then
    /// `__set_next_task_fair()`.
    pub fn set_next_task_fair(&mut self, tasks: &mut Tasks, p: TaskId, first: bool) {
        if self.groups.is_some() {
            self.set_next_task_fair_h(tasks, p, first);
            return;
        }
        let params = self.params;
        let clock = self.cfs_clock();
        self.cfs.set_next_entity(tasks, p, clock, &params);
        self.__set_next_task_fair(tasks, p, first);
    }

    /// Follows fair.c: `__set_next_task_fair()` (v6.12): a queued task moves to the head of
    /// `cfs_tasks` (most recently used); on a real pick, update the misfit status.
    pub(crate) fn __set_next_task_fair(&mut self, tasks: &mut Tasks, p: TaskId, first: bool) {
        if tasks[p].on_rq_queued() {
            self.cfs.cfs_tasks_list_move(tasks, p);
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
        if self.groups.is_some() {
            self.update_rq_clock(now_ns);
            self.yield_task_fair_h(tasks, curr);
            return;
        }
        self.cfs.clear_buddies(curr);
        let params = self.params;
        match params.pick {
            FairPick::Eevdf => {
                self.update_rq_clock(now_ns);
                let clock = self.cfs_clock();
                self.cfs.update_curr(tasks, clock, &params);
                let se = &mut tasks[curr].se;
                se.deadline = se
                    .deadline
                    .wrapping_add(calc_delta_fair(se.slice, &se.load));
            }
            FairPick::Cfs => {
                if tasks[curr].policy != crate::task::Policy::Batch {
                    self.update_rq_clock(now_ns);
                    let clock = self.cfs_clock();
                    self.cfs.update_curr(tasks, clock, &params);
                }
                self.cfs.skip = Some(curr);
            }
        }
    }
}
