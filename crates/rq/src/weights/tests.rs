//! Exact-value tests for the weight tables and `__calc_delta()`.
//!
//! Expected values were computed independently (Python, arbitrary precision) from the kernel's
//! algorithm: `fact = scale_load_down(weight)`, `fact = fact * inv_weight`, shift the high word
//! out with `fls()`, then `(delta * fact) >> shift`.

use super::*;

/// Rule: `sched_prio_to_weight[nice + 20]`; nice 0 is 1024, each step about 1.25x.
#[test]
fn weight_table_endpoints_and_ratio() {
    assert_eq!(LoadWeight::for_task(0, false).weight, 1024);
    assert_eq!(LoadWeight::for_task(-20, false).weight, 88761);
    assert_eq!(LoadWeight::for_task(19, false).weight, 15);
    assert_eq!(LoadWeight::for_task(5, false).weight, 335);
    // Out-of-range nice values are clamped as PRIO_TO_NICE(static_prio) is.
    assert_eq!(LoadWeight::for_task(40, false).weight, 15);
    assert_eq!(LoadWeight::for_task(-99, false).weight, 88761);
    for i in 1..40 {
        let r = f64::from(SCHED_PRIO_TO_WEIGHT[i - 1]) / f64::from(SCHED_PRIO_TO_WEIGHT[i]);
        assert!((1.19..1.31).contains(&r), "step {i}: ratio {r}");
    }
}

/// Rule: `sched_prio_to_wmult[i]` is 2^32 / weight to within one unit (the historical table is
/// not uniformly rounded), and nice 0 is exactly 2^22.
#[test]
fn wmult_table_is_the_rounded_inverse() {
    assert_eq!(SCHED_PRIO_TO_WMULT[20], 4_194_304);
    for i in 0..40 {
        let w = u64::from(SCHED_PRIO_TO_WEIGHT[i]);
        let exact = (1u64 << 32) as f64 / w as f64;
        let m = f64::from(SCHED_PRIO_TO_WMULT[i]);
        assert!((m - exact).abs() < 1.0, "index {i}: {m} vs {exact}");
    }
}

/// Rule: `SCHED_IDLE` tasks use `WEIGHT_IDLEPRIO` (3) and `WMULT_IDLEPRIO`.
#[test]
fn idle_policy_weight() {
    let lw = LoadWeight::for_task(-20, true);
    assert_eq!(
        lw,
        LoadWeight {
            weight: 3,
            inv_weight: 1_431_655_765
        }
    );
    // 4 ms of an idle-policy task is 4 ms * 1024 / 3 of virtual time.
    assert_eq!(calc_delta_fair(4_000_000, &lw), 1_365_333_333);
}

/// Rule: `calc_delta_fair()` is the identity for `NICE_0_LOAD`, otherwise
/// `__calc_delta(delta, NICE_0_LOAD, &se->load)` with the table's inverse.
#[test]
fn calc_delta_fair_one_tick_every_nice() {
    // 4 ms (one HZ=250 tick) for nice -20..19, from the kernel algorithm.
    let expected: [u64; 40] = [
        46146, 57083, 72517, 88518, 112865, 140495, 176141, 218978, 273998, 343739, //
        428990, 537532, 671475, 835236, 1048643, 1312399, 1637744, 2057257, 2582597,
        3207517, //
        4000000, 4995121, 6253435, 7787072, 9683215, 12226865, 15058823, 19051162, 23813953,
        29897809, //
        37236363, 47080459, 58514286, 73142856, 91022221, 113777777, 141241378, 178086956,
        227555555, 273066666,
    ];
    for (i, &e) in expected.iter().enumerate() {
        let nice = i as i32 - 20;
        assert_eq!(
            calc_delta_fair(4_000_000, &LoadWeight::for_task(nice, false)),
            e,
            "nice {nice}"
        );
    }
}

/// Rule: the table inverse can round up (nice 12: 61356676 > 2^32/70), so the fixed-point result
/// can exceed the exact quotient; lbsim must reproduce that, not the exact division.
#[test]
fn calc_delta_keeps_the_kernel_rounding() {
    let lw = LoadWeight::for_task(12, false);
    assert_eq!(calc_delta_fair(4_000_000, &lw), 58_514_286);
    assert_eq!(4_000_000u64 * 1024 / 70, 58_514_285);
}

/// Rule: a zero cached inverse is recomputed as `WMULT_CONST / scale_load_down(w)` (not the table
/// value), as for a runqueue's summed `load_weight` after `update_load_add()`.
#[test]
fn lazily_computed_inverse_of_a_sum() {
    let mut lw = LoadWeight::default();
    lw.add(1024);
    lw.add(335);
    assert_eq!(lw.inv_weight, 0);
    assert_eq!(lw.inv_weight(), (u64::from(u32::MAX) / 1359) as u32);
    // sched_slice()-style share of a 6 ms period.
    assert_eq!(calc_delta(6_000_000, 1024, &lw), 4_520_971);
    assert_eq!(calc_delta(6_000_000, 335, &lw), 1_479_028);
    // A zero weight gets WMULT_CONST, a tiny one is raised to 2 by scale_load_down().
    assert_eq!(
        LoadWeight {
            weight: 0,
            inv_weight: 0
        }
        .inv_weight(),
        u32::MAX
    );
    assert_eq!(
        LoadWeight {
            weight: 1,
            inv_weight: 0
        }
        .inv_weight(),
        u32::MAX / 2
    );
}

/// Rule: when `fact * inv` spills over 32 bits, both are shifted by `fls(high word)`; a large
/// delta still uses a 128-bit product (`mul_u64_u32_shr`).
#[test]
fn large_values_take_the_fls_path() {
    let lw = LoadWeight::for_task(19, false);
    assert_eq!(calc_delta_fair(1 << 40, &lw), 75_059_993_772_032);
    // A weight above 32 bits takes the first fls() branch.
    let nice0 = LoadWeight::for_task(0, false);
    assert_eq!(calc_delta(1000, 1 << 33, &nice0), 8_388_608_000);
    // The same with the lazily computed inverse (2^32 - 1) / 1024 loses a little.
    let sum = LoadWeight {
        weight: 1024,
        inv_weight: 0,
    };
    assert_eq!(calc_delta(1000, 1 << 33, &sum), 8_388_606_000);
}

/// Rule: `update_load_add/sub/set()` change the weight and clear the cached inverse.
#[test]
fn load_weight_updates_invalidate_the_inverse() {
    let mut lw = LoadWeight::for_task(0, false);
    assert_eq!(lw.inv_weight, 4_194_304);
    lw.add(1024);
    assert_eq!(
        lw,
        LoadWeight {
            weight: 2048,
            inv_weight: 0
        }
    );
    lw.sub(1024);
    assert_eq!(
        lw,
        LoadWeight {
            weight: 1024,
            inv_weight: 0
        }
    );
    // Recomputed inverse of 1024 is (2^32 - 1) / 1024, one less than the table's 2^22.
    assert_eq!(lw.inv_weight(), 4_194_303);
    lw.set(7);
    assert_eq!(
        lw,
        LoadWeight {
            weight: 7,
            inv_weight: 0
        }
    );
}
