//! Engine tests: exact expectations from the scheduling rules, with the trivial policy so
//! that only the engine and the runqueue model are exercised.

use std::sync::Arc;

use lbsim_balance::TrivialBalancer;
use lbsim_balance::cost::CostModel;
use lbsim_rq::Tunables;
use lbsim_topology::{SdParams, Topology, parse_machine};
use lbsim_workload::parse_workloads;

use super::*;

fn config(machine: &str, workloads: &[&str], duration_ms: u64, seed: u64) -> SimConfig {
    let machine = parse_machine(machine).expect("machine");
    let topology = Arc::new(Topology::build(&machine, &SdParams::default()).expect("topology"));
    let nr = topology.nr_cpus() as u32;
    SimConfig {
        topology,
        workload: parse_workloads(workloads).expect("workload"),
        features: crate::params::default_features(),
        tunables: Tunables::new(nr),
        cost: CostModel::default(),
        engine: EngineTunables {
            background_wakeups_hz: 0,
            ..EngineTunables::default()
        },
        machine: MachineModel::default(),
        kernel: None,
        duration_ns: duration_ms * 1_000_000,
        seed,
        check: true,
        cgroups: Vec::new(),
        autogroups: Vec::new(),
    }
}

fn run(cfg: SimConfig) -> RunResult {
    Sim::new(cfg, TrivialBalancer)
        .expect("setup")
        .run()
        .expect("run")
}

#[test]
fn two_busy_tasks_share_one_cpu_equally() {
    // Rule: EEVDF gives equal-weight tasks equal service; over 1 s each gets half, to within
    // a slice (base_slice 0.75 ms x factor 1 on one CPU) plus one tick.
    let r = run(config("1", &["busy:threads=2"], 1000, 1));
    assert_eq!(r.tasks.len(), 2);
    let (a, b) = (r.tasks[0].runtime_ns, r.tasks[1].runtime_ns);
    let total = a + b;
    assert!(total > 990_000_000, "the CPU was busy: {total}");
    let diff = a.abs_diff(b);
    assert!(diff <= 750_000 + 4_000_000, "runtimes {a} vs {b}");
    assert!(r.fairness.min_max_ratio > 0.99, "{:?}", r.fairness);
}

#[test]
fn nice_0_and_nice_5_share_as_their_weights() {
    // Rule: service is proportional to weight: 1024 : 335 (sched_prio_to_weight).
    let r = run(config(
        "1",
        &["busy:threads=1", "busy:threads=1,nice=5"],
        2000,
        1,
    ));
    let (a, b) = (r.tasks[0].runtime_ns as f64, r.tasks[1].runtime_ns as f64);
    let ratio = a / b;
    let want = 1024.0 / 335.0;
    assert!(
        (ratio - want).abs() / want < 0.01,
        "ratio {ratio} want {want}"
    );
}

#[test]
fn pinned_task_never_leaves_its_cpu() {
    let r = run(config("4", &["busy:threads=3,cpus=3"], 200, 1));
    for t in &r.tasks {
        assert_eq!(t.cpu, 3);
        assert_eq!(t.nr_migrations, 0);
    }
    assert_eq!(r.cpus[3].idle_ns, 0, "cpu 3 was busy from the first tick");
}

#[test]
fn same_seed_same_run_and_seeds_differ() {
    let mk = |seed| {
        let mut c = config("4", &["periodic:threads=6,run=3ms,period=10ms"], 300, seed);
        c.engine.background_wakeups_hz = 50;
        c
    };
    let a = run(mk(7));
    let b = run(mk(7));
    assert_eq!(a.event_hash, b.event_hash);
    assert_eq!(a.tasks, b.tasks);
    let c = run(mk(8));
    assert_ne!(
        a.event_hash, c.event_hash,
        "tick phases and noise come from the seed"
    );
}

#[test]
fn wakeup_on_idle_cpu_waits_only_the_modelled_costs() {
    // One periodic task alone on one CPU: each wake-up is a timer on the sleeping CPU, a local
    // ttwu_do_activate on an idle CPU (no IPI: same CPU), then a context switch. The wake-up
    // latency is exactly wake-up cost + context-switch cost (with the per-wake spread of the
    // wake-up cost off; the machine "1" has no idle states).
    let mut cfg = config("1", &["periodic:threads=1,run=1ms,period=10ms"], 100, 3);
    cfg.machine.wakeup_cost_spread_pct = 0;
    let r = run(cfg);
    let costs = CostModel::default();
    let want = costs.wakeup_ns + costs.context_switch_ns;
    assert!(r.wakeup_latency.count >= 9, "{:?}", r.wakeup_latency);
    assert_eq!(r.wakeup_latency.max, want, "{:?}", r.wakeup_latency);
    assert_eq!(r.wakeup_latency.min, want);
    // Rule (wakeup_cost_spread_pct): with the default 20% spread each wake-up's cost is drawn
    // within 0.8-1.2 times cost_wakeup_ns, and the draws differ.
    let r = run(config(
        "1",
        &["periodic:threads=1,run=1ms,period=10ms"],
        100,
        3,
    ));
    let (lo, hi) = (
        costs.wakeup_ns * 8 / 10 + costs.context_switch_ns,
        costs.wakeup_ns * 12 / 10 + costs.context_switch_ns,
    );
    assert!(
        r.wakeup_latency.min >= lo && r.wakeup_latency.max <= hi,
        "{:?}",
        r.wakeup_latency
    );
    assert!(
        r.wakeup_latency.min < r.wakeup_latency.max,
        "{:?}",
        r.wakeup_latency
    );
}

#[test]
fn busy_smt_siblings_each_progress_at_the_tables_share() {
    // Rule (crates/topology/src/smt.rs): with both threads of a core busy, each progresses at
    // total(2) / 2 of a whole core: 1.2 / 2 = 0.6 (614/1024 in fixed point). Alone, a thread
    // has the whole core. The kernel's view is unchanged: both run the whole time.
    let shared = run(config(
        "cores=1,threads=2,smt_throughput=1.2",
        &["hogs:cpus=0-1,per_cpu=1"],
        100,
        1,
    ));
    for t in &shared.tasks {
        assert!(t.runtime_ns > 99_000_000, "{t:?}");
        let ratio = t.work_ns as f64 / t.runtime_ns as f64;
        assert!(
            (ratio - 614.0 / 1024.0).abs() < 0.005,
            "{} did {ratio:.4}",
            t.name
        );
    }
    let alone = run(config(
        "cores=1,threads=2,smt_throughput=1.2",
        &["hogs:cpus=0,per_cpu=1"],
        100,
        1,
    ));
    let t = &alone.tasks[0];
    assert!(t.work_ns as f64 / t.runtime_ns as f64 > 0.995, "{t:?}");
}

#[test]
fn a_loop_of_wakes_makes_the_kth_wakee_runnable_k_wake_costs_later() {
    // Rule (crates/core/src/syscalls.rs): a system call that wakes several tasks issues the
    // wakes one after another, each after the previous one's cost; schbench's message thread
    // stamps one time for its batch, so its k-th worker's measured wake-up latency includes
    // the k - 1 wake costs before its own. With 8 workers on 16 CPUs every worker has a CPU:
    // the latencies of one batch are spread by at least 7 wake costs (600 ns each).
    let r = run(config(
        "16",
        &["schbench:m=1,t=8,cputime=1ms,sleeptime=1ms,runtime=1"],
        50,
        1,
    ));
    let lat: Vec<u64> = r
        .observations
        .probes
        .iter()
        .filter(|p| p.tag == lbsim_workload::ProbeTag::Wakeup)
        .map(|p| p.value)
        .collect();
    assert!(!lat.is_empty());
    let (min, max) = (lat.iter().min().unwrap(), lat.iter().max().unwrap());
    assert!(max - min >= 7 * 600, "latencies {min}..{max} ns");
}

#[test]
fn a_cpu_in_c6_wakes_after_c6s_exit_latency() {
    // Rule (crates/core/src/cpuidle): schbench's one worker sleeps about 30 ms between
    // messages, long enough for menu to put its CPU in Broadwell's C6 (target residency
    // 400 us); the message thread's futex wake reaches it (C6 waits with MWAIT: a store, no
    // IPI) and the worker runs only after C6's exit, 133 us spread by +/- 20%. On the ideal
    // machine the same wake-up costs only the wake-up and the switch.
    let wl = ["schbench:m=1,t=1"];
    let kernel = |cfg: SimConfig| {
        let b = lbsim_balance::kernel::KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz);
        Sim::new(cfg, b).expect("setup").run().expect("run")
    };
    let r = kernel(config("cores=2,idle_states=bdw", &wl, 300, 3));
    let c6 = 133_000u64;
    let (lo, hi) = (c6 * 8 / 10, c6 * 12 / 10 + 5_000);
    assert!(r.wakeup_latency.count >= 9, "{:?}", r.wakeup_latency);
    // (The first wake-up, at start-up, finds the worker's CPU not yet deep.)
    assert!(
        r.wakeup_latency.p50 >= lo && r.wakeup_latency.max <= hi,
        "{:?} not within {lo}..={hi}",
        r.wakeup_latency
    );
    let c6_usage = |r: &RunResult| {
        r.cpus
            .iter()
            .filter_map(|c| c.cpuidle.as_ref())
            .flat_map(|s| &s.states)
            .filter(|s| s.name == "C6")
            .map(|s| s.usage)
            .sum::<u64>()
    };
    assert!(c6_usage(&r) >= 9, "{:?}", r.cpus);
    let mut ideal = config("cores=2,idle_states=bdw", &wl, 300, 3);
    ideal.machine.cpuidle = Governor::Off;
    let r = kernel(ideal);
    assert!(r.wakeup_latency.max < 5_000, "{:?}", r.wakeup_latency);
    assert!(r.cpus.iter().all(|c| c.cpuidle.is_none()));
}

#[test]
fn menu_keeps_the_tick_on_short_idles_and_stops_it_on_long_ones() {
    // Rule (menu.c, idle.c): once menu has learnt 100 us idles (under one tick, 4 ms at
    // HZ=250) it asks to keep the tick, so the tick stops (`idle_sleeps`) on few of the idle
    // periods (`idle_calls` counts the idle-loop passes that stopped or found it stopped).
    // With 19 ms idles the tick stops on every one.
    let short = run(config(
        "cores=1,idle_states=bdw",
        &["periodic:threads=1,run=1ms,period=1100us"],
        200,
        3,
    ));
    let s = short.cpus[0].cpuidle.as_ref().expect("menu ran");
    let entries: u64 = s.states.iter().map(|x| x.usage).sum();
    assert!(entries >= 150, "{s:?}");
    assert!(
        s.idle_sleeps * 10 < entries,
        "the tick is mostly kept: {s:?}"
    );
    let long = run(config(
        "cores=1,idle_states=bdw",
        &["periodic:threads=1,run=1ms,period=20ms"],
        200,
        3,
    ));
    let l = long.cpus[0].cpuidle.as_ref().expect("menu ran");
    assert!(
        l.idle_sleeps >= 9,
        "the tick stops on every long idle: {l:?}"
    );
}

#[test]
fn a_trace_limit_stops_the_run_when_passed_and_only_then() {
    let cfg = config("4", &["busy:threads=6"], 50, 1);
    let full = Sim::new(cfg.clone(), TrivialBalancer)
        .unwrap()
        .with_trace()
        .run()
        .unwrap();
    let n = full.trace.as_ref().unwrap().records.len() as u64;
    assert!(n > 10, "{n} records");
    let at_limit = Sim::new(cfg.clone(), TrivialBalancer)
        .unwrap()
        .with_trace()
        .with_trace_limit(n)
        .run()
        .unwrap();
    assert_eq!(at_limit.event_hash, full.event_hash);
    let over = Sim::new(cfg, TrivialBalancer)
        .unwrap()
        .with_trace()
        .with_trace_limit(n / 2)
        .run()
        .unwrap_err();
    assert!(
        matches!(over, SimError::TraceLimit { limit, time_ns } if limit == n / 2 && time_ns < 50_000_000),
        "{over}"
    );
}

#[test]
fn legacy_balancer_runs_with_every_check_on() {
    // The pre-v5.5 balancer (lbsim_balance::legacy, fair.c v4.6-v5.4) under the engine with
    // every invariant check on (`check: true`): nine always-running threads on hikey's
    // eight CPUs for 2 s, on each legacy profile. No check breaks (a broken invariant is an
    // error from run()), the balancer's decision record saw load_balance() passes, and
    // every thread makes progress: each runs at least a third of its fair share (8/9 of
    // the 2 s), and the machine is busy nearly all the time.
    use lbsim_balance::legacy::{LegacyBalancer, LegacyVersion};
    for version in LegacyVersion::PROFILES {
        let cfg = config("hikey", &["busy:threads=9"], 2000, 1);
        let b = LegacyBalancer::new(&cfg.topology, 0, cfg.tunables.hz, version);
        let r = Sim::new(cfg, b)
            .expect("setup")
            .run()
            .expect("run with checks");
        assert_eq!(r.tasks.len(), 9);
        let fair = 2_000_000_000u64 * 8 / 9;
        for t in &r.tasks {
            assert!(t.runtime_ns > fair / 3, "{version}: {t:?}");
        }
        let total: u64 = r.tasks.iter().map(|t| t.runtime_ns).sum();
        assert!(
            total > 2_000_000_000 * 8 * 95 / 100,
            "{version}: busy {total} ns"
        );
        let balancer = r.checks.as_ref().and_then(|c| c.balancer).expect("record");
        assert!(balancer.lb_passes > 0, "{version}");
        assert!(r.migrations > 0, "{version}");
    }
}

/// `run_with_progress`'s stop rule: a callback that returns `false` ends the run before the
/// event it was shown (so on the first call nothing is handled and the result covers no
/// time); one that always returns `true` gives exactly `run()`'s result.
#[test]
fn a_progress_callback_that_says_stop_ends_the_run_there() {
    let mut cfg = config("4", &["busy:threads=6", "pipe"], 1000, 1);
    cfg.check = false;
    let whole = run(cfg.clone());
    let mut calls = 0u32;
    let all = Sim::new(cfg.clone(), TrivialBalancer)
        .unwrap()
        .run_with_progress(&mut |_, _| {
            calls += 1;
            true
        })
        .unwrap();
    assert_eq!(
        (all.events, all.event_hash),
        (whole.events, whole.event_hash)
    );
    assert!(
        whole.events > 2 * PROGRESS_EVERY,
        "too short a run: {}",
        whole.events
    );
    assert!(u64::from(calls) > whole.events / PROGRESS_EVERY);

    let none = Sim::new(cfg.clone(), TrivialBalancer)
        .unwrap()
        .run_with_progress(&mut |_, _| false)
        .unwrap();
    assert_eq!(none.events, 0);
    assert_eq!(none.sim_time_ns, 0, "the first event is at 0");

    let mut seen = Vec::new();
    let second = Sim::new(cfg, TrivialBalancer)
        .unwrap()
        .run_with_progress(&mut |now, _| {
            seen.push(now);
            seen.len() < 2
        })
        .unwrap();
    assert_eq!(second.events, PROGRESS_EVERY);
    assert_eq!(second.sim_time_ns, seen[1]);
    assert!(second.sim_time_ns < whole.sim_time_ns);
}

/// Rule (lbsim_core::series): sampling every CPU's nr_running and util_avg changes nothing
/// in the run, and takes a sample at every multiple of the period from 0 to the end.
#[test]
fn cpu_series_sample_every_period_and_change_nothing() {
    let cfg = config("4", &["busy:threads=6"], 50, 1);
    let plain = Sim::new(cfg.clone(), TrivialBalancer)
        .unwrap()
        .run()
        .unwrap();
    assert!(plain.cpu_series.is_none());
    let sampled = Sim::new(cfg, TrivialBalancer)
        .unwrap()
        .with_cpu_series(1_000_000)
        .run()
        .unwrap();
    assert_eq!(sampled.event_hash, plain.event_hash);
    assert_eq!(sampled.events, plain.events);
    let s = sampled.cpu_series.as_ref().unwrap();
    assert_eq!(s.period_ns, 1_000_000);
    assert_eq!(s.times_ns.len(), 51, "0, 1 ms, ..., 50 ms");
    assert_eq!(s.times_ns[50], 50_000_000);
    assert_eq!(s.nr_running.len(), 4);
    assert!(s.nr_running.iter().all(|c| c.len() == 51));
    assert!(s.util_avg.iter().all(|c| c.len() == 51));
    // A sample is the state after every event at or before its time: the six always-running
    // threads are all on a runqueue at the end.
    let at_end: u32 = s.nr_running.iter().map(|c| c[50]).sum();
    assert_eq!(at_end, 6);
    // The trivial balancer keeps every task on CPU 0: its util_avg is near the full scale,
    // the other CPUs never run anything.
    assert_eq!(s.nr_running[0][50], 6);
    assert!(s.util_avg[0][50] > 1000, "{}", s.util_avg[0][50]);
    assert!(s.util_avg[1..].iter().flatten().all(|&u| u == 0));
}

/// The event hash's FNV-1a, with its high zero bytes folded into one multiplication, is the
/// byte-by-byte FNV-1a of the value's eight little-endian bytes.
#[test]
fn fnv_is_byte_by_byte_fnv_1a() {
    fn bytewise(mut h: u64, v: u64) -> u64 {
        for b in v.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(FNV_PRIME);
        }
        h
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut h = FNV_OFFSET;
    for i in 0..10_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Every length of the value's significant bytes, zero included.
        let v = if i % 65 == 64 { 0 } else { x >> (i % 65) };
        assert_eq!(super::fnv(h, v), bytewise(h, v), "{v:#x}");
        h = bytewise(h, v);
    }
    assert_eq!(super::fnv(FNV_OFFSET, 0), bytewise(FNV_OFFSET, 0));
    // Every one-byte value (the one-step case), from two starting hashes.
    for v in 0..0x100 {
        for h in [FNV_OFFSET, 0x0123_4567_89ab_cdef] {
            assert_eq!(super::fnv(h, v), bytewise(h, v), "{v:#x}");
        }
    }
}
