use super::*;
use crate::consts::{LOAD_AVG_MAX, UTIL_AVG_UNCHANGED};

const MS: u64 = 1_000_000;

fn cpu(cpu_capacity: u64, state: TaskState) -> OneTaskCpu {
    OneTaskCpu::new(
        OneTaskCpuConfig {
            cpu_capacity,
            ..OneTaskCpuConfig::default()
        },
        state,
    )
}

/// Runs `cpu` in `state` from its current time to `until`, updating every `step`.
fn run_until(cpu: &mut OneTaskCpu, from: u64, until: u64, step: u64) {
    let mut t = from;
    while t < until {
        t = (t + step).min(until);
        cpu.update(t);
    }
}

#[test]
fn half_capacity_cpu_accrues_util_at_half_the_rate() {
    // On a CPU of capacity 512 the PELT clock runs at half speed while busy,
    // so after T of running the signal is bit for bit the one a CPU of
    // capacity 1024 reaches after T/2.
    let mut little = cpu(512, TaskState::Running);
    let mut big = cpu(1024, TaskState::Running);
    for k in 1..=300u64 {
        little.update(k * 2 * MS);
        big.update(k * MS);
        assert_eq!(little.se(), big.se(), "at {} ms on the little CPU", 2 * k);
        assert_eq!(little.cfs_rq(), big.cfs_rq());
    }
    assert!(
        little.se().util_avg > 1000,
        "both reach saturation: {}",
        little.se().util_avg
    );
    // So early on (8 ms, the almost linear part of the curve, where 1 - y^n is
    // close to n ln2 / 32) the little CPU has about half the big CPU's util.
    let mut little = cpu(512, TaskState::Running);
    let mut big = cpu(1024, TaskState::Running);
    little.update(8 * MS);
    big.update(8 * MS);
    let (l, b) = (little.se().util_avg, big.se().util_avg);
    assert!(
        l * 2 >= b * 9 / 10 && l * 2 <= b * 11 / 10,
        "little {l}, big {b}"
    );
}

#[test]
fn half_capacity_cpu_periodic_task_gets_about_half_the_util() {
    // 2 ms of work every 16 ms: the idle time resyncs clock_pelt, so a CPU of
    // capacity 512 counts 1 ms of "full-speed" work per period.
    let settle = |capacity| {
        let mut c = cpu(capacity, TaskState::Running);
        let mut t = 0;
        let mut sum = 0;
        let mut n = 0;
        for cycle in 0..60 {
            for (state, len) in [(TaskState::Running, 2 * MS), (TaskState::Sleeping, 14 * MS)] {
                run_until(&mut c, t, t + len, MS);
                t += len;
                c.set_state(
                    t,
                    if state == TaskState::Running {
                        TaskState::Sleeping
                    } else {
                        TaskState::Running
                    },
                );
                if cycle >= 40 {
                    sum += c.se().util_avg;
                    n += 1;
                }
            }
        }
        assert_eq!(c.clock().lost_idle_time, 0, "never saturated");
        sum / n
    };
    let big = settle(1024);
    let little = settle(512);
    // Continuous model: 1024 * 2/16 = 128 and 64.
    assert!((110..=150).contains(&big), "big {big}");
    assert!(
        little * 2 >= big - 6 && little * 2 <= big + 6,
        "little {little}, big {big}"
    );
}

#[test]
fn saturated_little_cpu_loses_idle_time_when_it_sleeps() {
    let mut c = cpu(512, TaskState::Running);
    run_until(&mut c, 0, 2000 * MS, 4 * MS);
    assert_eq!(c.clock().rq_clock_pelt(), 1000 * MS);
    assert!(
        c.cfs_rq().avg.util_sum >= crate::LOST_IDLE_UTIL_SUM_THRESHOLD,
        "saturated after 1 s of PELT time"
    );
    assert_eq!(
        c.se().util_avg,
        1024,
        "a busy little CPU still reaches full util"
    );
    c.set_state(2000 * MS, TaskState::Sleeping);
    assert_eq!(c.clock().lost_idle_time, 1000 * MS);
    assert_eq!(c.clock().rq_clock_pelt(), 1000 * MS, "no jump of PELT time");
    let before = *c.se();
    c.update(2000 * MS + 100_000);
    assert_eq!(c.se().util_avg, before.util_avg, "less than a period later");
}

#[test]
fn unsaturated_little_cpu_jumps_pelt_time_when_it_sleeps() {
    let mut c = cpu(512, TaskState::Running);
    run_until(&mut c, 0, 20 * MS, MS);
    assert_eq!(c.clock().rq_clock_pelt(), 10 * MS);
    c.set_state(20 * MS, TaskState::Sleeping);
    assert_eq!(c.clock().lost_idle_time, 0);
    assert_eq!(c.clock().rq_clock_pelt(), 20 * MS);
    let before = *c.se();
    c.update(21 * MS);
    // The next update decays the entity over the 10 ms jump as well: from PELT
    // time 10 ms straight to 21 ms.
    let mut expect = before;
    crate::update_load_avg_blocked_se(21 * MS, &mut expect, 1024);
    assert_eq!(*c.se(), expect);
    assert!(
        c.se().util_sum < before.util_sum / 100 * 80,
        "11 periods of decay: y^11 = 0.79"
    );
}

#[test]
fn single_task_cfs_rq_matches_its_entity() {
    let mut c = cpu(1024, TaskState::Running);
    let mut t = 0;
    for (i, len) in [3, 7, 1, 12, 5, 40, 2, 9, 30, 4].iter().enumerate() {
        run_until(&mut c, t, t + len * MS, 700_000);
        t += len * MS;
        let next = if i % 2 == 0 {
            TaskState::Sleeping
        } else {
            TaskState::Running
        };
        c.set_state(t, next);
        let (se, cfs) = (c.se(), &c.cfs_rq().avg);
        // Same instants, same contributions: util and runnable agree exactly.
        assert_eq!((se.util_sum, se.util_avg), (cfs.util_sum, cfs.util_avg));
        assert_eq!(
            (se.runnable_sum, se.runnable_avg),
            (cfs.runnable_sum, cfs.runnable_avg)
        );
        // load: the cfs_rq decays weight * sum in one piece, the entity decays
        // sum then multiplies; truncation favours the cfs_rq by less than
        // 1024 per decay, and that surplus decays.
        assert!(cfs.load_sum >= 1024 * se.load_sum);
        assert!(cfs.load_sum - 1024 * se.load_sum < 1024 * LOAD_AVG_MAX / 1024 * 47);
        assert!(cfs.load_avg >= se.load_avg && cfs.load_avg <= se.load_avg + 1);
    }
}

#[test]
fn new_task_starts_with_half_the_idle_capacity() {
    let cfg = OneTaskCpuConfig {
        new_task: true,
        ..OneTaskCpuConfig::default()
    };
    let c = OneTaskCpu::new(cfg, TaskState::Running);
    assert_eq!(
        (c.se().util_avg, c.se().runnable_avg, c.se().load_avg),
        (512, 512, 1024)
    );
    assert_eq!(c.se().load_sum, crate::PELT_MIN_DIVIDER);
    assert_eq!(c.cfs_rq().avg.util_avg, 512, "attached");
    assert_eq!(c.state(), TaskState::Running);

    let cfg = OneTaskCpuConfig {
        new_task: true,
        cpu_capacity: 256,
        ..OneTaskCpuConfig::default()
    };
    let c = OneTaskCpu::new(cfg, TaskState::Sleeping);
    assert_eq!(c.se().util_avg, 128);
    assert_eq!(
        c.se().util_est,
        128 | UTIL_AVG_UNCHANGED,
        "blocked at once: one activation sampled"
    );
    assert_eq!(c.cfs_rq().avg.util_est, 0);
}

#[test]
fn util_est_follows_activations() {
    let mut c = cpu(1024, TaskState::Running);
    run_until(&mut c, 0, 40 * MS, MS);
    let util_at_40 = c.se().util_avg;
    c.set_state(40 * MS, TaskState::Sleeping);
    // v6.12: util_est_update() reads util_avg before the dequeue update; the
    // last update (the 40 ms step) was at the same instant here.
    assert_eq!(c.se().util_est_value(), util_at_40 as u32);
    assert_eq!(c.se().util_est & UTIL_AVG_UNCHANGED, UTIL_AVG_UNCHANGED);
    run_until(&mut c, 40 * MS, 100 * MS, MS);
    assert_eq!(
        c.se().util_est & UTIL_AVG_UNCHANGED,
        UTIL_AVG_UNCHANGED,
        "blocked updates keep the flag"
    );
    c.set_state(100 * MS, TaskState::Running);
    assert_eq!(c.cfs_rq().avg.util_est, util_at_40 as u32);
    c.update(101 * MS);
    assert_eq!(
        c.se().util_est,
        util_at_40 as u32,
        "the first tick clears the flag"
    );
    run_until(&mut c, 101 * MS, 103 * MS, MS);
    let util_now = c.se().util_avg;
    assert!(util_now < util_at_40);
    c.set_state(103 * MS, TaskState::Sleeping);
    let ewma = u64::from(c.se().util_est_value());
    let diff = util_at_40 - util_now;
    assert_eq!(ewma, ((util_at_40 << 2) - diff) >> 2);
    assert_eq!(c.cfs_rq().avg.util_est, 0);
}

#[test]
fn runnable_but_not_running_raises_runnable_only() {
    let mut c = cpu(1024, TaskState::Runnable);
    run_until(&mut c, 0, 50 * MS, MS);
    assert_eq!(c.se().util_avg, 0);
    assert!(c.se().runnable_avg > 600);
    assert_eq!(c.se().runnable_avg, c.se().load_avg);
    c.set_state(50 * MS, TaskState::Running);
    c.set_state(60 * MS, TaskState::Runnable);
    assert!(c.se().util_avg > 150);
    c.set_state(70 * MS, TaskState::Sleeping);
    assert_eq!(c.state(), TaskState::Sleeping);
}

#[test]
fn updates_at_earlier_times_change_nothing() {
    let mut c = cpu(1024, TaskState::Running);
    run_until(&mut c, 0, 10 * MS, MS);
    let se = *c.se();
    let clock = *c.clock();
    c.update(5 * MS);
    assert_eq!((*c.se(), *c.clock()), (se, clock));
}
