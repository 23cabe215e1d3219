//! Scenario tests of wake-up placement, each quoting the rule of fair.c (v6.12) it checks, and
//! property tests of the placement invariants.

use crate::params::{LbFeat, default_features};
use lbsim_rq::{Features, TaskId, WakeFlags};
use lbsim_topology::CpuId;
use proptest::prelude::*;

use super::bench::{Bench, LUT};
use super::*;
use crate::lb::{CpuIdleType, LbEnv, Pass, update_sd_lb_stats};

/// Wakes `p` (last on `prev`) from `this_cpu` through core.c's select_task_rq().
fn wake_up(b: &mut Bench, p: TaskId, prev: u32, this_cpu: u32, flags: WakeFlags) -> Placement {
    let (mut ctx, st, wake) = b.parts();
    select_task_rq(&mut ctx, st, wake, p, CpuId(prev), CpuId(this_cpu), flags)
}

fn ttwu(b: &mut Bench, p: TaskId, prev: u32, this_cpu: u32) -> Placement {
    wake_up(b, p, prev, this_cpu, WakeFlags::TTWU)
}

// ---------------------------------------------------------------------------
// select_idle_sibling / select_idle_cpu
// ---------------------------------------------------------------------------

#[test]
fn wakeup_with_idle_cpus_in_the_llc_lands_on_an_idle_cpu() {
    // Rule (select_idle_sibling): target and prev are busy, so select_idle_cpu() scans the
    // LLC from target + 1 and the first idle CPU wins.
    let mut b = Bench::new("8");
    for cpu in [0, 1, 2, 3, 4, 6, 7] {
        b.running(cpu);
    }
    let p = b.sleeper(2, None, 300, 300);
    for cpu in 0..8 {
        b.set_avg(cpu, 1024, 600);
    }
    let pl = ttwu(&mut b, p, 2, 0);
    assert_eq!(pl.cpu, CpuId(5));
    assert!(b.rqs[5].idle_cpu());
}

#[test]
fn select_idle_cpu_stops_at_the_sis_util_budget() {
    // Rule (update_idle_cpu_scan): x = sum_util / llc_weight; tmp = min(1024, x^2 pct^2 /
    // (10000 * 1024)); nr_idle_scan = llc_weight * (1024 - tmp) / 1024. With every one of 16
    // CPUs at util 770 and pct 117: tmp = 592900 * 13689 / 10240000 = 792, nr_idle_scan =
    // 16 * 232 / 1024 = 3.
    // Rule (select_idle_cpu): nr = nr_idle_scan + 1 and `--nr <= 0` stops the scan of single
    // CPUs: at most nr_idle_scan CPUs are examined after target.
    let mut b = Bench::new("16");
    for cpu in 0..16 {
        if cpu != 15 {
            b.running(cpu);
        }
        b.set_avg(cpu, 1024, 770);
    }
    {
        let (mut ctx, st, _) = b.parts();
        let llc = ctx.topo.sd_llc(CpuId(0)).unwrap();
        let env = LbEnv::new(ctx.topo, CpuId(0), llc, CpuIdleType::NotIdle);
        let mut pass = Pass::new(ctx.now_ns);
        update_sd_lb_stats(&mut ctx, st, &env, &mut pass);
    }
    assert_eq!(b.nr_idle_scan(0), 3);

    // p last ran on CPU 0 and is woken from CPU 0: no wake_affine (this == prev), target 0.
    let p = b.sleeper(0, None, 100, 100);
    let pl = ttwu(&mut b, p, 0, 0);
    // Target 0 busy; prev == target; recent_used_cpu == prev; CPUs 1, 2, 3 scanned, then
    // the budget is spent: the idle CPU 15 is not reached and the wake-up stays on target.
    assert_eq!(pl.cpu, CpuId(0));
    assert_eq!(pl.work.cpus_scanned, 1 + 3);

    // Same machine, the budget of an idle LLC (16): the scan reaches CPU 15 after 15 CPUs.
    b.set_nr_idle_scan(0, 16);
    let q = b.sleeper(0, None, 100, 100);
    let pl = ttwu(&mut b, q, 0, 0);
    assert_eq!(pl.cpu, CpuId(15));
    assert_eq!(pl.work.cpus_scanned, 1 + 15);

    // Budget 0 (LLC above ~85% util): select_idle_cpu() gives up before reading any CPU.
    b.set_nr_idle_scan(0, 0);
    let r = b.sleeper(0, None, 100, 100);
    let pl = ttwu(&mut b, r, 0, 0);
    assert_eq!(pl.cpu, CpuId(0));
    assert_eq!(pl.work.cpus_scanned, 1);
}

#[test]
fn no_sis_util_scans_the_whole_llc() {
    // Rule: without SIS_UTIL, nr stays INT_MAX and the budget is ignored.
    let mut b = Bench::with_features("16", default_features().with(LbFeat::SisUtil, false));
    for cpu in 0..15 {
        b.running(cpu);
    }
    b.set_nr_idle_scan(0, 0);
    let p = b.sleeper(0, None, 100, 100);
    assert_eq!(ttwu(&mut b, p, 0, 0).cpu, CpuId(15));
}

#[test]
fn idle_prev_and_recent_used_cpu_are_taken_before_scanning() {
    // Rule (select_idle_sibling): prev, cache affine and idle, is taken; else
    // recent_used_cpu (shares cache with target, idle, allowed); recent_used_cpu becomes prev.
    let mut b = Bench::new("8");
    for cpu in [0, 1, 2, 4, 5, 6, 7] {
        b.running(cpu);
    }
    // Both busy: this CPU 0 and prev CPU 1; CPU 3 idle; recent_used_cpu 3.
    let p = b.sleeper(1, None, 100, 100);
    b.tasks[p].recent_used_cpu = CpuId(3);
    b.set_nr_idle_scan(0, 0); // the scan would find nothing: 3 comes from recent_used_cpu
    let pl = ttwu(&mut b, p, 1, 0);
    assert_eq!(pl.cpu, CpuId(3));
    assert_eq!(b.tasks[p].recent_used_cpu, CpuId(1));

    // An idle prev is taken as is (WA_IDLE also prefers it).
    let mut b = Bench::new("8");
    b.running(0);
    let q = b.sleeper(6, None, 100, 100);
    assert_eq!(ttwu(&mut b, q, 6, 0).cpu, CpuId(6));
}

// ---------------------------------------------------------------------------
// wake_affine
// ---------------------------------------------------------------------------

/// Two LLCs of two CPUs: the waker's CPU 0 and prev CPU 2 share no cache, so the affine
/// domain is PKG (imbalance_pct 117). The other CPUs are busy, so select_idle_sibling() keeps
/// whichever CPU wake_affine() chose (both busy).
fn affine_bench(features: Features) -> Bench {
    let mut b = Bench::with_features("llcs=2,cores=2", features);
    for cpu in 0..4 {
        b.running(cpu);
    }
    b
}

#[test]
fn wa_weight_compares_hand_computed_loads() {
    // Rule (wake_affine_weight), p's load 512, both capacities 1024, WA_BIAS:
    //   this_eff = (cpu_load(this) + 512) * 100 * 1024
    //   prev_eff = (cpu_load(prev) - 512) * (100 + (117 - 100) / 2 = 108) * 1024
    // this wins iff this_eff < prev_eff.
    // cpu_load(this) = 1024: this_eff = 1536 * 100 = 153600 (x1024).
    for (prev_load, expect_this) in [
        (3072, true),  // 2560 * 108 = 276480 > 153600
        (1935, true),  // 1423 * 108 = 153684 > 153600
        (1934, false), // 1422 * 108 = 153576 < 153600: stays on prev
        (1500, false), //  988 * 108 = 106704
    ] {
        let mut b = affine_bench(default_features());
        b.set_avg(0, 1024, 500);
        b.set_avg(2, prev_load, 500);
        let p = b.sleeper(2, None, 512, 400);
        let pl = ttwu(&mut b, p, 2, 0);
        let want = if expect_this { 0 } else { 2 };
        assert_eq!(pl.cpu, CpuId(want), "prev load {prev_load}");
        let pkg = b.topo.domains(CpuId(0)).len() - 1;
        assert_eq!(
            b.st.schedstat.sd(CpuId(0), pkg).ttwu_move_affine,
            u32::from(expect_this),
            "prev load {prev_load}"
        );
    }
}

#[test]
fn wa_bias_off_compares_plain_loads() {
    // Rule (wake_affine_weight), NO_WA_BIAS: this_eff = 1536 * 1024, prev_eff = (prev - 512) *
    // 1024: this wins iff prev - 512 > 1536.
    for (prev_load, want) in [(2049, 0), (2048, 2)] {
        let mut b = affine_bench(default_features().with(LbFeat::WaBias, false));
        b.set_avg(0, 1024, 500);
        b.set_avg(2, prev_load, 500);
        let p = b.sleeper(2, None, 512, 400);
        assert_eq!(
            ttwu(&mut b, p, 2, 0).cpu,
            CpuId(want),
            "prev load {prev_load}"
        );
    }
}

#[test]
fn wa_weight_sync_removes_the_waker() {
    // Rule (wake_affine_weight, sync): the waker's task_h_load is taken off this CPU's load,
    // and prev_eff gets +1. The waker on CPU 0 has load 1024 of cpu_load 1024: this_eff =
    // (0 + 512) * 100 = 51200; prev (1024 - 512) * 108 + 1 = 55297: this wins; without sync
    // this_eff = 153600 and prev wins.
    for (flags, want) in [(WakeFlags::TTWU | WakeFlags::SYNC, 0), (WakeFlags::TTWU, 2)] {
        let mut b = affine_bench(default_features().with(LbFeat::WaIdle, false));
        b.set_avg(0, 1024, 500);
        b.set_avg(2, 1024, 500);
        let waker = b.rqs[0].curr.unwrap();
        b.tasks[waker].se.avg.load_avg = 1024;
        let p = b.sleeper(2, None, 512, 400);
        assert_eq!(
            wake_up(&mut b, p, 2, 0, flags).cpu,
            CpuId(want),
            "{flags:?}"
        );
    }
}

#[test]
fn wa_idle_decides_before_wa_weight() {
    // Rule (wake_affine_idle): an idle prev is taken whatever the loads.
    let mut b = Bench::new("llcs=2,cores=2");
    b.running(0);
    b.running(3);
    b.set_avg(0, 0, 0);
    b.set_avg(2, 5000, 900);
    let p = b.sleeper(2, None, 512, 400);
    assert_eq!(ttwu(&mut b, p, 2, 0).cpu, CpuId(2));

    // Rule (wake_affine_idle, sync): the waker is the only task of this CPU: take this CPU,
    // even though WA_WEIGHT alone would keep prev (this 1024 + 512 against prev 0 - 512).
    let mut b = affine_bench(default_features());
    b.set_avg(0, 1024, 500);
    b.set_avg(2, 0, 0);
    let p = b.sleeper(2, None, 512, 400);
    assert_eq!(
        wake_up(&mut b, p, 2, 0, WakeFlags::TTWU | WakeFlags::SYNC).cpu,
        CpuId(0)
    );
    let mut b = affine_bench(default_features().with(LbFeat::WaIdle, false));
    b.set_avg(0, 1024, 500);
    b.set_avg(2, 0, 0);
    let p = b.sleeper(2, None, 512, 400);
    assert_eq!(
        wake_up(&mut b, p, 2, 0, WakeFlags::TTWU | WakeFlags::SYNC).cpu,
        CpuId(2)
    );
}

// ---------------------------------------------------------------------------
// wake_wide / record_wakee
// ---------------------------------------------------------------------------

#[test]
fn wake_wide_switches_off_affine_wakeups_for_a_one_to_many_waker() {
    // hikey: two LLCs of 4 (sd_llc_size 4). The waker on CPU 0 (LLC 0) wakes p, last on CPU 4
    // (LLC 1). CPU 1 (LLC 0) and CPU 5 (LLC 1) are idle; prev is much more loaded, so an
    // affine wake-up pulls p to the waker's LLC.
    // Rule (wake_wide): master = max(flips), slave = min(flips), factor = sd_llc_size:
    // wide iff slave >= factor && master >= slave * factor. Then want_affine = 0, no domain has
    // SD_BALANCE_WAKE, and select_idle_sibling(p, prev, prev) searches prev's LLC.
    for (waker_flips, wakee_flips, wide) in [
        (15, 4, true),  // record_wakee makes it 16 >= 4 * 4
        (14, 4, false), // 15 < 16
        (40, 3, false), // slave 3 < factor 4
    ] {
        let mut b = Bench::new("hikey");
        for cpu in [0, 2, 3, 4, 6, 7] {
            b.running(cpu);
        }
        b.set_avg(0, 1024, 500);
        b.set_avg(4, 4096, 900);
        let waker = b.rqs[0].curr.unwrap();
        let p = b.sleeper(4, None, 512, 400);
        let j = b.jiffies();
        b.tasks[waker].wakee_flips = waker_flips;
        b.tasks[waker].wakee_flip_decay_ts = j;
        b.tasks[p].wakee_flips = wakee_flips;
        let pl = ttwu(&mut b, p, 4, 0);
        assert_eq!(
            b.tasks[waker].wakee_flips,
            waker_flips + 1,
            "record_wakee counts a new wakee"
        );
        assert_eq!(b.tasks[waker].last_wakee, Some(p));
        let want = if wide { 5 } else { 1 };
        assert_eq!(pl.cpu, CpuId(want), "flips {waker_flips}/{wakee_flips}");
    }
}

#[test]
fn record_wakee_decays_once_a_second() {
    // Rule (record_wakee): if jiffies is after wakee_flip_decay_ts + HZ, halve wakee_flips and
    // restart the period; then count a wake-up of a task other than last_wakee.
    let mut b = Bench::new("4");
    b.running(0);
    let waker = b.rqs[0].curr.unwrap();
    let p = b.sleeper(1, None, 100, 100);
    let hz = u64::from(b.tunables.hz);
    let j = b.jiffies();
    b.tasks[waker].wakee_flips = 9;
    b.tasks[waker].wakee_flip_decay_ts = j - hz; // not after: no decay
    ttwu(&mut b, p, 1, 0);
    assert_eq!(b.tasks[waker].wakee_flips, 10);
    ttwu(&mut b, p, 1, 0); // same wakee again: not counted
    assert_eq!(b.tasks[waker].wakee_flips, 10);
    b.tasks[waker].wakee_flip_decay_ts = j - hz - 1; // after: halve, then the same wakee
    ttwu(&mut b, p, 1, 0);
    assert_eq!(b.tasks[waker].wakee_flips, 5);
    assert_eq!(b.tasks[waker].wakee_flip_decay_ts, j);

    // A wake-up from an idle CPU records on that CPU's idle task.
    let q = b.sleeper(1, None, 100, 100);
    ttwu(&mut b, q, 1, 2);
    assert_eq!(b.wake.idle_wakee[2].wakee_flips, 1);
    assert_eq!(b.wake.idle_wakee[2].last_wakee, Some(q));
}

// ---------------------------------------------------------------------------
// SMT: has_idle_cores, select_idle_core, select_idle_smt, __update_idle_core
// ---------------------------------------------------------------------------

/// 4 cores x SMT2, siblings adjacent: {0,1} {2,3} {4,5} {6,7}. Busy: 0 (the waker), 2 (prev),
/// 4; idle: 1, 3, 5 (each beside a busy sibling) and the whole core {6,7}. prev is lighter
/// than the waker's CPU, so wake_affine() keeps prev as target.
fn smt_bench() -> (Bench, TaskId) {
    let mut b = Bench::new("cores=4,threads=2");
    for cpu in [0, 2, 4] {
        b.running(cpu);
    }
    b.set_avg(0, 3000, 900);
    b.set_avg(2, 1024, 500);
    let p = b.sleeper(2, None, 512, 400);
    (b, p)
}

#[test]
fn has_idle_cores_prefers_a_fully_idle_core() {
    // Rule (select_idle_sibling / select_idle_cpu): with has_idle_cores, select_idle_core()
    // returns a core whose siblings are all idle, skipping idle CPUs beside busy siblings.
    let (mut b, p) = smt_bench();
    b.set_has_idle_cores(0, true);
    let pl = ttwu(&mut b, p, 2, 0);
    assert_eq!(pl.cpu, CpuId(6));
    assert!(
        b.has_idle_cores(0),
        "an idle core was found: the hint stays"
    );

    // Rule: without the hint, select_idle_smt(prev) takes prev's idle sibling.
    let (mut b, p) = smt_bench();
    b.set_has_idle_cores(0, false);
    assert_eq!(ttwu(&mut b, p, 2, 0).cpu, CpuId(3));
}

#[test]
fn a_core_scan_without_an_idle_core_clears_the_hint() {
    // Rule (select_idle_cpu): if has_idle_core and no core was idle, set_idle_cores(target,
    // false), and answer the first idle sibling noticed (CPU 3, beside prev).
    let (mut b, p) = smt_bench();
    b.running(6);
    b.set_has_idle_cores(0, true);
    assert_eq!(ttwu(&mut b, p, 2, 0).cpu, CpuId(3));
    assert!(!b.has_idle_cores(0));
}

#[test]
fn update_idle_core_marks_an_llc_when_a_whole_core_goes_idle() {
    // Rule (__update_idle_core): when a CPU goes idle, if every other sibling is idle, set
    // has_idle_cores of its LLC (unless already set).
    let mut b = Bench::new("cores=4,threads=2");
    b.running(0);
    b.running(3);
    let (ctx, st, _) = b.parts();
    update_idle_core(&ctx, st, CpuId(2)); // sibling 3 busy
    assert!(!test_idle_cores(&ctx, st, CpuId(2)));
    let w = update_idle_core(&ctx, st, CpuId(5)); // sibling 4 idle
    assert_eq!(w.cpus_scanned, 1);
    assert!(test_idle_cores(&ctx, st, CpuId(0)), "one flag per LLC");
    let w = update_idle_core(&ctx, st, CpuId(7));
    assert_eq!(w.cpus_scanned, 0, "already marked: nothing read");

    // No SMT: no bookkeeping.
    let mut b = Bench::new("4");
    let (ctx, st, _) = b.parts();
    update_idle_core(&ctx, st, CpuId(1));
    assert!(!test_idle_cores(&ctx, st, CpuId(1)));
}

// ---------------------------------------------------------------------------
// Clusters
// ---------------------------------------------------------------------------

#[test]
fn cluster_is_scanned_first() {
    // Rule (select_idle_cpu, v6.7+): on a cluster machine, the target's cluster is scanned
    // first (from target + 1, wrapping inside it), then the rest of the LLC. One LLC of two
    // clusters of 4: {0-3} {4-7}. Target 6 (this == prev == 6, busy); idle: 2 and 5. A plain
    // scan from 7 would wrap to 2 before 5; the cluster-first scan finds 5.
    let mut b = Bench::new("clusters=2,cores=4");
    assert!(b.topo.has_cluster());
    for cpu in [0, 1, 3, 4, 6, 7] {
        b.running(cpu);
    }
    let p = b.sleeper(6, None, 100, 100);
    assert_eq!(ttwu(&mut b, p, 6, 6).cpu, CpuId(5));
}

// ---------------------------------------------------------------------------
// Asymmetric capacity
// ---------------------------------------------------------------------------

#[test]
fn a_big_task_wakes_on_a_big_cpu() {
    // hikey960: CPUs 0-3 capacity 462, 4-7 capacity 1024, one LLC per cluster.
    // Rule (select_idle_sibling, asym): target/prev/recent must pass asym_fits_cpu():
    // fits_capacity(task_util_est, capacity_of) = util * 1280 < capacity * 1024. A task of
    // util 600 fits a big CPU (768000 < 1048576) but not a little one (768000 >= 473088), so
    // the idle little prev is passed over and select_idle_capacity() over
    // sd_asym_cpucapacity takes the first idle CPU that fits, from target round.
    let mut b = Bench::new("hikey960");
    assert!(b.topo.has_asym_cpucapacity());
    b.running(0);
    b.running(4);
    let p = b.sleeper(1, None, 600, 600);
    let pl = ttwu(&mut b, p, 1, 0);
    assert_eq!(pl.cpu, CpuId(5));

    // A small task (util 100) stays on the idle little prev.
    let q = b.sleeper(1, None, 100, 100);
    assert_eq!(ttwu(&mut b, q, 1, 0).cpu, CpuId(1));

    // No big CPU idle: the idle CPU of largest capacity (the first of equals) is taken.
    for cpu in 5..8 {
        b.running(cpu);
    }
    let r = b.sleeper(1, None, 600, 600);
    assert_eq!(ttwu(&mut b, r, 1, 0).cpu, CpuId(1));
}

// ---------------------------------------------------------------------------
// IDLE_RESERVE
// ---------------------------------------------------------------------------

fn reserve_bench(on: bool) -> (Bench, TaskId, TaskId) {
    let mut b = Bench::with_features("4", default_features().with(LbFeat::IdleReserve, on));
    for cpu in 0..3 {
        b.running(cpu);
        b.set_avg(cpu, 1024, 500);
    }
    let p = b.sleeper(1, None, 512, 400);
    let q = b.sleeper(2, None, 512, 400);
    (b, p, q)
}

#[test]
fn idle_reserve_keeps_concurrent_wakeups_off_the_same_idle_cpu() {
    // EXPERIMENTS.md (IDLE_RESERVE, reconstructed): an idle CPU chosen for one wake-up is
    // reserved until that task runs. Two wake-ups from CPU 0 on a machine whose only idle
    // CPU is 3, before either wakee is enqueued:
    let (mut b, p, q) = reserve_bench(false);
    assert_eq!(ttwu(&mut b, p, 1, 0).cpu, CpuId(3));
    assert_eq!(
        ttwu(&mut b, q, 2, 0).cpu,
        CpuId(3),
        "off: both stack on CPU 3"
    );

    let (mut b, p, q) = reserve_bench(true);
    assert_eq!(ttwu(&mut b, p, 1, 0).cpu, CpuId(3));
    let second = ttwu(&mut b, q, 2, 0).cpu;
    assert_ne!(
        second,
        CpuId(3),
        "on: CPU 3 is reserved for the first wakee"
    );
    assert_eq!(b.wake.reservation(CpuId(3)).map(|r| r.task), Some(p));

    // The mark ends when its task runs there.
    idle_reserve_task_running(&mut b.wake, p, CpuId(3));
    assert_eq!(b.wake.reservation(CpuId(3)), None);
    assert_eq!(ttwu(&mut b, q, 2, 0).cpu, CpuId(3));
}

#[test]
fn idle_reserve_lapses_when_its_task_is_moved_or_has_run() {
    let (mut b, p, q) = reserve_bench(true);
    assert_eq!(ttwu(&mut b, p, 1, 0).cpu, CpuId(3));
    // p is queued on CPU 2 instead (a balancer moved it before it ran on 3).
    b.tasks[p].cpu = CpuId(2);
    b.rqs[2].activate_task(&mut b.tasks, p, lbsim_rq::EnqueueFlags::NOCLOCK);
    b.tasks[p].state = lbsim_rq::TaskState::Queued;
    assert_eq!(
        ttwu(&mut b, q, 2, 0).cpu,
        CpuId(3),
        "a moved task's mark does not stand"
    );

    let (mut b, p, q) = reserve_bench(true);
    assert_eq!(ttwu(&mut b, p, 1, 0).cpu, CpuId(3));
    idle_reserve_task_moved(&mut b.wake, p, CpuId(3));
    assert_eq!(ttwu(&mut b, q, 2, 0).cpu, CpuId(3));

    let (mut b, p, q) = reserve_bench(true);
    assert_eq!(ttwu(&mut b, p, 1, 0).cpu, CpuId(3));
    b.tasks[p].nvcsw += 1; // it ran and slept again without the hook being called
    assert_eq!(ttwu(&mut b, q, 2, 0).cpu, CpuId(3));
}

// ---------------------------------------------------------------------------
// core.c wrapper and schedstat
// ---------------------------------------------------------------------------

#[test]
fn pinned_tasks_skip_the_fair_class_and_bad_choices_fall_back() {
    // Rule (core.c select_task_rq): nr_cpus_allowed == 1 goes to that CPU, no record_wakee.
    let mut b = Bench::new("4");
    b.running(0);
    let waker = b.rqs[0].curr.unwrap();
    let p = b.sleeper(1, Some(&[2]), 100, 100);
    assert_eq!(ttwu(&mut b, p, 1, 0).cpu, CpuId(2));
    assert_eq!(b.tasks[waker].wakee_flips, 0);

    // Rule: select_idle_sibling() may return an idle prev that is no longer allowed;
    // is_cpu_allowed() fails and select_fallback_rq() takes the first allowed CPU of prev's
    // node.
    let q = b.sleeper(1, Some(&[2, 3]), 100, 100);
    assert_eq!(ttwu(&mut b, q, 1, 0).cpu, CpuId(2));
}

#[test]
fn ttwu_stat_counts_remote_wakeups_on_the_lowest_spanning_domain() {
    // Rule (ttwu_stat): a wake-up onto another CPU counts ttwu_wake_remote on the first
    // domain of the waking CPU that spans it.
    let mut b = Bench::new("hikey");
    b.running(0);
    let p = b.sleeper(5, None, 100, 100);
    let pl = ttwu(&mut b, p, 5, 0);
    assert_eq!(pl.cpu, CpuId(5), "idle prev");
    let pkg = b.topo.domains(CpuId(0)).len() - 1;
    assert_eq!(b.st.schedstat.sd(CpuId(0), pkg).ttwu_wake_remote, 1);
    assert_eq!(b.st.schedstat.sd(CpuId(0), 0).ttwu_wake_remote, 0);
    assert_eq!(b.st.schedstat.total(|d| u64::from(d.ttwu_move_balance)), 0);
}

// ---------------------------------------------------------------------------
// for_each_cpu_wrap over a changing mask
// ---------------------------------------------------------------------------

#[test]
fn wrap_walk_follows_the_kernel_order_and_sees_removals() {
    let n = 8;
    let mask = Cpumask::from_cpus(n, [1, 2, 5, 7].map(CpuId));
    let mut walk = WrapWalk::new(n, 6);
    let mut seen = Vec::new();
    while let Some(c) = walk.next(&mask) {
        seen.push(c.0);
    }
    assert_eq!(seen, [7, 1, 2, 5]);
    // start == size (target + 1 past the last CPU) covers the whole mask once.
    let mut walk = WrapWalk::new(n, 8);
    let mut seen = Vec::new();
    while let Some(c) = walk.next(&mask) {
        seen.push(c.0);
    }
    assert_eq!(seen, [1, 2, 5, 7]);
    // A CPU removed during the walk is skipped.
    let mut mask = mask;
    let mut walk = WrapWalk::new(n, 2);
    let first = walk.next(&mask).unwrap();
    assert_eq!(first, CpuId(2));
    mask.clear(CpuId(5));
    assert_eq!(walk.next(&mask), Some(CpuId(7)));
    assert_eq!(walk.next(&mask), Some(CpuId(1)));
    assert_eq!(walk.next(&mask), None);
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

const SPECS: [&str; 6] = [
    "4",
    "hikey",
    "cores=4,threads=2",
    "hikey960",
    "clusters=2,cores=4",
    "nodes=2,cores=2,threads=2",
];

/// A random placement problem: the machine, which CPUs run a task (with random loads), the
/// task's affinity, prev, the waking CPU, the wake flags, features and the LLC hints.
#[derive(Clone, Debug)]
struct Case {
    spec: usize,
    busy: u32,
    loads: Vec<(u64, u64)>,
    affinity: u32,
    prev: u32,
    this_cpu: u32,
    kind: u8,
    sync: bool,
    task_avg: (u64, u64),
    flips: (u32, u32),
    features: u8,
    nr_idle_scan: u32,
    has_idle_cores: bool,
    stamps: Vec<u64>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            0..SPECS.len(),
            any::<u32>(),
            prop::collection::vec((0u64..4096, 0u64..1025), 8),
            1u32..=0xff,
        ),
        (0u32..8, 0u32..8, 0u8..3, any::<bool>()),
        ((0u64..2048, 0u64..1025), (0u32..40, 0u32..40), any::<u8>()),
        (
            0u32..10,
            any::<bool>(),
            prop::collection::vec(0u64..1000, 8),
        ),
    )
        .prop_map(
            |(
                (spec, busy, loads, affinity),
                (prev, this_cpu, kind, sync),
                (task_avg, flips, features),
                (nr, hic, stamps),
            )| Case {
                spec,
                busy,
                loads,
                affinity,
                prev,
                this_cpu,
                kind,
                sync,
                task_avg,
                flips,
                features,
                nr_idle_scan: nr,
                has_idle_cores: hic,
                stamps,
            },
        )
}

/// Builds the case's machine and asks for a placement; returns it with the bench.
fn run_case(c: &Case) -> (Placement, Bench, TaskId) {
    let f = default_features()
        .with(LbFeat::IdleReserve, c.features & 1 != 0)
        .with(LbFeat::WaIdle, c.features & 2 == 0)
        .with(LbFeat::WaWeight, c.features & 4 == 0)
        .with(LbFeat::WaBias, c.features & 8 == 0)
        .with(LbFeat::SisUtil, c.features & 16 == 0)
        .with(LbFeat::LbTipAvgHigh, c.features & 32 != 0);
    let mut b = Bench::with_features(SPECS[c.spec], f);
    let n = b.nr_cpus() as u32;
    let (prev, this_cpu) = (c.prev % n, c.this_cpu % n);
    let exec = c.kind == 2;
    for cpu in 0..n {
        // The exec'ing task runs on this CPU; it is the placed task itself.
        if c.busy & (1 << cpu) != 0 && !(exec && cpu == this_cpu) {
            b.running(cpu);
        }
        b.set_avg(cpu, c.loads[cpu as usize].0, c.loads[cpu as usize].1);
        if c.stamps[cpu as usize] != 0 {
            b.idle_since(cpu, c.stamps[cpu as usize]);
        }
    }
    let mut allowed: Vec<u32> = (0..n).filter(|cpu| c.affinity & (1 << cpu) != 0).collect();
    if allowed.is_empty() {
        allowed.push(c.affinity % n);
    }
    for cpu in 0..n {
        if b.topo.sd_llc(CpuId(cpu)).is_some() {
            b.set_nr_idle_scan(cpu, c.nr_idle_scan);
            b.set_has_idle_cores(cpu, c.has_idle_cores);
        }
    }
    let (p, prev, flags) = match c.kind {
        0 => {
            let p = b.sleeper(prev, Some(&allowed), c.task_avg.0, c.task_avg.1);
            let f = if c.sync {
                WakeFlags::TTWU | WakeFlags::SYNC
            } else {
                WakeFlags::TTWU
            };
            (p, prev, f)
        }
        1 => (
            b.newborn(this_cpu, Some(&allowed)),
            this_cpu,
            WakeFlags::FORK,
        ),
        _ => {
            let p = b.newborn(this_cpu, Some(&allowed));
            let now = b.now_ns;
            let rq = &mut b.rqs[this_cpu as usize];
            if rq.curr.is_none() {
                rq.wake_up_new_task(&mut b.tasks, p, now);
                rq.schedule(&mut b.tasks, lbsim_rq::PrevAction::Preempt, now);
            }
            b.tasks[p].se.avg.last_update_time = LUT;
            (p, this_cpu, WakeFlags::EXEC)
        }
    };
    if let Some(w) = b.rqs[this_cpu as usize].curr {
        b.tasks[w].wakee_flips = c.flips.0;
    }
    b.tasks[p].wakee_flips = c.flips.1;
    let pl = wake_up(&mut b, p, prev, this_cpu, flags);
    (pl, b, p)
}

proptest! {
    /// Invariant "allowed and online": whatever the machine, loads, hints and features, the
    /// chosen CPU is one the task may run on, and exists (every lbsim CPU is online).
    #[test]
    fn chosen_cpu_is_allowed_and_online(c in case()) {
        let (pl, b, p) = run_case(&c);
        prop_assert!(pl.cpu.index() < b.nr_cpus());
        prop_assert!(b.tasks[p].cpus_mask.test(pl.cpu), "cpu {} outside {}", pl.cpu, b.tasks[p].cpus_mask.to_cpulist());
    }

    /// Invariant "deterministic": identical inputs give the identical placement, work and
    /// state changes.
    #[test]
    fn placement_is_deterministic(c in case()) {
        let (a, ba, pa) = run_case(&c);
        let (b2, bb, pb) = run_case(&c);
        prop_assert_eq!(a, b2);
        prop_assert_eq!(&ba.st.schedstat, &bb.st.schedstat);
        prop_assert_eq!(&ba.wake.reserved_by.iter().map(|r| r.is_some()).collect::<Vec<_>>(),
                        &bb.wake.reserved_by.iter().map(|r| r.is_some()).collect::<Vec<_>>());
        prop_assert_eq!(ba.tasks[pa].recent_used_cpu, bb.tasks[pb].recent_used_cpu);
        prop_assert_eq!(ba.tasks[pa].se.avg, bb.tasks[pb].se.avg);
    }
}

#[test]
fn the_property_cases_reach_every_path() {
    // "Sometimes" companion of the properties above: over a fixed sample of cases, the slow
    // path, an affine pull to the waking CPU, a move to a CPU that is neither prev nor the
    // waking CPU, and a restricted affinity that excludes the waking CPU all occur.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut slow, mut affine, mut elsewhere, mut excluded) = (0, 0, 0, 0);
    for _ in 0..300 {
        let c = case().new_tree(&mut runner).unwrap().current();
        let (pl, b, p) = run_case(&c);
        let n = b.nr_cpus() as u32;
        let (prev, this_cpu) = (CpuId(c.prev % n), CpuId(c.this_cpu % n));
        if c.kind != 0 && pl.work.domains > 0 {
            slow += 1;
        }
        if c.kind == 0 && pl.cpu == this_cpu && prev != this_cpu {
            affine += 1;
        }
        if pl.cpu != prev && pl.cpu != this_cpu {
            elsewhere += 1;
        }
        if !b.tasks[p].cpus_mask.test(this_cpu) {
            excluded += 1;
        }
    }
    assert!(
        slow > 0 && affine > 0 && elsewhere > 0 && excluded > 0,
        "{slow} {affine} {elsewhere} {excluded}"
    );
}
