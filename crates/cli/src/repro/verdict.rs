//! The verdict line under each `lbsim repro` table: per metric, whether lbsim reproduces the
//! seed's effect at the points where the seed reported both sides.
//!
//! At one point, with the seed's change `r = (patched - base) / base` and lbsim's change `s`
//! of the means:
//! - a seed change under 5% is "no effect": reproduced when lbsim's change is under 5% too or
//!   not significant (Welch), else not;
//! - otherwise: not reproduced when `s` is under 5% or has the other sign; reproduced when
//!   `|s|` is within a factor of 2 of `|r|`; partly (right direction, size off by more than
//!   2x) beyond. Whether lbsim's two sides differ significantly is said beside the verdict
//!   (a right-looking change of noisy means is not evidence on its own).
//!
//! A metric is reproduced when every judged point is, not reproduced when none is reproduced
//! or partly, and partly otherwise; the line names the points that were not, and those whose
//! change was not significant.

/// A seed change smaller than this (as a fraction) is read as "no effect".
const NO_EFFECT: f64 = 0.05;

/// The verdict at one point, or over a metric's points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The effect is absent from lbsim, or goes the other way.
    NotReproduced,
    /// The direction is right and the size off by more than 2x.
    Partly,
    /// Direction right, size within 2x (or no effect on both sides).
    Reproduced,
}

impl Verdict {
    /// How the line says it.
    pub const fn text(self) -> &'static str {
        match self {
            Verdict::NotReproduced => "not reproduced",
            Verdict::Partly => "partly reproduced",
            Verdict::Reproduced => "reproduced",
        }
    }
}

/// The verdict at one point: the seed's means `reported = (base, patched)`, lbsim's change of
/// the means in percent and whether the two sides differ significantly.
pub fn at_point(reported: (f64, f64), sim_change_pct: f64, significant: bool) -> Verdict {
    let (rb, rp) = reported;
    let r = if rb == 0.0 {
        if rp == 0.0 { 0.0 } else { rp.signum() }
    } else {
        (rp - rb) / rb.abs()
    };
    let s = sim_change_pct / 100.0;
    if r.abs() < NO_EFFECT {
        return if !significant || s.abs() < NO_EFFECT {
            Verdict::Reproduced
        } else {
            Verdict::NotReproduced
        };
    }
    if s.is_nan() || s.abs() < NO_EFFECT || s.signum() != r.signum() {
        return Verdict::NotReproduced;
    }
    let ratio = s.abs() / r.abs();
    if (0.5..=2.0).contains(&ratio) {
        Verdict::Reproduced
    } else {
        Verdict::Partly
    }
}

/// The verdict over a metric's judged points.
pub fn over(points: &[Verdict]) -> Option<Verdict> {
    if points.is_empty() {
        return None;
    }
    Some(if points.iter().all(|&v| v == Verdict::Reproduced) {
        Verdict::Reproduced
    } else if points.iter().all(|&v| v == Verdict::NotReproduced) {
        Verdict::NotReproduced
    } else {
        Verdict::Partly
    })
}

#[cfg(test)]
mod tests {
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
        assert_eq!(at_point((100.0, 110.0), 5.0, true), Verdict::Reproduced);
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
}
