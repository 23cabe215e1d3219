//! Task groups (cgroup v2 `cpu.weight`) end to end: per-CPU group shares, then the balancer
//! on root-level load, under every invariant check.

use lbsim_sim::engine::RunResult;

use crate::common::{config, run_kernel};

/// Runs `workloads` on 4 CPUs for `ms` with the declared groups, checks on.
fn run_groups(workloads: &[&str], groups: &[(&str, u64)], ms: u64) -> RunResult {
    let mut cfg = config("4", workloads, ms, 1);
    cfg.cgroups = groups.iter().map(|(p, w)| (p.to_string(), *w)).collect();
    run_kernel(cfg)
}

/// The CPU time of the tasks at `range` (spec order: parts in order).
fn runtime(r: &RunResult, range: std::ops::Range<usize>) -> u64 {
    r.tasks[range].iter().map(|t| t.runtime_ns).sum()
}

#[test]
fn weights_100_and_300_split_four_cpus_25_75() {
    // 8 always-running tasks in each group: the balancer spreads them (2 + 2 per CPU), and on
    // each CPU calc_group_shares() gives each group its tg->shares times this CPU's part of
    // the group's load, a quarter: 256 vs 768. Each CPU then splits 25/75, and so does the
    // machine.
    let r = run_groups(
        &["busy:threads=8,cgroup=/A", "busy:threads=8,cgroup=/B"],
        &[("/A", 100), ("/B", 300)],
        10_000,
    );
    let (a, b) = (runtime(&r, 0..8), runtime(&r, 8..16));
    let share_a = a as f64 / (a + b) as f64;
    eprintln!("A {a} ns, B {b} ns: A's share {share_a:.4}");
    assert!((share_a - 0.25).abs() < 0.05, "A's share {share_a:.4}");
    // The machine stays busy.
    assert!(a + b > 4 * 9_900_000_000, "busy {} ns", a + b);
    // The report's per-group shares are the same sums, each task in its own group.
    let groups: Vec<(&str, usize, u64)> = r
        .task_groups
        .iter()
        .map(|g| (g.cgroup.as_str(), g.tasks, g.runtime_ns))
        .collect();
    assert_eq!(groups, vec![("/A", 8, a), ("/B", 8, b)]);
    assert!((r.task_groups[0].share - share_a).abs() < 1e-12);
    assert!(
        r.tasks[..8]
            .iter()
            .all(|t| t.cgroup.as_deref() == Some("/A"))
    );
    assert!(
        r.tasks[8..]
            .iter()
            .all(|t| t.cgroup.as_deref() == Some("/B"))
    );
}

#[test]
fn one_task_against_eight_at_equal_weight_gets_a_whole_cpu() {
    // Weights 100 and 100, A holding one task, B eight. On the CPU where A's task runs, A's
    // group entity weighs A's whole share (all of A's load is there): 1024, as much as all
    // of B's eight tasks together. The balancer sees that CPU's root cfs_rq load at ~1024
    // and B's other CPUs at 1024 * n/8 each, so it moves B's tasks away from A's CPU rather
    // than onto it: A's task ends up with a CPU to itself.
    let r = run_groups(
        &["busy:threads=1,cgroup=/A", "busy:threads=8,cgroup=/B"],
        &[("/A", 100), ("/B", 100)],
        10_000,
    );
    let a = runtime(&r, 0..1);
    let b = runtime(&r, 1..9);
    let cpu_share_a = a as f64 / r.sim_time_ns as f64;
    let machine_share_a = a as f64 / (a + b) as f64;
    eprintln!(
        "A's task ran {a} ns of {} ns: {cpu_share_a:.4} of a CPU, {machine_share_a:.4} of the \
         machine; B's eight {b} ns; migrations {}",
        r.sim_time_ns, r.migrations
    );
    assert!(cpu_share_a > 0.90, "A's task had {cpu_share_a:.4} of a CPU");
    assert!(machine_share_a < 0.27, "{machine_share_a:.4}");
}

#[test]
fn nested_groups_hold_every_invariant_under_mixed_workloads() {
    // Sleeping, waking, forking and migrating tasks in nested groups and in the root group,
    // on machines with several levels of domains, every check on (the hierarchy's counts and
    // weights after every event, the wait bound, affinity).
    for machine in ["x86-4c-smt2", "nodes=2,cores=2,distance=21"] {
        {
            let seed = 1;
            let mut cfg = config(
                machine,
                &[
                    "periodic:threads=5,run=1ms,period=4ms,cgroup=/web/a",
                    "busy:threads=3,cgroup=/web/b",
                    "hackbench:groups=1,fds=4,loops=50,cgroup=/batch",
                    "pipe:loops=300,cgroup=/web/a",
                    "pingpong:cpus=0-1",
                    "hogs:cpus=1-2,cgroup=/batch/hogs",
                ],
                100,
                seed,
            );
            cfg.cgroups = vec![("/web".into(), 200), ("/batch".into(), 50)];
            let r = run_kernel(cfg);
            assert!(
                r.events > 1000,
                "{machine} seed {seed}: {} events",
                r.events
            );
            assert!(r.migrations > 0, "{machine} seed {seed}: no migration");
        }
    }
}
