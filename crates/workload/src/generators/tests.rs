use expect_test::expect;

use super::*;

#[test]
fn names_and_keys_are_unique_and_documented() {
    let mut names: Vec<&str> = WORKLOADS.iter().map(|w| w.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), WORKLOADS.len());
    for w in WORKLOADS {
        assert!(!w.about().is_empty(), "{}", w.name());
        let mut keys: Vec<&str> = w.keys().iter().map(|k| k.name).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), w.keys().len(), "{}", w.name());
        for k in w.keys() {
            assert!(!k.doc.is_empty(), "{}: {}", w.name(), k.name);
        }
    }
}

/// Every example parses, and giving a key its declared default value explicitly changes
/// nothing: the default a key table shows is the one parsing applies.
#[test]
fn examples_parse_and_declared_defaults_are_the_applied_ones() {
    for w in WORKLOADS.iter().filter(|w| !w.reads_file()) {
        let example = w.example();
        let base = parse_workload(example).unwrap_or_else(|e| panic!("{example}: {e}"));
        for k in w.keys() {
            let KeyDefault::Value(v) = k.default else {
                continue;
            };
            if example.contains(&format!("{}=", k.name)) {
                continue;
            }
            let arg = format!("{example},{}={v}", k.name);
            let explicit = parse_workload(&arg).unwrap_or_else(|e| panic!("{arg}: {e}"));
            assert!(
                explicit.parts[0]
                    .report
                    .eq_dyn(base.parts[0].report.as_ref()),
                "{arg}"
            );
            assert_eq!(explicit.tasks, base.tasks, "{arg}");
        }
    }
}

#[test]
fn required_keys_are_reported_missing() {
    for w in WORKLOADS {
        for k in w.keys() {
            if k.default != KeyDefault::Required {
                continue;
            }
            let rest: Vec<&str> = w
                .example()
                .split_once(':')
                .map_or("", |(_, r)| r)
                .split(',')
                .filter(|kv| !kv.starts_with(&format!("{}=", k.name)))
                .collect();
            // A list value (`cpus=0,1`) continues over commas: drop its pieces too.
            let rest: Vec<&str> = rest.into_iter().filter(|kv| kv.contains('=')).collect();
            let arg = format!("{}:{}", w.name(), rest.join(","));
            let e = parse_workload(&arg)
                .err()
                .unwrap_or_else(|| panic!("{arg} parsed"));
            assert!(
                matches!(&e, WorkloadError::MissingKey { key, .. } if key == k.name),
                "{arg}: {e}"
            );
        }
    }
}

#[test]
fn one_run_unless_a_generator_asks_for_rounds() {
    let spec = parse_workload("schbench:m=1,t=2,runtime=1").unwrap();
    assert_eq!(spec.rounds(), None);
    let spec = parse_workload("schbench:m=1,t=2,runtime=1,auto=1").unwrap();
    assert_eq!(spec.rounds(), Some("schbench -a"));
    // Rounds are for a workload of one part.
    let both = parse_workloads(&["schbench:m=1,t=2,runtime=1,auto=1", "busy:threads=1"]).unwrap();
    assert_eq!(both.rounds(), None);
}

#[test]
fn help_lists_every_workload_and_key() {
    expect![[r#"
        rtapp: an rt-app JSON file (rt-app's task, phase and event vocabulary) (e.g. rtapp:FILE.json)
        trace: a recorded scheduler trace replayed (ftrace text, trace-cmd report, Perfetto protobuf) (e.g. trace:FILE.txt,affinity=as-observed)
          affinity     default all: all (any CPU) or as-observed (the CPUs each task ran on)
          from         default the first event: trace time the window starts at (a bare number is s)
          to           default the last event: trace time the window ends at (a bare number is s)
          comm         default every task: comms to keep, |-separated; NAME* a prefix, !NAME excludes
          pid          default every task: pids to keep (a list: 5-8,12)
          switch_cost  default 1200ns: taken off the run after each switch-in: what lbsim charges per switch (cost_context_switch_ns; a bare number is ns)
          wake_cost    default 600ns: taken off the waker's run after each wake-up: what lbsim charges per wake-up (cost_wakeup_ns; a bare number is ns)
          capacity     default the trace's (sched_cpu_capacity, Perfetto CpuInfo), else 1024: the recording CPUs' capacities, by CPU (VALUExCOUNT runs: 462x4,1024x4): each burst's run time is scaled by its CPU's capacity / 1024
          sleeps       default auto: a sleep an interrupt ended: absolute (until the recorded time, a timer), relative (its recorded length) or auto (absolute for tasks whose interrupt wake-ups are periodic)
        sysbench-cpu: sysbench --test=cpu: threads share a request counter; each request is CPU work (e.g. sysbench-cpu:threads=8,requests=1000)
          threads   default 1: worker threads (--num-threads)
          requests  default 10000, or 0 (unlimited) with time: requests in total (--max-requests; 0: unlimited)
          time      default no limit: time limit (--max-time; a bare number is s)
          cost      default 1.3ms: work per request at capacity 1024 (a bare number is ms)
          jitter    default 0: run-length jitter, percent
          format    default 1.0: the sysbench version: 1.0 (1.0.20's output, start barrier) or 0.4 (0.4.12's output, start mutex)
        hackbench: hackbench (rt-tests) and perf bench sched messaging: groups of senders and receivers (e.g. hackbench:groups=2)
          groups    default 10: groups (-g)
          fds       default 20: senders and receivers per group (-f)
          loops     default 100: messages each sender writes to each receiver (-l)
          mode      default process: process or thread (-T)
          ipc       default socket: socket or pipe (-p)
          datasize  default 100: message size in bytes (-s)
          send      default 2us: CPU work of one write at capacity 1024 (a bare number is us)
          recv      default 1.5us: CPU work of one read at capacity 1024 (a bare number is us)
          format    default rt-tests: output layout: rt-tests or perf
        schbench: message threads wake their workers, which spin; wake-up latency recorded (e.g. schbench:m=2,t=16)
          m          default 2: message threads (-m)
          t          default 16: workers per message thread (-t)
          cputime    default 30000us: worker spin per loop (-c; a bare number is us)
          sleeptime  default 30000us: message thread sleep per loop (-s; a bare number is us)
          runtime    default 30s: run length (-r; a bare number is s)
          auto       default 0: auto-bench mode (-a): one more worker per round while p99 < 2000 us
        tbench: dbench's network load: client/server pairs exchanging requests and replies (e.g. tbench:clients=8,runtime=10)
          clients  required: client processes (dbench's NPROCS)
          runtime  default 600s: measured run after the warmup, whole seconds (-t; a bare number is s)
          warmup   default runtime / 5: warmup, whole seconds (--warmup; a bare number is s)
          client   default 4us: client CPU work per operation at capacity 1024 (a bare number is us)
          server   default 6us: server CPU work per operation at capacity 1024 (a bare number is us)
          bytes    default 4096: payload bytes per operation
        ebizzy: threads allocating, copying, searching and freeing a buffer (e.g. ebizzy:threads=8)
          threads  required: threads (-t; ebizzy's default is twice the online CPUs)
          runtime  default 10s: run length in whole seconds (-S; a bare number is s)
          mmap     default 1us: mmap of the copy buffer, under the mmap lock (a bare number is us)
          search   default 90us: copy and search of one record (a bare number is us)
          munmap   default 5us: munmap of the copy buffer, under the mmap lock (a bare number is us)
        pipe: perf bench sched pipe: two tasks ping-pong one integer through two pipes (e.g. pipe:loops=100000)
          loops  default 1000000: round trips (-l)
          mode   default process: process or thread (-T); only the text differs
          read   default 400ns: CPU work of one read at capacity 1024 (a bare number is us)
          write  default 500ns: CPU work of one write at capacity 1024 (a bare number is us)
        hogs: always-running threads pinned, per_cpu on each CPU of a list (e.g. hogs:cpus=0-3)
          cpus     required: the CPUs (a cpulist)
          per_cpu  default 1: threads pinned to each CPU
          nice     default 0: nice value of every thread, -20..=19
        pingpong: two pinned tasks taking turns: each works, wakes the other and sleeps (e.g. pingpong:cpus=0,1)
          cpus   required: the two CPUs, A,B (a cpulist)
          sleep  default 0: sleep of the task holding the turn before it wakes the other (a bare number is us)
          work   default 2us: work of the task holding the turn at capacity 1024 (a bare number is us)
        busy: always-running threads (e.g. busy:threads=4)
          threads  required: threads
          nice     default 0: nice value of every thread, -20..=19
          cpus     default all CPUs: affinity of every thread (a cpulist)
        periodic: threads that run, then sleep until their next period (e.g. periodic:threads=4,run=1ms,period=4ms)
          threads  required: threads
          run      required: work per period at capacity 1024 (a bare number is us)
          period   required: the period (a bare number is us)
          nice     default 0: nice value of every thread, -20..=19
        every workload also takes cgroup=/a/b (its tasks' cgroup v2 task group) and session=N (its tasks' session: with sched_autogroup_enabled, a session N >= 1 in the root cgroup runs in its autogroup /autogroup-N)
    "#]]
    .assert_eq(&workloads_help());
}

/// What a built workload holds: its tasks plus the tasks its programs fork (each `fork` event
/// of a phase run once), and its cpusets.
fn built_size(spec: &WorkloadSpec) -> crate::Size {
    let forks: u64 = spec
        .tasks
        .iter()
        .flat_map(|t| &t.program.phases)
        .filter(|ph| ph.loops == crate::Loops::Count(1))
        .flat_map(|ph| &ph.events)
        .filter(|e| matches!(e, crate::Event::Fork(_)))
        .count() as u64;
    crate::Size {
        tasks: spec.tasks.len() as u64 + forks,
        cpusets: spec.cpusets.len() as u64,
    }
}

/// The size a generator declares ([`Generator::size`], what the run's budget is checked
/// against before building) is what it builds, for every generator.
#[test]
fn declared_sizes_are_the_built_ones() {
    let mut cases: Vec<String> = WORKLOADS
        .iter()
        .filter(|w| !w.reads_file())
        .map(|w| w.example().to_owned())
        .collect();
    cases.extend(
        [
            "busy:threads=7,cpus=0-3",
            "hogs:cpus=0-5,per_cpu=3",
            "hackbench:groups=3,fds=5",
            "schbench:m=2,t=3",
            "sysbench-cpu:threads=6,requests=10",
            "tbench:clients=4",
            "ebizzy:threads=5",
            "periodic:threads=3,run=1ms,period=4ms",
        ]
        .map(str::to_owned),
    );
    let mut seen = std::collections::BTreeSet::new();
    for arg in &cases {
        let (name, rest) = arg.split_once(':').unwrap();
        let (spec, declared) = workload_kind(name)
            .unwrap()
            .load(rest, arg, &Room::default())
            .unwrap_or_else(|e| panic!("{arg}: {e}"));
        assert_eq!(declared, built_size(&spec), "{arg}");
        assert!(declared.tasks > 0, "{arg}");
        seen.insert(name);
    }
    // Every generator was checked (rtapp and trace, the file-based ones, count their own).
    assert_eq!(seen.len(), WORKLOADS.len() - 2, "{seen:?}");
}

/// A workload too big for the run's limits is refused from its parameters, before a task is
/// built: `hogs` on 65536 CPUs x 10000 used to build 655 M tasks, and three workloads of a
/// million tasks each were each accepted alone (issue 18, finding 2).
#[test]
fn limits_are_checked_over_the_whole_run_before_building() {
    let check = |args: &[&str], limits: Limits, expected: Option<&str>| {
        let got = parse_workloads_within(args, limits);
        match expected {
            None => assert!(got.is_ok(), "{args:?}: {:?}", got.err()),
            Some(msg) => {
                let e = got.expect_err("over the limit");
                assert!(e.over_limit().is_some(), "{e}");
                assert_eq!(e.to_string(), msg, "{args:?}");
            }
        }
    };
    let limits = Limits::default();
    check(
        &["hogs:cpus=0-65535,per_cpu=10000"],
        limits,
        Some("the run's workloads make 655360000 tasks, more than the limit of 1000000"),
    );
    check(
        &[
            "busy:threads=1000000",
            "busy:threads=1000000",
            "busy:threads=1000000",
        ],
        Limits {
            max_tasks: 2_500_000,
            ..limits
        },
        Some("the run's workloads make 3000000 tasks, more than the limit of 2500000"),
    );
    check(
        &["busy:threads=900000", "sysbench-cpu:threads=100000"],
        limits,
        Some("the run's workloads make 1000001 tasks, more than the limit of 1000000"),
    );
    check(
        &["busy:threads=3", "hogs:cpus=0-2"],
        Limits {
            max_tasks: 6,
            max_cpusets: 3,
        },
        None,
    );
    check(
        &["busy:threads=3,cpus=0", "hogs:cpus=0-2"],
        Limits {
            max_tasks: 6,
            max_cpusets: 3,
        },
        Some("the run's workloads make 4 cpusets, more than the limit of 3"),
    );
}

/// Rule: `cgroup=` and `session=` are taken off every workload's option, for all its tasks
/// and fork templates; each at most once, `session` a number.
#[test]
fn every_workload_takes_cgroup_and_session() {
    let s = parse_workload("hackbench:groups=1,fds=2,loops=1,session=3,cgroup=/a").unwrap();
    assert!(!s.tasks.is_empty());
    for t in s.tasks.iter().chain(s.templates.iter()) {
        assert_eq!((t.session, t.cgroup.as_deref()), (Some(3), Some("/a")));
    }
    let s = parse_workload("busy:threads=2").unwrap();
    assert!(s.tasks.iter().all(|t| t.session.is_none()));
    for (arg, want) in [
        ("busy:session=x", "session"),
        ("busy:session=-1", "session"),
        ("busy:session=1,session=2", "session"),
    ] {
        let e = parse_workload(arg).unwrap_err().to_string();
        assert!(e.contains(want) && !e.contains('\n'), "{arg}: {e}");
    }
}
