//! The scaling grid of issue 13: lbsim's cost as the machine and the workload grow.
//!
//! For CPUs 8 / 64 / 192 / 1024 / 4096 x tasks 10 / 1000 / 20000 (the mix: half `busy`, 3/10
//! `periodic:run=1ms,period=4ms`, 1/5 `schbench` with `cputime=1ms,sleeptime=1ms`), plus
//! `tbench:clients=96` and `hackbench:groups=4` on `xeon-4s`, all at HZ = 1000 with the
//! kernel balancer and the machine model's defaults, it prints per cell:
//!
//! - events per second of CPU time;
//! - CPU seconds per simulated second (the cell's own thread's CPU time, from
//!   `/proc/thread-self/schedstat`, over the time simulated; set-up is not counted), over the
//!   whole run and over its second half alone (`2nd half`: from the first progress call at
//!   or past half the duration to the end; progress calls come every
//!   [`lbsim_sim::engine::PROGRESS_EVERY`] events, so a run with fewer events shows `-`). The
//!   whole run includes the start-up of its tasks (a fork and a placement each); the second
//!   half leaves it out;
//! - ns per event and its ratio to a bare binary-heap event loop run in the same process just
//!   before (a heap of as many pending events as the cell has tasks and CPUs, each pop
//!   pushing one event a pseudo-random time later): how far lbsim is from the cost of its
//!   event queue alone;
//! - the peak resident memory of the cell's process (`VmHWM`) and, for the 1000- and
//!   20000-task cells, the memory per task: the difference to the same machine's 10-task
//!   cell over the difference in tasks.
//!
//! Each cell runs in its own process (this binary re-run with `--cell N`), so that peak
//! memory is the cell's. The thread CPU clock this reads advances in steps of a scheduler
//! tick (4 ms on the 2-core machine the issue names), so a cell whose run takes less than
//! 250 ms of CPU is run again, the same run, until its runs together take that long, and the
//! mean is printed (`runs`; the peak memory is the first run's); the heap loop runs at least
//! as long. Simulated durations are short for the big cells (they are rates); the whole grid
//! takes about 15 seconds on a 2-core machine. Run it with `cargo xtask bench scale` (or
//! `cargo bench -p lbsim-sim --bench scale`); `--cell N` runs
//! one cell and prints its line.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::process::Command;
use std::sync::Arc;

use lbsim_balance::cost::CostModel;
use lbsim_balance::kernel::KernelBalancer;
use lbsim_rq::Tunables;
use lbsim_sim::engine::{EngineTunables, Sim, SimConfig};
use lbsim_topology::{SdParams, Topology, parse_machine};
use lbsim_workload::parse_workloads;

/// One cell of the grid.
struct Cell {
    /// Row label.
    machine_label: &'static str,
    /// Machine spec.
    machine: &'static str,
    /// Column label.
    load_label: String,
    /// The `--workload` options.
    workloads: Vec<String>,
    /// Simulated time, ns.
    duration_ns: u64,
}

/// The grid's machines: label, spec, simulated time (ms) for 10, 1000 and 20000 tasks
/// (shorter where a cell is slow: the figures are rates, and each includes the start-up of
/// its tasks, which weighs more in a shorter run).
const MACHINES: [(&str, &str, [u64; 3]); 5] = [
    ("8", "sockets=1,clusters=2,cores=4", [5000, 2000, 2000]),
    ("64", "nodes=2,cores=16,threads=2", [5000, 2000, 1000]),
    ("192", "xeon-4s", [2000, 1000, 1000]),
    ("1024", "nodes=8,cores=64,threads=2", [1000, 500, 200]),
    ("4096", "nodes=32,cores=64,threads=2", [500, 100, 100]),
];

/// The grid's task counts.
const TASKS: [u32; 3] = [10, 1000, 20_000];

/// The mix for `n` tasks: half busy, 3/10 periodic, 1/5 schbench (its message
/// threads, their workers and main(): one message thread per 20 of those threads).
fn mix(n: u32) -> Vec<String> {
    let busy = n / 2;
    let periodic = n * 3 / 10;
    let sch = n - busy - periodic;
    let m = (sch / 20).max(1);
    // 1 + m * (t + 1) threads: t = (sch - 1) / m - 1, at least 1.
    let t = (sch.saturating_sub(1) / m).saturating_sub(1).max(1);
    vec![
        format!("busy:threads={busy}"),
        format!("periodic:threads={periodic},run=1ms,period=4ms"),
        format!("schbench:m={m},t={t},cputime=1ms,sleeptime=1ms,runtime=1000"),
    ]
}

fn cells() -> Vec<Cell> {
    let mut v = Vec::new();
    for (label, spec, ms) in MACHINES {
        for (n, ms) in TASKS.into_iter().zip(ms) {
            v.push(Cell {
                machine_label: label,
                machine: spec,
                load_label: format!("{n} tasks"),
                workloads: mix(n),
                duration_ns: ms * 1_000_000,
            });
        }
    }
    for (label, wl, ms) in [
        (
            "tbench:clients=96",
            "tbench:clients=96,runtime=1000,warmup=0",
            300,
        ),
        ("hackbench:groups=4", "hackbench:groups=4,loops=100000", 200),
    ] {
        v.push(Cell {
            machine_label: "192",
            machine: "xeon-4s",
            load_label: label.to_owned(),
            workloads: vec![wl.to_owned()],
            duration_ns: ms * 1_000_000,
        });
    }
    v
}

fn config(cell: &Cell) -> SimConfig {
    let machine = parse_machine(cell.machine).expect("machine spec");
    let topology = Arc::new(Topology::build(&machine, &SdParams::default()).expect("topology"));
    let nr = topology.nr_cpus() as u32;
    let mut tunables = Tunables::new(nr);
    tunables.set("hz", "1000").expect("hz");
    let wl: Vec<&str> = cell.workloads.iter().map(String::as_str).collect();
    SimConfig {
        topology,
        workload: parse_workloads(&wl).expect("workload"),
        features: lbsim_sim::params::default_features(),
        tunables,
        cost: CostModel::default(),
        engine: EngineTunables::default(),
        machine: Default::default(),
        kernel: None,
        duration_ns: cell.duration_ns,
        seed: 1,
        check: false,
        cgroups: Vec::new(),
        autogroups: Vec::new(),
    }
}

/// This thread's CPU time so far, ns (`/proc/thread-self/schedstat`: time on a CPU).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// A field of `/proc/self/status` in KiB (`VmHWM`, `VmRSS`).
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// The least CPU time a measurement takes, ns: this machine's thread CPU clock
/// (`/proc/thread-self/schedstat`) advances in steps of a scheduler tick (4 ms here), so
/// that a cell of 16 ms read 12 to 24 ms; at 250 ms or more a step is at most 1.6%.
const MIN_MEASURED_NS: u64 = 250_000_000;

/// A bare event loop: a min-heap of `pending` (time, seq) events; each pop pushes one
/// event a pseudo-random 1..1024 us later, in rounds of a million pops until
/// [`MIN_MEASURED_NS`] of CPU time has passed. Returns ns of CPU per event.
fn heap_loop_ns_per_event(pending: usize) -> f64 {
    let mut heap = BinaryHeap::with_capacity(pending + 1);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let next = |x: &mut u64| {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    };
    let mut seq = 0u64;
    for _ in 0..pending {
        heap.push(Reverse((next(&mut x) % 1_000_000, seq)));
        seq += 1;
    }
    let start = thread_cpu_ns();
    let mut sum = 0u64;
    let mut events = 0u64;
    while events == 0 || thread_cpu_ns() - start < MIN_MEASURED_NS {
        for _ in 0..1_000_000 {
            let Reverse((t, s)) = heap.pop().expect("non-empty");
            sum = sum.wrapping_add(s);
            heap.push(Reverse((t + 1_000 + next(&mut x) % 1_024_000, seq)));
            seq += 1;
        }
        events += 1_000_000;
    }
    let ns = thread_cpu_ns() - start;
    std::hint::black_box(sum);
    ns as f64 / events as f64
}

/// Runs cell `i` in this process and prints one tab-separated line: tasks, events, cpu_ns,
/// sim_ns, heap ns/event, VmHWM KiB, the simulated time and CPU time at the first progress
/// call at or past half the duration (0 and 0 when there was none), and the number of runs.
/// A cell whose run takes less than [`MIN_MEASURED_NS`] of CPU is run again (the same run:
/// same inputs and seed) until the runs together take that long; the times are then the
/// runs' mean, and the peak memory is the first run's.
fn run_cell(i: usize) {
    let cell = &cells()[i];
    let first = config(cell);
    let tasks = first.workload.tasks.len() + first.workload.templates.len();
    let pending = (tasks + first.topology.nr_cpus()).max(16);
    let heap_ns = heap_loop_ns_per_event(pending);
    let half_ns = cell.duration_ns / 2;
    let (mut runs, mut cpu_ns, mut mid_sim_ns, mut mid_cpu_ns) = (0u64, 0u64, 0u64, 0u64);
    let (mut events, mut sim_ns, mut hwm_kib) = (0, 0, 0);
    let mut first = Some(first);
    while runs == 0 || cpu_ns < MIN_MEASURED_NS {
        let cfg = first.take().unwrap_or_else(|| config(cell));
        let balancer = KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz);
        let sim = Sim::new(cfg, balancer).expect("setup");
        let mut mid: Option<(u64, u64)> = None;
        let start = thread_cpu_ns();
        let r = sim
            .run_with_progress(&mut |now_ns, _| {
                if mid.is_none() && now_ns >= half_ns {
                    mid = Some((now_ns, thread_cpu_ns() - start));
                }
                true
            })
            .expect("run");
        cpu_ns += thread_cpu_ns() - start;
        let (m_sim, m_cpu) = mid.unwrap_or((0, 0));
        mid_sim_ns = m_sim;
        mid_cpu_ns += m_cpu;
        (events, sim_ns) = (r.events, r.sim_time_ns);
        runs += 1;
        if runs == 1 {
            // The first run's peak: a later run may take the allocator's memory in another
            // order, and the peak memory is a single run's.
            hwm_kib = status_kib("VmHWM:");
        }
    }
    println!(
        "{tasks}\t{events}\t{}\t{sim_ns}\t{heap_ns:.1}\t{hwm_kib}\t{mid_sim_ns}\t{}\t{runs}",
        cpu_ns / runs,
        mid_cpu_ns / runs,
    );
}

/// One cell's measurements.
#[derive(Clone, Copy, Default)]
struct Line {
    tasks: u64,
    events: u64,
    cpu_ns: u64,
    sim_ns: u64,
    heap_ns: f64,
    hwm_kib: u64,
    /// Simulated and CPU time at the first progress call past half the duration (0 if none).
    mid_sim_ns: u64,
    mid_cpu_ns: u64,
    /// Runs of the cell measured (their mean is given).
    runs: u64,
}

fn measure(i: usize) -> Line {
    let exe = std::env::current_exe().expect("this binary");
    let out = Command::new(exe)
        .args(["--cell", &i.to_string()])
        .output()
        .expect("run a cell");
    assert!(
        out.status.success(),
        "cell {i}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    let f: Vec<&str> = s.trim().split('\t').collect();
    let n = |k: usize| f[k].parse::<u64>().expect("a number");
    Line {
        tasks: n(0),
        events: n(1),
        cpu_ns: n(2),
        sim_ns: n(3),
        heap_ns: f[4].parse().expect("a number"),
        hwm_kib: n(5),
        mid_sim_ns: n(6),
        mid_cpu_ns: n(7),
        runs: n(8),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(pos) = args.iter().position(|a| a == "--cell") {
        let i: usize = args[pos + 1].parse().expect("--cell N");
        run_cell(i);
        return;
    }
    // `cargo bench` passes `--bench` and the filters: run only when no filter is given or one
    // names this bench.
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    if !filters.is_empty() && !filters.iter().any(|f| "scale".contains(f.as_str())) {
        return;
    }
    let cells = cells();
    println!(
        "{:>5} {:>20} {:>6} {:>10} {:>12} {:>11} {:>9} {:>9} {:>6} {:>9} {:>9} {:>4}",
        "CPUs",
        "load",
        "tasks",
        "events",
        "events/CPU-s",
        "CPU-s/sim-s",
        "2nd half",
        "ns/event",
        "x heap",
        "peak MiB",
        "KiB/task",
        "runs"
    );
    let mut base_hwm = 0u64;
    let mut base_tasks = 0u64;
    for (i, cell) in cells.iter().enumerate() {
        let l = measure(i);
        let per_event = l.cpu_ns as f64 / l.events.max(1) as f64;
        let per_task = if cell.load_label == "10 tasks" {
            base_hwm = l.hwm_kib;
            base_tasks = l.tasks;
            "-".to_owned()
        } else if cell.load_label.ends_with(" tasks") && l.tasks > base_tasks {
            format!(
                "{:.2}",
                l.hwm_kib.saturating_sub(base_hwm) as f64 / (l.tasks - base_tasks) as f64
            )
        } else {
            "-".to_owned()
        };
        let second_half = if l.mid_sim_ns > 0 && l.sim_ns > l.mid_sim_ns {
            format!(
                "{:.3}",
                (l.cpu_ns - l.mid_cpu_ns) as f64 / (l.sim_ns - l.mid_sim_ns) as f64
            )
        } else {
            "-".to_owned()
        };
        println!(
            "{:>5} {:>20} {:>6} {:>10} {:>12.0} {:>11.3} {:>9} {:>9.0} {:>6.1} {:>9.1} {:>9} {:>4}",
            cell.machine_label,
            cell.load_label,
            l.tasks,
            l.events,
            l.events as f64 * 1e9 / l.cpu_ns.max(1) as f64,
            l.cpu_ns as f64 / l.sim_ns.max(1) as f64,
            second_half,
            per_event,
            per_event / l.heap_ns.max(0.1),
            l.hwm_kib as f64 / 1024.0,
            per_task,
            l.runs
        );
    }
}
