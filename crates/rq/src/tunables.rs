//! The fair-class tunables of `/sys/kernel/debug/sched/` ([`Tunables`]) and the per-runqueue
//! snapshot of features and tunables ([`SchedParams`]).
//!
//! Tunables follow fair.c: `get_update_sysctl_factor()` / `update_sysctl()` (the LOG scaling
//! `1 + ilog2(min(ncpus, 8))` applied to `base_slice_ns`, and in v6.1 to `latency_ns`,
//! `min_granularity_ns` and `wakeup_granularity_ns`), with the debugfs names of
//! `/sys/kernel/debug/sched/`. Their names, units, defaults, ranges and docs are declared once,
//! in [`crate::params::TUNABLES`]; this module is their storage.

use std::fmt;

use lbsim_kernel::params::{IntDefault, Kind, ParamDef, ParamError, Params, SchedFeature};

use crate::params::TUNABLES;

pub use lbsim_kernel::params::Features;

/// Which per-runqueue pick the fair class uses (lbsim's `sched_policy` knob; not a
/// scheduling policy in the kernel's sense, which is [`crate::task::Policy`]).
///
/// The kernel has no switch for this: v6.6 replaced the CFS pick by EEVDF outright. lbsim
/// keeps both because older experiments ran on CFS, and selects with the tunable
/// `sched_policy` rather than a fake sched feature, so the feature list stays the kernel's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FairPick {
    /// EEVDF, as v6.6–v6.12 (the default).
    #[default]
    Eevdf,
    /// The legacy CFS pick of v6.1 (min vruntime, sched_latency/min_granularity slices,
    /// wakeup_granularity preemption).
    Cfs,
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
    pub sched_policy: FairPick,
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
    /// `sched_autogroup_enabled` (`kernel.sched_autogroup_enabled`, autogroup.c): sessions'
    /// tasks in the root cgroup run in their autogroup.
    pub sched_autogroup_enabled: bool,
    /// `hz` (`CONFIG_HZ`): 100, 250, 300 or 1000.
    pub hz: u32,
}

impl Tunables {
    /// The boot-time values for a machine with `nr_cpus` online CPUs, from the declared
    /// defaults (fair.c: `sched_init_granularity()` → `update_sysctl()`).
    pub fn new(nr_cpus: u32) -> Tunables {
        let mut t = Tunables {
            nr_cpus: nr_cpus.max(1),
            normalized_base_slice_ns: 0,
            normalized_latency_ns: 0,
            normalized_min_granularity_ns: 0,
            normalized_wakeup_granularity_ns: 0,
            sched_policy: FairPick::Eevdf,
            tunable_scaling: TunableScaling::Log,
            base_slice_ns: 0,
            latency_ns: 0,
            min_granularity_ns: 0,
            idle_min_granularity_ns: 0,
            wakeup_granularity_ns: 0,
            sched_nr_latency: 0,
            child_runs_first: false,
            migration_cost_ns: 0,
            nr_migrate: 0,
            sched_autogroup_enabled: false,
            hz: 0,
        };
        for def in TUNABLES {
            match def.kind {
                Kind::Int(d) => match d.default {
                    IntDefault::Value(v) => t.store_raw(def.name, v),
                    IntDefault::Scaled(v) => t.store_normalized(def.name, v),
                    IntDefault::NrCpus => {}
                },
                Kind::Choice(c) => t.store_raw(def.name, c.default as u64),
                Kind::Feature(_) => unreachable!("no feature among the tunables"),
            }
        }
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

    /// The normalized value of a scaled tunable (its default at boot).
    fn store_normalized(&mut self, name: &str, v: u64) {
        match name {
            "base_slice_ns" => self.normalized_base_slice_ns = v,
            "latency_ns" => self.normalized_latency_ns = v,
            "min_granularity_ns" => self.normalized_min_granularity_ns = v,
            "wakeup_granularity_ns" => self.normalized_wakeup_granularity_ns = v,
            _ => unreachable!("{name} is not a scaled tunable"),
        }
    }

    /// The field of tunable `name`, without side effects (values checked by the declaration).
    fn store_raw(&mut self, name: &str, v: u64) {
        let small = || u32::try_from(v).expect("checked against the declared range");
        match name {
            "sched_policy" => {
                self.sched_policy = if v == 0 {
                    FairPick::Eevdf
                } else {
                    FairPick::Cfs
                }
            }
            "tunable_scaling" => {
                self.tunable_scaling = match v {
                    0 => TunableScaling::None,
                    1 => TunableScaling::Log,
                    _ => TunableScaling::Linear,
                }
            }
            "base_slice_ns" => self.base_slice_ns = v,
            "latency_ns" => self.latency_ns = v,
            "min_granularity_ns" => self.min_granularity_ns = v,
            "idle_min_granularity_ns" => self.idle_min_granularity_ns = v,
            "wakeup_granularity_ns" => self.wakeup_granularity_ns = v,
            "sched_nr_latency" => self.sched_nr_latency = v,
            "child_runs_first" => self.child_runs_first = v != 0,
            "migration_cost_ns" => self.migration_cost_ns = v,
            "nr_migrate" => self.nr_migrate = small(),
            "sched_autogroup_enabled" => self.sched_autogroup_enabled = v != 0,
            "hz" => self.hz = small(),
            "nr_cpus" => self.nr_cpus = small(),
            _ => unreachable!("{name} is not a tunable"),
        }
    }

    /// Sets tunable `name` from its text, as `--set KEY=VALUE` does (`Params::set`, callable
    /// without the trait; the write semantics are on the `Params` impl).
    ///
    /// # Errors
    /// An unknown name (with suggestions), a bad or out-of-range value; nothing changes.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        <Self as Params>::set(self, name, value)
    }

    /// The value of tunable `name`, as [`Tunables::set`] accepts it.
    ///
    /// # Errors
    /// An unknown name.
    pub fn get(&self, name: &str) -> Result<String, ParamError> {
        <Self as Params>::get(self, name)
    }

    /// Parse and apply `KEY=VALUE`.
    ///
    /// # Errors
    /// See [`Params::set`].
    pub fn set_assignment(&mut self, assignment: &str) -> Result<(), ParamError> {
        let (k, v) = assignment
            .split_once('=')
            .ok_or_else(|| ParamError::Malformed {
                text: assignment.to_string(),
            })?;
        self.set(k.trim(), v)
    }
}

/// Writes follow debugfs: writing a scaled tunable sets its effective value and its
/// normalized value to `value / factor`; writing `tunable_scaling` re-applies the scaling to
/// the normalized values as at boot (`update_sysctl()`) and recomputes `sched_nr_latency`
/// (`sched_update_scaling()`); writing `nr_cpus` re-applies the scaling. The `sched_`-prefixed
/// sysctl spellings (`sched_latency_ns`, ...) are accepted as aliases.
impl Params for Tunables {
    const DEFS: &'static [ParamDef] = TUNABLES;

    fn store(&mut self, def: &'static ParamDef, v: u64) {
        let factor = self.factor();
        match def.name {
            "base_slice_ns" | "latency_ns" | "min_granularity_ns" | "wakeup_granularity_ns" => {
                self.store_raw(def.name, v);
                self.store_normalized(def.name, v / factor);
            }
            "tunable_scaling" => {
                self.store_raw(def.name, v);
                self.update_sysctl();
                self.sched_nr_latency = self.latency_ns.div_ceil(self.min_granularity_ns.max(1));
            }
            "nr_cpus" => {
                self.store_raw(def.name, v);
                self.update_sysctl();
            }
            name => self.store_raw(name, v),
        }
    }

    fn load(&self, def: &'static ParamDef) -> u64 {
        match def.name {
            "sched_policy" => match self.sched_policy {
                FairPick::Eevdf => 0,
                FairPick::Cfs => 1,
            },
            "tunable_scaling" => match self.tunable_scaling {
                TunableScaling::None => 0,
                TunableScaling::Log => 1,
                TunableScaling::Linear => 2,
            },
            "base_slice_ns" => self.base_slice_ns,
            "latency_ns" => self.latency_ns,
            "min_granularity_ns" => self.min_granularity_ns,
            "idle_min_granularity_ns" => self.idle_min_granularity_ns,
            "wakeup_granularity_ns" => self.wakeup_granularity_ns,
            "sched_nr_latency" => self.sched_nr_latency,
            "child_runs_first" => u64::from(self.child_runs_first),
            "migration_cost_ns" => self.migration_cost_ns,
            "nr_migrate" => u64::from(self.nr_migrate),
            "sched_autogroup_enabled" => u64::from(self.sched_autogroup_enabled),
            "hz" => u64::from(self.hz),
            "nr_cpus" => u64::from(self.nr_cpus),
            name => unreachable!("{name} is not a tunable"),
        }
    }
}

/// The fair-class parameters one runqueue reads on its hot paths: a `Copy` snapshot of the
/// features and of the tunables, so that every per-rq operation sees one consistent set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedParams {
    /// `sched_feat()`.
    pub features: Features,
    /// EEVDF or legacy CFS.
    pub pick: FairPick,
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
            pick: tunables.sched_policy,
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
    pub fn feat(&self, f: impl SchedFeature) -> bool {
        self.features.enabled(f)
    }
}

/// One `name=value` per line, in declaration order.
impl fmt::Display for Tunables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, v) in self.entries() {
            writeln!(f, "{name}={v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
