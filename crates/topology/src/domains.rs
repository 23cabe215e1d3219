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
//!
//! Files: this one holds the result ([`Topology`], [`SchedDomain`], [`SchedGroup`], ... and
//! their accessors); `crate::params` the sd_init() inputs ([`SdParams`]); `build.rs` the
//! builder's data and sched_init_numa(), the topology levels and sd_init() per CPU;
//! `build/groups.rs` build_sched_groups(), build_overlap_sched_groups(), get_group(),
//! find_descended_sibling() and build_balance_mask(); `build/attach.rs` imb_numa_nr,
//! sd_degenerate(), sd_parent_degenerate(), cpu_attach_domain(),
//! init_sched_groups_capacity() and update_top_cache_domain().

mod build;

use std::fmt;

use crate::cpumask::{CpuId, Cpumask};
use crate::flags::SdFlags;
use crate::machine::Machine;

use self::build::Builder;

pub use crate::params::SdParams;

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

impl GroupRing {
    /// `i % len` for `i < 2 * len` (a position `start + k`, both below `len`), without a
    /// division: a group walk takes one per group.
    #[inline]
    fn wrap(&self, i: u32) -> u32 {
        debug_assert!(self.start < self.len && i < 2 * self.len);
        if i >= self.len { i - self.len } else { i }
    }
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
    /// Each span's CPUs in order: span `i` is `span_cpus[span_starts[i]..span_starts[i + 1]]`.
    span_cpus: Vec<CpuId>,
    span_starts: Vec<u32>,
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

/// A stored group list ([`Topology::group_list`]): a domain's walk visits `groups` from
/// `start` (its local group) to the end, then from the beginning to `start`.
#[derive(Clone, Copy, Debug)]
pub struct GroupList<'a> {
    /// Identifies the list among the topology's stored lists (its storage position).
    pub id: u32,
    /// The list's groups in stored order.
    pub groups: &'a [GroupId],
    /// Where the domain's walk starts: its local group's position.
    pub start: usize,
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
        let pos = self.ring.offset + self.ring.wrap(self.ring.start + self.k);
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
        let pos = self.ring.offset + self.ring.wrap(self.ring.start + self.k);
        self.k += 1;
        Some(self.lists[pos as usize])
    }

    /// Skips `n` groups without reading them.
    fn nth(&mut self, n: usize) -> Option<GroupId> {
        self.k = u32::try_from(n)
            .ok()
            .and_then(|n| self.k.checked_add(n))
            .map_or(self.ring.len, |k| k.min(self.ring.len));
        self.next()
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
    #[inline]
    pub fn domains(&self, cpu: CpuId) -> &[SchedDomain] {
        let i = cpu.index();
        &self.domains[self.cpu_domains[i] as usize..self.cpu_domains[i + 1] as usize]
    }

    /// `cpu`'s domain at position `level`, if it has that many.
    #[inline]
    pub fn domain(&self, cpu: CpuId, level: usize) -> Option<&SchedDomain> {
        self.domains(cpu).get(level)
    }

    /// The CPU mask of an interned span.
    #[inline]
    pub fn span(&self, id: SpanId) -> &Cpumask {
        &self.spans[id.index()]
    }

    /// The CPUs of an interned span, in order (what `for_each_cpu()` over
    /// [`Topology::span`] visits, without scanning the mask's empty words).
    #[inline]
    pub fn span_cpus(&self, id: SpanId) -> &[CpuId] {
        let i = id.index();
        &self.span_cpus[self.span_starts[i] as usize..self.span_starts[i + 1] as usize]
    }

    /// Whether every CPU of an interned span is in `of` (`cpumask_subset(span, of)`),
    /// reading only the words from the span's first CPU to its last (`of` must be as wide
    /// as the span).
    #[inline]
    pub fn span_is_subset(&self, id: SpanId, of: &Cpumask) -> bool {
        let span = self.span(id);
        assert_eq!(
            span.nr_cpu_ids(),
            of.nr_cpu_ids(),
            "cpumasks of different widths"
        );
        let cpus = self.span_cpus(id);
        let (Some(first), Some(last)) = (cpus.first(), cpus.last()) else {
            return true;
        };
        let words = first.index() / 64..=last.index() / 64;
        let fast = span.as_words()[words.clone()]
            .iter()
            .zip(&of.as_words()[words])
            .all(|(a, b)| a & !b == 0);
        debug_assert_eq!(fast, span.is_subset(of), "span_is_subset differs");
        fast
    }

    /// A group.
    #[inline]
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

    /// The stored list a domain's group ring walks ([`GroupList`]): the same list for every
    /// CPU whose domain at that level has the same groups in a rotation of one order (the
    /// usual case), so that state kept per list serves them all (lbsim's).
    #[inline]
    pub fn group_list(&self, sd: &SchedDomain) -> GroupList<'_> {
        let r = sd.groups;
        GroupList {
            id: r.offset,
            groups: &self.group_lists[r.offset as usize..(r.offset + r.len) as usize],
            start: r.start as usize,
        }
    }

    /// The domain's local group (`sd->groups`).
    #[inline]
    pub fn local_group(&self, sd: &SchedDomain) -> &SchedGroup {
        let pos = sd.groups.offset + sd.groups.start;
        &self.groups[self.group_lists[pos as usize].index()]
    }

    /// A sched_group_capacity.
    #[inline]
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

#[cfg(test)]
mod tests;
