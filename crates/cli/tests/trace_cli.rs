//! `lbsim run --trace` read by other people's parsers (issue 14): the ftrace text by trappy and
//! LISA (Python packages, used when they can be imported; skipped with the reason otherwise),
//! the protobuf decoded against Perfetto's own `perfetto_trace.proto` (vendored under
//! `third_party/perfetto/`), both with the exact event counts of the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use protobuf::MessageDyn;
use protobuf::reflect::{
    FieldDescriptor, FileDescriptor, MessageDescriptor, ReflectFieldRef, ReflectValueRef,
};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("the lbsim binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("trace_cli");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

/// A small traced run (forks, wake-ups through wake lists and direct, migrations, exits):
/// hackbench on the hikey preset for 50 ms, written to `path`.
fn traced_run(path: &Path) {
    let out = lbsim(&[
        "run",
        "--topology",
        "hikey",
        "--workload",
        "hackbench:groups=1,loops=20",
        "--duration",
        "50ms",
        "--trace",
        path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The events of an ftrace text trace and how many lines each has, read from the line layout
/// (`COMM-PID [CPU] SECONDS.NANOSECONDS: EVENT: ...`).
fn text_counts(text: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("cpus="));
    for line in lines {
        let after_cpu = line.split_once("] ").expect("[CPU]").1;
        let (ts, rest) = after_cpu.split_once(": ").expect("timestamp");
        let (sec, ns) = ts.trim().split_once('.').expect("SECONDS.NANOSECONDS");
        assert!(sec.parse::<u64>().is_ok() && ns.len() == 9, "{line}");
        let event = rest.split_once(": ").expect("event").0;
        *counts.entry(event.to_owned()).or_default() += 1;
    }
    counts
}

/// The kernel's events lbsim writes (LISA and trappy know them all).
const SCHED_EVENTS: [&str; 7] = [
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_process_fork",
    "sched_process_exit",
    "sched_migrate_task",
];

/// Prints, as JSON, the number of rows trappy's and LISA's dataframes have for each event.
const READER: &str = r#"
import json, sys, warnings
warnings.filterwarnings("ignore")
path, events = sys.argv[1], sys.argv[2].split(",")
import trappy
from lisa.trace import Trace
tr = trappy.FTrace(path, events=events, normalize_time=False)
t = Trace(path, events=events)
states = t.ana.tasks.df_task_states(int(sys.argv[3]))
print(json.dumps({
    "trappy": {e: len(getattr(tr, e).data_frame) for e in events},
    "lisa": {e: len(t.df_event(e)) for e in events},
    "lisa_task_states": len(states),
}))
"#;

/// The Python with trappy and LISA: `LBSIM_PYTHON`, else the project's scratch venv, else
/// `python3`; `Err` says why none can import them.
fn python_with_parsers() -> Result<String, String> {
    let candidates: Vec<String> = match std::env::var("LBSIM_PYTHON") {
        Ok(p) => vec![p],
        Err(_) => vec![
            "/work/scratch/pyenv/bin/python".to_owned(),
            "python3".to_owned(),
        ],
    };
    let mut why = Vec::new();
    for py in candidates {
        match Command::new(&py)
            .args(["-c", "import trappy, lisa.trace"])
            .output()
        {
            Ok(o) if o.status.success() => return Ok(py),
            Ok(o) => why.push(format!(
                "{py}: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            )),
            Err(e) => why.push(format!("{py}: {e}")),
        }
    }
    Err(why.join("; "))
}

#[test]
fn trappy_and_lisa_read_the_ftrace_text_with_the_runs_event_counts() {
    let path = scratch("hackbench.txt");
    traced_run(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let counts = text_counts(&text);
    for e in SCHED_EVENTS {
        assert!(
            counts.get(e).copied().unwrap_or(0) > 0,
            "no {e}: {counts:?}"
        );
    }
    // Every wake-up that wakes (sched_waking) ends in ttwu_do_wakeup() (sched_wakeup); every
    // task created is forked, first woken and, here, exits.
    assert_eq!(counts["sched_waking"], counts["sched_wakeup"]);
    assert_eq!(counts["sched_process_fork"], counts["sched_wakeup_new"]);
    assert_eq!(
        counts["sched_process_fork"], 40,
        "hackbench -g 1: 20 senders, 20 receivers"
    );
    assert_eq!(counts["sched_process_exit"], 40);

    let py = match python_with_parsers() {
        Ok(py) => py,
        Err(why) => {
            println!("skipped the trappy/LISA check: {why}");
            return;
        }
    };
    // Task 9 is the first receiver (pids 1-8 are the per-CPU kernel threads).
    let out = Command::new(&py)
        .args([
            "-c",
            READER,
            path.to_str().unwrap(),
            &SCHED_EVENTS.join(","),
            "9",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for tool in ["trappy", "lisa"] {
        for e in SCHED_EVENTS {
            assert_eq!(
                v[tool][e].as_u64(),
                Some(counts[e] as u64),
                "{tool} {e}: {v}"
            );
        }
    }
    assert!(v["lisa_task_states"].as_u64().unwrap() > 10, "{v}");
}

#[test]
fn files_named_pb_or_perfetto_get_protobuf() {
    let mut bodies = Vec::new();
    for name in ["t.pftrace", "t.perfetto-trace", "t.pb", "t.perfetto"] {
        let p = scratch(name);
        traced_run(&p);
        bodies.push(std::fs::read(&p).unwrap());
    }
    // TracePacket 1, length-delimited: 0x0a.
    assert_eq!(bodies[0][0], 0x0a);
    assert!(bodies.iter().all(|b| b == &bodies[0]));
    let p = scratch("t.trace");
    traced_run(&p);
    assert!(std::fs::read_to_string(&p).unwrap().starts_with("cpus=8\n"));
}

/// Perfetto's `Trace` message, from the vendored proto.
fn trace_descriptor() -> MessageDescriptor {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../third_party/perfetto");
    let parsed = protobuf_parse::Parser::new()
        .pure()
        .include(&dir)
        .input(dir.join("perfetto_trace.proto"))
        .parse_and_typecheck()
        .expect("perfetto_trace.proto parses");
    let files =
        FileDescriptor::new_dynamic_fds(parsed.file_descriptors, &[]).expect("descriptors build");
    files
        .iter()
        .find_map(|f| f.message_by_package_relative_name("Trace"))
        .expect("message Trace")
}

/// The fields `m` sets: (name, value) for each set optional field and each element of a
/// repeated one.
fn set_fields<'a>(m: &'a dyn MessageDyn) -> Vec<(FieldDescriptor, ReflectValueRef<'a>)> {
    let d = m.descriptor_dyn();
    let mut out = Vec::new();
    for f in d.fields() {
        match f.get_reflect(m) {
            ReflectFieldRef::Optional(o) => {
                if let Some(v) = o.value() {
                    out.push((f.clone(), v));
                }
            }
            ReflectFieldRef::Repeated(r) => {
                for i in 0..r.len() {
                    out.push((f.clone(), r.get(i)));
                }
            }
            ReflectFieldRef::Map(_) => panic!("no map field expected: {}", f.name()),
        }
    }
    out
}

/// Checks that `m` and every message in it has no field the proto does not know.
fn no_unknown_fields(m: &dyn MessageDyn, path: &str) {
    assert_eq!(
        m.unknown_fields_dyn().iter().count(),
        0,
        "{path}: fields the proto does not define"
    );
    for (f, v) in set_fields(m) {
        if let ReflectValueRef::Message(sub) = v {
            no_unknown_fields(&*sub, &format!("{path}.{}", f.name()));
        }
    }
}

fn get<'a>(m: &'a dyn MessageDyn, name: &str) -> Option<ReflectValueRef<'a>> {
    set_fields(m)
        .into_iter()
        .find(|(f, _)| f.name() == name)
        .map(|(_, v)| v)
}

fn as_u64(v: ReflectValueRef<'_>) -> u64 {
    match v {
        ReflectValueRef::U64(x) => x,
        ReflectValueRef::U32(x) => u64::from(x),
        ReflectValueRef::I32(x) => x as u64,
        ReflectValueRef::I64(x) => x as u64,
        other => panic!("not an integer: {other:?}"),
    }
}

#[test]
fn the_protobuf_decodes_against_perfettos_proto_with_the_runs_event_counts() {
    let pb = scratch("hackbench.pftrace");
    traced_run(&pb);
    let txt = scratch("hackbench-same.txt");
    traced_run(&txt);
    let counts = text_counts(&std::fs::read_to_string(&txt).unwrap());

    let trace_d = trace_descriptor();
    let bytes = std::fs::read(&pb).unwrap();
    let trace = trace_d.parse_from_bytes(&bytes).expect("a valid Trace");
    no_unknown_fields(&*trace, "Trace");
    let packets: Vec<_> = set_fields(&*trace)
        .into_iter()
        .map(|(f, v)| {
            assert_eq!(f.name(), "packet");
            match v {
                ReflectValueRef::Message(m) => m,
                other => panic!("packet is {other:?}"),
            }
        })
        .collect();
    assert!(packets.len() > 3);
    let mut events: BTreeMap<String, usize> = BTreeMap::new();
    let mut prints: BTreeMap<String, usize> = BTreeMap::new();
    for (i, p) in packets.iter().enumerate() {
        let names: Vec<String> = set_fields(&**p)
            .iter()
            .map(|(f, _)| f.name().to_owned())
            .collect();
        assert_eq!(names.len(), 2, "packet {i}: {names:?}");
        assert!(
            names.contains(&"trusted_packet_sequence_id".to_owned()),
            "packet {i}: {names:?}"
        );
        let body = names
            .iter()
            .find(|n| *n != "trusted_packet_sequence_id")
            .unwrap();
        match (i, body.as_str()) {
            (0, "system_info") => {
                let si = get(&**p, "system_info").unwrap().to_message().unwrap();
                assert_eq!(as_u64(get(&*si, "num_cpus").unwrap()), 8);
                let uts = get(&*si, "utsname").unwrap().to_message().unwrap();
                assert_eq!(get(&*uts, "sysname").unwrap().to_str(), Some("Linux"));
                assert!(
                    get(&*uts, "release")
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .starts_with("6.12")
                );
            }
            (1, "cpu_info") => {
                // One Cpu per CPU, each with its capacity (a symmetric machine: 1024).
                let info = get(&**p, "cpu_info").unwrap().to_message().unwrap();
                let caps: Vec<u64> = set_fields(&*info)
                    .iter()
                    .filter(|(f, _)| f.name() == "cpus")
                    .map(|(_, v)| {
                        let c = v.to_message().unwrap();
                        as_u64(get(&*c, "capacity").unwrap())
                    })
                    .collect();
                assert_eq!(caps, vec![1024; 8]);
            }
            (2, "process_tree") => {
                let tree = get(&**p, "process_tree").unwrap().to_message().unwrap();
                let threads = set_fields(&*tree)
                    .iter()
                    .filter(|(f, _)| f.name() == "threads")
                    .count();
                // 8 kernel threads and hackbench's 40 tasks.
                assert_eq!(threads, 48);
            }
            (i, "ftrace_events") if i >= 3 => {
                let b = get(&**p, "ftrace_events").unwrap().to_message().unwrap();
                assert!(
                    get(&*b, "cpu").is_some(),
                    "packet {i}: a bundle names its CPU"
                );
                let mut last = 0u64;
                for (f, ev) in set_fields(&*b) {
                    if f.name() != "event" {
                        assert_eq!(f.name(), "cpu");
                        continue;
                    }
                    let ev = ev.to_message().unwrap();
                    let fields: Vec<String> = set_fields(&*ev)
                        .iter()
                        .map(|(f, _)| f.name().to_owned())
                        .collect();
                    assert_eq!(fields.len(), 3, "packet {i}: {fields:?}");
                    let ts = as_u64(get(&*ev, "timestamp").expect("timestamp"));
                    assert!(ts >= last, "packet {i}: events out of time order");
                    last = ts;
                    get(&*ev, "pid").expect("pid");
                    let kind = fields
                        .iter()
                        .find(|n| *n != "timestamp" && *n != "pid")
                        .unwrap()
                        .clone();
                    if kind == "print" {
                        let m = get(&*ev, "print").unwrap().to_message().unwrap();
                        let buf = get(&*m, "buf").unwrap().to_str().unwrap().to_owned();
                        let what = if buf.starts_with("I|") {
                            "lbsim_load_balance"
                        } else {
                            assert!(buf.starts_with("C|0|cpu"), "{buf}");
                            "pelt counter"
                        };
                        *prints.entry(what.to_owned()).or_default() += 1;
                    } else if kind == "generic" {
                        // lbsim's own lbsim_charge, with its fields by name.
                        let m = get(&*ev, "generic").unwrap().to_message().unwrap();
                        let name = get(&*m, "event_name").unwrap().to_str().unwrap().to_owned();
                        assert_eq!(name, "lbsim_charge");
                        let keys: Vec<String> = set_fields(&*m)
                            .iter()
                            .filter(|(f, _)| f.name() == "field")
                            .map(|(_, v)| {
                                let f = v.to_message().unwrap();
                                get(&*f, "name").unwrap().to_str().unwrap().to_owned()
                            })
                            .collect();
                        assert_eq!(keys[..3], ["cpu", "cost", "what"]);
                        assert!(keys.len() == 3 || keys[3..] == ["sync", "irq"], "{keys:?}");
                        *prints.entry(name).or_default() += 1;
                    } else {
                        *events.entry(kind).or_default() += 1;
                    }
                }
            }
            other => panic!("packet {i}: unexpected {other:?}"),
        }
    }
    for e in SCHED_EVENTS {
        assert_eq!(
            events.get(e),
            counts.get(e),
            "{e}: {events:?} vs {counts:?}"
        );
    }
    assert_eq!(events.len(), SCHED_EVENTS.len(), "{events:?}");
    assert_eq!(
        prints["lbsim_load_balance"], counts["lbsim_load_balance"],
        "one atrace instant per pass"
    );
    assert_eq!(
        prints["lbsim_charge"], counts["lbsim_charge"],
        "one generic event per charge"
    );
    assert_eq!(
        prints["pelt counter"],
        3 * counts["sched_pelt_cfs"],
        "util, runnable and load per sample"
    );
}

#[test]
fn the_protobuf_lists_each_task_groups_tasks_under_a_process_named_by_the_group() {
    let pb = scratch("groups.pftrace");
    let out = lbsim(&[
        "run",
        "--topology",
        "2",
        "--workload",
        "busy:threads=2,cgroup=/A",
        "--workload",
        "busy:threads=1,session=1",
        "--workload",
        "busy:threads=1",
        "--duration",
        "20ms",
        "--trace",
        pb.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = trace_descriptor()
        .parse_from_bytes(&std::fs::read(&pb).unwrap())
        .expect("a valid Trace");
    no_unknown_fields(&*trace, "Trace");
    let packets: Vec<_> = set_fields(&*trace)
        .into_iter()
        .map(|(_, v)| v.to_message().unwrap())
        .collect();
    // After SystemInfo and CpuInfo.
    let tree = get(&*packets[2], "process_tree")
        .unwrap()
        .to_message()
        .unwrap();
    let mut names: BTreeMap<u64, String> = BTreeMap::new();
    let mut tgid_of: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut threads: Vec<(u64, String, u64)> = Vec::new();
    for (f, v) in set_fields(&*tree) {
        let m = v.to_message().unwrap();
        match f.name() {
            "processes" => {
                let pid = as_u64(get(&*m, "pid").unwrap());
                let cmd = get(&*m, "cmdline").unwrap().to_str().unwrap().to_owned();
                names.insert(pid, cmd);
            }
            "threads" => threads.push((
                as_u64(get(&*m, "tid").unwrap()),
                get(&*m, "name").unwrap().to_str().unwrap().to_owned(),
                as_u64(get(&*m, "tgid").unwrap()),
            )),
            other => panic!("{other}"),
        }
    }
    for (tid, name, tgid) in &threads {
        let process = names
            .get(tgid)
            .unwrap_or_else(|| panic!("{tid}: no process {tgid}"));
        tgid_of.entry(process.clone()).or_default().push(*tid);
        if !process.starts_with('/') {
            // A task of the root group is a process of its own.
            assert_eq!((tid, name), (tgid, process));
        }
    }
    assert_eq!(tgid_of["/A"].len(), 2, "{tgid_of:?}");
    assert_eq!(tgid_of["/autogroup-1"].len(), 1, "{tgid_of:?}");
    // Two kernel threads, the root group's busy task, and nothing else outside a group.
    let own: usize = tgid_of
        .iter()
        .filter(|(p, _)| !p.starts_with('/'))
        .map(|(_, t)| t.len())
        .sum();
    assert_eq!(own, 3, "{tgid_of:?}");
}
