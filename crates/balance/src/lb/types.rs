//! The balancer's kernel enums and statistics structs of kernel/sched/fair.c (v6.6-v6.12):
//! `enum cpu_idle_type` ([`CpuIdleType`], v6.10+ order), `enum group_type` ([`GroupType`]),
//! `enum migration_type` ([`MigrationType`]), the `LBF_*` flags ([`lbf`]),
//! `struct sg_lb_stats` ([`SgLbStats`]) and `struct sd_lb_stats` ([`SdLbStats`], with
//! init_sd_lb_stats() as its `Default`).

use lbsim_topology::GroupId;

/// `enum cpu_idle_type`, in the v6.10+ order that /proc/schedstat versions 16 and 17 print
/// (`__CPU_NOT_IDLE`, `CPU_IDLE`, `CPU_NEWLY_IDLE`; v6.6 ordered CPU_IDLE first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuIdleType {
    /// `__CPU_NOT_IDLE` (`CPU_NOT_IDLE` before v6.10): a busy CPU's periodic balance.
    NotIdle,
    /// `CPU_IDLE`: an idle CPU's periodic balance (its own tick, or the nohz idle balancer).
    Idle,
    /// `CPU_NEWLY_IDLE`: a CPU about to go idle.
    NewlyIdle,
}

impl CpuIdleType {
    /// Every idle type, in schedstat column order.
    pub const ALL: [CpuIdleType; 3] = [
        CpuIdleType::NotIdle,
        CpuIdleType::Idle,
        CpuIdleType::NewlyIdle,
    ];

    /// The index into `sd->lb_*[]` (v6.10+ numbering).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `env->idle` as a truth value (v6.10+): the destination is idle or newly idle.
    pub const fn is_idle(self) -> bool {
        !matches!(self, CpuIdleType::NotIdle)
    }

    /// The kernel name (v6.10+).
    pub const fn name(self) -> &'static str {
        match self {
            CpuIdleType::NotIdle => "__CPU_NOT_IDLE",
            CpuIdleType::Idle => "CPU_IDLE",
            CpuIdleType::NewlyIdle => "CPU_NEWLY_IDLE",
        }
    }
}

/// `enum group_type`, ordered by pull priority (lowest first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupType {
    /// `group_has_spare`: spare capacity.
    #[default]
    HasSpare,
    /// `group_fully_busy`: no spare capacity, but no task waits for long.
    FullyBusy,
    /// `group_misfit_task`: a task does not fit its CPU's capacity.
    MisfitTask,
    /// `group_smt_balance`: an SMT group with more than one task, seen by an idle CPU.
    SmtBalance,
    /// `group_asym_packing`: the destination has a higher asym-packing priority.
    AsymPacking,
    /// `group_imbalanced`: affinity kept the child level from balancing.
    Imbalanced,
    /// `group_overloaded`: more tasks than the group can serve.
    Overloaded,
}

impl GroupType {
    /// The kernel name.
    pub const fn name(self) -> &'static str {
        match self {
            GroupType::HasSpare => "group_has_spare",
            GroupType::FullyBusy => "group_fully_busy",
            GroupType::MisfitTask => "group_misfit_task",
            GroupType::SmtBalance => "group_smt_balance",
            GroupType::AsymPacking => "group_asym_packing",
            GroupType::Imbalanced => "group_imbalanced",
            GroupType::Overloaded => "group_overloaded",
        }
    }
}

/// `enum migration_type`: the unit of `env->imbalance`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MigrationType {
    /// `migrate_load`: PELT load.
    #[default]
    Load,
    /// `migrate_util`: PELT utilization.
    Util,
    /// `migrate_task`: number of tasks.
    Task,
    /// `migrate_misfit`: one misfit task.
    Misfit,
}

impl MigrationType {
    /// Every migration type, in schedstat column order.
    pub const ALL: [MigrationType; 4] = [
        MigrationType::Load,
        MigrationType::Util,
        MigrationType::Task,
        MigrationType::Misfit,
    ];

    /// The index of the `lb_imbalance_*` column.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The kernel name.
    pub const fn name(self) -> &'static str {
        match self {
            MigrationType::Load => "migrate_load",
            MigrationType::Util => "migrate_util",
            MigrationType::Task => "migrate_task",
            MigrationType::Misfit => "migrate_misfit",
        }
    }
}

/// `LBF_*` flags of `env->flags`.
pub mod lbf {
    /// `LBF_ALL_PINNED`: no task examined could run on the destination.
    pub const ALL_PINNED: u32 = 0x01;
    /// `LBF_NEED_BREAK`: detach_tasks() took a breather after `loop_break` tasks.
    pub const NEED_BREAK: u32 = 0x02;
    /// `LBF_DST_PINNED`: a task could go to `new_dst_cpu` of the local group instead.
    pub const DST_PINNED: u32 = 0x04;
    /// `LBF_SOME_PINNED`: some task could not run on the destination.
    pub const SOME_PINNED: u32 = 0x08;
    /// `LBF_ACTIVE_LB`: the active-balance stopper is detaching.
    pub const ACTIVE_LB: u32 = 0x10;
}

/// `struct sg_lb_stats`: one group's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SgLbStats {
    /// `avg_load`: `group_load * 1024 / group_capacity`, computed for overloaded groups only.
    pub avg_load: u64,
    /// `group_load`: sum of cpu_load().
    pub group_load: u64,
    /// `group_capacity`: `sgc->capacity`.
    pub group_capacity: u64,
    /// `group_util`: sum of cpu_util_cfs().
    pub group_util: u64,
    /// `group_runnable`: sum of cpu_runnable().
    pub group_runnable: u64,
    /// `sum_nr_running`: tasks of every class.
    pub sum_nr_running: u32,
    /// `sum_h_nr_running`: CFS tasks.
    pub sum_h_nr_running: u32,
    /// `idle_cpus`.
    pub idle_cpus: u32,
    /// `group_weight`.
    pub group_weight: u32,
    /// `group_type`.
    pub group_type: GroupType,
    /// `group_asym_packing`.
    pub group_asym_packing: bool,
    /// `group_smt_balance`.
    pub group_smt_balance: bool,
    /// `group_misfit_task_load`.
    pub group_misfit_task_load: u64,
}

/// `struct sd_lb_stats`: a domain's statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdLbStats {
    /// `busiest`.
    pub busiest: Option<GroupId>,
    /// `local`.
    pub local: Option<GroupId>,
    /// `total_load`.
    pub total_load: u64,
    /// `total_capacity`.
    pub total_capacity: u64,
    /// `avg_load`: the domain average, computed where needed.
    pub avg_load: u64,
    /// `prefer_sibling`: the busiest group's child domain has SD_PREFER_SIBLING.
    pub prefer_sibling: bool,
    /// `busiest_stat`.
    pub busiest_stat: SgLbStats,
    /// `local_stat`.
    pub local_stat: SgLbStats,
}

impl Default for SdLbStats {
    /// init_sd_lb_stats(): the busiest sentinel is has_spare with `idle_cpus = UINT_MAX`.
    fn default() -> SdLbStats {
        SdLbStats {
            busiest: None,
            local: None,
            total_load: 0,
            total_capacity: 0,
            avg_load: 0,
            prefer_sibling: false,
            busiest_stat: SgLbStats {
                idle_cpus: u32::MAX,
                group_type: GroupType::HasSpare,
                ..SgLbStats::default()
            },
            local_stat: SgLbStats::default(),
        }
    }
}
