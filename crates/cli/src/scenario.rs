//! What a run is made of, from flags (and later scenario files): machine, workloads, features,
//! tunables, duration, seed; and how it turns into an engine configuration.

use std::sync::Arc;

use anyhow::{Context as _, bail};
use lbsim_balance::cost::CostModel;
use lbsim_rq::{Features, TUNABLE_NAMES, Tunables};
use lbsim_sim::engine::{EngineTunables, SimConfig};
use lbsim_topology::{SdParams, Topology, parse_machine};
use lbsim_workload::{WorkloadSpec, parse_workloads};

/// The sd_init() inputs settable with `--set`.
const SD_PARAM_NAMES: [&str; 2] = ["imbalance_pct", "busy_factor"];

/// One run's description, before it is built.
#[derive(Clone, Debug, Default)]
pub struct Scenario {
    /// Machine spec (`--topology`).
    pub topology: String,
    /// Workload options (`--workload`, repeatable).
    pub workloads: Vec<String>,
    /// Sched features list (`--features`, `NO_X,Y` syntax; may also carry `name=value`
    /// tunables).
    pub features: Vec<String>,
    /// `NAME=VALUE` settings (`--set`, repeatable).
    pub sets: Vec<String>,
    /// Duration in ns.
    pub duration_ns: u64,
}

/// Every name `--set` accepts, for error messages.
pub fn all_set_names() -> String {
    let mut names: Vec<&str> = Vec::new();
    names.extend(TUNABLE_NAMES);
    names.extend(SD_PARAM_NAMES);
    names.extend(CostModel::NAMES);
    names.extend(EngineTunables::NAMES);
    names.join(", ")
}

/// Built pieces of a scenario that do not depend on the seed.
#[derive(Clone, Debug)]
pub struct Built {
    /// The engine configuration (seed 0; set it per run).
    pub config: SimConfig,
}

impl Scenario {
    /// Parses everything and builds the configuration. Errors name the flag and value.
    pub fn build(&self) -> anyhow::Result<Built> {
        if self.topology.is_empty() {
            bail!("--topology is required (a CPU count, key=value list, preset or file)");
        }
        if self.workloads.is_empty() {
            bail!("at least one --workload is required");
        }
        let machine = parse_machine(&self.topology)
            .with_context(|| format!("--topology `{}`", self.topology))?;
        let nr = machine.nr_cpus() as u32;
        let mut sd = SdParams::default();
        let mut tunables = Tunables::new(nr);
        let mut cost = CostModel::default();
        let mut engine = EngineTunables::default();
        let mut features = Features::defaults();
        // Features lists may carry tunables (`imbalance_pct=125`), as `lbsim compare` sides do.
        let mut assignments: Vec<(String, String)> = Vec::new();
        for list in &self.features {
            let mut names = Vec::new();
            for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if let Some((k, v)) = item.split_once('=') {
                    assignments.push((k.trim().to_owned(), v.trim().to_owned()));
                } else {
                    names.push(item);
                }
            }
            features
                .apply(&names.join(","))
                .with_context(|| format!("--features `{list}`"))?;
        }
        for set in &self.sets {
            let (k, v) = set
                .split_once('=')
                .with_context(|| format!("--set `{set}`: expected NAME=VALUE"))?;
            assignments.push((k.trim().to_owned(), v.trim().to_owned()));
        }
        for (k, v) in &assignments {
            let k = k.as_str();
            if SD_PARAM_NAMES.contains(&k) {
                sd.set(&format!("{k}={v}"))
                    .with_context(|| format!("--set {k}={v}"))?;
            } else if CostModel::is_tunable(k) {
                cost.set(k, v).with_context(|| format!("--set {k}={v}"))?;
            } else if EngineTunables::is_tunable(k) {
                engine.set(k, v).with_context(|| format!("--set {k}={v}"))?;
            } else if TUNABLE_NAMES.contains(&k) || k.starts_with("sched_") {
                tunables
                    .set(k, v)
                    .with_context(|| format!("--set {k}={v}"))?;
            } else {
                bail!(
                    "--set {k}={v}: unknown name `{k}` (valid: {})",
                    all_set_names()
                );
            }
        }
        let topology = Topology::build(&machine, &sd)
            .with_context(|| format!("--topology `{}`", self.topology))?;
        let workload = parse_workloads(&self.workloads).context("--workload")?;
        if self.duration_ns == 0 {
            bail!("--duration must be greater than 0");
        }
        Ok(Built {
            config: SimConfig {
                topology: Arc::new(topology),
                workload,
                features,
                tunables,
                cost,
                engine,
                duration_ns: self.duration_ns,
                seed: 0,
                check: false,
            },
        })
    }
}

/// Warnings the workload parser produced, one line each.
pub fn workload_warnings(spec: &WorkloadSpec) -> Vec<String> {
    spec.warnings
        .iter()
        .map(|w| match w.location {
            Some((line, col)) => format!("{}:{line}:{col}: warning: {}", w.source, w.message),
            None => format!("{}: warning: {}", w.source, w.message),
        })
        .collect()
}
