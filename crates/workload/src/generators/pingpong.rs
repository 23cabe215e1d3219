//! `pingpong`: two pinned tasks that take turns: each works, wakes the other and sleeps.
//!
//! The pair of seed 002: task A (pinned to the first CPU) works `work`, optionally sleeps
//! `sleep`, posts B's wake-up and waits for its own; B does the same in turn. Every wake-up
//! is stamped by the waker just before the post, and the wakee records the time from that
//! stamp until it runs: the pair's wake-up latency, reported as schbench prints latencies.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::generators::{Args, Builder, Generator, Key, Unit, WorkloadError};
use crate::ids::{ProbeTag, TaskRef};
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::{Metric, PlatHistogram};

/// `pingpong:cpus=A,B[,sleep=D][,work=D]`.
#[derive(Clone, Copy, Debug)]
pub struct Pingpong;

/// The parsed keys of [`Pingpong`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// The two CPUs: A is the lower-numbered one (the list is a cpulist).
    pub cpus: [u32; 2],
    /// Sleep of the task holding the turn before it wakes the other (default 0; bare: us).
    pub sleep_ns: u64,
    /// Work of the task holding the turn at capacity 1024 (default 2 us; bare: us).
    pub work_ns: u64,
}

impl Generator for Pingpong {
    type Params = Params;
    const NAME: &'static str = "pingpong";
    const ABOUT: &'static str =
        "two pinned tasks taking turns: each works, wakes the other and sleeps";
    const KEYS: &'static [Key] = &[
        Key::required("cpus", "the two CPUs, A,B (a cpulist)"),
        Key::value(
            "sleep",
            "0",
            "sleep of the task holding the turn before it wakes the other (a bare number is us)",
        ),
        Key::value(
            "work",
            "2us",
            "work of the task holding the turn at capacity 1024 (a bare number is us)",
        ),
    ];
    const EXAMPLE: &'static str = "pingpong:cpus=0,1";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let raw = a
            .cpulist("cpus")?
            .ok_or_else(|| WorkloadError::MissingKey {
                workload: "pingpong".into(),
                key: "cpus".into(),
            })?;
        let cpus = match raw.as_slice() {
            [x, y] => [*x, *y],
            _ => {
                return Err(WorkloadError::BadValue {
                    workload: "pingpong".into(),
                    key: "cpus".into(),
                    value: raw
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                    expected: "two different CPUs, A,B".into(),
                });
            }
        };
        let p = Params {
            cpus,
            sleep_ns: a.duration("sleep", Unit::Us, 0)?,
            work_ns: a.duration("work", Unit::Us, 0)?,
        };
        a.finish()?;
        if p.sleep_ns == 0 && p.work_ns == 0 {
            return Err(WorkloadError::Invalid {
                workload: "pingpong".into(),
                message: "work=0 and sleep=0 leave the pair no time to take".into(),
            });
        }
        Ok(p)
    }

    fn size(_: &Params) -> Size {
        Size {
            tasks: 2,
            cpusets: 2,
        }
    }

    fn build(p: &Params, b: &mut Builder) {
        let (a, bb) = (TaskRef(0), TaskRef(1));
        let mut pa = p.turn(bb);
        pa.extend([Event::Suspend, Event::ProbeWakeup]);
        let mut pb = vec![Event::Suspend, Event::ProbeWakeup];
        pb.extend(p.turn(a));
        let set_a = b.spec.add_cpuset(vec![p.cpus[0]]);
        let set_b = b.spec.add_cpuset(vec![p.cpus[1]]);
        b.task(
            "pingpong-a".into(),
            "pingpong",
            &Arc::new(Program::forever(pa)),
        );
        b.last().affinity = Some(set_a);
        b.task(
            "pingpong-b".into(),
            "pingpong",
            &Arc::new(Program::forever(pb)),
        );
        b.last().affinity = Some(set_b);
    }

    fn report(p: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        let mut h = PlatHistogram::default();
        let mut sum_ns = 0u64;
        let mut n = 0u64;
        for pr in obs.part_probes(part, ProbeTag::Wakeup) {
            h.add(pr.value / 1000);
            sum_ns += pr.value;
            n += 1;
        }
        let avg_us = if n == 0 {
            0.0
        } else {
            sum_ns as f64 / n as f64 / 1e3
        };
        let plist = [20.0, 50.0, 90.0, 99.0, 99.9];
        let mut s = String::new();
        let _ = writeln!(
            s,
            "pingpong: 2 tasks on CPUs {} and {}, {} wake-ups",
            p.cpus[0], p.cpus[1], n
        );
        s.push_str(&h.schbench_block(
            "Wakeup Latencies",
            "usec",
            obs.sim_time_ns / 1_000_000_000,
            &plist,
            &[50.0, 90.0, 99.0, 99.9],
            99.0,
        ));
        let _ = writeln!(s, "average wakeup latency: {avg_us:.2} usec");
        let pc = h.percentiles(&plist);
        let metrics = vec![
            Metric::new("wakeup_latency_avg", "us", avg_us, false),
            Metric::new("wakeup_latency_p50", "us", pc[1].0 as f64, false),
            Metric::new("wakeup_latency_p99", "us", pc[3].0 as f64, false),
            Metric::new("wakeups", "count", n as f64, true),
        ];
        (s, metrics)
    }
}

impl Params {
    fn turn(&self, other: TaskRef) -> Vec<Event> {
        let mut v = vec![Event::Run {
            work_ns: self.work_ns,
        }];
        if self.sleep_ns > 0 {
            v.push(Event::Sleep { ns: self.sleep_ns });
        }
        v.push(Event::Resume(other));
        v
    }
}
