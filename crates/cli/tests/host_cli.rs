//! `--topology host`, `sysfs:DIR` and `lscpu:FILE`: the committed sysfs trees and lscpu
//! outputs (tests/fixtures/) build the machines they describe, this machine's sysfs builds
//! one, and broken inputs fail on one line naming the file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use expect_test::{Expect, expect};
use lbsim::budget::MachineBudget;
use lbsim_topology::CpuId;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("run lbsim")
}

/// The machine `spec` resolves to, one line per concern: counts, then each CPU set
/// (SMT siblings, clusters, LLCs, nodes) as its distinct masks, capacities, distances and
/// idle-state tables with the CPUs that have them.
fn summary(spec: &str) -> String {
    let r = match lbsim::host::resolve(spec, &MachineBudget::default()) {
        Ok(r) => r,
        Err(e) => return format!("error: {e:#}\n"),
    };
    let m = &r.machine;
    let cpus: Vec<CpuId> = (0..m.nr_cpus() as u32).map(CpuId).collect();
    let sets = |f: &dyn Fn(CpuId) -> String| {
        let mut seen: Vec<String> = Vec::new();
        for &c in &cpus {
            let s = f(c);
            if !seen.contains(&s) {
                seen.push(s);
            }
        }
        seen.join(" ")
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
    out += &format!("smt {}\n", sets(&|c| m.smt_mask(c).to_cpulist()));
    out += &format!("cluster {}\n", sets(&|c| m.cluster_mask(c).to_cpulist()));
    out += &format!("llc {}\n", sets(&|c| m.llc_mask(c).to_cpulist()));
    out += &format!("node {}\n", sets(&|c| m.node_mask(c).to_cpulist()));
    let mut caps: Vec<(u32, usize)> = Vec::new();
    for &c in &cpus {
        match caps.last_mut() {
            Some((v, n)) if *v == m.capacity(c) => *n += 1,
            _ => caps.push((m.capacity(c), 1)),
        }
    }
    let caps: Vec<String> = caps.iter().map(|(v, n)| format!("{v}x{n}")).collect();
    out += &format!("capacity {}\n", caps.join(","));
    let nodes = m.nr_nodes() as u32;
    let rows: Vec<String> = (0..nodes)
        .map(|a| {
            (0..nodes)
                .map(|b| m.node_distance(a, b).to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    out += &format!("distance {}\n", rows.join(";"));
    let idle = sets(&|c| {
        let t = m.idle_states(c);
        let states: Vec<String> = t
            .states
            .iter()
            .map(|s| {
                format!(
                    "{}:{}:{}:{}{}{}",
                    s.name,
                    s.exit_latency_ns,
                    s.target_residency_ns,
                    s.exit_ns,
                    if s.polling { ":poll" } else { "" },
                    if s.wake_by_store { ":store" } else { "" }
                )
            })
            .collect();
        format!("[{} {}]", t.name, states.join("/"))
    });
    out += &format!("idle {idle}\n");
    out += &format!("assumed {}\n", r.probed.map_or(0, |p| p.assumed.len()));
    out
}

fn check(spec: &str, expect: Expect) {
    expect.assert_eq(&summary(spec));
}

fn fixture_spec(form: &str, rel: &str) -> String {
    format!("{form}:{}", fixtures().join(rel).display())
}

#[test]
fn two_packages_of_four_cores() {
    check(
        &fixture_spec("sysfs", "sysfs/2x4"),
        expect![[r#"
            cpus 8 cores 8 clusters 2 llcs 2 packages 2 nodes 1
            smt 0 1 2 3 4 5 6 7
            cluster 0-3 4-7
            llc 0-3 4-7
            node 0-7
            capacity 1024x8
            distance 10
            idle [none ]
            assumed 4
        "#]],
    );
}

#[test]
fn two_nodes_of_smt2_cores_with_distances() {
    check(
        &fixture_spec("sysfs", "sysfs/2n-smt2"),
        expect![[r#"
            cpus 16 cores 8 clusters 2 llcs 2 packages 2 nodes 2
            smt 0,8 1,9 2,10 3,11 4,12 5,13 6,14 7,15
            cluster 0-3,8-11 4-7,12-15
            llc 0-3,8-11 4-7,12-15
            node 0-3,8-11 4-7,12-15
            capacity 1024x16
            distance 10,21;21,10
            idle [intel_idle POLL:0:0:0:poll:store/C1:2000:2000:2000:store/C1E:10000:20000:10000:store]
            assumed 6
        "#]],
    );
}

#[test]
fn big_little_with_capacities_and_idle_states() {
    check(
        &fixture_spec("sysfs", "sysfs/big-little"),
        expect![[r#"
            cpus 8 cores 8 clusters 2 llcs 2 packages 1 nodes 1
            smt 0 1 2 3 4 5 6 7
            cluster 0-3 4-7
            llc 0-3 4-7
            node 0-7
            capacity 446x4,1024x4
            distance 10
            idle [psci_idle WFI:1000:1000:1000/cpu-sleep:150000:2000000:150000/cluster-sleep:800000:5000000:800000] [psci_idle WFI:1000:1000:1000/cpu-sleep:550000:2500000:550000/cluster-sleep:1600000:8000000:1600000]
            assumed 1
        "#]],
    );
}

#[test]
fn lscpu_outputs() {
    check(
        &fixture_spec("lscpu", "lscpu/2s-smt2.txt"),
        expect![[r#"
            cpus 16 cores 8 clusters 2 llcs 2 packages 2 nodes 2
            smt 0,8 1,9 2,10 3,11 4,12 5,13 6,14 7,15
            cluster 0-3,8-11 4-7,12-15
            llc 0-3,8-11 4-7,12-15
            node 0-3,8-11 4-7,12-15
            capacity 1024x16
            distance 10,20;20,10
            idle [none ]
            assumed 5
        "#]],
    );
    check(
        &fixture_spec("lscpu", "lscpu/compat-2.38.txt"),
        expect![[r#"
            cpus 4 cores 4 clusters 1 llcs 1 packages 1 nodes 1
            smt 0 1 2 3
            cluster 0-3
            llc 0-3
            node 0-3
            capacity 1024x4
            distance 10
            idle [none ]
            assumed 4
        "#]],
    );
}

/// Runs a command expected to succeed; returns stdout.
fn ok(args: &[&str]) -> String {
    let out = lbsim(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn topology_host_reads_this_machine() {
    // Whatever this machine is: what was found comes first, and the dump has one
    // sched_domain_debug() block per CPU found.
    let text = ok(&["topology", "host"]);
    assert!(text.starts_with("# machine `host`\n# found: "), "{text}");
    let nr: usize = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("# found: ")?
                .split_once(" CPU")?
                .0
                .parse()
                .ok()
        })
        .expect("a CPU count");
    assert!(nr >= 1);
    let blocks = text
        .lines()
        .filter(|l| l.ends_with("attaching sched-domain(s):"))
        .count();
    let single = text
        .lines()
        .filter(|l| l.ends_with("attaching NULL sched-domain."))
        .count();
    assert_eq!(blocks + single, nr, "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["topology", "host", "--format", "json"])).unwrap();
    assert_eq!(json["source"]["spec"], "host");
    assert_eq!(json["cpus"].as_u64(), Some(nr as u64));
    assert!(!json["source"]["found"].as_array().unwrap().is_empty());
}

#[test]
fn every_command_and_scenario_files_take_the_new_forms() {
    let sysfs = fixture_spec("sysfs", "sysfs/big-little");
    let lscpu = fixture_spec("lscpu", "lscpu/2s-smt2.txt");
    for spec in [sysfs.as_str(), lscpu.as_str(), "host"] {
        ok(&[
            "run",
            "--topology",
            spec,
            "--workload",
            "busy:threads=3",
            "--duration",
            "20ms",
        ]);
        ok(&["features", "--topology", spec]);
    }
    ok(&[
        "compare",
        "--topology",
        &sysfs,
        "--workload",
        "busy:threads=9",
        "--duration",
        "20ms",
        "--runs",
        "2",
        "--patched",
        "NO_LB_RELAX_BY_FAILED",
    ]);
    // A scenario file's relative sysfs: and lscpu: paths are taken from its directory.
    let dir = std::env::temp_dir().join(format!("lbsim-host-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixtures().join("lscpu/2s-smt2.txt"), dir.join("m.txt")).unwrap();
    let file = dir.join("s.toml");
    std::fs::write(
        &file,
        "topology = \"lscpu:m.txt\"\nworkloads = [\"busy:threads=2\"]\nduration = \"20ms\"\n",
    )
    .unwrap();
    ok(&["run", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A copy of fixture tree `name` with `rel` rewritten (`None`: removed).
fn broken_tree(name: &str, rel: &str, contents: Option<&str>) -> PathBuf {
    let dst = std::env::temp_dir().join(format!(
        "lbsim-host-{}-{name}-{}",
        std::process::id(),
        rel.replace('/', "_")
    ));
    let _ = std::fs::remove_dir_all(&dst);
    copy_dir(&fixtures().join("sysfs").join(name), &dst);
    match contents {
        Some(c) => std::fs::write(dst.join(rel), c).unwrap(),
        None => std::fs::remove_file(dst.join(rel)).unwrap(),
    }
    dst
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn bad_inputs_fail_on_one_line_naming_the_file() {
    let cases: Vec<(Vec<String>, PathBuf, &str)> = vec![
        (
            vec![],
            broken_tree(
                "2n-smt2",
                "cpu/cpu9/topology/thread_siblings_list",
                Some("9\n"),
            ),
            "cpu/cpu9/topology/thread_siblings_list: lists 9 but cpu 1's lists 1,9",
        ),
        (
            vec![],
            broken_tree("2n-smt2", "node/node1/distance", Some("21 10 30\n")),
            "node/node1/distance: `21 10 30` has 3 distances; there are 2 nodes",
        ),
        (
            vec![],
            broken_tree("big-little", "cpu/cpu5/cpu_capacity", None),
            "cpu/cpu5/cpu_capacity: missing (cpu 0 has a cpu_capacity, so every CPU needs one)",
        ),
        (
            vec![],
            broken_tree(
                "big-little",
                "cpu/cpu2/cache/index2/shared_cpu_list",
                Some("0-x\n"),
            ),
            "cpu/cpu2/cache/index2/shared_cpu_list: `0-x` is not a cpulist",
        ),
        (
            vec!["--max-cpus".to_owned(), "8".to_owned()],
            fixtures().join("sysfs/2n-smt2"),
            "16 CPU directories, more than the limit of 8 (--max-cpus N raises it",
        ),
        (
            vec![],
            fixtures().join("sysfs/nonexistent"),
            "nonexistent/cpu: no such directory",
        ),
    ];
    for (extra, dir, want) in cases {
        let spec = format!("sysfs:{}", dir.display());
        for cmd in [
            vec!["topology".to_owned(), spec.clone()],
            vec![
                "run".to_owned(),
                "--topology".to_owned(),
                spec.clone(),
                "--workload".to_owned(),
                "busy".to_owned(),
            ],
        ] {
            let args: Vec<&str> = cmd.iter().chain(&extra).map(String::as_str).collect();
            let out = lbsim(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(want), "{args:?}: {err}\n  wanted {want}");
        }
        if dir.starts_with(std::env::temp_dir()) {
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    let bad = std::env::temp_dir().join(format!("lbsim-host-{}-lscpu.txt", std::process::id()));
    std::fs::write(&bad, "# CPU,Core,Socket\n0,0,0\n1,1\n").unwrap();
    let out = lbsim(&["topology", &format!("lscpu:{}", bad.display())]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("lscpu.txt line 3: `1,1` has 2 fields; the header names 3 columns"),
        "{err}"
    );
    std::fs::remove_file(&bad).unwrap();
}
