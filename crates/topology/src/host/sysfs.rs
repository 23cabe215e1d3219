//! A machine from the files of `/sys/devices/system` (or a copy of them): the topology the
//! kernel built (drivers/base/topology.c), its LLCs (drivers/base/cacheinfo.c), capacities
//! (drivers/base/arch_topology.c), NUMA nodes (drivers/base/node.c) and cpuidle states
//! (drivers/cpuidle/sysfs.c).
//!
//! What is read, relative to the root (`cpuN`, `nodeN`, `indexM`, `stateM` with a number):
//!
//! - `cpu/online`: the CPUs (else every `cpu/cpuN` with a `topology` directory); they must
//!   be `0..N-1`, lbsim's CPUs being all online;
//! - `cpu/cpuN/topology/thread_siblings_list` (the core: `topology_sibling_cpumask()`),
//!   `physical_package_id` (the package), `core_id` and `die_id` (checked, not modelled:
//!   lbsim has no die level), `cluster_id` (the cluster, when every CPU has one);
//! - `cpu/cpuN/cache/indexM/{level,type,shared_cpu_list}`: the highest-level data or
//!   unified cache is the LLC (`llc_sibling`; none at all: each package its own LLC);
//! - `cpu/cpuN/cpu_capacity` (`arch_scale_cpu_capacity()`; absent: 1024);
//! - `node/nodeN/cpulist` and `distance` (absent: one node; 10 local, 20 remote);
//! - `cpu/cpuN/cpuidle/stateM/{name,desc,latency,residency,disable,flags}` and
//!   `cpu/cpuidle/current_driver`: the idle states, latency and residency in us; a state
//!   with `disable` set is left out (the governors never pick it); it polls when `flags`
//!   says `POLLING` or, without `flags` (mainline has none), when it is the `POLL` state of
//!   cpuidle_poll_state_init() or powernv's `snooze`; it wakes by a store when it polls or
//!   its `desc` names MWAIT (intel_idle's `MWAIT 0x20`, ACPI FFH's `ACPI FFH MWAIT 0x0`); its
//!   hardware exit time is taken to be its declared latency.
//!
//! Files may end in NUL bytes: GNU tar pads a sysfs file to the 4096 bytes `stat()` gives.

use std::collections::{BTreeMap, BTreeSet};

use crate::cpuidle::{CPUIDLE_STATE_MAX, IdleState, IdleStates, MAX_IDLE_US};
use crate::cpumask::Cpumask;
use crate::host::{HostError, Probed, apply_clusters, dense, is_unknown_cluster, nr, runs_text};
use crate::machine::{
    CpuDesc, LOCAL_DISTANCE, MAX_CPU_CAPACITY, MAX_CPUS, MAX_NUMNODES, Machine, MachineError,
    RECLAIM_DISTANCE, REMOTE_DISTANCE,
};

/// The files the reader reads, as patterns relative to the root: `#` stands for a number.
pub const FILES: &[&str] = &[
    "cpu/online",
    "cpu/cpuidle/current_driver",
    "cpu/cpu#/cpu_capacity",
    "cpu/cpu#/topology/core_id",
    "cpu/cpu#/topology/cluster_id",
    "cpu/cpu#/topology/die_id",
    "cpu/cpu#/topology/physical_package_id",
    "cpu/cpu#/topology/thread_siblings_list",
    "cpu/cpu#/cache/index#/level",
    "cpu/cpu#/cache/index#/type",
    "cpu/cpu#/cache/index#/shared_cpu_list",
    "cpu/cpu#/cpuidle/state#/name",
    "cpu/cpu#/cpuidle/state#/desc",
    "cpu/cpu#/cpuidle/state#/latency",
    "cpu/cpu#/cpuidle/state#/residency",
    "cpu/cpu#/cpuidle/state#/disable",
    "cpu/cpu#/cpuidle/state#/flags",
    "node/node#/cpulist",
    "node/node#/distance",
];

/// Whether path component `c` matches pattern component `p` (`cpu#`: `cpu` and digits).
fn component_matches(p: &str, c: &str) -> bool {
    match p.strip_suffix('#') {
        Some(stem) => c
            .strip_prefix(stem)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        None => p == c,
    }
}

fn prefix_matches(pattern: &str, rel: &str, whole: bool) -> bool {
    let (mut p, mut r) = (pattern.split('/'), rel.split('/').filter(|c| !c.is_empty()));
    loop {
        match (p.next(), r.next()) {
            (pc, None) => return !whole || pc.is_none(),
            (Some(pc), Some(rc)) if component_matches(pc, rc) => {}
            _ => return false,
        }
    }
}

/// Whether the reader reads the file at `rel` (a path relative to the root).
pub fn wanted(rel: &str) -> bool {
    !rel.is_empty() && FILES.iter().any(|p| prefix_matches(p, rel, true))
}

/// Whether directory `rel` (relative to the root; `""` is the root) may hold a file the
/// reader reads.
pub fn descend(rel: &str) -> bool {
    FILES
        .iter()
        .any(|p| prefix_matches(p, rel, false) && !prefix_matches(p, rel, true))
}

/// The files read from a sysfs tree: contents by path relative to the root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysfsFiles {
    root: String,
    files: BTreeMap<String, String>,
}

impl SysfsFiles {
    /// An empty tree whose files are named `ROOT/rel` in messages.
    pub fn new(root: &str) -> SysfsFiles {
        SysfsFiles {
            root: root.trim_end_matches('/').to_owned(),
            files: BTreeMap::new(),
        }
    }

    /// Adds the file at `rel` (relative to the root) with its contents.
    pub fn insert(&mut self, rel: &str, contents: &str) {
        self.files
            .insert(rel.trim_matches('/').to_owned(), contents.to_owned());
    }

    /// The root as messages name it.
    pub fn root(&self) -> &str {
        &self.root
    }

    fn path(&self, rel: &str) -> String {
        format!("{}/{rel}", self.root)
    }

    /// The file's contents without the trailing newline (and tar's NUL padding).
    fn get(&self, rel: &str) -> Option<&str> {
        self.files.get(rel).map(|s| s.trim_end_matches('\0').trim())
    }

    fn require(&self, rel: &str, why: &str) -> Result<&str, HostError> {
        self.get(rel).ok_or_else(|| HostError::Missing {
            path: self.path(rel),
            why: why.to_owned(),
        })
    }

    /// The numbers `N` of the entries `DIR/STEMN` that hold some file.
    fn numbered(&self, dir: &str, stem: &str) -> Vec<u32> {
        let prefix = format!("{dir}/{stem}");
        let set: BTreeSet<u32> = self
            .files
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(k, _)| k[prefix.len()..].split('/').next()?.parse().ok())
            .collect();
        set.into_iter().collect()
    }

    fn int(&self, rel: &str) -> Result<Option<i64>, HostError> {
        self.get(rel)
            .map(|v| {
                v.parse::<i64>().map_err(|_| HostError::Parse {
                    path: self.path(rel),
                    value: v.to_owned(),
                    reason: "is not a number".to_owned(),
                })
            })
            .transpose()
    }

    fn us(&self, rel: &str) -> Result<u64, HostError> {
        let v = self.require(rel, "an idle state needs it")?;
        v.parse::<u64>()
            .ok()
            .filter(|&us| us <= MAX_IDLE_US)
            .ok_or_else(|| HostError::Parse {
                path: self.path(rel),
                value: v.to_owned(),
                reason: format!("is not a time in us (0..={MAX_IDLE_US})"),
            })
    }

    /// A cpulist file's CPUs below `nr_cpus` (offline CPUs beyond are dropped).
    fn cpulist(&self, rel: &str, nr_cpus: usize) -> Result<Vec<u32>, HostError> {
        let text = self.require(rel, "the machine cannot be built without it")?;
        let mask = Cpumask::parse_cpulist(text, MAX_CPUS).map_err(|e| HostError::Parse {
            path: self.path(rel),
            value: text.to_owned(),
            reason: format!("is not a cpulist ({e})"),
        })?;
        Ok(mask
            .iter()
            .map(|c| c.0)
            .filter(|&c| (c as usize) < nr_cpus)
            .collect())
    }
}

/// `cpus` as a cpulist (`0-3,8`), whatever their numbers: a directory name such as
/// `cpu41024` is beyond any mask lbsim builds.
fn list_text(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j == i {
            out.push_str(&sorted[i].to_string());
        } else {
            out.push_str(&format!("{}-{}", sorted[i], sorted[j]));
        }
        i = j + 1;
    }
    out
}

/// The online CPUs, `0..N-1`.
fn online_cpus(
    t: &SysfsFiles,
    found: &mut Vec<String>,
    assumed: &mut Vec<String>,
) -> Result<usize, HostError> {
    let dirs: Vec<u32> = t
        .numbered("cpu", "cpu")
        .into_iter()
        .filter(|c| {
            t.files
                .keys()
                .any(|k| k.starts_with(&format!("cpu/cpu{c}/topology/")))
        })
        .collect();
    let (cpus, source) = match t.get("cpu/online") {
        Some(_) => (t.cpulist("cpu/online", MAX_CPUS)?, "cpu/online"),
        None => (dirs.clone(), "cpu/cpu*/topology"),
    };
    if cpus.is_empty() {
        return Err(HostError::NoCpus {
            path: t.path("cpu"),
        });
    }
    let n = cpus.len();
    if cpus.iter().enumerate().any(|(i, &c)| c as usize != i) {
        return Err(HostError::Inconsistent {
            path: t.path(source),
            reason: format!(
                "CPUs {} are online; lbsim's CPUs are 0..N-1, all online (take the copy with CPUs 0..N-1 online)",
                list_text(&cpus)
            ),
        });
    }
    found.push(format!("{n} CPUs ({source}: {})", list_text(&cpus)));
    let offline: Vec<u32> = dirs.into_iter().filter(|&c| c as usize >= n).collect();
    if !offline.is_empty() {
        assumed.push(format!(
            "cpus {} are offline: left out",
            list_text(&offline)
        ));
    }
    Ok(n)
}

/// Checks that the masks read per CPU partition the CPUs: each CPU in its own mask, every
/// CPU of a mask reading the same mask. Returns each CPU's label (its mask's first CPU).
fn partition(
    t: &SysfsFiles,
    masks: &[Vec<u32>],
    file: &dyn Fn(usize) -> String,
) -> Result<Vec<u32>, HostError> {
    for (i, m) in masks.iter().enumerate() {
        if !m.contains(&(i as u32)) {
            return Err(HostError::Inconsistent {
                path: t.path(&file(i)),
                reason: format!("lists {} without cpu {i} itself", list_text(m)),
            });
        }
        for &j in m {
            if masks[j as usize] != *m {
                return Err(HostError::Inconsistent {
                    path: t.path(&file(j as usize)),
                    reason: format!(
                        "lists {} but cpu {i}'s lists {}",
                        list_text(&masks[j as usize]),
                        list_text(m)
                    ),
                });
            }
        }
    }
    Ok(masks.iter().map(|m| m[0]).collect())
}

/// Each CPU's LLC label: the first CPU of its highest-level data or unified cache's
/// `shared_cpu_list`; `None` when no CPU has cache information.
fn llcs(t: &SysfsFiles, n: usize, found: &mut Vec<String>) -> Result<Option<Vec<u32>>, HostError> {
    let mut masks = Vec::with_capacity(n);
    let mut files = Vec::with_capacity(n);
    let mut levels = BTreeSet::new();
    for cpu in 0..n {
        let dir = format!("cpu/cpu{cpu}/cache");
        let mut best: Option<(i64, u32)> = None;
        for idx in t.numbered(&dir, "index") {
            let Some(level) = t.int(&format!("{dir}/index{idx}/level"))? else {
                continue;
            };
            if t.get(&format!("{dir}/index{idx}/type")) == Some("Instruction") {
                continue;
            }
            if best.is_none_or(|(l, _)| level > l) {
                best = Some((level, idx));
            }
        }
        match best {
            Some((level, idx)) => {
                let f = format!("{dir}/index{idx}/shared_cpu_list");
                masks.push(t.cpulist(&f, n)?);
                files.push(f);
                levels.insert(level);
            }
            None if cpu == 0 => return Ok(None),
            None => {
                return Err(HostError::Missing {
                    path: t.path(&format!("{dir}/index*/level")),
                    why: "cpu 0 has cache information, so every CPU needs it".to_owned(),
                });
            }
        }
    }
    let labels = partition(t, &masks, &|i| files[i].clone())?;
    let nr_llcs = labels.iter().collect::<BTreeSet<_>>().len();
    let levels: Vec<String> = levels.iter().map(|l| format!("L{l}")).collect();
    found.push(format!(
        "{}, {} (cpu*/cache/index*/shared_cpu_list)",
        nr(nr_llcs, "LLC"),
        levels.join(" and ")
    ));
    Ok(Some(labels))
}

/// Each CPU's `cpu_capacity`, or `None` when no CPU has one.
fn capacities(t: &SysfsFiles, n: usize) -> Result<Option<Vec<u32>>, HostError> {
    let mut caps = Vec::with_capacity(n);
    for cpu in 0..n {
        let rel = format!("cpu/cpu{cpu}/cpu_capacity");
        match t.get(&rel) {
            None if cpu == 0 => return Ok(None),
            None => {
                return Err(HostError::Missing {
                    path: t.path(&rel),
                    why: "cpu 0 has a cpu_capacity, so every CPU needs one".to_owned(),
                });
            }
            Some(v) => caps.push(
                v.parse::<u32>()
                    .ok()
                    .filter(|c| (1..=MAX_CPU_CAPACITY).contains(c))
                    .ok_or_else(|| HostError::Parse {
                        path: t.path(&rel),
                        value: v.to_owned(),
                        reason: "is not a capacity (1..=1024)".to_owned(),
                    })?,
            ),
        }
    }
    Ok(Some(caps))
}

/// Each CPU's node (dense) and the distance table, if the tree has node directories.
type Nodes = (Vec<u32>, Option<Vec<Vec<u32>>>);

fn nodes(
    t: &SysfsFiles,
    n: usize,
    found: &mut Vec<String>,
    assumed: &mut Vec<String>,
) -> Result<Option<Nodes>, HostError> {
    let ids = t.numbered("node", "node");
    if ids.is_empty() {
        return Ok(None);
    }
    if ids.len() > MAX_NUMNODES {
        return Err(HostError::Machine {
            path: t.path("node"),
            source: MachineError::TooManyNodes {
                what: "the node directories' last".to_owned(),
                node: ids.len() as u64 - 1,
                max: MAX_NUMNODES,
            },
        });
    }
    let mut of_cpu: Vec<Option<u32>> = vec![None; n];
    for (k, id) in ids.iter().enumerate() {
        let rel = format!("node/node{id}/cpulist");
        for cpu in t.cpulist(&rel, n)? {
            if let Some(other) = of_cpu[cpu as usize].replace(k as u32) {
                return Err(HostError::Inconsistent {
                    path: t.path(&rel),
                    reason: format!(
                        "lists cpu {cpu}, which node{} lists too",
                        ids[other as usize]
                    ),
                });
            }
        }
    }
    let of_cpu: Vec<u32> = of_cpu
        .iter()
        .enumerate()
        .map(|(cpu, k)| {
            k.ok_or_else(|| HostError::Inconsistent {
                path: t.path("node/node*/cpulist"),
                reason: format!("cpu {cpu} is in no node's cpulist"),
            })
        })
        .collect::<Result<_, _>>()?;
    let names: Vec<String> = ids.iter().map(|i| format!("node{i}")).collect();
    found.push(format!(
        "{}: {} (node/node*/cpulist)",
        nr(ids.len(), "node"),
        names.join(", ")
    ));
    if ids.iter().enumerate().any(|(k, &id)| k as u32 != id) {
        assumed.push(format!(
            "nodes {} numbered 0..{} in that order (lbsim's node ids index the distance table)",
            names.join(", "),
            ids.len() - 1
        ));
    }
    let mut rows = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        let rel = format!("node/node{id}/distance");
        let Some(text) = t.get(&rel) else {
            if k == 0 {
                break;
            }
            return Err(HostError::Missing {
                path: t.path(&rel),
                why: "node0 has a distance row, so every node needs one".to_owned(),
            });
        };
        let row: Vec<u32> = text
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| HostError::Parse {
                path: t.path(&rel),
                value: text.to_owned(),
                reason: "is not a row of distances".to_owned(),
            })?;
        if row.len() != ids.len() {
            return Err(HostError::Parse {
                path: t.path(&rel),
                value: text.to_owned(),
                reason: format!("has {} distances; there are {} nodes", row.len(), ids.len()),
            });
        }
        rows.push(row);
    }
    if rows.is_empty() {
        if ids.len() > 1 {
            assumed.push(format!(
                "distances: no node/node*/distance; {LOCAL_DISTANCE} local, {REMOTE_DISTANCE} remote"
            ));
        }
        return Ok(Some((of_cpu, None)));
    }
    let text: Vec<String> = rows
        .iter()
        .map(|r| r.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
        .collect();
    found.push(format!(
        "distances {} (node/node*/distance)",
        text.join(";")
    ));
    Ok(Some((of_cpu, Some(rows))))
}

/// Flags a `flags` file may name (`CPUIDLE_FLAG_` prefix optional).
fn has_flag(flags: Option<&str>, name: &str) -> bool {
    flags.is_some_and(|f| {
        f.split(|c: char| c.is_whitespace() || c == ',' || c == '|')
            .any(|w| {
                w.trim_start_matches("CPUIDLE_FLAG_")
                    .eq_ignore_ascii_case(name)
            })
    })
}

/// One CPU's enabled idle states (empty: no cpuidle directory), and the disabled ones' names.
fn idle_states(
    t: &SysfsFiles,
    cpu: usize,
    driver: &str,
) -> Result<(IdleStates, Vec<String>), HostError> {
    let dir = format!("cpu/cpu{cpu}/cpuidle");
    let mut states = Vec::new();
    let mut disabled = Vec::new();
    for m in t.numbered(&dir, "state") {
        let p = format!("{dir}/state{m}");
        let name = t.require(&format!("{p}/name"), "an idle state needs it")?;
        let exit_latency_ns = t.us(&format!("{p}/latency"))? * 1000;
        let target_residency_ns = t.us(&format!("{p}/residency"))? * 1000;
        if t.int(&format!("{p}/disable"))?.unwrap_or(0) != 0 {
            disabled.push(format!("state{m} ({name})"));
            continue;
        }
        let flags = t.get(&format!("{p}/flags"));
        let polling = if flags.is_some() {
            has_flag(flags, "POLLING")
        } else {
            name == "POLL" || name == "snooze"
        };
        let desc = t.get(&format!("{p}/desc")).unwrap_or("");
        if polling && !states.is_empty() {
            return Err(HostError::Inconsistent {
                path: t.path(&format!("{p}/name")),
                reason: format!(
                    "`{name}` polls but is not the first enabled state (cpuidle_poll_state_init())"
                ),
            });
        }
        states.push(IdleState {
            name: name.to_owned(),
            exit_latency_ns,
            target_residency_ns,
            exit_ns: exit_latency_ns,
            polling,
            wake_by_store: polling || desc.to_ascii_uppercase().contains("MWAIT"),
            timer_stop: has_flag(flags, "TIMER_STOP"),
        });
    }
    if states.len() > CPUIDLE_STATE_MAX {
        return Err(HostError::Inconsistent {
            path: t.path(&dir),
            reason: format!(
                "{} enabled states; a driver has at most {CPUIDLE_STATE_MAX} (CPUIDLE_STATE_MAX)",
                states.len()
            ),
        });
    }
    let name = if states.is_empty() { "none" } else { driver };
    Ok((
        IdleStates {
            name: name.to_owned(),
            states,
        },
        disabled,
    ))
}

fn idle_text(t: &IdleStates) -> String {
    if !t.has_driver() {
        return "no states".to_owned();
    }
    t.states
        .iter()
        .map(|s| {
            format!(
                "{} {}/{} us",
                s.name,
                s.exit_latency_ns / 1000,
                s.target_residency_ns / 1000
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads a machine from a sysfs tree (see the module docs for the files and rules).
///
/// # Errors
/// A required file is missing or does not parse, files contradict each other, or the
/// machine is not one lbsim builds; the message names the file.
pub fn parse(t: &SysfsFiles) -> Result<Probed, HostError> {
    let (mut found, mut assumed) = (Vec::new(), Vec::new());
    let n = online_cpus(t, &mut found, &mut assumed)?;
    let topo = |cpu: usize, f: &str| format!("cpu/cpu{cpu}/topology/{f}");
    let mut siblings = Vec::with_capacity(n);
    let mut package = Vec::with_capacity(n);
    let mut core_id = Vec::with_capacity(n);
    let mut die = Vec::with_capacity(n);
    let mut cluster = Vec::with_capacity(n);
    for cpu in 0..n {
        siblings.push(t.cpulist(&topo(cpu, "thread_siblings_list"), n)?);
        let pkg = t
            .int(&topo(cpu, "physical_package_id"))?
            .ok_or_else(|| HostError::Missing {
                path: t.path(&topo(cpu, "physical_package_id")),
                why: "every CPU needs its package".to_owned(),
            })?;
        package.push(pkg);
        core_id.push(t.int(&topo(cpu, "core_id"))?);
        die.push((pkg, t.int(&topo(cpu, "die_id"))?));
        cluster.push(
            t.int(&topo(cpu, "cluster_id"))?
                .filter(|&c| !is_unknown_cluster(c))
                .map(|c| (pkg, c)),
        );
    }
    let core = partition(t, &siblings, &|i| topo(i, "thread_siblings_list"))?;
    for cpu in 0..n {
        let first = core[cpu] as usize;
        for (what, differs) in [
            ("physical_package_id", package[cpu] != package[first]),
            ("core_id", core_id[cpu] != core_id[first]),
        ] {
            if differs {
                return Err(HostError::Inconsistent {
                    path: t.path(&topo(cpu, what)),
                    reason: format!("differs from that of cpu {first}, its SMT sibling"),
                });
            }
        }
    }
    let widths: BTreeSet<usize> = siblings.iter().map(Vec::len).collect();
    let widths: Vec<String> = widths.iter().map(usize::to_string).collect();
    let per_core = if widths.len() == 1 && widths[0] == "1" {
        "1 thread".to_owned()
    } else {
        format!("{} threads", widths.join(" or "))
    };
    found.push(format!(
        "{}, {per_core} per core (topology/thread_siblings_list)",
        nr(core.iter().collect::<BTreeSet<_>>().len(), "core"),
    ));
    let package = dense(&package);
    let nr_packages = package.iter().collect::<BTreeSet<_>>().len();
    found.push(format!(
        "{} (topology/physical_package_id)",
        nr(nr_packages, "package")
    ));
    let nr_dies = die.iter().collect::<BTreeSet<_>>().len();
    if die.iter().all(|d| d.1.is_some()) && nr_dies > nr_packages {
        assumed.push(format!(
            "{nr_dies} dies (topology/die_id): lbsim has no die level; their LLCs separate them"
        ));
    }
    let llc = match llcs(t, n, &mut found)? {
        Some(l) => l,
        None => {
            assumed.push("LLCs: no cpu*/cache; each package its own LLC".to_owned());
            package.clone()
        }
    };
    let capacity = capacities(t, n)?;
    match &capacity {
        Some(c) => found.push(format!("capacities {} (cpu_capacity)", runs_text(c))),
        None => assumed.push(format!(
            "capacities: no cpu_capacity; every CPU {MAX_CPU_CAPACITY}"
        )),
    }
    let (node, distance) = match nodes(t, n, &mut found, &mut assumed)? {
        Some(nd) => nd,
        None => {
            assumed.push("nodes: no node/node*; one node".to_owned());
            (vec![0; n], None)
        }
    };
    let mut descs: Vec<CpuDesc> = (0..n)
        .map(|cpu| CpuDesc {
            node: node[cpu],
            package: package[cpu],
            llc: llc[cpu],
            cluster: 0,
            core: core[cpu],
            capacity: capacity.as_ref().map_or(MAX_CPU_CAPACITY, |c| c[cpu]),
        })
        .collect();
    let clusters: Option<Vec<u32>> = cluster
        .iter()
        .copied()
        .collect::<Option<Vec<_>>>()
        .map(|c| dense(&c));
    apply_clusters(
        &mut descs,
        clusters.as_deref(),
        "topology/cluster_id",
        &mut found,
        &mut assumed,
    );
    if distance.as_ref().is_some_and(|d| d.len() > 1) {
        assumed.push(format!(
            "node_reclaim_distance {RECLAIM_DISTANCE} (RECLAIM_DISTANCE; sysfs does not show x86's 32 on AMD Zen)"
        ));
    }
    let mut machine =
        Machine::new(&descs, distance.as_deref(), RECLAIM_DISTANCE).map_err(|source| {
            HostError::Machine {
                path: t.root.clone(),
                source,
            }
        })?;
    if machine.has_smt() {
        assumed.push(format!(
            "smt_throughput {} (lbsim's default; sysfs does not show how siblings share a core)",
            machine.smt_throughput()
        ));
    }
    let driver = t.get("cpu/cpuidle/current_driver").unwrap_or("sysfs");
    let mut runs: Vec<(IdleStates, usize)> = Vec::new();
    let mut disabled: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for cpu in 0..n {
        let (table, off) = idle_states(t, cpu, driver)?;
        for s in off {
            disabled.entry(s).or_default().push(cpu as u32);
        }
        match runs.last_mut() {
            Some((last, count)) if *last == table => *count += 1,
            _ => runs.push((table, 1)),
        }
    }
    if runs.iter().all(|(tb, _)| !tb.has_driver()) {
        assumed.push(
            "idle states: no cpu*/cpuidle; no cpuidle driver, as the kernel without one (default_idle_call(), no rq->idle_state)"
                .to_owned(),
        );
    } else {
        let mut cpu = 0;
        for (tb, count) in &runs {
            let cpus: Vec<u32> = (cpu..cpu + *count as u32).collect();
            cpu += *count as u32;
            found.push(format!(
                "idle states of cpus {} ({}): {}",
                list_text(&cpus),
                tb.name,
                idle_text(tb)
            ));
        }
        assumed.push(
            "idle states: exit_ns = the declared latency (sysfs has no hardware exit time); a state wakes by a store only if it polls or its desc names MWAIT".to_owned(),
        );
        for (s, cpus) in &disabled {
            assumed.push(format!(
                "idle state {s} of cpus {} is disabled: left out",
                list_text(cpus)
            ));
        }
        machine = machine
            .with_idle_states(&runs)
            .map_err(|e| HostError::Inconsistent {
                path: t.path("cpu/cpu*/cpuidle"),
                reason: e.to_string(),
            })?;
    }
    Ok(Probed {
        machine,
        found,
        assumed,
    })
}
