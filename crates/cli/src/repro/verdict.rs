//! The verdict line under each `lbsim repro` table: per metric, whether lbsim reproduces the
//! seed's effect at the points where the seed reported both sides.
//!
//! At one point, with the seed's change `r = (patched - base) / base` and lbsim's change `s`
//! of the means:
//! - a seed change under 5% is "no effect": reproduced when lbsim's change is under 5% too or
//!   not significant (Welch), else not;
//! - otherwise: not reproduced when `s` is under 5% (that floor wins over the factor of 2 for
//!   seed changes between 5% and 10%) or has the other sign; reproduced when
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
    // Both sides' changes by the same rule (a base of 0 gives an infinite change).
    let r = lbsim_sim::stats::change_pct(reported.0, reported.1) / 100.0;
    let s = sim_change_pct / 100.0;
    if r.is_nan() || s.is_nan() {
        return Verdict::NotReproduced;
    }
    if r.abs() < NO_EFFECT {
        return if !significant || s.abs() < NO_EFFECT {
            Verdict::Reproduced
        } else {
            Verdict::NotReproduced
        };
    }
    if s.abs() < NO_EFFECT || s.signum() != r.signum() {
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
mod tests;
