//! Kernel constants shared by the layers (each defined here only).

/// `SCHED_CAPACITY_SHIFT`: util, runnable and capacity are scaled to `1 << 10`.
///
/// Follows include/linux/sched.h (v6.6-v6.12).
pub const SCHED_CAPACITY_SHIFT: u32 = 10;

/// `SCHED_CAPACITY_SCALE`: the capacity of the biggest CPU at its highest frequency (1024).
///
/// Follows include/linux/sched.h (v6.6-v6.12).
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;

/// `SCHED_FIXEDPOINT_SHIFT`: the extra resolution of 64-bit `load.weight` values
/// (`scale_load()` / `scale_load_down()`).
///
/// Follows include/linux/sched.h (v6.6-v6.12).
pub const SCHED_FIXEDPOINT_SHIFT: u32 = 10;

/// `NICE_0_LOAD` in lbsim's 10-bit weight domain: the kernel's `scale_load_down(NICE_0_LOAD)`,
/// the weight of a nice-0 task as PELT, the balancer and EEVDF compare it.
///
/// Follows kernel/sched/sched.h: `NICE_0_LOAD` (`1L << NICE_0_LOAD_SHIFT`; lbsim stores
/// weights unscaled, see `lbsim_rq::weights`).
pub const NICE_0_LOAD: u64 = 1 << SCHED_FIXEDPOINT_SHIFT;
