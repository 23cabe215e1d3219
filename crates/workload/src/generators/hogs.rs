//! `hogs`: always-running threads pinned, `per_cpu` of them on each CPU of a list.

use std::sync::Arc;

use crate::generators::{Args, Builder, Generator, Key, WorkloadError, sched_latency_table};
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::Metric;

/// Work per `run` event of an always-running thread (the engine preempts it as usual; the
/// chunk only bounds how often the program is consulted).
pub(crate) const HOG_CHUNK_NS: u64 = 1_000_000_000;

/// `hogs:cpus=LIST[,per_cpu=K][,nice=N]`.
#[derive(Clone, Copy, Debug)]
pub struct Hogs;

/// The parsed keys of [`Hogs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// The CPUs (a cpulist).
    pub cpus: Vec<u32>,
    /// Threads pinned to each CPU (default 1).
    pub per_cpu: u32,
    /// Nice value (default 0).
    pub nice: i32,
}

impl Generator for Hogs {
    type Params = Params;
    const NAME: &'static str = "hogs";
    const ABOUT: &'static str = "always-running threads pinned, per_cpu on each CPU of a list";
    const KEYS: &'static [Key] = &[
        Key::required("cpus", "the CPUs (a cpulist)"),
        Key::value("per_cpu", "1", "threads pinned to each CPU"),
        Key::value("nice", "0", "nice value of every thread, -20..=19"),
    ];
    const EXAMPLE: &'static str = "hogs:cpus=0-3";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let cpus = a
            .cpulist("cpus")?
            .ok_or_else(|| WorkloadError::MissingKey {
                workload: "hogs".into(),
                key: "cpus".into(),
            })?;
        let p = Params {
            cpus,
            per_cpu: a.u32_in("per_cpu", 1, 10_000)?,
            nice: a.i32_in("nice", -20, 19)?,
        };
        a.finish()?;
        Ok(p)
    }

    fn size(p: &Params) -> Size {
        Size {
            tasks: p.cpus.len() as u64 * u64::from(p.per_cpu),
            cpusets: p.cpus.len() as u64,
        }
    }

    fn build(p: &Params, b: &mut Builder) {
        let program = Arc::new(Program::forever(vec![Event::Run {
            work_ns: HOG_CHUNK_NS,
        }]));
        for &cpu in &p.cpus {
            let set = b.spec.add_cpuset(vec![cpu]);
            for k in 0..p.per_cpu {
                b.task(format!("hog-{cpu}-{k}"), "hogs", &program);
                b.last().affinity = Some(set);
                b.last().nice = p.nice;
            }
        }
    }

    fn report(_: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        (sched_latency_table(obs, part), Vec::new())
    }
}
