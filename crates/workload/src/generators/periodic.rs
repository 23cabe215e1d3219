//! `periodic`: threads that run, then sleep until their next period.
//!
//! Each thread runs `run` of work at capacity 1024 and waits for the next expiry of its own
//! periodic timer, with rt-app's `timer` semantics in relative mode: the first period counts
//! from the thread's start; a missed expiry re-bases the timer on the current time.

use std::sync::Arc;

use crate::generators::params::{Args, Unit};
use crate::generators::{Builder, WorkloadError, sched_latency_table};
use crate::ids::TimerId;
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::{Metric, ReportKind};
use crate::spec::WorkloadSpec;
use crate::sync::TimerSpec;

/// `periodic:threads=N,run=D,period=D[,nice=K]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Threads.
    pub threads: u32,
    /// Work per period at capacity 1024 (a bare number is us).
    pub run_ns: u64,
    /// Period (a bare number is us).
    pub period_ns: u64,
    /// Nice value (default 0).
    pub nice: i32,
}

const KEYS: &[&str] = &["threads", "run", "period", "nice"];

/// Parses the `key=value` list.
pub fn parse(text: &str) -> Result<Params, WorkloadError> {
    let mut a = Args::parse("periodic", KEYS, text)?;
    let p = Params {
        threads: a.u32_in("threads", None, 1, 1_000_000)?,
        run_ns: a.duration("run", None, Unit::Us, 0)?,
        period_ns: a.duration("period", None, Unit::Us, 1)?,
        nice: a.i32_in("nice", 0, -20, 19)?,
    };
    a.finish()?;
    Ok(p)
}

impl Params {
    /// The workload.
    pub fn build(&self, label: &str) -> Result<WorkloadSpec, WorkloadError> {
        let mut b = Builder::new();
        let mut program = Program::forever(vec![
            Event::Run {
                work_ns: self.run_ns,
            },
            Event::Timer {
                timer: TimerId::Local(0),
                period_ns: self.period_ns,
            },
        ]);
        program.local_timers.push(TimerSpec {
            name: "period".into(),
            relative: true,
        });
        let program = Arc::new(program);
        for i in 0..self.threads {
            b.task(format!("periodic-{i}"), "periodic", &program);
            b.last().nice = self.nice;
        }
        b.finish(label, ReportKind::Periodic(self.clone()), None)
    }
}

pub(crate) fn report(_: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
    (sched_latency_table(obs, part), Vec::new())
}
