//! `cargo xtask fuzz` and `cargo xtask soak`, and verify's short fuzz step.
//!
//! With a nightly toolchain and cargo-fuzz installed, `fuzz` runs the libFuzzer targets of
//! `fuzz/` (`cargo +nightly fuzz run`); otherwise, or with `--stable`, the same targets
//! (crates/fuzz) on the stable driver `lbsim-fuzz`. Both start from `fuzz/corpus/<target>/`
//! and save failing inputs under `fuzz/artifacts/<target>/`.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cargo;

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent directory")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// Runs `program args...` in the repository root, printing it first.
fn run(label: &str, program: &str, args: &[String]) -> Result<(), String> {
    eprintln!("==> [{label}] {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .current_dir(root())
        .status()
        .map_err(|e| format!("{label}: cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("step `{label}` failed ({status})"))
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// Whether `cargo +nightly fuzz` works here.
fn cargo_fuzz_available() -> bool {
    Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The targets of `fuzz/fuzz_targets/`.
fn libfuzzer_targets() -> Result<Vec<String>, String> {
    let dir = root().join("fuzz/fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// `cargo xtask fuzz [--time S] [--target NAME] [--stable] [--replay FILE]`.
pub fn fuzz(args: &[String]) -> Result<(), String> {
    let mut time = "60".to_owned();
    let mut target = None;
    let mut replay = None;
    let mut stable = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("fuzz: {name} takes a value"))
        };
        match a.as_str() {
            "--time" => time = value("--time")?,
            "--target" => target = Some(value("--target")?),
            "--replay" => replay = Some(value("--replay")?),
            "--stable" => stable = true,
            other => return Err(format!("fuzz: unknown option `{other}`")),
        }
    }
    if let Some(file) = replay {
        let t = target.ok_or("fuzz: --replay needs --target NAME")?;
        let mut a = strings(&["run", "--locked", "-p", "lbsim-fuzz", "--", "replay"]);
        a.extend(["--target".to_owned(), t, file]);
        return run("fuzz", &cargo(), &a);
    }
    if !stable && cargo_fuzz_available() {
        return libfuzzer(&time, target.as_deref());
    }
    eprintln!("    [fuzz] no nightly cargo-fuzz (or --stable): the stable driver");
    let mut a = strings(&[
        "run",
        "--locked",
        "--quiet",
        "-p",
        "lbsim-fuzz",
        "--",
        "fuzz",
    ]);
    a.push(format!("--time={time}"));
    if let Some(t) = target {
        a.push(format!("--target={t}"));
    }
    run("fuzz", &cargo(), &a)
}

/// Each libFuzzer target for `time` seconds; new inputs go to `target/fuzz-corpus/`, so the
/// committed seed corpus stays as written.
fn libfuzzer(time: &str, only: Option<&str>) -> Result<(), String> {
    let mut execs = Vec::new();
    let mut failed = Vec::new();
    for t in libfuzzer_targets()? {
        if only.is_some_and(|o| o != t) {
            continue;
        }
        let work = target_dir().join("fuzz-corpus").join(&t);
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let args = vec![
            "+nightly".to_owned(),
            "fuzz".to_owned(),
            "run".to_owned(),
            t.clone(),
            work.display().to_string(),
            format!("fuzz/corpus/{t}"),
            "--".to_owned(),
            format!("-max_total_time={time}"),
            "-timeout=30".to_owned(),
            "-rss_limit_mb=2048".to_owned(),
            "-print_final_stats=1".to_owned(),
        ];
        eprintln!("==> [fuzz] cargo {}", args.join(" "));
        let mut child = Command::new("cargo")
            .args(&args)
            .current_dir(root())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("fuzz: cannot run cargo fuzz: {e}"))?;
        let mut n = String::from("?");
        for line in BufReader::new(child.stderr.take().expect("piped"))
            .lines()
            .map_while(Result::ok)
        {
            if let Some(v) = line.strip_prefix("stat::number_of_executed_units:") {
                n = v.trim().to_owned();
            }
            eprintln!("{line}");
        }
        let status = child.wait().map_err(|e| format!("fuzz: {e}"))?;
        if !status.success() {
            failed.push(format!(
                "{t} ({status}; the input is under fuzz/artifacts/{t}/; replay: cargo +nightly fuzz run {t} FILE)"
            ));
        }
        execs.push(format!("{t} {n}"));
    }
    eprintln!("    [fuzz] executions per target: {}", execs.join(", "));
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("fuzz: failed: {}", failed.join("; ")))
    }
}

/// `cargo xtask soak [--minutes M] [--seed N]`: random scenarios through the release
/// `lbsim` under `--check`.
pub fn soak(args: &[String]) -> Result<(), String> {
    let mut extra = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--minutes" | "--seed" | "--timeout" => {
                let v = it
                    .next()
                    .ok_or_else(|| format!("soak: {a} takes a value"))?;
                extra.push(format!("{a}={v}"));
            }
            other => return Err(format!("soak: unknown option `{other}`")),
        }
    }
    run(
        "soak",
        &cargo(),
        &strings(&[
            "build",
            "--release",
            "--locked",
            "--quiet",
            "-p",
            "lbsim",
            "-p",
            "lbsim-fuzz",
        ]),
    )?;
    let release = target_dir().join("release");
    let mut a = vec![
        "soak".to_owned(),
        format!("--lbsim={}", release.join("lbsim").display()),
    ];
    a.extend(extra);
    run(
        "soak",
        &release.join("lbsim-fuzz").display().to_string(),
        &a,
    )
}

/// verify's step: every target on the stable driver for its fixed number of inputs, seed 1.
pub fn verify_step() -> Result<f64, String> {
    let start = Instant::now();
    run(
        "fuzz",
        &cargo(),
        &strings(&[
            "run",
            "--locked",
            "--quiet",
            "-p",
            "lbsim-fuzz",
            "--",
            "fuzz",
            "--verify",
            "--seed=1",
        ]),
    )?;
    let secs = start.elapsed().as_secs_f64();
    eprintln!("    [fuzz] ok in {secs:.1}s");
    Ok(secs)
}
