//! `busy`: always-running threads, optionally niced and confined to a CPU list.

use std::sync::Arc;

use crate::generators::hogs::HOG_CHUNK_NS;
use crate::generators::{Args, Builder, Generator, Key, WorkloadError, sched_latency_table};
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::Metric;

/// `busy:threads=N[,nice=K][,cpus=LIST]`.
#[derive(Clone, Copy, Debug)]
pub struct Busy;

/// The parsed keys of [`Busy`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Threads.
    pub threads: u32,
    /// Nice value (default 0).
    pub nice: i32,
    /// Affinity of every thread (default: all CPUs).
    pub cpus: Option<Vec<u32>>,
}

impl Generator for Busy {
    type Params = Params;
    const NAME: &'static str = "busy";
    const ABOUT: &'static str = "always-running threads";
    const KEYS: &'static [Key] = &[
        Key::required("threads", "threads"),
        Key::value("nice", "0", "nice value of every thread, -20..=19"),
        Key::unset("cpus", "all CPUs", "affinity of every thread (a cpulist)"),
    ];
    const EXAMPLE: &'static str = "busy:threads=4";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let p = Params {
            threads: a.u32_in("threads", 1, 1_000_000)?,
            nice: a.i32_in("nice", -20, 19)?,
            cpus: a.cpulist("cpus")?,
        };
        a.finish()?;
        Ok(p)
    }

    fn size(p: &Params) -> Size {
        Size {
            tasks: u64::from(p.threads),
            cpusets: u64::from(p.cpus.is_some()),
        }
    }

    fn build(p: &Params, b: &mut Builder) {
        let set = p.cpus.clone().map(|c| b.spec.add_cpuset(c));
        let program = Arc::new(Program::forever(vec![Event::Run {
            work_ns: HOG_CHUNK_NS,
        }]));
        for i in 0..p.threads {
            b.task(format!("busy-{i}"), "busy", &program);
            b.last().affinity = set;
            b.last().nice = p.nice;
        }
    }

    fn report(_: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        (sched_latency_table(obs, part), Vec::new())
    }
}
