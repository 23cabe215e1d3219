//! `--format lkp`: the comparison table of the kernel test robot's (0-day, LKP) reports, as
//! its mails to the kernel lists print it, and their headline.
//!
//! Layout, read from the robot's reports (the columns are fixed; there is one column pair
//! per commit, base first):
//! - the headline: `lbsim noticed a -12.7% regression of METRIC on:` for the first metric
//!   whose change is significant (Welch's t-test, p < 0.05, as the rest of lbsim), a
//!   regression or an improvement by the metric's direction;
//! - the test's parameters as `key/key/...:` over `value/value/...`, the two sides as
//!   `commit:` lines, and the column header (`%stddev  %change  %stddev`);
//! - one line per metric: the base mean right-aligned in 10 characters, ` ±NN%` when the
//!   relative stddev is 2% or more (else blanks), the change in percent in 11, the patched
//!   mean in 11 and its ` ±NN%`, and the metric's name;
//! - numbers as the robot prints them: two decimals below 1000, whole numbers below 1e8, four
//!   significant digits in exponent form above (`1.145e+08`); changes with one decimal, two
//!   significant digits in exponent form from 1e5 % (`+2.1e+05%`).
//!
//! Differences: the robot names commits by hash and subject, and shows only the stats that
//! changed; lbsim names the sides by their switches and shows every metric.

use std::fmt::Write as _;

use lbsim_sim::experiment::{Comparison, MetricComparison};

use super::Sides;

/// What the test ran, for the parameter lines.
#[derive(Clone, Debug)]
pub struct Testcase {
    /// The machine (`--topology`).
    pub machine: String,
    /// The workloads, as given.
    pub workloads: Vec<String>,
    /// The kernel profile, if any.
    pub kernel: Option<String>,
}

/// A mean as the robot prints it.
pub fn number(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        return "NaN".to_owned();
    }
    if a < 1000.0 {
        format!("{x:.2}")
    } else if a < 1e8 {
        format!("{x:.0}")
    } else {
        exp_form(x, 4)
    }
}

/// `x` in C's `%.{digits}g` exponent form with trailing zeros dropped: `1.145e+08`.
fn exp_form(x: f64, digits: usize) -> String {
    let s = format!("{:.*e}", digits - 1, x);
    let (mantissa, exp) = s.split_once('e').expect("exponent form");
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    let e: i32 = exp.parse().expect("an exponent");
    format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// A change as the robot prints it: `+33.4%`, `-100.0%`, `+2.1e+05%`.
pub fn change(pct: f64) -> String {
    if !pct.is_finite() {
        return "NaN".to_owned();
    }
    let sign = if pct < 0.0 { "-" } else { "+" };
    if pct.abs() >= 1e5 {
        format!("{sign}{}%", exp_form(pct.abs(), 2))
    } else {
        format!("{sign}{:.1}%", pct.abs())
    }
}

/// ` ±NN%` for a relative stddev of 2% or more, else six blanks.
pub fn noise(mean: f64, stddev: f64) -> String {
    let pct = if mean != 0.0 {
        (stddev * 100.0 / mean.abs()).round()
    } else {
        0.0
    };
    if pct >= 2.0 && pct.is_finite() {
        format!(" ±{:>3}%", pct as u64)
    } else {
        " ".repeat(6)
    }
}

/// The change of the patched mean against the base mean, in percent.
fn change_pct(m: &MetricComparison) -> f64 {
    if m.base.mean == 0.0 {
        if m.patched.mean == 0.0 { 0.0 } else { 100.0 }
    } else {
        (m.patched.mean - m.base.mean) * 100.0 / m.base.mean.abs()
    }
}

/// The headline.
fn headline(c: &Comparison) -> String {
    match c.metrics.iter().find(|m| m.significant) {
        Some(m) => {
            let pct = change_pct(m);
            let better = (pct > 0.0) == m.higher_is_better;
            format!(
                "lbsim noticed a {} {} of {} on:",
                change(pct),
                if better { "improvement" } else { "regression" },
                m.name
            )
        }
        None => "lbsim noticed no significant change (Welch's t-test, p < 0.05) on:".to_owned(),
    }
}

/// The report.
pub fn render(sides: &Sides, test: &Testcase, c: &Comparison) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}\n\n", headline(c));
    let _ = writeln!(s, "base:         {}", sides.base);
    let _ = writeln!(s, "patched:      {}", sides.patched);
    let _ = writeln!(s, "testcase:     {}", test.workloads.join(" "));
    let _ = writeln!(s, "test machine: {}", test.machine);
    let _ = writeln!(s, "runs:         {} a side\n", c.runs);
    let _ = writeln!(s, "{}", "=".repeat(89));
    let mut keys = vec!["machine"];
    let mut values = vec![test.machine.clone()];
    if let Some(k) = &test.kernel {
        keys.push("kernel");
        values.push(k.clone());
    }
    keys.extend(["workload", "runs"]);
    values.extend([test.workloads.join("+"), c.runs.to_string()]);
    let _ = writeln!(s, "{}:", keys.join("/"));
    let _ = writeln!(s, "  {}\n", values.join("/"));
    let _ = writeln!(s, "commit: ");
    let _ = writeln!(s, "  base (\"{}\")", sides.base);
    let _ = writeln!(s, "  patched (\"{}\")\n", sides.patched);
    let _ = writeln!(s, "{:<16} {:<27} ", "base", "patched");
    let _ = writeln!(s, "{} {} ", "-".repeat(16), "-".repeat(27));
    let _ = writeln!(s, "         %stddev     %change         %stddev");
    let _ = writeln!(s, "             \\          |                \\  ");
    for m in &c.metrics {
        let _ = writeln!(
            s,
            "{:>10}{}{:>11}{:>11}{}  {}",
            number(m.base.mean),
            noise(m.base.mean, m.base.stddev),
            change(change_pct(m)),
            number(m.patched.mean),
            noise(m.patched.mean, m.patched.stddev),
            m.name
        );
    }
    s
}

#[cfg(test)]
mod tests;
