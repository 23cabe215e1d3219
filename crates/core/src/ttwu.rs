//! Wake-ups: `try_to_wake_up()`, the wake list and its IPI, timer and background wake-ups.
//!
//! Follows core.c: try_to_wake_up(), ttwu_runnable(), ttwu_queue_cond(),
//! __ttwu_queue_wakelist(), sched_ttwu_pending() (v6.12).

use crate::prelude::*;

impl<B: Balancer> Core<B> {
    /// After a task was queued on `cpu` by an action on `from`: restart the tick of an idle
    /// CPU, and reschedule if the enqueue asked for it.
    pub(crate) fn after_enqueue(&mut self, cpu: CpuId, from: CpuId) {
        self.restart_tick(cpu);
        if self.rqs[cpu.index()].need_resched() || self.rqs[cpu.index()].curr.is_none() {
            self.resched_cpu(cpu, from);
        }
    }

    /// Task `run`'s sleep timer fires (`hrtimer_wakeup()`).
    pub(crate) fn timer(&mut self, run: u32) {
        let ri = run as usize;
        let id = self.runs[ri].id;
        // The hrtimer fires on the CPU the task slept on; it waits for interrupts to be on.
        let cpu = self.tasks[id].cpu;
        if let Some(at) = self.irq_deferral(cpu, false) {
            self.arm_timer(ri, at);
            return;
        }
        self.ttwu(ri, cpu, false, true);
    }

    pub(crate) fn background(&mut self, cpu: CpuId) {
        if let Some(at) = self.idle_exit_deferral(cpu, false) {
            // The interrupt behind the kernel work waits for the CPU to leave its idle state.
            self.fx.at(at, Ev::Background { cpu: cpu.0 });
            return;
        }
        let next = self.next_background_delay();
        self.fx.at(next, Ev::Background { cpu: cpu.0 });
        let Some(ri) = self.cpus[cpu.index()].kworker else {
            return;
        };
        let id = self.runs[ri as usize].id;
        if self.tasks[id].state != TaskState::Sleeping || self.runs[ri as usize].block_pending {
            return;
        }
        if let Kind::Kworker { ran } = &mut self.runs[ri as usize].kind {
            *ran = false;
        }
        self.ttwu(ri as usize, cpu, false, true);
    }

    /// `try_to_wake_up()` of task `ri`, run on `this_cpu`.
    ///
    /// Follows core.c: try_to_wake_up() (v6.12): `ttwu_runnable()` if the task is still queued;
    /// else `select_task_rq()`, `set_task_cpu()` if the CPU changes (`WF_MIGRATED`), and
    /// `ttwu_queue()` (the wake list when `ttwu_queue_cond()` says so). `irq`: issued from
    /// an interrupt (a timer, the background work's), not by the task current on
    /// `this_cpu`; only the trace's `lbsim_charge` says so.
    pub(crate) fn ttwu(&mut self, ri: usize, this_cpu: CpuId, sync: bool, irq: bool) {
        let id = self.runs[ri].id;
        let now = self.now;
        if self.runs[ri].block_pending {
            // Woken before it got off its CPU (`p->on_rq` still set): it keeps running.
            // Follows core.c: ttwu_runnable() for the running task. (A task moving off a CPU
            // its affinity excludes has nothing that wakes it before it is off.)
            debug_assert!(
                !self.runs[ri].moving,
                "a moving task woken before it is off"
            );
            self.runs[ri].block_pending = false;
            self.runs[ri].moving = false;
            self.cancel_timer(ri);
            let cpu = self.tasks[id].cpu;
            self.trace_waking(this_cpu, id, cpu);
            self.trace_wakeup(this_cpu, id);
            if self.rqs[cpu.index()].curr == Some(id) {
                self.arm_segment(cpu);
            }
            return;
        }
        match self.tasks[id].state {
            TaskState::Sleeping => {}
            _ => return,
        }
        // Already woken onto a wake list (its task_cpu's): the kernel's task is TASK_WAKING
        // by then, so a second waker's ttwu_state_match() fails and it does nothing.
        if self.cpus[self.tasks[id].cpu.index()]
            .wakelist
            .iter()
            .any(|&(p, _, _)| p == id)
        {
            return;
        }
        let cost = crate::cpuidle::spread(
            &mut self.wake_rng,
            self.cfg.cost.wakeup_ns,
            self.cfg.machine.wakeup_cost_spread_pct,
        );
        self.charge(this_cpu, cost);
        self.cpus[this_cpu.index()].stat.ttwu_count += 1;
        let prev_cpu = self.tasks[id].cpu;
        if self.tasks[id].on_rq_queued() {
            // Delayed dequeue: still queued on its old CPU.
            self.account(prev_cpu);
            let wf = if sync {
                WakeFlags::TTWU | WakeFlags::SYNC
            } else {
                WakeFlags::TTWU
            };
            self.trace_waking(this_cpu, id, prev_cpu);
            self.trace_charge(this_cpu, crate::trace::Charge::Ttwu { sync, irq }, cost);
            self.rqs[prev_cpu.index()].ttwu_runnable(&mut self.tasks, id, wf, now);
            self.trace_wakeup(this_cpu, id);
            self.runs[ri].set_wake_ns(now);
            self.after_enqueue(prev_cpu, this_cpu);
            return;
        }
        if self.rqs[prev_cpu.index()].curr == Some(id) {
            // Still its CPU's `curr` (`p->on_cpu`): that CPU is in __schedule(), balancing
            // newly idle. Follows core.c: try_to_wake_up(): `ttwu_queue_wakelist(p,
            // task_cpu(p), wake_flags | WF_ON_CPU)` without selecting a CPU.
            self.runs[ri].set_wake_ns(now);
            self.trace_waking(this_cpu, id, prev_cpu);
            self.trace_charge(this_cpu, crate::trace::Charge::Ttwu { sync, irq }, cost);
            self.queue_wakelist(prev_cpu, id, false);
            return;
        }
        let mut wf = WakeFlags::TTWU;
        if sync {
            wf |= WakeFlags::SYNC;
        }
        let wake_cpu = self.tasks[id].wake_cpu;
        let placement = self.ctx_call(|b, ctx| b.select_task_rq(ctx, id, wake_cpu, this_cpu, wf));
        let work = self.cfg.cost.charge(&placement.work);
        self.charge(this_cpu, work);
        let cpu = self.checked_placement(id, placement.cpu);
        if cpu == this_cpu {
            self.cpus[this_cpu.index()].stat.ttwu_local += 1;
        }
        let migrated = cpu != prev_cpu;
        // sched_waking fires before select_task_rq(): its target_cpu is task_cpu(p).
        self.trace_waking(this_cpu, id, prev_cpu);
        self.trace_charge(
            this_cpu,
            crate::trace::Charge::Ttwu { sync, irq },
            cost + work,
        );
        if migrated {
            self.trace_migrate(now, this_cpu, id, prev_cpu, cpu);
            wf |= WakeFlags::MIGRATED;
            set_task_cpu(
                &mut self.rqs[prev_cpu.index()],
                &mut self.tasks,
                id,
                cpu,
                now,
            );
        }
        self.runs[ri].set_wake_ns(now);
        if self.ttwu_queue_cond(this_cpu, cpu) {
            self.queue_wakelist(cpu, id, migrated);
        } else {
            self.account(cpu);
            self.rqs[cpu.index()].ttwu_do_activate(&mut self.tasks, id, wf, now);
            self.trace_wakeup(this_cpu, id);
            self.after_enqueue(cpu, this_cpu);
        }
    }

    /// Whether a wake-up from `this_cpu` onto `cpu` goes through `cpu`'s wake list (with
    /// `TTWU_QUEUE`) rather than being enqueued by the waker.
    ///
    /// Follows core.c: ttwu_queue_cond() (v6.12, as since v6.0, f3dd3f674555): a CPU that
    /// does not share the waker's LLC, or one with nothing running. Before v6.0 (the `--kernel`
    /// profile's release): v4.6-v5.7 ttwu_queue() queued only across LLCs; v5.8-v5.19
    /// (c6e7bd7afaeb) also a wakee still descheduling on a CPU with `nr_running <= 1`, which
    /// lbsim's wake of a task still `curr` (in a newly idle balance) queues anyway. Deliberately
    /// different before v5.8: there the waker spun on `p->on_cpu` until the wakee's CPU had
    /// switched it out and then chose a CPU; lbsim queues such a wake-up on the wakee's CPU
    /// as v5.8 does; and a CPU in a newly idle balance (below).
    pub(crate) fn ttwu_queue_cond(&self, this_cpu: CpuId, cpu: CpuId) -> bool {
        if !self.cfg.features.enabled(CoreFeat::TtwuQueue) || cpu == this_cpu {
            return false;
        }
        if !self.cfg.topology.cpus_share_cache(this_cpu, cpu) {
            return true;
        }
        let since_6_0 = self.cfg.kernel.is_none_or(|v| v >= (6, 0));
        // Deliberately different before v6.0: a CPU in a newly idle balance gets the wake-up
        // through its wake list too. The kernel's waker could enqueue while the balance had
        // dropped the runqueue lock; lbsim runs the balance's steps ahead of the engine's
        // time (each charged its cost), so an enqueue into it would land behind the
        // runqueue's clock. The wake list delivers it when the balance ends.
        let in_newidle = self.cpus[cpu.index()].newidle.is_some();
        (since_6_0 && self.rqs[cpu.index()].nr_running == 0) || in_newidle
    }

    /// When an interrupt for `cpu` can be taken, if not now: interrupts are off while a
    /// newly idle balance runs in `__schedule()` (and for the last step's cost after it), and
    /// a CPU in an idle state first has to leave it ([`Core::idle_exit_deferral`]; `by_tick`:
    /// the interrupt is the tick).
    pub(crate) fn irq_deferral(&mut self, cpu: CpuId, by_tick: bool) -> Option<u64> {
        let c = &self.cpus[cpu.index()];
        if c.irq_off_until > self.now {
            Some(c.irq_off_until)
        } else if c.newidle.is_some() {
            // A zero-length step is due now; look again just after it.
            Some(self.now + 1)
        } else {
            self.idle_exit_deferral(cpu, by_tick)
        }
    }

    /// Follows core.c: __ttwu_queue_wakelist(): queue `p` on `cpu`'s wake list, set
    /// `rq->ttwu_pending`, send the IPI.
    pub(crate) fn queue_wakelist(&mut self, cpu: CpuId, p: TaskId, migrated: bool) {
        let now = self.now;
        self.cpus[cpu.index()].wakelist.push((p, migrated, now));
        self.rqs[cpu.index()].set_ttwu_pending();
        if self.cpus[cpu.index()].ipi.is_none() {
            // set_nr_if_polling(): a polling idle CPU needs no IPI.
            let at = now + self.signal_ns(cpu);
            self.cpus[cpu.index()].ipi = Some(self.fx.at(at, Ev::Ipi { cpu: cpu.0 }));
        }
    }

    /// The wake-list IPI: `sched_ttwu_pending()`.
    pub(crate) fn ipi(&mut self, cpu: CpuId) {
        if let Some(at) = self.irq_deferral(cpu, false) {
            // Interrupts are off in __schedule(): the IPI is taken when it completes.
            self.cpus[cpu.index()].ipi = Some(self.fx.at(at, Ev::Ipi { cpu: cpu.0 }));
            return;
        }
        let c = &mut self.cpus[cpu.index()];
        c.ipi = None;
        if c.wakelist.is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut c.wakelist);
        self.account(cpu);
        let now = self.now;
        self.rqs[cpu.index()].sched_ttwu_pending(
            &mut self.tasks,
            list.iter().map(|&(p, migrated, _)| (p, migrated)),
            now,
        );
        if self.trace.is_some() {
            for &(p, _, _) in &list {
                self.trace_wakeup(cpu, p);
            }
        }
        self.after_enqueue(cpu, cpu);
        // The list's buffer goes back for the next wake-ups (no allocation per IPI), unless
        // a wake-up queued since took a new one.
        list.clear();
        let c = &mut self.cpus[cpu.index()];
        if c.wakelist.is_empty() {
            c.wakelist = list;
        }
    }
}
