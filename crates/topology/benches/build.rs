//! Building sched domains (`Topology::build`) for large machines.
//!
//! Run with `cargo xtask bench build` (or `cargo bench -p lbsim-topology`).
//! The target is well under a second for 4096 CPUs.

use lbsim_topology::{Machine, SdParams, Topology, parse_machine};

fn main() {
    divan::main();
}

/// Two NUMA distances above the local one: 8 nodes in two groups of 4.
fn two_level_numa(nodes: usize) -> String {
    let rows: Vec<String> = (0..nodes)
        .map(|i| {
            (0..nodes)
                .map(|j| {
                    if i == j {
                        10
                    } else if i / 4 == j / 4 {
                        16
                    } else {
                        32
                    }
                })
                .map(|d: u32| d.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    rows.join(";")
}

fn machine(spec: &str) -> Machine {
    let spec = spec.replace("DIST8", &two_level_numa(8));
    parse_machine(&spec).unwrap()
}

const MACHINES: &[&str] = &[
    // 4096 CPUs in one LLC: 4096 groups in every CPU's MC domain.
    "4096",
    // 16 nodes x 2 LLCs x 64 cores x SMT2, one NUMA level.
    "nodes=16,llcs=2,cores=64,threads=2",
    // 8 nodes x 4 LLCs x 64 cores x SMT2, two NUMA levels, x86 numbering.
    "nodes=8,llcs=4,cores=64,threads=2,numbering=spread,distance=DIST8",
    // The largest presets.
    "xeon-4s",
    "epyc-2s",
];

#[divan::bench(args = MACHINES, sample_count = 10)]
fn build(bencher: divan::Bencher<'_, '_>, spec: &str) {
    let m = machine(spec);
    let params = SdParams::default();
    bencher.bench(|| Topology::build(divan::black_box(&m), &params).unwrap());
}
