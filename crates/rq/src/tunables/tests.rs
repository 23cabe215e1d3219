//! Tests of the tunables and of this layer's feature declarations.

use expect_test::expect;

use super::*;
use crate::params::RqFeat;

/// Rule: the experiment switches this layer declares default as EXPERIMENTS.md says, and the
/// v6.6 preset turns off exactly the v6.12-only features.
#[test]
fn rq_feature_defaults_and_v6_6() {
    let d = crate::params::default_features();
    assert!(d.enabled(RqFeat::RunnableAvgInitUtil));
    assert!(!d.enabled(RqFeat::NextBuddy));
    let f = crate::params::v6_6(d);
    for feat in RqFeat::ALL {
        let def = feat.def();
        let v612_only = def.origin == lbsim_kernel::params::Origin::kernel("v6.12");
        let expect = !v612_only && def.feature().unwrap().default;
        assert_eq!(f.enabled(*feat), expect, "{}", feat.name());
    }
}

/// Rule: get_update_sysctl_factor(): LOG is 1 + ilog2(min(ncpus, 8)), LINEAR min(ncpus, 8).
#[test]
fn tunable_scaling_factor() {
    let log: Vec<u64> = [1, 2, 3, 4, 7, 8, 9, 192]
        .iter()
        .map(|&n| TunableScaling::Log.factor(n))
        .collect();
    assert_eq!(log, [1, 2, 2, 3, 3, 4, 4, 4]);
    assert_eq!(TunableScaling::Linear.factor(6), 6);
    assert_eq!(TunableScaling::Linear.factor(64), 8);
    assert_eq!(TunableScaling::None.factor(64), 1);
    // base_slice_ns at boot: 0.75 ms x factor, so 3 ms on 8+ CPUs.
    assert_eq!(Tunables::new(1).base_slice_ns, 750_000);
    assert_eq!(Tunables::new(2).base_slice_ns, 1_500_000);
    assert_eq!(Tunables::new(8).base_slice_ns, 3_000_000);
    assert_eq!(Tunables::new(176).latency_ns, 24_000_000);
    assert_eq!(Tunables::new(4).wakeup_granularity_ns, 3_000_000);
}

/// Rule: the printed list, name=value per line (snapshot: users read it).
#[test]
fn tunables_display() {
    expect![[r#"
        sched_policy=eevdf
        tunable_scaling=1
        base_slice_ns=3000000
        latency_ns=24000000
        min_granularity_ns=3000000
        idle_min_granularity_ns=750000
        wakeup_granularity_ns=4000000
        sched_nr_latency=8
        child_runs_first=0
        migration_cost_ns=500000
        nr_migrate=32
        sched_autogroup_enabled=1
        hz=250
        nr_cpus=8
    "#]]
    .assert_eq(&Tunables::new(8).to_string());
}

/// Rule: --set by kernel name; scaled tunables keep value/factor as their normalized value, and
/// writing tunable_scaling re-derives the scaled values from the normalized ones.
#[test]
fn set_and_rescale() {
    let mut t = Tunables::new(8);
    t.set_assignment("base_slice_ns=2000000").unwrap();
    assert_eq!(t.base_slice_ns, 2_000_000);
    t.set("tunable_scaling", "none").unwrap();
    assert_eq!(t.base_slice_ns, 500_000);
    assert_eq!(t.latency_ns, 6_000_000);
    assert_eq!(t.sched_nr_latency, 8);
    t.set("sched_policy", "cfs").unwrap();
    assert_eq!(t.sched_policy, FairPick::Cfs);
    t.set("sched_wakeup_granularity_ns", "1").unwrap();
    assert_eq!(t.get("wakeup_granularity_ns").unwrap(), "1");
    t.set("hz", "1000").unwrap();
    assert_eq!(t.tick_nsec(), 1_000_000);
    t.set("hz", "300").unwrap();
    assert_eq!(t.tick_nsec(), 3_333_333);
    assert_eq!(Tunables::new(1).tick_nsec(), 4_000_000);
}

/// Rule: unknown keys and bad values are typed errors naming the valid choices; nothing changes.
#[test]
fn tunable_errors() {
    let mut t = Tunables::new(4);
    let before = t.clone();
    let e = t.set("base_slice", "1").unwrap_err();
    assert!(matches!(e, ParamError::Unknown { .. }));
    assert_eq!(
        e.to_string(),
        "unknown parameter `base_slice`; did you mean `base_slice_ns`?"
    );
    let e = t.set("hz", "200").unwrap_err();
    assert_eq!(
        e.to_string(),
        "`hz=200` is out of range: expected one of 100, 250, 300, 1000 Hz"
    );
    assert_eq!(
        t.set("sched_policy", "bfs").unwrap_err().to_string(),
        "invalid value `bfs` for `sched_policy`: expected eevdf or cfs"
    );
    assert!(t.set("base_slice_ns", "0").is_err());
    assert!(t.set("nr_migrate", "-1").is_err());
    assert!(matches!(
        t.set_assignment("hz"),
        Err(ParamError::Malformed { .. })
    ));
    assert_eq!(t, before);
}
