use super::*;

const F: u32 = UTIL_AVG_UNCHANGED;

/// util_est_update() on a task with the given estimate, util_avg and
/// runnable_avg, on a CPU of capacity 1024, as a sleep; returns the new field.
fn check(util_est: u32, util_avg: u64, runnable_avg: u64) -> u32 {
    let mut se = SchedAvg {
        util_est,
        util_avg,
        runnable_avg,
        ..SchedAvg::default()
    };
    util_est_update(&mut se, true, 1024, true);
    se.util_est
}

#[test]
fn increases_are_taken_at_once() {
    assert_eq!(check(100, 300, 300), 300 | F);
    assert_eq!(check(0, 512, 512), 512 | F);
    assert_eq!(check(300, 300, 300), 300 | F, "ewma <= dequeued");
}

#[test]
fn small_decreases_keep_the_estimate() {
    assert_eq!(check(300, 291, 291), 300 | F, "diff 9 < UTIL_EST_MARGIN");
    assert_eq!(
        check(300, 290, 290),
        (300 * 4 - 10) >> 2 | F,
        "diff 10 is not within the margin"
    );
}

#[test]
fn decreases_move_a_quarter_of_the_way() {
    // (400 << 2) - 200 = 1400, >> 2 = 350.
    assert_eq!(check(400, 200, 200), 350 | F);
    // (401 << 2) - 201 = 1403, >> 2 = 350 (truncated).
    assert_eq!(check(401, 200, 200), 350 | F);
}

#[test]
fn starved_tasks_keep_the_estimate() {
    // util 200 + margin 10 < runnable 211: the task waited, keep 400.
    assert_eq!(check(400, 200, 211), 400 | F);
    assert_eq!(check(400, 200, 210), 350 | F, "210 is not above 200 + 10");
}

#[test]
fn util_above_capacity_leaves_it_untouched() {
    let mut se = SchedAvg {
        util_est: 600,
        util_avg: 550,
        runnable_avg: 550,
        ..SchedAvg::default()
    };
    util_est_update(&mut se, true, 512, true);
    assert_eq!(se.util_est, 600, "no update and no flag");
    util_est_update(&mut se, true, 1024, true);
    assert_eq!(
        se.util_est,
        (2400 - 50) >> 2 | F,
        "on a big CPU: ewma 600, util 550 gives 587"
    );
}

#[test]
fn skipped_without_sleep_flag_or_feature() {
    let base = SchedAvg {
        util_est: 400,
        util_avg: 200,
        runnable_avg: 200,
        ..SchedAvg::default()
    };
    let mut se = base;
    util_est_update(&mut se, false, 1024, true);
    assert_eq!(se, base, "not a sleep (e.g. a migration)");
    util_est_update(&mut se, true, 1024, false);
    assert_eq!(se, base, "UTIL_EST off");
    let mut flagged = SchedAvg {
        util_est: 400 | F,
        ..base
    };
    util_est_update(&mut flagged, true, 1024, true);
    assert_eq!(
        flagged.util_est,
        400 | F,
        "util_avg unchanged since the last estimate"
    );
}

#[test]
fn enqueue_and_dequeue_sum_the_masked_estimates() {
    let mut cfs = CfsRqAvg::default();
    let a = SchedAvg {
        util_est: 300 | F,
        ..SchedAvg::default()
    };
    let b = SchedAvg {
        util_est: 200,
        ..SchedAvg::default()
    };
    util_est_enqueue(&mut cfs, &a, true);
    util_est_enqueue(&mut cfs, &b, true);
    assert_eq!(cfs.avg.util_est, 500);
    util_est_dequeue(&mut cfs, &a, true);
    assert_eq!(cfs.avg.util_est, 200);
    let big = SchedAvg {
        util_est: 900,
        ..SchedAvg::default()
    };
    util_est_dequeue(&mut cfs, &big, true);
    assert_eq!(cfs.avg.util_est, 0, "clamped at 0");
    util_est_enqueue(&mut cfs, &big, false);
    assert_eq!(cfs.avg.util_est, 0, "UTIL_EST off");
}

#[test]
fn task_util_est_is_the_max() {
    let se = SchedAvg {
        util_est: 300 | F,
        util_avg: 250,
        ..SchedAvg::default()
    };
    assert_eq!(task_util_est(&se), 300);
    let se = SchedAvg {
        util_est: 300,
        util_avg: 350,
        ..SchedAvg::default()
    };
    assert_eq!(task_util_est(&se), 350);
}
