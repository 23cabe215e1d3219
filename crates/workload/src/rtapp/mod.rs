//! rt-app JSON workloads.
//!
//! Follows rt-app's `src/rt-app_parse_config.c` and `doc/tutorial.txt` (scheduler-tools/rt-app,
//! 2023): the `global` section, `tasks` with task- and phase-level properties, events matched
//! by key prefix and run in file order even when keys repeat (`"run": 1000, "sleep": 1000,
//! "run": 500`), numbered keys (`run0`, `sleep1`), `instance`, `delay`, `loop`, `fork`, named
//! resources created on first use (mutexes, condition variables, barriers, timers), and the
//! resources rt-app builds its events from (`suspend`/`resume` are a mutex and a condition
//! variable named after the thread; `sync` is signal-then-wait; a barrier's user count is the
//! number of instances referencing it).
//!
//! Files are read as rt-app reads them, with json-c's default (non-strict) tokener: comments,
//! trailing commas, single quotes, literals in any case, leading zeros, text after the
//! top-level object (warned about) ([`lenient`](self) rewrites them in place); a key given
//! twice in the top level, `tasks`, `phases` or a task's properties is stored as json-c stores
//! it, the later value in the earlier's place, with a warning. Events are the exception: a
//! repeated event key (`"run"` twice) runs every occurrence in file order, as after rt-app's
//! `workgen` has renamed them apart (rt-app on the raw file would keep only the last). An
//! unexpanded template placeholder (`__DURATION__`) is a one-line error naming it.
//!
//! Deliberate differences, each reported as a [`crate::Warning`] when a file uses it:
//! - `calibration` is ignored: `run` durations are work at capacity 1024;
//! - `mem`, `iorun` and `memrun` are CPU work at 10 bytes/ns (a memset-speed copy);
//! - uclamp, NUMA binding and priority inheritance are not modelled; a thread-level
//!   `taskgroup` puts the thread in that cgroup (weight 100 unless `--cgroup` says otherwise);
//!   a phase-level one moves the thread at the start of each iteration of the phase, as
//!   rt-app's `set_thread_taskgroup()` does (no warning: this is rt-app's behaviour); a
//!   thread forked from a template without one starts in its parent's group;
//! - real-time policies (`SCHED_FIFO`, `SCHED_RR`, `SCHED_DEADLINE`) are rejected: lbsim
//!   models the fair class only;
//! - unknown keys in a task or phase are errors (rt-app ignores them silently, which turns a
//!   typo such as `instances` into one instance).

use std::fmt::Write as _;
use std::path::Path;

use thiserror::Error;

use crate::generators::{Key, WorkloadError, WorkloadKind};
use crate::ids::{ProbeTag, TaskRef};
use crate::limits::{LimitError, Room, Size};
use crate::obs::{ProbeRecord, RunObservations};
use crate::report::{Fairness, Metric, PartReport};
use crate::spec::WorkloadSpec;

pub(crate) mod json;
mod lenient;
mod parse;

/// What the rt-app report needs besides the observations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtappReport {
    /// The file.
    pub path: String,
    /// `global.log_basename` (default `rt-app`).
    pub log_basename: String,
    /// Per task definition (the tasks' fairness group): for each phase, its configured run
    /// time (`c_duration`) and timer periods (`c_period`), in microseconds.
    pub phases: Vec<(String, Vec<(u64, u64)>)>,
}

/// An rt-app file that cannot be loaded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RtappError {
    /// The file cannot be read (or is larger than lbsim reads).
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// Why, on one line (the message is not repeated as a source).
        message: String,
    },
    /// The run's workloads, this file's tasks included, pass the run's limits.
    #[error("{path}: {limit}")]
    OverLimit {
        /// The file.
        path: String,
        /// The limit passed.
        limit: LimitError,
    },
    /// The file is not valid JSON.
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the JSON parser says.
        message: String,
    },
    /// Valid JSON, but not a valid rt-app description.
    #[error("{path}:{line}:{column}: {context}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Where in the document (`tasks.thread0.phases.p1.run0`).
        context: String,
        /// What is wrong.
        message: String,
    },
}

impl RtappError {
    /// The 1-based line and column, when the error has one.
    pub fn location(&self) -> Option<(usize, usize)> {
        match self {
            RtappError::Io { .. } | RtappError::OverLimit { .. } => None,
            RtappError::Syntax { line, column, .. } | RtappError::Invalid { line, column, .. } => {
                Some((*line, *column))
            }
        }
    }
}

/// `rtapp:FILE.json`: the file-based entry of [`crate::generators::WORKLOADS`].
#[derive(Clone, Copy, Debug)]
pub struct Rtapp;

impl WorkloadKind for Rtapp {
    fn name(&self) -> &'static str {
        "rtapp"
    }

    fn about(&self) -> &'static str {
        "an rt-app JSON file (rt-app's task, phase and event vocabulary)"
    }

    fn keys(&self) -> &'static [Key] {
        &[]
    }

    fn example(&self) -> &'static str {
        "rtapp:FILE.json"
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
        Ok(load_file_within(Path::new(rest), arg, room)?)
    }
}

impl PartReport for RtappReport {
    fn report(
        &self,
        spec: &WorkloadSpec,
        part: u16,
        obs: &RunObservations,
    ) -> (String, Vec<Metric>) {
        report(self, spec, part, obs)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn eq_dyn(&self, other: &dyn PartReport) -> bool {
        other.as_any().downcast_ref::<Self>() == Some(self)
    }
}

/// Loads an rt-app file within the default [`crate::Limits`]. `label` names the part (the
/// `--workload` option as given).
pub fn load_file(path: &Path, label: &str) -> Result<WorkloadSpec, RtappError> {
    Ok(load_file_within(path, label, &Room::default())?.0)
}

/// Loads an rt-app file (at most [`lbsim_kernel::input::MAX_INPUT_BYTES`]); its tasks'
/// instances are checked against `room` before they are made. Returns it with its size.
///
/// # Errors
/// The file cannot be read, is not an rt-app description, or does not fit in `room`.
pub fn load_file_within(
    path: &Path,
    label: &str,
    room: &Room,
) -> Result<(WorkloadSpec, Size), RtappError> {
    let name = path.display().to_string();
    let bytes = lbsim_kernel::input::read_capped(path).map_err(|e| RtappError::Io {
        path: name.clone(),
        message: e.to_string(),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let prefix = String::from_utf8_lossy(&e.as_bytes()[..at]).into_owned();
        let (line, column) = json::line_col(&prefix, at);
        RtappError::Syntax {
            path: name.clone(),
            line,
            column,
            message: "the file is not UTF-8".into(),
        }
    })?;
    let spec = parse::parse(&text, &name, label, room)?;
    let size = Size {
        tasks: spec.tasks.len() as u64,
        cpusets: spec.cpusets.len() as u64,
    };
    Ok((spec, size))
}

/// Parses rt-app JSON text within the default [`crate::Limits`]. `path` is used in messages,
/// `label` names the part.
pub fn parse_str(text: &str, path: &str, label: &str) -> Result<WorkloadSpec, RtappError> {
    parse::parse(text, path, label, &Room::default())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Iteration {
    phase: u64,
    start_ns: u64,
    end_ns: u64,
    run_ns: u64,
    perf_ns: u64,
    wu_lat_ns: u64,
    slack_ns: i64,
}

/// Calls `f(k, iteration)` for every phase iteration of the `k`-th task of `tasks`, each
/// task's in order, in one pass over the probe log (a pass per task made a report of many
/// threads quadratic: 200 rt-app threads for 5 s spent three quarters of the run there).
fn for_each_iteration(
    obs: &RunObservations,
    tasks: &[TaskRef],
    mut f: impl FnMut(usize, Iteration),
) {
    // The position in `tasks` of each task index, and each wanted task's open iteration.
    let mut wanted: Vec<Option<usize>> = vec![None; obs.tasks.len()];
    for (k, tr) in tasks.iter().enumerate() {
        if let Some(w) = wanted.get_mut(tr.index()) {
            *w = Some(k);
        }
    }
    let mut cur: Vec<Option<Iteration>> = (0..tasks.len()).map(|_| None).collect();
    for p in &obs.probes {
        let Some(k) = wanted.get(p.task.index()).copied().flatten() else {
            continue;
        };
        if let Some(it) = iteration_step(&mut cur[k], &p) {
            f(k, it);
        }
    }
}

/// One probe of a task into its open iteration `cur`: a phase start opens one, the measures
/// fill it, a phase end closes it and returns it.
fn iteration_step(cur: &mut Option<Iteration>, p: &ProbeRecord) -> Option<Iteration> {
    match p.tag {
        ProbeTag::RtappPhaseStart => {
            *cur = Some(Iteration {
                phase: p.value,
                start_ns: p.time_ns,
                end_ns: p.time_ns,
                run_ns: 0,
                perf_ns: 0,
                wu_lat_ns: 0,
                slack_ns: 0,
            });
        }
        ProbeTag::RtappRun => {
            if let Some(c) = cur.as_mut() {
                c.run_ns = p.value;
            }
        }
        ProbeTag::RtappPerf => {
            if let Some(c) = cur.as_mut() {
                c.perf_ns = p.value;
            }
        }
        ProbeTag::RtappWuLat => {
            if let Some(c) = cur.as_mut() {
                c.wu_lat_ns = p.value;
            }
        }
        ProbeTag::RtappSlack => {
            if let Some(c) = cur.as_mut() {
                c.slack_ns = p.value as i64;
            }
        }
        ProbeTag::RtappPhaseEnd => {
            if let Some(mut it) = cur.take() {
                it.end_ns = p.time_ns;
                return Some(it);
            }
        }
        _ => {}
    }
    None
}

/// What the report sums over one thread's iterations.
#[derive(Clone, Copy, Default)]
struct ThreadSums {
    loops: u64,
    perf_ns: u64,
    run_ns: u64,
    /// Wake-up latencies in whole microseconds: their sum and the largest.
    wu_us: u64,
    wu_max_us: u64,
}

pub(crate) fn report(
    r: &RtappReport,
    _spec: &WorkloadSpec,
    part: u16,
    obs: &RunObservations,
) -> (String, Vec<Metric>) {
    let tasks: Vec<_> = obs.part_tasks(part).collect();
    let mut s = String::new();
    let _ = writeln!(s, "rt-app {}: {} threads", r.path, tasks.len());
    let _ = writeln!(
        s,
        "{:<24} {:>8} {:>12} {:>12} {:>12} {:>10} {:>12} {:>12} {:>6}",
        "#thread",
        "loops",
        "perf(us)",
        "run(us)",
        "runtime(ms)",
        "wait(ms)",
        "wu_lat avg",
        "wu_lat max",
        "migr"
    );
    let mut works = Vec::new();
    let refs: Vec<TaskRef> = tasks.iter().map(|(tr, _)| *tr).collect();
    let mut sums = vec![ThreadSums::default(); tasks.len()];
    for_each_iteration(obs, &refs, |k, it| {
        let t = &mut sums[k];
        t.loops += 1;
        t.perf_ns += it.perf_ns;
        t.run_ns += it.run_ns;
        t.wu_us += it.wu_lat_ns / 1000;
        t.wu_max_us = t.wu_max_us.max(it.wu_lat_ns / 1000);
    });
    let (mut wu_total_us, mut wu_max_us) = (0u64, 0u64);
    let mut loops_total = 0u64;
    for ((_, t), sum) in tasks.iter().zip(&sums) {
        let perf = sum.perf_ns / 1000;
        let run = sum.run_ns / 1000;
        let wu_avg = if sum.loops == 0 {
            0.0
        } else {
            sum.wu_us as f64 / sum.loops as f64
        };
        wu_total_us += sum.wu_us;
        wu_max_us = wu_max_us.max(sum.wu_max_us);
        loops_total += sum.loops;
        works.push(t.work_ns);
        let _ = writeln!(
            s,
            "{:<24} {:>8} {:>12} {:>12} {:>12.3} {:>10.3} {:>12.1} {:>12} {:>6}",
            t.name,
            sum.loops,
            perf,
            run,
            t.runtime_ns as f64 / 1e6,
            t.wait_ns as f64 / 1e6,
            wu_avg,
            sum.wu_max_us,
            t.nr_migrations
        );
    }
    let f = Fairness::of(&works);
    let _ = writeln!(
        s,
        "# work fairness over all {2} threads of the file: min/max {0:.2}%, Jain's index {1:.4}",
        f.min_max_ratio * 100.0,
        f.jain,
        works.len()
    );
    let wu_avg = if loops_total == 0 {
        0.0
    } else {
        wu_total_us as f64 / loops_total as f64
    };
    let metrics = vec![
        Metric::new("iterations", "count", loops_total as f64, true),
        Metric::new("wu_lat_avg", "us", wu_avg, false),
        Metric::new("wu_lat_max", "us", wu_max_us as f64, false),
    ];
    (s, metrics)
}

/// rt-app's per-thread log files (`<log_basename>-<thread>.log`) for part `part`: one line per
/// phase iteration with rt-app's columns, all in microseconds. `perf` is the work of the
/// iteration's `run` events (at capacity 1024) rather than a count of calibration loops.
pub fn logs(
    r: &RtappReport,
    part: u16,
    spec: &WorkloadSpec,
    obs: &RunObservations,
) -> Vec<(String, String)> {
    let tasks: Vec<_> = obs.part_tasks(part).collect();
    let mut texts: Vec<String> = Vec::with_capacity(tasks.len());
    let mut phases_of: Vec<&[(u64, u64)]> = Vec::with_capacity(tasks.len());
    for (tr, t) in &tasks {
        let phases = r
            .phases
            .iter()
            .find(|(n, _)| n.as_str() == &*t.group)
            .map(|(_, p)| p.as_slice())
            .unwrap_or(&[]);
        let (policy, nice) = spec
            .tasks
            .get(tr.index())
            .map_or(("SCHED_OTHER", 0), |ts| (ts.policy.posix_name(), ts.nice));
        let mut s = String::new();
        let _ = writeln!(s, "# Policy : {policy} priority : {nice}");
        let _ = writeln!(
            s,
            "#idx {:>8} {:>8} {:>8} {:>15} {:>15} {:>15} {:>10} {:>10} {:>10} {:>10}",
            "perf",
            "run",
            "period",
            "start",
            "end",
            "rel_st",
            "slack",
            "c_duration",
            "c_period",
            "wu_lat"
        );
        texts.push(s);
        phases_of.push(phases);
    }
    let refs: Vec<TaskRef> = tasks.iter().map(|(tr, _)| *tr).collect();
    for_each_iteration(obs, &refs, |k, it| {
        let (c_dur, c_per) = phases_of[k]
            .get(it.phase as usize)
            .copied()
            .unwrap_or((0, 0));
        let _ = writeln!(
            texts[k],
            "{:4} {:8} {:8} {:8} {:15} {:15} {:15} {:10} {:10} {:10} {:10}",
            refs[k].0,
            it.perf_ns / 1000,
            it.run_ns / 1000,
            (it.end_ns - it.start_ns) / 1000,
            it.start_ns / 1000,
            it.end_ns / 1000,
            it.start_ns / 1000,
            it.slack_ns / 1000,
            c_dur,
            c_per,
            it.wu_lat_ns / 1000
        );
    });
    tasks
        .iter()
        .zip(texts)
        .map(|((_, t), s)| (format!("{}-{}.log", r.log_basename, t.name), s))
        .collect()
}

#[cfg(test)]
mod tests;
