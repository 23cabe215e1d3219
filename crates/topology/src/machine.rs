//! A machine: its CPUs, where each sits (thread, core, cluster, LLC, package,
//! NUMA node), its capacity, and the NUMA distance table.
//!
//! This is what the kernel learns from firmware (ACPI PPTT/SRAT/SLIT or the
//! device tree) and keeps in `cpu_topology[]` (drivers/base/arch_topology.c),
//! `node_distance()` and `arch_scale_cpu_capacity()`. The masks below are the
//! ones the sched-domain levels are made of:
//! [`Machine::smt_mask`] is `topology_sibling_cpumask()`,
//! [`Machine::cluster_mask`] is `cluster_sibling`,
//! [`Machine::llc_mask`] is `llc_sibling` (the basis of `cpu_coregroup_mask()`),
//! [`Machine::node_mask`] is `cpumask_of_node(cpu_to_node(cpu))` (`cpu_cpu_mask()`).
//!
//! Ids of cores, clusters, LLCs and packages are global (not per parent) and
//! dense, numbered in order of first appearance by CPU number; node ids are the
//! indices of the distance table. The hierarchy must nest: all threads of a core
//! are in one cluster, a cluster in one LLC, an LLC in one package, a package in
//! one node. The kernel relies on that nesting (topology_span_sane() refuses
//! partially overlapping levels); [`Machine::new`] checks it.
//!
//! Left out: offline CPUs and CPU hotplug (every CPU is online and in one root
//! domain), isolated CPUs (`isolcpus=`), and memory-only nodes' effect on
//! anything but the distance table.

use crate::cpuidle::IdleStates;
use crate::cpumask::{CpuId, Cpumask};
use crate::smt::SmtThroughput;

/// The largest machine lbsim builds (x86 `MAXSMP`'s `NR_CPUS`).
pub const MAX_CPUS: usize = 8192;

/// The most NUMA nodes lbsim builds (the kernel's `MAX_NUMNODES` at its largest `NODES_SHIFT`,
/// 10): node ids are indices into the distance table, so they must be below this.
pub const MAX_NUMNODES: usize = 1024;

/// The capacity of the biggest CPU, `SCHED_CAPACITY_SCALE` (defined in `lbsim-kernel`), as the
/// `u32` a [`CpuDesc`] holds.
pub const MAX_CPU_CAPACITY: u32 = lbsim_kernel::SCHED_CAPACITY_SCALE as u32;

/// A node's distance to itself (`LOCAL_DISTANCE`).
pub const LOCAL_DISTANCE: u32 = 10;

/// The default distance between two nodes (`REMOTE_DISTANCE`).
pub const REMOTE_DISTANCE: u32 = 20;

/// The default `node_reclaim_distance` (`RECLAIM_DISTANCE`, include/linux/topology.h).
pub const RECLAIM_DISTANCE: u32 = 30;

/// Distances must be below this (`1 << DISTANCE_BITS`, the bound sched_init_numa() checks).
pub const NR_DISTANCE_VALUES: u32 = 256;

/// One CPU as the user describes it: global labels for its core, cluster, LLC,
/// package and node, and its capacity. Labels are arbitrary numbers; CPUs with
/// the same `core` label are SMT siblings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuDesc {
    /// NUMA node: an index into the distance table.
    pub node: u32,
    /// Package (socket) label.
    pub package: u32,
    /// Last-level-cache label.
    pub llc: u32,
    /// Cluster label.
    pub cluster: u32,
    /// Core label.
    pub core: u32,
    /// `arch_scale_cpu_capacity()`, 1..=1024.
    pub capacity: u32,
}

/// Where one CPU sits, with dense global ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTopology {
    /// Index of this hardware thread among its core's threads (in CPU order).
    pub thread: u32,
    /// Dense global core id.
    pub core: u32,
    /// Dense global cluster id.
    pub cluster: u32,
    /// Dense global LLC id.
    pub llc: u32,
    /// Dense global package id.
    pub package: u32,
    /// NUMA node (index into the distance table).
    pub node: u32,
    /// `arch_scale_cpu_capacity()`, 1..=1024.
    pub capacity: u32,
}

/// Why a machine description is invalid. Each variant names the offending part.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MachineError {
    /// The description has no CPU.
    #[error("the machine has no CPU")]
    NoCpus,
    /// More CPUs than [`MAX_CPUS`].
    #[error("the machine has {nr_cpus} CPUs; lbsim supports at most {max}")]
    TooManyCpus {
        /// CPUs asked for.
        nr_cpus: u64,
        /// The limit.
        max: usize,
    },
    /// A node id of [`MAX_NUMNODES`] or more (a CPU's node, or a distance table's size).
    #[error("{what} is node {node}; lbsim supports nodes 0..{max}")]
    TooManyNodes {
        /// What names the node (`cpu 3`, `the distance table`).
        what: String,
        /// The node id (for a table: its last row).
        node: u64,
        /// The limit, [`MAX_NUMNODES`].
        max: usize,
    },
    /// A capacity of 0 or above 1024.
    #[error("cpu {cpu}: capacity {capacity} is out of range (1..=1024)")]
    CapacityOutOfRange {
        /// The CPU.
        cpu: u32,
        /// The capacity given.
        capacity: u32,
    },
    /// The distance table is not square.
    #[error("distance table row {row} has {len} entries; expected {expected} (one per node)")]
    DistanceShape {
        /// The row (node).
        row: usize,
        /// Entries in that row.
        len: usize,
        /// Number of rows.
        expected: usize,
    },
    /// A diagonal entry is not 10.
    #[error("distance of node {node} to itself is {value}; it must be 10")]
    DistanceBadDiagonal {
        /// The node.
        node: usize,
        /// The entry.
        value: u32,
    },
    /// `distance[i][j] != distance[j][i]`.
    #[error(
        "distance table is not symmetric: node {i} to {j} is {dij} but node {j} to {i} is {dji}"
    )]
    DistanceNotSymmetric {
        /// Row.
        i: usize,
        /// Column.
        j: usize,
        /// `distance[i][j]`.
        dij: u32,
        /// `distance[j][i]`.
        dji: u32,
    },
    /// An off-diagonal distance not in 11..=255.
    #[error("distance of node {i} to node {j} is {value}; remote distances must be 11..=255")]
    DistanceOutOfRange {
        /// Row.
        i: usize,
        /// Column.
        j: usize,
        /// The entry.
        value: u32,
    },
    /// A CPU on a node the distance table does not have.
    #[error("cpu {cpu} is on node {node}, but the distance table has {nr_nodes} nodes")]
    NodeOutOfRange {
        /// The CPU.
        cpu: u32,
        /// Its node.
        node: u32,
        /// Nodes in the distance table.
        nr_nodes: usize,
    },
    /// The hierarchy does not nest (e.g. two threads of one core in different LLCs).
    #[error(
        "cpu {cpu}: {level} {label} is in {parent_level} {expected} (cpu {first_cpu}) but cpu {cpu} puts it in {parent_level} {found}"
    )]
    Nesting {
        /// The CPU where the conflict shows.
        cpu: u32,
        /// The inner level (`core`, `cluster`, `llc`, `package`).
        level: &'static str,
        /// The inner level's label.
        label: u32,
        /// The outer level.
        parent_level: &'static str,
        /// The outer label seen first.
        expected: u32,
        /// The CPU that set `expected`.
        first_cpu: u32,
        /// The conflicting outer label.
        found: u32,
    },
}

/// Refuses a CPU on node [`MAX_NUMNODES`] or above, or a distance table of more rows, before
/// anything is sized by them.
pub fn check_nodes(cpus: &[CpuDesc], table_rows: Option<usize>) -> Result<(), MachineError> {
    if let Some((i, c)) = cpus
        .iter()
        .enumerate()
        .find(|(_, c)| c.node as usize >= MAX_NUMNODES)
    {
        return Err(MachineError::TooManyNodes {
            what: format!("cpu {i}"),
            node: u64::from(c.node),
            max: MAX_NUMNODES,
        });
    }
    match table_rows {
        Some(rows) if rows > MAX_NUMNODES => Err(MachineError::TooManyNodes {
            what: "the distance table's last row".to_owned(),
            node: rows as u64 - 1,
            max: MAX_NUMNODES,
        }),
        _ => Ok(()),
    }
}

/// A machine: CPUs in CPU-number order with their place and capacity, and the NUMA distances.
#[derive(Clone, Debug)]
pub struct Machine {
    cpus: Vec<CpuTopology>,
    nr_nodes: usize,
    distance: Vec<u32>,
    node_reclaim_distance: u32,
    all: Cpumask,
    core_masks: Vec<Cpumask>,
    /// Each core's CPUs in order: core `k` is `core_cpus[core_starts[k]..core_starts[k + 1]]`
    /// (what iterating [`Machine::smt_mask`] visits, without scanning its empty words).
    core_cpus: Vec<CpuId>,
    core_starts: Vec<u32>,
    cluster_masks: Vec<Cpumask>,
    llc_masks: Vec<Cpumask>,
    package_masks: Vec<Cpumask>,
    node_masks: Vec<Cpumask>,
    smt_throughput: SmtThroughput,
    /// Some core has more than one hardware thread (computed once: the balancer asks on
    /// every pass).
    has_smt: bool,
    /// The distinct cpuidle tables, and each CPU's index into them.
    idle_tables: Vec<IdleStates>,
    idle_of: Vec<u16>,
}

/// Maps labels to dense ids in order of first appearance.
fn densify(labels: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut map = std::collections::BTreeMap::new();
    labels
        .map(|l| {
            let next = map.len() as u32;
            *map.entry(l).or_insert(next)
        })
        .collect()
}

/// Checks that `inner[cpu] -> outer[cpu]` is a function (each inner label has one outer label).
fn check_nesting(
    inner: &[u32],
    outer: &[u32],
    level: &'static str,
    parent_level: &'static str,
) -> Result<(), MachineError> {
    let mut seen: std::collections::BTreeMap<u32, (u32, u32)> = std::collections::BTreeMap::new();
    for (cpu, (i, o)) in inner.iter().zip(outer).enumerate() {
        match seen.get(i) {
            Some(&(expected, first_cpu)) if expected != *o => {
                return Err(MachineError::Nesting {
                    cpu: cpu as u32,
                    level,
                    label: *i,
                    parent_level,
                    expected,
                    first_cpu,
                    found: *o,
                });
            }
            Some(_) => {}
            None => {
                seen.insert(*i, (*o, cpu as u32));
            }
        }
    }
    Ok(())
}

impl Machine {
    /// Builds a machine from per-CPU descriptions (CPU `i` is `cpus[i]`) and a
    /// distance table (`None`: one node per node label up to the largest,
    /// 10 on the diagonal and [`REMOTE_DISTANCE`] elsewhere).
    pub fn new(
        cpus: &[CpuDesc],
        distance: Option<&[Vec<u32>]>,
        node_reclaim_distance: u32,
    ) -> Result<Machine, MachineError> {
        if cpus.is_empty() {
            return Err(MachineError::NoCpus);
        }
        if cpus.len() > MAX_CPUS {
            return Err(MachineError::TooManyCpus {
                nr_cpus: cpus.len() as u64,
                max: MAX_CPUS,
            });
        }
        for (i, c) in cpus.iter().enumerate() {
            if c.capacity == 0 || c.capacity > MAX_CPU_CAPACITY {
                return Err(MachineError::CapacityOutOfRange {
                    cpu: i as u32,
                    capacity: c.capacity,
                });
            }
        }
        check_nodes(cpus, distance.map(<[Vec<u32>]>::len))?;
        let max_node = cpus.iter().map(|c| c.node).max().unwrap_or(0) as usize;
        let table: Vec<Vec<u32>> = match distance {
            Some(t) => t.to_vec(),
            None => (0..=max_node)
                .map(|i| {
                    (0..=max_node)
                        .map(|j| {
                            if i == j {
                                LOCAL_DISTANCE
                            } else {
                                REMOTE_DISTANCE
                            }
                        })
                        .collect()
                })
                .collect(),
        };
        let nr_nodes = table.len();
        for (i, row) in table.iter().enumerate() {
            if row.len() != nr_nodes {
                return Err(MachineError::DistanceShape {
                    row: i,
                    len: row.len(),
                    expected: nr_nodes,
                });
            }
        }
        for (i, row) in table.iter().enumerate() {
            if row[i] != LOCAL_DISTANCE {
                return Err(MachineError::DistanceBadDiagonal {
                    node: i,
                    value: row[i],
                });
            }
            for (j, &dij) in row.iter().enumerate() {
                let dji = table[j][i];
                if dij != dji {
                    return Err(MachineError::DistanceNotSymmetric { i, j, dij, dji });
                }
                if i != j && (dij <= LOCAL_DISTANCE || dij >= NR_DISTANCE_VALUES) {
                    return Err(MachineError::DistanceOutOfRange { i, j, value: dij });
                }
            }
        }
        for (i, c) in cpus.iter().enumerate() {
            if c.node as usize >= nr_nodes {
                return Err(MachineError::NodeOutOfRange {
                    cpu: i as u32,
                    node: c.node,
                    nr_nodes,
                });
            }
        }
        let lab = |f: fn(&CpuDesc) -> u32| cpus.iter().map(f).collect::<Vec<u32>>();
        let (core_l, cluster_l, llc_l, pkg_l, node_l) = (
            lab(|c| c.core),
            lab(|c| c.cluster),
            lab(|c| c.llc),
            lab(|c| c.package),
            lab(|c| c.node),
        );
        check_nesting(&core_l, &cluster_l, "core", "cluster")?;
        check_nesting(&cluster_l, &llc_l, "cluster", "llc")?;
        check_nesting(&llc_l, &pkg_l, "llc", "package")?;
        check_nesting(&pkg_l, &node_l, "package", "node")?;
        let core = densify(core_l.iter().copied());
        let cluster = densify(cluster_l.iter().copied());
        let llc = densify(llc_l.iter().copied());
        let package = densify(pkg_l.iter().copied());
        let n = cpus.len();
        let mut threads_seen = vec![0u32; n];
        let topo: Vec<CpuTopology> = (0..n)
            .map(|i| {
                let thread = threads_seen[core[i] as usize];
                threads_seen[core[i] as usize] += 1;
                CpuTopology {
                    thread,
                    core: core[i],
                    cluster: cluster[i],
                    llc: llc[i],
                    package: package[i],
                    node: cpus[i].node,
                    capacity: cpus[i].capacity,
                }
            })
            .collect();
        let masks = |ids: &dyn Fn(&CpuTopology) -> u32, count: usize| {
            let mut v = vec![Cpumask::new(n); count];
            for (i, c) in topo.iter().enumerate() {
                v[ids(c) as usize].set(CpuId(i as u32));
            }
            v
        };
        let count = |ids: &[u32]| ids.iter().max().map_or(0, |m| *m as usize + 1);
        let core_masks = masks(&|c| c.core, count(&core));
        let mut core_cpus = Vec::with_capacity(n);
        let mut core_starts = Vec::with_capacity(core_masks.len() + 1);
        for m in &core_masks {
            core_starts.push(core_cpus.len() as u32);
            core_cpus.extend(m.iter());
        }
        core_starts.push(core_cpus.len() as u32);
        Ok(Machine {
            has_smt: core_masks.iter().any(|m| m.weight() > 1),
            smt_throughput: SmtThroughput::default_table(),
            idle_tables: vec![IdleStates::none()],
            idle_of: vec![0; n],
            core_masks,
            core_cpus,
            core_starts,
            cluster_masks: masks(&|c| c.cluster, count(&cluster)),
            llc_masks: masks(&|c| c.llc, count(&llc)),
            package_masks: masks(&|c| c.package, count(&package)),
            node_masks: masks(&|c| c.node, nr_nodes),
            cpus: topo,
            nr_nodes,
            distance: table.into_iter().flatten().collect(),
            node_reclaim_distance,
            all: Cpumask::full(n),
        })
    }

    /// Number of CPUs (`nr_cpu_ids`; all are online).
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Every CPU (`cpu_online_mask`, `cpu_active_mask`).
    pub fn all_cpus(&self) -> &Cpumask {
        &self.all
    }

    /// Where `cpu` sits.
    pub fn cpu(&self, cpu: CpuId) -> &CpuTopology {
        &self.cpus[cpu.index()]
    }

    /// All CPUs' places, indexed by CPU number.
    pub fn cpus(&self) -> &[CpuTopology] {
        &self.cpus
    }

    /// `arch_scale_cpu_capacity(cpu)`.
    pub fn capacity(&self, cpu: CpuId) -> u32 {
        self.cpus[cpu.index()].capacity
    }

    /// How a core's throughput is shared by its busy hardware threads ([`crate::smt`]).
    pub fn smt_throughput(&self) -> &SmtThroughput {
        &self.smt_throughput
    }

    /// The same machine with another SMT throughput table.
    #[must_use]
    pub fn with_smt_throughput(mut self, t: SmtThroughput) -> Machine {
        self.smt_throughput = t;
        self
    }

    /// `cpu`'s cpuidle driver states (empty: no driver).
    pub fn idle_states(&self, cpu: CpuId) -> &IdleStates {
        &self.idle_tables[usize::from(self.idle_of[cpu.index()])]
    }

    /// The same machine with other cpuidle tables: `runs` of `(table, count)` in CPU order
    /// (one run with count 0: every CPU).
    ///
    /// # Errors
    /// The counts do not add up to the number of CPUs.
    pub fn with_idle_states(
        mut self,
        runs: &[(IdleStates, usize)],
    ) -> Result<Machine, crate::spec::SpecError> {
        let n = self.cpus.len();
        let mut tables: Vec<IdleStates> = Vec::new();
        let mut of = Vec::with_capacity(n);
        for (t, count) in runs {
            let count = if *count == 0 && runs.len() == 1 {
                n
            } else {
                *count
            };
            let i = match tables.iter().position(|x| x == t) {
                Some(i) => i,
                None => {
                    tables.push(t.clone());
                    tables.len() - 1
                }
            };
            of.extend(std::iter::repeat_n(i as u16, count.min(n + 1)));
            if of.len() > n {
                break;
            }
        }
        if of.len() != n {
            return Err(crate::spec::SpecError::BadIdleStates {
                value: runs
                    .iter()
                    .map(|(t, c)| format!("{t}x{c}"))
                    .collect::<Vec<_>>()
                    .join(","),
                reason: format!("the runs cover {} CPUs; the machine has {n}", of.len()),
            });
        }
        self.idle_tables = tables;
        self.idle_of = of;
        Ok(self)
    }

    /// The SMT siblings of `cpu`, itself included (`topology_sibling_cpumask()`, `cpu_smt_mask()`).
    pub fn smt_mask(&self, cpu: CpuId) -> &Cpumask {
        &self.core_masks[self.cpus[cpu.index()].core as usize]
    }

    /// The CPUs of [`Machine::smt_mask`] in order, as a list.
    #[inline]
    pub fn smt_siblings(&self, cpu: CpuId) -> &[CpuId] {
        let k = self.cpus[cpu.index()].core as usize;
        &self.core_cpus[self.core_starts[k] as usize..self.core_starts[k + 1] as usize]
    }

    /// The CPUs of `cpu`'s cluster (`cpu_topology[cpu].cluster_sibling`).
    pub fn cluster_mask(&self, cpu: CpuId) -> &Cpumask {
        &self.cluster_masks[self.cpus[cpu.index()].cluster as usize]
    }

    /// The CPUs sharing `cpu`'s last-level cache (`llc_sibling`; `cpu_coregroup_mask()` on a nested machine).
    pub fn llc_mask(&self, cpu: CpuId) -> &Cpumask {
        &self.llc_masks[self.cpus[cpu.index()].llc as usize]
    }

    /// The CPUs of `cpu`'s package (`topology_core_cpumask()`).
    pub fn package_mask(&self, cpu: CpuId) -> &Cpumask {
        &self.package_masks[self.cpus[cpu.index()].package as usize]
    }

    /// The CPUs of `cpu`'s node (`cpumask_of_node(cpu_to_node(cpu))`, which is `cpu_cpu_mask()`).
    pub fn node_mask(&self, cpu: CpuId) -> &Cpumask {
        &self.node_masks[self.cpus[cpu.index()].node as usize]
    }

    /// The CPUs of `node` (`cpumask_of_node()`); empty for a memory-only node.
    pub fn node_cpus(&self, node: u32) -> &Cpumask {
        &self.node_masks[node as usize]
    }

    /// `cpu_to_node(cpu)`.
    pub fn cpu_to_node(&self, cpu: CpuId) -> u32 {
        self.cpus[cpu.index()].node
    }

    /// Number of nodes in the distance table (`nr_node_ids`).
    pub fn nr_nodes(&self) -> usize {
        self.nr_nodes
    }

    /// Whether `node` has CPUs (`node_state(node, N_CPU)`).
    pub fn node_has_cpus(&self, node: u32) -> bool {
        !self.node_masks[node as usize].is_empty()
    }

    /// `node_distance(a, b)`.
    pub fn node_distance(&self, a: u32, b: u32) -> u32 {
        self.distance[a as usize * self.nr_nodes + b as usize]
    }

    /// `node_reclaim_distance`: NUMA levels farther than this lose
    /// `SD_BALANCE_EXEC`, `SD_BALANCE_FORK` and `SD_WAKE_AFFINE` (30 by default;
    /// x86 sets 32 on AMD Zen).
    pub fn node_reclaim_distance(&self) -> u32 {
        self.node_reclaim_distance
    }

    /// Number of cores.
    pub fn nr_cores(&self) -> usize {
        self.core_masks.len()
    }

    /// Number of clusters.
    pub fn nr_clusters(&self) -> usize {
        self.cluster_masks.len()
    }

    /// Number of last-level caches.
    pub fn nr_llcs(&self) -> usize {
        self.llc_masks.len()
    }

    /// Number of packages.
    pub fn nr_packages(&self) -> usize {
        self.package_masks.len()
    }

    /// Whether some core has more than one thread.
    pub fn has_smt(&self) -> bool {
        self.has_smt
    }
}

#[cfg(test)]
mod tests;
