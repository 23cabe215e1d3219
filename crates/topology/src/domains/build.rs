//! The builder: the kernel's data structures during build_sched_domains() (topology.c,
//! v6.6-v6.12), and its first steps: sched_init_numa() with init_numa_topology_type(), the
//! topology levels (default_topology, arm64's cpu_clustergroup_mask()),
//! asym_cpu_capacity_classify(), build_sched_domains()' first loop and sd_init(). The
//! groups are built in `build/groups.rs`, the domains attached and the [`Topology`]
//! assembled in `build/attach.rs`.

mod attach;
mod groups;

use std::collections::BTreeMap;

use crate::cpumask::{CpuId, Cpumask};
use crate::flags::{SdFlag, SdFlags};
use crate::machine::Machine;

use super::{
    DomainName, GroupRing, NumaTopologyType, SdParams, Topology, TopologyError, TopologyLevel,
};

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

pub(super) struct Builder<'m> {
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
    pub(super) fn new(m: &'m Machine, params: &SdParams) -> Builder<'m> {
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

    pub(super) fn run(mut self) -> Result<Topology, TopologyError> {
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
