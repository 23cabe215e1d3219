//! Sched-domain flags (`SD_*`) with their kernel names, bits and metaflags.
//!
//! Follows include/linux/sched/sd_flags.h (v6.6-v6.12): the flags are declared
//! there in one list, and a flag's bit is its position in that list, so the
//! definition order is also the order in which debugfs prints them. Between
//! v6.6 and v6.12 the list has 15 entries; `SD_SHARE_LLC` was called
//! `SD_SHARE_PKG_RESOURCES` until v6.10 (same bit, same metaflags). lbsim
//! prints the newer name throughout.

use std::fmt;

/// Metaflag: if a domain has the flag, all its children should have it (sd_flags.h `SDF_SHARED_CHILD`).
pub const SDF_SHARED_CHILD: u8 = 0x1;
/// Metaflag: if a domain has the flag, all its parents should have it (sd_flags.h `SDF_SHARED_PARENT`).
pub const SDF_SHARED_PARENT: u8 = 0x2;
/// Metaflag: the flag only matters when the domain has more than one group (sd_flags.h `SDF_NEEDS_GROUPS`).
pub const SDF_NEEDS_GROUPS: u8 = 0x4;

/// One sched-domain flag. The discriminant is the bit index (`__SD_*` in the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum SdFlag {
    /// `SD_BALANCE_NEWIDLE`: balance when about to become idle.
    BalanceNewidle = 0,
    /// `SD_BALANCE_EXEC`: balance on exec.
    BalanceExec = 1,
    /// `SD_BALANCE_FORK`: balance on fork and clone.
    BalanceFork = 2,
    /// `SD_BALANCE_WAKE`: balance on wake-up (never set by sd_init).
    BalanceWake = 3,
    /// `SD_WAKE_AFFINE`: consider waking the task on the waking CPU.
    WakeAffine = 4,
    /// `SD_ASYM_CPUCAPACITY`: the domain spans CPUs of different capacities.
    AsymCpucapacity = 5,
    /// `SD_ASYM_CPUCAPACITY_FULL`: the domain spans every capacity value of the system.
    AsymCpucapacityFull = 6,
    /// `SD_SHARE_CPUCAPACITY`: the members share CPU capacity (SMT).
    ShareCpucapacity = 7,
    /// `SD_CLUSTER`: the members share a cluster (L2 or cache tags).
    Cluster = 8,
    /// `SD_SHARE_LLC`: the members share the last-level cache (`SD_SHARE_PKG_RESOURCES` before v6.10).
    ShareLlc = 9,
    /// `SD_SERIALIZE`: only one CPU in the system balances such domains at a time.
    Serialize = 10,
    /// `SD_ASYM_PACKING`: place busy tasks earlier in the domain (priority packing).
    AsymPacking = 11,
    /// `SD_PREFER_SIBLING`: prefer to place tasks in a sibling domain.
    PreferSibling = 12,
    /// `SD_OVERLAP`: the groups of this level overlap (NUMA levels above NODE).
    Overlap = 13,
    /// `SD_NUMA`: cross-node balancing.
    Numa = 14,
}

impl SdFlag {
    /// Every flag in the kernel's definition (bit) order.
    pub const ALL: [SdFlag; 15] = [
        SdFlag::BalanceNewidle,
        SdFlag::BalanceExec,
        SdFlag::BalanceFork,
        SdFlag::BalanceWake,
        SdFlag::WakeAffine,
        SdFlag::AsymCpucapacity,
        SdFlag::AsymCpucapacityFull,
        SdFlag::ShareCpucapacity,
        SdFlag::Cluster,
        SdFlag::ShareLlc,
        SdFlag::Serialize,
        SdFlag::AsymPacking,
        SdFlag::PreferSibling,
        SdFlag::Overlap,
        SdFlag::Numa,
    ];

    /// The flag's bit value (`SD_*` in the kernel, `1 << __SD_*`).
    pub const fn bit(self) -> u32 {
        1 << self as u8
    }

    /// The kernel's name, as debugfs prints it.
    pub const fn name(self) -> &'static str {
        match self {
            SdFlag::BalanceNewidle => "SD_BALANCE_NEWIDLE",
            SdFlag::BalanceExec => "SD_BALANCE_EXEC",
            SdFlag::BalanceFork => "SD_BALANCE_FORK",
            SdFlag::BalanceWake => "SD_BALANCE_WAKE",
            SdFlag::WakeAffine => "SD_WAKE_AFFINE",
            SdFlag::AsymCpucapacity => "SD_ASYM_CPUCAPACITY",
            SdFlag::AsymCpucapacityFull => "SD_ASYM_CPUCAPACITY_FULL",
            SdFlag::ShareCpucapacity => "SD_SHARE_CPUCAPACITY",
            SdFlag::Cluster => "SD_CLUSTER",
            SdFlag::ShareLlc => "SD_SHARE_LLC",
            SdFlag::Serialize => "SD_SERIALIZE",
            SdFlag::AsymPacking => "SD_ASYM_PACKING",
            SdFlag::PreferSibling => "SD_PREFER_SIBLING",
            SdFlag::Overlap => "SD_OVERLAP",
            SdFlag::Numa => "SD_NUMA",
        }
    }

    /// The flag's metaflags (`SDF_*`), as declared in sd_flags.h (v6.6-v6.12).
    ///
    /// `SD_ASYM_PACKING` lost `SDF_SHARED_CHILD` in v6.5, so it is `SDF_NEEDS_GROUPS` only here.
    pub const fn meta(self) -> u8 {
        match self {
            SdFlag::BalanceNewidle
            | SdFlag::BalanceExec
            | SdFlag::BalanceFork
            | SdFlag::BalanceWake
            | SdFlag::ShareCpucapacity
            | SdFlag::ShareLlc => SDF_SHARED_CHILD | SDF_NEEDS_GROUPS,
            SdFlag::WakeAffine => SDF_SHARED_CHILD,
            SdFlag::AsymCpucapacity
            | SdFlag::AsymCpucapacityFull
            | SdFlag::Serialize
            | SdFlag::Overlap
            | SdFlag::Numa => SDF_SHARED_PARENT | SDF_NEEDS_GROUPS,
            SdFlag::Cluster | SdFlag::AsymPacking | SdFlag::PreferSibling => SDF_NEEDS_GROUPS,
        }
    }

    /// Looks a flag up by its kernel name (`SD_SHARE_PKG_RESOURCES` is accepted for `SD_SHARE_LLC`).
    pub fn from_name(name: &str) -> Option<SdFlag> {
        if name == "SD_SHARE_PKG_RESOURCES" {
            return Some(SdFlag::ShareLlc);
        }
        SdFlag::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl fmt::Display for SdFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`SdFlag`]s: the kernel's `sd->flags` / `sg->flags` word.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SdFlags(u32);

impl SdFlags {
    /// No flag set.
    pub const EMPTY: SdFlags = SdFlags(0);

    /// `SD_DEGENERATE_GROUPS_MASK`: every flag whose metaflags include `SDF_NEEDS_GROUPS`
    /// (topology.c builds it from sd_flags.h; all flags but `SD_WAKE_AFFINE`).
    pub const DEGENERATE_GROUPS_MASK: SdFlags = {
        let mut bits = 0;
        let mut i = 0;
        while i < SdFlag::ALL.len() {
            if SdFlag::ALL[i].meta() & SDF_NEEDS_GROUPS != 0 {
                bits |= SdFlag::ALL[i].bit();
            }
            i += 1;
        }
        SdFlags(bits)
    };

    /// The set made of exactly these flags.
    pub const fn from_flags(flags: &[SdFlag]) -> SdFlags {
        let mut bits = 0;
        let mut i = 0;
        while i < flags.len() {
            bits |= flags[i].bit();
            i += 1;
        }
        SdFlags(bits)
    }

    /// The raw bit word.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The set with these raw bits; bits above the last flag are dropped.
    pub const fn from_bits_truncate(bits: u32) -> SdFlags {
        SdFlags(bits & ((1 << SdFlag::ALL.len()) - 1))
    }

    /// Whether `flag` is set.
    pub const fn contains(self, flag: SdFlag) -> bool {
        self.0 & flag.bit() != 0
    }

    /// Whether any flag of `other` is set.
    pub const fn intersects(self, other: SdFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Sets `flag`.
    pub fn insert(&mut self, flag: SdFlag) {
        self.0 |= flag.bit();
    }

    /// Clears `flag`.
    pub fn remove(&mut self, flag: SdFlag) {
        self.0 &= !flag.bit();
    }

    /// The union of both sets.
    pub const fn union(self, other: SdFlags) -> SdFlags {
        SdFlags(self.0 | other.0)
    }

    /// The flags of `self` that are not in `other`.
    pub const fn difference(self, other: SdFlags) -> SdFlags {
        SdFlags(self.0 & !other.0)
    }

    /// The set flags in the kernel's definition order.
    pub fn iter(self) -> impl Iterator<Item = SdFlag> {
        SdFlag::ALL.into_iter().filter(move |f| self.contains(*f))
    }

    /// The kernel names of the set flags, in definition order.
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(SdFlag::name).collect()
    }
}

impl From<SdFlag> for SdFlags {
    fn from(flag: SdFlag) -> SdFlags {
        SdFlags(flag.bit())
    }
}

impl fmt::Debug for SdFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(SdFlag::name))
            .finish()
    }
}

/// Space-separated kernel names, as debugfs `flags` prints them (without the trailing space).
impl fmt::Display for SdFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, flag) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(flag.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
