//! A run's scheduler trace: the kernel's sched tracepoints as lbsim fires them, and the
//! balancer's decisions, written as ftrace text (`/sys/kernel/tracing/trace`, which Perfetto
//! and LISA import; Perfetto's text importer reads only `sched_switch` and `sched_waking`) or
//! as a Perfetto protobuf trace of `ftrace_events` bundles ([`Trace::write_perfetto`], the
//! format Perfetto builds CPU tracks and thread states from).
//!
//! Events and where they fire, as in core.c and fair.c:
//! - `sched_switch` on every context switch, to and from the idle task (`swapper/N`, pid 0);
//!   `prev_state` is `R+` for a preemption, `S` for a task that blocks, `X` for one that
//!   exits, `R` for the idle task and a task that yields;
//! - `sched_waking` on the waker's CPU (`common_pid` the waker, 0 from the idle task or an
//!   interrupt), with `target_cpu` the task's CPU before select_task_rq() (`task_cpu(p)`, as
//!   the tracepoint records it; a move shows as the `sched_migrate_task` that follows);
//! - `sched_wakeup_new` on the parent's CPU when a new task is first woken;
//! - `sched_migrate_task` when set_task_cpu() moves a task: on the waker's CPU for a wake-up
//!   migration, on the balancing CPU for the balancer's;
//! - `sched_process_exit` when a task exits;
//! - `sched_pelt_cfs` as LISA's sched_tp module prints it (mainline only has the bare
//!   `pelt_cfs_tp` tracepoint): the CPU's root cfs_rq `load_avg`, `runnable_avg` and
//!   `util_avg`, sampled at each switch and tick of that CPU;
//! - `lbsim_load_balance`, lbsim's own event (mainline has no load-balance tracepoint): one
//!   load_balance() pass that got past should_we_balance(), with the groups it compared, the
//!   imbalance, the source CPU and the outcome (see [`lbsim_balance::trace`]).
//!
//! Pids are lbsim's task numbers: the order the tasks were created in, from 1. Timestamps are
//! simulated time (ftrace prints microseconds); a balancer record carries its pass's own
//! clock (the time plus the work done so far), so it can follow the switch it caused.

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
    /// `sched_pelt_cfs` (LISA's sched_tp module, on the kernel's `pelt_cfs_tp`): the CPU's
    /// root cfs_rq signals, sampled at each switch and tick of the CPU.
    PeltCfs {
        /// `load_avg`.
        load: u64,
        /// `runnable_avg`.
        runnable: u64,
        /// `util_avg`.
        util: u64,
        /// `last_update_time` (the cfs_rq's PELT clock, ns).
        update_time: u64,
    },
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
            TraceEvent::PeltCfs {
                load,
                runnable,
                util,
                update_time,
            } => write!(
                out,
                "sched_pelt_cfs: cpu={} path=/ load={load} runnable={runnable} util={util} \
                 update_time={update_time}",
                r.cpu
            ),
            TraceEvent::LoadBalance(lb) => write!(out, "lbsim_load_balance: {}", lb_fields(&lb)),
        }
    }
}

/// Protocol-buffer encoding of the few Perfetto messages a trace needs (proto2 wire format:
/// varints and length-delimited fields; field numbers from perfetto's `trace_packet.proto`,
/// `ftrace_event.proto`, `sched.proto` and friends).
mod pb {
    /// Appends `v` as a base-128 varint.
    pub fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A varint field (wire type 0). Negative `int32`/`int64` values are sign-extended to
    /// 64 bits, as protobuf encodes them.
    pub fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
        varint(out, u64::from(field) << 3);
        varint(out, v);
    }

    /// A signed varint field (`int32`, `int64`).
    pub fn int(out: &mut Vec<u8>, field: u32, v: i64) {
        uint(out, field, v as u64);
    }

    /// A length-delimited field (wire type 2): a string, bytes or an embedded message.
    pub fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
        varint(out, (u64::from(field) << 3) | 2);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
}

/// The fields of an `lbsim_load_balance` record, as ftrace prints them.
fn lb_fields(lb: &LbRecord) -> String {
    format!(
        "cpu={} level={} idle={} local={} busiest={} migration={} imbalance={} src_cpu={} \
         ld_moved={} outcome={} nr_balance_failed={} balance_interval={} active_balance={}",
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
    )
}

/// `prev_state` of a Perfetto `SchedSwitchFtraceEvent` in the kernel's 4.14+ report layout
/// (decoded as such for a `release` of 6.12).
const fn prev_state_bits(s: PrevState) -> i64 {
    match s {
        PrevState::Runnable => 0,
        // TASK_REPORT_MAX: preempted while runnable ("R+").
        PrevState::Preempted => 0x100,
        // TASK_INTERRUPTIBLE.
        PrevState::Sleeping => 0x1,
        // EXIT_DEAD.
        PrevState::Dead => 0x10,
    }
}

/// Events per `FtraceEventBundle`.
const BUNDLE_EVENTS: usize = 1024;

impl Trace {
    /// Writes the trace as a Perfetto protobuf trace (`Trace { repeated TracePacket }`): a
    /// `SystemInfo` (Linux 6.12, so that `prev_state` is decoded with the modern layout), a
    /// `ProcessTree` naming every task, then per CPU `FtraceEventBundle`s of `sched_switch`,
    /// `sched_waking`, `sched_wakeup_new`, `sched_migrate_task` and `sched_process_exit`
    /// events in time order. Perfetto builds CPU tracks and thread states from the switches
    /// and wakings (it keeps `sched_wakeup_new`, `sched_migrate_task` and
    /// `sched_process_exit` as raw events only, as for a kernel trace); each
    /// `lbsim_load_balance` record becomes an atrace instant (`print` event,
    /// `I|<pid>|load_balance ...`) on the track of the thread current on the balancing CPU
    /// (`swapper/N` when it is idle).
    ///
    /// # Errors
    /// Those of `out`.
    pub fn write_perfetto(&self, out: &mut dyn Write) -> io::Result<()> {
        const SEQ: u64 = 1;
        let packet = |out: &mut dyn Write, body: &[u8]| -> io::Result<()> {
            let mut p = Vec::with_capacity(body.len() + 8);
            pb::bytes(&mut p, 1, body);
            out.write_all(&p)
        };
        // SystemInfo (TracePacket field 45): Utsname { sysname 1, version 2, release 3,
        // machine 4 } and num_cpus 8.
        let mut uts = Vec::new();
        pb::bytes(&mut uts, 1, b"Linux");
        pb::bytes(&mut uts, 2, b"#1 SMP lbsim");
        pb::bytes(&mut uts, 3, b"6.12.0-lbsim");
        pb::bytes(&mut uts, 4, b"lbsim");
        let mut si = Vec::new();
        pb::bytes(&mut si, 1, &uts);
        pb::uint(&mut si, 8, u64::from(self.nr_cpus));
        let mut tp = Vec::new();
        pb::uint(&mut tp, 10, SEQ);
        pb::bytes(&mut tp, 45, &si);
        packet(out, &tp)?;
        // ProcessTree (field 2): one process per task (pid 1, ppid 2, cmdline 3) and its
        // thread (tid 1, name 2, tgid 3).
        let mut tree = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            let pid = i as u64 + 1;
            let mut pr = Vec::new();
            pb::uint(&mut pr, 1, pid);
            pb::uint(&mut pr, 2, 0);
            pb::bytes(&mut pr, 3, t.comm.as_bytes());
            pb::bytes(&mut tree, 1, &pr);
            let mut th = Vec::new();
            pb::uint(&mut th, 1, pid);
            pb::bytes(&mut th, 2, t.comm.as_bytes());
            pb::uint(&mut th, 3, pid);
            pb::bytes(&mut tree, 2, &th);
        }
        let mut tp = Vec::new();
        pb::uint(&mut tp, 10, SEQ);
        pb::bytes(&mut tp, 2, &tree);
        packet(out, &tp)?;
        // Ftrace bundles, per CPU, in time order.
        for cpu in 0..self.nr_cpus {
            let mut order: Vec<&TraceRecord> =
                self.records.iter().filter(|r| r.cpu == cpu).collect();
            order.sort_by_key(|r| r.time_ns);
            for chunk in order.chunks(BUNDLE_EVENTS) {
                let mut bundle = Vec::new();
                pb::uint(&mut bundle, 1, u64::from(cpu));
                for r in chunk {
                    for (field, body) in self.encode_event(r) {
                        let mut ev = Vec::new();
                        pb::uint(&mut ev, 1, r.time_ns);
                        pb::uint(&mut ev, 2, u64::from(r.common_pid));
                        pb::bytes(&mut ev, field, &body);
                        pb::bytes(&mut bundle, 2, &ev);
                    }
                }
                let mut tp = Vec::new();
                pb::uint(&mut tp, 10, SEQ);
                pb::bytes(&mut tp, 1, &bundle);
                packet(out, &tp)?;
            }
        }
        Ok(())
    }

    /// The oneof `event` fields (number and message) of the `FtraceEvent`s that stand for
    /// `r`: one, or one atrace counter per signal for `sched_pelt_cfs`.
    fn encode_event(&self, r: &TraceRecord) -> Vec<(u32, Vec<u8>)> {
        let print = |text: String| {
            let mut body = Vec::new();
            pb::uint(&mut body, 1, 0);
            pb::bytes(&mut body, 2, text.as_bytes());
            (3, body)
        };
        let mut body = Vec::new();
        // `comm`/`pid`/`prio`/(`success`)/`target_cpu` of the wake-up events.
        let wake = |body: &mut Vec<u8>, pid: u32, target_cpu: u32| {
            pb::bytes(body, 1, self.comm(pid, r.cpu).as_bytes());
            pb::int(body, 2, i64::from(pid));
            pb::int(body, 3, i64::from(self.prio(pid)));
            pb::int(body, 4, 1);
            pb::int(body, 5, i64::from(target_cpu));
        };
        let field = match r.event {
            TraceEvent::Switch {
                prev_pid,
                prev_state,
                next_pid,
            } => {
                pb::bytes(&mut body, 1, self.comm(prev_pid, r.cpu).as_bytes());
                pb::int(&mut body, 2, i64::from(prev_pid));
                pb::int(&mut body, 3, i64::from(self.prio(prev_pid)));
                pb::int(&mut body, 4, prev_state_bits(prev_state));
                pb::bytes(&mut body, 5, self.comm(next_pid, r.cpu).as_bytes());
                pb::int(&mut body, 6, i64::from(next_pid));
                pb::int(&mut body, 7, i64::from(self.prio(next_pid)));
                4
            }
            TraceEvent::Waking { pid, target_cpu } => {
                wake(&mut body, pid, target_cpu);
                20
            }
            TraceEvent::WakeupNew { pid, target_cpu } => {
                wake(&mut body, pid, target_cpu);
                114
            }
            TraceEvent::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
            } => {
                pb::bytes(&mut body, 1, self.comm(pid, r.cpu).as_bytes());
                pb::int(&mut body, 2, i64::from(pid));
                pb::int(&mut body, 3, i64::from(self.prio(pid)));
                pb::int(&mut body, 4, i64::from(orig_cpu));
                pb::int(&mut body, 5, i64::from(dest_cpu));
                491
            }
            TraceEvent::Exit { pid } => {
                pb::bytes(&mut body, 1, self.comm(pid, r.cpu).as_bytes());
                pb::int(&mut body, 2, i64::from(pid));
                pb::int(&mut body, 3, i64::from(pid));
                pb::int(&mut body, 4, i64::from(self.prio(pid)));
                238
            }
            TraceEvent::PeltCfs {
                load,
                runnable,
                util,
                ..
            } => {
                // Atrace counters, one track per CPU and signal.
                return [
                    ("util_avg", util),
                    ("runnable_avg", runnable),
                    ("load_avg", load),
                ]
                .into_iter()
                .map(|(name, v)| print(format!("C|0|cpu{} {name}|{v}\n", r.cpu)))
                .collect();
            }
            TraceEvent::LoadBalance(lb) => {
                // An atrace instant on the balancing CPU's current thread (no `|` in the
                // name: it would end it).
                let text = format!("I|{}|load_balance {}\n", r.common_pid, lb_fields(&lb));
                return vec![print(text)];
            }
        };
        vec![(field, body)]
    }
}

#[cfg(test)]
mod tests;
