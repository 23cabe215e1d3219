//! The comparison tables scheduler developers already read, for `lbsim compare --format
//! mmtests|lkp`: mmtests' `compare-mmtests.pl` ([`mmtests`]) and the kernel test robot's
//! (LKP) comparison ([`lkp`]). Both render a [`lbsim_sim::experiment::Comparison`]: one
//! "operation" (mmtests) or stat line (LKP) per metric, base then patched.

pub mod lkp;
pub mod mmtests;

/// The two sides' names as the tables print them.
#[derive(Clone, Debug)]
pub struct Sides {
    /// The base side (`--base`).
    pub base: String,
    /// The patched side (`--patched`).
    pub patched: String,
}
