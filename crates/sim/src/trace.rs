//! A run's scheduler trace: the kernel's sched tracepoints as lbsim fires them, and the
//! balancer's decisions, written as ftrace text (`/sys/kernel/tracing/trace`), which
//! Perfetto (ui.perfetto.dev, "Open trace file") and LISA open.
//!
//! Events and where they fire, as in core.c and fair.c:
//! - `sched_switch` on every context switch, to and from the idle task (`swapper/N`, pid 0);
//!   `prev_state` is `R+` for a preemption, `S` for a task that blocks, `X` for one that
//!   exits, `R` for the idle task;
//! - `sched_waking` on the waker's CPU (`common_pid` the waker, 0 from the idle task or an
//!   interrupt), with the CPU select_task_rq() chose as `target_cpu`;
//! - `sched_wakeup_new` on the parent's CPU when a new task is first woken;
//! - `sched_migrate_task` when set_task_cpu() moves a task: on the waker's CPU for a wake-up
//!   migration, on the balancing CPU for the balancer's;
//! - `sched_process_exit` when a task exits;
//! - `lbsim_load_balance`, lbsim's own event (mainline has no load-balance tracepoint): one
//!   load_balance() pass that got past should_we_balance(), with the groups it compared, the
//!   imbalance, the source CPU and the outcome (see [`lbsim_balance::trace`]).
//!
//! Pids are lbsim's task numbers: the order the tasks were created in, from 1. Timestamps are
//! simulated time (ftrace prints microseconds).

use std::io::{self, Write};

use lbsim_balance::trace::LbRecord;

/// `prev_state` of a `sched_switch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrevState {
    /// Runnable, not preempted (`R`): the idle task.
    Runnable,
    /// Preempted (`R+`).
    Preempted,
    /// Blocked (`S`).
    Sleeping,
    /// Exited (`X`).
    Dead,
}

impl PrevState {
    /// The letters ftrace prints.
    pub const fn letters(self) -> &'static str {
        match self {
            PrevState::Runnable => "R",
            PrevState::Preempted => "R+",
            PrevState::Sleeping => "S",
            PrevState::Dead => "X",
        }
    }
}

/// One traced event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// `sched_switch`.
    Switch {
        /// The task switched out (0: the idle task).
        prev_pid: u32,
        /// Its state.
        prev_state: PrevState,
        /// The task switched in (0: the idle task).
        next_pid: u32,
    },
    /// `sched_waking`.
    Waking {
        /// The wakee.
        pid: u32,
        /// The CPU chosen for it.
        target_cpu: u32,
    },
    /// `sched_wakeup_new`.
    WakeupNew {
        /// The new task.
        pid: u32,
        /// The CPU chosen for it.
        target_cpu: u32,
    },
    /// `sched_migrate_task`.
    Migrate {
        /// The task.
        pid: u32,
        /// Its previous CPU.
        orig_cpu: u32,
        /// Its new CPU.
        dest_cpu: u32,
    },
    /// `sched_process_exit`.
    Exit {
        /// The task.
        pid: u32,
    },
    /// `lbsim_load_balance`.
    LoadBalance(LbRecord),
}

/// One trace line: an event fired on `cpu` while `common_pid` was current there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Simulated time, ns.
    pub time_ns: u64,
    /// The CPU the event fired on.
    pub cpu: u32,
    /// The task current on that CPU (0: idle).
    pub common_pid: u32,
    /// The event.
    pub event: TraceEvent,
}

/// A traced task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceTask {
    /// `comm`: the task's name, spaces replaced (trace parsers split on them).
    pub comm: String,
    /// `prio` as the tracepoints print it: 120 + nice for a fair task.
    pub prio: i32,
}

/// A run's trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// CPUs of the machine.
    pub nr_cpus: u32,
    /// Tasks by pid - 1.
    pub tasks: Vec<TraceTask>,
    /// Records in the order they fired (simulated time, then firing order).
    pub records: Vec<TraceRecord>,
}

impl Trace {
    /// A new trace for `nr_cpus` CPUs.
    pub fn new(nr_cpus: u32) -> Trace {
        Trace {
            nr_cpus,
            ..Trace::default()
        }
    }

    /// Registers a task; returns its pid.
    pub fn add_task(&mut self, name: &str, nice: i32) -> u32 {
        let comm: String = name
            .chars()
            .map(|c| if c.is_whitespace() { '_' } else { c })
            .collect();
        self.tasks.push(TraceTask {
            comm,
            prio: 120 + nice,
        });
        self.tasks.len() as u32
    }

    /// Appends a record.
    pub fn push(&mut self, time_ns: u64, cpu: u32, common_pid: u32, event: TraceEvent) {
        self.records.push(TraceRecord {
            time_ns,
            cpu,
            common_pid,
            event,
        });
    }

    fn comm(&self, pid: u32, cpu: u32) -> String {
        if pid == 0 {
            format!("swapper/{cpu}")
        } else {
            self.tasks[pid as usize - 1].comm.clone()
        }
    }

    fn prio(&self, pid: u32) -> i32 {
        if pid == 0 {
            120
        } else {
            self.tasks[pid as usize - 1].prio
        }
    }

    /// Writes the trace as `/sys/kernel/tracing/trace` prints it (nop tracer, irq-info
    /// columns), the records sorted by time (ties keep their firing order).
    ///
    /// # Errors
    /// Those of `out`.
    pub fn write_ftrace(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut order: Vec<usize> = (0..self.records.len()).collect();
        order.sort_by_key(|&i| self.records[i].time_ns);
        let n = self.records.len();
        writeln!(out, "# tracer: nop")?;
        writeln!(out, "#")?;
        writeln!(
            out,
            "# entries-in-buffer/entries-written: {n}/{n}   #P:{}",
            self.nr_cpus
        )?;
        writeln!(out, "#")?;
        writeln!(
            out,
            "#                                _-----=> irqs-off/BH-disabled"
        )?;
        writeln!(
            out,
            "#                               / _----=> need-resched"
        )?;
        writeln!(
            out,
            "#                              | / _---=> hardirq/softirq"
        )?;
        writeln!(
            out,
            "#                              || / _--=> preempt-depth"
        )?;
        writeln!(
            out,
            "#                              ||| / _-=> migrate-disable"
        )?;
        writeln!(out, "#                              |||| /     delay")?;
        writeln!(
            out,
            "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION"
        )?;
        writeln!(out, "#              | |         |   |||||     |         |")?;
        for i in order {
            let r = &self.records[i];
            let comm = if r.common_pid == 0 {
                "<idle>".to_owned()
            } else {
                self.comm(r.common_pid, r.cpu)
            };
            let us = r.time_ns / 1_000;
            write!(
                out,
                "{comm:>16}-{:<7} [{:03}] d..2. {:5}.{:06}: ",
                r.common_pid,
                r.cpu,
                us / 1_000_000,
                us % 1_000_000
            )?;
            self.write_event(out, r)?;
            writeln!(out)?;
        }
        Ok(())
    }

    fn write_event(&self, out: &mut dyn Write, r: &TraceRecord) -> io::Result<()> {
        match r.event {
            TraceEvent::Switch {
                prev_pid,
                prev_state,
                next_pid,
            } => write!(
                out,
                "sched_switch: prev_comm={} prev_pid={prev_pid} prev_prio={} prev_state={} ==> \
                 next_comm={} next_pid={next_pid} next_prio={}",
                self.comm(prev_pid, r.cpu),
                self.prio(prev_pid),
                prev_state.letters(),
                self.comm(next_pid, r.cpu),
                self.prio(next_pid)
            ),
            TraceEvent::Waking { pid, target_cpu } => write!(
                out,
                "sched_waking: comm={} pid={pid} prio={} target_cpu={target_cpu:03}",
                self.comm(pid, r.cpu),
                self.prio(pid)
            ),
            TraceEvent::WakeupNew { pid, target_cpu } => write!(
                out,
                "sched_wakeup_new: comm={} pid={pid} prio={} target_cpu={target_cpu:03}",
                self.comm(pid, r.cpu),
                self.prio(pid)
            ),
            TraceEvent::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
            } => write!(
                out,
                "sched_migrate_task: comm={} pid={pid} prio={} orig_cpu={orig_cpu} \
                 dest_cpu={dest_cpu}",
                self.comm(pid, r.cpu),
                self.prio(pid)
            ),
            TraceEvent::Exit { pid } => write!(
                out,
                "sched_process_exit: comm={} pid={pid} prio={}",
                self.comm(pid, r.cpu),
                self.prio(pid)
            ),
            TraceEvent::LoadBalance(lb) => write!(
                out,
                "lbsim_load_balance: cpu={} level={} idle={} local={} busiest={} \
                 migration={} imbalance={} src_cpu={} ld_moved={} outcome={} \
                 nr_balance_failed={} balance_interval={} active_balance={}",
                lb.cpu.0,
                lb.level,
                lb.idle.name(),
                lb.local.name(),
                lb.busiest.map_or("none", |g| g.name()),
                lb.migration_type.name(),
                lb.imbalance,
                lb.src_cpu.map_or(-1, |c| i64::from(c.0)),
                lb.ld_moved,
                lb.outcome.name(),
                lb.nr_balance_failed,
                lb.balance_interval,
                u8::from(lb.active_balance)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ftrace_lines_have_the_kernels_layout() {
        let mut t = Trace::new(2);
        let a = t.add_task("worker one", 0);
        let b = t.add_task("hog", -5);
        t.push(
            1_500,
            0,
            0,
            TraceEvent::Waking {
                pid: a,
                target_cpu: 1,
            },
        );
        t.push(
            2_000_123,
            1,
            0,
            TraceEvent::Switch {
                prev_pid: 0,
                prev_state: PrevState::Runnable,
                next_pid: a,
            },
        );
        t.push(
            2_000_000,
            0,
            b,
            TraceEvent::Migrate {
                pid: a,
                orig_cpu: 0,
                dest_cpu: 1,
            },
        );
        let mut out = Vec::new();
        t.write_ftrace(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().skip(12).collect();
        assert_eq!(
            lines,
            [
                "          <idle>-0       [000] d..2.     0.000001: sched_waking: \
                 comm=worker_one pid=1 prio=120 target_cpu=001",
                "             hog-2       [000] d..2.     0.002000: sched_migrate_task: \
                 comm=worker_one pid=1 prio=120 orig_cpu=0 dest_cpu=1",
                "          <idle>-0       [001] d..2.     0.002000: sched_switch: \
                 prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> \
                 next_comm=worker_one next_pid=1 next_prio=120",
            ]
        );
        assert!(text.starts_with("# tracer: nop\n"));
        assert!(text.contains("entries-in-buffer/entries-written: 3/3   #P:2"));
        assert_eq!(t.tasks[1].prio, 115);
    }
}
