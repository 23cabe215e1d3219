//! `--plot FILE.svg` on `run`, `compare`, `sweep` and `repro`: each writes a well-formed SVG
//! (parsed as XML) whose text names the axes with their units and the series; a bad path is
//! a one-line error with exit 2 and no file; a run's results do not depend on `--plot`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("the lbsim binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plot_cli");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The texts of the SVG at `path`, after checking it parses with an `svg` root.
fn svg_texts(path: &PathBuf) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("the plot was written");
    let doc = roxmltree::Document::parse(&text).expect("the plot is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert!(root.attribute("width").is_some() && root.attribute("height").is_some());
    doc.descendants()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| n.text().unwrap_or_default().trim().to_owned())
        .collect()
}

fn has(texts: &[String], want: &str) {
    assert!(
        texts.iter().any(|t| t.contains(want)),
        "no text containing `{want}` in {texts:?}"
    );
}

const RUN: &[&str] = &[
    "run",
    "--topology",
    "hikey",
    "--workload",
    "hackbench:groups=1,loops=20",
    "--duration",
    "50ms",
];

#[test]
fn run_plot_has_the_latency_cdf_and_each_cpus_series() {
    let p = scratch("run.svg");
    let mut args = RUN.to_vec();
    args.extend(["--plot", p.to_str().unwrap()]);
    ok(&lbsim(&args));
    let t = svg_texts(&p);
    has(&t, "wake-up latency CDF");
    has(&t, "wake-up latency (us");
    has(&t, "fraction of wake-ups");
    has(&t, "simulated time (ms)");
    has(&t, "rq->nr_running (tasks)");
    has(&t, "util_avg (capacity units");
    has(&t, "sampled every 1 ms");
    // hikey has 8 CPUs: a legend entry each.
    for c in 0..8 {
        has(&t, &format!("cpu{c}"));
    }
}

#[test]
fn a_runs_results_do_not_depend_on_plot() {
    let p = scratch("same.svg");
    let mut plain = RUN.to_vec();
    plain.extend(["--format", "json"]);
    let mut plotted = plain.clone();
    plotted.extend(["--plot", p.to_str().unwrap()]);
    let a = lbsim(&plain);
    let b = lbsim(&plotted);
    ok(&a);
    ok(&b);
    assert_eq!(a.stdout, b.stdout);
    assert!(p.exists());
}

#[test]
fn compare_plot_has_a_panel_per_metric_with_both_sides() {
    let p = scratch("compare.svg");
    ok(&lbsim(&[
        "compare",
        "--topology",
        "hikey",
        "--workload",
        "busy:threads=9",
        "--base",
        "",
        "--patched",
        "NO_LB_RELAX_BY_FAILED",
        "--runs",
        "3",
        "--duration",
        "100ms",
        "--plot",
        p.to_str().unwrap(),
    ]));
    let t = svg_texts(&p);
    has(&t, "base: (profile defaults)");
    has(&t, "patched: NO_LB_RELAX_BY_FAILED");
    has(&t, "sched.migrations [count]");
    has(&t, "sched.idle_while_overloaded [ms]");
    has(&t, "whisker: +/- sample stddev");
    let sides = t.iter().filter(|x| x.as_str() == "patched").count();
    assert!(sides >= 7, "a patched bar label per metric: {sides}");
}

#[test]
fn sweep_plot_has_each_metric_over_the_axis() {
    let p = scratch("sweep.svg");
    ok(&lbsim(&[
        "sweep",
        "--topology",
        "hikey",
        "--workload",
        "busy:threads=9",
        "--vary",
        "imbalance_pct=110,125",
        "--runs",
        "2",
        "--duration",
        "100ms",
        "--plot",
        p.to_str().unwrap(),
    ]));
    let t = svg_texts(&p);
    has(&t, "over imbalance_pct");
    has(&t, "sched.migrations [count], lower is better");
    has(&t, "110");
    has(&t, "125");
    assert!(t.iter().filter(|x| x.as_str() == "imbalance_pct").count() >= 7);
}

#[test]
fn repro_plot_has_reported_beside_simulated() {
    let p = scratch("repro.svg");
    ok(&lbsim(&[
        "repro",
        "util-spread",
        "--runs",
        "1",
        "--plot",
        p.to_str().unwrap(),
    ]));
    let t = svg_texts(&p);
    has(&t, "the reported numbers beside lbsim's");
    has(&t, "grey: reported on the mailing list");
    has(&t, "util-spread");
    has(&t, "lbsim change");
}

/// One line on stderr naming `--plot`, exit 2.
fn refused(args: &[&str], want: &str) {
    let out = lbsim(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--plot") && err.contains(want), "{err}");
}

#[test]
fn bad_plot_paths_are_one_line_errors() {
    let mut args = RUN.to_vec();
    args.extend(["--plot", "/nonexistent-dir/x.svg"]);
    refused(&args, "does not exist");
    let png = scratch("x.png");
    let mut args = RUN.to_vec();
    args.extend(["--plot", png.to_str().unwrap()]);
    refused(&args, "FILE.svg");
    assert!(!png.exists());
    let dir = scratch("");
    let mut args = RUN.to_vec();
    args.extend(["--plot", dir.to_str().unwrap()]);
    refused(&args, "");
    // An existing file is kept without --force, replaced with it.
    let kept = scratch("kept.svg");
    std::fs::write(&kept, "mine").unwrap();
    for cmd in [
        vec![
            "compare",
            "--topology",
            "2",
            "--workload",
            "busy:threads=2",
            "--patched",
            "NO_LB_RELAX_BY_FAILED",
            "--runs",
            "1",
        ],
        vec![
            "sweep",
            "--topology",
            "2",
            "--workload",
            "busy:threads=2",
            "--vary",
            "imbalance_pct=110",
        ],
        vec!["repro", "util-spread"],
        RUN.to_vec(),
    ] {
        let mut args = cmd.clone();
        args.extend(["--plot", kept.to_str().unwrap()]);
        refused(&args, "pass --force");
    }
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "mine");
    let mut args = RUN.to_vec();
    args.extend(["--plot", kept.to_str().unwrap(), "--force"]);
    ok(&lbsim(&args));
    svg_texts(&kept);
    refused(
        &[
            "sweep",
            "--topology",
            "2",
            "--workload",
            "busy:threads=2",
            "--vary",
            "imbalance_pct=110",
            "--shard",
            "1/2",
            "--plot",
            "/tmp/never.svg",
        ],
        "--shard",
    );
}
