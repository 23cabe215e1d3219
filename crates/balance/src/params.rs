//! The parameters `lbsim-balance` declares: the sched features the balancer and the wake-up
//! placement read (fair.c's `load_balance()` family, `select_task_rq_fair()`), and lbsim's
//! switches for the seed patches of EXPERIMENTS.md and the later kernel changes that decide
//! how a seed's experiment goes on its older kernel. The cost model's knobs are declared
//! with their storage, in [`crate::cost`].
//!
//! A new balancer feature is one line here (the next variant takes the next bit of this
//! layer's range; give it the next free `pos`, 110 and up for an lbsim switch), the code that
//! reads it (`ctx.features.enabled(LbFeat::X)`) and its unit test: the invariant suite flips
//! it, `lbsim features` lists it and `--features` parses it with no other change (see
//! `lbsim_kernel::params`). `cargo xtask params` regenerates `docs/parameters.md`.

use lbsim_kernel::params::{BALANCE_FEATURE_BASE, Features, Origin, Owner};

lbsim_kernel::sched_features! {
    /// A sched feature the balancer or the wake-up placement reads.
    pub enum LbFeat;
    /// The declarations of [`LbFeat`].
    pub const FEATURES;
    base = BALANCE_FEATURE_BASE, owner = Owner::Balance;
    /// task_hot(): buddies are cache hot.
    CacheHotBuddy = "CACHE_HOT_BUDDY", pos 9, on, Origin::kernel("v6.1, v6.6, v6.12");
    /// Remove irq/steal time from CPU capacity (scale_rt_capacity(); not modelled: lbsim has
    /// no irq or steal time).
    NontaskCapacity = "NONTASK_CAPACITY", pos 16, on, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// select_idle_cpu(): proportional scan limit (v4.13-v6.6, removed in v6.7); read by the
    /// pre-v5.5 profiles' placement (`legacy::sis`), not by the v6.12 select_idle_cpu().
    SisProp = "SIS_PROP", pos 18, off, Origin::kernel("v4.13-v6.6");
    /// select_idle_cpu(): scan budget from the LLC's utilization.
    SisUtil = "SIS_UTIL", pos 19, on, Origin::kernel("v6.1, v6.6, v6.12");
    /// detach_tasks(): skip tasks whose load is tiny relative to nr_balance_failed.
    LbMin = "LB_MIN", pos 23, off, Origin::kernel("v6.1, v6.6, v6.12");
    /// wake_affine_idle().
    WaIdle = "WA_IDLE", pos 25, on, Origin::kernel("v6.1, v6.6, v6.12");
    /// wake_affine_weight().
    WaWeight = "WA_WEIGHT", pos 26, on, Origin::kernel("v6.1, v6.6, v6.12");
    /// wake_affine_weight(): bias towards the previous CPU by half the imbalance_pct.
    WaBias = "WA_BIAS", pos 27, on, Origin::kernel("v6.1, v6.6, v6.12");
    /// find_busiest_queue(), migrate_util: skip a runqueue with nr_running <= 1 (seed 000).
    LbUtilSkipSingle = "LB_UTIL_SKIP_SINGLE", pos 100, on, Origin::switch("seed 000_10ea48af97d0d73a", "merged v5.7");
    /// detach_tasks(): too big only if (load >> nr_balance_failed) > imbalance (seed 001).
    LbRelaxByFailed = "LB_RELAX_BY_FAILED", pos 101, on, Origin::switch("seed 001_ddcb498a752488f6", "merged v5.10");
    /// A busy balance interval is one jiffy shorter (seed 001).
    LbBusyIntervalSkew = "LB_BUSY_INTERVAL_SKEW", pos 102, on, Origin::switch("seed 001_ddcb498a752488f6", "merged v5.10");
    /// should_we_balance(), newly idle: give up with a runnable task or ttwu_pending (seed 002).
    NewidleBailOnPending = "NEWIDLE_BAIL_ON_PENDING", pos 103, on, Origin::switch("seed 002_792e93e2ffbcc705", "merged v6.0");
    /// cpu_load(): tip the average towards load.weight when it lags (seed 003, never merged).
    LbTipAvgHigh = "LB_TIP_AVG_HIGH", pos 104, off, Origin::switch("seed 003_683fe9f44b3c1881", "never merged");
    /// Reserve an idle CPU chosen for a wake-up until the task runs (seed 003, never merged).
    IdleReserve = "IDLE_RESERVE", pos 105, off, Origin::switch("seed 003_683fe9f44b3c1881", "never merged");
    /// prefer_sibling: busiest lacks capacity only if it has > 1 task more (seed 004).
    PreferSiblingNrDiff = "PREFER_SIBLING_NR_DIFF", pos 106, on, Origin::switch("05b40e057734 (seed 004_7aa333f1c8652ce8)", "merged");
    /// find_busiest_queue(), migrate_util: read `cpu_util_cfs_boost()` (max of util and
    /// runnable, "runnable boosting"), not `cpu_util_cfs()` (`NO_`: v5.7-v6.4).
    LbUtilRunnableBoost = "LB_UTIL_RUNNABLE_BOOST", pos 108, on, Origin::switch("7d0583cf9ec7", "merged v6.5");
    /// load_balance(): only migrate_task failures force an active balance ("Reduce cases for
    /// active balance"); `NO_` is the v5.6-v5.11 rule (any type of failure).
    LbReduceActiveBalance = "LB_REDUCE_ACTIVE_BALANCE", pos 109, on, Origin::switch("e9b9734b7465", "merged v5.12");
    /// find_busiest_queue(): count a runqueue's runnable CFS tasks (`h_nr_runnable`: queued
    /// minus delayed-dequeue ones), not every queued one, as "sched/fair: Use the new
    /// cfs_rq.h_nr_runnable" (Vincent Guittot, 2024-12-02) does there; `NO_` is v6.12.
    LbBusiestNrRunnable = "LB_BUSIEST_NR_RUNNABLE", pos 110, off, Origin::switch("lore 20241202174606.4074512-6-vincent.guittot@linaro.org", "merged v6.14");
}

/// The defaults of the features this crate and `lbsim-rq` declare (for the balancer's own
/// tests; a run's defaults come from `lbsim_sim::params::REGISTRY`).
pub fn default_features() -> Features {
    lbsim_rq::params::default_features().with_defaults(FEATURES)
}
