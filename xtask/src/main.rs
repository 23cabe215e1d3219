//! Project automation, in the cargo-xtask style: plain Rust, std only.
//!
//! `cargo xtask verify` is the one test command (README, `.ci/run`).
//! `cargo xtask bench` runs the benchmarks.
//! `cargo xtask params` regenerates `docs/parameters.md` from the parameter registry.
//! `cargo xtask fuzz` runs the fuzz targets, `cargo xtask soak` the soak (`fuzz.rs`).
//!
//! Every subcommand prints each command it runs before running it.

// xtask is tooling, not a model crate: it may time its steps with the wall clock.
#![allow(clippy::disallowed_methods)]

mod fuzz;

use std::env;
use std::process::{Command, ExitCode};
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  verify [--full]   fmt check, clippy (-D warnings), workspace tests, doc build,
                    a short fuzz run of every target, determinism, smoke;
                    --full raises proptest case counts and runs slow tests
  bench [FILTER]    run the benchmarks (release build)
  params            regenerate docs/parameters.md from the parameter registry
                    (`lbsim features --format markdown`)
  fuzz [--time S] [--target NAME] [--stable] [--replay FILE]
                    run the fuzz targets (cargo-fuzz on nightly where installed,
                    else the stable driver), S seconds each (default 60)
  soak [--minutes M] [--seed N]
                    random scenarios under --check through the release binary
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
        "params" => params(rest),
        "fuzz" => fuzz::fuzz(rest),
        "soak" => fuzz::soak(rest),
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

/// `cargo xtask verify [--full]`: fmt, clippy, tests, doc, a short fixed fuzz run of every
/// target (stable driver), the determinism check and the smoke run.
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
    let total = steps.len() + 3;
    for s in &steps {
        match run_step(s) {
            Ok(secs) => timings.push(format!("{} {secs:.0}s", s.label)),
            Err(e) => {
                eprintln!(
                    "verify: FAILED at step `{}` ({} of {total} steps passed)",
                    s.label,
                    timings.len(),
                );
                return Err(e);
            }
        }
    }
    for (label, f) in [
        ("fuzz", fuzz::verify_step as fn() -> Result<f64, String>),
        ("determinism", determinism),
        ("smoke", smoke),
    ] {
        match f() {
            Ok(secs) => timings.push(format!("{label} {secs:.0}s")),
            Err(e) => {
                eprintln!(
                    "verify: FAILED at step `{label}` ({} of {total} steps passed)",
                    timings.len()
                );
                return Err(e);
            }
        }
    }
    eprintln!(
        "verify: all {total} steps passed in {:.0}s ({})",
        start.elapsed().as_secs_f64(),
        timings.join(", ")
    );
    Ok(())
}

/// `cargo xtask params`: writes `docs/parameters.md` (a test of `lbsim` fails when the
/// committed file is stale).
fn params(args: &[String]) -> Result<(), String> {
    if let Some(other) = args.first() {
        return Err(format!("params: unknown option `{other}`\n\n{USAGE}"));
    }
    let text = capture(
        "params",
        &["run", "--quiet", "-p", "lbsim", "--"],
        &["features", "--format", "markdown"],
    )?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask has no parent directory")?;
    let path = root.join("docs/parameters.md");
    // Whole or not at all: write beside it, then rename over it.
    let tmp = root.join("docs/.parameters.md.tmp");
    // A failed write or rename removes the temporary file: nothing half-written is left.
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("params: {}: {e}", path.display())
        })?;
    eprintln!("    [params] wrote {}", path.display());
    Ok(())
}

/// The arguments of the determinism check: two experiments, two seeds a side.
const DETERMINISM_ARGS: [&str; 11] = [
    "run",
    "--release",
    "--locked",
    "--quiet",
    "-p",
    "lbsim",
    "--",
    "repro",
    "fairness",
    "newidle-bailout",
    "--runs=2",
];

/// Runs `cargo ARGS... EXTRA...` and returns its standard output; errors name the step.
fn capture(label: &str, args: &[&str], extra: &[&str]) -> Result<Vec<u8>, String> {
    eprintln!("==> [{label}] cargo {} {}", args.join(" "), extra.join(" "));
    let out = Command::new(cargo())
        .args(args)
        .args(extra)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("{label}: cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("step `{label}` failed ({})", out.status));
    }
    Ok(out.stdout)
}

/// The same `lbsim repro` twice, on one worker thread and on two: the outputs must be
/// byte-identical (same inputs and seeds give the same results, whatever the thread count).
fn determinism() -> Result<f64, String> {
    let start = Instant::now();
    let a = capture(
        "determinism",
        &DETERMINISM_ARGS,
        &["--format=json", "--jobs=1"],
    )?;
    let b = capture(
        "determinism",
        &DETERMINISM_ARGS,
        &["--format=json", "--jobs=2"],
    )?;
    if a != b {
        let (a, b) = (String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
        let line = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .map_or(0, |i| i + 1);
        return Err(format!(
            "step `determinism` failed: the two runs differ (first at line {line}); \
             replay with `cargo {} --format=json --jobs=1` and `--jobs=2`",
            DETERMINISM_ARGS.join(" ")
        ));
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "    [determinism] ok in {secs:.1}s ({} bytes, identical)",
        a.len()
    );
    Ok(secs)
}

/// The README's main-job command, as a newcomer types it.
fn smoke() -> Result<f64, String> {
    let start = Instant::now();
    let out = capture(
        "smoke",
        &["run", "--release", "-p", "lbsim", "--", "repro"],
        &[],
    )?;
    let text = String::from_utf8_lossy(&out);
    if !text.contains("util-spread") || !text.contains("prefer-sibling") {
        return Err("step `smoke` failed: `lbsim repro` did not print all five experiments".into());
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!("    [smoke] ok in {secs:.1}s");
    Ok(secs)
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
