//! One module per `lbsim` subcommand: its clap arguments and its `run`.

pub mod pelt;
pub mod run;
pub mod topology;
