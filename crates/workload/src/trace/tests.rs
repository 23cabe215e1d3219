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
            "the trace records no CPU capacity (sched_cpu_capacity, Perfetto CpuInfo) and capacity= is not given: bursts are run time at capacity 1024, whatever CPU they ran on",
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

/// Trace text for the tests below: `cpus=N`, then each line `COMM-PID [CPU] T: EVENT` with
/// `T` in ns.
fn text_trace(cpus: u32, lines: &[(u32, &str, u32, u64, String)]) -> String {
    let mut s = format!("cpus={cpus}\n");
    for (cpu, comm, pid, t, ev) in lines {
        s.push_str(&format!(
            "{comm:>16}-{pid:<5} [{cpu:03}] {}.{:09}: {ev}\n",
            t / 1_000_000_000,
            t % 1_000_000_000
        ));
    }
    s
}

fn switch_line(prev: (&str, u32), state: &str, next: (&str, u32)) -> String {
    format!(
        "sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state={state} ==> next_comm={} next_pid={} next_prio=120",
        prev.0, prev.1, next.0, next.1
    )
}

fn waking_line(comm: &str, pid: u32, cpu: u32) -> String {
    format!("sched_waking: comm={comm} pid={pid} prio=120 target_cpu={cpu:03}")
}

/// `sched_cpu_capacity` as LISA's sched_tp module prints it (a comma after `capacity`), the
/// later `lisa__sched_cpu_capacity` with and without `capacity_orig`, and the `cpu_capacity`
/// of older EAS kernels (trappy): `capacity_orig` wins over `capacity`; the first record of
/// a CPU counts; the events are not counted as skipped; a capacity past 1024 is an error
/// naming the line.
#[test]
fn capacity_events_of_lisa_and_trappy() {
    let t = text_trace(
        4,
        &[
            (
                0,
                "<idle>",
                0,
                0,
                "sched_cpu_capacity: cpu=0 capacity=400, capacity_orig=462".into(),
            ),
            (
                0,
                "<idle>",
                0,
                0,
                "sched_cpu_capacity: cpu=0 capacity=462, capacity_orig=1024".into(),
            ),
            (
                1,
                "<idle>",
                0,
                0,
                "lisa__sched_cpu_capacity: cpu=1 capacity=500 capacity_orig=512 capacity_curr=300"
                    .into(),
            ),
            (
                2,
                "<idle>",
                0,
                0,
                "lisa__sched_cpu_capacity: cpu=2 capacity=1000".into(),
            ),
            (
                3,
                "<idle>",
                0,
                0,
                "cpu_capacity: state=1024 cpu_id=3".into(),
            ),
            (0, "<idle>", 0, 5, "irq_handler_entry: irq=1 name=x".into()),
        ],
    );
    let p = parse_bytes("cap.txt", t.as_bytes()).unwrap();
    assert_eq!(
        p.capacities
            .iter()
            .map(|(&c, &v)| (c, v))
            .collect::<Vec<_>>(),
        vec![(0, 462), (1, 512), (2, 1000), (3, 1024)]
    );
    assert_eq!(p.ignored, 1, "only the irq_handler_entry");
    assert!(p.records.is_empty());
    let bad = text_trace(
        1,
        &[(
            0,
            "<idle>",
            0,
            0,
            "sched_cpu_capacity: cpu=0 capacity=2048, capacity_orig=2048".into(),
        )],
    );
    let e = parse_bytes("bad.txt", bad.as_bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "bad.txt:2: sched_cpu_capacity: capacity 2048 is not in 1..=1024"
    );
    let e = parse_bytes(
        "bad.txt",
        text_trace(1, &[(0, "<idle>", 0, 0, "cpu_capacity: state=5".into())]).as_bytes(),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "bad.txt:2: cpu_capacity without cpu_id=");
    // A CPU number past lbsim's largest machine, or past u32, is refused by line; not
    // truncated to a CPU that exists, nor used to size the replay's tables.
    for (body, cpu) in [
        (
            "sched_cpu_capacity: cpu=4294967296 capacity=512",
            "4294967296",
        ),
        ("cpu_capacity: state=512 cpu_id=4000000000", "4000000000"),
        ("lisa__sched_cpu_capacity: cpu=8192 capacity=512", "8192"),
    ] {
        let e = parse_bytes(
            "bad.txt",
            text_trace(1, &[(0, "<idle>", 0, 0, body.into())]).as_bytes(),
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("bad.txt:2: ")
                && e.to_string()
                    .contains(&format!("CPU {cpu} out of range (at most 8192 CPUs)")),
            "{e}"
        );
    }
    // An event on such a CPU (the [CPU] field) is refused for the whole trace.
    let e = parse_bytes(
        "bad.txt",
        text_trace(1, &[(9000, "t", 10, 0, waking_line("t", 10, 0))]).as_bytes(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "bad.txt: an event on CPU 9000: a trace names at most 8192 CPUs"
    );
}

/// Perfetto's `CpuInfo` (TracePacket field 67): one `Cpu` per CPU in CPU order, its
/// `capacity` (field 3) where sysfs has one.
#[test]
fn perfetto_cpu_info_capacities() {
    let mut t = trace_of(&[], 3);
    let mut info = Vec::new();
    for cap in [Some(462u64), None, Some(1024)] {
        let mut c = Vec::new();
        pb::bytes(&mut c, 1, b"AArch64 Processor");
        if let Some(cap) = cap {
            pb::uint(&mut c, 3, cap);
        }
        pb::bytes(&mut info, 1, &c);
    }
    let mut pkt = Vec::new();
    pb::bytes(&mut pkt, 67, &info);
    pb::bytes(&mut t, 1, &pkt);
    let p = parse_bytes("t.pftrace", &t).unwrap();
    assert_eq!(
        p.capacities
            .iter()
            .map(|(&c, &v)| (c, v))
            .collect::<Vec<_>>(),
        vec![(0, 462), (2, 1024)]
    );
}

/// A task running 100 us on CPU 0 (capacity 512), then, after a timer's wake-up, 100 us on
/// CPU 1 (1024) of which it is preempted for 50 us and runs the rest on CPU 0.
fn big_little_trace(capacities: bool) -> String {
    let mut l: Vec<(u32, &str, u32, u64, String)> = Vec::new();
    if capacities {
        l.push((
            0,
            "<idle>",
            0,
            0,
            "sched_cpu_capacity: cpu=0 capacity=512, capacity_orig=512".into(),
        ));
        l.push((
            1,
            "<idle>",
            0,
            0,
            "sched_cpu_capacity: cpu=1 capacity=1024, capacity_orig=1024".into(),
        ));
    }
    l.extend([
        (
            0,
            "<idle>",
            0,
            1_000,
            switch_line(("swapper/0", 0), "R", ("t", 10)),
        ),
        (
            0,
            "t",
            10,
            101_000,
            switch_line(("t", 10), "S", ("swapper/0", 0)),
        ),
        (1, "<idle>", 0, 200_000, waking_line("t", 10, 1)),
        (
            1,
            "<idle>",
            0,
            200_000,
            switch_line(("swapper/1", 0), "R", ("t", 10)),
        ),
        (1, "t", 10, 250_000, switch_line(("t", 10), "R+", ("u", 11))),
        (
            0,
            "<idle>",
            0,
            260_000,
            switch_line(("swapper/0", 0), "R", ("t", 10)),
        ),
        (
            0,
            "t",
            10,
            310_000,
            switch_line(("t", 10), "X", ("swapper/0", 0)),
        ),
    ]);
    text_trace(2, &l)
}

/// Each burst is its run time scaled by the capacity of the CPU it ran on (a burst over CPUs
/// of different capacities by their time-weighted mean), from the trace's capacity events,
/// else from `capacity=`, else 1024 (said in the report's notes).
#[test]
fn bursts_are_scaled_by_the_recorded_capacity() {
    use Step::*;
    let o = Options {
        comm: vec!["t".into()],
        ..Options::default()
    };
    let x = extract::extract(
        &parse_bytes("a.txt", big_little_trace(true).as_bytes()).unwrap(),
        &o,
    );
    assert_eq!(x.capacity_source, CapacitySource::Trace);
    assert_eq!(x.capacities, vec![512, 1024]);
    // 100 us at 512; then 50 us at 1024 and 50 us at 512 in one burst.
    assert_eq!(
        steps(&x, 10),
        vec![Run(50_000), Sleep(99_000), Run(75_000), Exit]
    );
    assert_eq!(x.tasks[0].received_ns, 200_000, "run time is not scaled");

    let plain = parse_bytes("b.txt", big_little_trace(false).as_bytes()).unwrap();
    let x = extract::extract(&plain, &o);
    assert_eq!(x.capacity_source, CapacitySource::Assumed);
    assert_eq!(
        steps(&x, 10),
        vec![Run(100_000), Sleep(99_000), Run(100_000), Exit]
    );
    let spec = build(&plain, &o, "b.txt", "trace:b.txt", &Room::default())
        .unwrap()
        .0;
    assert!(
        spec.warnings
            .iter()
            .any(|w| w.message.contains("no CPU capacity")),
        "{:?}",
        spec.warnings
    );

    let o = Options {
        capacity: Some(vec![256, 1024]),
        ..o
    };
    let x = extract::extract(&plain, &o);
    assert_eq!(x.capacity_source, CapacitySource::Key);
    assert_eq!(
        steps(&x, 10),
        vec![Run(25_000), Sleep(99_000), Run(62_500), Exit]
    );
    // The key wins over the trace's events.
    let x = extract::extract(
        &parse_bytes("a.txt", big_little_trace(true).as_bytes()).unwrap(),
        &o,
    );
    assert_eq!(
        steps(&x, 10),
        vec![Run(25_000), Sleep(99_000), Run(62_500), Exit]
    );
    // One capacity per CPU of the trace: a list of another length is an error, not CPUs
    // silently taken as 1024 or capacities of CPUs the trace does not have.
    for caps in [vec![512], vec![512, 1024, 1024]] {
        let o = Options {
            capacity: Some(caps.clone()),
            ..o.clone()
        };
        let e = build(&plain, &o, "b.txt", "trace:b.txt", &Room::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "b.txt: capacity= gives {} CPUs, the trace has 2 (one capacity per CPU: 462x4,1024x4)",
                caps.len()
            )
        );
    }
}

/// A task woken by a timer every 1 ms (from the idle task) whose runs vary: `sleeps=auto`
/// finds it periodic and replays its sleeps as the timer's expiries (the recorded wake-up
/// times), `relative` as sleeps of the recorded length; one that sleeps 500 us after runs of
/// varying length is relative under `auto`, and under `absolute` a timer too.
#[test]
fn periodic_interrupt_wakeups_become_timer_expiries() {
    use Step::*;
    let runs = [100_000u64, 300_000, 200_000, 400_000, 150_000];
    let mut periodic = Vec::new();
    let mut relative = Vec::new();
    let (mut tp, mut tr) = (0u64, 0u64);
    for (k, &r) in runs.iter().enumerate() {
        // The periodic one: woken at k ms, blocks after its run.
        if k > 0 {
            periodic.push((0, "<idle>", 0, tp, waking_line("p", 10, 0)));
        }
        periodic.push((
            0,
            "<idle>",
            0,
            tp,
            switch_line(("swapper/0", 0), "R", ("p", 10)),
        ));
        periodic.push((
            0,
            "p",
            10,
            tp + r,
            switch_line(("p", 10), "S", ("swapper/0", 0)),
        ));
        tp = (k as u64 + 1) * 1_000_000;
        // The relative one: sleeps 500 us from its block.
        if k > 0 {
            relative.push((1, "<idle>", 0, tr, waking_line("q", 20, 1)));
        }
        relative.push((
            1,
            "<idle>",
            0,
            tr,
            switch_line(("swapper/1", 0), "R", ("q", 20)),
        ));
        relative.push((
            1,
            "q",
            20,
            tr + r,
            switch_line(("q", 20), "S", ("swapper/1", 0)),
        ));
        tr += r + 500_000;
    }
    periodic.extend(relative);
    let text = text_trace(2, &periodic);
    let p = parse_bytes("p.txt", text.as_bytes()).unwrap();
    let x = extract::extract(&p, &Options::default());
    let t = |x: &Extracted, pid| x.tasks.iter().find(|t| t.pid == pid).unwrap().clone();
    assert!(t(&x, 10).absolute);
    assert_eq!(
        steps(&x, 10),
        vec![
            Run(100_000),
            Timer(1_000_000),
            Run(300_000),
            Timer(2_000_000),
            Run(200_000),
            Timer(3_000_000),
            Run(400_000),
            Timer(4_000_000),
            Run(150_000)
        ]
    );
    assert!(!t(&x, 20).absolute);
    assert_eq!(
        steps(&x, 20),
        vec![
            Run(100_000),
            Sleep(500_000),
            Run(300_000),
            Sleep(500_000),
            Run(200_000),
            Sleep(500_000),
            Run(400_000),
            Sleep(500_000),
            Run(150_000)
        ]
    );
    // The timer's periods are the intervals between its expiries, the first from the
    // task's start; its program has the timer (absolute: a late task keeps the grid).
    let sem = |_: u32| crate::ids::SemId(0);
    let task = |_: u32| crate::ids::TaskRef(0);
    let ev = extract::events(&t(&x, 10), &sem, &task);
    let periods: Vec<u64> = ev
        .iter()
        .filter_map(|e| match e {
            crate::program::Event::Timer { period_ns, .. } => Some(*period_ns),
            _ => None,
        })
        .collect();
    assert_eq!(periods, vec![1_000_000; 4]);
    let (spec, _) = build(
        &p,
        &Options::default(),
        "p.txt",
        "trace:p.txt",
        &Room::default(),
    )
    .unwrap();
    let timers: Vec<_> = spec
        .tasks
        .iter()
        .map(|t| {
            t.program
                .local_timers
                .iter()
                .map(|s| s.relative)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(timers, vec![vec![false], vec![]]);

    let rel = extract::extract(
        &p,
        &Options {
            sleeps: Sleeps::Relative,
            ..Options::default()
        },
    );
    assert_eq!(steps(&rel, 10)[1], Sleep(900_000));
    assert!(rel.tasks.iter().all(|t| !t.absolute));
    let abs = extract::extract(
        &p,
        &Options {
            sleeps: Sleeps::Absolute,
            ..Options::default()
        },
    );
    assert_eq!(steps(&abs, 20)[1], Timer(600_000));
}

/// The periodicity rule: steady intervals with varying sleeps are periodic, a missed period
/// (a double interval) and one re-based grid keep it so; steady sleeps with varying
/// intervals are not; too few wake-ups, or intervals off any grid, are not.
#[test]
fn which_interrupt_wakeups_are_periodic() {
    let ms = 1_000_000u64;
    let grid = |ts: &[u64], lens: &[u64]| -> Vec<(u64, u64)> {
        ts.iter().zip(lens).map(|(&t, &l)| (t, l)).collect()
    };
    assert!(extract::is_periodic(&grid(
        &[ms, 2 * ms, 3 * ms, 4 * ms],
        &[900_000, 700_000, 800_000, 600_000]
    )));
    // A period missed (4 -> 6 ms) and a grid re-based once (6 -> 7.3 ms).
    assert!(extract::is_periodic(&grid(
        &[
            ms,
            2 * ms,
            3 * ms,
            4 * ms,
            6 * ms,
            7_300_000,
            8_300_000,
            9_300_000,
            10_300_000
        ],
        &[
            900_000, 700_000, 800_000, 100_000, 300_000, 100_000, 800_000, 700_000, 900_000
        ]
    )));
    // Sleeps of 500 us after runs of 100 to 400 us.
    assert!(!extract::is_periodic(&grid(
        &[600_000, 1_400_000, 2_100_000, 3_000_000, 3_650_000],
        &[500_000; 5]
    )));
    assert!(!extract::is_periodic(&grid(&[ms, 2 * ms], &[ms, ms])));
    assert!(!extract::is_periodic(&grid(
        &[ms, 2 * ms, 5 * ms, 5_500_000, 9_000_000],
        &[900_000, 700_000, 800_000, 600_000, 100_000]
    )));
}

#[test]
fn capacity_and_sleeps_keys() {
    let o = parse_options("capacity=462x2,1024x2,sleeps=relative").unwrap();
    assert_eq!(o.capacity, Some(vec![462, 462, 1024, 1024]));
    assert_eq!(o.sleeps, Sleeps::Relative);
    assert_eq!(parse_options("").unwrap().sleeps, Sleeps::Auto);
    assert_eq!(
        parse_options("sleeps=absolute").unwrap().sleeps,
        Sleeps::Absolute
    );
    for bad in [
        "capacity=0",
        "capacity=2048",
        "capacity=512x0",
        "capacity=big",
        // A count that would overflow the list's length: refused, not wrapped.
        "capacity=1,1x18446744073709551615",
        "capacity=512x8193",
    ] {
        let e = parse_options(bad).unwrap_err();
        assert!(e.to_string().contains("1..=1024"), "{bad}: {e}");
    }
    let e = parse_options("sleeps=sometimes").unwrap_err();
    assert!(e.to_string().contains("auto, absolute, relative"), "{e}");
}
