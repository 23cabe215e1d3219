use super::*;

#[test]
fn ftrace_lines_have_trace_cmd_reports_layout() {
    let mut t = Trace::new(2);
    let a = t.add_task("worker one", 0);
    let b = t.add_task("hog", -5);
    t.push(
        1_500,
        0,
        0,
        TraceEvent::Waking {
            pid: a,
            target_cpu: 1,
        },
    );
    t.push(
        2_000_123,
        1,
        0,
        TraceEvent::Switch {
            prev_pid: 0,
            prev_state: PrevState::Runnable,
            next_pid: a,
        },
    );
    t.push(
        2_000_000,
        0,
        b,
        TraceEvent::Migrate {
            pid: a,
            orig_cpu: 0,
            dest_cpu: 1,
        },
    );
    t.push(
        3_000_000,
        1,
        a,
        TraceEvent::PeltCfs {
            load: 1024,
            runnable: 1100,
            util: 700,
            update_time: 2_998_272,
        },
    );
    t.push(
        3_000_001,
        1,
        a,
        TraceEvent::Wakeup {
            pid: b,
            target_cpu: 1,
        },
    );
    t.push(
        3_000_002,
        1,
        a,
        TraceEvent::Fork {
            parent_pid: a,
            child_pid: b,
        },
    );
    t.push(
        3_000_003,
        1,
        a,
        TraceEvent::Charge {
            what: Charge::Ttwu {
                sync: true,
                irq: false,
            },
            cost_ns: 734,
        },
    );
    t.push(
        3_000_003,
        1,
        a,
        TraceEvent::Switch {
            prev_pid: a,
            prev_state: PrevState::Preempted,
            next_pid: b,
        },
    );
    let mut out = Vec::new();
    t.write_ftrace(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "cpus=2",
            "          <idle>-0     [000]     0.000001500: sched_waking: \
             comm=worker_one pid=1 prio=120 target_cpu=001",
            "             hog-2     [000]     0.002000000: sched_migrate_task: \
             comm=worker_one pid=1 prio=120 orig_cpu=0 dest_cpu=1",
            "          <idle>-0     [001]     0.002000123: sched_switch: \
             prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> \
             next_comm=worker_one next_pid=1 next_prio=120",
            "      worker_one-1     [001]     0.003000000: sched_pelt_cfs: cpu=1 path=/ \
             load=1024 runnable=1100 util=700 update_time=2998272",
            "      worker_one-1     [001]     0.003000001: sched_wakeup: \
             comm=hog pid=2 prio=115 target_cpu=001",
            "      worker_one-1     [001]     0.003000002: sched_process_fork: \
             comm=worker_one pid=1 child_comm=hog child_pid=2",
            "      worker_one-1     [001]     0.003000003: lbsim_charge: cpu=1 cost=734 \
             what=ttwu sync=1 irq=0",
            "      worker_one-1     [001]     0.003000003: sched_switch: \
             prev_comm=worker_one prev_pid=1 prev_prio=120 prev_state=R+ ==> \
             next_comm=hog next_pid=2 next_prio=115",
        ]
    );
    assert_eq!(
        t.event_counts(),
        [
            ("lbsim_charge", 1),
            ("sched_migrate_task", 1),
            ("sched_pelt_cfs", 1),
            ("sched_process_fork", 1),
            ("sched_switch", 2),
            ("sched_wakeup", 1),
            ("sched_waking", 1),
        ]
    );
    assert_eq!(t.tasks[1].prio, 115);
}

/// A protobuf field as read back: (field number, varint value or bytes).
#[derive(Debug, PartialEq)]
enum F {
    V(u32, u64),
    B(u32, Vec<u8>),
}

fn decode(mut b: &[u8]) -> Vec<F> {
    fn varint(b: &mut &[u8]) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
            shift += 7;
        }
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        let field = (key >> 3) as u32;
        match key & 7 {
            0 => out.push(F::V(field, varint(&mut b))),
            2 => {
                let n = varint(&mut b) as usize;
                out.push(F::B(field, b[..n].to_vec()));
                b = &b[n..];
            }
            w => panic!("unexpected wire type {w}"),
        }
    }
    out
}

fn msg(fields: &[F], n: u32) -> Vec<F> {
    fields
        .iter()
        .find_map(|f| match f {
            F::B(k, b) if *k == n => Some(decode(b)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no field {n} in {fields:?}"))
}

#[test]
fn perfetto_packets_carry_system_info_names_and_per_cpu_ftrace_bundles() {
    let mut t = Trace::new(2);
    let a = t.add_task("w", 0);
    t.push(
        5_000,
        1,
        0,
        TraceEvent::Switch {
            prev_pid: 0,
            prev_state: PrevState::Runnable,
            next_pid: a,
        },
    );
    t.push(
        1_000,
        1,
        0,
        TraceEvent::Waking {
            pid: a,
            target_cpu: 1,
        },
    );
    t.push(
        7_000,
        1,
        a,
        TraceEvent::PeltCfs {
            load: 1024,
            runnable: 900,
            util: 512,
            update_time: 6_144,
        },
    );
    t.push(
        9_000,
        1,
        a,
        TraceEvent::Switch {
            prev_pid: a,
            prev_state: PrevState::Preempted,
            next_pid: 0,
        },
    );
    let mut out = Vec::new();
    t.write_perfetto(&mut out).unwrap();
    // Trace { repeated TracePacket packet = 1 }.
    let packets: Vec<Vec<F>> = decode(&out)
        .into_iter()
        .map(|f| match f {
            F::B(1, b) => decode(&b),
            other => panic!("not a packet: {other:?}"),
        })
        .collect();
    assert_eq!(
        packets.len(),
        3,
        "system info, process tree, one bundle (CPU 1)"
    );
    // SystemInfo: utsname.sysname "Linux", release 6.12, num_cpus 2.
    let si = msg(&packets[0], 45);
    let uts = msg(&si, 1);
    assert!(uts.contains(&F::B(1, b"Linux".to_vec())));
    assert!(uts.contains(&F::B(3, b"6.12.0-lbsim".to_vec())));
    assert!(si.contains(&F::V(8, 2)));
    // ProcessTree: the task as process 1 and thread 1 named "w".
    let tree = msg(&packets[1], 2);
    let th = msg(&tree, 2);
    assert_eq!(th, [F::V(1, 1), F::B(2, b"w".to_vec()), F::V(3, 1)]);
    // The bundle of CPU 1: events in time order, waking first.
    let bundle = msg(&packets[2], 1);
    assert_eq!(bundle[0], F::V(1, 1));
    let events: Vec<Vec<F>> = bundle[1..]
        .iter()
        .map(|f| match f {
            F::B(2, b) => decode(b),
            other => panic!("not an event: {other:?}"),
        })
        .collect();
    // Waking, switch, three PELT counters, switch.
    assert_eq!(events.len(), 6);
    assert_eq!(events[0][0], F::V(1, 1_000));
    let counters: Vec<Vec<F>> = events[2..5].iter().map(|e| msg(e, 3)).collect();
    assert_eq!(counters[0][1], F::B(2, b"C|0|cpu1 util_avg|512\n".to_vec()));
    assert_eq!(
        counters[1][1],
        F::B(2, b"C|0|cpu1 runnable_avg|900\n".to_vec())
    );
    assert_eq!(
        counters[2][1],
        F::B(2, b"C|0|cpu1 load_avg|1024\n".to_vec())
    );
    let waking = msg(&events[0], 20);
    assert!(waking.contains(&F::V(5, 1)), "target_cpu 1");
    let sw = msg(&events[1], 4);
    assert_eq!(sw[0], F::B(1, b"swapper/1".to_vec()));
    assert!(sw.contains(&F::V(6, 1)), "next_pid 1");
    let sw = msg(&events[5], 4);
    assert!(sw.contains(&F::V(4, 0x100)), "R+ is TASK_REPORT_MAX");
    assert_eq!(
        events[5][1],
        F::V(2, 1),
        "common pid: the task switching out"
    );
}

#[test]
fn perfetto_lists_a_task_groups_tasks_under_one_process() {
    let mut t = Trace::new(1);
    let a = t.add_task_in("a", 0, Some("/A"));
    let r = t.add_task("r", 0);
    let b = t.add_task_in("b", 0, Some("/autogroup-1"));
    let c = t.add_task_in("c", 0, Some("/A"));
    assert_eq!((a, r, b, c), (1, 2, 3, 4));
    let mut out = Vec::new();
    t.write_perfetto(&mut out).unwrap();
    let packets: Vec<Vec<F>> = decode(&out)
        .into_iter()
        .map(|f| match f {
            F::B(1, b) => decode(&b),
            other => panic!("not a packet: {other:?}"),
        })
        .collect();
    let tree = msg(&packets[1], 2);
    let procs: Vec<Vec<F>> = tree
        .iter()
        .filter_map(|f| match f {
            F::B(1, b) => Some(decode(b)),
            _ => None,
        })
        .collect();
    let threads: Vec<Vec<F>> = tree
        .iter()
        .filter_map(|f| match f {
            F::B(2, b) => Some(decode(b)),
            _ => None,
        })
        .collect();
    // One process per group (pids after the tasks'), named by its path; the root group's
    // task is its own process.
    assert_eq!(
        procs,
        [
            vec![F::V(1, 5), F::V(2, 0), F::B(3, b"/A".to_vec())],
            vec![F::V(1, 6), F::V(2, 0), F::B(3, b"/autogroup-1".to_vec())],
            vec![F::V(1, 2), F::V(2, 0), F::B(3, b"r".to_vec())],
        ]
    );
    let tgids: Vec<(u64, u64)> = threads
        .iter()
        .map(|th| match (&th[0], &th[2]) {
            (F::V(1, tid), F::V(3, tgid)) => (*tid, *tgid),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(tgids, [(1, 5), (2, 2), (3, 6), (4, 5)]);
}

/// Each CPU's capacity opens the trace: in the ftrace text as LISA's sched_tp
/// `sched_cpu_capacity` at time 0 (after `cpus=`), in the Perfetto trace as the `CpuInfo`
/// packet (field 67) after `SystemInfo`, one `Cpu { capacity }` per CPU in CPU order. A trace
/// without capacities writes neither.
#[test]
fn cpu_capacities_open_the_trace() {
    let mut t = Trace::new(2);
    t.cpu_capacity = vec![462, 1024];
    let mut out = Vec::new();
    t.write_ftrace(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "cpus=2\n\
         \x20         <idle>-0     [000]     0.000000000: sched_cpu_capacity: cpu=0 capacity=462, capacity_orig=462\n\
         \x20         <idle>-0     [001]     0.000000000: sched_cpu_capacity: cpu=1 capacity=1024, capacity_orig=1024\n"
    );
    let mut out = Vec::new();
    t.write_perfetto(&mut out).unwrap();
    let packets: Vec<Vec<F>> = decode(&out)
        .into_iter()
        .map(|f| match f {
            F::B(1, b) => decode(&b),
            other => panic!("not a packet: {other:?}"),
        })
        .collect();
    let info = msg(&packets[1], 67);
    let caps: Vec<Vec<F>> = info
        .into_iter()
        .map(|f| match f {
            F::B(1, b) => decode(&b),
            other => panic!("not a Cpu: {other:?}"),
        })
        .collect();
    assert_eq!(caps.len(), 2);
    assert!(matches!(caps[0][..], [F::V(3, 462)]));
    assert!(matches!(caps[1][..], [F::V(3, 1024)]));

    let plain = Trace::new(2);
    let mut out = Vec::new();
    plain.write_ftrace(&mut out).unwrap();
    assert_eq!(out, b"cpus=2\n");
    let mut out = Vec::new();
    plain.write_perfetto(&mut out).unwrap();
    assert!(
        decode(&out).into_iter().all(
            |f| !matches!(&f, F::B(1, b) if decode(b).iter().any(|g| matches!(g, F::B(67, _))))
        )
    );
}
