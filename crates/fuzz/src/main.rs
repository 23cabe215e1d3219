//! `lbsim-fuzz`: the stable-toolchain fuzz driver and the soak runner (`cargo xtask fuzz`,
//! `cargo xtask soak` and `cargo xtask verify` run it).
//!
//! ```text
//! lbsim-fuzz fuzz [--target NAME] [--time S | --runs N | --verify] [--seed N] [--timeout S] [--mem-mb N]
//! lbsim-fuzz replay --target NAME FILE
//! lbsim-fuzz show FILE
//! lbsim-fuzz soak --lbsim PATH [--minutes M] [--seed N] [--timeout S]
//! lbsim-fuzz worker ...   (started by `fuzz`)
//! ```

// Tooling: it measures wall-clock time.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use lbsim_fuzz::driver::supervise::{Outcome, run_worker, summary_line};
use lbsim_fuzz::driver::worker::{self, EXIT_CRASH, Plan};
use lbsim_fuzz::{TARGETS, Target, soak, target};

const USAGE: &str = "\
usage: lbsim-fuzz fuzz [--target NAME] [--time S | --runs N | --verify] [--seed N] [--timeout S] [--mem-mb N]
       lbsim-fuzz replay --target NAME FILE
       lbsim-fuzz show FILE   (the `lbsim run` command of a `sim` input)
       lbsim-fuzz soak --lbsim PATH [--minutes M] [--seed N] [--timeout S]";

/// The repository root (`fuzz/corpus`, `fuzz/artifacts`).
fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Options as `--name value` pairs, and the rest.
struct Opts {
    pairs: Vec<(String, String)>,
    flags: Vec<String>,
    rest: Vec<String>,
}

fn opts(args: &[String]) -> Opts {
    let mut o = Opts {
        pairs: Vec::new(),
        flags: Vec::new(),
        rest: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(name) = a.strip_prefix("--") {
            if let Some((k, v)) = name.split_once('=') {
                o.pairs.push((k.to_owned(), v.to_owned()));
            } else if name == "verify" {
                o.flags.push(name.to_owned());
            } else if let Some(v) = it.next() {
                o.pairs.push((name.to_owned(), v.clone()));
            }
        } else {
            o.rest.push(a.clone());
        }
    }
    o
}

impl Opts {
    fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn num<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        self.get(name)
            .map(|v| {
                v.parse()
                    .map_err(|_| format!("--{name} `{v}`: not a number"))
            })
            .transpose()
    }

    fn targets(&self) -> Result<Vec<&'static Target>, String> {
        match self.get("target") {
            None => Ok(TARGETS.iter().collect()),
            Some(n) => target(n).map(|t| vec![t]).ok_or_else(|| {
                let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
                format!("no target `{n}` (targets: {})", names.join(", "))
            }),
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let o = opts(rest);
    let result = match cmd.as_str() {
        "fuzz" => fuzz(&o),
        "worker" => return worker_main(&o),
        "replay" => replay(&o),
        "show" => show(&o),
        "soak" => soak_main(&o),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lbsim-fuzz: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Each target in its own worker process, one after the other; executions per target at
/// the end.
fn fuzz(o: &Opts) -> Result<(), String> {
    let verify = o.flags.iter().any(|f| f == "verify");
    let time = o.num::<f64>("time")?;
    let runs = o.num::<u64>("runs")?;
    let seed = o.num::<u64>("seed")?.unwrap_or(1);
    let timeout = o.num::<f64>("timeout")?.unwrap_or(30.0);
    let mem_mb = o.num::<u64>("mem-mb")?.unwrap_or(2048);
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let root = root();
    let tmp = std::env::temp_dir();
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    for t in o.targets()? {
        let mut args = vec![format!("--target={}", t.name), format!("--seed={seed}")];
        match (verify, runs, time) {
            (true, _, _) => args.push(format!("--runs={}", t.verify_runs)),
            (false, Some(n), _) => args.push(format!("--runs={n}")),
            (false, None, Some(s)) => args.push(format!("--time={s}")),
            (false, None, None) => args.push("--time=60".to_owned()),
        }
        args.push(format!("--timeout={timeout}"));
        let current = tmp.join(format!(
            "lbsim-fuzz-{}-{}.current",
            t.name,
            std::process::id()
        ));
        args.push(format!("--current={}", current.display()));
        eprintln!("lbsim-fuzz: {}: {}", t.name, args.join(" "));
        let start = Instant::now();
        let outcome = run_worker(&exe, &root, t.name, &current, mem_mb, &args)?;
        let _ = std::fs::remove_file(&current);
        let secs = start.elapsed().as_secs_f64();
        match outcome {
            Outcome::Done(s) => lines.push(format!(
                "{:<13} {:>9} executions in {secs:>5.1}s ({:>7.0}/s), {} accepted, pool {}",
                t.name,
                s.execs,
                s.execs as f64 / secs.max(1e-9),
                s.accepted,
                s.pool
            )),
            Outcome::Failed(why) => {
                lines.push(format!("{:<13} FAILED after {secs:.1}s", t.name));
                failures.push(why);
            }
        }
    }
    eprintln!("lbsim-fuzz: executions per target:");
    for l in &lines {
        eprintln!("  {l}");
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} target(s) failed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        ))
    }
}

fn worker_main(o: &Opts) -> ExitCode {
    let plan = (|| -> Result<Plan, String> {
        let t = o.targets()?;
        Ok(Plan {
            target: t[0],
            seed: o.num("seed")?.unwrap_or(1),
            runs: o.num("runs")?,
            time: o.num::<f64>("time")?.map(Duration::from_secs_f64),
            timeout: Duration::from_secs_f64(o.num("timeout")?.unwrap_or(30.0)),
            root: root(),
            current: PathBuf::from(o.get("current").ok_or("--current is required")?),
        })
    })();
    let plan = match plan {
        Ok(p) => p,
        Err(e) => {
            eprintln!("lbsim-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    match worker::run(&plan) {
        Ok(s) => {
            println!("{}", summary_line(&s));
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{e}");
            ExitCode::from(EXIT_CRASH as u8)
        }
    }
}

/// Runs one saved input in this process: a failure panics here, with its backtrace.
fn replay(o: &Opts) -> Result<(), String> {
    let t = o.targets()?;
    let [file] = o.rest.as_slice() else {
        return Err(format!("replay takes one FILE\n{USAGE}"));
    };
    let data = std::fs::read(file).map_err(|e| format!("{file}: {e}"))?;
    let accepted = (t[0].run)(&data);
    eprintln!(
        "lbsim-fuzz: {}: {file}: no failure ({})",
        t[0].name,
        if accepted { "accepted" } else { "refused" }
    );
    Ok(())
}

/// Prints the `lbsim run` command of the scenario a `sim` input draws.
fn show(o: &Opts) -> Result<(), String> {
    let [file] = o.rest.as_slice() else {
        return Err(format!("show takes one FILE\n{USAGE}"));
    };
    let data = std::fs::read(file).map_err(|e| format!("{file}: {e}"))?;
    let s = lbsim_fuzz::draw::scenario(
        &mut lbsim_fuzz::draw::Bytes::new(&data),
        &lbsim_fuzz::sim::SIM_BOUNDS,
    );
    println!("{}", s.command());
    Ok(())
}

fn soak_main(o: &Opts) -> Result<(), String> {
    let plan = soak::Plan {
        lbsim: PathBuf::from(o.get("lbsim").ok_or("soak: --lbsim PATH is required")?),
        time: Duration::from_secs_f64(o.num::<f64>("minutes")?.unwrap_or(5.0) * 60.0),
        seed: o.num("seed")?.unwrap_or(1),
        timeout: Duration::from_secs_f64(o.num("timeout")?.unwrap_or(300.0)),
    };
    eprintln!(
        "soak: random scenarios under --check for {:.0}s (seed {}, {:?} per run)",
        plan.time.as_secs_f64(),
        plan.seed,
        plan.timeout
    );
    let s = soak::soak(&plan);
    eprintln!(
        "soak: {} runs, {} refused by lbsim, {} failed",
        s.runs,
        s.refused,
        s.failures.len()
    );
    if s.failures.is_empty() {
        Ok(())
    } else {
        Err(format!("soak: {} failure(s)", s.failures.len()))
    }
}
