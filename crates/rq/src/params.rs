//! The parameters `lbsim-rq` declares: the sched features the per-runqueue code reads (the
//! EEVDF and legacy-CFS pick, placement, buddies, delayed dequeue, util_est, PELT init) and
//! the fair-class tunables of `/sys/kernel/debug/sched/` ([`crate::Tunables`]).
//!
//! Features follow kernel/sched/features.h of v6.1, v6.6 and v6.12 (`pos` is the place in
//! their union, the order `/sys/kernel/debug/sched/features` prints); lbsim's switches say
//! which kernel change they stand for. See [`lbsim_kernel::params`] for the machinery and
//! the three-files rule for a new feature.

use lbsim_kernel::params::{
    ChoiceDef, Features, IntDef, IntDefault, Kind, Origin, Owner, ParamDef, RQ_FEATURE_BASE, Unit,
};

use crate::tunables::{
    NORMALIZED_BASE_SLICE_NS, NORMALIZED_LATENCY_NS, NORMALIZED_MIN_GRANULARITY_NS,
    NORMALIZED_WAKEUP_GRANULARITY_NS,
};

lbsim_kernel::sched_features! {
    /// A sched feature the runqueue code reads (`sched_feat(X)` in its fair.c functions).
    pub enum RqFeat;
    /// The declarations of [`RqFeat`].
    pub const FEATURES;
    base = RQ_FEATURE_BASE, owner = Owner::Rq;
    /// v6.1 place_entity(): only give sleepers half a latency of credit.
    GentleFairSleepers = "GENTLE_FAIR_SLEEPERS", pos 0, on, Origin::kernel("v6.1 (legacy CFS only)");
    /// v6.1 place_entity(): place a forked task one vslice ahead of min_vruntime.
    StartDebit = "START_DEBIT", pos 1, on, Origin::kernel("v6.1 (legacy CFS only)");
    /// EEVDF place_entity(): preserve lag across sleep+wake (placement strategy #1).
    PlaceLag = "PLACE_LAG", pos 2, on, Origin::kernel("v6.6, v6.12");
    /// EEVDF place_entity(): a new task starts with half a slice of deadline.
    PlaceDeadlineInitial = "PLACE_DEADLINE_INITIAL", pos 3, on, Origin::kernel("v6.6, v6.12");
    /// EEVDF: keep the relative virtual deadline across a non-sleep dequeue (migration).
    PlaceRelDeadline = "PLACE_REL_DEADLINE", pos 4, on, Origin::kernel("v6.12");
    /// EEVDF pick_eevdf(): keep curr until it has used its slice or lost eligibility.
    RunToParity = "RUN_TO_PARITY", pos 5, on, Origin::kernel("v6.6, v6.12");
    /// EEVDF: a waking task with a shorter slice cancels curr's slice protection.
    PreemptShort = "PREEMPT_SHORT", pos 6, on, Origin::kernel("v6.12");
    /// Pick the last-woken task if it is eligible (wakeup sets the `next` buddy).
    NextBuddy = "NEXT_BUDDY", pos 7, off, Origin::kernel("v6.1, v6.6, v6.12");
    /// v6.1: prefer the task preempted by a wakeup (the `last` buddy).
    LastBuddy = "LAST_BUDDY", pos 8, on, Origin::kernel("v6.1 (legacy CFS only)");
    /// Keep a task that sleeps with negative lag queued until it is picked or woken.
    DelayDequeue = "DELAY_DEQUEUE", pos 10, on, Origin::kernel("v6.12");
    /// Clip positive lag to 0 when a delayed dequeue completes or the task is requeued.
    DelayZero = "DELAY_ZERO", pos 11, on, Origin::kernel("v6.12");
    /// Allow wakeup-time preemption of the current task.
    WakeupPreemption = "WAKEUP_PREEMPTION", pos 12, on, Origin::kernel("v6.1, v6.6, v6.12");
    /// Age a migrating task's load to the destination's clock (not modelled: lbsim always
    /// ages it, as the default does).
    AttachAgeLoad = "ATTACH_AGE_LOAD", pos 24, on, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// Use util_est in cpu_util() and enqueue/dequeue accounting.
    UtilEst = "UTIL_EST", pos 28, on, Origin::kernel("v6.1, v6.6, v6.12");
    /// util_est: increases are immediate (not modelled: always on, as from v6.8/v6.9).
    UtilEstFastup = "UTIL_EST_FASTUP", pos 29, on, Origin::kernel("v6.1, v6.6"), not_modelled;
    /// v6.1 sched_slice(): use the rq-wide h_nr_running for the period.
    AltPeriod = "ALT_PERIOD", pos 31, on, Origin::kernel("v6.1 (legacy CFS only)");
    /// v6.1 sched_slice(): floor the slice at min_granularity.
    BaseSlice = "BASE_SLICE", pos 32, on, Origin::kernel("v6.1 (legacy CFS only)");
    /// post_init_entity_util_avg(): a new task's runnable_avg starts at its util_avg, not at
    /// the CPU's capacity (`NO_` is the v5.7 kernel of seed 000).
    RunnableAvgInitUtil = "RUNNABLE_AVG_INIT_UTIL", pos 107, on, Origin::switch("e21cf43406a1", "merged v5.8");
    /// wake_up_new_task(): a new task's util_avg is extrapolated from its cfs_rq and capped
    /// (post_init_entity_util_avg()); `NO_` is v4.6, where a new task starts at the full
    /// scale, 1024, whatever the CPU's load.
    PostInitUtilAvg = "POST_INIT_UTIL_AVG", pos 111, on, Origin::switch("2b8c41daba32", "merged v4.7");
}

/// The defaults of the features this crate declares (for its own tests; a run's defaults
/// come from the assembled registry, `lbsim_sim::params::REGISTRY`).
pub fn default_features() -> Features {
    Features::NONE.with_defaults(FEATURES)
}

/// `features` with the features v6.6 did not have (`PLACE_REL_DEADLINE`, `PREEMPT_SHORT`,
/// `DELAY_DEQUEUE`, `DELAY_ZERO`) off: lbsim's v6.12 EEVDF code then takes the v6.6 code
/// paths (see the `cfs_rq` module for the one remaining difference, the tie-break among
/// equal deadlines).
pub fn v6_6(features: Features) -> Features {
    features
        .with(RqFeat::PlaceRelDeadline, false)
        .with(RqFeat::PreemptShort, false)
        .with(RqFeat::DelayDequeue, false)
        .with(RqFeat::DelayZero, false)
}

const fn int(unit: Unit, default: IntDefault, min: u64, max: u64) -> Kind {
    Kind::Int(IntDef {
        unit,
        default,
        min,
        max,
        allowed: &[],
    })
}

const fn tunable(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    doc: &'static str,
    origin: Origin,
) -> ParamDef {
    ParamDef {
        name,
        aliases,
        kind,
        doc,
        owner: Owner::Rq,
        origin,
    }
}

const ALL_VERSIONS: Origin = Origin::kernel("v6.1, v6.6, v6.12");
const LEGACY: Origin = Origin::kernel("v6.1 (legacy CFS only)");
const U32: u64 = u32::MAX as u64;

/// The fair-class tunables, with their debugfs names, in the order `lbsim features` prints
/// them. The storage is [`crate::Tunables`].
pub const TUNABLES: &[ParamDef] = &[
    tunable(
        "sched_policy",
        &[],
        Kind::Choice(ChoiceDef {
            values: &["eevdf", "cfs"],
            default: 0,
            numbered: false,
        }),
        "The per-runqueue pick: EEVDF (v6.6-v6.12) or the legacy CFS pick of v6.1.",
        Origin::LbsimModel,
    ),
    tunable(
        "tunable_scaling",
        &["sched_tunable_scaling"],
        Kind::Choice(ChoiceDef {
            values: &["none", "log", "linear"],
            default: 1,
            numbered: true,
        }),
        "How the CPU count scales the slice tunables (enum sched_tunable_scaling).",
        ALL_VERSIONS,
    ),
    tunable(
        "base_slice_ns",
        &["sched_base_slice_ns"],
        int(
            Unit::Ns,
            IntDefault::Scaled(NORMALIZED_BASE_SLICE_NS),
            1,
            U32,
        ),
        "sysctl_sched_base_slice: the EEVDF request size.",
        Origin::kernel("v6.6, v6.12"),
    ),
    tunable(
        "latency_ns",
        &["sched_latency_ns"],
        int(Unit::Ns, IntDefault::Scaled(NORMALIZED_LATENCY_NS), 1, U32),
        "sysctl_sched_latency: the CFS period for up to sched_nr_latency tasks.",
        LEGACY,
    ),
    tunable(
        "min_granularity_ns",
        &["sched_min_granularity_ns"],
        int(
            Unit::Ns,
            IntDefault::Scaled(NORMALIZED_MIN_GRANULARITY_NS),
            1,
            U32,
        ),
        "sysctl_sched_min_granularity: the smallest CFS slice.",
        LEGACY,
    ),
    tunable(
        "idle_min_granularity_ns",
        &["sched_idle_min_granularity_ns"],
        int(Unit::Ns, IntDefault::Value(750_000), 0, U32),
        "sysctl_sched_idle_min_granularity: the smallest CFS slice of a SCHED_IDLE task (not scaled).",
        LEGACY,
    ),
    tunable(
        "wakeup_granularity_ns",
        &["sched_wakeup_granularity_ns"],
        int(
            Unit::Ns,
            IntDefault::Scaled(NORMALIZED_WAKEUP_GRANULARITY_NS),
            0,
            U32,
        ),
        "sysctl_sched_wakeup_granularity: how far ahead a waking task must be to preempt.",
        LEGACY,
    ),
    tunable(
        "sched_nr_latency",
        &[],
        int(Unit::Count, IntDefault::Value(8), 1, U32),
        "sched_nr_latency: the task count beyond which the CFS period stretches.",
        LEGACY,
    ),
    tunable(
        "child_runs_first",
        &["sched_child_runs_first"],
        int(Unit::Bool, IntDefault::Value(0), 0, 1),
        "sysctl_sched_child_runs_first: task_fork_fair() runs a forked child before its parent.",
        LEGACY,
    ),
    tunable(
        "migration_cost_ns",
        &["sched_migration_cost_ns"],
        int(Unit::Ns, IntDefault::Value(500_000), 0, U32),
        "sysctl_sched_migration_cost: a task that ran this recently is cache hot (task_hot()).",
        ALL_VERSIONS,
    ),
    tunable(
        "nr_migrate",
        &["sched_nr_migrate"],
        int(Unit::Count, IntDefault::Value(32), 1, U32),
        "sysctl_sched_nr_migrate: the most tasks one detach_tasks() pass moves.",
        ALL_VERSIONS,
    ),
    tunable(
        "sched_autogroup_enabled",
        &["kernel.sched_autogroup_enabled"],
        int(Unit::Bool, IntDefault::Value(1), 0, 1),
        "sysctl_sched_autogroup_enabled: a task of a session (session=N) in the root cgroup runs in its session's autogroup (on, as distributions ship CONFIG_SCHED_AUTOGROUP).",
        Origin::kernel("v2.6.38 and later (every profile)"),
    ),
    tunable(
        "hz",
        &[],
        Kind::Int(IntDef {
            unit: Unit::Hz,
            default: IntDefault::Value(250),
            min: 100,
            max: 1000,
            allowed: &[100, 250, 300, 1000],
        }),
        "CONFIG_HZ: the tick rate (250 is the Kconfig and arm64 defconfig default).",
        ALL_VERSIONS,
    ),
    tunable(
        "nr_cpus",
        &[],
        int(Unit::Count, IntDefault::NrCpus, 1, U32),
        "The CPU count the slice tunables are scaled for (get_update_sysctl_factor()).",
        ALL_VERSIONS,
    ),
];
