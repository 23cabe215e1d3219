//! The active-balance stopper (`migration/N`): preempts the busiest CPU's task and runs
//! `active_load_balance_cpu_stop()` there.
//!
//! Follows core.c: stop_one_cpu_nowait() as fair.c's load_balance() uses it (v6.12).

use crate::prelude::*;

impl<B: Balancer> Core<B> {
    /// The stopper preempts the busiest CPU's task and runs active balancing there.
    pub(crate) fn stopper(&mut self, req: StopperRequest) {
        let cpu = req.busiest;
        let ci = cpu.index();
        if let Some(at) = self.irq_deferral(cpu, false) {
            // The stopper's IPI waits for the CPU to enable interrupts.
            self.fx.at(at, Ev::Stopper(req));
            return;
        }
        self.settle(cpu);
        self.account(cpu);
        let now = self.now;
        let mut switched = false;
        if let Some(p) = self.rqs[ci].curr {
            // The stopper class preempts the fair task: put it back on the queue.
            self.account_runtime(p);
            let r = &self.runs[self.run_of[p] as usize];
            if r.block_pending || r.exit_pending {
                // It was about to leave the CPU anyway; schedule that first.
                self.schedule(cpu);
            } else {
                self.rqs[ci].__schedule_prev(&mut self.tasks, PrevAction::Preempt, now);
                self.rqs[ci].pick_next_task_idle(&mut self.tasks);
                // The stopper (migration/N) preempts it; lbsim has no stopper task, so the
                // trace shows a switch to idle.
                self.context_switch(cpu, None, PrevAction::Preempt);
                self.cancel_segment(cpu);
                switched = true;
            }
        }
        self.account_all();
        let out = self.ctx_call(|b, ctx| b.active_balance(ctx, req));
        self.apply_outcome(cpu, &out);
        let c = &mut self.cpus[ci];
        let work = out.elapsed_ns + self.cfg.cost.context_switch_ns;
        c.busy_until = c.busy_until.max(now) + work;
        c.sched_work_ns = c.sched_work_ns.saturating_add(work);
        // The switch's part of it is the traced switch's own cost (a reader adds
        // `cost_context_switch_ns` at each `sched_switch`).
        let traced = if switched { out.elapsed_ns } else { work };
        self.trace_charge(cpu, crate::trace::Charge::Stopper, traced);
        self.resched_cpu(cpu, cpu);
    }
}
