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
        let c = &self.cpus[cpu.index()];
        let mut from = c.seg_start;
        if now <= from {
            return;
        }
        if c.seg_chain {
            // The runs that ended before now, each at its end (one that ends now is over
            // when its segment end is handled, as before).
            from = self.pass_pure_runs(cpu, p, now - 1);
        }
        let c = &mut self.cpus[cpu.index()];
        c.seg_start = now;
        let cap = c.speed;
        let r = &mut self.runs[self.run_of[p] as usize];
        if let Cur::Run { rem_units } = &mut r.cur {
            let done = (now - from).saturating_mul(cap).min(*rem_units);
            *rem_units -= done;
            r.work_units += u128::from(done);
        }
    }

    /// Accounts the runs of a pure loop ([`lbsim_workload::PureRuns`]) that `cpu`'s current
    /// task `p` ends by `until_ns` (inclusive), as their segment ends would have: each run's
    /// work done, the program's next action taken at the run's end (the loop's next run),
    /// the next run starting there. Stops at a run that ends the program (at or after the
    /// loop's exit check), which stays an event.
    ///
    /// lbsim's: the runs of a pure loop are events of the task alone, so [`Core::arm_segment`]
    /// arms one segment end for several of them and this accounts the ones in between when
    /// anything looks at the task's progress (it runs on, is charged, switched out, or its
    /// speed changes) or the run ends. One case differs from an event per run: a run of a
    /// chain that ends at the very nanosecond of another event (a reschedule, an IPI, a
    /// wake-up, another CPU's segment end) may be handled in the other order, as the chain's
    /// end is queued when the chain is armed and the runs inside it are handled when the task
    /// is next settled; the effect may show a run later. Never the tick: a chain ends before
    /// the CPU's next tick boundary, and the tick was queued before the chain was armed.
    /// Returns the start of the run in progress (the CPU's new `seg_start`).
    #[inline(never)]
    #[cold]
    pub(crate) fn pass_pure_runs(&mut self, cpu: CpuId, p: TaskId, until_ns: u64) -> u64 {
        let Core {
            cpus,
            runs,
            run_of,
            sync,
            ..
        } = self;
        let c = &mut cpus[cpu.index()];
        let speed = c.speed;
        let mut from = c.seg_start;
        let r = &mut runs[run_of[p] as usize];
        // Most settles of a chain fall inside a run: nothing to account.
        if let Cur::Run { rem_units } = r.cur
            && from + rem_units.div_ceil(speed) > until_ns
        {
            return from;
        }
        let Kind::Workload { program, rng, .. } = &mut r.kind else {
            return from;
        };
        // The loop stays the same pure loop from one of its runs to the next.
        let Some(pure) = program.pure_runs() else {
            return from;
        };
        while let Cur::Run { rem_units } = r.cur {
            let end = from + rem_units.div_ceil(speed);
            if end > until_ns || end >= pure.exit_at_ns {
                break;
            }
            r.work_units += u128::from(rem_units);
            let work_ns = program.next_pure_run(&pure, end, rng, sync);
            r.cur = Cur::Run {
                rem_units: work_ns.saturating_mul(1024),
            };
            from = end;
        }
        c.seg_start = from;
        from
    }

    /// Cancels the pending end of `cpu`'s current action: the task leaves the CPU, or its
    /// action is re-armed.
    pub(crate) fn cancel_segment(&mut self, cpu: CpuId) {
        let c = &mut self.cpus[cpu.index()];
        if std::mem::take(&mut c.seg_chain) && c.seg_end.is_some() {
            c.chain_window /= 2;
        }
        if let Some(key) = self.cpus[cpu.index()].seg_end.take() {
            self.fx.cancel(key);
        }
    }

    /// Queues the segment end of `cpu`'s current task (cancelling any earlier one).
    pub(crate) fn arm_segment(&mut self, cpu: CpuId) {
        let c = &mut self.cpus[cpu.index()];
        let old = c.seg_end.take();
        if old.is_some() && c.seg_chain {
            // A chain armed again before its end: draw fewer runs ahead next time.
            c.chain_window /= 2;
        }
        // No other event is scheduled between the cancel and the new one, so the two can be
        // one step (`Effects::reschedule`).
        let Some((at, chain)) = self.segment_end_at(cpu) else {
            self.cpus[cpu.index()].seg_chain = false;
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
        let c = &mut self.cpus[cpu.index()];
        c.seg_end = Some(key);
        c.seg_chain = chain;
    }

    /// When `cpu`'s current action ends, if it has one to end, and whether that is the end
    /// of several runs of a pure loop: as many as the CPU's chain window allows (at most
    /// `pure_runs_ahead`, [`crate::params::EngineTunables`]) of those that end before the
    /// CPU's next tick boundary, up to the first that ends the program, at the CPU's present
    /// speed. A chain never reaches a tick boundary: the tick (queued a tick earlier) and a
    /// run that ends with it keep the order they have with an event per run.
    #[inline]
    fn segment_end_at(&self, cpu: CpuId) -> Option<(u64, bool)> {
        let c = &self.cpus[cpu.index()];
        if c.newidle.is_some() {
            // In __schedule()'s newly idle balance `curr` is the task leaving the CPU: it
            // makes no progress and has no action to finish.
            return None;
        }
        let p = self.rqs[cpu.index()].curr?;
        let start = c.seg_start.max(self.now);
        let r = &self.runs[self.run_of[p] as usize];
        if r.block_pending || r.exit_pending {
            return None;
        }
        Some(match r.cur {
            Cur::Idle | Cur::Blocked(_) | Cur::Waking(_) => (start, false),
            Cur::Run { rem_units } => {
                let at = start + rem_units.div_ceil(c.speed);
                // The next tick boundary is at most a tick period away: a run that ends later
                // is an event of its own (as `busy`'s second-long runs are).
                if r.has_pure_loop()
                    && c.chain_window >= 2
                    && at < self.now.saturating_add(self.tick_nsec)
                {
                    self.pure_chain_end(cpu, r, at)
                } else {
                    (at, false)
                }
            }
            Cur::RunWall { end_ns } => (end_ns.max(start), false),
        })
    }

    /// [`Core::segment_end_at`] for a run of task `r` that ends at `first_end`, within a tick
    /// period, on a CPU whose chain window is 2 or more: the end of the chain of runs of a
    /// pure loop that starts with it, if there is one (see there).
    #[inline(never)]
    fn pure_chain_end(&self, cpu: CpuId, r: &TaskRun, first_end: u64) -> (u64, bool) {
        let c = &self.cpus[cpu.index()];
        let window = u64::from(c.chain_window).min(self.cfg.engine.pure_runs_ahead);
        if window < 2 {
            return (first_end, false);
        }
        let Kind::Workload { program, rng, .. } = &r.kind else {
            return (first_end, false);
        };
        let Some(pure) = program.pure_runs() else {
            return (first_end, false);
        };
        // Where the CPU's next tick is (a tick is only ever armed there, or later).
        let horizon = self.next_tick_boundary(cpu);
        if first_end >= horizon {
            return (first_end, false);
        }
        // The draws the interpreter will make, from a copy of the task's stream.
        let mut rng = rng.clone();
        let mut at = first_end;
        for _ in 1..window {
            if at >= pure.exit_at_ns {
                break;
            }
            let work_ns = pure.next_work(&mut rng);
            let next = at.saturating_add(work_ns.saturating_mul(1024).div_ceil(c.speed));
            if next >= horizon {
                break;
            }
            at = next;
        }
        (at, at != first_end)
    }

    /// The segment end of `cpu` ([`Ev::SegEnd`], already taken off the CPU's state).
    pub(crate) fn segment_end(&mut self, cpu: CpuId) {
        let most = self.cfg.engine.pure_runs_ahead.min(1 << 15) as u16;
        let c = &mut self.cpus[cpu.index()];
        // A chain that ran to its end may be longer next time; a single run that did lets
        // the CPU try chains again.
        c.chain_window = if c.seg_chain {
            c.chain_window.saturating_mul(2).min(most.max(2))
        } else {
            c.chain_window.max(2)
        };
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
