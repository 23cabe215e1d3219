//! The sysfs and lscpu readers over in-memory text: each case a tree or an lscpu text in,
//! a summary of the machine (or the error) out.

use expect_test::{Expect, expect};

use super::sysfs::{self, SysfsFiles};
use super::{HostSpec, Probed, lscpu};
use crate::CpuId;

/// A tree from `path: contents` lines.
fn tree(text: &str) -> SysfsFiles {
    let mut t = SysfsFiles::new("/s");
    for l in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (path, contents) = l.split_once(':').expect("path: contents");
        t.insert(path.trim(), &format!("{}\n", contents.trim()));
    }
    t
}

/// The machine as one line per concern, then what was found and assumed.
fn summary(p: &Probed) -> String {
    let m = &p.machine;
    let masks = |f: &dyn Fn(CpuId) -> String| {
        let mut v: Vec<String> = (0..m.nr_cpus() as u32).map(|c| f(CpuId(c))).collect();
        v.dedup();
        let mut seen = Vec::new();
        v.retain(|x| {
            let new = !seen.contains(x);
            seen.push(x.clone());
            new
        });
        v.join(" ")
    };
    let mut out = format!(
        "cpus {} cores {} clusters {} llcs {} packages {} nodes {}\n",
        m.nr_cpus(),
        m.nr_cores(),
        m.nr_clusters(),
        m.nr_llcs(),
        m.nr_packages(),
        m.nr_nodes()
    );
    out += &format!("smt {}\n", masks(&|c| m.smt_mask(c).to_cpulist()));
    out += &format!("llc {}\n", masks(&|c| m.llc_mask(c).to_cpulist()));
    out += &format!("node {}\n", masks(&|c| m.node_mask(c).to_cpulist()));
    out += &format!(
        "capacity {}\n",
        super::runs_text(
            &(0..m.nr_cpus() as u32)
                .map(|c| m.capacity(CpuId(c)))
                .collect::<Vec<_>>()
        )
    );
    for f in &p.found {
        out += &format!("found: {f}\n");
    }
    for a in &p.assumed {
        out += &format!("assumed: {a}\n");
    }
    out
}

fn check(t: &str, expect: Expect) {
    let got = match sysfs::parse(&tree(t)) {
        Ok(p) => summary(&p),
        Err(e) => format!("error: {e}\n"),
    };
    expect.assert_eq(&got);
}

fn check_lscpu(text: &str, expect: Expect) {
    let got = match lscpu::parse(text, "f.txt") {
        Ok(p) => summary(&p),
        Err(e) => format!("error: {e}\n"),
    };
    expect.assert_eq(&got);
}

/// Two cores of two threads, one L2 each, one L3.
const SMT2: &str = "
    cpu/online: 0-3
    cpu/cpu0/topology/thread_siblings_list: 0,2
    cpu/cpu0/topology/physical_package_id: 0
    cpu/cpu0/topology/core_id: 0
    cpu/cpu1/topology/thread_siblings_list: 1,3
    cpu/cpu1/topology/physical_package_id: 0
    cpu/cpu1/topology/core_id: 1
    cpu/cpu2/topology/thread_siblings_list: 0,2
    cpu/cpu2/topology/physical_package_id: 0
    cpu/cpu2/topology/core_id: 0
    cpu/cpu3/topology/thread_siblings_list: 1,3
    cpu/cpu3/topology/physical_package_id: 0
    cpu/cpu3/topology/core_id: 1
";

#[test]
fn spec_forms() {
    assert_eq!(HostSpec::parse("host"), Some(HostSpec::Host));
    assert_eq!(HostSpec::parse("sysfs:/x"), Some(HostSpec::Sysfs("/x")));
    assert_eq!(
        HostSpec::parse("lscpu:a.txt"),
        Some(HostSpec::Lscpu("a.txt"))
    );
    assert_eq!(HostSpec::parse("hikey"), None);
    assert!(matches!(
        crate::parse_machine("host"),
        Err(crate::SpecError::NeedsHost { .. })
    ));
}

#[test]
fn smt_siblings_without_caches_nodes_or_capacities() {
    check(
        SMT2,
        expect![[r#"
            cpus 4 cores 2 clusters 1 llcs 1 packages 1 nodes 1
            smt 0,2 1,3
            llc 0-3
            node 0-3
            capacity 1024x4
            found: 4 CPUs (cpu/online: 0-3)
            found: 2 cores, 2 threads per core (topology/thread_siblings_list)
            found: 1 package (topology/physical_package_id)
            assumed: LLCs: no cpu*/cache; each package its own LLC
            assumed: capacities: no cpu_capacity; every CPU 1024
            assumed: nodes: no node/node*; one node
            assumed: clusters: topology/cluster_id gives none; no cluster level
            assumed: smt_throughput 1.2 (lbsim's default; sysfs does not show how siblings share a core)
            assumed: idle states: no cpu*/cpuidle; no cpuidle driver, as the kernel without one (default_idle_call(), no rq->idle_state)
        "#]],
    );
}

#[test]
fn caches_capacities_nodes_and_idle_states() {
    let mut t = String::new();
    for cpu in 0..4 {
        let half = if cpu < 2 { "0-1" } else { "2-3" };
        t += &format!(
            "cpu/cpu{cpu}/topology/thread_siblings_list: {cpu}
             cpu/cpu{cpu}/topology/physical_package_id: {}
             cpu/cpu{cpu}/topology/cluster_id: {}
             cpu/cpu{cpu}/cache/index0/level: 1
             cpu/cpu{cpu}/cache/index0/type: Data
             cpu/cpu{cpu}/cache/index0/shared_cpu_list: {cpu}
             cpu/cpu{cpu}/cache/index1/level: 2
             cpu/cpu{cpu}/cache/index1/type: Unified
             cpu/cpu{cpu}/cache/index1/shared_cpu_list: {half}
             cpu/cpu{cpu}/cpu_capacity: {}
             cpu/cpu{cpu}/cpuidle/state0/name: WFI
             cpu/cpu{cpu}/cpuidle/state0/latency: 1
             cpu/cpu{cpu}/cpuidle/state0/residency: 1
             cpu/cpu{cpu}/cpuidle/state1/name: cpu-sleep
             cpu/cpu{cpu}/cpuidle/state1/latency: 100
             cpu/cpu{cpu}/cpuidle/state1/residency: 1000
             cpu/cpu{cpu}/cpuidle/state1/flags: TIMER_STOP
             cpu/cpu{cpu}/cpuidle/state1/disable: {}
            ",
            cpu / 2,
            cpu / 2,
            if cpu < 2 { 446 } else { 1024 },
            u32::from(cpu == 3),
        );
    }
    t += "node/node0/cpulist: 0-1\nnode/node0/distance: 10 21\nnode/node1/cpulist: 2-3\nnode/node1/distance: 21 10\ncpu/cpuidle/current_driver: psci_idle\n";
    check(
        &t,
        expect![[r#"
            cpus 4 cores 4 clusters 2 llcs 2 packages 2 nodes 2
            smt 0 1 2 3
            llc 0-1 2-3
            node 0-1 2-3
            capacity 446x2,1024x2
            found: 4 CPUs (cpu/cpu*/topology: 0-3)
            found: 4 cores, 1 thread per core (topology/thread_siblings_list)
            found: 2 packages (topology/physical_package_id)
            found: 2 LLCs, L2 (cpu*/cache/index*/shared_cpu_list)
            found: capacities 446x2,1024x2 (cpu_capacity)
            found: 2 nodes: node0, node1 (node/node*/cpulist)
            found: distances 10,21;21,10 (node/node*/distance)
            found: 2 clusters (topology/cluster_id)
            found: idle states of cpus 0-2 (psci_idle): WFI 1/1 us, cpu-sleep 100/1000 us
            found: idle states of cpus 3 (psci_idle): WFI 1/1 us
            assumed: node_reclaim_distance 30 (RECLAIM_DISTANCE; sysfs does not show x86's 32 on AMD Zen)
            assumed: idle states: exit_ns = the declared latency (sysfs has no hardware exit time); a state wakes by a store only if it polls or its desc names MWAIT
            assumed: idle state state1 (cpu-sleep) of cpus 3 is disabled: left out
        "#]],
    );
    let p = sysfs::parse(&tree(&t)).unwrap();
    let s = &p.machine.idle_states(CpuId(0)).states[1];
    assert_eq!(
        (s.exit_latency_ns, s.target_residency_ns, s.exit_ns),
        (100_000, 1_000_000, 100_000)
    );
    assert!(s.timer_stop && !s.polling && !s.wake_by_store);
}

#[test]
fn bad_trees_name_the_file() {
    for (t, want) in [
        (
            SMT2.replace(
                "cpu/cpu2/topology/thread_siblings_list: 0,2",
                "cpu/cpu2/topology/thread_siblings_list: 2",
            ),
            "error: /s/cpu/cpu2/topology/thread_siblings_list: lists 2 but cpu 0's lists 0,2",
        ),
        (
            SMT2.replace(
                "siblings_list: 1,3\n    cpu/cpu1/topology/physical_package_id",
                "siblings_list: 1-x\n    cpu/cpu1/topology/physical_package_id",
            ),
            "error: /s/cpu/cpu1/topology/thread_siblings_list: `1-x` is not a cpulist",
        ),
        (
            SMT2.replace("cpu/cpu3/topology/physical_package_id: 0", ""),
            "error: /s/cpu/cpu3/topology/physical_package_id: missing (every CPU needs its package)",
        ),
        (
            SMT2.replace(
                "cpu/cpu3/topology/core_id: 1",
                "cpu/cpu3/topology/core_id: 7",
            ),
            "error: /s/cpu/cpu3/topology/core_id: differs from that of cpu 1, its SMT sibling",
        ),
        (
            SMT2.replace("cpu/online: 0-3", "cpu/online: 0-2,4"),
            "error: /s/cpu/online: CPUs 0-2,4 are online",
        ),
        (
            format!("{SMT2}\ncpu/cpu0/cpu_capacity: 2000"),
            "error: /s/cpu/cpu0/cpu_capacity: `2000` is not a capacity (1..=1024)",
        ),
        (
            format!("{SMT2}\ncpu/cpu0/cpu_capacity: 1024"),
            "error: /s/cpu/cpu1/cpu_capacity: missing",
        ),
        (
            format!("{SMT2}\nnode/node0/cpulist: 0-1\nnode/node1/cpulist: 1-3"),
            "error: /s/node/node1/cpulist: lists cpu 1, which node0 lists too",
        ),
        (
            format!("{SMT2}\nnode/node0/cpulist: 0-3\nnode/node0/distance: 10 20"),
            "error: /s/node/node0/distance: `10 20` has 2 distances; there are 1 nodes",
        ),
        (
            format!(
                "{SMT2}\nnode/node0/cpulist: 0,2\nnode/node1/cpulist: 1,3\nnode/node0/distance: 10 5\nnode/node1/distance: 5 10"
            ),
            "error: /s: distance of node 0 to node 1 is 5",
        ),
        (
            format!(
                "{SMT2}\ncpu/cpu0/cpuidle/state0/name: C1\ncpu/cpu0/cpuidle/state0/latency: lots\ncpu/cpu0/cpuidle/state0/residency: 1"
            ),
            "error: /s/cpu/cpu0/cpuidle/state0/latency: `lots` is not a time in us",
        ),
        (
            "cpu/cpuidle/current_driver: none".to_owned(),
            "error: /s/cpu: no CPU found",
        ),
    ] {
        let got = match sysfs::parse(&tree(&t)) {
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("error: {e}"),
        };
        assert!(got.starts_with(want), "{got}\n  wanted {want}");
        assert_eq!(got.lines().count(), 1, "{got}");
    }
}

#[test]
fn only_the_files_read_are_wanted() {
    for (rel, file, dir) in [
        ("cpu/cpu12/topology/core_id", true, false),
        ("cpu/cpu12/topology/core_cpus", false, false),
        ("cpu/cpu1/cache/index3/shared_cpu_list", true, false),
        ("cpu/cpu1/cache/index3", false, true),
        ("cpu/cpu1/node0", false, false),
        ("cpu/cpufreq", false, false),
        ("cpu", false, true),
        ("", false, true),
        ("node/node1/distance", true, false),
        ("node/node1/meminfo", false, false),
        ("node/nodex", false, false),
    ] {
        assert_eq!(sysfs::wanted(rel), file, "{rel}");
        assert_eq!(sysfs::descend(rel), dir, "{rel}");
    }
}

#[test]
fn lscpu_colon_layout() {
    check_lscpu(
        "# The following is the parsable format, which can be fed to other
# programs. Each different item in every column has an unique ID
# starting usually from zero.
# CPU,Core,Socket,Node,Cluster,L1d:L1i:L2:L3
0,0,0,0,,0:0:0:0
1,0,0,0,,0:0:0:0
2,1,0,0,,1:1:1:0
3,1,0,0,,1:1:1:0
4,2,1,1,,2:2:2:1
5,2,1,1,,2:2:2:1
6,3,1,1,,3:3:3:1
7,3,1,1,,3:3:3:1
",
        expect![[r#"
            cpus 8 cores 4 clusters 2 llcs 2 packages 2 nodes 2
            smt 0-1 2-3 4-5 6-7
            llc 0-3 4-7
            node 0-3 4-7
            capacity 1024x8
            found: 8 CPUs (lines with a CPU number)
            found: 2 packages (SOCKET)
            found: 4 cores of 8 CPUs (CORE)
            found: 2 LLCs, L3 (CACHE)
            found: 2 nodes: node0, node1 (NODE)
            assumed: clusters: CLUSTER gives none; no cluster level
            assumed: capacities: lscpu has none; every CPU 1024
            assumed: distances: lscpu has none; 10 local, 20 remote
            assumed: idle states: lscpu has none; no cpuidle driver
            assumed: smt_throughput 1.2 (lbsim's default; lscpu does not show how siblings share a core)
        "#]],
    );
}

#[test]
fn lscpu_compatible_layout_and_no_header() {
    // util-linux 2.38 prints this even for `-p=CPU,CORE,SOCKET,NODE,CLUSTER,CACHE`.
    check_lscpu(
        "# CPU,Core,Socket,Node,Cluster,,L1d,L1i,L2,L3\n0,0,0,0,,,0,0,0,0\n1,1,0,0,,,1,1,1,0\n",
        expect![[r#"
            cpus 2 cores 2 clusters 1 llcs 1 packages 1 nodes 1
            smt 0 1
            llc 0-1
            node 0-1
            capacity 1024x2
            found: 2 CPUs (lines with a CPU number)
            found: 1 package (SOCKET)
            found: 2 cores of 2 CPUs (CORE)
            found: 1 LLC, L3 (CACHE)
            found: 1 node: node0 (NODE)
            assumed: clusters: CLUSTER gives none; no cluster level
            assumed: capacities: lscpu has none; every CPU 1024
            assumed: idle states: lscpu has none; no cpuidle driver
        "#]],
    );
    check_lscpu(
        "0,0,0,,,0:0:0:0\n1,1,0,,,1:1:1:0\n",
        expect![[r#"
            cpus 2 cores 2 clusters 1 llcs 1 packages 1 nodes 1
            smt 0 1
            llc 0-1
            node 0-1
            capacity 1024x2
            found: 2 CPUs (lines with a CPU number)
            found: 1 package (SOCKET)
            found: 2 cores of 2 CPUs (CORE)
            found: 1 LLC, L3 (CACHE)
            assumed: columns: no header line; taken as CPU,CORE,SOCKET,NODE,CLUSTER,CACHE (L1d:L1i:L2:L3)
            assumed: nodes: no NODE; one node
            assumed: clusters: CLUSTER gives none; no cluster level
            assumed: capacities: lscpu has none; every CPU 1024
            assumed: idle states: lscpu has none; no cpuidle driver
        "#]],
    );
}

#[test]
fn bad_lscpu_names_the_line() {
    for (text, want) in [
        (
            "# CPU,Core\n0,0\n1\n",
            "f.txt line 3: `1` has 1 fields; the header names 2 columns",
        ),
        (
            "# CPU,Core\n0,0\nx,1\n",
            "f.txt line 3: `x` is not a CPU id",
        ),
        (
            "# CPU,Core\n0,0\n0,1\n",
            "f.txt line 3: cpu 0 is listed twice",
        ),
        (
            "# CPU,Core\n0,0\n2,1\n",
            "f.txt line 3: cpu 2 leaves a gap before it",
        ),
        (
            "# CPU,Core\n0,0\n1,\n",
            "f.txt line 3: the CORE field is empty but other lines give one",
        ),
        (
            "# CPU,Core,L2\n0,0,0:1\n",
            "f.txt line 2: `0:1` has 2 cache ids; the header names 1 (L2)",
        ),
        (
            "# CPU,Core,Socket,L3\n0,0,0,0\n1,1,1,0\n",
            "f.txt: cpu 1: llc 0 is in package 0 (cpu 0) but cpu 1 puts it in package 1",
        ),
        ("# nothing\n", "f.txt: no CPU found"),
    ] {
        let got = match lscpu::parse(text, "f.txt") {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.to_string(),
        };
        assert!(got.starts_with(want), "{got}\n  wanted {want}");
    }
}

/// An offline CPU's directory may carry any number, beyond any mask lbsim builds (found by
/// the `host` fuzz target: `cpu41024` panicked when the report listed it).
#[test]
fn offline_cpus_beyond_the_largest_mask_are_reported() {
    let text =
        format!("{SMT2}\ncpu/cpu41024/topology/core_id: 0\ncpu/cpu4294967295/topology/core_id: 0");
    let p = sysfs::parse(&tree(&text)).expect("a machine");
    assert_eq!(p.machine.nr_cpus(), 4);
    assert!(
        p.assumed
            .iter()
            .any(|l| l == "cpus 41024,4294967295 are offline: left out"),
        "{:?}",
        p.assumed
    );
}
