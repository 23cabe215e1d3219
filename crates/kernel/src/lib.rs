//! The bottom of lbsim: the kernel's constants and pure rules that several layers use, defined
//! once, and the machinery of the parameter registry.
//!
//! - [`consts`]: `SCHED_CAPACITY_SHIFT`/`SCALE`, `SCHED_FIXEDPOINT_SHIFT`, `NICE_0_LOAD`
//!   (include/linux/sched.h, kernel/sched/sched.h).
//! - [`weights`]: the nice-to-weight tables `sched_prio_to_weight[]` / `sched_prio_to_wmult[]`
//!   and their neighbours (kernel/sched/core.c, sched.h).
//! - [`capacity`]: `fits_capacity()` and `capacity_greater()` (kernel/sched/fair.c).
//! - [`policy`]: the fair class's scheduling policies (`SCHED_NORMAL`, `SCHED_BATCH`,
//!   `SCHED_IDLE`), as workloads ask for them and runqueues apply them.
//! - [`input`]: reading a file a user names, at most 16 MiB of it.
//! - [`params`]: what a parameter is (a sched feature, an integer with a unit and a range, a
//!   choice among names), the one `Copy` bitset of sched features, lookup with did-you-mean
//!   suggestions, and typed errors. Each layer declares its own parameters with this machinery
//!   in one file; `lbsim-sim` assembles the registry.
//!
//! Nothing here models behaviour over time: no runqueues, no events. Every other lbsim crate
//! may depend on this one; it depends on no lbsim crate.

pub mod capacity;
pub mod consts;
pub mod input;
pub mod params;
pub mod policy;
pub mod weights;

pub use capacity::{capacity_greater, fits_capacity};
pub use consts::{NICE_0_LOAD, SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SHIFT, SCHED_FIXEDPOINT_SHIFT};
pub use policy::Policy;
