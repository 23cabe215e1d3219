//! Every command of README.md's tour runs (issue 14): the commands are read from the README,
//! each is given its concrete arguments here (placeholders filled, runs kept short), and a
//! README command without an entry, or an entry the README no longer shows, fails the test.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `lbsim ...` commands of the tour table (the first cell of each row).
fn tour_commands(readme: &str) -> Vec<String> {
    readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `lbsim "))
        .map(|rest| {
            format!(
                "lbsim {}",
                rest.split_once('`').expect("a closing backtick").0
            )
        })
        .collect()
}

/// The machine specs the README lists after "Machine specs:".
fn machine_specs(readme: &str) -> Vec<String> {
    let at = readme
        .find("Machine specs:")
        .expect("the machine specs paragraph");
    let para = &readme[at..readme[at..].find("\n\n").map_or(readme.len(), |e| at + e)];
    para.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .filter(|s| !s.ends_with(".md"))
        .collect()
}

#[test]
fn every_tour_command_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let trace = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme-run.pftrace");
    let _ = std::fs::remove_file(&trace);
    let trace = trace.to_str().unwrap().to_owned();
    let plot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme-run.svg");
    let _ = std::fs::remove_file(&plot);
    let plot = plot.to_str().unwrap().to_owned();
    let short_run = [
        "run",
        "--topology",
        "hikey",
        "--workload",
        "busy:threads=9",
        "--duration",
        "100ms",
    ];
    // README's text -> the arguments this test runs it with.
    let concrete: Vec<(&str, Vec<String>)> = vec![
        (
            "lbsim sweep --topology SPEC --workload WL --vary NAME=VALUES --runs N",
            [
                "sweep",
                "--topology",
                "4",
                "--workload",
                "busy:threads=5",
                "--vary",
                "busy:threads=4..5",
                "--duration",
                "50ms",
                "--runs",
                "2",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "lbsim repro [NAME ...] [--runs N]",
            vec![
                "repro".into(),
                "fairness".into(),
                "--runs".into(),
                "1".into(),
            ],
        ),
        (
            "lbsim compare --topology SPEC --workload WL --base FEATURES --patched FEATURES --runs N",
            [
                "compare",
                "--topology",
                "4",
                "--workload",
                "busy:threads=5",
                "--base",
                "NO_LB_RELAX_BY_FAILED",
                "--patched",
                "",
                "--runs",
                "2",
                "--duration",
                "50ms",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "lbsim validate [SCENARIO] --runs N",
            [
                "validate",
                "spinners-n+1",
                "--runs",
                "2",
                "--duration",
                "100ms",
                "--force",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "lbsim calibrate [-o FILE]",
            ["calibrate", "--duration", "20ms"]
                .map(String::from)
                .to_vec(),
        ),
        ("lbsim features", vec!["features".into()]),
        (
            "lbsim topology SPEC",
            vec!["topology".into(), "x86-4c-smt2".into()],
        ),
        (
            "lbsim topology --list",
            vec!["topology".into(), "--list".into()],
        ),
        (
            "lbsim pelt --pattern run=4ms,sleep=12ms --duration 100ms",
            [
                "pelt",
                "--pattern",
                "run=4ms,sleep=12ms",
                "--duration",
                "100ms",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "lbsim run --topology hikey --workload busy:threads=9 --duration 5s",
            [
                "run",
                "--topology",
                "hikey",
                "--workload",
                "busy:threads=9",
                "--duration",
                "5s",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "lbsim run ... --features NO_LB_RELAX_BY_FAILED --set imbalance_pct=125",
            short_run
                .iter()
                .map(|s| s.to_string())
                .chain(
                    [
                        "--features",
                        "NO_LB_RELAX_BY_FAILED",
                        "--set",
                        "imbalance_pct=125",
                    ]
                    .map(String::from),
                )
                .collect(),
        ),
        (
            "lbsim run ... --trace run.pftrace",
            short_run
                .iter()
                .map(|s| s.to_string())
                .chain(["--trace".to_owned(), trace.clone()])
                .collect(),
        ),
        (
            "lbsim run --topology 4 --workload busy:threads=5 --duration 300ms -v",
            [
                "run",
                "--topology",
                "4",
                "--workload",
                "busy:threads=5",
                "--duration",
                "300ms",
                "-v",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "lbsim run ... --plot run.svg",
            short_run
                .iter()
                .map(|s| s.to_string())
                .chain(["--plot".to_owned(), plot.clone()])
                .collect(),
        ),
    ];
    let shown = tour_commands(&readme);
    let known: Vec<&str> = concrete.iter().map(|(k, _)| *k).collect();
    assert_eq!(shown, known, "README's tour and this test's table differ");
    for (text, args) in &concrete {
        let out = Command::new(env!("CARGO_BIN_EXE_lbsim"))
            .args(args)
            .current_dir(root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{text}` as {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty(), "`{text}` printed nothing");
    }
    assert!(std::fs::metadata(&trace).unwrap().len() > 0);
    assert!(std::fs::metadata(&plot).unwrap().len() > 0);
}

#[test]
fn every_machine_spec_the_readme_names_builds() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let specs = machine_specs(&readme);
    assert_eq!(
        specs,
        [
            "8",
            "key=value",
            "sockets=2,cores=4,threads=2",
            "capacity=462x4,1024x4",
            "nodes=2,cores=28,threads=4,distance=21",
            "examples/machines/big-little.toml",
            "host",
            "sysfs:tests/fixtures/sysfs/2n-smt2",
            "lscpu:tests/fixtures/lscpu/2s-smt2.txt",
            "lscpu -p=CPU,CORE,SOCKET,NODE,CLUSTER,CACHE",
            "lbsim topology host",
        ]
    );
    let mut files: Vec<String> = std::fs::read_dir(root().join("examples/machines"))
        .unwrap()
        .map(|e| {
            format!(
                "examples/machines/{}",
                e.unwrap().file_name().to_string_lossy()
            )
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    let runnable = |s: &&String| *s != "key=value" && !s.contains(' ');
    for spec in specs.iter().filter(runnable).chain(&files) {
        let out = Command::new(env!("CARGO_BIN_EXE_lbsim"))
            .args(["topology", spec])
            .current_dir(root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "lbsim topology {spec}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        // This machine may have one CPU, and then no sched domain.
        assert!(
            text.contains("domain0/name") || spec == "host",
            "{spec}: {text}"
        );
    }
    // The documented explicit form is what the explicit example holds.
    let doc = std::fs::read_to_string(root().join("docs/machines.md")).unwrap();
    let example =
        std::fs::read_to_string(root().join("examples/machines/explicit-ring.toml")).unwrap();
    let body: String = example
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        doc.contains(body.trim()),
        "docs/machines.md shows explicit-ring.toml"
    );
}
