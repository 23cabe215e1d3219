//! `lbsim pelt`: the PELT signals of one task on one otherwise idle CPU.
//!
//! The task follows a run/sleep pattern from time 0; its entity's `sched_avg`
//! is printed at every step from 0 to the duration inclusive, right after the
//! update at that instant (see `lbsim_pelt::simulate`). CSV (default) has a
//! header line; JSON is an array of objects with the same keys. `util_est` is
//! the task's estimate without the UTIL_AVG_UNCHANGED flag.

use std::io::{self, BufWriter};

use anyhow::{Context as _, anyhow};
use lbsim_pelt::{Pattern, Sample, SimConfig, parse_duration_ns, simulate};

/// The output columns, in order.
const COLUMNS: [&str; 9] = [
    "time_ns",
    "util_avg",
    "runnable_avg",
    "load_avg",
    "util_sum",
    "runnable_sum",
    "load_sum",
    "period_contrib",
    "util_est",
];

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

    /// Output format: csv or json.
    #[arg(long, value_name = "FORMAT", default_value = "csv")]
    pub format: String,

    /// Start as a newly forked task (the kernel's new-task initialisation on
    /// an idle CPU) instead of a task whose history has fully decayed.
    #[arg(long)]
    pub new_task: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Csv,
    Json,
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
    let format = match args.format.trim() {
        "csv" => Format::Csv,
        "json" => Format::Json,
        other => return Err(anyhow!("--format `{other}`: expected csv or json")),
    };
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

fn values(s: &Sample) -> [u64; 9] {
    let a = &s.avg;
    [
        s.time_ns,
        a.util_avg,
        a.runnable_avg,
        a.load_avg,
        u64::from(a.util_sum),
        a.runnable_sum,
        a.load_sum,
        u64::from(a.period_contrib),
        u64::from(s.util_est()),
    ]
}

fn write_rows(
    out: &mut impl io::Write,
    samples: impl Iterator<Item = Sample>,
    format: Format,
) -> io::Result<()> {
    match format {
        Format::Csv => {
            writeln!(out, "{}", COLUMNS.join(","))?;
            for s in samples {
                let v = values(&s).map(|x| x.to_string());
                writeln!(out, "{}", v.join(","))?;
            }
        }
        Format::Json => {
            writeln!(out, "[")?;
            for (i, s) in samples.enumerate() {
                if i > 0 {
                    writeln!(out, ",")?;
                }
                let fields: Vec<String> = COLUMNS
                    .iter()
                    .zip(values(&s))
                    .map(|(k, v)| format!("\"{k}\":{v}"))
                    .collect();
                write!(out, "{{{}}}", fields.join(","))?;
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
    match write_rows(&mut out, samples, format) {
        // A closed pipe (`| head`) ends the output, it is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing the output"),
    }
}
