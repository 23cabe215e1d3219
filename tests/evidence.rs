//! The evidence: each seed experiment of EXPERIMENTS.md, run with enough seeds to assert the
//! direction of its effect with statistical significance (Welch's t-test, p < 0.05), through
//! the same definitions `lbsim repro` runs. docs/experiments.md explains the mechanism behind
//! each effect and where lbsim's modern kernel differs from the seed's.

use lbsim::policy::{BalancerKind, make_balancer};
use lbsim::repro::{self, Outcome};
use lbsim_sim::experiment::{Control, MetricComparison};

/// Runs the named built-in experiment over seeds `1..=runs` on both sides.
fn run(name: &str, runs: u64) -> Outcome {
    let exp = repro::defs::all()
        .into_iter()
        .find(|e| e.name == name)
        .expect("a built-in experiment");
    let seeds: Vec<u64> = (1..=runs).collect();
    let ctl = Control {
        jobs: 2,
        stop: None,
        progress: None,
    };
    let factory = |cfg: &lbsim_sim::engine::SimConfig| make_balancer(BalancerKind::Kernel, cfg);
    repro::run(vec![exp], &seeds, &factory, &ctl)
        .expect("the experiment runs")
        .pop()
        .expect("one outcome")
}

fn metric<'a>(o: &'a Outcome, point: usize, name: &str) -> &'a MetricComparison {
    o.points[point]
        .metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("metric {name} at point {point}"))
}

#[test]
fn fairness_min_max_work_ratio_rises_by_more_than_5_points_for_9_and_11_threads() {
    // Seed 001: with the v5.10 series (LB_RELAX_BY_FAILED, imbalance_pct 117, the busy
    // interval skew, busy_factor 16) the ratio between the least and the most work done
    // rises from 78%/66% to 91% for 9/11 always-running threads on 2 clusters of 4.
    let o = run("fairness", 6);
    for (point, threads) in [(0, 9), (1, 11)] {
        let m = metric(&o, point, "sched.fairness_min_max");
        let rise = (m.patched.mean - m.base.mean) * 100.0;
        assert!(
            rise >= 5.0 && m.significant,
            "{threads} threads: base {:.3} patched {:.3} (p = {:?})",
            m.base.mean,
            m.patched.mean,
            m.p_value
        );
    }
}

#[test]
fn newidle_bailout_cuts_the_pairs_wakeup_latency_at_least_5_fold() {
    // Seed 002: a pair waking each other while newly idle balancing on their CPUs keeps
    // trying to pull pinned tasks; with NEWIDLE_BAIL_ON_PENDING the balance stops at the
    // next should_we_balance() once the wake-up is pending, instead of finishing the
    // LBF_ALL_PINNED redo loop with interrupts off.
    //
    // The seed's "~120us -> ~6us" names no statistic. In the model the base distribution is
    // two equal halves: the wake-ups of one thread arrive while its CPU is balancing (about
    // the balance's length, ~60 us) and those of the other arrive just after (a few us).
    // Its median therefore falls on either side from seed to seed and says nothing, so the
    // assertion is on the mean and the 99th percentile, which both move by the size the
    // seed reports (docs/experiments.md).
    let o = run("newidle-bailout", 8);
    for name in ["pingpong.wakeup_latency_avg", "pingpong.wakeup_latency_p99"] {
        let m = metric(&o, 0, name);
        assert!(
            m.base.mean >= 5.0 * m.patched.mean && m.significant,
            "{name}: base {:.2} us, patched {:.2} us (p = {:?})",
            m.base.mean,
            m.patched.mean,
            m.p_value
        );
    }
}

#[test]
fn prefer_sibling_nr_diff_cuts_migrations_at_least_2_fold_for_22_and_48_threads() {
    // Seed 004: with prefer_sibling forcing a balance only for a task-count difference above
    // one, a lone extra ebizzy thread stops bouncing between SMT8 cores of a 22-core Power8.
    let o = run("prefer-sibling", 4);
    for (point, threads) in [(0, 22), (1, 48)] {
        let m = metric(&o, point, "sched.migrations");
        assert!(
            m.base.mean >= 2.0 * m.patched.mean && m.significant,
            "{threads} threads: migrations base {:.1} patched {:.1} (p = {:?})",
            m.base.mean,
            m.patched.mean,
            m.p_value
        );
    }
}

#[test]
fn tip_avg_high_changes_nothing_below_47_workers_per_message_thread() {
    // Seed 003 measured p99 wake-up latency 177 -> 193 us at N = 38 and 10160 -> 184 us at
    // N = 39 on a 2016 kernel, where a CPU chosen for a wake-up still looked idle to the next
    // concurrent wake-up until the wakee was enqueued. Since v5.8 idle_cpu() also checks
    // rq->ttwu_pending, set as soon as the wake-up is queued, so concurrent wake-ups of
    // schbench's workers no longer stack and the p99 stays at the bare wake-up cost on both
    // sides: what lbsim's v6.6-v6.12 model measures (see docs/experiments.md).
    let o = run("tip-avg-high", 3);
    for (point, n) in [(0, 38), (1, 39)] {
        let m = metric(&o, point, "wakeup_latency_p99");
        assert!(
            !m.significant && m.base.mean < 100.0 && m.patched.mean < 100.0,
            "N = {n}: p99 base {:.1} us patched {:.1} us (p = {:?})",
            m.base.mean,
            m.patched.mean,
            m.p_value
        );
    }
}
