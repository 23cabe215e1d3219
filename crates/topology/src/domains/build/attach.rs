//! The last steps of build_sched_domains() (topology.c, v6.6-v6.12): the imb_numa_nr loop,
//! cpu_attach_domain() with sd_degenerate() and sd_parent_degenerate(), and the assembly of
//! the immutable [`Topology`]: init_sched_groups_capacity() (with the steady state of
//! update_group_capacity()) and update_top_cache_domain().

use std::collections::BTreeMap;

use crate::cpumask::{CpuId, Cpumask};
use crate::domains::{
    CpuShortcuts, GroupId, GroupRing, SchedDomain, SchedDomainShared, SchedGroup,
    SchedGroupCapacity, SgcId, SharedId, SpanId, Topology, TopologyError,
};
use crate::flags::{SDF_SHARED_CHILD, SdFlag, SdFlags};
use crate::machine::Machine;

use super::{Builder, NONE, Spans};

impl Builder<'_> {
    /// Follows topology.c: build_sched_domains() (v6.6-v6.12), the imb_numa_nr loop.
    pub(super) fn compute_imb_numa_nr(&mut self) {
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
    pub(super) fn finish(mut self) -> Result<Topology, TopologyError> {
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

        let mut span_cpus = Vec::new();
        let mut span_starts = Vec::with_capacity(out_spans.len() + 1);
        for s in &out_spans {
            span_starts.push(span_cpus.len() as u32);
            span_cpus.extend(s.iter());
        }
        span_starts.push(span_cpus.len() as u32);
        Ok(Topology {
            machine: m.clone(),
            params: self.params,
            levels: self.tls,
            numa_distances: self.numa_distances,
            numa_type: self.numa_type,
            spans: out_spans,
            span_cpus,
            span_starts,
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
