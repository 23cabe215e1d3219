//! `lbsim calibrate`: a short calibration runs and writes a cost profile of the right shape
//! (every figure a positive, finite distribution; every derived value a cost parameter that
//! `--cost` loads), its output file is written whole and never over an existing one without
//! `--force`, and `--cost` refuses a bad profile in one line. No timing is asserted: the
//! machine running the tests may be loaded.

use std::path::PathBuf;
use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("the lbsim binary runs")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lbsim-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn error_line(args: &[&str]) -> String {
    let out = lbsim(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    err.trim_end().to_owned()
}

#[test]
fn a_short_calibration_writes_a_profile_that_loads() {
    let out = lbsim(&["calibrate", "--duration", "50ms"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let text = String::from_utf8(out.stdout).unwrap();
    let t: toml::Table = text.parse().unwrap();
    assert_eq!(t["format"].as_integer(), Some(1));
    let cost = t["cost"].as_table().unwrap();
    for p in ["cost_wakeup_ns", "cost_context_switch_ns"] {
        let v = cost[p].as_integer().unwrap();
        assert!(v >= 0, "{p} = {v}");
    }
    // Every derived value says how it was derived; every figure is a distribution.
    let derivations = t["derivations"].as_table().unwrap();
    for p in cost.keys() {
        let d = derivations[p].as_table().unwrap();
        assert!(
            d.contains_key("formula") && d.contains_key("assumes"),
            "{p}"
        );
    }
    let figures = t["figures"].as_table().unwrap();
    for f in ["local_wake_syscall", "pinned_round_trip", "timer_overshoot"] {
        let fig = figures[f].as_table().expect(f);
        assert!(fig["samples"].as_integer().unwrap() > 0, "{f}");
        let get = |k: &str| fig[k].as_float().unwrap();
        for k in ["min", "p10", "median", "p90", "p99", "max", "mean"] {
            assert!(get(k).is_finite() && get(k) >= 0.0, "{f}.{k}");
        }
        assert!(get("median") > 0.0, "{f}");
        assert!(
            get("min") <= get("median") && get("median") <= get("max"),
            "{f}"
        );
    }
    let machine = t["machine"].as_table().unwrap();
    assert!(machine["nr_cpus"].as_integer().unwrap() >= 1);
    assert!(machine.contains_key("kernel"));
    // A machine with two usable CPUs also measures wake-ups across them.
    if machine["cpus_used"].as_array().unwrap().len() == 2 {
        assert!(figures.contains_key("cross_busy_round_trip"));
        assert!(figures.contains_key("cross_idle_round_trip"));
        assert!(cost.contains_key("cost_ipi_ns"));
    }
    // What it wrote is what --cost loads.
    let dir = temp_dir("calibrate-cli");
    let file = dir.join("cost.toml");
    std::fs::write(&file, &text).unwrap();
    let f = file.to_str().unwrap();
    let run = lbsim(&[
        "run",
        "--topology",
        "2",
        "--workload",
        "pingpong:cpus=0,1",
        "--duration",
        "20ms",
        "--cost",
        f,
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_output_file_is_never_overwritten_without_force() {
    let dir = temp_dir("calibrate-out");
    let file = dir.join("cost.toml");
    let f = file.to_str().unwrap();
    let out = lbsim(&["calibrate", "--duration", "20ms", "-o", f]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let first = std::fs::read_to_string(&file).unwrap();
    assert!(first.contains("\n[cost]\n"));
    assert_eq!(
        error_line(&["calibrate", "--duration", "20ms", "-o", f]),
        format!("lbsim: error: -o {f}: the file exists; pass --force to overwrite it")
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), first);
    let out = lbsim(&["calibrate", "--duration", "20ms", "-o", f, "--force"]);
    assert!(out.status.success());
    // Nothing but the file is left in the directory.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    assert_eq!(
        error_line(&["calibrate", "--duration", "0s"]),
        "lbsim: error: --duration must be greater than 0"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_cost_profile_is_refused_in_one_line() {
    let dir = temp_dir("calibrate-bad");
    let file = dir.join("bad.toml");
    std::fs::write(&file, "format = 1\n[cost]\ncost_ipi_ns = \"fast\"\n").unwrap();
    let f = file.to_str().unwrap();
    let expected = format!(
        "lbsim: error: --cost: {f}:3: key `cost.cost_ipi_ns`: expected an integer number of ns, found a string"
    );
    let run = ["run", "--topology", "2", "--workload", "busy", "--cost", f];
    assert_eq!(error_line(&run), expected);
    let compare = [
        "compare",
        "--topology",
        "2",
        "--workload",
        "busy",
        "--patched",
        "",
        "--cost",
        f,
    ];
    assert_eq!(error_line(&compare), expected);
    assert_eq!(
        error_line(&["validate", "spinners-n+1", "--force", "--cost", f]),
        expected
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
