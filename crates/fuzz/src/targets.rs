//! The fuzz targets: one function per parser, and [`TARGETS`], the one list both drivers
//! and `cargo xtask fuzz --target NAME` read.
//!
//! Each function returns whether the input was accepted (parsed without error): the stable
//! driver keeps accepted inputs as new starting points, a poor man's coverage signal.

use std::path::Path;

use lbsim::budget::{Budget, MachineBudget};
use lbsim::scenario::{CostFile, ScenarioFile, settings_for};
use lbsim_sim::params::Settings;
use lbsim_sim::profile::{Profile, VERSIONS};
use lbsim_topology::{Machine, Topology, parse_file_text, parse_machine};
use lbsim_workload::parse_workloads_within;

/// The budget the parser targets check workloads against: the defaults, but at most 20,000
/// tasks. A workload within the default budget (1,000,000 tasks) is legitimate input, and
/// building 700,000 tasks takes 4 s in a release build but over the 30 s timeout in the
/// fuzz driver's debug build; the budget check itself is fuzzed the same with a lower limit.
pub fn fuzz_budget() -> Budget {
    Budget {
        max_tasks: 20_000,
        ..Budget::default()
    }
}

/// One fuzz target.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// Its name (`--target NAME`, `fuzz/corpus/NAME/`, `fuzz/fuzz_targets/NAME.rs`).
    pub name: &'static str,
    /// Runs one input; returns whether it was accepted. Panics on a failure.
    pub run: fn(&[u8]) -> bool,
    /// Tokens the stable driver's mutator inserts (keys, values, punctuation).
    pub dict: &'static [&'static str],
    /// Inputs `cargo xtask verify` runs on this target.
    pub verify_runs: u64,
}

/// Every target, in the order `cargo xtask fuzz` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "rtapp",
        run: rtapp,
        dict: RTAPP_DICT,
        verify_runs: 2000,
    },
    Target {
        name: "trace",
        run: trace,
        dict: TRACE_DICT,
        verify_runs: 2000,
    },
    Target {
        name: "topology",
        run: topology,
        dict: MACHINE_DICT,
        verify_runs: 2000,
    },
    Target {
        name: "machine-file",
        run: machine_file,
        dict: MACHINE_FILE_DICT,
        verify_runs: 2000,
    },
    Target {
        name: "host",
        run: host,
        dict: HOST_DICT,
        verify_runs: 2000,
    },
    Target {
        name: "workload",
        run: workload,
        dict: WORKLOAD_DICT,
        verify_runs: 2000,
    },
    Target {
        name: "scenario",
        run: scenario,
        dict: SCENARIO_DICT,
        verify_runs: 2000,
    },
    Target {
        name: "settings",
        run: settings,
        dict: SETTINGS_DICT,
        verify_runs: 2000,
    },
    Target {
        name: "cost-profile",
        run: cost_profile,
        dict: COST_PROFILE_DICT,
        verify_runs: 2000,
    },
    Target {
        name: "sim",
        run: crate::sim::sim,
        dict: &[],
        verify_runs: 40,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

const RTAPP_DICT: &[&str] = &[
    "\"tasks\"",
    "\"global\"",
    "\"instance\"",
    "\"loop\"",
    "\"phases\"",
    "\"run\"",
    "\"runtime\"",
    "\"sleep\"",
    "\"timer\"",
    "\"period\"",
    "\"ref\"",
    "\"lock\"",
    "\"unlock\"",
    "\"wait\"",
    "\"signal\"",
    "\"broad\"",
    "\"sync\"",
    "\"barrier\"",
    "\"suspend\"",
    "\"resume\"",
    "\"yield\"",
    "\"fork\"",
    "\"delay\"",
    "\"cpus\"",
    "\"policy\"",
    "\"priority\"",
    "\"SCHED_OTHER\"",
    "\"SCHED_FIFO\"",
    "\"SCHED_IDLE\"",
    "\"util_min\"",
    "\"util_max\"",
    "\"taskgroup\"",
    "\"duration\"",
    "\"calibration\"",
    "\"default_policy\"",
    "\"mutex\"",
    "\"res\"",
    "\"deadline\"",
    "\"mem\"",
    "\"iorun\"",
    "\"nice\"",
    "\"nodes_membind\"",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "-1",
    "true",
    "null",
    "1e9",
];

const TRACE_DICT: &[&str] = &[
    "cpus=",
    "#P:",
    " [000] ",
    " [001] d..2. ",
    " dNh4. ",
    "-1 ",
    "<idle>-0 ",
    " 1.000001: ",
    "sched_switch: ",
    "sched_waking: ",
    "sched_wakeup: ",
    "sched_wakeup_new: ",
    "sched_process_fork: ",
    "sched_process_exit: ",
    "prev_comm=",
    " prev_pid=",
    " prev_prio=",
    " prev_state=",
    " ==> ",
    "next_comm=",
    " next_pid=",
    " next_prio=",
    "comm=",
    " pid=",
    " prio=",
    " target_cpu=",
    " child_comm=",
    " child_pid=",
    "R+",
    "S",
    "D|K",
    "X",
    ":2300 [120] ",
    "\n",
    "\x0a",
    "\x12",
    "\x22",
    "\x08",
];

const MACHINE_DICT: &[&str] = &[
    "nodes=",
    "sockets=",
    "llcs=",
    "clusters=",
    "cores=",
    "threads=",
    "capacity=",
    "distance=",
    "numbering=",
    "node_reclaim_distance=",
    "smt_throughput=",
    "idle_states=",
    "preset=",
    "spread",
    "linear",
    "ideal",
    "x4",
    "hikey",
    "epyc-2s",
    "xeon-4s",
    ",",
    "=",
    ";",
    "10 20,20 10",
    "1024x",
    "skl",
    "zen2",
    "bdw",
    "hi6220",
    "power8",
];

const HOST_DICT: &[&str] = &[
    "lscpu\n",
    "@ cpu/online\n",
    "@ cpu/possible\n",
    "@ cpu/cpu0/topology/core_id\n",
    "@ cpu/cpu1/topology/physical_package_id\n",
    "@ cpu/cpu0/topology/thread_siblings_list\n",
    "@ cpu/cpu1/topology/cluster_id\n",
    "@ cpu/cpu0/topology/die_id\n",
    "@ cpu/cpu0/cache/index3/level\n",
    "@ cpu/cpu1/cache/index3/shared_cpu_list\n",
    "@ cpu/cpu0/cpu_capacity\n",
    "@ node/node0/cpulist\n",
    "@ node/node1/distance\n",
    "@ cpu/cpuidle/current_driver\n",
    "@ cpu/cpu0/cpuidle/state1/latency\n",
    "@ cpu/cpu0/cpuidle/state1/residency\n",
    "@ cpu/cpu0/cpuidle/state1/name\n",
    "@ cpu/cpu0/cpuidle/state1/disable\n",
    "# CPU,Core,Socket,Node,Cluster,L1d:L1i:L2:L3\n",
    "# CPU,Core,Socket,Node,,L1d,L1i,L2,L3\n",
    "0-3",
    "0,2",
    "10 21",
    "-1",
    "65535",
    "4294967295",
    "1024",
    "446",
    "\n",
    ",",
    ":",
];

const MACHINE_FILE_DICT: &[&str] = &[
    "nodes = ",
    "sockets = ",
    "llcs = ",
    "cores = ",
    "threads = ",
    "capacity = ",
    "distance = ",
    "numbering = ",
    "preset = ",
    "[[cpus]]\n",
    "node = ",
    "llc = ",
    "core = ",
    "cluster = ",
    "package = ",
    "\"nodes\":",
    "\"cpus\":",
    "\"capacity\":",
    "\"distance\":",
    "[[10,20],[20,10]]",
    "{",
    "}",
    "[",
    "]",
    "\n",
    "\"",
    "=",
    "4294967295",
];

const WORKLOAD_DICT: &[&str] = &[
    "busy:",
    "periodic:",
    "sysbench-cpu:",
    "hackbench:",
    "schbench:",
    "tbench:",
    "ebizzy:",
    "pipe:",
    "hogs:",
    "pingpong:",
    "threads=",
    "nice=",
    "run=",
    "period=",
    "groups=",
    "fds=",
    "loops=",
    "mode=thread",
    "ipc=pipe",
    "datasize=",
    "cpus=",
    "per_cpu=",
    "m=",
    "t=",
    "auto=",
    "runtime=",
    "clients=",
    "requests=",
    "jitter=",
    "1ms",
    "4us",
    "2s",
    "0-3",
    ",",
    "=",
    ":",
    "\n",
];

const COST_PROFILE_DICT: &[&str] = &[
    "format = 1\n",
    "[cost]\n",
    "cost_ipi_ns = ",
    "cost_wakeup_ns = ",
    "cost_context_switch_ns = ",
    "cost_poll_wake_ns = ",
    "[machine]\n",
    "[figures.pinned_round_trip]\n",
    "[derivations.cost_ipi_ns]\n",
    "[[cpuidle_states]]\n",
    "notes = [\"a\"]\n",
    "1000000000",
    "-1",
    "1.5",
    "\"",
    "=",
    "\n",
];

const SCENARIO_DICT: &[&str] = &[
    "description = ",
    "topology = ",
    "workloads = ",
    "duration = ",
    "features = ",
    "seed = ",
    "runs = ",
    "base = ",
    "patched = ",
    "kernel = ",
    "[tunables]\n",
    "migration_cost_ns = ",
    "imbalance_pct = ",
    "\"busy:threads=4\"",
    "\"hikey\"",
    "\"5.9\"",
    "\"1s\"",
    "\"NO_LB_RELAX_BY_FAILED\"",
    "[",
    "]",
    "\"",
    "\n",
    "=",
    "'''",
];

const SETTINGS_DICT: &[&str] = &[
    "NO_",
    "imbalance_pct=",
    "migration_cost_ns=",
    "hz=",
    "base_slice_ns=",
    "cpuidle=off",
    "smt_throughput=ideal",
    "background_wakeups_hz=",
    "cost_context_switch_ns=",
    "TTWU_QUEUE",
    "LB_RELAX_BY_FAILED",
    "NEXT_BUDDY",
    "WA_BIAS",
    "UTIL_EST",
    ",",
    "=",
    "\n",
];

/// Panics if an error message, as the binary prints it (`lbsim::errors::one_line`: causes
/// joined, control characters escaped), is not one line, whatever the input held.
fn one_line(what: &str, msg: &str) {
    let msg = lbsim::errors::one_line(&anyhow::Error::msg(msg.to_owned()));
    assert!(
        !msg.contains('\n') && !msg.contains('\r'),
        "{what}: an error message of more than one line: {msg:?}"
    );
}

/// Whether `text` would make a machine-spec parser open a file (a path), which targets
/// must not do: the machine-file target covers file contents.
fn names_a_file(text: &str) -> bool {
    let lower = text.trim().to_ascii_lowercase();
    text.contains('/') || lower.ends_with(".toml") || lower.ends_with(".json")
}

/// Checks `machine` against the default budget, then builds its sched domains, as
/// `lbsim topology` does.
fn build_topology(spec: &str, machine: &Machine) -> bool {
    if MachineBudget::default()
        .check("--topology", spec, machine)
        .is_err()
    {
        return false;
    }
    let sd = Settings::new(machine.nr_cpus() as u32).sd;
    match Topology::build(machine, &sd) {
        Ok(_) => true,
        Err(e) => {
            one_line("Topology::build", &e.to_string());
            false
        }
    }
}

/// rt-app JSON (`rtapp:FILE.json`): lbsim_workload's rt-app parser.
pub fn rtapp(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    match lbsim_workload::rtapp::parse_str(&text, "fuzz.json", "rtapp:fuzz.json") {
        Ok(_) => true,
        Err(e) => {
            one_line("rt-app", &e.to_string());
            false
        }
    }
}

/// Scheduler traces (`trace:FILE`): lbsim_workload's ftrace text and Perfetto protobuf
/// parsers, then the extraction of the replay's programs, each input read both ways (as a
/// text file and as a `.pftrace`).
pub fn trace(data: &[u8]) -> bool {
    use lbsim_workload::trace::{Options, build, parse_bytes};
    let room = lbsim_workload::Room::new(fuzz_budget().workload_limits());
    let mut accepted = false;
    for name in ["fuzz.txt", "fuzz.pftrace"] {
        match parse_bytes(name, data) {
            Ok(p) => match build(&p, &Options::default(), name, "trace:fuzz", &room) {
                Ok(_) => accepted = true,
                Err(e) => one_line("trace", &e.to_string()),
            },
            Err(e) => one_line("trace", &e.to_string()),
        }
    }
    accepted
}

/// Machine spec strings (`--topology`): CPU counts, `key=value` lists, presets.
pub fn topology(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    if names_a_file(&text) {
        return false;
    }
    match parse_machine(&text) {
        Ok(m) => build_topology(&text, &m),
        Err(e) => {
            one_line("parse_machine", &e.to_string());
            false
        }
    }
}

/// Machine files (TOML, or JSON when the text starts with `{`).
pub fn machine_file(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    match parse_file_text(&text, "fuzz.toml") {
        Ok(m) => build_topology("fuzz.toml", &m),
        Err(e) => {
            one_line("machine file", &e.to_string());
            false
        }
    }
}

/// Machines read from a real one (`sysfs:DIR`, `lscpu:FILE`): the pure readers of
/// `lbsim_topology::host` over text, as the binary gives them what it read. An input whose
/// first line is `lscpu` is the rest as `lscpu -p` output; any other is a sysfs tree, as
/// records: a line `@ REL` names a file relative to the root (a copy of
/// `/sys/devices/system`), and the lines up to the next record are its contents. Only the
/// files the binary's walk would read are kept (`sysfs::wanted`), and a tree with more CPU
/// directories than the default `--max-cpus` is refused as the walk refuses it.
pub fn host(data: &[u8]) -> bool {
    use lbsim_topology::host::{lscpu, sysfs};
    let text = String::from_utf8_lossy(data);
    let probed = if let Some(rest) = text.strip_prefix("lscpu\n") {
        lscpu::parse(rest, "fuzz.lscpu")
    } else {
        let mut files = sysfs::SysfsFiles::new("fuzz-sysfs");
        let mut cpu_dirs = std::collections::BTreeSet::new();
        let mut records = text.split("@ ");
        // Text before the first record belongs to no file.
        records.next();
        for record in records {
            let (rel, contents) = record.split_once('\n').unwrap_or((record, ""));
            let rel = rel.trim();
            if !sysfs::wanted(rel) {
                continue;
            }
            if let Some(dir) = rel.strip_prefix("cpu/").and_then(|r| r.split('/').next())
                && rel.len() > "cpu/".len() + dir.len()
            {
                cpu_dirs.insert(dir.to_owned());
            }
            files.insert(rel, contents);
        }
        if cpu_dirs.len() > MachineBudget::default().max_cpus as usize {
            return false;
        }
        sysfs::parse(&files)
    };
    match probed {
        Ok(p) => {
            for line in p.found.iter().chain(&p.assumed) {
                assert!(
                    !line.contains('\n'),
                    "host: a report line of more than one line: {line:?}"
                );
            }
            build_topology("sysfs:fuzz", &p.machine)
        }
        Err(e) => {
            one_line("host", &e.to_string());
            false
        }
    }
}

/// `--workload` options, one a line (rt-app files are left to the `rtapp` target).
pub fn workload(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let args: Vec<&str> = text.split('\n').take(4).collect();
    if args.iter().any(|a| {
        a.split(':')
            .next()
            .is_some_and(|n| n.trim() == "rtapp" || n.trim() == "trace")
    }) {
        return false;
    }
    match parse_workloads_within(&args, fuzz_budget().workload_limits()) {
        Ok(_) => true,
        Err(e) => {
            one_line("parse_workloads", &Budget::describe(&e));
            false
        }
    }
}

/// Scenario files (TOML). Files that name other files (a machine file, an rt-app file) are
/// skipped.
pub fn scenario(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    if text.contains('/')
        || text.contains("rtapp")
        || text.contains("trace")
        || text.contains(".toml")
        || text.contains(".json")
    {
        return false;
    }
    // A `cost` key names a cost profile (the cost-profile target covers their contents).
    if text
        .parse::<toml::Table>()
        .is_ok_and(|t| t.contains_key("cost"))
    {
        return false;
    }
    match ScenarioFile::parse_within(&text, Path::new("fuzz.toml"), &fuzz_budget()) {
        Ok(_) => true,
        Err(e) => {
            one_line("scenario file", &format!("{e:#}"));
            false
        }
    }
}

/// Cost profiles (`--cost FILE`, `lbsim calibrate`'s TOML), as the binary parses them: an
/// accepted one's values are stored into a cost model, as a run does.
pub fn cost_profile(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    match CostFile::parse(&text, Path::new("fuzz.toml")) {
        Ok(c) => {
            let mut s = Settings::new(2);
            c.values.apply(&mut s.cost);
            true
        }
        Err(e) => {
            one_line("cost profile", &format!("{e:#}"));
            false
        }
    }
}

/// `--features` and `--set` lists: the first byte picks the CPU count and the kernel
/// profile, the first line is a features list, every other line a `--set`.
pub fn settings(data: &[u8]) -> bool {
    let Some((&head, rest)) = data.split_first() else {
        return false;
    };
    let nr_cpus = u32::from(head % 64) + 1;
    let profile = match usize::from(head / 64) {
        0 => None,
        i => Profile::parse(VERSIONS[(i * 5) % VERSIONS.len()]).ok(),
    };
    let text = String::from_utf8_lossy(rest);
    let mut lines = text.split('\n');
    let features: Vec<String> = lines.next().map(str::to_owned).into_iter().collect();
    let sets: Vec<String> = lines.take(8).map(str::to_owned).collect();
    match settings_for(profile, nr_cpus, &features, &sets) {
        Ok(_) => true,
        Err(e) => {
            one_line("settings", &format!("{e:#}"));
            false
        }
    }
}

#[cfg(test)]
mod tests;
