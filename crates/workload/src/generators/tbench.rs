//! tbench: dbench's network load, client/server pairs exchanging requests and replies.
//!
//! Each client (a dbench child replaying its load file) does its share of CPU work, sends a
//! request over its TCP connection and blocks for the reply; its server (a `tbench_srv` child)
//! blocks reading, works, and replies. One operation moves `bytes` of payload (the load file's
//! average read/write size; the default 4096 makes a pair of idle modern cores do about
//! 300 MB/s, the order of seed 003's 27189 MB/s over 96 clients). CPU costs per operation
//! (`client`, `server` keys, defaults 4 us and 6 us at capacity 1024) cover the SMB
//! marshalling and the TCP loopback send and receive paths.
//!
//! Timing and the printed text follow dbench.c: a line per second, `warmup` lines for
//! `runtime / 5` seconds (the default), statistics reset when the warmup is over, `runtime`
//! seconds of `execute` lines, each with the average MB/s since the reset and the worst
//! operation latency of the second, then `Throughput %g MB/sec  N clients  N procs
//! max_latency=%.03f ms`. Operations are reported through tallies
//! ([`crate::Event::Tally`], one pair of probes per client per second), so a client that
//! completes nothing in a second is charged the time since the end of its last busy second.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::generators::{Args, Builder, Generator, Key, Unit, WorkloadError};
use crate::ids::{ProbeTag, TaskRef};
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Program};
use crate::report::{Metric, fmt_g};
use crate::sync::ChanKind;

const SEC: u64 = 1_000_000_000;

/// `tbench:clients=N[,runtime=D][,warmup=D][,client=D][,server=D][,bytes=B]`.
#[derive(Clone, Copy, Debug)]
pub struct Tbench;

/// The parsed keys of [`Tbench`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Client processes (dbench's NPROCS; required).
    pub clients: u32,
    /// Measured run after the warmup, whole seconds (`-t`, default 600).
    pub runtime_s: u64,
    /// Warmup, whole seconds (`--warmup`, default `runtime / 5`).
    pub warmup_s: u64,
    /// Client CPU work per operation at capacity 1024.
    pub client_ns: u64,
    /// Server CPU work per operation at capacity 1024.
    pub server_ns: u64,
    /// Payload bytes per operation.
    pub bytes: u64,
}

fn whole_seconds(a: &mut Args, key: &str, default: Option<u64>) -> Result<u64, WorkloadError> {
    let ns = a.duration_or(key, default.map(|s| s * SEC), Unit::S, 0)?;
    if ns % SEC != 0 {
        return Err(WorkloadError::BadValue {
            workload: "tbench".into(),
            key: key.into(),
            value: format!("{ns}ns"),
            expected: "whole seconds (dbench counts in seconds)".into(),
        });
    }
    Ok(ns / SEC)
}

impl Generator for Tbench {
    type Params = Params;
    const NAME: &'static str = "tbench";
    const ABOUT: &'static str =
        "dbench's network load: client/server pairs exchanging requests and replies";
    const KEYS: &'static [Key] = &[
        Key::required("clients", "client processes (dbench's NPROCS)"),
        Key::value(
            "runtime",
            "600s",
            "measured run after the warmup, whole seconds (-t; a bare number is s)",
        ),
        Key::derived(
            "warmup",
            "runtime / 5",
            "warmup, whole seconds (--warmup; a bare number is s)",
        ),
        Key::value(
            "client",
            "4us",
            "client CPU work per operation at capacity 1024 (a bare number is us)",
        ),
        Key::value(
            "server",
            "6us",
            "server CPU work per operation at capacity 1024 (a bare number is us)",
        ),
        Key::value("bytes", "4096", "payload bytes per operation"),
    ];
    const EXAMPLE: &'static str = "tbench:clients=8,runtime=10";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let clients = a.u32_in("clients", 1, 500_000)?;
        let runtime_s = whole_seconds(&mut a, "runtime", None)?;
        if runtime_s == 0 {
            return Err(WorkloadError::BadValue {
                workload: "tbench".into(),
                key: "runtime".into(),
                value: "0".into(),
                expected: "at least 1 s".into(),
            });
        }
        let warmup_s = whole_seconds(&mut a, "warmup", Some(runtime_s / 5))?;
        let p = Params {
            clients,
            runtime_s,
            warmup_s,
            client_ns: a.duration("client", Unit::Us, 0)?,
            server_ns: a.duration("server", Unit::Us, 0)?,
            bytes: a.u64_in("bytes", 1, 1 << 40)?,
        };
        a.finish()?;
        Ok(p)
    }

    fn size(p: &Params) -> Size {
        // A client and its server per client.
        Size::tasks(2 * u64::from(p.clients))
    }

    fn build(p: &Params, b: &mut Builder) {
        let end_ns = p.end_ns();
        for i in 0..p.clients {
            let req = b
                .spec
                .sync
                .add_chan(format!("tbench {i} request"), ChanKind::Socket, 16);
            let rep = b
                .spec
                .sync
                .add_chan(format!("tbench {i} reply"), ChanKind::Socket, 16);
            let client = Arc::new(Program::forever(vec![
                Event::ExitAfter { abs_ns: end_ns },
                Event::Mark,
                Event::Run {
                    work_ns: p.client_ns,
                },
                Event::Send { chan: req, msgs: 1 },
                Event::Recv { chan: rep },
                Event::Tally { interval_ns: SEC },
            ]));
            let server = Arc::new(Program::forever(vec![
                Event::Recv { chan: req },
                Event::Run {
                    work_ns: p.server_ns,
                },
                Event::Send { chan: rep, msgs: 1 },
            ]));
            b.task(format!("tbench-{i}"), "tbench", &client);
            b.task(format!("tbench_srv-{i}"), "tbench_srv", &server);
        }
        b.spec.duration_ns = Some(end_ns + SEC);
        b.asks_ns = Some(end_ns);
    }

    fn report(p: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        let reset = p.reset_tick();
        // One line per second simulated, up to the end dbench asks for: a run that stopped
        // sooner prints the seconds it covered and no invented ones.
        let last_tick = (reset + p.runtime_s).min(obs.sim_time_ns / SEC);
        let clients: Vec<TaskRef> = obs
            .part_tasks(part)
            .filter(|(_, t)| &*t.group == "tbench")
            .map(|(r, _)| r)
            .collect();
        let n = clients.len().max(1) as u64;
        let data = per_second(obs, &clients, last_tick as usize);
        let mut last_busy = vec![0u64; data.len()];
        let mut bytes_total = 0u64;
        let mut bytes_at_reset = 0u64;
        let mut lines_total = 0u64;
        let mut worst = 0u64;
        let mut throughput = 0.0f64;
        let mut measured = false;
        let mut s = String::new();
        s.push_str("dbench version 4.00 - Copyright Andrew Tridgell 1999-2004\n\n");
        let _ = writeln!(
            s,
            "Running for {} seconds with load 'client.txt' and minimum warmup {} secs",
            p.runtime_s, p.warmup_s
        );
        s.push_str("Waiting for child processes to finish setup.\n");
        s.push_str("Releasing clients\n");
        for tick in 1..=last_tick {
            let k = (tick - 1) as usize;
            let mut latency = 0u64;
            for (c, d) in data.iter().enumerate() {
                let cnt = d.count[k];
                bytes_total += cnt * p.bytes;
                lines_total += cnt;
                let lat = if cnt > 0 {
                    last_busy[c] = tick * SEC;
                    d.max_lat[k]
                } else {
                    tick * SEC - last_busy[c]
                };
                latency = latency.max(lat);
            }
            if reset > 0 && tick == reset {
                // dbench: the first tick past the warmup resets the statistics and prints nothing.
                bytes_at_reset = bytes_total;
                worst = 0;
                continue;
            }
            let (t, bytes) = if tick > reset && reset > 0 {
                (tick - reset, bytes_total - bytes_at_reset)
            } else {
                (tick, bytes_total)
            };
            let mbps = 1.0e-6 * bytes as f64 / t as f64;
            let lat_ms = latency as f64 / 1e6;
            if reset > 0 && tick < p.warmup_s {
                let _ = writeln!(
                    s,
                    "{:4}  {:8}  {:7.2} MB/sec  warmup {:3} sec  latency {:.3} ms",
                    clients.len(),
                    lines_total / n,
                    mbps,
                    t,
                    lat_ms
                );
            } else {
                worst = worst.max(latency);
                throughput = mbps;
                measured = true;
                let _ = writeln!(
                    s,
                    "{:4}  {:8}  {:7.2} MB/sec  execute {:3} sec  latency {:.3} ms",
                    clients.len(),
                    lines_total / n,
                    mbps,
                    t,
                    lat_ms
                );
            }
        }
        s.push('\n');
        if !measured {
            s.push_str("# lbsim: the run stopped before the warmup was over: nothing measured\n");
        }
        let _ = writeln!(
            s,
            "Throughput {} MB/sec  {} clients  {} procs  max_latency={:.3} ms",
            fmt_g(throughput),
            clients.len(),
            clients.len(),
            worst as f64 / 1e6
        );
        let metrics = vec![
            Metric::new("throughput", "MB/s", throughput, true),
            Metric::new("max_latency", "ms", worst as f64 / 1e6, false),
        ];
        (s, metrics)
    }
}

impl Params {
    /// The tick (in seconds from the start) at which dbench resets its statistics: the first
    /// whole second past the warmup; 0 without a warmup.
    pub fn reset_tick(&self) -> u64 {
        if self.warmup_s == 0 {
            0
        } else {
            self.warmup_s + 1
        }
    }

    /// When the clients stop: the tick at which `runtime` seconds have passed since the reset.
    pub fn end_ns(&self) -> u64 {
        (self.reset_tick() + self.runtime_s + 1) * SEC
    }
}

/// Per-client operation counts and worst latencies per second (index: tick - 1).
struct PerSecond {
    count: Vec<u64>,
    max_lat: Vec<u64>,
}

/// Each client's [`PerSecond`], in one pass over the probe log (a pass per client made the
/// report quadratic in clients).
fn per_second(obs: &RunObservations, clients: &[TaskRef], ticks: usize) -> Vec<PerSecond> {
    let mut of_task: Vec<Option<usize>> = vec![None; obs.tasks.len()];
    for (c, r) in clients.iter().enumerate() {
        if let Some(o) = of_task.get_mut(r.index()) {
            *o = Some(c);
        }
    }
    let mut out: Vec<PerSecond> = clients
        .iter()
        .map(|_| PerSecond {
            count: vec![0; ticks],
            max_lat: vec![0; ticks],
        })
        .collect();
    // Each client's last tally time and the second its last tally went to.
    let mut prev = vec![0u64; clients.len()];
    let mut slot: Vec<Option<usize>> = vec![None; clients.len()];
    for pr in &obs.probes {
        let Some(c) = of_task.get(pr.task.index()).copied().flatten() else {
            continue;
        };
        let ps = &mut out[c];
        match pr.tag {
            ProbeTag::TallyCount => {
                let boundary = (prev[c] / SEC + 1) * SEC;
                prev[c] = pr.time_ns;
                let k = (boundary / SEC) as usize;
                slot[c] = (k >= 1 && k <= ticks).then(|| k - 1);
                if let Some(s) = slot[c] {
                    ps.count[s] += pr.value;
                }
            }
            ProbeTag::TallyMaxLatency => {
                if let Some(s) = slot[c] {
                    ps.max_lat[s] = ps.max_lat[s].max(pr.value);
                }
            }
            _ => {}
        }
    }
    out
}
