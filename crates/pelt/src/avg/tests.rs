use super::*;
use crate::consts::{LOAD_AVG_MAX, PELT_MIN_DIVIDER, RUNNABLE_AVG_YN_INV};

/// One 1024-ns unit in ns.
const UNIT: u64 = 1024;
/// One PELT period in ns.
const PERIOD_NS: u64 = 1024 * 1024;

#[test]
fn decay_load_hand_values() {
    // n = 0 multiplies by 0xffffffff / 2^32: x becomes x - 1 for 0 < x <= 2^32.
    assert_eq!(decay_load(1000, 0), 999);
    assert_eq!(decay_load(1, 0), 0);
    assert_eq!(decay_load(0, 5), 0);
    // 2^32 * table[n] >> 32 is table[n] itself.
    assert_eq!(decay_load(1 << 32, 16), 0xb504f333);
    assert_eq!(decay_load(1 << 32, 31), 0x82cd8698);
    // One period of LOAD_AVG_MAX: 47742 * 0xfa83b2da >> 32 = 46718.
    assert_eq!(decay_load(LOAD_AVG_MAX, 1), 46718);
    // 1024 * 0xfa83b2da >> 32 = 1002.06...
    assert_eq!(decay_load(1024, 1), 1002);
    // n = 32: one halving, then table[0]: (512 * (2^32 - 1)) >> 32 = 511.
    assert_eq!(decay_load(1024, 32), 511);
    // n = 33: 512 * 0xfa83b2da >> 32 = 501.03...
    assert_eq!(decay_load(1024, 33), 501);
    // n = 64 + 16: two halvings of 2^34 then table[16].
    assert_eq!(decay_load(1 << 34, 80), 0xb504f333);
    // The cut-off: n = 2016 still shifts by 63, n = 2017 is zero outright.
    assert_eq!(decay_load(u64::MAX, 2016), 0, "(1 * 0xffffffff) >> 32");
    assert_eq!(decay_load(u64::MAX, 1984), 2, "(3 * 0xffffffff) >> 32");
    assert_eq!(decay_load(u64::MAX, 2017), 0);
    assert_eq!(decay_load(u64::MAX, u64::MAX), 0);
}

#[test]
fn decay_load_full_width_product() {
    // u64::MAX * 0xfa83b2da needs the 96-bit product of mul_u64_u32_shr.
    let expected = ((u128::from(u64::MAX) * u128::from(RUNNABLE_AVG_YN_INV[1])) >> 32) as u64;
    assert_eq!(decay_load(u64::MAX, 1), expected);
    assert!(expected > u64::MAX / 2);
}

#[test]
fn accumulate_pelt_segments_hand_values() {
    // p = 1 from the start of a period: d1 = 1024 decays once, c2 = 0.
    assert_eq!(accumulate_pelt_segments(1, 1024, 0), 1002);
    // p = 1 with a d3 of 100 units: d3 is not decayed.
    assert_eq!(accumulate_pelt_segments(1, 1024, 100), 1102);
    // p = 2: c1 = 1024 * y^2, c2 = 47742 - decay(47742, 2) - 1024.
    let c1 = (1024 * u64::from(RUNNABLE_AVG_YN_INV[2])) >> 32;
    let c2 = LOAD_AVG_MAX - ((LOAD_AVG_MAX * u64::from(RUNNABLE_AVG_YN_INV[2])) >> 32) - 1024;
    assert_eq!(c1, 980, "1024 * 0.9576... = 980.6");
    assert_eq!(c2, 1001, "47742 - 45717 - 1024");
    assert_eq!(accumulate_pelt_segments(2, 1024, 0), 1981);
}

#[test]
fn one_full_period_of_running_from_zero() {
    let mut sa = SchedAvg::default();
    // 1024 units = one period exactly: the d1 segment decays once.
    assert!(sa.update_load_sum(PERIOD_NS, 1, 1, true));
    assert_eq!(sa.period_contrib, 0);
    assert_eq!(sa.load_sum, 1002);
    assert_eq!(sa.runnable_sum, 1002 << 10);
    assert_eq!(sa.util_sum, 1002 << 10);
    assert_eq!(sa.last_update_time, PERIOD_NS);
    sa.update_load_avg(1024);
    // divider 46718: 1026048 / 46718 = 21.96
    assert_eq!(sa.util_avg, 21);
    assert_eq!(sa.runnable_avg, 21);
    assert_eq!(sa.load_avg, 1024 * 1002 / 46718);
}

#[test]
fn within_one_period_no_average_update() {
    let mut sa = SchedAvg::default();
    // 500 units: no boundary crossed, contrib = delta.
    assert!(!sa.update_load_sum(500 * UNIT, 1, 1, true));
    assert_eq!(sa.period_contrib, 500);
    assert_eq!(sa.load_sum, 500);
    assert_eq!(sa.util_sum, 500 << 10);
    assert_eq!(
        sa.util_avg, 0,
        "averages are only recomputed on a period boundary"
    );
    // 600 more: crosses once; d1 = 524 decays, d3 = 76.
    assert!(sa.update_load_sum(1100 * UNIT, 1, 1, true));
    let decayed_old = (500 * u64::from(RUNNABLE_AVG_YN_INV[1])) >> 32;
    let d1 = (524 * u64::from(RUNNABLE_AVG_YN_INV[1])) >> 32;
    assert_eq!(sa.load_sum, decayed_old + d1 + 76);
    assert_eq!(sa.period_contrib, 76);
}

#[test]
fn sub_unit_remainders_are_kept_in_last_update_time() {
    let mut sa = SchedAvg::default();
    assert!(
        !sa.update_load_sum(1023, 1, 1, true),
        "less than one unit: nothing happens"
    );
    assert_eq!(sa, SchedAvg::default());
    assert!(!sa.update_load_sum(1500, 1, 1, true));
    assert_eq!(sa.last_update_time, 1024, "only whole units are consumed");
    assert_eq!(sa.load_sum, 1);
    assert!(!sa.update_load_sum(2048, 1, 1, true));
    assert_eq!(sa.last_update_time, 2048);
    assert_eq!(sa.load_sum, 2);
}

#[test]
fn zero_elapsed_time_changes_nothing() {
    let mut sa = SchedAvg::default();
    sa.update_load_sum(37 * PERIOD_NS + 12345, 1, 1, true);
    sa.update_load_avg(1024);
    let before = sa;
    assert!(!sa.update_load_sum(sa.last_update_time, 1, 1, true));
    assert_eq!(sa, before);
    assert!(!sa.update_load_sum(sa.last_update_time + 1023, 1, 1, true));
    assert_eq!(sa, before);
}

#[test]
fn time_going_backwards_only_resyncs() {
    let mut sa = SchedAvg::default();
    sa.update_load_sum(10 * PERIOD_NS, 1, 1, true);
    sa.update_load_avg(1024);
    let before = sa;
    assert!(!sa.update_load_sum(5 * PERIOD_NS, 1, 1, true));
    assert_eq!(sa.last_update_time, 5 * PERIOD_NS);
    assert_eq!(
        SchedAvg {
            last_update_time: before.last_update_time,
            ..sa
        },
        before
    );
}

#[test]
fn load_zero_forces_runnable_and_running_off() {
    let mut sa = SchedAvg::default();
    sa.update_load_sum(3 * PERIOD_NS, 1, 1, true);
    let mut blocked = sa;
    let mut flagged = sa;
    blocked.update_load_sum(5 * PERIOD_NS, 0, 0, false);
    flagged.update_load_sum(5 * PERIOD_NS, 0, 1, true);
    assert_eq!(
        blocked, flagged,
        "runnable/running are ignored when load is 0"
    );
    assert_eq!(blocked.load_sum, decay_load(sa.load_sum, 2));
    assert_eq!(
        u64::from(blocked.util_sum),
        decay_load(u64::from(sa.util_sum), 2)
    );
}

#[test]
fn blocked_signal_only_decays() {
    let mut sa = SchedAvg::default();
    sa.update_load_sum(100 * PERIOD_NS, 1, 1, true);
    sa.update_load_avg(1024);
    let mut prev = sa;
    for k in 1..=1000u64 {
        let now = 100 * PERIOD_NS + k * 700_000;
        if sa.update_load_sum(now, 0, 0, false) {
            sa.update_load_avg(1024);
        }
        assert!(sa.load_sum <= prev.load_sum && sa.util_sum <= prev.util_sum);
        assert!(sa.runnable_sum <= prev.runnable_sum);
        assert!(sa.util_avg <= prev.util_avg && sa.load_avg <= prev.load_avg);
        prev = sa;
    }
    assert_eq!(
        sa.util_avg, 0,
        "700 ms (667 periods, 20 half-lives) of sleep leaves nothing"
    );
    assert_eq!(sa.load_avg, 0);
}

#[test]
fn divider_tracks_period_contrib() {
    let sa = SchedAvg {
        period_contrib: 0,
        ..SchedAvg::default()
    };
    assert_eq!(u64::from(sa.get_pelt_divider()), PELT_MIN_DIVIDER);
    let sa = SchedAvg {
        period_contrib: 1023,
        ..SchedAvg::default()
    };
    assert_eq!(u64::from(sa.get_pelt_divider()), LOAD_AVG_MAX - 1);
}

/// Bound on `util_sum - (load_sum << 10)` for a signal whose running time is
/// part of its runnable time: both get the same contributions, and each decay
/// truncates `load_sum` by less than 1, i.e. `util_sum` gains less than 1024 on
/// `load_sum << 10`, while the gap itself decays by at least
/// `y1 = runnable_avg_yN_inv[1] / 2^32` per decay: the gap stays below
/// `1024 / (1 - y1)` = 47788.9.
pub(crate) const UTIL_SUM_OVER_LOAD_SUM_MAX: u64 = 47_789;

#[test]
fn util_sum_gap_bound_is_1024_over_one_minus_y() {
    let y1 = f64::from(RUNNABLE_AVG_YN_INV[1]) / 4_294_967_296.0;
    assert_eq!(
        (1024.0 / (1.0 - y1)).ceil() as u64,
        UTIL_SUM_OVER_LOAD_SUM_MAX
    );
}

#[test]
fn always_running_converges_to_full_scale() {
    // Updated every 1 ms, an always-running entity converges to 1024 and never
    // exceeds its maxima. util_sum does pass divider << 10 (by a few thousand,
    // around 364 ms): it decays with 1024 times the precision of load_sum.
    let mut sa = SchedAvg::default();
    let mut util_sum_passed_divider = false;
    for ms in 1..=2000u64 {
        if sa.update_load_sum(ms * 1_000_000, 1, 1, true) {
            sa.update_load_avg(1024);
        }
        let div = u64::from(sa.get_pelt_divider());
        assert!(sa.load_sum <= div);
        assert!(u64::from(sa.util_sum) <= (sa.load_sum << 10) + UTIL_SUM_OVER_LOAD_SUM_MAX);
        assert!(sa.util_avg <= 1024 && sa.load_avg <= 1024);
        util_sum_passed_divider |= u64::from(sa.util_sum) > div << 10;
    }
    assert!(
        util_sum_passed_divider,
        "the kernel's util_sum exceeds divider << 10 near saturation"
    );
    assert!(
        (1020..=1024).contains(&sa.util_avg),
        "util_avg {}",
        sa.util_avg
    );
    assert!((1020..=1024).contains(&sa.load_avg));
}
