use std::path::PathBuf;

use super::*;
use crate::limits::Room;
use crate::tests::{RefExec, Share};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/trace")
        .join(name)
}

fn extract_file(name: &str, o: &Options) -> Extracted {
    let path = data(name);
    let bytes = std::fs::read(&path).unwrap();
    let p = parse_bytes(name, &bytes).unwrap_or_else(|e| panic!("{e}"));
    extract::extract(&p, o)
}

fn steps(x: &Extracted, pid: u32) -> Vec<Step> {
    x.tasks.iter().find(|t| t.pid == pid).unwrap().steps.clone()
}

#[test]
fn kernel_trace_file_text() {
    let x = extract_file("kernel-trace.txt", &Options::default());
    assert_eq!(x.nr_cpus, 2);
    assert_eq!(
        x.tasks.iter().map(|t| t.pid).collect::<Vec<_>>(),
        vec![7, 100, 101]
    );
    use Step::*;
    assert_eq!(
        steps(&x, 100),
        vec![Spawn(101), Run(10_000), Wait, Run(668_000)]
    );
    // Woken by an interrupt (the `h` flag): a timed sleep of the recorded length.
    assert_eq!(
        steps(&x, 101),
        vec![
            Run(17_000),
            Wake(100),
            Run(10_000),
            Sleep(500_000),
            Run(9_000),
            Exit
        ]
    );
    assert_eq!(steps(&x, 7), vec![Run(10_000)]);
    let t100 = x.tasks.iter().find(|t| t.pid == 100).unwrap();
    assert!(t100.live_at_start);
    assert_eq!(t100.start, Start::At(0));
    let t101 = x.tasks.iter().find(|t| t.pid == 101).unwrap();
    assert_eq!(t101.start, Start::SpawnedBy(100));
    assert_eq!(t101.cpus.iter().copied().collect::<Vec<_>>(), vec![1]);
}

#[test]
fn trace_cmd_report_with_the_sched_plugin() {
    let path = data("trace-cmd-report.txt");
    let p = parse_bytes("t.txt", &std::fs::read(path).unwrap()).unwrap();
    assert_eq!(p.nr_cpus, Some(4));
    assert_eq!(p.ignored, 1, "the irq_handler_entry line");
    let x = extract::extract(&p, &Options::default());
    use Step::*;
    // Its wake-up is a sched_wakeup only (no sched_waking): it counts.
    assert_eq!(steps(&x, 2223), vec![Wait, Run(90_000)]);
    assert_eq!(steps(&x, 2300), vec![Run(80_000), Wake(2223), Run(100_000)]);
    let s = x.tasks.iter().find(|t| t.pid == 2300).unwrap();
    assert_eq!(s.start, Start::At(88_000));
    assert!(!s.live_at_start);
}

#[test]
fn filters_and_window() {
    let o = Options {
        comm: vec!["!kworker/*".into()],
        ..Options::default()
    };
    let x = extract_file("kernel-trace.txt", &o);
    assert_eq!(x.filtered_out, 1);
    assert_eq!(x.tasks.len(), 2);
    let o = Options {
        pids: Some(vec![101]),
        ..Options::default()
    };
    let x = extract_file("kernel-trace.txt", &o);
    // 101's wake of 100 is not kept: its two bursts around it are one.
    use Step::*;
    assert_eq!(
        steps(&x, 101),
        vec![Run(27_000), Sleep(500_000), Run(9_000), Exit]
    );
    assert_eq!(x.tasks[0].start, Start::At(0));
    let o = Options {
        from_ns: Some(100_000_500_000),
        ..Options::default()
    };
    let x = extract_file("kernel-trace.txt", &o);
    // 101 was blocked when the window starts: its first event is the waking.
    assert_eq!(steps(&x, 101), vec![Run(9_000), Exit]);
    assert_eq!(
        x.tasks.iter().find(|t| t.pid == 101).unwrap().start,
        Start::At(30_000)
    );
}

#[test]
fn the_workload_runs_to_completion() {
    let (spec, size) = load_file_within(
        &data("kernel-trace.txt"),
        &Options::default(),
        "trace:kernel-trace.txt",
        &Room::default(),
    )
    .unwrap();
    assert_eq!(size.tasks, 3);
    assert_eq!(spec.cpus_hint, Some(2));
    assert!(spec.tasks[2].spawned);
    let msgs: Vec<String> = spec.warnings.iter().map(|w| w.message.clone()).collect();
    assert!(
        msgs[0].starts_with("2 tasks were running or runnable"),
        "{msgs:?}"
    );
    let mut ex = RefExec::new(spec, Share::RoundRobin);
    ex.run(10_000_000_000);
    assert!(ex.all_exited());
}

#[test]
fn as_observed_pins_each_task_to_its_cpus() {
    let o = Options {
        as_observed: true,
        ..Options::default()
    };
    let (spec, size) = build(
        &parse_bytes("k.txt", &std::fs::read(data("kernel-trace.txt")).unwrap()).unwrap(),
        &o,
        "k.txt",
        "trace:k.txt",
        &Room::default(),
    )
    .unwrap();
    // 7 and 100 ran on CPU 0, 101 on CPU 1: two cpusets.
    assert_eq!(size.cpusets, 2);
    assert_eq!(spec.cpusets, vec![vec![0], vec![1]]);
    let sets: Vec<Option<u32>> = spec.tasks.iter().map(|t| t.affinity.map(|c| c.0)).collect();
    assert_eq!(sets, vec![Some(0), Some(0), Some(1)]);
}

#[test]
fn bad_text_names_the_line() {
    let e = parse_bytes(
        "x.txt",
        b"cpus=2\n  a-1 [000] 1.0: sched_switch: prev_comm=a\n",
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "x.txt:2: no prev_pid= field");
    let e = parse_bytes("x.txt", b"hello\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.txt:1: no [CPU] field: not an ftrace event line"
    );
    let e = parse_bytes("x.txt", b"a-1 [000] 1.x: sched_switch: x\n").unwrap_err();
    assert_eq!(e.to_string(), "x.txt:1: bad timestamp in \"1.x\"");
}

#[test]
fn overheads_come_off_the_bursts_that_hold_them() {
    let o = Options {
        switch_cost_ns: 1_000,
        wake_cost_ns: 400,
        ..Options::default()
    };
    let x = extract_file("kernel-trace.txt", &o);
    use Step::*;
    // 101: switched in at 3 us (1 us off its first burst), wakes 100 at 20 us (0.4 us off
    // the next), switched in again at 531 us (1 us off the last).
    assert_eq!(
        steps(&x, 101),
        vec![
            Run(16_000),
            Wake(100),
            Run(9_600),
            Sleep(500_000),
            Run(8_000),
            Exit
        ]
    );
    let t = x.tasks.iter().find(|t| t.pid == 101).unwrap();
    assert_eq!(t.received_ns, 36_000);
}

#[test]
fn option_errors() {
    let e = parse_options("affinity=some").unwrap_err();
    assert!(e.to_string().contains("one of all, as-observed"), "{e}");
    let e = parse_options("from=2,to=1").unwrap_err();
    assert!(e.to_string().contains("must be after"), "{e}");
    let o = parse_options("comm=a*|!b,pid=3-5,from=1ms").unwrap();
    assert_eq!(o.pids, Some(vec![3, 4, 5]));
    assert_eq!(o.comm, vec!["a*".to_string(), "!b".to_string()]);
    assert_eq!(o.from_ns, Some(1_000_000));
}

/// A protobuf writer for the tests.
mod pb {
    pub fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    pub fn uint(out: &mut Vec<u8>, f: u32, v: u64) {
        varint(out, u64::from(f) << 3);
        varint(out, v);
    }
    pub fn bytes(out: &mut Vec<u8>, f: u32, b: &[u8]) {
        varint(out, (u64::from(f) << 3) | 2);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
    pub fn packed(out: &mut Vec<u8>, f: u32, vs: &[u64]) {
        let mut b = Vec::new();
        for &v in vs {
            varint(&mut b, v);
        }
        bytes(out, f, &b);
    }
}

fn ftrace_event(ts: u64, pid: u32, kind: u32, body: &[u8]) -> Vec<u8> {
    let mut e = Vec::new();
    pb::uint(&mut e, 1, ts);
    pb::uint(&mut e, 2, u64::from(pid));
    pb::bytes(&mut e, kind, body);
    e
}

fn switch_body(prev: (&str, u32), state: u64, next: (&str, u32)) -> Vec<u8> {
    let mut s = Vec::new();
    pb::bytes(&mut s, 1, prev.0.as_bytes());
    pb::uint(&mut s, 2, u64::from(prev.1));
    pb::uint(&mut s, 3, 120);
    pb::uint(&mut s, 4, state);
    pb::bytes(&mut s, 5, next.0.as_bytes());
    pb::uint(&mut s, 6, u64::from(next.1));
    pb::uint(&mut s, 7, 120);
    s
}

fn trace_of(bundles: &[Vec<u8>], cpus: u64) -> Vec<u8> {
    let mut t = Vec::new();
    let mut si = Vec::new();
    pb::uint(&mut si, 8, cpus);
    let mut pkt = Vec::new();
    pb::bytes(&mut pkt, 45, &si);
    pb::bytes(&mut t, 1, &pkt);
    for b in bundles {
        let mut pkt = Vec::new();
        pb::bytes(&mut pkt, 1, b);
        pb::uint(&mut pkt, 10, 1);
        pb::bytes(&mut t, 1, &pkt);
    }
    t
}

#[test]
fn perfetto_ftrace_events() {
    let mut b0 = Vec::new();
    pb::uint(&mut b0, 1, 0);
    let mut wk = Vec::new();
    pb::bytes(&mut wk, 1, b"b");
    pb::uint(&mut wk, 2, 11);
    pb::uint(&mut wk, 3, 120);
    pb::uint(&mut wk, 5, 1);
    for e in [
        ftrace_event(1000, 0, 4, &switch_body(("swapper/0", 0), 0, ("a", 10))),
        ftrace_event(3000, 10, 20, &wk),
        ftrace_event(4000, 10, 4, &switch_body(("a", 10), 1, ("swapper/0", 0))),
    ] {
        pb::bytes(&mut b0, 2, &e);
    }
    let mut b1 = Vec::new();
    pb::uint(&mut b1, 1, 1);
    for e in [
        ftrace_event(500, 11, 4, &switch_body(("b", 11), 1, ("swapper/1", 0))),
        ftrace_event(3500, 0, 4, &switch_body(("swapper/1", 0), 0, ("b", 11))),
        ftrace_event(9500, 11, 4, &switch_body(("b", 11), 0x10, ("swapper/1", 0))),
    ] {
        pb::bytes(&mut b1, 2, &e);
    }
    let bytes = trace_of(&[b0, b1], 2);
    let p = parse_bytes("t.pftrace", &bytes).unwrap();
    assert_eq!(p.nr_cpus, Some(2));
    let x = extract::extract(&p, &Options::default());
    use Step::*;
    // Times count from the first event (500 ns).
    assert_eq!(steps(&x, 10), vec![Run(2000), Wake(11), Run(1000)]);
    assert_eq!(steps(&x, 11), vec![Wait, Run(6000), Exit]);
}

#[test]
fn perfetto_compact_sched() {
    // CPU 0: idle -> a (pid 10) at 1000; a wakes b (11) at 3000; a blocks at 4000.
    // CPU 1: idle -> b at 3500, b exits at 9500.
    let mut c0 = Vec::new();
    pb::bytes(&mut c0, 5, b"a");
    pb::bytes(&mut c0, 5, b"swapper/0");
    pb::bytes(&mut c0, 5, b"b");
    pb::packed(&mut c0, 1, &[1000, 3000]);
    pb::packed(&mut c0, 2, &[0, 1]);
    pb::packed(&mut c0, 3, &[10, 0]);
    pb::packed(&mut c0, 4, &[120, 120]);
    pb::packed(&mut c0, 6, &[0, 1]);
    pb::packed(&mut c0, 7, &[3000]);
    pb::packed(&mut c0, 8, &[11]);
    pb::packed(&mut c0, 9, &[1]);
    pb::packed(&mut c0, 10, &[120]);
    pb::packed(&mut c0, 11, &[2]);
    pb::packed(&mut c0, 12, &[1]);
    let mut b0 = Vec::new();
    pb::uint(&mut b0, 1, 0);
    pb::bytes(&mut b0, 4, &c0);
    let mut c1 = Vec::new();
    pb::bytes(&mut c1, 5, b"b");
    pb::bytes(&mut c1, 5, b"swapper/1");
    pb::packed(&mut c1, 1, &[3500, 6000]);
    pb::packed(&mut c1, 2, &[0, 0x10]);
    pb::packed(&mut c1, 3, &[11, 0]);
    pb::packed(&mut c1, 4, &[120, 120]);
    pb::packed(&mut c1, 6, &[0, 1]);
    let mut b1 = Vec::new();
    pb::uint(&mut b1, 1, 1);
    pb::bytes(&mut b1, 4, &c1);
    let bytes = trace_of(&[b0, b1], 2);
    let p = parse_bytes("t.pftrace", &bytes).unwrap();
    let x = extract::extract(&p, &Options::default());
    use Step::*;
    assert_eq!(steps(&x, 10), vec![Run(2000), Wake(11), Run(1000)]);
    // b's first event is the waking by a: it waits from the start.
    assert_eq!(steps(&x, 11), vec![Wait, Run(6000), Exit]);
}

#[test]
fn bad_protobuf_names_the_byte() {
    // A packet whose length runs past the end.
    let e = parse_bytes("t.pftrace", &[0x0a, 0x05, 0x0a]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.pftrace: at byte 0: length 5 runs past the end of its message"
    );
    // A bundle without its CPU, inside a packet at byte 2.
    let e = parse_bytes("t.pftrace", &[0x0a, 0x02, 0x0a, 0x00]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.pftrace: at byte 4: ftrace_events bundle without its cpu"
    );
    let e = parse_bytes("t.pftrace", &[0x0b]).unwrap_err();
    assert!(
        e.to_string().contains("at byte 0: unsupported wire type 3"),
        "{e}"
    );
}

/// A real machine's `trace-cmd report` (trappy's test trace, Apache-2.0: see the README
/// beside it): parsed, replayed, and its report says what could not be kept.
#[test]
fn a_trace_from_outside_lbsim() {
    let (spec, _) = load_file_within(
        &data("trappy/trace_not_raw-excerpt.txt"),
        &Options::default(),
        "trace:trappy",
        &Room::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spec.cpus_hint, Some(6));
    let names: Vec<&str> = spec.tasks.iter().map(|t| t.name.as_str()).collect();
    expect_test::expect![[r#"
        [
            "migration/2",
            "trace-cmd",
            "trace-cmd",
            "trace-cmd",
            "trace-cmd",
            "trace-cmd",
            "trace-cmd",
        ]
    "#]]
    .assert_debug_eq(&names);
    let notes: Vec<String> = spec.warnings.iter().map(|w| w.message.clone()).collect();
    expect_test::expect![[r#"
        [
            "7 tasks were running or runnable when the window starts: they start at 0, their run before it is unknown",
            "118 blocks have no wake-up event (sched_waking/sched_wakeup missing): replayed as timed sleeps up to the next switch-in",
            "1 tasks have a real-time prio: replayed as nice-0 fair tasks",
        ]
    "#]].assert_debug_eq(&notes);
    let mut ex = RefExec::new(spec, Share::RoundRobin);
    ex.run(10_000_000_000);
    assert!(ex.all_exited());
}

/// A sched_waking of a task still on its CPU (it had reached a blocking point, the waker
/// found it before __schedule() took it off): the wakee's wait there and the waker's post are
/// kept at that point of both programs; the sched_wakeup that follows adds nothing; an
/// interrupt's waking of a running task is still dropped and reported.
#[test]
fn a_task_woken_on_its_cpu_keeps_that_wait() {
    let x = extract_file("woken-on-cpu.txt", &Options::default());
    use Step::*;
    assert_eq!(
        steps(&x, 200),
        vec![Run(10_000), Wake(300), Run(20_000), Wake(300), Run(20_000)]
    );
    assert_eq!(
        steps(&x, 300),
        vec![Run(10_000), Wait, Run(10_000), Wait, Run(9_000)]
    );
    assert_eq!(
        x.wakes_of_running, 1,
        "the interrupt's waking of cons at 35 us"
    );
}

/// A sched_waking that catches its wakee between `__schedule()`'s dequeue and the traced
/// switch (the newly idle balance runs in between): the switch with a sleeping state that
/// follows is not a second block, and the sched_wakeup after it (delivered on the wakee's
/// CPU) adds no second wait or post.
#[test]
fn a_task_woken_before_its_traced_switch_waits_once() {
    let x = extract_file("woken-before-switch.txt", &Options::default());
    use Step::*;
    assert_eq!(steps(&x, 200), vec![Run(10_000), Wake(300), Run(40_000)]);
    let cons = steps(&x, 300);
    assert_eq!(cons.iter().filter(|s| **s == Wait).count(), 1, "{cons:?}");
    assert_eq!(cons.first(), Some(&Run(10_000)), "{cons:?}");
    assert!(
        !cons.iter().any(|s| matches!(s, Sleep(_))),
        "no timed sleep for the wakelist's sched_wakeup: {cons:?}"
    );
}

/// lbsim's own charges (`lbsim_charge`) come off the run of the task that paid them: a's
/// wake-up of b (700 ns from 11 us) is left 500 ns unpaid when b preempts a at 11.2 us, so b
/// pays those (with its switch-in's 1.2 us) and a only 200 ns; b's newly idle balance after
/// its block (500 ns) comes off the burst before it and off its received run time. The same
/// trace without those lines is read as a kernel trace: `wake_cost` per wake-up, instead.
#[test]
fn recorded_charges_come_off_the_runs_that_paid_them() {
    use Step::*;
    let o = Options {
        switch_cost_ns: 1_200,
        wake_cost_ns: 600,
        ..Options::default()
    };
    let x = extract_file("lbsim-charges.txt", &o);
    assert_eq!(x.recorded_charges, Some((2, 1_200)));
    assert_eq!(x.wake_cost_ns, 0);
    assert_eq!(steps(&x, 1), vec![Run(9_800), Wake(2), Run(8_800), Exit]);
    assert_eq!(steps(&x, 2), vec![Run(2_000), Wait, Run(7_100), Exit]);
    let received = |pid: u32| x.tasks.iter().find(|t| t.pid == pid).unwrap().received_ns;
    assert_eq!(received(1), 21_200);
    assert_eq!(
        received(2),
        12_000,
        "its 12.5 us on CPUs less the newly idle balance"
    );

    let text = std::fs::read_to_string(data("lbsim-charges.txt")).unwrap();
    let plain: String = text
        .lines()
        .filter(|l| !l.contains("lbsim_charge"))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = parse_bytes("plain.txt", plain.as_bytes()).unwrap();
    let x = extract::extract(&p, &o);
    assert_eq!(x.recorded_charges, None);
    assert_eq!(x.wake_cost_ns, 600);
    assert_eq!(steps(&x, 1), vec![Run(9_800), Wake(2), Run(8_400), Exit]);
    assert_eq!(steps(&x, 2), vec![Run(2_500), Wait, Run(7_600), Exit]);
}

/// A charge no machine could make (`cost=` at u64's maximum, which a hand-edited or corrupt
/// trace may hold) is taken off as far as there is run to take it from: no overflow (tests
/// build with overflow checks, so an unchecked sum panics here), every burst still there.
#[test]
fn an_absurd_recorded_charge_does_not_overflow() {
    let text = std::fs::read_to_string(data("lbsim-charges.txt")).unwrap();
    let huge: String = text
        .lines()
        .map(|l| {
            if l.contains("lbsim_charge") {
                let at = l.find("cost=").unwrap() + "cost=".len();
                let end = l[at..].find(' ').map_or(l.len(), |e| at + e);
                format!("{}{}{}\n", &l[..at], u64::MAX, &l[end..])
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let p = parse_bytes("huge.txt", huge.as_bytes()).unwrap();
    let x = extract::extract(&p, &Options::default());
    assert_eq!(x.recorded_charges, Some((2, u64::MAX)));
    assert_eq!(x.tasks.len(), 2);
    assert!(x.tasks.iter().all(|t| t.received_ns <= 21_200));
}

/// An `lbsim_charge` in a Perfetto trace is a `GenericFtraceEvent`; other generic events are
/// skipped.
#[test]
fn perfetto_generic_lbsim_charge() {
    let field = |name: &str, num: Option<u64>, text: Option<&str>| {
        let mut f = Vec::new();
        pb::bytes(&mut f, 1, name.as_bytes());
        if let Some(n) = num {
            pb::uint(&mut f, 5, n);
        }
        if let Some(s) = text {
            pb::bytes(&mut f, 3, s.as_bytes());
        }
        f
    };
    let generic = |name: &str, cost: u64| {
        let mut g = Vec::new();
        pb::bytes(&mut g, 1, name.as_bytes());
        pb::bytes(&mut g, 2, &field("cpu", Some(0), None));
        pb::bytes(&mut g, 2, &field("cost", Some(cost), None));
        pb::bytes(&mut g, 2, &field("what", None, Some("newidle")));
        g
    };
    let mut b0 = Vec::new();
    pb::uint(&mut b0, 1, 0);
    for e in [
        ftrace_event(1000, 0, 4, &switch_body(("swapper/0", 0), 0, ("a", 10))),
        ftrace_event(3000, 10, 327, &generic("lbsim_charge", 500)),
        ftrace_event(3000, 10, 327, &generic("other_event", 900)),
        ftrace_event(3000, 10, 4, &switch_body(("a", 10), 1, ("swapper/0", 0))),
    ] {
        pb::bytes(&mut b0, 2, &e);
    }
    let p = parse_bytes("t.pftrace", &trace_of(&[b0], 1)).unwrap();
    assert_eq!(p.ignored, 1, "the other generic event");
    assert!(p.records.iter().any(|r| r.ev
        == record::Ev::Charge {
            cost_ns: 500,
            newidle: true,
            sync: false,
            irq: false
        }
        && r.common_pid == Some(10)));
    let x = extract::extract(&p, &Options::default());
    let a = x.tasks.iter().find(|t| t.pid == 10).unwrap();
    assert_eq!(a.steps, vec![Step::Run(1_500)]);
    assert_eq!(a.received_ns, 1_500);
}
