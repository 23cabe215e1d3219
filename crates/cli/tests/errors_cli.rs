//! One error style on every path (issue 18, finding 8): `lbsim: error: ...` on one line of
//! standard error, nothing on standard output, exit 2; the argument parser's errors included,
//! while `--help` and `--version` print as usual with exit 0.

use std::process::{Command, Output, Stdio};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("the lbsim binary runs")
}

/// The one line `args` fail with (exit 2, nothing on stdout), without its newline.
fn fails(args: &[&str]) -> String {
    one_line_error(args, &lbsim(args))
}

fn one_line_error(args: &[&str], out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.ends_with('\n'), "{args:?}: {err}");
    err.trim_end().to_owned()
}

#[test]
fn every_error_is_one_line_with_exit_2() {
    let run = ["run", "--topology", "4", "--duration", "1ms"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> { [&run[..], extra].concat() };
    for (args, expected) in [
        // The argument parser's own errors.
        (
            with(&["--workload", "busy:threads=1", "--seed", "-1"]),
            "unexpected argument '-1' found; tip: to pass '-1' as a value, use '-- -1' (see `lbsim run --help`)",
        ),
        (
            with(&["--workload", "busy:threads=1", "--seed", "1", "--seed", "2"]),
            "the argument '--seed <SEED>' cannot be used multiple times (see `lbsim run --help`)",
        ),
        (
            with(&[
                "--workload",
                "busy:threads=1",
                "--seed",
                "99999999999999999999999",
            ]),
            "invalid value '99999999999999999999999' for '--seed <SEED>': number too large to fit in target type",
        ),
        (
            with(&["--workload", "busy:threads=1", "--max-cpus", "8193"]),
            "invalid value '8193' for '--max-cpus <N>': 8193 is not in 1..=8192",
        ),
        (
            vec!["pelt", "--pattern", "run=1ms"],
            "the following required arguments were not provided: --duration <D> (see `lbsim pelt --help`)",
        ),
        (
            vec![],
            "a command is needed: one of topology, pelt, run, compare, sweep, repro, features, validate, calibrate (`lbsim --help` describes them)",
        ),
        // Input echoed back: its control characters are escaped.
        (
            vec!["pelt", "--pattern", "\nx", "--duration", "10ms"],
            "--pattern `\\nx`: item 1 `x` is not `run=DURATION` or `sleep=DURATION`",
        ),
        // A file with no end is refused by its size, naming it once.
        (
            with(&["--workload", "rtapp:/dev/zero"]),
            "--workload: /dev/zero: the file is larger than lbsim's 16777216-byte limit for input files",
        ),
        // A missing file's OS error, once.
        (
            with(&["--workload", "rtapp:no/such/file.json"]),
            "--workload: no/such/file.json: No such file or directory (os error 2)",
        ),
        // A tunable in a features list is named as the --features list it came from.
        (
            with(&["--workload", "busy:threads=1", "--features", "foo=3"]),
            "--features `foo=3`: foo=3: unknown parameter `foo`; did you mean `hz`?",
        ),
    ] {
        assert_eq!(
            fails(&args),
            format!("lbsim: error: {expected}"),
            "{args:?}"
        );
    }
}

#[test]
fn help_and_version_print_on_standard_output_with_exit_0() {
    for args in [
        &["--help"][..],
        &["--version"],
        &["run", "--help"],
        &["topology", "-h"],
    ] {
        let out = lbsim(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(out.stderr.is_empty(), "{args:?}");
        assert!(out.stdout.len() > 10, "{args:?}");
    }
    // The budget flags are documented in `lbsim run --help`.
    let help = String::from_utf8(lbsim(&["run", "--help"]).stdout).unwrap();
    for flag in [
        "--max-cpus <N>",
        "--max-nodes <N>",
        "--max-tasks <N>",
        "--max-cpusets <N>",
        "--max-trace-records <N>",
        "--force",
    ] {
        assert!(help.contains(flag), "no {flag} in `lbsim run --help`");
    }
}

/// `> /dev/full` said only `No space left on device`: the message says what failed.
#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_to_standard_output_says_so() {
    for args in [
        &["topology", "hikey"][..],
        &["topology", "--list"],
        &["features"],
        &["pelt", "--pattern", "run=1ms", "--duration", "10ms"],
        &[
            "run",
            "--topology",
            "4",
            "--workload",
            "busy:threads=2",
            "--duration",
            "1ms",
        ],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_lbsim"))
            .args(args)
            .stdout(Stdio::from(full))
            .output()
            .unwrap();
        assert_eq!(
            one_line_error(args, &out),
            "lbsim: error: writing standard output failed: No space left on device (os error 28)",
            "{args:?}"
        );
    }
}

/// A bad trace names the file and its line (text) or byte offset (protobuf); a good one gives
/// the machine when no `--topology` does, with a warning.
#[test]
fn trace_workloads() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let text = dir.join("bad-trace.txt");
    std::fs::write(
        &text,
        "cpus=2\n  a-1 [000] 1.0: sched_switch: prev_comm=a\n",
    )
    .unwrap();
    let pb = dir.join("bad-trace.pftrace");
    std::fs::write(&pb, [0x0a, 0x05, 0x0a]).unwrap();
    let wl = |p: &std::path::Path| format!("trace:{}", p.display());
    let (t, p) = (wl(&text), wl(&pb));
    assert_eq!(
        fails(&["run", "--workload", &t]),
        format!(
            "lbsim: error: --workload: {}:2: no prev_pid= field",
            text.display()
        )
    );
    assert_eq!(
        fails(&["run", "--workload", &p]),
        format!(
            "lbsim: error: --workload: {}: at byte 0: length 5 runs past the end of its message",
            pb.display()
        )
    );
    let good = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../workload/tests/data/trace/trace-cmd-report.txt"
    );
    let out = lbsim(&[
        "run",
        "--workload",
        &format!("trace:{good}"),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("lbsim: warning: no --topology given: 4 CPUs, as in the trace\n"),
        "{err}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .matches("\"cpu\":")
            .count(),
        4 + 3,
        "4 CPUs and 3 tasks"
    );
}
