use super::*;

fn cpu(node: u32, package: u32, llc: u32, cluster: u32, core: u32) -> CpuDesc {
    CpuDesc {
        node,
        package,
        llc,
        cluster,
        core,
        capacity: 1024,
    }
}

#[test]
fn labels_become_dense_ids_and_masks() {
    // Two cores of two threads each; labels are arbitrary.
    let cpus = [
        cpu(0, 7, 3, 3, 40),
        cpu(0, 7, 3, 3, 41),
        cpu(0, 7, 3, 3, 40),
        cpu(0, 7, 3, 3, 41),
    ];
    let m = Machine::new(&cpus, None, RECLAIM_DISTANCE).unwrap();
    assert_eq!(m.nr_cpus(), 4);
    assert_eq!(m.nr_cores(), 2);
    assert_eq!(m.cpu(CpuId(2)).core, 0);
    assert_eq!(m.cpu(CpuId(2)).thread, 1);
    assert_eq!(m.cpu(CpuId(3)).thread, 1);
    assert_eq!(m.smt_mask(CpuId(1)).to_cpulist(), "1,3");
    assert_eq!(m.smt_siblings(CpuId(3)), &[CpuId(1), CpuId(3)]);
    assert_eq!(m.smt_siblings(CpuId(0)), &[CpuId(0), CpuId(2)]);
    assert_eq!(m.llc_mask(CpuId(1)).to_cpulist(), "0-3");
    assert!(m.has_smt());
    assert_eq!(m.nr_nodes(), 1);
    assert_eq!(m.node_distance(0, 0), 10);
}

#[test]
fn default_distance_table_is_10_and_20() {
    let cpus = [cpu(0, 0, 0, 0, 0), cpu(2, 1, 1, 1, 1)];
    let m = Machine::new(&cpus, None, RECLAIM_DISTANCE).unwrap();
    assert_eq!(m.nr_nodes(), 3);
    assert_eq!(m.node_distance(0, 2), 20);
    assert!(!m.node_has_cpus(1));
    assert_eq!(m.node_mask(CpuId(1)).to_cpulist(), "1");
}

#[test]
fn invalid_machines_are_refused_with_the_offending_part() {
    let ok = [cpu(0, 0, 0, 0, 0), cpu(1, 1, 1, 1, 1)];
    let err = |cpus: &[CpuDesc], d: Option<&[Vec<u32>]>| {
        Machine::new(cpus, d, 30).unwrap_err().to_string()
    };
    assert_eq!(err(&[], None), "the machine has no CPU");
    let mut big = ok;
    big[1].capacity = 1025;
    assert_eq!(
        err(&big, None),
        "cpu 1: capacity 1025 is out of range (1..=1024)"
    );
    big[1].capacity = 0;
    assert_eq!(
        err(&big, None),
        "cpu 1: capacity 0 is out of range (1..=1024)"
    );
    assert_eq!(
        err(&ok, Some(&[vec![10, 20], vec![21, 10]])),
        "distance table is not symmetric: node 0 to 1 is 20 but node 1 to 0 is 21"
    );
    assert_eq!(
        err(&ok, Some(&[vec![10, 20], vec![20, 11]])),
        "distance of node 1 to itself is 11; it must be 10"
    );
    assert_eq!(
        err(&ok, Some(&[vec![10, 20], vec![20]])),
        "distance table row 1 has 1 entries; expected 2 (one per node)"
    );
    assert_eq!(
        err(&ok, Some(&[vec![10, 10], vec![10, 10]])),
        "distance of node 0 to node 1 is 10; remote distances must be 11..=255"
    );
    assert_eq!(
        err(&ok, Some(&[vec![10]])),
        "cpu 1 is on node 1, but the distance table has 1 nodes"
    );
    // Core 5 in two different LLCs.
    let bad = [cpu(0, 0, 0, 0, 5), cpu(0, 0, 1, 1, 5)];
    assert_eq!(
        err(&bad, None),
        "cpu 1: core 5 is in cluster 0 (cpu 0) but cpu 1 puts it in cluster 1"
    );
    let bad = [cpu(0, 0, 0, 0, 0), cpu(1, 0, 1, 1, 1)];
    assert_eq!(
        err(&bad, None),
        "cpu 1: package 0 is in node 0 (cpu 0) but cpu 1 puts it in node 1"
    );
}
