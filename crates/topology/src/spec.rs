//! Machine specs: the text a user types to name a machine (`lbsim topology SPEC`).
//!
//! The forms, tried in this order:
//!
//! 1. **A bare number** `N`: `N` CPUs sharing one LLC (one node, one package,
//!    no SMT, all of capacity 1024). `8` is `cores=8`.
//! 2. **A `key=value` list**, comma-separated: `sockets=2,cores=4`,
//!    `nodes=2,cores=28,threads=4`. A list value (`capacity`, `distance`)
//!    may itself contain commas: an element without `=` continues the previous
//!    value. Keys (counts are at least 1; all default to 1):
//!    - `nodes`: NUMA nodes;
//!    - `sockets`: packages per node;
//!    - `llcs`: last-level caches per package;
//!    - `clusters`: clusters per LLC (a cluster smaller than its LLC gives a CLS level);
//!    - `cores`: cores per cluster (per LLC when there is one cluster);
//!    - `threads`: SMT width;
//!    - `capacity`: per-CPU capacities in CPU-number order, with run-length
//!      shorthand `VALUExCOUNT`: `capacity=462x4,1024x4`; 1..=1024 each, one per CPU
//!      (default: all 1024); given without any count key, it is that many cores;
//!    - `distance`: the node distance table, rows separated by `;`
//!      (`distance=10,20;20,10`), or one remote distance for every pair
//!      (`distance=21`; default 20);
//!    - `numbering`: `topology` (default: CPUs numbered node, socket, LLC,
//!      cluster, core, thread, so SMT siblings are adjacent as QEMU numbers them)
//!      or `spread` (all first threads, then all second threads: siblings
//!      `N/threads` apart, as x86 servers number them);
//!    - `node_reclaim_distance`: the kernel's `node_reclaim_distance` (default 30);
//!    - `smt_throughput`: a core's total throughput with 2, 3, ... busy threads relative to
//!      one (`1.2`, `1.6,1.9`), or `ideal` (see [`crate::smt`]; default 1.2 at two threads);
//!    - `idle_states`: the cpuidle driver's states (see [`crate::cpuidle`]): a built-in
//!      table (`bdw`, `skx`, `skl`, `zen2`, `hi6220`, `hi3660-a53`, `power8`, `tx2`,
//!      `none`), runs of tables in CPU order (`hi3660-a53x4,hi3660-a73x4`), or a custom
//!      table `POLL:0:0:poll/C1:2:2:store/C6:133:600:exit_ns=40000` (default: `none`);
//!    - `preset`: start from a preset; the other keys override its keys.
//! 3. **A preset name** from [`presets()`] (`lbsim topology --list`).
//! 4. **A file path** (anything containing `/` or ending in `.toml` or
//!    `.json`), TOML or JSON by extension (JSON also when the text starts with `{`).
//! 5. **A real machine**: `host`, `sysfs:DIR`, `lscpu:FILE` ([`crate::host`]). This crate
//!    never reads the host, so [`parse_machine`] refuses them ([`SpecError::NeedsHost`]);
//!    the `lbsim` binary reads the files and hands their text to [`crate::host`].
//!
//! # File schema
//!
//! A file holds either the keys of form 2 or an explicit CPU list.
//! Key form (TOML shown; JSON uses the same names):
//!
//! ```toml
//! nodes = 2
//! cores = 4
//! threads = 2
//! capacity = "1024x16"            # or an array: [1024, 1024, ...]
//! distance = [[10, 21], [21, 10]] # or "10,21;21,10", or 21
//! numbering = "spread"
//! node_reclaim_distance = 30
//! smt_throughput = "1.2"          # or "ideal"
//! idle_states = "bdw"             # or runs, or a custom table
//! # preset = "hikey"              # optional starting point
//! ```
//!
//! Explicit form: one `[[cpus]]` table per CPU, CPU `i` being the `i`-th
//! entry. Every field is a global label (equal labels mean the same core,
//! cluster, ...), optional, and defaults as shown:
//!
//! ```toml
//! distance = [[10, 20], [20, 10]] # optional; only with `node_reclaim_distance`
//!
//! [[cpus]]
//! node = 0        # default 0; an index into the distance table
//! package = 0     # default: the node label
//! llc = 0         # default: the package label
//! cluster = 0     # default: the LLC label
//! core = 0        # default: the CPU's position (no SMT)
//! capacity = 1024 # default 1024
//! ```
//!
//! The labels must nest (threads of a core in one cluster, a cluster in one
//! LLC, an LLC in one package, a package in one node).
//!
//! Every error is a [`SpecError`] whose message is one line naming the
//! offending part.

use std::fmt;
use std::path::Path;

use crate::cpuidle::IdleStates;
use crate::machine::{
    CpuDesc, MAX_CPU_CAPACITY, MAX_CPUS, Machine, MachineError, RECLAIM_DISTANCE,
};
use crate::smt::SmtThroughput;

/// Why a machine spec could not be turned into a machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The spec is empty.
    #[error(
        "empty machine spec (give a CPU count, key=value list, preset or file; see `lbsim topology --list`)"
    )]
    Empty,
    /// A key that is not one of the spec keys.
    #[error("unknown key `{key}` in machine spec (known: {known})")]
    UnknownKey {
        /// The key.
        key: String,
        /// The known keys, comma-separated.
        known: String,
    },
    /// A list element that is neither `key=value` nor the continuation of a list value.
    #[error("`{token}` is not a key=value pair")]
    MalformedToken {
        /// The element.
        token: String,
    },
    /// An empty element (`cores=4,,threads=2` or a trailing comma).
    #[error("empty element in machine spec `{spec}`")]
    EmptyElement {
        /// The whole spec.
        spec: String,
    },
    /// `key=` with nothing after it.
    #[error("`{key}=` has no value")]
    MissingValue {
        /// The key.
        key: String,
    },
    /// The same key twice.
    #[error("key `{key}` is given twice")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// A value that should be a number and is not.
    #[error("`{key}={value}`: `{value}` is not a number")]
    BadNumber {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// A count of zero.
    #[error("`{key}=0`: a count must be at least 1")]
    ZeroCount {
        /// The key (`cpus` for a bare number).
        key: String,
    },
    /// A capacity list element that is neither `VALUE` nor `VALUExCOUNT`.
    #[error("capacity: `{element}` is not a capacity or a VALUExCOUNT run")]
    BadCapacity {
        /// The element.
        element: String,
    },
    /// A capacity of 0 or above 1024 in a capacity list.
    #[error("capacity: `{element}` is out of range (capacities are 1..=1024)")]
    CapacityOutOfRange {
        /// The element.
        element: String,
    },
    /// A capacity list whose length is not the number of CPUs.
    #[error("capacity lists {got} values but the machine has {expected} CPUs")]
    CapacityLength {
        /// CPUs in the machine.
        expected: usize,
        /// Values listed.
        got: usize,
    },
    /// A distance table that does not parse.
    #[error("distance: `{value}` is not a number or a table like `10,20;20,10`")]
    BadDistance {
        /// The value.
        value: String,
    },
    /// A distance table whose size is not the number of nodes.
    #[error("distance table has {rows} rows but the machine has {nodes} nodes")]
    DistanceNodes {
        /// Rows given.
        rows: usize,
        /// Nodes in the machine.
        nodes: usize,
    },
    /// A `numbering` other than `topology` or `spread`.
    #[error("numbering: `{value}` is not `topology` or `spread`")]
    BadNumbering {
        /// The value.
        value: String,
    },
    /// An unknown preset name.
    #[error("unknown preset `{name}` (presets: {known})")]
    UnknownPreset {
        /// The name.
        name: String,
        /// The preset names, comma-separated.
        known: String,
    },
    /// A machine file that cannot be read.
    #[error("cannot read machine file `{path}`: {message}")]
    ReadFile {
        /// The path.
        path: String,
        /// The OS error.
        message: String,
    },
    /// A machine file that does not parse or does not follow the schema.
    #[error("machine file `{path}`: {message}")]
    ParseFile {
        /// The path.
        path: String,
        /// The parser's message, on one line.
        message: String,
    },
    /// An `smt_throughput` value that is not a valid table.
    #[error("smt_throughput `{value}`: {reason}")]
    BadSmtThroughput {
        /// The value or element given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// An `idle_states` value that is not a valid table or list of runs.
    #[error("idle_states `{value}`: {reason}")]
    BadIdleStates {
        /// The value or element given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// `host`, `sysfs:DIR` or `lscpu:FILE`, which only the `lbsim` binary reads (this crate
    /// never touches the host: [`crate::host`] parses the files the binary reads).
    #[error(
        "`{spec}` names a real machine, which the lbsim binary reads (this library parses what it read: lbsim_topology::host)"
    )]
    NeedsHost {
        /// The spec.
        spec: String,
    },
    /// The machine described is invalid.
    #[error(transparent)]
    Machine(#[from] MachineError),
}

/// How CPUs are numbered in a shape spec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Numbering {
    /// Node, socket, LLC, cluster, core, thread: SMT siblings adjacent.
    #[default]
    Topology,
    /// First threads of all cores, then second threads, ...: siblings `N/threads` apart.
    Spread,
}

/// A distance table in a spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DistanceSpec {
    /// One distance for every pair of distinct nodes.
    Remote(u32),
    /// The full table, row by row.
    Matrix(Vec<Vec<u32>>),
}

/// A machine described by counts (forms 1 and 2 of the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineSpec {
    /// NUMA nodes.
    pub nodes: u32,
    /// Packages per node.
    pub sockets: u32,
    /// LLCs per package.
    pub llcs: u32,
    /// Clusters per LLC.
    pub clusters: u32,
    /// Cores per cluster.
    pub cores: u32,
    /// Threads per core.
    pub threads: u32,
    /// Per-CPU capacities in CPU-number order (`None`: all 1024).
    pub capacity: Option<Vec<u32>>,
    /// Node distances (`None`: 20 between distinct nodes).
    pub distance: Option<DistanceSpec>,
    /// CPU numbering.
    pub numbering: Numbering,
    /// `node_reclaim_distance`.
    pub node_reclaim_distance: u32,
    /// Core throughput by busy threads (`None`: [`SmtThroughput::default_table`]).
    pub smt_throughput: Option<SmtThroughput>,
    /// The cpuidle tables, as runs in CPU order (`None`: no cpuidle driver).
    pub idle_states: Option<Vec<(IdleStates, usize)>>,
}

impl Default for MachineSpec {
    fn default() -> MachineSpec {
        MachineSpec {
            nodes: 1,
            sockets: 1,
            llcs: 1,
            clusters: 1,
            cores: 1,
            threads: 1,
            capacity: None,
            distance: None,
            numbering: Numbering::Topology,
            node_reclaim_distance: RECLAIM_DISTANCE,
            smt_throughput: None,
            idle_states: None,
        }
    }
}

/// A built-in machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The name users type.
    pub name: &'static str,
    /// One line: what machine it is and why it is here.
    pub description: &'static str,
    /// Its definition as a key=value spec.
    pub spec: &'static str,
}

const PRESETS: &[Preset] = &[
    Preset {
        name: "hikey",
        description: "arm64 HiKey: 2 clusters of 4 identical cores, each cluster its own LLC (seeds 000, 001)",
        spec: "llcs=2,cores=4,idle_states=hi6220",
    },
    Preset {
        name: "hikey960",
        description: "arm64 HiKey960 big.LITTLE: 4 cores of capacity 462 + 4 of 1024, one LLC per cluster",
        spec: "llcs=2,cores=4,capacity=462x4,1024x4,idle_states=hi3660-a53x4,hi3660-a73x4",
    },
    Preset {
        name: "tx2-2n",
        description: "ThunderX2: 2 nodes x 28 cores x SMT4 = 224 CPUs, one LLC per node (seed 001's large machine)",
        spec: "nodes=2,cores=28,threads=4,idle_states=tx2",
    },
    Preset {
        name: "power8-22c",
        description: "IBM POWER8: 22 cores x SMT8 = 176 CPUs on 2 sockets/nodes (distance 40), L3 per core (seed 004)",
        spec: "nodes=2,llcs=11,cores=1,threads=8,distance=40,smt_throughput=1.6,idle_states=power8",
    },
    Preset {
        name: "x86-4c-smt2",
        description: "x86: 4 cores x SMT2 = 8 CPUs, one LLC, siblings numbered 4 apart (seed 004's small machine)",
        spec: "cores=4,threads=2,numbering=spread,smt_throughput=1.2,idle_states=skl",
    },
    Preset {
        name: "xeon-4s",
        description: "4-socket Xeon: 4 nodes x 24 cores x SMT2 = 192 CPUs, one LLC per socket, SLIT 10/21 (seed 003)",
        spec: "nodes=4,cores=24,threads=2,distance=21,numbering=spread,smt_throughput=1.2,idle_states=bdw",
    },
    Preset {
        name: "epyc-2s",
        description: "2-socket AMD EPYC: 2 nodes x 8 LLCs x 8 cores x SMT2 = 256 CPUs, SLIT 10/32, node_reclaim_distance 32",
        spec: "nodes=2,llcs=8,cores=8,threads=2,distance=32,node_reclaim_distance=32,numbering=spread,smt_throughput=1.36,idle_states=zen2",
    },
];

/// The built-in machines, in the order `lbsim topology --list` prints them.
pub fn presets() -> &'static [Preset] {
    PRESETS
}

/// The preset called `name`.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

const KEYS: &[&str] = &[
    "nodes",
    "sockets",
    "llcs",
    "clusters",
    "cores",
    "threads",
    "capacity",
    "distance",
    "numbering",
    "node_reclaim_distance",
    "smt_throughput",
    "idle_states",
    "preset",
];

fn looks_like_path(spec: &str) -> bool {
    let lower = spec.to_ascii_lowercase();
    spec.contains('/') || lower.ends_with(".toml") || lower.ends_with(".json")
}

/// Turns any spec form into a machine (see the module docs for the forms).
pub fn parse_machine(spec: &str) -> Result<Machine, SpecError> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(SpecError::Empty);
    }
    if spec.bytes().all(|b| b.is_ascii_digit()) {
        let n = parse_u32("cpus", spec)?;
        if n == 0 {
            return Err(SpecError::ZeroCount {
                key: "cpus".to_owned(),
            });
        }
        return MachineSpec {
            cores: n,
            ..MachineSpec::default()
        }
        .build();
    }
    if crate::host::HostSpec::parse(spec).is_some() {
        return Err(SpecError::NeedsHost {
            spec: spec.to_owned(),
        });
    }
    if spec.contains('=') {
        return MachineSpec::parse_kv(spec)?.build();
    }
    if let Some(p) = preset(spec) {
        return MachineSpec::parse_kv(p.spec)?.build();
    }
    if looks_like_path(spec) {
        return load_file(Path::new(spec));
    }
    Err(SpecError::UnknownPreset {
        name: spec.to_owned(),
        known: preset_names(),
    })
}

fn parse_u32(key: &str, value: &str) -> Result<u32, SpecError> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SpecError::BadNumber {
            key: key.to_owned(),
            value: v.to_owned(),
        });
    }
    v.parse::<u32>().map_err(|_| SpecError::BadNumber {
        key: key.to_owned(),
        value: v.to_owned(),
    })
}

fn parse_count(key: &str, value: &str) -> Result<u32, SpecError> {
    let n = parse_u32(key, value)?;
    if n == 0 {
        return Err(SpecError::ZeroCount {
            key: key.to_owned(),
        });
    }
    Ok(n)
}

/// Parses a capacity list with `VALUExCOUNT` runs: `462x4,1024x4`.
pub fn parse_capacity_list(text: &str) -> Result<Vec<u32>, SpecError> {
    let mut out = Vec::new();
    for element in text.split(',') {
        let element = element.trim();
        let bad = || SpecError::BadCapacity {
            element: element.to_owned(),
        };
        let (value, count) = match element.split_once(['x', 'X']) {
            Some((v, c)) => (v.trim(), c.trim()),
            None => (element, "1"),
        };
        let is_num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !is_num(value) || !is_num(count) {
            return Err(bad());
        }
        let value: u32 = value.parse().map_err(|_| bad())?;
        let count: usize = count.parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_CPUS {
            return Err(bad());
        }
        if value == 0 || value > MAX_CPU_CAPACITY {
            return Err(SpecError::CapacityOutOfRange {
                element: element.to_owned(),
            });
        }
        if out.len() + count > MAX_CPUS {
            return Err(SpecError::CapacityLength {
                expected: MAX_CPUS,
                got: out.len() + count,
            });
        }
        out.extend(std::iter::repeat_n(value, count));
    }
    Ok(out)
}

/// Parses a distance value: one number, or rows separated by `;` of comma-separated numbers.
pub fn parse_distance(text: &str) -> Result<DistanceSpec, SpecError> {
    let bad = || SpecError::BadDistance {
        value: text.trim().to_owned(),
    };
    let num = |s: &str| -> Result<u32, SpecError> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse().map_err(|_| bad())
    };
    if !text.contains([',', ';']) {
        return Ok(DistanceSpec::Remote(num(text)?));
    }
    let rows = text
        .trim()
        .trim_end_matches(';')
        .split(';')
        .map(|row| row.split(',').map(num).collect::<Result<Vec<u32>, _>>())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DistanceSpec::Matrix(rows))
}

fn parse_numbering(text: &str) -> Result<Numbering, SpecError> {
    match text.trim() {
        "topology" => Ok(Numbering::Topology),
        "spread" => Ok(Numbering::Spread),
        other => Err(SpecError::BadNumbering {
            value: other.to_owned(),
        }),
    }
}

impl MachineSpec {
    /// Parses a `key=value` list (form 2 of the module docs).
    pub fn parse_kv(text: &str) -> Result<MachineSpec, SpecError> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for token in text.split(',') {
            let token = token.trim();
            match token.split_once('=') {
                Some((k, v)) => pairs.push((k.trim().to_owned(), v.trim().to_owned())),
                None => match pairs.last_mut() {
                    Some((k, v))
                        if (k == "capacity"
                            || k == "distance"
                            || k == "smt_throughput"
                            || k == "idle_states")
                            && !token.is_empty() =>
                    {
                        v.push(',');
                        v.push_str(token);
                    }
                    _ if token.is_empty() => {
                        return Err(SpecError::EmptyElement {
                            spec: text.trim().to_owned(),
                        });
                    }
                    _ => {
                        return Err(SpecError::MalformedToken {
                            token: token.to_owned(),
                        });
                    }
                },
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (k, v) in &pairs {
            if !KEYS.contains(&k.as_str()) {
                return Err(SpecError::UnknownKey {
                    key: k.clone(),
                    known: KEYS.join(", "),
                });
            }
            if !seen.insert(k.clone()) {
                return Err(SpecError::DuplicateKey { key: k.clone() });
            }
            if v.is_empty() {
                return Err(SpecError::MissingValue { key: k.clone() });
            }
        }
        let mut spec = match pairs.iter().find(|(k, _)| k == "preset") {
            Some((_, name)) => match preset(name) {
                Some(p) => MachineSpec::parse_kv(p.spec)?,
                None => {
                    return Err(SpecError::UnknownPreset {
                        name: name.clone(),
                        known: preset_names(),
                    });
                }
            },
            None => MachineSpec::default(),
        };
        for (k, v) in &pairs {
            spec.apply(k, v)?;
        }
        // A capacity list alone (`capacity=462x4,1024x4`) names the CPUs: one core each.
        let counts = [
            "nodes", "sockets", "llcs", "clusters", "cores", "threads", "preset",
        ];
        if let Some(c) = &spec.capacity
            && !pairs.iter().any(|(k, _)| counts.contains(&k.as_str()))
        {
            spec.cores = u32::try_from(c.len()).unwrap_or(u32::MAX);
        }
        Ok(spec)
    }

    /// Sets one key from its text value.
    fn apply(&mut self, key: &str, value: &str) -> Result<(), SpecError> {
        match key {
            "nodes" => self.nodes = parse_count(key, value)?,
            "sockets" => self.sockets = parse_count(key, value)?,
            "llcs" => self.llcs = parse_count(key, value)?,
            "clusters" => self.clusters = parse_count(key, value)?,
            "cores" => self.cores = parse_count(key, value)?,
            "threads" => self.threads = parse_count(key, value)?,
            "capacity" => self.capacity = Some(parse_capacity_list(value)?),
            "distance" => self.distance = Some(parse_distance(value)?),
            "numbering" => self.numbering = parse_numbering(value)?,
            "node_reclaim_distance" => self.node_reclaim_distance = parse_u32(key, value)?,
            "smt_throughput" => self.smt_throughput = Some(SmtThroughput::parse(value)?),
            "idle_states" => self.idle_states = Some(crate::cpuidle::parse_per_cpu(value)?),
            "preset" => {}
            other => {
                return Err(SpecError::UnknownKey {
                    key: other.to_owned(),
                    known: KEYS.join(", "),
                });
            }
        }
        Ok(())
    }

    /// Number of CPUs the spec describes, or an error if it exceeds [`MAX_CPUS`].
    pub fn nr_cpus(&self) -> Result<usize, SpecError> {
        let n = [
            self.nodes,
            self.sockets,
            self.llcs,
            self.clusters,
            self.cores,
            self.threads,
        ]
        .iter()
        .try_fold(1u64, |acc, c| acc.checked_mul(u64::from(*c)))
        .unwrap_or(u64::MAX);
        if n > MAX_CPUS as u64 {
            return Err(MachineError::TooManyCpus {
                nr_cpus: n,
                max: MAX_CPUS,
            }
            .into());
        }
        Ok(n as usize)
    }

    /// Builds the machine: CPUs numbered as `numbering` says, labels nested by construction.
    pub fn build(&self) -> Result<Machine, SpecError> {
        for (key, v) in [
            ("nodes", self.nodes),
            ("sockets", self.sockets),
            ("llcs", self.llcs),
            ("clusters", self.clusters),
            ("cores", self.cores),
            ("threads", self.threads),
        ] {
            if v == 0 {
                return Err(SpecError::ZeroCount {
                    key: key.to_owned(),
                });
            }
        }
        let n = self.nr_cpus()?;
        if self.nodes as usize > crate::machine::MAX_NUMNODES {
            return Err(MachineError::TooManyNodes {
                what: format!("`nodes={}`: the last", self.nodes),
                node: u64::from(self.nodes) - 1,
                max: crate::machine::MAX_NUMNODES,
            }
            .into());
        }
        if let Some(c) = &self.capacity
            && c.len() != n
        {
            return Err(SpecError::CapacityLength {
                expected: n,
                got: c.len(),
            });
        }
        let nr_cores = n / self.threads as usize;
        let mut descs = vec![
            CpuDesc {
                node: 0,
                package: 0,
                llc: 0,
                cluster: 0,
                core: 0,
                capacity: MAX_CPU_CAPACITY
            };
            n
        ];
        let mut core_idx = 0u32;
        for node in 0..self.nodes {
            for s in 0..self.sockets {
                let package = node * self.sockets + s;
                for l in 0..self.llcs {
                    let llc = package * self.llcs + l;
                    for c in 0..self.clusters {
                        let cluster = llc * self.clusters + c;
                        for _ in 0..self.cores {
                            for t in 0..self.threads {
                                let cpu = match self.numbering {
                                    Numbering::Topology => {
                                        core_idx as usize * self.threads as usize + t as usize
                                    }
                                    Numbering::Spread => t as usize * nr_cores + core_idx as usize,
                                };
                                descs[cpu] = CpuDesc {
                                    node,
                                    package,
                                    llc,
                                    cluster,
                                    core: core_idx,
                                    capacity: self
                                        .capacity
                                        .as_ref()
                                        .map_or(MAX_CPU_CAPACITY, |c| c[cpu]),
                                };
                            }
                            core_idx += 1;
                        }
                    }
                }
            }
        }
        let table = distance_table(self.distance.as_ref(), self.nodes as usize)?;
        let mut machine = Machine::new(&descs, table.as_deref(), self.node_reclaim_distance)?;
        if let Some(t) = &self.smt_throughput {
            machine = machine.with_smt_throughput(t.clone());
        }
        if let Some(runs) = &self.idle_states {
            machine = machine.with_idle_states(runs)?;
        }
        Ok(machine)
    }
}

/// The full table for `nodes` nodes from a distance spec.
fn distance_table(
    d: Option<&DistanceSpec>,
    nodes: usize,
) -> Result<Option<Vec<Vec<u32>>>, SpecError> {
    Ok(match d {
        None => None,
        Some(DistanceSpec::Remote(r)) => Some(
            (0..nodes)
                .map(|i| (0..nodes).map(|j| if i == j { 10 } else { *r }).collect())
                .collect(),
        ),
        Some(DistanceSpec::Matrix(m)) => {
            if m.len() != nodes {
                return Err(SpecError::DistanceNodes {
                    rows: m.len(),
                    nodes,
                });
            }
            Some(m.clone())
        }
    })
}

impl fmt::Display for MachineSpec {
    /// The spec as a canonical key=value list.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "nodes={},sockets={},llcs={},clusters={},cores={},threads={}",
            self.nodes, self.sockets, self.llcs, self.clusters, self.cores, self.threads
        )?;
        if let Some(c) = &self.capacity {
            let mut runs: Vec<(u32, usize)> = Vec::new();
            for v in c {
                match runs.last_mut() {
                    Some((last, n)) if last == v => *n += 1,
                    _ => runs.push((*v, 1)),
                }
            }
            let text: Vec<String> = runs.iter().map(|(v, n)| format!("{v}x{n}")).collect();
            write!(f, ",capacity={}", text.join(","))?;
        }
        match &self.distance {
            None => {}
            Some(DistanceSpec::Remote(r)) => write!(f, ",distance={r}")?,
            Some(DistanceSpec::Matrix(m)) => {
                let rows: Vec<String> = m
                    .iter()
                    .map(|r| r.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
                    .collect();
                write!(f, ",distance={}", rows.join(";"))?;
            }
        }
        if self.numbering == Numbering::Spread {
            f.write_str(",numbering=spread")?;
        }
        if self.node_reclaim_distance != RECLAIM_DISTANCE {
            write!(f, ",node_reclaim_distance={}", self.node_reclaim_distance)?;
        }
        if let Some(t) = &self.smt_throughput {
            write!(f, ",smt_throughput={t}")?;
        }
        if let Some(runs) = &self.idle_states {
            let runs: Vec<String> = runs
                .iter()
                .map(|(t, c)| {
                    if *c == 0 {
                        t.to_string()
                    } else {
                        format!("{t}x{c}")
                    }
                })
                .collect();
            write!(f, ",idle_states={}", runs.join(","))?;
        }
        Ok(())
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum CapacityField {
    Text(String),
    List(Vec<u32>),
}

#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum DistanceField {
    Remote(u32),
    Text(String),
    Matrix(Vec<Vec<u32>>),
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCpu {
    node: Option<u32>,
    package: Option<u32>,
    llc: Option<u32>,
    cluster: Option<u32>,
    core: Option<u32>,
    capacity: Option<u32>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    preset: Option<String>,
    nodes: Option<u32>,
    sockets: Option<u32>,
    llcs: Option<u32>,
    clusters: Option<u32>,
    cores: Option<u32>,
    threads: Option<u32>,
    capacity: Option<CapacityField>,
    distance: Option<DistanceField>,
    numbering: Option<String>,
    node_reclaim_distance: Option<u32>,
    smt_throughput: Option<String>,
    idle_states: Option<String>,
    cpus: Option<Vec<FileCpu>>,
}

/// Reads a TOML or JSON machine file (schema in the module docs), of at most
/// [`lbsim_kernel::input::MAX_INPUT_BYTES`].
pub fn load_file(path: &Path) -> Result<Machine, SpecError> {
    let shown = path.display().to_string();
    let text =
        lbsim_kernel::input::read_to_string_capped(path).map_err(|e| SpecError::ReadFile {
            path: shown.clone(),
            message: e.to_string(),
        })?;
    parse_file_text(&text, &shown)
}

/// Parses the text of a machine file (what [`load_file`] reads): JSON when `path` ends in
/// `.json` or the text starts with `{`, TOML otherwise; `path` names the file in messages.
pub fn parse_file_text(text: &str, path: &str) -> Result<Machine, SpecError> {
    let shown = path.to_owned();
    let one_line = |m: String| m.split_whitespace().collect::<Vec<_>>().join(" ");
    let is_json =
        shown.to_ascii_lowercase().ends_with(".json") || text.trim_start().starts_with('{');
    let file: FileSpec = if is_json {
        serde_json::from_str(text).map_err(|e| SpecError::ParseFile {
            path: shown.clone(),
            message: one_line(e.to_string()),
        })?
    } else {
        toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let message = one_line(e.message().to_owned());
            SpecError::ParseFile {
                path: shown.clone(),
                message: match line {
                    Some(l) => format!("line {l}: {message}"),
                    None => message,
                },
            }
        })?
    };
    machine_from_file(file).map_err(|e| match e {
        SpecError::ParseFile { message, .. } => SpecError::ParseFile {
            path: shown.clone(),
            message,
        },
        other => other,
    })
}

fn file_distance(d: &DistanceField) -> Result<DistanceSpec, SpecError> {
    Ok(match d {
        DistanceField::Remote(r) => DistanceSpec::Remote(*r),
        DistanceField::Text(t) => parse_distance(t)?,
        DistanceField::Matrix(m) => DistanceSpec::Matrix(m.clone()),
    })
}

fn machine_from_file(file: FileSpec) -> Result<Machine, SpecError> {
    let reclaim = file.node_reclaim_distance;
    if let Some(cpus) = &file.cpus {
        let shape_keys: Vec<&str> = [
            ("preset", file.preset.is_some()),
            ("nodes", file.nodes.is_some()),
            ("sockets", file.sockets.is_some()),
            ("llcs", file.llcs.is_some()),
            ("clusters", file.clusters.is_some()),
            ("cores", file.cores.is_some()),
            ("threads", file.threads.is_some()),
            ("capacity", file.capacity.is_some()),
            ("numbering", file.numbering.is_some()),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(k, _)| *k)
        .collect();
        if !shape_keys.is_empty() {
            return Err(SpecError::ParseFile {
                path: String::new(),
                message: format!("`cpus` cannot be combined with {}", shape_keys.join(", ")),
            });
        }
        let descs: Vec<CpuDesc> = cpus
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let node = c.node.unwrap_or(0);
                let package = c.package.unwrap_or(node);
                let llc = c.llc.unwrap_or(package);
                CpuDesc {
                    node,
                    package,
                    llc,
                    cluster: c.cluster.unwrap_or(llc),
                    core: c.core.unwrap_or(i as u32),
                    capacity: c.capacity.unwrap_or(MAX_CPU_CAPACITY),
                }
            })
            .collect();
        crate::machine::check_nodes(&descs, None)?;
        let max_node = descs.iter().map(|d| d.node).max().unwrap_or(0) as usize;
        let table = match &file.distance {
            None => None,
            Some(d) => match file_distance(d)? {
                DistanceSpec::Remote(r) => Some(
                    (0..=max_node)
                        .map(|i| {
                            (0..=max_node)
                                .map(|j| if i == j { 10 } else { r })
                                .collect()
                        })
                        .collect(),
                ),
                DistanceSpec::Matrix(m) => Some(m),
            },
        };
        let machine = Machine::new(
            &descs,
            table.as_deref(),
            reclaim.unwrap_or(RECLAIM_DISTANCE),
        )?;
        let mut machine = match &file.smt_throughput {
            Some(t) => machine.with_smt_throughput(SmtThroughput::parse(t)?),
            None => machine,
        };
        if let Some(t) = &file.idle_states {
            machine = machine.with_idle_states(&crate::cpuidle::parse_per_cpu(t)?)?;
        }
        return Ok(machine);
    }
    let mut spec = match &file.preset {
        Some(name) => match preset(name) {
            Some(p) => MachineSpec::parse_kv(p.spec)?,
            None => {
                return Err(SpecError::UnknownPreset {
                    name: name.clone(),
                    known: preset_names(),
                });
            }
        },
        None => MachineSpec::default(),
    };
    for (key, v, slot) in [
        ("nodes", file.nodes, &mut spec.nodes),
        ("sockets", file.sockets, &mut spec.sockets),
        ("llcs", file.llcs, &mut spec.llcs),
        ("clusters", file.clusters, &mut spec.clusters),
        ("cores", file.cores, &mut spec.cores),
        ("threads", file.threads, &mut spec.threads),
    ] {
        if let Some(v) = v {
            if v == 0 {
                return Err(SpecError::ZeroCount {
                    key: key.to_owned(),
                });
            }
            *slot = v;
        }
    }
    match &file.capacity {
        None => {}
        Some(CapacityField::Text(t)) => spec.capacity = Some(parse_capacity_list(t)?),
        Some(CapacityField::List(l)) => {
            if let Some(bad) = l.iter().find(|c| **c == 0 || **c > MAX_CPU_CAPACITY) {
                return Err(SpecError::CapacityOutOfRange {
                    element: bad.to_string(),
                });
            }
            spec.capacity = Some(l.clone());
        }
    }
    if let Some(d) = &file.distance {
        spec.distance = Some(file_distance(d)?);
    }
    if let Some(n) = &file.numbering {
        spec.numbering = parse_numbering(n)?;
    }
    if let Some(r) = reclaim {
        spec.node_reclaim_distance = r;
    }
    if let Some(t) = &file.smt_throughput {
        spec.smt_throughput = Some(SmtThroughput::parse(t)?);
    }
    if let Some(t) = &file.idle_states {
        spec.idle_states = Some(crate::cpuidle::parse_per_cpu(t)?);
    }
    spec.build()
}

#[cfg(test)]
mod tests;
