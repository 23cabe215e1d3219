use crate::cpumask::CpuId;

use super::*;

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Parses `spec` and returns a one-line summary: CPUs, then per CPU `node.package.llc.cluster.core.thread@capacity`.
fn summary(spec: &str) -> String {
    let m = parse_machine(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let cpus: Vec<String> = m
        .cpus()
        .iter()
        .map(|c| {
            format!(
                "{}.{}.{}.{}.{}.{}@{}",
                c.node, c.package, c.llc, c.cluster, c.core, c.thread, c.capacity
            )
        })
        .collect();
    format!("{} cpus: {}", m.nr_cpus(), cpus.join(" "))
}

fn err(spec: &str) -> String {
    parse_machine(spec).unwrap_err().to_string()
}

#[test]
fn bare_number_is_one_llc() {
    assert_eq!(
        summary("4"),
        "4 cpus: 0.0.0.0.0.0@1024 0.0.0.0.1.0@1024 0.0.0.0.2.0@1024 0.0.0.0.3.0@1024"
    );
}

#[test]
fn key_value_lists_number_cpus_in_topology_order() {
    assert_eq!(
        summary("sockets=2,cores=2"),
        "4 cpus: 0.0.0.0.0.0@1024 0.0.0.0.1.0@1024 0.1.1.1.2.0@1024 0.1.1.1.3.0@1024"
    );
    assert_eq!(
        summary("cores=2,threads=2"),
        "4 cpus: 0.0.0.0.0.0@1024 0.0.0.0.0.1@1024 0.0.0.0.1.0@1024 0.0.0.0.1.1@1024"
    );
    // spread: siblings N/threads apart.
    assert_eq!(
        summary("cores=2,threads=2,numbering=spread"),
        "4 cpus: 0.0.0.0.0.0@1024 0.0.0.0.1.0@1024 0.0.0.0.0.1@1024 0.0.0.0.1.1@1024"
    );
    assert_eq!(
        summary("llcs=1,clusters=2,cores=1,capacity=10x1,20"),
        "2 cpus: 0.0.0.0.0.0@10 0.0.0.1.1.0@20"
    );
    // A capacity list alone names the CPUs (README's `lbsim topology capacity=462x4,1024x4`).
    assert_eq!(
        summary("capacity=462x2,1024x2"),
        "4 cpus: 0.0.0.0.0.0@462 0.0.0.0.1.0@462 0.0.0.0.2.0@1024 0.0.0.0.3.0@1024"
    );
    // With a count key, the count rules and the list must match it.
    assert_eq!(
        err("cores=1,capacity=462x2"),
        "capacity lists 2 values but the machine has 1 CPUs"
    );
}

#[test]
fn distance_forms() {
    let m = parse_machine("nodes=3,distance=21").unwrap();
    assert_eq!((m.node_distance(0, 1), m.node_distance(2, 2)), (21, 10));
    let m = parse_machine("nodes=2,distance=10,32;32,10").unwrap();
    assert_eq!(m.node_distance(1, 0), 32);
    let m = parse_machine("nodes=2").unwrap();
    assert_eq!(m.node_distance(1, 0), 20);
    assert_eq!(m.node_reclaim_distance(), 30);
}

#[test]
fn presets_parse_and_have_the_stated_sizes() {
    let sizes: Vec<(&str, usize)> = presets()
        .iter()
        .map(|p| (p.name, parse_machine(p.name).unwrap().nr_cpus()))
        .collect();
    assert_eq!(
        sizes,
        [
            ("hikey", 8),
            ("hikey960", 8),
            ("tx2-2n", 224),
            ("power8-22c", 176),
            ("x86-4c-smt2", 8),
            ("xeon-4s", 192),
            ("epyc-2s", 256),
        ]
    );
    for p in presets() {
        assert!(!p.description.contains('\n'));
        // The key=value definition round-trips through Display.
        let spec = MachineSpec::parse_kv(p.spec).unwrap();
        assert_eq!(
            MachineSpec::parse_kv(&spec.to_string()).unwrap(),
            spec,
            "{}",
            p.name
        );
    }
    let m = parse_machine("epyc-2s").unwrap();
    assert_eq!(m.node_reclaim_distance(), 32);
    assert_eq!(m.smt_mask(CpuId(0)).to_cpulist(), "0,128");
    assert_eq!(m.llc_mask(CpuId(0)).to_cpulist(), "0-7,128-135");
}

#[test]
fn preset_key_with_overrides() {
    assert_eq!(
        summary("preset=hikey,llcs=1,cores=2"),
        "2 cpus: 0.0.0.0.0.0@1024 0.0.0.0.1.0@1024"
    );
    assert_eq!(
        err("preset=hikey960,cores=2"),
        "capacity lists 8 values but the machine has 4 CPUs"
    );
}

#[test]
fn files() {
    let m = parse_machine(&data("ring4.toml")).unwrap();
    assert_eq!(
        (m.nr_cpus(), m.nr_nodes(), m.node_distance(0, 2)),
        (4, 4, 30)
    );
    let m = parse_machine(&data("explicit.json")).unwrap();
    assert_eq!(m.nr_cpus(), 8);
    assert_eq!(m.smt_mask(CpuId(5)).to_cpulist(), "4-5");
    assert_eq!(m.node_mask(CpuId(5)).to_cpulist(), "4-7");
    assert_eq!(m.capacity(CpuId(1)), 512);
    assert_eq!(m.node_distance(0, 1), 21);
    let m = parse_machine(&data("hikey_override.toml")).unwrap();
    assert_eq!(
        (m.capacity(CpuId(0)), m.capacity(CpuId(7)), m.nr_llcs()),
        (462, 1024, 2)
    );
}

#[test]
fn every_bad_input_kind_gets_a_one_line_error_naming_it() {
    let cases: &[(&str, &str)] = &[
        (
            "",
            "empty machine spec (give a CPU count, key=value list, preset or file; see `lbsim topology --list`)",
        ),
        ("0", "`cpus=0`: a count must be at least 1"),
        (
            "cores=4,sockts=2",
            "unknown key `sockts` in machine spec (known: nodes, sockets, llcs, clusters, cores, threads, capacity, distance, numbering, node_reclaim_distance, smt_throughput, idle_states, preset)",
        ),
        (
            "hikey961",
            "unknown preset `hikey961` (presets: hikey, hikey960, tx2-2n, power8-22c, x86-4c-smt2, xeon-4s, epyc-2s)",
        ),
        (
            "preset=nope",
            "unknown preset `nope` (presets: hikey, hikey960, tx2-2n, power8-22c, x86-4c-smt2, xeon-4s, epyc-2s)",
        ),
        ("cores=0", "`cores=0`: a count must be at least 1"),
        (
            "nodes=2,threads=0",
            "`threads=0`: a count must be at least 1",
        ),
        ("cores=four", "`cores=four`: `four` is not a number"),
        ("cores=-1", "`cores=-1`: `-1` is not a number"),
        (
            "cores=99999999999",
            "`cores=99999999999`: `99999999999` is not a number",
        ),
        ("cores=", "`cores=` has no value"),
        ("cores=2,cores=3", "key `cores` is given twice"),
        (
            "cores=2,,threads=2",
            "empty element in machine spec `cores=2,,threads=2`",
        ),
        ("cores=2,threads", "`threads` is not a key=value pair"),
        (
            "cores=2,capacity=0x2",
            "capacity: `0x2` is out of range (capacities are 1..=1024)",
        ),
        (
            "cores=2,capacity=1025,1",
            "capacity: `1025` is out of range (capacities are 1..=1024)",
        ),
        (
            "cores=2,capacity=512y2",
            "capacity: `512y2` is not a capacity or a VALUExCOUNT run",
        ),
        (
            "cores=2,capacity=512x0",
            "capacity: `512x0` is not a capacity or a VALUExCOUNT run",
        ),
        (
            "cores=4,capacity=462x2,1024x1",
            "capacity lists 3 values but the machine has 4 CPUs",
        ),
        (
            "nodes=2,distance=10,20;21,10",
            "distance table is not symmetric: node 0 to 1 is 20 but node 1 to 0 is 21",
        ),
        (
            "nodes=2,distance=12,20;20,10",
            "distance of node 0 to itself is 12; it must be 10",
        ),
        (
            "nodes=2,distance=10,20,30;20,10,20;30,20,10",
            "distance table has 3 rows but the machine has 2 nodes",
        ),
        (
            "nodes=2,distance=10,20;20",
            "distance table row 1 has 1 entries; expected 2 (one per node)",
        ),
        (
            "nodes=2,distance=far",
            "distance: `far` is not a number or a table like `10,20;20,10`",
        ),
        (
            "nodes=2,distance=5",
            "distance of node 0 to node 1 is 5; remote distances must be 11..=255",
        ),
        (
            "nodes=2,distance=300",
            "distance of node 0 to node 1 is 300; remote distances must be 11..=255",
        ),
        (
            "cores=2,numbering=random",
            "numbering: `random` is not `topology` or `spread`",
        ),
        (
            "nodes=64,cores=64,threads=4",
            "the machine has 16384 CPUs; lbsim supports at most 8192",
        ),
    ];
    for (spec, want) in cases {
        let got = err(spec);
        assert_eq!(&got, want, "spec `{spec}`");
        assert!(!got.contains('\n'), "{got}");
    }
}

#[test]
fn overflowing_counts_are_too_many_cpus() {
    let e = parse_machine("nodes=4294967295,sockets=4294967295,cores=4294967295").unwrap_err();
    assert!(
        matches!(e, SpecError::Machine(MachineError::TooManyCpus { .. })),
        "{e}"
    );
}

#[test]
fn file_errors_name_the_file() {
    let missing = data("no-such-file.toml");
    let e = err(&missing);
    assert!(
        e.starts_with(&format!("cannot read machine file `{missing}`: ")),
        "{e}"
    );
    let e = err(&data("bad_key.toml"));
    assert!(
        e.starts_with(&format!(
            "machine file `{}`: line 2: unknown field `cpu_count`",
            data("bad_key.toml")
        )),
        "{e}"
    );
    assert!(!e.contains('\n'));
    let e = err(&data("mixed.toml"));
    assert_eq!(
        e,
        format!(
            "machine file `{}`: `cpus` cannot be combined with nodes",
            data("mixed.toml")
        )
    );
}
