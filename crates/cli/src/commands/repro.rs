//! `lbsim repro`: the five seed experiments of EXPERIMENTS.md, base against patched over many
//! seeds, each printed as a table of the seed's reported numbers beside lbsim's.

use std::io::IsTerminal as _;

use anyhow::bail;
use lbsim_sim::engine::SimConfig;
use lbsim_sim::experiment::Control;

use crate::balancer::{BalancerKind, make_balancer};
use crate::commands::compare::{ProgressBar, interrupt_flag, jobs, print};
use crate::format::{Format, TextOrJson, json_pretty};
use crate::repro::{self, LEGEND};

/// Seeds a side at each point when `--runs` is not given: all five experiments then take
/// under two minutes on two cores in a release build (`--runs 20`: about three and a half).
pub const DEFAULT_RUNS: u32 = 10;

/// Arguments of `lbsim repro`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Experiments to run (util-spread, fairness, newidle-bailout, tip-avg-high,
    /// prefer-sibling); all five when none is named.
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Seeds a side at each parameter point.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RUNS)]
    pub runs: u32,
    /// The first seed; the runs use seeds SEED, SEED+1, ... on both sides.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads [default: the available parallelism]. Results do not depend on it.
    #[arg(long, value_name = "J")]
    pub jobs: Option<usize>,
    /// The balancer policy.
    #[arg(long, value_enum, default_value_t = BalancerKind::default())]
    pub balancer: BalancerKind,
    /// List the experiments and exit.
    #[arg(long)]
    pub list: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also draw every row's reported numbers beside lbsim's as an SVG figure in FILE.svg
    /// (`docs/plots.md`). FILE must not exist yet (see --force); it appears whole or not at
    /// all.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// Overwrite the --plot file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Runs `lbsim repro`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = args.format.text_or_json("repro")?;
    let all = repro::defs::all();
    if args.list {
        let rows: Vec<Vec<String>> = all
            .iter()
            .map(|e| {
                vec![
                    e.name.to_owned(),
                    format!("seed {}: {}", &e.seed_file[..3], e.title),
                ]
            })
            .collect();
        return print(&crate::commands::compare::columns(&rows, "ll"));
    }
    let valid: Vec<&str> = all.iter().map(|e| e.name).collect();
    for n in &args.names {
        if !valid.contains(&n.as_str()) {
            bail!("unknown experiment `{n}` (valid: {})", valid.join(", "));
        }
    }
    let chosen: Vec<_> = all
        .into_iter()
        .filter(|e| args.names.is_empty() || args.names.iter().any(|n| n == e.name))
        .collect();
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let plot = crate::plot::plot_file(args.plot.as_deref(), args.force)?;
    let seeds: Vec<u64> = (0..u64::from(args.runs))
        .map(|i| args.seed.checked_add(i))
        .collect::<Option<_>>()
        .ok_or_else(|| anyhow::anyhow!("--seed: the seeds overflow u64"))?;
    let stop = interrupt_flag();
    let bar = ProgressBar::new("repro");
    let progress = |done: usize, total: usize| bar.update(done, total);
    let ctl = Control {
        jobs: jobs(args.jobs)?,
        stop: Some(stop),
        progress: Some(&progress),
    };
    let kind = args.balancer;
    let factory = move |cfg: &SimConfig| make_balancer(kind, cfg);
    let planned = chosen.len();
    let outcomes = if format == TextOrJson::Text && !std::io::stdout().is_terminal() {
        // A log or a pipe: each experiment runs on its own and is printed when it is done,
        // so that a long job shows its results as they come. (On a terminal all jobs run
        // interleaved, seed by seed, under one progress bar, and print at the end.)
        let mut done = Vec::new();
        for exp in chosen {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                // Interrupted: the experiments not started are left out of the report.
                break;
            }
            let o = repro::run(vec![exp], &seeds, &factory, &ctl)?;
            for o in &o {
                print(&(repro::text(o) + "\n"))?;
            }
            done.extend(o);
        }
        bar.finish();
        print(LEGEND)?;
        if done.len() < planned {
            eprintln!(
                "lbsim: interrupted: {} of {planned} experiments run",
                done.len()
            );
        }
        done
    } else {
        let outcomes = repro::run(chosen, &seeds, &factory, &ctl);
        bar.finish();
        let outcomes = outcomes?;
        let text = match format {
            TextOrJson::Json => json_pretty(&repro::ReproJson::of(&outcomes))?,
            TextOrJson::Text => {
                let mut s = String::new();
                for o in &outcomes {
                    s.push_str(&repro::text(o));
                    s.push('\n');
                }
                s.push_str(LEGEND);
                s
            }
        };
        print(&text)?;
        outcomes
    };
    if let Some(file) = &plot {
        crate::plot::repro::write(file, &repro::ReproJson::of(&outcomes))?;
    }
    let finished = outcomes
        .iter()
        .flat_map(|o| o.points.iter().map(|c| c.runs))
        .min()
        .unwrap_or(0);
    if finished < seeds.len() || outcomes.len() < planned {
        eprintln!(
            "lbsim: interrupted: at least {finished} of {} seeds finished at every point",
            seeds.len()
        );
        std::process::exit(130);
    }
    Ok(())
}
