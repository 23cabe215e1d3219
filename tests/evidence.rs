//! The evidence: each seed experiment of EXPERIMENTS.md, run with enough seeds to assert the
//! direction of its effect with statistical significance (Welch's t-test, p < 0.05), through
//! the same definitions `lbsim repro` runs. docs/experiments.md explains the mechanism behind
//! each effect and where lbsim's modern kernel differs from the seed's.

use lbsim::balancer::{BalancerKind, make_balancer};
use lbsim::repro::{self, Outcome};
use lbsim_sim::experiment::{Control, MetricComparison};

/// The named built-in experiment.
fn def(name: &str) -> repro::Experiment {
    repro::defs::all()
        .into_iter()
        .find(|e| e.name == name)
        .expect("a built-in experiment")
}

/// Runs the named built-in experiment over seeds `1..=runs` on both sides.
fn run(name: &str, runs: u64) -> Outcome {
    run_exp(def(name), runs)
}

/// Runs `exp` over seeds `1..=runs` on both sides.
fn run_exp(exp: repro::Experiment, runs: u64) -> Outcome {
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
fn util_spread_skip_single_halves_the_worst_request_when_new_threads_start_stacked() {
    // Seed 000: sysbench's 8 workers, released from sysbench 1.0's start barrier, are woken
    // from one CPU and land 5/1/1/1 on one cluster. On the seed's kernel (a new task's
    // runnable_avg starts at capacity, so that cluster is overloaded at once) the idle
    // cluster balances with migrate_util, and find_busiest_queue() without the switch picks
    // a CPU running one thread (its util_avg is the highest: the stacked threads started
    // lower), fails to detach it, and needs four failures for an active balance, each time.
    // With LB_UTIL_SKIP_SINGLE it picks the stacked CPU at once.
    //
    // The stacked start needs every fork to find the first child's CPU idle again at once,
    // as on lbsim's ideal machine (`cpuidle=off`); on the modelled HiKey the forks spread
    // (see `util_spread_barrier_start_spreads_on_the_modelled_hikey`).
    let mut exp = def("util-spread");
    exp.common.push_str(",cpuidle=off");
    let o = run_exp(exp, 6);
    for name in ["total_time", "latency_max", "latency_avg"] {
        let m = metric(&o, 1, name);
        assert!(
            m.patched.mean < m.base.mean && m.significant,
            "barrier start, {name}: base {:.4} patched {:.4} (p = {:?})",
            m.base.mean,
            m.patched.mean,
            m.p_value
        );
    }
    let max = metric(&o, 1, "latency_max");
    assert!(
        max.patched.mean <= 0.6 * max.base.mean,
        "barrier start: the worst request falls by at least 40% (the seed: 21.2 -> 10.8 ms, \
         -49%): base {:.2} patched {:.2}",
        max.base.mean,
        max.patched.mean
    );
}

#[test]
fn util_spread_barrier_start_spreads_on_the_modelled_hikey() {
    // With the machine model on, a HiKey CPU that has been idle sits in cpu-sleep or
    // cluster-sleep (menu with no recent short idles picks the deepest state), and a new
    // task placed on it runs only after the state's exit time (250-700 us, the DT's
    // exit-latency-us). sysbench's main thread forks its 8 workers about 16 us apart, so
    // each fork finds the earlier children's CPUs busy (a task queued, `nr_running` 1) and
    // sched_balance_find_dst_group_cpu() takes another idle CPU: the workers start one per
    // CPU on every seed, the barrier releases them onto their own CPUs, and the switch
    // never acts (both sides are the same runs: the seed's spread-at-once runs, maxima of
    // 1.35 ms). Sysbench 0.4's start mutex wakes the workers one by one, each from the
    // previous one's CPU, and they end up one per CPU as well.
    let o = run("util-spread", 4);
    for point in [0, 1] {
        for name in ["total_time", "latency_max", "sched.migrations"] {
            let m = metric(&o, point, name);
            assert_eq!(m.base.values, m.patched.values, "point {point}, {name}");
        }
        let max = metric(&o, point, "latency_max");
        assert!(
            max.base.mean < 1.5,
            "point {point}: no request waits behind another (max {:.3} ms)",
            max.base.mean
        );
    }
}

#[test]
fn util_spread_skip_single_is_inert_on_the_modern_kernel() {
    // The two later changes that each make LB_UTIL_SKIP_SINGLE inert on the stacked start:
    // runnable_avg starting at util_avg (v5.8-rc3) leaves the stacked cluster has_spare, so
    // the idle cluster balances by task count (migrate_task); runnable boosting in
    // find_busiest_queue() (v6.5) makes the stacked CPU the busiest by utilization.
    for modern in ["RUNNABLE_AVG_INIT_UTIL", "LB_UTIL_RUNNABLE_BOOST"] {
        let mut exp = def("util-spread");
        let profile = lbsim_sim::profile::Profile::parse(exp.kernel.expect("a profile"))
            .expect("a known release");
        assert_eq!(
            profile.feature(modern),
            Some(false),
            "the seed's kernel predates {modern}"
        );
        // The stacked start (lbsim's ideal machine; see above).
        exp.common = format!("{modern},cpuidle=off");
        let o = run_exp(exp, 3);
        for name in ["total_time", "latency_max"] {
            let m = metric(&o, 1, name);
            assert_eq!(
                m.base.values, m.patched.values,
                "{modern}, barrier start, {name}"
            );
        }
    }
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
fn tip_avg_high_keeps_the_p99_at_the_machines_floor_until_the_cpus_run_out() {
    // Seed 003 measured schbench -m4's p99 wake-up latency on v4.6 (one run per N): base 177
    // us at N = 38 and 10 ms at 39; patched 193 us at 38, under 300 us up to 47, 3308 us at 48
    // ("47*4+4 = nr_cpus"). The 4.6 profile places wake-ups as v4.6 did
    // (lbsim_balance::legacy::wake, core.c's v4.6 ttwu_queue()), and schbench starts its
    // threads as schbench does (main() starts each message thread, which starts its own
    // workers), so each message thread's workers gather in its node. Without the patch a
    // message thread's lagging runnable_load_avg makes wake_affine() pull workers back to
    // it, and select_idle_sibling() v4.6, finding no wholly idle core, takes a CPU another
    // sleeping worker will wake on: a run either settles with every worker on its own CPU
    // or keeps stacking, and the more workers, the more runs stack. LB_TIP_AVG_HIGH tips the
    // message thread's CPU's load up by min(NICE_0_LOAD, load.weight / 2): wake_affine() says
    // no, the wakees stay on their idle previous CPUs, and the p99 is the machine's: the
    // worker's CPU left C6 (Broadwell-EX, 133 us exit) plus its message thread's serial wakes.
    let mut exp = def("tip-avg-high");
    exp.points.retain(|p| ["38", "47", "48"].contains(&p.value));
    exp.points[0].workloads = vec!["schbench:m=4,t=34,runtime=5".to_owned()];
    let o = run_exp(exp, 8);
    let p99 = |point| metric(&o, point, "wakeup_latency_p99");
    // A run stacks when its p99 is a wait behind another worker's 30 ms spin, not an exit.
    let stacked = |v: &[f64]| v.iter().filter(|&&x| x > 1000.0).count();
    let floor = |v: f64| (106.0..300.0).contains(&v);
    let (n34, n47, n48) = (p99(0), p99(1), p99(2));
    assert!(
        stacked(&n34.base.values) == 0 && floor(n34.base.mean) && floor(n34.patched.mean),
        "N = 34: base {:?} patched {:?} us",
        n34.base.values,
        n34.patched.values
    );
    assert!(
        // 192 threads on 192 CPUs: the odd run breaks, the mean stays near the floor.
        stacked(&n47.patched.values) * 4 <= n47.patched.values.len()
            && n47.patched.mean < 3.0 * n34.patched.mean,
        "patched N = 47 {:?} us against {:.1} at 34",
        n47.patched.values,
        n34.patched.mean
    );
    assert!(
        stacked(&n47.base.values) * 2 > n47.base.values.len() && n47.significant,
        "base N = 47 {:?} us: most runs stack",
        n47.base.values
    );
    // 196 threads on 192 CPUs: the patched side breaks too.
    assert!(
        stacked(&n48.patched.values) * 4 >= n48.patched.values.len()
            && stacked(&n48.base.values) == n48.base.values.len(),
        "N = 48: base {:?} patched {:?} us",
        n48.base.values,
        n48.patched.values
    );
}
