use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use lbsim_balance::cost::CostModel;
use lbsim_balance::kernel::KernelBalancer;
use lbsim_rq::Tunables;
use lbsim_topology::{SdParams, Topology, parse_machine};
use lbsim_workload::parse_workloads;

use super::*;
use crate::engine::EngineTunables;

fn config(machine: &str, workloads: &[&str], duration_ns: u64) -> SimConfig {
    let machine = parse_machine(machine).unwrap();
    let nr = machine.nr_cpus() as u32;
    SimConfig {
        topology: Arc::new(Topology::build(&machine, &SdParams::default()).unwrap()),
        workload: parse_workloads(workloads).unwrap(),
        features: crate::params::default_features(),
        tunables: Tunables::new(nr),
        cost: CostModel::default(),
        engine: EngineTunables::default(),
        machine: Default::default(),
        kernel: None,
        duration_ns,
        seed: 0,
        check: false,
        cgroups: Vec::new(),
        autogroups: Vec::new(),
    }
}

fn kernel(cfg: &SimConfig) -> Box<dyn Balancer> {
    Box::new(KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz))
}

fn ctl(jobs: usize) -> Control<'static> {
    Control {
        jobs,
        ..Control::default()
    }
}

#[test]
fn run_jobs_keeps_job_order_for_any_thread_count() {
    let jobs: Vec<u64> = (0..50).collect();
    for j in [1, 2, 3, 8, 100] {
        let out = run_jobs(&jobs, &ctl(j), |&x| x * x);
        let want: Vec<Option<u64>> = jobs.iter().map(|&x| Some(x * x)).collect();
        assert_eq!(out, want, "jobs = {j}");
    }
    assert!(run_jobs(&[] as &[u64], &ctl(4), |&x| x).is_empty());
}

#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    // Three always-running tasks on two CPUs under the kernel balancer: migrations and
    // background noise make every seed's run different, so equal outputs mean equal runs.
    let cfg = config("2", &["busy:threads=3"], 200_000_000);
    let seeds: Vec<u64> = (1..=6).collect();
    let one = run_seeds(&cfg, &seeds, &kernel, &ctl(1)).unwrap();
    let three = run_seeds(&cfg, &seeds, &kernel, &ctl(3)).unwrap();
    assert_eq!(one, three);
    let one: Vec<RunOutput> = one.into_iter().map(Option::unwrap).collect();
    assert_eq!(one.iter().map(|r| r.seed).collect::<Vec<_>>(), seeds);
    // Sometimes: the seeds do give different runs.
    let mut hashes: Vec<u64> = one.iter().map(|r| r.event_hash).collect();
    hashes.sort_unstable();
    hashes.dedup();
    assert!(hashes.len() > 1, "every seed gave the same run");
}

#[test]
fn ab_sides_run_the_same_seeds() {
    let cfg = config("2", &["busy:threads=3"], 100_000_000);
    let seeds = [11, 12, 13, 14];
    // Identical sides: each pair must be the same run.
    let same = run_ab(&cfg, &cfg, &seeds, &kernel, &ctl(3)).unwrap();
    assert!(!same.interrupted());
    assert_eq!(same.base, same.patched);
    assert_eq!(
        same.base.iter().map(|r| r.seed).collect::<Vec<_>>(),
        seeds.to_vec()
    );
    // Different sides: same seeds, different runs, and J does not matter.
    let mut patched = cfg.clone();
    patched
        .features
        .set(lbsim_balance::params::LbFeat::WaIdle, false);
    patched.tunables.set("migration_cost_ns", "0").unwrap();
    let a = run_ab(&cfg, &patched, &seeds, &kernel, &ctl(1)).unwrap();
    let b = run_ab(&cfg, &patched, &seeds, &kernel, &ctl(4)).unwrap();
    assert_eq!(a, b);
    for (x, y) in a.base.iter().zip(&a.patched) {
        assert_eq!(x.seed, y.seed);
    }
    assert_eq!(a.base, same.base, "the base side is the base configuration");
}

#[test]
fn metrics_of_a_run() {
    let cfg = config("2", &["sysbench-cpu:threads=2,requests=50"], 1_000_000_000);
    let r = run_one(&cfg, 1, &kernel).unwrap();
    let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
    // One workload: its report's own metrics unprefixed, without the four common ones
    // (equal to the sched totals), then the sched metrics.
    assert_eq!(names[0], "total_time");
    assert!(names.contains(&"latency_max"));
    assert!(!names.contains(&"cpu_migrations"));
    let tail: Vec<&str> = SCHED_METRICS.iter().map(|m| m.0).collect();
    assert_eq!(names[names.len() - tail.len()..], tail[..]);
    // 50 requests of 1.3 ms on two CPUs take at least 32.5 ms.
    assert!(r.metric("total_time").unwrap() >= 0.0325);

    // Two workloads: names carry the workload kind.
    let cfg = config("4", &["pingpong:cpus=0,1", "hogs:cpus=2-3"], 50_000_000);
    let r = run_one(&cfg, 1, &kernel).unwrap();
    assert!(r.metric("pingpong.wakeup_latency_p50").is_some());
    assert!(r.metric("hogs.cpu_migrations").is_some());
    assert_eq!(
        r.metric("sched.migrations"),
        Some(0.0),
        "everything is pinned"
    );
    let cfg = config("2", &["busy:threads=1", "busy:threads=2"], 20_000_000);
    let r = run_one(&cfg, 1, &kernel).unwrap();
    assert!(r.metric("busy#0.context_switches").is_some());
    assert!(r.metric("busy#1.context_switches").is_some());
}

#[test]
fn stop_flag_leaves_complete_pairs_only() {
    let cfg = config("2", &["busy:threads=3"], 20_000_000);
    let stop = AtomicBool::new(false);
    let finished = AtomicUsize::new(0);
    // Stop after the third job: base s1, patched s1, base s2 finished; s2 is incomplete.
    let progress = |done: usize, _total: usize| {
        finished.store(done, Ordering::SeqCst);
        if done == 3 {
            stop.store(true, Ordering::SeqCst);
        }
    };
    let c = Control {
        jobs: 1,
        stop: Some(&stop),
        progress: Some(&progress),
    };
    let r = run_ab(&cfg, &cfg, &[1, 2, 3], &kernel, &c).unwrap();
    assert_eq!(finished.load(Ordering::SeqCst), 3);
    assert!(r.interrupted());
    assert_eq!(r.base.len(), 1);
    assert_eq!(r.patched.len(), 1);
    assert_eq!(r.base[0].seed, 1);
}

#[test]
fn errors_name_the_side_and_seed() {
    // The workload names CPU 3 of a 2-CPU machine.
    let mut bad = config("4", &["hogs:cpus=3"], 10_000_000);
    let good = config("2", &["busy:threads=1"], 10_000_000);
    bad.topology = good.topology.clone();
    bad.tunables = good.tunables.clone();
    let e = run_ab(&good, &bad, &[5], &kernel, &ctl(2)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "patched: seed 5: the workload uses CPU 3 but the machine has CPUs 0-1"
    );
}

#[test]
fn comparison_summaries() {
    let run = |seed, vals: [f64; 2]| RunOutput {
        seed,
        metrics: vec![
            Metric::new("t", "s", vals[0], false),
            Metric::new("r", "ratio", vals[1], true),
        ],
        events: 0,
        event_hash: 0,
        cut_short: Vec::new(),
    };
    let base = [run(1, [1.0, 0.5]), run(2, [2.0, 0.5]), run(3, [3.0, 0.5])];
    let patched = [
        run(1, [11.0, 0.5]),
        run(2, [12.0, 0.5]),
        run(3, [13.0, 0.5]),
    ];
    let c = compare(&base, &patched);
    assert_eq!(c.runs, 3);
    assert_eq!(c.seeds, vec![1, 2, 3]);
    let t = &c.metrics[0];
    assert_eq!(t.name, "t");
    assert_eq!((t.base.mean, t.base.stddev), (2.0, 1.0));
    assert_eq!(t.patched.values, vec![11.0, 12.0, 13.0]);
    assert_eq!(t.change_pct, 500.0);
    assert!(t.significant);
    assert_eq!(t.improved(), Some(false), "time went up");
    let r = &c.metrics[1];
    assert_eq!(r.p_value, Some(1.0));
    assert!(!r.significant);
    assert_eq!(r.improved(), None);
    assert_eq!(r.base.min(), Some(0.5));
}
