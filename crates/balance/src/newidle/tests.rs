use lbsim_rq::SchedFeat;
use lbsim_topology::CpuId;

use super::*;
use crate::lb::harness::World;

/// Seed 002's machine: 8 CPUs in one LLC; CPU 0 becomes newly idle; every other CPU runs 3
/// always-running tasks pinned to it. A wake-up for CPU 0 arrives 1 ns after the newly idle
/// balance starts.
fn pinned_world() -> World {
    let mut w = World::new("cores=8");
    for c in 1..8 {
        for _ in 0..3 {
            w.spawn(c, Some(&[c]));
        }
    }
    w.run_ticks(20);
    // add_nr_running() has marked the root domain overloaded.
    w.st.rd.overloaded = true;
    w.pend(0, w.now + 1);
    w
}

fn newidle(w: &mut World) -> (NewidleResult, Pass) {
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    let r = sched_balance_newidle(&mut ctx, st, CpuId(0), &mut pass);
    (r, pass)
}

/// Rule (should_we_balance, NEWIDLE_BAIL_ON_PENDING, v6.0, seed 002): a newly idle balance
/// gives up as soon as the destination has a wake-up pending: with the feature the first
/// should_we_balance() call (after entering the domain, 200 ns in) bails out and nothing
/// is scanned. Without it load_balance() keeps trying to pull pinned tasks: every CPU's
/// tasks are examined and LBF_ALL_PINNED redoes the search six times, and only the check
/// between domains stops it; the wake-up waits for all of it.
#[test]
fn newidle_bails_on_pending_wakeup() {
    let mut w = pinned_world();
    let (r, pass) = newidle(&mut w);
    assert!(!r.pulled_task);
    assert_eq!(pass.work.tasks_examined, 0);
    assert_eq!(pass.work.domains, 1);
    let fast = w.cost.charge(&pass.work);

    let mut w = pinned_world();
    w.set_feature(SchedFeat::NewidleBailOnPending, false);
    let (r, pass) = newidle(&mut w);
    assert!(!r.pulled_task);
    assert_eq!(
        pass.work.tasks_examined,
        7 * 3,
        "loop_max = 3 tasks of each CPU, all pinned"
    );
    assert_eq!(pass.work.redo_passes, 6);
    let slow = w.cost.charge(&pass.work);
    assert!(slow > 10 * fast, "{slow} vs {fast}");
    assert_eq!(r.curr_cost_ns, slow);
}

/// Rule (newidle_balance): a wake-up already pending when the CPU goes idle: return at once.
#[test]
fn pending_before_start_returns_at_once() {
    let mut w = pinned_world();
    w.pend(0, w.now);
    let (r, pass) = newidle(&mut w);
    assert_eq!((r.pulled_task, r.domains_balanced), (false, 0));
    assert_eq!(pass.work, Default::default());
    assert_eq!(w.rqs[0].idle_stamp, None);
}

/// Rules (newidle_balance): nothing is tried unless the root domain is overloaded and
/// `avg_idle` covers the lowest domain's `max_newidle_lb_cost`; a domain is skipped once
/// `avg_idle < curr_cost + max_newidle_lb_cost`; the loop stops after a pull; the measured
/// cost raises max_newidle_lb_cost and rq->max_idle_balance_cost.
#[test]
fn newidle_gates_and_pull() {
    let mut w = World::new("hikey");
    w.tunables.migration_cost_ns = 0;
    w.spawn(1, None);
    w.spawn(1, None);
    w.run_ticks(20);
    w.st.rd.overloaded = false;
    let (r, pass) = newidle(&mut w);
    assert_eq!(
        (r.pulled_task, r.domains_balanced, pass.work.domains),
        (false, 0, 0)
    );
    assert_eq!(w.rqs[0].rq_clock(), w.now + lbsim_rq::SCHED_CLOCK_OFFSET_NS);
    assert_eq!(
        w.rqs[0].idle_stamp,
        Some(w.rqs[0].rq_clock()),
        "rq_clock before the gates"
    );

    w.st.rd.overloaded = true;
    w.st.sd_mut(CpuId(0), 0).max_newidle_lb_cost = w.rqs[0].avg_idle + 1;
    let (r, _) = newidle(&mut w);
    assert_eq!(r.domains_balanced, 0);

    w.st.sd_mut(CpuId(0), 0).max_newidle_lb_cost = 0;
    let (r, pass) = newidle(&mut w);
    assert!(r.pulled_task);
    assert_eq!(r.domains_balanced, 1, "stops after the pull at MC");
    assert_eq!(pass.migrations.len(), 1);
    assert_eq!(pass.migrations[0].dst, CpuId(0));
    assert_eq!(w.st.sd(CpuId(0), 0).max_newidle_lb_cost, r.curr_cost_ns);
    assert!(r.curr_cost_ns > 0);
    assert_eq!(w.rqs[0].idle_stamp, None, "cleared on a pull");
}
