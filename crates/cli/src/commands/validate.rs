//! `lbsim validate`: a scenario run N times for real on this machine's kernel (lbsim-real)
//! and N times in simulation on the same machine (`--topology host`) with the kernel profile
//! nearest to `uname -r`; per metric, both sides' mean and stddev, the difference, and
//! whether Welch's t-test finds the two distributions different.

use std::path::Path;

use anyhow::{Context as _, bail};
use lbsim_balance::schedstat::SchedstatVersion;
use lbsim_sim::engine::{Sim, SimConfig};
use lbsim_sim::experiment::{Control, MetricComparison, run_jobs};
use lbsim_sim::profile::Profile;
use lbsim_workload::{ProbeTag, RunObservations, WorkloadSpec, parse_workloads_within};
use serde::Serialize;

use crate::balancer::{BalancerKind, make_balancer};
use crate::commands::compare::{ProgressBar, columns, fmt_change, fmt_mean_sd, jobs, print};
use crate::format::{Format, TextOrJson, json_pretty};
use crate::scenario::{Scenario, ScenarioFile};

/// The 1-minute load average above which the real side is refused without `--force`: half a
/// CPU busy on average over the last minute, whatever the machine's size. lbsim itself is not
/// running yet when it is read (it is read once, before the first real run, since validate's
/// own runs raise it).
pub const MAX_LOAD_1MIN: f64 = 0.5;

/// How long each run lasts by default (real and simulated).
const DEFAULT_DURATION_NS: u64 = 2_000_000_000;

/// Arguments of `lbsim validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A built-in scenario (`--list` names them) or a scenario file (TOML: its `workloads`,
    /// `duration` and `cost`; the machine is always this one) [default: every built-in scenario].
    #[arg(value_name = "SCENARIO")]
    pub scenario: Option<String>,
    /// Runs per side.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub runs: u32,
    /// How long each run lasts, real and simulated (`2s`, `500ms`) [default: 2s, or the
    /// scenario file's].
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// The kernel profile of the simulated side [default: the one nearest to `uname -r`].
    #[arg(long, value_name = "VERSION")]
    pub kernel: Option<String>,
    /// A cost profile for the simulated side (`lbsim calibrate -o FILE`): its `[cost]`
    /// values replace the cost model's defaults [default: a scenario file's `cost`, else
    /// lbsim's defaults].
    #[arg(long, value_name = "FILE")]
    pub cost: Option<std::path::PathBuf>,
    /// Run the real side even when /proc/loadavg shows other work.
    #[arg(long)]
    pub force: bool,
    /// List the built-in scenarios, sized to this machine, and exit.
    #[arg(long)]
    pub list: bool,
    /// Worker threads of the simulated side [default: the available parallelism].
    #[arg(long, value_name = "J")]
    pub jobs: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The runs' resource budget.
    #[command(flatten)]
    pub budget: crate::budget::Budget,
}

/// One scenario to validate: workloads, and the CPU each initial task is pinned to (none:
/// the workload's own affinity).
#[derive(Clone, Debug)]
struct Plan {
    name: String,
    about: String,
    workloads: Vec<String>,
    pins: Vec<u32>,
    duration_ns: Option<u64>,
    /// A scenario file's `cost` profile.
    cost: Option<crate::scenario::CostFile>,
}

/// The built-in scenarios for a machine whose usable CPUs are `cpus`.
fn builtins(cpus: &[u32]) -> Vec<Plan> {
    let n = cpus.len();
    let a = cpus[0];
    let b = cpus.get(1).copied();
    let plan = |name: &str, about: String, wl: String, pins: Vec<u32>| Plan {
        name: name.to_owned(),
        about,
        workloads: vec![wl],
        pins,
        duration_ns: None,
        cost: None,
    };
    let mut v = vec![
        plan(
            "spinners-n+1",
            format!("{} spinners on {n} CPUs", n + 1),
            format!("busy:threads={}", n + 1),
            Vec::new(),
        ),
        plan(
            "spinners-2n",
            format!("{} spinners on {n} CPUs", 2 * n),
            format!("busy:threads={}", 2 * n),
            Vec::new(),
        ),
    ];
    if let Some(b) = b {
        v.push(plan(
            "pingpong-pinned",
            format!(
                "a ping-pong pair pinned to CPUs {a} and {b} (futex wake-ups, 2 us of work a turn)"
            ),
            format!("pingpong:cpus={a},{b}"),
            Vec::new(),
        ));
    }
    v.push(plan(
        "periodic-25pct",
        format!("{n} periodic tasks, 1 ms of work every 4 ms (25% each)"),
        format!("periodic:threads={n},run=1ms,period=4ms"),
        Vec::new(),
    ));
    let pipe = "pipe:loops=1000000000".to_owned();
    if let Some(b) = b {
        v.push(plan(
            "pipe-across",
            format!("perf bench sched pipe's pair pinned to CPUs {a} and {b}"),
            pipe.clone(),
            vec![a, b],
        ));
    }
    v.push(plan(
        "pipe-within",
        format!("perf bench sched pipe's pair both pinned to CPU {a}"),
        pipe,
        vec![a, a],
    ));
    v
}

/// One metric of one run, either side.
type Sample = (&'static str, &'static str, bool, f64);

/// The metrics of one run, real or simulated, from what it observed: fairness of
/// `sum_exec_runtime`, CPU use, migrations, switches, waits, and the programs' own
/// round trips and wake-up latencies where they record them.
fn metrics(obs: &RunObservations, nr_cpus: usize) -> Vec<Sample> {
    let tasks: Vec<_> = obs
        .tasks
        .iter()
        .filter(|t| t.created_ns.is_some())
        .collect();
    let secs = (obs.sim_time_ns as f64 / 1e9).max(1e-9);
    let run: Vec<f64> = tasks.iter().map(|t| t.runtime_ns as f64).collect();
    let sum: f64 = run.iter().sum();
    let sq: f64 = run.iter().map(|x| x * x).sum();
    let (lo, hi) = run
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    let n = tasks.len().max(1) as f64;
    let total = |f: &dyn Fn(&lbsim_workload::TaskObservation) -> u64| {
        tasks.iter().map(|t| f(t) as f64).sum::<f64>()
    };
    let mut out: Vec<Sample> = vec![
        (
            "runtime_min_max",
            "ratio",
            true,
            if hi > 0.0 { lo / hi } else { 1.0 },
        ),
        (
            "runtime_jain",
            "index",
            true,
            if sq > 0.0 { sum * sum / (n * sq) } else { 1.0 },
        ),
        (
            "cpu_busy",
            "%",
            true,
            sum / (secs * 1e9 * nr_cpus as f64) * 100.0,
        ),
        (
            "migrations",
            "/s",
            false,
            total(&|t| t.nr_migrations) / secs,
        ),
        ("switches", "/s", false, total(&|t| t.nr_switches()) / secs),
        (
            "involuntary_switches",
            "/s",
            false,
            total(&|t| t.nr_involuntary_switches) / secs,
        ),
        (
            "wait",
            "ms/s a task",
            false,
            total(&|t| t.wait_ns) / 1e6 / secs / n,
        ),
    ];
    let wakeups: Vec<f64> = obs
        .probes
        .iter()
        .filter(|p| p.tag == ProbeTag::Wakeup)
        .map(|p| p.value as f64)
        .collect();
    if !wakeups.is_empty() {
        out.push(("wakeups", "/s", true, wakeups.len() as f64 / secs));
        out.push((
            "wakeup_latency",
            "us",
            false,
            wakeups.iter().sum::<f64>() / wakeups.len() as f64 / 1e3,
        ));
    }
    let tally: u64 = obs
        .probes
        .iter()
        .filter(|p| p.tag == ProbeTag::TallyCount)
        .map(|p| p.value)
        .sum();
    if tally > 0 {
        out.push(("round_trips", "/s", true, tally as f64 / secs));
    }
    out
}

/// The balancer counters of one run, real or simulated, as rates: the machine-wide sums of
/// /proc/schedstat's counters over the run ([`lbsim_real::schedstat::Snapshot::totals`]: every
/// CPU, domain and idle type), per second of the run.
fn schedstat_metrics(counted: &lbsim_real::schedstat::Snapshot, secs: f64) -> Vec<Sample> {
    let secs = secs.max(1e-9);
    counted
        .totals()
        .into_iter()
        .map(|(name, n)| (name, "/s", false, n as f64 / secs))
        .collect()
}

/// Whether a metric is one of /proc/schedstat's (see [`schedstat_metrics`]).
fn is_schedstat_metric(name: &str) -> bool {
    lbsim_real::schedstat::Snapshot::default()
        .totals()
        .iter()
        .any(|(n, _)| *n == name)
}

/// What this kernel offers of /proc/schedstat, as the real column says it where it has no
/// counters: `None` when they count.
fn schedstat_absence() -> Option<String> {
    use lbsim_real::schedstat::Availability;
    match lbsim_real::schedstat::read() {
        Ok(Availability::Counting(_)) => None,
        Ok(Availability::Absent) => Some("absent on this kernel".to_owned()),
        Ok(Availability::Off) => Some("off on this kernel (sched_schedstats=0)".to_owned()),
        Err(_) => Some("unreadable on this kernel".to_owned()),
    }
}

/// The plan's workload, with its initial tasks pinned as it says.
fn workload(plan: &Plan, args: &Args) -> anyhow::Result<WorkloadSpec> {
    let mut spec = parse_workloads_within(&plan.workloads, args.budget.workload_limits())
        .map_err(crate::budget::Budget::workload_error)?;
    for (i, &cpu) in plan.pins.iter().enumerate() {
        let set = spec.add_cpuset(vec![cpu]);
        spec.tasks[i].affinity = Some(set);
    }
    Ok(spec)
}

/// The validated metrics of one scenario.
#[derive(Debug, Serialize)]
struct ScenarioJson {
    name: String,
    about: String,
    workloads: Vec<String>,
    /// Each initial task's CPU, where the scenario pins them.
    pinned: Vec<u32>,
    /// The share of the machine's CPU time that other work (other processes, the
    /// hypervisor's steal) took during each real run, percent (`/proc/stat`).
    other_work_pct: SideJson,
    metrics: Vec<MetricJson>,
}

#[derive(Debug, Serialize)]
struct SideJson {
    mean: f64,
    stddev: f64,
    values: Vec<f64>,
}

#[derive(Debug, Serialize)]
struct MetricJson {
    name: String,
    unit: String,
    /// The real runs' values; `null` where this kernel does not show the metric (see
    /// `real_absent`).
    real: Option<SideJson>,
    /// Why the real side has no values (a /proc/schedstat counter on a kernel without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    real_absent: Option<String>,
    /// The simulated runs' values; `null` where the simulated balancer keeps no such
    /// counter.
    lbsim: Option<SideJson>,
    /// `(lbsim - real) / real`, percent; `null` without both sides.
    diff_pct: Option<f64>,
    /// Welch's two-sided p-value.
    p_value: Option<f64>,
    /// `p_value < 0.05`.
    significant: bool,
}

/// The whole report.
#[derive(Debug, Serialize)]
struct ValidateJson {
    kernel_release: String,
    profile: String,
    /// The cost profile of the simulated side (`--cost`), if one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_profile: Option<String>,
    /// Its `[cost]` values, ns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cost: Vec<(String, u64)>,
    nr_cpus: usize,
    runs: u32,
    duration_ns: u64,
    load_1min: f64,
    forced: bool,
    /// What this kernel did not show, one line each.
    kernel_lacks: Vec<String>,
    scenarios: Vec<ScenarioJson>,
}

fn side(s: &lbsim_sim::experiment::SideStats) -> SideJson {
    SideJson {
        mean: s.mean,
        stddev: s.stddev,
        values: s.values.clone(),
    }
}

/// Runs `lbsim validate`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = args.format.text_or_json("validate")?;
    let cpus = lbsim_real::allowed_cpus().context("sched_getaffinity")?;
    if cpus.is_empty() {
        bail!("this process may run on no CPU");
    }
    let all = builtins(&cpus);
    if args.list {
        let rows: Vec<Vec<String>> = all
            .iter()
            .map(|p| vec![p.name.clone(), p.workloads.join(" "), p.about.clone()])
            .collect();
        return print(&columns(&rows, "lll"));
    }
    if args.runs < 2 {
        bail!("--runs must be at least 2 (Welch's test needs two runs a side)");
    }
    let plans: Vec<Plan> = match &args.scenario {
        None => all,
        Some(s) => match all.iter().find(|p| &p.name == s) {
            Some(p) => vec![p.clone()],
            None if Path::new(s).is_file() => {
                let f = ScenarioFile::load(Path::new(s), &args.budget)?;
                let workloads = f
                    .workloads
                    .with_context(|| format!("scenario `{s}`: no `workloads`"))?;
                vec![Plan {
                    name: s.clone(),
                    about: f.description.unwrap_or_default(),
                    workloads,
                    pins: Vec::new(),
                    duration_ns: f.duration_ns,
                    cost: f.cost,
                }]
            }
            None => bail!(
                "no scenario `{s}`: give a scenario file or one of {}",
                all.iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    };
    let duration_ns = match &args.duration {
        Some(d) => lbsim_pelt::parse_duration_ns(d).with_context(|| format!("--duration `{d}`"))?,
        None => plans[0].duration_ns.unwrap_or(DEFAULT_DURATION_NS),
    };
    if duration_ns == 0 {
        bail!("--duration must be greater than 0");
    }
    let release = lbsim_real::kernel_release().context("/proc/sys/kernel/osrelease")?;
    let profile = match &args.kernel {
        Some(k) => crate::scenario::kernel_profile(Some(k))?.expect("a profile was given"),
        None => {
            let (a, b) = lbsim_real::release_version(&release)
                .with_context(|| format!("kernel release `{release}`: no version in it"))?;
            Profile::nearest(a, b)
        }
    };
    let profile_name = profile.version().to_string();
    let cost = match args.cost.as_deref() {
        Some(p) => Some(crate::scenario::CostFile::load(p).context("--cost")?),
        None => plans[0].cost.clone(),
    };
    // Build every side first, so that a bad scenario fails before anything runs.
    let mut built = Vec::new();
    for p in &plans {
        let spec = workload(p, args)?;
        let mut cfg = Scenario {
            topology: "host".to_owned(),
            workloads: p.workloads.clone(),
            features: Vec::new(),
            sets: Vec::new(),
            duration_ns: Some(duration_ns),
            budget: args.budget,
            kernel: Some(profile_name.clone()),
            cgroups: Vec::new(),
            autogroups: Vec::new(),
            cost: cost.clone(),
        }
        .build()
        .with_context(|| format!("scenario `{}`", p.name))?
        .config;
        cfg.workload = spec.clone();
        lbsim_real::check::check_spec(&spec, &cpus)
            .with_context(|| format!("scenario `{}`", p.name))?;
        built.push((spec, cfg));
    }
    let load = lbsim_real::load_average_1min().context("/proc/loadavg")?;
    if load > MAX_LOAD_1MIN && !args.force {
        bail!(
            "/proc/loadavg's 1-minute load is {load:.2}, above {MAX_LOAD_1MIN}: other work would skew the real runs; wait for it to settle or give --force"
        );
    }
    let jobs = jobs(args.jobs)?;
    let schedstat_absent = schedstat_absence();
    let mut lacks = std::collections::BTreeSet::new();
    let mut scenarios = Vec::new();
    for (p, (spec, cfg)) in plans.iter().zip(&built) {
        let bar = ProgressBar::new(&format!("validate {} (real)", p.name));
        let mut real = Vec::new();
        let mut other = Vec::new();
        for i in 0..args.runs {
            bar.update(i as usize, args.runs as usize);
            let r = lbsim_real::run(
                spec,
                lbsim_real::RunOptions {
                    duration_ns,
                    seed: u64::from(i) + 1,
                },
            )
            .with_context(|| format!("scenario `{}`", p.name))?;
            lacks.extend(r.lacks.iter().cloned());
            if let Some((busy, total)) = r.machine_cpu_ns {
                let ours: u64 = r.observations.tasks.iter().map(|t| t.runtime_ns).sum();
                other.push(busy.saturating_sub(ours) as f64 / total.max(1) as f64 * 100.0);
            }
            let mut m = metrics(&r.observations, cpus.len());
            if let Some(counted) = &r.schedstat {
                m.extend(schedstat_metrics(
                    counted,
                    r.observations.sim_time_ns as f64 / 1e9,
                ));
            }
            real.push(m);
        }
        bar.finish();
        let bar = ProgressBar::new(&format!("validate {} (lbsim)", p.name));
        let progress = |done: usize, total: usize| bar.update(done, total);
        let ctl = Control {
            jobs,
            stop: None,
            progress: Some(&progress),
        };
        let seeds: Vec<u64> = (1..=u64::from(args.runs)).collect();
        let nr_cpus = cfg.topology.nr_cpus();
        let sim = run_jobs(&seeds, &ctl, |&seed| simulate(cfg, seed, nr_cpus));
        bar.finish();
        let mut simulated = Vec::new();
        for r in sim.into_iter().flatten() {
            simulated.push(r.with_context(|| format!("scenario `{}`", p.name))?);
        }
        scenarios.push(ScenarioJson {
            name: p.name.clone(),
            about: p.about.clone(),
            workloads: p.workloads.clone(),
            pinned: p.pins.clone(),
            other_work_pct: side(&lbsim_sim::experiment::SideStats::of(other)),
            metrics: compare(&real, &simulated, schedstat_absent.as_deref()),
        });
    }
    let report = ValidateJson {
        kernel_release: release,
        profile: profile_name,
        cost_profile: cost.as_ref().map(|c| c.path.clone()),
        cost: cost
            .iter()
            .flat_map(|c| c.values.values.iter())
            .map(|&(k, v)| (k.to_owned(), v))
            .collect(),
        nr_cpus: cpus.len(),
        runs: args.runs,
        duration_ns,
        load_1min: load,
        forced: args.force && load > MAX_LOAD_1MIN,
        kernel_lacks: lacks.into_iter().collect(),
        scenarios,
    };
    let text = match format {
        TextOrJson::Json => json_pretty(&report)?,
        TextOrJson::Text => text_report(&report),
    };
    print(&text)
}

fn simulate(cfg: &SimConfig, seed: u64, nr_cpus: usize) -> anyhow::Result<Vec<Sample>> {
    let mut cfg = cfg.clone();
    cfg.seed = seed;
    let b = make_balancer(BalancerKind::Kernel, &cfg);
    let topo = cfg.topology.clone();
    let version = cfg.kernel.map_or(SchedstatVersion::default(), |(a, b)| {
        SchedstatVersion::of_kernel(a, b)
    });
    let result = Sim::new(cfg, b)?.run()?;
    let mut m = metrics(&result.observations, nr_cpus);
    // The counters start at zero, so the end's text is what the run counted; it is read back
    // through the parser the real side uses, so that both sides' figures are one function's.
    if let Some((counters, jiffies)) = &result.schedstat_counters {
        let text = counters.format_version(&topo, *jiffies, version);
        let counted = lbsim_real::schedstat::parse(&text)
            .context("lbsim's own /proc/schedstat text (a bug)")?;
        m.extend(schedstat_metrics(
            &counted,
            result.observations.sim_time_ns as f64 / 1e9,
        ));
    }
    Ok(m)
}

/// Real against simulated, metric by metric, through the statistics `lbsim compare` uses
/// (real as the base side). A /proc/schedstat metric the real runs did not count is shown
/// with `schedstat_absent` as its real side (never as zeros), and without a difference.
fn compare(
    real: &[Vec<Sample>],
    sim: &[Vec<Sample>],
    schedstat_absent: Option<&str>,
) -> Vec<MetricJson> {
    let Some(first) = real.first().or(sim.first()) else {
        return Vec::new();
    };
    let values = |runs: &[Vec<Sample>], name: &str| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| r.iter().find(|m| m.0 == name).map(|m| m.3))
            .collect()
    };
    let mut names: Vec<&Sample> = first.iter().collect();
    for m in sim.iter().flatten() {
        if !names.iter().any(|n| n.0 == m.0) {
            names.push(m);
        }
    }
    names
        .into_iter()
        .map(|&(name, unit, hib, _)| {
            let (r, l) = (values(real, name), values(sim, name));
            let both = !r.is_empty() && !l.is_empty();
            let real_absent = (r.is_empty() && is_schedstat_metric(name)).then(|| {
                schedstat_absent
                    .unwrap_or("not counted in these runs")
                    .to_owned()
            });
            let c = MetricComparison::new(name, unit, hib, r, l);
            MetricJson {
                name: name.to_owned(),
                unit: unit.to_owned(),
                real: (!c.base.values.is_empty()).then(|| side(&c.base)),
                real_absent,
                lbsim: (!c.patched.values.is_empty()).then(|| side(&c.patched)),
                diff_pct: both.then_some(c.change_pct),
                p_value: c.p_value.filter(|_| both),
                significant: both && c.significant,
            }
        })
        .collect()
}

fn text_report(r: &ValidateJson) -> String {
    let mut s = format!(
        "validate: Linux {} on this machine ({} CPUs) against lbsim's v{} profile on `--topology host`\n\
         runs: {} a side, {} s each; 1-minute load before the real runs: {:.2}{}\n",
        r.kernel_release,
        r.nr_cpus,
        r.profile,
        r.runs,
        r.duration_ns as f64 / 1e9,
        r.load_1min,
        if r.forced {
            " (above 0.5: --force)"
        } else {
            ""
        }
    );
    if let Some(p) = &r.cost_profile {
        let v: Vec<String> = r.cost.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push_str(&format!(
            "cost model of the lbsim side: {p} ({})\n",
            v.join(", ")
        ));
    }
    for l in &r.kernel_lacks {
        s.push_str(&format!("this kernel lacks: {l}\n"));
    }
    for sc in &r.scenarios {
        let about = if sc.about.is_empty() {
            String::new()
        } else {
            format!(" {}", sc.about)
        };
        s.push_str(&format!(
            "\n{}:{about} ({})\n",
            sc.name,
            sc.workloads.join(" ")
        ));
        if !sc.other_work_pct.values.is_empty() {
            s.push_str(&format!(
                "other work on the CPUs during the real runs: {}% (/proc/stat)\n",
                fmt_mean_sd(sc.other_work_pct.mean, sc.other_work_pct.stddev)
            ));
        }
        let mut rows = vec![vec![
            "metric".to_owned(),
            "unit".to_owned(),
            "real".to_owned(),
            "lbsim".to_owned(),
            "diff".to_owned(),
            String::new(),
        ]];
        for m in &sc.metrics {
            let cell = |s: &Option<SideJson>, absent: &str| {
                s.as_ref()
                    .map_or(absent.to_owned(), |s| fmt_mean_sd(s.mean, s.stddev))
            };
            rows.push(vec![
                m.name.clone(),
                m.unit.clone(),
                cell(&m.real, m.real_absent.as_deref().unwrap_or("-")),
                cell(&m.lbsim, "not kept"),
                m.diff_pct.map_or("-".to_owned(), fmt_change),
                if m.significant { "* differ" } else { "" }.to_owned(),
            ]);
        }
        s.push_str(&columns(&rows, "llrrrl"));
    }
    s.push_str(
        "\nmean (+/- sample stddev) over the runs; diff = (lbsim - real) / real;\n\
         * differ = the two distributions differ by Welch's two-sample t-test (two-sided, p < 0.05).\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbsim_workload::{ProbeRecord, TaskObservation, TaskRef};

    fn task(runtime_ns: u64, migrations: u64) -> TaskObservation {
        TaskObservation {
            name: "t".into(),
            part: 0,
            group: "g".into(),
            created_ns: Some(0),
            exited_ns: None,
            runtime_ns,
            work_ns: runtime_ns,
            wait_ns: 0,
            max_wait_ns: 0,
            nr_waits: 0,
            final_wait_ns: 0,
            nr_voluntary_switches: 3,
            nr_involuntary_switches: 1,
            nr_migrations: migrations,
            last_cpu: None,
        }
    }

    fn value(m: &[Sample], name: &str) -> f64 {
        m.iter().find(|s| s.0 == name).map(|s| s.3).unwrap()
    }

    #[test]
    fn metrics_of_one_run() {
        let obs = RunObservations {
            sim_time_ns: 1_000_000_000,
            tasks: vec![task(1_000_000_000, 2), task(500_000_000, 0)],
            probes: vec![ProbeRecord {
                task: TaskRef(0),
                time_ns: 1,
                tag: ProbeTag::Wakeup,
                value: 4_000,
            }]
            .into(),
            wakeups: Default::default(),
        };
        let m = metrics(&obs, 2);
        assert_eq!(value(&m, "runtime_min_max"), 0.5);
        // (1.5)^2 / (2 * (1 + 0.25)).
        assert!((value(&m, "runtime_jain") - 0.9).abs() < 1e-12);
        assert_eq!(value(&m, "cpu_busy"), 75.0);
        assert_eq!(value(&m, "migrations"), 2.0);
        assert_eq!(value(&m, "switches"), 8.0);
        assert_eq!(value(&m, "involuntary_switches"), 2.0);
        assert_eq!(value(&m, "wakeups"), 1.0);
        assert_eq!(value(&m, "wakeup_latency"), 4.0);
        assert!(m.iter().all(|s| s.0 != "round_trips"));
    }

    /// A /proc/schedstat counter the real side lacks is shown as absent, not as zeros, and
    /// gets no difference or test; where both sides count it, it is compared like any metric.
    #[test]
    fn schedstat_rows_say_absent_on_a_kernel_without_them() {
        let base: Vec<Sample> = vec![("migrations", "/s", false, 2.0)];
        let with = |lb: f64| {
            let mut v = base.clone();
            v.push(("lb_count", "/s", false, lb));
            v
        };
        let sim = vec![with(40.0), with(42.0)];
        let m = compare(
            &[base.clone(), base.clone()],
            &sim,
            Some("absent on this kernel"),
        );
        let lb = m.iter().find(|m| m.name == "lb_count").unwrap();
        assert!(lb.real.is_none());
        assert_eq!(lb.real_absent.as_deref(), Some("absent on this kernel"));
        assert_eq!(lb.lbsim.as_ref().map(|s| s.mean), Some(41.0));
        assert_eq!(
            (lb.diff_pct, lb.p_value, lb.significant),
            (None, None, false)
        );
        // Not a schedstat metric: no absence note.
        assert!(
            m.iter()
                .all(|m| m.name == "lb_count" || m.real_absent.is_none())
        );
        let report = ValidateJson {
            kernel_release: "6.18".into(),
            profile: "6.12".into(),
            cost_profile: None,
            cost: Vec::new(),
            nr_cpus: 2,
            runs: 2,
            duration_ns: 1,
            load_1min: 0.0,
            forced: false,
            kernel_lacks: Vec::new(),
            scenarios: vec![ScenarioJson {
                name: "s".into(),
                about: String::new(),
                workloads: Vec::new(),
                pinned: Vec::new(),
                other_work_pct: side(&lbsim_sim::experiment::SideStats::of(Vec::new())),
                metrics: m,
            }],
        };
        let text = text_report(&report);
        let row = text.lines().find(|l| l.starts_with("lb_count")).unwrap();
        assert!(
            row.contains("absent on this kernel") && row.contains("41.00"),
            "{row}"
        );
        assert!(!row.contains("differ"), "{row}");
        // Both sides counting: a difference.
        let real = vec![with(20.0), with(22.0)];
        let m = compare(&real, &sim, None);
        let lb = m.iter().find(|m| m.name == "lb_count").unwrap();
        assert_eq!(lb.real.as_ref().map(|s| s.mean), Some(21.0));
        assert!(lb.real_absent.is_none());
        assert!((lb.diff_pct.unwrap() - 100.0 * 20.0 / 21.0).abs() < 1e-9);
    }

    #[test]
    fn builtins_fit_the_machine() {
        let names =
            |cpus: &[u32]| -> Vec<String> { builtins(cpus).into_iter().map(|p| p.name).collect() };
        // One CPU: no pair across CPUs.
        assert_eq!(
            names(&[0]),
            [
                "spinners-n+1",
                "spinners-2n",
                "periodic-25pct",
                "pipe-within"
            ]
        );
        let b = builtins(&[2, 5, 7]);
        assert_eq!(b[0].workloads, ["busy:threads=4"]);
        assert_eq!(b[2].workloads, ["pingpong:cpus=2,5"]);
        assert_eq!(
            b.iter().find(|p| p.name == "pipe-across").unwrap().pins,
            [2, 5]
        );
    }
}
