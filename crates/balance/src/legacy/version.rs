//! The kernel release a [`super::LegacyBalancer`] follows, and the changes between v4.6 and
//! v5.4 that it decides (KERNEL-HISTORY §1 and §2): one parameter, not one copy of the code
//! per release.

/// A mainline release from v4.6 to v5.4 (the balancer before "sched/fair: Rework
/// load_balance()", 0b0695f2b34a, v5.5).
///
/// Stored as one integer, `major << 8 | minor`, whose order is the releases' order, so that
/// each predicate below is one comparison with a constant (they run in the balancer's
/// per-group and per-CPU code).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LegacyVersion {
    code: u16,
}

impl LegacyVersion {
    /// v4.6 (seed 003, tip-avg-high).
    pub const V4_6: LegacyVersion = LegacyVersion::from_parts(4, 6);
    /// v4.11 (seed 004, prefer-sibling).
    pub const V4_11: LegacyVersion = LegacyVersion::from_parts(4, 11);
    /// v4.13.
    pub const V4_13: LegacyVersion = LegacyVersion::from_parts(4, 13);
    /// v4.18.
    pub const V4_18: LegacyVersion = LegacyVersion::from_parts(4, 18);
    /// v5.4, the last release before the rework.
    pub const V5_4: LegacyVersion = LegacyVersion::from_parts(5, 4);
    /// The profiles of issue 21 that run this balancer.
    pub const PROFILES: [LegacyVersion; 5] = [
        Self::V4_6,
        Self::V4_11,
        Self::V4_13,
        Self::V4_18,
        Self::V5_4,
    ];

    /// The release `major.minor`, if it is between v4.6 and v5.4 (v4.x ended at 4.20).
    pub const fn new(major: u8, minor: u8) -> Option<LegacyVersion> {
        let ok = match major {
            4 => minor >= 6 && minor <= 20,
            5 => minor <= 4,
            _ => false,
        };
        if ok {
            Some(LegacyVersion::from_parts(major, minor))
        } else {
            None
        }
    }

    /// Parses `"4.6"`, `"5.4"`, ... (a release between v4.6 and v5.4).
    pub fn parse(s: &str) -> Option<LegacyVersion> {
        let (a, b) = s.trim_start_matches('v').split_once('.')?;
        let b = b.split('.').next()?;
        LegacyVersion::new(a.parse().ok()?, b.parse().ok()?)
    }

    /// `(major, minor)`.
    pub const fn get(self) -> (u8, u8) {
        ((self.code >> 8) as u8, self.code as u8)
    }

    const fn from_parts(major: u8, minor: u8) -> LegacyVersion {
        LegacyVersion {
            code: (major as u16) << 8 | minor as u16,
        }
    }

    const fn at_least(self, major: u8, minor: u8) -> bool {
        self.code >= LegacyVersion::from_parts(major, minor).code
    }

    /// v4.7 (cfa10334318d, "Correct unit of load_above_capacity"): calculate_imbalance()
    /// scales `load_above_capacity` by `NICE_0_LOAD / busiest->group_capacity`.
    pub const fn load_above_capacity_scaled(self) -> bool {
        self.at_least(4, 7)
    }

    /// v4.7: the NOHZ accounting of `cpu_load[]` keeps the load at the tick's stop
    /// (cpu_load_update_nohz_start()/_stop(), the `tickless_load` term of cpu_load_update())
    /// and the exit from nohz idle accounts the load found there; v4.6 counted the missed
    /// ticks as load 0.
    pub const fn tickless_load(self) -> bool {
        self.at_least(4, 7)
    }

    /// v4.12 (05b40e057734): prefer_sibling demotes a group only if it has more than one
    /// task more than the local group (before: more than one task).
    pub const fn prefer_sibling_nr_diff(self) -> bool {
        self.at_least(4, 12)
    }

    /// v4.15 ("Search a task from the tail of the queue"): detach_tasks() takes
    /// `cfs_tasks` from the tail and rotates skipped tasks to the head.
    pub const fn detach_from_tail(self) -> bool {
        self.at_least(4, 15)
    }

    /// v4.15 (583ffd99d765): the force_balance shortcut for a local group with capacity
    /// applies to CPU_IDLE as well as CPU_NEWLY_IDLE.
    pub const fn force_balance_any_idle(self) -> bool {
        self.at_least(4, 15)
    }

    /// Which levels have SD_PREFER_SIBLING (read from the child by the parent): SMT and the
    /// levels above MC always; MC from v4.15; every non-NUMA level from v4.20.
    pub const fn mc_prefer_sibling(self) -> bool {
        self.at_least(4, 15)
    }

    /// v4.19: find_busiest_group() returns no group when calculate_imbalance() found 0.
    pub const fn fbg_null_on_zero_imbalance(self) -> bool {
        self.at_least(4, 19)
    }

    /// v4.20 (3b1baa6496e6): `group_misfit_task`.
    pub const fn group_misfit_task(self) -> bool {
        self.at_least(4, 20)
    }

    /// `LB_BIAS`'s default: on up to v4.19, off from v4.20 (fdf5f315d5cf); the feature (and
    /// `rq->cpu_load[]`) is gone from v5.3.
    pub const fn lb_bias_default(self) -> bool {
        !self.at_least(4, 20)
    }

    /// v5.3 (55627e3cd22c and 1c1b8a7b03ef): `rq->cpu_load[]`, source_load()/target_load()
    /// and every `*_idx` are gone; the balancer reads weighted_cpuload() (renamed
    /// cpu_runnable_load()) directly.
    pub const fn has_cpu_load(self) -> bool {
        !self.at_least(5, 3)
    }

    /// Up to v4.20 the SMT level's CPUs get `smt_gain / span_weight` (589 for two threads)
    /// as `capacity_orig` from the generic arch_scale_cpu_capacity(); v5.0 (765d0af19f5f)
    /// removed `smt_gain`.
    pub const fn smt_gain(self) -> bool {
        !self.at_least(5, 0)
    }

    /// v5.3: `load_per_task` is `group_load / sum_h_nr_running` (before, the sum of
    /// weighted_cpuload(), `sum_weighted_load`, which differs from `group_load` when the
    /// load index is not 0).
    pub const fn load_per_task_from_group_load(self) -> bool {
        self.at_least(5, 3)
    }

    /// v5.4 (KERNEL-HISTORY §2.10): out_balanced clears the parent's imbalance flag only
    /// without LBF_ALL_PINNED; a newly idle balance does not double the interval at
    /// out_one_pinned; the interval also resets after a voluntary active balance.
    pub const fn v5_4_load_balance_tail(self) -> bool {
        self.at_least(5, 4)
    }
}

impl LegacyVersion {
    // -----------------------------------------------------------------------------------
    // Wake-up and fork/exec placement (KERNEL-HISTORY §1, §3).

    /// Up to v4.7 record_wakee() runs from task_waking_fair(), which try_to_wake_up() calls
    /// before select_task_rq() whatever the task's affinity; v4.8 removed task_waking_fair()
    /// ("Prepare to fix fairness problems on migration") and select_task_rq_fair() calls
    /// record_wakee() itself, so a task allowed on one CPU no longer flips its waker.
    pub const fn record_wakee_in_task_waking(self) -> bool {
        !self.at_least(4, 8)
    }

    /// v4.9 (3273163c6775, "Let asymmetric CPU configurations balance at wake-up") to v5.6:
    /// `want_affine` also needs `!wake_cap()`.
    pub const fn wake_cap(self) -> bool {
        self.at_least(4, 9)
    }

    /// v4.9 (10e2f1acd010, "Rewrite and improve select_idle_siblings()"):
    /// select_idle_sibling(p, prev, target) with select_idle_core()/_cpu()/_smt() and the
    /// LLC's `has_idle_cores`; before, the walk of sd_llc's domains for a wholly idle group.
    pub const fn sis_rewrite(self) -> bool {
        self.at_least(4, 9)
    }

    /// v4.11 (4c77b18cf8b7, "Make select_idle_cpu() more aggressive"): the v4.9 cut-off
    /// (`avg_idle / 512 < avg_scan_cost` gives up) becomes the feature `SIS_AVG_CPU`, off.
    pub const fn sis_avg_cpu_feature(self) -> bool {
        self.at_least(4, 11)
    }

    /// v4.13 (1ad3aaf3fcd2, "Implement new approach to scale select_idle_cpu()"): `SIS_PROP`
    /// bounds the scan by `avg_idle` over `avg_scan_cost`.
    pub const fn sis_prop(self) -> bool {
        self.at_least(4, 13)
    }

    /// v4.13 (3fed382b46ba, 815abf5af45f): wake_affine() is true for CPUs sharing an LLC and
    /// otherwise compares NUMA nodes; effective_load() is gone.
    pub const fn wake_affine_numa(self) -> bool {
        self.at_least(4, 13)
    }

    /// v4.14 (90001d67be2f, d153b153446f, f2cdd9cc6c97): wake_affine_idle() and
    /// wake_affine_weight() under `WA_IDLE`, `WA_WEIGHT`, `WA_BIAS`.
    pub const fn wake_affine_idle_weight(self) -> bool {
        self.at_least(4, 14)
    }

    /// v4.16: wake_affine_idle()/_weight() return a CPU (wake_affine_idle() wants this and
    /// prev to share the LLC and prefers an idle prev; a tie of wake_affine_weight() stays on
    /// prev, a sync wake-up adding 1 to prev's side), and select_idle_sibling() tries the
    /// task's `recent_used_cpu`, which select_task_rq_fair() sets for the waker.
    pub const fn recent_used_cpu(self) -> bool {
        self.at_least(4, 16)
    }

    /// v4.9 (eaecf41f5abf, "Optimize find_idlest_cpu() when there is no choice"):
    /// find_idlest_cpu() returns a one-CPU group's CPU without scanning it.
    pub const fn find_idlest_cpu_no_choice(self) -> bool {
        self.at_least(4, 9)
    }

    /// v4.10 (6b94780e45c1, "Use load_avg for selecting idlest group", with 6a0b19c0f39a,
    /// "Consider spare capacity in find_idlest_group()", and the fork exemption of the
    /// spare-capacity rule, f519a3f1c6b7 [U: id]): find_idlest_group() compares the
    /// runnable load with an absolute allowance (`NICE_0_LOAD * (imbalance_pct - 100) /
    /// 100`), breaks near-ties with `avg_load` (the cfs_rq's `load_avg`) at
    /// `imbalance_scale`, and (not at fork) prefers the group with the most spare capacity.
    pub const fn find_idlest_group_load_avg(self) -> bool {
        self.at_least(4, 10)
    }

    /// v4.15 (Brendan Jackman's series [U: ids 0d10ab952e99, 6fee85ccbc76, 93f50f90247e,
    /// 18bd1b4bd53a, c976a862ba48; the release from memory, the code read in a v4.18 copy]):
    /// find_idlest_group() starts the local group's loads at `ULONG_MAX` (a local group the
    /// task may not run in no longer wins); the slow path moves into find_idlest_cpu(),
    /// which returns `prev_cpu` when the domain has no allowed CPU, syncs the task's PELT
    /// signal (not at fork) and starts from `new_cpu = cpu`; the CPU pick is
    /// find_idlest_group_cpu().
    pub const fn find_idlest_cpu_slow_path(self) -> bool {
        self.at_least(4, 15)
    }

    /// v4.18 (2c83362734da, "Consider SD_NUMA when selecting the most idle group to schedule
    /// on"): on an `SD_NUMA` domain find_idlest_group() stays local when
    /// `min_runnable_load + imbalance >= this_runnable_load`.
    pub const fn find_idlest_numa_stay_local(self) -> bool {
        self.at_least(4, 18)
    }

    /// v4.20 (c469933e7721, "sched/fair: Fix cpu_util_wake() for 'execl' type workloads",
    /// the function renamed cpu_util_without()): with `UTIL_EST`, the CPU's estimate less
    /// `p`'s own when `p` is queued there (or current); v4.17-v4.19 took the estimate whole.
    pub const fn util_without_queued_est(self) -> bool {
        self.at_least(4, 20)
    }

    /// v5.4 (3c29e651e16d, "Fall back to sched-idle CPU if idle CPU isn't found"):
    /// select_idle_cpu() also takes a CPU running only SCHED_IDLE tasks.
    pub const fn sis_sched_idle(self) -> bool {
        self.at_least(5, 4)
    }
}

impl std::fmt::Display for LegacyVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (major, minor) = self.get();
        write!(f, "{major}.{minor}")
    }
}

/// As the derived form of the two fields printed: `LegacyVersion { major: 4, minor: 6 }`.
impl std::fmt::Debug for LegacyVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (major, minor) = self.get();
        f.debug_struct("LegacyVersion")
            .field("major", &major)
            .field("minor", &minor)
            .finish()
    }
}
