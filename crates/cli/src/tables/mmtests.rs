//! `--format mmtests`: compare-mmtests.pl's table (mmtests' `bin/lib/MMTests/Compare.pm`,
//! `Summarise.pm` with the `Multiops` summary, `Stat.pm`, `PrintGeneric.pm`), read from its
//! source and written anew.
//!
//! Layout, per the source:
//! - two header lines: each side's name split at its first `-` (`lbsim-base` prints `lbsim`
//!   above `base`), right-aligned in a column of 12 + 7 + 4 characters;
//! - then, statistic by statistic (Min, the mean, Stddev, CoeffVar, Max, BAmean.95), one row
//!   per metric: the statistic's name left-aligned, the metric's name, and per side the value
//!   (`%12.2f`) and its change against the base (` (%7.2f%%)`);
//! - the mean is `Amean` for a metric where lower is better and `Hmean` (harmonic) where
//!   higher is (rates), with `HStddev` and `HCoeffVar`; BAmean.95 is the mean of the best 95%
//!   of the runs;
//! - the change is signed so that positive is better: `pdiff` (`new * 100 / base - 100`)
//!   where higher is better, `pndiff` (`100 - new * 100 / base`) where lower is, and for
//!   Stddev and CoeffVar;
//! - on the mean's row, a change whose confidence intervals (mean +/- qnorm(0.975) x
//!   stddev) are further apart than their half-widths (`cidiff()` beyond 1) is marked
//!   significant: `*%7.2f%%*` instead of the parentheses.
//!
//! Differences: mmtests names a column by kernel and configuration; lbsim by side. mmtests
//! reads the samples of one benchmark; each lbsim run gives one sample per metric.

use std::fmt::Write as _;

use lbsim_sim::experiment::{Comparison, MetricComparison};

use super::Sides;

/// `FieldLength` (Summarise.pm's default) and `CompareLength` (Compare.pm's default).
const FIELD: usize = 12;
const COMPARE: usize = 7;

/// qnorm(0.975): mmtests' confidence interval at alpha = 0.05 (Summarise.pm runStatFunc()).
const Z_975: f64 = 1.959_963_984_540_054;

/// One statistic of the Multiops summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stat {
    Min,
    Mean,
    Stddev,
    CoeffVar,
    Max,
    BestMean95,
}

const STATS: [Stat; 6] = [
    Stat::Min,
    Stat::Mean,
    Stat::Stddev,
    Stat::CoeffVar,
    Stat::Max,
    Stat::BestMean95,
];

impl Stat {
    /// getStatName(): the row's name.
    fn name(self, higher: bool) -> &'static str {
        match (self, higher) {
            (Stat::Min, _) => "Min",
            (Stat::Max, _) => "Max",
            (Stat::Mean, false) => "Amean",
            (Stat::Mean, true) => "Hmean",
            (Stat::Stddev, false) => "Stddev",
            (Stat::Stddev, true) => "HStddev",
            (Stat::CoeffVar, false) => "CoeffVar",
            (Stat::CoeffVar, true) => "HCoeffVar",
            (Stat::BestMean95, false) => "BAmean.95",
            (Stat::BestMean95, true) => "BHmean.95",
        }
    }
}

/// calc_amean() or calc_hmean() (`None` for no values, or a non-positive value in a
/// harmonic mean: mmtests' NaN).
fn mean(values: &[f64], higher: bool) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    if higher {
        if values.iter().any(|&v| v <= 0.0) {
            return None;
        }
        Some(n / values.iter().map(|v| 1.0 / v).sum::<f64>())
    } else {
        Some(values.iter().sum::<f64>() / n)
    }
}

/// calc_stddev(): the sample stddev around the arithmetic mean, or for the harmonic mean
/// `sqrt(sum((1/x - 1/hmean)^2) * hmean^4 / n)`; `None` for fewer than two values.
fn stddev(values: &[f64], higher: bool) -> Option<f64> {
    let m = mean(values, higher)?;
    let n = values.len();
    if n <= 1 {
        return None;
    }
    if higher {
        let d: f64 = values.iter().map(|v| (1.0 / v - 1.0 / m).powi(2)).sum();
        Some((d * m.powi(4) / n as f64).sqrt())
    } else {
        let d: f64 = values.iter().map(|v| (v - m).powi(2)).sum();
        Some((d / (n - 1) as f64).sqrt())
    }
}

/// The statistic of one side's values.
fn value(stat: Stat, values: &[f64], higher: bool) -> Option<f64> {
    // Sorted best first, as extractSummary() sorts before the statistics.
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    if higher {
        sorted.reverse();
    }
    match stat {
        Stat::Min => sorted.iter().copied().reduce(f64::min),
        Stat::Max => sorted.iter().copied().reduce(f64::max),
        Stat::Mean => mean(&sorted, higher),
        Stat::Stddev => stddev(&sorted, higher),
        Stat::CoeffVar => {
            let m = mean(&sorted, higher).unwrap_or(0.0);
            let s = stddev(&sorted, higher).unwrap_or(0.0);
            Some(if m != 0.0 { s * 100.0 / m } else { 0.0 })
        }
        Stat::BestMean95 => {
            let count = (sorted.len() * 95 / 100).max(1).min(sorted.len());
            mean(&sorted[..count], higher)
        }
    }
}

/// pdiff(): the change where higher is better, in percent.
fn pdiff(new: f64, base: f64) -> f64 {
    if new == base || new == 0.0 {
        return 0.0;
    }
    if base == 0.0 {
        return 100.0;
    }
    new * 100.0 / base - 100.0
}

/// pndiff(): the change where lower is better, in percent.
fn pndiff(new: f64, base: f64) -> f64 {
    if new == base {
        return 0.0;
    }
    if new == 0.0 {
        return 100.0;
    }
    if base == 0.0 {
        return -99.0;
    }
    100.0 - new * 100.0 / base
}

/// getStatCompareFunc(): Stddev and CoeffVar always by pndiff, the rest by the metric's
/// preferred direction.
fn change(stat: Stat, higher: bool, new: f64, base: f64) -> f64 {
    match stat {
        Stat::Stddev | Stat::CoeffVar => pndiff(new, base),
        _ if higher => pdiff(new, base),
        _ => pndiff(new, base),
    }
}

/// cidiff(): the distance of two means in units of their confidence half-widths.
fn cidiff(new: f64, new_ci: (f64, f64), base: f64, base_ci: (f64, f64)) -> f64 {
    let diff = new - base;
    let cisum = if new < base {
        new_ci.1 - new + base - base_ci.0
    } else {
        new - new_ci.0 + base_ci.1 - base
    };
    if cisum == 0.0 { diff } else { diff / cisum }
}

/// Whether the mean of `values` differs significantly from the mean of `base`, as
/// Compare.pm decides.
fn significant(base: &[f64], values: &[f64], higher: bool) -> bool {
    let ci = |v: &[f64]| -> Option<(f64, f64)> {
        let mu = mean(v, higher)?;
        let q = Z_975 * stddev(v, higher)?;
        Some((mu - q, mu + q))
    };
    let (Some(b), Some(p)) = (mean(base, higher), mean(values, higher)) else {
        return false;
    };
    let (Some(bci), Some(pci)) = (ci(base), ci(values)) else {
        return false;
    };
    cidiff(b, bci, p, pci).abs() > 1.0
}

/// A value as `%12.2f` prints it (NaN as Perl prints a non-number there).
fn field(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:>FIELD$.2}"),
        _ => format!("{:>FIELD$}", "NaN"),
    }
}

/// The two header lines' halves of a name: before and after its first `-`.
fn split_name(name: &str) -> (&str, &str) {
    name.split_once('-').unwrap_or(("", name))
}

/// One metric's values per column (a side, or a sweep's point), base column first.
#[derive(Clone, Debug)]
pub struct Row {
    /// The metric's name (mmtests' "operation").
    pub name: String,
    /// True where higher is better (a rate: Hmean).
    pub higher_is_better: bool,
    /// The runs' values, per column.
    pub columns: Vec<Vec<f64>>,
}

/// The table of an A/B comparison.
pub fn render(sides: &Sides, c: &Comparison) -> String {
    let rows: Vec<Row> = c
        .metrics
        .iter()
        .map(|m: &MetricComparison| Row {
            name: m.name.clone(),
            higher_is_better: m.higher_is_better,
            columns: vec![m.base.values.clone(), m.patched.values.clone()],
        })
        .collect();
    render_columns(&[sides.base.as_str(), sides.patched.as_str()], &rows)
}

/// The table of any number of columns named `names`, each compared with the first.
pub fn render_columns(names: &[&str], rows: &[Row]) -> String {
    let stat_w = rows
        .iter()
        .flat_map(|m| STATS.map(|s| s.name(m.higher_is_better).len()))
        .max()
        .unwrap_or(0);
    let op_w = rows.iter().map(|m| m.name.len()).max().unwrap_or(0);
    let col = FIELD + COMPARE + 4;
    let mut s = String::new();
    for half in 0..2 {
        let _ = write!(s, "{:>w$}", "", w = stat_w + 1 + op_w);
        for n in names {
            let (a, b) = split_name(n);
            // mmtests pads to the column; a name as wide is kept apart by a space.
            let _ = write!(s, " {:>w$}", if half == 0 { a } else { b }, w = col - 1);
        }
        s.push('\n');
    }
    for stat in STATS {
        for m in rows {
            let higher = m.higher_is_better;
            let empty = Vec::new();
            let base_values = m.columns.first().unwrap_or(&empty);
            let base = value(stat, base_values, higher);
            let _ = write!(s, "{:<stat_w$} {:<op_w$}", stat.name(higher), m.name);
            for (i, values) in m.columns.iter().enumerate() {
                let v = value(stat, values, higher);
                let marked =
                    i > 0 && stat == Stat::Mean && significant(base_values, values, higher);
                let pct = match (v, base) {
                    (Some(v), Some(b)) => change(stat, higher, v, b),
                    _ => 0.0,
                };
                let (open, close) = if marked { ('*', '*') } else { ('(', ')') };
                let _ = write!(s, "{} {open}{pct:>COMPARE$.2}%{close}", field(v));
            }
            s.push('\n');
        }
    }
    s
}

#[cfg(test)]
mod tests;
