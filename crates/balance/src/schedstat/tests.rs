use expect_test::expect;
use lbsim_topology::{CpuId, SdParams, Topology, parse_machine};

use super::*;

/// The /proc/schedstat text of a 2-CPU machine (one MC domain per CPU) with a few counters
/// set, in version 17's layout: per domain, name and span, then 11 counters for each of
/// busy / idle / newly idle, then alb_*, sbe_*, sbf_* and ttwu_*.
#[test]
fn version_17_layout() {
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
    .assert_eq(&s.format(&t, 1234));
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
