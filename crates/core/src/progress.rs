//! Progress of the running task: its work advances at the CPU's capacity between the
//! scheduler's interruptions, and the end of its current action is an event.

use crate::prelude::*;

impl<B: Balancer> Core<B> {
    /// Accounts the current task's progress up to now.
    #[inline(always)]
    pub(crate) fn settle(&mut self, cpu: CpuId) {
        let now = self.now;
        let Some(p) = self.rqs[cpu.index()].curr else {
            return;
        };
        if self.cpus[cpu.index()].newidle.is_some() {
            return;
        }
        let c = &mut self.cpus[cpu.index()];
        let from = c.seg_start;
        if now <= from {
            return;
        }
        c.seg_start = now;
        let cap = c.speed;
        let r = &mut self.runs[self.run_of[p] as usize];
        if let Cur::Run { rem_units } = &mut r.cur {
            let done = (now - from).saturating_mul(cap).min(*rem_units);
            *rem_units -= done;
            r.work_units += u128::from(done);
        }
    }

    /// Cancels the pending end of `cpu`'s current action: the task leaves the CPU, or its
    /// action is re-armed.
    pub(crate) fn cancel_segment(&mut self, cpu: CpuId) {
        if let Some(key) = self.cpus[cpu.index()].seg_end.take() {
            self.fx.cancel(key);
        }
    }

    /// Queues the segment end of `cpu`'s current task (cancelling any earlier one).
    pub(crate) fn arm_segment(&mut self, cpu: CpuId) {
        let old = self.cpus[cpu.index()].seg_end.take();
        // No other event is scheduled between the cancel and the new one, so the two can be
        // one step (`Effects::reschedule`).
        let Some(at) = self.segment_end_at(cpu) else {
            if let Some(key) = old {
                self.fx.cancel(key);
            }
            return;
        };
        let ev = Ev::SegEnd { cpu: cpu.0 };
        let key = match old {
            Some(key) => self.fx.reschedule(key, at, ev),
            None => self.fx.at(at, ev),
        };
        self.cpus[cpu.index()].seg_end = Some(key);
    }

    /// When `cpu`'s current action ends, if it has one to end.
    #[inline]
    fn segment_end_at(&self, cpu: CpuId) -> Option<u64> {
        let c = &self.cpus[cpu.index()];
        if c.newidle.is_some() {
            // In __schedule()'s newly idle balance `curr` is the task leaving the CPU: it
            // makes no progress and has no action to finish.
            return None;
        }
        let p = self.rqs[cpu.index()].curr?;
        let start = c.seg_start.max(self.now);
        let r = &self.runs[self.run_of[p] as usize];
        let at = match r.cur {
            Cur::Idle | Cur::Blocked(_) | Cur::Waking(_) => start,
            Cur::Run { rem_units } => start + rem_units.div_ceil(c.speed),
            Cur::RunWall { end_ns } => end_ns.max(start),
        };
        if r.block_pending || r.exit_pending {
            return None;
        }
        Some(at)
    }

    pub(crate) fn segment_end(&mut self, cpu: CpuId) {
        self.settle(cpu);
        let Some(p) = self.rqs[cpu.index()].curr else {
            return;
        };
        let ri = self.run_of[p] as usize;
        let done = match self.runs[ri].cur {
            Cur::Idle | Cur::Blocked(_) | Cur::Waking(_) => true,
            Cur::Run { rem_units } => rem_units == 0,
            Cur::RunWall { end_ns } => self.now >= end_ns,
        };
        if !done {
            // Rounding left a sliver: arm again.
            self.arm_segment(cpu);
            return;
        }
        if !matches!(self.runs[ri].cur, Cur::Blocked(_) | Cur::Waking(_)) {
            self.runs[ri].cur = Cur::Idle;
        }
        self.advance(cpu, ri);
    }
}
