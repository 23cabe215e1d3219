//! One module per `lbsim` subcommand: its clap arguments and its `run`.

pub mod compare;
pub mod features;
pub mod pelt;
pub mod repro;
pub mod run;
pub mod topology;
