//! schbench: message threads wake their workers, workers spin, and wake-up latency is
//! recorded.
//!
//! Follows schbench.c as of May 2016 (the version behind seed 003: `-m`, `-t`, `-c cputime`,
//! `-s sleeptime`, `-r runtime`, `-a`; defaults `-m 2 -t 16 -c 30000 -s 30000 -r 30`):
//! - a worker spins `cputime` of wall-clock time (`usec_spin`, preemption included), then
//!   sets its futex word to BLOCKED, adds itself to its message thread's list, posts the
//!   message thread's futex and waits on its own; when it runs again it records
//!   `now - wake_time` as a wake-up latency sample;
//! - a message thread loops: set its own futex word to BLOCKED, take its whole list and, with
//!   one timestamp taken before the loop, write it as each worker's `wake_time` and post each
//!   (most recently listed first); wait on its futex; then sleep `sleeptime` plus a random
//!   0..`sleeptime / 4`.
//!
//! Samples are microseconds; zero-microsecond samples are dropped as schbench drops them.
//! The report prints the blocks of current schbench (wake-up latencies, request latencies,
//! RPS, average rps, sched delay) from the same fio-style histogram; a "request" here is a
//! worker's spin, timed from its wake-up to the end of its next spin. With `auto=1`, the first
//! line is the 2016 auto-bench line (`cputime 30000 threads 38 p99 177`), and
//! [`Generator::next_round`] gives the next round (one more worker per message
//! thread while p99 stays below 2000 us), as `schbench -a` re-runs itself.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::generators::{Args, Builder, Generator, Key, PTHREAD_CREATE_NS, Unit, WorkloadError};
use crate::ids::ProbeTag;
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::{Metric, PlatHistogram, Report};

/// `schbench:m=M,t=T[,cputime=D][,sleeptime=D][,runtime=D][,auto=1]`.
#[derive(Clone, Copy, Debug)]
pub struct Schbench;

/// The parsed keys of [`Schbench`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Message threads (`-m`, default 2).
    pub m: u32,
    /// Workers per message thread (`-t`, default 16).
    pub t: u32,
    /// Worker spin per loop (`-c`, default 30000 us; a bare number is us).
    pub cputime_ns: u64,
    /// Message thread sleep per loop (`-s`, default 30000 us; a bare number is us).
    pub sleeptime_ns: u64,
    /// Run length (`-r`, default 30 s; a bare number is s).
    pub runtime_ns: u64,
    /// Auto-bench mode (`-a`).
    pub auto: bool,
}

/// The percentiles schbench computes; latency blocks show 50/90/99/99.9 with 99 starred, the
/// RPS block 20/50/90 with 50 starred.
const PLIST: [f64; 5] = [20.0, 50.0, 90.0, 99.0, 99.9];

/// The group of schbench's main thread (it starts the message threads, then sleeps).
const MAIN_GROUP: &str = "schbench-main";

/// p99 (us) below which `schbench -a` adds a worker and runs again.
pub const AUTO_P99_LIMIT_US: u64 = 2000;

/// The most worker threads per message thread (`t`) a schbench workload may have.
pub const MAX_WORKERS: u32 = 100_000;

/// The most threads (message threads and their workers) a schbench workload may have.
pub const MAX_THREADS: u64 = 1_000_000;

/// The threads `p` makes: main(), each message thread and its `t` workers.
fn threads(p: &Params) -> u64 {
    1 + u64::from(p.m) * (u64::from(p.t) + 1)
}

impl Generator for Schbench {
    type Params = Params;
    const NAME: &'static str = "schbench";
    const ABOUT: &'static str =
        "message threads wake their workers, which spin; wake-up latency recorded";
    const KEYS: &'static [Key] = &[
        Key::value("m", "2", "message threads (-m)"),
        Key::value("t", "16", "workers per message thread (-t)"),
        Key::value(
            "cputime",
            "30000us",
            "worker spin per loop (-c; a bare number is us)",
        ),
        Key::value(
            "sleeptime",
            "30000us",
            "message thread sleep per loop (-s; a bare number is us)",
        ),
        Key::value("runtime", "30s", "run length (-r; a bare number is s)"),
        Key::value(
            "auto",
            "0",
            "auto-bench mode (-a): one more worker per round while p99 < 2000 us",
        ),
    ];
    const EXAMPLE: &'static str = "schbench:m=2,t=16";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let p = Params {
            m: a.u32_in("m", 1, 100_000)?,
            t: a.u32_in("t", 1, MAX_WORKERS)?,
            cputime_ns: a.duration("cputime", Unit::Us, 0)?,
            sleeptime_ns: a.duration("sleeptime", Unit::Us, 0)?,
            runtime_ns: a.duration("runtime", Unit::S, 1_000_000_000)?,
            auto: a.flag("auto")?,
        };
        a.finish()?;
        if threads(&p) > MAX_THREADS {
            return Err(WorkloadError::Invalid {
                workload: "schbench".into(),
                message: format!("more than {MAX_THREADS} threads"),
            });
        }
        Ok(p)
    }

    fn size(p: &Params) -> Size {
        Size::tasks(threads(p))
    }

    fn build(p: &Params, b: &mut Builder) {
        // main() starts the message threads one after the other; each message thread starts
        // its own workers before its loop (schbench.c: main(), message_thread()). Every
        // pthread_create() is a fork placed from the creating thread's CPU then.
        let mut main_events = Vec::new();
        let main = b.task(
            "schbench".to_owned(),
            MAIN_GROUP,
            &Arc::new(Program::forever(vec![])),
        );
        for i in 0..p.m {
            let list = b.spec.sync.add_list(format!("message thread {i}"));
            let mut msg_events = vec![
                Event::ClearToken,
                Event::WakeList(list),
                Event::ExitAfter {
                    abs_ns: p.runtime_ns,
                },
                Event::Suspend,
            ];
            if p.sleeptime_ns > 0 {
                msg_events.push(Event::SleepRandom {
                    min_ns: p.sleeptime_ns,
                    spread_ns: p.sleeptime_ns / 4,
                });
            }
            let msg = b.task(
                format!("schbench-msg-{i}"),
                "schbench-msg",
                &Arc::new(Program::forever(vec![])),
            );
            b.last().spawned = true;
            main_events.push(Event::Run {
                work_ns: PTHREAD_CREATE_NS,
            });
            main_events.push(Event::Spawn(msg));
            let mut msg_start = Vec::new();
            let worker = Arc::new(Program::forever(vec![
                Event::ExitAfter {
                    abs_ns: p.runtime_ns,
                },
                Event::RunWall { ns: p.cputime_ns },
                Event::ProbeSinceMark(ProbeTag::Request),
                Event::ClearToken,
                Event::ListAdd(list),
                Event::Resume(msg),
                Event::Suspend,
                Event::ProbeWakeup,
                Event::Mark,
            ]));
            for j in 0..p.t {
                let w = b.task(
                    format!("schbench-worker-{i}-{j}"),
                    "schbench-worker",
                    &worker,
                );
                b.last().spawned = true;
                msg_start.push(Event::Run {
                    work_ns: PTHREAD_CREATE_NS,
                });
                msg_start.push(Event::Spawn(w));
            }
            b.spec.tasks[msg.index()].program =
                Arc::new(Program::prologue_then_forever(msg_start, msg_events));
        }
        // Then main() sleeps until the runtime is up and joins them: off the CPU for the
        // rest of the run, which its exit stands for.
        main_events.push(Event::Exit);
        b.spec.tasks[main.index()].program = Arc::new(Program {
            phases: vec![crate::program::Phase::once("main", main_events)],
            loops: crate::program::Loops::Count(1),
            local_timers: Vec::new(),
            rtapp_log: false,
            cumulative_slack: false,
        });
        b.spec.duration_ns = Some(p.runtime_ns);
        b.asks_ns = Some(p.runtime_ns);
    }

    /// The blocks schbench prints at its end. `runtime N (s)` is the time simulated (the
    /// runtime asked for, or less when the run stopped sooner), in whole seconds as schbench
    /// prints its elapsed time; the RPS samples are the whole seconds simulated and the average
    /// rps is over the time simulated.
    fn report(p: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        let elapsed_ns = obs.sim_time_ns.min(p.runtime_ns);
        let runtime_s = elapsed_ns / 1_000_000_000;
        // One pass over the part's probes for both histograms (each is a count per bucket, so
        // the order in which samples arrive does not matter).
        let mut wake = PlatHistogram::default();
        let mut req = PlatHistogram::default();
        let mut per_second = vec![0u64; runtime_s as usize];
        let mut loops = 0u64;
        for pr in obs.part_probes_all(part) {
            match pr.tag {
                ProbeTag::Wakeup => {
                    let us = pr.value / 1000;
                    if us > 0 {
                        wake.add(us);
                    }
                }
                ProbeTag::Request => {
                    if pr.time_ns > elapsed_ns {
                        continue;
                    }
                    loops += 1;
                    let us = pr.value / 1000;
                    if us > 0 {
                        req.add(us);
                    }
                    let sec = (pr.time_ns / 1_000_000_000) as usize;
                    if sec < per_second.len() {
                        per_second[sec] += 1;
                    }
                }
                _ => {}
            }
        }
        let mut rps = PlatHistogram::default();
        for &n in &per_second {
            rps.add(n);
        }
        let (mut msg_delay, mut n_msg, mut worker_delay, mut n_worker) = (0u64, 0u64, 0u64, 0u64);
        for (_, t) in obs.part_tasks(part) {
            let d = t.wait_ns / t.nr_switches().max(1);
            if &*t.group == "schbench-msg" {
                msg_delay += d;
                n_msg += 1;
            } else if &*t.group == "schbench-worker" {
                worker_delay += d;
                n_worker += 1;
            }
        }
        let msg_delay_us = msg_delay / n_msg.max(1) / 1000;
        let worker_delay_us = worker_delay / n_worker.max(1) / 1000;
        let wp = wake.percentiles(&PLIST);
        let p99 = wp[3].0;

        let mut s = String::new();
        if p.auto {
            let _ = writeln!(
                s,
                "cputime {} threads {} p99 {}",
                p.cputime_ns / 1000,
                p.t,
                p99
            );
        }
        let lat_show = [50.0, 90.0, 99.0, 99.9];
        s.push_str(&wake.schbench_block(
            "Wakeup Latencies",
            "usec",
            runtime_s,
            &PLIST,
            &lat_show,
            99.0,
        ));
        s.push_str(&req.schbench_block(
            "Request Latencies",
            "usec",
            runtime_s,
            &PLIST,
            &lat_show,
            99.0,
        ));
        s.push_str(&rps.schbench_block(
            "RPS",
            "requests",
            runtime_s,
            &PLIST,
            &[20.0, 50.0, 90.0],
            50.0,
        ));
        let avg_rps = if elapsed_ns == 0 {
            0.0
        } else {
            loops as f64 * 1e9 / elapsed_ns as f64
        };
        let _ = writeln!(s, "average rps: {avg_rps:.2}");
        let _ = writeln!(
            s,
            "sched delay: message {msg_delay_us} (usec) worker {worker_delay_us} (usec)"
        );

        let rp = req.percentiles(&PLIST);
        let rpsp = rps.percentiles(&PLIST);
        let metrics = vec![
            Metric::new("wakeup_latency_p50", "us", wp[1].0 as f64, false),
            Metric::new("wakeup_latency_p90", "us", wp[2].0 as f64, false),
            Metric::new("wakeup_latency_p99", "us", p99 as f64, false),
            Metric::new("wakeup_latency_p999", "us", wp[4].0 as f64, false),
            Metric::new("wakeup_latency_max", "us", wake.max() as f64, false),
            Metric::new("wakeup_samples", "count", wake.samples() as f64, true),
            Metric::new("request_latency_p50", "us", rp[1].0 as f64, false),
            Metric::new("request_latency_p99", "us", rp[3].0 as f64, false),
            Metric::new("rps_p50", "requests/s", rpsp[1].0 as f64, true),
            Metric::new("average_rps", "requests/s", avg_rps, true),
            Metric::new("sched_delay_message", "us", msg_delay_us as f64, false),
            Metric::new("sched_delay_worker", "us", worker_delay_us as f64, false),
        ];
        (s, metrics)
    }

    fn rounds(p: &Params) -> Option<&'static str> {
        p.auto.then_some("schbench -a")
    }

    /// `schbench -a`: the next round (one more worker per message thread) if this round's
    /// wake-up p99 (the report's `wakeup_latency_p99` metric) is below [`AUTO_P99_LIMIT_US`];
    /// `None` when auto mode is off or the search is over. The search is also over when the
    /// round recorded no wake-up at all (`wakeup_samples` is 0, e.g. a run shorter than one
    /// message period): its p99 of 0 measured nothing, and a round with another worker would
    /// be measured no better, so it would add workers forever. It also stops before a round
    /// would pass the generator's own limits ([`MAX_WORKERS`] workers per message thread,
    /// [`MAX_THREADS`] threads). The label spells every key out.
    fn next_round(p: &Params, report: &Report) -> Option<(String, Params)> {
        if !p.auto {
            return None;
        }
        if report.metric("wakeup_samples")?.value == 0.0 {
            return None;
        }
        let p99 = report.metric("wakeup_latency_p99")?.value;
        if p99 >= AUTO_P99_LIMIT_US as f64 {
            return None;
        }
        let next = Params {
            t: p.t.checked_add(1).filter(|&t| t <= MAX_WORKERS)?,
            ..p.clone()
        };
        if threads(&next) > MAX_THREADS {
            return None;
        }
        let label = format!(
            "schbench:m={},t={},cputime={}us,sleeptime={}us,runtime={}s,auto=1",
            next.m,
            next.t,
            next.cputime_ns / 1000,
            next.sleeptime_ns / 1000,
            next.runtime_ns / 1_000_000_000
        );
        Some((label, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(samples: u64, p99_us: u64) -> Report {
        Report {
            workload: "schbench".into(),
            text: String::new(),
            metrics: vec![
                Metric::new("wakeup_latency_p99", "us", p99_us as f64, false),
                Metric::new("wakeup_samples", "count", samples as f64, true),
            ],
        }
    }

    fn params(m: u32, t: u32) -> Params {
        Params {
            m,
            t,
            cputime_ns: 30_000_000,
            sleeptime_ns: 30_000_000,
            runtime_ns: 1_000_000_000,
            auto: true,
        }
    }

    #[test]
    fn auto_mode_adds_a_worker_while_p99_is_under_the_limit() {
        let (label, next) = Schbench::next_round(&params(1, 1), &report(10, 100)).unwrap();
        assert_eq!(next.t, 2);
        assert_eq!(
            label,
            "schbench:m=1,t=2,cputime=30000us,sleeptime=30000us,runtime=1s,auto=1"
        );
        assert!(Schbench::next_round(&params(1, 1), &report(10, AUTO_P99_LIMIT_US)).is_none());
    }

    #[test]
    fn auto_mode_stops_when_nothing_was_measured() {
        // Issue 18, finding 4: a p99 of 0 from no samples is not a measurement.
        assert!(Schbench::next_round(&params(1, 1), &report(0, 0)).is_none());
    }

    #[test]
    fn auto_mode_stops_before_the_thread_limits() {
        // main() + 10 x (99_998 + 1) = 999,991 threads fits the 1,000,000 limit; one more
        // worker each (1,000,001) passes it.
        assert!(Schbench::next_round(&params(10, 99_997), &report(10, 0)).is_some());
        assert!(Schbench::next_round(&params(10, 99_998), &report(10, 0)).is_none());
        // One message thread: t stops at its own limit, MAX_WORKERS.
        assert!(Schbench::next_round(&params(1, MAX_WORKERS - 1), &report(10, 0)).is_some());
        assert!(Schbench::next_round(&params(1, MAX_WORKERS), &report(10, 0)).is_none());
    }
}
