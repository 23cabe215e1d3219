//! Report snapshots on synthetic observations, and the formatting helpers.

use expect_test::{Expect, expect};

use super::*;
use crate::ids::{ProbeTag, TaskRef};
use crate::obs::{ProbeRecord, TaskObservation};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// Observations with zeroed counters for every task of `spec`.
fn blank(spec: &WorkloadSpec) -> RunObservations {
    RunObservations {
        sim_time_ns: 0,
        tasks: spec
            .tasks
            .iter()
            .map(|t| TaskObservation::new(t, 0))
            .collect(),
        probes: Default::default(),
        wakeups: Default::default(),
    }
}

fn probe(obs: &mut RunObservations, task: u32, time_ns: u64, tag: ProbeTag, value: u64) {
    obs.probes.push(ProbeRecord {
        task: TaskRef(task),
        time_ns,
        tag,
        value,
    });
}

fn check(spec: &WorkloadSpec, obs: &RunObservations, text: Expect, metrics: Expect) {
    let r = &spec.reports(obs)[0];
    text.assert_eq(&r.text);
    let m: Vec<String> = r
        .metrics
        .iter()
        .map(|m| {
            format!(
                "{} = {} {} ({})",
                m.name,
                m.value,
                m.unit,
                if m.higher_is_better {
                    "higher is better"
                } else {
                    "lower is better"
                }
            )
        })
        .collect();
    metrics.assert_eq(&m.join("\n"));
}

fn sysbench_obs(arg: &str) -> (WorkloadSpec, RunObservations) {
    let spec = crate::parse_workload(arg).unwrap();
    let mut obs = blank(&spec);
    // Task 0 is the main thread, which forked the two workers (tasks 1 and 2) and left.
    obs.tasks[0].exited_ns = Some(30_000);
    for _ in 0..2 {
        obs.tasks.push(TaskObservation::new(&spec.templates[0], 0));
    }
    // Worker 1 did three requests, worker 2 five; latencies in ns.
    let lat0 = [1_350_000, 1_340_000, 21_190_000];
    let lat1 = [1_330_000, 1_360_000, 1_340_000, 1_350_000, 1_320_000];
    let mut t = 0;
    for (task, lats) in [(1u32, &lat0[..]), (2, &lat1[..])] {
        for &l in lats {
            t += l;
            probe(&mut obs, task, t, ProbeTag::Request, l);
        }
    }
    obs.tasks[1].exited_ns = Some(24_100_000);
    obs.tasks[2].exited_ns = Some(17_200_000);
    obs.tasks[1].work_ns = 24 * MS;
    obs.tasks[2].work_ns = 6 * MS;
    obs.tasks[1].nr_migrations = 3;
    obs.tasks[2].nr_involuntary_switches = 7;
    obs.sim_time_ns = 24_100_000;
    (spec, obs)
}

#[test]
fn sysbench_0_4() {
    let (spec, obs) = sysbench_obs("sysbench-cpu:threads=2,requests=8,format=0.4");
    check(
        &spec,
        &obs,
        expect![[r#"
            sysbench 0.4.12:  multi-threaded system evaluation benchmark

            Running the test with following options:
            Number of threads: 2

            Doing CPU performance benchmark

            Threads started!
            Done.

            Maximum prime number checked in CPU test: 10000


            Test execution summary:
                total time:                          0.0241s
                total number of events:              8
                total time taken by event execution: 0.0306
                per-request statistics:
                     min:                                  1.32ms
                     avg:                                  3.82ms
                     max:                                 21.19ms
                     approx.  95 percentile:              21.19ms

            Threads fairness:
                events (avg/stddev):           4.0000/1.00
                execution time (avg/stddev):   0.0153/0.01

        "#]],
        expect![[r#"
            total_time = 0.0241 s (lower is better)
            events = 8 count (higher is better)
            events_per_second = 331.9502074688797 events/s (higher is better)
            latency_min = 1.32 ms (lower is better)
            latency_avg = 3.8225 ms (lower is better)
            latency_max = 21.19 ms (lower is better)
            latency_p95 = 21.19 ms (lower is better)
            events_per_thread_stddev = 1 count (lower is better)
            cpu_migrations = 3 count (lower is better)
            context_switches = 7 count (lower is better)
            work_min_max_ratio = 0.25 ratio (higher is better)
            work_jain_index = 0.7352941176470589 ratio (higher is better)"#]],
    );
}

#[test]
fn sysbench_1_0_with_time_limit() {
    let (spec, obs) = sysbench_obs("sysbench-cpu:threads=2,time=10,format=1.0");
    check(
        &spec,
        &obs,
        expect![[r#"
        sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

        Running the test with following options:
        Number of threads: 2
        Initializing random number generator from current time


        Prime numbers limit: 10000

        Initializing worker threads...

        Threads started!

        CPU speed:
            events per second:   331.95

        General statistics:
            total time:                          0.0241s
            total number of events:              8

        Latency (ms):
                 min:                                    1.32
                 avg:                                    3.82
                 max:                                   21.19
                 95th percentile:                       21.19
                 sum:                                   30.58

        Threads fairness:
            events (avg/stddev):           4.0000/1.00
            execution time (avg/stddev):   0.0153/0.01

    "#]],
        expect![[r#"
        total_time = 0.0241 s (lower is better)
        events = 8 count (higher is better)
        events_per_second = 331.9502074688797 events/s (higher is better)
        latency_min = 1.32 ms (lower is better)
        latency_avg = 3.8225 ms (lower is better)
        latency_max = 21.19 ms (lower is better)
        latency_p95 = 21.19 ms (lower is better)
        events_per_thread_stddev = 1 count (lower is better)
        cpu_migrations = 3 count (lower is better)
        context_switches = 7 count (lower is better)
        work_min_max_ratio = 0.25 ratio (higher is better)
        work_jain_index = 0.7352941176470589 ratio (higher is better)"#]],
    );
}

#[test]
fn sysbench_0_4_time_limit_message() {
    let (spec, obs) = sysbench_obs("sysbench-cpu:threads=2,time=20ms,format=0.4");
    let r = &spec.reports(&obs)[0];
    assert!(r.text.contains("Threads started!\nTime limit exceeded, exiting...\n(last message repeated 1 times)\nDone.\n"));
}

fn hackbench_obs(arg: &str) -> (WorkloadSpec, RunObservations) {
    let spec = crate::parse_workload(arg).unwrap();
    let mut obs = blank(&spec);
    for i in 0..spec.tasks.len() as u32 {
        probe(&mut obs, i, 2 * MS + u64::from(i) * US, ProbeTag::Start, 0);
        obs.tasks[i as usize].exited_ns = Some(181 * MS + u64::from(i) * 100 * US);
    }
    (spec, obs)
}

#[test]
fn hackbench_rt_tests_and_perf() {
    let (spec, obs) = hackbench_obs("hackbench:groups=2,fds=3");
    check(
        &spec,
        &obs,
        expect![[r#"
        Running in process mode with 2 groups using 6 file descriptors each (== 12 tasks)
        Each sender will pass 100 messages of 100 bytes
        Time: 0.180
    "#]],
        expect![[r#"
        time = 0.1801 s (lower is better)
        completed = 1 bool (higher is better)
        cpu_migrations = 0 count (lower is better)
        context_switches = 0 count (lower is better)
        work_min_max_ratio = 1 ratio (higher is better)
        work_jain_index = 1 ratio (higher is better)"#]],
    );
    let (spec, mut obs) = hackbench_obs("hackbench:groups=2,fds=3,mode=thread,format=perf");
    obs.tasks[4].exited_ns = None;
    obs.sim_time_ns = 500 * MS;
    check(
        &spec,
        &obs,
        expect![[r#"
        # Running 'sched/messaging' benchmark:
        # 3 sender and receiver threads per group
        # 2 groups == 12 threads run

             Total time: 0.498 [sec]
        # lbsim: the run ended before every hackbench task exited
    "#]],
        expect![[r#"
        time = 0.498 s (lower is better)
        completed = 0 bool (higher is better)
        cpu_migrations = 0 count (lower is better)
        context_switches = 0 count (lower is better)
        work_min_max_ratio = 1 ratio (higher is better)
        work_jain_index = 1 ratio (higher is better)"#]],
    );
}

#[test]
fn schbench_blocks() {
    let spec = crate::parse_workload("schbench:m=1,t=2,runtime=3,auto=1").unwrap();
    let mut obs = blank(&spec);
    // Tasks: main() 0, the message thread 1, workers 2 and 3.
    // Wake-up latencies 1..=200 us and two outliers, spread over the workers.
    let mut t = 0;
    for i in 0..200u64 {
        t += 10 * MS;
        probe(
            &mut obs,
            2 + (i % 2) as u32,
            t,
            ProbeTag::Wakeup,
            (i + 1) * US + 500,
        );
    }
    probe(&mut obs, 2, t + MS, ProbeTag::Wakeup, 9_000 * US);
    probe(&mut obs, 3, t + MS, ProbeTag::Wakeup, 12_345 * US);
    probe(&mut obs, 3, t + MS, ProbeTag::Wakeup, 300);
    for i in 0..150u64 {
        probe(
            &mut obs,
            2,
            i * 19 * MS,
            ProbeTag::Request,
            30 * MS + i * US,
        );
    }
    // main() waited too, which is neither a message thread's nor a worker's delay.
    obs.tasks[0].wait_ns = 900 * MS;
    obs.tasks[0].nr_voluntary_switches = 1;
    obs.tasks[1].wait_ns = 5 * MS;
    obs.tasks[1].nr_voluntary_switches = 100;
    obs.tasks[2].wait_ns = 40 * MS;
    obs.tasks[2].nr_voluntary_switches = 100;
    obs.tasks[3].wait_ns = 80 * MS;
    obs.tasks[3].nr_voluntary_switches = 100;
    // The workers' last spins end just past the 3 s asked for.
    obs.sim_time_ns = 3_030 * MS;
    check(
        &spec,
        &obs,
        expect![[r#"
        cputime 30000 threads 2 p99 200
        Wakeup Latencies percentiles (usec) runtime 3 (s) (202 total samples)
        	  50.0th: 101        (60 samples)
        	  90.0th: 182        (81 samples)
        	* 99.0th: 200        (18 samples)
        	  99.9th: 12336      (2 samples)
        	  min=1, max=12345
        Request Latencies percentiles (usec) runtime 3 (s) (150 total samples)
        	  50.0th: 30048      (0 samples)
        	  90.0th: 30112      (64 samples)
        	* 99.0th: 30176      (6 samples)
        	  99.9th: 30176      (0 samples)
        	  min=30000, max=30149
        RPS percentiles (requests) runtime 3 (s) (3 total samples)
        	  20.0th: 44         (1 samples)
        	* 50.0th: 53         (2 samples)
        	  90.0th: 53         (0 samples)
        	  min=44, max=53
        average rps: 50.00
        sched delay: message 50 (usec) worker 600 (usec)
    "#]],
        expect![[r#"
            wakeup_latency_p50 = 101 us (lower is better)
            wakeup_latency_p90 = 182 us (lower is better)
            wakeup_latency_p99 = 200 us (lower is better)
            wakeup_latency_p999 = 12336 us (lower is better)
            wakeup_latency_max = 12345 us (lower is better)
            wakeup_samples = 202 count (higher is better)
            request_latency_p50 = 30048 us (lower is better)
            request_latency_p99 = 30176 us (lower is better)
            rps_p50 = 53 requests/s (higher is better)
            average_rps = 50 requests/s (higher is better)
            sched_delay_message = 50 us (lower is better)
            sched_delay_worker = 600 us (lower is better)
            cpu_migrations = 0 count (lower is better)
            context_switches = 301 count (lower is better)
            work_min_max_ratio = 1 ratio (higher is better)
            work_jain_index = 1 ratio (higher is better)"#]],
    );
    let reports = spec.reports(&obs);
    assert_eq!(spec.rounds(), Some("schbench -a"));
    let next = spec
        .next_round(&reports)
        .expect("p99 below the limit")
        .unwrap();
    let p = next.parts[0]
        .report
        .params::<crate::generators::schbench::Schbench>()
        .unwrap();
    assert_eq!(p.t, 3);
    assert_eq!(
        next.parts[0].label,
        "schbench:m=1,t=3,cputime=30000us,sleeptime=30000us,runtime=3s,auto=1"
    );
    assert_eq!(next.tasks.len(), 5);
}

#[test]
fn tbench_lines() {
    let spec = crate::parse_workload("tbench:clients=2,runtime=3,warmup=2").unwrap();
    let mut obs = blank(&spec);
    // Client 0 (task 0) completes 1000 ops a second. Client 1 (task 2) completes 500, but
    // nothing in second 5: its first operation after 5 s ends at 5.9 s and reports the
    // empty interval (as the interpreter's tally does), then 50 more before 6 s.
    for tick in 1..=6u64 {
        let at = tick * 1_000 * MS + 10 * US;
        probe(&mut obs, 0, at, ProbeTag::TallyCount, 1000);
        probe(
            &mut obs,
            0,
            at,
            ProbeTag::TallyMaxLatency,
            (100 + tick) * US,
        );
        let (at1, n) = match tick {
            5 => (5_900 * MS, 0),
            6 => (at + 20 * US, 50),
            _ => (at + 20 * US, 500),
        };
        probe(&mut obs, 2, at1, ProbeTag::TallyCount, n);
        probe(
            &mut obs,
            2,
            at1,
            ProbeTag::TallyMaxLatency,
            if n > 0 { 300 * US } else { 0 },
        );
    }
    obs.sim_time_ns = 7_000 * MS;
    check(
        &spec,
        &obs,
        expect![[r#"
        dbench version 4.00 - Copyright Andrew Tridgell 1999-2004

        Running for 3 seconds with load 'client.txt' and minimum warmup 2 secs
        Waiting for child processes to finish setup.
        Releasing clients
           2       750     6.14 MB/sec  warmup   1 sec  latency 0.300 ms
           2      1500     6.14 MB/sec  execute   2 sec  latency 0.300 ms
           2      3000     6.14 MB/sec  execute   1 sec  latency 0.300 ms
           2      3500     5.12 MB/sec  execute   2 sec  latency 1000.000 ms
           2      4025     4.85 MB/sec  execute   3 sec  latency 0.300 ms

        Throughput 4.84693 MB/sec  2 clients  2 procs  max_latency=1000.000 ms
    "#]],
        expect![[r#"
        throughput = 4.846933333333333 MB/s (higher is better)
        max_latency = 1000 ms (lower is better)
        cpu_migrations = 0 count (lower is better)
        context_switches = 0 count (lower is better)
        work_min_max_ratio = 1 ratio (higher is better)
        work_jain_index = 1 ratio (higher is better)"#]],
    );
}

#[test]
fn ebizzy_per_thread() {
    let spec = crate::parse_workload("ebizzy:threads=3,runtime=10").unwrap();
    let mut obs = blank(&spec);
    for (t, n) in [(0u32, 100_000u64), (1, 96_000), (2, 104_321)] {
        probe(&mut obs, t, 10_000 * MS, ProbeTag::TallyCount, n);
        probe(&mut obs, t, 10_000 * MS, ProbeTag::TallyMaxLatency, 0);
        obs.tasks[t as usize].runtime_ns = 9_600 * MS;
    }
    obs.sim_time_ns = 10_000 * MS;
    check(
        &spec,
        &obs,
        expect![[r#"
            30032 records/s
            real 10.00 s
            user 27.00 s
            sys   1.80 s
            # lbsim: records/s per thread: 10000 9600 10432

             Performance counter stats for 'ebizzy -t 3 -S 10':

                             0      context-switches
                             0      cpu-migrations

                 10.000000000 seconds time elapsed

        "#]],
        expect![[r#"
        records_per_second = 30032 records/s (higher is better)
        thread_records_min_max_ratio = 0.9202365774867955 ratio (higher is better)
        cpu_migrations = 0 count (lower is better)
        context_switches = 0 count (lower is better)
        work_min_max_ratio = 1 ratio (higher is better)
        work_jain_index = 1 ratio (higher is better)"#]],
    );
}

#[test]
fn perf_bench_pipe() {
    let spec = crate::parse_workload("pipe").unwrap();
    let mut obs = blank(&spec);
    obs.tasks[0].exited_ns = Some(4_498_076_123);
    obs.tasks[1].exited_ns = Some(4_498_000_000);
    check(
        &spec,
        &obs,
        expect![[r#"
        # Running 'sched/pipe' benchmark:
        # Executed 1000000 pipe operations between two processes

             Total time: 4.498 [sec]

               4.498076 usecs/op
                 222317 ops/sec
    "#]],
        expect![[r#"
        total_time = 4.498076123 s (lower is better)
        usecs_per_op = 4.498076 us (lower is better)
        ops_per_sec = 222317 ops/s (higher is better)
        cpu_migrations = 0 count (lower is better)
        context_switches = 0 count (lower is better)
        work_min_max_ratio = 1 ratio (higher is better)
        work_jain_index = 1 ratio (higher is better)"#]],
    );
}

/// A run stopped at 1.5 s by `--duration` reports the 1.5 s simulated, never the runtime
/// asked for: `runtime 1 (s)` (whole seconds, as schbench prints its elapsed time), one RPS
/// sample per whole second, the average rps over 1.5 s.
#[test]
fn schbench_cut_short_reports_the_time_simulated() {
    let spec = crate::parse_workload("schbench:m=1,t=2,runtime=30").unwrap();
    let mut obs = blank(&spec);
    // 100 requests a second (one every 10 ms) for the 1.5 s simulated.
    for i in 1..=150u64 {
        probe(&mut obs, 1, i * 10 * MS, ProbeTag::Request, 30 * MS);
        probe(&mut obs, 1, i * 10 * MS, ProbeTag::Wakeup, 50 * US);
    }
    obs.sim_time_ns = 1_500 * MS;
    let r = &spec.reports(&obs)[0];
    assert!(
        r.text.contains("runtime 1 (s) (150 total samples)"),
        "{}",
        r.text
    );
    assert!(!r.text.contains("runtime 30"), "{}", r.text);
    assert!(
        r.text
            .contains("RPS percentiles (requests) runtime 1 (s) (1 total samples)")
    );
    assert!(r.text.contains("average rps: 100.00"), "{}", r.text);
    assert_eq!(r.metric("average_rps").unwrap().value, 100.0);
}

/// tbench stopped at 4.5 s (warmup 2 s, reset at 3 s, 3 s asked for): the lines of the 4
/// whole seconds simulated (the reset tick prints none), not the 6 asked for; stopped in the warmup: a line saying that
/// nothing was measured.
#[test]
fn tbench_cut_short_prints_the_seconds_simulated() {
    let spec = crate::parse_workload("tbench:clients=1,runtime=3,warmup=2").unwrap();
    let mut obs = blank(&spec);
    for tick in 1..=4u64 {
        let at = tick * 1_000 * MS + 10 * US;
        probe(&mut obs, 0, at, ProbeTag::TallyCount, 1000);
        probe(&mut obs, 0, at, ProbeTag::TallyMaxLatency, 100 * US);
    }
    obs.sim_time_ns = 4_500 * MS;
    let text = &spec.reports(&obs)[0].text;
    assert_eq!(text.matches(" sec  latency ").count(), 3, "{text}");
    // Past the reset (tick 3), tick 4 is `execute 1 sec`; the run asked for three more.
    assert!(text.contains("execute   1 sec"), "{text}");
    assert!(!text.contains("execute   3 sec"), "{text}");
    assert!(!text.contains("nothing measured"), "{text}");
    obs.sim_time_ns = 1_500 * MS;
    let text = &spec.reports(&obs)[0].text;
    assert!(!text.contains("execute"), "{text}");
    assert!(
        text.contains("# lbsim: the run stopped before the warmup was over"),
        "{text}"
    );
}

/// ebizzy stopped at 2.5 s of its 10: records/s over the 2.5 s, `real 2.50 s`.
#[test]
fn ebizzy_cut_short_rates_over_the_time_simulated() {
    let spec = crate::parse_workload("ebizzy:threads=2,runtime=10").unwrap();
    let mut obs = blank(&spec);
    for (t, n) in [(0u32, 25_000u64), (1, 20_000)] {
        probe(&mut obs, t, 2_500 * MS, ProbeTag::TallyCount, n);
        probe(&mut obs, t, 2_500 * MS, ProbeTag::TallyMaxLatency, 0);
    }
    obs.sim_time_ns = 2_500 * MS;
    let text = &spec.reports(&obs)[0].text;
    assert!(
        text.starts_with("18000 records/s\nreal  2.50 s\n"),
        "{text}"
    );
    assert!(
        text.contains("# lbsim: records/s per thread: 10000 8000\n"),
        "{text}"
    );
}

/// pipe stopped before its loops: the round trips task 0 counted, over the time simulated.
#[test]
fn pipe_cut_short_counts_the_round_trips_done() {
    let spec = crate::parse_workload("pipe:loops=1000").unwrap();
    let mut obs = blank(&spec);
    probe(&mut obs, 0, 2 * MS, ProbeTag::TallyCount, 400);
    obs.sim_time_ns = 2 * MS;
    let r = &spec.reports(&obs)[0];
    assert!(
        r.text.contains("# Executed 400 pipe operations"),
        "{}",
        r.text
    );
    assert!(
        r.text.contains("400 of 1000 round trips done"),
        "{}",
        r.text
    );
    assert_eq!(r.metric("usecs_per_op").unwrap().value, 5.0);
    assert_eq!(r.metric("ops_per_sec").unwrap().value, 200_000.0);
}

#[test]
fn sched_latency_tables() {
    let spec = crate::parse_workload("hogs:cpus=0-1").unwrap();
    let mut obs = blank(&spec);
    obs.tasks[0].runtime_ns = 846_018_956_000;
    obs.tasks[0].work_ns = 846_018_956_000;
    obs.tasks[0].wait_ns = 212_545_245_000;
    obs.tasks[0].nr_involuntary_switches = 779_188;
    obs.tasks[0].max_wait_ns = 58_337_000;
    // 779,188 preemptions, so 779,189 arrivals on a CPU (the first one too).
    obs.tasks[0].nr_waits = 779_189;
    obs.tasks[1].runtime_ns = 1_000 * MS;
    obs.tasks[1].work_ns = 500 * MS;
    obs.tasks[1].nr_voluntary_switches = 10;
    // 11 arrivals, 3 ms of waits between them, and a 2.5 ms wait still going on at the end:
    // 12 waits, 5.5 ms; the last one is the longest.
    obs.tasks[1].wait_ns = 3 * MS;
    obs.tasks[1].max_wait_ns = MS;
    obs.tasks[1].nr_waits = 12;
    obs.tasks[1].final_wait_ns = 2_500 * US;
    for i in 0..10u64 {
        obs.wakeups.push(crate::obs::WakeupSample {
            task: TaskRef(1),
            wake_ns: i * MS,
            latency_ns: (i + 1) * 7 * US,
        });
    }
    check(
        &spec,
        &obs,
        expect![[r#"
             -----------------------------------------------------------------------------------
              Task                  |   Runtime ms  | Switches | Avg delay ms    | Max delay ms    |
             -----------------------------------------------------------------------------------
              hog-0-0:0             | 846018.956 ms |   779188 | avg:   0.273 ms | max:  58.337 ms |
              hog-1-0:1             |   1000.000 ms |       10 | avg:   0.458 ms | max:   2.500 ms |
             -----------------------------------------------------------------------------------
              TOTAL:                | 847018.956 ms |   779198 |
             ---------------------------------------------------
            # lbsim: fairness of the work done: min/max 0.0006, Jain's index 0.5006 over 2 tasks
            # lbsim: wake-up latency p50 35.0 us, p99 70.0 us, max 70.0 us over 10 wake-ups
        "#]],
        expect![[r#"
        cpu_migrations = 0 count (lower is better)
        context_switches = 779198 count (lower is better)
        work_min_max_ratio = 0.0005910033060772223 ratio (higher is better)
        work_jain_index = 0.5005910030996488 ratio (higher is better)"#]],
    );
}

#[test]
fn pingpong_latency() {
    let spec = crate::parse_workload("pingpong:cpus=2,3").unwrap();
    let mut obs = blank(&spec);
    for i in 0..100u64 {
        probe(
            &mut obs,
            (i % 2) as u32,
            i * 10 * US,
            ProbeTag::Wakeup,
            6 * US + i * 100,
        );
    }
    probe(&mut obs, 1, MS, ProbeTag::Wakeup, 120 * US);
    obs.sim_time_ns = 2_000 * MS;
    check(
        &spec,
        &obs,
        expect![[r#"
        pingpong: 2 tasks on CPUs 2 and 3, 101 wake-ups
        Wakeup Latencies percentiles (usec) runtime 2 (s) (101 total samples)
        	  50.0th: 11         (30 samples)
        	  90.0th: 15         (40 samples)
        	* 99.0th: 15         (0 samples)
        	  99.9th: 120        (1 samples)
        	  min=6, max=120
        average wakeup latency: 12.03 usec
    "#]],
        expect![[r#"
        wakeup_latency_avg = 12.02970297029703 us (lower is better)
        wakeup_latency_p50 = 11 us (lower is better)
        wakeup_latency_p99 = 15 us (lower is better)
        wakeups = 101 count (higher is better)
        cpu_migrations = 0 count (lower is better)
        context_switches = 0 count (lower is better)
        work_min_max_ratio = 1 ratio (higher is better)
        work_jain_index = 1 ratio (higher is better)"#]],
    );
}

#[test]
fn printf_g() {
    assert_eq!(fmt_g(27132.9), "27132.9");
    assert_eq!(fmt_g(27189.0), "27189");
    assert_eq!(fmt_g(123456.7), "123457");
    assert_eq!(fmt_g(1234567.0), "1.23457e+06");
    assert_eq!(fmt_g(0.0001234), "0.0001234");
    assert_eq!(fmt_g(0.00001234), "1.234e-05");
    assert_eq!(fmt_g(0.0), "0");
    assert_eq!(fmt_g(-2.5), "-2.5");
}

#[test]
fn plat_histogram_buckets_as_schbench() {
    // Below 512 values are exact; above, a bucket reads back as its middle.
    let mut h = PlatHistogram::default();
    for v in [1, 7, 511, 512, 1000, 10_481] {
        h.add(v);
    }
    let p = h.percentiles(&[10.0, 50.0, 60.0, 70.0, 90.0, 100.0]);
    let vals: Vec<u64> = p.iter().map(|x| x.0).collect();
    assert_eq!(vals, [1, 511, 513, 1001, 10_480, 10_480]);
    // Counts: samples since the previous percentile.
    let counts: Vec<u64> = p.iter().map(|x| x.1).collect();
    assert_eq!(counts, [1, 2, 1, 1, 1, 0]);
    assert_eq!((h.min(), h.max(), h.samples()), (1, 10_481, 6));
    // No samples: every percentile reads 0.
    let e = PlatHistogram::default();
    assert_eq!(e.percentiles(&[50.0, 99.0]), [(0, 0), (0, 0)]);
}

#[test]
fn fairness_index() {
    let f = Fairness::of(&[8, 8, 8, 8]);
    assert_eq!((f.min_max_ratio, f.jain), (1.0, 1.0));
    let f = Fairness::of(&[1, 0, 0, 0]);
    assert_eq!((f.min_max_ratio, f.jain), (0.0, 0.25));
    let f = Fairness::of(&[9, 10]);
    assert_eq!(f.min_max_ratio, 0.9);
    assert!((f.jain - 361.0 / 362.0).abs() < 1e-12);
}
