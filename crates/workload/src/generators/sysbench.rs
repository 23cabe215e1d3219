//! `sysbench --test=cpu`: threads share a request counter; each request is CPU work.
//!
//! Follows sysbench 0.4's cpu test (`--num-threads`, `--max-requests`, `--max-time`) and
//! 1.0's (`--threads`, `--events`, `--time`): every thread loops taking the next request from
//! a shared generator (a mutex-protected counter in 0.4, an atomic in 1.0: a few ns either
//! way, modelled as an atomic ticket, [`crate::Event::Claim`]), runs it, and records the
//! request's wall-clock latency. The run ends when the requests are exhausted or the time
//! limit passes; exactly `requests` requests complete when no time limit cuts the run short.
//!
//! A request is `cost` of work at capacity 1024 (default 1.3 ms: `--cpu-max-prime=10000` on
//! the seed 000 machine), optionally jittered.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::generators::{Args, Builder, Generator, Key, PTHREAD_CREATE_NS, Unit, WorkloadError};
use crate::ids::ProbeTag;
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::{Metric, mean_stddev, nearest_rank};

/// Output layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// sysbench 0.4.12 ("Test execution summary", per-request statistics).
    V04,
    /// sysbench 1.0.20 ("CPU speed", "Latency (ms)").
    V10,
}

/// `sysbench-cpu:threads=N,requests=M[,time=D][,cost=D][,jitter=PCT][,format=0.4|1.0]`.
#[derive(Clone, Copy, Debug)]
pub struct SysbenchCpu;

/// The parsed keys of [`SysbenchCpu`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Worker threads (`--num-threads`, default 1).
    pub threads: u32,
    /// Requests in total (`--max-requests`, default 10000; 0 = unlimited, needs `time`).
    pub requests: u64,
    /// Time limit (`--max-time`; a bare number is seconds).
    pub time_ns: Option<u64>,
    /// Work per request at capacity 1024 (default 1.3 ms; a bare number is ms).
    pub cost_ns: u64,
    /// Run-length jitter, percent.
    pub jitter_pct: u32,
    /// The version modelled, output and start-up (`format=1.0`, the default, or `0.4`).
    pub format: Format,
}

impl Generator for SysbenchCpu {
    type Params = Params;
    const NAME: &'static str = "sysbench-cpu";
    const ABOUT: &'static str =
        "sysbench --test=cpu: threads share a request counter; each request is CPU work";
    const KEYS: &'static [Key] = &[
        Key::value("threads", "1", "worker threads (--num-threads)"),
        Key::derived(
            "requests",
            "10000, or 0 (unlimited) with time",
            "requests in total (--max-requests; 0: unlimited)",
        ),
        Key::unset(
            "time",
            "no limit",
            "time limit (--max-time; a bare number is s)",
        ),
        Key::value(
            "cost",
            "1.3ms",
            "work per request at capacity 1024 (a bare number is ms)",
        ),
        Key::value("jitter", "0", "run-length jitter, percent"),
        Key::value(
            "format",
            "1.0",
            "the sysbench version: 1.0 (1.0.20's output, start barrier) or 0.4 (0.4.12's output, start mutex)",
        ),
    ];
    const EXAMPLE: &'static str = "sysbench-cpu:threads=8,requests=1000";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let threads = a.u32_in("threads", 1, 100_000)?;
        let time_ns = a.opt_duration("time", Unit::S, 1)?;
        let default_requests = if time_ns.is_some() { 0 } else { 10_000 };
        let requests = a.u64_or("requests", Some(default_requests), 0, u64::MAX / 2)?;
        let cost_ns = a.duration("cost", Unit::Ms, 1)?;
        let jitter_pct = a.u32_in("jitter", 0, 100)?;
        let format = match a.choice("format", &["1.0", "0.4"])? {
            "0.4" => Format::V04,
            _ => Format::V10,
        };
        a.finish()?;
        if requests == 0 && time_ns.is_none() {
            return Err(WorkloadError::Invalid {
                workload: "sysbench-cpu".into(),
                message: "requests=0 (unlimited) needs a time limit".into(),
            });
        }
        Ok(Params {
            threads,
            requests,
            time_ns,
            cost_ns,
            jitter_pct,
            format,
        })
    }

    fn size(p: &Params) -> Size {
        // The main thread, and the workers it forks.
        Size::tasks(1 + u64::from(p.threads))
    }

    fn build(p: &Params, b: &mut Builder) {
        let tickets = if p.requests == 0 {
            u64::MAX
        } else {
            p.requests
        };
        let counter = b.spec.sync.add_counter("sysbench requests", tickets);
        // The workers wait until every thread exists, then take requests until none is left.
        // How they wait depends on the version:
        // - 0.4 (sysbench.c run_test()/runner_thread()): the main thread holds
        //   `thread_start_mutex` while it creates the workers; each worker locks and unlocks it
        //   before its first request. The main thread's unlock wakes the first waiter, whose
        //   unlock wakes the next (glibc hands a contended mutex on one waiter at a time), so
        //   the workers are woken one after the other, each by the previous one, from its CPU.
        // - 1.0 (sb_barrier.c): a barrier of threads + 1 (a mutex and a condition variable);
        //   the last arrival, the main thread, broadcasts: all the workers are woken from its
        //   CPU.
        let (worker_start, main_lock, main_release) = match p.format {
            Format::V04 => {
                let m = b.spec.sync.add_mutex("sysbench thread_start_mutex");
                (
                    vec![Event::Lock(m), Event::Unlock(m)],
                    vec![Event::Lock(m)],
                    Event::Unlock(m),
                )
            }
            Format::V10 => {
                let start = b
                    .spec
                    .sync
                    .add_barrier("sysbench thread start", p.threads + 1);
                (
                    vec![Event::Barrier(start)],
                    Vec::new(),
                    Event::Barrier(start),
                )
            }
        };
        let worker = Arc::new(Program::prologue_then_forever(
            worker_start,
            vec![
                Event::Claim {
                    counter,
                    until_ns: p.time_ns,
                },
                Event::Mark,
                Event::Run { work_ns: p.cost_ns },
                Event::ProbeSinceMark(ProbeTag::Request),
            ],
        ));
        let t = b.template("sysbench".to_owned(), WORKER_GROUP, &worker);
        b.spec.templates[t.index()].jitter_pct = p.jitter_pct;
        // The main thread creates the workers one after the other (pthread_create: a clone
        // and a stack mapping, PTHREAD_CREATE_NS each; it occupies its CPU meanwhile, which fork
        // placement sees), releases them (0.4: unlocks the start mutex it took first; 1.0:
        // arrives last at the barrier), and then waits in pthread_join, off the CPU for the
        // rest of the run: its exit stands for that.
        let mut main = main_lock;
        for _ in 0..p.threads {
            main.push(Event::Run {
                work_ns: PTHREAD_CREATE_NS,
            });
            main.push(Event::Fork(t));
        }
        main.push(main_release);
        main.push(Event::Exit);
        let main = Arc::new(Program {
            phases: vec![crate::program::Phase::once("main", main)],
            loops: crate::program::Loops::Count(1),
            local_timers: Vec::new(),
            rtapp_log: false,
            cumulative_slack: false,
        });
        b.task("sysbench".to_owned(), "sysbench-main", &main);
        b.asks_ns = p.time_ns;
    }

    fn report(p: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        let tasks: Vec<_> = obs
            .part_tasks(part)
            .filter(|(_, t)| &*t.group == WORKER_GROUP)
            .collect();
        let mut per_thread_events = vec![0u64; tasks.len()];
        let mut per_thread_time = vec![0u64; tasks.len()];
        let mut lat: Vec<u64> = Vec::new();
        for pr in obs.part_probes(part, ProbeTag::Request) {
            if let Some(i) = tasks.iter().position(|(r, _)| *r == pr.task) {
                per_thread_events[i] += 1;
                per_thread_time[i] += pr.value;
            }
            lat.push(pr.value);
        }
        lat.sort_unstable();
        let events = lat.len() as u64;
        let total_ns = tasks
            .iter()
            .map(|(_, t)| t.exited_ns.unwrap_or(obs.sim_time_ns))
            .max()
            .unwrap_or(0);
        let total_s = total_ns as f64 / 1e9;
        let sum_ms = lat.iter().sum::<u64>() as f64 / 1e6;
        let ms = |ns: u64| ns as f64 / 1e6;
        let min = lat.first().copied().map_or(0.0, ms);
        let max = lat.last().copied().map_or(0.0, ms);
        let avg = if events == 0 {
            0.0
        } else {
            sum_ms / events as f64
        };
        let p95 = ms(nearest_rank(&lat, 95.0));
        let (ev_avg, ev_sd) = mean_stddev(
            &per_thread_events
                .iter()
                .map(|&e| e as f64)
                .collect::<Vec<_>>(),
        );
        let (ex_avg, ex_sd) = mean_stddev(
            &per_thread_time
                .iter()
                .map(|&t| t as f64 / 1e9)
                .collect::<Vec<_>>(),
        );
        let time_limited = p.time_ns.is_some() && (p.requests == 0 || events < p.requests);
        let eps = if total_s > 0.0 {
            events as f64 / total_s
        } else {
            0.0
        };

        let mut s = String::new();
        match p.format {
            Format::V04 => {
                s.push_str("sysbench 0.4.12:  multi-threaded system evaluation benchmark\n\n");
                s.push_str("Running the test with following options:\n");
                let _ = writeln!(s, "Number of threads: {}\n", p.threads);
                s.push_str("Doing CPU performance benchmark\n\n");
                s.push_str("Threads started!\n");
                if time_limited {
                    s.push_str("Time limit exceeded, exiting...\n");
                    if p.threads > 1 {
                        let _ = writeln!(s, "(last message repeated {} times)", p.threads - 1);
                    }
                }
                s.push_str("Done.\n\n");
                s.push_str("Maximum prime number checked in CPU test: 10000\n\n\n");
                s.push_str("Test execution summary:\n");
                let _ = writeln!(s, "    total time:                          {total_s:.4}s");
                let _ = writeln!(s, "    total number of events:              {events}");
                let _ = writeln!(
                    s,
                    "    total time taken by event execution: {:.4}",
                    sum_ms / 1e3
                );
                s.push_str("    per-request statistics:\n");
                let _ = writeln!(s, "         min:                            {min:10.2}ms");
                let _ = writeln!(s, "         avg:                            {avg:10.2}ms");
                let _ = writeln!(s, "         max:                            {max:10.2}ms");
                let _ = writeln!(s, "         approx.  95 percentile:         {p95:10.2}ms");
            }
            Format::V10 => {
                s.push_str("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\n");
                s.push_str("Running the test with following options:\n");
                let _ = writeln!(s, "Number of threads: {}", p.threads);
                s.push_str("Initializing random number generator from current time\n\n\n");
                s.push_str("Prime numbers limit: 10000\n\n");
                s.push_str("Initializing worker threads...\n\n");
                s.push_str("Threads started!\n\n");
                s.push_str("CPU speed:\n");
                let _ = writeln!(s, "    events per second: {eps:8.2}\n");
                s.push_str("General statistics:\n");
                let _ = writeln!(s, "    total time:                          {total_s:.4}s");
                let _ = writeln!(s, "    total number of events:              {events}\n");
                s.push_str("Latency (ms):\n");
                let _ = writeln!(s, "         min: {min:39.2}");
                let _ = writeln!(s, "         avg: {avg:39.2}");
                let _ = writeln!(s, "         max: {max:39.2}");
                let _ = writeln!(s, "        {:3}th percentile: {p95:27.2}", 95);
                let _ = writeln!(s, "         sum: {sum_ms:39.2}");
            }
        }
        s.push_str("\nThreads fairness:\n");
        let _ = writeln!(
            s,
            "    events (avg/stddev):           {ev_avg:.4}/{ev_sd:3.2}"
        );
        let _ = writeln!(
            s,
            "    execution time (avg/stddev):   {ex_avg:.4}/{ex_sd:3.2}"
        );
        s.push('\n');

        let metrics = vec![
            Metric::new("total_time", "s", total_s, false),
            Metric::new("events", "count", events as f64, true),
            Metric::new("events_per_second", "events/s", eps, true),
            Metric::new("latency_min", "ms", min, false),
            Metric::new("latency_avg", "ms", avg, false),
            Metric::new("latency_max", "ms", max, false),
            Metric::new("latency_p95", "ms", p95, false),
            Metric::new("events_per_thread_stddev", "count", ev_sd, false),
        ];
        (s, metrics)
    }
}

/// The group of the worker threads (the main thread is in `sysbench-main`).
const WORKER_GROUP: &str = "sysbench";
