//! lbsim's fuzz targets, in one place for both drivers: cargo-fuzz's libFuzzer targets
//! (`fuzz/fuzz_targets/*.rs`, nightly) and the stable-toolchain random-input loop of
//! [`driver`] (`cargo xtask fuzz`, and a short fixed run in `cargo xtask verify`).
//!
//! Each target takes arbitrary bytes and feeds them to one of lbsim's input parsers (rt-app
//! JSON, machine specs, machine files, workload options, scenario files, `--features`/`--set`
//! lists), or builds a small scenario from them and simulates it under `check` ([`sim`]).
//! A target fails by panicking: on a panic inside lbsim, on an error message that breaks the
//! one-line rule, and (the simulation) on an invariant violation. Errors for bad input are
//! the expected outcome, not failures. Targets never read files a user did not name: inputs
//! that would make a parser open a path are skipped.
//!
//! [`soak`] runs random scenarios through the `lbsim` binary under `--check`.

pub mod draw;
pub mod driver;
pub mod sim;
pub mod soak;
pub mod targets;

pub use targets::{TARGETS, Target, target};
