//! Task groups on the runqueues (CONFIG_FAIR_GROUP_SCHED, cgroup v2 `cpu.weight`): the
//! declared tree of groups, each non-root group's per-CPU group entity and cfs_rq, and the
//! entity store through which a cfs_rq reaches both tasks and group entities.
//!
//! Follows kernel/sched/fair.c of v6.12 (read in a v6.12.y tree, the stable backports set
//! apart): `alloc_fair_sched_group()`/`init_tg_cfs_entry()` (a group entity starts with
//! `NICE_0_LOAD`, zeroed PELT and slice), the group parts of `update_load_avg()`,
//! `se_update_runnable()`, `update_cfs_group()`, `list_add_leaf_cfs_rq()` and
//! `cfs_rq_is_decayed()`. The hierarchy walks themselves (`enqueue_task_fair()`,
//! `dequeue_entities()`, `pick_task_fair()`, ...) are in `rq/hier.rs`.
//!
//! Autogroups ([`autogroup`]) are groups of the same tree, children of the root, flagged
//! with their session and nice; a cgroup path never names one.
//!
//! The state follows the kernel's split: the [`TaskGroup`]s (`tg->shares`, `tg->load_avg`)
//! are shared by every CPU's runqueue ([`SharedTaskGroups`]); each runqueue holds, per
//! non-root group, the group entity (`tg->se[cpu]`, its exact scaled weight beside it) and
//! the group cfs_rq (`tg->cfs_rq[cpu]`, a [`CfsRq`] whose `tg` and `load_scaled` fields carry
//! the group parts). The root group is the runqueue's own `rq->cfs`.
//!
//! Groups come online at set-up (`Rq::online_fair_sched_group()`, fair.c v6.12), each group
//! entity attached to its parent cfs_rq before any task runs.
//!
//! Deliberately left out: `cpu.idle` (no group is idle, so `cfs_rq_is_idle()` is false),
//! bandwidth control (nothing is throttled), moving a task between groups
//! (`sched_move_task()`), changing `cpu.weight` during a run, the legacy CFS pick with groups.

use std::cell::Cell;
use std::sync::{Arc, Mutex};

use lbsim_pelt::{
    CfsRqLoad, GroupRq, NICE_0_LOAD_SCALED, SchedAvg, SeLoad, TaskGroup, UpdateFlags,
    tg_shares_from_cpu_weight, update_load_avg_tg, update_tg_load_avg,
};
use thiserror::Error;

use crate::cfs_rq::{CfsClock, CfsRq};
use crate::entity::{EntityStore, SchedEntity, TaskId, group_se_id, se_group};
use crate::task::Tasks;
use crate::tunables::SchedParams;
use crate::weights::{LoadWeight, NICE_0_LOAD, scale_load_down_scaled};

pub mod autogroup;

pub use autogroup::{Autogroup, autogroup_path, autogroup_shares, autogroup_task_group};

/// A task-group declaration that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TaskGroupError {
    /// A path that is not `/name/name...`.
    #[error("cgroup path {path:?} must start with '/' and name each level (like /a/b)")]
    BadPath {
        /// The path as given.
        path: String,
    },
    /// `cpu.weight` out of `1..=10000`.
    #[error("cgroup {path}: cpu.weight {weight} is out of range 1..=10000")]
    BadWeight {
        /// The group.
        path: String,
        /// The weight given.
        weight: u64,
    },
    /// An autogroup nice out of `-20..=19`, or a nice for session 0 (the root group).
    #[error("autogroup {id}: nice {nice} cannot be set (sessions 1.., nice -20..=19)")]
    BadAutogroupNice {
        /// The session.
        id: u32,
        /// The nice given.
        nice: i32,
    },
}

/// The task groups of a run: a tree under the root group, each with its `cpu.weight`.
///
/// Index 0 is the root group (`/`); every other group comes after its parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskGroupTree {
    /// Each group's path (`/` for the root).
    pub paths: Vec<String>,
    /// Each group's parent (the root's is 0).
    pub parent: Vec<u32>,
    /// Each group's depth (`se->depth` of its group entity + 1; the root's is 0).
    pub depth: Vec<u32>,
    /// Each group's cgroup v2 `cpu.weight`.
    pub cpu_weight: Vec<u64>,
    /// Each group's `tg->shares` (scaled, `sched_weight_from_cgroup()`, or from an
    /// autogroup's nice).
    pub shares: Vec<u64>,
    /// Each group's `tg->autogroup`: `Some` for a session's autogroup (whose `paths` entry is
    /// `/autogroup-N`, a name no cgroup lookup matches).
    pub autogroup: Vec<Option<Autogroup>>,
}

impl Default for TaskGroupTree {
    fn default() -> Self {
        TaskGroupTree {
            paths: vec!["/".to_string()],
            parent: vec![0],
            depth: vec![0],
            cpu_weight: vec![lbsim_pelt::CGROUP_WEIGHT_DFL],
            shares: vec![NICE_0_LOAD_SCALED],
            autogroup: vec![None],
        }
    }
}

impl TaskGroupTree {
    /// The number of groups, the root included.
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// Whether only the root group exists.
    pub fn is_empty(&self) -> bool {
        self.paths.len() <= 1
    }

    /// The index of the group at `path`, if declared.
    pub fn find(&self, path: &str) -> Option<u32> {
        let path = normalise(path)?;
        self.position(&path)
    }

    /// The cgroup (not autogroup) at normalised `path`.
    fn position(&self, path: &str) -> Option<u32> {
        (0..self.len())
            .find(|&i| self.autogroup[i].is_none() && self.paths[i] == path)
            .map(|i| i as u32)
    }

    /// The autogroup of session `id`, if created.
    pub fn find_autogroup(&self, id: u32) -> Option<u32> {
        (0..self.len())
            .find(|&i| self.autogroup[i].is_some_and(|a| a.id == id))
            .map(|i| i as u32)
    }

    /// Session `id`'s autogroup (`id` >= 1), created below the root with the shares of
    /// `nice` if it does not exist yet. Returns its index.
    ///
    /// Follows autogroup.c: autogroup_create() (v6.12: `sched_create_group(&root_task_group)`,
    /// `tg->autogroup = ag`) and, for a nice other than 0, proc_sched_autogroup_set_nice().
    ///
    /// # Errors
    /// [`TaskGroupError::BadAutogroupNice`] (see [`autogroup_shares`]).
    pub fn autogroup_create(&mut self, id: u32, nice: i32) -> Result<u32, TaskGroupError> {
        let shares = autogroup_shares(id, nice)?;
        if let Some(g) = self.find_autogroup(id) {
            self.shares[g as usize] = shares;
            self.autogroup[g as usize] = Some(Autogroup { id, nice });
            return Ok(g);
        }
        let g = self.len() as u32;
        self.paths.push(autogroup_path(id));
        self.parent.push(0);
        self.depth.push(1);
        self.cpu_weight.push(lbsim_pelt::sched_weight_to_cgroup(
            shares >> lbsim_pelt::SCHED_FIXEDPOINT_SHIFT,
        ));
        self.shares.push(shares);
        self.autogroup.push(Some(Autogroup { id, nice }));
        Ok(g)
    }

    /// The group at `path`, creating it and its missing ancestors with `cpu.weight` 100
    /// (cgroup v2's default) if needed. Returns its index.
    pub fn get_or_insert(&mut self, path: &str) -> Result<u32, TaskGroupError> {
        let norm = normalise(path).ok_or_else(|| TaskGroupError::BadPath {
            path: path.to_string(),
        })?;
        if norm == "/" {
            return Ok(0);
        }
        let mut parent = 0u32;
        let mut prefix = String::new();
        for part in norm[1..].split('/') {
            prefix.push('/');
            prefix.push_str(part);
            parent = match self.position(&prefix) {
                Some(i) => i,
                None => {
                    let i = self.paths.len() as u32;
                    self.paths.push(prefix.clone());
                    self.parent.push(parent);
                    self.depth.push(self.depth[parent as usize] + 1);
                    self.cpu_weight.push(lbsim_pelt::CGROUP_WEIGHT_DFL);
                    self.shares.push(NICE_0_LOAD_SCALED);
                    self.autogroup.push(None);
                    i
                }
            };
        }
        Ok(parent)
    }

    /// Declare (or re-declare) the group at `path` with `cpu.weight` = `weight`.
    ///
    /// Follows core.c: `cpu_weight_write_u64()` and fair.c: `sched_group_set_shares()`
    /// (v6.12) at set-up: `tg->shares = sched_weight_from_cgroup(weight)`, clamped to
    /// `[MIN_SHARES, MAX_SHARES]` scaled.
    pub fn declare(&mut self, path: &str, weight: u64) -> Result<u32, TaskGroupError> {
        let shares = tg_shares_from_cpu_weight(weight).map_err(|_| TaskGroupError::BadWeight {
            path: path.to_string(),
            weight,
        })?;
        let g = self.get_or_insert(path)?;
        if g == 0 {
            return Err(TaskGroupError::BadPath {
                path: path.to_string(),
            });
        }
        self.cpu_weight[g as usize] = weight;
        self.shares[g as usize] = shares;
        Ok(g)
    }

    /// The children of group `g`.
    pub fn children(&self, g: u32) -> impl Iterator<Item = u32> + '_ {
        (1..self.len() as u32).filter(move |&c| self.parent[c as usize] == g)
    }

    /// The shared state of every group at the start of a run.
    pub fn shared(&self) -> SharedTaskGroups {
        let v = (0..self.len())
            .map(|g| {
                if g == 0 {
                    TaskGroup::root()
                } else {
                    TaskGroup::new(self.shares[g])
                }
            })
            .collect();
        Arc::new(Mutex::new(v))
    }
}

/// `/a//b/` -> `/a/b`; `None` if it does not start with `/`.
fn normalise(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if parts.iter().any(|p| *p == "." || *p == "..") {
        return None;
    }
    Some(format!("/{}", parts.join("/")))
}

/// The task groups' state every CPU shares (`tg->shares`, the atomic `tg->load_avg`), by
/// group index. Locked only for the length of one runqueue operation (the simulator runs one
/// at a time, so the order of updates is the event order).
pub type SharedTaskGroups = Arc<Mutex<Vec<TaskGroup>>>;

/// One runqueue's part of the task groups.
#[derive(Clone, Debug)]
pub struct RqGroups {
    /// The declared tree.
    pub(crate) tree: Arc<TaskGroupTree>,
    /// The shared group state.
    pub(crate) shared: SharedTaskGroups,
    /// `tg->cfs_rq[cpu]` per group (index 0 is an unused placeholder: the root is `rq->cfs`).
    pub(crate) cfs: Vec<CfsRq>,
    /// `tg->se[cpu]` per group (index 0 unused).
    pub(crate) se: Vec<SchedEntity>,
    /// Each group entity's `load.weight`, scaled (its `se.load` holds `scale_load_down()` of it).
    pub(crate) se_scaled: Vec<u64>,
    /// `se->runnable_weight` of each group entity (`se_update_runnable()`).
    pub(crate) runnable_weight: Vec<u64>,
    /// `cfs_rq->on_list`: on the runqueue's leaf list (index 0: the root, always).
    pub(crate) on_list: Vec<bool>,
    /// `h_load` and `last_h_load_update` of each cfs_rq (index 0: the root), updated by the
    /// balancer's reads (`task_h_load()`).
    pub(crate) hload: Vec<Cell<(u64, u64)>>,
}

impl RqGroups {
    /// Follows fair.c: `alloc_fair_sched_group()` / `init_tg_cfs_entry()` (v6.12): per group a
    /// cfs_rq and a group entity of weight `NICE_0_LOAD`, its PELT zeroed
    /// (`init_entity_runnable_average()` gives a group entity no load), its slice 0.
    pub fn new(tree: Arc<TaskGroupTree>, shared: SharedTaskGroups) -> RqGroups {
        let n = tree.len();
        let cfs = (0..n)
            .map(|g| {
                let mut c = CfsRq::new();
                c.group = g as u32;
                c
            })
            .collect();
        let se = (0..n)
            .map(|_| {
                let mut se = SchedEntity::new(
                    LoadWeight {
                        weight: NICE_0_LOAD,
                        inv_weight: 0,
                    },
                    false,
                    0,
                );
                se.avg = SchedAvg::default();
                se
            })
            .collect();
        RqGroups {
            tree,
            shared,
            cfs,
            se,
            se_scaled: vec![NICE_0_LOAD_SCALED; n],
            runnable_weight: vec![0; n],
            on_list: vec![false; n],
            hload: (0..n).map(|_| Cell::new((0, 0))).collect(),
        }
    }

    /// The declared tree.
    pub fn tree(&self) -> &TaskGroupTree {
        &self.tree
    }

    /// Group `g`'s cfs_rq on this CPU (`g > 0`).
    pub fn cfs_rq(&self, g: u32) -> &CfsRq {
        &self.cfs[g as usize]
    }

    /// Group `g`'s entity on this CPU (`g > 0`).
    pub fn se(&self, g: u32) -> &SchedEntity {
        &self.se[g as usize]
    }

    /// Group `g`'s entity weight on this CPU, scaled (`tg->se[cpu]->load.weight`).
    pub fn se_weight_scaled(&self, g: u32) -> u64 {
        self.se_scaled[g as usize]
    }

    /// Group `g`'s entity `runnable_weight` on this CPU (`se_update_runnable()`).
    pub fn runnable_weight(&self, g: u32) -> u64 {
        self.runnable_weight[g as usize]
    }
}

/// The entities a runqueue with task groups holds: its tasks and its group entities, with
/// what the group parts of the entity life cycle need (the group cfs_rqs other than the one
/// being changed, the shared group state, `sched_clock_cpu()`).
pub(crate) struct GroupEnts<'a> {
    pub(crate) tasks: &'a mut Tasks,
    pub(crate) cfs: &'a mut [CfsRq],
    pub(crate) se: &'a mut [SchedEntity],
    pub(crate) se_scaled: &'a mut [u64],
    pub(crate) runnable_weight: &'a mut [u64],
    pub(crate) on_list: &'a mut [bool],
    pub(crate) tgs: &'a mut [TaskGroup],
    /// `sched_clock_cpu(cpu)` (ns), for `update_tg_load_avg()`'s rate limit.
    pub(crate) sched_clock: u64,
}

impl EntityStore for GroupEnts<'_> {
    #[inline]
    fn se(&self, id: TaskId) -> &SchedEntity {
        match se_group(id) {
            Some(g) => &self.se[g as usize],
            None => &self.tasks[id].se,
        }
    }

    #[inline]
    fn se_mut(&mut self, id: TaskId) -> &mut SchedEntity {
        match se_group(id) {
            Some(g) => &mut self.se[g as usize],
            None => &mut self.tasks[id].se,
        }
    }

    fn scaled_weight(&self, id: TaskId) -> u64 {
        match se_group(id) {
            Some(g) => self.se_scaled[g as usize],
            None => self.tasks[id].se.load.weight << lbsim_kernel::SCHED_FIXEDPOINT_SHIFT,
        }
    }

    fn set_scaled_weight(&mut self, id: TaskId, weight: u64) {
        let g = se_group(id).expect("only group entities are reweighted");
        self.se_scaled[g as usize] = weight;
        self.se[g as usize].load = LoadWeight {
            weight: scale_load_down_scaled(weight),
            inv_weight: 0,
        };
    }

    /// Follows fair.c: `update_load_avg()` (v6.12, CONFIG_FAIR_GROUP_SCHED): the entity and
    /// its cfs_rq aged (the cfs_rq's weight is `scale_load_down()` of its scaled sum), a group
    /// entity's pending change propagated from its cfs_rq, attach/detach queued for the group
    /// entity above, and `update_tg_load_avg()` when the update asks for it. A group entity
    /// is runnable for PELT by its `runnable_weight`, and not at all while delayed.
    fn pelt_update(
        &mut self,
        cfs: &mut CfsRq,
        id: TaskId,
        now_pelt: u64,
        flags: UpdateFlags,
        util_est: bool,
    ) {
        let cfs_load = CfsRqLoad {
            load_weight: scale_load_down_scaled(cfs.load_scaled),
            h_nr_running: u64::from(cfs.h_nr_running - cfs.h_nr_delayed),
            curr: cfs.curr.is_some(),
        };
        let is_curr = cfs.curr == Some(id);
        let out = match se_group(id) {
            None => {
                let se = &mut self.tasks[id].se;
                let se_load = SeLoad {
                    weight: se.se_weight(),
                    on_rq: se.on_rq,
                    runnable: u64::from(se.on_rq && !se.sched_delayed),
                    curr: is_curr,
                };
                update_load_avg_tg(
                    &mut cfs.avg,
                    &mut cfs.tg,
                    &mut se.avg,
                    now_pelt,
                    &se_load,
                    &cfs_load,
                    flags,
                    util_est,
                    None,
                )
            }
            Some(g) => {
                let g = g as usize;
                let se = &mut self.se[g];
                let gcfs = &mut self.cfs[g];
                let se_load = SeLoad {
                    weight: se.se_weight(),
                    on_rq: se.on_rq,
                    runnable: if se.sched_delayed {
                        0
                    } else {
                        self.runnable_weight[g]
                    },
                    curr: is_curr,
                };
                let group = GroupRq {
                    avg: &gcfs.avg.avg,
                    load_weight: scale_load_down_scaled(gcfs.load_scaled),
                    tg: &mut gcfs.tg,
                };
                update_load_avg_tg(
                    &mut cfs.avg,
                    &mut cfs.tg,
                    &mut se.avg,
                    now_pelt,
                    &se_load,
                    &cfs_load,
                    flags,
                    util_est,
                    Some(group),
                )
            }
        };
        if out.update_tg_load_avg {
            update_tg_load_avg(
                &mut self.tgs[cfs.group as usize],
                &mut cfs.tg,
                cfs.avg.avg.load_avg,
                true,
                self.sched_clock,
            );
        }
    }

    /// Follows fair.c: `se_update_runnable()` (v6.12.y): a group entity's `runnable_weight`
    /// is its cfs_rq's runnable count (`h_nr_running - h_nr_delayed`).
    fn se_update_runnable(&mut self, id: TaskId) {
        if let Some(g) = se_group(id) {
            let c = &self.cfs[g as usize];
            self.runnable_weight[g as usize] = u64::from(c.h_nr_running - c.h_nr_delayed);
        }
    }

    /// Follows fair.c: `update_cfs_group()` (v6.12.y): a group entity whose
    /// `calc_group_shares()` differs from its weight is reweighted on `cfs`
    /// (`reweight_entity()`), except while its cfs_rq is empty, when it keeps its weight.
    ///
    /// That exception is commit 66951e4860d3 ("sched/fair: Fix update_cfs_group() vs
    /// DELAY_DEQUEUE", v6.13, in the v6.12.y stable releases), which lbsim follows as it
    /// follows v6.12.y's `h_nr_delayed`. Without it (v6.12.0, `lbsim_pelt::update_cfs_group`
    /// alone) an emptied, delayed group entity is reweighted down to `MIN_SHARES`, its
    /// negative lag scaled up 512-fold, and its vruntime drags the cfs_rq's `avg_vruntime()`
    /// ahead: a task woken there is placed hundreds of milliseconds of virtual time late
    /// (`--check`'s wait bound caught a 90 ms starvation of a root-group kworker).
    fn update_cfs_group(
        &mut self,
        cfs: &mut CfsRq,
        id: TaskId,
        clock: CfsClock,
        params: &SchedParams,
    ) {
        let Some(g) = se_group(id) else {
            return;
        };
        let gu = g as usize;
        let gcfs = &self.cfs[gu];
        if gcfs.load.weight == 0 {
            return;
        }
        if let Some(shares) = lbsim_pelt::update_cfs_group(
            self.se_scaled[gu],
            &self.tgs[gu],
            scale_load_down_scaled(gcfs.load_scaled),
            gcfs.avg.avg.load_avg,
            &gcfs.tg,
        ) {
            cfs.reweight_entity(self, group_se_id(g), shares, clock, params);
        }
    }
}

#[cfg(test)]
mod tests;
