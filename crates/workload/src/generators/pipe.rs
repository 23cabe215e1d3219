//! `perf bench sched pipe`: two tasks ping-pong one integer through two pipes.
//!
//! Follows perf's bench/sched-pipe.c: task 0 loops `read(pipe 1)` then `write(pipe 2)`,
//! task 1 loops `write(pipe 1)` then `read(pipe 2)`, `loops` times each (default 1000000);
//! every round trip is two hand-offs, `2 * loops` in all. The time runs from before the tasks
//! start until both have exited. CPU cost of one `read` and one `write` of 4 bytes at capacity
//! 1024 (keys `read`, `write`, defaults 0.4 us and 0.5 us, syscall entry and exit included);
//! the wake-ups and context switches are the engine's. A run that stops before the loops do
//! reports the round trips done in the time simulated.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::generators::{Args, Builder, Generator, Key, Unit, WorkloadError};
use crate::ids::ProbeTag;
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Loops, Phase, Program};
use crate::report::{Metric, sec_ms};
use crate::sync::ChanKind;

/// `pipe:loops=N[,mode=process|thread][,read=D][,write=D]`.
#[derive(Clone, Copy, Debug)]
pub struct Pipe;

/// The parsed keys of [`Pipe`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Round trips (`-l`, default 1000000).
    pub loops: u32,
    /// Threads (`-T`) or processes (default); only the text differs.
    pub threaded: bool,
    /// CPU work of one `read` at capacity 1024.
    pub read_ns: u64,
    /// CPU work of one `write` at capacity 1024.
    pub write_ns: u64,
}

impl Generator for Pipe {
    type Params = Params;
    const NAME: &'static str = "pipe";
    const ABOUT: &'static str =
        "perf bench sched pipe: two tasks ping-pong one integer through two pipes";
    const KEYS: &'static [Key] = &[
        Key::value("loops", "1000000", "round trips (-l)"),
        Key::value(
            "mode",
            "process",
            "process or thread (-T); only the text differs",
        ),
        Key::value(
            "read",
            "400ns",
            "CPU work of one read at capacity 1024 (a bare number is us)",
        ),
        Key::value(
            "write",
            "500ns",
            "CPU work of one write at capacity 1024 (a bare number is us)",
        ),
    ];
    const EXAMPLE: &'static str = "pipe:loops=100000";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let p = Params {
            loops: a.u32_in("loops", 1, u32::MAX)?,
            threaded: a.choice("mode", &["process", "thread"])? == "thread",
            read_ns: a.duration("read", Unit::Us, 0)?,
            write_ns: a.duration("write", Unit::Us, 0)?,
        };
        a.finish()?;
        Ok(p)
    }

    fn size(_: &Params) -> Size {
        Size::tasks(2)
    }

    fn build(p: &Params, b: &mut Builder) {
        // 4-byte writes merged into 16 pages.
        let cap = 16 * (4096 / 4);
        let p1 = b.spec.sync.add_chan("pipe 1", ChanKind::Pipe, cap);
        let p2 = b.spec.sync.add_chan("pipe 2", ChanKind::Pipe, cap);
        let t0 = looped(
            vec![
                Event::Recv { chan: p1 },
                Event::Run {
                    work_ns: p.read_ns + p.write_ns,
                },
                Event::Send { chan: p2, msgs: 1 },
                // Counts the round trips done, for a run that stops before the loops do.
                Event::Tally { interval_ns: 0 },
            ],
            p.loops,
        );
        let t1 = looped(
            vec![
                Event::Run {
                    work_ns: p.write_ns,
                },
                Event::Send { chan: p1, msgs: 1 },
                Event::Recv { chan: p2 },
                Event::Run { work_ns: p.read_ns },
            ],
            p.loops,
        );
        b.task("sched-pipe-0".into(), "sched-pipe", &t0);
        b.task("sched-pipe-1".into(), "sched-pipe", &t1);
    }

    fn report(p: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        let mut complete = true;
        let stop = obs
            .part_tasks(part)
            .map(|(_, t)| {
                t.exited_ns.unwrap_or_else(|| {
                    complete = false;
                    obs.sim_time_ns
                })
            })
            .max()
            .unwrap_or(0);
        // The round trips done: all of them, or those task 0 had counted when the run stopped.
        let done = if complete {
            u64::from(p.loops)
        } else {
            obs.part_tasks(part).next().map_or(0, |(r, _)| {
                obs.probes
                    .iter()
                    .filter(|pr| pr.task == r && pr.tag == ProbeTag::TallyCount)
                    .map(|pr| pr.value)
                    .sum()
            })
        };
        let usec = stop / 1000;
        let usecs_per_op = if done == 0 {
            0.0
        } else {
            usec as f64 / done as f64
        };
        let ops_per_sec = if usec == 0 {
            0
        } else {
            (done as f64 / (usec as f64 / 1e6)) as i64
        };
        let mut s = String::new();
        s.push_str("# Running 'sched/pipe' benchmark:\n");
        let _ = writeln!(
            s,
            "# Executed {done} pipe operations between two {}\n",
            if p.threaded { "threads" } else { "processes" }
        );
        let _ = writeln!(s, " {:>14}: {} [sec]\n", "Total time", sec_ms(stop));
        let _ = writeln!(s, " {usecs_per_op:14.6} usecs/op");
        let _ = writeln!(s, " {ops_per_sec:14} ops/sec");
        if !complete {
            let _ = writeln!(
                s,
                "# lbsim: the run ended before both tasks finished their loops: {done} of {} \
                 round trips done",
                p.loops
            );
        }
        let metrics = vec![
            Metric::new("total_time", "s", stop as f64 / 1e9, false),
            Metric::new("usecs_per_op", "us", usecs_per_op, false),
            Metric::new("ops_per_sec", "ops/s", ops_per_sec as f64, true),
        ];
        (s, metrics)
    }
}

fn looped(events: Vec<Event>, loops: u32) -> Arc<Program> {
    let mut phase = Phase::once("loop", events);
    phase.loops = Loops::Count(u64::from(loops));
    Arc::new(Program {
        phases: vec![phase],
        loops: Loops::Count(1),
        local_timers: Vec::new(),
        rtapp_log: false,
        cumulative_slack: false,
    })
}
