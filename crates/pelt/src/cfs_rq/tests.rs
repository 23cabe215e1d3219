use super::*;
use crate::consts::{PELT_MIN_DIVIDER, UTIL_AVG_UNCHANGED};

const PERIOD_NS: u64 = 1024 * 1024;

/// A cfs_rq whose signal sits at `period_contrib` with the given avgs and
/// consistent sums (sum = avg * divider).
fn cfs_at(period_contrib: u32, util_avg: u64, runnable_avg: u64, load_avg: u64) -> CfsRqAvg {
    let div = u64::from(crate::pelt_divider(period_contrib));
    CfsRqAvg {
        avg: SchedAvg {
            last_update_time: 40 * PERIOD_NS + u64::from(period_contrib) * 1024,
            period_contrib,
            util_avg,
            runnable_avg,
            load_avg,
            util_sum: (util_avg * div) as u32,
            runnable_sum: runnable_avg * div,
            load_sum: load_avg * div,
            util_est: 0,
        },
        removed: Removed::default(),
        truncated: SumsTruncated::default(),
        runnable_load: RunnableLoad::default(),
    }
}

/// A cfs_rq with one attached, running nice-0 task, updated every period from
/// period 1 (time 0 would be the "not attached" marker) to `periods`.
fn running_history(periods: u64) -> (CfsRqAvg, SchedAvg) {
    let mut cfs = CfsRqAvg::default();
    cfs.avg.last_update_time = PERIOD_NS;
    let mut se = SchedAvg {
        last_update_time: PERIOD_NS,
        ..SchedAvg::default()
    };
    let running = SeLoad::task(1024, true, true);
    let cfs_running = CfsRqLoad {
        load_weight: 1024,
        h_nr_running: 1,
        curr: true,
    };
    for p in 2..=periods {
        cfs.update_load_avg(
            &mut se,
            p * PERIOD_NS,
            &running,
            &cfs_running,
            UpdateFlags::UPDATE_TG,
            true,
        );
    }
    (cfs, se)
}

#[test]
fn scale_load_down_values() {
    assert_eq!(scale_load_down(0), 0);
    assert_eq!(scale_load_down(1024 << 10), 1024);
    assert_eq!(scale_load_down(15 << 10), 15);
    assert_eq!(scale_load_down(1), 2, "a non-zero weight stays at least 2");
    assert_eq!(scale_load_down(3 << 10), 3);
}

#[test]
fn attach_aligns_window_and_rebuilds_sums_from_avgs() {
    let mut cfs = cfs_at(300, 200, 250, 900);
    let before = cfs;
    let mut se = SchedAvg {
        util_avg: 100,
        runnable_avg: 150,
        load_avg: 512,
        ..SchedAvg::default()
    };
    cfs.attach_entity_load_avg(&mut se, 1024);

    // divider = 46718 + 300 = 47018
    assert_eq!(se.last_update_time, before.avg.last_update_time);
    assert_eq!(se.period_contrib, 300);
    assert_eq!(se.util_sum, 100 * 47018);
    assert_eq!(se.runnable_sum, 150 * 47018);
    assert_eq!(
        se.load_sum,
        512 * 47018 / 1024,
        "load_avg * divider / weight"
    );

    assert_eq!(cfs.avg.util_avg, 300);
    assert_eq!(cfs.avg.runnable_avg, 400);
    assert_eq!(cfs.avg.load_avg, 1412);
    assert_eq!(cfs.avg.util_sum, before.avg.util_sum + 100 * 47018);
    assert_eq!(cfs.avg.runnable_sum, before.avg.runnable_sum + 150 * 47018);
    assert_eq!(
        cfs.avg.load_sum,
        before.avg.load_sum + 1024 * (512 * 47018 / 1024)
    );
}

#[test]
fn attach_of_a_zero_load_entity_gets_load_sum_one() {
    // load_avg * divider <= weight: the kernel sets load_sum = 1, not 0.
    let mut cfs = cfs_at(0, 0, 0, 0);
    let mut se = SchedAvg::default();
    cfs.attach_entity_load_avg(&mut se, 1024);
    assert_eq!(se.load_sum, 1);
    assert_eq!(cfs.avg.load_sum, 1024, "weight * 1");
    assert_eq!(cfs.avg.load_avg, 0);
}

#[test]
fn detach_subtracts_and_clamps() {
    let mut cfs = cfs_at(100, 300, 300, 1000);
    let se = SchedAvg {
        util_avg: 120,
        util_sum: 120 * 46818,
        runnable_avg: 120,
        runnable_sum: 120 * 46818,
        load_avg: 400,
        load_sum: 400 * 46818 / 1024,
        ..SchedAvg::default()
    };
    let before = cfs;
    cfs.detach_entity_load_avg(&se, 1024);
    assert_eq!(cfs.avg.util_avg, 180);
    assert_eq!(cfs.avg.util_sum, before.avg.util_sum - se.util_sum);
    assert_eq!(cfs.avg.load_avg, 600);
    assert_eq!(cfs.avg.load_sum, before.avg.load_sum - 1024 * se.load_sum);

    // Detaching more than there is clamps at 0, then the sum is raised to
    // avg * PELT_MIN_DIVIDER (0 here).
    let mut small = cfs_at(0, 10, 10, 10);
    small.detach_entity_load_avg(&se, 1024);
    assert_eq!((small.avg.util_avg, small.avg.util_sum), (0, 0));
    assert_eq!((small.avg.load_avg, small.avg.load_sum), (0, 0));
    assert_eq!((small.avg.runnable_avg, small.avg.runnable_sum), (0, 0));
}

#[test]
fn detach_keeps_sum_at_least_avg_times_min_divider() {
    // The entity's sum is larger than its avg share (rounding): the cfs_rq's sum
    // would drop below util_avg * PELT_MIN_DIVIDER, and is raised back to it.
    let mut cfs = cfs_at(0, 300, 0, 0);
    let se = SchedAvg {
        util_avg: 100,
        util_sum: 110 * 46718,
        ..SchedAvg::default()
    };
    cfs.detach_entity_load_avg(&se, 1024);
    assert_eq!(cfs.avg.util_avg, 200);
    assert_eq!(u64::from(cfs.avg.util_sum), 200 * PELT_MIN_DIVIDER);
}

#[test]
fn dequeue_load_avg_truncates_load_sum_to_32_bits() {
    // fair.c uses max_t(u32, load_sum, load_avg * PELT_MIN_DIVIDER): with a
    // cfs_rq load_sum above 2^32 (about 90 nice-0 tasks' worth) the result is
    // the low 32 bits, or the floor if larger.
    let mut cfs = CfsRqAvg::default();
    cfs.avg.load_sum = (1 << 32) + 1_000_000;
    cfs.avg.load_avg = 10;
    let se = SchedAvg {
        load_avg: 0,
        load_sum: 100,
        ..SchedAvg::default()
    };
    cfs.dequeue_load_avg(&se, 1024);
    // (2^32 + 1_000_000 - 102_400) as u32 = 897_600 > 10 * 46718
    assert_eq!(cfs.avg.load_sum, 897_600);
    // The record: 2^32 cut, once.
    assert_eq!(
        cfs.truncated,
        SumsTruncated {
            load_sum: 1 << 32,
            runnable_sum: 0,
            nr: 1,
            load_raised: 0,
            runnable_raised: 0,
            util_raised: 0,
        }
    );
    cfs.avg.load_sum = (1 << 32) + 1_000;
    cfs.dequeue_load_avg(&SchedAvg::default(), 1024);
    assert_eq!(
        cfs.avg.load_sum,
        10 * PELT_MIN_DIVIDER,
        "low bits 1000 < 467180"
    );
    // 64-bit, the result would have been 2^32 + 1000; the floor 467_180 replaced it.
    assert_eq!(
        cfs.truncated.load_sum,
        (1 << 32) + (1 << 32) + 1_000 - 467_180
    );
    assert_eq!(cfs.truncated.nr, 2);
    // Under 2^32 nothing is cut, whatever the floor does.
    // The cuts raised nothing over the signed result (both kept less than it).
    assert_eq!(cfs.truncated.load_raised, 0);
    cfs.avg.load_sum = 1_000;
    cfs.dequeue_load_avg(&SchedAvg::default(), 1024);
    assert_eq!(cfs.avg.load_sum, 10 * PELT_MIN_DIVIDER);
    assert_eq!(cfs.truncated.nr, 2);
    // The floor raised 1000 to 467_180: recorded, not as a cut.
    assert_eq!(cfs.truncated.load_raised, 467_180 - 1_000);
    // Subtracting more than the sum: sub_positive() clamps at 0 and the floor raises to
    // 467_180; the raise counts from the signed result, 467_180 - 1_000_000.
    cfs.avg.load_sum = 467_180;
    let se = SchedAvg {
        load_sum: 1_467_180,
        ..SchedAvg::default()
    };
    cfs.dequeue_load_avg(&se, 1);
    assert_eq!(cfs.avg.load_sum, 467_180);
    assert_eq!(cfs.truncated.load_raised, 467_180 - 1_000 + 1_467_180);
}

#[test]
fn removal_is_applied_at_the_next_update() {
    let mut cfs = cfs_at(512, 500, 600, 2000);
    let now = cfs.avg.last_update_time;
    // A task blocked since the cfs_rq's last update, with its own signal.
    let mut se = SchedAvg {
        last_update_time: now,
        period_contrib: 512,
        util_avg: 150,
        runnable_avg: 160,
        load_avg: 700,
        util_sum: 150 * 47230,
        runnable_sum: 160 * 47230,
        load_sum: 700 * 47230 / 1024,
        util_est: 0,
    };
    let se_before = se;
    cfs.remove_entity_load_avg(&mut se, 1024);
    assert_eq!(
        se, se_before,
        "already in sync with the cfs_rq: the sync changes nothing"
    );
    assert_eq!(
        cfs.removed,
        Removed {
            nr: 1,
            load_avg: 700,
            util_avg: 150,
            runnable_avg: 160
        }
    );
    let before = cfs;
    // Nothing is subtracted until the cfs_rq's own update...
    assert_eq!(cfs.avg, before.avg);
    // ...which reports "decayed" even without elapsed time.
    let load = CfsRqLoad::default();
    assert!(cfs.update_cfs_rq_load_avg(now, &load));
    assert_eq!(cfs.removed, Removed::default());
    let div = 47230u64;
    assert_eq!(cfs.avg.util_avg, 350);
    assert_eq!(u64::from(cfs.avg.util_sum), 500 * div - 150 * div);
    assert_eq!(cfs.avg.runnable_avg, 440);
    assert_eq!(cfs.avg.runnable_sum, 600 * div - 160 * div);
    assert_eq!(cfs.avg.load_avg, 1300);
    assert_eq!(cfs.avg.load_sum, 2000 * div - 700 * div);
}

#[test]
fn remove_syncs_a_stale_entity_first() {
    let mut cfs = cfs_at(0, 500, 500, 500);
    let mut se = SchedAvg::default();
    se.update_load_sum(10 * PERIOD_NS, 1, 1, true);
    se.update_load_avg(1024);
    let at_10 = se;
    cfs.remove_entity_load_avg(&mut se, 1024);
    // Synced from 10 to 40 periods: 30 periods of decay.
    assert_eq!(se.last_update_time, 40 * PERIOD_NS);
    assert_eq!(se.load_sum, crate::decay_load(at_10.load_sum, 30));
    assert_eq!(cfs.removed.util_avg, se.util_avg);
    assert!(se.util_avg < at_10.util_avg);
}

#[test]
fn an_entity_with_last_update_time_zero_is_not_aged() {
    // The kernel's "not attached" marker: update_load_avg() skips the entity.
    let mut cfs = CfsRqAvg::default();
    let mut se = SchedAvg::default();
    let running = SeLoad::task(1024, true, true);
    let cfs_running = CfsRqLoad {
        load_weight: 1024,
        h_nr_running: 1,
        curr: true,
    };
    cfs.update_load_avg(
        &mut se,
        5 * PERIOD_NS,
        &running,
        &cfs_running,
        UpdateFlags::UPDATE_TG,
        true,
    );
    assert_eq!(se, SchedAvg::default());
    assert!(cfs.avg.util_avg > 0);
}

#[test]
fn update_load_avg_attach_only_when_unattached() {
    let se_load = SeLoad::task(1024, false, false);
    let cfs_load = CfsRqLoad::default();
    let flags = UpdateFlags::UPDATE_TG | UpdateFlags::DO_ATTACH;

    let mut cfs = cfs_at(0, 0, 0, 0);
    let now = cfs.avg.last_update_time;
    let mut fresh = SchedAvg {
        util_avg: 512,
        runnable_avg: 512,
        load_avg: 1024,
        ..SchedAvg::default()
    };
    let out = cfs.update_load_avg(&mut fresh, now, &se_load, &cfs_load, flags, true);
    assert!(out.attached && out.update_tg_load_avg && out.cfs_rq_util_change && !out.detached);
    assert_eq!(cfs.avg.util_avg, 512);
    assert_eq!(fresh.last_update_time, now);

    // Attached already (last_update_time != 0): DO_ATTACH does nothing.
    let before = cfs;
    let out = cfs.update_load_avg(&mut fresh, now, &se_load, &cfs_load, flags, true);
    assert_eq!(out, LoadAvgUpdate::default());
    assert_eq!(cfs, before);
}

#[test]
fn update_load_avg_detach_and_skip_age() {
    let running = SeLoad::task(1024, true, true);
    let cfs_running = CfsRqLoad {
        load_weight: 1024,
        h_nr_running: 1,
        curr: true,
    };
    // Build some history: 40 periods of running, updated every period.
    let (mut cfs, mut se) = running_history(40);
    assert!(se.util_avg > 400);
    // The single entity and its cfs_rq agree exactly on util and runnable.
    assert_eq!(cfs.avg.util_sum, se.util_sum);
    assert_eq!(cfs.avg.util_avg, se.util_avg);
    assert_eq!(cfs.avg.runnable_sum, se.runnable_sum);

    // SKIP_AGE_LOAD: the entity is not aged, the cfs_rq is.
    let se_before = se;
    let now = 41 * PERIOD_NS;
    let out = cfs.update_load_avg(
        &mut se,
        now,
        &running,
        &cfs_running,
        UpdateFlags::SKIP_AGE_LOAD,
        true,
    );
    assert_eq!(se, se_before);
    assert!(
        out.decayed && out.cfs_rq_util_change && !out.update_tg_load_avg,
        "no UPDATE_TG"
    );
    assert_eq!(cfs.avg.last_update_time, now);

    // DO_DETACH: the entity ages, then leaves the cfs_rq entirely.
    let now = 42 * PERIOD_NS;
    let out = cfs.update_load_avg(
        &mut se,
        now,
        &running,
        &cfs_running,
        UpdateFlags::DO_DETACH,
        true,
    );
    assert!(out.detached && out.update_tg_load_avg);
    assert_eq!(se.last_update_time, now);
    // The cfs_rq aged in two steps (41, 42), the entity in one (40 to 42): the
    // truncations differ, and a residue of the skipped update stays. Its
    // load_avg rounding residue is 1 and load_sum is raised to 1 * PELT_MIN_DIVIDER.
    assert_eq!(cfs.avg.util_avg, 0);
    assert!(
        cfs.avg.util_sum > 0 && cfs.avg.util_sum < 2048,
        "residue {}",
        cfs.avg.util_sum
    );
    assert!(cfs.avg.load_avg <= 1);
    assert_eq!(cfs.avg.load_sum, cfs.avg.load_avg * PELT_MIN_DIVIDER);
}

#[test]
fn entity_update_clears_util_avg_unchanged_only_with_util_est() {
    let running = SeLoad::task(1024, true, true);
    let mut se = SchedAvg {
        util_est: 300 | UTIL_AVG_UNCHANGED,
        ..SchedAvg::default()
    };
    assert!(!update_load_avg_se(PERIOD_NS / 2, &mut se, &running, true));
    assert_eq!(
        se.util_est,
        300 | UTIL_AVG_UNCHANGED,
        "no period boundary: util_avg unchanged"
    );
    let mut off = se;
    assert!(update_load_avg_se(PERIOD_NS, &mut se, &running, true));
    assert_eq!(se.util_est, 300);
    assert!(update_load_avg_se(PERIOD_NS, &mut off, &running, false));
    assert_eq!(
        off.util_est,
        300 | UTIL_AVG_UNCHANGED,
        "UTIL_EST off: the flag stays"
    );
}

#[test]
fn blocked_update_ignores_state() {
    let mut a = SchedAvg::default();
    a.update_load_sum(5 * PERIOD_NS, 1, 1, true);
    let mut b = a;
    update_load_avg_blocked_se(9 * PERIOD_NS, &mut a, 1024);
    update_load_avg_se(
        9 * PERIOD_NS,
        &mut b,
        &SeLoad::task(1024, false, false),
        true,
    );
    assert_eq!(a, b);
    assert_eq!(
        a.load_sum,
        crate::decay_load(
            {
                let mut c = SchedAvg::default();
                c.update_load_sum(5 * PERIOD_NS, 1, 1, true);
                c.load_sum
            },
            4
        )
    );
}

#[test]
fn reweight_recomputes_load_avg_from_load_sum() {
    let (mut cfs, mut se) = running_history(20);
    let se_before = se;
    let cfs_before = cfs;
    cfs.reweight_entity_load_avg(&mut se, 1024, 335);
    let div = u64::from(se.get_pelt_divider());
    assert_eq!(se.load_avg, 335 * se.load_sum / div);
    assert_eq!(se.load_sum, se_before.load_sum);
    assert_eq!(
        cfs.avg.load_avg,
        cfs_before.avg.load_avg - se_before.load_avg + se.load_avg
    );
    assert_eq!(
        cfs.avg.load_sum,
        cfs_before.avg.load_sum - 1024 * se.load_sum + 335 * se.load_sum
    );
}

#[test]
fn migrate_se_pelt_lag_decays_over_the_estimated_idle_time() {
    let (cfs, se) = running_history(20);
    // The source rq went idle at clock 20 periods and has not updated since.
    let mut clock = crate::RqClockPelt::default();
    clock.update_rq_clock(20 * PERIOD_NS, 0, true, 1024, 1024);
    let sched_clock_now = 30 * PERIOD_NS;

    let mut busy = se;
    cfs.migrate_se_pelt_lag(&mut busy, 1024, &clock, false, sched_clock_now);
    assert_eq!(busy, se, "only when the source CPU is idle");

    let mut lagged = se;
    cfs.migrate_se_pelt_lag(&mut lagged, 1024, &clock, true, sched_clock_now);
    assert_eq!(lagged.last_update_time, 30 * PERIOD_NS);
    assert_eq!(lagged.load_sum, crate::decay_load(se.load_sum, 10));

    let mut decayed = SchedAvg::default();
    cfs.migrate_se_pelt_lag(&mut decayed, 1024, &clock, true, sched_clock_now);
    assert_eq!(
        decayed,
        SchedAvg::default(),
        "a fully decayed entity is left alone"
    );
}

#[test]
fn flags_compose() {
    let f = UpdateFlags::UPDATE_TG | UpdateFlags::DO_ATTACH;
    assert_eq!(f.bits(), 0x5);
    assert!(f.contains(UpdateFlags::DO_ATTACH) && !f.contains(UpdateFlags::DO_DETACH));
    assert!(f.contains(UpdateFlags::NONE));
}
