//! A run's scheduler trace: the kernel's sched tracepoints as lbsim fires them, and the
//! balancer's decisions, written as ftrace text in the layout `trace-cmd report -N -t` prints
//! (no flags column, each event's own `TP_printk` text, nanosecond timestamps: what trappy and
//! LISA read from a `.txt`, and Perfetto imports), or as a Perfetto protobuf trace of `ftrace_events` bundles
//! ([`Trace::write_perfetto`], the format Perfetto builds CPU tracks and thread states from).
//!
//! Events and where they fire, as in core.c and fair.c (v6.12):
//! - `sched_switch` on every context switch, to and from the idle task (`swapper/N`, pid 0);
//!   `prev_state` is `R+` for a preemption, `S` for a task that blocks, `X` for one that
//!   exits, `R` for the idle task and a task that yields (in the protobuf: the kernel's
//!   report bits, `TASK_REPORT_MAX` 256, 1, 16, 0);
//! - `sched_waking` on the waker's CPU (`common_pid` the waker, 0 from the idle task or an
//!   interrupt), with `target_cpu` the task's CPU before select_task_rq() (`task_cpu(p)`, as
//!   the tracepoint records it; a move shows as the `sched_migrate_task` that follows);
//! - `sched_wakeup` where ttwu_do_wakeup() runs: on the waker's CPU for a direct wake-up or
//!   one of a task still queued (ttwu_runnable()), on the wakee's CPU for one through its
//!   wake list (sched_ttwu_pending()), with `target_cpu` the CPU the task is woken on;
//! - `sched_process_fork` on the parent's CPU when a task is created (kernel_clone()), then
//!   `sched_wakeup_new` there when it is first woken;
//! - `sched_migrate_task` when set_task_cpu() moves a task: on the waker's CPU for a wake-up
//!   migration, on the balancing CPU for the balancer's;
//! - `sched_process_exit` when a task exits;
//! - `sched_pelt_cfs` as LISA's sched_tp module prints it (mainline only has the bare
//!   `pelt_cfs_tp` tracepoint): the CPU's root cfs_rq `load_avg`, `runnable_avg` and
//!   `util_avg`, sampled at each switch and tick of that CPU;
//! - `lbsim_load_balance`, lbsim's own event (mainline has no load-balance tracepoint): one
//!   load_balance() pass that got past should_we_balance(), with the groups it compared, the
//!   imbalance, the source CPU and the outcome (see [`lbsim_balance::trace`]);
//! - `sched_cpu_capacity` as LISA's sched_tp module prints it (mainline has no capacity
//!   event; the module fires it from update_cpu_capacity()'s path): one per CPU at the start
//!   of the trace, `capacity` and `capacity_orig` both the CPU's `arch_scale_cpu_capacity()`
//!   (no RT or IRQ pressure has been taken off at time 0), so that a replay
//!   (`--workload trace:FILE`) can scale each burst by the capacity it ran at; in the
//!   Perfetto trace, the `CpuInfo` packet with each CPU's `capacity` (what Perfetto's
//!   traced_probes reads from sysfs `cpu_capacity`);
//! - `lbsim_charge`, lbsim's own event: scheduler work lbsim charged on a CPU (see
//!   [`Charge`]; `common_pid` the task current there, 0 when idle), which delays whatever
//!   runs there next and so sits in the run time of the task current while it is paid, so
//!   that a replay of the trace (`--workload trace:FILE`) can take the recording's own
//!   charges off the recorded run time instead of guessing them. A kernel trace has no such
//!   event.
//!
//! Task groups: the Perfetto trace shows each task group's tasks as the threads of one
//! process named by the path of the group the task was created in (`/a/b`, `/autogroup-N`).
//! None of the sched tracepoints prints a group (`sched_switch` records comm, pid, prio and
//! state). A task that moves between groups (rt-app's phase `taskgroup`) fires cgroup's own
//! `cgroup_attach_task` when it writes itself into the cgroup's `tasks` file, in both
//! traces: with it the group of every task is known at every instant. Its fields are the
//! kernel's (`include/trace/events/cgroup.h`, class `cgroup_migrate`) with lbsim's values:
//! `dst_root=0` (the cgroup v2 hierarchy), `dst_id` lbsim's number of the cgroup (1 for the
//! root, as a v2 root's id is), `dst_level` its depth, `dst_path` its path; and, not the
//! kernel's, `dst_group=` the task group it now runs in as `task_group_path()` names it
//! (its autogroup when the cgroup is the root and it has one).
//!
//! Pids are lbsim's task numbers: the order the tasks were created in, from 1. Timestamps are
//! simulated time in ns; a balancer record carries its pass's own clock (the time plus the
//! work done so far), so it can follow the switch it caused.

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
    /// The value the tracepoint records (the kernel's 4.14+ report layout,
    /// `__trace_sched_switch_state()`), which a raw trace shows.
    pub const fn bits(self) -> i64 {
        match self {
            PrevState::Runnable => 0,
            // TASK_REPORT_MAX: preempted while runnable ("R+").
            PrevState::Preempted => 0x100,
            // TASK_INTERRUPTIBLE.
            PrevState::Sleeping => 0x1,
            // EXIT_DEAD.
            PrevState::Dead => 0x10,
        }
    }

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

/// What an `lbsim_charge` charged for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// A wake-up the current task (or an interrupt on its CPU) issued: try_to_wake_up()'s
    /// own cost and select_task_rq()'s scan, on the waker's CPU; fired after the
    /// `sched_waking`, whose time the charge starts at. `sync`: the waker passed `WF_SYNC`
    /// (a pipe's or a socket's wake-up, which select_task_rq()'s wake_affine() weighs; the
    /// kernel's `sched_waking` does not record wake flags).
    Ttwu {
        /// `WF_SYNC`.
        sync: bool,
        /// Issued from an interrupt (a timer's, `hrtimer_wakeup()`), not by the current
        /// task: the kernel's trace shows it by the `h`/`s` flags, which the `trace-cmd
        /// report` layout lbsim writes has no column for.
        irq: bool,
    },
    /// select_task_rq(WF_FORK)'s scan of a fork, on the parent's CPU; fired after the
    /// `sched_process_fork`.
    Fork,
    /// The tick's balancer work (`sched_balance_trigger()`).
    Tick,
    /// SCHED_SOFTIRQ's periodic balance.
    Softirq,
    /// The active-balance stopper's work, charged on the CPU after the switch to idle that
    /// stands for its preemption (the switch's cost is that switch's, as for any), or with
    /// the switch's cost on a CPU that was idle already.
    Stopper,
    /// The newly idle balance that `__schedule()` ran after the current task blocked or
    /// exited and before the `sched_switch` that follows at once: the time from the block to
    /// the switch, which the task's run time does not hold but its traced interval does.
    Newidle,
}

impl Charge {
    /// The name the trace prints (`what=`).
    pub const fn name(self) -> &'static str {
        match self {
            Charge::Ttwu { .. } => "ttwu",
            Charge::Fork => "fork",
            Charge::Tick => "tick",
            Charge::Softirq => "softirq",
            Charge::Stopper => "stopper",
            Charge::Newidle => "newidle",
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
    /// `sched_wakeup`.
    Wakeup {
        /// The wakee.
        pid: u32,
        /// The CPU it is woken on.
        target_cpu: u32,
    },
    /// `sched_process_fork`.
    Fork {
        /// The parent (the task current on the CPU that creates the child; 0: the idle task).
        parent_pid: u32,
        /// The new task.
        child_pid: u32,
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
    /// `cgroup_attach_task`: the task moved itself into a cgroup (see the module's docs).
    CgroupAttach {
        /// The task.
        pid: u32,
        /// The cgroup's index in [`Trace::groups`] (0: the root cgroup).
        cgroup: u32,
        /// The task group it now runs in, an index in [`Trace::groups`].
        tg: u32,
    },
    /// `lbsim_load_balance`.
    LoadBalance(LbRecord),
    /// `lbsim_charge`: `cost_ns` of scheduler work charged on the event's CPU from the
    /// event's time (after what is charged there already), or, for
    /// [`Charge::Newidle`], spent just before it.
    Charge {
        /// What for.
        what: Charge,
        /// The charge, ns.
        cost_ns: u64,
    },
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
    /// Its task group as `task_group_path()` names it (`/a/b`, `/autogroup-N`), `None` in
    /// the root group. Only the Perfetto trace shows it: no sched tracepoint prints a
    /// task's cgroup, so the ftrace text does not either.
    pub group: Option<String>,
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
    /// Each CPU's capacity (`arch_scale_cpu_capacity()`), by CPU, written at the start of
    /// the trace; empty: none written.
    pub cpu_capacity: Vec<u64>,
    /// The run's task groups by index (0: the root, `/`): path as `task_group_path()`
    /// prints it and depth, for `cgroup_attach_task`. Empty without task groups.
    pub groups: Vec<(String, u32)>,
}

impl Trace {
    /// A new trace for `nr_cpus` CPUs.
    pub fn new(nr_cpus: u32) -> Trace {
        Trace {
            nr_cpus,
            ..Trace::default()
        }
    }

    /// Registers a task in the root group; returns its pid.
    pub fn add_task(&mut self, name: &str, nice: i32) -> u32 {
        self.add_task_in(name, nice, None)
    }

    /// Registers a task of task group `group` (`None`: the root group); returns its pid.
    pub fn add_task_in(&mut self, name: &str, nice: i32, group: Option<&str>) -> u32 {
        let comm: String = name
            .chars()
            .map(|c| if c.is_whitespace() { '_' } else { c })
            .collect();
        self.tasks.push(TraceTask {
            comm,
            prio: 120 + nice,
            group: group.map(str::to_owned),
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

    /// `cgroup_attach_task`'s fields (see the module's docs).
    fn cgroup_attach_fields(&self, pid: u32, cgroup: u32, tg: u32, cpu: u32) -> String {
        let group = |i: u32| {
            self.groups
                .get(i as usize)
                .map_or(("/", 0), |(p, d)| (p.as_str(), *d))
        };
        let (path, level) = group(cgroup);
        format!(
            "dst_root=0 dst_id={} dst_level={level} dst_path={path} pid={pid} comm={} dst_group={}",
            cgroup + 1,
            self.comm(pid, cpu),
            group(tg).0
        )
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

    /// Writes the trace as `trace-cmd report -N -t` prints a `trace.dat` (no plugins, so each
    /// event is its `TP_printk` text; full nanosecond timestamps): a `cpus=N` line, then one
    /// line per record, sorted by time (ties keep their firing order),
    /// `COMM-PID [CPU] SECONDS.NANOSECONDS: EVENT: TEXT`.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn write_ftrace(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut order: Vec<usize> = (0..self.records.len()).collect();
        order.sort_by_key(|&i| self.records[i].time_ns);
        writeln!(out, "cpus={}", self.nr_cpus)?;
        // LISA's sched_tp `sched_cpu_capacity`, its TP_printk's comma kept.
        for (cpu, cap) in self.cpu_capacity.iter().enumerate() {
            writeln!(
                out,
                "{:>16}-{:<5} [{cpu:03}] {:5}.{:09}: sched_cpu_capacity: cpu={cpu} \
                 capacity={cap}, capacity_orig={cap}",
                "<idle>", 0, 0, 0
            )?;
        }
        for i in order {
            let r = &self.records[i];
            // trace-cmd names the idle task `<idle>` in the line header.
            let comm = if r.common_pid == 0 {
                "<idle>".to_owned()
            } else {
                self.comm(r.common_pid, r.cpu)
            };
            write!(
                out,
                "{comm:>16}-{:<5} [{:03}] {:5}.{:09}: ",
                r.common_pid,
                r.cpu,
                r.time_ns / 1_000_000_000,
                r.time_ns % 1_000_000_000
            )?;
            self.write_event(out, r)?;
            writeln!(out)?;
        }
        Ok(())
    }

    /// One record as its ftrace line without the timestamp: `COMM-PID [CPU] EVENT: TEXT`.
    pub fn line_text(&self, r: &TraceRecord) -> String {
        let comm = if r.common_pid == 0 {
            "<idle>".to_owned()
        } else {
            self.comm(r.common_pid, r.cpu)
        };
        let mut out = format!("{comm}-{} [{:03}] ", r.common_pid, r.cpu).into_bytes();
        // Writing into a Vec cannot fail.
        let _ = self.write_event(&mut out, r);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The number of records of each event, by the name the trace prints, sorted by name.
    pub fn event_counts(&self) -> Vec<(&'static str, usize)> {
        let mut counts: std::collections::BTreeMap<&'static str, usize> =
            std::collections::BTreeMap::new();
        for r in &self.records {
            *counts.entry(r.event.name()).or_default() += 1;
        }
        counts.into_iter().collect()
    }

    /// The event's name and its `TP_printk` text (`include/trace/events/sched.h`, v6.12).
    fn write_event(&self, out: &mut dyn Write, r: &TraceRecord) -> io::Result<()> {
        let name = r.event.name();
        let task = |pid: u32| {
            format!(
                "comm={} pid={pid} prio={}",
                self.comm(pid, r.cpu),
                self.prio(pid)
            )
        };
        match r.event {
            TraceEvent::Switch {
                prev_pid,
                prev_state,
                next_pid,
            } => write!(
                out,
                "{name}: prev_comm={} prev_pid={prev_pid} prev_prio={} prev_state={} ==> \
                 next_comm={} next_pid={next_pid} next_prio={}",
                self.comm(prev_pid, r.cpu),
                self.prio(prev_pid),
                prev_state.letters(),
                self.comm(next_pid, r.cpu),
                self.prio(next_pid)
            ),
            TraceEvent::Waking { pid, target_cpu }
            | TraceEvent::Wakeup { pid, target_cpu }
            | TraceEvent::WakeupNew { pid, target_cpu } => {
                write!(out, "{name}: {} target_cpu={target_cpu:03}", task(pid))
            }
            TraceEvent::Fork {
                parent_pid,
                child_pid,
            } => write!(
                out,
                "{name}: comm={} pid={parent_pid} child_comm={} child_pid={child_pid}",
                self.comm(parent_pid, r.cpu),
                self.comm(child_pid, r.cpu)
            ),
            TraceEvent::Migrate {
                pid,
                orig_cpu,
                dest_cpu,
            } => write!(
                out,
                "{name}: {} orig_cpu={orig_cpu} dest_cpu={dest_cpu}",
                task(pid)
            ),
            TraceEvent::Exit { pid } => write!(out, "{name}: {}", task(pid)),
            TraceEvent::CgroupAttach { pid, cgroup, tg } => {
                write!(
                    out,
                    "{name}: {}",
                    self.cgroup_attach_fields(pid, cgroup, tg, r.cpu)
                )
            }
            TraceEvent::PeltCfs {
                load,
                runnable,
                util,
                update_time,
            } => write!(
                out,
                "{name}: cpu={} path=/ load={load} runnable={runnable} util={util} \
                 update_time={update_time}",
                r.cpu
            ),
            TraceEvent::LoadBalance(lb) => write!(out, "{name}: {}", lb_fields(&lb)),
            TraceEvent::Charge { what, cost_ns } => {
                write!(
                    out,
                    "{name}: cpu={} cost={cost_ns} what={}",
                    r.cpu,
                    what.name()
                )?;
                match what {
                    Charge::Ttwu { sync, irq } => {
                        write!(out, " sync={} irq={}", u8::from(sync), u8::from(irq))
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

impl TraceEvent {
    /// The event's name in a trace.
    pub const fn name(&self) -> &'static str {
        match self {
            TraceEvent::Switch { .. } => "sched_switch",
            TraceEvent::Waking { .. } => "sched_waking",
            TraceEvent::Wakeup { .. } => "sched_wakeup",
            TraceEvent::Fork { .. } => "sched_process_fork",
            TraceEvent::WakeupNew { .. } => "sched_wakeup_new",
            TraceEvent::Migrate { .. } => "sched_migrate_task",
            TraceEvent::Exit { .. } => "sched_process_exit",
            TraceEvent::CgroupAttach { .. } => "cgroup_attach_task",
            TraceEvent::LoadBalance(_) => "lbsim_load_balance",
            TraceEvent::Charge { .. } => "lbsim_charge",
            TraceEvent::PeltCfs { .. } => "sched_pelt_cfs",
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

/// Events per `FtraceEventBundle`.
const BUNDLE_EVENTS: usize = 1024;

impl Trace {
    /// Writes the trace as a Perfetto protobuf trace (`Trace { repeated TracePacket }`): a
    /// `SystemInfo` (Linux 6.12, so that `prev_state` is decoded with the modern layout), a
    /// `CpuInfo` with each CPU's capacity, a
    /// `ProcessTree` naming every task (a task of the root group is a process of its own; the
    /// tasks of each other task group are the threads of one process per group, pids after
    /// the tasks', named by the group's path, so that Perfetto lists them together under
    /// it), then per CPU `FtraceEventBundle`s of `sched_switch`,
    /// `sched_waking`, `sched_wakeup`, `sched_process_fork`, `sched_wakeup_new`,
    /// `sched_migrate_task` and `sched_process_exit` events in time order, and each
    /// `lbsim_charge` as a `GenericFtraceEvent` (`cpu`, `cost`, `what`, and `sync`, `irq`
    /// for a wake-up). Perfetto builds CPU
    /// tracks and thread states from the switches and wakings (it keeps the others as raw
    /// events, as for a kernel trace); each
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
        // CpuInfo (field 67): Cpu { capacity 3 } per CPU, in CPU order.
        if !self.cpu_capacity.is_empty() {
            let mut info = Vec::new();
            for &cap in &self.cpu_capacity {
                let mut c = Vec::new();
                pb::uint(&mut c, 3, cap);
                pb::bytes(&mut info, 1, &c);
            }
            let mut tp = Vec::new();
            pb::uint(&mut tp, 10, SEQ);
            pb::bytes(&mut tp, 67, &info);
            packet(out, &tp)?;
        }
        // ProcessTree (field 2): one process per task (pid 1, ppid 2, cmdline 3) and its
        // thread (tid 1, name 2, tgid 3).
        let mut tree = Vec::new();
        let process = |tree: &mut Vec<u8>, pid: u64, cmdline: &[u8]| {
            let mut pr = Vec::new();
            pb::uint(&mut pr, 1, pid);
            pb::uint(&mut pr, 2, 0);
            pb::bytes(&mut pr, 3, cmdline);
            pb::bytes(tree, 1, &pr);
        };
        // Each task group's process, in the order of its first task.
        let mut groups: Vec<&str> = Vec::new();
        for g in self.tasks.iter().filter_map(|t| t.group.as_deref()) {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        let group_pid = |g: &str| {
            let k = groups.iter().position(|x| *x == g).expect("listed");
            (self.tasks.len() + 1 + k) as u64
        };
        for g in &groups {
            process(&mut tree, group_pid(g), g.as_bytes());
        }
        for (i, t) in self.tasks.iter().enumerate() {
            let pid = i as u64 + 1;
            let tgid = match t.group.as_deref() {
                Some(g) => group_pid(g),
                None => {
                    process(&mut tree, pid, t.comm.as_bytes());
                    pid
                }
            };
            let mut th = Vec::new();
            pb::uint(&mut th, 1, pid);
            pb::bytes(&mut th, 2, t.comm.as_bytes());
            pb::uint(&mut th, 3, tgid);
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
                pb::int(&mut body, 4, prev_state.bits());
                pb::bytes(&mut body, 5, self.comm(next_pid, r.cpu).as_bytes());
                pb::int(&mut body, 6, i64::from(next_pid));
                pb::int(&mut body, 7, i64::from(self.prio(next_pid)));
                4
            }
            TraceEvent::Waking { pid, target_cpu } => {
                wake(&mut body, pid, target_cpu);
                20
            }
            TraceEvent::Wakeup { pid, target_cpu } => {
                wake(&mut body, pid, target_cpu);
                17
            }
            TraceEvent::WakeupNew { pid, target_cpu } => {
                wake(&mut body, pid, target_cpu);
                114
            }
            TraceEvent::Fork {
                parent_pid,
                child_pid,
            } => {
                // SchedProcessForkFtraceEvent { parent_comm 1, parent_pid 2, child_comm 3,
                // child_pid 4 }.
                pb::bytes(&mut body, 1, self.comm(parent_pid, r.cpu).as_bytes());
                pb::int(&mut body, 2, i64::from(parent_pid));
                pb::bytes(&mut body, 3, self.comm(child_pid, r.cpu).as_bytes());
                pb::int(&mut body, 4, i64::from(child_pid));
                239
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
            TraceEvent::CgroupAttach { pid, cgroup, tg } => {
                // An atrace instant on the moving thread.
                let text = format!(
                    "I|{pid}|cgroup_attach_task {}\n",
                    self.cgroup_attach_fields(pid, cgroup, tg, r.cpu)
                );
                return vec![print(text)];
            }
            TraceEvent::LoadBalance(lb) => {
                // An atrace instant on the balancing CPU's current thread (no `|` in the
                // name: it would end it).
                let text = format!("I|{}|load_balance {}\n", r.common_pid, lb_fields(&lb));
                return vec![print(text)];
            }
            TraceEvent::Charge { what, cost_ns } => {
                // GenericFtraceEvent { event_name 1, field 2: Field { name 1, str_value 3,
                // uint_value 5 } }: the message for an ftrace event Perfetto has no proto of
                // its own for (its trace processor lists it with its fields as args).
                pb::bytes(&mut body, 1, b"lbsim_charge");
                let mut f = Vec::new();
                pb::bytes(&mut f, 1, b"cpu");
                pb::uint(&mut f, 5, u64::from(r.cpu));
                pb::bytes(&mut body, 2, &f);
                let mut f = Vec::new();
                pb::bytes(&mut f, 1, b"cost");
                pb::uint(&mut f, 5, cost_ns);
                pb::bytes(&mut body, 2, &f);
                let mut f = Vec::new();
                pb::bytes(&mut f, 1, b"what");
                pb::bytes(&mut f, 3, what.name().as_bytes());
                pb::bytes(&mut body, 2, &f);
                if let Charge::Ttwu { sync, irq } = what {
                    for (k, v) in [(&b"sync"[..], sync), (&b"irq"[..], irq)] {
                        let mut f = Vec::new();
                        pb::bytes(&mut f, 1, k);
                        pb::uint(&mut f, 5, u64::from(v));
                        pb::bytes(&mut body, 2, &f);
                    }
                }
                327
            }
        };
        vec![(field, body)]
    }
}

#[cfg(test)]
mod tests;
