//! One module per `lbsim` subcommand: its clap arguments and its `run`.

pub mod calibrate;
pub mod compare;
pub mod features;
pub mod pelt;
pub mod repro;
pub mod run;
pub mod sweep;
pub mod topology;
pub mod validate;

/// The long help of a `--workload` flag: `first` line, then every workload `lbsim_workload`
/// lists, with its keys, defaults and docs (derived from `lbsim_workload::WORKLOADS`).
pub fn workload_help(first: &str) -> String {
    format!(
        "{first}\n\nNAME:key=value,... where NAME is one of:\n{}",
        lbsim_workload::generators::workloads_help()
    )
}
