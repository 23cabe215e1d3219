//! The `lbsim` binary: the command-line front end over the lbsim crates.
//!
//! Each subcommand lives in its own module under `commands/`. Every error a
//! user can cause (a malformed spec, flag or file) is reported on stderr as one
//! clear line naming what is wrong, with exit code 2; nothing panics.

use lbsim::{commands, errors};

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

/// lbsim: a simulator of the Linux kernel's fair-class load balancer.
#[derive(Debug, Parser)]
#[command(name = "lbsim", version, about, long_about = None)]
struct Cli {
    /// Log the scheduler's decisions on standard error in simulated time: `-v` load_balance()
    /// passes, placements and migrations, `-vv` every tracepoint (`RUST_LOG`, when set and not
    /// empty, is the filter instead and wins over `-v`, e.g. `RUST_LOG=lbsim::lb=debug`)
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    verbose: u8,
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
    /// Run a scenario over a grid of tunables, features and workload keys, many seeds each.
    Sweep(commands::sweep::Args),
    /// Reproduce the five seed experiments: the reported numbers beside lbsim's.
    Repro(commands::repro::Args),
    /// Print the sched features as debugfs shows them, then every tunable with its value.
    Features(commands::features::Args),
    /// Run a scenario for real on this machine's kernel and in simulation; compare every metric.
    Validate(commands::validate::Args),
    /// Measure this machine's scheduler costs and write them as a cost profile (`--cost FILE`).
    Calibrate(commands::calibrate::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e),
    };
    let rust_log = std::env::var("RUST_LOG").ok();
    match lbsim::log::filter(rust_log.as_deref(), cli.verbose) {
        Ok(Some(filter)) => lbsim::log::install(filter),
        Ok(None) => {}
        Err(e) => return fail(&errors::one_line(&e)),
    }
    let result = match cli.cmd {
        Cmd::Topology(args) => commands::topology::run(&args),
        Cmd::Pelt(args) => commands::pelt::run(&args),
        Cmd::Run(args) => commands::run::run(&args),
        Cmd::Compare(args) => commands::compare::run(&args),
        Cmd::Sweep(args) => commands::sweep::run(&args),
        Cmd::Repro(args) => commands::repro::run(&args),
        Cmd::Features(args) => commands::features::run(&args),
        Cmd::Validate(args) => commands::validate::run(&args),
        Cmd::Calibrate(args) => commands::calibrate::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&errors::one_line(&e)),
    }
}

/// `lbsim: error: MSG` on standard error; exit code 2.
fn fail(msg: &str) -> ExitCode {
    eprintln!("lbsim: error: {msg}");
    ExitCode::from(2)
}

/// What the argument parser refused: `--help` and `--version` print as clap prints them, with
/// exit 0; every error is one line with exit 2.
fn parse_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Standard output closed early (`lbsim --help | head`) is not an error.
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let cmd = Cli::command();
            let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
            fail(&format!(
                "a command is needed: one of {} (`lbsim --help` describes them)",
                names.join(", ")
            ))
        }
        _ => fail(&errors::clap_one_line(&e.render().to_string())),
    }
}
