//! hackbench (rt-tests) and `perf bench sched messaging`: groups of senders and receivers.
//!
//! Follows rt-tests hackbench.c and perf's sched-messaging.c: each group has `fds` receivers,
//! each reading from its own socketpair (or pipe), and `fds` senders, each writing `loops`
//! rounds of one `datasize`-byte message to every receiver of its group; a receiver reads
//! `loops * fds` messages. All tasks first meet at a start barrier (hackbench's ready/wakeup
//! pipes); the time runs from that release until the last task exits.
//! `groups * fds * fds * loops` messages are delivered.
//!
//! Buffering follows the kernel: a pipe holds 16 pages and merges small writes into a page
//! (16 * (4096 / datasize) messages); a unix stream socket blocks its writers once the bytes
//! they have queued, counted as skb `truesize`, reach `sk_sndbuf` (`wmem_default`, 212992),
//! with `truesize` = kmalloc size of (64-byte-aligned data + 320 bytes of `skb_shared_info`)
//! plus 256 bytes of `sk_buff`: 768 bytes for 100-byte messages, 277 messages.
//!
//! CPU cost per message (`send`, `recv` keys) is the write/read system call at capacity 1024;
//! the defaults (2 us, 1.5 us) are a unix-socket round of a modern server core, syscall entry
//! and exit included; wake-ups and context switches are the engine's costs.

use std::fmt::Write as _;
use std::sync::Arc;

use crate::generators::{Args, Builder, Generator, Key, Unit, WorkloadError};
use crate::ids::{ChanId, ProbeTag};
use crate::limits::Size;
use crate::obs::RunObservations;
use crate::program::{Event, Loops, Phase, Program};
use crate::report::{Metric, sec_ms};
use crate::sync::ChanKind;

/// Processes or threads (only the printed text differs: lbsim does not model address spaces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `fork()` (the default).
    Process,
    /// `pthread_create()` (`-T`).
    Thread,
}

/// Output layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// rt-tests hackbench (`Time: 0.179`), the default.
    RtTests,
    /// `perf bench sched messaging` (`Total time: 0.308 [sec]`), what mmtests runs.
    Perf,
}

/// `hackbench:groups=G[,fds=20][,loops=100][,mode=process|thread][,ipc=socket|pipe]
/// [,datasize=100][,send=D][,recv=D][,format=rt-tests|perf]`.
#[derive(Clone, Copy, Debug)]
pub struct Hackbench;

/// The parsed keys of [`Hackbench`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Groups (`-g`, default 10).
    pub groups: u32,
    /// Senders and receivers per group (`-f`, default 20).
    pub fds: u32,
    /// Messages each sender writes to each receiver (`-l`, default 100).
    pub loops: u32,
    /// Processes or threads.
    pub mode: Mode,
    /// Sockets (default) or pipes (`-p`).
    pub ipc: ChanKind,
    /// Message size in bytes (`-s`, default 100).
    pub datasize: u32,
    /// CPU work of one write at capacity 1024.
    pub send_ns: u64,
    /// CPU work of one read at capacity 1024.
    pub recv_ns: u64,
    /// Output layout.
    pub format: Format,
}

impl Generator for Hackbench {
    type Params = Params;
    const NAME: &'static str = "hackbench";
    const ABOUT: &'static str =
        "hackbench (rt-tests) and perf bench sched messaging: groups of senders and receivers";
    const KEYS: &'static [Key] = &[
        Key::value("groups", "10", "groups (-g)"),
        Key::value("fds", "20", "senders and receivers per group (-f)"),
        Key::value(
            "loops",
            "100",
            "messages each sender writes to each receiver (-l)",
        ),
        Key::value("mode", "process", "process or thread (-T)"),
        Key::value("ipc", "socket", "socket or pipe (-p)"),
        Key::value("datasize", "100", "message size in bytes (-s)"),
        Key::value(
            "send",
            "2us",
            "CPU work of one write at capacity 1024 (a bare number is us)",
        ),
        Key::value(
            "recv",
            "1.5us",
            "CPU work of one read at capacity 1024 (a bare number is us)",
        ),
        Key::value("format", "rt-tests", "output layout: rt-tests or perf"),
    ];
    const EXAMPLE: &'static str = "hackbench:groups=2";

    fn parse(mut a: Args) -> Result<Params, WorkloadError> {
        let p = Params {
            groups: a.u32_in("groups", 1, 100_000)?,
            fds: a.u32_in("fds", 1, 10_000)?,
            loops: a.u32_in("loops", 1, 1_000_000_000)?,
            mode: match a.choice("mode", &["process", "thread"])? {
                "thread" => Mode::Thread,
                _ => Mode::Process,
            },
            ipc: match a.choice("ipc", &["socket", "pipe"])? {
                "pipe" => ChanKind::Pipe,
                _ => ChanKind::Socket,
            },
            datasize: a.u32_in("datasize", 1, 1 << 20)?,
            send_ns: a.duration("send", Unit::Us, 0)?,
            recv_ns: a.duration("recv", Unit::Us, 0)?,
            format: match a.choice("format", &["rt-tests", "perf"])? {
                "perf" => Format::Perf,
                _ => Format::RtTests,
            },
        };
        a.finish()?;
        if u64::from(p.groups) * u64::from(p.fds) * 2 > 1_000_000 {
            return Err(WorkloadError::Invalid {
                workload: "hackbench".into(),
                message: format!(
                    "{} groups of {} fds make {} tasks; lbsim accepts at most 1000000",
                    p.groups,
                    p.fds,
                    u64::from(p.groups) * u64::from(p.fds) * 2
                ),
            });
        }
        Ok(p)
    }

    fn size(p: &Params) -> Size {
        Size::tasks(u64::from(p.groups) * u64::from(p.fds) * 2)
    }

    fn build(p: &Params, b: &mut Builder) {
        let users = p.groups * p.fds * 2;
        let start = b.spec.sync.add_barrier("hackbench start", users);
        let setup = Phase::once(
            "ready",
            vec![Event::Barrier(start), Event::Probe(ProbeTag::Start)],
        );
        let cap = capacity_msgs(p.ipc, p.datasize);
        for g in 0..p.groups {
            let chans: Vec<ChanId> = (0..p.fds)
                .map(|r| {
                    b.spec
                        .sync
                        .add_chan(format!("group {g} receiver {r}"), p.ipc, cap)
                })
                .collect();
            for (r, &chan) in chans.iter().enumerate() {
                let mut recv = Phase::once(
                    "receive",
                    vec![Event::Recv { chan }, Event::Run { work_ns: p.recv_ns }],
                );
                recv.loops = Loops::Count(u64::from(p.loops) * u64::from(p.fds));
                let prog = Arc::new(Program {
                    phases: vec![setup.clone(), recv],
                    loops: Loops::Count(1),
                    local_timers: Vec::new(),
                    rtapp_log: false,
                    cumulative_slack: false,
                });
                b.task(format!("receiver-{g}-{r}"), "hackbench", &prog);
            }
            let mut events = Vec::with_capacity(chans.len() * 2);
            for &chan in &chans {
                events.push(Event::Run { work_ns: p.send_ns });
                events.push(Event::Send { chan, msgs: 1 });
            }
            let mut send = Phase::once("send", events);
            send.loops = Loops::Count(u64::from(p.loops));
            let prog = Arc::new(Program {
                phases: vec![setup.clone(), send],
                loops: Loops::Count(1),
                local_timers: Vec::new(),
                rtapp_log: false,
                cumulative_slack: false,
            });
            for s in 0..p.fds {
                b.task(format!("sender-{g}-{s}"), "hackbench", &prog);
            }
        }
    }

    fn report(p: &Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>) {
        let start = obs
            .part_probes(part, ProbeTag::Start)
            .map(|r| r.time_ns)
            .min()
            .unwrap_or(0);
        let mut complete = true;
        let mut stop = start;
        for (_, t) in obs.part_tasks(part) {
            match t.exited_ns {
                Some(e) => stop = stop.max(e),
                None => {
                    complete = false;
                    stop = stop.max(obs.sim_time_ns);
                }
            }
        }
        let time_ns = stop - start;
        let what = match p.mode {
            Mode::Process => "processes",
            Mode::Thread => "threads",
        };
        let mut s = String::new();
        match p.format {
            Format::RtTests => {
                let _ = writeln!(
                    s,
                    "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)",
                    if p.mode == Mode::Thread {
                        "threaded"
                    } else {
                        "process"
                    },
                    p.groups,
                    2 * p.fds,
                    p.groups * 2 * p.fds
                );
                let _ = writeln!(
                    s,
                    "Each sender will pass {} messages of {} bytes",
                    p.loops, p.datasize
                );
                let _ = writeln!(s, "Time: {}", sec_ms(time_ns));
            }
            Format::Perf => {
                s.push_str("# Running 'sched/messaging' benchmark:\n");
                let _ = writeln!(s, "# {} sender and receiver {what} per group", p.fds);
                let _ = writeln!(
                    s,
                    "# {} groups == {} {what} run\n",
                    p.groups,
                    p.groups * 2 * p.fds
                );
                let _ = writeln!(s, " {:>14}: {} [sec]", "Total time", sec_ms(time_ns));
            }
        }
        if !complete {
            s.push_str("# lbsim: the run ended before every hackbench task exited\n");
        }
        let metrics = vec![
            Metric::new("time", "s", time_ns as f64 / 1e9, false),
            Metric::new("completed", "bool", if complete { 1.0 } else { 0.0 }, true),
        ];
        (s, metrics)
    }
}

/// Messages a channel of `kind` buffers for `datasize`-byte messages (see the module docs).
pub fn capacity_msgs(kind: ChanKind, datasize: u32) -> u32 {
    match kind {
        ChanKind::Pipe => {
            if datasize <= 4096 {
                16 * (4096 / datasize)
            } else {
                (65_536 / datasize).max(1)
            }
        }
        ChanKind::Socket => {
            let data = u64::from(datasize).div_ceil(64) * 64 + 320;
            let truesize = data.next_power_of_two() + 256;
            ((212_992 / truesize) as u32).max(1)
        }
    }
}

impl Params {
    /// Total messages delivered: `groups * fds * fds * loops`.
    pub fn messages(&self) -> u64 {
        u64::from(self.groups) * u64::from(self.fds) * u64::from(self.fds) * u64::from(self.loops)
    }
}
