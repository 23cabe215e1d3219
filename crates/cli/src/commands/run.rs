//! `lbsim run`: one simulation, reported for a person (text) or a script (JSON).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use anyhow::Context as _;
use lbsim_balance::schedstat::SchedstatVersion;
use lbsim_sim::engine::{CpuResult, GroupFairness, RunResult, Sim, SimError, TaskResult};
use lbsim_workload::Report;
use serde::Serialize;

use crate::balancer::{BalancerKind, make_balancer};
use crate::format::{Format, TextOrJson, json_pretty};
use crate::output::OutputFile;
use crate::scenario::{cut_short_notes, workload_warnings};

const WORKLOAD_HELP: &str = "A workload; repeatable, all run together.";

/// Arguments of `lbsim run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A scenario file (TOML) holding any of the flags below; flags override it.
    #[arg(value_name = "FILE.toml")]
    pub file: Option<std::path::PathBuf>,
    /// Machine spec: a CPU count, key=value list, preset (`lbsim topology --list`), file, or a
    /// real machine (`host`, `sysfs:DIR`, `lscpu:FILE`).
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,
    /// A workload (`busy:threads=4`, `sysbench-cpu:threads=8,requests=1000`,
    /// `rtapp:FILE.json`, ...); repeatable, all run together.
    #[arg(long = "workload", value_name = "WL", long_help = super::workload_help(WORKLOAD_HELP))]
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
    /// How long to simulate (`500ms`, `2s`); a workload that ends sooner ends the run
    /// [default: as long as the workload asks (schbench's runtime, rt-app's global.duration,
    /// until pipe's or sysbench's count is done), 1s for one with no end].
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// The master seed [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Sched features, as /sys/kernel/debug/sched/features takes them (`NO_X,Y`), and
    /// tunables (`imbalance_pct=125`); repeatable.
    #[arg(long = "features", value_name = "LIST")]
    pub features: Vec<String>,
    /// Set a tunable by its kernel name (`migration_cost_ns=250000`, `hz=1000`,
    /// `imbalance_pct=125`, `cost_ipi_ns=2000`, ...); repeatable.
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
    pub cost: Option<std::path::PathBuf>,
    /// The balancer policy.
    #[arg(long, value_enum, default_value_t = BalancerKind::default())]
    pub balancer: BalancerKind,
    /// Print /proc/schedstat at the end of the run (the text report; JSON always has it).
    #[arg(long)]
    pub schedstat: bool,
    /// The /proc/schedstat layout: 15 (kernels to v6.9), 16 (v6.10-v6.13) or 17 (v6.14 on)
    /// [default: the `--kernel` release's, else 16 (the modelled v6.12's)].
    #[arg(long, value_name = "N")]
    pub schedstat_version: Option<u32>,
    /// Check invariants after every event; stop at the first violation.
    #[arg(long)]
    pub check: bool,
    /// Write the scheduler trace to FILE (sched_switch, sched_waking, sched_wakeup,
    /// sched_process_fork, sched_wakeup_new, sched_migrate_task, sched_process_exit,
    /// sched_cpu_capacity (each CPU's, at the start; Perfetto: CpuInfo), sched_pelt_cfs, and
    /// lbsim's own lbsim_load_balance and lbsim_charge, the costs lbsim
    /// charged, which trace replay takes off): a Perfetto protobuf trace if FILE ends in
    /// `.pftrace`, `.perfetto-trace`, `.pb` or `.perfetto` (ui.perfetto.dev opens it), else
    /// ftrace text as `trace-cmd report` prints it with raw events (trappy and LISA read it).
    /// FILE must not exist yet (see --force); it appears whole or not at all.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// Also draw the run as an SVG figure in FILE.svg (`docs/plots.md`): the wake-up latency
    /// CDF, and every CPU's nr_running and util_avg over time (sampled every 1 ms of
    /// simulated time, coarser for long runs). FILE must not exist yet (see --force); it
    /// appears whole or not at all.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// Overwrite the --trace or --plot file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The run's resource budget.
    #[command(flatten)]
    pub budget: crate::budget::Budget,
    /// Most records (lines) the `--trace` may hold; the run stops with an error, writing no
    /// file, when its trace would pass it.
    #[arg(long, value_name = "N", default_value_t = crate::budget::DEFAULT_MAX_TRACE_RECORDS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_trace_records: u64,
}

/// Runs `lbsim run`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    // Ctrl-C ends the simulation where it is; the report covers the time simulated so far.
    let stop = crate::commands::compare::interrupt_flag_saying(
        "stopping the simulation and printing what it has so far",
    );
    let format = args.format.text_or_json("run")?;
    let schedstat_version = args
        .schedstat_version
        .map(|n| {
            SchedstatVersion::from_number(n).with_context(|| {
                format!("--schedstat-version {n}: lbsim prints versions 15, 16 and 17")
            })
        })
        .transpose()?;
    let (scenario, seed) = crate::scenario::RunInputs {
        file: args.file.clone(),
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
    .resolve()?;
    let built = scenario.build()?;
    for w in workload_warnings(&built.config.workload) {
        eprintln!("lbsim: {w}");
    }
    let mut cfg = built.config;
    cfg.seed = seed;
    cfg.check = args.check;
    let spec = cfg.workload.clone();
    // Refuse an existing trace file before simulating (nothing a user wrote is overwritten
    // without --force); the file is written only once there is a whole trace to write.
    let trace_file = args
        .trace
        .as_deref()
        .map(|p| OutputFile::new("--trace", p, args.force))
        .transpose()?;
    // Whether Ctrl-C ended a simulation early (a Ctrl-C after the last one ended cuts nothing).
    let cut_short = std::cell::Cell::new(false);
    let plot_file = crate::plot::plot_file(args.plot.as_deref(), args.force)?;
    let simulate = |cfg: &lbsim_sim::engine::SimConfig| -> anyhow::Result<_> {
        let sim = Sim::new(cfg.clone(), make_balancer(args.balancer, cfg))?;
        let sim = match &trace_file {
            Some(_) => sim.with_trace().with_trace_limit(args.max_trace_records),
            None => sim,
        };
        // The time series behind --plot are sampled only for it (a run without it is as
        // before, byte for byte).
        let sim = match &plot_file {
            Some(_) => {
                let run_ns = cfg
                    .workload
                    .duration_ns
                    .map_or(cfg.duration_ns, |d| d.min(cfg.duration_ns));
                sim.with_cpu_series(crate::plot::run::series_period_ns(
                    run_ns,
                    cfg.topology.machine().nr_cpus(),
                ))
            }
            None => sim,
        };
        let mut bar = crate::progress::SimProgress::new();
        let result = sim.run_with_progress(&mut |now, end| {
            bar.update(now, end);
            let go_on = !stop.load(Ordering::SeqCst);
            if !go_on {
                cut_short.set(true);
            }
            go_on
        });
        bar.finish();
        result.map_err(|e| match (e, &trace_file) {
            (SimError::TraceLimit { limit, time_ns }, Some(f)) => anyhow::anyhow!(
                "--trace {}: the trace passed {limit} records at {:.6} s of simulated time \
                 (--max-trace-records N raises it); no file was written",
                f.path().display(),
                time_ns as f64 / 1e9
            ),
            (e, _) => e.into(),
        })
    };
    let mut result = simulate(&cfg)?;
    let mut reports = spec.reports(&result.observations);
    let mut notes = cut_short_notes(&spec, &result.observations, cfg.duration_ns);
    // A workload that re-runs itself in rounds (`schbench -a`) runs until its generator has no
    // next round; each round's summary is the first line of its report.
    let rounds = spec.rounds();
    let mut round_lines = Vec::new();
    if rounds.is_some() {
        round_lines.push(first_line(&reports[0].text));
        let mut round = cfg.clone();
        while !stop.load(Ordering::SeqCst)
            && let Some(next) = round.workload.next_round(&reports)
        {
            round.workload = next.context("the next round")?;
            result = simulate(&round)?;
            reports = round.workload.reports(&result.observations);
            notes = cut_short_notes(&round.workload, &result.observations, round.duration_ns);
            round_lines.push(first_line(&reports[0].text));
        }
    }
    for n in &notes {
        eprintln!("lbsim: {n}");
    }
    if let (Some(file), Some(trace)) = (&trace_file, &result.trace) {
        let perfetto = file.path().extension().is_some_and(|e| {
            matches!(
                e.to_str(),
                Some("pftrace" | "perfetto-trace" | "pb" | "perfetto")
            )
        });
        file.write(|w| {
            if perfetto {
                trace.write_perfetto(w)
            } else {
                trace.write_ftrace(w)
            }
        })?;
    }
    if let Some(file) = &plot_file {
        let title = format!(
            "{} on {}",
            spec_title(&args.workloads, args.file.as_deref()),
            args.topology.as_deref().unwrap_or("the scenario's machine")
        );
        crate::plot::run::write(file, &title, &result)?;
    }
    // /proc/schedstat is formatted only for an output that shows it (at 4096 CPUs the text is
    // megabytes).
    if let Some((counters, jiffies)) = &result.schedstat_counters
        && (args.schedstat || format == TextOrJson::Json)
    {
        result.schedstat = Some(counters.format_version(
            &cfg.topology,
            *jiffies,
            schedstat_version.unwrap_or(cfg.kernel.map_or(SchedstatVersion::V16, |(a, b)| {
                SchedstatVersion::of_kernel(a, b)
            })),
        ));
    }
    let mut text = String::new();
    if let Some(title) = rounds
        && format == TextOrJson::Text
        && round_lines.len() > 1
    {
        let _ = writeln!(text, "== {title}: one round per line ==");
        for l in &round_lines {
            let _ = writeln!(text, "{l}");
        }
        let _ = writeln!(text, "== the last round ==");
    }
    text += &match format {
        TextOrJson::Json => json_pretty(&RunJson::of(&result, &reports))?,
        TextOrJson::Text if args.schedstat => {
            let mut t = text_report(&result, &reports);
            t.push_str("\n== /proc/schedstat ==\n");
            t.push_str(
                result
                    .schedstat
                    .as_deref()
                    .unwrap_or("(this balancer keeps no schedstat)\n"),
            );
            t
        }
        TextOrJson::Text => text_report(&result, &reports),
    };
    crate::stdout::print(&text)?;
    if cut_short.get() {
        eprintln!(
            "lbsim: interrupted: the report covers {:.6} s of simulated time (of {:.6} s asked for)",
            result.sim_time_ns as f64 / 1e9,
            cfg.duration_ns as f64 / 1e9
        );
        std::process::exit(130);
    }
    Ok(())
}

/// What a run's figure says ran: its `--workload`s, else its scenario file.
fn spec_title(workloads: &[String], file: Option<&std::path::Path>) -> String {
    match (workloads.is_empty(), file) {
        (false, _) => workloads.join(" "),
        (true, Some(f)) => f.display().to_string(),
        (true, None) => "the run".to_owned(),
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_owned()
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The text report: totals, per-task and per-CPU tables, then each workload's own report.
pub fn text_report(r: &RunResult, reports: &[Report]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let l = &r.wakeup_latency;
    let _ = writeln!(
        s,
        "simulated time:            {:.6} s",
        r.sim_time_ns as f64 / 1e9
    );
    let _ = writeln!(s, "migrations:                {}", r.migrations);
    let _ = writeln!(s, "context switches:          {}", r.context_switches);
    let _ = writeln!(
        s,
        "idle while overloaded:     {:.3} ms",
        r.idle_while_overloaded_ns as f64 / 1e6
    );
    let _ = writeln!(
        s,
        "wake-up latency (us):      p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  ({} wake-ups)",
        us(l.p50),
        us(l.p90),
        us(l.p99),
        us(l.p999),
        us(l.max),
        l.count
    );
    // The summary's fairness is over the largest group of like tasks (a benchmark's workers),
    // as `RunResult::fairness` is computed; the label says which.
    let group = lbsim_workload::report::largest_group(r.tasks.iter().map(|t| &*t.group));
    let n = r.tasks.iter().filter(|t| Some(&*t.group) == group).count();
    let _ = writeln!(
        s,
        "work fairness, {n} {} tasks: min/max {:.2}%  Jain {:.4}",
        group.unwrap_or("-"),
        r.fairness.min_max_ratio * 100.0,
        r.fairness.jain
    );
    // Runs with task groups: each group's share of the tasks' CPU time.
    for g in &r.task_groups {
        let _ = writeln!(
            s,
            "task group {:<14} {:>5} tasks  {:>12.3} ms on a CPU  {:>6.2}%",
            g.cgroup,
            g.tasks,
            g.runtime_ns as f64 / 1e6,
            g.share * 100.0
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<24} {:>4} {:>12} {:>12} {:>12} {:>6} {:>8}",
        "task", "cpu", "runtime_ms", "work_ms", "wait_ms", "migr", "switches"
    );
    for t in &r.tasks {
        let _ = writeln!(
            s,
            "{:<24} {:>4} {:>12.3} {:>12.3} {:>12.3} {:>6} {:>8}",
            t.name,
            t.cpu,
            t.runtime_ns as f64 / 1e6,
            t.work_ns as f64 / 1e6,
            t.wait_ns as f64 / 1e6,
            t.nr_migrations,
            t.nr_switches
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "{:>4} {:>8} {:>14}", "cpu", "busy%", "avg_nr_running");
    for c in &r.cpus {
        let total = (c.busy_ns + c.idle_ns).max(1);
        let _ = writeln!(
            s,
            "{:>4} {:>7.2}% {:>14.3}",
            c.cpu,
            c.busy_ns as f64 * 100.0 / total as f64,
            c.avg_nr_running
        );
    }
    for rep in reports {
        let _ = writeln!(s);
        let _ = writeln!(s, "== {} ==", rep.workload);
        s.push_str(&rep.text);
        if !rep.text.ends_with('\n') {
            s.push('\n');
        }
    }
    s
}

/// `lbsim run --format json`: the run's totals and tables, and each workload's report.
#[derive(Debug, Serialize)]
pub struct RunJson<'a> {
    /// Simulated time covered.
    pub sim_time_ns: u64,
    /// Task migrations.
    pub migrations: u64,
    /// Context switches of the workload's tasks.
    pub context_switches: u64,
    /// Time some CPU sat idle while another had a waiting task allowed on it.
    pub idle_while_overloaded_ns: u64,
    /// Wake-up latencies, in microseconds.
    pub wakeup_latency_us: LatencyUs,
    /// Fairness of work done over the largest group.
    pub fairness: FairnessJson,
    /// Fairness per group.
    pub groups: &'a [GroupFairness],
    /// CPU time per task group (absent without task groups).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub task_groups: &'a [lbsim_sim::engine::TaskGroupShare],
    /// Per task.
    pub tasks: &'a [TaskResult],
    /// Per CPU.
    pub cpus: &'a [CpuResult],
    /// Events processed.
    pub events: u64,
    /// The event-stream hash, 16 hex digits.
    pub event_hash: String,
    /// /proc/schedstat at the end, if the policy keeps it.
    pub schedstat: Option<&'a str>,
    /// One per `--workload`.
    pub reports: &'a [Report],
}

/// Wake-up latency percentiles of [`RunJson`], in microseconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LatencyUs {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// Wake-ups.
    pub count: u64,
}

/// Fairness of [`RunJson`].
#[derive(Clone, Copy, Debug, Serialize)]
pub struct FairnessJson {
    /// Least over greatest work done.
    pub min_max_ratio: f64,
    /// Jain's index.
    pub jain: f64,
}

impl<'a> RunJson<'a> {
    /// The JSON report of run `r` with its workloads' `reports`.
    pub fn of(r: &'a RunResult, reports: &'a [Report]) -> RunJson<'a> {
        let l = &r.wakeup_latency;
        RunJson {
            sim_time_ns: r.sim_time_ns,
            migrations: r.migrations,
            context_switches: r.context_switches,
            idle_while_overloaded_ns: r.idle_while_overloaded_ns,
            wakeup_latency_us: LatencyUs {
                p50: us(l.p50),
                p90: us(l.p90),
                p99: us(l.p99),
                p999: us(l.p999),
                max: us(l.max),
                count: l.count,
            },
            fairness: FairnessJson {
                min_max_ratio: r.fairness.min_max_ratio,
                jain: r.fairness.jain,
            },
            groups: &r.groups,
            task_groups: &r.task_groups,
            tasks: &r.tasks,
            cpus: &r.cpus,
            events: r.events,
            event_hash: format!("{:016x}", r.event_hash),
            schedstat: r.schedstat.as_deref(),
            reports,
        }
    }
}
