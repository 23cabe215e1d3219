//! The periodic tick, SCHED_SOFTIRQ and the idle-load-balancer kick.
//!
//! Follows core.c: sched_tick() (v6.12); fair.c: sched_balance_trigger(), nohz_balancer_kick();
//! tick-sched.c: tick_nohz_idle_stop_tick() (the tick stops when a CPU goes idle).

use crate::prelude::*;

impl<B: Balancer> Core<B> {
    pub(crate) fn restart_tick(&mut self, cpu: CpuId) {
        let c = &mut self.cpus[cpu.index()];
        if c.tick_stopped {
            c.tick_stopped = false;
        }
        if c.tick.is_none() {
            let at = self.next_tick_boundary(cpu);
            self.cpus[cpu.index()].tick = Some(self.fx.at(at, Ev::Tick { cpu: cpu.0 }));
        }
    }

    /// The next tick boundary of `cpu` strictly after now (`k * TICK_NSEC + phase`, the
    /// first `k` being 1): where [`Core::restart_tick`] arms its tick.
    #[inline]
    pub(crate) fn next_tick_boundary(&self, cpu: CpuId) -> u64 {
        let period = self.tick_nsec;
        let phase = self.cpus[cpu.index()].tick_phase_ns;
        let k = (self.now.saturating_sub(phase)) / period + 1;
        phase + k * period
    }

    pub(crate) fn tick(&mut self, cpu: CpuId) {
        let ci = cpu.index();
        self.cpus[ci].tick = None;
        if self.cpus[ci].tick_stopped {
            return;
        }
        if let Some(at) = self.irq_deferral(cpu, true) {
            // The tick interrupt waits for interrupts to be enabled again, or for the CPU
            // to leave its idle state.
            self.cpus[ci].tick = Some(self.fx.at(at, Ev::Tick { cpu: cpu.0 }));
            return;
        }
        self.settle(cpu);
        self.account(cpu);
        let now = self.now;
        let resched = self.rqs[ci].sched_tick(&mut self.tasks, now);
        self.trace_pelt(cpu);
        // sched_balance_trigger(): SCHED_SOFTIRQ and the nohz kick. (It moves no task, so
        // the other CPUs' accounting need not be brought up to date; the softirq does that.)
        let out = self.ctx_call(|b, ctx| b.tick(ctx, cpu));
        let work = self.cfg.cost.charge(&out.work);
        self.charge(cpu, work);
        self.trace_charge(cpu, crate::trace::Charge::Tick, work);
        if let Some(k) = out.kick {
            self.fx.at(now + self.cfg.cost.ipi_ns, Ev::Kick(k));
        }
        if out.raise_softirq {
            self.softirq(cpu);
        }
        if resched || self.rqs[ci].need_resched() {
            self.resched_cpu(cpu, cpu);
        }
        // Keep ticking while busy. An idle CPU under a cpuidle governor goes round the idle
        // loop, where the governor decides whether the tick stops; on the ideal machine an
        // idle CPU stops its tick at once.
        if self.rqs[ci].curr.is_some() || self.rqs[ci].nr_running > 0 {
            self.restart_tick(cpu);
        } else if self.cpuidle_on(cpu) {
            self.restart_tick(cpu);
            self.idle_reentry.push(cpu.0);
        } else if !self.cpus[ci].tick_stopped {
            self.cpus[ci].tick_stopped = true;
            self.ctx_call(|b, ctx| {
                b.nohz_enter_idle(ctx, cpu);
                b.idle_enter(ctx, cpu);
            });
        }
    }

    /// SCHED_SOFTIRQ on `cpu`.
    pub(crate) fn softirq(&mut self, cpu: CpuId) {
        let out = self.ctx_call(|b, ctx| b.softirq(ctx, cpu));
        self.account_pass(&out);
        let work = out.elapsed_ns.max(self.cfg.cost.charge(&out.work));
        self.charge(cpu, work);
        self.trace_charge(cpu, crate::trace::Charge::Softirq, work);
        self.apply_outcome(cpu, &out);
        if self.rqs[cpu.index()].nr_running > 0 && self.rqs[cpu.index()].curr.is_none() {
            self.restart_tick(cpu);
            self.resched_cpu(cpu, cpu);
        }
    }

    pub(crate) fn kick(&mut self, kick: IlbKick) {
        let cpu = kick.ilb_cpu;
        if let Some(at) = self.irq_deferral(cpu, false) {
            self.fx.at(at, Ev::Kick(kick));
            return;
        }
        self.softirq(cpu);
    }
}
