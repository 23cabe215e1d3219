//! The parameter registry: every layer's declarations assembled ([`REGISTRY`]), the
//! parameters this crate declares itself (the sched features the core.c model reads, and the
//! engine's knobs, [`EngineTunables`]), and one run's values of all of them ([`Settings`]).
//!
//! `--set`, `--features`, scenario files' `[tunables]`, `lbsim features` (text, JSON,
//! `docs/parameters.md`), error messages and the invariant suite's toggle list all read
//! [`REGISTRY`]. The goal, as `lbsim_kernel::params` states it: a new sched feature that
//! changes `find_busiest_queue()` touches three files (`crates/balance/src/params.rs`, the
//! code that reads it, its unit test) and nothing here.

use lbsim_balance::cost::{COST_PARAMS, CostModel};
use lbsim_kernel::params::{
    CORE_FEATURE_BASE, Features, Origin, Owner, ParamDef, ParamError, Params, Registry,
};
use lbsim_rq::Tunables;
use lbsim_topology::SdParams;

lbsim_kernel::sched_features! {
    /// A sched feature the core.c model (the engine, for now) reads, or one lbsim lists but
    /// does not model (the hrtick, the rt class, debug warnings, CFS bandwidth).
    pub enum CoreFeat;
    /// The declarations of [`CoreFeat`].
    pub const FEATURES;
    base = CORE_FEATURE_BASE, owner = Owner::Core;
    /// High-resolution tick for fair slices (not modelled: lbsim ticks at HZ).
    Hrtick = "HRTICK", pos 13, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// High-resolution tick for deadline tasks (not modelled).
    HrtickDl = "HRTICK_DL", pos 14, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// Let the periodic tick run alongside hrtick (not modelled).
    DoubleTick = "DOUBLE_TICK", pos 15, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// Queue remote wakeups on the target CPU's wake list (the wake-up IPI; ttwu_queue_cond()).
    TtwuQueue = "TTWU_QUEUE", pos 17, on, Origin::kernel("v6.1, v6.6, v6.12");
    /// Debug: warn on double update_rq_clock() (not modelled).
    WarnDoubleClock = "WARN_DOUBLE_CLOCK", pos 20, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// RT push by IPI (rt class, not modelled).
    RtPushIpi = "RT_PUSH_IPI", pos 21, on, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// RT runtime sharing (rt class, not modelled).
    RtRuntimeShare = "RT_RUNTIME_SHARE", pos 22, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// Debug: warn about long need_resched latencies (not modelled).
    LatencyWarn = "LATENCY_WARN", pos 30, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// Block nohz tick stop while CFS bandwidth is in use (bandwidth not modelled).
    HzBw = "HZ_BW", pos 33, on, Origin::kernel("v6.6"), not_modelled;
}

lbsim_kernel::int_params! {
    /// Engine tunables (set with `--set NAME=VALUE` like the kernel's).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct EngineTunables;
    /// The declarations of [`EngineTunables`].
    pub const ENGINE_PARAMS;
    owner = Owner::Engine;
    /// Background kernel-thread wake-ups per second per CPU (a pinned `kworker/N` that runs
    /// briefly); 0 turns the noise off. The default, 1, is the rate of the most regular
    /// per-CPU kernel work on a quiet server (vmstat_update runs once a second per CPU):
    /// seed 004's `perf stat` saw about one context switch per ebizzy thread per second.
    pub background_wakeups_hz: u64 = "background_wakeups_hz", Hz, 1, 0..=u64::MAX, Origin::LbsimModel;
    /// How long each background wake-up runs (work at capacity 1024), ns.
    pub background_run_ns: u64 = "background_run_ns", Ns, 20_000, 0..=u64::MAX, Origin::LbsimModel;
    /// Largest per-CPU tick phase offset, ns: each CPU's tick fires at
    /// `k * TICK_NSEC + phase`, `phase` drawn from the seed in `[0, tick_jitter_ns)`.
    /// Kernel ticks are aligned across CPUs up to interrupt jitter (no `skew_tick`), so the
    /// default is small.
    pub tick_jitter_ns: u64 = "tick_jitter_ns", Ns, 20_000, 0..=u64::MAX, Origin::LbsimModel;
}

/// Every layer's declaration lists: the features (printed in features.h order whatever the
/// list order), then the kernel tunables, the `sd_init()` inputs, the cost model and the
/// engine, in the order `lbsim features` prints them.
const TABLES: &[&[ParamDef]] = &[
    lbsim_rq::params::FEATURES,
    lbsim_balance::params::FEATURES,
    FEATURES,
    lbsim_rq::params::TUNABLES,
    lbsim_topology::params::SD_INIT_PARAMS,
    COST_PARAMS,
    ENGINE_PARAMS,
];

/// The assembled registry of every parameter.
pub const REGISTRY: Registry = Registry::new(TABLES);

/// Every sched feature at its default.
pub fn default_features() -> Features {
    REGISTRY.default_features()
}

/// The v6.6 defaults: every feature at its default, the v6.12-only ones off
/// (`lbsim_rq::params::v6_6`).
pub fn v6_6_features() -> Features {
    lbsim_rq::params::v6_6(default_features())
}

/// The features the invariant suites flip: every modelled feature, in print order (a feature
/// declared `not_modelled` changes nothing, so flipping it would test nothing).
pub fn behaviour_switches() -> Vec<&'static ParamDef> {
    REGISTRY
        .features()
        .into_iter()
        .filter(|(_, f)| f.modelled)
        .map(|(d, _)| d)
        .collect()
}

/// One run's parameter values: features, kernel tunables, `sd_init()` inputs, cost model and
/// engine tunables, each stored in the typed struct its layer reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Sched features.
    pub features: Features,
    /// Kernel tunables (for the machine's CPU count).
    pub tunables: Tunables,
    /// `sd_init()` inputs.
    pub sd: SdParams,
    /// Scheduler-work costs.
    pub cost: CostModel,
    /// Engine tunables.
    pub engine: EngineTunables,
}

/// Stores `value` into `p` if `def` is one of its parameters.
fn store_into<P: Params>(p: &mut P, def: &'static ParamDef, value: u64) -> bool {
    let owned = P::DEFS.iter().find(|d| d.name == def.name);
    if let Some(d) = owned {
        p.store(d, value);
    }
    owned.is_some()
}

/// The value of `def` in `p`, if it is one of its parameters.
fn load_from<P: Params>(p: &P, def: &'static ParamDef) -> Option<u64> {
    P::DEFS
        .iter()
        .find(|d| d.name == def.name)
        .map(|d| p.load(d))
}

impl Settings {
    /// Every parameter at its default, for a machine of `nr_cpus` CPUs.
    pub fn new(nr_cpus: u32) -> Settings {
        Settings {
            features: default_features(),
            tunables: Tunables::new(nr_cpus),
            sd: SdParams::default(),
            cost: CostModel::default(),
            engine: EngineTunables::default(),
        }
    }

    /// Sets parameter `name` (any layer's) from its text.
    ///
    /// # Errors
    /// An unknown name (with the nearest valid names), a sched feature (they are switched
    /// with [`Settings::apply_features`]), a bad or out-of-range value. On error nothing
    /// changes.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        let def = REGISTRY.lookup(name)?;
        let v = def.parse(value)?;
        let stored = store_into(&mut self.tunables, def, v)
            || store_into(&mut self.sd, def, v)
            || store_into(&mut self.cost, def, v)
            || store_into(&mut self.engine, def, v);
        assert!(stored, "{} is declared but has no storage", def.name);
        Ok(())
    }

    /// The value of parameter `name`, as [`Settings::set`] accepts it (`1`/`0` for a feature).
    ///
    /// # Errors
    /// An unknown name.
    pub fn get(&self, name: &str) -> Result<String, ParamError> {
        let def = REGISTRY.lookup(name)?;
        if let Some(f) = def.feature() {
            return Ok(u8::from(self.features.enabled(f.bit)).to_string());
        }
        let v = load_from(&self.tunables, def)
            .or_else(|| load_from(&self.sd, def))
            .or_else(|| load_from(&self.cost, def))
            .or_else(|| load_from(&self.engine, def))
            .expect("every declared value has storage");
        Ok(def.format(v))
    }

    /// Applies a kernel-style features list (`NO_X,Y`); see [`Registry::apply_features`].
    ///
    /// # Errors
    /// An unknown feature, with the nearest spellings; nothing changes.
    pub fn apply_features(&mut self, list: &str) -> Result<(), ParamError> {
        REGISTRY.apply_features(&mut self.features, list)
    }
}

#[cfg(test)]
mod tests;
