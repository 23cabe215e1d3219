use std::path::Path;

use super::*;
use crate::budget::Budget;

fn parse(text: &str) -> anyhow::Result<ScenarioFile> {
    ScenarioFile::parse(text, Path::new("dir/s.toml"))
}

/// The one-line error of a bad file.
fn error(text: &str) -> String {
    format!("{:#}", parse(text).unwrap_err())
}

#[test]
fn a_full_file() {
    let f = parse(
        r#"
description = "seed 001"
topology = "hikey"
kernel = "5.9"
workloads = ["busy:threads=9", "busy:threads=2"]
duration = "5s"
features = ["NO_WA_BIAS", "LB_MIN"]
seed = 7
runs = 20
base = ["NO_LB_RELAX_BY_FAILED", "imbalance_pct=125"]
patched = ""

[tunables]
migration_cost_ns = 250000
sched_policy = "cfs"
cost_ipi_ns = 2000

[cgroups]
"/a/b" = { weight = 300 }
"/c" = {}

[autogroups]
2 = { nice = 5 }
"#,
    )
    .unwrap();
    assert_eq!(
        f,
        ScenarioFile {
            cost: None,
            path: "dir/s.toml".to_owned(),
            description: Some("seed 001".to_owned()),
            topology: Some("hikey".to_owned()),
            workloads: Some(vec![
                "busy:threads=9".to_owned(),
                "busy:threads=2".to_owned()
            ]),
            duration_ns: Some(5_000_000_000),
            features: vec!["NO_WA_BIAS".to_owned(), "LB_MIN".to_owned()],
            // The table's keys in TOML order (sorted).
            sets: vec![
                "cost_ipi_ns=2000".to_owned(),
                "migration_cost_ns=250000".to_owned(),
                "sched_policy=cfs".to_owned(),
            ],
            seed: Some(7),
            runs: Some(20),
            base: Some("NO_LB_RELAX_BY_FAILED,imbalance_pct=125".to_owned()),
            patched: Some(String::new()),
            kernel: Some("5.9".to_owned()),
            vary: Vec::new(),
            cgroups: vec![("/a/b".to_owned(), 300), ("/c".to_owned(), 100)],
            autogroups: vec![(2, 5)],
        }
    );
    // Single strings are accepted where lists are.
    let f = parse("workloads = \"busy:threads=1\"\nfeatures = \"NO_WA_BIAS\"\n").unwrap();
    assert_eq!(f.workloads, Some(vec!["busy:threads=1".to_owned()]));
    assert_eq!(f.features, vec!["NO_WA_BIAS".to_owned()]);
    assert_eq!(
        parse("").unwrap(),
        ScenarioFile {
            cost: None,
            path: "dir/s.toml".to_owned(),
            ..ScenarioFile::default()
        }
    );
}

#[test]
fn relative_paths_follow_the_file() {
    assert_eq!(
        resolve_workload(Path::new("dir"), "rtapp:a.json"),
        "rtapp:dir/a.json"
    );
    assert_eq!(
        resolve_workload(Path::new("dir"), "rtapp:/abs/a.json"),
        "rtapp:/abs/a.json"
    );
    assert_eq!(
        resolve_workload(Path::new("dir"), "busy:threads=1"),
        "busy:threads=1"
    );
    assert_eq!(
        resolve_workload(Path::new(""), "rtapp:a.json"),
        "rtapp:a.json"
    );
    assert_eq!(
        resolve_workload(Path::new("dir"), "trace:t.txt,comm=a|b,pid=3-4"),
        "trace:dir/t.txt,comm=a|b,pid=3-4"
    );
    assert_eq!(
        resolve_workload(Path::new("dir"), "trace:/abs/t.pftrace"),
        "trace:/abs/t.pftrace"
    );
    assert_eq!(resolve_topology(Path::new("dir"), "m.toml"), "dir/m.toml");
    assert_eq!(resolve_topology(Path::new("dir"), "hikey"), "hikey");
    assert_eq!(
        resolve_topology(Path::new("dir"), "llcs=2,cores=4"),
        "llcs=2,cores=4"
    );
    // A missing rt-app file is reported with the key, at load time.
    let e = error("workloads = [\"busy:threads=1\", \"rtapp:nope.json\"]");
    assert!(
        e.starts_with("dir/s.toml: key `workloads[1]`: ") && e.contains("dir/nope.json"),
        "{e}"
    );
}

#[test]
fn errors_name_the_file_the_key_and_what_was_expected() {
    let cases = [
        (
            "topologie = \"hikey\"",
            "dir/s.toml: unknown key `topologie` (valid: description, topology, kernel, \
             cost, workloads, duration, features, tunables, cgroups, autogroups, seed, runs, base, patched, vary)",
        ),
        (
            "kernel = \"5.8\"",
            "dir/s.toml: key `kernel`: no kernel profile `5.8`; profiles: 4.6, 4.11, 4.13, \
             4.18, 5.4, 5.7, 5.9, 5.10, 5.15, 5.19, 6.1, 6.6, 6.12",
        ),
        (
            "duration = 5",
            "dir/s.toml: key `duration`: expected a duration string such as \"2s\" or \
             \"500ms\", found integer 5",
        ),
        (
            "duration = \"0s\"",
            "dir/s.toml: key `duration`: expected a duration greater than 0",
        ),
        (
            "runs = 0",
            "dir/s.toml: key `runs`: expected a positive integer, found integer 0",
        ),
        (
            "seed = -1",
            "dir/s.toml: key `seed`: expected a non-negative integer, found integer -1",
        ),
        (
            "workloads = [\"busy:threads=1\", 3]",
            "dir/s.toml: key `workloads[1]`: expected a string, found integer 3",
        ),
        (
            "workloads = []",
            "dir/s.toml: key `workloads`: expected at least one workload",
        ),
        (
            "features = { a = 1 }",
            "dir/s.toml: key `features`: expected a string or an array of strings, found a table",
        ),
        (
            "tunables = [\"hz=1000\"]",
            "dir/s.toml: key `tunables`: expected a table of NAME = value, found an array",
        ),
        (
            "[tunables]\nhz = 1.5",
            "dir/s.toml: key `tunables.hz`: expected an integer or a string, found float 1.5",
        ),
        (
            "[tunables]\nhz = 999",
            "dir/s.toml: key `tunables.hz`: `hz=999` is out of range: expected one of 100, 250, \
             300, 1000 Hz",
        ),
        (
            "description = [1]",
            "dir/s.toml: key `description`: expected a string, found an array",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(error(text), want, "{text}");
    }
    // A sweep's axes are checked as --vary checks them.
    assert_eq!(
        error("vary = [\"imbalance_pct=130..110\"]"),
        "dir/s.toml: key `vary`: --vary `imbalance_pct=130..110`: `130..110` is an empty range"
    );
    assert_eq!(
        parse("vary = [\"imbalance_pct=110,125\", \"busy:threads=8..9\"]")
            .unwrap()
            .vary,
        ["imbalance_pct=110,125", "busy:threads=8..9"]
    );
    // Errors from the other crates' parsers keep their own words, after the key.
    let e = error("topology = \"hikee\"");
    assert!(
        e.starts_with("dir/s.toml: key `topology`: `hikee`: "),
        "{e}"
    );
    let e = error("base = \"NO_SUCH_FEATURE\"");
    assert!(
        e.starts_with("dir/s.toml: key `base`: ") && e.contains("NO_SUCH_FEATURE"),
        "{e}"
    );
    let e = error("[tunables]\nimbalance_pc = 1");
    assert_eq!(
        e,
        "dir/s.toml: key `tunables.imbalance_pc`: unknown parameter `imbalance_pc`; did you mean \
         `imbalance_pct`?"
    );
    let e = error("[tunables]\nimbalance_pct = 50");
    assert_eq!(
        e,
        "dir/s.toml: key `tunables.imbalance_pct`: `imbalance_pct=50` is out of range: expected \
         100..=10000 percent"
    );
    let e = error("workloads = \"busy:threads=0\"");
    assert!(
        e.starts_with("dir/s.toml: key `workloads[0]`: busy: "),
        "{e}"
    );
}

#[test]
fn syntax_errors_name_the_line_and_column() {
    let e = error("topology = \"hikey\"\nruns = = 3\n");
    assert!(e.starts_with("dir/s.toml:2:"), "{e}");
    assert!(e.contains("not valid TOML"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let e = format!(
        "{:#}",
        ScenarioFile::load(Path::new("/nonexistent/x.toml"), &Budget::default()).unwrap_err()
    );
    assert!(
        e.starts_with("/nonexistent/x.toml: cannot read the scenario file: "),
        "{e}"
    );
}

#[test]
fn settings_route_every_kind_of_name() {
    let s = settings(
        8,
        &["NO_WA_BIAS,imbalance_pct=125".to_owned()],
        &[
            "busy_factor=32".to_owned(),
            "cost_ipi_ns=7".to_owned(),
            "tick_jitter_ns=0".to_owned(),
            "migration_cost_ns=1".to_owned(),
        ],
    )
    .unwrap();
    assert!(!s.features.enabled(lbsim_balance::params::LbFeat::WaBias));
    assert_eq!((s.sd.imbalance_pct, s.sd.busy_factor), (125, 32));
    assert_eq!(s.cost.ipi_ns, 7);
    assert_eq!(s.engine.tick_jitter_ns, 0);
    assert_eq!(s.tunables.migration_cost_ns, 1);
    let e = format!(
        "{:#}",
        settings(8, &[], &["busy_facto=1".to_owned()]).unwrap_err()
    );
    assert_eq!(
        e,
        "--set busy_facto=1: unknown parameter `busy_facto`; did you mean `busy_factor`?"
    );
    let e = format!(
        "{:#}",
        settings(8, &["NO_WA_BIAZ".to_owned()], &[]).unwrap_err()
    );
    assert_eq!(
        e,
        "--features `NO_WA_BIAZ`: unknown sched feature `NO_WA_BIAZ`; did you mean `NO_WA_BIAS`?"
    );
    // A tunable in a features list is named with the --features list it came from, not as a
    // --set (issue 18, finding 8).
    let e = format!(
        "{:#}",
        settings(8, &["NO_WA_BIAS,foo=3".to_owned()], &[]).unwrap_err()
    );
    assert_eq!(
        e,
        "--features `NO_WA_BIAS,foo=3`: foo=3: unknown parameter `foo`; did you mean `hz`?"
    );
    // A feature is switched, not set; a value parameter is set, not switched.
    let e = format!(
        "{:#}",
        settings(8, &[], &["LB_MIN=1".to_owned()]).unwrap_err()
    );
    assert_eq!(
        e,
        "--set LB_MIN=1: `LB_MIN` is a sched feature: switch it with --features LB_MIN or NO_LB_MIN"
    );
}

#[test]
fn cgroups_tables_and_flags_are_checked() {
    let e = error("[cgroups]\n\"/a\" = { weight = 0 }");
    assert!(
        e.contains("cgroups.\"/a\"") && e.contains("cpu.weight 0"),
        "{e}"
    );
    let e = error("[cgroups]\n\"a\" = { weight = 5 }");
    assert!(e.contains("must start with '/'"), "{e}");
    let e = error("[cgroups]\n\"/a\" = { shares = 5 }");
    assert!(e.contains("unknown key `shares`"), "{e}");
    use crate::scenario::parse_cgroup_flag;
    assert_eq!(
        parse_cgroup_flag("/a/b:weight=300").unwrap(),
        ("/a/b".to_owned(), 300)
    );
    assert_eq!(parse_cgroup_flag("/x").unwrap(), ("/x".to_owned(), 100));
    for bad in [
        "/a:weight=0",
        "/a:weight=10001",
        "/a:weight=x",
        "/a:shares=2",
        "a:weight=5",
    ] {
        let e = parse_cgroup_flag(bad).unwrap_err().to_string();
        assert!(e.starts_with(&format!("--cgroup `{bad}`")), "{e}");
        assert!(!e.contains('\n'));
    }
}

#[test]
fn autogroup_tables_and_flags_are_checked() {
    let e = error("[autogroups]\n1 = { nice = 20 }");
    assert!(e.contains("autogroups.1") && e.contains("nice 20"), "{e}");
    let e = error("[autogroups]\n0 = { nice = 1 }");
    assert!(e.contains("autogroups.0"), "{e}");
    let e = error("[autogroups]\nx = { nice = 1 }");
    assert!(e.contains("session number"), "{e}");
    let e = error("[autogroups]\n1 = { weight = 5 }");
    assert!(e.contains("unknown key `weight`"), "{e}");
    use crate::scenario::parse_autogroup_flag;
    assert_eq!(parse_autogroup_flag("2:nice=-5").unwrap(), (2, -5));
    assert_eq!(parse_autogroup_flag("1:nice=19").unwrap(), (1, 19));
    for bad in [
        "2",
        "2:nice=20",
        "2:nice=-21",
        "0:nice=1",
        "x:nice=1",
        "2:weight=5",
    ] {
        let e = parse_autogroup_flag(bad).unwrap_err().to_string();
        assert!(e.starts_with(&format!("--autogroup `{bad}`")), "{e}");
        assert!(!e.contains('\n'));
    }
}

/// A directory of its own under the system's temporary directory, for one test's files.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lbsim-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_cost_profile_sets_the_cost_model_and_set_overrides_it() {
    let dir = temp_dir("cost-order");
    let prof = dir.join("costs.toml");
    std::fs::write(
        &prof,
        "format = 1\n[cost]\ncost_wakeup_ns = 431\ncost_context_switch_ns = 2750\ncost_ipi_ns = 18029\n",
    )
    .unwrap();
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        "topology = \"2\"\nworkloads = \"busy:threads=1\"\ncost = \"costs.toml\"\n",
    )
    .unwrap();
    let cost_of = |inputs: RunInputs| inputs.resolve().unwrap().0.build().unwrap().config.cost;
    let defaults = lbsim_balance::cost::CostModel::default();
    // No profile: the defaults.
    let plain = RunInputs {
        topology: Some("2".to_owned()),
        workloads: vec!["busy:threads=1".to_owned()],
        ..RunInputs::default()
    };
    assert_eq!(cost_of(plain.clone()), defaults);
    // --cost: its three values, the others the defaults.
    let flag = RunInputs {
        cost: Some(prof.clone()),
        ..plain.clone()
    };
    let c = cost_of(flag.clone());
    assert_eq!(
        (c.wakeup_ns, c.context_switch_ns, c.ipi_ns),
        (431, 2750, 18029)
    );
    assert_eq!(c.poll_wake_ns, defaults.poll_wake_ns);
    assert_eq!(c.lb_migrate_ns, defaults.lb_migrate_ns);
    // --set after it wins, and so does --features' NAME=VALUE; --kernel comes before it.
    let c = cost_of(RunInputs {
        sets: vec!["cost_ipi_ns=700".to_owned()],
        features: vec!["cost_wakeup_ns=5".to_owned()],
        kernel: Some("6.6".to_owned()),
        ..flag.clone()
    });
    assert_eq!((c.wakeup_ns, c.context_switch_ns, c.ipi_ns), (5, 2750, 700));
    // A scenario file's `cost`, relative to the file; --cost replaces it.
    let from_file = RunInputs {
        file: Some(scenario.clone()),
        ..RunInputs::default()
    };
    assert_eq!(cost_of(from_file.clone()).ipi_ns, 18029);
    let other = dir.join("other.toml");
    std::fs::write(&other, "[cost]\ncost_ipi_ns = 9\n").unwrap();
    let c = cost_of(RunInputs {
        cost: Some(other),
        ..from_file
    });
    assert_eq!((c.ipi_ns, c.wakeup_ns), (9, defaults.wakeup_ns));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_cost_profile_is_one_line_naming_file_line_and_key() {
    let dir = temp_dir("cost-bad");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[cost]\ncost_ipi_ns = 100\ncost_wakup_ns = 3\n").unwrap();
    let shown = bad.display().to_string();
    let e = format!("{:#}", CostFile::load(&bad).unwrap_err());
    assert_eq!(
        e,
        format!(
            "{shown}:3: key `cost.cost_wakup_ns`: unknown parameter `cost_wakup_ns`; did you mean `cost_wakeup_ns`?"
        )
    );
    let flag = RunInputs {
        topology: Some("2".to_owned()),
        workloads: vec!["busy:threads=1".to_owned()],
        cost: Some(bad.clone()),
        ..RunInputs::default()
    };
    assert_eq!(
        format!("{:#}", flag.resolve().unwrap_err()),
        format!("--cost: {e}")
    );
    let scenario = dir.join("s.toml");
    std::fs::write(&scenario, "\ncost = \"bad.toml\"\n").unwrap();
    let e2 = format!(
        "{:#}",
        ScenarioFile::load(&scenario, &Budget::default()).unwrap_err()
    );
    assert_eq!(e2, format!("{}: key `cost`: {e}", scenario.display()));
    std::fs::write(&bad, "[cost\n").unwrap();
    let e = format!("{:#}", CostFile::load(&bad).unwrap_err());
    assert!(
        e.starts_with(&format!("{shown}:1: not a cost profile: not valid TOML: ")),
        "{e}"
    );
    let missing = dir.join("none.toml");
    let e = format!("{:#}", CostFile::load(&missing).unwrap_err());
    assert!(
        e.starts_with(&format!(
            "{}: cannot read the cost profile: ",
            missing.display()
        )),
        "{e}"
    );
    assert!(!e.contains('\n'));
    std::fs::remove_dir_all(&dir).unwrap();
}
