//! What a run is made of, from flags and scenario files: machine, workloads, features,
//! tunables, duration, seed; and how it turns into an engine configuration.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use lbsim_sim::engine::SimConfig;
pub use lbsim_sim::params::Settings;
use lbsim_sim::profile::Profile;
use lbsim_topology::Topology;
use lbsim_workload::{WorkloadSpec, parse_workloads_within};

use crate::budget::Budget;

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
    /// Duration in ns (`--duration`); `None`: as long as the workload asks
    /// ([`WorkloadSpec::default_run_ns`]).
    pub duration_ns: Option<u64>,
    /// The run's resource budget (`--max-cpus`, `--max-tasks`, ...).
    pub budget: Budget,
    /// The kernel profile (`--kernel 5.9`), if one was asked for.
    pub kernel: Option<String>,
    /// Declared task groups, (path, `cpu.weight`) (`--cgroup`, scenario `[cgroups]`).
    pub cgroups: Vec<(String, u64)>,
    /// Autogroup nices, (session, nice) (`--autogroup`, scenario `[autogroups]`).
    pub autogroups: Vec<(u32, i32)>,
    /// A cost profile (`--cost FILE`, scenario `cost`), loaded.
    pub cost: Option<CostFile>,
}

/// One `--autogroup N:nice=V`: session N's autogroup has nice V (lbsim's syntax for what
/// `echo V > /proc/PID/autogroup` does for a task of that session;
/// `proc_sched_autogroup_set_nice()`).
///
/// # Errors
/// One line naming the flag: a session that is not a number >= 1, an unknown key, a nice out
/// of `-20..=19`.
pub fn parse_autogroup_flag(arg: &str) -> anyhow::Result<(u32, i32)> {
    let shape = || anyhow!("--autogroup `{arg}`: expected SESSION:nice=N (like 2:nice=5)");
    let (id, rest) = arg.split_once(':').ok_or_else(shape)?;
    let id: u32 = id.trim().parse().map_err(|_| shape())?;
    let nice = match rest.trim().split_once('=') {
        Some(("nice", v)) => v
            .trim()
            .parse::<i32>()
            .map_err(|_| anyhow!("--autogroup `{arg}`: nice must be an integer in -20..=19"))?,
        _ => return Err(shape()),
    };
    lbsim_rq::group::autogroup_shares(id, nice).map_err(|e| anyhow!("--autogroup `{arg}`: {e}"))?;
    Ok((id, nice))
}

/// A cost profile file (`lbsim calibrate`'s output), loaded: its path as given and its
/// `[cost]` values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostFile {
    /// The file, as named.
    pub path: String,
    /// Its cost-model values.
    pub values: lbsim_balance::cost::profile::LoadedCost,
}

impl CostFile {
    /// Reads and parses cost profile `path` (at most
    /// [`lbsim_kernel::input::MAX_INPUT_BYTES`]).
    ///
    /// # Errors
    /// One line naming the file, and the line and key refused (`FILE:LINE: key `K`: ...`).
    pub fn load(path: &Path) -> anyhow::Result<CostFile> {
        let text = lbsim_kernel::input::read_to_string_capped(path)
            .map_err(|e| anyhow!("{}: cannot read the cost profile: {e}", path.display()))?;
        Self::parse(&text, path)
    }

    /// Parses the text of cost profile `path`.
    ///
    /// # Errors
    /// As [`CostFile::load`].
    pub fn parse(text: &str, path: &Path) -> anyhow::Result<CostFile> {
        use lbsim_balance::cost::profile::CostProfileError as E;
        let file = path.display().to_string();
        let values = lbsim_balance::cost::profile::parse(text).map_err(|e| match e {
            E::Toml { line, message } => {
                anyhow!("{file}:{line}: not a cost profile: not valid TOML: {message}")
            }
            E::Key { line, key, message } => anyhow!("{file}:{line}: key `{key}`: {message}"),
            other => anyhow!("{file}:{}: {other}", other.line()),
        })?;
        Ok(CostFile { path: file, values })
    }
}

/// One `--cgroup PATH:weight=N` (or `PATH` alone, weight 100): the group's path and its
/// cgroup v2 `cpu.weight`.
///
/// # Errors
/// One line naming the flag: a path that is not absolute, an unknown key, a weight out of
/// `1..=10000`.
pub fn parse_cgroup_flag(arg: &str) -> anyhow::Result<(String, u64)> {
    let (path, rest) = arg.split_once(':').unwrap_or((arg, ""));
    let mut weight = lbsim_pelt::CGROUP_WEIGHT_DFL;
    for kv in rest.split(',').filter(|s| !s.trim().is_empty()) {
        match kv.split_once('=') {
            Some(("weight", v)) => {
                weight = v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|w| (1..=10_000).contains(w))
                    .with_context(|| {
                        format!(
                            "--cgroup `{arg}`: weight must be an integer in 1..=10000 (cpu.weight)"
                        )
                    })?;
            }
            _ => bail!("--cgroup `{arg}`: expected PATH:weight=N (like /a/b:weight=300)"),
        }
    }
    check_cgroup(path, weight).map_err(|e| anyhow!("--cgroup `{arg}`: {e}"))?;
    Ok((path.to_owned(), weight))
}

/// Whether the group `path` with `weight` can be declared.
fn check_cgroup(path: &str, weight: u64) -> Result<(), lbsim_rq::TaskGroupError> {
    lbsim_rq::TaskGroupTree::default()
        .declare(path, weight)
        .map(|_| ())
}

/// The kernel profile named by `--kernel`.
///
/// # Errors
/// No profile for that release.
pub fn kernel_profile(kernel: Option<&str>) -> anyhow::Result<Option<Profile>> {
    kernel
        .map(|k| Profile::parse(k).map_err(|e| anyhow!("--kernel `{k}`: {e}")))
        .transpose()
}

/// Built pieces of a scenario that do not depend on the seed.
#[derive(Clone, Debug)]
pub struct Built {
    /// The engine configuration (seed 0; set it per run).
    pub config: SimConfig,
}

/// The settings of a run: the defaults for a machine of `nr_cpus` CPUs, then each features
/// list (`NO_X,Y`; it may carry `name=value` parameters, as `lbsim compare` sides do) and each
/// `NAME=VALUE` of `sets`, in order. Every name is looked up in the registry
/// (`lbsim_sim::params::REGISTRY`); errors name the flag and value, and suggest the nearest
/// valid names.
///
/// # Errors
/// One line: the flag, and the registry's error.
pub fn settings(
    nr_cpus: u32,
    features_lists: &[String],
    sets: &[String],
) -> anyhow::Result<Settings> {
    settings_for(None, nr_cpus, features_lists, sets)
}

/// [`settings`] starting from kernel `profile`'s values ([`Settings::for_kernel`]) instead
/// of the registry's defaults.
///
/// # Errors
/// One line: the flag, and the registry's or the profile's error.
pub fn settings_for(
    profile: Option<Profile>,
    nr_cpus: u32,
    features_lists: &[String],
    sets: &[String],
) -> anyhow::Result<Settings> {
    settings_with_cost(profile, None, nr_cpus, features_lists, sets)
}

/// [`settings_for`] with a cost profile's values stored after the kernel profile's and before
/// the features lists and `sets`, so that `--set` overrides the cost profile.
///
/// # Errors
/// As [`settings_for`].
pub fn settings_with_cost(
    profile: Option<Profile>,
    cost: Option<&CostFile>,
    nr_cpus: u32,
    features_lists: &[String],
    sets: &[String],
) -> anyhow::Result<Settings> {
    let mut s = match profile {
        Some(p) => Settings::for_kernel(nr_cpus, p),
        None => Settings::new(nr_cpus),
    };
    if let Some(c) = cost {
        c.values.apply(&mut s.cost);
    }
    // Each assignment with the flag it came from, for its error.
    let mut assignments: Vec<(String, String, String)> = Vec::new();
    for list in features_lists {
        let mut names = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if let Some((k, v)) = item.split_once('=') {
                let (k, v) = (k.trim().to_owned(), v.trim().to_owned());
                assignments.push((format!("--features `{list}`: {k}={v}"), k, v));
            } else {
                names.push(item);
            }
        }
        s.apply_features(&names.join(","))
            .with_context(|| format!("--features `{list}`"))?;
    }
    for set in sets {
        let (k, v) = set
            .split_once('=')
            .with_context(|| format!("--set `{set}`: expected NAME=VALUE"))?;
        let (k, v) = (k.trim().to_owned(), v.trim().to_owned());
        assignments.push((format!("--set {k}={v}"), k, v));
    }
    for (flag, k, v) in &assignments {
        s.set(k, v).with_context(|| flag.clone())?;
    }
    Ok(s)
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
        let machine = crate::host::machine(&self.topology, &self.budget.machine)
            .with_context(|| format!("--topology `{}`", self.topology))?;
        self.budget
            .machine
            .check("--topology", &self.topology, &machine)?;
        let profile = kernel_profile(self.kernel.as_deref())?;
        let Settings {
            features,
            tunables,
            sd,
            cost,
            engine,
            machine: model,
            ..
        } = settings_with_cost(
            profile,
            self.cost.as_ref(),
            machine.nr_cpus() as u32,
            &self.features,
            &self.sets,
        )?;
        let topology = Topology::build(&machine, &sd)
            .with_context(|| format!("--topology `{}`", self.topology))?;
        let workload = parse_workloads_within(&self.workloads, self.budget.workload_limits())
            .map_err(Budget::workload_error)?;
        if self.duration_ns == Some(0) {
            bail!("--duration must be greater than 0");
        }
        let duration_ns = self
            .duration_ns
            .unwrap_or_else(|| workload.default_run_ns());
        Ok(Built {
            config: SimConfig {
                topology: Arc::new(topology),
                workload,
                features,
                tunables,
                cost,
                engine,
                machine: model,
                kernel: profile.map(|p| (p.version().0, p.version().1)),
                duration_ns,
                seed: 0,
                check: false,
                cgroups: self.cgroups.clone(),
                autogroups: self.autogroups.clone(),
            },
        })
    }
}

/// One note per part of the workload that a run limited to `limit_ns` stopped before it was
/// done (`lbsim: note: ...`), for stderr.
pub fn cut_short_notes(
    spec: &WorkloadSpec,
    obs: &lbsim_workload::RunObservations,
    limit_ns: u64,
) -> Vec<String> {
    spec.cut_short(obs, limit_ns)
        .iter()
        .map(|c| format!("note: {c}"))
        .collect()
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

/// What `lbsim run` takes from a scenario file and its flags; flags override the file (lists of
/// features and sets are appended after the file's, so their values win).
#[derive(Clone, Debug, Default)]
pub struct RunInputs {
    /// The scenario file, if any.
    pub file: Option<std::path::PathBuf>,
    /// `--topology`.
    pub topology: Option<String>,
    /// `--workload` (replaces the file's when given).
    pub workloads: Vec<String>,
    /// `--duration` (default: as long as the workload asks, 1 s for one with no end).
    pub duration: Option<String>,
    /// `--seed` (default 1).
    pub seed: Option<u64>,
    /// `--features`.
    pub features: Vec<String>,
    /// `--set`.
    pub sets: Vec<String>,
    /// `--max-cpus`, `--max-tasks`, ...
    pub budget: Budget,
    /// `--kernel`.
    pub kernel: Option<String>,
    /// `--cgroup` (added to the file's `[cgroups]`; a later declaration of a path wins).
    pub cgroups: Vec<String>,
    /// `--autogroup` (added to the file's `[autogroups]`; a later nice for a session wins).
    pub autogroups: Vec<String>,
    /// `--cost` (replaces the file's `cost`).
    pub cost: Option<std::path::PathBuf>,
}

impl RunInputs {
    /// The scenario and seed to run.
    ///
    /// # Errors
    /// A bad file, a bad duration, or no topology at all.
    pub fn resolve(&self) -> anyhow::Result<(Scenario, u64)> {
        let file = match &self.file {
            Some(p) => ScenarioFile::load(p, &self.budget)?,
            None => ScenarioFile::default(),
        };
        self.merge(file)
    }

    /// The scenario and seed of `file` overridden by these flags (`self.file` is not read).
    ///
    /// # Errors
    /// A bad duration, or no topology at all.
    pub fn merge(&self, file: ScenarioFile) -> anyhow::Result<(Scenario, u64)> {
        let workloads = if self.workloads.is_empty() {
            file.workloads.clone().unwrap_or_default()
        } else {
            self.workloads.clone()
        };
        let topology = match self.topology.clone().or(file.topology) {
            Some(t) => t,
            None => trace_topology(&workloads, &self.budget)?.with_context(|| {
                "--topology is required (a CPU count, key=value list, preset or file), or a \
                 scenario file"
            })?,
        };
        let duration_ns = match &self.duration {
            Some(d) => Some(
                lbsim_pelt::parse_duration_ns(d).with_context(|| format!("--duration `{d}`"))?,
            ),
            None => file.duration_ns,
        };
        let mut features = file.features;
        features.extend(self.features.iter().cloned());
        let mut sets = file.sets;
        sets.extend(self.sets.iter().cloned());
        let mut cgroups = file.cgroups;
        for c in &self.cgroups {
            cgroups.push(parse_cgroup_flag(c)?);
        }
        let mut autogroups = file.autogroups;
        for a in &self.autogroups {
            autogroups.push(parse_autogroup_flag(a)?);
        }
        let cost = match &self.cost {
            Some(p) => Some(CostFile::load(p).context("--cost")?),
            None => file.cost,
        };
        Ok((
            Scenario {
                topology,
                workloads,
                features,
                sets,
                duration_ns,
                budget: self.budget,
                kernel: self.kernel.clone().or(file.kernel),
                cgroups,
                autogroups,
                cost,
            },
            self.seed.or(file.seed).unwrap_or(1),
        ))
    }
}

/// Without a topology: the CPU count of the machine a `trace:FILE` workload was recorded
/// on, with a warning on stderr; `None` when no workload is a trace.
fn trace_topology(workloads: &[String], budget: &Budget) -> anyhow::Result<Option<String>> {
    if !workloads
        .iter()
        .any(|w| w.trim_start().starts_with("trace:"))
    {
        return Ok(None);
    }
    let spec = parse_workloads_within(workloads, budget.workload_limits())
        .map_err(Budget::workload_error)?;
    Ok(spec.cpus_hint.map(|n| {
        eprintln!("lbsim: warning: no --topology given: {n} CPUs, as in the trace");
        n.to_string()
    }))
}

/// The keys a scenario file may hold, in the order `lbsim` documents them.
pub const FILE_KEYS: [&str; 15] = [
    "description",
    "topology",
    "kernel",
    "cost",
    "workloads",
    "duration",
    "features",
    "tunables",
    "cgroups",
    "autogroups",
    "seed",
    "runs",
    "base",
    "patched",
    "vary",
];

/// A scenario file: what the flags of `lbsim run` and `lbsim compare` hold, in TOML. Every key
/// is optional; flags given on the command line override it.
///
/// ```toml
/// description = "seed 001: fairness of 9 always-running threads on 8 CPUs"
/// topology = "hikey"                  # --topology
/// workloads = ["busy:threads=9"]      # --workload, one string or a list
/// duration = "5s"                     # --duration
/// kernel = "5.9"                      # --kernel: the release's profile
/// cost = "costs.toml"                 # --cost: a cost profile (lbsim calibrate's)
/// features = "NO_WA_BIAS"             # --features (both sides), a string or a list
/// seed = 1                            # --seed (lbsim compare: the first of `runs` seeds)
/// runs = 20                           # --runs
/// base = "NO_LB_RELAX_BY_FAILED,imbalance_pct=125"   # --base
/// patched = ""                        # --patched (empty: the defaults)
///
/// [tunables]                          # --set NAME=VALUE
/// migration_cost_ns = 500000
///
/// [cgroups]                           # --cgroup PATH:weight=N
/// "/a/b" = { weight = 300 }
///
/// [autogroups]                        # --autogroup SESSION:nice=N
/// 2 = { nice = 5 }
/// ```
///
/// Relative paths (a topology file, `rtapp:FILE.json`) are taken relative to the scenario
/// file's directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScenarioFile {
    /// `cost`: a cost profile, loaded (its path relative to the scenario file's directory).
    pub cost: Option<CostFile>,
    /// The file, as named on the command line.
    pub path: String,
    /// `description`: free text, shown in reports.
    pub description: Option<String>,
    /// `topology`.
    pub topology: Option<String>,
    /// `workloads`.
    pub workloads: Option<Vec<String>>,
    /// `duration`, ns.
    pub duration_ns: Option<u64>,
    /// `features`: lists for both sides.
    pub features: Vec<String>,
    /// `tunables`, as `NAME=VALUE`.
    pub sets: Vec<String>,
    /// `seed`.
    pub seed: Option<u64>,
    /// `runs`.
    pub runs: Option<u32>,
    /// `base`: one features list (may carry tunables).
    pub base: Option<String>,
    /// `patched`: one features list (may carry tunables).
    pub patched: Option<String>,
    /// `kernel`: the kernel profile (`--kernel`).
    pub kernel: Option<String>,
    /// `vary`: `lbsim sweep`'s axes, `NAME=VALUES` each (`--vary`).
    pub vary: Vec<String>,
    /// `[cgroups]`: task groups, (path, `cpu.weight`).
    pub cgroups: Vec<(String, u64)>,
    /// `[autogroups]`: autogroup nices, (session, nice).
    pub autogroups: Vec<(u32, i32)>,
}

/// The TOML type of a value, for error messages.
fn toml_type(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("string \"{s}\""),
        toml::Value::Integer(i) => format!("integer {i}"),
        toml::Value::Float(f) => format!("float {f}"),
        toml::Value::Boolean(b) => format!("boolean {b}"),
        toml::Value::Datetime(d) => format!("datetime {d}"),
        toml::Value::Array(_) => "an array".to_owned(),
        toml::Value::Table(_) => "a table".to_owned(),
    }
}

/// Line and column (1-based) of byte offset `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

impl ScenarioFile {
    /// Reads and checks `path` (at most [`lbsim_kernel::input::MAX_INPUT_BYTES`]); its
    /// workloads are checked against `budget`.
    ///
    /// # Errors
    /// One line naming the file, the key and what was expected.
    pub fn load(path: &Path, budget: &Budget) -> anyhow::Result<ScenarioFile> {
        let text = lbsim_kernel::input::read_to_string_capped(path)
            .map_err(|e| anyhow!("{}: cannot read the scenario file: {e}", path.display()))?;
        Self::parse_within(&text, path, budget)
    }

    /// Parses and checks the text of scenario file `path` within the default [`Budget`].
    ///
    /// # Errors
    /// One line naming the file, the key and what was expected.
    pub fn parse(text: &str, path: &Path) -> anyhow::Result<ScenarioFile> {
        Self::parse_within(text, path, &Budget::default())
    }

    /// Parses and checks the text of scenario file `path`; paths inside it are taken
    /// relative to `path`'s directory, and its workloads are checked against `budget`.
    ///
    /// # Errors
    /// One line naming the file, the key and what was expected.
    pub fn parse_within(text: &str, path: &Path, budget: &Budget) -> anyhow::Result<ScenarioFile> {
        let file = path.display().to_string();
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let msg = e.message().trim_end().replace('\n', "; ");
            match e.span() {
                Some(span) => {
                    let (line, col) = line_col(text, span.start);
                    anyhow!("{file}:{line}:{col}: not valid TOML: {msg}")
                }
                None => anyhow!("{file}: not valid TOML: {msg}"),
            }
        })?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let err = |key: &str, what: String| anyhow!("{file}: key `{key}`: {what}");
        let expected = |key: &str, what: &str, v: &toml::Value| {
            err(key, format!("expected {what}, found {}", toml_type(v)))
        };
        let string = |key: &str, v: &toml::Value| -> anyhow::Result<String> {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| expected(key, "a string", v))
        };
        // A string, or an array of strings; joined by `sep` when one value is wanted.
        let strings = |key: &str, v: &toml::Value| -> anyhow::Result<Vec<String>> {
            match v {
                toml::Value::String(s) => Ok(vec![s.clone()]),
                toml::Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        item.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| expected(&format!("{key}[{i}]"), "a string", item))
                    })
                    .collect(),
                _ => Err(expected(key, "a string or an array of strings", v)),
            }
        };
        let mut out = ScenarioFile {
            path: file.clone(),
            ..ScenarioFile::default()
        };
        for (key, v) in &table {
            match key.as_str() {
                "description" => out.description = Some(string(key, v)?),
                "kernel" => {
                    let k = string(key, v)?;
                    Profile::parse(&k).map_err(|e| err(key, e.to_string()))?;
                    out.kernel = Some(k);
                }
                "cost" => {
                    let p = string(key, v)?;
                    let p = if Path::new(&p).is_relative() && !dir.as_os_str().is_empty() {
                        dir.join(&p)
                    } else {
                        std::path::PathBuf::from(&p)
                    };
                    out.cost = Some(CostFile::load(&p).map_err(|e| err(key, format!("{e:#}")))?);
                }
                "topology" => {
                    let spec = resolve_topology(dir, &string(key, v)?);
                    crate::host::machine(&spec, &budget.machine)
                        .map_err(|e| err(key, format!("`{spec}`: {e:#}")))?;
                    out.topology = Some(spec);
                }
                "workloads" => {
                    let list = strings(key, v)?;
                    if list.is_empty() {
                        return Err(err(key, "expected at least one workload".to_owned()));
                    }
                    let mut resolved = Vec::new();
                    for (i, w) in list.iter().enumerate() {
                        let w = resolve_workload(dir, w);
                        parse_workloads_within(std::slice::from_ref(&w), budget.workload_limits())
                            .map_err(|e| err(&format!("{key}[{i}]"), Budget::describe(&e)))?;
                        resolved.push(w);
                    }
                    out.workloads = Some(resolved);
                }
                "duration" => {
                    let s = v.as_str().ok_or_else(|| {
                        expected(key, "a duration string such as \"2s\" or \"500ms\"", v)
                    })?;
                    let ns = lbsim_pelt::parse_duration_ns(s)
                        .map_err(|e| err(key, format!("`{s}`: {e}")))?;
                    if ns == 0 {
                        return Err(err(key, "expected a duration greater than 0".to_owned()));
                    }
                    out.duration_ns = Some(ns);
                }
                "features" => {
                    let lists = strings(key, v)?;
                    for l in &lists {
                        settings(1, std::slice::from_ref(l), &[])
                            .map_err(|e| err(key, e.root_cause().to_string()))?;
                    }
                    out.features = lists;
                }
                "base" | "patched" => {
                    let list = strings(key, v)?.join(",");
                    settings(1, std::slice::from_ref(&list), &[])
                        .map_err(|e| err(key, e.root_cause().to_string()))?;
                    if key == "base" {
                        out.base = Some(list);
                    } else {
                        out.patched = Some(list);
                    }
                }
                "tunables" => {
                    let t = v
                        .as_table()
                        .ok_or_else(|| expected(key, "a table of NAME = value", v))?;
                    for (name, value) in t {
                        let k = format!("{key}.{name}");
                        let value = match value {
                            toml::Value::String(s) => s.clone(),
                            toml::Value::Integer(i) => i.to_string(),
                            toml::Value::Boolean(b) => u8::from(*b).to_string(),
                            other => {
                                return Err(expected(&k, "an integer or a string", other));
                            }
                        };
                        let set = format!("{name}={value}");
                        settings(1, &[], std::slice::from_ref(&set))
                            .map_err(|e| err(&k, e.root_cause().to_string()))?;
                        out.sets.push(set);
                    }
                }
                "cgroups" => {
                    let t = v
                        .as_table()
                        .ok_or_else(|| expected(key, "a table of \"/path\" = { weight = N }", v))?;
                    for (path, value) in t {
                        let k = format!("{key}.\"{path}\"");
                        let g = value
                            .as_table()
                            .ok_or_else(|| expected(&k, "a table { weight = N }", value))?;
                        let mut weight = lbsim_pelt::CGROUP_WEIGHT_DFL;
                        for (name, w) in g {
                            if name != "weight" {
                                return Err(err(
                                    &k,
                                    format!("unknown key `{name}` (valid: weight)"),
                                ));
                            }
                            weight = w
                                .as_integer()
                                .and_then(|i| u64::try_from(i).ok())
                                .ok_or_else(|| {
                                    expected(&format!("{k}.weight"), "an integer in 1..=10000", w)
                                })?;
                        }
                        check_cgroup(path, weight).map_err(|e| err(&k, e.to_string()))?;
                        out.cgroups.push((path.clone(), weight));
                    }
                }
                "autogroups" => {
                    let t = v
                        .as_table()
                        .ok_or_else(|| expected(key, "a table of SESSION = { nice = N }", v))?;
                    for (session, value) in t {
                        let k = format!("{key}.{session}");
                        let id: u32 = session.parse().map_err(|_| {
                            err(&k, "the key must be a session number (1..)".to_owned())
                        })?;
                        let g = value
                            .as_table()
                            .ok_or_else(|| expected(&k, "a table { nice = N }", value))?;
                        let mut nice = 0;
                        for (name, n) in g {
                            if name != "nice" {
                                return Err(err(&k, format!("unknown key `{name}` (valid: nice)")));
                            }
                            nice = n
                                .as_integer()
                                .and_then(|i| i32::try_from(i).ok())
                                .ok_or_else(|| {
                                    expected(&format!("{k}.nice"), "an integer in -20..=19", n)
                                })?;
                        }
                        lbsim_rq::group::autogroup_shares(id, nice)
                            .map_err(|e| err(&k, e.to_string()))?;
                        out.autogroups.push((id, nice));
                    }
                }
                "seed" => {
                    out.seed = Some(
                        v.as_integer()
                            .and_then(|i| u64::try_from(i).ok())
                            .ok_or_else(|| expected(key, "a non-negative integer", v))?,
                    );
                }
                "vary" => {
                    let axes = strings(key, v)?;
                    for a in &axes {
                        crate::commands::sweep::parse_axis(a)
                            .map_err(|e| err(key, e.to_string()))?;
                    }
                    out.vary = axes;
                }
                "runs" => {
                    out.runs = Some(
                        v.as_integer()
                            .and_then(|i| u32::try_from(i).ok())
                            .filter(|&n| n > 0)
                            .ok_or_else(|| expected(key, "a positive integer", v))?,
                    );
                }
                _ => {
                    return Err(anyhow!(
                        "{file}: unknown key `{key}` (valid: {})",
                        FILE_KEYS.join(", ")
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// A topology spec that names a file, taken relative to `dir`.
fn resolve_topology(dir: &Path, spec: &str) -> String {
    for form in ["sysfs:", "lscpu:"] {
        if let Some(path) = spec.strip_prefix(form)
            && Path::new(path).is_relative()
            && !path.is_empty()
            && !dir.as_os_str().is_empty()
        {
            return format!("{form}{}", dir.join(path).display());
        }
    }
    let lower = spec.to_ascii_lowercase();
    let is_path = spec.contains('/') || lower.ends_with(".toml") || lower.ends_with(".json");
    if is_path && Path::new(spec).is_relative() && !dir.as_os_str().is_empty() {
        dir.join(spec).display().to_string()
    } else {
        spec.to_owned()
    }
}

/// An `rtapp:FILE` or `trace:FILE[,keys]` workload with a relative FILE, taken relative to
/// `dir`.
fn resolve_workload(dir: &Path, w: &str) -> String {
    match w.split_once(':') {
        Some(("rtapp", f))
            if Path::new(f).is_relative() && !f.is_empty() && !dir.as_os_str().is_empty() =>
        {
            format!("rtapp:{}", dir.join(f).display())
        }
        Some(("trace", rest)) => {
            let (f, keys) = match rest.split_once(',') {
                Some((f, k)) => (f, format!(",{k}")),
                None => (rest, String::new()),
            };
            if Path::new(f).is_relative() && !f.is_empty() && !dir.as_os_str().is_empty() {
                format!("trace:{}{keys}", dir.join(f).display())
            } else {
                w.to_owned()
            }
        }
        _ => w.to_owned(),
    }
}

#[cfg(test)]
mod tests;
