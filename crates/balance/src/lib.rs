//! The Linux kernel's fair-class balancer: periodic load balancing, newly idle and
//! nohz idle balancing, active balance, and wake-up and fork placement.
//!
//! Follows kernel/sched/fair.c of v6.6, cross-checked against v6.12 (each function names
//! the kernel function and version it follows and says where it differs), with the
//! experiment switches of ../shared/EXPERIMENTS.md as sched features and tunables. The
//! engine calls a [`ctx::Balancer`] at the kernel's decision points; the balancer reads and
//! changes the runqueues through [`ctx::BalanceCtx`] and reports its work
//! ([`cost::WorkAccount`]) so the engine can charge it in simulated time.
//!
//! Modules: [`kernel`] (the [`kernel::KernelBalancer`] entry points), [`legacy`] (the
//! pre-v5.5 balancer of v4.6-v5.4, [`legacy::LegacyBalancer`]), [`lb`] (one
//! load_balance() pass), [`rebalance`] (periodic balancing and intervals), [`newidle`]
//! (newly idle balancing), [`nohz`] (idle load balancer), [`wake`] and [`fork`] (wake-up,
//! fork and exec placement), [`state`] (per-domain, per-group and nohz state),
//! [`schedstat`] (/proc/schedstat counters), [`check`] (decision records for the invariant
//! checks), [`trivial`] (a no-balancing reference), [`rqs`] (the runqueues, with the group
//! sums kept up to date).
//!
//! Deliberately left out: NUMA balancing, group scheduling, CFS bandwidth, energy-aware
//! scheduling, core scheduling, asym packing priorities (the topology crate does not build
//! SD_ASYM_PACKING), CPU hotplug, and the proportional-newidle and cache-aware paths of
//! recent trees.

pub mod check;
pub mod cost;
pub mod ctx;
pub mod fork;
pub mod kernel;
pub mod lb;
pub mod legacy;
pub mod newidle;
pub mod nohz;
pub mod params;
pub mod rebalance;
pub mod rqs;
pub mod schedstat;
pub mod state;
pub mod trace;
pub mod trivial;
pub mod wake;

pub use trivial::TrivialBalancer;
