//! Sched domains and groups, built as kernel/sched/topology.c builds them (v6.6-v6.12).
//!
//! [`Topology::build`] runs the kernel's sequence on a [`Machine`] whose CPUs are
//! all online and form one root domain:
//!
//! 1. sched_init_numa(): the distinct node distances give a NODE level
//!    (numa_level 0, no `SD_NUMA`) and one NUMA level per larger distance
//!    (`SD_NUMA`, overlapping groups); the levels follow default_topology's SMT,
//!    CLS, MC, PKG.
//! 2. build_sched_domains(), per CPU, bottom-up: sd_init() per level (flags,
//!    imbalance_pct, intervals, cache_nice_tries, `shared`,
//!    asym_cpu_capacity_classify(), PREFER_SIBLING cleared on the child of an
//!    asymmetric domain), stopping at the first level that spans every CPU.
//! 3. build_sched_groups() / build_overlap_sched_groups() per CPU and level,
//!    with get_group(), find_descended_sibling() and build_balance_mask().
//! 4. imb_numa_nr, as build_sched_domains() computes it.
//! 5. init_sched_groups_capacity(): group_weight and cores; the capacity of
//!    every sched_group_capacity (see below).
//! 6. cpu_attach_domain() per CPU: sd_parent_degenerate()/sd_degenerate()
//!    remove levels, including the side effects on group flags; then
//!    update_top_cache_domain() sets the per-CPU shortcuts.
//!
//! The result is immutable. Runtime state the balancer changes
//! (balance_interval, nr_balance_failed, last_balance, max_newidle_lb_cost,
//! sgc->imbalance, sgc->next_update, sds->nr_busy_cpus, has_idle_cores) lives
//! in the balancer, indexed by (cpu, level), [`SgcId`] or [`SharedId`]; this
//! module gives their initial values.
//!
//! Deliberate differences from the kernel:
//! - The topology table is default_topology with CONFIG_SCHED_SMT, _CLUSTER and
//!   _MC set (arm64 and x86 defconfigs); the cluster mask follows arm64's
//!   cpu_clustergroup_mask() (a cluster not smaller than its LLC gives the SMT
//!   mask, so CLS degenerates). Architecture tables (x86 ITMT/hybrid, powerpc)
//!   and `SD_ASYM_PACKING` are not modelled.
//! - Group capacities are the steady state of update_group_capacity(): the sum,
//!   minimum and maximum of arch_scale_cpu_capacity() over the group. At boot
//!   the kernel's reverse-CPU-order pass can leave transient values in NUMA
//!   groups on machines whose CPUs differ in capacity; those are not reproduced.
//! - Identical groups are stored once: the kernel shares non-overlapping groups
//!   between CPUs but gives each CPU private copies of NUMA groups; here any two
//!   groups with the same span, sgc and flags are one [`SchedGroup`].
//! - relax_domain_level (cpusets) and isolated CPUs are not modelled.

use std::collections::BTreeMap;
use std::fmt;

use crate::cpumask::{CpuId, Cpumask};
use crate::flags::{SDF_SHARED_CHILD, SdFlag, SdFlags};
use crate::machine::Machine;

/// Index of an interned CPU mask in a [`Topology`] (spans and balance masks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpanId(u32);

/// Index of a [`SchedGroup`] in a [`Topology`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupId(u32);

/// Index of a [`SchedGroupCapacity`] in a [`Topology`]: the key for per-sgc
/// runtime state (`imbalance`, `next_update`, the current capacity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SgcId(u32);

/// Index of a [`SchedDomainShared`] in a [`Topology`]: the key for the
/// `sched_domain_shared` runtime state (`nr_busy_cpus`, `has_idle_cores`, `nr_idle_scan`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedId(u32);

macro_rules! id_index {
    ($($t:ty),*) => {$(
        impl $t {
            /// The index into the topology's vector of these objects.
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }
    )*};
}
id_index!(SpanId, GroupId, SgcId, SharedId);

/// The name of a topology level (`sd->name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DomainName {
    /// Hardware threads of one core.
    Smt,
    /// Cores of one cluster.
    Cls,
    /// Cores sharing the last-level cache.
    Mc,
    /// The package, or rather the node (`cpu_cpu_mask()`); `DIE` before v6.7.
    Pkg,
    /// The NUMA identity level (numa_level 0, no `SD_NUMA`).
    Node,
    /// A NUMA level (`SD_NUMA`, overlapping groups).
    Numa,
}

impl DomainName {
    /// The name as the kernel prints it.
    pub const fn as_str(self) -> &'static str {
        match self {
            DomainName::Smt => "SMT",
            DomainName::Cls => "CLS",
            DomainName::Mc => "MC",
            DomainName::Pkg => "PKG",
            DomainName::Node => "NODE",
            DomainName::Numa => "NUMA",
        }
    }
}

impl fmt::Display for DomainName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of the topology table (`struct sched_domain_topology_level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopologyLevel {
    /// `tl->name`.
    pub name: DomainName,
    /// The level's topology flags (`tl->sd_flags()`).
    pub sd_flags: SdFlags,
    /// `tl->flags & SDTL_OVERLAP`.
    pub overlap: bool,
    /// `tl->numa_level` (0 for non-NUMA levels and NODE).
    pub numa_level: usize,
}

/// `sched_numa_topology_type` (init_numa_topology_type()).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaTopologyType {
    /// All nodes directly connected, or not NUMA.
    Direct,
    /// Some nodes reachable only through intermediary nodes.
    GluelessMesh,
    /// Nodes reach each other through a backplane.
    Backplane,
}

pub use crate::params::SdParams;

/// Why building the domains failed (a topology the kernel itself would warn about).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// build_balance_mask() produced an empty mask (the kernel WARNs and indexes out of bounds).
    #[error(
        "empty group balance mask at level {level} building cpu {cpu}'s groups (group span {span})"
    )]
    EmptyBalanceMask {
        /// The level name.
        level: &'static str,
        /// The CPU whose groups were being built.
        cpu: CpuId,
        /// The group's span, as a cpulist.
        span: String,
    },
}

/// A circular group list: `len` groups starting at `start` of a stored list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GroupRing {
    offset: u32,
    len: u32,
    start: u32,
}

/// One CPU's sched domain at one level (`struct sched_domain`), after degeneration.
#[derive(Clone, Debug)]
pub struct SchedDomain {
    /// Position in the CPU's domain list, bottom-up from 0 (debugfs `domainN`, `domain-N`).
    pub level: usize,
    /// The kernel's `sd->level`: the level index when it was built, before degenerate levels were removed.
    pub sd_level: u32,
    /// `sd->name`.
    pub name: DomainName,
    /// Index of the topology level in [`Topology::levels`].
    pub tl: usize,
    /// `sched_domain_span(sd)`.
    pub span: SpanId,
    /// `sd->span_weight`.
    pub span_weight: u32,
    /// `sd->flags`.
    pub flags: SdFlags,
    /// `sd->imbalance_pct`.
    pub imbalance_pct: u32,
    /// `sd->min_interval` (ms).
    pub min_interval: u64,
    /// `sd->max_interval` (ms).
    pub max_interval: u64,
    /// The initial `sd->balance_interval` (ms).
    pub balance_interval: u64,
    /// `sd->busy_factor`.
    pub busy_factor: u32,
    /// `sd->cache_nice_tries`.
    pub cache_nice_tries: u32,
    /// `sd->imb_numa_nr`.
    pub imb_numa_nr: u32,
    /// `sd->shared` (set on `SD_SHARE_LLC` levels).
    pub shared: Option<SharedId>,
    groups: GroupRing,
}

impl SchedDomain {
    /// Number of groups (`sd->groups` ring length).
    pub fn nr_groups(&self) -> usize {
        self.groups.len as usize
    }

    /// Whether `sd->shared` is set.
    pub fn has_shared(&self) -> bool {
        self.shared.is_some()
    }
}

/// A sched group (`struct sched_group`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedGroup {
    /// `sched_group_span(sg)`.
    pub span: SpanId,
    /// `group_balance_mask(sg)` (stored in the sgc in the kernel).
    pub balance_mask: SpanId,
    /// `group_balance_cpu(sg)`: the first CPU of the balance mask.
    pub balance_cpu: CpuId,
    /// `sg->group_weight`.
    pub group_weight: u32,
    /// `sg->cores`: number of cores (SMT sibling sets) in the group.
    pub cores: u32,
    /// `sg->flags`: the child domain's flags (as left by cpu_attach_domain()).
    pub flags: SdFlags,
    /// `sg->asym_prefer_cpu`; only computed on `SD_ASYM_PACKING` domains, so always `None` here.
    pub asym_prefer_cpu: Option<CpuId>,
    /// `sg->sgc`.
    pub sgc: SgcId,
    /// Initial `sgc->capacity`: the sum of the group's CPU capacities.
    pub capacity: u64,
    /// Initial `sgc->min_capacity`.
    pub min_capacity: u64,
    /// Initial `sgc->max_capacity`.
    pub max_capacity: u64,
}

/// A `struct sched_group_capacity`: shared by every CPU that builds the same group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedGroupCapacity {
    /// `sgc->id`: the CPU whose per-CPU sgc slot it is (what sched_domain_debug prints before `:{`).
    pub id: CpuId,
    /// Index of the topology level whose `sd_data` it belongs to.
    pub tl: usize,
    /// The balance mask (`sgc->cpumask`).
    pub balance_mask: SpanId,
    /// Initial `capacity`.
    pub capacity: u64,
    /// Initial `min_capacity`.
    pub min_capacity: u64,
    /// Initial `max_capacity`.
    pub max_capacity: u64,
}

/// A `struct sched_domain_shared`: one per LLC-sharing domain span and level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedDomainShared {
    /// The first CPU of the domain span (the per-CPU slot the kernel uses).
    pub id: CpuId,
    /// Index of the topology level.
    pub tl: usize,
    /// Initial `nr_busy_cpus` (the domain weight).
    pub nr_busy_cpus: u32,
}

/// Per-CPU shortcuts set by update_top_cache_domain(). Levels index [`Topology::domains`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuShortcuts {
    /// `sd_llc`: the highest domain with `SD_SHARE_LLC`.
    pub sd_llc: Option<usize>,
    /// `sd_llc_size`: its weight (1 without one).
    pub sd_llc_size: u32,
    /// `sd_llc_id`: its first CPU (the CPU itself without one).
    pub sd_llc_id: CpuId,
    /// `sd_llc_shared`: its shared state.
    pub sd_llc_shared: Option<SharedId>,
    /// `sd_share_id`: the first CPU of the lowest `SD_CLUSTER` domain, else `sd_llc_id`.
    pub sd_share_id: CpuId,
    /// `sd_numa`: the lowest `SD_NUMA` domain.
    pub sd_numa: Option<usize>,
    /// `sd_asym_packing`: the highest `SD_ASYM_PACKING` domain.
    pub sd_asym_packing: Option<usize>,
    /// `sd_asym_cpucapacity`: the lowest `SD_ASYM_CPUCAPACITY_FULL` domain.
    pub sd_asym_cpucapacity: Option<usize>,
}

/// The sched domains and groups of a machine.
#[derive(Clone, Debug)]
pub struct Topology {
    machine: Machine,
    params: SdParams,
    levels: Vec<TopologyLevel>,
    numa_distances: Vec<u32>,
    numa_type: NumaTopologyType,
    spans: Vec<Cpumask>,
    domains: Vec<SchedDomain>,
    cpu_domains: Vec<u32>,
    groups: Vec<SchedGroup>,
    group_lists: Vec<GroupId>,
    sgcs: Vec<SchedGroupCapacity>,
    shareds: Vec<SchedDomainShared>,
    shortcuts: Vec<CpuShortcuts>,
    has_asym_cpucapacity: bool,
    has_cluster: bool,
}

/// Iterator over a domain's groups, local group first.
#[derive(Clone, Debug)]
pub struct Groups<'a> {
    topo: &'a Topology,
    ring: GroupRing,
    k: u32,
}

impl<'a> Iterator for Groups<'a> {
    type Item = &'a SchedGroup;

    fn next(&mut self) -> Option<&'a SchedGroup> {
        if self.k >= self.ring.len {
            return None;
        }
        let pos = self.ring.offset + (self.ring.start + self.k) % self.ring.len;
        self.k += 1;
        Some(&self.topo.groups[self.topo.group_lists[pos as usize].index()])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.ring.len - self.k) as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Groups<'_> {}

/// Iterator over a domain's group ids, local group first.
#[derive(Clone, Debug)]
pub struct GroupIds<'a> {
    lists: &'a [GroupId],
    ring: GroupRing,
    k: u32,
}

impl Iterator for GroupIds<'_> {
    type Item = GroupId;

    fn next(&mut self) -> Option<GroupId> {
        if self.k >= self.ring.len {
            return None;
        }
        let pos = self.ring.offset + (self.ring.start + self.k) % self.ring.len;
        self.k += 1;
        Some(self.lists[pos as usize])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.ring.len - self.k) as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for GroupIds<'_> {}

impl Topology {
    /// Builds the sched domains and groups of `machine` (see the module docs for the steps).
    pub fn build(machine: &Machine, params: &SdParams) -> Result<Topology, TopologyError> {
        Builder::new(machine, params).run()
    }

    /// The machine the domains were built for.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The sd_init() inputs used.
    pub fn params(&self) -> &SdParams {
        &self.params
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.machine.nr_cpus()
    }

    /// The topology table: default_topology's levels, then NODE and the NUMA levels.
    pub fn levels(&self) -> &[TopologyLevel] {
        &self.levels
    }

    /// `sched_domains_numa_distance[]`: the distinct node distances, ascending (10 first).
    pub fn numa_distances(&self) -> &[u32] {
        &self.numa_distances
    }

    /// `sched_numa_topology_type`.
    pub fn numa_topology_type(&self) -> NumaTopologyType {
        self.numa_type
    }

    /// `cpu`'s domains, bottom-up (`for_each_domain`); empty on a 1-CPU machine.
    pub fn domains(&self, cpu: CpuId) -> &[SchedDomain] {
        let i = cpu.index();
        &self.domains[self.cpu_domains[i] as usize..self.cpu_domains[i + 1] as usize]
    }

    /// `cpu`'s domain at position `level`, if it has that many.
    pub fn domain(&self, cpu: CpuId, level: usize) -> Option<&SchedDomain> {
        self.domains(cpu).get(level)
    }

    /// The CPU mask of an interned span.
    pub fn span(&self, id: SpanId) -> &Cpumask {
        &self.spans[id.index()]
    }

    /// A group.
    pub fn group(&self, id: GroupId) -> &SchedGroup {
        &self.groups[id.index()]
    }

    /// All groups (each stored once).
    pub fn all_groups(&self) -> &[SchedGroup] {
        &self.groups
    }

    /// A domain's groups in the kernel's circular order, the local group first.
    pub fn groups(&self, sd: &SchedDomain) -> Groups<'_> {
        Groups {
            topo: self,
            ring: sd.groups,
            k: 0,
        }
    }

    /// A domain's group ids in the kernel's circular order, the local group first.
    pub fn group_ids(&self, sd: &SchedDomain) -> GroupIds<'_> {
        GroupIds {
            lists: &self.group_lists,
            ring: sd.groups,
            k: 0,
        }
    }

    /// The domain's local group (`sd->groups`).
    pub fn local_group(&self, sd: &SchedDomain) -> &SchedGroup {
        let pos = sd.groups.offset + sd.groups.start;
        &self.groups[self.group_lists[pos as usize].index()]
    }

    /// A sched_group_capacity.
    pub fn sgc(&self, id: SgcId) -> &SchedGroupCapacity {
        &self.sgcs[id.index()]
    }

    /// Number of sched_group_capacity objects (size of per-sgc state vectors).
    pub fn nr_sgcs(&self) -> usize {
        self.sgcs.len()
    }

    /// A sched_domain_shared.
    pub fn shared(&self, id: SharedId) -> &SchedDomainShared {
        &self.shareds[id.index()]
    }

    /// Number of sched_domain_shared objects (size of per-shared state vectors).
    pub fn nr_shared(&self) -> usize {
        self.shareds.len()
    }

    /// `cpu`'s shortcuts (update_top_cache_domain()).
    pub fn shortcuts(&self, cpu: CpuId) -> &CpuShortcuts {
        &self.shortcuts[cpu.index()]
    }

    /// `per_cpu(sd_llc, cpu)`: the position of the LLC domain.
    pub fn sd_llc(&self, cpu: CpuId) -> Option<usize> {
        self.shortcuts[cpu.index()].sd_llc
    }

    /// `per_cpu(sd_llc_size, cpu)`.
    pub fn sd_llc_size(&self, cpu: CpuId) -> u32 {
        self.shortcuts[cpu.index()].sd_llc_size
    }

    /// `per_cpu(sd_llc_id, cpu)`.
    pub fn sd_llc_id(&self, cpu: CpuId) -> CpuId {
        self.shortcuts[cpu.index()].sd_llc_id
    }

    /// `per_cpu(sd_share_id, cpu)`.
    pub fn sd_share_id(&self, cpu: CpuId) -> CpuId {
        self.shortcuts[cpu.index()].sd_share_id
    }

    /// `per_cpu(sd_numa, cpu)`.
    pub fn sd_numa(&self, cpu: CpuId) -> Option<usize> {
        self.shortcuts[cpu.index()].sd_numa
    }

    /// `per_cpu(sd_asym_cpucapacity, cpu)`.
    pub fn sd_asym_cpucapacity(&self, cpu: CpuId) -> Option<usize> {
        self.shortcuts[cpu.index()].sd_asym_cpucapacity
    }

    /// `per_cpu(sd_asym_packing, cpu)`.
    pub fn sd_asym_packing(&self, cpu: CpuId) -> Option<usize> {
        self.shortcuts[cpu.index()].sd_asym_packing
    }

    /// `cpus_share_cache(a, b)`: same `sd_llc_id`.
    pub fn cpus_share_cache(&self, a: CpuId, b: CpuId) -> bool {
        a == b || self.sd_llc_id(a) == self.sd_llc_id(b)
    }

    /// `cpus_share_resources(a, b)`: same `sd_share_id` (same cluster, or same LLC without clusters).
    pub fn cpus_share_resources(&self, a: CpuId, b: CpuId) -> bool {
        a == b || self.sd_share_id(a) == self.sd_share_id(b)
    }

    /// The `sched_asym_cpucapacity` static key: some domain was built with `SD_ASYM_CPUCAPACITY`.
    pub fn has_asym_cpucapacity(&self) -> bool {
        self.has_asym_cpucapacity
    }

    /// The `sched_cluster_active` static key: some CPU kept an `SD_CLUSTER` domain.
    pub fn has_cluster(&self) -> bool {
        self.has_cluster
    }
}

// ---------------------------------------------------------------------------
// The builder: the kernel's data structures during build_sched_domains().
// ---------------------------------------------------------------------------

const NONE: u32 = u32::MAX;

/// A sched_domain while it is being built (`*per_cpu_ptr(sdd->sd, cpu)`).
#[derive(Clone, Debug)]
struct BSd {
    built: bool,
    span: u32,
    flags: SdFlags,
    level: u32,
    sd_weight: u32,
    imbalance_pct: u32,
    cache_nice_tries: u32,
    shared: u32,
    imb_numa_nr: u32,
    ring: GroupRing,
}

/// A sched_group object while building.
#[derive(Clone, Debug)]
struct BGroup {
    span: u32,
    sgc: u32,
    flags: SdFlags,
}

/// A sched_group_capacity object while building.
#[derive(Clone, Debug)]
struct BSgc {
    tl: usize,
    cpu: u32,
    refs: u32,
    balance_mask: u32,
}

/// The groups of one non-overlapping level and span, as the span's first CPU built them.
#[derive(Debug)]
struct Layout {
    /// The span's CPUs, ascending.
    cpus: Vec<u32>,
    /// For each of those CPUs, the index of its group in the stored list.
    gidx: Vec<u32>,
    /// The stored list: `lists[offset..offset + len]`.
    offset: u32,
    len: u32,
}

/// Interned masks with their weight and first CPU.
#[derive(Debug, Default)]
struct Spans {
    masks: Vec<Cpumask>,
    weight: Vec<u32>,
    first: Vec<u32>,
    index: BTreeMap<Cpumask, u32>,
}

impl Spans {
    fn intern(&mut self, m: &Cpumask) -> u32 {
        if let Some(id) = self.index.get(m) {
            return *id;
        }
        let id = self.masks.len() as u32;
        self.weight.push(m.weight() as u32);
        self.first.push(m.first().map_or(NONE, |c| c.0));
        self.masks.push(m.clone());
        self.index.insert(m.clone(), id);
        id
    }
}

struct Builder<'m> {
    m: &'m Machine,
    params: SdParams,
    n: usize,
    tls: Vec<TopologyLevel>,
    numa_distances: Vec<u32>,
    numa_type: NumaTopologyType,
    /// `tl_mask[t * n + cpu]`: the interned `tl->mask(cpu)`.
    tl_mask: Vec<u32>,
    spans: Spans,
    empty_span: u32,
    all_span: u32,
    /// `sd[t * n + cpu]`.
    sd: Vec<BSd>,
    groups: Vec<BGroup>,
    /// Non-overlapping group objects: `sg_slot[t * n + cpu]` (`sdd->sg`).
    sg_slot: Vec<u32>,
    sgcs: Vec<BSgc>,
    /// `sgc_slot[t * n + cpu]` (`sdd->sgc`).
    sgc_slot: Vec<u32>,
    /// `(tl, first cpu)` of each sched_domain_shared (`sdd->sds`).
    shareds: Vec<(usize, u32, u32)>,
    shared_slot: Vec<u32>,
    lists: Vec<u32>,
    /// Last stored ring per `(tl, span)`, to share rotations.
    last_list: BTreeMap<(usize, u32), (u32, u32)>,
    /// Cache of asym_cpu_capacity_classify() per span.
    asym: Vec<Option<SdFlags>>,
    /// Cache of build_balance_mask() per `(tl, group span)`.
    balance_masks: BTreeMap<(usize, u32), u32>,
    /// Number of distinct CPU capacities (the length of `asym_cap_list`, or 1).
    nr_capacities: usize,
    /// Group layouts of non-overlapping levels, per `(tl, span)`.
    layouts: Vec<Layout>,
    layouts_index: BTreeMap<(usize, u32), usize>,
    /// Generation counter for the walk stamps.
    stamp: u32,
    has_asym: bool,
}

impl<'m> Builder<'m> {
    fn new(m: &'m Machine, params: &SdParams) -> Builder<'m> {
        let n = m.nr_cpus();
        let mut spans = Spans::default();
        let empty_span = spans.intern(&Cpumask::new(n));
        let all_span = spans.intern(m.all_cpus());
        Builder {
            m,
            params: *params,
            n,
            tls: Vec::new(),
            numa_distances: Vec::new(),
            numa_type: NumaTopologyType::Direct,
            tl_mask: Vec::new(),
            spans,
            empty_span,
            all_span,
            sd: Vec::new(),
            groups: Vec::new(),
            sg_slot: Vec::new(),
            sgcs: Vec::new(),
            sgc_slot: Vec::new(),
            shareds: Vec::new(),
            shared_slot: Vec::new(),
            lists: Vec::new(),
            last_list: BTreeMap::new(),
            asym: Vec::new(),
            balance_masks: BTreeMap::new(),
            nr_capacities: m
                .cpus()
                .iter()
                .map(|c| c.capacity)
                .collect::<std::collections::BTreeSet<u32>>()
                .len(),
            layouts: Vec::new(),
            layouts_index: BTreeMap::new(),
            stamp: 0,
            has_asym: false,
        }
    }

    fn run(mut self) -> Result<Topology, TopologyError> {
        let numa_masks = self.init_numa();
        self.init_levels(&numa_masks);
        self.build_domains();
        self.build_groups()?;
        self.compute_imb_numa_nr();
        self.finish()
    }

    /// Follows topology.c: sched_init_numa() (v6.6) for an all-online machine:
    /// the distinct distances between nodes with CPUs, and per level and node
    /// the CPUs of nodes at most that far. Also init_numa_topology_type().
    fn init_numa(&mut self) -> Vec<Vec<Cpumask>> {
        let m = self.m;
        let cpu_nodes: Vec<u32> = (0..m.nr_nodes() as u32)
            .filter(|nd| m.node_has_cpus(*nd))
            .collect();
        let mut distances: Vec<u32> = Vec::new();
        for &i in &cpu_nodes {
            for &j in &cpu_nodes {
                distances.push(m.node_distance(i, j));
            }
        }
        distances.sort_unstable();
        distances.dedup();
        let mut masks = vec![vec![Cpumask::new(self.n); m.nr_nodes()]; distances.len()];
        for (level, &d) in distances.iter().enumerate() {
            for &j in &cpu_nodes {
                for &k in &cpu_nodes {
                    if m.node_distance(j, k) <= d {
                        masks[level][j as usize].or_assign(m.node_cpus(k));
                    }
                }
            }
        }
        self.numa_type = numa_topology_type(m, &cpu_nodes, &distances);
        self.numa_distances = distances;
        masks
    }

    /// The topology table: default_topology (SMT, CLS, MC, PKG) then, from
    /// sched_init_numa(), NODE and one NUMA level per larger distance.
    fn init_levels(&mut self, numa_masks: &[Vec<Cpumask>]) {
        use SdFlag::*;
        let lvl = |name, flags: &[SdFlag], overlap, numa_level| TopologyLevel {
            name,
            sd_flags: SdFlags::from_flags(flags),
            overlap,
            numa_level,
        };
        self.tls = vec![
            lvl(DomainName::Smt, &[ShareCpucapacity, ShareLlc], false, 0),
            lvl(DomainName::Cls, &[Cluster, ShareLlc], false, 0),
            lvl(DomainName::Mc, &[ShareLlc], false, 0),
            lvl(DomainName::Pkg, &[], false, 0),
            lvl(DomainName::Node, &[], false, 0),
        ];
        for j in 1..self.numa_distances.len() {
            self.tls.push(lvl(DomainName::Numa, &[Numa], true, j));
        }
        // tl->mask(cpu) for every level and CPU, interned once per distinct mask.
        let (m, n) = (self.m, self.n);
        let ntl = self.tls.len();
        self.tl_mask = vec![0; ntl * n];
        let mut cache: BTreeMap<(usize, u32), u32> = BTreeMap::new();
        for t in 0..ntl {
            for cpu in 0..n {
                let c = CpuId(cpu as u32);
                let topo = m.cpu(c);
                let key = match self.tls[t].name {
                    DomainName::Smt => topo.core,
                    // cpu_clustergroup_mask() is the cluster, or the SMT mask when the cluster is not real.
                    DomainName::Cls if m.llc_mask(c).is_subset(m.cluster_mask(c)) => {
                        topo.core | 1 << 31
                    }
                    DomainName::Cls => topo.cluster,
                    DomainName::Mc => topo.llc,
                    DomainName::Pkg | DomainName::Node | DomainName::Numa => topo.node,
                };
                let id = match cache.get(&(t, key)) {
                    Some(id) => *id,
                    None => {
                        let mask = match self.tls[t].name {
                            DomainName::Smt => m.smt_mask(c).clone(),
                            DomainName::Cls => cpu_clustergroup_mask(m, c).clone(),
                            DomainName::Mc => m.llc_mask(c).clone(),
                            DomainName::Pkg => m.node_mask(c).clone(),
                            DomainName::Node | DomainName::Numa => {
                                numa_masks[self.tls[t].numa_level][topo.node as usize].clone()
                            }
                        };
                        let id = self.spans.intern(&mask);
                        cache.insert((t, key), id);
                        id
                    }
                };
                self.tl_mask[t * n + cpu] = id;
            }
        }
        let blank = BSd {
            built: false,
            span: self.empty_span,
            flags: SdFlags::EMPTY,
            level: 0,
            sd_weight: 0,
            imbalance_pct: 0,
            cache_nice_tries: 0,
            shared: NONE,
            imb_numa_nr: 0,
            ring: GroupRing {
                offset: 0,
                len: 0,
                start: 0,
            },
        };
        self.sd = vec![blank; ntl * n];
        self.sg_slot = vec![NONE; ntl * n];
        self.sgc_slot = vec![NONE; ntl * n];
        self.shared_slot = vec![NONE; ntl * n];
    }

    fn span_mask(&self, id: u32) -> &Cpumask {
        &self.spans.masks[id as usize]
    }

    /// Follows topology.c: asym_cpu_capacity_classify() (v6.6), with the
    /// capacity list asym_cpu_capacity_scan() builds (empty on a symmetric machine).
    fn asym_classify(&mut self, span: u32) -> SdFlags {
        if self.asym.len() <= span as usize {
            self.asym.resize(span as usize + 1, None);
        }
        if let Some(f) = self.asym[span as usize] {
            return f;
        }
        let m = self.m;
        let flags = if self.nr_capacities < 2 {
            SdFlags::EMPTY
        } else {
            let in_span: std::collections::BTreeSet<u32> =
                self.span_mask(span).iter().map(|c| m.capacity(c)).collect();
            // Every capacity entry has CPUs in cpu_map (all CPUs are online), so
            // an entry missing from the span is a miss.
            let count = in_span.len();
            let miss = self.nr_capacities - count;
            if count < 2 {
                SdFlags::EMPTY
            } else if miss > 0 {
                SdFlags::from_flags(&[SdFlag::AsymCpucapacity])
            } else {
                SdFlags::from_flags(&[SdFlag::AsymCpucapacity, SdFlag::AsymCpucapacityFull])
            }
        };
        self.asym[span as usize] = Some(flags);
        flags
    }

    /// Follows topology.c: build_sched_domains() (v6.6), first loop: per CPU,
    /// build_sched_domain() -> sd_init() for each level until one spans every CPU.
    fn build_domains(&mut self) {
        let n = self.n;
        for cpu in 0..n {
            let mut child: Option<usize> = None;
            for t in 0..self.tls.len() {
                self.sd_init(t, cpu, child);
                let idx = t * n + cpu;
                // build_sched_domain(): level and the "arch topology borken" fixup.
                if let Some(c) = child {
                    self.sd[idx].level = self.sd[c * n + cpu].level + 1;
                    let cs = self.sd[c * n + cpu].span;
                    let ps = self.sd[idx].span;
                    if !self.span_mask(cs).is_subset(self.span_mask(ps)) {
                        let u = self.span_mask(ps).or(self.span_mask(cs));
                        self.sd[idx].span = self.spans.intern(&u);
                    }
                }
                self.has_asym |= self.sd[idx].flags.contains(SdFlag::AsymCpucapacity);
                if self.tls[t].overlap {
                    self.sd[idx].flags.insert(SdFlag::Overlap);
                }
                child = Some(t);
                if self.sd[idx].span == self.all_span {
                    break;
                }
            }
        }
    }

    /// Follows topology.c: sd_init() (v6.6-v6.12). The initializer's
    /// imbalance_pct and busy_factor come from [`SdParams`].
    fn sd_init(&mut self, t: usize, cpu: usize, child: Option<usize>) {
        use SdFlag::*;
        let n = self.n;
        let tl = self.tls[t];
        let tl_span = self.tl_mask[t * n + cpu];
        let sd_weight = self.spans.weight[tl_span as usize];
        let mut flags = SdFlags::from_flags(&[
            BalanceNewidle,
            BalanceExec,
            BalanceFork,
            WakeAffine,
            PreferSibling,
        ])
        .union(tl.sd_flags);
        // sd_span = cpu_map & tl->mask(cpu); cpu_map is every CPU.
        let span = tl_span;
        flags = flags.union(self.asym_classify(span));
        // "CPU capacity asymmetry not supported on SMT" is only a warning.
        if flags.contains(AsymCpucapacity)
            && let Some(c) = child
        {
            self.sd[c * n + cpu].flags.remove(PreferSibling);
        }
        let mut imbalance_pct = self.params.imbalance_pct;
        let cache_nice_tries;
        if flags.contains(ShareCpucapacity) {
            imbalance_pct = 110;
            cache_nice_tries = 0;
        } else if flags.contains(ShareLlc) {
            imbalance_pct = 117;
            cache_nice_tries = 1;
        } else if flags.contains(Numa) {
            cache_nice_tries = 2;
            flags.remove(PreferSibling);
            flags.insert(Serialize);
            if self.numa_distances[tl.numa_level] > self.m.node_reclaim_distance() {
                flags.remove(BalanceExec);
                flags.remove(BalanceFork);
                flags.remove(WakeAffine);
            }
        } else {
            cache_nice_tries = 1;
        }
        let mut shared = NONE;
        if flags.contains(ShareLlc) {
            let sd_id = self.spans.first[span as usize] as usize;
            let slot = t * n + sd_id;
            if self.shared_slot[slot] == NONE {
                self.shared_slot[slot] = self.shareds.len() as u32;
                self.shareds.push((t, sd_id as u32, sd_weight));
            }
            shared = self.shared_slot[slot];
            // atomic_set(&sd->shared->nr_busy_cpus, sd_weight): the last writer wins.
            self.shareds[shared as usize].2 = sd_weight;
        }
        self.sd[t * n + cpu] = BSd {
            built: true,
            span,
            flags,
            level: 0,
            sd_weight,
            imbalance_pct,
            cache_nice_tries,
            shared,
            imb_numa_nr: 0,
            ring: GroupRing {
                offset: 0,
                len: 0,
                start: 0,
            },
        };
    }

    fn sgc_get(&mut self, t: usize, cpu: u32) -> u32 {
        let slot = t * self.n + cpu as usize;
        if self.sgc_slot[slot] == NONE {
            self.sgc_slot[slot] = self.sgcs.len() as u32;
            self.sgcs.push(BSgc {
                tl: t,
                cpu,
                refs: 0,
                balance_mask: self.empty_span,
            });
        }
        self.sgc_slot[slot]
    }

    /// Follows topology.c: build_sched_domains() (v6.6), second loop: the
    /// groups of every CPU's domains, bottom-up, CPUs in order.
    fn build_groups(&mut self) -> Result<(), TopologyError> {
        let n = self.n;
        let mut stamps = vec![0u32; n];
        let mut order: Vec<u32> = Vec::new();
        for cpu in 0..n {
            for t in 0..self.tls.len() {
                if !self.sd[t * n + cpu].built {
                    break;
                }
                let ring = if self.sd[t * n + cpu].flags.contains(SdFlag::Overlap) {
                    order.clear();
                    self.build_overlap_sched_groups(t, cpu, &mut order)?;
                    self.store_ring(t, cpu, &order)
                } else {
                    self.build_sched_groups(t, cpu, &mut stamps)
                };
                self.sd[t * n + cpu].ring = ring;
            }
        }
        Ok(())
    }

    /// Follows topology.c: get_group() (v6.6-v6.12).
    fn get_group(&mut self, t: usize, j: usize) -> u32 {
        let n = self.n;
        let child = if t > 0 && self.sd[t * n + j].built {
            Some(t - 1)
        } else {
            None
        };
        let key = match child {
            Some(c) => self.spans.first[self.sd[c * n + j].span as usize] as usize,
            None => j,
        };
        let slot = t * n + key;
        let sgc = self.sgc_get(t, key as u32);
        self.sgcs[sgc as usize].refs += 1;
        if self.sg_slot[slot] != NONE {
            return self.sg_slot[slot];
        }
        let (span, flags) = match child {
            Some(c) => (self.sd[c * n + j].span, self.sd[c * n + j].flags),
            None => {
                let single = Cpumask::from_cpus(n, [CpuId(key as u32)]);
                (self.spans.intern(&single), SdFlags::EMPTY)
            }
        };
        // cpumask_copy(group_balance_mask(sg), sched_group_span(sg)): the mask lives in the sgc.
        self.sgcs[sgc as usize].balance_mask = span;
        let id = self.groups.len() as u32;
        self.groups.push(BGroup { span, sgc, flags });
        self.sg_slot[slot] = id;
        id
    }

    /// Follows topology.c: build_sched_groups() (v6.6-v6.12): the groups in
    /// for_each_cpu_wrap() order from `cpu`, skipping CPUs already covered.
    ///
    /// The groups of a non-overlapping level partition its span, and every CPU
    /// of the span builds the same groups (only the starting point differs), so
    /// the first CPU of the span (the first to build it, CPUs going in order)
    /// calls get_group() for each group and records, per CPU of the span, the
    /// index of its group. Every CPU then walks that index array from its own
    /// position; the usual result is a rotation of the first CPU's list, stored
    /// once.
    fn build_sched_groups(&mut self, t: usize, cpu: usize, stamps: &mut [u32]) -> GroupRing {
        let n = self.n;
        let span = self.sd[t * n + cpu].span;
        let fi = match self.layouts_index.get(&(t, span)) {
            Some(fi) => *fi,
            None => {
                let cpus: Vec<u32> = self.span_mask(span).iter().map(|c| c.0).collect();
                let mut gidx = Vec::with_capacity(cpus.len());
                let mut index_of_key: BTreeMap<usize, u32> = BTreeMap::new();
                let mut list = Vec::new();
                for &j in &cpus {
                    let j = j as usize;
                    let key = if t > 0 && self.sd[t * n + j].built {
                        self.spans.first[self.sd[(t - 1) * n + j].span as usize] as usize
                    } else {
                        j
                    };
                    let g = match index_of_key.get(&key) {
                        Some(g) => *g,
                        None => {
                            let g = list.len() as u32;
                            list.push(self.get_group(t, j));
                            index_of_key.insert(key, g);
                            g
                        }
                    };
                    gidx.push(g);
                }
                let offset = self.lists.len() as u32;
                let len = list.len() as u32;
                self.lists.extend_from_slice(&list);
                self.layouts.push(Layout {
                    cpus,
                    gidx,
                    offset,
                    len,
                });
                self.layouts_index.insert((t, span), self.layouts.len() - 1);
                self.layouts.len() - 1
            }
        };
        self.stamp += 1;
        let stamp = self.stamp;
        let l = &self.layouts[fi];
        let p0 = l.cpus.binary_search(&(cpu as u32)).unwrap_or(0);
        let start = l.gidx[p0];
        let mut count = 0u32;
        let mut rotation = true;
        for p in (p0..l.cpus.len()).chain(0..p0) {
            let g = l.gidx[p];
            if stamps[g as usize] == stamp {
                continue;
            }
            stamps[g as usize] = stamp;
            if g != (start + count) % l.len {
                rotation = false;
                break;
            }
            count += 1;
        }
        if rotation {
            return GroupRing {
                offset: l.offset,
                len: l.len,
                start,
            };
        }
        // Not a rotation (an unusual CPU numbering): store this CPU's own order.
        self.stamp += 1;
        let stamp = self.stamp;
        let mut order = Vec::with_capacity(l.len as usize);
        for p in (p0..l.cpus.len()).chain(0..p0) {
            let g = l.gidx[p];
            if stamps[g as usize] != stamp {
                stamps[g as usize] = stamp;
                order.push(self.lists[(l.offset + g) as usize]);
            }
        }
        let offset = self.lists.len() as u32;
        self.lists.extend_from_slice(&order);
        GroupRing {
            offset,
            len: order.len() as u32,
            start: 0,
        }
    }

    /// Follows topology.c: find_descended_sibling() (v6.6).
    fn find_descended_sibling(&self, sd_span: u32, mut t: usize, j: usize) -> usize {
        let n = self.n;
        while t > 0
            && !self
                .span_mask(self.sd[(t - 1) * n + j].span)
                .is_subset(self.span_mask(sd_span))
        {
            t -= 1;
        }
        while t > 0 && self.sd[(t - 1) * n + j].span == self.sd[t * n + j].span {
            t -= 1;
        }
        t
    }

    /// Follows topology.c: build_balance_mask() (v6.6): the CPUs of the group
    /// whose own domain at level `t` has the group's span as its child.
    fn build_balance_mask(&mut self, t: usize, group_span: u32) -> u32 {
        if let Some(m) = self.balance_masks.get(&(t, group_span)) {
            return *m;
        }
        let n = self.n;
        let mut mask = Cpumask::new(n);
        for k in self.span_mask(group_span).iter() {
            let sib = &self.sd[t * n + k.index()];
            if !sib.built || t == 0 {
                continue;
            }
            if self.sd[(t - 1) * n + k.index()].span != group_span {
                continue;
            }
            mask.set(k);
        }
        let id = self.spans.intern(&mask);
        self.balance_masks.insert((t, group_span), id);
        id
    }

    /// Follows topology.c: build_overlap_sched_groups(),
    /// build_group_from_child_sched_domain() and init_overlap_sched_group() (v6.6).
    fn build_overlap_sched_groups(
        &mut self,
        t: usize,
        cpu: usize,
        order: &mut Vec<u32>,
    ) -> Result<(), TopologyError> {
        let n = self.n;
        let span = self.sd[t * n + cpu].span;
        let mut covered = Cpumask::new(n);
        let start = CpuId(cpu as u32);
        let mut next = self.span_mask(span).next_andnot_wrap(&covered, start);
        while let Some(i) = next {
            let i_idx = i.index();
            let sib_idx = t * n + i_idx;
            // A CPU whose build stopped below this level has an empty sibling span.
            if self.span_mask(self.sd[sib_idx].span).test(i) {
                let mut st = t;
                if st > 0
                    && !self
                        .span_mask(self.sd[(st - 1) * n + i_idx].span)
                        .is_subset(self.span_mask(span))
                {
                    st = self.find_descended_sibling(span, st, i_idx);
                }
                let (g_span, g_flags) = if st > 0 {
                    let c = &self.sd[(st - 1) * n + i_idx];
                    (c.span, c.flags)
                } else {
                    (self.sd[st * n + i_idx].span, SdFlags::EMPTY)
                };
                covered.or_assign(self.span_mask(g_span));
                let mask = self.build_balance_mask(st, g_span);
                let Some(first) = self
                    .spans
                    .first
                    .get(mask as usize)
                    .copied()
                    .filter(|f| *f != NONE)
                else {
                    return Err(TopologyError::EmptyBalanceMask {
                        level: self.tls[t].name.as_str(),
                        cpu: CpuId(cpu as u32),
                        span: self.span_mask(g_span).to_cpulist(),
                    });
                };
                let sgc = self.sgc_get(st, first);
                let s = &mut self.sgcs[sgc as usize];
                s.refs += 1;
                if s.refs == 1 {
                    s.balance_mask = mask;
                }
                let id = self.groups.len() as u32;
                self.groups.push(BGroup {
                    span: g_span,
                    sgc,
                    flags: g_flags,
                });
                order.push(id);
            }
            // Otherwise the sibling's build stopped below this level: the kernel
            // moves on without covering the CPU.
            next = self
                .span_mask(span)
                .next_andnot_wrap_after(&covered, i, start);
        }
        Ok(())
    }

    /// Stores a group order as a ring, sharing storage with the previous ring of
    /// the same level and span when it is a rotation of it.
    fn store_ring(&mut self, t: usize, cpu: usize, order: &[u32]) -> GroupRing {
        let span = self.sd[t * self.n + cpu].span;
        if let Some(&(offset, len)) = self.last_list.get(&(t, span))
            && len as usize == order.len()
        {
            let list = &self.lists[offset as usize..(offset + len) as usize];
            if let Some(start) = list.iter().position(|g| *g == order[0])
                && (0..order.len()).all(|k| list[(start + k) % order.len()] == order[k])
            {
                return GroupRing {
                    offset,
                    len,
                    start: start as u32,
                };
            }
        }
        let offset = self.lists.len() as u32;
        self.lists.extend_from_slice(order);
        let len = order.len() as u32;
        self.last_list.insert((t, span), (offset, len));
        GroupRing {
            offset,
            len,
            start: 0,
        }
    }

    /// Follows topology.c: build_sched_domains() (v6.6-v6.12), the imb_numa_nr loop.
    fn compute_imb_numa_nr(&mut self) {
        let n = self.n;
        let ntl = self.tls.len();
        for cpu in 0..n {
            let mut imb = 0u32;
            let mut imb_span = 1u32;
            for t in 0..ntl {
                if !self.sd[t * n + cpu].built {
                    break;
                }
                let flags = self.sd[t * n + cpu].flags;
                let weight = self.spans.weight[self.sd[t * n + cpu].span as usize];
                let child_llc =
                    t > 0 && self.sd[(t - 1) * n + cpu].flags.contains(SdFlag::ShareLlc);
                if !flags.contains(SdFlag::ShareLlc) && child_llc {
                    let child_weight = self.spans.weight[self.sd[(t - 1) * n + cpu].span as usize];
                    let nr_llcs = weight / child_weight;
                    imb = if nr_llcs == 1 { weight >> 3 } else { nr_llcs };
                    imb = imb.max(1);
                    self.sd[t * n + cpu].imb_numa_nr = imb;
                    // Set the span from the first NUMA domain above.
                    let mut top = t + 1;
                    while top < ntl
                        && self.sd[top * n + cpu].built
                        && !self.sd[top * n + cpu].flags.contains(SdFlag::Numa)
                    {
                        top += 1;
                    }
                    imb_span = if top < ntl && self.sd[top * n + cpu].built {
                        self.spans.weight[self.sd[top * n + cpu].span as usize]
                    } else {
                        weight
                    };
                } else {
                    let factor = (weight / imb_span).max(1);
                    self.sd[t * n + cpu].imb_numa_nr = imb * factor;
                }
            }
        }
    }

    fn nr_groups(&self, idx: usize) -> u32 {
        self.sd[idx].ring.len
    }

    fn first_group(&self, idx: usize) -> usize {
        let r = self.sd[idx].ring;
        self.lists[(r.offset + r.start) as usize] as usize
    }

    /// Follows topology.c: sd_degenerate() (v6.6-v6.12).
    fn sd_degenerate(&self, idx: usize) -> bool {
        let sd = &self.sd[idx];
        if self.spans.weight[sd.span as usize] == 1 {
            return true;
        }
        if sd.flags.intersects(SdFlags::DEGENERATE_GROUPS_MASK) && self.nr_groups(idx) > 1 {
            return false;
        }
        !sd.flags.contains(SdFlag::WakeAffine)
    }

    /// Follows topology.c: sd_parent_degenerate() (v6.6-v6.12).
    fn sd_parent_degenerate(&self, idx: usize, parent: usize) -> bool {
        if self.sd_degenerate(parent) {
            return true;
        }
        if self.sd[idx].span != self.sd[parent].span {
            return false;
        }
        let mut pflags = self.sd[parent].flags;
        if self.nr_groups(parent) == 1 {
            pflags = pflags.difference(SdFlags::DEGENERATE_GROUPS_MASK);
        }
        pflags.difference(self.sd[idx].flags).is_empty()
    }

    /// Follows topology.c: cpu_attach_domain() (v6.6-v6.12), degeneration part:
    /// returns the surviving levels bottom-up. Group flags are written as the
    /// kernel writes them: only the first (local) group of the parent's parent
    /// gets the child's flags, and only the first group of the new base domain
    /// is cleared (the kernel's `do { sg->flags = 0; } while (sg != sd->groups)`
    /// never advances `sg`).
    fn attach(&mut self, cpu: usize) -> Vec<usize> {
        let n = self.n;
        let mut chain: Vec<usize> = (0..self.tls.len())
            .filter(|t| self.sd[t * n + cpu].built)
            .collect();
        let mut k = 0;
        while k + 1 < chain.len() {
            let tmp = chain[k] * n + cpu;
            let parent = chain[k + 1] * n + cpu;
            if self.sd_parent_degenerate(tmp, parent) {
                if k + 2 < chain.len() {
                    let pp = chain[k + 2] * n + cpu;
                    let g = self.first_group(pp);
                    self.groups[g].flags = self.sd[tmp].flags;
                }
                if self.sd[parent].flags.contains(SdFlag::PreferSibling) {
                    self.sd[tmp].flags.insert(SdFlag::PreferSibling);
                }
                chain.remove(k + 1);
            } else {
                k += 1;
            }
        }
        if let Some(&base) = chain.first()
            && self.sd_degenerate(base * n + cpu)
        {
            chain.remove(0);
            if let Some(&nb) = chain.first() {
                let g = self.first_group(nb * n + cpu);
                self.groups[g].flags = SdFlags::EMPTY;
            }
        }
        chain
    }

    /// Attaches every CPU, then assembles the immutable [`Topology`]:
    /// update_top_cache_domain(), group capacities (init_sched_groups_capacity()
    /// and the steady state of update_group_capacity()), deduplicated groups.
    fn finish(mut self) -> Result<Topology, TopologyError> {
        let n = self.n;
        let chains: Vec<Vec<usize>> = (0..n).map(|cpu| self.attach(cpu)).collect();

        let m = self.m;
        let mut span_cores: Vec<Option<u32>> = vec![None; self.spans.masks.len()];
        let mut core_seen = vec![u32::MAX; m.nr_cores()];
        let mut group_map: BTreeMap<(u32, u32, u32), GroupId> = BTreeMap::new();
        let mut sgc_map: Vec<Option<SgcId>> = vec![None; self.sgcs.len()];
        let mut shared_map: Vec<Option<SharedId>> = vec![None; self.shareds.len()];
        let mut span_map: Vec<Option<SpanId>> = vec![None; self.spans.masks.len()];
        let mut out_spans: Vec<Cpumask> = Vec::new();
        let mut groups: Vec<SchedGroup> = Vec::new();
        let mut sgcs: Vec<SchedGroupCapacity> = Vec::new();
        let mut shareds: Vec<SchedDomainShared> = Vec::new();
        let mut lists: Vec<GroupId> = Vec::new();
        let mut list_map: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        let mut domains: Vec<SchedDomain> = Vec::new();
        let mut cpu_domains: Vec<u32> = vec![0];
        let mut shortcuts: Vec<CpuShortcuts> = Vec::with_capacity(n);
        let mut has_cluster = false;

        let mut map_span = |id: u32, out: &mut Vec<Cpumask>, spans: &Spans| -> SpanId {
            if let Some(s) = span_map[id as usize] {
                return s;
            }
            let s = SpanId(out.len() as u32);
            out.push(spans.masks[id as usize].clone());
            span_map[id as usize] = Some(s);
            s
        };

        for (cpu, chain) in chains.iter().enumerate() {
            for (pos, &t) in chain.iter().enumerate() {
                let idx = t * n + cpu;
                let ring = self.sd[idx].ring;
                // The stored list, remapped to final group ids once per list.
                let offset = match list_map.get(&(ring.offset, ring.len)) {
                    Some(o) => *o,
                    None => {
                        let o = lists.len() as u32;
                        for p in ring.offset..ring.offset + ring.len {
                            let g = &self.groups[self.lists[p as usize] as usize];
                            let key = (g.span, g.sgc, g.flags.bits());
                            let gid = match group_map.get(&key) {
                                Some(id) => *id,
                                None => {
                                    let sgc_id = match sgc_map[g.sgc as usize] {
                                        Some(s) => s,
                                        None => {
                                            let b = &self.sgcs[g.sgc as usize];
                                            let (cap, min, max) =
                                                capacity_of(m, &self.spans.masks[g.span as usize]);
                                            let s = SgcId(sgcs.len() as u32);
                                            let bm = map_span(
                                                b.balance_mask,
                                                &mut out_spans,
                                                &self.spans,
                                            );
                                            sgcs.push(SchedGroupCapacity {
                                                id: CpuId(b.cpu),
                                                tl: b.tl,
                                                balance_mask: bm,
                                                capacity: cap,
                                                min_capacity: min,
                                                max_capacity: max,
                                            });
                                            sgc_map[g.sgc as usize] = Some(s);
                                            s
                                        }
                                    };
                                    let cores =
                                        *span_cores[g.span as usize].get_or_insert_with(|| {
                                            count_cores(
                                                m,
                                                &self.spans.masks[g.span as usize],
                                                &mut core_seen,
                                                g.span,
                                            )
                                        });
                                    let (cap, min, max) =
                                        capacity_of(m, &self.spans.masks[g.span as usize]);
                                    let sgc = &sgcs[sgc_id.index()];
                                    let balance_cpu = out_spans[sgc.balance_mask.index()]
                                        .first()
                                        .unwrap_or(CpuId(0));
                                    let span = map_span(g.span, &mut out_spans, &self.spans);
                                    let id = GroupId(groups.len() as u32);
                                    groups.push(SchedGroup {
                                        span,
                                        balance_mask: sgcs[sgc_id.index()].balance_mask,
                                        balance_cpu,
                                        group_weight: self.spans.weight[g.span as usize],
                                        cores,
                                        flags: g.flags,
                                        asym_prefer_cpu: None,
                                        sgc: sgc_id,
                                        capacity: cap,
                                        min_capacity: min,
                                        max_capacity: max,
                                    });
                                    group_map.insert(key, id);
                                    id
                                }
                            };
                            lists.push(gid);
                        }
                        list_map.insert((ring.offset, ring.len), o);
                        o
                    }
                };
                let b = &self.sd[idx];
                let shared = if b.shared == NONE {
                    None
                } else {
                    Some(*shared_map[b.shared as usize].get_or_insert_with(|| {
                        let (tl, id, busy) = self.shareds[b.shared as usize];
                        shareds.push(SchedDomainShared {
                            id: CpuId(id),
                            tl,
                            nr_busy_cpus: busy,
                        });
                        SharedId(shareds.len() as u32 - 1)
                    }))
                };
                let span = map_span(b.span, &mut out_spans, &self.spans);
                domains.push(SchedDomain {
                    level: pos,
                    sd_level: b.level,
                    name: self.tls[t].name,
                    tl: t,
                    span,
                    span_weight: self.spans.weight[b.span as usize],
                    flags: b.flags,
                    imbalance_pct: b.imbalance_pct,
                    min_interval: u64::from(b.sd_weight),
                    max_interval: 2 * u64::from(b.sd_weight),
                    balance_interval: u64::from(b.sd_weight),
                    busy_factor: self.params.busy_factor,
                    cache_nice_tries: b.cache_nice_tries,
                    imb_numa_nr: b.imb_numa_nr,
                    shared,
                    groups: GroupRing {
                        offset,
                        len: ring.len,
                        start: ring.start,
                    },
                });
            }
            let mine = &domains[*cpu_domains.last().unwrap_or(&0) as usize..];
            let sc = update_top_cache_domain(CpuId(cpu as u32), mine, &out_spans);
            has_cluster |= mine.iter().any(|d| d.flags.contains(SdFlag::Cluster));
            shortcuts.push(sc);
            cpu_domains.push(domains.len() as u32);
        }

        Ok(Topology {
            machine: m.clone(),
            params: self.params,
            levels: self.tls,
            numa_distances: self.numa_distances,
            numa_type: self.numa_type,
            spans: out_spans,
            domains,
            cpu_domains,
            groups,
            group_lists: lists,
            sgcs,
            shareds,
            shortcuts,
            has_asym_cpucapacity: self.has_asym,
            has_cluster,
        })
    }
}

/// Follows arch_topology.c: cpu_clustergroup_mask() (v6.6): a cluster that does
/// not fit strictly inside the core group (LLC) gives way to the SMT mask.
fn cpu_clustergroup_mask(m: &Machine, cpu: CpuId) -> &Cpumask {
    if m.llc_mask(cpu).is_subset(m.cluster_mask(cpu)) {
        m.smt_mask(cpu)
    } else {
        m.cluster_mask(cpu)
    }
}

/// Sum, minimum and maximum of arch_scale_cpu_capacity() over `span`
/// (update_group_capacity()'s steady state).
fn capacity_of(m: &Machine, span: &Cpumask) -> (u64, u64, u64) {
    let (mut sum, mut min, mut max) = (0u64, u64::MAX, 0u64);
    for c in span.iter() {
        let cap = u64::from(m.capacity(c));
        sum += cap;
        min = min.min(cap);
        max = max.max(cap);
    }
    (sum, if min == u64::MAX { 0 } else { min }, max)
}

/// init_sched_groups_capacity()'s `cores`: each CPU taken removes its SMT siblings.
fn count_cores(m: &Machine, span: &Cpumask, core_seen: &mut [u32], stamp: u32) -> u32 {
    let mut cores = 0;
    for c in span.iter() {
        let core = m.cpu(c).core as usize;
        if core_seen[core] != stamp {
            core_seen[core] = stamp;
            cores += 1;
        }
    }
    cores
}

/// Follows topology.c: update_top_cache_domain() with sched.h's
/// highest_flag_domain() (which stops at the first domain without a
/// `SDF_SHARED_CHILD` flag) and lowest_flag_domain() (v6.6-v6.12).
fn update_top_cache_domain(cpu: CpuId, sds: &[SchedDomain], spans: &[Cpumask]) -> CpuShortcuts {
    let highest = |flag: SdFlag| -> Option<usize> {
        let mut h = None;
        for (i, sd) in sds.iter().enumerate() {
            if sd.flags.contains(flag) {
                h = Some(i);
                continue;
            }
            if flag.meta() & SDF_SHARED_CHILD != 0 {
                break;
            }
        }
        h
    };
    let lowest = |flag: SdFlag| sds.iter().position(|sd| sd.flags.contains(flag));
    let sd_llc = highest(SdFlag::ShareLlc);
    let (sd_llc_id, sd_llc_size, sd_llc_shared) = match sd_llc {
        Some(i) => {
            let span = &spans[sds[i].span.index()];
            (
                span.first().unwrap_or(cpu),
                span.weight() as u32,
                sds[i].shared,
            )
        }
        None => (cpu, 1, None),
    };
    let sd_share_id = match lowest(SdFlag::Cluster) {
        Some(i) => spans[sds[i].span.index()].first().unwrap_or(cpu),
        None => sd_llc_id,
    };
    CpuShortcuts {
        sd_llc,
        sd_llc_size,
        sd_llc_id,
        sd_llc_shared,
        sd_share_id,
        sd_numa: lowest(SdFlag::Numa),
        sd_asym_packing: highest(SdFlag::AsymPacking),
        sd_asym_cpucapacity: lowest(SdFlag::AsymCpucapacityFull),
    }
}

/// Follows topology.c: init_numa_topology_type() (v6.6) for an all-online machine.
fn numa_topology_type(m: &Machine, cpu_nodes: &[u32], distances: &[u32]) -> NumaTopologyType {
    if distances.len() <= 2 {
        return NumaTopologyType::Direct;
    }
    let max = *distances.last().unwrap_or(&0);
    for &a in cpu_nodes {
        for &b in cpu_nodes {
            if m.node_distance(a, b) < max {
                continue;
            }
            for &c in cpu_nodes {
                if m.node_distance(a, c) < max && m.node_distance(b, c) < max {
                    return NumaTopologyType::GluelessMesh;
                }
            }
            return NumaTopologyType::Backplane;
        }
    }
    NumaTopologyType::Direct
}

#[cfg(test)]
mod tests;
