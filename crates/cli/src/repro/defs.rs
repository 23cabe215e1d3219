//! The five seed experiments of EXPERIMENTS.md as lbsim runs them.
//!
//! Both sides of every experiment run on the seed's kernel: its profile (`--kernel`,
//! `lbsim_sim::profile`: the release's features, lbsim's switches for the changes it had,
//! its tunables; the 4.x releases with the pre-v5.5 balancer), so that only the change under
//! test differs.

use super::{Col, Experiment, Layout, MetricSpec, Point, Reported, Side, Stat};

/// The v5.10 fairness series (seed 001) as merged: its two switches and its two tunables.
const V5_10_SERIES: &str =
    "LB_RELAX_BY_FAILED,imbalance_pct=117,LB_BUSY_INTERVAL_SKEW,busy_factor=16";

/// A reported mean without its spread.
const fn mean(
    metric: &'static str,
    base: Option<&'static str>,
    patched: Option<&'static str>,
) -> Reported {
    Reported {
        metric,
        stat: Stat::Mean,
        base,
        base_sd: None,
        patched,
        patched_sd: None,
    }
}

fn util_spread() -> Experiment {
    // The seed gives one set of averages; lbsim runs it from both sysbench start-ups (see
    // the generator): 0.4's start mutex wakes the workers one by one, each from the CPU of
    // the one before, 1.0's barrier wakes them all from the main thread's CPU.
    let point = |value: &'static str, format: &str| Point {
        value,
        workloads: vec![format!(
            "sysbench-cpu:threads=8,requests=1000,format={format}"
        )],
        reported: vec![
            mean("total_time", Some("172"), Some("158")),
            mean("latency_avg", Some("1.337"), Some("1.244")),
            mean("latency_max", Some("21.191"), Some("10.753")),
        ],
    };
    Experiment {
        name: "util-spread",
        seed_file: "000_10ea48af97d0d73a.txt",
        title: "sched/fair: improve spreading of utilization (v5.7)",
        topology: "hikey",
        machine: "arm64 octo-core, 2 clusters of 4 (hikey)",
        workload: "sysbench --test=cpu --num-threads=8 --max-requests=1000 (1.3 ms requests), \
                   started as sysbench 0.4 does (start mutex) and as 1.0 does (start barrier)",
        kernel: Some("5.7"),
        common: String::new(),
        common_why: "the seed's kernel, tip of March 2020 (v5.7-rc), before v5.8-rc3: the 5.7 \
                     profile",
        base: "NO_LB_UTIL_SKIP_SINGLE",
        patched: "LB_UTIL_SKIP_SINGLE",
        duration_ns: 10_000_000_000,
        param: "start",
        points: vec![point("mutex", "0.4"), point("barrier", "1.0")],
        metrics: vec![
            MetricSpec::new("total_time", "total time", "ms", 1e3),
            MetricSpec::new("latency_avg", "per-request avg", "ms", 1.0),
            MetricSpec::new("latency_max", "per-request max", "ms", 1.0),
            MetricSpec::new("sched.migrations", "cpu-migrations", "count", 1.0),
        ],
        layout: Layout::MetricRows,
        note: "reported: averages of 15 runs; the per-request max is the average of the runs' \
               maxima (lbsim: the same over its runs). The seed's runs mix start-ups that \
               spread at once (maxima from 1.35 ms) with stacked ones (up to 41 ms)",
    }
}

fn fairness() -> Experiment {
    let point = |t: u32, reported: [&'static str; 6]| Point {
        value: if t == 9 { "9" } else { "11" },
        workloads: vec![format!("busy:threads={t}")],
        reported: vec![
            Reported {
                metric: "sched.fairness_min_max",
                stat: Stat::Mean,
                base: Some(reported[0]),
                base_sd: Some(reported[1]),
                patched: Some(reported[3]),
                patched_sd: Some(reported[4]),
            },
            Reported {
                metric: "sched.fairness_min_max",
                stat: Stat::Worst,
                base: Some(reported[2]),
                base_sd: None,
                patched: Some(reported[5]),
                patched_sd: None,
            },
        ],
    };
    let col = |header, side, stat| Col {
        header,
        metric: "sched.fairness_min_max",
        side,
        stat,
    };
    Experiment {
        name: "fairness",
        seed_file: "001_ddcb498a752488f6.txt",
        title: "sched/fair: Improve fairness between cfs tasks (v5.10, 4 patches)",
        topology: "hikey",
        machine: "arm64, 2 x 4 cores (hikey)",
        workload: "always-running rt-app threads, more threads than CPUs",
        kernel: Some("5.9"),
        common: String::new(),
        common_why: "the seed's kernel, v5.9: the 5.9 profile",
        base: "",
        patched: V5_10_SERIES,
        duration_ns: 10_000_000_000,
        param: "threads",
        points: vec![
            point(9, ["78.3", "6.60", "68.6", "91.20", "2.44", "85.67"]),
            point(11, ["65.91", "8.26", "53.52", "91.34", "1.87", "87.26"]),
        ],
        metrics: vec![MetricSpec::new(
            "sched.fairness_min_max",
            "min/max work ratio",
            "%",
            100.0,
        )],
        layout: Layout::PointRows(vec![
            col("base avg", Side::Base, Stat::Mean),
            col("base worst", Side::Base, Stat::Worst),
            col("patched avg", Side::Patched, Stat::Mean),
            col("patched worst", Side::Patched, Stat::Worst),
        ]),
        note: "the ratio between the least and the most work done by any thread over the run \
               (100% = perfectly fair); worst = the least fair run",
    }
}

fn newidle_bailout() -> Experiment {
    Experiment {
        name: "newidle-bailout",
        seed_file: "002_792e93e2ffbcc705.txt",
        title: "sched: allow newidle balancing to bail out of load_balance (v6.0)",
        topology: "nodes=2,cores=16,threads=2",
        machine: "2 nodes x 16 cores x SMT2 (64 CPUs; the seed does not name its machine)",
        workload: "a pair taking turns waking each other on two cores (CPUs 0 and 2), \
                   2 always-running threads pinned to each CPU of every other core",
        kernel: Some("5.19"),
        common: String::new(),
        common_why: "the seed's kernel, v5.19: the 5.19 profile",
        base: "NO_NEWIDLE_BAIL_ON_PENDING",
        patched: "NEWIDLE_BAIL_ON_PENDING",
        duration_ns: 200_000_000,
        param: "",
        points: vec![Point {
            value: "",
            workloads: vec![
                "pingpong:cpus=0,2".to_owned(),
                "hogs:cpus=4-63,per_cpu=2".to_owned(),
            ],
            reported: vec![
                mean("pingpong.wakeup_latency_avg", Some("120"), Some("6")),
                mean("pingpong.wakeup_latency_p50", Some("120"), Some("6")),
            ],
        }],
        metrics: vec![
            MetricSpec::new(
                "pingpong.wakeup_latency_avg",
                "pair wake-up latency avg",
                "us",
                1.0,
            ),
            MetricSpec::new(
                "pingpong.wakeup_latency_p50",
                "pair wake-up latency p50",
                "us",
                1.0,
            ),
            MetricSpec::new(
                "pingpong.wakeup_latency_p99",
                "pair wake-up latency p99",
                "us",
                1.0,
            ),
            MetricSpec::new("pingpong.wakeups", "pair wake-ups", "count", 1.0),
        ],
        layout: Layout::MetricRows,
        note: "reported: \"~120us\" and \"~6us\" for the pair, without saying which statistic",
    }
}

fn tip_avg_high() -> Experiment {
    const VALUES: [&str; 11] = [
        "38", "39", "40", "41", "42", "43", "44", "45", "46", "47", "48",
    ];
    // The seed's numbers: base at 38 and 39 (schbench -a stopped there), patched at every N.
    let reported = |t: u32| -> (Option<&'static str>, Option<&'static str>) {
        match t {
            38 => (Some("177"), Some("193")),
            39 => (Some("10160"), Some("184")),
            40 => (None, Some("203")),
            41 => (None, Some("202")),
            42 => (None, Some("205")),
            43 => (None, Some("218")),
            44 => (None, Some("237")),
            45 => (None, Some("245")),
            46 => (None, Some("262")),
            47 => (None, Some("296")),
            _ => (None, Some("3308")),
        }
    };
    let point = |t: u32| {
        let (base, patched) = reported(t);
        Point {
            value: VALUES[(t - 38) as usize],
            workloads: vec![format!("schbench:m=4,t={t},runtime=5")],
            reported: vec![mean("wakeup_latency_p99", base, patched)],
        }
    };
    let col = |header, side| Col {
        header,
        metric: "wakeup_latency_p99",
        side,
        stat: Stat::Mean,
    };
    Experiment {
        name: "tip-avg-high",
        seed_file: "003_683fe9f44b3c1881.txt",
        title: "LB_TIP_AVG_HIGH: tip the balancer's runqueue load toward load.weight (never merged)",
        topology: "xeon-4s",
        machine: "192 CPUs: 4 nodes x 24 cores x SMT2 (xeon-4s)",
        workload: "schbench -m4 -t N (30 ms of CPU per worker wake-up), 5 s",
        kernel: Some("4.6"),
        common: String::new(),
        common_why: "the seed's kernel, v4.6 (2016): the 4.6 profile, with the pre-v5.5 balancer",
        base: "NO_LB_TIP_AVG_HIGH",
        patched: "LB_TIP_AVG_HIGH",
        duration_ns: 6_000_000_000,
        param: "N",
        points: (38..=48).map(point).collect(),
        metrics: vec![MetricSpec::new(
            "wakeup_latency_p99",
            "wake-up latency p99",
            "us",
            1.0,
        )],
        layout: Layout::PointRows(vec![
            col("base p99", Side::Base),
            col("patched p99", Side::Patched),
        ]),
        note: "schbench's p99 wake-up latency in us; 47*4+4 = 192 = nr_cpus",
    }
}

fn prefer_sibling() -> Experiment {
    let point = |t: u32, r: [&'static str; 4]| Point {
        value: match t {
            22 => "22",
            48 => "48",
            _ => "96",
        },
        workloads: vec![format!("ebizzy:threads={t},runtime=5")],
        reported: vec![
            mean("sched.migrations", Some(r[0]), Some(r[1])),
            mean("sched.context_switches", Some(r[2]), Some(r[3])),
        ],
    };
    let col = |header, metric, side| Col {
        header,
        metric,
        side,
        stat: Stat::Mean,
    };
    Experiment {
        name: "prefer-sibling",
        seed_file: "004_7aa333f1c8652ce8.txt",
        title: "sched/fair: Prefer sibling only if local group is under-utilized (v4.13)",
        topology: "power8-22c",
        machine: "IBM POWER8, 22 cores x SMT8 = 176 CPUs (power8-22c)",
        workload: "ebizzy -t N -S 5 (the seed: -S 100) under perf stat",
        kernel: Some("4.11"),
        common: String::new(),
        common_why: "the seed's kernel, v4.11: the 4.11 profile, with the pre-v5.5 balancer",
        base: "NO_PREFER_SIBLING_NR_DIFF",
        patched: "PREFER_SIBLING_NR_DIFF",
        duration_ns: 6_000_000_000,
        param: "N",
        points: vec![
            point(22, ["366", "123", "1440", "1133"]),
            point(48, ["3776", "189", "6287", "2169"]),
            point(96, ["2790", "506", "8776", "5333"]),
        ],
        metrics: vec![
            MetricSpec::new("sched.migrations", "cpu-migrations", "count", 1.0),
            MetricSpec::new("sched.context_switches", "context-switches", "count", 1.0),
        ],
        layout: Layout::PointRows(vec![
            col("cpu-migrations base", "sched.migrations", Side::Base),
            col("patched", "sched.migrations", Side::Patched),
            col(
                "context-switches base",
                "sched.context_switches",
                Side::Base,
            ),
            col("patched", "sched.context_switches", Side::Patched),
        ]),
        note: "reported: perf stat counts of 100 s runs, averaged over 5; lbsim: counts of \
               5 s runs",
    }
}

/// The five experiments, in EXPERIMENTS.md's order.
pub fn all() -> Vec<Experiment> {
    vec![
        util_spread(),
        fairness(),
        newidle_bailout(),
        tip_avg_high(),
        prefer_sibling(),
    ]
}
