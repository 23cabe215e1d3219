use super::*;
use crate::flags::SdFlag;
use crate::spec::parse_machine;

use SdFlag::*;

fn build(spec: &str) -> Topology {
    build_with(spec, &SdParams::default())
}

fn build_with(spec: &str, params: &SdParams) -> Topology {
    let m = parse_machine(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    Topology::build(&m, params).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn flags(list: &[SdFlag]) -> SdFlags {
    SdFlags::from_flags(list)
}

/// sd_init()'s initializer flags (no BALANCE_WAKE).
const INIT: [SdFlag; 5] = [
    BalanceNewidle,
    BalanceExec,
    BalanceFork,
    WakeAffine,
    PreferSibling,
];

fn init_plus(extra: &[SdFlag]) -> SdFlags {
    flags(&INIT).union(flags(extra))
}

/// One CPU's domains as `NAME span [groups]` lines, groups as `span/mask@cap`.
fn outline(t: &Topology, cpu: u32) -> Vec<String> {
    t.domains(CpuId(cpu))
        .iter()
        .map(|sd| {
            let groups: Vec<String> = t
                .groups(sd)
                .map(|g| {
                    format!(
                        "{}/{}@{}",
                        t.span(g.span),
                        t.span(g.balance_mask),
                        g.capacity
                    )
                })
                .collect();
            format!("{} {} [{}]", sd.name, t.span(sd.span), groups.join(" "))
        })
        .collect()
}

#[test]
fn hikey_by_hand() {
    let t = build("hikey");
    for cpu in 0..8u32 {
        let sds = t.domains(CpuId(cpu));
        // SMT (span 1) and CLS (cluster = LLC, so the SMT mask) degenerate; MC and PKG stay.
        assert_eq!(sds.len(), 2);
        let (mc, pkg) = (&sds[0], &sds[1]);
        let cluster = if cpu < 4 { "0-3" } else { "4-7" };
        assert_eq!(
            (mc.name, t.span(mc.span).to_cpulist()),
            (DomainName::Mc, cluster.to_owned())
        );
        assert_eq!(mc.flags, init_plus(&[ShareLlc]));
        // sd_init(): SD_SHARE_LLC -> imbalance_pct 117, cache_nice_tries 1; intervals from the weight.
        assert_eq!(
            (
                mc.imbalance_pct,
                mc.min_interval,
                mc.max_interval,
                mc.busy_factor
            ),
            (117, 4, 8, 16)
        );
        assert_eq!((mc.cache_nice_tries, mc.balance_interval), (1, 4));
        assert!(mc.has_shared());
        assert_eq!(mc.imb_numa_nr, 0);
        // PKG: no topology flag -> initializer imbalance_pct, cache_nice_tries 1.
        assert_eq!(
            (pkg.name, t.span(pkg.span).to_cpulist()),
            (DomainName::Pkg, "0-7".to_owned())
        );
        assert_eq!(pkg.flags, flags(&INIT));
        assert_eq!(
            (
                pkg.imbalance_pct,
                pkg.min_interval,
                pkg.max_interval,
                pkg.cache_nice_tries
            ),
            (117, 8, 16, 1)
        );
        assert!(!pkg.has_shared());
        // imb_numa_nr on the first non-LLC level: 2 LLCs -> 2.
        assert_eq!(pkg.imb_numa_nr, 2);
        let pkg_groups: Vec<String> = t.groups(pkg).map(|g| t.span(g.span).to_cpulist()).collect();
        let expect = if cpu < 4 {
            ["0-3", "4-7"]
        } else {
            ["4-7", "0-3"]
        };
        assert_eq!(pkg_groups, expect);
        let sc = t.shortcuts(CpuId(cpu));
        assert_eq!(sc.sd_llc, Some(0));
        assert_eq!(sc.sd_llc_size, 4);
        assert_eq!(sc.sd_llc_id, CpuId(cpu & !3));
        assert_eq!(sc.sd_share_id, CpuId(cpu & !3));
        assert_eq!(
            (sc.sd_numa, sc.sd_asym_cpucapacity, sc.sd_asym_packing),
            (None, None, None)
        );
    }
    assert_eq!(
        outline(&t, 1),
        [
            "MC 0-3 [1/1@1024 2/2@1024 3/3@1024 0/0@1024]",
            "PKG 0-7 [0-3/0-3@4096 4-7/4-7@4096]"
        ]
    );
    // MC groups: built with the CLS child's flags; CLS is removed (MC groups get the
    // SMT flags), then SMT is removed and the new base domain's first group is cleared.
    for g in t.groups(&t.domains(CpuId(0))[0]) {
        assert_eq!(g.flags, SdFlags::EMPTY);
        assert_eq!((g.group_weight, g.cores), (1, 1));
    }
    // PKG groups carry the MC flags.
    for g in t.groups(&t.domains(CpuId(0))[1]) {
        assert_eq!(g.flags, init_plus(&[ShareLlc]));
        assert_eq!(
            (g.group_weight, g.cores, g.min_capacity, g.max_capacity),
            (4, 4, 1024, 1024)
        );
    }
    assert!(!t.has_asym_cpucapacity());
    assert!(!t.has_cluster());
    assert_eq!(t.numa_distances(), [10]);
}

#[test]
fn hikey960_asym_capacity() {
    let t = build("hikey960");
    for cpu in [0u32, 5] {
        let sds = t.domains(CpuId(cpu));
        assert_eq!(sds.len(), 2);
        // asym_cpu_capacity_classify(): both capacities inside PKG, none missing -> FULL;
        // the child (MC) loses SD_PREFER_SIBLING.
        assert_eq!(
            sds[1].flags,
            init_plus(&[AsymCpucapacity, AsymCpucapacityFull])
        );
        assert_eq!(
            sds[0].flags,
            flags(&[
                BalanceNewidle,
                BalanceExec,
                BalanceFork,
                WakeAffine,
                ShareLlc
            ])
        );
        assert_eq!(t.sd_asym_cpucapacity(CpuId(cpu)), Some(1));
        for g in t.groups(&sds[1]) {
            assert!(!g.flags.contains(PreferSibling));
        }
    }
    assert_eq!(outline(&t, 0)[1], "PKG 0-7 [0-3/0-3@1848 4-7/4-7@4096]");
    let little = t.local_group(&t.domains(CpuId(0))[1]);
    assert_eq!((little.min_capacity, little.max_capacity), (462, 462));
    assert!(t.has_asym_cpucapacity());
}

#[test]
fn partial_asymmetry_is_not_full() {
    // Three capacities; the MC of CPUs 0-3 sees two of them, one is missing -> ASYM only.
    let t = build("llcs=2,cores=4,capacity=100x2,200x2,300x4");
    assert_eq!(
        t.domains(CpuId(0))[0].flags,
        flags(&[
            BalanceNewidle,
            BalanceExec,
            BalanceFork,
            WakeAffine,
            ShareLlc,
            AsymCpucapacity
        ])
    );
    assert_eq!(
        t.domains(CpuId(0))[1].flags,
        init_plus(&[AsymCpucapacity, AsymCpucapacityFull])
    );
    // The MC of CPUs 4-7 is symmetric.
    assert_eq!(
        t.domains(CpuId(4))[0].flags,
        flags(&[
            BalanceNewidle,
            BalanceExec,
            BalanceFork,
            WakeAffine,
            ShareLlc
        ])
    );
    assert_eq!(t.sd_asym_cpucapacity(CpuId(0)), Some(1));
}

#[test]
fn tx2_smt_mc_numa() {
    let t = build("tx2-2n");
    let sds = t.domains(CpuId(0));
    let names: Vec<DomainName> = sds.iter().map(|sd| sd.name).collect();
    // CLS (= SMT mask), PKG (= MC span) and NODE (= PKG span) degenerate.
    assert_eq!(names, [DomainName::Smt, DomainName::Mc, DomainName::Numa]);
    assert_eq!(sds[0].flags, init_plus(&[ShareCpucapacity, ShareLlc]));
    assert_eq!(
        (
            sds[0].imbalance_pct,
            sds[0].cache_nice_tries,
            sds[0].min_interval
        ),
        (110, 0, 4)
    );
    // Distance 20 <= node_reclaim_distance 30: EXEC, FORK, WAKE_AFFINE stay.
    assert_eq!(
        sds[2].flags,
        flags(&[
            BalanceNewidle,
            BalanceExec,
            BalanceFork,
            WakeAffine,
            Serialize,
            Overlap,
            Numa
        ])
    );
    assert_eq!(
        (
            sds[2].imbalance_pct,
            sds[2].cache_nice_tries,
            sds[2].min_interval
        ),
        (117, 2, 224)
    );
    // One LLC per node: imb = 112 >> 3 = 14 at PKG, times max(1, span/224) above.
    assert_eq!(sds[2].imb_numa_nr, 14);
    // The MC groups: built with the CLS child's flags, rewritten to SMT's when CLS was removed.
    for g in t.groups(&sds[1]) {
        assert_eq!(g.flags, init_plus(&[ShareCpucapacity, ShareLlc]));
        assert_eq!((g.group_weight, g.cores), (4, 1));
    }
    // NUMA groups: the local one got MC's flags when PKG and NODE were removed; the
    // remote one (a private copy) keeps the NODE child's flags from build time.
    let numa: Vec<&SchedGroup> = t.groups(&sds[2]).collect();
    assert_eq!(numa[0].flags, init_plus(&[ShareLlc]));
    assert_eq!(numa[1].flags, flags(&INIT));
    assert_eq!((numa[0].cores, numa[0].group_weight), (28, 112));
    let sc = t.shortcuts(CpuId(130));
    assert_eq!(
        (sc.sd_llc, sc.sd_llc_size, sc.sd_llc_id, sc.sd_numa),
        (Some(1), 112, CpuId(112), Some(2))
    );
    assert_eq!(sc.sd_share_id, CpuId(112));
    // SMT and MC domains both have shared state; the shortcut is the MC one.
    let shared = sc.sd_llc_shared.unwrap();
    assert_eq!(
        (t.shared(shared).id, t.shared(shared).nr_busy_cpus),
        (CpuId(112), 112)
    );
    assert_eq!(t.domains(CpuId(113))[1].shared, Some(shared));
    assert!(t.domains(CpuId(130))[0].has_shared());
    assert_eq!(t.numa_distances(), [10, 20]);
    assert_eq!(t.numa_topology_type(), NumaTopologyType::Direct);
}

#[test]
fn far_numa_loses_exec_fork_wake_affine() {
    let t = build("power8-22c");
    let numa = t.domains(CpuId(0)).last().unwrap();
    // Distance 40 > node_reclaim_distance 30.
    assert_eq!(
        numa.flags,
        flags(&[BalanceNewidle, Serialize, Overlap, Numa])
    );
    // node_reclaim_distance 32 (AMD Zen) keeps them at distance 32.
    let t = build("epyc-2s");
    let numa = t.domains(CpuId(0)).last().unwrap();
    assert_eq!(
        numa.flags,
        flags(&[
            BalanceNewidle,
            BalanceExec,
            BalanceFork,
            WakeAffine,
            Serialize,
            Overlap,
            Numa
        ])
    );
    // 8 LLCs per node: imb = nr_llcs = 8 at PKG, factor 256/256 at NUMA.
    assert_eq!(t.domains(CpuId(0))[2].imb_numa_nr, 8);
    assert_eq!(numa.imb_numa_nr, 8);
}

#[test]
fn imb_numa_nr_scales_with_the_first_numa_span() {
    // Pairs of nodes at distance 20, pairs apart at 30: NUMA(20) spans 16, NUMA(30) 32.
    let t = build("nodes=4,cores=8,distance=10,20,30,30;20,10,30,30;30,30,10,20;30,30,20,10");
    let sds = t.domains(CpuId(0));
    let names: Vec<&str> = sds.iter().map(|sd| sd.name.as_str()).collect();
    assert_eq!(names, ["MC", "NUMA", "NUMA"]);
    // PKG: one LLC per node -> 8 >> 3 = 1; imb_span = 16 (first NUMA domain).
    assert_eq!((sds[1].imb_numa_nr, sds[2].imb_numa_nr), (1, 2));
    assert_eq!(
        outline(&t, 0)[2],
        "NUMA 0-31 [0-15/0-15@16384 16-31/16-31@16384]"
    );
    assert_eq!(t.numa_distances(), [10, 20, 30]);
}

#[test]
fn imbalance_pct_input_applies_to_initializer_levels_only() {
    let params = SdParams {
        imbalance_pct: 125,
        busy_factor: 32,
    };
    let t = build_with("nodes=2,sockets=1,llcs=2,cores=2,threads=2", &params);
    let got: Vec<(&str, u32, u32)> = t
        .domains(CpuId(0))
        .iter()
        .map(|sd| (sd.name.as_str(), sd.imbalance_pct, sd.busy_factor))
        .collect();
    // SMT keeps 110 and MC 117 (sd_init() overrides); PKG and NUMA take the input.
    assert_eq!(
        got,
        [
            ("SMT", 110, 32),
            ("MC", 117, 32),
            ("PKG", 125, 32),
            ("NUMA", 125, 32)
        ]
    );
    // Setting them by name (`--set`) is tested with their declaration, in `params.rs`.
}

#[test]
fn real_clusters_give_a_cls_level() {
    let t = build("clusters=2,cores=4,threads=2");
    let sds = t.domains(CpuId(9));
    let got: Vec<(&str, String)> = sds
        .iter()
        .map(|sd| (sd.name.as_str(), t.span(sd.span).to_cpulist()))
        .collect();
    assert_eq!(
        got,
        [
            ("SMT", "8-9".to_owned()),
            ("CLS", "8-15".to_owned()),
            ("MC", "0-15".to_owned())
        ]
    );
    assert_eq!(sds[1].flags, init_plus(&[Cluster, ShareLlc]));
    assert_eq!((sds[1].imbalance_pct, sds[1].cache_nice_tries), (117, 1));
    let sc = t.shortcuts(CpuId(9));
    assert_eq!(
        (sc.sd_llc, sc.sd_llc_id, sc.sd_share_id),
        (Some(2), CpuId(0), CpuId(8))
    );
    assert!(t.has_cluster());
    assert!(
        t.cpus_share_resources(CpuId(9), CpuId(15)) && !t.cpus_share_resources(CpuId(9), CpuId(7))
    );
    assert!(t.cpus_share_cache(CpuId(9), CpuId(7)));
    // The MC groups are clusters with their CLS flags.
    for g in t.groups(&sds[2]) {
        assert_eq!((g.flags, g.cores), (init_plus(&[Cluster, ShareLlc]), 4));
    }
}

#[test]
fn one_cpu_has_no_domains() {
    let t = build("1");
    assert!(t.domains(CpuId(0)).is_empty());
    let sc = t.shortcuts(CpuId(0));
    assert_eq!(
        (sc.sd_llc, sc.sd_llc_size, sc.sd_llc_id, sc.sd_share_id),
        (None, 1, CpuId(0), CpuId(0))
    );
}

/// The 4-node ring drawn in topology.c's NUMA comment (one CPU per node):
/// NUMA-1 0-1,3 groups {0},{1},{3}; NUMA-2 groups {0-1,3},{1-3}, with balance masks.
#[test]
fn kernel_ring_example() {
    let t = build("nodes=4,distance=10,20,30,20;20,10,20,30;30,20,10,20;20,30,20,10");
    assert_eq!(
        outline(&t, 0),
        [
            "NUMA 0-1,3 [0/0@1024 1/1@1024 3/3@1024]",
            "NUMA 0-3 [0-1,3/0@3072 1-3/2@3072]"
        ]
    );
    assert_eq!(
        outline(&t, 1),
        [
            "NUMA 0-2 [1/1@1024 2/2@1024 0/0@1024]",
            "NUMA 0-3 [0-2/1@3072 0,2-3/3@3072]"
        ]
    );
    assert_eq!(
        outline(&t, 2),
        [
            "NUMA 1-3 [2/2@1024 3/3@1024 1/1@1024]",
            "NUMA 0-3 [1-3/2@3072 0-1,3/0@3072]"
        ]
    );
    assert_eq!(
        outline(&t, 3),
        [
            "NUMA 0,2-3 [3/3@1024 0/0@1024 2/2@1024]",
            "NUMA 0-3 [0,2-3/3@3072 0-2/1@3072]"
        ]
    );
    // The group 1-3 seen from CPU 0 and CPU 2 shares one sgc (balance CPU 2).
    let g0 = t.groups(&t.domains(CpuId(0))[1]).nth(1).unwrap().sgc;
    let g2 = t.local_group(&t.domains(CpuId(2))[1]).sgc;
    assert_eq!(g0, g2);
    assert_eq!(t.sgc(g0).id, CpuId(2));
    assert_eq!(t.numa_topology_type(), NumaTopologyType::GluelessMesh);
    let top = &t.domains(CpuId(0))[1];
    assert_eq!(
        (
            top.flags.contains(BalanceFork),
            top.flags.contains(Serialize)
        ),
        (true, true)
    );
}

/// The diameter-3 chain of build_overlap_sched_groups()'s comment, with the
/// find_descended_sibling() fix: NUMA-2 groups {0-1},{2} / {0-2},{2-3} / {1-3},{0-1} / {2-3},{1}.
#[test]
fn kernel_chain_example() {
    let t = build("nodes=4,distance=10,20,30,40;20,10,20,30;30,20,10,20;40,30,20,10");
    assert_eq!(
        outline(&t, 0),
        [
            "NUMA 0-1 [0/0@1024 1/1@1024]",
            "NUMA 0-2 [0-1/0@2048 2/2@1024]",
            "NUMA 0-3 [0-2/0@3072 1-3/3@3072]"
        ]
    );
    assert_eq!(
        outline(&t, 1),
        [
            "NUMA 0-2 [1/1@1024 2/2@1024 0/0@1024]",
            "NUMA 0-3 [0-2/1@3072 2-3/3@2048]"
        ]
    );
    assert_eq!(
        outline(&t, 2),
        [
            "NUMA 1-3 [2/2@1024 3/3@1024 1/1@1024]",
            "NUMA 0-3 [1-3/2@3072 0-1/0@2048]"
        ]
    );
    assert_eq!(
        outline(&t, 3),
        [
            "NUMA 2-3 [3/3@1024 2/2@1024]",
            "NUMA 1-3 [2-3/3@2048 1/1@1024]",
            "NUMA 0-3 [1-3/3@3072 0-2/0@3072]"
        ]
    );
    assert_eq!(t.numa_topology_type(), NumaTopologyType::GluelessMesh);
    // Only distance 40 exceeds node_reclaim_distance (30 is not above 30).
    let wa: Vec<bool> = t
        .domains(CpuId(0))
        .iter()
        .map(|sd| sd.flags.contains(WakeAffine))
        .collect();
    assert_eq!(wa, [true, true, false]);
}

#[test]
fn groups_share_sgc_and_storage() {
    let t = build("xeon-4s");
    // The MC group of core {5,101} is one group seen by all 48 CPUs of the LLC.
    let from0 = t.groups(&t.domains(CpuId(0))[1]).nth(5).unwrap();
    let from101 = t.local_group(&t.domains(CpuId(101))[1]);
    assert_eq!(from0, from101);
    assert_eq!(t.sgc(from0.sgc).id, CpuId(5));
    assert_eq!(
        (from0.group_weight, from0.cores, from0.balance_cpu),
        (2, 1, CpuId(5))
    );
    // Group lists in the kernel's order: from CPU 101 the MC groups start at core
    // {5,101} and wrap (for_each_cpu_wrap from 101 meets 102, 103, ..., 119, 0, 1, ...).
    let order: Vec<String> = t
        .groups(&t.domains(CpuId(101))[1])
        .take(3)
        .map(|g| t.span(g.span).to_cpulist())
        .collect();
    assert_eq!(order, ["5,101", "6,102", "7,103"]);
    // Few groups are stored, though there are 192 CPUs x 3 levels.
    assert!(
        t.all_groups().len() < 192 + 96 + 8 * 4,
        "{}",
        t.all_groups().len()
    );
}

#[test]
fn group_order_that_is_not_a_rotation() {
    // One LLC; cores A = {0,8}, B = {1,7}, C = {2-6,9}. From CPU 7 the wrap walk
    // meets 7 (B), 8 (A), 9 (C): B, A, C, which is no rotation of CPU 0's A, B, C.
    let core = [0, 1, 2, 2, 2, 2, 2, 1, 0, 2];
    let cpus: Vec<crate::machine::CpuDesc> = core
        .iter()
        .map(|&c| crate::machine::CpuDesc {
            node: 0,
            package: 0,
            llc: 0,
            cluster: 0,
            core: c,
            capacity: 1024,
        })
        .collect();
    let m = Machine::new(&cpus, None, 30).unwrap();
    let t = Topology::build(&m, &SdParams::default()).unwrap();
    let mc = |cpu: u32| outline(&t, cpu).last().unwrap().clone();
    assert_eq!(mc(0), "MC 0-9 [0,8/0,8@2048 1,7/1,7@2048 2-6,9/2-6,9@6144]");
    assert_eq!(mc(7), "MC 0-9 [1,7/1,7@2048 0,8/0,8@2048 2-6,9/2-6,9@6144]");
    assert_eq!(mc(9), "MC 0-9 [2-6,9/2-6,9@6144 0,8/0,8@2048 1,7/1,7@2048]");
    assert_eq!(mc(3), "MC 0-9 [2-6,9/2-6,9@6144 1,7/1,7@2048 0,8/0,8@2048]");
}
