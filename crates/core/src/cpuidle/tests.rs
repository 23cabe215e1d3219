//! Unit tests of the menu governor's rules, each quoting the rule of menu.c (v6.12).

use lbsim_topology::IdleStates;

use super::menu::{KTIME_MAX, LastIdle, MenuDevice, MenuInput, Selection};
use super::*;

const TICK_NSEC: u64 = 4_000_000;

fn bdw() -> IdleStates {
    IdleStates::builtin("bdw").unwrap()
}

fn input(states: &[IdleState], sleep_length_ns: u64, tick_stopped: bool) -> MenuInput<'_> {
    MenuInput {
        states,
        latency_req_ns: LATENCY_REQ_NONE_NS,
        sleep_length_ns,
        delta_tick_ns: sleep_length_ns.min(TICK_NSEC),
        tick_stopped,
        tick_nsec: TICK_NSEC,
        nr_iowaiters: 0,
    }
}

/// Teaches `dev` idle periods of `us` microseconds in `state`, ended by a non-tick wake-up.
fn learn(dev: &mut MenuDevice, states: &[IdleState], us: u64, n: usize) {
    for _ in 0..n {
        dev.select(&input(states, KTIME_MAX, false));
        dev.reflect(LastIdle {
            state_idx: 1,
            residency_ns: us * 1000,
            tick_wakeup: false,
            poll_time_limit: false,
        });
    }
}

/// Rule: with no history and no timer, the prediction is unbounded: the deepest state, and
/// the tick may stop.
#[test]
fn no_history_no_timer_picks_the_deepest_state_and_stops_the_tick() {
    let t = bdw();
    let sel = MenuDevice::default().select(&input(&t.states, KTIME_MAX, false));
    assert_eq!(
        sel,
        Selection {
            idx: 3,
            stop_tick: true
        }
    );
}

/// Rule: a predicted idle under one tick keeps the tick (`*stop_tick = false`), and the
/// state picked is the deepest whose residency fits the prediction.
#[test]
fn menu_keeps_the_tick_for_a_predicted_idle_under_one_tick() {
    let t = bdw();
    let mut dev = MenuDevice::default();
    // Steady 50 us idles (52 us in C1, less its 2 us exit latency): the typical interval is
    // 50 us, well under TICK_NSEC = 4 ms. The ninth selection folds in the eighth period.
    learn(&mut dev, &t.states, 50 + 2, 9);
    assert_eq!(dev.get_typical_interval(), 50);
    let sel = dev.select(&input(&t.states, KTIME_MAX, false));
    assert!(!sel.stop_tick, "the tick is kept");
    assert_eq!(
        t.states[sel.idx].name, "C1E",
        "residency 20 us <= 50 us < C6's 400 us"
    );
    // The same prediction with the tick already stopped is distrusted: the next timer
    // (none) is used instead, so the deepest state.
    let sel = dev.select(&input(&t.states, KTIME_MAX, true));
    assert_eq!(t.states[sel.idx].name, "C6");
}

/// Rule: the early return: a timer due before state 1's residency means state 0, with the
/// tick kept if state 0 polls.
#[test]
fn a_timer_due_before_state_1s_residency_means_polling() {
    let t = bdw();
    let sel = MenuDevice::default().select(&input(&t.states, 1_000, false));
    assert_eq!(
        sel,
        Selection {
            idx: 0,
            stop_tick: false
        }
    );
    // On arm64 state 0 is WFI, which does not poll: the tick may stop.
    let wfi = IdleStates::builtin("hi6220").unwrap();
    let sel = MenuDevice::default().select(&input(&wfi.states, 500, false));
    assert_eq!(
        sel,
        Selection {
            idx: 0,
            stop_tick: true
        }
    );
}

/// Rule (get_typical_interval): samples too spread out give no typical interval; dropping
/// the largest outliers stops at 6 samples.
#[test]
fn typical_interval_needs_steady_samples() {
    let t = bdw();
    let mut dev = MenuDevice::default();
    for us in [100, 5_000, 300, 9_000, 2_000, 40, 7_000, 600] {
        learn(&mut dev, &t.states, us, 1);
    }
    // Fold in the last reflect.
    dev.select(&input(&t.states, KTIME_MAX, false));
    assert_eq!(dev.get_typical_interval(), u32::MAX);
}

/// Rule (menu_update): a tick wake-up while no timer was due within a tick counts as a long
/// idle (9/10 of MAX_INTERESTING, 45 ms).
#[test]
fn a_tick_wakeup_counts_as_a_long_idle() {
    let t = bdw();
    let mut dev = MenuDevice::default();
    dev.select(&input(&t.states, KTIME_MAX, false));
    dev.reflect(LastIdle {
        state_idx: 2,
        residency_ns: 4_000_000,
        tick_wakeup: true,
        poll_time_limit: false,
    });
    dev.select(&input(&t.states, KTIME_MAX, false));
    assert!(dev.intervals().contains(&45_000), "{:?}", dev.intervals());
}

/// Rule (cpuidle_poll_time): polling stops after the first deeper state's residency of at
/// least 10 us (C1E's 20 us on Broadwell), at most TICK_NSEC / 16.
#[test]
fn poll_time_limit() {
    assert_eq!(cpuidle_poll_time(&bdw().states, TICK_NSEC), 20_000);
    let zen2 = IdleStates::builtin("zen2").unwrap();
    assert_eq!(cpuidle_poll_time(&zen2.states, 1_000_000), 1_000_000 / 16);
}

/// Rule: the spread stays within its bounds and is exact at 0.
#[test]
fn spread_bounds() {
    let mut rng = crate::rng::SeedStreams::new(3).rng(crate::rng::Stream::IdleExit, 0);
    for _ in 0..1000 {
        let v = spread(&mut rng, 133_000, 20);
        assert!((106_400..=159_600).contains(&v), "{v}");
    }
    assert_eq!(spread(&mut rng, 133_000, 0), 133_000);
}
