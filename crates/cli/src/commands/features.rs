//! `lbsim features`: the sched features line as `/sys/kernel/debug/sched/features` prints it,
//! then every tunable with its value: kernel tunables, sd_init() inputs and the sched domains
//! they give, the cost model and the engine's own tunables. `--features` and `--set` are
//! applied first, so a user sees what a run with them would use.
//!
//! Everything listed comes from the parameter registry (`lbsim_sim::params::REGISTRY`):
//! `--format json` lists every parameter with its kind, unit, default, range, doc, owner,
//! origin and current value; `--format markdown` is `docs/parameters.md` (regenerate it with
//! `cargo xtask params`; a test fails when the committed file is stale).

use anyhow::Context as _;
use lbsim_kernel::params::{DefaultValue, Kind, Owner, ParamDef, ParamInfo};
use lbsim_sim::params::{REGISTRY, Settings};
use lbsim_topology::{CpuId, Topology};
use serde::Serialize;

use crate::commands::compare::{columns, print};
use crate::format::Format;

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
    /// A kernel release's profile (`4.18`, `5.9`, `6.12`): the features line is that
    /// release's sched_features file (its features.h, with `--features` applied), followed by
    /// lbsim's switches as the release has them, and the values are the release's.
    #[arg(long, value_name = "VERSION")]
    pub kernel: Option<String>,
    /// Output format: `text`, `json` (every parameter with its declaration and value), or
    /// `markdown` (the table of `docs/parameters.md`, defaults only).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs `lbsim features`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    print(&report(args)?)
}

/// One parameter in `lbsim features --format json`: its declaration and its value.
#[derive(Debug, Serialize)]
struct Entry {
    #[serde(flatten)]
    info: ParamInfo,
    /// The value with `--features` and `--set` applied, for the `--topology` machine.
    value: DefaultValue,
}

/// `lbsim features --format json`.
#[derive(Debug, Serialize)]
struct JsonReport {
    /// The machine the values are for.
    topology: String,
    /// Every parameter, features in debugfs order, then the others in declaration order.
    parameters: Vec<Entry>,
}

/// Every parameter: the features in `/sys/kernel/debug/sched/features` order, then the
/// parameters that take a value, in declaration order.
fn all_params() -> Vec<&'static ParamDef> {
    let mut out: Vec<&'static ParamDef> = REGISTRY.features().into_iter().map(|(d, _)| d).collect();
    out.extend(REGISTRY.iter().filter(|d| d.feature().is_none()));
    out
}

/// The parameters that take a value, grouped by owner in declaration order.
fn value_sections() -> Vec<(Owner, Vec<&'static ParamDef>)> {
    let mut out: Vec<(Owner, Vec<&'static ParamDef>)> = Vec::new();
    for d in REGISTRY.iter().filter(|d| d.feature().is_none()) {
        match out.iter_mut().find(|(o, _)| *o == d.owner) {
            Some((_, list)) => list.push(d),
            None => out.push((d.owner, vec![d])),
        }
    }
    out
}

/// The text `lbsim features` prints.
pub fn report(args: &Args) -> anyhow::Result<String> {
    if args.format == Format::Csv {
        anyhow::bail!(
            "--format csv: `lbsim features` prints no single table (use text, json or markdown)"
        );
    }
    if args.format == Format::Markdown {
        return Ok(markdown());
    }
    let machine = crate::host::machine(&args.topology, &crate::budget::MachineBudget::default())
        .with_context(|| format!("--topology `{}`", args.topology))?;
    let nr_cpus = machine.nr_cpus();
    let profile = crate::scenario::kernel_profile(args.kernel.as_deref())?;
    let s = crate::scenario::settings_for(profile, nr_cpus as u32, &args.features, &args.sets)?;
    if args.format == Format::Json {
        let parameters = all_params()
            .into_iter()
            .map(|d| Entry {
                info: d.info(),
                value: value_of(&s, d),
            })
            .collect();
        let report = JsonReport {
            topology: args.topology.clone(),
            parameters,
        };
        let mut out = serde_json::to_string_pretty(&report).context("JSON")?;
        out.push('\n');
        return Ok(out);
    }
    let topo = Topology::build(&machine, &s.sd)
        .with_context(|| format!("--topology `{}`", args.topology))?;

    let mut out = match profile {
        None => REGISTRY.debugfs_text(s.features),
        Some(p) => kernel_features_text(p, &s),
    };
    let section = |out: &mut String, title: &str, rows: Vec<Vec<String>>| {
        out.push_str(&format!("\n# {title}\n"));
        out.push_str(&columns(&rows, "ll"));
    };
    for (owner, defs) in value_sections() {
        let rows = defs
            .iter()
            .map(|d| {
                let v = s.get(d.name).expect("every declared parameter has a value");
                vec![d.name.to_owned(), v]
            })
            .collect();
        let title = match owner {
            Owner::Rq => format!("kernel tunables (/sys/kernel/debug/sched/, {nr_cpus} CPUs)"),
            Owner::Topology => "sd_init() inputs".to_owned(),
            Owner::CostModel => "cost model (simulated ns per unit of scheduler work)".to_owned(),
            Owner::Engine => "engine tunables".to_owned(),
            other => format!("{} tunables", other.name()),
        };
        section(&mut out, &title, rows);
        if owner == Owner::Topology {
            section(
                &mut out,
                &format!(
                    "sched domains of CPU 0 (/sys/kernel/debug/sched/domains/, `{}`)",
                    args.topology
                ),
                domain_rows(&topo),
            );
        }
    }
    Ok(out)
}

/// The value of `d` in `s`, typed as JSON shows it.
fn value_of(s: &Settings, d: &ParamDef) -> DefaultValue {
    let text = s.get(d.name).expect("every declared parameter has a value");
    match d.kind {
        Kind::Feature(_) => DefaultValue::Bool(text == "1"),
        Kind::Int(_) => DefaultValue::Int(text.parse().expect("an integer prints as one")),
        Kind::Choice(_) => DefaultValue::Text(text),
    }
}

/// CPU 0's sched domains and what sd_init() made of its inputs.
fn domain_rows(topo: &Topology) -> Vec<Vec<String>> {
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
    domains
}

/// A Markdown table cell: pipes escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// `docs/parameters.md`: every parameter's declaration, features first.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Parameters\n\n\
         <!-- Generated by `cargo xtask params` (`lbsim features --format markdown`) from the \
         parameter registry; do not edit. -->\n\n\
         Every parameter lbsim takes, declared once by the layer that reads it \
         (`lbsim_kernel::params`, assembled in `lbsim_sim::params::REGISTRY`). Sched features \
         are switched with `--features NAME,NO_NAME`; the others are set with \
         `--set NAME=VALUE` or a scenario file's `[tunables]`. `lbsim features` shows a \
         machine's values, `lbsim features --format json` the same with every declaration.\n\n\
         ## Sched features\n\n\
         In `/sys/kernel/debug/sched/features` order. A feature that is not modelled is \
         accepted and listed but changes nothing; the invariant suite flips every modelled \
         one.\n\n\
         | name | default | modelled | owner | origin | doc |\n\
         |---|---|---|---|---|---|\n",
    );
    for (d, f) in REGISTRY.features() {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            d.name,
            if f.default { "on" } else { "off" },
            if f.modelled { "yes" } else { "no" },
            d.owner.name(),
            cell(&d.origin.describe()),
            cell(d.doc()),
        ));
    }
    out.push_str(
        "\n## Tunables and model knobs\n\n\
         | name | default | range | owner | origin | doc |\n\
         |---|---|---|---|---|---|\n",
    );
    for d in REGISTRY.iter().filter(|d| d.feature().is_none()) {
        let info = d.info();
        let default = match &info.default {
            DefaultValue::Bool(b) => b.to_string(),
            DefaultValue::Int(v) => v.to_string(),
            DefaultValue::Text(t) => t.clone(),
        };
        let range = info.range.or(info.values).unwrap_or_default();
        let mut name = format!("`{}`", d.name);
        for a in d.aliases {
            name.push_str(&format!(" (`{a}`)"));
        }
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} |\n",
            cell(&default),
            cell(&range),
            d.owner.name(),
            cell(&d.origin.describe()),
            cell(d.doc()),
        ));
    }
    out
}

/// The features line of kernel profile `p`: the release's features.h entries as its
/// `sched_features` file lists them (a name followed by a space, `NO_` before the disabled
/// ones), with the values of `s` for the entries lbsim's registry has, then a line of
/// lbsim's switches for later changes (`# lbsim switches: ...`).
fn kernel_features_text(p: lbsim_sim::profile::Profile, s: &Settings) -> String {
    let mut out = String::new();
    for (name, default) in p.features_h() {
        let on = REGISTRY
            .feature(name)
            .map_or(default, |(_, f)| s.features.enabled(f.bit));
        if !on {
            out.push_str("NO_");
        }
        out.push_str(name);
        out.push(' ');
    }
    out.push('\n');
    let switches: Vec<String> = REGISTRY
        .features()
        .into_iter()
        .filter(|(d, _)| matches!(d.origin, lbsim_kernel::params::Origin::LbsimSwitch { .. }))
        .map(|(d, f)| {
            let prefix = if s.features.enabled(f.bit) { "" } else { "NO_" };
            format!("{prefix}{}", d.name)
        })
        .collect();
    out.push_str(&format!(
        "# lbsim switches (v{}): {}\n",
        p.version(),
        switches.join(" ")
    ));
    out
}

#[cfg(test)]
mod tests {
    /// Rule: the committed `docs/parameters.md` is what the registry generates
    /// (regenerate with `cargo xtask params`, or `UPDATE_EXPECT=1 cargo test -p lbsim`).
    #[test]
    fn docs_parameters_md_is_current() {
        expect_test::expect_file!["../../../../docs/parameters.md"].assert_eq(&super::markdown());
    }
}
