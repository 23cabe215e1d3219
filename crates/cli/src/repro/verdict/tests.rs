//! The verdict rules, one assertion per rule.

use super::*;

#[test]
fn each_rule_of_the_point_verdict() {
    // tip-avg-high at N = 39: 10160 -> 184 us (-98%); lbsim -82%, significant.
    assert_eq!(at_point((10160.0, 184.0), -82.0, true), Verdict::Reproduced);
    // The same change without significance still goes the right way by the right size
    // (the line says it was not significant).
    assert_eq!(
        at_point((10160.0, 184.0), -82.0, false),
        Verdict::Reproduced
    );
    // No change in lbsim.
    assert_eq!(
        at_point((10160.0, 184.0), -2.0, true),
        Verdict::NotReproduced
    );
    // The other direction.
    assert_eq!(
        at_point((177.0, 193.0), -90.0, true),
        Verdict::NotReproduced
    );
    // Right direction, a third of the size: partly; 2.5 times the size: partly.
    assert_eq!(at_point((100.0, 70.0), -10.0, true), Verdict::Partly);
    assert_eq!(at_point((100.0, 110.0), 25.0, true), Verdict::Partly);
    // Within 2x either way.
    assert_eq!(at_point((100.0, 110.0), 6.0, true), Verdict::Reproduced);
    assert_eq!(at_point((100.0, 110.0), 20.0, true), Verdict::Reproduced);
    // The seed saw no effect: lbsim must not show one.
    assert_eq!(at_point((100.0, 102.0), 30.0, true), Verdict::NotReproduced);
    assert_eq!(at_point((100.0, 102.0), 30.0, false), Verdict::Reproduced);
    assert_eq!(at_point((100.0, 102.0), 3.0, true), Verdict::Reproduced);
}

#[test]
fn a_metric_is_reproduced_only_where_every_point_is() {
    use Verdict::*;
    assert_eq!(over(&[]), None);
    assert_eq!(over(&[Reproduced, Reproduced]), Some(Reproduced));
    assert_eq!(over(&[Reproduced, NotReproduced]), Some(Partly));
    assert_eq!(over(&[Partly, Partly]), Some(Partly));
    assert_eq!(over(&[NotReproduced, NotReproduced]), Some(NotReproduced));
}
