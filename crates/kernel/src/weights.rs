//! The nice-to-weight tables of the fair class and their neighbours.
//!
//! Follows kernel/sched/core.c: `sched_prio_to_weight[]`, `sched_prio_to_wmult[]` and
//! kernel/sched/sched.h / fair.c: `WEIGHT_IDLEPRIO`, `WMULT_IDLEPRIO`, `WMULT_CONST`,
//! `WMULT_SHIFT` (v6.6-v6.12), and include/linux/sched/prio.h: `MIN_NICE`, `MAX_NICE`.
//! Weights are in the 10-bit domain (`NICE_0_LOAD` is 1024, see [`crate::NICE_0_LOAD`]).

/// `WEIGHT_IDLEPRIO`: the weight of a `SCHED_IDLE` task.
pub const WEIGHT_IDLEPRIO: u64 = 3;

/// `WMULT_IDLEPRIO`: the precomputed inverse of [`WEIGHT_IDLEPRIO`] (2^32 / 3).
pub const WMULT_IDLEPRIO: u32 = 1_431_655_765;

/// `WMULT_CONST`: `~0U`, the numerator of the lazily computed inverse weights.
pub const WMULT_CONST: u32 = u32::MAX;

/// `WMULT_SHIFT`: the fixed-point shift of the inverse weights.
pub const WMULT_SHIFT: u32 = 32;

/// `MAX_NICE` and `MIN_NICE`.
pub const MIN_NICE: i32 = -20;
/// See [`MIN_NICE`].
pub const MAX_NICE: i32 = 19;

/// `sched_prio_to_weight[40]`, indexed by `nice + 20`. Each step is about 1.25x.
pub const SCHED_PRIO_TO_WEIGHT: [u32; 40] = [
    /* -20 */ 88761, 71755, 56483, 46273, 36291, //
    /* -15 */ 29154, 23254, 18705, 14949, 11916, //
    /* -10 */ 9548, 7620, 6100, 4904, 3906, //
    /*  -5 */ 3121, 2501, 1991, 1586, 1277, //
    /*   0 */ 1024, 820, 655, 526, 423, //
    /*   5 */ 335, 272, 215, 172, 137, //
    /*  10 */ 110, 87, 70, 56, 45, //
    /*  15 */ 36, 29, 23, 18, 15,
];

/// `sched_prio_to_wmult[40]`: precalculated `2^32 / sched_prio_to_weight[i]`.
pub const SCHED_PRIO_TO_WMULT: [u32; 40] = [
    /* -20 */ 48388, 59856, 76040, 92818, 118348, //
    /* -15 */ 147320, 184698, 229616, 287308, 360437, //
    /* -10 */ 449829, 563644, 704093, 875809, 1099582, //
    /*  -5 */ 1376151, 1717300, 2157191, 2708050, 3363326, //
    /*   0 */ 4194304, 5237765, 6557202, 8165337, 10153587, //
    /*   5 */ 12820798, 15790321, 19976592, 24970740, 31350126, //
    /*  10 */ 39045157, 49367440, 61356676, 76695844, 95443717, //
    /*  15 */ 119304647, 148102320, 186737708, 238609294, 286331153,
];
