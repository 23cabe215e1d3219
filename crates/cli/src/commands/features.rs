//! `lbsim features`: the sched features line as `/sys/kernel/debug/sched/features` prints it,
//! then every tunable with its value: kernel tunables, sd_init() inputs and the sched domains
//! they give, the cost model and the engine's own tunables. `--features` and `--set` are
//! applied first, so a user sees what a run with them would use.

use anyhow::Context as _;
use lbsim_topology::{CpuId, Topology, parse_machine};

use crate::commands::compare::{columns, print};
use crate::scenario::Settings;

/// Arguments of `lbsim features`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The machine: the slice tunables scale with its CPU count, and its sched domains show
    /// what sd_init() makes of imbalance_pct and busy_factor.
    #[arg(long, value_name = "SPEC", default_value = "hikey")]
    pub topology: String,
    /// Sched features to switch (`NO_X,Y`), and tunables (`imbalance_pct=125`); repeatable.
    #[arg(long = "features", value_name = "LIST")]
    pub features: Vec<String>,
    /// Set a tunable by its name (`migration_cost_ns=250000`); repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
}

/// Runs `lbsim features`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    print(&report(args)?)
}

/// The text `lbsim features` prints.
pub fn report(args: &Args) -> anyhow::Result<String> {
    let machine =
        parse_machine(&args.topology).with_context(|| format!("--topology `{}`", args.topology))?;
    let nr_cpus = machine.nr_cpus();
    let s = Settings::new(nr_cpus as u32, &args.features, &args.sets)?;
    let topo = Topology::build(&machine, &s.sd)
        .with_context(|| format!("--topology `{}`", args.topology))?;

    let mut out = s.features.debugfs_text();
    let section = |out: &mut String, title: &str, rows: Vec<Vec<String>>| {
        out.push_str(&format!("\n# {title}\n"));
        out.push_str(&columns(&rows, "ll"));
    };
    let pairs = |entries: &[(&str, u64)]| -> Vec<Vec<String>> {
        entries
            .iter()
            .map(|(n, v)| vec![(*n).to_owned(), v.to_string()])
            .collect()
    };
    let kernel: Vec<Vec<String>> = lbsim_rq::TUNABLE_NAMES
        .iter()
        .map(|&n| {
            let v = s.tunables.get(n).expect("every listed tunable has a value");
            vec![n.to_owned(), v]
        })
        .collect();
    section(
        &mut out,
        &format!("kernel tunables (/sys/kernel/debug/sched/, {nr_cpus} CPUs)"),
        kernel,
    );
    section(
        &mut out,
        "sd_init() inputs",
        pairs(&[
            ("imbalance_pct", u64::from(s.sd.imbalance_pct)),
            ("busy_factor", u64::from(s.sd.busy_factor)),
        ]),
    );
    let mut domains = vec![vec![
        "domain".to_owned(),
        "name".to_owned(),
        "imbalance_pct".to_owned(),
        "busy_factor".to_owned(),
        "min_interval".to_owned(),
        "max_interval".to_owned(),
        "cache_nice_tries".to_owned(),
    ]];
    for sd in topo.domains(CpuId(0)) {
        domains.push(vec![
            format!("cpu0/domain{}", sd.level),
            sd.name.as_str().to_owned(),
            sd.imbalance_pct.to_string(),
            sd.busy_factor.to_string(),
            sd.min_interval.to_string(),
            sd.max_interval.to_string(),
            sd.cache_nice_tries.to_string(),
        ]);
    }
    section(
        &mut out,
        &format!(
            "sched domains of CPU 0 (/sys/kernel/debug/sched/domains/, `{}`)",
            args.topology
        ),
        domains,
    );
    section(
        &mut out,
        "cost model (simulated ns per unit of scheduler work)",
        pairs(&s.cost.entries()),
    );
    section(&mut out, "engine tunables", pairs(&s.engine.entries()));
    Ok(out)
}
