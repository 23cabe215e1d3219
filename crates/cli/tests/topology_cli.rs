//! `lbsim topology`: output, flags and errors, through the binary.

use std::process::{Command, Output};

use expect_test::expect;

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("run lbsim")
}

/// Runs a command expected to succeed; returns stdout.
fn ok(args: &[&str]) -> String {
    let out = lbsim(args);
    assert!(
        out.status.success(),
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

#[test]
fn text_dump_of_one_cpu() {
    // hikey: MC (cluster 4-7, SD_SHARE_LLC: 117, 4/8 ms, cache_nice_tries 1) and
    // PKG (0-7: 117, 8/16 ms); groups from CPU 5 in for_each_cpu_wrap order.
    expect![[r#"
        cpu5/domain0/name: MC
        cpu5/domain0/flags: SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_SHARE_LLC SD_PREFER_SIBLING
        cpu5/domain0/groups_flags:
        cpu5/domain0/imbalance_pct: 117
        cpu5/domain0/min_interval: 4
        cpu5/domain0/max_interval: 8
        cpu5/domain0/busy_factor: 16
        cpu5/domain0/cache_nice_tries: 1
        cpu5/domain1/name: PKG
        cpu5/domain1/flags: SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_PREFER_SIBLING
        cpu5/domain1/groups_flags: SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_SHARE_LLC SD_PREFER_SIBLING
        cpu5/domain1/imbalance_pct: 117
        cpu5/domain1/min_interval: 8
        cpu5/domain1/max_interval: 16
        cpu5/domain1/busy_factor: 16
        cpu5/domain1/cache_nice_tries: 1
        CPU5 attaching sched-domain(s):
         domain-0: span=4-7 level=MC
          groups: 5:{ span=5 }, 6:{ span=6 }, 7:{ span=7 }, 4:{ span=4 }
          domain-1: span=0-7 level=PKG
           groups: 4:{ span=4-7 cap=4096 }, 0:{ span=0-3 cap=4096 }
        cpu5/cpuidle/state0/name: WFI
        cpu5/cpuidle/state0/latency: 1
        cpu5/cpuidle/state0/residency: 1
        cpu5/cpuidle/state0/lbsim_exit_ns: 1000
        cpu5/cpuidle/state0/lbsim_flags:
        cpu5/cpuidle/state1/name: cpu-sleep
        cpu5/cpuidle/state1/latency: 950
        cpu5/cpuidle/state1/residency: 1000
        cpu5/cpuidle/state1/lbsim_exit_ns: 250000
        cpu5/cpuidle/state1/lbsim_flags: TIMER_STOP
        cpu5/cpuidle/state2/name: cluster-sleep
        cpu5/cpuidle/state2/latency: 1500
        cpu5/cpuidle/state2/residency: 2700
        cpu5/cpuidle/state2/lbsim_exit_ns: 700000
        cpu5/cpuidle/state2/lbsim_flags: TIMER_STOP
    "#]]
    .assert_eq(&ok(&["topology", "hikey", "--cpus", "5"]));
}

#[test]
fn json_has_the_issue_shape() {
    let out = ok(&["topology", "hikey", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["cpus"], 8);
    let domains = v["domains"].as_array().unwrap();
    assert_eq!(domains.len(), 16);
    let d = &domains[0];
    // Field order as printed (serde_json's Map sorts keys, so read the text):
    // the first domain object's keys are the lines indented by six spaces.
    let first = out.split("\n    },").next().unwrap();
    let keys: Vec<&str> = first
        .lines()
        .filter_map(|l| l.strip_prefix("      \""))
        .filter_map(|l| l.split('"').next())
        .collect();
    assert_eq!(
        keys,
        [
            "cpu",
            "level",
            "name",
            "span",
            "flags",
            "imbalance_pct",
            "min_interval",
            "max_interval",
            "busy_factor",
            "cache_nice_tries",
            "groups"
        ]
    );
    assert_eq!(
        (
            d["cpu"].clone(),
            d["level"].clone(),
            d["name"].clone(),
            d["span"].clone()
        ),
        (0.into(), 0.into(), "MC".into(), "0-3".into())
    );
    assert_eq!(d["flags"][0], "SD_BALANCE_NEWIDLE");
    assert_eq!(
        d["groups"][0],
        serde_json::json!({"span": "0", "balance_mask": "0", "capacity": 1024})
    );
    assert_eq!(domains[1]["name"], "PKG");
    assert_eq!(
        domains[1]["groups"][1],
        serde_json::json!({"span": "4-7", "balance_mask": "4-7", "capacity": 4096})
    );
}

#[test]
fn params_apply_to_initializer_levels() {
    // imbalance_pct 125 reaches PKG only (MC keeps sd_init()'s LLC 117); busy_factor everywhere.
    let grep = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.contains("imbalance_pct") || l.contains("busy_factor"))
            .map(str::to_owned)
            .collect()
    };
    let by_set = ok(&[
        "topology",
        "hikey",
        "--cpus",
        "0",
        "--set",
        "imbalance_pct=125",
        "--set",
        "busy_factor=32",
    ]);
    assert_eq!(
        grep(&by_set),
        [
            "cpu0/domain0/imbalance_pct: 117",
            "cpu0/domain0/busy_factor: 32",
            "cpu0/domain1/imbalance_pct: 125",
            "cpu0/domain1/busy_factor: 32"
        ]
    );
    let by_flags = ok(&[
        "topology",
        "hikey",
        "--cpus",
        "0",
        "--imbalance-pct",
        "125",
        "--busy-factor",
        "32",
    ]);
    assert_eq!(by_set, by_flags);
}

#[test]
fn list_prints_presets() {
    let out = ok(&["topology", "--list"]);
    let names: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "hikey",
            "hikey960",
            "tx2-2n",
            "power8-22c",
            "x86-4c-smt2",
            "xeon-4s",
            "epyc-2s"
        ]
    );
    assert!(
        out.contains("  = llcs=2,cores=4,idle_states=hi6220\n"),
        "{out}"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    assert_eq!(
        fails(&["topology"]),
        "lbsim: error: topology: a machine spec is needed (a CPU count, key=value list, preset or file; `lbsim topology --list` shows the presets)"
    );
    assert_eq!(
        fails(&["topology", "cores=0"]),
        "lbsim: error: `cores=0`: a count must be at least 1"
    );
    assert_eq!(
        fails(&["topology", "hikey9"]),
        "lbsim: error: unknown preset `hikey9` (presets: hikey, hikey960, tx2-2n, power8-22c, x86-4c-smt2, xeon-4s, epyc-2s)"
    );
    assert_eq!(
        fails(&["topology", "cores=4,capacity=1025x4"]),
        "lbsim: error: capacity: `1025x4` is out of range (capacities are 1..=1024)"
    );
    assert_eq!(
        fails(&["topology", "nodes=2,distance=10,20;30,10"]),
        "lbsim: error: distance table is not symmetric: node 0 to 1 is 20 but node 1 to 0 is 30"
    );
    assert_eq!(
        fails(&["topology", "cores=4,capacity=1024x3"]),
        "lbsim: error: capacity lists 3 values but the machine has 4 CPUs"
    );
    assert_eq!(
        fails(&["topology", "hikey", "--set", "imbalance_pct=50"]),
        "lbsim: error: --set: `imbalance_pct=50` is out of range: expected 100..=10000 percent"
    );
    assert_eq!(
        fails(&["topology", "hikey", "--cpus", "8"]),
        "lbsim: error: --cpus: CPU 8 is out of range (the mask has 8 CPUs)"
    );
    // An empty filter printed nothing and exited 0 (issue 18, finding 9).
    for cpus in [&["--cpus="][..], &["--cpus", ""], &["--cpus", " "]] {
        assert_eq!(
            fails(&[&["topology"][..], cpus, &["hikey"]].concat()),
            "lbsim: error: --cpus: the CPU list is empty (give CPUs such as `0,5-7`, or leave --cpus out for every CPU)"
        );
    }
    assert!(
        fails(&["topology", "no/such/machine.toml"])
            .starts_with("lbsim: error: cannot read machine file `no/such/machine.toml`: ")
    );
}

#[test]
fn clap_usage_errors_exit_2() {
    for args in [
        &["topology", "hikey", "--format", "xml"][..],
        &["topology", "--bogus"],
        &["topology", "hikey", "--imbalance-pct", "x"],
    ] {
        let out = lbsim(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
}
