//! The idlest group of a domain for sched_balance_find_dst_group() without evaluating every
//! group at every call (lbsim's own bookkeeping, not a kernel structure).
//!
//! The kernel's loop computes each group's statistics (update_sg_wakeup_stats()) and keeps
//! the first group, in the domain's circular order from the local group, that no later group
//! beats in update_pick_idlest(). On a 1024-CPU machine whose LLCs hold 64 SMT cores, a fork
//! storm evaluated 64 groups for every fork while only the CPU that received the previous
//! child had changed. Where a group's statistics do not depend on the task being placed
//! (see [`super::sched_balance_find_dst_cpu`]'s conditions), this index keeps, per stored
//! group list ([`lbsim_topology::GroupList`]), each group's place in update_pick_idlest()'s
//! order and a tournament tree over them; a call re-evaluates only the groups holding a CPU
//! whose runqueue changed since the last one (from the runqueues' change log,
//! [`crate::rqs::Rqs::change_pos`]), and the groups whose sgc's `capacity` or `imbalance`
//! differ from what their keys were computed with, looked at only when some group capacity
//! changed since ([`crate::state::BalanceState::sgc_epoch`]); everything when the log no
//! longer reaches back, or when `imbalance_pct` or `LB_TIP_AVG_HIGH` differ from the last
//! evaluation. `SD_OVERLAP` domains are left to the loop: the kernel builds their groups
//! for each CPU apart, so no list would serve two CPUs (and groups sharing CPUs could make
//! several groups local).
//!
//! update_pick_idlest() is a strict "less than" over a key (the group type; then for
//! fully_busy and overloaded the `avg_load`; for has_spare more idle CPUs, then the lower
//! util; misfit, which compares `max_capacity`, only arises on `SD_ASYM_CPUCAPACITY`
//! domains, which never come here): its result is the first group, in walk order, of the
//! smallest key, provided that key is below the loop's starting point (overloaded with
//! `avg_load` `u32::MAX`). The walk visits the list from the local group to the end, then
//! from the beginning, so the first minimum is the tree's minimum over the part after the
//! local group, unless the part before holds a strictly smaller key.
//!
//! The cost model is unchanged: the call still charges a domain and every CPU of its groups.
//! Debug builds run the kernel's loop beside every answer and compare.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use lbsim_rq::TaskId;
use lbsim_topology::{CpuId, GroupId, SchedDomain};

use super::{WakeupInvariants, update_sg_wakeup_stats_with};
use crate::cost::WorkAccount;
use crate::ctx::BalanceCtx;
use crate::lb::{GroupType, SgLbStats};
use crate::rqs::ChangePos;
use crate::state::BalanceState;

/// The fewest groups a list must have for the index to keep it: below it the loop costs
/// about what a refresh does.
pub(crate) const MIN_GROUPS: usize = 8;

/// A tree node or leaf with no group.
const NONE: u32 = u32::MAX;

/// What update_pick_idlest() compares of a group's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Key {
    group_type: GroupType,
    idle_cpus: u32,
    avg_load: u64,
    group_util: u64,
}

impl Key {
    fn of(sgs: &SgLbStats) -> Key {
        Key {
            group_type: sgs.group_type,
            idle_cpus: sgs.idle_cpus,
            avg_load: sgs.avg_load,
            group_util: sgs.group_util,
        }
    }

    /// update_pick_idlest()'s order: `Less` if a group with key `self` is idler than one
    /// with `other` (the function would replace `other` by it); `Equal` if neither replaces
    /// the other.
    fn cmp_idler(&self, other: &Key) -> Ordering {
        match self.group_type.cmp(&other.group_type) {
            Ordering::Equal => {}
            o => return o,
        }
        match self.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => self.avg_load.cmp(&other.avg_load),
            GroupType::HasSpare => other
                .idle_cpus
                .cmp(&self.idle_cpus)
                .then(self.group_util.cmp(&other.group_util)),
            GroupType::MisfitTask => {
                unreachable!("misfit groups arise only on SD_ASYM_CPUCAPACITY domains")
            }
            GroupType::Imbalanced | GroupType::AsymPacking | GroupType::SmtBalance => {
                Ordering::Equal
            }
        }
    }
}

/// The loop's starting point: an overloaded group of `avg_load` `u32::MAX`.
const SENTINEL: Key = Key {
    group_type: GroupType::Overloaded,
    idle_cpus: 0,
    avg_load: u32::MAX as u64,
    group_util: 0,
};

/// One stored group list's keys and tree.
#[derive(Clone, Debug)]
struct ListIndex {
    /// Whether the keys were ever computed.
    evaluated: bool,
    /// The change log's position when the keys were last brought up to date.
    pos: ChangePos,
    /// [`BalanceState::sgc_epoch`] then: while it holds, no group capacity changed.
    sgc_epoch: u64,
    /// Per group, the `capacity` and `imbalance` of its sgc its key was computed with.
    sgc_seen: Vec<(u64, bool)>,
    /// The domain's `imbalance_pct` then (group_classify() reads it).
    imbalance_pct: u32,
    /// `LB_TIP_AVG_HIGH` then (it changes `cpu_load()`).
    tip_avg_high: bool,
    /// Per group, in stored order.
    keys: Vec<Key>,
    /// A tournament tree over `keys`: leaves at `n2 + i`, each inner node the better of
    /// its children (the smaller key, ties to the lower position).
    tree: Vec<u32>,
    /// Leaves (the list's length rounded up to a power of two).
    n2: usize,
    /// `(cpu, position of its group)`, by CPU.
    cpu_group: Vec<(u16, u16)>,
    /// The CPUs the kernel's loop reads: the sum of the groups' weights.
    weight: u32,
}

impl ListIndex {
    fn better(&self, a: u32, b: u32) -> u32 {
        if a == NONE {
            return b;
        }
        if b == NONE {
            return a;
        }
        match self.keys[b as usize].cmp_idler(&self.keys[a as usize]) {
            Ordering::Less => b,
            Ordering::Greater => a,
            Ordering::Equal => a.min(b),
        }
    }

    fn rebuild_tree(&mut self) {
        for k in (1..self.n2).rev() {
            self.tree[k] = self.better(self.tree[2 * k], self.tree[2 * k + 1]);
        }
    }

    fn update_leaf(&mut self, i: usize) {
        let mut k = (self.n2 + i) / 2;
        while k >= 1 {
            self.tree[k] = self.better(self.tree[2 * k], self.tree[2 * k + 1]);
            k /= 2;
        }
    }

    /// The best position in `lo..hi` (smallest key, then lowest position), or [`NONE`].
    fn range_best(&self, lo: usize, hi: usize) -> u32 {
        let (mut l, mut r) = (lo + self.n2, hi + self.n2);
        let mut best = NONE;
        while l < r {
            if l & 1 == 1 {
                best = self.better(best, self.tree[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                best = self.better(best, self.tree[r]);
            }
            l /= 2;
            r /= 2;
        }
        best
    }
}

/// The fork path's idlest-group index: one [`ListIndex`] per stored group list the path has
/// asked about.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdlestIndex {
    lists: BTreeMap<u32, ListIndex>,
    /// Scratch: the CPUs changed since a list's last refresh.
    changed: Vec<u32>,
    /// Answers given after re-evaluating only the changed groups, and after re-evaluating
    /// every group (what tests check both ways were taken).
    pub(super) answered: (u64, u64),
}

/// What sched_balance_find_dst_group()'s group loop leaves: the idlest non-local group and
/// the local group, with their statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct DstPick {
    pub idlest: Option<GroupId>,
    pub idlest_sgs: SgLbStats,
    pub local: Option<GroupId>,
    pub local_sgs: SgLbStats,
}

impl IdlestIndex {
    /// The loop's result for `p` in `sd` (a domain of the CPU whose walk starts at its local
    /// group), charging `work` as the loop does; `None`, charging nothing, if `sd`'s list is
    /// too short to keep or its first group does not hold `this_cpu`.
    /// The caller has checked that no group's statistics depend on `p`: `p` may run on every
    /// CPU of `sd`, adds nothing to any of them, no wake-up is pending beyond the runqueues'
    /// own flags, and `sd` is neither `SD_OVERLAP` nor `SD_ASYM_CPUCAPACITY`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pick(
        &mut self,
        ctx: &BalanceCtx<'_>,
        st: &BalanceState,
        sd: &SchedDomain,
        p: TaskId,
        this_cpu: CpuId,
        inv: &WakeupInvariants,
        work: &mut WorkAccount,
    ) -> Option<DstPick> {
        let topo = ctx.topo;
        let list = topo.group_list(sd);
        let n = list.groups.len();
        if n < MIN_GROUPS {
            return None;
        }
        let li = self
            .lists
            .entry(list.id)
            .or_insert_with(|| new_list(ctx, list.groups));
        // The loop's local group is the one holding `this_cpu` (groups of a domain that is
        // not SD_OVERLAP share no CPU), which starts the walk.
        if !topo
            .span(topo.group(list.groups[list.start]).span)
            .test(this_cpu)
        {
            return None;
        }
        let now = ctx.rqs.change_pos();
        let mut view = None;
        let mut scratch = WorkAccount::default();
        let mut sgs_of = |gid: GroupId| {
            update_sg_wakeup_stats_with(
                ctx,
                st,
                sd,
                topo.group(gid),
                p,
                inv,
                &mut view,
                &mut scratch,
            )
        };
        self.changed.clear();
        let changed = &mut self.changed;
        let current = li.evaluated
            && li.imbalance_pct == sd.imbalance_pct
            && li.tip_avg_high == inv.tip_avg_high
            && ctx.rqs.changed_between(li.pos, now, |c| changed.push(c));
        if current {
            // A group capacity changed somewhere: re-key the groups of this list whose own
            // `capacity` or `imbalance` differ from what their keys were computed with.
            if li.sgc_epoch != st.sgc_epoch() {
                for (i, &gid) in list.groups.iter().enumerate() {
                    let sgc = st.sgc(topo.group(gid).sgc);
                    if li.sgc_seen[i] != (sgc.capacity, sgc.imbalance) {
                        li.sgc_seen[i] = (sgc.capacity, sgc.imbalance);
                        let key = Key::of(&sgs_of(gid));
                        if li.keys[i] != key {
                            li.keys[i] = key;
                            li.update_leaf(i);
                        }
                    }
                }
                li.sgc_epoch = st.sgc_epoch();
            }
            let span = topo.span(sd.span);
            for &c in changed.iter() {
                if !span.test(CpuId(c)) {
                    continue;
                }
                let Ok(at) = li
                    .cpu_group
                    .binary_search_by_key(&(c as u16), |&(cpu, _)| cpu)
                else {
                    continue;
                };
                let i = usize::from(li.cpu_group[at].1);
                let key = Key::of(&sgs_of(list.groups[i]));
                if li.keys[i] != key {
                    li.keys[i] = key;
                    li.update_leaf(i);
                }
            }
            self.answered.0 += 1;
        } else {
            for (i, &gid) in list.groups.iter().enumerate() {
                let sgc = st.sgc(topo.group(gid).sgc);
                li.sgc_seen[i] = (sgc.capacity, sgc.imbalance);
                li.keys[i] = Key::of(&sgs_of(gid));
            }
            li.rebuild_tree();
            li.evaluated = true;
            li.sgc_epoch = st.sgc_epoch();
            li.imbalance_pct = sd.imbalance_pct;
            li.tip_avg_high = inv.tip_avg_high;
            self.answered.1 += 1;
        }
        li.pos = now;
        work.domains += 1;
        work.cpus_scanned += li.weight;

        let start = list.start;
        let after = li.range_best(start + 1, n);
        let before = li.range_best(0, start);
        let best = match (after, before) {
            (NONE, b) => b,
            (a, NONE) => a,
            (a, b) if li.keys[b as usize].cmp_idler(&li.keys[a as usize]) == Ordering::Less => b,
            (a, _) => a,
        };
        let local = list.groups[start];
        let mut pick = DstPick {
            local: Some(local),
            local_sgs: sgs_of(local),
            ..DstPick::default()
        };
        if best != NONE && li.keys[best as usize].cmp_idler(&SENTINEL) == Ordering::Less {
            let gid = list.groups[best as usize];
            pick.idlest = Some(gid);
            pick.idlest_sgs = sgs_of(gid);
        } else {
            pick.idlest_sgs = SgLbStats {
                avg_load: u64::from(u32::MAX),
                group_type: GroupType::Overloaded,
                ..SgLbStats::default()
            };
        }
        Some(pick)
    }
}

/// A list's index before its first evaluation (its keys are computed by the caller).
fn new_list(ctx: &BalanceCtx<'_>, groups: &[GroupId]) -> ListIndex {
    let topo = ctx.topo;
    let n = groups.len();
    let n2 = n.next_power_of_two();
    let mut tree = vec![NONE; 2 * n2];
    for (i, leaf) in tree[n2..n2 + n].iter_mut().enumerate() {
        *leaf = i as u32;
    }
    let mut cpu_group = Vec::new();
    let mut weight = 0;
    for (i, &gid) in groups.iter().enumerate() {
        let g = topo.group(gid);
        weight += g.group_weight;
        for &c in topo.span_cpus(g.span) {
            cpu_group.push((c.0 as u16, i as u16));
        }
    }
    cpu_group.sort_unstable();
    ListIndex {
        evaluated: false,
        pos: ChangePos::default(),
        sgc_epoch: 0,
        sgc_seen: vec![(0, false); n],
        imbalance_pct: 0,
        tip_avg_high: false,
        keys: vec![Key::default(); n],
        tree,
        n2,
        cpu_group,
        weight,
    }
}
