//! Benchmark-shaped generators: `NAME:key=value,...` → [`WorkloadSpec`].
//!
//! Each generator models the real tool's threads and their synchronisation (who wakes whom,
//! through what), with the tool's parameters and defaults, and prints its report in the tool's
//! own format. CPU costs of system calls that the tools spend between wake-ups (a socket write,
//! a pipe read, an mmap) are explicit, documented, overridable keys.
//!
//! # Adding a generator
//! One new file and one list entry:
//! 1. `generators/NAME.rs`: `pub struct X;` and `impl` [`Generator`] `for X` — its `NAME`,
//!    `ABOUT` line, `KEYS` table ([`Key`]: name, default, one-line doc), `EXAMPLE`, `parse`
//!    (typed getters of [`Args`], which apply the declared defaults), `build` (tasks and sync
//!    objects through [`Builder`]) and `report` (the tool's text and [`crate::Metric`]s); a
//!    generator that re-runs itself, as `schbench -a` does, also gives `rounds` and
//!    `next_round`. See `busy.rs` for the smallest one.
//! 2. `pub mod NAME;` below and `&NAME::X` in [`WORKLOADS`].
//!
//! The `--workload` dispatch, the unknown-workload and unknown-key errors, the help texts,
//! the part's report and the rounds all follow from those.

use std::sync::Arc;

use thiserror::Error;

use crate::ids::TaskRef;
use crate::limits::{LimitError, Limits, Room};
use crate::program::{Policy, Program};
use crate::report::PartReport;
use crate::rtapp::RtappError;
use crate::spec::{Part, SpecError, TaskSpec, WorkloadSpec};

/// CPU work of one `pthread_create()` in the creating thread, at capacity 1024 (a `clone()`
/// with `CLONE_VM | CLONE_THREAD` and the new stack's `mmap()`). lbsim's estimate: it is not
/// measured here, and a run's thread start-up is a small part of what the generators
/// report; it matters for where the threads are placed, since the creator occupies its CPU
/// while it forks.
pub(crate) const PTHREAD_CREATE_NS: u64 = 15_000;

pub mod busy;
pub mod ebizzy;
mod generator;
pub mod hackbench;
pub mod hogs;
pub mod params;
pub mod periodic;
pub mod pingpong;
pub mod pipe;
pub mod schbench;
mod sched_latency;
pub mod sysbench;
pub mod tbench;

pub use generator::{
    Generator, GeneratorReport, Key, KeyDefault, WorkloadKind, build, generate, generate_within,
    parse_params,
};
pub use params::{Args, Unit};
pub(crate) use sched_latency::sched_latency_table;

/// Every workload `--workload NAME:...` accepts, in the order errors and help list them: the
/// rt-app file loader, then one [`Generator`] per benchmark.
pub const WORKLOADS: &[&dyn WorkloadKind] = &[
    &crate::rtapp::Rtapp,
    &crate::trace::TraceWorkload,
    &sysbench::SysbenchCpu,
    &hackbench::Hackbench,
    &schbench::Schbench,
    &tbench::Tbench,
    &ebizzy::Ebizzy,
    &pipe::Pipe,
    &hogs::Hogs,
    &pingpong::Pingpong,
    &busy::Busy,
    &periodic::Periodic,
];

/// The entry of [`WORKLOADS`] called `name`.
pub fn workload_kind(name: &str) -> Option<&'static dyn WorkloadKind> {
    WORKLOADS.iter().copied().find(|w| w.name() == name)
}

/// The names of [`WORKLOADS`], comma-separated.
pub fn workload_names() -> String {
    WORKLOADS
        .iter()
        .map(|w| w.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A help text derived from [`WORKLOADS`]: per workload, what it models and an example, then
/// its keys with their defaults and docs.
pub fn workloads_help() -> String {
    let mut s = String::new();
    for w in WORKLOADS {
        s.push_str(&format!(
            "{}: {} (e.g. {})\n",
            w.name(),
            w.about(),
            w.example()
        ));
        let width = w.keys().iter().map(|k| k.name.len()).max().unwrap_or(0);
        for k in w.keys() {
            s.push_str(&format!("  {:width$}  {}: {}\n", k.name, k.default, k.doc));
        }
    }
    s.push_str(
        "every workload also takes cgroup=/a/b (its tasks' cgroup v2 task group) and session=N \
         (its tasks' session: with sched_autogroup_enabled, a session N >= 1 in the root \
         cgroup runs in its autogroup /autogroup-N)\n",
    );
    s
}

/// A `--workload` option that cannot be turned into a workload.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// The name before `:` is not a workload.
    #[error("unknown workload {name:?} (valid: {valid})")]
    UnknownWorkload {
        /// The name given.
        name: String,
        /// The valid names.
        valid: String,
    },
    /// A key the workload does not have.
    #[error("{workload}: unknown key {key:?} (valid keys: {valid})")]
    UnknownKey {
        /// The workload.
        workload: String,
        /// The key given.
        key: String,
        /// The valid keys.
        valid: String,
    },
    /// The same key twice.
    #[error("{workload}: key {key:?} given twice")]
    DuplicateKey {
        /// The workload.
        workload: String,
        /// The key.
        key: String,
    },
    /// A value of the wrong form or out of range.
    #[error("{workload}: {key}={value:?}: expected {expected}")]
    BadValue {
        /// The workload.
        workload: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What would be accepted.
        expected: String,
    },
    /// A required key is missing.
    #[error("{workload}: missing required key {key:?}")]
    MissingKey {
        /// The workload.
        workload: String,
        /// The key.
        key: String,
    },
    /// The `key=value,...` list itself is malformed.
    #[error("{workload}: {message}")]
    BadSyntax {
        /// The workload.
        workload: String,
        /// What is wrong.
        message: String,
    },
    /// Values that are fine alone but not together.
    #[error("{workload}: {message}")]
    Invalid {
        /// The workload.
        workload: String,
        /// What is wrong.
        message: String,
    },
    /// The run's workloads make more tasks or cpusets than its limits allow (nothing was built).
    #[error(transparent)]
    OverLimit(#[from] LimitError),
    /// An rt-app file could not be loaded.
    #[error(transparent)]
    Rtapp(#[from] RtappError),
    /// A trace file could not be loaded.
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    /// The generated workload is inconsistent (a bug in lbsim).
    #[error("{workload}: {error}")]
    Spec {
        /// The workload.
        workload: String,
        /// The inconsistency (shown in the message, so not repeated as a source).
        error: SpecError,
    },
}

impl WorkloadError {
    /// The limit passed, if this is [`WorkloadError::OverLimit`] (or an rt-app file's).
    pub fn over_limit(&self) -> Option<&LimitError> {
        match self {
            WorkloadError::OverLimit(e)
            | WorkloadError::Rtapp(RtappError::OverLimit { limit: e, .. })
            | WorkloadError::Trace(crate::trace::TraceError::OverLimit { limit: e, .. }) => Some(e),
            _ => None,
        }
    }
}

/// Parses one `--workload` option: `rtapp:PATH` or `NAME[:key=value,...]`, within the default
/// [`Limits`].
pub fn parse_workload(arg: &str) -> Result<WorkloadSpec, WorkloadError> {
    Ok(parse_workload_within(arg, &Room::default())?.0)
}

/// Parses one `--workload` option within what `room` leaves; returns it with its size.
fn parse_workload_within(
    arg: &str,
    room: &Room,
) -> Result<(WorkloadSpec, crate::Size), WorkloadError> {
    let (name, rest) = arg.split_once(':').unwrap_or((arg, ""));
    let name = name.trim();
    match workload_kind(name) {
        Some(w) => {
            let (rest, cgroup) = take_cgroup(name, rest)?;
            let (rest, session) = take_session(name, &rest)?;
            let (mut spec, size) = w.load(&rest, arg, room)?;
            for t in spec.tasks.iter_mut().chain(spec.templates.iter_mut()) {
                if let Some(cg) = &cgroup {
                    t.cgroup = Some(cg.clone());
                }
                if session.is_some() {
                    t.session = session;
                }
            }
            Ok((spec, size))
        }
        None => Err(WorkloadError::UnknownWorkload {
            name: name.to_string(),
            valid: workload_names(),
        }),
    }
}

/// The key every workload takes: `cgroup=/a/b` puts all its tasks (and the tasks they fork)
/// in that cgroup v2 task group. Removes it from `rest`; the value must be an absolute path.
fn take_cgroup(workload: &str, rest: &str) -> Result<(String, Option<String>), WorkloadError> {
    take_key(workload, rest, "cgroup", |v| {
        let ok = v.starts_with('/')
            && v.split('/').all(|c| c != "." && c != "..")
            && v.chars().all(|c| c.is_ascii_graphic());
        ok.then(|| v.to_string())
            .ok_or("an absolute cgroup path like /a/b")
    })
}

/// The other key every workload takes: `session=N` starts its tasks (and the tasks they fork)
/// in session N, as if its launcher had called `setsid()`: with `sched_autogroup_enabled`
/// they run in that session's autogroup (`/autogroup-N`) unless `cgroup=` moves them out of
/// the root cgroup. `session=0` is init's session (the root group), as without the key.
fn take_session(workload: &str, rest: &str) -> Result<(String, Option<u32>), WorkloadError> {
    take_key(workload, rest, "session", |v| {
        v.parse::<u32>()
            .map_err(|_| "a session number 0..=4294967295")
    })
}

/// Removes `key=value` from `rest`, parsing the value with `parse`; at most once.
fn take_key<T>(
    workload: &str,
    rest: &str,
    key: &str,
    parse: impl Fn(&str) -> Result<T, &'static str>,
) -> Result<(String, Option<T>), WorkloadError> {
    let mut kept: Vec<&str> = Vec::new();
    let mut found = None;
    let prefix = format!("{key}=");
    for piece in rest.split(',') {
        match piece.trim().strip_prefix(prefix.as_str()) {
            Some(v) => {
                let v = v.trim();
                let value = parse(v).map_err(|expected| WorkloadError::BadValue {
                    workload: workload.to_string(),
                    key: key.to_string(),
                    value: v.to_string(),
                    expected: expected.to_string(),
                })?;
                if found.is_some() {
                    return Err(WorkloadError::DuplicateKey {
                        workload: workload.to_string(),
                        key: key.to_string(),
                    });
                }
                found = Some(value);
            }
            None => kept.push(piece),
        }
    }
    Ok((kept.join(","), found))
}

/// Parses several `--workload` options and combines them into one run, within the default
/// [`Limits`].
pub fn parse_workloads<S: AsRef<str>>(args: &[S]) -> Result<WorkloadSpec, WorkloadError> {
    parse_workloads_within(args, Limits::default())
}

/// Parses several `--workload` options and combines them into one run. Each workload's size is
/// checked against what `limits` leaves after the ones before it, before it is built.
///
/// # Errors
/// A bad option, or [`WorkloadError::OverLimit`] naming the run's total.
pub fn parse_workloads_within<S: AsRef<str>>(
    args: &[S],
    limits: Limits,
) -> Result<WorkloadSpec, WorkloadError> {
    let mut room = Room::new(limits);
    let mut specs = Vec::with_capacity(args.len());
    for a in args {
        let (spec, size) = parse_workload_within(a.as_ref(), &room)?;
        room.used = room.used + size;
        specs.push(spec);
    }
    Ok(WorkloadSpec::combine(specs))
}

/// Assembles a one-part workload: a [`Generator::build`] adds its tasks, templates and sync
/// objects to `spec`.
#[derive(Debug)]
pub struct Builder {
    /// The workload so far (no part yet).
    pub spec: WorkloadSpec,
    /// How long the tool asks to run, when it has a run length ([`Part::asks_ns`]).
    pub asks_ns: Option<u64>,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder {
            spec: WorkloadSpec::empty(),
            asks_ns: None,
        }
    }

    /// Adds a nice-0 `SCHED_NORMAL` task unpinned, starting at 0.
    pub fn task(&mut self, name: String, group: &str, program: &Arc<Program>) -> TaskRef {
        let r = TaskRef(self.spec.tasks.len() as u32);
        self.spec.tasks.push(TaskSpec {
            name,
            policy: Policy::Normal,
            nice: 0,
            affinity: None,
            custom_slice_ns: None,
            start_ns: 0,
            jitter_pct: 0,
            group: group.to_string(),
            part: 0,
            spawned: false,
            cgroup: None,
            session: None,
            program: Arc::clone(program),
        });
        r
    }

    /// Adds a nice-0 `SCHED_NORMAL` task definition for [`crate::Event::Fork`].
    pub fn template(
        &mut self,
        name: String,
        group: &str,
        program: &Arc<Program>,
    ) -> crate::ids::TemplateId {
        let t = crate::ids::TemplateId(self.spec.templates.len() as u32);
        self.spec.templates.push(TaskSpec {
            name,
            policy: Policy::Normal,
            nice: 0,
            affinity: None,
            custom_slice_ns: None,
            start_ns: 0,
            jitter_pct: 0,
            group: group.to_string(),
            part: 0,
            spawned: false,
            cgroup: None,
            session: None,
            program: Arc::clone(program),
        });
        t
    }

    /// The last task added, to adjust its attributes.
    pub fn last(&mut self) -> &mut TaskSpec {
        self.spec.tasks.last_mut().expect("a task was added")
    }

    /// The workload with its one part, labelled `label` and reported by `report`; validated.
    pub(crate) fn finish(
        mut self,
        label: &str,
        report: Arc<dyn PartReport>,
    ) -> Result<WorkloadSpec, WorkloadError> {
        let n = self.spec.tasks.len() as u32;
        let t = self.spec.templates.len() as u32;
        self.spec.parts.push(Part {
            label: label.to_string(),
            report,
            tasks: 0..n,
            templates: 0..t,
            asks_ns: self.asks_ns,
        });
        self.spec.validate().map_err(|error| WorkloadError::Spec {
            workload: label.to_string(),
            error,
        })?;
        Ok(self.spec)
    }
}

#[cfg(test)]
mod tests;
