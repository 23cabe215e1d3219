//! The parameter registry: every layer's declarations assembled ([`REGISTRY`]), and one run's
//! values of all of them ([`Settings`]). Each layer declares its own: `lbsim_rq::params`,
//! `lbsim_balance::params` and `lbsim_balance::cost`, `lbsim_topology::params`, and
//! `lbsim_core::params` (the features core.c reads and the engine's knobs).
//!
//! `--set`, `--features`, scenario files' `[tunables]`, `lbsim features` (text, JSON,
//! `docs/parameters.md`), error messages and the invariant suite's toggle list all read
//! [`REGISTRY`]. The goal, as `lbsim_kernel::params` states it: a new sched feature that
//! changes `find_busiest_queue()` touches three files (`crates/balance/src/params.rs`, the
//! code that reads it, its unit test) and nothing here.

use lbsim_balance::cost::{COST_PARAMS, CostModel};
use lbsim_core::params::{ENGINE_PARAMS, EngineTunables, FEATURES, MACHINE_PARAMS, MachineModel};
use lbsim_kernel::params::{Features, ParamDef, ParamError, Params, Registry};
use lbsim_rq::Tunables;
use lbsim_topology::SdParams;

use crate::profile::{Profile, ProfileError};

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
    MACHINE_PARAMS,
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
    /// Machine-model knobs.
    pub machine: MachineModel,
    /// The kernel profile the values started from (`--kernel`), if one was asked for:
    /// without one, every parameter is at the registry's default (the v6.12 model, with the
    /// legacy-CFS features at their v6.1 defaults for `sched_policy=cfs`).
    pub kernel: Option<Profile>,
}

/// Why a parameter setting was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A bad name or value.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// A feature the chosen kernel does not have.
    #[error(transparent)]
    Profile(#[from] ProfileError),
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
            machine: MachineModel::default(),
            kernel: None,
        }
    }

    /// Every parameter as kernel `profile` has it, for a machine of `nr_cpus` CPUs: its
    /// features.h defaults (a kernel feature it lacks is off), lbsim's switches for the
    /// changes it has, and its tunables' defaults ([`crate::profile`]).
    pub fn for_kernel(nr_cpus: u32, profile: Profile) -> Settings {
        let mut s = Settings::new(nr_cpus);
        let names: Vec<&'static str> = REGISTRY.features().iter().map(|(d, _)| d.name).collect();
        for (name, on) in profile.feature_values(&names) {
            let (_, f) = REGISTRY.feature(name).expect("a registry feature");
            s.features.set(f.bit, on);
        }
        for (k, v) in profile.tunables() {
            s.set(k, v).expect("a profile's tunables are valid");
        }
        s.kernel = Some(profile);
        s
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
            || store_into(&mut self.engine, def, v)
            || store_into(&mut self.machine, def, v);
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
            .or_else(|| load_from(&self.machine, def))
            .expect("every declared value has storage");
        Ok(def.format(v))
    }

    /// Applies a kernel-style features list (`NO_X,Y`); see [`Registry::apply_features`].
    /// With a kernel profile, switching on a kernel feature that release does not have is
    /// refused (lbsim's switches for later changes may be set on any release).
    ///
    /// # Errors
    /// An unknown feature, with the nearest spellings, or one the profile's release lacks;
    /// nothing changes.
    pub fn apply_features(&mut self, list: &str) -> Result<(), SettingsError> {
        let mut f = self.features;
        REGISTRY.apply_features(&mut f, list)?;
        if let Some(p) = self.kernel {
            for item in list.split(|c: char| c == ',' || c.is_whitespace()) {
                if item.is_empty() {
                    continue;
                }
                let (on, name) = match item.strip_prefix("NO_") {
                    Some(rest) => (false, rest),
                    None => (true, item),
                };
                p.check_feature(name, on)?;
            }
        }
        self.features = f;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
