//! `hogs`: always-running threads pinned, `per_cpu` of them on each CPU of a list.

use std::sync::Arc;

use crate::generators::params::Args;
use crate::generators::{Builder, WorkloadError, sched_latency_table};
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::{Metric, ReportKind};
use crate::spec::WorkloadSpec;

/// Work per `run` event of an always-running thread (the engine preempts it as usual; the
/// chunk only bounds how often the program is consulted).
pub(crate) const HOG_CHUNK_NS: u64 = 1_000_000_000;

/// `hogs:cpus=LIST[,per_cpu=K][,nice=N]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// The CPUs (a cpulist).
    pub cpus: Vec<u32>,
    /// Threads pinned to each CPU (default 1).
    pub per_cpu: u32,
    /// Nice value (default 0).
    pub nice: i32,
}

const KEYS: &[&str] = &["cpus", "per_cpu", "nice"];

/// Parses the `key=value` list.
pub fn parse(text: &str) -> Result<Params, WorkloadError> {
    let mut a = Args::parse("hogs", KEYS, text)?;
    let cpus = a
        .cpulist("cpus")?
        .ok_or_else(|| WorkloadError::MissingKey {
            workload: "hogs".into(),
            key: "cpus".into(),
        })?;
    let p = Params {
        cpus,
        per_cpu: a.u32_in("per_cpu", Some(1), 1, 10_000)?,
        nice: a.i32_in("nice", 0, -20, 19)?,
    };
    a.finish()?;
    Ok(p)
}

impl Params {
    /// The workload.
    pub fn build(&self, label: &str) -> Result<WorkloadSpec, WorkloadError> {
        let mut b = Builder::new();
        let program = Arc::new(Program::forever(vec![Event::Run {
            work_ns: HOG_CHUNK_NS,
        }]));
        for &cpu in &self.cpus {
            let set = b.spec.add_cpuset(vec![cpu]);
            for k in 0..self.per_cpu {
                b.task(format!("hog-{cpu}-{k}"), "hogs", &program);
                b.last().affinity = Some(set);
                b.last().nice = self.nice;
            }
        }
        b.finish(label, ReportKind::Hogs(self.clone()), None)
    }
}

pub(crate) fn report(_: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
    (sched_latency_table(obs, part), Vec::new())
}
