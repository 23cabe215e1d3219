//! `lbsim run --schedstat`: /proc/schedstat in the modelled kernel's layout (version 16 for
//! v6.12), and `--schedstat-version` to print another (issue 14).

use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("the lbsim binary runs")
}

/// The /proc/schedstat section of `lbsim run --schedstat` on hikey, with `extra` flags.
fn schedstat(extra: &[&str]) -> String {
    let mut args = vec![
        "run",
        "--topology",
        "hikey",
        "--workload",
        "busy:threads=9",
        "--duration",
        "200ms",
        "--schedstat",
    ];
    args.extend_from_slice(extra);
    let out = lbsim(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_once("== /proc/schedstat ==\n")
        .expect("a schedstat section")
        .1
        .to_owned()
}

/// The fields of the first `domain` line.
fn first_domain(s: &str) -> Vec<String> {
    s.lines()
        .find(|l| l.starts_with("domain0 "))
        .unwrap()
        .split(' ')
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_default_is_version_16_and_the_others_print_their_layouts() {
    let v16 = schedstat(&[]);
    assert!(v16.starts_with("version 16\ntimestamp "), "{v16}");
    // domain<N> <span>, 3 x 8 load-balance counters, 12 more.
    let d = first_domain(&v16);
    assert_eq!(d.len(), 2 + 24 + 12, "{d:?}");
    assert_eq!(d[1], "0f", "hikey's first cluster");

    let v17 = schedstat(&["--schedstat-version", "17"]);
    assert!(v17.starts_with("version 17\n"));
    let d17 = first_domain(&v17);
    assert_eq!(d17.len(), 3 + 33 + 12, "{d17:?}");
    assert_eq!(d17[1], "MC");

    let v15 = schedstat(&["--schedstat-version", "15"]);
    assert!(v15.starts_with("version 15\n"));
    let d15 = first_domain(&v15);
    // Versions 15 and 16 differ only in the order of the busy and idle groups of 8.
    assert_eq!(d15[2..10], d[10..18]);
    assert_eq!(d15[10..18], d[2..10]);
    assert_eq!(d15[18..], d[18..]);
    // Version 17 splits the imbalance: its four columns add up to version 16's one.
    for (g16, g17) in [(2usize, 3usize), (10, 14), (18, 25)] {
        let sum: u64 = d17[g17 + 3..g17 + 7]
            .iter()
            .map(|x| x.parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, d[g16 + 3].parse::<u64>().unwrap());
        assert_eq!(d17[g17..g17 + 3], d[g16..g16 + 3]);
    }
    // The balancer did balance: some counter is not 0.
    assert!(d[2..26].iter().any(|x| x != "0"), "{d:?}");
}

#[test]
fn an_unknown_version_is_one_line_with_exit_2() {
    let out = lbsim(&[
        "run",
        "--topology",
        "2",
        "--workload",
        "busy:threads=1",
        "--schedstat-version",
        "14",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "lbsim: error: --schedstat-version 14: lbsim prints versions 15, 16 and 17\n"
    );
}
