//! The scheduler events a replay reads, whatever file format they came from.

/// The state a `sched_switch` says its `prev` task left the CPU in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftAs {
    /// Still runnable: preempted (`R+`) or yielding / idle (`R`).
    Runnable,
    /// Blocked: any sleeping state (`S`, `D`, `I`, `T`, `t`, `P`, or several joined by `|`).
    Blocked,
    /// Exited (`X`, `Z`).
    Dead,
}

/// One event of the `sched` tracepoint group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ev {
    /// `sched_switch`.
    Switch {
        /// `prev_pid`; `None` when the format does not record it (the compact encoding's first
        /// switch of a CPU).
        prev_pid: Option<u32>,
        /// `prev_comm`, when recorded.
        prev_comm: Option<String>,
        /// `prev_prio`, when recorded.
        prev_prio: Option<i32>,
        /// `prev_state`.
        prev_state: LeftAs,
        /// `next_pid`.
        next_pid: u32,
        /// `next_comm`.
        next_comm: String,
        /// `next_prio`.
        next_prio: i32,
    },
    /// `sched_waking` (`first` true) or `sched_wakeup` (false): the second only counts when a
    /// trace lacks the first.
    Wake {
        /// The wakee.
        pid: u32,
        /// Its comm.
        comm: String,
        /// Its prio.
        prio: i32,
        /// True for `sched_waking`.
        waking: bool,
    },
    /// `sched_wakeup_new`.
    WakeupNew {
        /// The new task.
        pid: u32,
        /// Its comm.
        comm: String,
        /// Its prio.
        prio: i32,
    },
    /// `sched_process_fork`.
    Fork {
        /// The parent.
        parent_pid: u32,
        /// The child.
        child_pid: u32,
        /// The child's comm.
        child_comm: String,
    },
    /// `sched_process_exit`.
    Exit {
        /// The task.
        pid: u32,
    },
    /// `lbsim_charge`, only in lbsim's own traces: scheduler work the recording charged to
    /// the task current on the CPU (`common_pid`), which its recorded run time holds.
    Charge {
        /// The charge, ns.
        cost_ns: u64,
        /// `what=newidle`: the newly idle balance between the task's block (or exit) and the
        /// `sched_switch` that follows, which its run time does not hold either.
        newidle: bool,
        /// `sync=1` (a wake-up's charge): the wake-up the `sched_waking` before it traced
        /// passed `WF_SYNC`.
        sync: bool,
        /// `irq=1` (a wake-up's charge): that wake-up came from an interrupt (a timer), not
        /// from the task current on the CPU.
        irq: bool,
    },
}

/// One event as recorded: when, on which CPU, and who was current there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Timestamp, ns.
    pub time_ns: u64,
    /// The CPU the event fired on.
    pub cpu: u32,
    /// The task current on that CPU (`common_pid`; 0 for the idle task). `None` when the event
    /// fired in interrupt context (ftrace's `h`/`s` flag) or the format does not say.
    pub common_pid: Option<u32>,
    /// Where the event is in its file (1-based line of a text trace, byte offset of a
    /// protobuf one), for messages.
    pub at: u64,
    /// The event.
    pub ev: Ev,
}

/// A parsed trace: its events and its machine's CPU count when the file says it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Events in file order (sorted by time by the extraction).
    pub records: Vec<Record>,
    /// `cpus=N` / `#P:N` / `SystemInfo.num_cpus`.
    pub nr_cpus: Option<u32>,
    /// Lines (text) or events (protobuf) of events the replay does not use.
    pub ignored: u64,
    /// Each CPU's capacity as the trace records it (the first record of a CPU): LISA's
    /// `sched_cpu_capacity` (`capacity_orig`, else `capacity`), the older `cpu_capacity`
    /// event trappy reads (`state`), Perfetto's `CpuInfo.Cpu.capacity` (sysfs
    /// `cpu_capacity`). Empty when the trace records none.
    pub capacities: std::collections::BTreeMap<u32, u64>,
}

impl Parsed {
    /// The trace's CPU count: as declared, else one more than the highest CPU seen.
    pub fn cpus(&self) -> u32 {
        self.nr_cpus.unwrap_or_else(|| {
            self.records
                .iter()
                .map(|r| r.cpu.saturating_add(1))
                .max()
                .unwrap_or(1)
        })
    }
}
