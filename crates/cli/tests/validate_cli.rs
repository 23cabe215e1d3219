//! `lbsim validate`: its built-in scenarios, its errors, and a short real-and-simulated run
//! whose JSON carries both sides of every metric. The run is forced past the load check
//! (a test machine is seldom idle) and lasts 200 ms a side.

use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("the lbsim binary runs")
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
fn list_names_the_builtin_scenarios() {
    let out = lbsim(&["validate", "--list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "spinners-n+1",
        "spinners-2n",
        "periodic-25pct",
        "pipe-within",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
}

#[test]
fn errors_are_one_line() {
    let e = error_line(&["validate", "nosuch", "--force"]);
    assert!(
        e.starts_with(
            "lbsim: error: no scenario `nosuch`: give a scenario file or one of spinners-n+1,"
        ),
        "{e}"
    );
    assert_eq!(
        error_line(&["validate", "--runs", "1", "--force"]),
        "lbsim: error: --runs must be at least 2 (Welch's test needs two runs a side)"
    );
    assert!(
        error_line(&["validate", "--kernel", "9.9", "--force"])
            .starts_with("lbsim: error: --kernel `9.9`: no kernel profile `9.9`"),
    );
}

#[test]
fn a_short_validation_reports_both_sides_in_json() {
    let out = lbsim(&[
        "validate",
        "spinners-n+1",
        "--runs",
        "2",
        "--duration",
        "200ms",
        "--force",
        "--format",
        "json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sc = &v["scenarios"][0];
    assert_eq!(sc["name"], "spinners-n+1");
    let jain = sc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "runtime_jain")
        .expect("a fairness metric");
    assert_eq!(jain["real"]["values"].as_array().unwrap().len(), 2);
    assert_eq!(jain["lbsim"]["values"].as_array().unwrap().len(), 2);
    // Both sides' fairness is a Jain index: in (0, 1].
    for side in ["real", "lbsim"] {
        let m = jain[side]["mean"].as_f64().unwrap();
        assert!(m > 0.0 && m <= 1.0 + 1e-9, "{side}: {m}");
    }
}
