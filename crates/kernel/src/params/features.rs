//! [`Features`]: the one `Copy` bitset of sched features, and the per-layer bit ranges.

use std::fmt;

use super::def::{Kind, ParamDef};

/// A sched feature's bit in [`Features`] (global across layers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FeatureBit(pub u8);

/// The first bit of the features `lbsim-rq` declares (bits 0..24).
pub const RQ_FEATURE_BASE: u8 = 0;
/// The first bit of the features `lbsim-balance` declares (bits 24..48).
pub const BALANCE_FEATURE_BASE: u8 = 24;
/// The first bit of the features the core.c model declares (bits 48..64).
pub const CORE_FEATURE_BASE: u8 = 48;

/// Anything that names one sched feature: each layer's feature enum, or a [`FeatureBit`].
pub trait SchedFeature: Copy {
    /// Its bit.
    fn bit(self) -> FeatureBit;
}

impl SchedFeature for FeatureBit {
    #[inline]
    fn bit(self) -> FeatureBit {
        self
    }
}

/// A set of enabled sched features: a `Copy` bitset, one bit per feature ([`FeatureBit`]).
///
/// The defaults come from the declarations ([`Features::with_defaults`]); the names, the
/// kernel-style `NO_X` writes and the debugfs text from the assembled registry
/// (`lbsim_sim::params::REGISTRY`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Features(u64);

impl Features {
    /// No feature enabled.
    pub const NONE: Features = Features(0);

    /// The raw bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// `sched_feat(X)`: one bit test.
    #[inline]
    pub fn enabled(self, f: impl SchedFeature) -> bool {
        self.0 & (1u64 << f.bit().0) != 0
    }

    /// A copy with `f` switched on or off.
    #[must_use]
    #[inline]
    pub fn with(self, f: impl SchedFeature, on: bool) -> Features {
        let bit = 1u64 << f.bit().0;
        Features(if on { self.0 | bit } else { self.0 & !bit })
    }

    /// Switch `f` on or off.
    pub fn set(&mut self, f: impl SchedFeature, on: bool) {
        *self = self.with(f, on);
    }

    /// A copy with every feature declared in `defs` at its default (other bits unchanged).
    #[must_use]
    pub fn with_defaults(self, defs: &[ParamDef]) -> Features {
        let mut out = self;
        for d in defs {
            if let Kind::Feature(f) = d.kind {
                out.set(f.bit, f.default);
            }
        }
        out
    }
}

/// The raw bits (the names live in the registry).
impl fmt::Debug for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Features({:#018x})", self.0)
    }
}
