//! The sched features registry (`/sys/kernel/debug/sched/features`) and the fair-class tunables.
//!
//! Follows kernel/sched/features.h of v6.6 and v6.12 (their union, in kernel order), plus the
//! legacy-CFS features of v6.1 that lbsim's `sched_policy=cfs` pick reads, plus lbsim's experiment
//! switches for the seed patches (docs: `shared/EXPERIMENTS.md`). Printing follows debug.c:
//! `sched_feat_show()` (one line, `NO_` before disabled features); parsing follows
//! `sched_feat_write()` (`NO_X` clears X; names are case-sensitive), extended to a comma list.
//!
//! Tunables follow fair.c: `get_update_sysctl_factor()` / `update_sysctl()` (the LOG scaling
//! `1 + ilog2(min(ncpus, 8))` applied to `base_slice_ns`, and in v6.1 to `latency_ns`,
//! `min_granularity_ns` and `wakeup_granularity_ns`), with the debugfs names of
//! `/sys/kernel/debug/sched/`.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

macro_rules! sched_feats {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $default:literal, $origin:literal; )*) => {
        /// One sched feature. The discriminant is its bit in [`Features`] and its position in
        /// the printed list (kernel order).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum SchedFeat {
            $( $(#[$doc])* $variant, )*
        }

        impl SchedFeat {
            /// Every feature, in kernel order.
            pub const ALL: &'static [SchedFeat] = &[$(SchedFeat::$variant),*];

            /// The kernel name (as printed in `/sys/kernel/debug/sched/features`).
            pub const fn name(self) -> &'static str {
                match self { $(SchedFeat::$variant => $name,)* }
            }

            /// The default: `SCHED_FEAT(NAME, default)` in the kernel version it comes from,
            /// or the default lbsim gives an experiment switch.
            pub const fn default_enabled(self) -> bool {
                match self { $(SchedFeat::$variant => $default,)* }
            }

            /// Where the feature comes from: which features.h carries it, or `lbsim`.
            pub const fn origin(self) -> &'static str {
                match self { $(SchedFeat::$variant => $origin,)* }
            }
        }
    };
}

sched_feats! {
    /// v6.1 place_entity(): only give sleepers half a latency of credit.
    GentleFairSleepers = "GENTLE_FAIR_SLEEPERS", true, "v6.1 (legacy CFS only)";
    /// v6.1 place_entity(): place a forked task one vslice ahead of min_vruntime.
    StartDebit = "START_DEBIT", true, "v6.1 (legacy CFS only)";
    /// EEVDF place_entity(): preserve lag across sleep+wake (placement strategy #1).
    PlaceLag = "PLACE_LAG", true, "v6.6, v6.12";
    /// EEVDF place_entity(): a new task starts with half a slice of deadline.
    PlaceDeadlineInitial = "PLACE_DEADLINE_INITIAL", true, "v6.6, v6.12";
    /// EEVDF: keep the relative virtual deadline across a non-sleep dequeue (migration).
    PlaceRelDeadline = "PLACE_REL_DEADLINE", true, "v6.12";
    /// EEVDF pick_eevdf(): keep curr until it has used its slice or lost eligibility.
    RunToParity = "RUN_TO_PARITY", true, "v6.6, v6.12";
    /// EEVDF: a waking task with a shorter slice cancels curr's slice protection.
    PreemptShort = "PREEMPT_SHORT", true, "v6.12";
    /// Pick the last-woken task if it is eligible (wakeup sets the `next` buddy).
    NextBuddy = "NEXT_BUDDY", false, "v6.1, v6.6, v6.12";
    /// v6.1: prefer the task preempted by a wakeup (the `last` buddy).
    LastBuddy = "LAST_BUDDY", true, "v6.1 (legacy CFS only)";
    /// task_hot(): buddies are cache hot.
    CacheHotBuddy = "CACHE_HOT_BUDDY", true, "v6.1, v6.6, v6.12";
    /// Keep a task that sleeps with negative lag queued until it is picked or woken.
    DelayDequeue = "DELAY_DEQUEUE", true, "v6.12";
    /// Clip positive lag to 0 when a delayed dequeue completes or the task is requeued.
    DelayZero = "DELAY_ZERO", true, "v6.12";
    /// Allow wakeup-time preemption of the current task.
    WakeupPreemption = "WAKEUP_PREEMPTION", true, "v6.1, v6.6, v6.12";
    /// High-resolution tick for fair slices (not modelled: lbsim ticks at HZ).
    Hrtick = "HRTICK", false, "v6.1, v6.6, v6.12";
    /// High-resolution tick for deadline tasks (not modelled).
    HrtickDl = "HRTICK_DL", false, "v6.1, v6.6, v6.12";
    /// Let the periodic tick run alongside hrtick (not modelled).
    DoubleTick = "DOUBLE_TICK", false, "v6.1, v6.6, v6.12";
    /// Remove irq/steal time from CPU capacity (scale_rt_capacity()).
    NontaskCapacity = "NONTASK_CAPACITY", true, "v6.1, v6.6, v6.12";
    /// Queue remote wakeups on the target CPU's wake list (the wake-up IPI).
    TtwuQueue = "TTWU_QUEUE", true, "v6.1, v6.6, v6.12";
    /// select_idle_cpu(): proportional scan limit (removed after v6.7).
    SisProp = "SIS_PROP", false, "v6.1, v6.6";
    /// select_idle_cpu(): scan budget from the LLC's utilization.
    SisUtil = "SIS_UTIL", true, "v6.1, v6.6, v6.12";
    /// Debug: warn on double update_rq_clock() (not modelled).
    WarnDoubleClock = "WARN_DOUBLE_CLOCK", false, "v6.1, v6.6, v6.12";
    /// RT push by IPI (rt class, not modelled).
    RtPushIpi = "RT_PUSH_IPI", true, "v6.1, v6.6, v6.12";
    /// RT runtime sharing (rt class, not modelled).
    RtRuntimeShare = "RT_RUNTIME_SHARE", false, "v6.1, v6.6, v6.12";
    /// detach_tasks(): skip tasks whose load is tiny relative to nr_balance_failed.
    LbMin = "LB_MIN", false, "v6.1, v6.6, v6.12";
    /// Age a migrating task's load to the destination's clock (set_task_rq_fair()).
    AttachAgeLoad = "ATTACH_AGE_LOAD", true, "v6.1, v6.6, v6.12";
    /// wake_affine_idle().
    WaIdle = "WA_IDLE", true, "v6.1, v6.6, v6.12";
    /// wake_affine_weight().
    WaWeight = "WA_WEIGHT", true, "v6.1, v6.6, v6.12";
    /// wake_affine_weight(): bias towards the previous CPU by half the imbalance_pct.
    WaBias = "WA_BIAS", true, "v6.1, v6.6, v6.12";
    /// Use util_est in cpu_util() and enqueue/dequeue accounting.
    UtilEst = "UTIL_EST", true, "v6.1, v6.6, v6.12";
    /// util_est: increases are immediate (always on from v6.8/v6.9).
    UtilEstFastup = "UTIL_EST_FASTUP", true, "v6.1, v6.6";
    /// Debug: warn about long need_resched latencies (not modelled).
    LatencyWarn = "LATENCY_WARN", false, "v6.1, v6.6, v6.12";
    /// v6.1 sched_slice(): use the rq-wide h_nr_running for the period.
    AltPeriod = "ALT_PERIOD", true, "v6.1 (legacy CFS only)";
    /// v6.1 sched_slice(): floor the slice at min_granularity.
    BaseSlice = "BASE_SLICE", true, "v6.1 (legacy CFS only)";
    /// Block nohz tick stop while CFS bandwidth is in use (bandwidth not modelled).
    HzBw = "HZ_BW", true, "v6.6";
    /// find_busiest_queue(), migrate_util: skip a runqueue with nr_running <= 1 (seed 000).
    LbUtilSkipSingle = "LB_UTIL_SKIP_SINGLE", true, "lbsim (merged v5.7)";
    /// detach_tasks(): too big only if (load >> nr_balance_failed) > imbalance (seed 001).
    LbRelaxByFailed = "LB_RELAX_BY_FAILED", true, "lbsim (merged v5.10)";
    /// A busy balance interval is one jiffy shorter (seed 001).
    LbBusyIntervalSkew = "LB_BUSY_INTERVAL_SKEW", true, "lbsim (merged v5.10)";
    /// should_we_balance(), newly idle: give up with a runnable task or ttwu_pending (seed 002).
    NewidleBailOnPending = "NEWIDLE_BAIL_ON_PENDING", true, "lbsim (merged v6.0)";
    /// cpu_load(): tip the average towards load.weight when it lags (seed 003, never merged).
    LbTipAvgHigh = "LB_TIP_AVG_HIGH", false, "lbsim (never merged)";
    /// Reserve an idle CPU chosen for a wake-up until the task runs (seed 003, never merged).
    IdleReserve = "IDLE_RESERVE", false, "lbsim (never merged)";
    /// prefer_sibling: busiest lacks capacity only if it has > 1 task more (seed 004).
    PreferSiblingNrDiff = "PREFER_SIBLING_NR_DIFF", true, "lbsim (merged)";
    /// post_init_entity_util_avg(): a new task's runnable_avg starts at its util_avg, not
    /// at the CPU's capacity (e21cf43406a1; `NO_` is the v5.7 kernel of seed 000).
    RunnableAvgInitUtil = "RUNNABLE_AVG_INIT_UTIL", true, "lbsim (merged v5.8)";
    /// find_busiest_queue(), migrate_util: read `cpu_util_cfs_boost()` (max of util and
    /// runnable, 7d0583cf9ec7 "runnable boosting"), not `cpu_util_cfs()` (`NO_`: v5.7-v6.4).
    LbUtilRunnableBoost = "LB_UTIL_RUNNABLE_BOOST", true, "lbsim (merged v6.5)";
    /// load_balance(): only migrate_task failures force an active balance (e9b9734b7465,
    /// "Reduce cases for active balance"); `NO_` is the v5.6-v5.11 rule (any type of failure).
    LbReduceActiveBalance = "LB_REDUCE_ACTIVE_BALANCE", true, "lbsim (merged v5.12)";
}

const _: () = assert!(SchedFeat::ALL.len() <= 64, "Features is a u64 bitset");

/// A set of enabled sched features: a `Copy` bitset, bit `f as u8` for feature `f`.
///
/// `Default` gives every feature its default (v6.12 defaults; the v6.1 legacy-CFS features at
/// their v6.1 defaults; the v6.6-only features at their v6.6 defaults; lbsim's switches as in
/// EXPERIMENTS.md). See [`Features::v6_6`] for the v6.6 set.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Features(u64);

impl Features {
    /// No feature enabled.
    pub const NONE: Features = Features(0);

    /// The defaults of every feature.
    pub fn defaults() -> Features {
        let mut bits = 0u64;
        for &f in SchedFeat::ALL {
            if f.default_enabled() {
                bits |= 1 << f as u8;
            }
        }
        Features(bits)
    }

    /// The v6.6 defaults: as [`Features::defaults`] with the features v6.6 did not have
    /// (`PLACE_REL_DEADLINE`, `PREEMPT_SHORT`, `DELAY_DEQUEUE`, `DELAY_ZERO`) off.
    ///
    /// With these off, lbsim's v6.12 EEVDF code takes the v6.6 code paths (see the `cfs_rq`
    /// module for the one remaining difference, the tie-break among equal deadlines).
    pub fn v6_6() -> Features {
        Features::defaults()
            .with(SchedFeat::PlaceRelDeadline, false)
            .with(SchedFeat::PreemptShort, false)
            .with(SchedFeat::DelayDequeue, false)
            .with(SchedFeat::DelayZero, false)
    }

    /// `sched_feat(X)`.
    #[inline]
    pub fn enabled(self, f: SchedFeat) -> bool {
        self.0 & (1 << f as u8) != 0
    }

    /// A copy with `f` switched on or off.
    #[must_use]
    pub fn with(self, f: SchedFeat, on: bool) -> Features {
        let bit = 1u64 << f as u8;
        Features(if on { self.0 | bit } else { self.0 & !bit })
    }

    /// Switch `f` on or off.
    pub fn set(&mut self, f: SchedFeat, on: bool) {
        *self = self.with(f, on);
    }

    /// Apply a list of kernel-style writes: `NAME` enables, `NO_NAME` disables. Items are
    /// separated by commas or whitespace; empty items are ignored. Names are case-sensitive,
    /// as in `sched_feat_write()`. On error nothing is changed.
    pub fn apply(&mut self, list: &str) -> Result<(), FeatureError> {
        let mut out = *self;
        for item in list.split(|c: char| c == ',' || c.is_whitespace()) {
            if item.is_empty() {
                continue;
            }
            let (on, name) = match item.strip_prefix("NO_") {
                Some(rest) => (false, rest),
                None => (true, item),
            };
            let f = SchedFeat::from_name(name).ok_or_else(|| FeatureError::Unknown {
                name: item.to_string(),
                valid: SchedFeat::ALL.iter().map(|f| f.name()).collect(),
            })?;
            out.set(f, on);
        }
        *self = out;
        Ok(())
    }

    /// The exact contents of `/sys/kernel/debug/sched/features`: every name followed by a
    /// space, `NO_` before the disabled ones, then a newline (debug.c: `sched_feat_show()`).
    pub fn debugfs_text(self) -> String {
        let mut s = String::with_capacity(SchedFeat::ALL.len() * 20);
        for &f in SchedFeat::ALL {
            if !self.enabled(f) {
                s.push_str("NO_");
            }
            s.push_str(f.name());
            s.push(' ');
        }
        s.push('\n');
        s
    }
}

impl SchedFeat {
    /// The feature with this exact kernel name (without `NO_`).
    pub fn from_name(name: &str) -> Option<SchedFeat> {
        SchedFeat::ALL.iter().copied().find(|f| f.name() == name)
    }
}

impl Default for Features {
    fn default() -> Features {
        Features::defaults()
    }
}

/// One line, space separated, `NO_` before disabled features (the debugfs text without the
/// trailing space and newline).
impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.debugfs_text();
        f.write_str(text.trim_end())
    }
}

impl fmt::Debug for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Features({self})")
    }
}

/// The defaults, then the list applied (see [`Features::apply`]).
impl FromStr for Features {
    type Err = FeatureError;

    fn from_str(s: &str) -> Result<Features, FeatureError> {
        let mut f = Features::defaults();
        f.apply(s)?;
        Ok(f)
    }
}

/// A bad sched feature write.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FeatureError {
    /// The name (after an optional `NO_`) is not a sched feature.
    #[error("unknown sched feature `{name}`; valid features (prefix NO_ to disable): {}", valid.join(", "))]
    Unknown {
        /// The item as written.
        name: String,
        /// Every valid name, in kernel order.
        valid: Vec<&'static str>,
    },
}

/// Which per-runqueue pick the fair class uses.
///
/// The kernel has no switch for this: v6.6 replaced the CFS pick by EEVDF outright. lbsim
/// keeps both because older experiments ran on CFS, and selects with the tunable
/// `sched_policy` rather than a fake sched feature, so the feature list stays the kernel's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SchedPolicy {
    /// EEVDF, as v6.6–v6.12 (the default).
    #[default]
    Eevdf,
    /// The legacy CFS pick of v6.1 (min vruntime, sched_latency/min_granularity slices,
    /// wakeup_granularity preemption).
    Cfs,
}

impl SchedPolicy {
    fn name(self) -> &'static str {
        match self {
            SchedPolicy::Eevdf => "eevdf",
            SchedPolicy::Cfs => "cfs",
        }
    }
}

/// `enum sched_tunable_scaling`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TunableScaling {
    /// `SCHED_TUNABLESCALING_NONE` (0): factor 1.
    None,
    /// `SCHED_TUNABLESCALING_LOG` (1, the default): factor `1 + ilog2(min(ncpus, 8))`.
    #[default]
    Log,
    /// `SCHED_TUNABLESCALING_LINEAR` (2): factor `min(ncpus, 8)`.
    Linear,
}

impl TunableScaling {
    /// Follows fair.c: `get_update_sysctl_factor()`.
    pub fn factor(self, nr_cpus: u32) -> u64 {
        let cpus = nr_cpus.clamp(1, 8);
        match self {
            TunableScaling::None => 1,
            TunableScaling::Linear => u64::from(cpus),
            TunableScaling::Log => 1 + u64::from(cpus.ilog2()),
        }
    }
}

/// Kernel default `normalized_sysctl_sched_base_slice` (v6.6–v6.12: 0.75 ms).
pub const NORMALIZED_BASE_SLICE_NS: u64 = 750_000;
/// v6.1 default `normalized_sysctl_sched_latency` (6 ms).
pub const NORMALIZED_LATENCY_NS: u64 = 6_000_000;
/// v6.1 default `normalized_sysctl_sched_min_granularity` (0.75 ms).
pub const NORMALIZED_MIN_GRANULARITY_NS: u64 = 750_000;
/// v6.1 default `normalized_sysctl_sched_wakeup_granularity` (1 ms).
pub const NORMALIZED_WAKEUP_GRANULARITY_NS: u64 = 1_000_000;

/// The fair-class tunables, with their debugfs names.
///
/// `base_slice_ns`, `latency_ns`, `min_granularity_ns` and `wakeup_granularity_ns` hold the
/// effective (scaled) values the scheduler reads, `sysctl_sched_*`; they start as
/// `factor(tunable_scaling, nr_cpus) * normalized default`, as `sched_init_granularity()` sets
/// them at boot.
///
/// `hz` defaults to 250: `CONFIG_HZ` defaults to 250 in kernel/Kconfig.hz and arm64 defconfig
/// keeps it, and the seed machines are arm64 boards and servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunables {
    nr_cpus: u32,
    normalized_base_slice_ns: u64,
    normalized_latency_ns: u64,
    normalized_min_granularity_ns: u64,
    normalized_wakeup_granularity_ns: u64,
    /// `sched_policy` (lbsim): EEVDF or the legacy CFS pick.
    pub sched_policy: SchedPolicy,
    /// `tunable_scaling`: how the CPU count scales the slice tunables.
    pub tunable_scaling: TunableScaling,
    /// `base_slice_ns` (`sysctl_sched_base_slice`, EEVDF).
    pub base_slice_ns: u64,
    /// `latency_ns` (`sysctl_sched_latency`, legacy CFS).
    pub latency_ns: u64,
    /// `min_granularity_ns` (`sysctl_sched_min_granularity`, legacy CFS).
    pub min_granularity_ns: u64,
    /// `idle_min_granularity_ns` (`sysctl_sched_idle_min_granularity`, legacy CFS; not scaled).
    pub idle_min_granularity_ns: u64,
    /// `wakeup_granularity_ns` (`sysctl_sched_wakeup_granularity`, legacy CFS).
    pub wakeup_granularity_ns: u64,
    /// `sched_nr_latency` (legacy CFS): the task count beyond which the period stretches.
    /// 8 at boot; the kernel recomputes it only when `tunable_scaling` is written.
    pub sched_nr_latency: u64,
    /// `child_runs_first` (`sysctl_sched_child_runs_first`, legacy CFS task_fork_fair()).
    pub child_runs_first: bool,
    /// `migration_cost_ns` (`sysctl_sched_migration_cost`).
    pub migration_cost_ns: u64,
    /// `nr_migrate` (`sysctl_sched_nr_migrate`, `SCHED_NR_MIGRATE_BREAK`).
    pub nr_migrate: u32,
    /// `hz` (`CONFIG_HZ`): 100, 250, 300 or 1000.
    pub hz: u32,
}

/// The canonical tunable names, in printing order.
pub const TUNABLE_NAMES: [&str; 13] = [
    "sched_policy",
    "tunable_scaling",
    "base_slice_ns",
    "latency_ns",
    "min_granularity_ns",
    "idle_min_granularity_ns",
    "wakeup_granularity_ns",
    "sched_nr_latency",
    "child_runs_first",
    "migration_cost_ns",
    "nr_migrate",
    "hz",
    "nr_cpus",
];

impl Tunables {
    /// The boot-time values for a machine with `nr_cpus` online CPUs
    /// (fair.c: `sched_init_granularity()` → `update_sysctl()`).
    pub fn new(nr_cpus: u32) -> Tunables {
        let mut t = Tunables {
            nr_cpus: nr_cpus.max(1),
            normalized_base_slice_ns: NORMALIZED_BASE_SLICE_NS,
            normalized_latency_ns: NORMALIZED_LATENCY_NS,
            normalized_min_granularity_ns: NORMALIZED_MIN_GRANULARITY_NS,
            normalized_wakeup_granularity_ns: NORMALIZED_WAKEUP_GRANULARITY_NS,
            sched_policy: SchedPolicy::Eevdf,
            tunable_scaling: TunableScaling::Log,
            base_slice_ns: 0,
            latency_ns: 0,
            min_granularity_ns: 0,
            idle_min_granularity_ns: 750_000,
            wakeup_granularity_ns: 0,
            sched_nr_latency: 8,
            child_runs_first: false,
            migration_cost_ns: 500_000,
            nr_migrate: 32,
            hz: 250,
        };
        t.update_sysctl();
        t
    }

    /// The number of CPUs the scaling factor was computed for.
    pub fn nr_cpus(&self) -> u32 {
        self.nr_cpus
    }

    /// The current scaling factor.
    pub fn factor(&self) -> u64 {
        self.tunable_scaling.factor(self.nr_cpus)
    }

    /// Follows fair.c: `update_sysctl()`: `sysctl_X = factor * normalized_sysctl_X`.
    fn update_sysctl(&mut self) {
        let factor = self.factor();
        self.base_slice_ns = factor * self.normalized_base_slice_ns;
        self.latency_ns = factor * self.normalized_latency_ns;
        self.min_granularity_ns = factor * self.normalized_min_granularity_ns;
        self.wakeup_granularity_ns = factor * self.normalized_wakeup_granularity_ns;
    }

    /// `TICK_NSEC`: `(NSEC_PER_SEC + HZ/2) / HZ`.
    pub fn tick_nsec(&self) -> u64 {
        (1_000_000_000 + u64::from(self.hz) / 2) / u64::from(self.hz)
    }

    /// Set a tunable by name, as `--set KEY=VALUE` does.
    ///
    /// Writing a scaled tunable sets its effective value (as a debugfs write does) and its
    /// normalized value to `value / factor`. Writing `tunable_scaling` re-applies the scaling to
    /// the normalized values as at boot (`update_sysctl()`) and recomputes `sched_nr_latency`
    /// (`sched_update_scaling()`). The `sched_`-prefixed sysctl spellings (`sched_latency_ns`,
    /// ...) are accepted as aliases. On error nothing changes.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), TunableError> {
        let key = canonical_key(key).ok_or_else(|| TunableError::UnknownKey {
            key: key.to_string(),
            valid: TUNABLE_NAMES.to_vec(),
        })?;
        let bad = |expected: &'static str| TunableError::InvalidValue {
            key: key.to_string(),
            value: value.to_string(),
            expected,
        };
        let int = |expected: &'static str| value.trim().parse::<u64>().map_err(|_| bad(expected));
        let positive = |expected: &'static str| {
            Some(int(expected)?)
                .filter(|&v| v > 0)
                .ok_or_else(|| bad(expected))
        };
        let factor = self.factor();
        match key {
            "sched_policy" => {
                self.sched_policy = match value.trim() {
                    "eevdf" => SchedPolicy::Eevdf,
                    "cfs" => SchedPolicy::Cfs,
                    _ => return Err(bad("eevdf or cfs")),
                }
            }
            "tunable_scaling" => {
                self.tunable_scaling = match value.trim() {
                    "0" | "none" => TunableScaling::None,
                    "1" | "log" => TunableScaling::Log,
                    "2" | "linear" => TunableScaling::Linear,
                    _ => return Err(bad("0 (none), 1 (log) or 2 (linear)")),
                };
                self.update_sysctl();
                self.sched_nr_latency = self.latency_ns.div_ceil(self.min_granularity_ns.max(1));
            }
            "base_slice_ns" => {
                let v = positive("a positive number of nanoseconds")?;
                self.base_slice_ns = v;
                self.normalized_base_slice_ns = v / factor;
            }
            "latency_ns" => {
                let v = positive("a positive number of nanoseconds")?;
                self.latency_ns = v;
                self.normalized_latency_ns = v / factor;
            }
            "min_granularity_ns" => {
                let v = positive("a positive number of nanoseconds")?;
                self.min_granularity_ns = v;
                self.normalized_min_granularity_ns = v / factor;
            }
            "idle_min_granularity_ns" => self.idle_min_granularity_ns = int("nanoseconds")?,
            "wakeup_granularity_ns" => {
                let v = int("nanoseconds")?;
                self.wakeup_granularity_ns = v;
                self.normalized_wakeup_granularity_ns = v / factor;
            }
            "sched_nr_latency" => {
                let v = positive("a positive task count")?;
                self.sched_nr_latency = v;
            }
            "child_runs_first" => {
                self.child_runs_first = match value.trim() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(bad("0 or 1")),
                }
            }
            "migration_cost_ns" => self.migration_cost_ns = int("nanoseconds")?,
            "nr_migrate" => {
                let v = int("a positive task count")?;
                self.nr_migrate = u32::try_from(v)
                    .ok()
                    .filter(|&v| v > 0)
                    .ok_or_else(|| bad("a positive task count"))?;
            }
            "hz" => {
                self.hz = match int("100, 250, 300 or 1000")? {
                    v @ (100 | 250 | 300 | 1000) => v as u32,
                    _ => return Err(bad("100, 250, 300 or 1000")),
                }
            }
            "nr_cpus" => {
                let v = int("a positive CPU count")?;
                self.nr_cpus = u32::try_from(v)
                    .ok()
                    .filter(|&v| v > 0)
                    .ok_or_else(|| bad("a positive CPU count"))?;
                self.update_sysctl();
            }
            _ => unreachable!("canonical_key() returned an unhandled name {key}"),
        }
        Ok(())
    }

    /// The value of a tunable as [`Tunables::set`] accepts it.
    pub fn get(&self, key: &str) -> Result<String, TunableError> {
        let key = canonical_key(key).ok_or_else(|| TunableError::UnknownKey {
            key: key.to_string(),
            valid: TUNABLE_NAMES.to_vec(),
        })?;
        Ok(match key {
            "sched_policy" => self.sched_policy.name().to_string(),
            "tunable_scaling" => match self.tunable_scaling {
                TunableScaling::None => "0",
                TunableScaling::Log => "1",
                TunableScaling::Linear => "2",
            }
            .to_string(),
            "base_slice_ns" => self.base_slice_ns.to_string(),
            "latency_ns" => self.latency_ns.to_string(),
            "min_granularity_ns" => self.min_granularity_ns.to_string(),
            "idle_min_granularity_ns" => self.idle_min_granularity_ns.to_string(),
            "wakeup_granularity_ns" => self.wakeup_granularity_ns.to_string(),
            "sched_nr_latency" => self.sched_nr_latency.to_string(),
            "child_runs_first" => u8::from(self.child_runs_first).to_string(),
            "migration_cost_ns" => self.migration_cost_ns.to_string(),
            "nr_migrate" => self.nr_migrate.to_string(),
            "hz" => self.hz.to_string(),
            "nr_cpus" => self.nr_cpus.to_string(),
            _ => unreachable!("canonical_key() returned an unhandled name {key}"),
        })
    }

    /// Parse and apply `KEY=VALUE`.
    pub fn set_assignment(&mut self, assignment: &str) -> Result<(), TunableError> {
        let (k, v) = assignment
            .split_once('=')
            .ok_or_else(|| TunableError::Malformed {
                text: assignment.to_string(),
            })?;
        self.set(k.trim(), v)
    }
}

/// The fair-class parameters one runqueue reads on its hot paths: a `Copy` snapshot of the
/// features and of the tunables, so that every per-rq operation sees one consistent set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedParams {
    /// `sched_feat()`.
    pub features: Features,
    /// EEVDF or legacy CFS.
    pub policy: SchedPolicy,
    /// `sysctl_sched_base_slice`.
    pub base_slice_ns: u64,
    /// `TICK_NSEC`.
    pub tick_nsec: u64,
    /// `sysctl_sched_latency` (legacy CFS).
    pub latency_ns: u64,
    /// `sysctl_sched_min_granularity` (legacy CFS).
    pub min_granularity_ns: u64,
    /// `sysctl_sched_idle_min_granularity` (legacy CFS).
    pub idle_min_granularity_ns: u64,
    /// `sysctl_sched_wakeup_granularity` (legacy CFS).
    pub wakeup_granularity_ns: u64,
    /// `sched_nr_latency` (legacy CFS).
    pub sched_nr_latency: u64,
    /// `sysctl_sched_child_runs_first` (legacy CFS).
    pub child_runs_first: bool,
    /// `sysctl_sched_migration_cost`.
    pub migration_cost_ns: u64,
}

impl SchedParams {
    /// The snapshot of `features` and `tunables`.
    pub fn new(features: Features, tunables: &Tunables) -> SchedParams {
        SchedParams {
            features,
            policy: tunables.sched_policy,
            base_slice_ns: tunables.base_slice_ns,
            tick_nsec: tunables.tick_nsec(),
            latency_ns: tunables.latency_ns,
            min_granularity_ns: tunables.min_granularity_ns,
            idle_min_granularity_ns: tunables.idle_min_granularity_ns,
            wakeup_granularity_ns: tunables.wakeup_granularity_ns,
            sched_nr_latency: tunables.sched_nr_latency,
            child_runs_first: tunables.child_runs_first,
            migration_cost_ns: tunables.migration_cost_ns,
        }
    }

    /// `sched_feat(f)`.
    #[inline]
    pub fn feat(&self, f: SchedFeat) -> bool {
        self.features.enabled(f)
    }
}

fn canonical_key(key: &str) -> Option<&'static str> {
    let key = key.trim();
    let alias = match key {
        "sched_latency_ns" => Some("latency_ns"),
        "sched_min_granularity_ns" => Some("min_granularity_ns"),
        "sched_idle_min_granularity_ns" => Some("idle_min_granularity_ns"),
        "sched_wakeup_granularity_ns" => Some("wakeup_granularity_ns"),
        "sched_base_slice_ns" => Some("base_slice_ns"),
        "sched_migration_cost_ns" => Some("migration_cost_ns"),
        "sched_nr_migrate" => Some("nr_migrate"),
        "sched_tunable_scaling" => Some("tunable_scaling"),
        "sched_child_runs_first" => Some("child_runs_first"),
        _ => None,
    };
    alias.or_else(|| TUNABLE_NAMES.iter().copied().find(|&n| n == key))
}

/// One `name=value` per line, in [`TUNABLE_NAMES`] order.
impl fmt::Display for Tunables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for name in TUNABLE_NAMES {
            let v = self.get(name).map_err(|_| fmt::Error)?;
            writeln!(f, "{name}={v}")?;
        }
        Ok(())
    }
}

/// A bad tunable write.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TunableError {
    /// No tunable has this name.
    #[error("unknown tunable `{key}`; valid tunables: {}", valid.join(", "))]
    UnknownKey {
        /// The name as written.
        key: String,
        /// Every valid name.
        valid: Vec<&'static str>,
    },
    /// The value does not parse or is out of range for this tunable.
    #[error("invalid value `{value}` for tunable `{key}`: expected {expected}")]
    InvalidValue {
        /// The canonical tunable name.
        key: String,
        /// The value as written.
        value: String,
        /// What the tunable accepts.
        expected: &'static str,
    },
    /// An assignment without `=`.
    #[error("expected KEY=VALUE, got `{text}`")]
    Malformed {
        /// The text as written.
        text: String,
    },
}

#[cfg(test)]
mod tests;
