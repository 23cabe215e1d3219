//! Tasks and runqueues of the Linux kernel's fair class: weights, the EEVDF pick of
//! v6.6–v6.12 (and, selectable, the legacy CFS pick of v6.1), sched features and tunables.
//!
//! Follows kernel/sched/fair.c and core.c of v6.12 (with the v6.6 and v6.1 differences noted
//! where they live). Leaves out: group scheduling (cgroups; `h_nr_running` equals `nr_running`
//! because the hierarchy is flat), bandwidth control, NUMA balancing, uclamp, core scheduling,
//! hrtick, and other scheduling classes (rt/dl appear only as the PELT signals they leave).
#![forbid(unsafe_code)]

pub mod cfs_rq;
pub mod entity;
pub mod features;
pub mod rq;
pub mod task;
pub mod weights;
