//! `periodic`: threads that run, then sleep until their next period.
//!
//! Each thread runs `run` of work at capacity 1024 and waits for the next expiry of its own
//! periodic timer, with rt-app's `timer` semantics in relative mode: the first period counts
//! from the thread's start; a missed expiry re-bases the timer on the current time.

use std::sync::Arc;

use crate::generators::{Args, Builder, Generator, Key, Unit, WorkloadError, sched_latency_table};
use crate::ids::TimerId;
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::Metric;
use crate::sync::TimerSpec;

/// `periodic:threads=N,run=D,period=D[,nice=K]`.
#[derive(Clone, Copy, Debug)]
pub struct Periodic;

/// The parsed keys of [`Periodic`].
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

impl Generator for Periodic {
    type Params = Params;
    const NAME: &'static str = "periodic";
    const ABOUT: &'static str = "threads that run, then sleep until their next period";
    const KEYS: &'static [Key] = &[
        Key::required("threads", "threads"),
        Key::required(
            "run",
            "work per period at capacity 1024 (a bare number is us)",
        ),
        Key::required("period", "the period (a bare number is us)"),
        Key::value("nice", "0", "nice value of every thread, -20..=19"),
    ];
    const EXAMPLE: &'static str = "periodic:threads=4,run=1ms,period=4ms";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let p = Params {
            threads: a.u32_in("threads", 1, 1_000_000)?,
            run_ns: a.duration("run", Unit::Us, 0)?,
            period_ns: a.duration("period", Unit::Us, 1)?,
            nice: a.i32_in("nice", -20, 19)?,
        };
        a.finish()?;
        Ok(p)
    }

    fn size(p: &Params) -> Size {
        Size::tasks(u64::from(p.threads))
    }

    fn build(p: &Params, b: &mut Builder) {
        let mut program = Program::forever(vec![
            Event::Run { work_ns: p.run_ns },
            Event::Timer {
                timer: TimerId::Local(0),
                period_ns: p.period_ns,
            },
        ]);
        program.local_timers.push(TimerSpec {
            name: "period".into(),
            relative: true,
        });
        let program = Arc::new(program);
        for i in 0..p.threads {
            b.task(format!("periodic-{i}"), "periodic", &program);
            b.last().nice = p.nice;
        }
    }

    fn report(_: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        (sched_latency_table(obs, part), Vec::new())
    }
}
