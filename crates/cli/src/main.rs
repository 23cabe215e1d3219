//! The `lbsim` binary: the command-line front end over the lbsim crates.
//!
//! Each subcommand lives in its own module under `commands/`. Every error a
//! user can cause (a malformed spec, flag or file) is reported on stderr as one
//! clear line naming what is wrong, with exit code 2; nothing panics.

use lbsim::commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// lbsim: a simulator of the Linux kernel's fair-class load balancer.
#[derive(Debug, Parser)]
#[command(name = "lbsim", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Build a machine's sched domains and print them as the kernel's debugfs shows them.
    Topology(commands::topology::Args),
    /// Print the PELT signals (util_avg, load_avg, ...) of one task following a run/sleep pattern.
    Pelt(commands::pelt::Args),
    /// Simulate workloads on a machine and report what the scheduler did.
    Run(commands::run::Args),
    /// Run a scenario over many seeds with two feature sets; compare every metric.
    Compare(commands::compare::Args),
    /// Reproduce the five seed experiments: the reported numbers beside lbsim's.
    Repro(commands::repro::Args),
    /// Print the sched features as debugfs shows them, then every tunable with its value.
    Features(commands::features::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Topology(args) => commands::topology::run(&args),
        Cmd::Pelt(args) => commands::pelt::run(&args),
        Cmd::Run(args) => commands::run::run(&args),
        Cmd::Compare(args) => commands::compare::run(&args),
        Cmd::Repro(args) => commands::repro::run(&args),
        Cmd::Features(args) => commands::features::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lbsim: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
