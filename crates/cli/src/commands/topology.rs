//! `lbsim topology SPEC`: build a machine's sched domains and print them.
//!
//! Text output (default): per CPU, the debugfs domain files and the
//! sched_domain_debug() lines (see `lbsim_topology::dump`). `--format json`
//! prints `{"cpus": N, "domains": [...]}`. `--list` prints the presets. A machine read from
//! a real one (`host`, `sysfs:DIR`, `lscpu:FILE`) is preceded by what was found and what
//! was assumed (`# found: ...`, `# assumed: ...` lines; in JSON, `source`).

use std::fmt::Write as _;

use anyhow::Context as _;
use lbsim_topology::{Cpumask, SdParams, Topology, TopologyDump, dump, presets};

use crate::format::{Format, TextOrJson};

/// Arguments of `lbsim topology`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Machine spec: a CPU count (`8`), a key=value list (`sockets=2,cores=4`),
    /// a preset name (see --list), a TOML/JSON file path, or a real machine: `host`,
    /// `sysfs:DIR`, `lscpu:FILE`.
    pub spec: Option<String>,

    /// List the presets and exit.
    #[arg(long)]
    pub list: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Set an sd_init() input: `imbalance_pct=125`, `busy_factor=32` (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,

    /// sd_init()'s initial imbalance_pct (default 117; applies to PKG, NODE and NUMA levels).
    #[arg(long, value_name = "PCT")]
    pub imbalance_pct: Option<u32>,

    /// sd_init()'s busy_factor (default 16).
    #[arg(long, value_name = "N")]
    pub busy_factor: Option<u32>,

    /// Only print these CPUs (a cpulist such as `0,5-7`).
    #[arg(long, value_name = "CPULIST")]
    pub cpus: Option<String>,

    /// The machine's resource budget.
    #[command(flatten)]
    pub budget: crate::budget::MachineBudget,
}

/// Runs `lbsim topology`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let format = args.format.text_or_json("topology")?;
    if args.list {
        let width = presets().iter().map(|p| p.name.len()).max().unwrap_or(0);
        let mut text = String::new();
        for p in presets() {
            let _ = writeln!(text, "{:width$}  {}", p.name, p.description);
            let _ = writeln!(text, "{:width$}  = {}", "", p.spec);
        }
        return crate::stdout::print(&text);
    }
    let Some(spec) = &args.spec else {
        anyhow::bail!(
            "topology: a machine spec is needed (a CPU count, key=value list, preset or file; `lbsim topology --list` shows the presets)"
        );
    };
    let mut params = SdParams::default();
    for s in &args.set {
        params.set_assignment(s).context("--set")?;
    }
    if let Some(v) = args.imbalance_pct {
        params.set_imbalance_pct(v).context("--imbalance-pct")?;
    }
    if let Some(v) = args.busy_factor {
        params.set_busy_factor(v).context("--busy-factor")?;
    }
    let resolved = crate::host::resolve(spec, &args.budget)?;
    let machine = resolved.machine;
    args.budget.check("topology", spec, &machine)?;
    let topo = Topology::build(&machine, &params)?;
    let cpus = match &args.cpus {
        // A cpulist may be empty (the empty set), but a filter that prints no CPU only ever
        // printed nothing and exited 0, hiding a mistyped or unset variable (`--cpus=$X`).
        Some(list) if list.trim().is_empty() => anyhow::bail!(
            "--cpus: the CPU list is empty (give CPUs such as `0,5-7`, or leave --cpus out for every CPU)"
        ),
        Some(list) => Cpumask::parse_cpulist(list, topo.nr_cpus()).context("--cpus")?,
        None => Cpumask::full(topo.nr_cpus()),
    };
    let source = resolved.probed.map(|p| Source {
        spec: spec.clone(),
        found: p.found,
        assumed: p.assumed,
    });
    let text = match format {
        // Serialised field by field in declaration order (`{"cpus": N, "domains": [...]}`).
        TextOrJson::Json => match source {
            None => TopologyDump::new(&topo, &cpus).to_json(),
            Some(source) => {
                let mut s = serde_json::to_string_pretty(&WithSource {
                    source,
                    dump: TopologyDump::new(&topo, &cpus),
                })?;
                s.push('\n');
                s
            }
        },
        TextOrJson::Text => {
            let mut text = String::new();
            if let Some(s) = &source {
                let _ = writeln!(text, "# machine `{}`", s.spec);
                for f in &s.found {
                    let _ = writeln!(text, "# found: {f}");
                }
                for a in &s.assumed {
                    let _ = writeln!(text, "# assumed: {a}");
                }
                text.push('\n');
            }
            text.push_str(&dump::debugfs_text(&topo, &cpus));
            text
        }
    };
    // `lbsim topology big | head` closes the pipe early: not an error.
    crate::stdout::print(&text)
}

/// Where a machine read from a real one came from.
#[derive(Debug, serde::Serialize)]
struct Source {
    /// The spec given (`host`, `sysfs:DIR`, `lscpu:FILE`).
    spec: String,
    /// What was read.
    found: Vec<String>,
    /// What was assumed.
    assumed: Vec<String>,
}

/// `--format json` of a machine read from a real one: `source`, then the dump's fields.
#[derive(Debug, serde::Serialize)]
struct WithSource {
    source: Source,
    #[serde(flatten)]
    dump: TopologyDump,
}
