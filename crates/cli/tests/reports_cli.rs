//! Benchmark reports as their tools print them (issue 14): sysbench 1.0's layout by default,
//! ebizzy's `records/s` line alone and seed 004's `perf stat` block, the `perf sched latency`
//! table's averages over the waits, and fairness figures named for what they measure.

use std::process::{Command, Output};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("the lbsim binary runs")
}

fn run_json(topology: &str, wl: &str, duration: &str) -> serde_json::Value {
    let out = lbsim(&[
        "run",
        "--topology",
        topology,
        "--workload",
        wl,
        "--duration",
        duration,
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn text(v: &serde_json::Value) -> &str {
    v["reports"][0]["text"].as_str().unwrap()
}

#[test]
fn sysbench_prints_1_0_unless_asked_for_0_4() {
    let v = run_json("4", "sysbench-cpu:threads=2,requests=100", "1s");
    assert!(text(&v).starts_with("sysbench 1.0.20 "), "{}", text(&v));
    assert!(text(&v).contains("CPU speed:\n    events per second: "));
    let v = run_json("4", "sysbench-cpu:threads=2,requests=100,format=0.4", "1s");
    assert!(text(&v).starts_with("sysbench 0.4.12:"), "{}", text(&v));
}

#[test]
fn ebizzy_prints_records_per_second_alone_then_perf_stat() {
    let v = run_json("hikey", "ebizzy:threads=4,runtime=2", "3s");
    let t = text(&v);
    let first = t.lines().next().unwrap();
    let (n, rest) = first.split_once(' ').unwrap();
    assert!(n.parse::<u64>().is_ok() && rest == "records/s", "{first}");
    // perf stat's counters are the process's: every task of the run here.
    let block = t
        .split_once(" Performance counter stats for 'ebizzy -t 4 -S 2':\n\n")
        .expect("a perf stat block")
        .1;
    let count = |name: &str| -> u64 {
        let line = block.lines().find(|l| l.ends_with(name)).unwrap();
        line.split_whitespace()
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap()
    };
    assert_eq!(
        count("context-switches"),
        v["context_switches"].as_u64().unwrap()
    );
    assert_eq!(count("cpu-migrations"), v["migrations"].as_u64().unwrap());
    assert!(
        block.contains("2.000000000 seconds time elapsed"),
        "{block}"
    );
}

#[test]
fn the_latency_table_averages_over_the_waits_with_the_last_one() {
    // Five always-running threads on four CPUs for 50 ms (issue 14: the average was above
    // the maximum when it divided by switch-outs and left out the wait at the end).
    let v = run_json("4", "busy:threads=5", "50ms");
    let t = text(&v);
    let mut rows = 0;
    for line in t.lines().filter(|l| l.contains("| avg:")) {
        let num = |tag: &str| -> f64 {
            line.split(tag)
                .nth(1)
                .unwrap()
                .trim_start()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(num("avg:") <= num("max:"), "{line}");
        rows += 1;
    }
    assert_eq!(rows, 5, "{t}");
}

#[test]
fn fairness_lines_say_over_which_tasks() {
    let out = lbsim(&[
        "run",
        "--topology",
        "hikey",
        "--workload",
        "sysbench-cpu:threads=8,requests=400",
    ]);
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(
        t.contains("work fairness, 8 sysbench tasks: min/max "),
        "the workers, not the main thread: {t}"
    );
}
