//! The engine driving the kernel balancer end to end.

use crate::common::{config, run_kernel};

#[test]
fn one_busy_thread_per_cpu_keeps_every_cpu_busy_and_no_one_moves() {
    // Fork balancing (sched_balance_find_dst_cpu, SD_BALANCE_FORK) places each new thread in
    // the group with the most idle CPUs, so 8 threads on hikey's 8 CPUs end up one per CPU and
    // periodic balancing finds nothing to do (each group is fully_busy with equal load).
    let r = run_kernel(config("hikey", &["busy:threads=8"], 500, 1));
    let mut cpus: Vec<u32> = r.tasks.iter().map(|t| t.cpu).collect();
    cpus.sort_unstable();
    assert_eq!(cpus, (0..8).collect::<Vec<_>>());
    assert_eq!(r.migrations, 0);
    for c in &r.cpus {
        assert!(
            c.busy_ns > 490_000_000,
            "cpu {} busy {} ns",
            c.cpu,
            c.busy_ns
        );
    }
    assert!(r.fairness.min_max_ratio > 0.99, "{:?}", r.fairness);
}

#[test]
fn the_same_seed_gives_the_same_event_stream() {
    let mk = |seed| {
        config(
            "x86-4c-smt2",
            &[
                "periodic:threads=6,run=3ms,period=7ms",
                "busy:threads=3",
                "pipe:loops=2000",
            ],
            300,
            seed,
        )
    };
    let a = run_kernel(mk(11));
    let b = run_kernel(mk(11));
    assert_eq!(a.event_hash, b.event_hash);
    assert_eq!(a.tasks, b.tasks);
    assert_eq!(a.migrations, b.migrations);
    let c = run_kernel(mk(12));
    assert_ne!(a.event_hash, c.event_hash);
}

#[test]
fn invariants_hold_on_mixed_workloads_across_machines() {
    // `check: true` stops the run at the first broken runqueue invariant, a task running
    // outside its affinity, or a placement or migration outside it.
    for machine in [
        "hikey",
        "hikey960",
        "x86-4c-smt2",
        "nodes=2,cores=4,distance=21",
    ] {
        for seed in 1..=3 {
            let r = run_kernel(config(
                machine,
                &[
                    "periodic:threads=5,run=1ms,period=4ms",
                    "busy:threads=4",
                    "hogs:cpus=1-2",
                    "pipe:loops=500",
                ],
                200,
                seed,
            ));
            assert!(
                r.events > 1000,
                "{machine} seed {seed}: {} events",
                r.events
            );
        }
    }
}

#[test]
fn periodic_balancing_evens_out_a_stacked_fork_burst_then_stops() {
    // Eight threads forked in a burst on a 4-CPU LLC: fork placement
    // (sched_balance_find_dst_group) compares has_spare groups by idle CPUs and then keeps the
    // local group, and new tasks' util starts at half the spare capacity
    // (post_init_entity_util_avg), so a group can keep looking has_spare with two or three
    // tasks. Periodic balancing then moves load (migrate_load) until every CPU runs two
    // tasks; with equal loads find_busiest_group's imbalance_pct test keeps it from moving
    // any more, so a handful of migrations suffices and none follow.
    let r = run_kernel(config("4", &["busy:threads=8"], 1000, 2));
    let mut per_cpu = [0u32; 4];
    for t in &r.tasks {
        per_cpu[t.cpu as usize] += 1;
    }
    assert_eq!(per_cpu, [2, 2, 2, 2], "{per_cpu:?}");
    assert!(r.migrations <= 3, "{} migrations", r.migrations);
    for c in &r.cpus {
        assert!(c.idle_ns < 1_000_000, "cpu {} idle {} ns", c.cpu, c.idle_ns);
    }
}

#[test]
fn a_traced_run_is_the_same_run_and_its_trace_is_consistent() {
    use lbsim_balance::kernel::KernelBalancer;
    use lbsim_balance::trace::LbOutcome;
    use lbsim_sim::engine::Sim;
    use lbsim_sim::trace::{PrevState, TraceEvent};

    let cfg = config(
        "x86-4c-smt2",
        &["hackbench:groups=2,loops=50", "hogs:cpus=0-3,per_cpu=2"],
        100,
        3,
    );
    let plain = run_kernel(cfg.clone());
    let balancer = KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz);
    let traced = Sim::new(cfg, balancer)
        .expect("setup")
        .with_trace()
        .run()
        .expect("run");
    // Recording changes no decision.
    assert_eq!(plain.event_hash, traced.event_hash);
    assert_eq!(plain.tasks, traced.tasks);
    assert!(plain.trace.is_none());
    let trace = traced.trace.expect("a trace");
    assert_eq!(trace.nr_cpus, 8);

    // Per CPU, each sched_switch switches out what the previous one switched in, and the
    // task it switches out is the one current there (common_pid).
    let mut current = [0u32; 8];
    let (mut switches, mut migrations, mut balances_that_moved, mut pelt) = (0, 0, 0, 0);
    let mut last_ns = [0u64; 8];
    let (mut wakings, mut wakeups, mut forks, mut wakeup_news) = (0, 0, 0, 0);
    let mut charges = 0;
    for r in &trace.records {
        match r.event {
            TraceEvent::Switch {
                prev_pid,
                prev_state,
                next_pid,
            } => {
                switches += 1;
                let c = r.cpu as usize;
                assert_eq!(prev_pid, current[c], "cpu {c} at {} ns", r.time_ns);
                assert_eq!(r.common_pid, prev_pid);
                if prev_pid == 0 {
                    assert_eq!(prev_state, PrevState::Runnable);
                }
                assert_ne!(prev_pid, next_pid);
                assert!(r.time_ns >= last_ns[c], "switches in time order per CPU");
                last_ns[c] = r.time_ns;
                current[c] = next_pid;
            }
            TraceEvent::Migrate {
                orig_cpu, dest_cpu, ..
            } => {
                migrations += 1;
                assert_ne!(orig_cpu, dest_cpu);
            }
            TraceEvent::LoadBalance(lb) => {
                if lb.outcome == LbOutcome::Moved {
                    balances_that_moved += 1;
                    assert!(lb.ld_moved > 0 && lb.src_cpu.is_some());
                    assert!(
                        lb.imbalance > 0,
                        "the imbalance as calculated, not what is left"
                    );
                }
            }
            TraceEvent::Waking { target_cpu, .. } => {
                wakings += 1;
                assert!(target_cpu < 8);
            }
            TraceEvent::WakeupNew { target_cpu, .. } => {
                wakeup_news += 1;
                assert!(target_cpu < 8);
            }
            TraceEvent::Wakeup { pid, target_cpu } => {
                wakeups += 1;
                assert!(target_cpu < 8);
                assert!(pid >= 1 && pid as usize <= trace.tasks.len());
            }
            TraceEvent::Fork {
                parent_pid,
                child_pid,
            } => {
                forks += 1;
                assert!(parent_pid < child_pid, "a parent exists before its child");
            }
            TraceEvent::Exit { pid } => assert!(pid as usize <= trace.tasks.len()),
            TraceEvent::CgroupAttach { .. } => panic!("no task of this run changes its group"),
            TraceEvent::PeltCfs { .. } => pelt += 1,
            TraceEvent::Charge { cost_ns, .. } => {
                charges += 1;
                assert!(cost_ns > 0, "a charge of nothing is not traced");
            }
        }
    }
    assert!(switches > 1000, "{switches} switches");
    assert!(
        charges > wakings / 2,
        "{charges} charges, {wakings} wakings"
    );
    // Every task created is forked, then first woken (sched_wakeup_new); every wake-up that
    // wakes (sched_waking) reaches ttwu_do_wakeup() (sched_wakeup), but one still on a wake
    // list when the run ends.
    assert_eq!(forks, wakeup_news);
    assert!(forks >= 40, "{forks} forks");
    assert!(
        wakeups <= wakings && wakeups + 8 >= wakings,
        "{wakeups} of {wakings}"
    );
    // Every set_task_cpu() that counts a migration (wake-up and balancer) is traced.
    assert_eq!(migrations, plain.migrations);
    assert!(balances_that_moved > 0, "some balance moved tasks");
    assert!(
        pelt >= switches,
        "a PELT sample at every switch, and at ticks"
    );
}

#[test]
fn schbench_threads_are_started_by_the_threads_that_start_them() {
    // schbench.c: main() starts each message thread, and each message thread its own
    // workers (pthread_create() in message_thread()), so fork placement runs from the
    // creating thread's CPU at the time it creates.
    use lbsim_balance::kernel::KernelBalancer;
    use lbsim_sim::engine::Sim;
    use lbsim_sim::trace::TraceEvent;

    let cfg = config("x86-4c-smt2", &["schbench:m=2,t=3,runtime=1"], 200, 1);
    let balancer = KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz);
    let r = Sim::new(cfg, balancer)
        .expect("setup")
        .with_trace()
        .run()
        .expect("run");
    let trace = r.trace.expect("a trace");
    let name = |pid: u32| trace.tasks[pid as usize - 1].comm.clone();
    let mut parents = Vec::new();
    let mut first_fork_ns = Vec::new();
    for rec in &trace.records {
        if let TraceEvent::Fork {
            parent_pid,
            child_pid,
        } = rec.event
        {
            let parent = if parent_pid == 0 {
                "swapper".to_owned()
            } else {
                name(parent_pid)
            };
            parents.push((name(child_pid), parent));
            first_fork_ns.push(rec.time_ns);
        }
    }
    let expect = [
        ("schbench", "swapper"),
        ("schbench-msg-0", "schbench"),
        ("schbench-msg-1", "schbench"),
    ];
    for (child, parent) in expect {
        assert!(
            parents.iter().any(|(c, p)| c == child && p == parent),
            "{child} from {parent}: {parents:?}"
        );
    }
    for i in 0..2 {
        for j in 0..3 {
            let child = format!("schbench-worker-{i}-{j}");
            let parent = format!("schbench-msg-{i}");
            assert!(
                parents.iter().any(|(c, p)| *c == child && *p == parent),
                "{child} from {parent}: {parents:?}"
            );
        }
    }
    assert_eq!(parents.len(), 1 + 2 + 6);
    // Each creation costs its creator CPU time: the forks are spread out in time.
    assert!(first_fork_ns.windows(2).any(|w| w[1] > w[0]));
    // Every thread ran: the workers woke, spun and reported.
    assert_eq!(r.tasks.len(), 9);
    assert!(r.tasks.iter().all(|t| t.runtime_ns > 0), "{:?}", r.tasks);
}

#[test]
fn a_delayed_task_keeps_its_place_for_the_tasks_that_name_it() {
    // rt-app: task `late` starts after a delay and suspends; task `early` resumes it by name.
    // The engine creates `late` last, yet `early`'s resume must reach `late`, not itself.
    let dir = std::env::temp_dir().join(format!("lbsim-delay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("delay.json");
    std::fs::write(
        &file,
        r#"{
  "tasks": {
    "late": { "delay": 5000, "loop": 1, "suspend": "late", "run": 2000 },
    "early": { "loop": 1, "run": 10000, "resume": "late", "sleep": 1000 }
  },
  "global": { "duration": 1, "default_policy": "SCHED_OTHER" }
}"#,
    )
    .unwrap();
    let wl = format!("rtapp:{}", file.display());
    let r = run_kernel(config("hikey", &[&wl], 100, 1));
    std::fs::remove_dir_all(&dir).ok();
    let late = r.tasks.iter().find(|t| t.name.starts_with("late")).unwrap();
    // Resumed after early's 10 ms run, late runs its 2 ms.
    assert!(late.runtime_ns >= 2_000_000, "{:?}", r.tasks);
}

#[test]
fn wakeups_within_an_llc_go_through_the_wake_list_from_v6_0_only() {
    // core.c ttwu_queue_cond(): since v6.0 (f3dd3f674555) a wake-up onto an idle CPU of the
    // waker's LLC is queued on that CPU's wake list, and the CPU enqueues it when the IPI
    // arrives (sched_wakeup fires there); before, only wake-ups across LLCs were queued and
    // the waker enqueued the rest itself (sched_wakeup fires on the waker's CPU).
    use lbsim_balance::kernel::KernelBalancer;
    use lbsim_sim::engine::Sim;
    use lbsim_sim::trace::TraceEvent;

    // A pinned pair on two cores of x86-4c-smt2's one LLC, each idle when woken.
    let wakeups_on_target = |kernel: Option<(u32, u32)>| {
        let mut cfg = config("x86-4c-smt2", &["pingpong:cpus=0,2"], 100, 1);
        cfg.kernel = kernel;
        let balancer = KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz);
        let r = Sim::new(cfg, balancer)
            .expect("setup")
            .with_trace()
            .run()
            .expect("run");
        let t = r.trace.expect("a trace");
        let (mut on_target, mut total) = (0, 0);
        for rec in &t.records {
            if let TraceEvent::Wakeup { target_cpu, .. } = rec.event {
                total += 1;
                if rec.cpu == target_cpu {
                    on_target += 1;
                }
            }
        }
        (on_target, total)
    };
    let (v6_12, n) = wakeups_on_target(None);
    assert!(n > 100, "{n} wake-ups");
    assert!(
        v6_12 * 10 > n * 9,
        "v6.12: {v6_12} of {n} enqueued by their CPU"
    );
    let (v5_19, n) = wakeups_on_target(Some((5, 19)));
    assert!(n > 100, "{n} wake-ups");
    assert!(
        v5_19 * 10 < n,
        "v5.19: {v5_19} of {n} enqueued by their CPU"
    );
}

#[test]
fn a_waiting_task_pinned_away_from_the_idle_cpus_is_not_idle_while_overloaded() {
    // Once the start-up is over, every waiting thread here may run only on CPUs that are
    // busy, while the other CPUs of hikey sit idle: the idle-while-overloaded time stops
    // growing after the start-up (the forks and wake-ups of the first millisecond). With
    // `check: true` the per-CPU summary of the waiting tasks' affinities is also compared
    // with a walk over every waiting task at every event.
    for w in ["hogs:cpus=0,per_cpu=2", "busy:threads=3,cpus=0-1"] {
        let short = run_kernel(config("hikey", &[w], 200, 1));
        let long = run_kernel(config("hikey", &[w], 1000, 1));
        assert!(
            short.idle_while_overloaded_ns > 0,
            "{w}: the start-up counts"
        );
        assert_eq!(
            short.idle_while_overloaded_ns, long.idle_while_overloaded_ns,
            "{w}: nothing after the start-up"
        );
    }
}

#[test]
fn a_task_that_moves_itself_off_its_cpu_runs_only_where_its_affinity_allows() {
    // rt-app phases with `cpus` call sched_setaffinity() on the running thread: it leaves the
    // CPU its new mask excludes (in the kernel, affine_move_task() while the caller waits for
    // the stopper). With the invariant checks on, a thread must never run outside its mask
    // once the reschedule that takes it off has run: not when it yielded just before (the
    // __schedule() that takes it off runs a newly idle balance, `curr` still the thread
    // leaving), and not when the sleep that takes it off would be a delayed dequeue
    // (DELAY_DEQUEUE: a thread whose lag is negative stays queued, and the wake-up that
    // follows found it there and requeued it on the excluded CPU).
    let files = [
        // Alone, away and back.
        r#"{"tasks": {"mover": {"loop": 3, "phases": {
            "p0": {"cpus": [0], "run": 1000},
            "p1": {"cpus": [5, 6], "run": 700, "sleep": 100}}}},
          "global": {"duration": 1}}"#,
        // Alone, yielding before it moves.
        r#"{"tasks": {"mover": {"loop": -1, "phases": {
            "p0": {"cpus": [0], "run": 1000, "yield": ""},
            "p1": {"cpus": [5, 6], "run": 700, "sleep": 100}}}},
          "global": {"duration": 1}}"#,
        // Beside forking and yielding threads, so that its lag is sometimes negative when it
        // moves.
        r#"{"tasks": {
            "parent": {"loop": 40, "fork": "child", "run": 200, "sleep": 500},
            "child": {"instance": 0, "loop": 3, "run": 100, "yield": "", "run1": 50},
            "mover": {"loop": -1, "phases": {
                "p0": {"cpus": [0], "run": 1000, "yield": ""},
                "p1": {"cpus": [5, 6], "run": 700, "sleep": 100},
                "p2": {"taskgroup": "/g1", "run": 400},
                "p3": {"taskgroup": "/", "cpus": [1, 2, 3, 4, 5, 6, 7], "run": 300}}}},
          "global": {"duration": 1}}"#,
    ];
    let dir = std::env::temp_dir().join(format!("lbsim-affinity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, json) in files.iter().enumerate() {
        let file = dir.join(format!("mover{i}.json"));
        std::fs::write(&file, json).unwrap();
        let wl = format!("rtapp:{}", file.display());
        // `config()` turns the invariant checks on: a thread outside its mask fails the run.
        let r = run_kernel(config("8", &[&wl], 300, 1));
        let mover = r
            .tasks
            .iter()
            .find(|t| t.name.starts_with("mover"))
            .unwrap();
        assert!(mover.runtime_ns > 0, "file {i}: {mover:?}");
        assert!(
            mover.nr_migrations >= 2,
            "file {i}: the mover moved: {mover:?}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn runs_of_a_pure_loop_covered_by_one_event_give_the_same_run() {
    // ebizzy's threads only compute between the ends of their runs, so the engine arms one
    // segment end for several runs (`pure_runs_ahead`) and accounts those in between when
    // anything looks at the task. The run must be the one an event per run gives: the same
    // placements, switches, latencies, tallies and work, only fewer events. On SMT (a
    // sibling's arrival changes a running task's speed), beside tasks that sleep and wake,
    // on asymmetric CPUs, past ebizzy's exit check (the run that ends the program stays an
    // event), and with ticks aligned across CPUs and runs of round lengths, where runs end
    // at the very instant of a tick (a chain never reaches a tick boundary, so the tick and
    // such a run keep their order).
    let cases: [(&str, &[&str], u64, bool); 5] = [
        ("x86-4c-smt2", &["ebizzy:threads=12,runtime=1"], 200, false),
        (
            "4",
            &[
                "ebizzy:threads=3,search=7us,runtime=1",
                "busy:threads=2",
                "periodic:threads=3,run=1ms,period=3ms",
            ],
            1100,
            false,
        ),
        ("hikey960", &["ebizzy:threads=10,runtime=1"], 150, false),
        (
            "1",
            &["ebizzy:threads=2,runtime=1,search=100us,mmap=0,munmap=0"],
            1100,
            true,
        ),
        (
            "2",
            &["ebizzy:threads=2,runtime=1,search=46960ns,mmap=0,munmap=0"],
            472,
            true,
        ),
    ];
    // Everything a run reports but the event count, the event hash and the checks' tally of
    // events checked.
    let report = |mut r: lbsim_sim::engine::RunResult| {
        let events = r.events;
        r.events = 0;
        r.event_hash = 0;
        r.checks = None;
        (events, format!("{r:?}"))
    };
    for (machine, workloads, ms, aligned) in cases {
        let cfg = |pure_runs_ahead| {
            let mut c = config(machine, workloads, ms, 7);
            c.engine.pure_runs_ahead = pure_runs_ahead;
            if aligned {
                c.engine.tick_jitter_ns = 0;
                c.engine.background_wakeups_hz = 0;
                c.tunables.hz = 1000;
            }
            c
        };
        let (per_run_events, per_run) = report(run_kernel(cfg(1)));
        let (events, ahead) = report(run_kernel(cfg(32)));
        assert_eq!(ahead, per_run, "{machine} {workloads:?}");
        // Sometimes: the runs were covered several to an event.
        assert!(
            events * 3 < per_run_events,
            "{machine} {workloads:?}: {events} events, {per_run_events} with one per run"
        );
    }
}
