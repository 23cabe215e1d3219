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
            // Delayed dequeues happened below group entities, so runnable_sum was compared
            // with the allowance for the kernel's delayed-dequeue walks (check.rs); without
            // it the check fails on x86-4c-smt2 (a root cfs_rq 31 units below its entities
            // at 2.3 ms on CPU 3).
            let counts = &r.checks.as_ref().expect("checks on").engine;
            assert!(
                counts.pelt_runnable_stale > 0,
                "{machine} seed {seed}: no delayed-dequeue walk below a group entity"
            );
        }
    }
}

/// Runs `workloads` on `machine` for `ms`, checks on, with `sched_autogroup_enabled` as given
/// and the autogroup nices `nices` (session, nice).
fn run_sessions(
    machine: &str,
    workloads: &[&str],
    autogroup: bool,
    nices: &[(u32, i32)],
    ms: u64,
) -> RunResult {
    let mut cfg = config(machine, workloads, ms, 1);
    cfg.tunables
        .set("sched_autogroup_enabled", if autogroup { "1" } else { "0" })
        .expect("a registered sysctl");
    cfg.autogroups = nices.to_vec();
    run_kernel(cfg)
}

#[test]
fn two_autogroup_sessions_split_two_cpus_half_and_half() {
    // Sessions 1 (one busy task) and 2 (eight), autogroup on (the default): each session's
    // tasks run in its autogroup, tg->shares 1024 each. On the CPU where session 1's task
    // runs its group entity weighs 1024 (all of its group's load is there), so the balancer
    // sees that CPU's root load at 1024 + 1024 * k/8 with k of session 2's tasks beside it,
    // and the other CPU's at 1024 * (8 - k)/8: it balances at k = 0, one CPU per session.
    let r = run_sessions(
        "2",
        &["busy:threads=1,session=1", "busy:threads=8,session=2"],
        true,
        &[],
        10_000,
    );
    let (a, b) = (runtime(&r, 0..1), runtime(&r, 1..9));
    let share_a = a as f64 / (a + b) as f64;
    eprintln!(
        "session 1: {a} ns, session 2: {b} ns: session 1's share {share_a:.4}; migrations {}",
        r.migrations
    );
    assert!(
        (share_a - 0.5).abs() < 0.05,
        "session 1's share {share_a:.4}"
    );
    assert!(a + b > 2 * 9_900_000_000, "busy {} ns", a + b);
    // Reports name the autogroups as /proc/PID/autogroup does; the tasks' cgroup is the root.
    assert!(
        r.tasks[..1]
            .iter()
            .all(|t| t.autogroup.as_deref() == Some("/autogroup-1"))
    );
    assert!(
        r.tasks[1..]
            .iter()
            .all(|t| t.autogroup.as_deref() == Some("/autogroup-2"))
    );
    assert!(r.tasks.iter().all(|t| t.cgroup.is_none()));
    let groups: Vec<(&str, usize, u64)> = r
        .task_groups
        .iter()
        .map(|g| (g.cgroup.as_str(), g.tasks, g.runtime_ns))
        .collect();
    assert_eq!(groups, vec![("/autogroup-1", 1, a), ("/autogroup-2", 8, b)]);
}

#[test]
fn with_autogroup_off_nine_tasks_share_two_cpus_equally() {
    // The same sessions with `sched_autogroup_enabled=0`: every task is in the root group
    // (no task group at all), so the nine share the machine as nine tasks: 2/9 of a CPU each,
    // session 1's one task a ninth of the machine.
    let r = run_sessions(
        "2",
        &["busy:threads=1,session=1", "busy:threads=8,session=2"],
        false,
        &[],
        10_000,
    );
    let total: u64 = runtime(&r, 0..9);
    let shares: Vec<f64> = r
        .tasks
        .iter()
        .map(|t| t.runtime_ns as f64 / total as f64)
        .collect();
    eprintln!("shares {shares:.4?}; migrations {}", r.migrations);
    for (i, s) in shares.iter().enumerate() {
        assert!((s - 1.0 / 9.0).abs() < 0.02, "task {i}'s share {s:.4}");
    }
    assert!(total > 2 * 9_900_000_000, "busy {total} ns");
    assert!(r.task_groups.is_empty());
    assert!(
        r.tasks
            .iter()
            .all(|t| t.autogroup.is_none() && t.cgroup.is_none())
    );
}

#[test]
fn an_autogroups_nice_sets_its_shares_and_a_cgroup_keeps_its_tasks_out_of_it() {
    // One CPU: session 1 at nice 0 (1024) against session 2 at nice 5 (335): 1024/1359 of the
    // CPU. Session 3's task is in cgroup /c, so task_wants_autogroup() keeps it out of its
    // autogroup (its group is /c, weight 100 = 1024): the three groups split 1024:335:1024.
    let r = run_sessions(
        "1",
        &[
            "busy:threads=1,session=1",
            "busy:threads=2,session=2",
            "busy:threads=1,session=3,cgroup=/c",
        ],
        true,
        &[(2, 5), (1, 0)],
        4_000,
    );
    let (a, b, c) = (runtime(&r, 0..1), runtime(&r, 1..3), runtime(&r, 3..4));
    let total = (a + b + c) as f64;
    let (sa, sb, sc) = (a as f64 / total, b as f64 / total, c as f64 / total);
    eprintln!("shares {sa:.4} {sb:.4} {sc:.4}");
    let w = 1024.0 + 335.0 + 1024.0;
    assert!((sa - 1024.0 / w).abs() < 0.02, "{sa:.4}");
    assert!((sb - 335.0 / w).abs() < 0.02, "{sb:.4}");
    assert!((sc - 1024.0 / w).abs() < 0.02, "{sc:.4}");
    assert_eq!(r.tasks[3].cgroup.as_deref(), Some("/c"));
    assert_eq!(r.tasks[3].autogroup, None);
    let names: Vec<&str> = r.task_groups.iter().map(|g| g.cgroup.as_str()).collect();
    assert_eq!(names, ["/autogroup-1", "/autogroup-2", "/c"]);
}

/// `--check`'s PELT sums over every group cfs_rq from t=0: each group's first fork on a CPU
/// once left its root cfs_rq's util_sum 512 units above its entities' (the group entity's
/// first enqueue attached what the fork had already propagated into it), which the check
/// catches at the first fork. online_fair_sched_group() at set-up attaches the group
/// entities beforehand.
#[test]
fn grouped_runs_keep_their_pelt_sums_from_the_first_fork() {
    for (machine, seed) in [("x86-4c-smt2", 1), ("hikey", 2)] {
        let mut cfg = config(
            machine,
            &[
                "busy:threads=3,cgroup=/a",
                "periodic:threads=4,run=1ms,period=3ms,cgroup=/b/c",
                "busy:threads=2",
            ],
            10,
            seed,
        );
        cfg.cgroups = vec![("/a".into(), 100), ("/b".into(), 300)];
        let r = run_kernel(cfg);
        let counts = &r.checks.expect("checks on").engine;
        assert!(
            counts.pelt_sums_checked > 0,
            "{machine}: no PELT sum checked"
        );
    }
}

/// A thread forked by rt-app's `fork` from a template without a `taskgroup` starts in its
/// parent's group (cgroup_fork() gives the child the parent's css_set, then
/// sched_cgroup_fork() its task group): the children of a parent in /a run in /a, those of
/// a parent in /b in /b; a template that names a group starts there.
#[test]
fn a_forked_thread_starts_in_its_parents_group() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/rtapp/fork-inherits-group.json"
    );
    let mut cfg = config("1", &[&format!("rtapp:{path}")], 300, 1);
    cfg.cgroups = vec![("/a".into(), 100), ("/b".into(), 100)];
    let r = run_kernel(cfg);
    let groups: Vec<(&str, Option<&str>)> = r
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.cgroup.as_deref()))
        .collect();
    let children: Vec<_> = groups
        .iter()
        .filter(|(n, _)| n.starts_with("child"))
        .collect();
    assert_eq!(children.len(), 3, "{groups:?}");
    let of_parent = children.iter().filter(|(_, g)| *g == Some("/a")).count();
    let of_spawner = children.iter().filter(|(_, g)| *g == Some("/b")).count();
    assert_eq!((of_parent, of_spawner), (2, 1), "{groups:?}");
    let share = |g: &str| r.task_groups.iter().find(|x| x.cgroup == g).unwrap();
    // A template naming /b, forked from /a, starts in /b.
    let named: Vec<_> = groups
        .iter()
        .filter(|(n, _)| n.starts_with("named"))
        .collect();
    assert_eq!(named.len(), 1, "{groups:?}");
    assert_eq!(named[0].1, Some("/b"));
    // /a: parent, its two children and p2; /b: spawner, its child, other and named.
    assert_eq!(
        (share("/a").tasks, share("/b").tasks),
        (4, 4),
        "{:?}",
        r.task_groups
    );
    assert!(
        r.task_groups
            .iter()
            .all(|x| x.cgroup != "/" || x.runtime_ns < 1_000_000)
    );
}

/// rt-app's phase-level `taskgroup` (tests/data/rtapp/taskgroup-phases.json): on 2 CPUs two
/// busy threads in /a (weight 100), two in /b (weight 300), and a mover that runs 20 ms of
/// wall time in /a, then 20 ms in /b, forever, moving itself at each phase
/// (sched_move_task() of the running task). The groups still split the machine 25/75, the
/// mover's CPU time counting in the group it ran in: in /a it shares /a's half CPU with two
/// others (about a sixth of a CPU), in /b /b's one and a half CPUs (about half a CPU).
#[test]
fn a_thread_moving_between_groups_at_each_phase_is_charged_to_each_group() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/rtapp/taskgroup-phases.json"
    );
    let mut cfg = config("2", &[&format!("rtapp:{path}")], 2_000, 1);
    cfg.cgroups = vec![("/a".into(), 100), ("/b".into(), 300)];
    let r = run_kernel(cfg);
    let counts = &r.checks.expect("checks on").engine;
    assert!(
        counts.tg_moves_running >= 60,
        "{} moves",
        counts.tg_moves_running
    );
    let mover = r
        .tasks
        .iter()
        .find(|t| t.name.starts_with("mover"))
        .unwrap();
    // Created in the root cgroup, it moves to /a at once, then alternates every 20 ms.
    let st = &mover.task_group_stints;
    assert_eq!(st[0].cgroup, "/");
    assert!(st[0].runtime_ns < 10_000, "{:?}", st[0]);
    for (i, s) in st[1..].iter().enumerate() {
        assert_eq!(s.cgroup, if i % 2 == 0 { "/a" } else { "/b" });
    }
    assert_eq!(
        st.iter().map(|s| s.runtime_ns).sum::<u64>(),
        mover.runtime_ns
    );
    let in_group = |g: &str| -> u64 {
        st.iter()
            .filter(|s| s.cgroup == g)
            .map(|s| s.runtime_ns)
            .sum()
    };
    let (ma, mb) = (in_group("/a"), in_group("/b"));
    eprintln!("mover: {ma} ns in /a, {mb} ns in /b");
    assert!((140_000_000..200_000_000).contains(&ma), "mover in /a {ma}");
    assert!((400_000_000..520_000_000).contains(&mb), "mover in /b {mb}");
    // Each group's runtime is its busy threads' plus the mover's time there.
    let busy = |g: &str| -> u64 {
        r.tasks
            .iter()
            .filter(|t| t.cgroup.as_deref() == Some(g) && t.task_group_stints.is_empty())
            .map(|t| t.runtime_ns)
            .sum()
    };
    let share = |g: &str| r.task_groups.iter().find(|x| x.cgroup == g).unwrap();
    assert_eq!(share("/a").runtime_ns, busy("/a") + ma);
    assert_eq!(share("/b").runtime_ns, busy("/b") + mb);
    assert_eq!((share("/a").tasks, share("/b").tasks), (3, 3));
    eprintln!(
        "shares: /a {:.4}, /b {:.4}",
        share("/a").share,
        share("/b").share
    );
    assert!((share("/a").share - 0.25).abs() < 0.01);
    assert!((share("/b").share - 0.75).abs() < 0.01);
    // The trace shows each move as cgroup_attach_task, with the group the task runs in.
    let mut cfg = config("2", &[&format!("rtapp:{path}")], 100, 1);
    cfg.cgroups = vec![("/a".into(), 100), ("/b".into(), 300)];
    let balancer = lbsim_balance::kernel::KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz);
    let trace = lbsim_sim::engine::Sim::new(cfg, balancer)
        .expect("setup")
        .with_trace()
        .run()
        .expect("run")
        .trace
        .expect("a trace");
    let moves: Vec<String> = trace
        .records
        .iter()
        .filter(|r| r.event.name() == "cgroup_attach_task")
        .map(|r| trace.line_text(r))
        .collect();
    assert_eq!(moves.len(), 5, "{moves:?}");
    assert!(
        moves[0].ends_with(
            "cgroup_attach_task: dst_root=0 dst_id=2 dst_level=1 dst_path=/a pid=7 \
             comm=mover-4 dst_group=/a"
        ),
        "{}",
        moves[0]
    );
    assert!(moves[1].contains(" dst_path=/b "), "{}", moves[1]);
}

/// A thread moving between two groups on one CPU beside a root task (the background
/// kworker): each move propagates a removal through one group entity and an addition
/// through the other into the root cfs_rq, and the kernel's floor `max_t(u32, load_sum,
/// load_avg * PELT_MIN_DIVIDER)` in update_tg_cfs_load() (fair.c v6.12) lifts the root's
/// load_sum above its entities' (141 average units over a bound of 77 at 6 ms with seed 2
/// before `--check` allowed the floor's recorded raises). The checks hold, and the floors
/// raised sums.
#[test]
fn a_thread_moving_between_two_groups_beside_a_root_task_keeps_the_root_pelt_sums() {
    let path = std::env::temp_dir().join(format!(
        "lbsim-tgmove-two-groups-{}.json",
        std::process::id()
    ));
    std::fs::write(
        &path,
        r#"{"tasks": {"mover": {"loop": -1, "phases": {
            "p0": {"run": 2000, "sleep": 1000, "taskgroup": "/g0"},
            "p1": {"run": 2000, "sleep": 1000, "taskgroup": "/g1"}}}}}"#,
    )
    .unwrap();
    for seed in [1, 2] {
        let mut cfg = config("1", &[&format!("rtapp:{}", path.display())], 200, seed);
        cfg.engine.background_wakeups_hz = 300;
        cfg.cgroups = vec![("/g0".into(), 300), ("/g1".into(), 1000)];
        let r = run_kernel(cfg);
        let counts = &r.checks.expect("checks on").engine;
        assert!(counts.tg_moves_running >= 20, "seed {seed}: {counts:?}");
        assert!(counts.pelt_floor_raises > 0, "seed {seed}: {counts:?}");
    }
    std::fs::remove_file(&path).unwrap();
}
