//! `-v` and `RUST_LOG`: the scheduler's decisions logged on standard error in simulated time,
//! the same records a trace holds, with no change to the run.

use std::process::{Command, Output};

/// A run with load balancing, wake-up placement and migrations in 300 ms: 5 spinners and a
/// pipe pair on 4 CPUs.
const RUN: &[&str] = &[
    "run",
    "--topology",
    "4",
    "--workload",
    "busy:threads=5",
    "--workload",
    "pipe",
    "--duration",
    "300ms",
    "--seed",
    "3",
];

fn lbsim(args: &[&str], rust_log: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lbsim"));
    cmd.args(args).env_remove("RUST_LOG");
    if let Some(f) = rust_log {
        cmd.env("RUST_LOG", f);
    }
    cmd.output().expect("the lbsim binary runs")
}

/// The logged lines of `stderr`: `(target, "SECONDS.NANOSECONDS COMM-PID [CPU] EVENT: TEXT")`.
fn logged(stderr: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| {
            let mut it = l.trim_start().splitn(4, ' ');
            let (time, level, target, rest) = (it.next()?, it.next()?, it.next()?, it.next()?);
            if !matches!(level, "DEBUG" | "TRACE") {
                return None;
            }
            let target = target.strip_suffix(':')?.to_owned();
            Some((target, format!("{time} {rest}")))
        })
        .collect()
}

#[test]
fn verbose_logs_the_decision_points_as_the_trace_records_them_without_changing_the_run() {
    let quiet = lbsim(RUN, None);
    assert!(quiet.status.success());
    let loud = lbsim(&[RUN, &["-v"]].concat(), None);
    assert!(
        loud.status.success(),
        "{}",
        String::from_utf8_lossy(&loud.stderr)
    );
    assert_eq!(quiet.stdout, loud.stdout, "-v changed the run's report");
    // The JSON report holds the event stream's hash: logging changed no decision.
    let json = |extra: &[&str]| lbsim(&[RUN, &["--format", "json"], extra].concat(), None).stdout;
    assert_eq!(json(&[]), json(&["-vv"]), "-vv changed the run");
    assert!(logged(&quiet.stderr).is_empty(), "a run without -v logged");

    let lines = logged(&loud.stderr);
    let count = |t: &str| lines.iter().filter(|(target, _)| target == t).count();
    assert!(count("lbsim::lb") > 0, "no load_balance() pass logged");
    assert!(count("lbsim::wake") > 0, "no placement logged");
    assert!(count("lbsim::migrate") > 0, "no migration logged");
    assert_eq!(count("lbsim::sched"), 0, "-v logs only the decision points");

    // The same run traced: every logged line is a trace line of the same record, with the
    // trace's own simulated timestamp.
    let dir = std::env::temp_dir().join(format!("lbsim-log-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.ftrace");
    let _ = std::fs::remove_file(&path);
    let traced = lbsim(&[RUN, &["--trace", path.to_str().unwrap()]].concat(), None);
    assert!(traced.status.success());
    let trace = std::fs::read_to_string(&path).unwrap();
    let mut want: Vec<String> = trace
        .lines()
        .skip(1)
        .filter(|l| {
            [
                "lbsim_load_balance:",
                "sched_migrate_task:",
                "sched_wakeup:",
                "sched_wakeup_new:",
            ]
            .iter()
            .any(|e| l.contains(e))
        })
        .map(|l| {
            // `COMM-PID [CPU] SECONDS.NANOSECONDS: EVENT: TEXT` -> `SECONDS.NANOSECONDS COMM-PID [CPU] EVENT: TEXT`
            let (head, rest) = l.split_once("] ").unwrap();
            let (time, event) = rest.split_once(": ").unwrap();
            let (task, cpu) = head.trim_start().rsplit_once(" [").unwrap();
            let (comm, pid) = task.rsplit_once('-').unwrap();
            format!("{} {comm}-{} [{cpu}] {event}", time.trim(), pid.trim())
        })
        .collect();
    let mut got: Vec<String> = lines.into_iter().map(|(_, l)| l).collect();
    want.sort();
    got.sort();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rust_log_selects_targets_and_very_verbose_adds_every_tracepoint() {
    let lb_only = lbsim(RUN, Some("lbsim::lb=debug"));
    assert!(lb_only.status.success());
    let lines = logged(&lb_only.stderr);
    assert!(!lines.is_empty());
    assert!(lines.iter().all(|(t, _)| t == "lbsim::lb"), "{lines:?}");

    let all = lbsim(&[RUN, &["-vv"]].concat(), None);
    assert!(all.status.success());
    let lines = logged(&all.stderr);
    assert!(
        lines
            .iter()
            .any(|(t, l)| t == "lbsim::sched" && l.contains("sched_switch:"))
    );
}

#[test]
fn a_bad_rust_log_is_one_line_and_exit_2() {
    let out = lbsim(RUN, Some("lbsim=loud"));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("RUST_LOG `lbsim=loud`"), "{err}");
}
