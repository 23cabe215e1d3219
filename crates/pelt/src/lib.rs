//! PELT, per-entity load tracking, as the Linux kernel computes it: the
//! `util_avg`, `load_avg`, `runnable_avg` and `util_est` signals of tasks,
//! cfs_rqs and the rq-level rt/dl/irq classes, in the kernel's own u64/u32
//! fixed-point arithmetic, bit for bit.
//!
//! It follows kernel/sched/pelt.c, pelt.h and sched-pelt.h (the decay table is
//! generated as Documentation/scheduler/sched-pelt.c does), the PELT parts of
//! fair.c (`update_load_avg()`, attach/detach, the lazy `removed` accounting of
//! tasks that migrate while asleep, `post_init_entity_util_avg()`, util_est) and
//! the `clock_pelt` rules of core.c and pelt.h, for Linux v6.6-v6.12 (util_est
//! in its v6.9+ single-field form; where releases differ the doc comments say
//! which one is followed).
//!
//! Layers, bottom up:
//! - [`SchedAvg`]: one signal, with [`decay_load`],
//!   [`SchedAvg::accumulate_sum`], [`SchedAvg::update_load_sum`]
//!   (`___update_load_sum`), [`SchedAvg::update_load_avg`]
//!   (`___update_load_avg`) and [`SchedAvg::get_pelt_divider`];
//! - entity and cfs_rq updates ([`update_load_avg_se`], [`CfsRqAvg`] with
//!   `update_load_avg()`, attach, detach, remove), new-task initialisation
//!   ([`init_entity_runnable_average`], [`post_init_entity_util_avg`]) and
//!   util_est ([`util_est_enqueue`], [`util_est_dequeue`], [`util_est_update`]);
//! - the rq: [`RqClockPelt`] (capacity/frequency invariance, lost idle time)
//!   and the rt/dl/irq signals with [`scale_rt_capacity`];
//! - [`OneTaskCpu`], which feeds one task's `(time, state)` changes through the
//!   kernel's paths, and [`simulate`], the `lbsim pelt` run/sleep pattern driver.
//!
//! ```
//! use lbsim_pelt::{OneTaskCpu, OneTaskCpuConfig, TaskState};
//!
//! // A nice-0 task on a CPU of capacity 1024: run 4 ms, sleep 12 ms, ...
//! let mut cpu = OneTaskCpu::new(OneTaskCpuConfig::default(), TaskState::Running);
//! for cycle in 0..40u64 {
//!     let t = cycle * 16_000_000;
//!     for ms in 1..4 {
//!         cpu.update(t + ms * 1_000_000); // ticks while running
//!     }
//!     cpu.set_state(t + 4_000_000, TaskState::Sleeping);
//!     cpu.set_state(t + 16_000_000, TaskState::Running);
//! }
//! let util = cpu.se().util_avg;
//! assert!((215..=300).contains(&util), "a 25% duty cycle settles around 256: {util}");
//! ```
//!
//! The crate knows nothing of runqueues: callers pass in the weights, counts
//! and running flags the kernel would read at each update ([`SeLoad`],
//! [`CfsRqLoad`]). Task groups (`group`: cgroup v2 `cpu.weight` to
//! `tg->shares`, [`calc_group_shares`], `tg->load_avg` with its 1/64 filter and
//! 1 ms rate limit, the propagation of a group cfs_rq's changes into its group
//! entity, `h_load`) are pure functions over state the caller keeps per group
//! ([`TaskGroup`]) and per cfs_rq ([`CfsRqTg`]); walking the hierarchy is the
//! caller's. Deliberately left out: CFS bandwidth throttling (so
//! `cfs_rq_clock_pelt() == rq_clock_pelt()`), the hardware-pressure signal,
//! steal time, 32-bit kernels' `last_update_time_copy`, and tracepoints.

mod avg;
mod cfs_rq;
mod clock;
mod consts;
mod error;
mod group;
mod init;
mod pattern;
mod rq_avg;
mod runnable_load;
mod sim;
mod single;
mod util_est;

pub use avg::{SchedAvg, accumulate_pelt_segments, decay_load, pelt_divider};
pub use cfs_rq::{
    CfsRqAvg, CfsRqLoad, LoadAvgUpdate, Removed, SeLoad, SumsTruncated, UpdateFlags,
    cfs_se_util_change, scale_load_down, update_load_avg_blocked_se, update_load_avg_se,
};
pub use clock::{LOST_IDLE_UTIL_SUM_THRESHOLD, RqClockPelt, cap_scale};
pub use consts::{
    DECAY_CUTOFF_PERIODS, LOAD_AVG_MAX, LOAD_AVG_MAX_STEPS, LOAD_AVG_PERIOD, PELT_MIN_DIVIDER,
    PELT_PERIOD_UNITS, RUNNABLE_AVG_YN_INV, SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SHIFT,
    SCHED_FIXEDPOINT_SHIFT, UTIL_AVG_UNCHANGED, UTIL_EST_MARGIN, UTIL_EST_WEIGHT_SHIFT,
};
pub use error::PeltError;
pub use group::{
    CGROUP_WEIGHT_DFL, CGROUP_WEIGHT_MAX, CGROUP_WEIGHT_MIN, CfsRqTg, GroupRq, HLoadLevel,
    MAX_SHARES, MIN_SHARES, NICE_0_LOAD_SCALED, NSEC_PER_MSEC, TaskGroup,
    attach_entity_load_avg_tg, calc_group_shares, cfs_rq_is_decayed, clear_tg_load_avg,
    detach_entity_load_avg_tg, propagate_entity_load_avg, scale_load, sched_weight_from_cgroup,
    sched_weight_to_cgroup, skip_blocked_update, task_h_load, tg_shares_from_cpu_weight,
    update_cfs_group, update_cfs_rq_h_load, update_cfs_rq_load_avg_tg, update_load_avg_tg,
    update_tg_cfs_load, update_tg_cfs_runnable, update_tg_cfs_util, update_tg_load_avg,
};
pub use init::{
    RunnableInit, init_entity_runnable_average, init_util_avg_full_scale, post_init_entity_util_avg,
};
pub use pattern::{Pattern, PatternItem, Phase, format_duration_ns, parse_duration_ns};
pub use rq_avg::{
    scale_irq_capacity, scale_rt_capacity, update_dl_rq_load_avg, update_irq_load_avg,
    update_rt_rq_load_avg,
};
pub use runnable_load::{RunnableLoad, RunnableLoadForm};
pub use sim::{MAX_SIM_WEIGHT, Sample, Samples, SimConfig, simulate};
pub use single::{OneTaskCpu, OneTaskCpuConfig, TaskState};
pub use util_est::{task_util_est, util_est_dequeue, util_est_enqueue, util_est_update};
