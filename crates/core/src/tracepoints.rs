//! The kernel's sched tracepoints, fired where core.c fires them (`trace_sched_switch()`,
//! `trace_sched_waking()`, `trace_sched_migrate_task()`, ...), and the balancer's records moved
//! into the run's [`Trace`](crate::trace::Trace). Recording changes no decision.

use crate::prelude::*;

impl<B: Balancer> Core<B> {
    /// The trace pid of task `p` (0 for none: the idle task).
    pub(crate) fn pid(&self, p: Option<TaskId>) -> u32 {
        p.map_or(0, |p| self.run_of[p] + 1)
    }

    /// Records `event`, fired on `cpu` at `time_ns`, when tracing, and logs it when its log
    /// target is on ([`crate::log`]).
    pub(crate) fn trace_at(&mut self, time_ns: u64, cpu: CpuId, event: crate::trace::TraceEvent) {
        if self.trace.is_none() {
            return;
        }
        let common = self.pid(self.rqs[cpu.index()].curr);
        let log = self.log;
        if let Some(tr) = &mut self.trace {
            if log.any() {
                let r = crate::trace::TraceRecord {
                    time_ns,
                    cpu: cpu.0,
                    common_pid: common,
                    event,
                };
                log.emit(tr, &r);
            }
            if self.trace_keep {
                tr.push(time_ns, cpu.0, common, event);
            }
        }
    }

    /// Records an event about task `p` (built from its pid), fired on `cpu` at `time_ns`,
    /// when tracing.
    pub(crate) fn trace_task(
        &mut self,
        time_ns: u64,
        cpu: CpuId,
        p: TaskId,
        event: impl FnOnce(u32) -> crate::trace::TraceEvent,
    ) {
        if self.trace.is_some() {
            let pid = self.pid(Some(p));
            self.trace_at(time_ns, cpu, event(pid));
        }
    }

    /// Records `sched_migrate_task` of `p`, fired on `cpu`.
    pub(crate) fn trace_migrate(
        &mut self,
        time_ns: u64,
        cpu: CpuId,
        p: TaskId,
        orig: CpuId,
        dest: CpuId,
    ) {
        self.trace_task(time_ns, cpu, p, |pid| crate::trace::TraceEvent::Migrate {
            pid,
            orig_cpu: orig.0,
            dest_cpu: dest.0,
        });
    }

    /// Records `sched_pelt_cfs`: `cpu`'s root cfs_rq signals as they stand.
    pub(crate) fn trace_pelt(&mut self, cpu: CpuId) {
        if self.trace.is_some() {
            let a = &self.rqs[cpu.index()].cfs.avg.avg;
            let ev = crate::trace::TraceEvent::PeltCfs {
                load: a.load_avg,
                runnable: a.runnable_avg,
                util: a.util_avg,
                update_time: a.last_update_time,
            };
            let now = self.now;
            self.trace_at(now, cpu, ev);
        }
    }

    /// Records `lbsim_charge` of `ns` for `what`, charged on `cpu`, when tracing (nothing for
    /// no work). A charge on an idle CPU is recorded too: it delays the next switch-in
    /// ([`Core::charge`]), so the task switched in before it is paid pays the rest.
    pub(crate) fn trace_charge(&mut self, cpu: CpuId, what: crate::trace::Charge, ns: u64) {
        if self.trace.is_some() && ns > 0 {
            let now = self.now;
            self.trace_at(
                now,
                cpu,
                crate::trace::TraceEvent::Charge { what, cost_ns: ns },
            );
        }
    }

    /// Records `sched_waking` of `p` for `target`, fired on the waker's CPU.
    pub(crate) fn trace_waking(&mut self, this_cpu: CpuId, p: TaskId, target: CpuId) {
        let now = self.now;
        self.trace_task(now, this_cpu, p, |pid| crate::trace::TraceEvent::Waking {
            pid,
            target_cpu: target.0,
        });
    }

    /// Records `sched_wakeup` of `p`, fired on `on_cpu` where ttwu_do_wakeup() runs; its
    /// `target_cpu` is the CPU `p` is woken on (`task_cpu(p)`).
    pub(crate) fn trace_wakeup(&mut self, on_cpu: CpuId, p: TaskId) {
        let now = self.now;
        let target_cpu = self.tasks[p].cpu.0;
        self.trace_task(now, on_cpu, p, |pid| crate::trace::TraceEvent::Wakeup {
            pid,
            target_cpu,
        });
    }

    /// Moves the balancer's trace records into the run's trace.
    pub(crate) fn drain_balancer_trace(&mut self) {
        let Some(lt) = self.balancer.trace() else {
            return;
        };
        if lt.events.is_empty() {
            return;
        }
        let events = std::mem::take(&mut lt.events);
        for ev in events {
            match ev {
                lbsim_balance::trace::LbEvent::Migrate {
                    time_ns,
                    on_cpu,
                    task,
                    orig_cpu,
                    dest_cpu,
                } => self.trace_migrate(time_ns, on_cpu, task, orig_cpu, dest_cpu),
                lbsim_balance::trace::LbEvent::Balance(rec) => {
                    self.trace_at(
                        rec.time_ns,
                        rec.cpu,
                        crate::trace::TraceEvent::LoadBalance(rec),
                    );
                }
            }
        }
    }
}
