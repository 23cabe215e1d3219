//! Project automation, in the cargo-xtask style: plain Rust, std only.
//!
//! `cargo xtask verify` is the one test command (README, `.ci/run`).
//! `cargo xtask bench` runs the benchmarks.
//!
//! Every subcommand prints each command it runs before running it.

// xtask is tooling, not a model crate: it may time its steps with the wall clock.
#![allow(clippy::disallowed_methods)]

use std::env;
use std::process::{Command, ExitCode};
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  verify [--full]   fmt check, clippy (-D warnings), workspace tests, doc build;
                    --full raises proptest case counts and runs slow tests
  bench [FILTER]    run the benchmarks (release build)
";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let Some((cmd, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match cmd.as_str() {
        "verify" => verify(rest),
        "bench" => bench(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => {
            eprintln!("xtask: unknown command `{other}`\n");
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("xtask: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// The cargo that invoked us (so the pinned toolchain is used), or `cargo`.
fn cargo() -> String {
    env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// One step of a pipeline: a label and a command line.
struct Step {
    label: &'static str,
    args: Vec<&'static str>,
    envs: Vec<(&'static str, String)>,
}

fn step(label: &'static str, args: &[&'static str]) -> Step {
    Step {
        label,
        args: args.to_vec(),
        envs: Vec::new(),
    }
}

/// Runs one step, printing it first and its timing after. Errors name the step.
fn run_step(s: &Step) -> Result<f64, String> {
    let envs: String = s.envs.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    eprintln!("==> [{}] {envs}cargo {}", s.label, s.args.join(" "));
    let start = Instant::now();
    let status = Command::new(cargo())
        .args(&s.args)
        .envs(s.envs.iter().map(|(k, v)| (*k, v.as_str())))
        .status()
        .map_err(|e| format!("{}: cannot run cargo: {e}", s.label))?;
    let secs = start.elapsed().as_secs_f64();
    if !status.success() {
        return Err(format!(
            "step `{}` failed ({status}) after {secs:.1}s",
            s.label
        ));
    }
    eprintln!("    [{}] ok in {secs:.1}s", s.label);
    Ok(secs)
}

/// `cargo xtask verify [--full]`.
fn verify(args: &[String]) -> Result<(), String> {
    let mut full = false;
    for a in args {
        match a.as_str() {
            "--full" => full = true,
            other => return Err(format!("verify: unknown option `{other}`\n\n{USAGE}")),
        }
    }
    // Proptest case counts: a default that keeps CI well inside its budget on
    // 2 cores, raised by --full. An explicit PROPTEST_CASES in the environment wins.
    let cases =
        env::var("PROPTEST_CASES").unwrap_or_else(|_| if full { "1024" } else { "64" }.to_owned());
    let mut test = step(
        "test",
        &["test", "--workspace", "--locked", "--all-targets"],
    );
    test.envs.push(("PROPTEST_CASES", cases));
    if full {
        test.envs.push(("LBSIM_FULL_TESTS", "1".to_owned()));
    }
    let mut doc = step("doc", &["doc", "--workspace", "--no-deps", "--locked"]);
    doc.envs.push(("RUSTDOCFLAGS", "-D warnings".to_owned()));
    let steps = [
        step("fmt", &["fmt", "--all", "--check"]),
        step(
            "clippy",
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ],
        ),
        test,
        doc,
    ];
    let start = Instant::now();
    let mut timings = Vec::new();
    for s in &steps {
        match run_step(s) {
            Ok(secs) => timings.push(format!("{} {secs:.0}s", s.label)),
            Err(e) => {
                eprintln!(
                    "verify: FAILED at step `{}` ({} of {} steps passed)",
                    s.label,
                    timings.len(),
                    steps.len()
                );
                return Err(e);
            }
        }
    }
    eprintln!(
        "verify: all {} steps passed in {:.0}s ({})",
        steps.len(),
        start.elapsed().as_secs_f64(),
        timings.join(", ")
    );
    Ok(())
}

/// `cargo xtask bench [FILTER]`: every divan benchmark in the workspace, release build.
fn bench(args: &[String]) -> Result<(), String> {
    let mut s = step("bench", &["bench", "--workspace", "--locked"]);
    let filter: Vec<&'static str> = args.iter().map(|a| &*a.clone().leak()).collect();
    if !filter.is_empty() {
        s.args.push("--");
        s.args.extend(filter);
    }
    run_step(&s).map(|_| ())
}
