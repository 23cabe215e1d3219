//! The per-runqueue fair queue (`struct cfs_rq`): EEVDF (v6.6–v6.12) and, selectable, the
//! legacy CFS pick (v6.1).
//!
//! Follows kernel/sched/fair.c of v6.12 (checked against a v6.12.20 tree): `avg_vruntime()`
//! and its helpers, `entity_eligible()`/`vruntime_eligible()`, `update_min_vruntime()`,
//! `update_deadline()`, `place_entity()`, `enqueue_entity()`, `dequeue_entity()` (with
//! `DELAY_DEQUEUE`), `requeue_delayed_entity()`, `set_next_entity()`, `put_prev_entity()`,
//! `pick_eevdf()`, `pick_next_entity()`, `entity_tick()`, `update_curr()`; and, for
//! `sched_policy=cfs`, fair.c of v6.1 (checked against a v6.1.y tree): `sched_slice()`,
//! `place_entity()` with `GENTLE_FAIR_SLEEPERS`/`START_DEBIT`, the min-vruntime pick with the
//! next/last/skip buddies, `check_preempt_tick()` and `wakeup_preempt_entity()`.
//!
//! **The timeline is an augmented balanced tree** (`timeline.rs`): `tasks_timeline` holds the
//! queued entities except `curr`, ordered as the kernel's rbtree by (deadline, insertion) under
//! EEVDF — `rb_add` puts an equal key to the right of the existing ones — and by (vruntime,
//! insertion) under legacy CFS, each subtree caching its smallest vruntime and slice; insertion,
//! removal, `pick_eevdf()`'s heap search (the in-order first eligible entity: the eligible one
//! with the earliest deadline, ties going to the one inserted first), `min_vruntime` and
//! `min_slice` take O(log n). The tree is an AVL tree over an arena, not a red-black tree (the
//! picks and the minima depend only on the order, not on the shape). v6.6 sorted the tree by
//! vruntime and searched with a min-deadline augmentation; the entity it picks is the same
//! except when two eligible entities have equal deadlines (lbsim breaks that tie as v6.8+ does).
//!
//! A cfs_rq holds task entities and, with task groups, group entities (named by
//! `entity::group_se_id`); the entity store (`EntityStore`) resolves both and gives the group
//! parts of the life cycle (propagating PELT, `se_update_runnable()`, `update_cfs_group()`).
//! `rq->cfs_tasks` lives in the root cfs_rq as [`CfsRq::cfs_tasks`].
//!
//! Files: this one is the shared cfs_rq core (the struct, `min_vruntime`, the timeline, the
//! buddies, accounting and PELT, and the entity life cycle); the two picks live beside it,
//! `eevdf.rs` (v6.12: `avg_vruntime()`, eligibility and lag, `pick_eevdf()`,
//! `update_deadline()`, `PREEMPT_SHORT`, `place_entity()`, the delayed dequeue) and
//! `cfs_legacy.rs` (v6.1: `sched_slice()`, `place_entity()`, `wakeup_preempt_entity()`,
//! `check_preempt_tick()`, the buddy pick). Two data structures have their own files:
//! `timeline.rs` (the augmented tree of `tasks_timeline`) and `task_list.rs` (the linked list
//! of `rq->cfs_tasks`); an entity keeps its slot in each (`se->run_node`, `se->group_node`).
//! The interface both picks are used through is the life cycle here
//! ([`CfsRq::enqueue_entity`], [`CfsRq::dequeue_entity`], [`CfsRq::update_curr`],
//! [`CfsRq::set_next_entity`], [`CfsRq::entity_tick`], [`CfsRq::pick_next_entity`]), which
//! selects on [`SchedParams::policy`](crate::tunables::SchedParams).

mod cfs_legacy;
mod eevdf;
mod task_list;
mod timeline;

use lbsim_pelt::{CfsRqAvg, CfsRqLoad, CfsRqTg, SeLoad, UpdateFlags};

use crate::entity::{DequeueFlags, EnqueueFlags, EntityStore, TaskId, se_group};
use crate::params::RqFeat;
use crate::tunables::{FairPick, SchedParams};
use crate::weights::{LoadWeight, calc_delta_fair, scale_load_down};

use task_list::TaskList;
use timeline::{NIL, Node, Timeline};

/// `RB_CLEAR_NODE()`: the `run_node` of an entity in no timeline (and the `group_node` of
/// one on no `cfs_tasks`).
pub(crate) const NO_RUN_NODE: u32 = NIL;

/// The two clocks a cfs_rq operation reads: `rq_clock_task()` and `cfs_rq_clock_pelt()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CfsClock {
    /// `rq_clock_task(rq)`.
    pub task: u64,
    /// `cfs_rq_clock_pelt(cfs_rq)` (no bandwidth throttling: `rq_clock_pelt(rq)`).
    pub pelt: u64,
}

/// `(s64)(a - b) < 0`: `a` is before `b` on a wrapping virtual clock.
#[inline]
fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// `max_vruntime()`.
#[inline]
fn max_vruntime(max: u64, v: u64) -> u64 {
    if (v.wrapping_sub(max) as i64) > 0 {
        v
    } else {
        max
    }
}

/// `min_vruntime()`.
#[inline]
fn min_vruntime(min: u64, v: u64) -> u64 {
    if (v.wrapping_sub(min) as i64) < 0 {
        v
    } else {
        min
    }
}

/// `struct cfs_rq` of a flat hierarchy.
#[derive(Clone, Debug)]
pub struct CfsRq {
    /// `cfs_rq->load`: the sum of the queued entities' weights (including `curr` while queued).
    pub load: LoadWeight,
    /// `cfs_rq->nr_running`: queued entities, including `curr` while queued and delayed ones.
    pub nr_running: u32,
    /// `cfs_rq->h_nr_running`: queued tasks (flat: equal to `nr_running`).
    pub h_nr_running: u32,
    /// `cfs_rq->idle_nr_running`: queued `SCHED_IDLE` entities.
    pub idle_nr_running: u32,
    /// `cfs_rq->idle_h_nr_running`: queued `SCHED_IDLE` tasks.
    pub idle_h_nr_running: u32,
    /// `cfs_rq->h_nr_delayed` (v6.12.y / v6.13): queued tasks that are delayed-dequeued.
    pub h_nr_delayed: u32,
    /// Not the kernel's: how many `set_delayed()` / `clear_delayed()` walks of a task below
    /// (with task groups) have changed this cfs_rq's `h_nr_delayed` without bringing its PELT
    /// sums up to date first, so that `--check` can bound what that costs its `runnable_sum`
    /// (see `docs/architecture.md`, "runnable_sum"). Always 0 without task groups.
    pub delayed_walks: u64,
    /// `cfs_rq->avg_vruntime`: `Σ (v_i - min_vruntime) * w_i` over the timeline (not `curr`).
    pub avg_vruntime: i64,
    /// `cfs_rq->avg_load`: `Σ w_i` over the timeline (not `curr`).
    pub avg_load: u64,
    /// `cfs_rq->min_vruntime`: the monotonic base of the relative sums.
    pub min_vruntime: u64,
    /// `cfs_rq->curr`: the running entity (set from pick to put, even while it is dequeued).
    pub curr: Option<TaskId>,
    /// `cfs_rq->next`: the next buddy.
    pub next: Option<TaskId>,
    /// `cfs_rq->last` (v6.1): the last buddy.
    pub last: Option<TaskId>,
    /// `cfs_rq->skip` (v6.1): the skip buddy (set by yield).
    pub skip: Option<TaskId>,
    /// `cfs_rq->avg` and `cfs_rq->removed`: the PELT state.
    pub avg: CfsRqAvg,
    /// `TIF_NEED_RESCHED` on the rq's current task: `resched_curr()` was called since the last
    /// schedule (a group cfs_rq's is moved to its runqueue's root cfs_rq after each call).
    pub need_resched: bool,
    /// The group-scheduling fields (`tg_load_avg_contrib`, `propagate`, `h_load`, ...); unused
    /// without task groups.
    pub tg: CfsRqTg,
    /// `cfs_rq->load.weight` in the kernel's scaled form (`scale_load()`): the sum of the
    /// queued entities' scaled weights, which a group entity's low bits make differ from
    /// `load.weight << 10`. What PELT and `calc_group_shares()` read with task groups.
    pub load_scaled: u64,
    /// `cfs_rq->tg`: the task group this cfs_rq belongs to (0: the root cfs_rq, which keeps
    /// `rq->cfs_tasks`).
    pub group: u32,
    timeline: Timeline,
    /// The next insertion sequence of the timeline ([`Timeline::renumber`]ed before it
    /// would wrap).
    next_seq: u32,
    cfs_tasks: TaskList,
}

impl Default for CfsRq {
    fn default() -> CfsRq {
        CfsRq::new()
    }
}

impl CfsRq {
    /// An empty cfs_rq. Follows fair.c: `init_cfs_rq()`: `min_vruntime = -(1 << 20)` so that
    /// wrap-around is exercised early.
    pub fn new() -> CfsRq {
        CfsRq {
            load: LoadWeight::default(),
            nr_running: 0,
            h_nr_running: 0,
            idle_nr_running: 0,
            idle_h_nr_running: 0,
            h_nr_delayed: 0,
            delayed_walks: 0,
            avg_vruntime: 0,
            avg_load: 0,
            min_vruntime: (-(1i64 << 20)) as u64,
            curr: None,
            next: None,
            last: None,
            skip: None,
            avg: CfsRqAvg::default(),
            need_resched: false,
            tg: CfsRqTg::default(),
            load_scaled: 0,
            group: 0,
            timeline: Timeline::default(),
            next_seq: 0,
            cfs_tasks: TaskList::default(),
        }
    }

    /// `rq->cfs_tasks`, head (most recently picked or enqueued) first. The load balancer's
    /// `detach_tasks()` scans it from the tail (`list_last_entry()`).
    pub fn cfs_tasks(&self) -> impl DoubleEndedIterator<Item = TaskId> + ExactSizeIterator + '_ {
        self.cfs_tasks.iter()
    }

    /// `list_move(&p->se.group_node, &rq->cfs_tasks)`: move a task to the head of
    /// `cfs_tasks` (done when it is picked, and by `detach_tasks()` for a skipped task).
    /// Returns false if the task is not on the list. It finds the task by walking the list;
    /// [`CfsRq::cfs_tasks_list_move`] takes it from its entity instead.
    pub fn cfs_tasks_move_to_head(&mut self, id: TaskId) -> bool {
        match self.cfs_tasks.find(id) {
            Some(slot) => {
                self.cfs_tasks.move_to_head(slot);
                true
            }
            None => false,
        }
    }

    /// `list_move(&p->se.group_node, &rq->cfs_tasks)` through the entity's `group_node`: as
    /// [`CfsRq::cfs_tasks_move_to_head`] in O(1).
    pub fn cfs_tasks_list_move<E: EntityStore>(&mut self, ents: &E, id: TaskId) -> bool {
        let slot = ents.se(id).group_node;
        if !self.cfs_tasks.holds(slot, id) {
            return false;
        }
        self.cfs_tasks.move_to_head(slot);
        true
    }

    /// `list_move_tail(&p->se.group_node, &rq->cfs_tasks)`: move a task to the tail of
    /// `cfs_tasks` (done by the `detach_tasks()` of v4.6-v4.14, which scanned from the
    /// head, for a skipped task). Returns false if the task is not on the list.
    pub fn cfs_tasks_move_to_tail(&mut self, id: TaskId) -> bool {
        match self.cfs_tasks.find(id) {
            Some(slot) => {
                self.cfs_tasks.move_to_tail(slot);
                true
            }
            None => false,
        }
    }

    /// Whether `id` is on `cfs_tasks` (through its entity's `group_node`).
    pub fn on_cfs_tasks<E: EntityStore>(&self, ents: &E, id: TaskId) -> bool {
        self.cfs_tasks.holds(ents.se(id).group_node, id)
    }

    /// The entities in `tasks_timeline` (queued, not `curr`), in tree order.
    pub fn timeline(&self) -> impl ExactSizeIterator<Item = TaskId> + '_ {
        self.timeline.iter().map(|n| n.id)
    }

    /// Whether `id` is in `tasks_timeline` (`RB_EMPTY_NODE(&se->run_node)` negated).
    pub fn in_timeline<E: EntityStore>(&self, ents: &E, id: TaskId) -> bool {
        self.timeline.get(ents.se(id).run_node, id).is_some()
    }

    /// Check the timeline's own structure: sorted, balanced, its cached minima and leftmost
    /// right (an error names what is not).
    pub fn check_timeline(&self) -> Result<(), String> {
        self.timeline.check()
    }

    /// `resched_curr()`.
    #[inline]
    pub fn resched_curr(&mut self) {
        self.need_resched = true;
    }

    /// Follows fair.c: `__update_min_vruntime()`: advance, never retreat, and rebase the sums.
    fn __update_min_vruntime(&mut self, vruntime: u64) -> u64 {
        let min_vruntime = self.min_vruntime;
        let delta = vruntime.wrapping_sub(min_vruntime) as i64;
        if delta > 0 {
            self.avg_vruntime_update(delta);
            return vruntime;
        }
        min_vruntime
    }

    /// Follows fair.c: `update_min_vruntime()` (v6.12): the minimum of `curr` (if queued) and
    /// the timeline's smallest vruntime, never moving backwards.
    pub fn update_min_vruntime<E: EntityStore>(&mut self, ents: &E) {
        let mut vruntime = self.min_vruntime;
        let mut curr = None;
        if let Some(c) = self.curr {
            let se = ents.se(c);
            if se.on_rq {
                vruntime = se.vruntime;
                curr = Some(c);
            }
        }
        if let Some(tree_min) = self.timeline_min_vruntime() {
            vruntime = if curr.is_none() {
                tree_min
            } else {
                min_vruntime(vruntime, tree_min)
            };
        }
        self.min_vruntime = self.__update_min_vruntime(vruntime);
    }

    /// The root's augmented `min_vruntime`: the smallest vruntime in the timeline.
    fn timeline_min_vruntime(&self) -> Option<u64> {
        self.timeline.min_vruntime()
    }

    /// The smallest slice of the queued entities (`curr` if queued, and the timeline's root
    /// `min_slice`); `u64::MAX` if none.
    ///
    /// Follows fair.c: `cfs_rq_min_slice()` (v6.12).
    pub fn cfs_rq_min_slice<E: EntityStore>(&self, ents: &E) -> u64 {
        let mut min_slice = u64::MAX;
        if let Some(c) = self.curr {
            let se = ents.se(c);
            if se.on_rq {
                min_slice = se.slice;
            }
        }
        if let Some(root) = self.timeline.min_slice() {
            min_slice = min_slice.min(root);
        }
        min_slice
    }

    // ---------------------------------------------------------------------------------
    // The timeline

    /// Sort the timeline by the pick policy's key (deadline under EEVDF, vruntime under legacy
    /// CFS; see `timeline.rs`). A no-op unless the policy changed.
    #[inline]
    fn timeline_order(&mut self, pick: FairPick) {
        self.timeline.set_order(pick);
    }

    /// Follows fair.c: `__enqueue_entity()`: add to the sums and the timeline (sorted as the
    /// policy of the last life-cycle call: see [`CfsRq::enqueue_entity`]).
    #[inline]
    pub fn __enqueue_entity<E: EntityStore>(&mut self, ents: &mut E, id: TaskId) {
        debug_assert!(
            !self.in_timeline(ents, id),
            "entity already in the timeline"
        );
        let se = ents.se(id);
        let weight = scale_load_down(se.load.weight);
        if self.next_seq == u32::MAX {
            self.next_seq = self.timeline.renumber();
        }
        let node = Node {
            id,
            seq: self.next_seq,
            vruntime: se.vruntime,
            deadline: se.deadline,
            slice: se.slice,
        };
        self.next_seq += 1;
        self.avg_vruntime_add(node.vruntime, weight);
        ents.se_mut(id).run_node = self.timeline.insert(node);
    }

    /// Follows fair.c: `__dequeue_entity()`: remove from the timeline and the sums.
    pub fn __dequeue_entity<E: EntityStore>(&mut self, ents: &mut E, id: TaskId) {
        let slot = ents.se(id).run_node;
        assert!(
            self.timeline.get(slot, id).is_some(),
            "__dequeue_entity(): {id:?} is not in the timeline"
        );
        let node = self.timeline.remove(slot);
        let se = ents.se_mut(id);
        se.run_node = NIL;
        // The weight as avg_vruntime_sub() reads it, from the entity: an entity's weight does
        // not change while it is in the tree (reweight_entity() takes it out first).
        let weight = scale_load_down(se.load.weight);
        self.avg_vruntime_sub(node.vruntime, weight);
    }

    /// The leftmost node by another key than the tree's: smallest key, then earliest
    /// insertion, the smaller sequence (after a renumbering, tree order among the nodes it
    /// numbered). A linear scan: the simulator never asks, since the tree follows the policy.
    fn leftmost_by(&self, key: impl Fn(&Node) -> u64) -> Option<Node> {
        let mut best: Option<Node> = None;
        for n in self.timeline.iter() {
            best = match best {
                None => Some(n),
                Some(b) => {
                    let (kn, kb) = (key(&n), key(&b));
                    if before(kn, kb) || (kn == kb && n.seq < b.seq) {
                        Some(n)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        best
    }

    /// Follows fair.c: `__pick_first_entity()`: the leftmost entity of the timeline — by
    /// deadline under EEVDF (v6.8+ tree order), by vruntime under legacy CFS.
    pub fn __pick_first_entity(&self, pick: FairPick) -> Option<TaskId> {
        if pick == self.timeline.order() {
            return self.timeline.first().map(|n| n.id);
        }
        match pick {
            FairPick::Eevdf => self.leftmost_by(|n| n.deadline).map(|n| n.id),
            FairPick::Cfs => self.leftmost_by(|n| n.vruntime).map(|n| n.id),
        }
    }

    /// v6.1 `__pick_next_entity(se)`: the in-order successor of `id` in the vruntime-ordered
    /// timeline (`None` if `id` is not in it). In a tree sorted by another key (a linear scan
    /// the simulator never runs, as for [`CfsRq::leftmost_by`]) equal vruntimes are ordered
    /// by sequence: insertion order, or tree order among the nodes a renumbering numbered.
    fn successor_by_vruntime<E: EntityStore>(&self, ents: &E, id: TaskId) -> Option<TaskId> {
        let slot = ents.se(id).run_node;
        self.timeline.get(slot, id)?;
        if self.timeline.order() == FairPick::Cfs {
            return self.timeline.successor(slot).map(|n| n.id);
        }
        let me = self.timeline.get(slot, id)?;
        let after = |n: &Node| {
            before(me.vruntime, n.vruntime) || (n.vruntime == me.vruntime && n.seq > me.seq)
        };
        let mut best: Option<Node> = None;
        for n in self.timeline.iter().filter(after) {
            best = match best {
                None => Some(n),
                Some(b) => {
                    if before(n.vruntime, b.vruntime) || (n.vruntime == b.vruntime && n.seq < b.seq)
                    {
                        Some(n)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        best.map(|n| n.id)
    }

    // ---------------------------------------------------------------------------------
    // Buddies

    /// Follows fair.c: `clear_buddies()` (v6.1 clears next, last and skip; v6.12 has only next).
    pub fn clear_buddies(&mut self, id: TaskId) {
        if self.next == Some(id) {
            self.next = None;
        }
        if self.last == Some(id) {
            self.last = None;
        }
        if self.skip == Some(id) {
            self.skip = None;
        }
    }

    /// Follows fair.c: `set_next_buddy()`: not for an idle entity.
    pub fn set_next_buddy<E: EntityStore>(&mut self, ents: &E, id: TaskId) {
        let se = ents.se(id);
        debug_assert!(se.on_rq);
        if se.idle {
            return;
        }
        self.next = Some(id);
    }

    /// Follows v6.1 fair.c: `set_last_buddy()`.
    pub fn set_last_buddy<E: EntityStore>(&mut self, ents: &E, id: TaskId) {
        let se = ents.se(id);
        debug_assert!(se.on_rq);
        if se.idle {
            return;
        }
        self.last = Some(id);
    }

    // ---------------------------------------------------------------------------------
    // Accounting and PELT

    /// Follows fair.c: `account_entity_enqueue()`: add the weight, put the task at the head of
    /// `cfs_tasks` (`list_add`), count it.
    ///
    /// With task groups only the root cfs_rq keeps `cfs_tasks` (`rq->cfs_tasks`): a task of a
    /// group is put on it by the runqueue's hierarchy walk, and a group entity never is.
    fn account_entity_enqueue<E: EntityStore>(&mut self, ents: &mut E, id: TaskId) {
        let se = ents.se(id);
        let (weight, idle) = (se.load.weight, se.idle);
        self.load.add(weight);
        self.load_scaled += ents.scaled_weight(id);
        if self.group == 0 && se_group(id).is_none() {
            ents.se_mut(id).group_node = self.cfs_tasks.push_front(id);
        }
        self.nr_running += 1;
        if idle {
            self.idle_nr_running += 1;
        }
    }

    /// Follows fair.c: `account_entity_dequeue()`.
    fn account_entity_dequeue<E: EntityStore>(&mut self, ents: &mut E, id: TaskId) {
        let se = ents.se(id);
        let (weight, idle, slot) = (se.load.weight, se.idle, se.group_node);
        self.load.sub(weight);
        self.load_scaled -= ents.scaled_weight(id);
        if self.group == 0 && se_group(id).is_none() {
            if self.cfs_tasks.holds(slot, id) {
                self.cfs_tasks.remove(slot);
                ents.se_mut(id).group_node = NO_RUN_NODE;
            } else {
                debug_assert!(false, "account_entity_dequeue(): {id:?} not on cfs_tasks");
            }
        }
        self.nr_running -= 1;
        if idle {
            self.idle_nr_running -= 1;
        }
    }

    /// What PELT reads about this cfs_rq now (`__update_load_avg_cfs_rq()`): the queued
    /// weight, the runnable count `h_nr_running - h_nr_delayed` (v6.12.y / v6.13: delayed tasks
    /// are not runnable) and whether an entity runs.
    pub fn pelt_load(&self) -> CfsRqLoad {
        CfsRqLoad {
            load_weight: scale_load_down(self.load.weight),
            h_nr_running: u64::from(self.h_nr_running - self.h_nr_delayed),
            curr: self.curr.is_some(),
        }
    }

    /// Follows fair.c: `update_load_avg()` for an entity of this cfs_rq, through the store's
    /// [`EntityStore::pelt_update`]: [`CfsRq::update_load_avg_task`] in a flat hierarchy.
    #[inline]
    pub fn update_load_avg<E: EntityStore>(
        &mut self,
        ents: &mut E,
        id: TaskId,
        now_pelt: u64,
        flags: UpdateFlags,
        params: &SchedParams,
    ) {
        ents.pelt_update(self, id, now_pelt, flags, params.feat(RqFeat::UtilEst));
    }

    /// Adds the entity's `load_avg` and weighted `load_sum` to the cfs_rq's pre-v5.7
    /// `runnable_load_avg`/`runnable_load_sum`, when the cfs_rq keeps them (a no-op from v5.7).
    ///
    /// Follows fair.c: enqueue_entity_load_avg() (v4.6-v4.14) and
    /// enqueue_runnable_load_avg() (v4.15-v5.6), both right after the entity's and the
    /// cfs_rq's PELT update in enqueue_entity() and before account_entity_enqueue(). See
    /// [`lbsim_pelt::RunnableLoad`] for what differs.
    fn enqueue_runnable_load_avg<E: EntityStore>(&mut self, ents: &E, id: TaskId) {
        if self.avg.runnable_load.form.tracked() {
            let se = ents.se(id);
            self.avg
                .runnable_load
                .enqueue(se.avg.load_avg, se.se_weight(), se.avg.load_sum);
        }
    }

    /// Subtracts the entity's share from the pre-v5.7 `runnable_load_avg`/`runnable_load_sum`,
    /// each clamped at 0, when the cfs_rq keeps them.
    ///
    /// Follows fair.c: dequeue_entity_load_avg() (v4.6-v4.14) and
    /// dequeue_runnable_load_avg() (v4.15-v5.6), right after the PELT update in
    /// dequeue_entity().
    fn dequeue_runnable_load_avg<E: EntityStore>(&mut self, ents: &E, id: TaskId) {
        if self.avg.runnable_load.form.tracked() {
            let se = ents.se(id);
            self.avg
                .runnable_load
                .dequeue(se.avg.load_avg, se.se_weight(), se.avg.load_sum);
        }
    }

    /// `rq->cfs_tasks` insertion of a task queued on a group cfs_rq (`list_add()` in its
    /// `account_entity_enqueue()`), done by the hierarchy walk on the root cfs_rq.
    pub(crate) fn cfs_tasks_add<E: EntityStore>(&mut self, ents: &mut E, id: TaskId) {
        ents.se_mut(id).group_node = self.cfs_tasks.push_front(id);
    }

    /// `list_del_init(&se->group_node)` of a task queued on a group cfs_rq.
    pub(crate) fn cfs_tasks_del<E: EntityStore>(&mut self, ents: &mut E, id: TaskId) {
        let slot = ents.se(id).group_node;
        if self.cfs_tasks.holds(slot, id) {
            self.cfs_tasks.remove(slot);
            ents.se_mut(id).group_node = NO_RUN_NODE;
        } else {
            debug_assert!(false, "cfs_tasks_del(): {id:?} not on cfs_tasks");
        }
    }

    /// Set a queued entity's slice, keeping the timeline's cached `min_slice` right if it is
    /// in the tree (`se->slice = slice` and `min_vruntime_cb_propagate()`).
    pub(crate) fn set_slice<E: EntityStore>(&mut self, ents: &mut E, id: TaskId, slice: u64) {
        let slot = ents.se(id).run_node;
        ents.se_mut(id).slice = slice;
        if self.curr != Some(id) && self.timeline.get(slot, id).is_some() {
            self.timeline.set_slice(slot, slice);
        }
    }

    /// Follows fair.c: `update_load_avg()` for a task entity of this cfs_rq (no group
    /// propagation). The entity is runnable for PELT if queued and not delayed
    /// (`se_runnable()`, v6.12.y / v6.13).
    pub fn update_load_avg_task<E: EntityStore>(
        &mut self,
        ents: &mut E,
        id: TaskId,
        now_pelt: u64,
        flags: UpdateFlags,
        util_est: bool,
    ) {
        let cfs_load = self.pelt_load();
        let is_curr = self.curr == Some(id);
        let se = ents.se_mut(id);
        let se_load = SeLoad {
            weight: se.se_weight(),
            on_rq: se.on_rq,
            runnable: u64::from(se.on_rq && !se.sched_delayed),
            curr: is_curr,
        };
        self.avg
            .update_load_avg(&mut se.avg, now_pelt, &se_load, &cfs_load, flags, util_est);
    }

    // ---------------------------------------------------------------------------------
    // The entity life cycle

    /// Account the time `curr` ran since its `exec_start`.
    ///
    /// Follows fair.c: `update_curr()` (v6.12): advance `sum_exec_runtime` and `vruntime`,
    /// take a new slice when the deadline is reached, update `min_vruntime`; with more than one
    /// entity queued, reschedule on a new slice or when `did_preempt_short()`. Under legacy CFS
    /// (v6.1) only the runtime, vruntime and `min_vruntime` move. Returns the time accounted
    /// (0 if none).
    pub fn update_curr<E: EntityStore>(
        &mut self,
        ents: &mut E,
        clock: CfsClock,
        params: &SchedParams,
    ) -> u64 {
        let Some(cid) = self.curr else {
            return 0;
        };
        let curr = ents.se_mut(cid);
        let delta_exec = clock.task.wrapping_sub(curr.exec_start) as i64;
        if delta_exec <= 0 {
            return 0;
        }
        let delta_exec = delta_exec as u64;
        curr.exec_start = clock.task;
        curr.sum_exec_runtime += delta_exec;
        curr.vruntime = curr
            .vruntime
            .wrapping_add(calc_delta_fair(delta_exec, &curr.load));
        match params.pick {
            FairPick::Eevdf => {
                let resched = Self::update_deadline(curr, params.base_slice_ns);
                self.update_min_vruntime(ents);
                if self.nr_running == 1 {
                    return delta_exec;
                }
                if resched || self.did_preempt_short(ents, cid, params) {
                    self.resched_curr();
                    self.clear_buddies(cid);
                }
            }
            FairPick::Cfs => self.update_min_vruntime(ents),
        }
        delta_exec
    }

    /// Put an entity on this cfs_rq.
    ///
    /// Follows fair.c: `enqueue_entity()` (v6.12): place (before `update_curr()` if it is
    /// `curr`), update PELT attaching a migrated/new entity (`DO_ATTACH`), account it, forget
    /// its cache hotness if `ENQUEUE_MIGRATED`, insert it into the timeline unless it is `curr`.
    /// Under legacy CFS it follows v6.1: a non-wakeup or migrated entity's relative vruntime is
    /// renormalised against this `min_vruntime`, and only a wakeup is placed.
    pub fn enqueue_entity<E: EntityStore>(
        &mut self,
        ents: &mut E,
        id: TaskId,
        flags: EnqueueFlags,
        clock: CfsClock,
        params: &SchedParams,
    ) {
        self.timeline_order(params.pick);
        let is_curr = self.curr == Some(id);
        match params.pick {
            FairPick::Eevdf => {
                if is_curr {
                    self.place_entity(ents, id, flags, params);
                }
                self.update_curr(ents, clock, params);
                self.update_load_avg(
                    ents,
                    id,
                    clock.pelt,
                    UpdateFlags::UPDATE_TG | UpdateFlags::DO_ATTACH,
                    params,
                );
                self.enqueue_runnable_load_avg(ents, id);
                ents.se_update_runnable(id);
                ents.update_cfs_group(self, id, clock, params);
                if !is_curr {
                    self.place_entity(ents, id, flags, params);
                }
                self.account_entity_enqueue(ents, id);
            }
            FairPick::Cfs => {
                let renorm =
                    !flags.contains(EnqueueFlags::WAKEUP) || flags.contains(EnqueueFlags::MIGRATED);
                if renorm && is_curr {
                    let se = ents.se_mut(id);
                    se.vruntime = se.vruntime.wrapping_add(self.min_vruntime);
                }
                self.update_curr(ents, clock, params);
                if renorm && !is_curr {
                    let se = ents.se_mut(id);
                    se.vruntime = se.vruntime.wrapping_add(self.min_vruntime);
                }
                self.update_load_avg(
                    ents,
                    id,
                    clock.pelt,
                    UpdateFlags::UPDATE_TG | UpdateFlags::DO_ATTACH,
                    params,
                );
                self.enqueue_runnable_load_avg(ents, id);
                self.account_entity_enqueue(ents, id);
                if flags.contains(EnqueueFlags::WAKEUP) {
                    self.place_entity_cfs(ents, id, false, clock.task, params);
                }
            }
        }
        if flags.contains(EnqueueFlags::MIGRATED) {
            ents.se_mut(id).exec_start = 0;
        }
        if !is_curr {
            self.__enqueue_entity(ents, id);
        }
        ents.se_mut(id).on_rq = true;
    }

    /// Take an entity off this cfs_rq. Returns false if the dequeue was delayed (the entity
    /// stays queued with `sched_delayed` set).
    ///
    /// Follows fair.c: `dequeue_entity()` (v6.12): with `DELAY_DEQUEUE`, a sleeping,
    /// non-special, ineligible entity only gets a PELT update and is marked delayed; otherwise
    /// PELT is updated (detaching the entity if the load balancer is migrating it), its lag is
    /// saved (`update_entity_lag()`), a non-sleep dequeue keeps a relative deadline
    /// (`PLACE_REL_DEADLINE`), and it leaves the timeline and the counts; finishing a delayed
    /// dequeue clips positive lag with `DELAY_ZERO`. Under legacy CFS (v6.1) a non-sleep
    /// dequeue makes the vruntime relative to `min_vruntime` instead.
    pub fn dequeue_entity<E: EntityStore>(
        &mut self,
        ents: &mut E,
        id: TaskId,
        flags: DequeueFlags,
        migrating: bool,
        clock: CfsClock,
        params: &SchedParams,
    ) -> bool {
        let sleep = flags.contains(DequeueFlags::SLEEP);
        let is_curr = self.curr == Some(id);
        let action = if migrating {
            UpdateFlags::UPDATE_TG | UpdateFlags::DO_DETACH
        } else {
            UpdateFlags::UPDATE_TG
        };
        match params.pick {
            FairPick::Eevdf => {
                self.update_curr(ents, clock, params);
                self.clear_buddies(id);
                if flags.contains(DequeueFlags::DELAYED) {
                    debug_assert!(ents.se(id).sched_delayed);
                } else {
                    let delay = sleep && !flags.contains(DequeueFlags::SPECIAL);
                    debug_assert!(!(delay && ents.se(id).sched_delayed));
                    if params.feat(RqFeat::DelayDequeue) && delay && !self.entity_eligible(ents, id)
                    {
                        self.update_load_avg(ents, id, clock.pelt, UpdateFlags::NONE, params);
                        self.set_delayed(ents, id);
                        return false;
                    }
                }
                self.update_load_avg(ents, id, clock.pelt, action, params);
                self.dequeue_runnable_load_avg(ents, id);
                ents.se_update_runnable(id);
                self.update_entity_lag(ents, id, params.tick_nsec);
                if params.feat(RqFeat::PlaceRelDeadline) && !sleep {
                    let se = ents.se_mut(id);
                    se.deadline = se.deadline.wrapping_sub(se.vruntime);
                    se.rel_deadline = true;
                }
                if !is_curr {
                    self.__dequeue_entity(ents, id);
                }
                ents.se_mut(id).on_rq = false;
                self.account_entity_dequeue(ents, id);
                ents.update_cfs_group(self, id, clock, params);
                if !flags.contains(DequeueFlags::SAVE) || flags.contains(DequeueFlags::MOVE) {
                    self.update_min_vruntime(ents);
                }
                if flags.contains(DequeueFlags::DELAYED) {
                    // finish_delayed_dequeue_entity()
                    self.clear_delayed(ents, id);
                    let se = ents.se_mut(id);
                    if params.feat(RqFeat::DelayZero) && se.vlag > 0 {
                        se.vlag = 0;
                    }
                }
            }
            FairPick::Cfs => {
                self.update_curr(ents, clock, params);
                self.update_load_avg(ents, id, clock.pelt, action, params);
                self.dequeue_runnable_load_avg(ents, id);
                self.clear_buddies(id);
                if !is_curr {
                    self.__dequeue_entity(ents, id);
                }
                ents.se_mut(id).on_rq = false;
                self.account_entity_dequeue(ents, id);
                if !sleep {
                    let min = self.min_vruntime;
                    let se = ents.se_mut(id);
                    se.vruntime = se.vruntime.wrapping_sub(min);
                }
                if !flags.contains(DequeueFlags::SAVE) || flags.contains(DequeueFlags::MOVE) {
                    self.update_min_vruntime(ents);
                }
            }
        }
        true
    }

    /// Make `id` the running entity.
    ///
    /// Follows fair.c: `set_next_entity()` (v6.12): clear its buddy marks, take it out of the
    /// timeline (updating PELT), stash its deadline in `vlag` (EEVDF's `RUN_TO_PARITY` marker;
    /// not in v6.1), start its run (`exec_start`), remember `prev_sum_exec_runtime`.
    pub fn set_next_entity<E: EntityStore>(
        &mut self,
        ents: &mut E,
        id: TaskId,
        clock: CfsClock,
        params: &SchedParams,
    ) {
        self.clear_buddies(id);
        if ents.se(id).on_rq {
            self.__dequeue_entity(ents, id);
            self.update_load_avg(ents, id, clock.pelt, UpdateFlags::UPDATE_TG, params);
            if params.pick == FairPick::Eevdf {
                let se = ents.se_mut(id);
                se.vlag = se.deadline as i64;
            }
        }
        let se = ents.se_mut(id);
        se.exec_start = clock.task;
        debug_assert!(self.curr.is_none(), "set_next_entity() with a curr");
        self.curr = Some(id);
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
    }

    /// Stop running `prev`.
    ///
    /// Follows fair.c: `put_prev_entity()` (v6.12): if still queued, account its last run and
    /// put it back into the timeline (updating PELT while it is still `curr`).
    pub fn put_prev_entity<E: EntityStore>(
        &mut self,
        ents: &mut E,
        prev: TaskId,
        clock: CfsClock,
        params: &SchedParams,
    ) {
        self.timeline_order(params.pick);
        let on_rq = ents.se(prev).on_rq;
        if on_rq {
            self.update_curr(ents, clock, params);
            self.__enqueue_entity(ents, prev);
            self.update_load_avg(ents, prev, clock.pelt, UpdateFlags::NONE, params);
        }
        debug_assert_eq!(self.curr, Some(prev));
        self.curr = None;
    }

    /// The periodic tick for `curr`.
    ///
    /// Follows fair.c: `entity_tick()` (v6.12): `update_curr()` and a PELT update; under
    /// legacy CFS (v6.1) also `check_preempt_tick()` when more than one entity is queued.
    pub fn entity_tick<E: EntityStore>(
        &mut self,
        ents: &mut E,
        curr: TaskId,
        clock: CfsClock,
        params: &SchedParams,
    ) {
        self.update_curr(ents, clock, params);
        self.update_load_avg(ents, curr, clock.pelt, UpdateFlags::UPDATE_TG, params);
        ents.update_cfs_group(self, curr, clock, params);
        if params.pick == FairPick::Cfs && self.nr_running > 1 {
            self.check_preempt_tick(ents, curr, params);
        }
    }

    /// The entity to run next (before any delayed-dequeue handling by the caller).
    ///
    /// Follows fair.c: `pick_next_entity()` (v6.12.0): the `next` buddy if `NEXT_BUDDY` and it
    /// is eligible, else `pick_eevdf()`. Under legacy CFS: v6.1 `pick_next_entity(cfs_rq,
    /// curr)` with `curr` only if it is queued.
    pub fn pick_next_entity<E: EntityStore>(
        &self,
        ents: &E,
        params: &SchedParams,
    ) -> Option<TaskId> {
        match params.pick {
            FairPick::Eevdf => {
                if params.feat(RqFeat::NextBuddy)
                    && let Some(next) = self.next
                    && self.entity_eligible(ents, next)
                {
                    debug_assert!(!ents.se(next).sched_delayed);
                    return Some(next);
                }
                self.pick_eevdf(ents, params)
            }
            FairPick::Cfs => {
                let curr = self.curr.filter(|&c| ents.se(c).on_rq);
                self.pick_next_entity_cfs(ents, curr, params)
            }
        }
    }
}

#[cfg(test)]
mod tests;
