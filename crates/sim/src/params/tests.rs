//! Tests of the assembled registry.

use expect_test::expect;

use super::*;
use lbsim_balance::params::LbFeat;
use lbsim_core::params::CoreFeat;
use lbsim_kernel::params::{Kind, Origin};
use lbsim_rq::RqFeat;

/// Rule: bits, names and print positions are unique, each layer's bits in its range.
#[test]
fn registry_is_consistent() {
    REGISTRY.check().unwrap();
    // Every value parameter has storage in Settings, and its default round-trips.
    let s = Settings::new(8);
    for def in REGISTRY.iter() {
        let v = s.get(def.name).unwrap();
        if !matches!(def.kind, Kind::Feature(_)) {
            let mut t = s.clone();
            t.set(def.name, &v).unwrap();
            assert_eq!(t, s, "{} = {v} round-trips", def.name);
        }
    }
}

/// Rule: the default line matches v6.12's features.h defaults for the v6.12 names (FORMATS.md
/// §1e, verified list), in kernel order, with the v6.1/v6.6-only names interleaved, then
/// lbsim's switches (checked against the registry, so a new switch needs no edit here).
#[test]
fn default_debugfs_line() {
    let d = default_features();
    let text = REGISTRY.debugfs_text(d);
    assert!(
        text.ends_with(" \n"),
        "every name ends with a space, then a newline"
    );
    let kernel: Vec<&str> = text
        .split_whitespace()
        .filter(|item| {
            let name = item.strip_prefix("NO_").unwrap_or(item);
            let (def, _) = REGISTRY.feature(name).unwrap();
            matches!(def.origin, Origin::Kernel { .. })
        })
        .collect();
    expect![[r#"
        GENTLE_FAIR_SLEEPERS START_DEBIT PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE RUN_TO_PARITY PREEMPT_SHORT NO_NEXT_BUDDY LAST_BUDDY CACHE_HOT_BUDDY DELAY_DEQUEUE DELAY_ZERO WAKEUP_PREEMPTION NO_HRTICK NO_HRTICK_DL NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE NO_SIS_PROP SIS_UTIL NO_WARN_DOUBLE_CLOCK RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE WA_WEIGHT WA_BIAS UTIL_EST UTIL_EST_FASTUP NO_LATENCY_WARN ALT_PERIOD BASE_SLICE HZ_BW
    "#]]
    .assert_eq(&format!("{}\n", kernel.join(" ")));
    // lbsim's switches follow the kernel's, each with its declared default.
    let switches: Vec<&str> = text.split_whitespace().skip(kernel.len()).collect();
    let expected: Vec<String> = REGISTRY
        .features()
        .into_iter()
        .filter(|(d, _)| matches!(d.origin, Origin::LbsimSwitch { .. }))
        .map(|(d, f)| {
            if f.default {
                d.name.to_owned()
            } else {
                format!("NO_{}", d.name)
            }
        })
        .collect();
    assert_eq!(switches, expected);
}

/// Rule: the v6.12 subset, in order, is exactly the verified v6.12 default list.
#[test]
fn v6_12_names_keep_kernel_order_and_defaults() {
    let v612 = "PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE RUN_TO_PARITY PREEMPT_SHORT \
                NO_NEXT_BUDDY CACHE_HOT_BUDDY DELAY_DEQUEUE DELAY_ZERO WAKEUP_PREEMPTION NO_HRTICK \
                NO_HRTICK_DL NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE SIS_UTIL NO_WARN_DOUBLE_CLOCK \
                RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE WA_WEIGHT WA_BIAS \
                UTIL_EST NO_LATENCY_WARN";
    let got: Vec<String> = REGISTRY
        .features()
        .into_iter()
        .filter(
            |(d, _)| matches!(d.origin, Origin::Kernel { versions } if versions.contains("v6.12")),
        )
        .map(|(d, f)| {
            if f.default {
                d.name.to_owned()
            } else {
                format!("NO_{}", d.name)
            }
        })
        .collect();
    assert_eq!(got.join(" "), v612);
}

/// Rule: `NO_X` clears X, `X` sets it; later items win; the set is a Copy bitset.
#[test]
fn apply_list() {
    let mut f = default_features();
    REGISTRY
        .apply_features(&mut f, "NO_RUN_TO_PARITY,NEXT_BUDDY  LB_TIP_AVG_HIGH,")
        .unwrap();
    assert!(!f.enabled(RqFeat::RunToParity));
    assert!(f.enabled(RqFeat::NextBuddy));
    assert!(f.enabled(LbFeat::LbTipAvgHigh));
    let g = f;
    REGISTRY
        .apply_features(&mut f, "RUN_TO_PARITY,NO_RUN_TO_PARITY")
        .unwrap();
    assert_eq!(f, g);
    assert!(f.enabled(CoreFeat::TtwuQueue));
}

/// Rule: an unknown name is a typed error naming the nearest valid spellings, and nothing
/// changes; kernel names are case-sensitive.
#[test]
fn unknown_feature_is_an_error() {
    let mut f = default_features();
    let err = REGISTRY
        .apply_features(&mut f, "NO_LB_MIN,NO_LB_UTIL_SKIP_SINGEL")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown sched feature `NO_LB_UTIL_SKIP_SINGEL`; did you mean `NO_LB_UTIL_SKIP_SINGLE`?"
    );
    assert_eq!(f, default_features(), "a failed write changes nothing");
    assert!(REGISTRY.apply_features(&mut f, "place_lag").is_err());
}

/// Rule: `--set` reaches every layer's storage with the old semantics; unknown names suggest.
#[test]
fn settings_route_by_declaration() {
    let mut s = Settings::new(8);
    s.set("imbalance_pct", "125").unwrap();
    s.set("hz", "1000").unwrap();
    s.set("cost_ipi_ns", "300").unwrap();
    s.set("background_wakeups_hz", "0").unwrap();
    s.set("sched_latency_ns", "12000000").unwrap();
    assert_eq!(s.sd.imbalance_pct, 125);
    assert_eq!(s.tunables.tick_nsec(), 1_000_000);
    assert_eq!(s.cost.ipi_ns, 300);
    assert_eq!(s.engine.background_wakeups_hz, 0);
    assert_eq!(s.tunables.latency_ns, 12_000_000);
    assert_eq!(s.get("base_slice_ns").unwrap(), "3000000");
    assert_eq!(
        s.set("no_such_knob", "1").unwrap_err().to_string(),
        "unknown parameter `no_such_knob`; did you mean `latency_ns`, `nr_cpus` or `base_slice_ns`?"
    );
    assert!(matches!(
        s.set("TTWU_QUEUE", "0"),
        Err(ParamError::FeatureNotSettable { .. })
    ));
}

/// Rule: the invariant suites flip every modelled feature and skip the ones marked
/// `not_modelled` (HRTICK and friends).
#[test]
fn behaviour_switches_skip_the_unmodelled() {
    let names: Vec<&str> = behaviour_switches().iter().map(|d| d.name).collect();
    assert!(names.contains(&"LB_UTIL_SKIP_SINGLE") && names.contains(&"TTWU_QUEUE"));
    assert!(!names.contains(&"HRTICK") && !names.contains(&"NONTASK_CAPACITY"));
    assert!(
        names.contains(&"SIS_PROP"),
        "the pre-v5.5 placement reads it"
    );
}

/// Rule (crate::profile): a kernel profile's settings are that release's: its features.h
/// defaults, lbsim's switches for the changes it has, its tunables' defaults; a feature the
/// release lacks cannot be switched on, lbsim's switches can.
#[test]
fn kernel_profiles_set_the_releases_values() {
    use crate::profile::Profile;
    let mut s = Settings::for_kernel(8, Profile::parse("5.9").unwrap());
    assert_eq!(s.sd.imbalance_pct, 125);
    assert_eq!(s.sd.busy_factor, 32);
    assert_eq!(s.get("sched_policy").unwrap(), "cfs");
    assert!(!s.features.enabled(LbFeat::LbRelaxByFailed));
    assert!(
        !s.features.enabled(LbFeat::SisUtil),
        "SIS_UTIL came in v6.0"
    );
    assert!(
        s.features.enabled(LbFeat::LbUtilSkipSingle),
        "merged in v5.7"
    );
    assert!(!s.features.enabled(RqFeat::DelayDequeue));
    assert_eq!(
        s.apply_features("SIS_UTIL").unwrap_err().to_string(),
        "SIS_UTIL does not exist in v5.9 (it first appears in the v6.1 profile)"
    );
    s.apply_features("NO_SIS_UTIL,LB_RELAX_BY_FAILED").unwrap();
    assert!(
        s.features.enabled(LbFeat::LbRelaxByFailed),
        "a switch is allowed"
    );
    let modern = Settings::for_kernel(8, Profile::parse("6.12").unwrap());
    let plain = Settings::new(8);
    assert_eq!(modern.sd, plain.sd);
    assert_eq!(modern.tunables, plain.tunables);
    assert!(
        !modern.features.enabled(RqFeat::AltPeriod),
        "v6.12 has no ALT_PERIOD"
    );
}
