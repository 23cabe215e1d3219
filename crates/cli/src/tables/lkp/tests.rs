use lbsim_sim::experiment::{Comparison, MetricComparison};

use super::*;

#[test]
fn numbers_print_as_the_robot_prints_them() {
    // Read off the robot's mails: two decimals below 1000, whole numbers to 1e8, then four
    // significant digits in exponent form.
    for (x, s) in [
        (0.19, "0.19"),
        (554.83, "554.83"),
        (7072.0, "7072"),
        (14_364_828.0, "14364828"),
        (114_500_000.0, "1.145e+08"),
        (833_000_000.0, "8.33e+08"),
        (2.177e9, "2.177e+09"),
    ] {
        assert_eq!(number(x), s, "{x}");
    }
    for (pct, s) in [
        (33.4, "+33.4%"),
        (-100.0, "-100.0%"),
        (61380.1, "+61380.1%"),
        (210_000.0, "+2.1e+05%"),
    ] {
        assert_eq!(change(pct), s, "{pct}");
    }
    assert_eq!(noise(100.0, 18.0), " ± 18%");
    assert_eq!(noise(100.0, 160.0), " ±160%");
    assert_eq!(noise(100.0, 1.4), "      ");
}

#[test]
fn a_significant_drop_of_a_rate_is_the_headline_regression() {
    let c = Comparison {
        runs: 4,
        seeds: vec![1, 2, 3, 4],
        metrics: vec![
            MetricComparison::new(
                "sched.migrations",
                "count",
                false,
                vec![100.0, 101.0, 99.0, 100.0],
                vec![100.0, 99.0, 101.0, 100.0],
            ),
            MetricComparison::new(
                "throughput",
                "MB/s",
                true,
                vec![1000.0, 1010.0, 990.0, 1000.0],
                vec![873.0, 880.0, 866.0, 873.0],
            ),
        ],
    };
    let sides = Sides {
        base: "NO_LB_TIP_AVG_HIGH".into(),
        patched: "LB_TIP_AVG_HIGH".into(),
    };
    let test = Testcase {
        machine: "xeon-4s".into(),
        workloads: vec!["tbench:clients=96".into()],
        kernel: Some("4.6".into()),
    };
    let t = render(&sides, &test, &c);
    let first = t.lines().next().unwrap();
    assert_eq!(first, "lbsim noticed a -12.7% regression of throughput on:");
    // Column layout: base (10), noise (6), change (11), patched (11), noise (6), name.
    assert!(
        t.contains("      1000           -12.7%     873.00        throughput\n"),
        "{t}"
    );
    assert!(
        t.contains("         %stddev     %change         %stddev\n"),
        "{t}"
    );
    assert!(t.contains("machine/kernel/workload/runs:\n  xeon-4s/4.6/tbench:clients=96/4\n"));
}
