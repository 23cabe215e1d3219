use super::*;

#[test]
fn cap_scale_values() {
    assert_eq!(cap_scale(1000, 1024), 1000);
    assert_eq!(cap_scale(1000, 512), 500);
    assert_eq!(cap_scale(1001, 512), 500, "truncated");
    assert_eq!(cap_scale(1000, 0), 0);
}

#[test]
fn busy_clock_scales_by_capacity_then_frequency() {
    let mut c = RqClockPelt::default();
    c.update_rq_clock(1_000_000, 0, false, 512, 1024);
    assert_eq!(
        (c.clock, c.clock_task, c.clock_pelt),
        (1_000_000, 1_000_000, 500_000)
    );
    c.update_rq_clock(2_000_000, 0, false, 512, 512);
    assert_eq!(
        c.clock_pelt, 750_000,
        "half capacity at half frequency: a quarter"
    );
    c.update_rq_clock(2_000_999, 0, false, 1024, 1024);
    assert_eq!(c.clock_pelt, 750_999);
    assert_eq!(c.rq_clock_pelt(), 750_999);
}

#[test]
fn idle_clock_syncs_to_clock_task() {
    let mut c = RqClockPelt::default();
    c.update_rq_clock(4_000_000, 0, false, 256, 1024);
    assert_eq!(c.clock_pelt, 1_000_000);
    c.update_rq_clock(5_000_000, 0, true, 256, 1024);
    assert_eq!(
        c.clock_pelt, 5_000_000,
        "the stolen idle time appears at once"
    );
    assert_eq!((c.clock_idle, c.clock_pelt_idle), (5_000_000, 5_000_000));
}

#[test]
fn irq_time_is_not_task_time() {
    let mut c = RqClockPelt::default();
    assert_eq!(
        c.update_rq_clock(1_000_000, 300_000, false, 1024, 1024),
        300_000
    );
    assert_eq!(
        (c.clock, c.clock_task, c.clock_pelt),
        (1_000_000, 700_000, 700_000)
    );
    assert_eq!(
        c.update_rq_clock(1_100_000, 500_000, false, 1024, 1024),
        100_000,
        "clamped to the elapsed time"
    );
    assert_eq!(c.clock_task, 700_000);
}

#[test]
fn time_going_backwards_changes_nothing() {
    let mut c = RqClockPelt::default();
    c.update_rq_clock(1_000_000, 0, false, 1024, 1024);
    let before = c;
    assert_eq!(c.update_rq_clock(999_999, 0, false, 1024, 1024), 0);
    assert_eq!(c, before);
}

#[test]
fn going_idle_unsaturated_keeps_the_stolen_idle_time() {
    let mut c = RqClockPelt::default();
    c.update_rq_clock(10_000_000, 0, false, 512, 1024);
    c.update_idle_rq_clock_pelt(LOST_IDLE_UTIL_SUM_THRESHOLD - 1, 0, 0);
    assert_eq!(c.lost_idle_time, 0);
    assert_eq!(c.clock_pelt, 10_000_000);
    assert_eq!(
        c.rq_clock_pelt(),
        10_000_000,
        "PELT time jumps by the 5 ms not computed"
    );
}

#[test]
fn going_idle_saturated_loses_the_idle_time() {
    let mut c = RqClockPelt::default();
    c.update_rq_clock(10_000_000, 0, false, 512, 1024);
    assert_eq!(c.rq_clock_pelt(), 5_000_000);
    // The threshold counts the cfs, rt and dl util_sums together.
    c.update_idle_rq_clock_pelt(LOST_IDLE_UTIL_SUM_THRESHOLD - 10, 4, 6);
    assert_eq!(c.lost_idle_time, 5_000_000);
    assert_eq!(c.clock_pelt, 10_000_000);
    assert_eq!(
        c.rq_clock_pelt(),
        5_000_000,
        "no jump: the idle time is lost"
    );
    assert_eq!(c.clock_pelt_idle, 5_000_000);
    // Later idle time counts normally.
    c.update_rq_clock(12_000_000, 0, true, 512, 1024);
    assert_eq!(c.rq_clock_pelt(), 7_000_000);
}

#[test]
fn lost_idle_threshold_value() {
    assert_eq!(LOST_IDLE_UTIL_SUM_THRESHOLD, 46718 * 1024 - 47742);
}
