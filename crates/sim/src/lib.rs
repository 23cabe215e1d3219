//! The discrete-event engine of lbsim.
//!
//! Simulated time is an integer number of nanoseconds ([`SimTime`]); events sit in a heap
//! ordered by `(time, sequence)` so that equal times pop in insertion order ([`EventQueue`]).
//! All randomness comes from one master seed through named, value-stable streams
//! ([`rng::SeedStreams`]). Nothing here reads the wall clock or the host.

pub mod engine;
pub mod experiment;
pub mod params;
pub mod profile;
pub mod queue;
pub mod stats;
pub mod time;

pub use lbsim_core::{log, metrics, rng, trace};
pub use queue::EventQueue;
pub use time::SimTime;
