use expect_test::expect;
use lbsim_sim::experiment::{Comparison, MetricComparison};

use super::*;

fn comparison() -> Comparison {
    Comparison {
        runs: 4,
        seeds: vec![1, 2, 3, 4],
        metrics: vec![
            // A rate: higher is better, so Hmean and the harmonic stddev.
            MetricComparison::new(
                "throughput",
                "MB/s",
                true,
                vec![27132.9, 28464.1, 25369.8, 25670.3],
                vec![30340.1, 29042.9, 26718.7, 28694.4],
            ),
            // A latency: lower is better; the change is far beyond both intervals.
            MetricComparison::new(
                "max_latency",
                "ms",
                false,
                vec![7.656, 9.905, 7.192, 5.874],
                vec![1.465, 1.503, 1.822, 1.518],
            ),
        ],
    }
}

fn sides() -> Sides {
    Sides {
        base: "lbsim-base".into(),
        patched: "lbsim-patched".into(),
    }
}

#[test]
fn the_table_follows_compare_mmtests() {
    // Rules (Compare.pm, Summarise.pm Multiops, Stat.pm, PrintGeneric.pm): statistic by
    // statistic, a row per metric; `%12.2f` then ` (%7.2f%%)`; positive change = better
    // (pdiff for a rate, pndiff for a time and for Stddev/CoeffVar); the mean row's change
    // between `*` when the 95% intervals (mean +/- 1.96 stddev) are apart (cidiff > 1).
    expect![[r#"
                                               lbsim                  lbsim
                                                base                patched
        Min       throughput     25369.80 (   0.00%)    26718.70 (   5.32%)
        Min       max_latency        5.87 (   0.00%)        1.47 (  75.06%)
        Hmean     throughput     26602.81 (   0.00%)    28639.25 (   7.65%)
        Amean     max_latency        7.66 (   0.00%)        1.58 *  79.40%*
        HStddev   throughput      1214.69 (   0.00%)     1320.69 (  -8.73%)
        Stddev    max_latency        1.68 (   0.00%)        0.16 (  90.18%)
        HCoeffVar throughput         4.57 (   0.00%)        4.61 (  -1.00%)
        CoeffVar  max_latency       21.92 (   0.00%)       10.45 (  52.31%)
        Max       throughput     28464.10 (   0.00%)    30340.10 (   6.59%)
        Max       max_latency        9.90 (   0.00%)        1.82 (  81.61%)
        BHmean.95 throughput     27040.88 (   0.00%)    29342.29 (   8.51%)
        BAmean.95 max_latency        6.91 (   0.00%)        1.50 (  78.35%)
    "#]]
    .assert_eq(&render(&sides(), &comparison()));
}

#[test]
fn the_changes_are_signed_so_that_positive_is_better() {
    // pdiff for a rate going up, pndiff for a time going down: both positive.
    assert!((pdiff(110.0, 100.0) - 10.0).abs() < 1e-9);
    assert!((pndiff(90.0, 100.0) - 10.0).abs() < 1e-9);
    // mmtests' edge cases: an unchanged value, a zero base.
    assert_eq!(pdiff(5.0, 5.0), 0.0);
    assert_eq!(pdiff(5.0, 0.0), 100.0);
    assert_eq!(pndiff(5.0, 0.0), -99.0);
    assert_eq!(pndiff(0.0, 5.0), 100.0);
}

#[test]
fn one_run_a_side_has_no_stddev_and_no_significance() {
    let c = Comparison {
        runs: 1,
        seeds: vec![1],
        metrics: vec![MetricComparison::new(
            "time",
            "s",
            false,
            vec![2.0],
            vec![1.0],
        )],
    };
    let t = render(&sides(), &c);
    assert!(t.contains("Stddev    time         NaN (   0.00%)"), "{t}");
    assert!(!t.contains('*'), "{t}");
}
