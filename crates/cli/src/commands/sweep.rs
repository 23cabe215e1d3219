//! `lbsim sweep`: one scenario over a grid of tunables, features and workload parameters,
//! N seeds at every point, in parallel; one table per metric with each point's mean and
//! stddev and its change against the first point, marked where Welch's t-test finds it
//! significant.
//!
//! Beyond one machine, `--shard K/N` runs the K-th of N slices of the grid (whole seeds:
//! seed number i, counted from 0, goes to shard i mod N + 1) and prints its results as JSON;
//! `lbsim sweep --merge FILE...` joins the shards into the table a one-machine sweep prints,
//! byte for byte (`docs/sweeps.md` shows it as a Slurm job array and a Kubernetes Indexed
//! Job).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use lbsim_sim::engine::SimConfig;
use lbsim_sim::experiment::{Control, MetricComparison, RunOutput, run_jobs, run_one};
use serde::{Deserialize, Serialize};

use super::compare::{ProgressBar, fmt_change, fmt_mean_sd, interrupt_flag, jobs, print};
use crate::balancer::{BalancerKind, make_balancer};
use crate::format::{Format, TextOrJson, json_pretty};
use crate::scenario::{RunInputs, Scenario, ScenarioFile, workload_warnings};

/// Arguments of `lbsim sweep`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A scenario file (TOML) holding any of the flags below (its `vary` list too); flags
    /// override it.
    #[arg(value_name = "FILE.toml")]
    pub file: Option<PathBuf>,
    /// Machine spec: a CPU count, key=value list, preset (`lbsim topology --list`) or file.
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,
    /// A workload; repeatable, all run together. Replaces the file's workloads.
    #[arg(
        long = "workload",
        value_name = "WL",
        long_help = super::workload_help(
            "A workload; repeatable, all run together. Replaces the file's workloads."
        )
    )]
    pub workloads: Vec<String>,
    /// One axis of the grid, repeatable (the grid is every combination, the first axis
    /// outermost): a tunable (`imbalance_pct=110,117,125`), a sched feature
    /// (`LB_RELAX_BY_FAILED=on,off`) or a workload's key (`busy:threads=8..16`, every
    /// `busy` workload); values are a comma list, `A..B` an integer range (both ends in).
    /// Replaces the file's `vary`.
    #[arg(long = "vary", value_name = "NAME=VALUES")]
    pub vary: Vec<String>,
    /// Features applied at every point; repeatable.
    #[arg(long = "features", value_name = "LIST")]
    pub features: Vec<String>,
    /// Set a tunable at every point (`migration_cost_ns=250000`); repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// The kernel release whose profile the runs start from (`5.9`, `6.12`).
    #[arg(long, value_name = "VERSION")]
    pub kernel: Option<String>,
    /// Runs (seeds) per point [default: 10].
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,
    /// The first seed; the runs use seeds SEED, SEED+1, ... at every point [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// How long to simulate each run [default: as long as the workload asks].
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Worker threads [default: the available parallelism]. Results do not depend on it.
    #[arg(long, value_name = "J")]
    pub jobs: Option<usize>,
    /// Run only the K-th of N slices of the grid (whole seeds) and print its results as JSON
    /// for `--merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Join the JSON of `--shard` runs (every shard of one sweep, once) into the sweep's
    /// table; nothing is simulated.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub merge: Vec<PathBuf>,
    /// The balancer policy.
    #[arg(long, value_enum, default_value_t = BalancerKind::default())]
    pub balancer: BalancerKind,
    /// Output format (`mmtests`: compare-mmtests.pl's table, one column per point).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The runs' resource budget.
    #[command(flatten)]
    pub budget: crate::budget::Budget,
    /// Also draw every metric over the grid's points, with error bars, as an SVG figure in
    /// FILE.svg (`docs/plots.md`). FILE must not exist yet (see --force); it appears whole or
    /// not at all. Not with --shard (plot the merged sweep).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Overwrite the --plot file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// One axis of the grid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axis {
    /// `imbalance_pct`, `LB_RELAX_BY_FAILED` or `busy:threads`.
    pub name: String,
    /// The values, in order.
    pub values: Vec<String>,
}

/// Parses `NAME=VALUES`.
pub fn parse_axis(text: &str) -> anyhow::Result<Axis> {
    let (name, values) = text
        .split_once('=')
        .with_context(|| format!("--vary `{text}`: expected NAME=VALUES"))?;
    let name = name.trim();
    if name.is_empty() {
        bail!("--vary `{text}`: no name before `=`");
    }
    let mut out = Vec::new();
    for v in values.split(',').map(str::trim) {
        if v.is_empty() {
            bail!("--vary `{text}`: an empty value");
        }
        match v.split_once("..") {
            Some((a, b)) => {
                let parse = |s: &str| -> anyhow::Result<i64> {
                    s.trim().parse().with_context(|| {
                        format!("--vary `{text}`: `{v}`: a range needs integers at both ends")
                    })
                };
                let (a, b) = (parse(a)?, parse(b)?);
                if b < a {
                    bail!("--vary `{text}`: `{v}` is an empty range");
                }
                if b - a >= 10_000 {
                    bail!("--vary `{text}`: `{v}` has more than 10000 values");
                }
                out.extend((a..=b).map(|x| x.to_string()));
            }
            None => out.push(v.to_owned()),
        }
    }
    Ok(Axis {
        name: name.to_owned(),
        values: out,
    })
}

/// One point of the grid: a value per axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// `axes[i]` takes `values[i]`.
    pub values: Vec<String>,
}

impl Point {
    /// `imbalance_pct=110 busy:threads=8`.
    pub fn label(&self, axes: &[Axis]) -> String {
        axes.iter()
            .zip(&self.values)
            .map(|(a, v)| format!("{}={v}", a.name))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every combination of the axes' values, the first axis outermost.
pub fn grid(axes: &[Axis]) -> Vec<Point> {
    let mut points = vec![Point { values: Vec::new() }];
    for a in axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                a.values.iter().map(move |v| {
                    let mut values = p.values.clone();
                    values.push(v.clone());
                    Point { values }
                })
            })
            .collect();
    }
    points
}

/// What a sweep runs: everything that decides its results (shards must agree on it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// `--topology`.
    pub topology: String,
    /// `--workload`s before the grid changes them.
    pub workloads: Vec<String>,
    /// `--features` at every point.
    pub features: Vec<String>,
    /// `--set` at every point.
    pub sets: Vec<String>,
    /// `--kernel`.
    pub kernel: Option<String>,
    /// `--duration` in ns, if given.
    pub duration_ns: Option<u64>,
    /// The seeds.
    pub seeds: Vec<u64>,
    /// The grid's axes.
    pub axes: Vec<Axis>,
    /// `--balancer`.
    pub balancer: String,
}

/// One run's results in a shard file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ShardRun {
    point: usize,
    seed: u64,
    metrics: Vec<ShardMetric>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ShardMetric {
    name: String,
    unit: String,
    higher_is_better: bool,
    value: f64,
}

/// A `--shard` run's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ShardFile {
    lbsim_sweep_shard: u32,
    shards: u32,
    definition: Definition,
    runs: Vec<ShardRun>,
}

/// Runs `lbsim sweep`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = match args.format {
        Format::Mmtests => Out::Mmtests,
        f => Out::Plain(f.text_or_json("sweep")?),
    };
    if args.plot.is_some() && args.shard.is_some() {
        bail!("--plot: a --shard run prints its results for --merge; plot the merged sweep");
    }
    let plot = crate::plot::plot_file(args.plot.as_deref(), args.force)?;
    if !args.merge.is_empty() {
        return merge(args, format, plot.as_ref());
    }
    let (def, scenario) = definition(args)?;
    let points = grid(&def.axes);
    let configs = points
        .iter()
        .map(|p| point_config(&scenario, &def.axes, p))
        .collect::<anyhow::Result<Vec<SimConfig>>>()?;
    if let Some(first) = configs.first() {
        for w in workload_warnings(&first.workload) {
            eprintln!("lbsim: {w}");
        }
    }
    let shard = args.shard.as_deref().map(parse_shard).transpose()?;
    let seeds: Vec<(usize, u64)> = def
        .seeds
        .iter()
        .copied()
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|(k, n)| (*i as u32) % n + 1 == k))
        .collect();
    // Seed-major, so that a stop leaves whole seeds done at every point.
    let jobs_list: Vec<(usize, u64)> = seeds
        .iter()
        .flat_map(|&(_, s)| (0..points.len()).map(move |p| (p, s)))
        .collect();
    let stop = interrupt_flag();
    let bar = ProgressBar::new("sweep");
    let progress = |done: usize, total: usize| bar.update(done, total);
    let ctl = Control {
        jobs: jobs(args.jobs)?,
        stop: Some(stop),
        progress: Some(&progress),
    };
    let kind = args.balancer;
    let factory = move |cfg: &SimConfig| make_balancer(kind, cfg);
    let results = run_jobs(&jobs_list, &ctl, |&(p, seed)| {
        run_one(&configs[p], seed, &factory)
    });
    bar.finish();
    let mut runs: Vec<ShardRun> = Vec::new();
    let mut done_seeds = 0;
    for (chunk, seed) in results.chunks(points.len().max(1)).zip(&seeds) {
        let mut whole = Vec::new();
        for (p, r) in chunk.iter().enumerate() {
            match r {
                Some(Ok(out)) => whole.push(shard_run(p, out)),
                Some(Err(e)) => bail!("{}: seed {}: {e}", points[p].label(&def.axes), seed.1),
                None => break,
            }
        }
        if whole.len() == points.len() {
            runs.extend(whole);
            done_seeds += 1;
        }
    }
    let interrupted = done_seeds < seeds.len();
    if let Some((k, n)) = shard {
        let file = ShardFile {
            lbsim_sweep_shard: k,
            shards: n,
            definition: def,
            runs,
        };
        print(&json_pretty(&file)?)?;
    } else {
        print(&render(&def, &runs, format)?)?;
        write_plot(plot.as_ref(), &def, &runs)?;
    }
    if interrupted {
        eprintln!(
            "lbsim: interrupted: {done_seeds} of {} seeds finished at every point",
            seeds.len()
        );
        std::process::exit(130);
    }
    Ok(())
}

fn shard_run(point: usize, out: &RunOutput) -> ShardRun {
    ShardRun {
        point,
        seed: out.seed,
        metrics: out
            .metrics
            .iter()
            .map(|m| ShardMetric {
                name: m.name.clone(),
                unit: m.unit.clone(),
                higher_is_better: m.higher_is_better,
                value: m.value,
            })
            .collect(),
    }
}

/// `K/N` with 1 <= K <= N.
fn parse_shard(text: &str) -> anyhow::Result<(u32, u32)> {
    let bad = || format!("--shard `{text}`: expected K/N with 1 <= K <= N");
    let (k, n) = text.split_once('/').with_context(bad)?;
    let k: u32 = k.trim().parse().with_context(bad)?;
    let n: u32 = n.trim().parse().with_context(bad)?;
    if k == 0 || n == 0 || k > n {
        bail!(bad());
    }
    Ok((k, n))
}

/// The file and the flags merged.
fn definition(args: &Args) -> anyhow::Result<(Definition, Scenario)> {
    let file = match &args.file {
        Some(p) => ScenarioFile::load(p, &args.budget)?,
        None => ScenarioFile::default(),
    };
    let vary = if args.vary.is_empty() {
        file.vary.clone()
    } else {
        args.vary.clone()
    };
    if vary.is_empty() {
        bail!("nothing to sweep: give --vary NAME=VALUES (repeatable)");
    }
    let axes = vary
        .iter()
        .map(|v| parse_axis(v))
        .collect::<anyhow::Result<Vec<Axis>>>()?;
    let size = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .filter(|&n| n <= 100_000)
        .context("--vary: more than 100000 points")?;
    let runs = args.runs.or(file.runs).unwrap_or(10);
    if runs == 0 {
        bail!("--runs must be at least 1");
    }
    if size.saturating_mul(runs as usize) > 1_000_000 {
        bail!("--vary and --runs: more than 1000000 runs ({size} points x {runs} seeds)");
    }
    let (scenario, first) = RunInputs {
        file: None,
        topology: args.topology.clone(),
        workloads: args.workloads.clone(),
        duration: args.duration.clone(),
        seed: args.seed,
        features: args.features.clone(),
        sets: args.sets.clone(),
        budget: args.budget,
        kernel: args.kernel.clone(),
        cgroups: Vec::new(),
        autogroups: Vec::new(),
        cost: None,
    }
    .merge(file)?;
    let seeds = (0..u64::from(runs))
        .map(|i| first.checked_add(i))
        .collect::<Option<Vec<u64>>>()
        .context("--seed: the seeds overflow u64")?;
    let def = Definition {
        topology: scenario.topology.clone(),
        workloads: scenario.workloads.clone(),
        features: scenario.features.clone(),
        sets: scenario.sets.clone(),
        kernel: scenario.kernel.clone(),
        duration_ns: scenario.duration_ns,
        seeds,
        axes,
        balancer: format!("{:?}", args.balancer),
    };
    Ok((def, scenario))
}

/// The scenario at `point`: each axis applied to the features, the sets or the workloads.
fn point_config(base: &Scenario, axes: &[Axis], point: &Point) -> anyhow::Result<SimConfig> {
    let mut s = base.clone();
    for (a, v) in axes.iter().zip(&point.values) {
        if let Some((kind, key)) = a.name.split_once(':') {
            let mut found = false;
            for w in &mut s.workloads {
                if w.split(':').next() == Some(kind) {
                    *w = with_key(w, key, v);
                    found = true;
                }
            }
            if !found {
                bail!("--vary {}: no `{kind}` workload to vary", a.name);
            }
        } else if matches!(v.as_str(), "on" | "off") {
            let f = if v == "on" {
                a.name.clone()
            } else {
                format!("NO_{}", a.name)
            };
            s.features.push(f);
        } else {
            s.sets.push(format!("{}={v}", a.name));
        }
    }
    let label = point.label(axes);
    Ok(s.build()
        .with_context(|| format!("--vary point `{label}`"))?
        .config)
}

/// `kind:k=v,...` with `key` set to `value` (replaced where given, else appended).
fn with_key(workload: &str, key: &str, value: &str) -> String {
    let (kind, rest) = workload.split_once(':').unwrap_or((workload, ""));
    let mut pairs: Vec<String> = rest
        .split(',')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    let set = format!("{key}={value}");
    match pairs
        .iter_mut()
        .find(|p| p.split('=').next().map(str::trim) == Some(key))
    {
        Some(p) => *p = set,
        None => pairs.push(set),
    }
    format!("{kind}:{}", pairs.join(","))
}

/// How a sweep prints its results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    /// `--format text` or `json`.
    Plain(TextOrJson),
    /// `--format mmtests`: compare-mmtests.pl's table, one column per point.
    Mmtests,
}

/// Joins shard files.
fn merge(args: &Args, format: Out, plot: Option<&crate::output::OutputFile>) -> anyhow::Result<()> {
    let mut files = Vec::new();
    for path in &args.merge {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("--merge {}", path.display()))?;
        let f: ShardFile = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("--merge {}: not a sweep shard: {e}", path.display()))?;
        files.push((path, f));
    }
    let (first_path, first) = &files[0];
    let n = first.shards;
    let mut seen = vec![false; n as usize];
    for (p, f) in &files {
        if f.definition != first.definition || f.shards != n {
            bail!(
                "--merge {}: a shard of another sweep than {}",
                p.display(),
                first_path.display()
            );
        }
        let k = f.lbsim_sweep_shard;
        if k == 0 || k > n || std::mem::replace(&mut seen[(k - 1) as usize], true) {
            bail!(
                "--merge {}: shard {k}/{n} given twice or out of range",
                p.display()
            );
        }
    }
    if let Some(k) = seen.iter().position(|s| !s) {
        bail!("--merge: shard {}/{n} is missing", k + 1);
    }
    let definition = first.definition.clone();
    let mut runs: Vec<ShardRun> = files.into_iter().flat_map(|(_, f)| f.runs).collect();
    // The one-machine order: seed-major, then point.
    runs.sort_by_key(|r| (r.seed, r.point));
    print(&render(&definition, &runs, format)?)?;
    write_plot(plot, &definition, &runs)
}

/// `--plot`: the sweep's figure.
fn write_plot(
    plot: Option<&crate::output::OutputFile>,
    def: &Definition,
    runs: &[ShardRun],
) -> anyhow::Result<()> {
    let Some(file) = plot else {
        return Ok(());
    };
    let (seeds, metrics) = table(def, runs);
    crate::plot::sweep::write(file, def, &metrics, seeds)
}

/// One point's values of one metric, in seed order.
fn values(runs: &[ShardRun], point: usize, metric: &str) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.point == point)
        .filter_map(|r| r.metrics.iter().find(|m| m.name == metric))
        .map(|m| m.value)
        .collect()
}

/// One row of a metric's table in JSON.
#[derive(Debug, Serialize)]
pub struct PointJson {
    /// The point's label (`imbalance_pct=110 busy:threads=8`).
    pub point: String,
    /// The mean over the seeds.
    pub mean: f64,
    /// The sample stddev over the seeds.
    pub stddev: f64,
    /// The change of the mean against the first point's, percent.
    pub change_pct: f64,
    /// Welch's p-value against the first point (none for the first point).
    pub p_value: Option<f64>,
    /// Whether Welch's test finds it different from the first point.
    pub significant: bool,
}

/// One metric of the sweep in JSON: a row per point.
#[derive(Debug, Serialize)]
pub struct MetricJson {
    /// The metric's name.
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// Whether higher is better.
    pub higher_is_better: bool,
    /// One per point of the grid, in grid order.
    pub points: Vec<PointJson>,
}

#[derive(Serialize)]
struct SweepJson<'a> {
    definition: &'a Definition,
    seeds_done: usize,
    metrics: Vec<MetricJson>,
}

/// Every metric's row per point: mean, stddev and the change against the first point; and
/// the seeds done at every point.
fn table(def: &Definition, runs: &[ShardRun]) -> (usize, Vec<MetricJson>) {
    let points = grid(&def.axes);
    let mut names: Vec<&ShardMetric> = Vec::new();
    for m in runs.iter().flat_map(|r| &r.metrics) {
        if !names.iter().any(|n| n.name == m.name) {
            names.push(m);
        }
    }
    let seeds_done = runs.iter().filter(|r| r.point == 0).count();
    let mut metrics = Vec::new();
    for m in &names {
        let first = values(runs, 0, &m.name);
        let rows = (0..points.len())
            .map(|p| {
                let c = MetricComparison::new(
                    &m.name,
                    &m.unit,
                    m.higher_is_better,
                    first.clone(),
                    values(runs, p, &m.name),
                );
                PointJson {
                    point: points[p].label(&def.axes),
                    mean: c.patched.mean,
                    stddev: c.patched.stddev,
                    change_pct: c.change_pct,
                    p_value: if p == 0 { None } else { c.p_value },
                    significant: p != 0 && c.significant,
                }
            })
            .collect();
        metrics.push(MetricJson {
            name: m.name.clone(),
            unit: m.unit.clone(),
            higher_is_better: m.higher_is_better,
            points: rows,
        });
    }
    (seeds_done, metrics)
}

/// The tables (or their JSON).
fn render(def: &Definition, runs: &[ShardRun], out: Out) -> anyhow::Result<String> {
    let points = grid(&def.axes);
    let mut names: Vec<&ShardMetric> = Vec::new();
    for m in runs.iter().flat_map(|r| &r.metrics) {
        if !names.iter().any(|n| n.name == m.name) {
            names.push(m);
        }
    }
    let format = match out {
        Out::Plain(f) => f,
        Out::Mmtests => {
            let labels: Vec<String> = points
                .iter()
                .map(|p| format!("lbsim-{}", p.label(&def.axes)))
                .collect();
            let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
            let rows: Vec<crate::tables::mmtests::Row> = names
                .iter()
                .map(|m| crate::tables::mmtests::Row {
                    name: m.name.clone(),
                    higher_is_better: m.higher_is_better,
                    columns: (0..points.len())
                        .map(|p| values(runs, p, &m.name))
                        .collect(),
                })
                .collect();
            return Ok(crate::tables::mmtests::render_columns(&labels, &rows));
        }
    };
    let (seeds_done, metrics) = table(def, runs);
    if format == TextOrJson::Json {
        return json_pretty(&SweepJson {
            definition: def,
            seeds_done,
            metrics,
        });
    }
    let mut s = String::new();
    let _ = writeln!(s, "machine:    {}", def.topology);
    let _ = writeln!(s, "workloads:  {}", def.workloads.join(" "));
    if let Some(k) = &def.kernel {
        let _ = writeln!(s, "kernel:     {k}");
    }
    let common: Vec<&str> = def
        .features
        .iter()
        .chain(&def.sets)
        .map(String::as_str)
        .filter(|f| !f.trim().is_empty())
        .collect();
    if !common.is_empty() {
        let _ = writeln!(s, "everywhere: {}", common.join(","));
    }
    let _ = writeln!(
        s,
        "grid:       {} points ({}), {seeds_done} seeds each",
        points.len(),
        def.axes
            .iter()
            .map(|a| format!("{} x {}", a.name, a.values.len()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for m in &metrics {
        let better = if m.higher_is_better {
            "higher"
        } else {
            "lower"
        };
        let _ = writeln!(s, "\n== {} ({}, {better} is better) ==", m.name, m.unit);
        let mut rows = vec![vec![
            "point".to_owned(),
            "mean (+/- stddev)".to_owned(),
            "change".to_owned(),
        ]];
        for (i, p) in m.points.iter().enumerate() {
            rows.push(vec![
                p.point.clone(),
                fmt_mean_sd(p.mean, p.stddev),
                if i == 0 {
                    "-".to_owned()
                } else {
                    fmt_change(p.change_pct)
                },
                if p.significant { "*" } else { "" }.to_owned(),
            ]);
        }
        s.push_str(&super::compare::columns(&rows, "lrrl"));
    }
    let _ = writeln!(
        s,
        "\nmean (+/- sample stddev) over the seeds; change against the first point; * = \
         significant by Welch's two-sample t-test (two-sided, p < 0.05)."
    );
    Ok(s)
}

#[cfg(test)]
mod tests;
