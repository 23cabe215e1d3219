//! The groups of every CPU's domains, following topology.c (v6.6-v6.12): the second loop of
//! build_sched_domains(), build_sched_groups() with get_group() for the non-overlapping
//! levels, and build_overlap_sched_groups() with find_descended_sibling() and
//! build_balance_mask() for the NUMA levels.

use std::collections::BTreeMap;

use crate::cpumask::{CpuId, Cpumask};
use crate::domains::{GroupRing, TopologyError};
use crate::flags::{SdFlag, SdFlags};

use super::{BGroup, BSgc, Builder, Layout, NONE};

impl Builder<'_> {
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
    pub(super) fn build_groups(&mut self) -> Result<(), TopologyError> {
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
}
