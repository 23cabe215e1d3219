//! `trace:FILE`: a recorded scheduler trace replayed as a workload.
//!
//! Reads ftrace text (the kernel's `trace` file, `trace-cmd report`: [`ftrace`]) or a
//! Perfetto protobuf trace (`ftrace_events` bundles, with or without the compact sched
//! encoding: [`perfetto`]), and turns each traced task into a program ([`extract`]): its run
//! bursts, the points where it woke other traced tasks, its blocking points and its forks
//! and exit, so that under lbsim's scheduler a task woken by another is woken when the
//! waker's replay reaches that point of its program, not at the recorded time. Sleeps no
//! traced task ended become timed sleeps of the recorded length.
//!
//! Keys after the file: `affinity=all|as-observed`, `from=`/`to=` (trace times; a bare
//! number is seconds), `comm=` (`|`-separated patterns, `*` at the end a prefix, `!` in front
//! an exclusion) and `pid=` (a list with ranges, `5-8,12`).
//!
//! Deliberate differences from the recorded run, each said in the warnings when it applies:
//! run time is replayed as work at capacity 1024 (the trace does not say the CPUs'
//! capacities); a task running or runnable when the window starts starts at time 0; a
//! real-time task is replayed as a nice-0 fair task; wake-ups of a task that had not
//! blocked are dropped.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use thiserror::Error;

use crate::generators::{Args, Builder, Key, Unit, WorkloadError, WorkloadKind};
use crate::ids::{SemId, TaskRef};
use crate::limits::{LimitError, Room, Size};
use crate::obs::RunObservations;
use crate::program::{Phase, Program};
use crate::report::{Metric, PartReport};
use crate::spec::{Warning, WorkloadSpec};

pub mod extract;
pub mod ftrace;
pub mod perfetto;
pub mod record;

pub use extract::{CapacitySource, Extracted, Options, Sleeps, Start, Step, TaskProgram};
pub use record::{Ev, LeftAs, Parsed, Record};

/// A trace that cannot be replayed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file cannot be read (or is larger than lbsim reads).
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// Why, on one line.
        message: String,
    },
    /// A line of a text trace that cannot be read.
    #[error("{path}:{line}: {message}")]
    Text {
        /// The file.
        path: String,
        /// 1-based line.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A protobuf trace that cannot be read.
    #[error("{path}: at byte {offset}: {message}")]
    Protobuf {
        /// The file.
        path: String,
        /// Byte offset of the bad field.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// The trace names more CPUs than lbsim builds, or `capacity=` does not match its CPUs.
    #[error("{path}: {message}")]
    Cpus {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Nothing to replay.
    #[error("{path}: {message}")]
    Empty {
        /// The file.
        path: String,
        /// What is missing.
        message: String,
    },
    /// The trace's tasks pass the run's limits.
    #[error("{path}: {limit}")]
    OverLimit {
        /// The file.
        path: String,
        /// The limit passed.
        limit: LimitError,
    },
}

/// The file's format, from its name, else its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// ftrace text.
    Text,
    /// Perfetto protobuf.
    Perfetto,
}

/// `.pftrace`, `.perfetto-trace`, `.pb`, `.protobuf` name a protobuf trace; otherwise UTF-8
/// without NUL bytes is text and anything else protobuf.
pub fn sniff(path: &str, bytes: &[u8]) -> Format {
    let lower = path.to_ascii_lowercase();
    if [".pftrace", ".perfetto-trace", ".pb", ".protobuf"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        return Format::Perfetto;
    }
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.contains('\0') => Format::Text,
        _ => Format::Perfetto,
    }
}

/// Parses `bytes` (of the file `path`, for messages).
///
/// # Errors
/// A line (text) or field (protobuf) that cannot be read.
pub fn parse_bytes(path: &str, bytes: &[u8]) -> Result<Parsed, TraceError> {
    let parsed = match sniff(path, bytes) {
        Format::Text => {
            let text = std::str::from_utf8(bytes).map_err(|e| {
                let at = e.valid_up_to();
                TraceError::Text {
                    path: path.to_string(),
                    line: bytes[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1,
                    message: "the file is not UTF-8".into(),
                }
            })?;
            ftrace::parse(text).map_err(|e| TraceError::Text {
                path: path.to_string(),
                line: e.line,
                message: e.message,
            })
        }
        Format::Perfetto => perfetto::parse(bytes).map_err(|e| TraceError::Protobuf {
            path: path.to_string(),
            offset: e.offset,
            message: e.message,
        }),
    }?;
    check_cpus(path, &parsed)?;
    Ok(parsed)
}

/// The most CPUs a trace may name: lbsim's largest machine (`lbsim_topology::MAX_CPUS`,
/// x86 `MAXSMP`'s `NR_CPUS`). A CPU number past it is a broken trace, and would size the
/// replay's per-CPU tables by it.
pub const MAX_TRACE_CPUS: u32 = 8192;

/// Refuses a trace whose CPU count, events or capacities name a CPU at or past
/// [`MAX_TRACE_CPUS`].
fn check_cpus(path: &str, p: &Parsed) -> Result<(), TraceError> {
    let bad = |what: String| TraceError::Cpus {
        path: path.to_string(),
        message: format!("{what}: a trace names at most {MAX_TRACE_CPUS} CPUs"),
    };
    if let Some(n) = p.nr_cpus.filter(|&n| n > MAX_TRACE_CPUS) {
        return Err(bad(format!("{n} CPUs")));
    }
    if let Some(r) = p.records.iter().find(|r| r.cpu >= MAX_TRACE_CPUS) {
        return Err(bad(format!("an event on CPU {}", r.cpu)));
    }
    if let Some(&c) = p.capacities.keys().find(|&&c| c >= MAX_TRACE_CPUS) {
        return Err(bad(format!("a capacity of CPU {c}")));
    }
    Ok(())
}

/// `trace:FILE[,key=value...]`: the trace entry of [`crate::generators::WORKLOADS`].
#[derive(Clone, Copy, Debug)]
pub struct TraceWorkload;

const KEYS: &[Key] = &[
    Key::value(
        "affinity",
        "all",
        "all (any CPU) or as-observed (the CPUs each task ran on)",
    ),
    Key::unset(
        "from",
        "the first event",
        "trace time the window starts at (a bare number is s)",
    ),
    Key::unset(
        "to",
        "the last event",
        "trace time the window ends at (a bare number is s)",
    ),
    Key::unset(
        "comm",
        "every task",
        "comms to keep, |-separated; NAME* a prefix, !NAME excludes",
    ),
    Key::unset("pid", "every task", "pids to keep (a list: 5-8,12)"),
    Key::value(
        "switch_cost",
        "1200ns",
        "taken off the run after each switch-in: what lbsim charges per switch (cost_context_switch_ns; a bare number is ns)",
    ),
    Key::value(
        "wake_cost",
        "600ns",
        "taken off the waker's run after each wake-up: what lbsim charges per wake-up (cost_wakeup_ns; a bare number is ns)",
    ),
    Key::unset(
        "capacity",
        "the trace's (sched_cpu_capacity, Perfetto CpuInfo), else 1024",
        "the recording CPUs' capacities, by CPU (VALUExCOUNT runs: 462x4,1024x4): each burst's run time is scaled by its CPU's capacity / 1024",
    ),
    Key::value(
        "sleeps",
        "auto",
        "a sleep an interrupt ended: absolute (until the recorded time, a timer), relative (its recorded length) or auto (absolute for tasks whose interrupt wake-ups are periodic)",
    ),
];

impl WorkloadKind for TraceWorkload {
    fn name(&self) -> &'static str {
        "trace"
    }

    fn about(&self) -> &'static str {
        "a recorded scheduler trace replayed (ftrace text, trace-cmd report, Perfetto protobuf)"
    }

    fn keys(&self) -> &'static [Key] {
        KEYS
    }

    fn example(&self) -> &'static str {
        "trace:FILE.txt,affinity=as-observed"
    }

    fn reads_file(&self) -> bool {
        true
    }

    fn load(
        &self,
        rest: &str,
        arg: &str,
        room: &Room,
    ) -> Result<(WorkloadSpec, Size), WorkloadError> {
        let (file, keys) = rest.split_once(',').unwrap_or((rest, ""));
        let o = parse_options(keys)?;
        Ok(load_file_within(Path::new(file.trim()), &o, arg, room)?)
    }
}

/// The keys after the file.
///
/// # Errors
/// An unknown key or a bad value.
pub fn parse_options(keys: &str) -> Result<Options, WorkloadError> {
    let mut a = Args::parse("trace", KEYS, keys)?;
    let as_observed = a.choice("affinity", &["all", "as-observed"])? == "as-observed";
    let from_ns = a.opt_duration("from", Unit::S, 0)?;
    let to_ns = a.opt_duration("to", Unit::S, 0)?;
    let comm = a
        .text("comm")
        .map(|c| c.split('|').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default();
    let pids = a.cpulist("pid")?;
    let switch_cost_ns = a.duration("switch_cost", Unit::Ns, 0)?;
    let wake_cost_ns = a.duration("wake_cost", Unit::Ns, 0)?;
    let capacity = match a.text("capacity") {
        Some(v) => Some(parse_capacities(&v).map_err(|m| WorkloadError::BadValue {
            workload: "trace".into(),
            key: "capacity".into(),
            value: v.clone(),
            expected: m,
        })?),
        None => None,
    };
    let sleeps = match a.choice("sleeps", &["auto", "absolute", "relative"])? {
        "absolute" => Sleeps::Absolute,
        "relative" => Sleeps::Relative,
        _ => Sleeps::Auto,
    };
    a.finish()?;
    if let (Some(f), Some(t)) = (from_ns, to_ns)
        && t <= f
    {
        return Err(WorkloadError::Invalid {
            workload: "trace".into(),
            message: format!("to= ({t} ns) must be after from= ({f} ns)"),
        });
    }
    Ok(Options {
        as_observed,
        from_ns,
        to_ns,
        comm,
        pids,
        switch_cost_ns,
        wake_cost_ns,
        capacity,
        sleeps,
    })
}

/// A capacity list: `VALUE` or `VALUExCOUNT` runs, comma-separated (`462x4,1024x4`), as the
/// topology's `capacity=`; each value in 1..=1024.
fn parse_capacities(text: &str) -> Result<Vec<u64>, String> {
    let expected = || {
        "capacities in 1..=1024 as VALUE or VALUExCOUNT, comma-separated (462x4,1024x4)".to_string()
    };
    let mut out = Vec::new();
    for element in text.split(',') {
        let (v, n) = element
            .trim()
            .split_once(['x', 'X'])
            .unwrap_or((element.trim(), "1"));
        let v: u64 = v.trim().parse().map_err(|_| expected())?;
        let n: usize = n.trim().parse().map_err(|_| expected())?;
        if !(1..=1024).contains(&v) || n == 0 || n > MAX_TRACE_CPUS as usize - out.len() {
            return Err(expected());
        }
        out.extend(std::iter::repeat_n(v, n));
    }
    Ok(out)
}

/// Loads a trace file (at most [`lbsim_kernel::input::MAX_INPUT_BYTES`]) as a workload.
///
/// # Errors
/// The file cannot be read or parsed, holds no task, or its tasks do not fit in `room`.
pub fn load_file_within(
    path: &Path,
    o: &Options,
    label: &str,
    room: &Room,
) -> Result<(WorkloadSpec, Size), TraceError> {
    let name = path.display().to_string();
    let bytes = lbsim_kernel::input::read_capped(path).map_err(|e| TraceError::Io {
        path: name.clone(),
        message: e.to_string(),
    })?;
    let parsed = parse_bytes(&name, &bytes)?;
    build(&parsed, o, &name, label, room)
}

/// The workload of a parsed trace.
///
/// # Errors
/// No task to replay, or more tasks than `room` has.
pub fn build(
    parsed: &Parsed,
    o: &Options,
    path: &str,
    label: &str,
    room: &Room,
) -> Result<(WorkloadSpec, Size), TraceError> {
    if let Some(c) = o
        .capacity
        .as_ref()
        .filter(|c| c.len() != parsed.cpus() as usize)
    {
        return Err(TraceError::Cpus {
            path: path.to_string(),
            message: format!(
                "capacity= gives {} CPUs, the trace has {} (one capacity per CPU: 462x4,1024x4)",
                c.len(),
                parsed.cpus()
            ),
        });
    }
    let x = extract::extract(parsed, o);
    if x.tasks.is_empty() {
        return Err(TraceError::Empty {
            path: path.to_string(),
            message: format!(
                "no task to replay ({} sched events in the window{})",
                x.events,
                if x.filtered_out > 0 {
                    format!(", {} tasks left out by comm=/pid=", x.filtered_out)
                } else {
                    String::new()
                }
            ),
        });
    }
    let cpusets: std::collections::BTreeSet<&std::collections::BTreeSet<u32>> = x
        .tasks
        .iter()
        .filter(|t| o.as_observed && !t.cpus.is_empty())
        .map(|t| &t.cpus)
        .collect();
    let size = Size {
        tasks: x.tasks.len() as u64,
        cpusets: cpusets.len() as u64,
    };
    room.admit(size).map_err(|limit| TraceError::OverLimit {
        path: path.to_string(),
        limit,
    })?;
    let mut b = Builder::new();
    let index = |pid: u32| x.tasks.binary_search_by_key(&pid, |t| t.pid).ok();
    let sems: Vec<Option<SemId>> = x
        .tasks
        .iter()
        .map(|t| {
            let waited = t.steps.contains(&Step::Wait);
            waited.then(|| b.spec.sync.add_sem(format!("wake-{}", t.pid), 0))
        })
        .collect();
    let sem = |pid: u32| sems[index(pid).expect("kept")].expect("waited on");
    let task = |pid: u32| TaskRef(index(pid).expect("kept") as u32);
    let mut rows = Vec::with_capacity(x.tasks.len());
    for t in &x.tasks {
        let events = extract::events(t, &sem, &task);
        let program = Arc::new(Program {
            phases: vec![Phase::once("replay", events)],
            loops: crate::program::Loops::Count(1),
            // Its interrupt wake-ups as a timer: absolute, keeping the recorded expiries when
            // the task gets to one late.
            local_timers: if t.absolute {
                vec![crate::sync::TimerSpec {
                    name: "trace-timer".into(),
                    relative: false,
                }]
            } else {
                Vec::new()
            },
            rtapp_log: false,
            cumulative_slack: false,
        });
        b.task(t.comm.clone(), "trace", &program);
        let affinity = (o.as_observed && !t.cpus.is_empty())
            .then(|| b.spec.add_cpuset(t.cpus.iter().copied().collect()));
        let ts = b.last();
        ts.nice = if (100..=139).contains(&t.prio) {
            t.prio - 120
        } else {
            0
        };
        ts.affinity = affinity;
        match t.start {
            Start::At(ns) => ts.start_ns = ns,
            Start::SpawnedBy(_) => ts.spawned = true,
        }
        rows.push(Row {
            name: t.comm.clone(),
            pid: t.pid,
            run_ns: t.received_ns,
            bursts: t.count(|s| matches!(s, Step::Run(_))) as u64,
            waits: t.count(|s| *s == Step::Wait) as u64,
            sleeps: t.count(|s| matches!(s, Step::Sleep(_))) as u64,
            timers: t.count(|s| matches!(s, Step::Timer(_))) as u64,
            work_ns: t.run_ns(),
            wakes: t.count(|s| matches!(s, Step::Wake(_) | Step::WakeSync(_))) as u64,
        });
    }
    let mut notes = Vec::new();
    let live = x.tasks.iter().filter(|t| t.live_at_start).count();
    if live > 0 {
        notes.push(format!(
            "{live} tasks were running or runnable when the window starts: they start at 0, their run before it is unknown"
        ));
    }
    let untraced: u64 = x.tasks.iter().map(|t| t.untraced_wakes).sum();
    if untraced > 0 {
        notes.push(format!(
            "{untraced} wake-ups came from untraced tasks: replayed as timed sleeps"
        ));
    }
    let missing: u64 = x.tasks.iter().map(|t| t.missing_wakes).sum();
    if missing > 0 {
        notes.push(format!(
            "{missing} blocks have no wake-up event (sched_waking/sched_wakeup missing): replayed as timed sleeps up to the next switch-in"
        ));
    }
    if x.wakes_of_running > 0 {
        notes.push(format!(
            "{} wake-ups of tasks that had not blocked were dropped",
            x.wakes_of_running
        ));
    }
    if x.rt_tasks > 0 {
        notes.push(format!(
            "{} tasks have a real-time prio: replayed as nice-0 fair tasks",
            x.rt_tasks
        ));
    }
    if x.capacity_source == CapacitySource::Assumed {
        notes.push(
            "the trace records no CPU capacity (sched_cpu_capacity, Perfetto CpuInfo) and capacity= is not given: bursts are run time at capacity 1024, whatever CPU they ran on".to_string(),
        );
    }
    if x.filtered_out > 0 {
        notes.push(format!(
            "{} tasks left out by comm=/pid=: their wake-ups of kept tasks are timed sleeps",
            x.filtered_out
        ));
    }
    b.spec.warnings = notes
        .iter()
        .map(|m| Warning {
            source: path.to_string(),
            location: None,
            message: m.clone(),
        })
        .collect();
    let report = TraceReport {
        path: path.to_string(),
        nr_cpus: x.nr_cpus,
        span_ns: x.span_ns,
        events: x.events,
        ignored: parsed.ignored,
        rows,
        notes,
        switch_cost_ns: o.switch_cost_ns,
        wake_cost_ns: x.wake_cost_ns,
        recorded_charges: x.recorded_charges,
        capacities: x.capacities.clone(),
        capacity_source: x.capacity_source,
        sleeps: o.sleeps,
    };
    b.spec.cpus_hint = Some(x.nr_cpus);
    let spec = b
        .finish(label, Arc::new(report))
        .map_err(|e| TraceError::Empty {
            path: path.to_string(),
            message: e.to_string(),
        })?;
    Ok((spec, size))
}

/// One extracted task in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// comm.
    pub name: String,
    /// pid.
    pub pid: u32,
    /// Run time received in the recording, ns.
    pub run_ns: u64,
    /// Run bursts.
    pub bursts: u64,
    /// Blocks ended by a traced task.
    pub waits: u64,
    /// Timed sleeps.
    pub sleeps: u64,
    /// Sleeps until a timer's recorded expiry.
    pub timers: u64,
    /// Work of its bursts, ns at capacity 1024.
    pub work_ns: u64,
    /// Wake-ups of traced tasks it issues.
    pub wakes: u64,
}

/// What the replay's report prints: the extracted programs beside what they did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceReport {
    /// The file.
    pub path: String,
    /// The trace's CPUs.
    pub nr_cpus: u32,
    /// The window's length, ns.
    pub span_ns: u64,
    /// sched events used.
    pub events: u64,
    /// Other events skipped.
    pub ignored: u64,
    /// Per task.
    pub rows: Vec<Row>,
    /// What could not be kept.
    pub notes: Vec<String>,
    /// Taken off the run per switch-in, ns.
    pub switch_cost_ns: u64,
    /// Taken off the waker's run per wake-up, ns.
    pub wake_cost_ns: u64,
    /// The trace's own charges taken off (lbsim's traces): records and total ns.
    pub recorded_charges: Option<(u64, u64)>,
    /// The capacities bursts were scaled by, by CPU.
    pub capacities: Vec<u64>,
    /// Where they came from.
    pub capacity_source: CapacitySource,
    /// `sleeps=`.
    pub sleeps: Sleeps,
}

/// `462x4,1024x4`: a capacity list as runs.
fn capacity_runs(caps: &[u64]) -> String {
    let mut runs: Vec<(u64, usize)> = Vec::new();
    for &c in caps {
        match runs.last_mut() {
            Some((v, n)) if *v == c => *n += 1,
            _ => runs.push((c, 1)),
        }
    }
    runs.iter()
        .map(|(v, n)| {
            if *n == 1 {
                v.to_string()
            } else {
                format!("{v}x{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

impl PartReport for TraceReport {
    fn report(
        &self,
        _spec: &WorkloadSpec,
        part: u16,
        obs: &RunObservations,
    ) -> (String, Vec<Metric>) {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "trace {}: {} tasks, {} CPUs, {:.6} s, {} sched events ({} other events skipped)",
            self.path,
            self.rows.len(),
            self.nr_cpus,
            self.span_ns as f64 / 1e9,
            self.events,
            self.ignored
        );
        match self.recorded_charges {
            Some((n, ns)) => {
                let _ = writeln!(
                    s,
                    "# bursts: recorded run time less {} ns per switch-in and the {n} charges the trace records (lbsim_charge, {:.3} ms; what the replay charges again)",
                    self.switch_cost_ns,
                    ns as f64 / 1e6
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "# bursts: recorded run time less {} ns per switch-in and {} ns per wake-up issued (what the replay charges again)",
                    self.switch_cost_ns, self.wake_cost_ns
                );
            }
        }
        let _ = writeln!(
            s,
            "# bursts: work at capacity 1024, run time x capacity / 1024, capacities {} ({})",
            capacity_runs(&self.capacities),
            match self.capacity_source {
                CapacitySource::Trace => "the trace's",
                CapacitySource::Key => "capacity=",
                CapacitySource::Assumed => "assumed",
            }
        );
        let timed: Vec<&Row> = self.rows.iter().filter(|r| r.timers > 0).collect();
        let _ = writeln!(
            s,
            "# sleeps={}: an interrupt's wake-ups replayed as timer expiries for {} tasks{}, as sleeps of the recorded length for the others",
            match self.sleeps {
                Sleeps::Auto => "auto",
                Sleeps::Absolute => "absolute",
                Sleeps::Relative => "relative",
            },
            timed.len(),
            if timed.is_empty() {
                String::new()
            } else {
                format!(
                    " (pids {})",
                    timed
                        .iter()
                        .map(|r| r.pid.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }
        );
        let _ = writeln!(
            s,
            "{:<20} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>13} {:>13} {:>8} {:>13} {:>13}",
            "#task",
            "pid",
            "bursts",
            "waits",
            "sleeps",
            "timers",
            "wakes",
            "recorded(ms)",
            "replayed(ms)",
            "ratio",
            "work(ms)",
            "rep.work(ms)"
        );
        let mut rec = 0u64;
        let mut rep = 0u64;
        for (row, (_, t)) in self.rows.iter().zip(obs.part_tasks(part)) {
            rec += row.run_ns;
            rep += t.runtime_ns;
            let _ = writeln!(
                s,
                "{:<20} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>13.3} {:>13.3} {:>8.3} {:>13.3} {:>13.3}",
                row.name,
                row.pid,
                row.bursts,
                row.waits,
                row.sleeps,
                row.timers,
                row.wakes,
                row.run_ns as f64 / 1e6,
                t.runtime_ns as f64 / 1e6,
                ratio(t.runtime_ns, row.run_ns),
                row.work_ns as f64 / 1e6,
                t.work_ns as f64 / 1e6
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "# not kept: {n}");
        }
        let metrics = vec![
            Metric::new("recorded_runtime", "s", rec as f64 / 1e9, false),
            Metric::new("replayed_runtime", "s", rep as f64 / 1e9, false),
            Metric::new("runtime_ratio", "ratio", ratio(rep, rec), false),
        ];
        (s, metrics)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn eq_dyn(&self, other: &dyn PartReport) -> bool {
        other.as_any().downcast_ref::<Self>() == Some(self)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

#[cfg(test)]
mod tests;
