//! `lbsim compare`: one scenario, two feature sets, the same seeds on both sides; a table of
//! every metric as an LKML cover letter or an mmtests comparison shows it.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context as _, bail};
use lbsim_sim::engine::SimConfig;
use lbsim_sim::experiment::{AbRuns, Comparison, Control, SideStats, compare, run_ab};
use serde::Serialize;

use crate::balancer::{BalancerKind, make_balancer};
use crate::format::{Format, TextOrJson, json_pretty};
use crate::scenario::{RunInputs, Scenario, ScenarioFile, workload_warnings};

/// Arguments of `lbsim compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A scenario file (TOML) holding any of the flags below; flags override it.
    #[arg(value_name = "FILE.toml")]
    pub file: Option<PathBuf>,
    /// Machine spec: a CPU count, key=value list, preset (`lbsim topology --list`), file, or a
    /// real machine (`host`, `sysfs:DIR`, `lscpu:FILE`).
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,
    /// A workload (`busy:threads=9`, `sysbench-cpu:threads=8,requests=1000`, ...);
    /// repeatable, all run together. Replaces the file's workloads.
    #[arg(
        long = "workload",
        value_name = "WL",
        long_help = super::workload_help(
            "A workload; repeatable, all run together. Replaces the file's workloads."
        )
    )]
    pub workloads: Vec<String>,
    /// A cgroup v2 task group and its `cpu.weight` (`/a/b:weight=300`, 1..=10000; a group a
    /// workload's `cgroup=` names without being declared has weight 100); repeatable.
    #[arg(long = "cgroup", value_name = "PATH:weight=N")]
    pub cgroups: Vec<String>,
    /// The nice of session N's autogroup (`2:nice=5`, -20..=19; default 0): lbsim's syntax
    /// for `echo 5 > /proc/PID/autogroup` by a task of a workload with `session=2`;
    /// repeatable.
    #[arg(
        long = "autogroup",
        value_name = "SESSION:nice=N",
        allow_hyphen_values = true
    )]
    pub autogroups: Vec<String>,
    /// Features and tunables of the base side (`NO_X,Y,imbalance_pct=125`); empty: defaults.
    #[arg(long, value_name = "FEATURES", allow_hyphen_values = true)]
    pub base: Option<String>,
    /// Features and tunables of the patched side, same syntax as --base.
    #[arg(long, value_name = "FEATURES", allow_hyphen_values = true)]
    pub patched: Option<String>,
    /// Features applied to both sides before --base/--patched; repeatable.
    #[arg(long = "features", value_name = "LIST")]
    pub features: Vec<String>,
    /// Set a tunable on both sides (`migration_cost_ns=250000`); repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// The kernel release whose profile the run starts from (`5.9`, `6.12`; `lbsim features
    /// --kernel V` lists its features): its sched features and their defaults, lbsim's
    /// switches for the changes it has, its tunables' defaults. `--features` and `--set`
    /// still override it [default: lbsim's v6.12 model].
    #[arg(long, value_name = "VERSION")]
    pub kernel: Option<String>,
    /// A cost profile (`lbsim calibrate`'s TOML): its `[cost]` values replace the cost
    /// model's defaults (after `--kernel`'s, before `--features` and `--set`, which still
    /// override them). Replaces a scenario file's `cost`.
    #[arg(long, value_name = "FILE")]
    pub cost: Option<PathBuf>,
    /// Runs (seeds) per side [default: 10].
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,
    /// The first seed; the runs use seeds SEED, SEED+1, ... on both sides [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// How long to simulate each run (`500ms`, `2s`) [default: as long as the workload asks,
    /// 1s for one with no end].
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Worker threads [default: the available parallelism]. Results do not depend on it.
    #[arg(long, value_name = "J")]
    pub jobs: Option<usize>,
    /// The balancer policy.
    #[arg(long, value_enum, default_value_t = BalancerKind::default())]
    pub balancer: BalancerKind,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The runs' resource budget.
    #[command(flatten)]
    pub budget: crate::budget::Budget,
    /// Also draw each metric's two sides as bars with error bars, significance marked, as
    /// an SVG figure in FILE.svg (`docs/plots.md`). FILE must not exist yet (see --force);
    /// it appears whole or not at all.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Overwrite the --plot file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// The worker threads: `--jobs`, else the host's available parallelism.
pub fn jobs(flag: Option<usize>) -> anyhow::Result<usize> {
    match flag {
        Some(0) => bail!("--jobs must be at least 1"),
        Some(j) => Ok(j),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// Ctrl-C handling for multi-run commands: the first Ctrl-C sets the returned flag (no new
/// run starts; the report covers what finished); a second one exits at once with 130.
pub fn interrupt_flag() -> &'static AtomicBool {
    interrupt_flag_saying("finishing the runs in progress")
}

/// [`interrupt_flag`] whose first Ctrl-C prints `lbsim: interrupted: WHAT (Ctrl-C again to
/// quit)`.
pub fn interrupt_flag_saying(what: &'static str) -> &'static AtomicBool {
    static STOP: AtomicBool = AtomicBool::new(false);
    // Installing fails only if a handler is already installed (a second multi-run command in
    // one process, as in tests); the first handler sets the same flag.
    let _ = ctrlc::set_handler(move || {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\nlbsim: interrupted: {what} (Ctrl-C again to quit)");
    });
    &STOP
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
#[derive(Debug)]
pub struct ProgressBar {
    enabled: bool,
    label: String,
}

impl ProgressBar {
    /// A bar labelled `label`; silent unless stderr is a terminal.
    pub fn new(label: &str) -> ProgressBar {
        ProgressBar {
            enabled: std::io::stderr().is_terminal(),
            label: label.to_owned(),
        }
    }

    /// Draws `done` of `total`.
    pub fn update(&self, done: usize, total: usize) {
        if !self.enabled {
            return;
        }
        const WIDTH: usize = 30;
        let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[K{} [{}{}] {done}/{total} runs",
            self.label,
            "#".repeat(filled),
            ".".repeat(WIDTH - filled)
        );
        let _ = err.flush();
    }

    /// Erases the bar.
    pub fn finish(&self) {
        if self.enabled {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

pub use crate::stdout::print;

/// What `lbsim compare` runs, after the file and the flags are merged.
#[derive(Debug)]
struct Plan {
    description: Option<String>,
    topology: String,
    workloads: Vec<String>,
    common: Vec<String>,
    sets: Vec<String>,
    base: String,
    patched: String,
    seeds: Vec<u64>,
    /// `--duration`; `None`: as long as the workload asks.
    duration_ns: Option<u64>,
    /// The length each run lasts at most (`duration_ns` or the workload's own), once built.
    run_ns: u64,
    budget: crate::budget::Budget,
    kernel: Option<String>,
    cgroups: Vec<(String, u64)>,
    autogroups: Vec<(u32, i32)>,
    cost: Option<crate::scenario::CostFile>,
}

fn plan(args: &Args) -> anyhow::Result<Plan> {
    let file = match &args.file {
        Some(p) => ScenarioFile::load(p, &args.budget)?,
        None => ScenarioFile::default(),
    };
    let base = args.base.clone().or(file.base.clone());
    let patched = args.patched.clone().or(file.patched.clone());
    if base.is_none() && patched.is_none() {
        bail!(
            "nothing to compare: give --base and/or --patched (a features list; empty: defaults)"
        );
    }
    let runs = args.runs.or(file.runs).unwrap_or(10);
    if runs == 0 {
        bail!("--runs must be at least 1");
    }
    let description = file.description.clone();
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
        cgroups: args.cgroups.clone(),
        autogroups: args.autogroups.clone(),
        cost: args.cost.clone(),
    }
    .merge(file)?;
    let seeds = (0..u64::from(runs))
        .map(|i| first.checked_add(i))
        .collect::<Option<Vec<u64>>>()
        .context("--seed: the seeds overflow u64")?;
    Ok(Plan {
        description,
        topology: scenario.topology,
        workloads: scenario.workloads,
        common: scenario.features,
        sets: scenario.sets,
        base: base.unwrap_or_default(),
        patched: patched.unwrap_or_default(),
        seeds,
        duration_ns: scenario.duration_ns,
        budget: scenario.budget,
        kernel: scenario.kernel,
        cgroups: scenario.cgroups,
        autogroups: scenario.autogroups,
        cost: scenario.cost,
        run_ns: 0,
    })
}

/// Builds one side: the common features, then the side's list, then the sets.
fn side_config(plan: &Plan, side: &str, list: &str) -> anyhow::Result<SimConfig> {
    let mut features = plan.common.clone();
    features.push(list.to_owned());
    // The side's own list, named by its flag (built below among the common lists, its errors
    // would name --features).
    let profile = crate::scenario::kernel_profile(plan.kernel.as_deref())?;
    crate::scenario::settings_for(profile, 1, std::slice::from_ref(&list.to_owned()), &[])
        .map_err(|e| anyhow::anyhow!("--{side} `{list}`: {}", e.root_cause()))?;
    let scenario = Scenario {
        topology: plan.topology.clone(),
        workloads: plan.workloads.clone(),
        features,
        sets: plan.sets.clone(),
        duration_ns: plan.duration_ns,
        budget: plan.budget,
        kernel: plan.kernel.clone(),
        cgroups: plan.cgroups.clone(),
        autogroups: plan.autogroups.clone(),
        cost: plan.cost.clone(),
    };
    Ok(scenario
        .build()
        .with_context(|| format!("--{side} `{list}`"))?
        .config)
}

/// Runs `lbsim compare`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let table = matches!(args.format, Format::Mmtests | Format::Lkp);
    let format = if table {
        TextOrJson::Text
    } else {
        args.format.text_or_json("compare")?
    };
    let mut plan = plan(args)?;
    let plot = crate::plot::plot_file(args.plot.as_deref(), args.force)?;
    let base = side_config(&plan, "base", &plan.base)?;
    let patched = side_config(&plan, "patched", &plan.patched)?;
    plan.run_ns = base.duration_ns;
    for w in workload_warnings(&base.workload) {
        eprintln!("lbsim: {w}");
    }
    let jobs = jobs(args.jobs)?;
    let stop = interrupt_flag();
    let bar = ProgressBar::new("compare");
    let progress = |done: usize, total: usize| bar.update(done, total);
    let ctl = Control {
        jobs,
        stop: Some(stop),
        progress: Some(&progress),
    };
    let kind = args.balancer;
    let factory = move |cfg: &SimConfig| make_balancer(kind, cfg);
    let runs = run_ab(&base, &patched, &plan.seeds, &factory, &ctl);
    bar.finish();
    let runs = runs?;
    // Every seed stops where the first does when the limit cuts the workload (the limit is
    // the same on both sides): one note per part, from the first run.
    if let Some(first) = runs.base.first() {
        for c in &first.cut_short {
            eprintln!("lbsim: note: {c}");
        }
    }
    let comparison = compare(&runs.base, &runs.patched);
    let sides = crate::tables::Sides {
        base: side_name(&plan.base),
        patched: side_name(&plan.patched),
    };
    let text = match (args.format, format) {
        (Format::Mmtests, _) => crate::tables::mmtests::render(
            &crate::tables::Sides {
                base: format!("lbsim-{}", sides.base),
                patched: format!("lbsim-{}", sides.patched),
            },
            &comparison,
        ),
        (Format::Lkp, _) => crate::tables::lkp::render(
            &sides,
            &crate::tables::lkp::Testcase {
                machine: plan.topology.clone(),
                workloads: plan.workloads.clone(),
                kernel: plan.kernel.clone(),
            },
            &comparison,
        ),
        (_, TextOrJson::Json) => json_pretty(&ComparisonJson::of(&comparison))?,
        (_, TextOrJson::Text) => text_report(&plan, &runs, &comparison),
    };
    print(&text)?;
    if let Some(file) = &plot {
        let title = format!("{} on {}", plan.workloads.join(" "), plan.topology);
        crate::plot::compare::write(file, &title, &sides.base, &sides.patched, &comparison)?;
    }
    if runs.interrupted() {
        eprintln!(
            "lbsim: interrupted: {} of {} seeds finished on both sides",
            runs.base.len(),
            runs.planned
        );
        std::process::exit(130);
    }
    Ok(())
}

/// A side's switches as a table names the side (an empty list: the profile's defaults).
fn side_name(list: &str) -> String {
    let l = list.trim();
    if l.is_empty() {
        "(profile defaults)".to_owned()
    } else {
        l.to_owned()
    }
}

/// A number with about four significant digits, and the decimals it used.
pub fn fmt_num(x: f64) -> (String, usize) {
    let a = x.abs();
    let decimals = if !a.is_finite() || a >= 1000.0 || a == 0.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else if a >= 1.0 {
        3
    } else {
        4
    };
    (format!("{x:.decimals$}"), decimals)
}

/// `mean (+/- stddev)` with the mean's decimals for both.
pub fn fmt_mean_sd(mean: f64, stddev: f64) -> String {
    let (m, d) = fmt_num(mean);
    format!("{m} (+/- {stddev:.d$})")
}

/// A change in percent, signed.
pub fn fmt_change(pct: f64) -> String {
    if pct.is_finite() {
        format!("{pct:+.2}%")
    } else if pct > 0.0 {
        "+inf%".to_owned()
    } else {
        "-inf%".to_owned()
    }
}

/// Lays out rows of cells as columns two spaces apart, trailing spaces removed. `align` has
/// one letter per column, `l` (left) or `r` (right); columns beyond it are left-aligned.
pub fn columns(rows: &[Vec<String>], align: &str) -> String {
    let align = align.as_bytes();
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let w = widths[c];
            if align.get(c) != Some(&b'r') {
                line.push_str(&format!("{cell:<w$}"));
            } else {
                line.push_str(&format!("{cell:>w$}"));
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

fn or_defaults(list: &str) -> &str {
    if list.trim().is_empty() {
        "(defaults)"
    } else {
        list
    }
}

/// The text report: a header naming what ran, one row per metric, and the legend.
fn text_report(plan: &Plan, runs: &AbRuns, c: &Comparison) -> String {
    let mut s = String::new();
    if let Some(d) = &plan.description {
        s.push_str(&format!("{d}\n"));
    }
    let seeds = match (c.seeds.first(), c.seeds.last()) {
        (Some(a), Some(b)) if a != b => format!("seeds {a}-{b}"),
        (Some(a), _) => format!("seed {a}"),
        _ => "no seed finished".to_owned(),
    };
    let mut head = vec![
        vec![
            "runs:".to_owned(),
            format!(
                "{} a side ({seeds}), {} s simulated each",
                c.runs,
                plan.run_ns as f64 / 1e9
            ),
        ],
        vec!["machine:".to_owned(), plan.topology.clone()],
        vec!["workloads:".to_owned(), plan.workloads.join(" ")],
    ];
    let mut both: Vec<String> = plan.common.clone();
    both.extend(plan.sets.iter().cloned());
    if !both.is_empty() {
        head.push(vec!["both sides:".to_owned(), both.join(",")]);
    }
    head.push(vec!["base:".to_owned(), or_defaults(&plan.base).to_owned()]);
    head.push(vec![
        "patched:".to_owned(),
        or_defaults(&plan.patched).to_owned(),
    ]);
    s.push_str(&columns(&head, "ll"));
    if runs.interrupted() {
        s.push_str(&format!(
            "interrupted: {} of {} seeds finished\n",
            runs.base.len(),
            runs.planned
        ));
    }
    s.push('\n');
    let mut rows = vec![vec![
        "metric".to_owned(),
        "unit".to_owned(),
        "base".to_owned(),
        "patched".to_owned(),
        "change".to_owned(),
        String::new(),
    ]];
    for m in &c.metrics {
        let mark = match (m.significant, m.improved()) {
            (true, Some(true)) => "* better",
            (true, Some(false)) => "* worse",
            _ => "",
        };
        rows.push(vec![
            m.name.clone(),
            m.unit.clone(),
            fmt_mean_sd(m.base.mean, m.base.stddev),
            fmt_mean_sd(m.patched.mean, m.patched.stddev),
            fmt_change(m.change_pct),
            mark.to_owned(),
        ]);
    }
    s.push_str(&columns(&rows, "llrrrl"));
    s.push_str(
        "\nmean (+/- sample stddev) over the runs; change = (patched - base) / base;\n\
         * = significant by Welch's two-sample t-test (two-sided, p < 0.05), better or worse \
         for the metric.\n",
    );
    s
}

/// The JSON report (issue 7's shape): per metric, both sides' statistics and the change.
#[derive(Debug, Serialize)]
struct ComparisonJson<'a> {
    /// Seeds finished on both sides.
    runs: usize,
    /// One per metric, in the runs' order.
    metrics: Vec<MetricJson<'a>>,
}

/// One metric of [`ComparisonJson`].
#[derive(Debug, Serialize)]
struct MetricJson<'a> {
    name: &'a str,
    unit: &'a str,
    higher_is_better: bool,
    base: SideJson<'a>,
    patched: SideJson<'a>,
    change_pct: f64,
    significant: bool,
}

/// One side of a [`MetricJson`]: mean, sample stddev and the per-seed values.
#[derive(Debug, Serialize)]
struct SideJson<'a> {
    mean: f64,
    stddev: f64,
    values: &'a [f64],
}

impl<'a> SideJson<'a> {
    fn of(s: &'a SideStats) -> SideJson<'a> {
        SideJson {
            mean: s.mean,
            stddev: s.stddev,
            values: &s.values,
        }
    }
}

impl<'a> ComparisonJson<'a> {
    fn of(c: &'a Comparison) -> ComparisonJson<'a> {
        ComparisonJson {
            runs: c.runs,
            metrics: c
                .metrics
                .iter()
                .map(|m| MetricJson {
                    name: &m.name,
                    unit: &m.unit,
                    higher_is_better: m.higher_is_better,
                    base: SideJson::of(&m.base),
                    patched: SideJson::of(&m.patched),
                    change_pct: m.change_pct,
                    significant: m.significant,
                })
                .collect(),
        }
    }
}
