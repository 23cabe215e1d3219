//! Scenario tests on one runqueue, driven by a tiny harness that ticks every `TICK_NSEC` and
//! schedules when a reschedule is requested (what the engine does), plus property tests over
//! random enqueue/dequeue/tick sequences.

use lbsim_topology::{CpuId, Cpumask};
use proptest::prelude::*;

use super::*;
use crate::entity::WakeFlags;
use crate::params::{RqFeat, default_features, v6_6};
use crate::task::{Policy, Task, TaskState};
use crate::tunables::{FairPick, Features, SchedParams, Tunables};
use crate::weights::calc_delta_fair;

/// One CPU, its tasks, the simulated time.
struct Harness {
    rq: Rq,
    tasks: Tasks,
    now: u64,
    tick: u64,
}

impl Harness {
    fn new(features: Features, tunables: &Tunables) -> Harness {
        let params = SchedParams::new(features, tunables);
        Harness {
            rq: Rq::new(CpuId(0), 1024, params),
            tasks: Tasks::with_key(),
            now: 0,
            tick: params.tick_nsec,
        }
    }

    fn eevdf() -> Harness {
        Harness::new(default_features(), &Tunables::new(1))
    }

    fn cfs() -> Harness {
        let mut t = Tunables::new(1);
        t.set("sched_policy", "cfs").unwrap();
        Harness::new(default_features(), &t)
    }

    /// Fork a task onto the CPU (as `wake_up_new_task()`), scheduling if asked.
    fn spawn(&mut self, name: &str, nice: i32) -> TaskId {
        let base = self.rq.params.base_slice_ns;
        let p = self.tasks.insert(Task::new(
            name,
            Policy::Normal,
            nice,
            Cpumask::full(1),
            CpuId(0),
            base,
        ));
        self.rq.task_fork_fair(&mut self.tasks, p, self.now);
        self.rq.wake_up_new_task(&mut self.tasks, p, self.now);
        self.resched_if_needed();
        self.check();
        p
    }

    fn resched_if_needed(&mut self) {
        if self.rq.need_resched() {
            self.rq
                .schedule(&mut self.tasks, PrevAction::Preempt, self.now);
        }
    }

    fn check(&self) {
        self.rq.check_invariants(&self.tasks).unwrap();
    }

    /// Advance to `until` tick by tick, scheduling on request.
    fn run_until(&mut self, until: u64) {
        while self.now + self.tick <= until {
            self.now += self.tick;
            self.rq.sched_tick(&mut self.tasks, self.now);
            self.resched_if_needed();
            self.check();
        }
    }

    /// The current task blocks now.
    fn block_curr(&mut self) -> TaskId {
        let p = self.rq.curr.expect("a running task");
        self.rq
            .schedule(&mut self.tasks, PrevAction::Block, self.now);
        self.check();
        p
    }

    /// Wake a sleeping task on this CPU.
    fn wake(&mut self, p: TaskId) {
        if !self
            .rq
            .ttwu_runnable(&mut self.tasks, p, WakeFlags::TTWU, self.now)
        {
            self.rq
                .ttwu_do_activate(&mut self.tasks, p, WakeFlags::TTWU, self.now);
        }
        self.check();
    }

    fn runtime(&self, p: TaskId) -> u64 {
        self.tasks[p].se.sum_exec_runtime
    }
}

/// Rule: two always-running nice-0 tasks share one CPU 50/50. With HZ=250 and a 0.75 ms base
/// slice, every slice ends at the next tick, so they alternate every 4 ms: after any number of
/// ticks their runtimes differ by at most one tick, and all time is accounted.
#[test]
fn two_nice0_tasks_share_equally() {
    let mut h = Harness::eevdf();
    let a = h.spawn("a", 0);
    let b = h.spawn("b", 0);
    for step in 1..=250u64 {
        h.run_until(step * h.tick);
        let (ra, rb) = (h.runtime(a), h.runtime(b));
        assert_eq!(ra + rb, h.now, "all time is accounted");
        assert!(ra.abs_diff(rb) <= h.tick, "t={} a={ra} b={rb}", h.now);
    }
    assert_eq!((h.runtime(a), h.runtime(b)), (500_000_000, 500_000_000));
    // The switch from idle to a at the fork, then one per tick.
    assert_eq!(h.rq.nr_switches, 251);
    assert_eq!(h.tasks[a].nivcsw + h.tasks[b].nivcsw, 250);
    assert_eq!(h.tasks[a].nvcsw + h.tasks[b].nvcsw, 0);
}

/// Rule: CPU time is shared in proportion to weight, nice 0 : nice 5 = 1024 : 335, to within one
/// tick (the effective slice granularity at HZ=250) at every tick.
#[test]
fn nice0_vs_nice5_shares_by_weight() {
    let mut h = Harness::eevdf();
    let a = h.spawn("nice0", 0);
    let b = h.spawn("nice5", 5);
    let mut worst = 0u64;
    for step in 1..=2500u64 {
        h.run_until(step * h.tick);
        let ideal_a = h.now * 1024 / 1359;
        worst = worst.max(h.runtime(a).abs_diff(ideal_a));
        assert!(
            h.runtime(a).abs_diff(ideal_a) <= h.tick,
            "t={} a={} ideal={ideal_a}",
            h.now,
            h.runtime(a)
        );
    }
    // 10 s: 7.535 s vs 2.465 s.
    assert_eq!(h.runtime(a) + h.runtime(b), 10_000_000_000);
    assert!(
        worst > 0,
        "the check is not vacuous: shares are quantised to ticks"
    );
}

/// Rule: the legacy CFS pick (v6.1) gives the same long-run shares: 50/50 for two nice-0 tasks
/// and 1024:335 for nice 0 vs nice 5, within two ticks (a slice can run one extra tick before
/// check_preempt_tick() sees it).
#[test]
fn legacy_cfs_gives_the_same_shares() {
    let mut h = Harness::cfs();
    let a = h.spawn("a", 0);
    let b = h.spawn("b", 0);
    h.run_until(1_000_000_000);
    assert!(
        h.runtime(a).abs_diff(h.runtime(b)) <= 2 * h.tick,
        "{} {}",
        h.runtime(a),
        h.runtime(b)
    );

    let mut h = Harness::cfs();
    let a = h.spawn("nice0", 0);
    let _b = h.spawn("nice5", 5);
    for step in 1..=250u64 {
        h.run_until(step * 10 * h.tick);
        let ideal_a = h.now * 1024 / 1359;
        assert!(
            h.runtime(a).abs_diff(ideal_a) <= 2 * h.tick,
            "t={} a={} ideal={ideal_a}",
            h.now,
            h.runtime(a)
        );
    }
}

/// Rule (place_entity, PLACE_LAG): a task's lag survives sleep and wakeup: after the wakeup
/// enqueue, V' - v equals the vlag saved at dequeue (to the integer rounding of V, one virtual
/// ns). Run with the v6.6 features so the sleeper is really dequeued whatever its lag.
#[test]
fn lag_is_preserved_across_sleep() {
    for sleep_at in [2_000_000u64, 6_000_000, 10_000_000, 14_000_000] {
        let mut h = Harness::new(v6_6(default_features()), &Tunables::new(1));
        let _a = h.spawn("a", 0);
        let _b = h.spawn("b", 3);
        let c = h.spawn("c", 0);
        h.run_until(sleep_at);
        // Make c the running task, then block it.
        while h.rq.curr != Some(c) {
            let t = h.now + h.tick;
            h.run_until(t);
        }
        h.now += 1_000_000; // mid-tick
        h.block_curr();
        let vlag = h.tasks[c].se.vlag;
        assert!(!h.tasks[c].se.on_rq);
        let t = h.now + 12_000_000;
        h.run_until(t);
        h.wake(c);
        let v = h.rq.cfs.avg_vruntime(&h.tasks);
        let lag_after = v.wrapping_sub(h.tasks[c].se.vruntime) as i64;
        assert!(
            (lag_after - vlag).abs() <= 1,
            "sleep at {sleep_at}: vlag {vlag}, after {lag_after}"
        );
    }
}

/// Rule (DELAY_DEQUEUE, v6.12): a task that blocks with negative lag stays queued (delayed),
/// still counted in nr_running and load.weight, until it is picked (then really dequeued) or
/// woken (requeued in place, no migration, no select_task_rq()).
#[test]
fn delayed_dequeue_keeps_an_ineligible_sleeper_queued() {
    let mut h = Harness::eevdf();
    let a = h.spawn("a", 0);
    let b = h.spawn("b", 0);
    // a ran the first tick: it is ahead of V, so ineligible.
    h.run_until(h.tick);
    assert_eq!(h.rq.curr, Some(b));
    h.run_until(2 * h.tick);
    assert_eq!(h.rq.curr, Some(a));
    h.now += 3_000_000;
    h.rq.sched_tick(&mut h.tasks, h.now); // account a's run without a reschedule tick
    assert!(!h.rq.cfs.entity_eligible(&h.tasks, a));
    h.block_curr();
    let sa = &h.tasks[a];
    assert!(
        sa.se.on_rq && sa.se.sched_delayed,
        "blocked with negative lag: delayed"
    );
    assert_eq!(sa.state, TaskState::Sleeping);
    assert_eq!(sa.on_rq, OnRq::Queued);
    assert_eq!((h.rq.nr_running, h.rq.cfs.h_nr_delayed), (2, 1));
    assert_eq!(h.rq.cfs.load.weight, 2048);
    // Woken while delayed: requeued in place.
    h.wake(a);
    assert!(!h.tasks[a].se.sched_delayed);
    assert_eq!(h.tasks[a].state, TaskState::Queued);
    assert_eq!((h.rq.nr_running, h.rq.cfs.h_nr_delayed), (2, 0));

    // Without a wakeup, the pick dequeues it for good once it is the pick.
    h.run_until(h.now + h.tick);
    while h.rq.curr != Some(a) {
        let t = h.now + h.tick;
        h.run_until(t);
    }
    h.now += 3_000_000;
    h.rq.sched_tick(&mut h.tasks, h.now);
    h.block_curr();
    assert!(h.tasks[a].se.sched_delayed);
    // b runs; at its slice end the pick meets the delayed a (a's lag decayed to >= 0 as V moved).
    let t = h.now + 6 * h.tick;
    h.run_until(t);
    assert!(!h.tasks[a].se.on_rq, "picked while delayed: dequeued");
    assert_eq!(h.tasks[a].on_rq, OnRq::No);
    assert_eq!(h.rq.nr_running, 1);
    assert_eq!(h.rq.curr, Some(b));
}

/// Rule (RUN_TO_PARITY): a curr that is still eligible and within the slice it was picked with
/// (its vlag holds the deadline stashed by set_next_entity()) is not preempted by a wakee with an
/// earlier deadline while RUN_TO_PARITY is on; with it off, pick_eevdf() picks the wakee and the
/// wakeup preempts.
///
/// Construction (base slice 3 ms, all nice 0): b and c are forked at V0; a wakes with vlag 2 ms,
/// is placed 3 ms left of V0 (lag inflated by (W + w) / W = 3/2) with deadline V0, and preempts.
/// 0.5 ms later w wakes with vlag 3.9 ms: V = V0 - 0.83 ms, w is placed 5.2 ms left of it
/// (deadline about V0 - 3 ms, before a's V0); the new V = V0 - 2.13 ms keeps a (V0 - 2.5 ms)
/// eligible.
#[test]
fn run_to_parity_changes_wakeup_preemption() {
    let mut outcomes = Vec::new();
    for parity in [true, false] {
        let mut f = default_features();
        f.set(RqFeat::RunToParity, parity);
        let mut t = Tunables::new(1);
        t.set("base_slice_ns", "3000000").unwrap();
        let mut h = Harness::new(f, &t);
        let b = h.spawn("b", 0);
        let c = h.spawn("c", 0);
        let sleeper = |h: &mut Harness, name: &str, vlag: i64| {
            let base = h.rq.params.base_slice_ns;
            let p = h.tasks.insert(Task::new(
                name,
                Policy::Normal,
                0,
                Cpumask::full(1),
                CpuId(0),
                base,
            ));
            h.tasks[p].state = TaskState::Sleeping;
            h.tasks[p].se.vlag = vlag;
            p
        };
        let a = sleeper(&mut h, "a", 2_000_000);
        let w = sleeper(&mut h, "w", 3_900_000);
        h.now = 100_000;
        // b keeps the CPU under RUN_TO_PARITY; without it c (same deadline, queued) wins.
        let first = h.rq.curr.unwrap();
        assert!(first == b || first == c);
        h.wake(a);
        assert!(
            h.rq.need_resched(),
            "a preempts either way (curr loses eligibility)"
        );
        h.resched_if_needed();
        assert_eq!(h.rq.curr, Some(a));
        h.now += 500_000;
        h.wake(w);
        assert!(h.rq.cfs.entity_eligible(&h.tasks, a), "a is still eligible");
        assert!(h.rq.cfs.entity_eligible(&h.tasks, w));
        assert!(
            before(h.tasks[w].se.deadline, h.tasks[a].se.deadline),
            "w has the earlier deadline"
        );
        assert_eq!(
            h.tasks[a].se.vlag as u64, h.tasks[a].se.deadline,
            "a is within its picked slice"
        );
        outcomes.push(h.rq.need_resched());
    }
    assert_eq!(
        outcomes,
        [false, true],
        "RUN_TO_PARITY on: no preemption; off: preemption"
    );
}

fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// Rule (check_preempt_wakeup_fair): a task that sleeps briefly and wakes eligible (lag >= 0)
/// preempts an always-running task at once: the runner has used its slice, so update_curr() in
/// the wakeup path gives it a new, later deadline, and pick_eevdf() chooses the wakee. With the
/// v6.6 features a wakee that slept with negative lag (it got ahead by running right after
/// earlier wakeups) keeps it, is not eligible and waits; with v6.12's DELAY_DEQUEUE and
/// DELAY_ZERO it stays queued while asleep, V passes it, and it always wakes eligible.
#[test]
fn short_sleeper_preempts_a_hog() {
    for (features, v612) in [
        (default_features(), true),
        (v6_6(default_features()), false),
    ] {
        let (immediate, waited) = short_sleeper_run(features);
        if v612 {
            assert!(
                immediate > 400 && waited == 0,
                "v6.12: {immediate} immediate, {waited} waited"
            );
        } else {
            assert!(
                immediate > 100 && waited > 10,
                "v6.6: {immediate} immediate, {waited} waited"
            );
        }
    }
}

fn short_sleeper_run(features: Features) -> (u32, u32) {
    let mut h = Harness::new(features, &Tunables::new(1));
    let hog = h.spawn("hog", 0);
    h.run_until(40_000_000);
    let s = h.spawn("sleeper", 0);
    let (mut immediate, mut waited) = (0, 0);
    let mut t = h.now;
    while t < 2_000_000_000 {
        // The sleeper runs 0.5 ms whenever it gets the CPU, then sleeps 3 ms.
        t += h.tick;
        h.run_until(t);
        if h.rq.curr == Some(s) {
            h.now += 500_000;
            h.block_curr();
            let wake_at = h.now + 3_000_000;
            let tick_before = (h.now / h.tick + 1) * h.tick;
            if tick_before <= wake_at {
                h.run_until(tick_before);
            }
            h.now = wake_at;
            h.wake(s);
            let eligible = h.rq.cfs.entity_eligible(&h.tasks, s);
            h.resched_if_needed();
            if eligible {
                assert_eq!(
                    h.rq.curr,
                    Some(s),
                    "an eligible wakee preempts the hog at {}",
                    h.now
                );
                immediate += 1;
            } else {
                assert_eq!(h.rq.curr, Some(hog), "an ineligible wakee waits");
                waited += 1;
            }
            t = h.now - h.now % h.tick;
        }
    }
    assert!(h.runtime(hog) > 1_500_000_000);
    (immediate, waited)
}

/// Rule (cfs_tasks order): a task moves to the head when picked (set_next_task_fair()), new
/// tasks are added at the head (account_entity_enqueue()), so the tail holds the task that ran
/// least recently.
#[test]
fn cfs_tasks_is_most_recently_picked_first() {
    let mut h = Harness::eevdf();
    let a = h.spawn("a", 0);
    let b = h.spawn("b", 0);
    let c = h.spawn("c", 0);
    let order: Vec<TaskId> = h.rq.cfs.cfs_tasks().collect();
    // a was picked at its fork (moved to head), then b and c were added at the head.
    assert_eq!(order, [c, b, a]);
    h.run_until(h.tick);
    let picked = h.rq.curr.unwrap();
    assert_eq!(h.rq.cfs.cfs_tasks().next(), Some(picked));
    let tail = h.rq.cfs.cfs_tasks().next_back().unwrap();
    assert_ne!(tail, picked);
}

/// Rule (ttwu_do_activate): the idle time since idle_stamp is folded into avg_idle with a 1/8
/// weight and capped at 2 * max_idle_balance_cost.
#[test]
fn avg_idle_update_on_wakeup() {
    let mut h = Harness::eevdf();
    let a = h.spawn("a", 0);
    h.run_until(h.tick);
    h.block_curr();
    assert_eq!(h.rq.avg_idle, 1_000_000);
    h.rq.idle_stamp = Some(h.rq.rq_clock());
    h.now += 200_000;
    h.wake(a);
    // 1000000 + (200000 - 1000000) / 8 = 900000.
    assert_eq!(h.rq.avg_idle, 900_000);
    assert_eq!(h.rq.idle_stamp, None);
    h.resched_if_needed();
    h.block_curr();
    h.rq.idle_stamp = Some(h.rq.rq_clock());
    h.now += 50_000_000;
    h.wake(a);
    assert_eq!(
        h.rq.avg_idle, 1_000_000,
        "capped at 2 * max_idle_balance_cost"
    );
}

/// Rule (wake-up migration): the old runqueue keeps the task's load as `removed` until its next
/// update; the task is attached on the new one (`last_update_time == 0` → DO_ATTACH).
#[test]
fn wakeup_migration_moves_the_load() {
    let params = SchedParams::new(default_features(), &Tunables::new(2));
    let mut tasks = Tasks::with_key();
    let mut rq0 = Rq::new(CpuId(0), 1024, params);
    let mut rq1 = Rq::new(CpuId(1), 1024, params);
    let p = tasks.insert(Task::new(
        "p",
        Policy::Normal,
        0,
        Cpumask::full(2),
        CpuId(0),
        params.base_slice_ns,
    ));
    rq0.wake_up_new_task(&mut tasks, p, 0);
    rq0.schedule(&mut tasks, PrevAction::Preempt, 0);
    let mut now = 0;
    for _ in 0..50 {
        now += 4_000_000;
        rq0.sched_tick(&mut tasks, now);
    }
    rq0.schedule(&mut tasks, PrevAction::Block, now);
    let load = rq0.cpu_load();
    assert!(load > 900, "a busy task's load: {load}");
    now += 1_000_000;
    set_task_cpu(&mut rq0, &mut tasks, p, CpuId(1), now);
    assert_eq!(tasks[p].se.avg.last_update_time, 0);
    assert_eq!(tasks[p].se.nr_migrations, 1);
    // __set_task_cpu(): `p->wake_cpu = cpu`, whoever moved the task, so that its next
    // wake-up searches from where it was last put.
    assert_eq!(tasks[p].cpu, CpuId(1));
    assert_eq!(tasks[p].wake_cpu, CpuId(1));
    assert_eq!(rq0.cfs.avg.removed.nr, 1);
    rq1.ttwu_do_activate(&mut tasks, p, WakeFlags::TTWU | WakeFlags::MIGRATED, now);
    assert_eq!(
        tasks[p].se.exec_start, 0,
        "ENQUEUE_MIGRATED: no longer cache hot"
    );
    assert_eq!(rq1.cpu_load(), tasks[p].se.avg.load_avg);
    rq0.update_blocked_averages(&mut tasks, now);
    assert_eq!(rq0.cfs.avg.removed.nr, 0);
    assert!(
        rq0.cpu_load() < 5,
        "removed load applied: {}",
        rq0.cpu_load()
    );
    rq0.check_invariants(&tasks).unwrap();
    rq1.check_invariants(&tasks).unwrap();
}

/// Rule (load balancer move): detach_task() dequeues with DO_DETACH (the load leaves at once),
/// attach_task() enqueues with ENQUEUE_MIGRATED and attaches.
#[test]
fn balancer_move_detaches_and_attaches() {
    let params = SchedParams::new(default_features(), &Tunables::new(2));
    let mut tasks = Tasks::with_key();
    let mut rq0 = Rq::new(CpuId(0), 1024, params);
    let mut rq1 = Rq::new(CpuId(1), 1024, params);
    let mk = |tasks: &mut Tasks, n: &str| {
        tasks.insert(Task::new(
            n,
            Policy::Normal,
            0,
            Cpumask::full(2),
            CpuId(0),
            params.base_slice_ns,
        ))
    };
    let a = mk(&mut tasks, "a");
    let b = mk(&mut tasks, "b");
    rq0.wake_up_new_task(&mut tasks, a, 0);
    rq0.wake_up_new_task(&mut tasks, b, 0);
    rq0.schedule(&mut tasks, PrevAction::Preempt, 0);
    let mut now = 0;
    for _ in 0..25 {
        now += 4_000_000;
        if rq0.sched_tick(&mut tasks, now) {
            rq0.schedule(&mut tasks, PrevAction::Preempt, now);
        }
    }
    let queued = if rq0.curr == Some(a) { b } else { a };
    let before = rq0.cpu_load();
    now += 100_000;
    rq0.detach_task(&mut tasks, queued, CpuId(1), now);
    assert_eq!(tasks[queued].on_rq, OnRq::Migrating);
    assert_eq!(
        rq0.cpu_load(),
        before - tasks[queued].se.avg.load_avg.min(before),
        "synchronous detach"
    );
    rq1.attach_task(&mut tasks, queued, now);
    assert_eq!(tasks[queued].on_rq, OnRq::Queued);
    assert_eq!(tasks[queued].se.exec_start, 0);
    assert!(
        rq1.need_resched(),
        "an idle CPU is preempted by the attached task"
    );
    rq1.schedule(&mut tasks, PrevAction::Preempt, now);
    assert_eq!(rq1.curr, Some(queued));
    rq0.check_invariants(&tasks).unwrap();
    rq1.check_invariants(&tasks).unwrap();
}

/// Rule (LB_TIP_AVG_HIGH, seed 003): cpu_load_lb() tips load_avg towards the queued weight when
/// load.weight > 2 * load_avg; off by default.
#[test]
fn tip_avg_high() {
    let mut h = Harness::eevdf();
    h.spawn("a", 0);
    h.spawn("b", 0);
    // Fresh tasks: load_avg starts at the full weight, so no tipping yet.
    assert_eq!(h.rq.cpu_load_lb(true), h.rq.cpu_load());
    h.rq.cfs.avg.avg.load_avg = 300;
    assert_eq!(h.rq.cpu_load_lb(false), 300, "feature off");
    // 2048 > 600: 300 + min(1024, 1024).
    assert_eq!(h.rq.cpu_load_lb(true), 1324);
    h.rq.cfs.avg.avg.load_avg = 1024;
    assert_eq!(h.rq.cpu_load_lb(true), 1024, "2048 is not > 2 * 1024");
}

/// Rule (capacity helpers): fits_capacity() is a 20% margin, capacity_greater() 5%.
#[test]
fn capacity_margins() {
    assert!(
        fits_capacity(819, 1024),
        "819 * 1280 = 1048320 < 1024 * 1024 = 1048576"
    );
    assert!(!fits_capacity(820, 1024), "820 * 1280 = 1049600");
    assert!(
        capacity_greater(1024, 972),
        "1048576 > 972 * 1078 = 1047816"
    );
    assert!(
        !capacity_greater(1024, 973),
        "1048576 <= 973 * 1078 = 1048894"
    );
    let mut rq = Rq::new(
        CpuId(0),
        1024,
        SchedParams::new(default_features(), &Tunables::new(1)),
    );
    rq.cpu_capacity = 875;
    assert!(
        rq.check_cpu_capacity(117),
        "875 * 117 = 102375 < 1024 * 100"
    );
    rq.cpu_capacity = 876;
    assert!(!rq.check_cpu_capacity(117), "876 * 117 = 102492 >= 102400");
}

/// Rule (misfit): on an asymmetric machine a task that does not fit this CPU's capacity makes the
/// rq misfit with its load; symmetric machines never do.
#[test]
fn misfit_status() {
    let mut h = Harness::eevdf();
    h.rq.capacity_orig = 512;
    h.rq.cpu_capacity = 512;
    let a = h.spawn("a", 0);
    // May also run on a (bigger) CPU 1; with a single allowed CPU it could never be misfit.
    h.tasks[a].cpus_mask = Cpumask::full(2).into();
    h.tasks[a].nr_cpus_allowed = 2;
    h.run_until(400_000_000);
    assert_eq!(h.rq.misfit_task_load, 0, "no asymmetry: never misfit");
    h.rq.asym_cpucap_active = true;
    h.tasks[a].max_allowed_capacity = 1024;
    h.run_until(h.now + h.tick);
    assert!(task_util_est(&h.tasks, a) * 1280 >= 512 * 1024);
    assert_eq!(h.rq.misfit_task_load, h.tasks[a].se.avg.load_avg.max(1));
}

// -----------------------------------------------------------------------------------------
// Property tests

#[derive(Clone, Debug)]
enum Op {
    /// Advance this many ns, ticking on tick boundaries.
    Advance(u64),
    /// The running task blocks.
    Block,
    /// Wake the n-th sleeping task (mod count).
    Wake(usize),
    /// Fork a task of this nice value.
    Spawn(i32),
    /// The running task yields.
    Yield,
    /// The running task exits.
    Exit,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..6_000_000).prop_map(Op::Advance),
        2 => Just(Op::Block),
        3 => (0usize..16).prop_map(Op::Wake),
        1 => (-5i32..=10).prop_map(Op::Spawn),
        1 => Just(Op::Yield),
        1 => Just(Op::Exit),
    ]
}

/// Run `ops` on one runqueue, checking after every step:
/// - counts: nr_running, h_nr_running, h_nr_delayed and load.weight equal what the queue holds;
/// - sums: avg_vruntime/avg_load equal a from-scratch recomputation over the timeline;
/// - EEVDF picks only eligible entities;
/// - lag: Σ w_i (V - v_i) over the queued entities lies in (-W, 0] (V is the floored average),
///   and every dequeued task's saved vlag is within its clamp limit.
///
/// Returns how many picks with a choice (more than one queued entity) were checked.
fn run_ops(features: Features, policy: &str, ops: &[Op]) -> usize {
    let mut t = Tunables::new(1);
    t.set("sched_policy", policy).unwrap();
    let mut h = Harness::new(features, &t);
    let eevdf = h.rq.params.pick == FairPick::Eevdf;
    let mut sleepers: Vec<TaskId> = Vec::new();
    let mut choices = 0;
    h.spawn("t0", 0);
    h.spawn("t1", 1);
    for op in ops {
        match *op {
            Op::Advance(dt) => {
                let target = h.now + dt;
                let next_tick = (h.now / h.tick + 1) * h.tick;
                if next_tick <= target {
                    h.run_until(target);
                }
                h.now = target;
            }
            Op::Block | Op::Exit | Op::Yield => {
                let Some(p) = h.rq.curr else { continue };
                let action = match op {
                    Op::Block => PrevAction::Block,
                    Op::Exit => PrevAction::Exit,
                    _ => {
                        h.rq.yield_task_fair(&mut h.tasks, h.now);
                        PrevAction::Preempt
                    }
                };
                // Check the pick this schedule makes.
                h.rq.__schedule_prev(&mut h.tasks, action, h.now);
                if eevdf && h.rq.cfs.nr_running > 1 {
                    if let Some(c) = h.rq.cfs.curr
                        && h.tasks[c].se.on_rq
                    {
                        let clock = h.rq.cfs_clock();
                        let params = h.rq.params;
                        h.rq.cfs.update_curr(&mut h.tasks, clock, &params);
                    }
                    if let Some(pick) = h.rq.cfs.pick_next_entity(&h.tasks, &h.rq.params) {
                        assert!(
                            h.rq.cfs.entity_eligible(&h.tasks, pick),
                            "picked an ineligible entity"
                        );
                        choices += 1;
                    }
                }
                let next = h.rq.pick_next_task_fair(&mut h.tasks);
                if next.is_none() {
                    h.rq.pick_next_task_idle(&mut h.tasks);
                }
                h.rq.context_switch(&mut h.tasks, next);
                match op {
                    Op::Block => sleepers.push(p),
                    Op::Exit => h.rq.task_dead_fair(&mut h.tasks, p, h.now),
                    _ => {}
                }
            }
            Op::Wake(i) => {
                sleepers.retain(|&s| h.tasks[s].state == TaskState::Sleeping);
                if sleepers.is_empty() {
                    continue;
                }
                let p = sleepers.remove(i % sleepers.len());
                h.wake(p);
                h.resched_if_needed();
            }
            Op::Spawn(nice) => {
                if h.tasks.len() < 12 {
                    h.spawn("t", nice);
                }
            }
        }
        h.check();
        // Lag sum: Σ w_i (V - v_i) = W*V - Σ w_i v_i = -(Σ mod W) ∈ (-W, 0].
        let v = h.rq.cfs.avg_vruntime(&h.tasks);
        let (mut sum, mut w_total) = (0i128, 0i128);
        for (_, t) in h.tasks.iter().filter(|(_, t)| t.se.on_rq) {
            let w = i128::from(t.se.se_weight());
            sum += w * i128::from(v.wrapping_sub(t.se.vruntime) as i64);
            w_total += w;
        }
        if eevdf && w_total > 0 {
            assert!(
                sum <= 0 && sum > -w_total,
                "lag sum {sum} outside (-{w_total}, 0]"
            );
        }
        for (_, t) in h
            .tasks
            .iter()
            .filter(|(_, t)| !t.se.on_rq && t.state == TaskState::Sleeping)
        {
            let limit = calc_delta_fair((2 * t.se.slice).max(h.tick), &t.se.load) as i64;
            if eevdf {
                assert!(
                    t.se.vlag.abs() <= limit,
                    "saved vlag {} beyond ±{limit}",
                    t.se.vlag
                );
            }
        }
    }
    choices
}

proptest! {
    /// EEVDF with the v6.12 defaults (DELAY_DEQUEUE, PREEMPT_SHORT, PLACE_REL_DEADLINE on).
    #[test]
    fn eevdf_v6_12_invariants(ops in prop::collection::vec(op(), 1..120)) {
        run_ops(default_features(), "eevdf", &ops);
    }

    /// EEVDF with the v6.6 features.
    #[test]
    fn eevdf_v6_6_invariants(ops in prop::collection::vec(op(), 1..120)) {
        run_ops(v6_6(default_features()), "eevdf", &ops);
    }

    /// Legacy CFS: counts and sums stay consistent.
    #[test]
    fn cfs_invariants(ops in prop::collection::vec(op(), 1..120)) {
        run_ops(default_features(), "cfs", &ops);
    }
}

/// "Sometimes": the random sequences really reach picks with a choice, delayed tasks and
/// wakeups (so the properties above are not vacuous).
#[test]
fn property_runs_reach_interesting_states() {
    let ops: Vec<Op> = (0..400)
        .map(|i| match i % 7 {
            0 | 3 => Op::Advance(1_500_000 + (i as u64 * 7919) % 3_000_000),
            1 => Op::Block,
            2 | 5 => Op::Wake(i),
            4 => Op::Spawn((i % 5) as i32),
            _ => Op::Yield,
        })
        .collect();
    let choices = run_ops(default_features(), "eevdf", &ops);
    assert!(choices > 50, "only {choices} picks with a choice");
}

/// wake_up_new_task(): the third task forked onto a CPU already running two gets at most half
/// of the utilization the cfs_rq leaves free (v4.7+), and the full scale with
/// `NO_POST_INIT_UTIL_AVG` (v4.6), however busy the CPU already is.
#[test]
fn a_new_task_starts_at_the_full_scale_before_v4_7() {
    let mut got = Vec::new();
    for post_init in [true, false] {
        let mut f = default_features();
        f.set(RqFeat::PostInitUtilAvg, post_init);
        let mut h = Harness::new(f, &Tunables::new(1));
        h.spawn("a", 0);
        h.spawn("b", 0);
        let cfs_util = h.rq.cfs.avg.avg.util_avg;
        let c = h.spawn("c", 0);
        got.push((cfs_util, h.tasks[c].se.avg.util_avg));
    }
    let (util_before, post_init) = got[0];
    assert!(post_init <= (1024 - util_before.min(1024)) / 2, "{got:?}");
    assert_eq!(got[1].1, 1024, "{got:?}");
}
