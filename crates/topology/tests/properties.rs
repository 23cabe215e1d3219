//! Property tests over random machines: invariants that topology.c's builder
//! guarantees (several are the checks sched_domain_debug_one() makes) and that
//! the dumps preserve. Each failure prints the machine that breaks it.
//!
//! Machines are drawn from shape specs (nodes, sockets, LLCs, clusters, cores,
//! threads; random capacities and distance tables; topology or spread
//! numbering), and half of them get their CPU numbers shuffled, so groups are
//! not contiguous ranges. A "sometimes" check at the end makes sure the
//! interesting cases (overlapping NUMA groups with balance masks, asymmetric
//! capacities, real clusters, SMT, far NUMA) were reached.

use std::cell::Cell;

use lbsim_topology::flags::{SDF_SHARED_CHILD, SDF_SHARED_PARENT};
use lbsim_topology::machine::{CpuDesc, Machine};
use lbsim_topology::spec::{DistanceSpec, MachineSpec, Numbering};
use lbsim_topology::{CpuId, Cpumask, SdFlag, SdParams, Topology, TopologyDump};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

#[derive(Clone, Debug)]
struct Case {
    spec: MachineSpec,
    /// `perm[i]`: the CPU number given to the `i`-th CPU of the shape (identity when not shuffled).
    perm: Vec<usize>,
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        1u32..=4,
        1u32..=2,
        1u32..=3,
        1u32..=2,
        1u32..=4,
        1u32..=4,
        any::<bool>(),
    )
        .prop_filter("at most 128 CPUs", |(n, s, l, c, k, t, _)| {
            n * s * l * c * k * t <= 128
        })
        .prop_flat_map(|(nodes, sockets, llcs, clusters, cores, threads, spread)| {
            let ncpu = (nodes * sockets * llcs * clusters * cores * threads) as usize;
            let npairs = (nodes * (nodes - 1) / 2) as usize;
            (
                Just((nodes, sockets, llcs, clusters, cores, threads, spread)),
                prop::option::of(prop::collection::vec(
                    prop::sample::select(vec![256u32, 512, 1024]),
                    ncpu,
                )),
                prop::collection::vec(
                    prop::sample::select(vec![12u32, 15, 20, 25, 30, 40]),
                    npairs,
                ),
                any::<bool>(),
                Just((0..ncpu).collect::<Vec<usize>>()).prop_shuffle(),
            )
        })
        .prop_map(
            |(
                (nodes, sockets, llcs, clusters, cores, threads, spread),
                capacity,
                pair_d,
                shuffle,
                perm,
            )| {
                let n = nodes as usize;
                // Pair distances in row-major order of the upper triangle.
                let pair = |i: usize, j: usize| pair_d[i * n - i * (i + 1) / 2 + (j - i - 1)];
                let table: Vec<Vec<u32>> = (0..n)
                    .map(|i| {
                        (0..n)
                            .map(|j| match i.cmp(&j) {
                                std::cmp::Ordering::Equal => 10,
                                std::cmp::Ordering::Less => pair(i, j),
                                std::cmp::Ordering::Greater => pair(j, i),
                            })
                            .collect()
                    })
                    .collect();
                let ncpu = perm.len();
                Case {
                    spec: MachineSpec {
                        nodes,
                        sockets,
                        llcs,
                        clusters,
                        cores,
                        threads,
                        capacity,
                        distance: Some(DistanceSpec::Matrix(table)),
                        numbering: if spread {
                            Numbering::Spread
                        } else {
                            Numbering::Topology
                        },
                        ..MachineSpec::default()
                    },
                    perm: if shuffle { perm } else { (0..ncpu).collect() },
                }
            },
        )
}

/// The machine of a case: the shape, with CPU `i` renumbered `perm[i]`.
fn machine(case: &Case) -> Machine {
    let shape = case.spec.build().unwrap();
    let n = shape.nr_cpus();
    let mut descs = vec![
        CpuDesc {
            node: 0,
            package: 0,
            llc: 0,
            cluster: 0,
            core: 0,
            capacity: 1024
        };
        n
    ];
    for (i, c) in shape.cpus().iter().enumerate() {
        descs[case.perm[i]] = CpuDesc {
            node: c.node,
            package: c.package,
            llc: c.llc,
            cluster: c.cluster,
            core: c.core,
            capacity: c.capacity,
        };
    }
    let nodes = shape.nr_nodes() as u32;
    let table: Vec<Vec<u32>> = (0..nodes)
        .map(|a| (0..nodes).map(|b| shape.node_distance(a, b)).collect())
        .collect();
    Machine::new(&descs, Some(&table), shape.node_reclaim_distance()).unwrap()
}

#[derive(Default)]
struct Seen {
    balance_mask_differs: Cell<usize>,
    asym_full: Cell<usize>,
    asym_partial: Cell<usize>,
    cluster: Cell<usize>,
    smt: Cell<usize>,
    far_numa: Cell<usize>,
    several_numa_levels: Cell<usize>,
}

fn bump(c: &Cell<usize>) {
    c.set(c.get() + 1);
}

fn check(case: &Case, seen: &Seen) -> Result<(), TestCaseError> {
    let m = machine(case);
    let t = Topology::build(&m, &SdParams::default())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let n = m.nr_cpus();
    let all = Cpumask::full(n);
    for c in 0..n {
        let cpu = CpuId(c as u32);
        let sds = t.domains(cpu);
        // Invariant: a machine with more than one CPU gives every CPU domains, and the top one spans all CPUs.
        if n > 1 {
            prop_assert!(!sds.is_empty(), "cpu {c} has no domain");
            prop_assert_eq!(
                t.span(sds.last().unwrap().span),
                &all,
                "cpu {}: top domain",
                c
            );
        } else {
            prop_assert!(sds.is_empty());
        }
        let mut numa_levels = 0;
        for (level, sd) in sds.iter().enumerate() {
            let span = t.span(sd.span);
            prop_assert_eq!(sd.level, level);
            // Invariant: the domain contains its CPU.
            prop_assert!(
                span.test(cpu),
                "cpu {c} level {level}: span {span} lacks the cpu"
            );
            prop_assert_eq!(sd.span_weight as usize, span.weight());
            // Invariant: spans strictly grow bottom-up.
            if level > 0 {
                let child = t.span(sds[level - 1].span);
                prop_assert!(
                    child.is_subset(span) && child != span,
                    "cpu {c} level {level}: {child} !< {span}"
                );
            }
            // Invariant: the metaflags hold (sched_domain_debug_one()'s checks):
            // SHARED_CHILD flags are in the child, SHARED_PARENT flags in the parent.
            for f in sd.flags.iter() {
                if f.meta() & SDF_SHARED_CHILD != 0 && level > 0 {
                    prop_assert!(
                        sds[level - 1].flags.contains(f),
                        "cpu {c} level {level}: {f} not in child"
                    );
                }
                if f.meta() & SDF_SHARED_PARENT != 0 && level + 1 < sds.len() {
                    prop_assert!(
                        sds[level + 1].flags.contains(f),
                        "cpu {c} level {level}: {f} not in parent"
                    );
                }
            }
            let overlap = sd.flags.contains(SdFlag::Overlap);
            prop_assert_eq!(overlap, sd.flags.contains(SdFlag::Numa));
            let mut union = Cpumask::new(n);
            let mut total = 0;
            for (k, g) in t.groups(sd).enumerate() {
                let gspan = t.span(g.span);
                let mask = t.span(g.balance_mask);
                // Invariant: the local group contains the CPU and is the child domain's span.
                if k == 0 {
                    prop_assert!(
                        gspan.test(cpu),
                        "cpu {c} level {level}: local group {gspan}"
                    );
                    if level > 0 {
                        prop_assert_eq!(
                            gspan,
                            t.span(sds[level - 1].span),
                            "cpu {} level {}",
                            c,
                            level
                        );
                    }
                }
                prop_assert!(
                    gspan.is_subset(span),
                    "cpu {c} level {level}: group {gspan} outside {span}"
                );
                // Invariant: at non-NUMA levels the groups are disjoint (they partition the span).
                if !overlap {
                    prop_assert!(
                        !union.intersects(gspan),
                        "cpu {c} level {level}: repeated CPUs in {gspan}"
                    );
                    prop_assert_eq!(mask, gspan);
                }
                union.or_assign(gspan);
                total += gspan.weight();
                // Invariant: group capacity is the sum of its CPUs' capacities.
                let caps: Vec<u64> = gspan.iter().map(|x| u64::from(m.capacity(x))).collect();
                prop_assert_eq!(g.capacity, caps.iter().sum::<u64>());
                prop_assert_eq!(g.min_capacity, *caps.iter().min().unwrap());
                prop_assert_eq!(g.max_capacity, *caps.iter().max().unwrap());
                prop_assert_eq!(t.sgc(g.sgc).capacity, g.capacity);
                prop_assert_eq!(g.group_weight as usize, gspan.weight());
                // Invariant: the balance mask is a non-empty part of the group; its first CPU balances.
                prop_assert!(
                    !mask.is_empty() && mask.is_subset(gspan),
                    "cpu {c} level {level}: mask {mask} of {gspan}"
                );
                prop_assert_eq!(Some(g.balance_cpu), mask.first());
                if mask != gspan {
                    bump(&seen.balance_mask_differs);
                }
            }
            // Invariant: the groups cover the span ("groups don't span domain->span").
            prop_assert_eq!(&union, span, "cpu {} level {}", c, level);
            if !overlap {
                prop_assert_eq!(total, span.weight());
            }
            if sd.flags.contains(SdFlag::AsymCpucapacityFull) {
                bump(&seen.asym_full);
            } else if sd.flags.contains(SdFlag::AsymCpucapacity) {
                bump(&seen.asym_partial);
            }
            if sd.flags.contains(SdFlag::Cluster) {
                bump(&seen.cluster);
            }
            if sd.flags.contains(SdFlag::ShareCpucapacity) {
                bump(&seen.smt);
            }
            if sd.flags.contains(SdFlag::Numa) {
                numa_levels += 1;
                if !sd.flags.contains(SdFlag::WakeAffine) {
                    bump(&seen.far_numa);
                }
            }
        }
        if numa_levels > 1 {
            bump(&seen.several_numa_levels);
        }
        // Invariant: sd_llc is the LLC: its size is the LLC's weight (1 without an LLC domain).
        let sc = t.shortcuts(cpu);
        prop_assert_eq!(sc.sd_llc_size as usize, m.llc_mask(cpu).weight());
        if let Some(l) = sc.sd_llc {
            prop_assert_eq!(t.span(sds[l].span), m.llc_mask(cpu));
            prop_assert_eq!(sc.sd_llc_id, m.llc_mask(cpu).first().unwrap());
        } else {
            prop_assert_eq!(sc.sd_llc_id, cpu);
        }
    }
    // Invariant: the JSON dump round-trips through serde.
    let dump = TopologyDump::new(&t, &all);
    let back: TopologyDump =
        serde_json::from_str(&dump.to_json()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(back, dump);
    Ok(())
}

#[test]
fn random_machines_keep_the_topology_invariants() {
    let config = Config::default();
    let cases = config.cases;
    let mut runner = TestRunner::new(config);
    let seen = Seen::default();
    let result = runner.run(&arb_case(), |case| check(&case, &seen));
    if let Err(e) = result {
        panic!("{e}");
    }
    // Sometimes: the generator reaches the interesting structures (only meaningful with enough cases).
    if cases >= 32 {
        for (what, count) in [
            (
                "a NUMA group whose balance mask differs from its span",
                &seen.balance_mask_differs,
            ),
            ("SD_ASYM_CPUCAPACITY_FULL", &seen.asym_full),
            ("SD_ASYM_CPUCAPACITY without _FULL", &seen.asym_partial),
            ("an SD_CLUSTER level", &seen.cluster),
            ("an SMT level", &seen.smt),
            ("a NUMA level beyond node_reclaim_distance", &seen.far_numa),
            ("two NUMA levels", &seen.several_numa_levels),
        ] {
            assert!(count.get() > 0, "no case reached {what} in {cases} cases");
        }
    }
}
