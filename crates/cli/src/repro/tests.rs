use expect_test::expect;
use lbsim_sim::experiment::{RunOutput, compare};
use lbsim_workload::Metric;

use super::*;

#[test]
fn definitions_are_complete_and_build() {
    let all = defs::all();
    let names: Vec<&str> = all.iter().map(|e| e.name).collect();
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
    for e in &all {
        assert_ne!(e.base, e.patched, "{}", e.name);
        assert!(!e.points.is_empty(), "{}", e.name);
        assert_eq!(e.param.is_empty(), e.points.len() == 1, "{}", e.name);
        if let Layout::PointRows(cols) = &e.layout {
            for c in cols {
                e.metric(c.metric);
            }
        }
        for p in &e.points {
            for r in &p.reported {
                e.metric(r.metric);
                for v in [r.base, r.base_sd, r.patched, r.patched_sd]
                    .into_iter()
                    .flatten()
                {
                    value(v);
                }
            }
            // Both sides build, and differ only in features or tunables.
            let b = e.config(p, Side::Base).unwrap();
            let q = e.config(p, Side::Patched).unwrap();
            assert_eq!(b.duration_ns, e.duration_ns);
            assert!(
                b.features != q.features
                    || b.topology.params() != q.topology.params()
                    || b.tunables != q.tunables,
                "{}: the sides are the same",
                e.name
            );
        }
    }
}

/// A fake outcome of `e` whose runs have `metric` equal to `values(side, seed)`.
fn outcome(e: Experiment, f: impl Fn(usize, bool, u64) -> Vec<Metric>) -> Outcome {
    let points = (0..e.points.len())
        .map(|p| {
            let runs = |patched: bool| -> Vec<RunOutput> {
                (1..=3)
                    .map(|seed| RunOutput {
                        seed,
                        metrics: f(p, patched, seed),
                        events: 0,
                        event_hash: 0,
                        cut_short: Vec::new(),
                    })
                    .collect()
            };
            compare(&runs(false), &runs(true))
        })
        .collect();
    Outcome {
        experiment: e,
        points,
        planned: 3,
    }
}

fn find(name: &str) -> Experiment {
    defs::all().into_iter().find(|e| e.name == name).unwrap()
}

#[test]
fn point_rows_table() {
    // Base ratios 0.60, 0.62, 0.64 (+ point offset); patched 0.90, 0.91, 0.92.
    let o = outcome(find("fairness"), |p, patched, seed| {
        let v = if patched {
            0.89 + 0.01 * seed as f64
        } else {
            0.58 + 0.02 * seed as f64 - 0.1 * p as f64
        };
        vec![Metric::new("sched.fairness_min_max", "ratio", v, true)]
    });
    expect![[r#"
        == fairness (seed 001_ddcb498a752488f6.txt): sched/fair: Improve fairness between cfs tasks (v5.10, 4 patches) ==
        machine:     arm64, 2 x 4 cores (hikey) [hikey]
        workload:    always-running rt-app threads, more threads than CPUs
        both sides:  kernel 5.9
                     (the seed's kernel, v5.9: the 5.9 profile)
        base:        (the 5.9 profile)
        patched:     LB_RELAX_BY_FAILED,imbalance_pct=117,LB_BUSY_INTERVAL_SKEW,busy_factor=16
        lbsim runs:  3 seeds a side at each point, 10 s simulated each

        threads  source            base avg  base worst        patched avg  patched worst
        9        reported   78.3 (+/- 6.60)        68.6  91.20 (+/- 2.44)          85.67
                 lbsim     62.00 (+/- 2.00)       60.00  91.00 (+/- 1.00)*         90.00
        11       reported  65.91 (+/- 8.26)       53.52  91.34 (+/- 1.87)          87.26
                 lbsim     52.00 (+/- 2.00)       50.00  91.00 (+/- 1.00)*         90.00
        (min/max work ratio in %)
        the ratio between the least and the most work done by any thread over the run (100% = perfectly fair); worst = the least fair run.
        verdict, min/max work ratio: partly reproduced (reproduced at threads=11; partly at threads=9); docs/experiments.md, "fairness (seed 001)"
    "#]]
    .assert_eq(&text(&o));
}

#[test]
fn metric_rows_table_and_json() {
    let o = outcome(find("util-spread"), |_, patched, seed| {
        let t = if patched { 0.150 } else { 0.170 } + 0.001 * seed as f64;
        vec![
            Metric::new("total_time", "s", t, false),
            Metric::new("latency_avg", "ms", 1.3, false),
            Metric::new("latency_max", "ms", if patched { 9.0 } else { 20.0 }, false),
            Metric::new("sched.migrations", "count", seed as f64, false),
        ]
    });
    expect![[r#"
        == util-spread (seed 000_10ea48af97d0d73a.txt): sched/fair: improve spreading of utilization (v5.7) ==
        machine:     arm64 octo-core, 2 clusters of 4 (hikey) [hikey]
        workload:    sysbench --test=cpu --num-threads=8 --max-requests=1000 (1.3 ms requests), started as sysbench 0.4 does (start mutex) and as 1.0 does (start barrier)
        both sides:  kernel 5.7
                     (the seed's kernel, tip of March 2020 (v5.7-rc), before v5.8-rc3: the 5.7 profile)
        base:        NO_LB_UTIL_SKIP_SINGLE
        patched:     LB_UTIL_SKIP_SINGLE
        lbsim runs:  3 seeds a side at each point, 10 s simulated each

        start    metric                  source                 base             patched   change
        mutex    total time (ms)         reported                172                158    -8.14%
                                         lbsim       172.0 (+/- 1.0)    152.0 (+/- 1.0)*  -11.63%
        mutex    per-request avg (ms)    reported              1.337              1.244    -6.96%
                                         lbsim     1.300 (+/- 0.000)  1.300 (+/- 0.000)    +0.00%
        mutex    per-request max (ms)    reported             21.191             10.753   -49.26%
                                         lbsim      20.00 (+/- 0.00)  9.000 (+/- 0.000)*  -55.00%
        mutex    cpu-migrations (count)  reported                  -                  -
                                         lbsim     2.000 (+/- 1.000)  2.000 (+/- 1.000)    +0.00%
        barrier  total time (ms)         reported                172                158    -8.14%
                                         lbsim       172.0 (+/- 1.0)    152.0 (+/- 1.0)*  -11.63%
        barrier  per-request avg (ms)    reported              1.337              1.244    -6.96%
                                         lbsim     1.300 (+/- 0.000)  1.300 (+/- 0.000)    +0.00%
        barrier  per-request max (ms)    reported             21.191             10.753   -49.26%
                                         lbsim      20.00 (+/- 0.00)  9.000 (+/- 0.000)*  -55.00%
        barrier  cpu-migrations (count)  reported                  -                  -
                                         lbsim     2.000 (+/- 1.000)  2.000 (+/- 1.000)    +0.00%
        reported: averages of 15 runs; the per-request max is the average of the runs' maxima (lbsim: the same over its runs). The seed's runs mix start-ups that spread at once (maxima from 1.35 ms) with stacked ones (up to 41 ms).
        verdict, total time: reproduced; docs/experiments.md, "util-spread (seed 000)"
        verdict, per-request avg: not reproduced (not at start=mutex, start=barrier; not significant at start=mutex, start=barrier); docs/experiments.md, "util-spread (seed 000)"
        verdict, per-request max: reproduced; docs/experiments.md, "util-spread (seed 000)"
        verdict, cpu-migrations: not judged (the seed reported no point with both sides); docs/experiments.md, "util-spread (seed 000)"
    "#]]
    .assert_eq(&text(&o));
    let j = json(std::slice::from_ref(&o));
    let rows = j["experiments"][0]["rows"].as_array().unwrap();
    // Two start-ups x four metrics.
    assert_eq!(rows.len(), 8);
    let r = &rows[0];
    assert_eq!(r["metric"], "total_time");
    assert_eq!(r["params"], serde_json::json!({ "start": "mutex" }));
    assert_eq!(rows[4]["params"], serde_json::json!({ "start": "barrier" }));
    assert_eq!(r["reported_base"], 172.0);
    assert_eq!(r["reported_patched"], 158.0);
    assert!((r["sim_base_mean"].as_f64().unwrap() - 172.0).abs() < 1e-9);
    assert!((r["sim_patched_stddev"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    assert_eq!(r["runs"], 3);
    assert_eq!(r["significant"], true);
    assert_eq!(rows[3]["reported_base"], serde_json::Value::Null);
}

#[test]
fn json_rows_for_worst_runs_and_params() {
    let o = outcome(find("fairness"), |_, patched, seed| {
        let v = if patched { 0.9 } else { 0.6 } + 0.01 * seed as f64;
        vec![Metric::new("sched.fairness_min_max", "ratio", v, true)]
    });
    let j = json(std::slice::from_ref(&o));
    let rows = j["experiments"][0]["rows"].as_array().unwrap();
    // Two points x (mean, worst).
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0]["params"], serde_json::json!({ "threads": 9 }));
    assert_eq!(rows[0]["stat"], "mean");
    assert_eq!(rows[0]["reported_base"], 78.3);
    assert_eq!(rows[1]["stat"], "worst");
    assert_eq!(rows[1]["reported_patched"], 85.67);
    // The worst base run is the least fair: 0.61.
    assert!((rows[1]["sim_base_mean"].as_f64().unwrap() - 61.0).abs() < 1e-9);
    assert_eq!(rows[1]["sim_base_stddev"], serde_json::Value::Null);
    assert_eq!(rows[2]["params"], serde_json::json!({ "threads": 11 }));
}
