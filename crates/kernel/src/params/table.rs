//! [`Params`]: a typed struct whose fields are parameters, set and read by name through its
//! declaration list; and the macros that declare features and plain integer structs.

use super::def::ParamDef;
use super::error::ParamError;
use super::suggest::nearest;

/// The declaration in `defs` named `name` (or an alias).
///
/// # Errors
/// [`ParamError::Unknown`], with the nearest names of `defs`.
pub fn find_def(defs: &'static [ParamDef], name: &str) -> Result<&'static ParamDef, ParamError> {
    let name = name.trim();
    defs.iter()
        .find(|d| d.is_named(name))
        .ok_or_else(|| ParamError::Unknown {
            name: name.to_owned(),
            suggestions: nearest(name, defs.iter().map(|d| d.name))
                .into_iter()
                .map(str::to_owned)
                .collect(),
        })
}

/// A struct the model reads whose fields are parameters declared in [`Params::DEFS`]: the
/// declarations are its one name, unit, default, range and doc table.
pub trait Params {
    /// The declarations, in printing order.
    const DEFS: &'static [ParamDef];

    /// Stores `value` (already checked against `def`: an integer, or a choice's index).
    fn store(&mut self, def: &'static ParamDef, value: u64);

    /// The stored value of `def`.
    fn load(&self, def: &'static ParamDef) -> u64;

    /// Sets parameter `name` from its text.
    ///
    /// # Errors
    /// An unknown name (with suggestions), a value that does not parse or is out of range.
    /// On error nothing changes.
    fn set(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        let def = find_def(Self::DEFS, name)?;
        let v = def.parse(value)?;
        self.store(def, v);
        Ok(())
    }

    /// The value of parameter `name`, as [`Params::set`] accepts it.
    ///
    /// # Errors
    /// An unknown name.
    fn get(&self, name: &str) -> Result<String, ParamError> {
        let def = find_def(Self::DEFS, name)?;
        Ok(def.format(self.load(def)))
    }

    /// `(name, value)` for every parameter, in declaration order.
    fn entries(&self) -> Vec<(&'static str, String)> {
        Self::DEFS
            .iter()
            .map(|d| (d.name, d.format(self.load(d))))
            .collect()
    }
}

/// Declares one layer's sched features: an enum (one variant per feature, its bit `base +`
/// its ordinal), its [`crate::params::SchedFeature`] impl, and a `const` list of
/// [`ParamDef`]s.
///
/// ```text
/// lbsim_kernel::sched_features! {
///     /// The sched features the balancer reads.
///     pub enum LbFeat;
///     pub const FEATURES;
///     base = BALANCE_FEATURE_BASE, owner = Owner::Balance;
///     /// find_busiest_queue(): ...
///     LbUtilSkipSingle = "LB_UTIL_SKIP_SINGLE", pos 100, on, Origin::switch("...", "merged v5.7");
///     /// High-resolution tick (not modelled).
///     Hrtick = "HRTICK", pos 13, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
/// }
/// ```
#[macro_export]
macro_rules! sched_features {
    (
        $(#[$emeta:meta])*
        pub enum $Enum:ident;
        $(#[$dmeta:meta])*
        pub const $DEFS:ident;
        base = $base:expr, owner = $owner:expr;
        $(
            $(#[doc = $doc:literal])*
            $variant:ident = $name:literal, pos $pos:literal, $default:ident, $origin:expr
            $(, $nm:ident)?;
        )*
    ) => {
        $(#[$emeta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum $Enum {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl $Enum {
            /// Every feature of this layer, in declaration order.
            pub const ALL: &'static [$Enum] = &[$($Enum::$variant),*];

            /// The kernel name (as printed in `/sys/kernel/debug/sched/features`).
            pub const fn name(self) -> &'static str {
                match self { $($Enum::$variant => $name,)* }
            }

            /// The feature's bit in the shared bitset.
            #[inline]
            pub const fn bit(self) -> $crate::params::FeatureBit {
                $crate::params::FeatureBit($base + self as u8)
            }

            /// The declaration.
            pub const fn def(self) -> &'static $crate::params::ParamDef {
                &$DEFS[self as usize]
            }
        }

        impl $crate::params::SchedFeature for $Enum {
            #[inline]
            fn bit(self) -> $crate::params::FeatureBit {
                $Enum::bit(self)
            }
        }

        $(#[$dmeta])*
        pub const $DEFS: &[$crate::params::ParamDef] = &[
            $(
                $crate::params::ParamDef {
                    name: $name,
                    aliases: &[],
                    kind: $crate::params::Kind::Feature($crate::params::FeatureDef {
                        bit: $crate::params::FeatureBit($base + $Enum::$variant as u8),
                        default: $crate::__feature_default!($default),
                        position: $pos,
                        modelled: $crate::__feature_modelled!($($nm)?),
                    }),
                    doc: concat!($($doc),*),
                    owner: $owner,
                    origin: $origin,
                },
            )*
        ];

        const _: () = assert!(
            ($base as usize) + $DEFS.len() <= 64,
            "a layer's features overflow the 64-bit Features set"
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __feature_default {
    (on) => {
        true
    };
    (off) => {
        false
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __feature_modelled {
    () => {
        true
    };
    (not_modelled) => {
        false
    };
}

/// Declares a struct of plain integer parameters: the struct (each field a parameter), its
/// `Default` (the declared defaults), a `const` list of [`ParamDef`]s and its [`Params`] impl.
///
/// ```text
/// lbsim_kernel::int_params! {
///     /// The cost of each unit of scheduler work.
///     #[derive(Clone, Copy, Debug, PartialEq, Eq)]
///     pub struct CostModel;
///     pub const COST_PARAMS;
///     owner = Owner::CostModel;
///     /// Switching from one task to another on a CPU.
///     pub context_switch_ns: u64 = "cost_context_switch_ns", Ns, 1200, 0..=1_000_000_000,
///         Origin::LbsimModel;
/// }
/// ```
#[macro_export]
macro_rules! int_params {
    (
        $(#[$smeta:meta])*
        pub struct $S:ident;
        $(#[$dmeta:meta])*
        pub const $DEFS:ident;
        owner = $owner:expr;
        $(
            $(#[doc = $doc:literal])*
            pub $field:ident : $ty:ty = $name:literal, $unit:ident, $default:literal,
                $min:literal ..= $max:expr, $origin:expr;
        )*
    ) => {
        $(#[$smeta])*
        pub struct $S {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl Default for $S {
            fn default() -> $S {
                $S { $($field: $default,)* }
            }
        }

        $(#[$dmeta])*
        pub const $DEFS: &[$crate::params::ParamDef] = &[
            $(
                $crate::params::ParamDef {
                    name: $name,
                    aliases: &[],
                    kind: $crate::params::Kind::Int($crate::params::IntDef {
                        unit: $crate::params::Unit::$unit,
                        default: $crate::params::IntDefault::Value($default),
                        min: $min,
                        max: $max as u64,
                        allowed: &[],
                    }),
                    doc: concat!($($doc),*),
                    owner: $owner,
                    origin: $origin,
                },
            )*
        ];

        impl $S {
            /// Sets parameter `name` from its text (`Params::set`, callable without the trait).
            ///
            /// # Errors
            /// An unknown name (with suggestions), a bad or out-of-range value.
            pub fn set(&mut self, name: &str, value: &str) -> Result<(), $crate::params::ParamError> {
                <$S as $crate::params::Params>::set(self, name, value)
            }

            /// The value of parameter `name`, as [`Self::set`] accepts it.
            ///
            /// # Errors
            /// An unknown name.
            pub fn get(&self, name: &str) -> Result<String, $crate::params::ParamError> {
                <$S as $crate::params::Params>::get(self, name)
            }

            /// `(name, value)` for every parameter, in declaration order.
            pub fn entries(&self) -> Vec<(&'static str, String)> {
                <$S as $crate::params::Params>::entries(self)
            }
        }

        impl $crate::params::Params for $S {
            const DEFS: &'static [$crate::params::ParamDef] = $DEFS;

            fn store(&mut self, def: &'static $crate::params::ParamDef, value: u64) {
                match def.name {
                    $($name => {
                        self.$field = <$ty>::try_from(value).expect("checked against the range")
                    })*
                    other => unreachable!("{other} is not a field of {}", stringify!($S)),
                }
            }

            fn load(&self, def: &'static $crate::params::ParamDef) -> u64 {
                match def.name {
                    $($name => u64::from(self.$field),)*
                    other => unreachable!("{other} is not a field of {}", stringify!($S)),
                }
            }
        }
    };
}
