//! `lbsim repro`'s built-in experiments: the five seed results of EXPERIMENTS.md, each a
//! machine, workloads per parameter point, base and patched switches, and the metrics the
//! seed reported, with the reported numbers to print beside the simulated ones.

pub mod defs;
pub mod verdict;

use std::collections::BTreeMap;

use anyhow::Context as _;
use lbsim_sim::engine::SimConfig;
use lbsim_sim::experiment::{
    BalancerFactory, Comparison, Control, MetricComparison, RunOutput, compare, run_jobs, run_one,
};
use serde::Serialize;

use crate::commands::compare::{columns, fmt_num};
use crate::scenario::Scenario;

/// Base or patched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The change switched off.
    Base,
    /// The change switched on.
    Patched,
}

/// Which statistic over the runs a number is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// The mean (with its standard deviation where known).
    Mean,
    /// The worst run: the least value of a higher-is-better metric, else the greatest.
    Worst,
}

impl Stat {
    fn name(self) -> &'static str {
        match self {
            Stat::Mean => "mean",
            Stat::Worst => "worst",
        }
    }
}

/// A metric an experiment shows: the run metric's name, a label, the unit shown and the factor
/// from the run metric's unit to it.
#[derive(Clone, Debug)]
pub struct MetricSpec {
    /// The run metric's name (see `lbsim_sim::experiment::run_metrics`).
    pub key: &'static str,
    /// How the table names it.
    pub label: &'static str,
    /// The unit shown.
    pub unit: &'static str,
    /// Shown value = run metric value * scale.
    pub scale: f64,
}

impl MetricSpec {
    /// A metric spec.
    pub const fn new(
        key: &'static str,
        label: &'static str,
        unit: &'static str,
        scale: f64,
    ) -> MetricSpec {
        MetricSpec {
            key,
            label,
            unit,
            scale,
        }
    }
}

/// What the seed reported for one metric and statistic at one point, in the shown unit, as
/// the seed wrote it (`"91.20"`).
#[derive(Clone, Debug)]
pub struct Reported {
    /// The metric's key.
    pub metric: &'static str,
    /// The statistic.
    pub stat: Stat,
    /// Base value.
    pub base: Option<&'static str>,
    /// Base spread (+/-), if the seed gave one.
    pub base_sd: Option<&'static str>,
    /// Patched value.
    pub patched: Option<&'static str>,
    /// Patched spread (+/-), if the seed gave one.
    pub patched_sd: Option<&'static str>,
}

/// A reported number's value.
fn value(text: &str) -> f64 {
    text.parse()
        .unwrap_or_else(|_| panic!("reported number `{text}` is not a number"))
}

/// One parameter point: its value (`9` threads) and its workloads.
#[derive(Clone, Debug)]
pub struct Point {
    /// The parameter's value, empty for a single-point experiment.
    pub value: &'static str,
    /// The `--workload` options.
    pub workloads: Vec<String>,
    /// What the seed reported here.
    pub reported: Vec<Reported>,
}

/// A column of a points-as-rows table.
#[derive(Clone, Debug)]
pub struct Col {
    /// The header.
    pub header: &'static str,
    /// The metric's key.
    pub metric: &'static str,
    /// Which side.
    pub side: Side,
    /// Which statistic.
    pub stat: Stat,
}

/// How an experiment's table is laid out (as in EXPERIMENTS.md).
#[derive(Clone, Debug)]
pub enum Layout {
    /// One row per metric, columns base and patched (util-spread).
    MetricRows,
    /// One row per parameter point, the given columns (fairness, tip-avg-high, ...).
    PointRows(Vec<Col>),
}

/// One seed experiment.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The name `lbsim repro` takes.
    pub name: &'static str,
    /// The seed file in shared/seeds.
    pub seed_file: &'static str,
    /// The patch.
    pub title: &'static str,
    /// The machine spec.
    pub topology: &'static str,
    /// The machine in words.
    pub machine: &'static str,
    /// The workload in words.
    pub workload: &'static str,
    /// The kernel profile both sides start from (`--kernel`), where lbsim has the seed's
    /// release (`None`: lbsim's v6.12 model with `common`'s switches).
    pub kernel: Option<&'static str>,
    /// Features and tunables of both sides.
    pub common: String,
    /// Why both sides carry `common`.
    pub common_why: &'static str,
    /// Base side's switches.
    pub base: &'static str,
    /// Patched side's switches.
    pub patched: &'static str,
    /// Simulated time per run (a workload that ends sooner ends the run).
    pub duration_ns: u64,
    /// The parameter's name (`threads`), empty for a single point.
    pub param: &'static str,
    /// The parameter points.
    pub points: Vec<Point>,
    /// The metrics shown.
    pub metrics: Vec<MetricSpec>,
    /// The table layout.
    pub layout: Layout,
    /// What the reported numbers are.
    pub note: &'static str,
}

impl Experiment {
    fn metric(&self, key: &str) -> &MetricSpec {
        self.metrics
            .iter()
            .find(|m| m.key == key)
            .expect("a table names only its experiment's metrics")
    }

    /// The engine configuration of one side at one point.
    pub fn config(&self, point: &Point, side: Side) -> anyhow::Result<SimConfig> {
        let list = match side {
            Side::Base => self.base,
            Side::Patched => self.patched,
        };
        let scenario = Scenario {
            topology: self.topology.to_owned(),
            workloads: point.workloads.clone(),
            features: vec![self.common.clone(), list.to_owned()],
            sets: Vec::new(),
            duration_ns: Some(self.duration_ns),
            budget: crate::budget::Budget::default(),
            kernel: self.kernel.map(str::to_owned),
            cgroups: Vec::new(),
            autogroups: Vec::new(),
            cost: None,
        };
        Ok(scenario
            .build()
            .with_context(|| format!("experiment {}", self.name))?
            .config)
    }
}

/// An experiment's results: one comparison per point.
#[derive(Debug)]
pub struct Outcome {
    /// The experiment.
    pub experiment: Experiment,
    /// Per point, base against patched over the seeds both sides finished.
    pub points: Vec<Comparison>,
    /// Seeds asked for per side.
    pub planned: usize,
}

/// Runs `experiments` over `seeds`: every (experiment, point, side, seed) is one job; jobs go
/// seed by seed, so a stop leaves every point with about as many runs.
///
/// # Errors
/// A bad definition, or the first failed run.
pub fn run(
    experiments: Vec<Experiment>,
    seeds: &[u64],
    balancer: &BalancerFactory<'_>,
    ctl: &Control<'_>,
) -> anyhow::Result<Vec<Outcome>> {
    // Configurations: index = (experiment, point) pair * 2 + side.
    let mut configs: Vec<SimConfig> = Vec::new();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (e, exp) in experiments.iter().enumerate() {
        for (p, point) in exp.points.iter().enumerate() {
            configs.push(exp.config(point, Side::Base)?);
            configs.push(exp.config(point, Side::Patched)?);
            pairs.push((e, p));
        }
    }
    let jobs: Vec<(usize, u64)> = seeds
        .iter()
        .flat_map(|&s| (0..configs.len()).map(move |c| (c, s)))
        .collect();
    let results = run_jobs(&jobs, ctl, |&(c, seed)| {
        run_one(&configs[c], seed, balancer)
    });
    let mut runs: Vec<Vec<Option<RunOutput>>> = vec![Vec::new(); configs.len()];
    for (r, &(c, seed)) in results.into_iter().zip(&jobs) {
        let r = r.transpose().map_err(|e| {
            let (ex, p) = pairs[c / 2];
            let exp = &experiments[ex];
            let side = if c % 2 == 0 { "base" } else { "patched" };
            let at = match exp.points[p].value {
                "" => String::new(),
                v => format!(" {}={v}", exp.param),
            };
            anyhow::anyhow!("{}{at}, {side}, seed {seed}: {e}", exp.name)
        })?;
        runs[c].push(r);
    }
    let mut outcomes: Vec<Outcome> = experiments
        .into_iter()
        .map(|experiment| Outcome {
            experiment,
            points: Vec::new(),
            planned: seeds.len(),
        })
        .collect();
    for (i, &(e, _)) in pairs.iter().enumerate() {
        let (mut base, mut patched) = (Vec::new(), Vec::new());
        for (b, p) in runs[2 * i].iter().zip(&runs[2 * i + 1]) {
            if let (Some(b), Some(p)) = (b, p) {
                base.push(b.clone());
                patched.push(p.clone());
            }
        }
        outcomes[e].points.push(compare(&base, &patched));
    }
    Ok(outcomes)
}

/// One row of the JSON report (and the numbers behind a text cell).
#[derive(Clone, Debug)]
struct Row<'a> {
    metric: &'a MetricSpec,
    stat: Stat,
    point: &'a Point,
    reported: Option<&'a Reported>,
    sim: Option<&'a MetricComparison>,
    runs: usize,
}

impl Row<'_> {
    /// The simulated statistic of one side, in the shown unit: (value, stddev for means).
    fn sim(&self, side: Side) -> Option<(f64, Option<f64>)> {
        let m = self.sim?;
        let s = match side {
            Side::Base => &m.base,
            Side::Patched => &m.patched,
        };
        if s.values.is_empty() {
            return None;
        }
        let k = self.metric.scale;
        Some(match self.stat {
            Stat::Mean => (s.mean * k, Some(s.stddev * k)),
            Stat::Worst => {
                let w = if m.higher_is_better { s.min() } else { s.max() };
                (w? * k, None)
            }
        })
    }

    fn reported(&self, side: Side) -> (Option<&'static str>, Option<&'static str>) {
        match (self.reported, side) {
            (Some(r), Side::Base) => (r.base, r.base_sd),
            (Some(r), Side::Patched) => (r.patched, r.patched_sd),
            (None, _) => (None, None),
        }
    }
}

fn rows_of<'a>(o: &'a Outcome, point: usize, metric: &'a MetricSpec, stat: Stat) -> Row<'a> {
    let p = &o.experiment.points[point];
    let c = &o.points[point];
    Row {
        metric,
        stat,
        point: p,
        reported: p
            .reported
            .iter()
            .find(|r| r.metric == metric.key && r.stat == stat),
        sim: c.metrics.iter().find(|m| m.name == metric.key),
        runs: c.runs,
    }
}

/// The (metric, statistic) pairs an experiment's table shows, in order.
fn shown(exp: &Experiment) -> Vec<(&MetricSpec, Stat)> {
    match &exp.layout {
        Layout::MetricRows => exp.metrics.iter().map(|m| (m, Stat::Mean)).collect(),
        Layout::PointRows(cols) => {
            let mut out: Vec<(&MetricSpec, Stat)> = Vec::new();
            for c in cols {
                let m = exp.metric(c.metric);
                if !out.iter().any(|(x, s)| x.key == m.key && *s == c.stat) {
                    out.push((m, c.stat));
                }
            }
            out
        }
    }
}

/// `value (+/- sd)` or `value`, `-` when missing.
fn cell(v: Option<(f64, Option<f64>)>) -> String {
    match v {
        None => "-".to_owned(),
        Some((x, None)) => fmt_num(x).0,
        Some((x, Some(sd))) => {
            let (s, d) = fmt_num(x);
            format!("{s} (+/- {sd:.d$})")
        }
    }
}

/// A reported number as the seed wrote it, `-` when the seed has none.
fn reported_cell(r: (Option<&str>, Option<&str>)) -> String {
    match r {
        (None, _) => "-".to_owned(),
        (Some(x), Some(sd)) => format!("{x} (+/- {sd})"),
        (Some(x), None) => x.to_owned(),
    }
}

/// The significance mark after a simulated patched cell (a space when none, so that
/// right-aligned columns stay aligned).
fn mark(row: &Row<'_>) -> &'static str {
    match row.sim {
        Some(m) if m.significant && row.stat == Stat::Mean => "*",
        _ => " ",
    }
}

/// The text report of one experiment.
pub fn text(o: &Outcome) -> String {
    let e = &o.experiment;
    let runs: Vec<usize> = o.points.iter().map(|c| c.runs).collect();
    let min_runs = runs.iter().copied().min().unwrap_or(0);
    let mut s = format!("== {} (seed {}): {} ==\n", e.name, e.seed_file, e.title);
    let mut head = vec![
        vec![
            "machine:".to_owned(),
            format!("{} [{}]", e.machine, e.topology),
        ],
        vec!["workload:".to_owned(), e.workload.to_owned()],
    ];
    let both = match (e.kernel, e.common.is_empty()) {
        (Some(k), true) => Some(format!("kernel {k}")),
        (Some(k), false) => Some(format!("kernel {k},{}", e.common)),
        (None, false) => Some(e.common.clone()),
        (None, true) => None,
    };
    if let Some(both) = both {
        head.push(vec!["both sides:".to_owned(), both]);
        head.push(vec![String::new(), format!("({})", e.common_why)]);
    }
    let or_def = |l: &str| match (l.is_empty(), e.kernel) {
        (true, Some(k)) => format!("(the {k} profile)"),
        (true, None) => "(defaults)".to_owned(),
        (false, _) => l.to_owned(),
    };
    head.push(vec!["base:".to_owned(), or_def(e.base)]);
    head.push(vec!["patched:".to_owned(), or_def(e.patched)]);
    let interrupted = if min_runs < o.planned {
        format!(" (interrupted: {min_runs} of {} finished)", o.planned)
    } else {
        String::new()
    };
    head.push(vec![
        "lbsim runs:".to_owned(),
        format!(
            "{min_runs} seeds a side at each point, {} s simulated each{interrupted}",
            e.duration_ns as f64 / 1e9
        ),
    ]);
    s.push_str(&columns(&head, "ll"));
    s.push('\n');
    let mut table: Vec<Vec<String>> = Vec::new();
    match &e.layout {
        Layout::MetricRows => {
            let p0 = if e.param.is_empty() { 0 } else { 1 };
            let mut header = Vec::new();
            if p0 == 1 {
                header.push(e.param.to_owned());
            }
            header.extend(
                ["metric", "source", "base", "patched", "change"]
                    .iter()
                    .map(|h| (*h).to_owned()),
            );
            table.push(header);
            for (p, point) in e.points.iter().enumerate() {
                for m in &e.metrics {
                    let row = rows_of(o, p, m, Stat::Mean);
                    let label = format!("{} ({})", m.label, m.unit);
                    let (rb, rp) = (row.reported(Side::Base), row.reported(Side::Patched));
                    let rchange = match (rb.0, rp.0) {
                        (Some(b), Some(p)) => crate::commands::compare::fmt_change(
                            lbsim_sim::stats::change_pct(value(b), value(p)),
                        ),
                        _ => String::new(),
                    };
                    let mut reported = Vec::new();
                    let mut sim = Vec::new();
                    if p0 == 1 {
                        reported.push(point.value.to_owned());
                        sim.push(String::new());
                    }
                    reported.extend([
                        label,
                        "reported".to_owned(),
                        reported_cell(rb),
                        reported_cell(rp) + " ",
                        rchange,
                    ]);
                    let schange = row
                        .sim
                        .map(|m| crate::commands::compare::fmt_change(m.change_pct))
                        .unwrap_or_default();
                    sim.extend([
                        String::new(),
                        "lbsim".to_owned(),
                        cell(row.sim(Side::Base)),
                        cell(row.sim(Side::Patched)) + mark(&row),
                        schange,
                    ]);
                    table.push(reported);
                    table.push(sim);
                }
            }
            let align = if p0 == 1 { "lllrrr" } else { "llrrr" };
            s.push_str(&columns(&table, align));
        }
        Layout::PointRows(cols) => {
            let mut header = vec![e.param.to_owned(), "source".to_owned()];
            header.extend(cols.iter().map(|c| c.header.to_owned()));
            table.push(header);
            for (p, point) in e.points.iter().enumerate() {
                let mut reported = vec![point.value.to_owned(), "reported".to_owned()];
                let mut sim = vec![String::new(), "lbsim".to_owned()];
                for c in cols {
                    let row = rows_of(o, p, e.metric(c.metric), c.stat);
                    let m = if c.side == Side::Patched {
                        mark(&row)
                    } else {
                        ""
                    };
                    let pad = if m.is_empty() { "" } else { " " };
                    reported.push(reported_cell(row.reported(c.side)) + pad);
                    sim.push(cell(row.sim(c.side)) + m);
                }
                table.push(reported);
                table.push(sim);
            }
            let align = format!("ll{}", "r".repeat(cols.len()));
            s.push_str(&columns(&table, &align));
            let units: Vec<String> = e
                .metrics
                .iter()
                .map(|m| format!("{} in {}", m.label, m.unit))
                .collect();
            s.push_str(&format!("({})\n", units.join("; ")));
        }
    }
    s.push_str(&format!("{}.\n", e.note));
    for v in verdicts(o) {
        s.push_str(&v.line(e));
        s.push('\n');
    }
    s
}

/// One metric's verdict ([`verdict`]) and the points judged.
#[derive(Clone, Debug)]
struct MetricVerdict<'a> {
    metric: &'a MetricSpec,
    /// `None` when no point could be judged: none has both sides reported, or lbsim ran
    /// fewer than 2 seeds a side where one has.
    verdict: Option<verdict::Verdict>,
    /// The points where the seed reported both sides.
    reported_pairs: usize,
    points: Vec<(&'a str, verdict::Verdict)>,
    /// The judged points where lbsim's two sides do not differ significantly.
    not_significant: Vec<&'a str>,
}

impl MetricVerdict<'_> {
    /// `verdict, LABEL: VERDICT (...); docs/experiments.md, "NAME (seed NNN)"`.
    fn line(&self, e: &Experiment) -> String {
        let seed = e.seed_file.get(..3).unwrap_or(e.seed_file);
        let docs = format!("docs/experiments.md, \"{} (seed {seed})\"", e.name);
        let Some(v) = self.verdict else {
            let why = if self.reported_pairs == 0 {
                "the seed reported no point with both sides"
            } else {
                "lbsim ran fewer than 2 seeds a side"
            };
            return format!("verdict, {}: not judged ({why}); {docs}", self.metric.label);
        };
        let mut detail = String::new();
        let mut ns = String::new();
        if !self.not_significant.is_empty() {
            ns = if e.param.is_empty() {
                "the change is not significant".to_owned()
            } else {
                let at: Vec<String> = self
                    .not_significant
                    .iter()
                    .map(|x| format!("{}={x}", e.param))
                    .collect();
                format!("not significant at {}", at.join(", "))
            };
        }
        if v != verdict::Verdict::Reproduced && !e.param.is_empty() {
            let list = |want: verdict::Verdict| {
                self.points
                    .iter()
                    .filter(|(_, pv)| *pv == want)
                    .map(|(x, _)| format!("{}={x}", e.param))
                    .collect::<Vec<_>>()
            };
            let parts: Vec<String> = [
                (verdict::Verdict::Reproduced, "reproduced at"),
                (verdict::Verdict::Partly, "partly at"),
                (verdict::Verdict::NotReproduced, "not at"),
            ]
            .into_iter()
            .filter_map(|(w, say)| {
                let at = list(w);
                (!at.is_empty()).then(|| format!("{say} {}", at.join(", ")))
            })
            .collect();
            detail = parts.join("; ");
        }
        let notes: Vec<String> = [detail, ns].into_iter().filter(|x| !x.is_empty()).collect();
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        };
        format!(
            "verdict, {}: {}{notes}; {docs}",
            self.metric.label,
            v.text()
        )
    }
}

/// The verdict of every metric the table shows as a mean, over the points where the seed
/// reported both sides and lbsim ran at least two seeds a side.
fn verdicts(o: &Outcome) -> Vec<MetricVerdict<'_>> {
    let e = &o.experiment;
    shown(e)
        .into_iter()
        .filter(|(_, stat)| *stat == Stat::Mean)
        .map(|(m, _)| {
            let mut points = Vec::new();
            let mut not_significant = Vec::new();
            let mut reported_pairs = 0;
            for p in 0..e.points.len() {
                let row = rows_of(o, p, m, Stat::Mean);
                let (Some(rb), Some(rp)) =
                    (row.reported(Side::Base).0, row.reported(Side::Patched).0)
                else {
                    continue;
                };
                reported_pairs += 1;
                let Some(sim) = row.sim.filter(|_| row.runs >= 2) else {
                    continue;
                };
                if !sim.significant {
                    not_significant.push(row.point.value);
                }
                points.push((
                    row.point.value,
                    verdict::at_point((value(rb), value(rp)), sim.change_pct, sim.significant),
                ));
            }
            let vs: Vec<verdict::Verdict> = points.iter().map(|&(_, v)| v).collect();
            MetricVerdict {
                metric: m,
                verdict: verdict::over(&vs),
                points,
                not_significant,
                reported_pairs,
            }
        })
        .collect()
}

/// The legend printed once after the experiments.
pub const LEGEND: &str = "lbsim: mean (+/- sample stddev) over the seeds; worst = the worst \
run; * = base and patched differ significantly (Welch's two-sample t-test, two-sided, \
p < 0.05).\n";

/// The JSON report (issue 7's shape, with `unit`, `stat`, `change_pct` and `significant` added
/// to each row; a `worst` row's `sim_*_mean` is the worst run and its `sim_*_stddev` null).
pub fn json(outcomes: &[Outcome]) -> serde_json::Value {
    serde_json::to_value(ReproJson::of(outcomes)).expect("the report serialises")
}

/// `lbsim repro --format json`: one entry per experiment run.
#[derive(Debug, Serialize)]
pub struct ReproJson<'a> {
    /// The experiments, in the order they ran.
    pub experiments: Vec<ExperimentJson<'a>>,
}

/// One experiment of [`ReproJson`]: what ran, and one row per (point, metric, statistic).
#[derive(Debug, Serialize)]
pub struct ExperimentJson<'a> {
    pub name: &'a str,
    pub seed_file: &'a str,
    pub topology: &'a str,
    /// The base side's switches after the common ones.
    pub base: String,
    /// The patched side's switches after the common ones.
    pub patched: String,
    pub duration_ns: u64,
    pub rows: Vec<RowJson<'a>>,
    /// Per metric shown as a mean, the verdict the text prints (`null`: not judged).
    pub verdicts: Vec<VerdictJson<'a>>,
}

/// One metric's verdict in an [`ExperimentJson`].
#[derive(Debug, Serialize)]
pub struct VerdictJson<'a> {
    /// The metric's key.
    pub metric: &'a str,
    /// The verdict (`None`: not judged).
    pub verdict: Option<verdict::Verdict>,
}

/// One row of an [`ExperimentJson`]: the reported numbers beside the simulated ones.
#[derive(Debug, Serialize)]
pub struct RowJson<'a> {
    pub metric: &'a str,
    pub unit: &'a str,
    pub stat: &'static str,
    /// The parameter point (`{"threads": 9}`), empty for a single point.
    pub params: BTreeMap<&'a str, ParamValue<'a>>,
    pub reported_base: Option<f64>,
    pub reported_patched: Option<f64>,
    pub sim_base_mean: Option<f64>,
    pub sim_base_stddev: Option<f64>,
    pub sim_patched_mean: Option<f64>,
    pub sim_patched_stddev: Option<f64>,
    pub change_pct: Option<f64>,
    pub significant: bool,
    pub runs: usize,
}

/// A parameter point's value: a number where it is one (`9`), else its text (`mutex`).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ParamValue<'a> {
    /// A whole number.
    Number(u64),
    /// Anything else.
    Text(&'a str),
}

impl<'a> ReproJson<'a> {
    /// The report of `outcomes`.
    pub fn of(outcomes: &'a [Outcome]) -> ReproJson<'a> {
        ReproJson {
            experiments: outcomes.iter().map(ExperimentJson::of).collect(),
        }
    }
}

impl<'a> ExperimentJson<'a> {
    fn of(o: &'a Outcome) -> ExperimentJson<'a> {
        let e = &o.experiment;
        let mut rows = Vec::new();
        for p in 0..e.points.len() {
            for (m, stat) in shown(e) {
                let row = rows_of(o, p, m, stat);
                let mut params = BTreeMap::new();
                if !e.param.is_empty() {
                    let v = row.point.value;
                    let v = v.parse().map_or(ParamValue::Text(v), ParamValue::Number);
                    params.insert(e.param, v);
                }
                let b = row.sim(Side::Base);
                let pa = row.sim(Side::Patched);
                rows.push(RowJson {
                    metric: m.key,
                    unit: m.unit,
                    stat: stat.name(),
                    params,
                    reported_base: row.reported(Side::Base).0.map(value),
                    reported_patched: row.reported(Side::Patched).0.map(value),
                    sim_base_mean: b.map(|x| x.0),
                    sim_base_stddev: b.and_then(|x| x.1),
                    sim_patched_mean: pa.map(|x| x.0),
                    sim_patched_stddev: pa.and_then(|x| x.1),
                    change_pct: row.sim.map(|m| m.change_pct),
                    significant: row.sim.is_some_and(|m| m.significant),
                    runs: row.runs,
                });
            }
        }
        let join = |a: &str, b: &str| {
            [a, b]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(",")
        };
        ExperimentJson {
            name: e.name,
            seed_file: e.seed_file,
            topology: e.topology,
            base: join(&e.common, e.base),
            patched: join(&e.common, e.patched),
            duration_ns: e.duration_ns,
            rows,
            verdicts: verdicts(o)
                .into_iter()
                .map(|v| VerdictJson {
                    metric: v.metric.key,
                    verdict: v.verdict,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
