//! `__schedule()`: put the previous task back or block it, pick the next, the newly idle
//! balance in simulated-time steps, and the context switch.
//!
//! Follows core.c: __schedule(), context_switch() (v6.12); fair.c: sched_balance_newidle().

use crate::prelude::*;

impl<B: Balancer> Core<B> {
    /// `__schedule()` on `cpu`: put the previous task back or block it, pick the next one;
    /// when nothing is runnable, start the newly idle balance, whose steps then run as
    /// [`Ev::NewidleStep`] events in simulated time before the schedule completes
    /// ([`Core::finish_schedule`]).
    pub(crate) fn schedule(&mut self, cpu: CpuId) {
        let ci = cpu.index();
        if self.cpus[ci].newidle.is_some() {
            // Already in __schedule(), balancing: it will pick when the balance is over.
            return;
        }
        let now = self.now;
        self.settle(cpu);
        self.account(cpu);
        let prev = self.rqs[ci].curr;
        let mut action = PrevAction::Preempt;
        let mut moved = None;
        if let Some(p) = prev {
            self.account_runtime(p);
            let ri = self.run_of[p] as usize;
            let r = &mut self.runs[ri];
            if r.exit_pending {
                action = PrevAction::Exit;
            } else if r.block_pending {
                action = PrevAction::Block;
                r.block_pending = false;
                if std::mem::take(&mut r.moving) {
                    action = PrevAction::Move;
                    moved = Some(ri);
                }
            }
        }
        self.cpus[ci].stat.sched_count += 1;
        self.rqs[ci].__schedule_prev(&mut self.tasks, action, now);
        if let Some(ri) = moved {
            // Off the CPU its affinity excludes: woken now, onto an allowed one.
            self.arm_timer(ri, now);
        }
        if action == PrevAction::Exit
            && let Some(p) = prev
            && matches!(
                self.runs[self.run_of[p] as usize].kind,
                Kind::Workload { .. }
            )
        {
            // The task is TASK_DEAD from here on, although its CPU may still balance before
            // switching away.
            self.workload_exited += 1;
        }
        let next = self.rqs[ci].pick_next_task_fair(&mut self.tasks);
        if next.is_some() {
            self.finish_schedule(cpu, prev, action, next);
            return;
        }
        // sched_balance_newidle(): interrupts stay off until the schedule completes; the
        // previous task is still this CPU's `curr` (`p->on_cpu`), so a wake-up of it goes
        // through this CPU's wake list.
        self.cancel_segment(cpu);
        self.cpus[ci].newidle = Some((prev, action));
        self.cpus[ci].newidle_since = now;
        let step = self.ctx_call(|b, ctx| b.newidle_begin(ctx, cpu));
        self.newidle_stepped(cpu, step);
    }

    /// A step of the newly idle balance on `cpu` is due.
    pub(crate) fn newidle_step(&mut self, cpu: CpuId) {
        let step = self.ctx_call(|b, ctx| b.newidle_continue(ctx, cpu));
        self.newidle_stepped(cpu, step);
    }

    pub(crate) fn newidle_stepped(&mut self, cpu: CpuId, step: NewidleStep) {
        let ci = cpu.index();
        self.account_pass(&step.outcome);
        self.apply_outcome(cpu, &step.outcome);
        let end = self.now + step.outcome.elapsed_ns;
        let c = &mut self.cpus[ci];
        c.irq_off_until = c.irq_off_until.max(end);
        c.sched_work_ns = c.sched_work_ns.saturating_add(step.outcome.elapsed_ns);
        if !step.done {
            self.fx.at(end, Ev::NewidleStep { cpu: cpu.0 });
            return;
        }
        if end > self.now {
            // The schedule completes when the last step's work is done.
            self.fx.at(end, Ev::NewidleDone { cpu: cpu.0 });
        } else {
            self.newidle_done(cpu);
        }
    }

    /// The newly idle balance on `cpu` is over: pick again (it may have pulled a task) and
    /// complete the schedule.
    pub(crate) fn newidle_done(&mut self, cpu: CpuId) {
        let ci = cpu.index();
        let Some((prev, action)) = self.cpus[ci].newidle.take() else {
            return;
        };
        let next = if self.rqs[ci].nr_running > 0 {
            self.rqs[ci].pick_next_task_fair(&mut self.tasks)
        } else {
            None
        };
        if next != prev {
            // The balance's time is in the leaving task's traced interval (the switch comes
            // after it), not in its run time (accounted when __schedule() began).
            let spent = self.now.saturating_sub(self.cpus[ci].newidle_since);
            self.trace_charge(cpu, crate::trace::Charge::Newidle, spent);
        }
        self.finish_schedule(cpu, prev, action, next);
    }

    /// Follows core.c: context_switch() on `cpu` to `next` (`None`: the idle task), with the
    /// `sched_switch` tracepoint before it and a PELT sample after; `action` is how the
    /// previous task leaves. Returns whether the current task changed.
    pub(crate) fn context_switch(
        &mut self,
        cpu: CpuId,
        next: Option<TaskId>,
        action: PrevAction,
    ) -> bool {
        let ci = cpu.index();
        // A yield's switch is voluntary; the flag is spent by any switch.
        let yielded = std::mem::take(&mut self.cpus[ci].yielded);
        let curr = self.rqs[ci].curr;
        if self.trace.is_some() && curr != next {
            use crate::trace::PrevState;
            let prev_state = match (curr.is_some(), action) {
                (false, _) => PrevState::Runnable,
                (true, PrevAction::Preempt) if yielded => PrevState::Runnable,
                (true, PrevAction::Preempt) => PrevState::Preempted,
                // A move waits for the stopper in the kernel (affine_move_task()'s
                // wait_for_completion()): a sleep.
                (true, PrevAction::Block | PrevAction::Move) => PrevState::Sleeping,
                (true, PrevAction::Exit) => PrevState::Dead,
            };
            let (prev_pid, next_pid) = (self.pid(curr), self.pid(next));
            let now = self.now;
            self.trace_at(
                now,
                cpu,
                crate::trace::TraceEvent::Switch {
                    prev_pid,
                    prev_state,
                    next_pid,
                },
            );
        }
        let was_busy = self.rqs[ci].curr.is_some();
        let changed = self.rqs[ci].context_switch(&mut self.tasks, next);
        if changed {
            self.trace_pelt(cpu);
        }
        if was_busy != next.is_some() {
            self.smt_busy_changed(cpu, next.is_some());
        }
        changed
    }

    /// The end of `__schedule()`: switch to `next` (or idle).
    pub(crate) fn finish_schedule(
        &mut self,
        cpu: CpuId,
        prev: Option<TaskId>,
        action: PrevAction,
        next: Option<TaskId>,
    ) {
        let ci = cpu.index();
        let now = self.now;
        self.account(cpu);
        if next.is_none() {
            self.rqs[ci].pick_next_task_idle(&mut self.tasks);
        }
        let mut start = self.cpus[ci].busy_until.max(now);
        if let Some(n) = next
            && next != prev
            && let Some(q) = self.tasks[n].sched_info.last_queued
        {
            let wait = self.rqs[ci].rq_clock().saturating_sub(q);
            self.cpus[ci].stat.run_delay += wait;
            let r = &mut self.runs[self.run_of[n] as usize];
            r.max_wait_ns = r.max_wait_ns.max(wait);
        }
        if action == PrevAction::Exit
            && let Some(p) = prev
        {
            self.trace_task(now, cpu, p, |pid| crate::trace::TraceEvent::Exit { pid });
        }
        let changed = self.context_switch(cpu, next, action);
        if next.is_none() {
            self.cpus[ci].stat.sched_goidle += 1;
        } else if changed {
            self.cpus[ci].stat.pcount += 1;
        }
        if action == PrevAction::Exit
            && let Some(p) = prev
        {
            self.rqs[ci].task_dead_fair(&mut self.tasks, p, now);
            let ri = self.run_of[p];
            if matches!(self.runs[ri as usize].kind, Kind::Workload { .. }) {
                self.exits.push((ri, now));
            }
        }
        if changed {
            // A switch costs the same whether the next task is a fair task or the idle task;
            // interrupts come back on only at its end (finish_task_switch()).
            start += self.cfg.cost.context_switch_ns;
        }
        let c = &mut self.cpus[ci];
        c.busy_until = start;
        c.seg_start = start;
        if next.is_none() {
            c.irq_off_until = c.irq_off_until.max(start);
        }
        match next {
            Some(n) => {
                self.rqs[ci].sched_idle_set_state(None);
                let ri = self.run_of[n] as usize;
                if changed {
                    let r = &mut self.runs[ri];
                    r.on_cpu_since = now;
                    if let Some(w) = r.take_wake_ns() {
                        let lat = start.saturating_sub(w);
                        if let Kind::Workload { program, .. } = &r.kind {
                            self.obs.wakeups.push(WakeupSample {
                                task: program.task(),
                                wake_ns: w,
                                latency_ns: lat,
                            });
                        }
                    }
                    self.ctx_call(|b, ctx| b.task_running(ctx, n, cpu));
                }
                self.restart_tick(cpu);
                self.arm_segment(cpu);
            }
            None => {
                self.cancel_segment(cpu);
                // The idle task runs: the idle loop (do_idle()).
                self.enter_idle_task(cpu);
            }
        }
        if self.rqs[ci].need_resched() || (next.is_none() && self.rqs[ci].nr_running > 0) {
            self.resched_cpu(cpu, cpu);
        }
    }
}
