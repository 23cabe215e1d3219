//! Tests of the sched features registry and the tunables.

use expect_test::expect;

use super::*;

/// Rule: the default line matches v6.12's features.h defaults for the v6.12 names (FORMATS.md
/// §1e, verified list), in kernel order, with the v6.1/v6.6-only and lbsim names interleaved.
#[test]
fn default_debugfs_line() {
    expect![[r#"
        GENTLE_FAIR_SLEEPERS START_DEBIT PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE RUN_TO_PARITY PREEMPT_SHORT NO_NEXT_BUDDY LAST_BUDDY CACHE_HOT_BUDDY DELAY_DEQUEUE DELAY_ZERO WAKEUP_PREEMPTION NO_HRTICK NO_HRTICK_DL NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE NO_SIS_PROP SIS_UTIL NO_WARN_DOUBLE_CLOCK RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE WA_WEIGHT WA_BIAS UTIL_EST UTIL_EST_FASTUP NO_LATENCY_WARN ALT_PERIOD BASE_SLICE HZ_BW LB_UTIL_SKIP_SINGLE LB_RELAX_BY_FAILED LB_BUSY_INTERVAL_SKEW NEWIDLE_BAIL_ON_PENDING NO_LB_TIP_AVG_HIGH NO_IDLE_RESERVE PREFER_SIBLING_NR_DIFF RUNNABLE_AVG_INIT_UTIL LB_UTIL_RUNNABLE_BOOST LB_REDUCE_ACTIVE_BALANCE
    "#]]
    .assert_eq(&format!("{}\n", Features::defaults()));
    // The debugfs file ends every name with a space, then a newline.
    let d = Features::defaults();
    assert_eq!(d.debugfs_text(), format!("{d} \n"));
}

/// Rule: the v6.12 subset, in order, is exactly the verified v6.12 default list.
#[test]
fn v6_12_names_keep_kernel_order_and_defaults() {
    let v612 = "PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE RUN_TO_PARITY PREEMPT_SHORT \
                NO_NEXT_BUDDY CACHE_HOT_BUDDY DELAY_DEQUEUE DELAY_ZERO WAKEUP_PREEMPTION NO_HRTICK \
                NO_HRTICK_DL NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE SIS_UTIL NO_WARN_DOUBLE_CLOCK \
                RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE WA_WEIGHT WA_BIAS \
                UTIL_EST NO_LATENCY_WARN";
    let d = Features::defaults();
    let got: Vec<String> = SchedFeat::ALL
        .iter()
        .filter(|f| f.origin().contains("v6.12"))
        .map(|&f| {
            if d.enabled(f) {
                f.name().to_string()
            } else {
                format!("NO_{}", f.name())
            }
        })
        .collect();
    assert_eq!(got.join(" "), v612);
}

/// Rule: `NO_X` clears X, `X` sets it; later items win; the set is a Copy bitset.
#[test]
fn apply_list() {
    let mut f = Features::defaults();
    f.apply("NO_RUN_TO_PARITY,NEXT_BUDDY  LB_TIP_AVG_HIGH,")
        .unwrap();
    assert!(!f.enabled(SchedFeat::RunToParity));
    assert!(f.enabled(SchedFeat::NextBuddy));
    assert!(f.enabled(SchedFeat::LbTipAvgHigh));
    let g = f;
    f.apply("RUN_TO_PARITY,NO_RUN_TO_PARITY").unwrap();
    assert!(!f.enabled(SchedFeat::RunToParity));
    assert_eq!(f, g);
    let parsed: Features = "NO_PLACE_LAG".parse().unwrap();
    assert_eq!(
        parsed,
        Features::defaults().with(SchedFeat::PlaceLag, false)
    );
}

/// Rule: an unknown name is a typed error listing every valid name, and nothing changes.
#[test]
fn unknown_feature_is_an_error() {
    let mut f = Features::defaults();
    let err = f.apply("NO_LB_MIN,NO_SUCH_THING").unwrap_err();
    let FeatureError::Unknown { name, valid } = &err;
    assert_eq!(name, "NO_SUCH_THING");
    assert_eq!(valid.len(), SchedFeat::ALL.len());
    assert_eq!(f, Features::defaults(), "a failed write changes nothing");
    assert!(err.to_string().starts_with(
        "unknown sched feature `NO_SUCH_THING`; valid features (prefix NO_ to disable): \
         GENTLE_FAIR_SLEEPERS, START_DEBIT, PLACE_LAG,"
    ));
    // Kernel names are case-sensitive.
    assert!(f.apply("place_lag").is_err());
}

/// Rule: v6.6 had none of PLACE_REL_DEADLINE, PREEMPT_SHORT, DELAY_DEQUEUE, DELAY_ZERO.
#[test]
fn v6_6_preset() {
    let f = Features::v6_6();
    for feat in SchedFeat::ALL {
        let expect = if feat.origin() == "v6.12" {
            false
        } else {
            feat.default_enabled()
        };
        assert_eq!(f.enabled(*feat), expect, "{}", feat.name());
    }
}

/// Rule: the experiment switches default as EXPERIMENTS.md says.
#[test]
fn experiment_switch_defaults() {
    let d = Features::defaults();
    assert!(d.enabled(SchedFeat::LbUtilSkipSingle));
    assert!(d.enabled(SchedFeat::LbRelaxByFailed));
    assert!(d.enabled(SchedFeat::LbBusyIntervalSkew));
    assert!(d.enabled(SchedFeat::NewidleBailOnPending));
    assert!(!d.enabled(SchedFeat::LbTipAvgHigh));
    assert!(!d.enabled(SchedFeat::IdleReserve));
    assert!(d.enabled(SchedFeat::PreferSiblingNrDiff));
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
    assert_eq!(t.sched_policy, SchedPolicy::Cfs);
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
    assert!(matches!(e, TunableError::UnknownKey { .. }));
    assert!(
        e.to_string()
            .contains("valid tunables: sched_policy, tunable_scaling, base_slice_ns")
    );
    let e = t.set("hz", "200").unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid value `200` for tunable `hz`: expected 100, 250, 300 or 1000"
    );
    assert!(t.set("sched_policy", "bfs").is_err());
    assert!(t.set("base_slice_ns", "0").is_err());
    assert!(t.set("nr_migrate", "-1").is_err());
    assert!(matches!(
        t.set_assignment("hz"),
        Err(TunableError::Malformed { .. })
    ));
    assert_eq!(t, before);
}
