//! The Linux kernel's fair-class balancer policy: periodic load balancing, newly idle and
//! nohz idle balancing, active balance, and wake-up and fork placement.
//!
//! The engine calls a [`ctx::Balancer`] at the kernel's decision points; the policy reads and
//! changes the runqueues through [`ctx::BalanceCtx`] and reports its work
//! ([`cost::WorkAccount`]) so the engine can charge it in simulated time.

pub mod cost;
pub mod ctx;
pub mod trivial;

pub use trivial::TrivialBalancer;
