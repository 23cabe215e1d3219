//! `lbsim compare`, `lbsim repro` and `lbsim features` through the binary: output shapes with
//! tiny runs, scenario files, errors, independence from --jobs, Ctrl-C.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use expect_test::expect;
use serde_json::Value;

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("run lbsim")
}

/// Runs a command expected to succeed with nothing on stderr (no progress bar when stderr is
/// not a terminal); returns stdout.
fn ok(args: &[&str]) -> String {
    let out = lbsim(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command expected to fail with exit code 2 and one stderr line; returns that line.
fn fails(args: &[&str]) -> String {
    let out = lbsim(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(out.stdout.is_empty(), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    err.trim_end().to_owned()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).expect("valid JSON")
}

/// A scratch file under the target directory (unique per test).
fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("experiments_cli");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const TINY: &[&str] = &[
    "compare",
    "--topology",
    "2",
    "--workload",
    "busy:threads=3",
    "--duration",
    "300ms",
    "--runs",
    "2",
    "--base",
    "NO_WA_BIAS,migration_cost_ns=0",
    "--patched",
    "",
];

fn with(base: &[&str], extra: &[&str]) -> Vec<String> {
    base.iter().chain(extra).map(|s| (*s).to_owned()).collect()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn compare_text_is_a_table_of_every_metric() {
    let out = ok(TINY);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "runs:       2 a side (seeds 1-2), 0.3 s simulated each"
    );
    assert_eq!(lines[1], "machine:    2");
    assert_eq!(lines[2], "workloads:  busy:threads=3");
    assert_eq!(lines[3], "base:       NO_WA_BIAS,migration_cost_ns=0");
    assert_eq!(lines[4], "patched:    (defaults)");
    assert_eq!(lines[5], "");
    let header: Vec<&str> = lines[6].split_whitespace().collect();
    assert_eq!(header, ["metric", "unit", "base", "patched", "change"]);
    // busy reports nothing of its own: the rows are the scheduler's metrics.
    let names: Vec<&str> = lines[7..]
        .iter()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "sched.migrations",
            "sched.context_switches",
            "sched.wakeup_latency_p50",
            "sched.wakeup_latency_p99",
            "sched.fairness_min_max",
            "sched.fairness_jain",
            "sched.idle_while_overloaded",
        ]
    );
    for l in &lines[7..14] {
        assert!(l.contains(" (+/- "), "{l}");
        assert!(l.contains('%'), "{l}");
    }
    assert!(out.ends_with(
        "* = significant by Welch's two-sample t-test (two-sided, p < 0.05), better or worse for \
         the metric.\n"
    ));
}

#[test]
fn compare_json_has_issue_7s_shape_and_does_not_depend_on_jobs() {
    let one = json(&args(&with(TINY, &["--format", "json", "--jobs", "1"])));
    let three = json(&args(&with(TINY, &["--format", "json", "--jobs", "3"])));
    assert_eq!(one, three);
    let top: Vec<&String> = one.as_object().unwrap().keys().collect();
    assert_eq!(top, ["metrics", "runs"]);
    assert_eq!(one["runs"], 2);
    for m in one["metrics"].as_array().unwrap() {
        let mut keys: Vec<&String> = m.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "base",
                "change_pct",
                "higher_is_better",
                "name",
                "patched",
                "significant",
                "unit"
            ]
        );
        for side in ["base", "patched"] {
            let s = &m[side];
            let mut keys: Vec<&String> = s.as_object().unwrap().keys().collect();
            keys.sort();
            assert_eq!(keys, ["mean", "stddev", "values"]);
            let values = s["values"].as_array().unwrap();
            assert_eq!(values.len(), 2);
            let mean = values.iter().map(|v| v.as_f64().unwrap()).sum::<f64>() / 2.0;
            assert!((mean - s["mean"].as_f64().unwrap()).abs() < 1e-9);
        }
    }
    // Sometimes: three tasks on two CPUs do migrate, and the seeds give different runs (so
    // equal outputs for 1 and 3 jobs are not vacuous).
    let migrations = &one["metrics"][0];
    assert_eq!(migrations["name"], "sched.migrations");
    assert!(migrations["base"]["mean"].as_f64().unwrap() > 0.0);
    let fairness = one["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "sched.fairness_min_max")
        .unwrap();
    let v = fairness["base"]["values"].as_array().unwrap();
    assert_ne!(v[0], v[1]);
}

#[test]
fn compare_reads_a_scenario_file_and_flags_override_it() {
    let file = scratch(
        "tiny.toml",
        r#"
description = "three tasks on two CPUs"
topology = "2"
workloads = ["busy:threads=3"]
duration = "40ms"
runs = 3
seed = 5
base = "NO_WA_BIAS"
patched = ""

[tunables]
migration_cost_ns = 0
"#,
    );
    let f = file.to_str().unwrap();
    let out = ok(&["compare", f]);
    assert!(out.starts_with(
        "three tasks on two CPUs\nruns:        3 a side (seeds 5-7), 0.04 s simulated each\n"
    ));
    assert!(
        out.contains("\nboth sides:  migration_cost_ns=0\n"),
        "{out}"
    );
    let out = ok(&[
        "compare",
        f,
        "--runs",
        "2",
        "--seed",
        "1",
        "--patched",
        "NO_WA_IDLE",
    ]);
    assert!(out.contains("runs:        2 a side (seeds 1-2),"), "{out}");
    assert!(out.contains("\npatched:     NO_WA_IDLE\n"), "{out}");
    // The file's run equals the same run given by flags.
    let by_file = json(&["compare", f, "--format", "json"]);
    let by_flags = json(&[
        "compare",
        "--topology",
        "2",
        "--workload",
        "busy:threads=3",
        "--duration",
        "40ms",
        "--runs",
        "3",
        "--seed",
        "5",
        "--base",
        "NO_WA_BIAS",
        "--patched",
        "",
        "--set",
        "migration_cost_ns=0",
        "--format",
        "json",
    ]);
    assert_eq!(by_file, by_flags);
}

#[test]
fn compare_errors() {
    let bad = scratch("bad.toml", "topology = \"2\"\nworkloads = 3\n");
    let e = fails(&["compare", bad.to_str().unwrap(), "--base", ""]);
    assert!(
        e.starts_with("lbsim: error: ")
            && e.ends_with(
                "bad.toml: key `workloads`: expected a string or an array of strings, found \
                 integer 3"
            ),
        "{e}"
    );
    let e = fails(&["compare", "--topology", "2", "--workload", "busy:threads=1"]);
    assert_eq!(
        e,
        "lbsim: error: nothing to compare: give --base and/or --patched (a features list; \
         empty: defaults)"
    );
    let e = fails(&args(&with(&TINY[..11], &["--patched", "NO_SUCH_THING"])));
    assert!(
        // Named by its own flag only (it said `--features` too, a flag the user did not give).
        e.starts_with(
            "lbsim: error: --patched `NO_SUCH_THING`: unknown sched feature `NO_SUCH_THING`; "
        ),
        "{e}"
    );
    let e = fails(&args(&with(TINY, &["--jobs", "0"])));
    assert_eq!(e, "lbsim: error: --jobs must be at least 1");
}

#[test]
fn ctrl_c_reports_what_finished() {
    let child = Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args([
            "compare",
            "--topology",
            "2",
            "--workload",
            "busy:threads=3",
            "--duration",
            "200ms",
            "--runs",
            "100000",
            "--jobs",
            "1",
            "--base",
            "NO_WA_BIAS",
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let it start and finish a few runs; 100000 runs are far from done by then.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let runs = report["runs"].as_u64().unwrap();
    assert!(runs < 100_000);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.ends_with(&format!(
            "lbsim: interrupted: {runs} of 100000 seeds finished on both sides\n"
        )),
        "{err}"
    );
}

#[test]
fn repro_prints_reported_beside_simulated() {
    let out = ok(&["repro", "fairness", "--runs", "2"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("== fairness (seed 001_ddcb498a752488f6.txt): "));
    let header = lines.iter().position(|l| l.starts_with("threads")).unwrap();
    let words: Vec<&str> = lines[header]
        .split("  ")
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(
        words,
        [
            "threads",
            "source",
            "base avg",
            "base worst",
            "patched avg",
            "patched worst"
        ]
    );
    assert!(lines[header + 1].starts_with("9        reported   78.3 (+/- 6.60)"));
    assert!(lines[header + 2].trim_start().starts_with("lbsim"));
    assert!(lines[header + 3].starts_with("11       reported  65.91 (+/- 8.26)"));
    assert!(out.ends_with("(Welch's two-sample t-test, two-sided, p < 0.05).\n"));

    let j = json(&["repro", "fairness", "--runs", "2", "--format", "json"]);
    let e = &j["experiments"][0];
    assert_eq!(e["name"], "fairness");
    let rows = e["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        for k in [
            "metric",
            "params",
            "reported_base",
            "reported_patched",
            "sim_base_mean",
            "sim_base_stddev",
            "sim_patched_mean",
            "sim_patched_stddev",
            "runs",
        ] {
            assert!(r.get(k).is_some(), "{k} missing in {r}");
        }
        assert_eq!(r["runs"], 2);
        let m = r["sim_base_mean"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&m), "{r}");
    }
    assert_eq!(rows[0]["params"]["threads"], 9);

    let e = fails(&["repro", "fairnes"]);
    assert_eq!(
        e,
        "lbsim: error: unknown experiment `fairnes` (valid: util-spread, fairness, \
         newidle-bailout, tip-avg-high, prefer-sibling)"
    );
}

#[test]
fn repro_list() {
    let out = ok(&["repro", "--list"]);
    let names: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "util-spread",
            "fairness",
            "newidle-bailout",
            "tip-avg-high",
            "prefer-sibling"
        ]
    );
}

#[test]
fn example_scenarios_load_and_run() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "fairness",
            "newidle-bailout",
            "prefer-sibling",
            "tip-avg-high",
            "util-spread"
        ]
    );
    for f in &files {
        // One short run a side: the file is complete and valid. A workload with a run length
        // of its own (schbench, ebizzy, sysbench's count) is cut by the 2 ms: one note each
        // on stderr, nothing else.
        let out = lbsim(&[
            "compare",
            f.to_str().unwrap(),
            "--runs",
            "1",
            "--duration",
            "2ms",
            "--format",
            "json",
        ]);
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success(), "{}: {err}", f.display());
        for line in err.lines() {
            assert!(
                line.starts_with("lbsim: note: ") && line.contains("the run stops at 0.002 s")
                    || line.contains("when the run stopped at 0.002 s"),
                "{}: {line}",
                f.display()
            );
        }
        let j: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
        assert_eq!(j["runs"], 1, "{}", f.display());
    }
}

#[test]
fn compare_notes_a_duration_shorter_than_the_workloads_own() {
    // schbench asks for 3 s; --duration 50ms cuts it: one note on stderr; the report's
    // "simulated each" is the 0.05 s.
    let args = [
        "compare",
        "--topology",
        "2",
        "--workload",
        "schbench:m=1,t=1,runtime=3",
        "--base",
        "",
        "--runs",
        "1",
        "--duration",
        "50ms",
    ];
    let out = lbsim(&args);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "lbsim: note: schbench:m=1,t=1,runtime=3 asks for 3 s but the run stops at 0.05 s: \
         its report covers the 0.05 s simulated\n"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("0.05 s simulated each"), "{text}");
    // Without --duration: the 3 s the workload asks for, and no note.
    let text = ok(&args[..args.len() - 2]);
    assert!(text.contains("3 s simulated each"), "{text}");
}

#[test]
fn example_scenarios_carry_the_builtin_definitions_switches() {
    // Each shipped example is one point of the built-in experiment of the same name, with the
    // same machine and the same switches on each side.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios");
    let items = |lists: &[String]| -> Vec<String> {
        let mut v: Vec<String> = lists
            .iter()
            .flat_map(|l| l.split(','))
            .map(|x| x.trim().to_owned())
            .filter(|x| !x.is_empty())
            .collect();
        v.sort();
        v
    };
    for exp in lbsim::repro::defs::all() {
        let path = dir.join(format!("{}.toml", exp.name));
        let f =
            lbsim::scenario::ScenarioFile::load(&path, &lbsim::budget::Budget::default()).unwrap();
        assert_eq!(f.topology.as_deref(), Some(exp.topology), "{}", exp.name);
        assert_eq!(f.kernel.as_deref(), exp.kernel, "{}: kernel", exp.name);
        assert_eq!(
            items(&f.features),
            items(std::slice::from_ref(&exp.common)),
            "{}: features",
            exp.name
        );
        assert_eq!(
            items(&[f.base.clone().unwrap_or_default()]),
            items(&[exp.base.to_owned()]),
            "{}: base",
            exp.name
        );
        assert_eq!(
            items(&[f.patched.clone().unwrap_or_default()]),
            items(&[exp.patched.to_owned()]),
            "{}: patched",
            exp.name
        );
        let workloads = f.workloads.clone().unwrap_or_default();
        assert!(
            exp.points.iter().any(|p| p.workloads == workloads),
            "{}: workloads {workloads:?} are not one of the definition's points",
            exp.name
        );
    }
}

#[test]
fn features_default_output() {
    // The debugfs line is the registry's (its kernel part is pinned in lbsim-sim's
    // `params::tests::default_debugfs_line`, so a new lbsim switch needs no edit here).
    let out = ok(&["features"]);
    let (line, rest) = out.split_once('\n').unwrap();
    let expected = lbsim_sim::params::REGISTRY.debugfs_text(lbsim_sim::params::default_features());
    assert_eq!(format!("{line}\n"), expected);
    expect![[r#"

        # kernel tunables (/sys/kernel/debug/sched/, 8 CPUs)
        sched_policy             eevdf
        tunable_scaling          1
        base_slice_ns            3000000
        latency_ns               24000000
        min_granularity_ns       3000000
        idle_min_granularity_ns  750000
        wakeup_granularity_ns    4000000
        sched_nr_latency         8
        child_runs_first         0
        migration_cost_ns        500000
        nr_migrate               32
        sched_autogroup_enabled  1
        hz                       250
        nr_cpus                  8

        # sd_init() inputs
        imbalance_pct  117
        busy_factor    16

        # sched domains of CPU 0 (/sys/kernel/debug/sched/domains/, `hikey`)
        domain        name  imbalance_pct  busy_factor  min_interval  max_interval  cache_nice_tries
        cpu0/domain0  MC    117            16           4             8             1
        cpu0/domain1  PKG   117            16           8             16            1

        # cost model (simulated ns per unit of scheduler work)
        cost_context_switch_ns  1200
        cost_wakeup_ns          600
        cost_ipi_ns             1500
        cost_poll_wake_ns       200
        cost_lb_domain_ns       200
        cost_lb_cpu_ns          60
        cost_lb_task_ns         120
        cost_lb_migrate_ns      1500
        cost_lb_redo_ns         800

        # engine tunables
        background_wakeups_hz   1
        background_run_ns       20000
        tick_jitter_ns          20000
        pure_runs_ahead         32
        cpuidle                 menu
        smt_throughput          machine
        idle_exit_spread_pct    20
        wakeup_cost_spread_pct  20
    "#]]
    .assert_eq(rest);
}

#[test]
fn features_show_the_effect_of_features_and_sets() {
    let out = ok(&[
        "features",
        "--topology",
        "2",
        "--features",
        "NO_WA_BIAS,LB_TIP_AVG_HIGH,imbalance_pct=125",
        "--set",
        "hz=1000",
        "--set",
        "cost_ipi_ns=7",
    ]);
    let first = out.lines().next().unwrap();
    assert!(first.contains(" NO_WA_BIAS "), "{first}");
    assert!(first.contains(" LB_TIP_AVG_HIGH "), "{first}");
    assert!(out.contains("\nhz                       1000\n"), "{out}");
    assert!(out.contains("\nimbalance_pct  125\n"), "{out}");
    assert!(out.contains("\ncost_ipi_ns             7\n"), "{out}");
    // Two CPUs: base_slice_ns = (1 + ilog2(2)) * 0.75 ms.
    assert!(
        out.contains("\nbase_slice_ns            1500000\n"),
        "{out}"
    );
    let e = fails(&["features", "--features", "NO_SUCH"]);
    assert!(e.starts_with("lbsim: error: --features `NO_SUCH`: "), "{e}");
}

#[test]
fn run_reads_a_scenario_file_and_flags_override_it() {
    let file = scratch(
        "run.toml",
        "topology = \"2\"\nworkloads = \"busy:threads=3\"\nduration = \"50ms\"\nseed = 3\n\
         features = \"NO_WA_BIAS\"\n[tunables]\nmigration_cost_ns = 0\n",
    );
    let f = file.to_str().unwrap();
    let by_file = json(&["run", f, "--format", "json"]);
    let by_flags = json(&[
        "run",
        "--topology",
        "2",
        "--workload",
        "busy:threads=3",
        "--duration",
        "50ms",
        "--seed",
        "3",
        "--features",
        "NO_WA_BIAS",
        "--set",
        "migration_cost_ns=0",
        "--format",
        "json",
    ]);
    assert_eq!(by_file, by_flags);
    // Flags override: another seed and duration.
    let other = json(&[
        "run",
        f,
        "--seed",
        "4",
        "--duration",
        "20ms",
        "--format",
        "json",
    ]);
    assert_eq!(other["sim_time_ns"], 20_000_000);
    assert_ne!(other["event_hash"], by_file["event_hash"]);
    let e = fails(&["run"]);
    assert_eq!(
        e,
        "lbsim: error: --topology is required (a CPU count, key=value list, preset or file), \
         or a scenario file"
    );
}

#[test]
fn compare_prints_the_mmtests_and_lkp_tables() {
    let args = |format: &'static str| {
        [
            "compare",
            "--topology",
            "hikey",
            "--workload",
            "busy:threads=9",
            "--duration",
            "200ms",
            "--runs",
            "3",
            "--base",
            "NO_LB_RELAX_BY_FAILED",
            "--patched",
            "",
            "--format",
            format,
        ]
    };
    let mm = ok(&args("mmtests"));
    let mut lines = mm.lines();
    // The header: the sides' names split at their first '-' (lbsim-NO_LB_RELAX_BY_FAILED).
    assert!(lines.next().unwrap().trim_end().ends_with("lbsim"), "{mm}");
    let second = lines.next().unwrap();
    assert!(second.contains("NO_LB_RELAX_BY_FAILED"), "{mm}");
    assert!(second.trim_end().ends_with("(profile defaults)"), "{mm}");
    // Every metric has its rows, the base's change is 0.00%, rates take Hmean.
    for row in [
        "Min       ",
        "Amean     ",
        "Stddev    ",
        "CoeffVar  ",
        "Max       ",
    ] {
        assert!(mm.lines().any(|l| l.starts_with(row)), "{row}: {mm}");
    }
    assert!(
        mm.lines()
            .skip(2)
            .all(|l| l.contains("(   0.00%)") && (l.ends_with("%)") || l.ends_with("%*"))),
        "{mm}"
    );
    assert!(mm.contains("sched.fairness_min_max"), "{mm}");

    let lkp = ok(&args("lkp"));
    let first = lkp.lines().next().unwrap();
    assert!(
        first.starts_with("lbsim noticed a ") && first.ends_with(" on:"),
        "{lkp}"
    );
    assert!(
        lkp.contains("         %stddev     %change         %stddev\n"),
        "{lkp}"
    );
    assert!(
        lkp.contains("machine/workload/runs:\n  hikey/busy:threads=9/3\n"),
        "{lkp}"
    );
    // Only compare prints these tables.
    let e = fails(&[
        "run",
        "--topology",
        "2",
        "--workload",
        "busy",
        "--format",
        "mmtests",
    ]);
    assert!(e.contains("only `lbsim compare`"), "{e}");
}

#[test]
fn a_sweep_split_in_shards_and_merged_prints_the_one_machine_table() {
    let common = [
        "sweep",
        "--topology",
        "hikey",
        "--kernel",
        "5.9",
        "--workload",
        "busy:threads=9",
        "--duration",
        "300ms",
        "--runs",
        "3",
        "--vary",
        "imbalance_pct=110,125",
        "--vary",
        "busy:threads=9..10",
    ];
    let whole = ok(&common);
    assert!(
        whole.contains("grid:       4 points (imbalance_pct x 2, busy:threads x 2), 3 seeds each"),
        "{whole}"
    );
    assert!(
        whole.contains("imbalance_pct=125 busy:threads=10"),
        "{whole}"
    );
    let mut files = Vec::new();
    for k in ["1/2", "2/2"] {
        let mut a = common.to_vec();
        a.extend(["--shard", k]);
        let shard = ok(&a);
        let v: Value = serde_json::from_str(&shard).expect("shard JSON");
        assert_eq!(v["shards"], 2);
        files.push(scratch(&format!("shard-{}.json", &k[..1]), &shard));
    }
    // Seeds 1 and 3 went to shard 1, seed 2 to shard 2, each at all four points.
    let one: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(one["runs"].as_array().unwrap().len(), 8);
    let mut m = vec!["sweep", "--merge"];
    let paths: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    m.extend(paths.iter().map(String::as_str));
    assert_eq!(ok(&m), whole);
    // The merged shards print mmtests' table too, one column per point.
    let mut mm = m.clone();
    mm.extend(["--format", "mmtests"]);
    let table = ok(&mm);
    assert!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .contains("imbalance_pct=125 busy:threads=10"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("Amean     sched.migrations")),
        "{table}"
    );
    // A missing shard, or a shard given twice, is an error.
    let e = fails(&["sweep", "--merge", &paths[0]]);
    assert!(e.contains("shard 2/2 is missing"), "{e}");
    let e = fails(&["sweep", "--merge", &paths[0], &paths[0]]);
    assert!(e.contains("given twice"), "{e}");
    let e = fails(&[
        "sweep",
        "--topology",
        "2",
        "--workload",
        "busy",
        "--vary",
        "x=5..1",
    ]);
    assert!(e.contains("empty range"), "{e}");
}
