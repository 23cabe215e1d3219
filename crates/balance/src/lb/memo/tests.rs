use crate::params::LbFeat;
use lbsim_topology::CpuId;

use crate::lb::harness::World;
use crate::lb::{CpuIdleType, LbIteration, LoadBalance, Pass};

/// Seed 002's machine without a wake-up: 8 CPUs in one LLC, CPU 0 idle, every other CPU
/// running 3 always-running tasks pinned to it.
fn pinned_world() -> World {
    let mut w = World::pinned_llc();
    w.set_feature(LbFeat::NewidleBailOnPending, false);
    w
}

/// Runs CPU 0's newly idle load_balance() at the LLC to its end; returns the redos and the
/// groups whose statistics its memo reused.
fn balance(w: &mut World) -> (u32, u32) {
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    let mut lb = LoadBalance::begin(&ctx, st, CpuId(0), 0, CpuIdleType::NewlyIdle, &mut pass);
    let mut redos = 0;
    while lb.redo(&mut ctx, st, &mut pass) == LbIteration::Redo {
        redos += 1;
    }
    lb.recycle(st);
    let reused = st.sd_memo_spare.last().expect("recycled").reused();
    (redos, reused)
}

/// Invariant (lb/memo.rs): the attempts after a `goto redo` reuse the statistics of the
/// groups that lost no CPU and whose runqueues did not change (debug builds recompute each
/// and compare); sometimes: it happens, from the third attempt of the first balance and
/// from the second attempt of the next balance of the same domain, which redid too.
#[test]
fn redo_reuses_unchanged_groups() {
    let mut w = pinned_world();
    let (redos, reused) = balance(&mut w);
    assert_eq!(redos, 6, "every busy CPU's tasks are pinned");
    // The memo starts keeping after the first redo, so attempt 2 computes all 8 groups;
    // attempts 3 to 7 recompute only the group of the CPU cleared last. No wake-up is in
    // flight, so the local group's idle CPU 0 is idle whatever the pass's clock, and its
    // result is reused too.
    assert_eq!(reused, 5 * 7);
    // This domain redid last time, so the next balance keeps from its first attempt.
    let (redos, reused) = balance(&mut w);
    assert_eq!(redos, 6);
    assert_eq!(reused, 6 * 7);
}

/// As [`redo_reuses_unchanged_groups`], with a wake-up IPI that may be in flight (declared
/// on CPU 5, arriving after the pass): a group that counted an idle CPU read the pass's
/// clock, so its result is never reused; the local group (idle CPU 0) is recomputed on
/// every attempt, besides the group of the CPU cleared last.
#[test]
fn redo_recomputes_a_group_with_an_idle_cpu_while_a_wakeup_may_be_in_flight() {
    let mut w = pinned_world();
    w.pend(5, u64::MAX);
    let (redos, reused) = balance(&mut w);
    assert_eq!(redos, 6);
    assert_eq!(reused, 5 * 6);
    let (redos, reused) = balance(&mut w);
    assert_eq!(redos, 6);
    assert_eq!(reused, 6 * 6);
}
