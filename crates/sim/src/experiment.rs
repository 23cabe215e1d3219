//! Experiments: one scenario over many seeds, and A/B comparisons of two configurations over
//! the same seeds, run in parallel.
//!
//! A run is fully determined by its [`SimConfig`] and seed, so runs are independent jobs:
//! [`run_jobs`] hands them to `J` worker threads (`std::thread::scope`) and returns the
//! results in job order, whatever `J` and whatever order the threads finish in. Nothing here
//! reads the host; the caller chooses `J` and may pass a stop flag (Ctrl-C) and a progress
//! callback.
//!
//! Each run is reduced to named [`Metric`]s as soon as it ends ([`run_metrics`]): the
//! workload reports' own numbers plus the scheduler-side measures every run has (migrations,
//! context switches, wake-up latency p50/p99, fairness of work done, idle-while-overloaded
//! time). [`compare`] summarises two sides metric by metric with [`crate::stats`] (mean,
//! sample standard deviation, change in percent, Welch's t-test).

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use lbsim_balance::ctx::Balancer;
use lbsim_workload::{CutShort, Metric, WorkloadSpec};

use crate::engine::{RunResult, Sim, SimConfig, SimError};
use crate::stats;

/// Builds a fresh balancer for a run of `cfg` (called on the worker thread that runs it).
pub type BalancerFactory<'a> = dyn Fn(&SimConfig) -> Box<dyn Balancer> + Sync + 'a;

/// The scheduler-side metrics every run has, by name: `(name, unit, higher_is_better)`.
///
/// They are prefixed `sched.` so that they never collide with a workload report's names
/// (schbench and pingpong report their own `wakeup_latency_p50`, measured their own way).
pub const SCHED_METRICS: [(&str, &str, bool); 7] = [
    ("sched.migrations", "count", false),
    ("sched.context_switches", "count", false),
    ("sched.wakeup_latency_p50", "us", false),
    ("sched.wakeup_latency_p99", "us", false),
    ("sched.fairness_min_max", "ratio", true),
    ("sched.fairness_jain", "ratio", true),
    ("sched.idle_while_overloaded", "ms", false),
];

/// The metrics every workload report carries for its own tasks (see the workload crate's
/// reports). With a single workload they equal the `sched.` totals, so [`run_metrics`] leaves
/// them out.
const COMMON_REPORT_METRICS: [&str; 4] = [
    "cpu_migrations",
    "context_switches",
    "work_min_max_ratio",
    "work_jain_index",
];

/// What one run left behind: its seed, its metrics and its event-stream fingerprint.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutput {
    /// The seed of the run.
    pub seed: u64,
    /// The run's metrics, workload reports' first, then the `sched.` ones.
    pub metrics: Vec<Metric>,
    /// Events processed.
    pub events: u64,
    /// [`RunResult::event_hash`]: equal hashes mean identical runs.
    pub event_hash: u64,
    /// The parts of the workload that the run's `duration_ns` stopped before they were done
    /// ([`WorkloadSpec::cut_short`]).
    pub cut_short: Vec<CutShort>,
}

impl RunOutput {
    /// The value of metric `name`, if the run has it.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }
}

/// Why an experiment failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExperimentError {
    /// One run failed (a bad configuration, or an invariant broke under `check`).
    #[error("{label}seed {seed}: {source}")]
    Run {
        /// Which side or point the run belonged to, followed by `": "`, or empty.
        label: String,
        /// The run's seed.
        seed: u64,
        /// What went wrong.
        source: SimError,
    },
}

/// How to run a batch of jobs: worker threads, a stop flag, a progress callback.
#[derive(Clone, Copy, Default)]
pub struct Control<'a> {
    /// Worker threads (0 is taken as 1). Results do not depend on it.
    pub jobs: usize,
    /// When set (by a Ctrl-C handler, say), no further job starts; running jobs finish.
    pub stop: Option<&'a AtomicBool>,
    /// Called after each job with `(finished, total)`; called from worker threads.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
}

impl fmt::Debug for Control<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Control")
            .field("jobs", &self.jobs)
            .field("stop", &self.stop)
            .field("progress", &self.progress.map(|_| "callback"))
            .finish()
    }
}

impl Control<'_> {
    fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

/// Runs `f` on every job on `ctl.jobs` threads and returns the results in job order; a job
/// that did not start because `ctl.stop` was set gives `None`.
///
/// Workers take the next unstarted job from a shared counter, so the assignment of jobs to
/// threads varies, but each result lands in its job's slot: the output depends only on the
/// jobs and `f`.
pub fn run_jobs<J, T, F>(jobs: &[J], ctl: &Control<'_>, f: F) -> Vec<Option<T>>
where
    J: Sync,
    T: Send,
    F: Fn(&J) -> T + Sync,
{
    let total = jobs.len();
    let slots: Mutex<Vec<Option<T>>> = Mutex::new((0..total).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let worker = || {
        loop {
            if ctl.stopped() {
                break;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= total {
                break;
            }
            let r = f(&jobs[i]);
            slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
            if let Some(p) = ctl.progress {
                p(finished, total);
            }
        }
    };
    let threads = ctl.jobs.clamp(1, total.max(1));
    if threads == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(worker);
            }
        });
    }
    slots.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// One simulation: `cfg` with `seed`, reduced to its metrics.
pub fn run_one(
    cfg: &SimConfig,
    seed: u64,
    balancer: &BalancerFactory<'_>,
) -> Result<RunOutput, SimError> {
    let mut cfg = cfg.clone();
    cfg.seed = seed;
    let b = balancer(&cfg);
    let spec = cfg.workload.clone();
    let limit_ns = cfg.duration_ns;
    let result = Sim::new(cfg, b)?.run()?;
    Ok(RunOutput {
        seed,
        metrics: run_metrics(&result, &spec),
        events: result.events,
        event_hash: result.event_hash,
        cut_short: spec.cut_short(&result.observations, limit_ns),
    })
}

/// The metrics of one run: each workload report's metrics (named as the report names them
/// when there is one workload; `KIND.name` with the workload's kind, the text before its
/// first `:`, when there are several, and `KIND#i.name` when a kind repeats), then
/// [`SCHED_METRICS`].
pub fn run_metrics(result: &RunResult, spec: &WorkloadSpec) -> Vec<Metric> {
    let reports = spec.reports(&result.observations);
    let mut out = Vec::new();
    let single = reports.len() == 1;
    let kinds: Vec<&str> = reports
        .iter()
        .map(|r| r.workload.split(':').next().unwrap_or(""))
        .collect();
    for (i, rep) in reports.iter().enumerate() {
        let kind = kinds[i];
        let prefix = if single {
            String::new()
        } else if kinds.iter().filter(|&&k| k == kind).count() > 1 {
            format!("{kind}#{i}.")
        } else {
            format!("{kind}.")
        };
        for m in &rep.metrics {
            if single && COMMON_REPORT_METRICS.contains(&m.name.as_str()) {
                continue;
            }
            out.push(Metric {
                name: format!("{prefix}{}", m.name),
                ..m.clone()
            });
        }
    }
    let l = &result.wakeup_latency;
    let values = [
        result.migrations as f64,
        result.context_switches as f64,
        l.p50 as f64 / 1e3,
        l.p99 as f64 / 1e3,
        result.fairness.min_max_ratio,
        result.fairness.jain,
        result.idle_while_overloaded_ns as f64 / 1e6,
    ];
    for ((name, unit, hib), v) in SCHED_METRICS.iter().zip(values) {
        out.push(Metric::new(name, unit, v, *hib));
    }
    out
}

/// Runs `cfg` once per seed; outputs in seed order, `None` for runs not started because of
/// a stop.
///
/// # Errors
/// The first failed run, in seed order.
pub fn run_seeds(
    cfg: &SimConfig,
    seeds: &[u64],
    balancer: &BalancerFactory<'_>,
    ctl: &Control<'_>,
) -> Result<Vec<Option<RunOutput>>, ExperimentError> {
    let jobs: Vec<u64> = seeds.to_vec();
    let results = run_jobs(&jobs, ctl, |&seed| run_one(cfg, seed, balancer));
    collect("", seeds, results)
}

fn collect(
    label: &str,
    seeds: &[u64],
    results: Vec<Option<Result<RunOutput, SimError>>>,
) -> Result<Vec<Option<RunOutput>>, ExperimentError> {
    results
        .into_iter()
        .zip(seeds)
        .map(|(r, &seed)| {
            r.transpose().map_err(|source| ExperimentError::Run {
                label: label.to_owned(),
                seed,
                source,
            })
        })
        .collect()
}

/// The runs of an A/B comparison: the seeds both sides completed, in seed order.
#[derive(Clone, Debug, PartialEq)]
pub struct AbRuns {
    /// Base side, one output per completed seed.
    pub base: Vec<RunOutput>,
    /// Patched side, same seeds in the same order.
    pub patched: Vec<RunOutput>,
    /// Seeds asked for.
    pub planned: usize,
}

impl AbRuns {
    /// Whether some seeds did not complete on both sides (a stop).
    pub fn interrupted(&self) -> bool {
        self.base.len() < self.planned
    }
}

/// Runs `base` and `patched` over the same `seeds`. Jobs alternate sides seed by seed
/// (`base s1, patched s1, base s2, ...`), so a stop leaves complete pairs; only seeds that
/// completed on both sides are kept.
///
/// # Errors
/// The first failed run, in job order, labelled `base` or `patched`.
pub fn run_ab(
    base: &SimConfig,
    patched: &SimConfig,
    seeds: &[u64],
    balancer: &BalancerFactory<'_>,
    ctl: &Control<'_>,
) -> Result<AbRuns, ExperimentError> {
    let jobs: Vec<(bool, u64)> = seeds
        .iter()
        .flat_map(|&s| [(false, s), (true, s)])
        .collect();
    let results = run_jobs(&jobs, ctl, |&(is_patched, seed)| {
        run_one(if is_patched { patched } else { base }, seed, balancer)
    });
    let mut out = AbRuns {
        base: Vec::new(),
        patched: Vec::new(),
        planned: seeds.len(),
    };
    let mut it = results.into_iter().zip(&jobs);
    while let (Some((b, &(_, seed))), Some((p, _))) = (it.next(), it.next()) {
        let err = |label: &str, source| ExperimentError::Run {
            label: format!("{label}: "),
            seed,
            source,
        };
        let b = b.transpose().map_err(|e| err("base", e))?;
        let p = p.transpose().map_err(|e| err("patched", e))?;
        if let (Some(b), Some(p)) = (b, p) {
            out.base.push(b);
            out.patched.push(p);
        }
    }
    Ok(out)
}

/// One side's values of a metric and their summary.
#[derive(Clone, Debug, PartialEq)]
pub struct SideStats {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// The values, one per run, in seed order.
    pub values: Vec<f64>,
}

impl SideStats {
    /// Summarises `values`.
    pub fn of(values: Vec<f64>) -> SideStats {
        let s = stats::summary(&values);
        SideStats {
            mean: s.mean,
            stddev: s.stddev,
            values,
        }
    }

    fn summary(&self) -> stats::Summary {
        stats::Summary {
            n: self.values.len(),
            mean: self.mean,
            stddev: self.stddev,
        }
    }

    /// The smallest value (`None` without values).
    pub fn min(&self) -> Option<f64> {
        self.values.iter().copied().reduce(f64::min)
    }

    /// The largest value (`None` without values).
    pub fn max(&self) -> Option<f64> {
        self.values.iter().copied().reduce(f64::max)
    }
}

/// One metric, base against patched.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricComparison {
    /// The metric's name.
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// Whether a larger value is an improvement.
    pub higher_is_better: bool,
    /// The base side.
    pub base: SideStats,
    /// The patched side.
    pub patched: SideStats,
    /// `(patched - base) / base` in percent ([`stats::change_pct`]).
    pub change_pct: f64,
    /// Welch's two-sided p-value (`None` with fewer than two runs a side).
    pub p_value: Option<f64>,
    /// `p_value < 0.05`.
    pub significant: bool,
}

impl MetricComparison {
    /// Summarises two sides' values of one metric.
    pub fn new(
        name: &str,
        unit: &str,
        higher_is_better: bool,
        base: Vec<f64>,
        patched: Vec<f64>,
    ) -> MetricComparison {
        let base = SideStats::of(base);
        let patched = SideStats::of(patched);
        let p_value = stats::welch_p_value(&base.summary(), &patched.summary());
        MetricComparison {
            name: name.to_owned(),
            unit: unit.to_owned(),
            higher_is_better,
            change_pct: stats::change_pct(base.mean, patched.mean),
            p_value,
            significant: p_value.is_some_and(|p| p < 0.05),
            base,
            patched,
        }
    }

    /// Whether the change is an improvement (`None` when there is no change).
    pub fn improved(&self) -> Option<bool> {
        if self.patched.mean == self.base.mean {
            None
        } else {
            Some((self.patched.mean > self.base.mean) == self.higher_is_better)
        }
    }
}

/// Base against patched, metric by metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Runs per side.
    pub runs: usize,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
    /// One entry per metric, in the order the runs report them.
    pub metrics: Vec<MetricComparison>,
}

/// Compares two sides' runs metric by metric. Metrics are listed in the order of the first
/// run that has them; a metric missing from some run is summarised over the runs that have it.
pub fn compare(base: &[RunOutput], patched: &[RunOutput]) -> Comparison {
    let mut names: Vec<(&str, &str, bool)> = Vec::new();
    for m in base.iter().chain(patched).flat_map(|r| &r.metrics) {
        if !names.iter().any(|(n, _, _)| *n == m.name) {
            names.push((&m.name, &m.unit, m.higher_is_better));
        }
    }
    let values =
        |runs: &[RunOutput], name: &str| runs.iter().filter_map(|r| r.metric(name)).collect();
    Comparison {
        runs: base.len().min(patched.len()),
        seeds: base.iter().map(|r| r.seed).collect(),
        metrics: names
            .into_iter()
            .map(|(name, unit, hib)| {
                MetricComparison::new(name, unit, hib, values(base, name), values(patched, name))
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
