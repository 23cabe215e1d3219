//! `busy`: always-running threads, optionally niced and confined to a CPU list.

use std::sync::Arc;

use crate::generators::hogs::HOG_CHUNK_NS;
use crate::generators::params::Args;
use crate::generators::{Builder, WorkloadError, sched_latency_table};
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::{Metric, ReportKind};
use crate::spec::WorkloadSpec;

/// `busy:threads=N[,nice=K][,cpus=LIST]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Threads.
    pub threads: u32,
    /// Nice value (default 0).
    pub nice: i32,
    /// Affinity of every thread (default: all CPUs).
    pub cpus: Option<Vec<u32>>,
}

const KEYS: &[&str] = &["threads", "nice", "cpus"];

/// Parses the `key=value` list.
pub fn parse(text: &str) -> Result<Params, WorkloadError> {
    let mut a = Args::parse("busy", KEYS, text)?;
    let p = Params {
        threads: a.u32_in("threads", None, 1, 1_000_000)?,
        nice: a.i32_in("nice", 0, -20, 19)?,
        cpus: a.cpulist("cpus")?,
    };
    a.finish()?;
    Ok(p)
}

impl Params {
    /// The workload.
    pub fn build(&self, label: &str) -> Result<WorkloadSpec, WorkloadError> {
        let mut b = Builder::new();
        let set = self.cpus.clone().map(|c| b.spec.add_cpuset(c));
        let program = Arc::new(Program::forever(vec![Event::Run {
            work_ns: HOG_CHUNK_NS,
        }]));
        for i in 0..self.threads {
            b.task(format!("busy-{i}"), "busy", &program);
            b.last().affinity = set;
            b.last().nice = self.nice;
        }
        b.finish(label, ReportKind::Busy(self.clone()), None)
    }
}

pub(crate) fn report(_: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
    (sched_latency_table(obs, part), Vec::new())
}
