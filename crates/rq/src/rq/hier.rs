//! The fair class's task operations through a task-group hierarchy
//! (CONFIG_FAIR_GROUP_SCHED), following kernel/sched/fair.c of v6.12: `enqueue_task_fair()`,
//! `dequeue_entities()`, `pick_task_fair()` / `pick_next_task_fair()`,
//! `put_prev_task_fair()`, `set_next_task_fair()`, `task_tick_fair()`,
//! `check_preempt_wakeup_fair()` with `find_matching_se()`, `yield_task_fair()`,
//! `set_next_buddy()`, the group part of `sched_balance_update_blocked_averages()`
//! (`__update_blocked_fair()` over the leaf list), `task_h_load()`, a task's move between
//! groups (core.c: `sched_move_task()` with `task_change_group_fair()`) and the invariant
//! check.
//!
//! A runqueue without task groups never comes here: every entry point tests
//! `self.groups` first and the flat code runs unchanged.
//!
//! Where the walks follow v6.12.y rather than v6.12.0, as the flat code does: the
//! `h_nr_delayed` counts (`set_delayed()`/`clear_delayed()` walk the hierarchy); a group
//! entity's slice change is propagated into its cfs_rq's cached `min_slice`; a dequeue that
//! stops at a delayed group entity takes the slice of that entity's cfs_rq (v6.12.0 left it 0
//! and could hand a group entity `u64::MAX`; commit bbce3de72be5).
//! Not modelled: buddies (`next`) are cleared only at the level they were set on
//! (`__clear_buddies_next()` walks up in the kernel; NEXT_BUDDY is off by default).

use lbsim_pelt::{
    CfsRqLoad, CfsRqTg, HLoadLevel, MIN_SHARES, UpdateFlags, attach_entity_load_avg_tg,
    cfs_rq_is_decayed, detach_entity_load_avg_tg, skip_blocked_update, update_cfs_rq_load_avg_tg,
    update_tg_load_avg,
};

use crate::SchedParams;
use crate::cfs_rq::{CfsClock, CfsRq};
use crate::entity::{
    DequeueFlags, EnqueueFlags, EntityStore, TaskId, WakeFlags, group_se_id, se_group,
};
use crate::group::{GroupEnts, TaskGroupTree};
use crate::params::RqFeat;
use crate::task::{OnRq, TaskState, Tasks};
use crate::weights::{calc_delta_fair, scale_load_down_scaled};

use super::{Rq, RqError};
use lbsim_pelt::util_est_enqueue;

/// Build the group entity store of `$self` over `$tasks` and run `$body` with the root cfs_rq
/// as `$root`, the store as `$ents` and the tree as `$tree`.
macro_rules! with_groups {
    ($self:ident, $tasks:expr, |$root:ident, $ents:ident, $tree:ident| $body:block) => {{
        let sched_clock = $self.rq_clock();
        let g = $self
            .groups
            .as_deref_mut()
            .expect("a runqueue with task groups");
        let mut guard = g.shared.lock().expect("task groups lock");
        let $tree: &TaskGroupTree = &g.tree;
        #[allow(unused_mut)]
        let mut $ents = GroupEnts {
            tasks: $tasks,
            cfs: &mut g.cfs,
            se: &mut g.se,
            se_scaled: &mut g.se_scaled,
            runnable_weight: &mut g.runnable_weight,
            on_list: &mut g.on_list,
            tgs: &mut guard,
            sched_clock,
        };
        let $root: &mut CfsRq = &mut $self.cfs;
        $body
    }};
}

/// Run `f` on cfs_rq `k` (0: the root) with the store; a group cfs_rq is taken out of the
/// store meanwhile, and a reschedule it asks for is the runqueue's.
fn level<R>(
    root: &mut CfsRq,
    ents: &mut GroupEnts<'_>,
    k: u32,
    f: impl FnOnce(&mut CfsRq, &mut GroupEnts<'_>) -> R,
) -> R {
    if k == 0 {
        return f(root, ents);
    }
    let mut c = std::mem::take(&mut ents.cfs[k as usize]);
    let r = f(&mut c, ents);
    if c.need_resched {
        c.need_resched = false;
        root.need_resched = true;
    }
    ents.cfs[k as usize] = c;
    r
}

/// The cfs_rq `k` (read-only).
fn cfs_of<'a>(root: &'a CfsRq, ents: &'a GroupEnts<'_>, k: u32) -> &'a CfsRq {
    if k == 0 { root } else { &ents.cfs[k as usize] }
}

/// The cfs_rq `k` (mutable, for counters).
fn cfs_mut<'a>(root: &'a mut CfsRq, ents: &'a mut GroupEnts<'_>, k: u32) -> &'a mut CfsRq {
    if k == 0 {
        root
    } else {
        &mut ents.cfs[k as usize]
    }
}

/// The second loop's step of `enqueue_task_fair()` and `dequeue_entities()` (v6.12) for group
/// entity `se` queued on cfs_rq `k`, above the levels the first loop changed:
/// `update_load_avg(UPDATE_TG)`, `se_update_runnable()`, `update_cfs_group()`, the slice of
/// the level below (`slice`); returns this level's `cfs_rq_min_slice()` for the next one.
/// The callers then adjust the counts, up for an enqueue and down for a dequeue.
fn update_upper_level(
    root: &mut CfsRq,
    ents: &mut GroupEnts<'_>,
    k: u32,
    se: TaskId,
    clock: CfsClock,
    params: &SchedParams,
    slice: u64,
) -> u64 {
    level(root, ents, k, |c, e| {
        c.update_load_avg(
            e,
            se,
            clock.pelt,
            lbsim_pelt::UpdateFlags::UPDATE_TG,
            params,
        );
        e.se_update_runnable(se);
        e.update_cfs_group(c, se, clock, params);
        c.set_slice(e, se, slice);
    });
    level(root, ents, k, |c, e| c.cfs_rq_min_slice(e))
}

/// `parent_entity(se)` of an entity queued on cfs_rq `k`: the group entity owning `k` and the
/// cfs_rq it is queued on.
#[inline]
fn parent_of(tree: &TaskGroupTree, k: u32) -> Option<(TaskId, u32)> {
    (k != 0).then(|| (group_se_id(k), tree.parent[k as usize]))
}

/// The cfs_rq an entity is queued on (`cfs_rq_of(se)`).
#[inline]
fn cfs_rq_index(tree: &TaskGroupTree, tasks: &Tasks, id: TaskId) -> u32 {
    match se_group(id) {
        Some(g) => tree.parent[g as usize],
        None => tasks[id].tg,
    }
}

/// Walk the `h_nr_delayed` of the cfs_rqs above `k` by `delta` (`set_delayed()` /
/// `clear_delayed()` of a task: the task's own cfs_rq is the cfs_rq's).
fn delayed_above(
    root: &mut CfsRq,
    ents: &mut GroupEnts<'_>,
    tree: &TaskGroupTree,
    k: u32,
    inc: bool,
) {
    let mut at = parent_of(tree, k);
    while let Some((_, pk)) = at {
        let c = cfs_mut(root, ents, pk);
        c.delayed_walks += 1;
        if inc {
            c.h_nr_delayed += 1;
        } else {
            c.h_nr_delayed -= 1;
        }
        at = parent_of(tree, pk);
    }
}

impl Rq {
    /// Whether this runqueue has task groups.
    #[inline]
    pub fn has_task_groups(&self) -> bool {
        self.groups.is_some()
    }

    /// This runqueue's task groups, if any.
    pub fn task_groups(&self) -> Option<&crate::group::RqGroups> {
        self.groups.as_deref()
    }

    /// Give this runqueue the run's task groups (before any task is queued).
    pub fn set_task_groups(
        &mut self,
        tree: std::sync::Arc<TaskGroupTree>,
        shared: crate::group::SharedTaskGroups,
    ) {
        debug_assert_eq!(self.nr_running, 0);
        self.groups = Some(Box::new(crate::group::RqGroups::new(tree, shared)));
    }

    /// Follows fair.c: `online_fair_sched_group()` (v6.12) for this CPU's part of group `g`,
    /// as core.c: `sched_online_group()` calls it when the group is created (a cgroup's
    /// `cpu_cgroup_css_online()`, or autogroup.c: `autogroup_create()`): `update_rq_clock()`,
    /// then `attach_entity_cfs_rq()` of the group entity `tg->se[cpu]` on its parent cfs_rq.
    /// `sync_throttle()` is left out (no bandwidth control).
    ///
    /// lbsim creates every group at set-up, before any task: call this for each group in
    /// creation order (parents first), on every CPU, at simulated time `now_ns` (0).
    ///
    /// Without it a group entity would first be attached by its first enqueue (`DO_ATTACH`
    /// with `last_update_time == 0`), after the task's attach below had already been
    /// propagated into it, and so added to its parent twice.
    ///
    /// No "attached" flag is needed beside `last_update_time`: the kernel's clock is far from
    /// 0 when a group is created, and lbsim's runqueue clocks start at
    /// [`super::SCHED_CLOCK_OFFSET_NS`] (2^20 ns), so the parent cfs_rq's update here leaves
    /// a non-zero `last_update_time`, which the attach copies into the group entity.
    pub fn online_fair_sched_group(&mut self, g: u32, now_ns: u64) {
        assert!(g != 0, "the root group is never onlined");
        self.update_rq_clock(now_ns);
        let clock = self.cfs_clock();
        let util_est = self.params.feat(RqFeat::UtilEst);
        let mut no_tasks = Tasks::with_key();
        with_groups!(self, &mut no_tasks, |root, ents, tree| {
            attach_entity_cfs_rq(root, &mut ents, tree, g, clock.pelt, util_est);
        });
    }

    /// `cfs_rq_of(&p->se)->curr == &p->se`: the task is its cfs_rq's running entity.
    pub fn fair_curr_is(&self, tasks: &Tasks, p: TaskId) -> bool {
        self.task_cfs(tasks, p).curr == Some(p)
    }

    /// `&p->se == cfs_rq_of(&p->se)->next` (task_hot()'s CACHE_HOT_BUDDY test).
    pub fn is_next_buddy(&self, tasks: &Tasks, p: TaskId) -> bool {
        self.task_cfs(tasks, p).next == Some(p)
    }

    /// `cfs_rq_last_update_time(cfs_rq_of(&p->se))` on this runqueue.
    pub fn task_cfs_last_update_time(&self, tasks: &Tasks, p: TaskId) -> u64 {
        self.task_cfs(tasks, p).avg.avg.last_update_time
    }

    /// `cfs_rq_of(&p->se)` on this runqueue.
    pub(crate) fn task_cfs(&self, tasks: &Tasks, p: TaskId) -> &CfsRq {
        match self.groups.as_deref() {
            Some(g) if tasks[p].tg != 0 => &g.cfs[tasks[p].tg as usize],
            _ => &self.cfs,
        }
    }

    /// The task's weight as the root cfs_rq sees it: its own weight times, at each group
    /// above it, the group entity's weight over its cfs_rq's (10-bit units; the task's own
    /// weight without task groups). Not a kernel quantity: the invariant check's bound on a
    /// wait uses it.
    pub fn task_h_weight(&self, tasks: &Tasks, p: TaskId) -> u64 {
        let mut w = u128::from(tasks[p].se.load.weight);
        if let Some(g) = self.groups.as_deref() {
            let mut k = tasks[p].tg as usize;
            while k != 0 {
                let cw = u128::from(g.cfs[k].load.weight.max(1));
                w = w * u128::from(g.se[k].load.weight) / cw;
                k = g.tree.parent[k] as usize;
            }
        }
        (w as u64).max(1)
    }

    /// `scale_load_down(rq->cfs.load.weight)`.
    #[inline]
    pub(crate) fn root_load_weight(&self) -> u64 {
        if self.groups.is_some() {
            scale_load_down_scaled(self.cfs.load_scaled)
        } else {
            crate::weights::scale_load_down(self.cfs.load.weight)
        }
    }

    /// Follows fair.c: `enqueue_task_fair()` (v6.12, with the v6.12.y `h_nr_delayed`):
    /// util_est; a delayed task requeued in place (`ENQUEUE_DELAYED`); else the first walk
    /// enqueues each entity not yet queued (a group entity taking its cfs_rq's
    /// `cfs_rq_min_slice()` as a custom slice), counting the task at each level, stopping at
    /// an entity already queued (requeued if delayed); the second walk updates PELT
    /// (`UPDATE_TG`), `se_update_runnable()`, `update_cfs_group()` and the slice of each
    /// entity above, counting the task there too.
    pub(crate) fn enqueue_task_fair_h(
        &mut self,
        tasks: &mut Tasks,
        p: TaskId,
        flags: EnqueueFlags,
    ) {
        let params = self.params;
        let clock = self.cfs_clock();
        let delayed = tasks[p].se.sched_delayed;
        if !(delayed && (tasks[p].on_rq_migrating() || flags.contains(EnqueueFlags::RESTORE))) {
            util_est_enqueue(
                &mut self.cfs.avg,
                &tasks[p].se.avg,
                params.feat(RqFeat::UtilEst),
            );
        }
        let idle = u32::from(tasks[p].has_idle_policy());
        with_groups!(self, tasks, |root, ents, tree| {
            let k0 = ents.tasks[p].tg;
            if flags.contains(EnqueueFlags::DELAYED) {
                level(root, &mut ents, k0, |c, e| {
                    c.requeue_delayed_entity(e, p, clock, &params)
                });
                delayed_above(root, &mut ents, tree, k0, false);
                return;
            }
            let task_new = !flags.contains(EnqueueFlags::WAKEUP);
            let h_nr_delayed = u32::from(task_new && delayed);
            debug_assert!(
                !ents.tasks[p].se.on_rq,
                "enqueue_task_fair() of a queued entity"
            );
            let mut slice = 0u64;
            let mut flags = flags;
            let mut at = Some((p, k0));
            // First walk: enqueue what is not queued.
            while let Some((se, k)) = at {
                if ents.se(se).on_rq {
                    if ents.se(se).sched_delayed {
                        level(root, &mut ents, k, |c, e| {
                            c.requeue_delayed_entity(e, se, clock, &params)
                        });
                    }
                    break;
                }
                if slice != 0 {
                    let s = ents.se_mut(se);
                    s.slice = slice;
                    s.custom_slice = true;
                }
                let first = level(root, &mut ents, k, |c, e| {
                    c.enqueue_entity(e, se, flags, clock, &params);
                    c.nr_running == 1
                });
                if first {
                    ents.on_list[k as usize] = true;
                }
                if se == p && k != 0 {
                    root.cfs_tasks_add(&mut ents, p);
                }
                slice = level(root, &mut ents, k, |c, e| c.cfs_rq_min_slice(e));
                let c = cfs_mut(root, &mut ents, k);
                c.h_nr_running += 1;
                c.idle_h_nr_running += idle;
                c.h_nr_delayed += h_nr_delayed;
                flags = EnqueueFlags::WAKEUP;
                at = parent_of(tree, k);
            }
            // Second walk: the levels above.
            while let Some((se, k)) = at {
                slice = update_upper_level(root, &mut ents, k, se, clock, &params, slice);
                let c = cfs_mut(root, &mut ents, k);
                c.h_nr_running += 1;
                c.idle_h_nr_running += idle;
                c.h_nr_delayed += h_nr_delayed;
                at = parent_of(tree, k);
            }
        });
        self.nr_running += 1;
    }

    /// Follows fair.c: `dequeue_entities()` (v6.12, with the v6.12.y `h_nr_delayed` and slice
    /// fixes): the first walk dequeues each entity (a delayed task stops it: false), uncounts
    /// a task's entities, and stops where the cfs_rq keeps other entities (biasing the pick to
    /// that group with `set_next_buddy()` on a sleep) or at a delayed group entity; the
    /// second walk updates the levels above as the enqueue does. `se` may be a (delayed) group
    /// entity, picked and now leaving for good (no task counted).
    pub(crate) fn dequeue_entities_h(
        &mut self,
        tasks: &mut Tasks,
        se: TaskId,
        flags: DequeueFlags,
    ) -> bool {
        let params = self.params;
        let clock = self.cfs_clock();
        let was_sched_idle = self.sched_idle_rq();
        let task_sleep = flags.contains(DequeueFlags::SLEEP);
        let task_delayed = flags.contains(DequeueFlags::DELAYED);
        let p = se_group(se).is_none().then_some(se);
        let (h_nr, idle, h_nr_delayed) = match p {
            Some(p) => (
                1u32,
                u32::from(tasks[p].has_idle_policy()),
                u32::from(!task_sleep && !task_delayed && tasks[p].se.sched_delayed),
            ),
            None => (0, 0, 0),
        };
        let mut flags = flags;
        let done = with_groups!(self, tasks, |root, ents, tree| {
            let mut slice = 0u64;
            let mut at = Some((se, cfs_rq_index(tree, ents.tasks, se)));
            while let Some((e_id, k)) = at {
                let migrating = p == Some(e_id) && ents.tasks[e_id].on_rq_migrating();
                let was_delayed = ents.se(e_id).sched_delayed;
                let ok = level(root, &mut ents, k, |c, e| {
                    c.dequeue_entity(e, e_id, flags, migrating, clock, &params)
                });
                if !ok {
                    if p == Some(e_id) {
                        delayed_above(root, &mut ents, tree, k, true);
                        return false;
                    }
                    slice = level(root, &mut ents, k, |c, e| c.cfs_rq_min_slice(e));
                    break;
                }
                if p == Some(e_id) {
                    if was_delayed && flags.contains(DequeueFlags::DELAYED) {
                        delayed_above(root, &mut ents, tree, k, false);
                    }
                    if k != 0 {
                        root.cfs_tasks_del(&mut ents, e_id);
                    }
                }
                let c = cfs_mut(root, &mut ents, k);
                c.h_nr_running -= h_nr;
                c.idle_h_nr_running -= idle;
                c.h_nr_delayed -= h_nr_delayed;
                if c.load.weight != 0 {
                    slice = level(root, &mut ents, k, |c, e| c.cfs_rq_min_slice(e));
                    at = parent_of(tree, k);
                    if task_sleep && let Some((pse, _)) = at {
                        set_next_buddy_h(root, &mut ents, tree, pse);
                    }
                    break;
                }
                flags |= DequeueFlags::SLEEP;
                flags = flags.without(DequeueFlags::DELAYED | DequeueFlags::SPECIAL);
                at = parent_of(tree, k);
            }
            while let Some((e_id, k)) = at {
                slice = update_upper_level(root, &mut ents, k, e_id, clock, &params, slice);
                let c = cfs_mut(root, &mut ents, k);
                c.h_nr_running -= h_nr;
                c.idle_h_nr_running -= idle;
                c.h_nr_delayed -= h_nr_delayed;
                at = parent_of(tree, k);
            }
            true
        });
        if !done {
            return false;
        }
        self.nr_running -= h_nr;
        if !was_sched_idle && self.sched_idle_rq() {
            self.next_balance = self.jiffies();
        }
        if let Some(p) = p
            && task_delayed
        {
            debug_assert!(task_sleep);
            tasks[p].on_rq = OnRq::No;
        }
        true
    }

    /// Follows fair.c: `pick_next_task_fair()` / `pick_task_fair()` (v6.12) with task
    /// groups: from the root down, update a queued `curr` and `pick_next_entity()` at each
    /// level (a delayed entity picked is dequeued for good and the pick restarts); then, if the
    /// task changes, put the previous task's entities and set the new one's only up to the
    /// first cfs_rq they share (`is_same_group()` by depth), and `__set_next_task_fair()`.
    pub(crate) fn pick_next_task_fair_h(&mut self, tasks: &mut Tasks) -> Option<TaskId> {
        let params = self.params;
        let clock = self.cfs_clock();
        let p = 'again: loop {
            if self.cfs.nr_running == 0 {
                return None;
            }
            let picked = with_groups!(self, &mut *tasks, |root, ents, _tree| {
                let mut k = 0u32;
                loop {
                    let se = level(root, &mut ents, k, |c, e| {
                        if let Some(cur) = c.curr
                            && e.se(cur).on_rq
                        {
                            c.update_curr(e, clock, &params);
                        }
                        c.pick_next_entity(e, &params)
                            .expect("a cfs_rq with a queued group entity has an entity")
                    });
                    if ents.se(se).sched_delayed {
                        break Err(se);
                    }
                    match se_group(se) {
                        Some(g) => k = g,
                        None => break Ok(se),
                    }
                }
            });
            match picked {
                Ok(p) => break 'again p,
                Err(se) => {
                    self.dequeue_entities_h(tasks, se, DequeueFlags::SLEEP | DequeueFlags::DELAYED);
                }
            }
        };
        let prev = self.curr;
        if prev != Some(p) {
            match prev {
                Some(prev) if self.fair_curr_is(tasks, prev) => {
                    with_groups!(self, &mut *tasks, |root, ents, tree| {
                        let (mut se, mut sk) = (p, ents.tasks[p].tg);
                        let (mut pse, mut pk) = (prev, ents.tasks[prev].tg);
                        while sk != pk {
                            let (sd, pd) = (tree.depth[sk as usize], tree.depth[pk as usize]);
                            if sd <= pd {
                                level(root, &mut ents, pk, |c, e| {
                                    c.put_prev_entity(e, pse, clock, &params)
                                });
                                (pse, pk) = parent_of(tree, pk).expect("not at the root");
                            }
                            if sd >= pd {
                                level(root, &mut ents, sk, |c, e| {
                                    c.set_next_entity(e, se, clock, &params)
                                });
                                (se, sk) = parent_of(tree, sk).expect("not at the root");
                            }
                        }
                        level(root, &mut ents, pk, |c, e| {
                            c.put_prev_entity(e, pse, clock, &params);
                            c.set_next_entity(e, se, clock, &params);
                        });
                    });
                }
                _ => self.set_next_entities_h(tasks, p),
            }
            self.__set_next_task_fair(tasks, p, true);
        }
        Some(p)
    }

    /// `set_next_entity()` of each of `p`'s entities, bottom-up (`set_next_task_fair()`).
    fn set_next_entities_h(&mut self, tasks: &mut Tasks, p: TaskId) {
        let params = self.params;
        let clock = self.cfs_clock();
        with_groups!(self, tasks, |root, ents, tree| {
            let mut at = Some((p, ents.tasks[p].tg));
            while let Some((se, k)) = at {
                level(root, &mut ents, k, |c, e| {
                    c.set_next_entity(e, se, clock, &params)
                });
                at = parent_of(tree, k);
            }
        });
    }

    /// Follows fair.c: `put_prev_task_fair()` (v6.12): `put_prev_entity()` of each of
    /// `prev`'s entities, bottom-up.
    pub(crate) fn put_prev_task_fair_h(&mut self, tasks: &mut Tasks, prev: TaskId) {
        let params = self.params;
        let clock = self.cfs_clock();
        with_groups!(self, tasks, |root, ents, tree| {
            let mut at = Some((prev, ents.tasks[prev].tg));
            while let Some((se, k)) = at {
                level(root, &mut ents, k, |c, e| {
                    c.put_prev_entity(e, se, clock, &params)
                });
                at = parent_of(tree, k);
            }
        });
    }

    /// Follows fair.c: `set_next_task_fair()` (v6.12): `set_next_entity()` of each entity,
    /// then `__set_next_task_fair()`.
    pub(crate) fn set_next_task_fair_h(&mut self, tasks: &mut Tasks, p: TaskId, first: bool) {
        self.set_next_entities_h(tasks, p);
        self.__set_next_task_fair(tasks, p, first);
    }

    /// Follows core.c: `sched_move_task()` (v6.12): task `p` of this runqueue moves to task
    /// group `tg` (what `sched_get_task_group()` gives for its new cgroup, which the caller
    /// computes; the clock must be current, as `update_rq_clock()` leaves it). Nothing
    /// happens if the group does not change. Otherwise, in the kernel's order: a queued task
    /// is dequeued (`DEQUEUE_SAVE | DEQUEUE_MOVE`, so no schedstats and no delayed dequeue:
    /// its lag is saved by `update_entity_lag()` and its deadline made relative,
    /// `PLACE_REL_DEADLINE`), a running one put (`put_prev_task()`); then
    /// `sched_change_group()` -> [`Rq::task_change_group_fair`]; then the queued task is
    /// enqueued in its new group (`ENQUEUE_RESTORE | ENQUEUE_MOVE`: `place_entity()` there
    /// scales the saved lag by the new cfs_rq's load and restores the relative deadline), a
    /// running one set as next (`set_next_task()`, not a first pick) and its CPU asked to
    /// reschedule (`resched_curr()`). A delayed task (queued, sleeping) stays delayed in its
    /// new group, as in the kernel. Returns whether the task moved.
    ///
    /// lbsim's programs move only themselves (rt-app's phase `taskgroup` writes the thread's
    /// own tid), so the engine moves only running tasks; the other cases are the kernel's and
    /// are exercised by this crate's tests. No bandwidth control (`resched_curr()` for a
    /// throttled group does not arise) and no sched_ext (`scx_move_task()`).
    pub fn sched_move_task(&mut self, tasks: &mut Tasks, p: TaskId, tg: u32) -> bool {
        assert!(
            self.groups.is_some(),
            "sched_move_task() without task groups"
        );
        if tasks[p].tg == tg {
            return false;
        }
        let running = self.curr == Some(p);
        let queued = tasks[p].on_rq_queued();
        if queued {
            let done = self.dequeue_task(tasks, p, DequeueFlags::SAVE | DequeueFlags::MOVE);
            debug_assert!(done, "a DEQUEUE_SAVE is never delayed");
        }
        if running {
            self.put_prev_task_fair(tasks, p);
        }
        self.task_change_group_fair(tasks, p, tg);
        if queued {
            self.enqueue_task(tasks, p, EnqueueFlags::RESTORE | EnqueueFlags::MOVE);
        }
        if running {
            self.set_next_task_fair(tasks, p, false);
            self.cfs.resched_curr();
        }
        true
    }

    /// Follows fair.c: `task_change_group_fair()` (v6.12): a task not yet woken by
    /// `wake_up_new_task()` only takes its new group (it is attached when it is woken);
    /// otherwise `detach_task_cfs_rq()` (`detach_entity_cfs_rq()`: catch up with the old
    /// cfs_rq, detach the task's load from it, `update_tg_load_avg()`, propagate up the old
    /// hierarchy), `last_update_time = 0`, `set_task_rq()` (the new group's cfs_rq) and
    /// `attach_task_cfs_rq()` (`attach_entity_cfs_rq()`: sync with the new cfs_rq, attach,
    /// `update_tg_load_avg()`, propagate up the new hierarchy). With EEVDF (which task groups
    /// need in lbsim) neither side adjusts the vruntime: lag is handled by the dequeue and
    /// enqueue around it.
    pub fn task_change_group_fair(&mut self, tasks: &mut Tasks, p: TaskId, tg: u32) {
        if tasks[p].state == TaskState::New {
            tasks[p].tg = tg;
            return;
        }
        let clock = self.cfs_clock();
        let util_est = self.params.feat(RqFeat::UtilEst);
        with_groups!(self, tasks, |root, ents, tree| {
            detach_entity_cfs_rq(root, &mut ents, tree, p, clock.pelt, util_est);
            ents.tasks[p].se.avg.last_update_time = 0;
            ents.tasks[p].tg = tg;
            attach_task_entity_cfs_rq(root, &mut ents, tree, p, clock.pelt, util_est);
        });
    }

    /// Follows fair.c: `task_tick_fair()` (v6.12): `entity_tick()` (update_curr, PELT,
    /// `update_cfs_group()`) for each of the current task's entities, bottom-up.
    pub(crate) fn task_tick_fair_h(&mut self, tasks: &mut Tasks, curr: TaskId) {
        let params = self.params;
        let clock = self.cfs_clock();
        with_groups!(self, tasks, |root, ents, tree| {
            let mut at = Some((curr, ents.tasks[curr].tg));
            while let Some((se, k)) = at {
                level(root, &mut ents, k, |c, e| {
                    c.entity_tick(e, se, clock, &params)
                });
                at = parent_of(tree, k);
            }
        });
    }

    /// Follows fair.c: `check_preempt_wakeup_fair()` (v6.12) with task groups: the next
    /// buddy up the wakee's hierarchy (`NEXT_BUDDY`), then the flat rules applied to the
    /// entities of curr and of the wakee that share a cfs_rq (`find_matching_se()`): their
    /// idleness, `update_curr()` of that cfs_rq, `PREEMPT_SHORT`, and whether `pick_eevdf()`
    /// of that cfs_rq now picks the wakee's entity.
    pub(crate) fn check_preempt_wakeup_fair_h(
        &mut self,
        tasks: &mut Tasks,
        curr: TaskId,
        p: TaskId,
        wake_flags: WakeFlags,
    ) {
        if curr == p {
            return;
        }
        let params = self.params;
        let clock = self.cfs_clock();
        let p_normal = tasks[p].normal_policy();
        with_groups!(self, tasks, |root, ents, tree| {
            if params.feat(RqFeat::NextBuddy)
                && !wake_flags.contains(WakeFlags::FORK)
                && !ents.tasks[p].se.sched_delayed
            {
                set_next_buddy_h(root, &mut ents, tree, p);
            }
            if root.need_resched || !params.feat(RqFeat::WakeupPreemption) {
                return;
            }
            // find_matching_se()
            let (mut se, mut sk) = (curr, ents.tasks[curr].tg);
            let (mut pse, mut pk) = (p, ents.tasks[p].tg);
            while tree.depth[sk as usize] > tree.depth[pk as usize] {
                (se, sk) = parent_of(tree, sk).expect("deeper than the root");
            }
            while tree.depth[pk as usize] > tree.depth[sk as usize] {
                (pse, pk) = parent_of(tree, pk).expect("deeper than the root");
            }
            while sk != pk {
                (se, sk) = parent_of(tree, sk).expect("not at the root");
                (pse, pk) = parent_of(tree, pk).expect("not at the root");
            }
            let (cse_is_idle, pse_is_idle) = (ents.se(se).idle, ents.se(pse).idle);
            if cse_is_idle && !pse_is_idle {
                root.resched_curr();
                return;
            }
            if cse_is_idle != pse_is_idle || !p_normal {
                return;
            }
            let preempt = level(root, &mut ents, sk, |c, e| {
                c.update_curr(e, clock, &params);
                if c.do_preempt_short(e, pse, se, &params) {
                    let s = e.se_mut(se);
                    if s.vlag as u64 == s.deadline {
                        s.vlag = s.deadline.wrapping_add(1) as i64;
                    }
                }
                c.pick_eevdf(e, &params) == Some(pse)
            });
            if preempt {
                root.resched_curr();
            }
        });
    }

    /// Follows fair.c: `yield_task_fair()` (v6.12) with task groups: on the task's own
    /// cfs_rq, clear its buddy mark, `update_curr()`, push its deadline one slice later.
    pub(crate) fn yield_task_fair_h(&mut self, tasks: &mut Tasks, curr: TaskId) {
        let params = self.params;
        let clock = self.cfs_clock();
        with_groups!(self, tasks, |root, ents, _tree| {
            let k = ents.tasks[curr].tg;
            level(root, &mut ents, k, |c, e| {
                c.clear_buddies(curr);
                c.update_curr(e, clock, &params);
                let se = e.se_mut(curr);
                se.deadline = se
                    .deadline
                    .wrapping_add(calc_delta_fair(se.slice, &se.load));
            });
        });
    }

    /// Follows fair.c: `__update_blocked_fair()` (v6.12): over the leaf list bottom-up
    /// (children before parents, the root last), each cfs_rq's PELT decays (with its pending
    /// removals queued for the group entity above) and `update_tg_load_avg()` follows a
    /// decay; a group entity with something to propagate or a signal left is updated in its
    /// parent (`UPDATE_TG`); a fully decayed cfs_rq leaves the list (`cfs_rq_is_decayed()`).
    /// Returns (the root decayed, some cfs_rq still has blocked load).
    pub(crate) fn update_blocked_fair_h(&mut self, tasks: &mut Tasks, now: u64) -> (bool, bool) {
        let util_est = self.params.feat(RqFeat::UtilEst);
        with_groups!(self, tasks, |root, ents, tree| {
            let mut decayed = false;
            let mut blocked = false;
            for k in (0..tree.len() as u32).rev() {
                if k != 0 && !ents.on_list[k as usize] {
                    continue;
                }
                let sched_clock = ents.sched_clock;
                let d = {
                    let c = cfs_mut(root, &mut ents, k);
                    let load = CfsRqLoad {
                        load_weight: scale_load_down_scaled(c.load_scaled),
                        h_nr_running: u64::from(c.h_nr_running - c.h_nr_delayed),
                        curr: c.curr.is_some(),
                    };
                    update_cfs_rq_load_avg_tg(&mut c.avg, &mut c.tg, now, &load)
                };
                if d {
                    if k == 0 {
                        decayed = true;
                    } else {
                        let c = &mut ents.cfs[k as usize];
                        update_tg_load_avg(
                            &mut ents.tgs[k as usize],
                            &mut c.tg,
                            c.avg.avg.load_avg,
                            true,
                            sched_clock,
                        );
                    }
                }
                if let Some((gse, pk)) = parent_of(tree, k)
                    && !skip_blocked_update(&ents.se[k as usize].avg, &ents.cfs[k as usize].tg)
                {
                    level(root, &mut ents, pk, |c, e| {
                        e.pelt_update(c, gse, now, lbsim_pelt::UpdateFlags::UPDATE_TG, util_est);
                    });
                }
                let c = cfs_of(root, &ents, k);
                if k != 0 {
                    let child_on_list = tree.children(k).any(|ch| ents.on_list[ch as usize]);
                    if cfs_rq_is_decayed(
                        scale_load_down_scaled(c.load_scaled),
                        &c.avg.avg,
                        child_on_list,
                    ) {
                        ents.on_list[k as usize] = false;
                    }
                }
                let c = cfs_of(root, &ents, k);
                if c.avg.avg.load_avg != 0 || c.avg.avg.util_avg != 0 {
                    blocked = true;
                }
            }
            (decayed, blocked)
        })
    }

    /// Follows fair.c: `task_h_load()` / `update_cfs_rq_h_load()` (v6.12) with task groups:
    /// `p`'s load over its cfs_rq's, times the cfs_rq's `h_load`, brought up to date
    /// top-down once per jiffy (this runqueue's clock's jiffy).
    pub(crate) fn task_h_load_h(&self, tasks: &Tasks, p: TaskId) -> u64 {
        let g = self.groups.as_deref().expect("task groups");
        let tree = &g.tree;
        let mut ks = vec![tasks[p].tg];
        while let Some((_, pk)) = parent_of(tree, *ks.last().expect("non-empty")) {
            ks.push(pk);
        }
        let mut tgs: Vec<CfsRqTg> = ks
            .iter()
            .map(|&k| {
                let (h_load, last) = g.hload[k as usize].get();
                CfsRqTg {
                    h_load,
                    last_h_load_update: last,
                    ..CfsRqTg::default()
                }
            })
            .collect();
        let mut chain: Vec<HLoadLevel<'_>> = ks
            .iter()
            .zip(tgs.iter_mut())
            .map(|(&k, tg)| {
                let c = if k == 0 {
                    &self.cfs
                } else {
                    &g.cfs[k as usize]
                };
                HLoadLevel {
                    load_avg: c.avg.avg.load_avg,
                    se_load_avg: if k == 0 {
                        0
                    } else {
                        g.se[k as usize].avg.load_avg
                    },
                    tg,
                }
            })
            .collect();
        let load = lbsim_pelt::task_h_load(tasks[p].se.avg.load_avg, &mut chain, self.jiffies());
        drop(chain);
        for (&k, tg) in ks.iter().zip(tgs.iter()) {
            g.hload[k as usize].set((tg.h_load, tg.last_h_load_update));
        }
        load
    }

    /// The invariant check with task groups: for each cfs_rq (the root and every group's),
    /// `nr_running`, `load.weight` and its scaled sum against the entities queued on it,
    /// `h_nr_running` against its own queued tasks plus its queued child groups'
    /// `h_nr_running`, `h_nr_delayed` likewise, the timeline and `avg_vruntime`; each group
    /// entity's weight within `[MIN_SHARES, tg->shares]` (the clamp of
    /// `calc_group_shares()`) and its `se.load` the `scale_load_down()` of it; `rq->cfs_tasks`
    /// holding exactly the queued tasks; `rq->nr_running` the root's `h_nr_running`.
    pub(crate) fn check_invariants_h(&self, tasks: &Tasks, here: &[TaskId]) -> Result<(), RqError> {
        let err = |detail: String| {
            Err(RqError::Invariant {
                cpu: self.cpu.0,
                detail,
            })
        };
        let g = self.groups.as_deref().expect("task groups");
        let tree = &g.tree;
        let n = tree.len();
        let shared = g.shared.lock().expect("task groups lock");
        let se_of = |id: TaskId| match se_group(id) {
            Some(gg) => &g.se[gg as usize],
            None => &tasks[id].se,
        };
        let mut queued: Vec<Vec<TaskId>> = vec![Vec::new(); n];
        let mut own_tasks = vec![0u32; n];
        let mut own_delayed = vec![0u32; n];
        let mut nr_tasks = 0usize;
        for &id in here {
            let t = &tasks[id];
            if t.cpu != self.cpu || !t.se.on_rq {
                continue;
            }
            queued[t.tg as usize].push(id);
            own_tasks[t.tg as usize] += 1;
            own_delayed[t.tg as usize] += u32::from(t.se.sched_delayed);
            nr_tasks += 1;
            if !self.cfs.on_cfs_tasks(tasks, id) {
                return err(format!("queued task {id:?} is not on cfs_tasks"));
            }
        }
        for gg in 1..n as u32 {
            let se = &g.se[gg as usize];
            if se.on_rq {
                queued[tree.parent[gg as usize] as usize].push(group_se_id(gg));
            }
            let w = g.se_scaled[gg as usize];
            let shares = shared[gg as usize].shares;
            if w < MIN_SHARES || (w > shares && w != lbsim_pelt::NICE_0_LOAD_SCALED) {
                return err(format!(
                    "group {} entity weight {w} outside [{MIN_SHARES}, {shares}]",
                    tree.paths[gg as usize]
                ));
            }
            if se.load.weight != scale_load_down_scaled(w) {
                return err(format!(
                    "group {} se.load.weight {} for scaled {w}",
                    tree.paths[gg as usize], se.load.weight
                ));
            }
        }
        if self.cfs.cfs_tasks().len() != nr_tasks {
            return err(format!(
                "cfs_tasks {} for {nr_tasks} queued tasks",
                self.cfs.cfs_tasks().len()
            ));
        }
        // h_nr_running bottom-up: children have larger indices than parents.
        let mut h_nr = own_tasks.clone();
        let mut h_del = own_delayed.clone();
        for gg in (1..n).rev() {
            if g.se[gg].on_rq {
                let pk = tree.parent[gg] as usize;
                h_nr[pk] += h_nr[gg];
                h_del[pk] += h_del[gg];
            }
        }
        for k in 0..n {
            let c = if k == 0 { &self.cfs } else { &g.cfs[k] };
            let name = &tree.paths[k];
            let mut weight = 0u64;
            let mut scaled = 0u64;
            let mut avg: i64 = 0;
            let mut avg_load = 0u64;
            let mut in_tree = 0usize;
            for &id in &queued[k] {
                let se = se_of(id);
                weight += se.load.weight;
                scaled += match se_group(id) {
                    Some(gg) => g.se_scaled[gg as usize],
                    None => se.load.weight << lbsim_kernel::SCHED_FIXEDPOINT_SHIFT,
                };
                if c.curr != Some(id) {
                    in_tree += 1;
                    let w = crate::weights::scale_load_down(se.load.weight);
                    avg = avg.wrapping_add(
                        (se.vruntime.wrapping_sub(c.min_vruntime) as i64).wrapping_mul(w as i64),
                    );
                    avg_load += w;
                }
            }
            if queued[k].len() as u32 != c.nr_running {
                return err(format!(
                    "cfs_rq {name}: {} queued entities, nr_running {}",
                    queued[k].len(),
                    c.nr_running
                ));
            }
            if weight != c.load.weight || scaled != c.load_scaled {
                return err(format!(
                    "cfs_rq {name}: queued weight {weight} (scaled {scaled}), load.weight {} (scaled {})",
                    c.load.weight, c.load_scaled
                ));
            }
            if h_nr[k] != c.h_nr_running || h_del[k] != c.h_nr_delayed {
                return err(format!(
                    "cfs_rq {name}: h_nr_running {} (tasks below {}), h_nr_delayed {} (delayed below {})",
                    c.h_nr_running, h_nr[k], c.h_nr_delayed, h_del[k]
                ));
            }
            if in_tree != c.timeline().len() {
                return err(format!(
                    "cfs_rq {name}: timeline {} (expected {in_tree})",
                    c.timeline().len()
                ));
            }
            if let Err(detail) = c.check_timeline() {
                return err(format!("cfs_rq {name}: {detail}"));
            }
            if avg != c.avg_vruntime || avg_load != c.avg_load {
                return err(format!(
                    "cfs_rq {name}: avg_vruntime {} / avg_load {}, recomputed {avg} / {avg_load}",
                    c.avg_vruntime, c.avg_load
                ));
            }
        }
        if self.nr_running != self.cfs.h_nr_running {
            return err(format!(
                "rq.nr_running {}, root h_nr_running {}",
                self.nr_running, self.cfs.h_nr_running
            ));
        }
        Ok(())
    }
}

/// Follows fair.c: `attach_entity_cfs_rq()` (v6.12) for group entity `g` on its parent
/// cfs_rq: `update_load_avg(cfs_rq, se, 0)` (v6.12 has no `ATTACH_AGE_LOAD`, and an entity not
/// yet attached is not aged), `attach_entity_load_avg()`, `update_tg_load_avg()` of the parent,
/// then `propagate_entity_cfs_rq()`.
fn attach_entity_cfs_rq(
    root: &mut CfsRq,
    ents: &mut GroupEnts<'_>,
    tree: &TaskGroupTree,
    g: u32,
    now_pelt: u64,
    util_est: bool,
) {
    let gse = group_se_id(g);
    let pk = tree.parent[g as usize];
    level(root, ents, pk, |c, e| {
        e.pelt_update(c, gse, now_pelt, UpdateFlags::NONE, util_est);
        let se = &mut e.se[g as usize];
        debug_assert_eq!(se.avg.last_update_time, 0, "group entity attached twice");
        let w = se.se_weight();
        attach_entity_load_avg_tg(&mut c.avg, &mut c.tg, &mut se.avg, w);
        debug_assert_ne!(
            se.avg.last_update_time, 0,
            "an attached group entity must have a non-zero last_update_time"
        );
        update_tg_load_avg(
            &mut e.tgs[c.group as usize],
            &mut c.tg,
            c.avg.avg.load_avg,
            true,
            e.sched_clock,
        );
    });
    propagate_entity_cfs_rq(root, ents, tree, gse, now_pelt, util_est);
}

/// Follows fair.c: `detach_entity_cfs_rq()` (v6.12) for a task entity: nothing if it was
/// never attached (`last_update_time == 0`); else `update_load_avg(cfs_rq, se, 0)`,
/// `detach_entity_load_avg()` (with the group part: minus its `load_sum` queued for the
/// group entity above), `update_tg_load_avg()`, and `propagate_entity_cfs_rq()`.
fn detach_entity_cfs_rq(
    root: &mut CfsRq,
    ents: &mut GroupEnts<'_>,
    tree: &TaskGroupTree,
    p: TaskId,
    now_pelt: u64,
    util_est: bool,
) {
    if ents.tasks[p].se.avg.last_update_time == 0 {
        return;
    }
    let k = cfs_rq_index(tree, ents.tasks, p);
    level(root, ents, k, |c, e| {
        e.pelt_update(c, p, now_pelt, UpdateFlags::NONE, util_est);
        let se = &e.tasks[p].se;
        detach_entity_load_avg_tg(&mut c.avg, &mut c.tg, &se.avg, se.se_weight());
        update_tg_load_avg(
            &mut e.tgs[c.group as usize],
            &mut c.tg,
            c.avg.avg.load_avg,
            true,
            e.sched_clock,
        );
    });
    propagate_entity_cfs_rq(root, ents, tree, p, now_pelt, util_est);
}

/// Follows fair.c: `attach_entity_cfs_rq()` (v6.12) for a task entity on the cfs_rq of its
/// (new) group: `update_load_avg(cfs_rq, se, 0)` (ATTACH_AGE_LOAD; the entity, detached,
/// is not aged), `attach_entity_load_avg()` (its sums rebuilt from its averages for this
/// cfs_rq's divider, its `load_sum` queued for the group entity above),
/// `update_tg_load_avg()`, and `propagate_entity_cfs_rq()`.
fn attach_task_entity_cfs_rq(
    root: &mut CfsRq,
    ents: &mut GroupEnts<'_>,
    tree: &TaskGroupTree,
    p: TaskId,
    now_pelt: u64,
    util_est: bool,
) {
    let k = cfs_rq_index(tree, ents.tasks, p);
    level(root, ents, k, |c, e| {
        e.pelt_update(c, p, now_pelt, UpdateFlags::NONE, util_est);
        let se = &mut e.tasks[p].se;
        let w = se.se_weight();
        attach_entity_load_avg_tg(&mut c.avg, &mut c.tg, &mut se.avg, w);
        update_tg_load_avg(
            &mut e.tgs[c.group as usize],
            &mut c.tg,
            c.avg.avg.load_avg,
            true,
            e.sched_clock,
        );
    });
    propagate_entity_cfs_rq(root, ents, tree, p, now_pelt, util_est);
}

/// Follows fair.c: `propagate_entity_cfs_rq()` (v6.12, nothing throttled): the entity's
/// cfs_rq goes on the leaf list (`list_add_leaf_cfs_rq()`), then each entity above is updated
/// in its cfs_rq with `UPDATE_TG` and that cfs_rq goes on the list too.
fn propagate_entity_cfs_rq(
    root: &mut CfsRq,
    ents: &mut GroupEnts<'_>,
    tree: &TaskGroupTree,
    se: TaskId,
    now_pelt: u64,
    util_est: bool,
) {
    let mut k = cfs_rq_index(tree, ents.tasks, se);
    ents.on_list[k as usize] = true;
    while let Some((pse, pk)) = parent_of(tree, k) {
        level(root, ents, pk, |c, e| {
            e.pelt_update(c, pse, now_pelt, UpdateFlags::UPDATE_TG, util_est);
        });
        ents.on_list[pk as usize] = true;
        k = pk;
    }
}

/// Follows fair.c: `set_next_buddy()` (v6.12): `se` and each entity above become their
/// cfs_rq's `next`, stopping at an idle entity.
fn set_next_buddy_h(root: &mut CfsRq, ents: &mut GroupEnts<'_>, tree: &TaskGroupTree, se: TaskId) {
    let mut at = Some((se, cfs_rq_index(tree, ents.tasks, se)));
    while let Some((e_id, k)) = at {
        if ents.se(e_id).idle {
            return;
        }
        cfs_mut(root, ents, k).next = Some(e_id);
        at = parent_of(tree, k);
    }
}
