//! The library behind the `lbsim` binary: its subcommands, the scenario builder, the
//! balancer choice and the built-in seed experiments, usable by the workspace tests.
//!
//! Each subcommand lives in its own module under [`commands`]. Every error a user can cause
//! (a malformed spec, flag or file) is an error value naming what is wrong; the binary prints
//! it on one line and exits with code 2.

pub mod balancer;
pub mod budget;
pub mod commands;
pub mod errors;
pub mod format;
pub mod host;
pub mod log;
pub mod output;
pub mod plot;
pub mod progress;
pub mod repro;
pub mod scenario;
pub mod stdout;
pub mod tables;
