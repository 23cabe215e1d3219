//! The scheduling entity of a task (`struct sched_entity`) and the enqueue/dequeue flags.
//!
//! Follows include/linux/sched.h: `struct sched_entity` and kernel/sched/sched.h: the
//! `ENQUEUE_*`/`DEQUEUE_*` flags (v6.12). Task entities live in their tasks; the group
//! entities of task groups (CONFIG_FAIR_GROUP_SCHED) live in their runqueue's
//! [`crate::group::RqGroups`] and are named by [`group_se_id`].

use lbsim_pelt::{SchedAvg, UpdateFlags};
use slotmap::{Key, KeyData, SlotMap};

use crate::cfs_rq::{CfsClock, CfsRq};
use crate::tunables::SchedParams;
use crate::weights::LoadWeight;

/// The bit of a [`TaskId`]'s slot index that marks a group entity (no task slotmap grows to
/// 2^31 slots).
const GROUP_SE_BIT: u32 = 1 << 31;

/// The id of the group entity of task group `g` (`tg->se[cpu]`; the same id on every CPU, as
/// each runqueue holds its own): a key no task slotmap hands out.
#[inline]
pub fn group_se_id(g: u32) -> TaskId {
    debug_assert!(g != 0 && g & GROUP_SE_BIT == 0);
    TaskId::from(KeyData::from_ffi(
        (1u64 << 32) | u64::from(GROUP_SE_BIT | g),
    ))
}

/// `!entity_is_task(se)`: the task group whose group entity `id` is, if it is one.
#[inline]
pub fn se_group(id: TaskId) -> Option<u32> {
    let idx = id.data().as_ffi() as u32;
    (idx & GROUP_SE_BIT != 0).then_some(idx & !GROUP_SE_BIT)
}

slotmap::new_key_type! {
    /// A task: the key of the `Tasks` slotmap (`struct task_struct *`).
    pub struct TaskId;
}

/// `struct sched_entity` of a task.
///
/// Time fields are nanoseconds of the runqueue's `clock_task`; `vruntime` and `deadline` are
/// virtual nanoseconds that wrap around (the kernel compares them as `(s64)(a - b)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedEntity {
    /// `se->load`: the weight (10-bit domain, see [`crate::weights`]) and its inverse.
    pub load: LoadWeight,
    /// `se->on_rq`: queued on a cfs_rq (waiting, running, or delayed-dequeued).
    pub on_rq: bool,
    /// `se->sched_delayed` (v6.12, `DELAY_DEQUEUE`): slept with negative lag and is still
    /// queued, competing until it is picked (then dequeued) or woken (then requeued).
    pub sched_delayed: bool,
    /// `se->rel_deadline` (v6.12, `PLACE_REL_DEADLINE`): `deadline` holds `deadline - vruntime`
    /// since a non-sleep dequeue.
    pub rel_deadline: bool,
    /// `se->custom_slice` (v6.12): `slice` was set by the user, not from `base_slice_ns`.
    pub custom_slice: bool,
    /// `se_is_idle(se)` for a task entity: `task_has_idle_policy(p)` (cached here because the
    /// hierarchy is flat and the policy does not change).
    pub idle: bool,
    /// `se->exec_start`: `clock_task` when the entity was last accounted running; 0 after an
    /// `ENQUEUE_MIGRATED` enqueue (no longer cache hot).
    pub exec_start: u64,
    /// `se->sum_exec_runtime`: total time run.
    pub sum_exec_runtime: u64,
    /// `se->prev_sum_exec_runtime`: `sum_exec_runtime` when last picked.
    pub prev_sum_exec_runtime: u64,
    /// `se->nr_migrations`.
    pub nr_migrations: u64,
    /// `se->vruntime`.
    pub vruntime: u64,
    /// `se->deadline` (EEVDF virtual deadline).
    pub deadline: u64,
    /// `se->slice`: the request size in ns.
    pub slice: u64,
    /// `se->vlag`: the virtual lag `V - v` saved at dequeue; between pick and dequeue it holds
    /// a copy of `deadline` (`RUN_TO_PARITY`'s protection marker, "HACK" in set_next_entity()).
    pub vlag: i64,
    /// `se->avg`: the entity's PELT signal.
    pub avg: SchedAvg,
    /// `se->run_node`: the entity's slot in its cfs_rq's timeline while it is in one (an
    /// index into that tree's arena, checked against the slot's task on use).
    pub(crate) run_node: u32,
    /// `se->group_node`: the entity's slot on its runqueue's `cfs_tasks` while it is queued
    /// (an index into that list's arena, checked against the slot's task on use).
    pub(crate) group_node: u32,
}

impl SchedEntity {
    /// A freshly forked entity.
    ///
    /// Follows core.c: `__sched_fork()` (v6.12): everything zero, `slice = sysctl_sched_base_slice`;
    /// fair.c: `init_entity_runnable_average()` (load_avg starts at the full weight).
    pub fn new(load: LoadWeight, idle: bool, base_slice_ns: u64) -> SchedEntity {
        SchedEntity {
            load,
            on_rq: false,
            sched_delayed: false,
            rel_deadline: false,
            custom_slice: false,
            idle,
            exec_start: 0,
            sum_exec_runtime: 0,
            prev_sum_exec_runtime: 0,
            nr_migrations: 0,
            vruntime: 0,
            deadline: 0,
            slice: base_slice_ns,
            vlag: 0,
            run_node: crate::cfs_rq::NO_RUN_NODE,
            group_node: crate::cfs_rq::NO_RUN_NODE,
            avg: lbsim_pelt::init_entity_runnable_average(crate::weights::scale_load_down(
                load.weight,
            )),
        }
    }

    /// `se_weight(se)`: `scale_load_down(se->load.weight)`.
    #[inline]
    pub fn se_weight(&self) -> u64 {
        crate::weights::scale_load_down(self.load.weight)
    }
}

/// Access to the entities a cfs_rq references, by task id.
///
/// Implemented by the task slotmap ([`crate::task::Tasks`]) and by a plain
/// `SlotMap<TaskId, SchedEntity>` (for tests of the per-rq rules on hand-built entities): a
/// flat hierarchy, whose hooks below keep their defaults. The store of a runqueue with task
/// groups (`group.rs`) also holds the group entities and gives the group parts.
pub trait EntityStore {
    /// The entity of task `id`. Panics if `id` is stale (a model bug).
    fn se(&self, id: TaskId) -> &SchedEntity;
    /// The entity of task `id`, mutable.
    fn se_mut(&mut self, id: TaskId) -> &mut SchedEntity;

    /// `se->load.weight` in the kernel's scaled form (`scale_load()`): exact for a task.
    #[inline]
    fn scaled_weight(&self, id: TaskId) -> u64 {
        self.se(id).load.weight << lbsim_kernel::SCHED_FIXEDPOINT_SHIFT
    }

    /// `update_load_avg(cfs_rq, se, flags)` for an entity of `cfs`: the flat (task) version,
    /// or with groups the propagating one and `update_tg_load_avg()`.
    #[inline]
    fn pelt_update(
        &mut self,
        cfs: &mut CfsRq,
        id: TaskId,
        now_pelt: u64,
        flags: UpdateFlags,
        util_est: bool,
    ) where
        Self: Sized,
    {
        cfs.update_load_avg_task(self, id, now_pelt, flags, util_est);
    }

    /// `se_update_runnable(se)`: nothing for a task.
    #[inline]
    fn se_update_runnable(&mut self, _id: TaskId) {}

    /// `update_cfs_group(se)` for an entity of `cfs`: nothing for a task.
    #[inline]
    fn update_cfs_group(
        &mut self,
        _cfs: &mut CfsRq,
        _id: TaskId,
        _clock: CfsClock,
        _params: &SchedParams,
    ) where
        Self: Sized,
    {
    }

    /// `update_load_set(&se->load, weight)` with a scaled weight (only group entities are
    /// reweighted).
    #[inline]
    fn set_scaled_weight(&mut self, id: TaskId, weight: u64) {
        self.se_mut(id).load = LoadWeight {
            weight: crate::weights::scale_load_down_scaled(weight),
            inv_weight: 0,
        };
    }
}

impl EntityStore for SlotMap<TaskId, SchedEntity> {
    fn se(&self, id: TaskId) -> &SchedEntity {
        &self[id]
    }
    fn se_mut(&mut self, id: TaskId) -> &mut SchedEntity {
        &mut self[id]
    }
}

macro_rules! flag_set {
    ($(#[$m:meta])* $name:ident { $( $(#[$fm:meta])* $flag:ident = $val:literal, )* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
        pub struct $name(u32);

        impl $name {
            /// No flag.
            pub const NONE: $name = $name(0);
            $( $(#[$fm])* pub const $flag: $name = $name($val); )*

            /// Whether every flag of `other` is set.
            #[inline]
            pub const fn contains(self, other: $name) -> bool {
                self.0 & other.0 == other.0
            }

            /// The kernel's bit values.
            #[inline]
            pub const fn bits(self) -> u32 {
                self.0
            }

            /// `self` with the flags of `other` cleared.
            #[inline]
            #[must_use]
            pub const fn without(self, other: $name) -> $name {
                $name(self.0 & !other.0)
            }
        }

        impl core::ops::BitOr for $name {
            type Output = $name;
            fn bitor(self, rhs: $name) -> $name {
                $name(self.0 | rhs.0)
            }
        }

        impl core::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: $name) {
                self.0 |= rhs.0;
            }
        }
    };
}

flag_set! {
    /// `ENQUEUE_*` flags (sched.h, v6.12 values).
    EnqueueFlags {
        /// `ENQUEUE_WAKEUP`: the task is waking up.
        WAKEUP = 0x01,
        /// `ENQUEUE_RESTORE`: re-enqueue after a `DEQUEUE_SAVE` (attribute change).
        RESTORE = 0x02,
        /// `ENQUEUE_MOVE`.
        MOVE = 0x04,
        /// `ENQUEUE_NOCLOCK`: the rq clock is already up to date.
        NOCLOCK = 0x08,
        /// `ENQUEUE_MIGRATED`: the task changed CPU since it last ran.
        MIGRATED = 0x40,
        /// `ENQUEUE_INITIAL`: first enqueue of a forked task.
        INITIAL = 0x80,
        /// `ENQUEUE_MIGRATING`.
        MIGRATING = 0x100,
        /// `ENQUEUE_DELAYED` (v6.12): wake a delayed-dequeued task in place.
        DELAYED = 0x200,
        /// `ENQUEUE_RQ_SELECTED` (v6.12): select_task_rq() chose the CPU.
        RQ_SELECTED = 0x400,
    }
}

flag_set! {
    /// `DEQUEUE_*` flags (sched.h, v6.12 values).
    DequeueFlags {
        /// `DEQUEUE_SLEEP`: the task is going to sleep.
        SLEEP = 0x01,
        /// `DEQUEUE_SAVE`: temporary dequeue for an attribute change.
        SAVE = 0x02,
        /// `DEQUEUE_MOVE`.
        MOVE = 0x04,
        /// `DEQUEUE_NOCLOCK`: the rq clock is already up to date.
        NOCLOCK = 0x08,
        /// `DEQUEUE_SPECIAL` (v6.12): a special task state (e.g. `TASK_DEAD`) that must not
        /// be delayed.
        SPECIAL = 0x10,
        /// `DEQUEUE_MIGRATING`.
        MIGRATING = 0x100,
        /// `DEQUEUE_DELAYED` (v6.12): finish a delayed dequeue.
        DELAYED = 0x200,
    }
}

flag_set! {
    /// `WF_*` wake flags (sched.h, v6.12 values) that the fair class reads.
    WakeFlags {
        /// `WF_EXEC`.
        EXEC = 0x02,
        /// `WF_FORK`: wakeup of a new task (never preempts).
        FORK = 0x04,
        /// `WF_TTWU`: a regular wakeup.
        TTWU = 0x08,
        /// `WF_SYNC`: the waker will sleep soon.
        SYNC = 0x10,
        /// `WF_MIGRATED`: the task changed CPU.
        MIGRATED = 0x20,
        /// `WF_CURRENT_CPU`.
        CURRENT_CPU = 0x40,
        /// `WF_RQ_SELECTED`.
        RQ_SELECTED = 0x80,
    }
}
