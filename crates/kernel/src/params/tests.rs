use super::*;
use crate::params::{Kind, Origin, Owner};

crate::sched_features! {
    /// Test features.
    pub enum TFeat;
    /// Their declarations.
    pub const TFEATS;
    base = BALANCE_FEATURE_BASE, owner = Owner::Balance;
    /// One.
    Alpha = "ALPHA", pos 2, on, Origin::kernel("v6.12");
    /// Two.
    BetaGamma = "BETA_GAMMA", pos 1, off, Origin::switch("abc123", "never merged");
    /// Three.
    Hr = "HR", pos 3, off, Origin::kernel("v6.1"), not_modelled;
}

crate::int_params! {
    /// Test knobs.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Knobs;
    /// Their declarations.
    pub const KNOBS;
    owner = Owner::CostModel;
    /// A time.
    pub a_ns: u64 = "a_ns", Ns, 5, 0..=u64::MAX, Origin::LbsimModel;
    /// A percentage.
    pub pct: u32 = "pct", Percent, 117, 100..=10000, Origin::kernel("v6.6");
}

const TABLES: &[&[ParamDef]] = &[TFEATS, KNOBS];
const REG: Registry = Registry::new(TABLES);

#[test]
fn edit_distance_and_nearest() {
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("LB_MIN", "lb_min"), 0);
    assert_eq!(nearest("pc", ["a_ns", "pct", "pcts"]), vec!["pct", "pcts"]);
    assert!(nearest("x", std::iter::empty::<&str>()).is_empty());
}

#[test]
fn features_from_declarations() {
    assert!(REG.check().is_ok());
    let d = REG.default_features();
    assert!(d.enabled(TFeat::Alpha) && !d.enabled(TFeat::BetaGamma));
    assert_eq!(TFeat::Alpha.bit(), FeatureBit(BALANCE_FEATURE_BASE));
    assert_eq!(REG.debugfs_text(d), "NO_BETA_GAMMA ALPHA NO_HR \n");
    let mut f = d;
    REG.apply_features(&mut f, "NO_ALPHA, BETA_GAMMA").unwrap();
    assert_eq!(REG.features_line(f), "BETA_GAMMA NO_ALPHA NO_HR");
    let e = REG
        .apply_features(&mut f, "ALPHA,NO_BETA_GAMA")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown sched feature `NO_BETA_GAMA`; did you mean `NO_BETA_GAMMA`?"
    );
    assert_eq!(
        REG.features_line(f),
        "BETA_GAMMA NO_ALPHA NO_HR",
        "all or nothing"
    );
    assert!(matches!(
        REG.apply_features(&mut f, "pct"),
        Err(ParamError::NotAFeature { name: "pct" })
    ));
    assert!(!TFeat::Hr.def().feature().unwrap().modelled);
    let names: Vec<&str> = TFeat::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(names, ["ALPHA", "BETA_GAMMA", "HR"]);
}

#[test]
fn int_params_set_get_and_errors() {
    let mut k = Knobs::default();
    assert_eq!((k.a_ns, k.pct), (5, 117));
    k.set("pct", " 125 ").unwrap();
    assert_eq!(k.get("pct").unwrap(), "125");
    assert_eq!(
        k.set("pct", "50").unwrap_err().to_string(),
        "`pct=50` is out of range: expected 100..=10000 percent"
    );
    assert_eq!(
        k.set("a_ns", "-3").unwrap_err().to_string(),
        "invalid value `-3` for `a_ns`: expected an integer (0.. ns)"
    );
    assert_eq!(
        k.set("pcx", "1").unwrap_err().to_string(),
        "unknown parameter `pcx`; did you mean `pct`?"
    );
    assert_eq!(
        k.entries(),
        vec![("a_ns", "5".to_owned()), ("pct", "125".to_owned())]
    );
    assert!(matches!(
        REG.lookup("ALPHA").unwrap().kind,
        Kind::Feature(_)
    ));
    assert_eq!(
        REG.lookup("ALPHA")
            .unwrap()
            .parse("1")
            .unwrap_err()
            .to_string(),
        "`ALPHA` is a sched feature: switch it with --features ALPHA or NO_ALPHA"
    );
}

#[test]
fn info_serializes() {
    let j = serde_json::to_string(&KNOBS[1].info()).unwrap();
    assert_eq!(
        j,
        r#"{"name":"pct","kind":"integer","unit":"percent","default":117,"range":"100..=10000 percent","doc":"A percentage.","owner":"cost_model","origin":{"type":"kernel","versions":"v6.6"}}"#
    );
}
