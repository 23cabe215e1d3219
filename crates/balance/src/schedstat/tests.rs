use expect_test::expect;
use lbsim_topology::{CpuId, SdParams, Topology, parse_machine};

use super::*;

/// The /proc/schedstat text of a 2-CPU machine (one MC domain per CPU) with a few counters
/// set, in each version's layout. Version 17: per domain, name and span, then 11 counters
/// for each of busy / idle / newly idle, then alb_*, sbe_*, sbf_* and ttwu_*.
#[test]
fn version_15_16_17_layouts() {
    let t = Topology::build(&parse_machine("cores=2").unwrap(), &SdParams::default()).unwrap();
    let mut s = Schedstat::new(&t);
    s.cpus[0].sched_count = 12;
    s.cpus[0].rq_cpu_time = 3_000_000;
    let d = s.sd_mut(CpuId(1), 0);
    d.lb_mut(CpuIdleType::Idle).lb_count = 2;
    d.lb_mut(CpuIdleType::Idle).lb_gained = 1;
    d.add_imbalance(CpuIdleType::Idle, MigrationType::Task, 1);
    d.add_imbalance(CpuIdleType::NotIdle, MigrationType::Load, 512);
    d.lb_mut(CpuIdleType::NewlyIdle).lb_nobusyg = 4;
    d.alb_pushed = 1;
    d.ttwu_move_affine = 9;
    expect![[r#"
        version 17
        timestamp 1234
        cpu0 0 0 12 0 0 0 3000000 0 0
        domain0 MC 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
        cpu1 0 0 0 0 0 0 0 0 0
        domain0 MC 3 0 0 0 512 0 0 0 0 0 0 0 2 0 0 0 0 1 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 4 0 0 1 0 0 0 0 0 0 0 9 0
    "#]]
    .assert_eq(&s.format_version(&t, 1234, SchedstatVersion::V17));
    // Version 16 (the default): no name, one imbalance column (the sum), busy first.
    expect![[r#"
        version 16
        timestamp 1234
        cpu0 0 0 12 0 0 0 3000000 0 0
        domain0 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
        cpu1 0 0 0 0 0 0 0 0 0
        domain0 3 0 0 0 512 0 0 0 0 2 0 0 1 1 0 0 0 0 0 0 0 0 0 0 4 0 0 1 0 0 0 0 0 0 0 9 0
    "#]]
    .assert_eq(&s.format(&t, 1234));
    // Version 15: the idle columns before the busy ones.
    expect![[r#"
        version 15
        timestamp 1234
        cpu0 0 0 12 0 0 0 3000000 0 0
        domain0 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
        cpu1 0 0 0 0 0 0 0 0 0
        domain0 3 2 0 0 1 1 0 0 0 0 0 0 512 0 0 0 0 0 0 0 0 0 0 0 4 0 0 1 0 0 0 0 0 0 0 9 0
    "#]]
    .assert_eq(&s.format_version(&t, 1234, SchedstatVersion::V15));
}

/// The version each kernel prints (stats.c history).
#[test]
fn versions_of_kernels() {
    let of = |a, b| SchedstatVersion::of_kernel(a, b).number();
    assert_eq!([of(5, 15), of(6, 1), of(6, 6), of(6, 9)], [15; 4]);
    assert_eq!([of(6, 10), of(6, 12), of(6, 13)], [16; 3]);
    assert_eq!([of(6, 14), of(6, 16), of(7, 0)], [17; 3]);
    assert_eq!(SchedstatVersion::default().number(), 16);
    assert_eq!(
        SchedstatVersion::from_number(15),
        Some(SchedstatVersion::V15)
    );
    assert_eq!(SchedstatVersion::from_number(14), None);
}

/// Sums over the machine, for summaries.
#[test]
fn totals() {
    let t = Topology::build(&parse_machine("hikey").unwrap(), &SdParams::default()).unwrap();
    let mut s = Schedstat::new(&t);
    s.sd_mut(CpuId(3), 1).lb_mut(CpuIdleType::NotIdle).lb_failed = 2;
    s.sd_mut(CpuId(7), 0).lb_mut(CpuIdleType::Idle).lb_failed = 3;
    assert_eq!(
        s.total(|d| d.lb.iter().map(|l| u64::from(l.lb_failed)).sum()),
        5
    );
}
