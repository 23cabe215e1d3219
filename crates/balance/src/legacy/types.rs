//! The pre-v5.5 balancer's statistics: `enum group_type` ([`LegacyGroupType`]),
//! `struct sg_lb_stats` ([`SgLbStats`]) and `struct sd_lb_stats` ([`SdLbStats`], with
//! init_sd_lb_stats() as its `Default`), as kernel/sched/fair.c of v4.6-v5.4 has them.

use lbsim_topology::GroupId;

use crate::lb::GroupType;

/// `enum group_type` before v5.5, ordered by pull priority (lowest first): v4.6-v4.19
/// `group_other < group_imbalanced < group_overloaded`; v4.20 inserts `group_misfit_task`
/// after `group_other`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LegacyGroupType {
    /// `group_other`.
    #[default]
    Other,
    /// `group_misfit_task` (v4.20+).
    MisfitTask,
    /// `group_imbalanced`: affinity kept the child level from balancing.
    Imbalanced,
    /// `group_overloaded`: `group_no_capacity`.
    Overloaded,
}

impl LegacyGroupType {
    /// The kernel name.
    pub const fn name(self) -> &'static str {
        match self {
            LegacyGroupType::Other => "group_other",
            LegacyGroupType::MisfitTask => "group_misfit_task",
            LegacyGroupType::Imbalanced => "group_imbalanced",
            LegacyGroupType::Overloaded => "group_overloaded",
        }
    }

    /// The v5.5+ type the trace and the decision record count this one as (`group_other`
    /// has no counterpart: it is reported as `group_has_spare`).
    pub const fn as_group_type(self) -> GroupType {
        match self {
            LegacyGroupType::Other => GroupType::HasSpare,
            LegacyGroupType::MisfitTask => GroupType::MisfitTask,
            LegacyGroupType::Imbalanced => GroupType::Imbalanced,
            LegacyGroupType::Overloaded => GroupType::Overloaded,
        }
    }
}

/// `struct sg_lb_stats` (v4.6-v5.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SgLbStats {
    /// `avg_load`: `group_load * SCHED_CAPACITY_SCALE / group_capacity`.
    pub avg_load: u64,
    /// `group_load`: the sum of source_load() (target_load() for the local group).
    pub group_load: u64,
    /// `sum_weighted_load`: the sum of weighted_cpuload() (gone in v5.3).
    pub sum_weighted_load: u64,
    /// `load_per_task`.
    pub load_per_task: u64,
    /// `group_capacity`.
    pub group_capacity: u64,
    /// `group_util`: the sum of cpu_util().
    pub group_util: u64,
    /// `sum_nr_running`: the sum of `cfs.h_nr_running`.
    pub sum_nr_running: u32,
    /// `idle_cpus`.
    pub idle_cpus: u32,
    /// `group_weight`.
    pub group_weight: u32,
    /// `group_type`.
    pub group_type: LegacyGroupType,
    /// `group_no_capacity`.
    pub group_no_capacity: bool,
    /// `group_misfit_task_load` (v4.20+).
    pub group_misfit_task_load: u64,
}

/// `struct sd_lb_stats` (v4.6-v5.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SdLbStats {
    /// `busiest`.
    pub busiest: Option<GroupId>,
    /// `local`.
    pub local: Option<GroupId>,
    /// `total_load`.
    pub total_load: u64,
    /// `total_capacity`.
    pub total_capacity: u64,
    /// `avg_load`: the domain's load per capacity.
    pub avg_load: u64,
    /// `busiest_stat`.
    pub busiest_stat: SgLbStats,
    /// `local_stat`.
    pub local_stat: SgLbStats,
}
