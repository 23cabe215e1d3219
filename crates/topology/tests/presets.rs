//! Snapshots of the text and JSON dumps of every preset, reviewed by hand
//! against KERNEL-MODEL.md §3 and kernel/sched/topology.c (v6.6-v6.12).
//!
//! Update with `UPDATE_EXPECT=1 cargo test -p lbsim-topology --test presets`, then
//! re-review the diff: each comment says which rule each value comes from.
//!
//! Rules used throughout (KERNEL-MODEL.md §3.2, topology.c sd_init()):
//! - flags: the initializer gives SD_BALANCE_NEWIDLE, SD_BALANCE_EXEC,
//!   SD_BALANCE_FORK, SD_WAKE_AFFINE, SD_PREFER_SIBLING (never SD_BALANCE_WAKE),
//!   plus the level's flags: SMT = SD_SHARE_CPUCAPACITY|SD_SHARE_LLC,
//!   CLS = SD_CLUSTER|SD_SHARE_LLC, MC = SD_SHARE_LLC, NUMA = SD_NUMA;
//!   NUMA levels drop SD_PREFER_SIBLING and add SD_SERIALIZE (and SD_OVERLAP
//!   from SDTL_OVERLAP); beyond node_reclaim_distance they also drop
//!   SD_BALANCE_EXEC, SD_BALANCE_FORK and SD_WAKE_AFFINE.
//! - imbalance_pct: SMT 110; LLC levels (CLS, MC) 117; PKG, NODE, NUMA keep
//!   the initializer's 117. cache_nice_tries: SMT 0, LLC 1, NUMA 2, others 1.
//! - min_interval = weight of the level's mask, max_interval = twice that;
//!   busy_factor 16.
//! - §3.1 degeneration (sd_parent_degenerate()): a level with the same span as
//!   its child and no flag the child lacks (once the flags needing >1 group are
//!   masked off) disappears; SMT with one thread and CLS when the cluster is
//!   not smaller than the LLC always go; NODE always goes (same span as PKG).
//! - §3.4 groups: the child domain spans, local group first, then in
//!   for_each_cpu_wrap() order from the CPU; `N:{` is the sgc id (the first
//!   CPU of the group, or of its balance mask at NUMA levels); `cap=` is the sum
//!   of the CPU capacities, shown when not 1024.
//! - groups_flags: the local group's flags, i.e. the child domain's flags as
//!   cpu_attach_domain() leaves them: the base domain's groups are cleared when
//!   SMT degenerates; a removed level hands its child's flags to the local
//!   group of the level above.

use expect_test::{ExpectFile, expect_file};
use lbsim_topology::dump::debugfs_text;
use lbsim_topology::{Cpumask, SdParams, Topology, TopologyDump, parse_machine};

fn topo(preset: &str) -> Topology {
    let m = parse_machine(preset).unwrap();
    Topology::build(&m, &SdParams::default()).unwrap()
}

fn check(preset: &str, cpus: &str, text: ExpectFile, json: ExpectFile) {
    let t = topo(preset);
    let mask = Cpumask::parse_cpulist(cpus, t.nr_cpus()).unwrap();
    text.assert_eq(&debugfs_text(&t, &mask));
    let dump = TopologyDump::new(&t, &mask);
    let printed = dump.to_json();
    json.assert_eq(&printed);
    // The JSON form parses back into the same dump.
    let back: TopologyDump = serde_json::from_str(&printed).unwrap();
    assert_eq!(back, dump);
}

/// hikey: 2 LLCs x 4 cores, no SMT, capacity 1024.
/// - SMT (weight 1) and CLS (cluster = LLC, so the SMT mask) degenerate: every
///   CPU has MC (its 4-CPU cluster) and PKG (0-7).
/// - MC: SD_SHARE_LLC, 117, 4/8 ms, cache_nice_tries 1; groups are single CPUs
///   (cap 1024, not printed) in wrap order from the CPU; groups_flags empty
///   (SMT was the base domain and degenerated).
/// - PKG: initializer flags, 117, 8/16 ms, cache_nice_tries 1; groups 0-3 and
///   4-7 (cap 4096), the CPU's own cluster first; groups_flags = MC's flags.
#[test]
fn hikey() {
    check(
        "hikey",
        "0-7",
        expect_file!["snapshots/hikey.txt"],
        expect_file!["snapshots/hikey.json"],
    );
}

/// hikey960: as hikey, but CPUs 0-3 have capacity 462.
/// - PKG spans both capacities and misses none: SD_ASYM_CPUCAPACITY and
///   SD_ASYM_CPUCAPACITY_FULL (asym_cpu_capacity_classify()), so its child MC
///   loses SD_PREFER_SIBLING; the PKG groups_flags lack it too.
/// - capacities: little CPUs cap=462, group 0-3 cap=1848 (4 x 462), 4-7 cap=4096.
#[test]
fn hikey960() {
    check(
        "hikey960",
        "0-7",
        expect_file!["snapshots/hikey960.txt"],
        expect_file!["snapshots/hikey960.json"],
    );
}

/// x86-4c-smt2: 4 cores x 2 threads, spread numbering (siblings 0,4 / 1,5 / ...).
/// - SMT: span 0,4 for CPU 0; SD_SHARE_CPUCAPACITY|SD_SHARE_LLC, 110, 2/4 ms,
///   cache_nice_tries 0; groups single CPUs.
/// - CLS degenerates (no real cluster); MC spans 0-7: 117, 8/16 ms; groups are
///   the cores (cap 2048), the CPU's own core first then wrap order (from CPU 5:
///   1,5 then 2,6, 3,7, 0,4); groups_flags = SMT's flags (CLS's were replaced
///   when CLS degenerated).
#[test]
fn x86_4c_smt2() {
    check(
        "x86-4c-smt2",
        "0-7",
        expect_file!["snapshots/x86-4c-smt2.txt"],
        expect_file!["snapshots/x86-4c-smt2.json"],
    );
}

/// tx2-2n: 2 nodes x 28 cores x SMT4, distance 20; CPU 0 and CPU 130 (node 1).
/// - SMT (4 threads, 110, 4/8); MC = node (112 CPUs, 117, 112/224, 28 core
///   groups of cap 4096); PKG and NODE have MC's span and degenerate.
/// - NUMA (distance 20 <= node_reclaim_distance 30): keeps EXEC/FORK/WAKE_AFFINE,
///   adds SD_SERIALIZE, SD_OVERLAP, SD_NUMA, drops PREFER_SIBLING; 117, 224/448,
///   cache_nice_tries 2; groups = the two nodes (cap 114688 = 112 x 1024), balance
///   masks equal the spans (so no `mask=`); groups_flags = MC's flags (handed
///   down when PKG and NODE were removed).
#[test]
fn tx2_2n() {
    check(
        "tx2-2n",
        "0,130",
        expect_file!["snapshots/tx2-2n.txt"],
        expect_file!["snapshots/tx2-2n.json"],
    );
}

/// power8-22c: 2 nodes x 11 cores x SMT8, each core its own LLC, distance 40;
/// CPU 0 and CPU 100.
/// - SMT (8 threads, 110, 8/16, also the LLC level: sd_llc); MC = SMT span and
///   degenerates; PKG = node (88 CPUs, 117, 88/176, 11 core groups of cap 8192).
/// - NUMA at distance 40 > 30: only SD_BALANCE_NEWIDLE of the balance flags
///   remains, with SD_SERIALIZE, SD_OVERLAP, SD_NUMA; 176/352, cache_nice_tries 2;
///   groups the nodes (cap 90112); groups_flags = PKG's flags.
#[test]
fn power8_22c() {
    check(
        "power8-22c",
        "0,100",
        expect_file!["snapshots/power8-22c.txt"],
        expect_file!["snapshots/power8-22c.json"],
    );
}

/// xeon-4s: 4 nodes x 24 cores x SMT2, spread numbering, distance 21; CPU 0
/// and CPU 101 (the sibling of CPU 5).
/// - SMT 0,96 / 5,101; MC = node 0-23,96-119 (48 CPUs, 48/96 ms, 24 core groups,
///   from CPU 101 starting at 5,101 and wrapping); NUMA 0-191 (192/384) with the
///   four nodes as groups (cap 49152), all-to-all so no `mask=`.
#[test]
fn xeon_4s() {
    check(
        "xeon-4s",
        "0,101",
        expect_file!["snapshots/xeon-4s.txt"],
        expect_file!["snapshots/xeon-4s.json"],
    );
}

/// epyc-2s: 2 nodes x 8 LLCs x 8 cores x SMT2, spread numbering, distance 32,
/// node_reclaim_distance 32; CPU 0 and CPU 200.
/// - SMT 0,128; MC = one LLC (16 CPUs, 16/32, 8 core groups); PKG = node
///   (128 CPUs, 117, 128/256, 8 LLC groups of cap 16384); NUMA 0-255 keeps
///   EXEC/FORK/WAKE_AFFINE (32 is not above 32), groups the nodes (cap 131072);
///   its groups_flags = PKG's flags (NODE removed).
#[test]
fn epyc_2s() {
    check(
        "epyc-2s",
        "0,200",
        expect_file!["snapshots/epyc-2s.txt"],
        expect_file!["snapshots/epyc-2s.json"],
    );
}
