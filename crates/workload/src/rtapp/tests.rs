use std::path::PathBuf;

use expect_test::expect;
use proptest::prelude::*;

use super::*;
use crate::ids::{CondId, MutexId, TemplateId, TimerId};
use crate::program::{Event, Loops, Policy, SchedChange};
use crate::tests::{RefExec, Share};

fn parse(text: &str) -> Result<WorkloadSpec, RtappError> {
    parse_str(text, "test.json", "rtapp:test.json")
}

fn events(spec: &WorkloadSpec, task: usize) -> Vec<Event> {
    spec.tasks[task].program.events().cloned().collect()
}

fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rt-app");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

#[test]
fn the_examples_parse_and_run() {
    let files = examples();
    assert_eq!(files.len(), 5, "{files:?}");
    for f in files {
        let spec = load_file(&f, "rtapp").unwrap_or_else(|e| panic!("{e}"));
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let mut ex = RefExec::new(spec, Share::RoundRobin);
        ex.run(2_000_000_000);
        let iterations = ex.probes(ProbeTag::RtappPhaseEnd).count();
        assert!(iterations >= 9, "{name}: {iterations} iterations");
        // Every thread made progress (no deadlock, no starvation on one round-robin CPU).
        for t in &ex.obs.tasks {
            assert!(t.runtime_ns > 0, "{name}: {} never ran", t.name);
        }
    }
}

#[test]
fn example_contents() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rt-app");
    let s = load_file(&dir.join("fairness-9-threads.json"), "x").unwrap();
    assert_eq!(s.tasks.len(), 9);
    assert_eq!(s.tasks[8].name, "always-running-8");
    assert_eq!(s.duration_ns, Some(10_000_000_000));
    let warnings: Vec<String> = s.warnings.iter().map(|w| w.to_string()).collect();
    let dir_s = dir.join("fairness-9-threads.json").display().to_string();
    assert_eq!(
        warnings,
        [format!(
            "{dir_s}:4:3: global.calibration: calibration is ignored: run durations are work at capacity 1024 (the longest on the smallest CPU)"
        )]
    );
    let s = load_file(&dir.join("periodic.json"), "x").unwrap();
    assert_eq!(s.tasks.len(), 5);
    let bursty = &s.tasks[4];
    assert_eq!(
        (bursty.name.as_str(), bursty.nice, bursty.start_ns),
        ("bursty-4", 5, 2_000_000)
    );
    assert_eq!(bursty.program.phases[1].loops, Loops::Count(100));
    assert_eq!(bursty.program.loops, Loops::Forever);
    // Each instance of "light" has its own unique timer; bursty's two are local and the
    // second is absolute.
    assert!(s.sync.timers.is_empty());
    assert_eq!(bursty.program.local_timers.len(), 1);
    assert!(!bursty.program.local_timers[0].relative);
}

#[test]
fn repeated_keys_keep_their_order() {
    let s = parse(
        r#"{"tasks": {"t": {"loop": 1, "run": 1000, "sleep": 2000, "run": 500, "sleep": 10, "run": 7}}}"#,
    )
    .unwrap();
    assert_eq!(
        events(&s, 0),
        [
            Event::Run { work_ns: 1_000_000 },
            Event::Sleep { ns: 2_000_000 },
            Event::Run { work_ns: 500_000 },
            Event::Sleep { ns: 10_000 },
            Event::Run { work_ns: 7_000 },
        ]
    );
}

#[test]
fn numbered_keys_are_matched_by_prefix() {
    let s = parse(
        r#"{"tasks": {"t": {"run0": 1, "runtime1": 2, "sleep2": 3, "timer3": {"ref": "tick", "period": 4}, "lock9": "m", "unlock10": "m", "yield": ""}}}"#,
    )
    .unwrap();
    assert_eq!(
        events(&s, 0),
        [
            Event::Run { work_ns: 1_000 },
            Event::RunWall { ns: 2_000 },
            Event::Sleep { ns: 3_000 },
            Event::Timer {
                timer: TimerId::Shared(0),
                period_ns: 4_000
            },
            Event::Lock(MutexId(0)),
            Event::Unlock(MutexId(0)),
            Event::Yield,
        ]
    );
    assert_eq!(s.sync.timers[0].name, "tick");
}

#[test]
fn suspend_resume_sync_and_barrier_build_rtapp_resources() {
    let s = parse(
        r#"{"tasks": {
            "a": {"instance": 2, "run": 10, "resume": "b", "barrier": "sp", "suspend": ""},
            "b": {"suspend": "b", "sync": {"ref": "c", "mutex": "m"}, "barrier": "sp"}
        }}"#,
    )
    .unwrap();
    let (mb, cb) = (MutexId(0), CondId(0));
    assert_eq!(s.sync.mutexes, ["b", "a", "m"]);
    assert_eq!(s.sync.conds, ["b", "a", "c"]);
    assert_eq!(
        events(&s, 0),
        [
            Event::Run { work_ns: 10_000 },
            Event::Lock(mb),
            Event::Broadcast(cb),
            Event::Unlock(mb),
            Event::Barrier(crate::ids::BarrierId(0)),
            Event::Lock(MutexId(1)),
            Event::Wait {
                cond: CondId(1),
                mutex: MutexId(1)
            },
            Event::Unlock(MutexId(1)),
        ]
    );
    assert_eq!(
        events(&s, 2)[3..],
        [
            Event::Signal(CondId(2)),
            Event::Wait {
                cond: CondId(2),
                mutex: MutexId(2)
            },
            Event::Barrier(crate::ids::BarrierId(0)),
        ]
    );
    // Users: 2 instances of a plus 1 of b.
    assert_eq!(s.sync.barriers[0].users, 3);
    let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a-0", "a-1", "b-2"]);
}

#[test]
fn task_and_phase_properties() {
    let s = parse(
        r#"{"global": {"default_policy": "SCHED_BATCH"},
            "tasks": {"t": {"cpus": [3, 1], "priority": -5, "delay": 100, "loop": 3,
              "phases": {
                "p0": {"run": 1, "cpus": [2]},
                "p1": {"loop": 2, "policy": "SCHED_IDLE", "run": 1},
                "p2": {"priority": 4, "sleep": 1}
              }}}}"#,
    )
    .unwrap();
    let t = &s.tasks[0];
    assert_eq!((t.policy, t.nice, t.start_ns), (Policy::Batch, -5, 100_000));
    assert_eq!(s.cpuset(t.affinity.unwrap()), &[1, 3]);
    let p = &t.program;
    assert_eq!(p.loops, Loops::Count(3));
    assert_eq!(s.cpuset(p.phases[0].cpus.unwrap()), &[2]);
    assert_eq!(p.phases[1].loops, Loops::Count(2));
    assert_eq!(
        p.phases[1].sched,
        Some(SchedChange {
            policy: Some(Policy::Idle),
            nice: None
        })
    );
    assert_eq!(
        p.phases[2].sched,
        Some(SchedChange {
            policy: None,
            nice: Some(4)
        })
    );
    // The task's fork template exists for every definition.
    assert_eq!(s.templates.len(), 1);
}

#[test]
fn without_phases_a_task_loop_is_the_phase_loop() {
    let s = parse(r#"{"tasks": {"a": {"loop": 5, "run": 1}, "b": {"run": 1}}}"#).unwrap();
    assert_eq!(s.tasks[0].program.loops, Loops::Count(1));
    assert_eq!(s.tasks[0].program.phases[0].loops, Loops::Count(5));
    assert_eq!(s.tasks[1].program.loops, Loops::Forever);
    assert_eq!(s.tasks[1].program.phases[0].loops, Loops::Count(1));
}

#[test]
fn forks_create_named_threads_that_run() {
    let s = parse(
        r#"{"tasks": {
            "parent": {"loop": 3, "fork": "child", "run": 100},
            "child": {"instance": 0, "loop": 2, "run": 10}
        }}"#,
    )
    .unwrap();
    assert_eq!(s.tasks.len(), 1);
    assert_eq!(events(&s, 0)[0], Event::Fork(TemplateId(1)));
    let mut ex = RefExec::new(s, Share::RunToBlock);
    ex.run(u64::MAX);
    let names: Vec<&str> = ex.obs.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["parent-0", "child-1-0000", "child-2-0001", "child-3-0002"]
    );
    assert!(ex.all_exited());
    assert_eq!(ex.obs.tasks[2].runtime_ns, 20_000);
}

#[test]
fn mem_iorun_memrun_are_cpu_work_with_warnings() {
    let s = parse(
        r#"{"tasks": {"t": {"loop": 1, "mem": 1000, "iorun": 15, "memrun": {"type": "read", "size": 100, "count": 3}}}}"#,
    )
    .unwrap();
    assert_eq!(
        events(&s, 0),
        [
            Event::Run { work_ns: 100 },
            Event::Run { work_ns: 2 },
            Event::Run { work_ns: 30 },
        ]
    );
    let w: Vec<String> = s.warnings.iter().map(|w| w.to_string()).collect();
    expect![[r#"
        [
            "test.json:1:29: tasks.t.mem: mem of 1000 bytes is simulated as 100 ns of CPU work (10 bytes/ns); memory and I/O are not modelled",
            "test.json:1:42: tasks.t.iorun: iorun of 15 bytes is simulated as 2 ns of CPU work (10 bytes/ns); memory and I/O are not modelled",
            "test.json:1:55: tasks.t.memrun: memrun of 300 bytes is simulated as 30 ns of CPU work (10 bytes/ns); memory and I/O are not modelled",
        ]
    "#]]
    .assert_debug_eq(&w);
}

#[test]
fn comments_are_accepted() {
    let s = parse(
        "{\n  // the tasks\n  \"tasks\": { /* one */ \"t\": {\"run\": 1 /* us */, \"url\\\"//\": 0}}\n}",
    );
    // The comment markers inside the string are kept: the key is reported as unknown.
    let e = s.unwrap_err().to_string();
    assert!(
        e.starts_with("test.json:3:49: tasks.t.url\"//: unknown key"),
        "{e}"
    );
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn errors_name_file_line_column_and_cause() {
    expect![[r#"
        [
            "test.json:3:5: tasks.t.slep: unknown key \"slep\" (events: run, runtime, sleep, timer, lock, unlock, wait, signal, broad, sync, barrier, suspend, resume, yield, fork, mem, iorun, memrun, sem_post, sem_wait; task properties: instance, delay, loop, phases, cpus, policy, priority, dl-runtime, dl-period, dl-deadline, period, deadline, util_min, util_max, taskgroup, nodes_membind, membind_nodes)",
            "test.json:2:15: expected `:`",
            "test.json:1:25: tasks.t.run: expected an integer, found a string",
            "test.json:1:25: tasks.t.run: expected a duration in microseconds >= 0, found -5",
            "test.json:1:28: tasks.t.policy: SCHED_FIFO is not modelled: lbsim simulates the fair class only (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE)",
            "test.json:1:26: tasks.t.fork: fork of unknown task \"nobody\" (tasks: t)",
            "test.json:1:12: tasks.t: no events found (rt-app: \"Task must have events or it's useless\")",
            "test.json:1:1: top level: no \"tasks\" section",
            "test.json:1:12: tasks.t: phase \"phase0\" repeats forever without an event that takes time or blocks (run, runtime, sleep, timer, wait, barrier, suspend, sem_wait); rt-app would spin on system calls",
            "test.json:1:30: tasks.t.priority: priority 30 is not a nice value in -20..=19 (rt-app passes it to setpriority() for SCHED_OTHER)",
            "test.json:1:26: tasks.t.cpus: empty CPU list (sched_setaffinity would fail)",
            "test.json:1:1: top level: no \"tasks\" section",
            "test.json:1:30: tasks.t.cpus: CPU -2 is out of range",
            "test.json:1:27: tasks.t.cpus: CPU -2 is out of range",
        ]
    "#]]
    .assert_debug_eq(&vec![
        err("{\"tasks\": {\n  \"t\": {\n    \"slep\": 10\n  }\n}}"),
        err("{\"tasks\": {\n  \"t\": {\"run\" 10}}}"),
        err(r#"{"tasks": {"t": {"run": "10"}}}"#),
        err(r#"{"tasks": {"t": {"run": -5}}}"#),
        err(r#"{"tasks": {"t": {"policy": "SCHED_FIFO", "run": 1}}}"#),
        err(r#"{"tasks": {"t": {"fork": "nobody"}}}"#),
        err(r#"{"tasks": {"t": {"loop": 3}}}"#),
        err(r#"{"global": {}}"#),
        err(r#"{"tasks": {"t": {"lock": "m", "unlock": "m"}}}"#),
        err(r#"{"tasks": {"t": {"priority": 30, "run": 1}}}"#),
        err(r#"{"tasks": {"t": {"cpus": [], "run": 1}}}"#),
        err("{\"x\":1}{"),
        err(r#"{"tasks": {"t": {"cpus": [1, -2], "run": 1}}}"#),
        err(r#"{"tasks": {"t": {"cpus": [-2], "run": 1}}}"#),
    ]);
}

#[test]
fn the_fairness_example_reports_min_max_work() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rt-app");
    let s = load_file(&dir.join("fairness-9-threads.json"), "rtapp:fairness").unwrap();
    let mut ex = RefExec::new(s, Share::RoundRobin);
    // One round-robin CPU: 9 threads take 100 ms chunks in turn. After 1 s the first has
    // had two chunks and the others one; after 1.8 s all have had two.
    ex.run(1_000_000_000);
    let r = &ex.spec.reports(&ex.obs)[0];
    assert_eq!(r.metric("work_min_max_ratio").unwrap().value, 0.5);
    ex.run(1_800_000_000);
    let r = &ex.spec.reports(&ex.obs)[0];
    assert_eq!(r.metric("work_min_max_ratio").unwrap().value, 1.0);
    assert_eq!(r.metric("work_jain_index").unwrap().value, 1.0);
    assert!(r.text.contains("always-running-0"));
}

proptest! {
    /// Invariant: arbitrary bytes never make the parser panic.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse(&text);
    }

    /// Invariant: mutations of valid rt-app files (characters deleted, inserted, replaced,
    /// numbers negated) are parsed or rejected with an error, never a panic; and any error
    /// carries a position inside the file.
    #[test]
    fn mutated_examples_never_panic(
        which in 0usize..4,
        edits in proptest::collection::vec((0usize..4, any::<u16>(), any::<char>()), 1..6),
    ) {
        let files = examples();
        let mut text: Vec<char> = std::fs::read_to_string(&files[which]).unwrap().chars().collect();
        for (kind, pos, c) in edits {
            if text.is_empty() {
                break;
            }
            let p = pos as usize % text.len();
            match kind {
                0 => { text.remove(p); }
                1 => text.insert(p, c),
                2 => text[p] = c,
                _ => text.insert(p, ['"', '{', '}', '[', ']', ',', ':', '-'][pos as usize % 8]),
            }
        }
        let text: String = text.into_iter().collect();
        if let Err(e) = parse(&text)
            && let Some((line, col)) = e.location()
        {
            prop_assert!(line >= 1 && col >= 1);
            prop_assert!(line <= text.lines().count().max(1) + 1, "{e}");
        }
    }
}

#[test]
fn logs_have_rtapp_columns() {
    let s = parse(
        r#"{"tasks": {"t": {"loop": 2, "run": 1000, "timer": {"ref": "unique", "period": 4000}}}}"#,
    )
    .unwrap();
    let mut ex = RefExec::new(s, Share::RunToBlock);
    ex.run(u64::MAX);
    let r = ex.spec.parts[0]
        .report
        .as_any()
        .downcast_ref::<RtappReport>()
        .unwrap();
    let logs = logs(r, 0, &ex.spec, &ex.obs);
    expect![[r##"
        [
            (
                "rt-app-t-0.log",
                "# Policy : SCHED_OTHER priority : 0\n#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat\n   0     1000     1000     4000               0            4000               0       3000       1000       4000          0\n   0     1000     1000     4000            4000            8000            4000       3000       1000       4000          0\n",
            ),
        ]
    "##]]
    .assert_debug_eq(&logs);
}

/// The "sometimes" side of `mutated_examples_never_panic`: small deterministic mutations of the
/// examples both keep some files valid and break others, so the property test really reaches
/// both outcomes.
#[test]
fn mutations_reach_both_outcomes() {
    let (mut ok, mut bad) = (0, 0);
    for f in examples() {
        let text = std::fs::read_to_string(&f).unwrap();
        for pos in (0..text.len()).step_by(37) {
            if !text.is_char_boundary(pos) {
                continue;
            }
            for ins in [" ", "-", "\"", "9"] {
                let mut t = text.clone();
                t.insert_str(pos, ins);
                match parse(&t) {
                    Ok(_) => ok += 1,
                    Err(_) => bad += 1,
                }
            }
        }
    }
    assert!(ok > 50 && bad > 50, "ok {ok}, bad {bad}");
}

/// Five tasks of a million instances each were accepted one by one and exhausted memory when
/// instantiated (issue 18, finding 2): the instances are summed and checked against the run's
/// limits before any is made.
#[test]
fn instances_are_checked_against_the_limits_before_they_are_made() {
    let tasks: Vec<String> = (0..5)
        .map(|i| format!(r#""t{i}": {{ "instance": 1000000, "run": 1000 }}"#))
        .collect();
    let text = format!(r#"{{ "tasks": {{ {} }} }}"#, tasks.join(", "));
    let e = parse(&text).expect_err("5 M tasks");
    assert_eq!(
        e.to_string(),
        "test.json: the run's workloads make 5000000 tasks, more than the limit of 1000000"
    );
    let room = Room::new(crate::Limits {
        max_tasks: 5_000_000,
        ..crate::Limits::default()
    });
    // Within a raised limit, the same description parses (one task, to keep the test quick).
    let one = r#"{ "tasks": { "t": { "instance": 3, "run": 1000 } } }"#;
    let spec = parse::parse(one, "one.json", "x", &room).unwrap();
    assert_eq!(spec.tasks.len(), 3);
    let tight = Room {
        used: crate::Size::tasks(4_999_998),
        ..room
    };
    assert!(parse::parse(one, "one.json", "x", &tight).is_err());
}

#[cfg(unix)]
#[test]
fn an_endless_file_is_refused_with_its_name_once() {
    let e = load_file(Path::new("/dev/zero"), "rtapp:/dev/zero").expect_err("endless");
    assert_eq!(
        e.to_string(),
        "/dev/zero: the file is larger than lbsim's 16777216-byte limit for input files"
    );
    assert!(std::error::Error::source(&e).is_none());
    let e = load_file(Path::new("no/such.json"), "rtapp").expect_err("missing");
    assert_eq!(
        e.to_string(),
        "no/such.json: No such file or directory (os error 2)"
    );
    assert!(std::error::Error::source(&e).is_none());
}

/// json-c's default tokener accepts trailing commas, comments, single quotes, literals in
/// any case and leading zeros; the file reads as its strict spelling does, and every line
/// and column stays the file's.
#[test]
fn json_c_leniency_reads_as_the_strict_spelling() {
    let lenient = "{\n  // a comment\n  'tasks': {\n    \"t\": {\n      \"instance\": 02,\n      \"loop\": 3,\n      \"run\": 1000, /* inline */\n      \"sleep\": 2000,\n      \"cpus\": [0, 1,],\n    },\n  },\n  \"global\": {\"duration\": 2, \"cumulative_slack\": FALSE,},\n}\n";
    let strict = r#"{"tasks": {"t": {"instance": 2, "loop": 3, "run": 1000, "sleep": 2000, "cpus": [0, 1]}}, "global": {"duration": 2, "cumulative_slack": false}}"#;
    let a = parse(lenient).unwrap_or_else(|e| panic!("{e}"));
    let b = parse(strict).unwrap();
    assert_eq!(a.tasks, b.tasks);
    assert_eq!(a.duration_ns, Some(2_000_000_000));
    // Positions are the file's: an error after the rewritten forms points at the right place.
    let bad = "{'tasks': {\"t\": {\"run\": 1,},},\n \"global\": {\"duration\": \"x\",}}";
    assert_eq!(
        err(bad),
        "test.json:2:25: global.duration: expected an integer, found a string"
    );
}

/// Text after the top-level object is left unread by json-c: a warning, not an error.
#[test]
fn text_after_the_top_level_object_is_a_warning() {
    let s = parse("{\"tasks\": {\"t\": {\"run\": 1}}}\n\n}junk").unwrap();
    let w: Vec<String> = s.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        w,
        [
            "test.json:3:1: top level: text after the top-level object ignored (json-c leaves it unread)"
        ]
    );
}

/// A phase name given twice: as json-c stores the object, the later definition replaces the
/// earlier in its place (rt-app runs three phases here, the second being the later
/// "heavy"), with a warning naming both lines.
#[test]
fn a_repeated_phase_name_is_read_as_rt_app_reads_it() {
    let text = "{\"tasks\": {\"t\": {\"loop\": 1, \"phases\": {\n  \"light\": {\"run\": 100},\n  \"heavy\": {\"run\": 7000},\n  \"light2\": {\"run\": 300},\n  \"heavy\": {\"run\": 9000, \"loop\": 2}\n}}}}";
    let s = parse(text).unwrap();
    let phases = &s.tasks[0].program.phases;
    let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["light", "heavy", "light2"]);
    assert_eq!(phases[1].events, [Event::Run { work_ns: 9_000_000 }]);
    assert_eq!(phases[1].loops, Loops::Count(2));
    let w: Vec<String> = s.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        w,
        [
            "test.json:5:3: tasks.t.phases.heavy: \"heavy\" given twice (first at line 3): as rt-app reads the file (json-c), the later value replaces the earlier, in the earlier's place; rename one to keep both"
        ]
    );
    // The same for a task name and a task property; events keep every occurrence.
    let s = parse(r#"{"tasks": {"a": {"run": 1}, "b": {"run": 2}, "a": {"run": 3, "loop": 1, "loop": 2, "run": 4}}}"#).unwrap();
    assert_eq!(s.tasks.len(), 2);
    assert_eq!(s.tasks[0].name, "a-0");
    assert_eq!(
        events(&s, 0),
        [Event::Run { work_ns: 3_000 }, Event::Run { work_ns: 4_000 }]
    );
    assert_eq!(s.tasks[0].program.phases[0].loops, Loops::Count(2));
    assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
}

/// An unexpanded template placeholder is named, in one line, where it stands.
#[test]
fn an_unexpanded_placeholder_is_named() {
    assert_eq!(
        err("{\"global\": {\"duration\": __DURATION__},\n \"tasks\": {\"t\": {\"run\": 1}}}"),
        "test.json:1:25: unexpanded template placeholder __DURATION__: replace it with a value first (a template's caller, such as LISA, substitutes these)"
    );
}

/// rt-app's own doc/ examples, read from a fetched rt-app repository (a bare git mirror, or a
/// checkout) named by `LBSIM_RTAPP_REPO` or at the default mirror path; skipped with a
/// printed reason when there is none. Each file runs, or is refused with a one-line error
/// naming what lbsim does not model (real-time policies) or what rt-app refuses too.
#[test]
fn rt_app_doc_examples_run_or_are_refused_with_the_reason() {
    let repo = std::env::var("LBSIM_RTAPP_REPO")
        .unwrap_or_else(|_| "/work/.mirror/scheduler-tools+rt-app/repo".to_owned());
    let files = match doc_files(&repo) {
        Ok(f) => f,
        Err(why) => {
            println!("skipped: no rt-app repository at {repo} ({why}); set LBSIM_RTAPP_REPO");
            return;
        }
    };
    // (file, None: runs; Some(text): the error contains it).
    let expected: &[(&str, Option<&str>)] = &[
        ("doc/examples/browser-long.json", None),
        ("doc/examples/browser-short.json", None),
        (
            "doc/examples/cpufreq_governor_efficiency/calibration.json",
            Some("SCHED_FIFO is not modelled"),
        ),
        (
            "doc/examples/cpufreq_governor_efficiency/dvfs.json",
            Some("SCHED_FIFO is not modelled"),
        ),
        (
            "doc/examples/custom-slice.json",
            Some("SCHED_DEADLINE is not modelled"),
        ),
        // Fragments for rt-app's merge script: no "tasks" (rt-app exits on it too).
        (
            "doc/examples/merge/global.json",
            Some("no \"tasks\" section"),
        ),
        (
            "doc/examples/merge/resources.json",
            Some("no \"tasks\" section"),
        ),
        // The pre-2015 vocabulary (exec, lock_order): rt-app finds no events and exits.
        (
            "doc/examples/merge/thread0.json",
            Some("unknown key \"exec\""),
        ),
        (
            "doc/examples/merge/thread1.json",
            Some("unknown key \"exec\""),
        ),
        (
            "doc/examples/merge/thread2.json",
            Some("unknown key \"exec\""),
        ),
        (
            "doc/examples/merge/thread3.json",
            Some("unknown key \"exec\""),
        ),
        ("doc/examples/mp3-long.json", None),
        ("doc/examples/mp3-short.json", None),
        ("doc/examples/spreading-tasks.json", None),
        ("doc/examples/template.json", None),
        ("doc/examples/tutorial/example1.json", None),
        ("doc/examples/tutorial/example10.json", None),
        ("doc/examples/tutorial/example11.json", None),
        ("doc/examples/tutorial/example2.json", None),
        ("doc/examples/tutorial/example3.json", None),
        ("doc/examples/tutorial/example4.json", None),
        ("doc/examples/tutorial/example5.json", None),
        ("doc/examples/tutorial/example6.json", None),
        ("doc/examples/tutorial/example7.json", None),
        ("doc/examples/tutorial/example8.json", None),
        ("doc/examples/tutorial/example9.json", None),
        // `"suspend",` has no value: json-c's tokener refuses it (key separator expected).
        ("doc/examples/video-long.json", Some("6:13: expected `:`")),
        ("doc/examples/video-short.json", Some("6:13: expected `:`")),
    ];
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, want, "the doc/ files changed");
    for ((name, text), (_, outcome)) in files.iter().zip(expected) {
        let r = parse_str(text, name, name);
        match (outcome, r) {
            (None, Ok(spec)) => {
                let mut ex = RefExec::new(spec, Share::RoundRobin);
                ex.run(50_000_000);
            }
            (Some(why), Err(e)) => {
                let e = e.to_string();
                assert!(e.contains(why), "{name}: {e}");
                assert_eq!(e.lines().count(), 1, "{name}: {e}");
            }
            (None, Err(e)) => panic!("{name} is refused: {e}"),
            (Some(why), Ok(_)) => panic!("{name} was expected to be refused ({why})"),
        }
    }
}

/// The JSON files under `doc/` of the rt-app repository at `repo` (sorted, with their text).
fn doc_files(repo: &str) -> Result<Vec<(String, String)>, String> {
    let git = |args: &[&str]| -> Result<String, String> {
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(repo)
            .args(args)
            .output()
            .map_err(|e| format!("git: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        String::from_utf8(out.stdout).map_err(|e| e.to_string())
    };
    let list = git(&["ls-tree", "-r", "--name-only", "HEAD", "doc/"])?;
    let mut names: Vec<&str> = list.lines().filter(|l| l.ends_with(".json")).collect();
    names.sort_unstable();
    names
        .into_iter()
        .map(|n| Ok((n.to_owned(), git(&["show", &format!("HEAD:{n}")])?)))
        .collect()
}

/// Found by fuzzing (`cargo xtask fuzz --target rtapp`): a global duration whose ns overflow
/// u64 panicked (overflow checks) or wrapped to a short run.
#[test]
fn a_global_duration_past_u64_ns_is_an_error() {
    expect![[r#"test.json:1:25: global.duration: 104294967295 s does not fit in ns (u64)"#]]
        .assert_eq(&err(
            r#"{"global": {"duration": 104294967295}, "tasks": {"t": {"run": 1}}}"#,
        ));
    let ok = parse(r#"{"global": {"duration": 18446744073}, "tasks": {"t": {"run": 1}}}"#);
    assert_eq!(ok.unwrap().duration_ns, Some(18_446_744_073_000_000_000));
}

#[test]
fn a_task_level_taskgroup_is_its_cgroup() {
    let s = parse(
        r#"{"tasks": {
            "a": {"instance": 2, "taskgroup": "/tg1/x", "run": 1000, "sleep": 1000},
            "b": {"taskgroup": "", "run": 1000,
                  "phases": {"p": {"run": 10, "taskgroup": "/tg2"}}}}}"#,
    )
    .unwrap();
    let groups: Vec<Option<&str>> = s.tasks.iter().map(|t| t.cgroup.as_deref()).collect();
    assert_eq!(groups, [Some("/tg1/x"), Some("/tg1/x"), None]);
    // Fork templates carry it too.
    assert_eq!(s.templates[0].cgroup.as_deref(), Some("/tg1/x"));
    // b's phase-level taskgroup is its phase's, without a warning.
    assert_eq!(
        s.tasks[2].program.phases[0].taskgroup.as_deref(),
        Some("/tg2")
    );
    assert!(
        s.warnings
            .iter()
            .all(|w| !w.to_string().contains("taskgroup"))
    );
    assert!(err(r#"{"tasks": {"t": {"taskgroup": "tg", "run": 1}}}"#).contains("must be a path"));
}

#[test]
fn a_phase_level_taskgroup_is_the_phase_s_and_an_empty_one_is_none() {
    let s = parse(
        r#"{"tasks": {"t": {"taskgroup": "/a", "phases": {
            "p0": {"run": 10, "taskgroup": "/b/c"},
            "p1": {"run": 10},
            "p2": {"run": 10, "taskgroup": ""},
            "p3": {"run": 10, "taskgroup": "/"}}}}}"#,
    )
    .unwrap();
    let t = &s.tasks[0];
    assert_eq!(t.cgroup.as_deref(), Some("/a"));
    let groups: Vec<Option<&str>> = t
        .program
        .phases
        .iter()
        .map(|p| p.taskgroup.as_deref())
        .collect();
    assert_eq!(groups, [Some("/b/c"), None, None, Some("/")]);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

#[test]
fn a_bad_phase_level_taskgroup_is_an_error() {
    expect![[r#"test.json:1:58: tasks.t.phases.p.taskgroup: taskgroup "b" must be a path starting with '/'"#]]
        .assert_eq(&err(
            r#"{"tasks": {"t": {"phases": {"p": {"run": 1, "taskgroup": "b"}}}}}"#,
        ));
    assert!(
        err(r#"{"tasks": {"t": {"phases": {"p": {"run": 1, "taskgroup": "/a/../b"}}}}}"#)
            .contains("must be a path")
    );
    assert!(
        err(r#"{"tasks": {"t": {"phases": {"p": {"run": 1, "taskgroup": 3}}}}}"#)
            .contains("taskgroup")
    );
}

/// The report's one pass over the probe log gives each thread the iterations a pass over that
/// thread's probes alone gives, although the threads' probes interleave in the log.
#[test]
fn one_pass_iterations_match_per_thread_passes() {
    let s = parse(
        r#"{"tasks": {
            "a": {"instance": 3, "loop": 4, "run": 700, "timer": {"ref": "unique", "period": 1500}},
            "b": {"loop": 3, "run": 2000, "sleep": 500}
        }}"#,
    )
    .unwrap();
    let mut ex = RefExec::new(s, Share::RunToBlock);
    ex.run(u64::MAX);
    let tasks: Vec<TaskRef> = ex.obs.part_tasks(0).map(|(tr, _)| tr).collect();
    assert_eq!(tasks.len(), 4);
    let mut got: Vec<Vec<Iteration>> = vec![Vec::new(); tasks.len()];
    for_each_iteration(&ex.obs, &tasks, |k, it| got[k].push(it));
    for (k, tr) in tasks.iter().enumerate() {
        let mut cur = None;
        let want: Vec<Iteration> = ex
            .obs
            .probes
            .iter()
            .filter(|p| p.task == *tr)
            .filter_map(|p| iteration_step(&mut cur, &p))
            .collect();
        assert!(!want.is_empty(), "thread {k} has iterations");
        assert_eq!(got[k], want, "thread {k}");
    }
    // The interesting case was reached: a thread's probes are not contiguous in the log.
    let order: Vec<TaskRef> = ex.obs.probes.iter().map(|p| p.task).collect();
    let first_run_ends = order.iter().rposition(|&t| t == order[0]).unwrap();
    assert!(order[..first_run_ends].iter().any(|&t| t != order[0]));
}
