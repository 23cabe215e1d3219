use super::*;
use crate::consts::PELT_MIN_DIVIDER;

const MS: u64 = 1_000_000;
/// One PELT period in ms (1024 * 1024 ns).
const PERIOD_MS: f64 = 1.048_576;

fn samples(pattern: &str, duration_ns: u64, step_ns: u64) -> Vec<Sample> {
    let cfg = SimConfig {
        pattern: pattern.parse().unwrap(),
        duration_ns,
        step_ns,
        ..SimConfig::default()
    };
    simulate(&cfg).unwrap().collect()
}

/// The average over the sums at the sample instant: util_sum / divider. The
/// kernel's `util_avg` is this value as of the last period boundary crossed.
fn fresh_util(s: &Sample) -> f64 {
    f64::from(s.avg.util_sum) / f64::from(s.avg.get_pelt_divider())
}

#[test]
fn always_running_follows_one_minus_y_to_the_t() {
    // From nothing, an always-running task's util is 1024 * (1 - y^t), t in
    // periods of 1.048576 ms, y^32 = 1/2: it crosses 512 at 32 periods = 33.55
    // ms and is 1023 from about 320 periods = 335 ms on. The sums follow the
    // curve at every instant; util_avg is recomputed only by an update that
    // crosses a period boundary, and keeps that value until the next one.
    let rows = samples("always", 400 * MS, MS);
    assert_eq!(rows.len(), 401);
    let closed = |t_ns: u64| 1024.0 * (1.0 - 0.5f64.powf(t_ns as f64 / 1e6 / (32.0 * PERIOD_MS)));
    let period_of = |s: &Sample| s.avg.last_update_time / (1024 * 1024);
    let mut recomputed_at = 0;
    let mut crossings = 0;
    for w in rows.windows(2) {
        let (prev, s) = (&w[0], &w[1]);
        let t_ms = s.time_ns / MS;
        assert!(
            (fresh_util(s) - closed(s.time_ns)).abs() <= 1.0,
            "sums at {t_ms} ms"
        );
        if period_of(s) != period_of(prev) {
            recomputed_at = s.time_ns;
            crossings += 1;
        } else {
            assert_eq!(
                s.avg.util_avg, prev.avg.util_avg,
                "no boundary crossed before {t_ms} ms"
            );
        }
        let expect = closed(recomputed_at);
        let got = s.avg.util_avg as f64;
        assert!(
            (got - expect).abs() <= 1.0,
            "at {t_ms} ms: util_avg {got}, closed form {expect:.2}"
        );
        // load_sum takes the same contributions but each decay truncates it
        // 1024 times more coarsely than util_sum: util_sum - (load_sum << 10)
        // stays below 47789 (see avg tests), i.e. load_avg is at most 2 below.
        assert!(s.avg.load_avg <= s.avg.util_avg && s.avg.load_avg + 2 >= s.avg.util_avg);
        assert_eq!(s.avg.runnable_avg, s.avg.util_avg);
    }
    assert_eq!(crossings, 381, "400 ms is 381.47 periods");
    let at = |ms: usize| rows[ms].avg.util_avg;
    assert!(
        at(33) < 512 && at(34) >= 512,
        "crosses 512 between 33 and 34 ms: {} {}",
        at(33),
        at(34)
    );
    assert_eq!(at(345), 1023);
    assert_eq!(rows[345].avg.load_avg, 1023);
    assert!(at(400) >= 1023 && rows.iter().all(|s| s.avg.util_avg <= 1024));
}

#[test]
fn quarter_duty_cycle_settles_around_256_with_the_closed_form_swing() {
    // 4 ms run, 12 ms sleep. In steady state util rises from L to H while running
    // and decays from H to L while sleeping (continuous PELT, decay per ns
    // 2^(-1/(32 * 1048576))):  H = 1024 (1 - a) / (1 - a b), L = b H, with
    // a = y^(4 ms), b = y^(12 ms). That gives H = 288.6, L = 225.2: a mean of 256
    // and a swing of 63.4. Measured on the sums at the instant (the kernel's
    // util_avg lags by up to one period).
    let y_per_ms = 0.5f64.powf(1.0 / (32.0 * PERIOD_MS));
    let (a, b) = (y_per_ms.powi(4), y_per_ms.powi(12));
    let high = 1024.0 * (1.0 - a) / (1.0 - a * b);
    let low = b * high;
    assert!((high - 288.6).abs() < 0.1 && (low - 225.2).abs() < 0.1);

    let rows = samples("run=4ms,sleep=12ms", 480 * MS, MS);
    let mut peaks = 0;
    let mut troughs = 0;
    for s in rows.iter().filter(|s| s.time_ns >= 320 * MS) {
        let phase = (s.time_ns / MS) % 16;
        let fresh = fresh_util(s);
        if phase == 4 {
            assert!(
                (fresh - high).abs() <= 1.0,
                "peak at {} ms: {fresh:.2} vs {high:.2}",
                s.time_ns / MS
            );
            peaks += 1;
        }
        if phase == 0 {
            assert!(
                (fresh - low).abs() <= 1.0,
                "trough at {} ms: {fresh:.2} vs {low:.2}",
                s.time_ns / MS
            );
            troughs += 1;
        }
        // The kernel's util_avg is the value at the last period boundary: at
        // most one period (15 util at this slope) behind.
        let lag = fresh - s.avg.util_avg as f64;
        assert!(
            lag.abs() < 17.0,
            "util_avg {} vs {fresh:.2}",
            s.avg.util_avg
        );
        assert!((200..=300).contains(&s.avg.util_avg));
    }
    assert_eq!(
        (peaks, troughs),
        (10, 11),
        "peaks 324..=468 ms, troughs 320..=480 ms"
    );
}

#[test]
fn sleeping_only_decays_and_running_only_grows() {
    let rows = samples("run=10ms,sleep=30ms", 200 * MS, MS);
    for w in rows.windows(2) {
        let (prev, cur) = (&w[0], &w[1]);
        let phase = (prev.time_ns / MS) % 40;
        if phase >= 10 {
            // The interval (prev, cur] was slept.
            assert!(cur.avg.util_sum <= prev.avg.util_sum && cur.avg.load_sum <= prev.avg.load_sum);
            assert!(cur.avg.runnable_sum <= prev.avg.runnable_sum);
        } else {
            assert!(
                fresh_util(cur) >= fresh_util(prev),
                "run at {} ms",
                cur.time_ns / MS
            );
        }
    }
}

#[test]
fn zero_step_between_identical_instants_changes_nothing() {
    // A duration of 0 gives the single row at time 0: all zero.
    let rows = samples("always", 0, MS);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].avg, SchedAvg::default());
    // Steps shorter than 1024 ns: no whole unit elapses, nothing changes.
    let rows = samples("always", 3000, 1000);
    assert_eq!(rows[1].avg, SchedAvg::default());
    assert_eq!(rows[2].avg.last_update_time, 1024);
}

#[test]
fn transitions_between_steps_are_accounted() {
    // Steps every 3 ms, transitions at 4 ms and 16 ms: the 6 ms row must equal
    // driving the CPU through update(3), sleep at 4, update(6).
    let rows = samples("run=4ms,sleep=12ms", 18 * MS, 3 * MS);
    let mut cpu = OneTaskCpu::new(OneTaskCpuConfig::default(), TaskState::Running);
    cpu.update(3 * MS);
    assert_eq!(rows[1].avg, *cpu.se());
    cpu.set_state(4 * MS, TaskState::Sleeping);
    cpu.update(6 * MS);
    assert_eq!(rows[2].avg, *cpu.se());
    for t in [9, 12, 15] {
        cpu.update(t * MS);
    }
    cpu.set_state(16 * MS, TaskState::Running);
    cpu.update(18 * MS);
    assert_eq!(rows[6].avg, *cpu.se());
}

#[test]
fn a_transition_on_a_step_updates_once() {
    // The 4 ms row is the sleep transition itself (one update at 4 ms).
    let rows = samples("run=4ms,sleep=4ms", 8 * MS, 2 * MS);
    let mut cpu = OneTaskCpu::new(OneTaskCpuConfig::default(), TaskState::Running);
    cpu.update(2 * MS);
    cpu.set_state(4 * MS, TaskState::Sleeping);
    assert_eq!(rows[2].avg, *cpu.se());
    cpu.update(6 * MS);
    cpu.set_state(8 * MS, TaskState::Running);
    assert_eq!(rows[4].avg, *cpu.se());
}

#[test]
fn same_phase_items_merge() {
    let merged = samples("run=2ms,run=2ms,sleep=4ms,sleep=4ms", 60 * MS, MS);
    let plain = samples("run=4ms,sleep=8ms", 60 * MS, MS);
    assert_eq!(merged, plain);
    let only_run = samples("run=1ms,run=3ms", 50 * MS, MS);
    assert_eq!(only_run, samples("always", 50 * MS, MS));
    let only_sleep = samples("sleep=5ms", 50 * MS, MS);
    assert!(
        only_sleep
            .iter()
            .all(|s| s.avg.util_sum == 0 && s.avg.load_sum == 0)
    );
}

#[test]
fn new_task_row_zero() {
    let cfg = SimConfig {
        new_task: true,
        duration_ns: 2 * MS,
        ..SimConfig::default()
    };
    let rows: Vec<_> = simulate(&cfg).unwrap().collect();
    let s = rows[0].avg;
    assert_eq!((s.util_avg, s.runnable_avg, s.load_avg), (512, 512, 1024));
    assert_eq!(u64::from(s.util_sum), 512 * PELT_MIN_DIVIDER);
    assert_eq!(s.runnable_sum, 512 * PELT_MIN_DIVIDER);
    assert_eq!(s.load_sum, PELT_MIN_DIVIDER);
    assert!(rows[2].avg.util_avg > 512, "keeps running from 512");
}

#[test]
fn weight_scales_load_only() {
    let heavy = SimConfig {
        pattern: "run=3ms,sleep=5ms".parse().unwrap(),
        duration_ns: 100 * MS,
        weight: 88761,
        ..SimConfig::default()
    };
    let light = SimConfig {
        weight: 15,
        ..heavy.clone()
    };
    for (h, l) in simulate(&heavy).unwrap().zip(simulate(&light).unwrap()) {
        assert_eq!(
            (h.avg.util_sum, h.avg.load_sum, h.avg.util_avg),
            (l.avg.util_sum, l.avg.load_sum, l.avg.util_avg)
        );
        // Both averages come from the same load_sum and divider.
        assert!(h.avg.load_avg <= 88761 && l.avg.load_avg <= 15);
        let scaled = h.avg.load_avg * 15 / 88761;
        assert!(
            scaled.abs_diff(l.avg.load_avg) <= 1,
            "{} vs {}",
            h.avg.load_avg,
            l.avg.load_avg
        );
    }
}

#[test]
fn bad_parameters_are_rejected() {
    let base = SimConfig::default();
    assert_eq!(
        simulate(&SimConfig {
            step_ns: 0,
            ..base.clone()
        })
        .unwrap_err(),
        PeltError::ZeroStep
    );
    assert_eq!(
        simulate(&SimConfig {
            weight: 0,
            ..base.clone()
        })
        .unwrap_err(),
        PeltError::WeightOutOfRange {
            weight: 0,
            max: MAX_SIM_WEIGHT
        }
    );
    assert_eq!(
        simulate(&SimConfig {
            cpu_capacity: 1025,
            ..base.clone()
        })
        .unwrap_err(),
        PeltError::CapacityOutOfRange { capacity: 1025 }
    );
    assert!(
        simulate(&SimConfig {
            cpu_capacity: 1,
            weight: MAX_SIM_WEIGHT,
            ..base
        })
        .is_ok()
    );
}

#[test]
fn huge_step_stops_at_the_duration() {
    let rows = samples("always", u64::MAX, u64::MAX / 2 + 1);
    assert_eq!(rows.len(), 2, "0 and 2^63; the next step overflows");
}
