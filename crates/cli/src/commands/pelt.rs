//! `lbsim pelt`: the PELT signals of one task on one otherwise idle CPU.
//!
//! The task follows a run/sleep pattern from time 0; its entity's `sched_avg`
//! is printed at every step from 0 to the duration inclusive, right after the
//! update at that instant (see `lbsim_pelt::simulate`), one [`Row`] per step. CSV (default)
//! has a header line; JSON is an array of objects with the same keys, one per line. `util_est`
//! is the task's estimate without the UTIL_AVG_UNCHANGED flag.

use std::io::{self, BufWriter};

use anyhow::{Context as _, anyhow};
use lbsim_pelt::{Pattern, Sample, SimConfig, parse_duration_ns, simulate};
use serde::Serialize;

use crate::format::{Format, write_csv};

/// One output row: the entity's `sched_avg` at one instant (fields in column order).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Row {
    /// The instant.
    pub time_ns: u64,
    /// `util_avg`.
    pub util_avg: u64,
    /// `runnable_avg`.
    pub runnable_avg: u64,
    /// `load_avg`.
    pub load_avg: u64,
    /// `util_sum`.
    pub util_sum: u64,
    /// `runnable_sum`.
    pub runnable_sum: u64,
    /// `load_sum`.
    pub load_sum: u64,
    /// `period_contrib`.
    pub period_contrib: u64,
    /// `util_est` (without UTIL_AVG_UNCHANGED).
    pub util_est: u64,
}

impl Row {
    fn of(s: &Sample) -> Row {
        let a = &s.avg;
        Row {
            time_ns: s.time_ns,
            util_avg: a.util_avg,
            runnable_avg: a.runnable_avg,
            load_avg: a.load_avg,
            util_sum: u64::from(a.util_sum),
            runnable_sum: a.runnable_sum,
            load_sum: a.load_sum,
            period_contrib: u64::from(a.period_contrib),
            util_est: u64::from(s.util_est()),
        }
    }
}

/// Arguments of `lbsim pelt`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `always`, or a comma-separated cycle of `run=DUR` and `sleep=DUR` items
    /// repeated until the end (`run=4ms,sleep=12ms`). Durations take ns, us, ms, s.
    #[arg(long, value_name = "PATTERN")]
    pub pattern: String,

    /// Simulated time: rows are printed from 0 to this instant inclusive.
    #[arg(long, value_name = "D")]
    pub duration: String,

    /// Time between rows.
    #[arg(long, value_name = "D", default_value = "1ms")]
    pub step: String,

    /// The task's weight (se_weight; 1024 is nice 0).
    #[arg(long, value_name = "W", default_value = "1024")]
    pub weight: String,

    /// The CPU's capacity (arch_scale_cpu_capacity), 1 to 1024.
    #[arg(long, value_name = "C", default_value = "1024")]
    pub capacity: String,

    /// Output format: csv or json (the shared `--format`; this table has no text form).
    #[arg(long, value_name = "FORMAT", default_value = "csv")]
    pub format: String,

    /// Start as a newly forked task (the kernel's new-task initialisation on
    /// an idle CPU) instead of a task whose history has fully decayed.
    #[arg(long)]
    pub new_task: bool,
}

fn parse_u64(flag: &str, text: &str) -> anyhow::Result<u64> {
    text.trim()
        .parse()
        .map_err(|_| anyhow!("{flag} `{text}`: expected a whole number"))
}

fn config(args: &Args) -> anyhow::Result<(SimConfig, Format)> {
    let pattern: Pattern = args
        .pattern
        .parse()
        .with_context(|| format!("--pattern `{}`", args.pattern))?;
    let duration_ns = parse_duration_ns(&args.duration)
        .with_context(|| format!("--duration `{}`", args.duration))?;
    let step_ns =
        parse_duration_ns(&args.step).with_context(|| format!("--step `{}`", args.step))?;
    let weight = parse_u64("--weight", &args.weight)?;
    let cpu_capacity = parse_u64("--capacity", &args.capacity)?;
    let format = Format::one_of(&args.format, &[Format::Csv, Format::Json])?;
    let cfg = SimConfig {
        pattern,
        duration_ns,
        step_ns,
        weight,
        cpu_capacity,
        new_task: args.new_task,
    };
    cfg.validate().map_err(|e| match e {
        lbsim_pelt::PeltError::ZeroStep => anyhow!("--step `{}`: {e}", args.step),
        lbsim_pelt::PeltError::WeightOutOfRange { .. } => anyhow!("--weight: {e}"),
        lbsim_pelt::PeltError::CapacityOutOfRange { .. } => anyhow!("--capacity: {e}"),
        other => anyhow!(other),
    })?;
    Ok((cfg, format))
}

fn write_rows(
    out: &mut impl io::Write,
    rows: impl Iterator<Item = Row>,
    format: Format,
) -> io::Result<()> {
    match format {
        // `one_of` lets only csv and json through: the table is its own text.
        Format::Csv | Format::Text | Format::Markdown | Format::Mmtests | Format::Lkp => {
            write_csv(out, rows)?
        }
        Format::Json => {
            writeln!(out, "[")?;
            for (i, r) in rows.enumerate() {
                if i > 0 {
                    writeln!(out, ",")?;
                }
                write!(out, "{}", serde_json::to_string(&r)?)?;
            }
            writeln!(out, "\n]")?;
        }
    }
    out.flush()
}

/// Runs `lbsim pelt`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let (cfg, format) = config(args)?;
    let samples = simulate(&cfg)?;
    let mut out = BufWriter::new(io::stdout().lock());
    // A closed pipe (`| head`) ends the output, it is not an error.
    crate::stdout::finish(write_rows(&mut out, samples.map(|s| Row::of(&s)), format))
}
