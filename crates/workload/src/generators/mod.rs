//! Benchmark-shaped generators: `NAME:key=value,...` → [`WorkloadSpec`].
//!
//! Each generator models the real tool's threads and their synchronisation (who wakes whom,
//! through what), with the tool's parameters and defaults, and prints its report in the tool's
//! own format. CPU costs of system calls that the tools spend between wake-ups (a socket write,
//! a pipe read, an mmap) are explicit, documented, overridable keys.

use std::sync::Arc;

use thiserror::Error;

use crate::ids::TaskRef;
use crate::program::{Policy, Program};
use crate::report::ReportKind;
use crate::rtapp::RtappError;
use crate::spec::{Part, SpecError, TaskSpec, WorkloadSpec};

pub mod busy;
pub mod ebizzy;
pub mod hackbench;
pub mod hogs;
pub(crate) mod params;
pub mod periodic;
pub mod pingpong;
pub mod pipe;
pub mod schbench;
pub mod sysbench;
pub mod tbench;

/// The workload names `--workload` accepts.
pub const WORKLOADS: &[&str] = &[
    "rtapp",
    "sysbench-cpu",
    "hackbench",
    "schbench",
    "tbench",
    "ebizzy",
    "pipe",
    "hogs",
    "pingpong",
    "busy",
    "periodic",
];

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
    /// An rt-app file could not be loaded.
    #[error(transparent)]
    Rtapp(#[from] RtappError),
    /// The generated workload is inconsistent (a bug in lbsim).
    #[error("{workload}: {source}")]
    Spec {
        /// The workload.
        workload: String,
        /// The inconsistency.
        #[source]
        source: SpecError,
    },
}

/// Parses one `--workload` option: `rtapp:PATH` or `NAME[:key=value,...]`.
pub fn parse_workload(arg: &str) -> Result<WorkloadSpec, WorkloadError> {
    let (name, rest) = arg.split_once(':').unwrap_or((arg, ""));
    let name = name.trim();
    match name {
        "rtapp" => Ok(crate::rtapp::load_file(std::path::Path::new(rest), arg)?),
        "sysbench-cpu" => sysbench::parse(rest)?.build(arg),
        "hackbench" => hackbench::parse(rest)?.build(arg),
        "schbench" => schbench::parse(rest)?.build(arg),
        "tbench" => tbench::parse(rest)?.build(arg),
        "ebizzy" => ebizzy::parse(rest)?.build(arg),
        "pipe" => pipe::parse(rest)?.build(arg),
        "hogs" => hogs::parse(rest)?.build(arg),
        "pingpong" => pingpong::parse(rest)?.build(arg),
        "busy" => busy::parse(rest)?.build(arg),
        "periodic" => periodic::parse(rest)?.build(arg),
        _ => Err(WorkloadError::UnknownWorkload {
            name: name.to_string(),
            valid: WORKLOADS.join(", "),
        }),
    }
}

/// Parses several `--workload` options and combines them into one run.
pub fn parse_workloads<S: AsRef<str>>(args: &[S]) -> Result<WorkloadSpec, WorkloadError> {
    let specs = args
        .iter()
        .map(|a| parse_workload(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(WorkloadSpec::combine(specs))
}

/// Assembles a one-part workload.
pub(crate) struct Builder {
    pub(crate) spec: WorkloadSpec,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder {
            spec: WorkloadSpec::empty(),
        }
    }

    /// Adds a nice-0 `SCHED_NORMAL` task unpinned, starting at 0.
    pub(crate) fn task(&mut self, name: String, group: &str, program: &Arc<Program>) -> TaskRef {
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
            program: Arc::clone(program),
        });
        r
    }

    /// Adds a nice-0 `SCHED_NORMAL` task definition for [`crate::Event::Fork`].
    pub(crate) fn template(
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
            program: Arc::clone(program),
        });
        t
    }

    /// The last task added, to adjust its attributes.
    pub(crate) fn last(&mut self) -> &mut TaskSpec {
        self.spec.tasks.last_mut().expect("a task was added")
    }

    pub(crate) fn finish(
        mut self,
        label: &str,
        report: ReportKind,
        duration_ns: Option<u64>,
    ) -> Result<WorkloadSpec, WorkloadError> {
        let n = self.spec.tasks.len() as u32;
        let t = self.spec.templates.len() as u32;
        self.spec.parts.push(Part {
            label: label.to_string(),
            report,
            tasks: 0..n,
            templates: 0..t,
        });
        self.spec.duration_ns = duration_ns;
        self.spec.validate().map_err(|source| WorkloadError::Spec {
            workload: label.to_string(),
            source,
        })?;
        Ok(self.spec)
    }
}

/// The `perf sched latency` table of a part's tasks (runtime, switches, average and maximum
/// delay from becoming runnable to running), followed by an lbsim line with the fairness of
/// the work they did. Follows perf's builtin-sched.c output_lat_thread(): the task cell is
/// `"  %s:%d "` padded to 24 columns, then `"|%11.3f ms |%9d | avg:%8.3f ms | max:%8.3f ms |"`.
pub(crate) fn sched_latency_table(obs: &crate::obs::RunObservations, part: u16) -> String {
    use std::fmt::Write as _;
    let rule = format!(" {}\n", "-".repeat(83));
    let mut s = String::new();
    s.push_str(&rule);
    s.push_str("  Task                  |   Runtime ms  | Switches | Avg delay ms    | Max delay ms    |\n");
    s.push_str(&rule);
    let mut total_runtime = 0u64;
    let mut total_switches = 0u64;
    let mut works = Vec::new();
    for (r, t) in obs.part_tasks(part) {
        let cell = format!("  {}:{} ", t.name, r.0);
        let pad = 24usize.saturating_sub(cell.len());
        let n = t.nr_switches();
        let avg = t.wait_ns.checked_div(n).unwrap_or(0);
        let _ = writeln!(
            s,
            "{cell}{}|{:11.3} ms |{:9} | avg:{:8.3} ms | max:{:8.3} ms |",
            " ".repeat(pad),
            t.runtime_ns as f64 / 1e6,
            n,
            avg as f64 / 1e6,
            t.max_wait_ns as f64 / 1e6
        );
        total_runtime += t.runtime_ns;
        total_switches += n;
        works.push(t.work_ns);
    }
    s.push_str(&rule);
    let _ = writeln!(
        s,
        "  TOTAL:                |{:11.3} ms |{:9} |",
        total_runtime as f64 / 1e6,
        total_switches
    );
    s.push_str(&format!(" {}\n", "-".repeat(51)));
    let f = crate::report::Fairness::of(&works);
    let _ = writeln!(
        s,
        "# lbsim: work min/max {:.4}, Jain's index {:.4} over {} tasks",
        f.min_max_ratio,
        f.jain,
        works.len()
    );
    let mut lat: Vec<u64> = obs
        .wakeups
        .iter()
        .filter(|w| {
            obs.tasks
                .get(w.task.index())
                .is_some_and(|t| t.part == part)
        })
        .map(|w| w.latency_ns)
        .collect();
    if !lat.is_empty() {
        lat.sort_unstable();
        let us = |ns: u64| ns as f64 / 1e3;
        let _ = writeln!(
            s,
            "# lbsim: wake-up latency p50 {:.1} us, p99 {:.1} us, max {:.1} us over {} wake-ups",
            us(crate::report::nearest_rank(&lat, 50.0)),
            us(crate::report::nearest_rank(&lat, 99.0)),
            us(*lat.last().expect("not empty")),
            lat.len()
        );
    }
    s
}
