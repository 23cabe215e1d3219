//! Statistics for A/B comparisons over seeds, as an LKML cover letter or mmtests reports them.
//!
//! Each side of a comparison is one value per seed. lbsim reports mean and sample standard
//! deviation per side, the change of the means in percent, and whether the difference is
//! significant by **Welch's two-sample t-test** (two-sided, alpha = 0.05): the test mmtests'
//! compare scripts use, which does not assume equal variances. Runs are paired by seed, but
//! the paired test is not used because a seed does not pair the two sides' noise: a changed
//! feature changes every later decision, so the pairing carries no shared variance.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Mean and sample standard deviation of one side.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean (0 for no values).
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator; 0 for fewer than two values).
    pub stddev: f64,
}

/// Summarises `values`.
pub fn summary(values: &[f64]) -> Summary {
    let n = values.len();
    if n == 0 {
        return Summary::default();
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let stddev = if n < 2 {
        0.0
    } else {
        (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64).sqrt()
    };
    Summary { n, mean, stddev }
}

/// The change from `base` to `patched` in percent of `base` (0 when both are 0; infinite
/// when only `base` is 0).
pub fn change_pct(base: f64, patched: f64) -> f64 {
    if base == 0.0 {
        if patched == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(patched)
        }
    } else {
        (patched - base) / base.abs() * 100.0
    }
}

/// The two-sided p-value of Welch's t-test between `a` and `b`. `None` when either side has
/// fewer than two values. Two sides with zero variance give 1.0 if their means are equal and
/// 0.0 otherwise (the difference is exact).
pub fn welch_p_value(a: &Summary, b: &Summary) -> Option<f64> {
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let va = a.stddev * a.stddev / a.n as f64;
    let vb = b.stddev * b.stddev / b.n as f64;
    let se2 = va + vb;
    if se2 == 0.0 {
        return Some(if a.mean == b.mean { 1.0 } else { 0.0 });
    }
    let t = (a.mean - b.mean) / se2.sqrt();
    // Welch-Satterthwaite degrees of freedom.
    let dof = se2 * se2
        / (va * va / (a.n - 1) as f64 + vb * vb / (b.n - 1) as f64).max(f64::MIN_POSITIVE);
    let dist = StudentsT::new(0.0, 1.0, dof).ok()?;
    Some((2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0))
}

/// Whether the difference between the two sides is significant at alpha = 0.05.
pub fn significant(a: &Summary, b: &Summary) -> bool {
    welch_p_value(a, b).is_some_and(|p| p < 0.05)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_uses_sample_stddev() {
        let s = summary(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.n, 8);
        assert!((s.mean - 5.0).abs() < 1e-12);
        // Sum of squared deviations is 32; 32 / 7.
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(summary(&[]), Summary::default());
    }

    #[test]
    fn welch_matches_a_hand_computed_case() {
        // a = {1,2,3,4,5}: mean 3, s^2 2.5; b = {3,4,5,6,7}: mean 5, s^2 2.5.
        // t = -2 / sqrt(0.5 + 0.5) = -2, dof = 1 / (2 * 0.25/4) = 8.
        // Two-sided p for |t| = 2 with 8 dof is 0.0805 (tables: t_{0.975,8} = 2.306).
        let a = summary(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        let b = summary(&[3.0, 4.0, 5.0, 6.0, 7.0]);
        let p = welch_p_value(&a, &b).unwrap();
        assert!((p - 0.0805).abs() < 0.0005, "p = {p}");
        assert!(!significant(&a, &b));
        let c = summary(&[13.0, 14.0, 15.0, 16.0, 17.0]);
        assert!(significant(&a, &c));
    }

    #[test]
    fn degenerate_cases() {
        let one = summary(&[1.0]);
        assert_eq!(welch_p_value(&one, &one), None);
        let flat = summary(&[2.0, 2.0, 2.0]);
        let flat3 = summary(&[3.0, 3.0, 3.0]);
        assert_eq!(welch_p_value(&flat, &flat), Some(1.0));
        assert_eq!(welch_p_value(&flat, &flat3), Some(0.0));
        assert_eq!(change_pct(0.0, 0.0), 0.0);
        assert_eq!(change_pct(200.0, 150.0), -25.0);
    }
}
