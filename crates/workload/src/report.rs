//! Reports: each workload's numbers in its real tool's text, plus named metrics.

use std::any::Any;
use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use crate::generators::{Generator, GeneratorReport, WorkloadError};
use crate::obs::RunObservations;
use crate::spec::WorkloadSpec;

/// One number `lbsim compare` can put side by side across runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Name, `snake_case`, stable across versions (`total_time`, `wakeup_latency_p99`).
    pub name: String,
    /// Unit (`s`, `ms`, `us`, `MB/s`, `records/s`, `ratio`, `count`).
    pub unit: String,
    /// Value.
    pub value: f64,
    /// True when a larger value is an improvement.
    pub higher_is_better: bool,
}

impl Metric {
    /// A metric.
    pub fn new(name: &str, unit: &str, value: f64, higher_is_better: bool) -> Metric {
        Metric {
            name: name.to_string(),
            unit: unit.to_string(),
            value,
            higher_is_better,
        }
    }
}

/// The report of one `--workload` option.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The option as given.
    pub workload: String,
    /// The text the real tool prints (same layout, same format strings).
    pub text: String,
    /// Machine-readable numbers.
    pub metrics: Vec<Metric>,
}

impl Report {
    /// The metric called `name`, if present.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// What a [`crate::Part`] prints at the end of a run: the parameters its text needs, behind
/// the report function of the generator (or rt-app file) that made the part. Generators get
/// theirs from [`crate::generators::Generator`]; nothing else needs to implement it.
pub trait PartReport: fmt::Debug + Send + Sync + Any {
    /// The tool's text and its own metrics for part `part` of `spec`.
    fn report(
        &self,
        spec: &WorkloadSpec,
        part: u16,
        obs: &RunObservations,
    ) -> (String, Vec<Metric>);

    /// The title of the one-line-per-round summary when the part runs in rounds
    /// (`schbench -a`); `None` for one run.
    fn rounds(&self) -> Option<&'static str> {
        None
    }

    /// The next round's workload from this round's report; `None` when there is none.
    fn next_round(&self, _report: &Report) -> Option<Result<WorkloadSpec, WorkloadError>> {
        None
    }

    /// `self` as [`Any`], to get the concrete parameters back.
    fn as_any(&self) -> &dyn Any;

    /// Equality across the trait object (same type and equal parameters).
    fn eq_dyn(&self, other: &dyn PartReport) -> bool;
}

impl PartialEq for dyn PartReport {
    fn eq(&self, other: &dyn PartReport) -> bool {
        self.eq_dyn(other)
    }
}

impl dyn PartReport {
    /// The parameters of a part made by generator `G` (`None` for another generator's part).
    pub fn params<G: Generator>(&self) -> Option<&G::Params> {
        self.as_any()
            .downcast_ref::<GeneratorReport<G>>()
            .map(GeneratorReport::params)
    }
}

pub(crate) fn part_report(spec: &WorkloadSpec, index: usize, obs: &RunObservations) -> Report {
    let part = &spec.parts[index];
    let p = index as u16;
    let (text, mut metrics) = part.report.report(spec, p, obs);
    metrics.extend(common_metrics(obs, p));
    Report {
        workload: part.label.clone(),
        text,
        metrics,
    }
}

/// The label with the most members (the first of equals, in order of first appearance).
pub fn largest_group<'a>(groups: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for g in groups {
        match counts.iter_mut().find(|(name, _)| *name == g) {
            Some((_, n)) => *n += 1,
            None => counts.push((g, 1)),
        }
    }
    let mut best: Option<(&str, usize)> = None;
    for (g, n) in counts {
        if best.is_none_or(|(_, b)| n > b) {
            best = Some((g, n));
        }
    }
    best.map(|(g, _)| g)
}

/// Metrics every report carries: migrations, context switches and the fairness of the work
/// done by the part's tasks.
pub(crate) fn common_metrics(obs: &RunObservations, part: u16) -> Vec<Metric> {
    let tasks: Vec<_> = obs.part_tasks(part).map(|(_, t)| t).collect();
    let migrations: u64 = tasks.iter().map(|t| t.nr_migrations).sum();
    let switches: u64 = tasks.iter().map(|t| t.nr_switches()).sum();
    // Fairness compares tasks that do the same thing: the part's largest group (a
    // benchmark's workers, not its main thread).
    let group = largest_group(tasks.iter().map(|t| &*t.group));
    let works: Vec<u64> = tasks
        .iter()
        .filter(|t| Some(&*t.group) == group)
        .map(|t| t.work_ns)
        .collect();
    let f = Fairness::of(&works);
    vec![
        Metric::new("cpu_migrations", "count", migrations as f64, false),
        Metric::new("context_switches", "count", switches as f64, false),
        Metric::new("work_min_max_ratio", "ratio", f.min_max_ratio, true),
        Metric::new("work_jain_index", "ratio", f.jain, true),
    ]
}

/// Fairness of a set of amounts of work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fairness {
    /// min / max (1.0: perfectly fair; 1.0 for fewer than two tasks or no work at all).
    pub min_max_ratio: f64,
    /// Jain's index (ΣW)² / (n·ΣW²), in 1/n..=1.
    pub jain: f64,
}

impl Fairness {
    /// The fairness of `works`.
    pub fn of(works: &[u64]) -> Fairness {
        let max = works.iter().copied().max().unwrap_or(0);
        let min = works.iter().copied().min().unwrap_or(0);
        let min_max_ratio = if max == 0 {
            1.0
        } else {
            min as f64 / max as f64
        };
        let sum: f64 = works.iter().map(|&w| w as f64).sum();
        let sq: f64 = works.iter().map(|&w| (w as f64) * (w as f64)).sum();
        let jain = if sq == 0.0 {
            1.0
        } else {
            sum * sum / (works.len() as f64 * sq)
        };
        Fairness {
            min_max_ratio,
            jain,
        }
    }
}

/// Mean and population standard deviation (as sysbench prints them).
pub(crate) fn mean_stddev(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// The nearest-rank percentile of sorted samples (0 for none).
pub(crate) fn nearest_rank(sorted: &[u64], pct: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((pct / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// C's `%g` (precision 6): six significant digits, trailing zeros removed, exponent form
/// outside 1e-4..1e6.
pub fn fmt_g(x: f64) -> String {
    const P: i32 = 6;
    if x == 0.0 {
        return "0".to_string();
    }
    if !x.is_finite() {
        return format!("{x}");
    }
    let e = format!("{:.*e}", (P - 1) as usize, x);
    let (mant, exp) = e.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    fn strip(s: &str) -> &str {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.')
        } else {
            s
        }
    }
    if !(-4..P).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", strip(mant), sign, exp.abs())
    } else {
        let f = format!("{:.*}", (P - 1 - exp) as usize, x);
        strip(&f).to_string()
    }
}

/// `"%lu.%03lu"` of a duration: seconds and truncated milliseconds (hackbench, perf bench).
pub(crate) fn sec_ms(ns: u64) -> String {
    format!(
        "{}.{:03}",
        ns / 1_000_000_000,
        (ns % 1_000_000_000) / 1_000_000
    )
}

/// Axboe's latency histogram as schbench (and fio) keep it: values below 512 are exact, larger
/// ones fall in 256 buckets per power of two, and a percentile reads back as the middle of its
/// bucket. Follows schbench.c: plat_val_to_idx(), plat_idx_to_val(), calc_percentiles().
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatHistogram {
    plat: Vec<u64>,
    nr_samples: u64,
    min: u64,
    max: u64,
}

const PLAT_BITS: u32 = 8;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
const PLAT_GROUP_NR: u64 = 19;
const PLAT_NR: u64 = PLAT_GROUP_NR * PLAT_VAL;

impl Default for PlatHistogram {
    fn default() -> Self {
        PlatHistogram {
            plat: vec![0; PLAT_NR as usize],
            nr_samples: 0,
            min: 0,
            max: 0,
        }
    }
}

impl PlatHistogram {
    fn val_to_idx(val: u64) -> u64 {
        let val = val.min(u64::from(u32::MAX));
        let msb = if val == 0 {
            0
        } else {
            63 - u64::from(val.leading_zeros())
        };
        if msb <= u64::from(PLAT_BITS) {
            return val;
        }
        let error_bits = msb - u64::from(PLAT_BITS);
        let base = (error_bits + 1) << PLAT_BITS;
        let offset = (PLAT_VAL - 1) & (val >> error_bits);
        (base + offset).min(PLAT_NR - 1)
    }

    fn idx_to_val(idx: u64) -> u64 {
        if idx < (PLAT_VAL << 1) {
            return idx;
        }
        let error_bits = (idx >> PLAT_BITS) - 1;
        let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
        let k = idx % PLAT_VAL;
        // base + (k + 0.5) * 2^error_bits, truncated to an integer as the C code does.
        base + (((2 * k + 1) << error_bits) >> 1)
    }

    /// Records one sample (schbench's add_lat(): min ignores zero as "unset").
    pub fn add(&mut self, v: u64) {
        if v > self.max {
            self.max = v;
        }
        if self.min == 0 || v < self.min {
            self.min = v;
        }
        self.plat[Self::val_to_idx(v) as usize] += 1;
        self.nr_samples += 1;
    }

    /// Number of samples.
    pub fn samples(&self) -> u64 {
        self.nr_samples
    }

    /// Smallest sample.
    pub fn min(&self) -> u64 {
        self.min
    }

    /// Largest sample.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// For each percentile of `plist` (ascending), the bucket value where the cumulative count
    /// reaches it, and the samples between it and the previous percentile.
    pub fn percentiles(&self, plist: &[f64]) -> Vec<(u64, u64)> {
        let nr = self.nr_samples as f64;
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(plist.len());
        let mut sum = 0u64;
        let mut j = 0usize;
        'outer: for (i, &c) in self.plat.iter().enumerate() {
            sum += c;
            while j < plist.len() && sum as f64 >= plist[j] / 100.0 * nr {
                out.push((Self::idx_to_val(i as u64), sum));
                j += 1;
                if j == plist.len() {
                    break 'outer;
                }
            }
        }
        while out.len() < plist.len() {
            out.push((0, 0));
        }
        let mut last = 0u64;
        for i in 1..out.len() {
            last += out[i - 1].1;
            out[i].1 = out[i].1.saturating_sub(last);
        }
        out
    }

    /// One schbench latency block: `"%s percentiles (%s) runtime %llu (s) (%lu total
    /// samples)"`, the percentiles in `show` (a subset of `plist`) as `"\t%s%2.1fth: %-10u
    /// (%lu samples)"` with `"* "` before `star`, then `"\t  min=%u, max=%u"`.
    pub fn schbench_block(
        &self,
        label: &str,
        units: &str,
        runtime_s: u64,
        plist: &[f64],
        show: &[f64],
        star: f64,
    ) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{label} percentiles ({units}) runtime {runtime_s} (s) ({} total samples)",
            self.nr_samples
        );
        for ((v, n), &p) in self.percentiles(plist).iter().zip(plist) {
            if !show.contains(&p) {
                continue;
            }
            let mark = if p == star { "* " } else { "  " };
            let _ = writeln!(s, "\t{mark}{p:.1}th: {v:<10} ({n} samples)");
        }
        let _ = writeln!(s, "\t  min={}, max={}", self.min, self.max);
        s
    }
}

pub mod perf_stat;

#[cfg(test)]
mod tests;
