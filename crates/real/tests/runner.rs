//! The real runner executes each supported event on this machine's kernel, and refuses every
//! other one before starting anything.
//!
//! These are behaviour tests on a shared, noisy machine, not timing benchmarks: every bound
//! is wide ("at least", or within 50%). The tests take a lock so that they run one at a time
//! (a spinner of one test would otherwise steal the CPU another test measures); each run
//! lasts at most a few hundred milliseconds.

use std::sync::{Arc, Mutex, MutexGuard};

use lbsim_real::{RealError, RealRun, RunOptions, run};
use lbsim_workload::{
    BarrierId, ChanKind, CondId, Event, Loops, MutexId, Phase, ProbeTag, Program, SemId, TaskRef,
    TaskSpec, WorkloadSpec, parse_workload,
};

const MS: u64 = 1_000_000;

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether CPUs 0 and 1 are this process's to use (the pinned tests need both); a test that
/// cannot run here says so.
fn two_cpus() -> bool {
    let ok = lbsim_real::allowed_cpus().is_ok_and(|c| c.contains(&0) && c.contains(&1));
    if !ok {
        eprintln!("skipped: this test pins tasks to CPUs 0 and 1");
    }
    ok
}

fn task(name: &str, events: Vec<Event>) -> TaskSpec {
    TaskSpec {
        name: name.to_owned(),
        policy: lbsim_workload::Policy::Normal,
        nice: 0,
        affinity: None,
        custom_slice_ns: None,
        start_ns: 0,
        jitter_pct: 0,
        group: "g".to_owned(),
        part: 0,
        spawned: false,
        cgroup: None,
        session: None,
        program: Arc::new(Program {
            phases: vec![Phase::once("main", events)],
            loops: Loops::Count(1),
            local_timers: Vec::new(),
            rtapp_log: false,
            cumulative_slack: false,
        }),
    }
}

fn spec_of(tasks: Vec<TaskSpec>) -> WorkloadSpec {
    let mut s = WorkloadSpec::empty();
    s.tasks = tasks;
    s
}

fn real(spec: &WorkloadSpec, duration_ns: u64) -> RealRun {
    run(
        spec,
        RunOptions {
            duration_ns,
            seed: 1,
        },
    )
    .unwrap_or_else(|e| panic!("real run failed: {e}"))
}

fn exited(r: &RealRun, i: usize) -> u64 {
    r.observations.tasks[i]
        .exited_ns
        .unwrap_or_else(|| panic!("task {i} did not exit: {:?}", r.observations.tasks[i]))
}

#[test]
fn run_spins_for_its_cpu_time() {
    let _g = serial();
    let r = real(
        &spec_of(vec![task("spin", vec![Event::Run { work_ns: 100 * MS }])]),
        2000 * MS,
    );
    let t = &r.observations.tasks[0];
    exited(&r, 0);
    // CLOCK_THREAD_CPUTIME_ID and sum_exec_runtime count the same time.
    assert!(t.runtime_ns >= 90 * MS, "runtime {} ns", t.runtime_ns);
    assert!(t.runtime_ns <= 150 * MS, "runtime {} ns", t.runtime_ns);
}

#[test]
fn runtime_spins_for_wall_time() {
    let _g = serial();
    let r = real(
        &spec_of(vec![task("wall", vec![Event::RunWall { ns: 100 * MS }])]),
        2000 * MS,
    );
    assert!(exited(&r, 0) >= 100 * MS);
    assert!(r.observations.tasks[0].runtime_ns >= 20 * MS);
}

#[test]
fn sleeper_wakes_after_its_sleep() {
    let _g = serial();
    let r = real(
        &spec_of(vec![task("sleeper", vec![Event::Sleep { ns: 100 * MS }])]),
        2000 * MS,
    );
    let t = &r.observations.tasks[0];
    assert!(exited(&r, 0) >= 100 * MS);
    assert!(t.runtime_ns < 50 * MS, "a sleeper ran {} ns", t.runtime_ns);
    assert!(t.nr_voluntary_switches >= 1);
}

#[test]
fn periodic_timer_sleeps_every_period() {
    let _g = serial();
    let spec = parse_workload("periodic:threads=1,run=1ms,period=10ms").unwrap();
    let r = real(&spec, 300 * MS);
    let t = &r.observations.tasks[0];
    // About 30 periods of 1 ms each: at least half of them, and far from spinning all along.
    assert!(t.nr_voluntary_switches >= 15, "{t:?}");
    assert!(t.runtime_ns >= 15 * MS && t.runtime_ns <= 100 * MS, "{t:?}");
}

#[test]
fn pingpong_counts_round_trips() {
    let _g = serial();
    if !two_cpus() {
        return;
    }
    let spec = parse_workload("pingpong:cpus=0,1").unwrap();
    let r = real(&spec, 300 * MS);
    let wakeups = r
        .observations
        .probes
        .iter()
        .filter(|p| p.tag == ProbeTag::Wakeup)
        .count();
    // A round trip takes tens of microseconds: thousands in 300 ms; ask for 100.
    assert!(wakeups >= 100, "{wakeups} wake-ups");
    for (i, cpu) in [0, 1].into_iter().enumerate() {
        assert_eq!(r.observations.tasks[i].last_cpu, Some(cpu));
        assert_eq!(r.observations.tasks[i].nr_migrations, 0);
    }
}

#[test]
fn pipe_round_trips_complete() {
    let _g = serial();
    let spec = parse_workload("pipe:loops=2000").unwrap();
    let r = real(&spec, 5000 * MS);
    exited(&r, 0);
    exited(&r, 1);
    let count: u64 = r
        .observations
        .probes
        .iter()
        .filter(|p| p.tag == ProbeTag::TallyCount)
        .map(|p| p.value)
        .sum();
    assert_eq!(count, 2000);
    assert!(r.observations.tasks[0].nr_voluntary_switches >= 1000);
}

#[test]
fn busy_threads_share_the_cpus_and_stop_at_the_end() {
    let _g = serial();
    let spec = parse_workload("busy:threads=3").unwrap();
    let r = real(&spec, 300 * MS);
    let n_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let total: u64 = r.observations.tasks.iter().map(|t| t.runtime_ns).sum();
    for t in &r.observations.tasks {
        assert!(t.runtime_ns > 0, "{t:?}");
        assert_eq!(t.exited_ns, None);
    }
    assert!(total <= n_cpus * 450 * MS, "{total} ns on {n_cpus} CPUs");
    assert!(total >= 100 * MS, "{total} ns");
}

#[test]
fn pinned_hog_stays_on_its_cpu() {
    let _g = serial();
    if !two_cpus() {
        return;
    }
    let spec = parse_workload("busy:threads=1,cpus=1,nice=5").unwrap();
    let r = real(&spec, 100 * MS);
    let t = &r.observations.tasks[0];
    assert_eq!(t.last_cpu, Some(1));
    assert_eq!(t.nr_migrations, 0);
}

#[test]
fn sysbench_forks_workers_that_claim_every_request() {
    let _g = serial();
    let spec = parse_workload("sysbench-cpu:threads=2,requests=40").unwrap();
    let r = real(&spec, 5000 * MS);
    let requests = r
        .observations
        .probes
        .iter()
        .filter(|p| p.tag == ProbeTag::Request)
        .count();
    assert_eq!(requests, 40);
    // The main thread and its two workers.
    assert_eq!(r.observations.tasks.len(), 3);
    for i in 0..3 {
        exited(&r, i);
    }
}

#[test]
fn mutex_condvar_barrier_semaphore_yield_and_tokens() {
    let _g = serial();
    let (m, c, b, s) = (MutexId(0), CondId(0), BarrierId(0), SemId(0));
    let mut spec = spec_of(vec![
        task(
            "waiter",
            vec![
                Event::Lock(m),
                Event::Wait { cond: c, mutex: m },
                Event::Unlock(m),
                Event::Barrier(b),
                Event::SemWait(s),
                Event::Suspend,
            ],
        ),
        task(
            "waker",
            vec![
                Event::Sleep { ns: 30 * MS },
                Event::Lock(m),
                Event::Signal(c),
                Event::Broadcast(c),
                Event::Unlock(m),
                Event::Barrier(b),
                Event::Yield,
                Event::Sleep { ns: 10 * MS },
                Event::SemPost(s),
                Event::Sleep { ns: 10 * MS },
                Event::Resume(TaskRef(0)),
            ],
        ),
    ]);
    spec.sync.add_mutex("m");
    spec.sync.add_cond("c");
    spec.sync.add_barrier("b", 2);
    spec.sync.add_sem("s", 0);
    let r = real(&spec, 2000 * MS);
    // The waiter got through each object only after the waker's posts.
    assert!(exited(&r, 0) >= 50 * MS, "{:?}", r.observations.tasks[0]);
    exited(&r, 1);
}

#[test]
fn blocked_tasks_are_released_at_the_end() {
    let _g = serial();
    let mut spec = spec_of(vec![
        task("suspended", vec![Event::Suspend]),
        task(
            "reader",
            vec![Event::Recv {
                chan: lbsim_workload::ChanId(0),
            }],
        ),
    ]);
    spec.sync.add_chan("p", ChanKind::Pipe, 16);
    let r = real(&spec, 100 * MS);
    assert_eq!(r.observations.tasks.len(), 2);
}

#[test]
fn rtapp_examples_run_or_are_refused_in_one_line() {
    let _g = serial();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/rt-app");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let spec = parse_workload(&format!("rtapp:{}", path.display())).unwrap();
        match run(
            &spec,
            RunOptions {
                duration_ns: 200 * MS,
                seed: 1,
            },
        ) {
            Ok(r) => assert!(!r.observations.tasks.is_empty()),
            Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
}

fn refused(spec: &WorkloadSpec) -> String {
    match run(
        spec,
        RunOptions {
            duration_ns: 10 * MS,
            seed: 1,
        },
    ) {
        Err(e @ RealError::Unsupported { .. }) => e.to_string(),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn every_unsupported_event_is_refused_by_name() {
    let cases = [
        (
            Event::SleepRandom {
                min_ns: 1,
                spread_ns: 2,
            },
            "sleep_random",
        ),
        (Event::ClearToken, "clear_token"),
        (Event::Spawn(TaskRef(0)), "spawn"),
        (Event::Probe(ProbeTag::Request), "probe"),
        (Event::ExitAfter { abs_ns: 1 }, "exit_after"),
        (Event::ListAdd(lbsim_workload::ListId(0)), "list_add"),
        (Event::WakeList(lbsim_workload::ListId(0)), "wake_list"),
    ];
    for (ev, name) in cases {
        let mut spec = spec_of(vec![task("t-0", vec![ev])]);
        spec.sync.add_list("l");
        let msg = refused(&spec);
        assert_eq!(
            msg,
            format!("the real runner does not support event `{name}` (task `t-0`)")
        );
    }
    // Socket channels (hackbench's): only pipes are real channels.
    let chan = lbsim_workload::ChanId(0);
    let mut spec = spec_of(vec![task("t-0", vec![Event::Send { chan, msgs: 1 }])]);
    spec.sync.add_chan("s", ChanKind::Socket, 16);
    assert_eq!(
        refused(&spec),
        "the real runner does not support event `send on a socket channel` (task `t-0`)"
    );
    // A task in a task group: the runner makes no cgroups.
    assert_eq!(
        refused(&parse_workload("busy:threads=1,cgroup=/a").unwrap()),
        "the real runner does not support event `a task group (cgroup=/a)` (task `busy-0`)"
    );
    // hackbench and schbench: their probes, spawned workers and wake lists.
    let msg = refused(&parse_workload("hackbench:groups=1,fds=2,loops=10").unwrap());
    assert!(
        msg.contains("the real runner does not support event"),
        "{msg}"
    );
    // schbench: spawned workers and wake lists.
    let msg = refused(&parse_workload("schbench:m=1,t=1").unwrap());
    assert!(
        msg.contains("the real runner does not support event"),
        "{msg}"
    );
}

#[test]
fn a_cpu_outside_the_affinity_is_refused() {
    let spec = parse_workload("busy:threads=1,cpus=4095").unwrap();
    match run(
        &spec,
        RunOptions {
            duration_ns: 10 * MS,
            seed: 1,
        },
    ) {
        Err(RealError::NoSuchCpu { cpu: 4095, .. }) => {}
        other => panic!("{other:?}"),
    }
}

/// /proc/schedstat is read before and after a run: where this kernel counts it, the run's
/// delta has every CPU this machine prints and some scheduling counted (schedule() calls, a
/// periodic task sleeping 30 times); where the file is absent or its counters are off, there
/// is no delta and `lacks` says why.
#[test]
fn schedstat_is_read_around_the_run_or_its_absence_said() {
    let _g = serial();
    let spec = parse_workload("periodic:threads=1,run=1ms,period=10ms").unwrap();
    let r = real(&spec, 300 * MS);
    match lbsim_real::schedstat::read().unwrap() {
        lbsim_real::schedstat::Availability::Counting(now) => {
            let d = r.schedstat.expect("a delta where the file counts");
            assert_eq!(d.cpus.len(), now.cpus.len());
            let tot: std::collections::BTreeMap<_, _> = d.totals().into_iter().collect();
            assert!(tot["sched_count"] >= 15, "{tot:?}");
        }
        lbsim_real::schedstat::Availability::Absent => {
            assert!(r.schedstat.is_none());
            assert!(
                r.lacks.iter().any(|l| l.starts_with("no /proc/schedstat")),
                "{:?}",
                r.lacks
            );
        }
        lbsim_real::schedstat::Availability::Off => {
            assert!(r.schedstat.is_none());
            assert!(
                r.lacks.iter().any(|l| l.contains("counters stand still")),
                "{:?}",
                r.lacks
            );
        }
    }
}
