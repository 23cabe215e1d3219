use super::*;
use crate::cfs_rq::{CfsRqLoad, SeLoad, UpdateFlags};
use crate::consts::PELT_MIN_DIVIDER;

fn cfs(util_avg: u64, load_avg: u64) -> CfsRqAvg {
    let mut c = CfsRqAvg::default();
    c.avg.util_avg = util_avg;
    c.avg.load_avg = load_avg;
    c
}

fn check(cfs_util: u64, cfs_load: u64, capacity: u64, weight: u64) -> (u64, u64) {
    let mut se = init_entity_runnable_average(weight);
    post_init_entity_util_avg(
        &mut se,
        &cfs(cfs_util, cfs_load),
        capacity,
        weight,
        RunnableInit::UtilAvg,
    );
    (se.util_avg, se.runnable_avg)
}

#[test]
fn fork_time_signal() {
    let se = init_entity_runnable_average(1024);
    assert_eq!(
        se,
        SchedAvg {
            load_avg: 1024,
            ..SchedAvg::default()
        }
    );
}

#[test]
fn idle_cpu_gives_half_its_capacity() {
    assert_eq!(check(0, 0, 1024, 1024), (512, 512));
    assert_eq!(check(0, 0, 512, 1024), (256, 256));
    assert_eq!(
        check(0, 0, 1, 1024),
        (0, 0),
        "cap = 1 / 2 = 0 is not positive"
    );
}

#[test]
fn busy_cpu_extrapolates_and_caps() {
    // 100 * 1024 / (1023 + 1) = 100; cap (1024 - 100) / 2 = 462.
    assert_eq!(check(100, 1023, 1024, 1024), (100, 100));
    // 600 * 1024 / 2049 = 299; cap (1024 - 600) / 2 = 212.
    assert_eq!(check(600, 2048, 1024, 1024), (212, 212));
    // A light task: 600 * 15 / 2049 = 4.
    assert_eq!(check(600, 2048, 1024, 15), (4, 4));
}

#[test]
fn overloaded_cpu_gives_nothing() {
    // util above capacity: the unsigned difference wraps, the signed cap is negative.
    assert_eq!(check(1100, 3000, 1024, 1024), (0, 0));
    assert_eq!(check(1024, 3000, 1024, 1024), (0, 0), "cap 0");
    assert_eq!(check(1023, 3000, 1024, 1024), (0, 0), "cap (1)/2 = 0");
}

#[test]
fn v5_7_runnable_starts_at_cpu_scale_whatever_the_util() {
    let run = |cfs_util, cfs_load, capacity| {
        let mut se = init_entity_runnable_average(1024);
        post_init_entity_util_avg(
            &mut se,
            &cfs(cfs_util, cfs_load),
            capacity,
            1024,
            RunnableInit::CpuScale,
        );
        (se.util_avg, se.runnable_avg)
    };
    // util_avg is extrapolated as before; runnable_avg is the CPU's capacity, even when the
    // cap leaves util_avg at 0 (the assignment is outside the `cap > 0` block).
    assert_eq!(run(0, 0, 1024), (512, 1024));
    assert_eq!(run(600, 2048, 1024), (212, 1024));
    assert_eq!(run(1100, 3000, 1024), (0, 1024));
    assert_eq!(run(0, 0, 446), (223, 446));
}

#[test]
fn first_enqueue_attaches_the_initial_signal() {
    // wake_up_new_task() on an idle CPU: post_init, then enqueue with DO_ATTACH.
    let mut cfs_rq = CfsRqAvg::default();
    cfs_rq.avg.last_update_time = 1 << 20;
    let mut se = init_entity_runnable_average(1024);
    post_init_entity_util_avg(&mut se, &cfs_rq, 1024, 1024, RunnableInit::UtilAvg);
    let out = cfs_rq.update_load_avg(
        &mut se,
        1 << 20,
        &SeLoad::task(1024, false, false),
        &CfsRqLoad::default(),
        UpdateFlags::UPDATE_TG | UpdateFlags::DO_ATTACH,
        true,
    );
    assert!(out.attached);
    assert_eq!(u64::from(se.util_sum), 512 * PELT_MIN_DIVIDER);
    assert_eq!(se.load_sum, PELT_MIN_DIVIDER, "1024 * 46718 / 1024");
    assert_eq!(
        (
            cfs_rq.avg.util_avg,
            cfs_rq.avg.runnable_avg,
            cfs_rq.avg.load_avg
        ),
        (512, 512, 1024)
    );
    assert_eq!(cfs_rq.avg.load_sum, 1024 * PELT_MIN_DIVIDER);
}

/// v4.6's rule (init_entity_runnable_average() before 2b8c41daba32): a new task starts at the
/// full scale on any CPU, however loaded, where v4.7+ gives it at most half of what the
/// cfs_rq leaves free; once attached its util_sum is that average over the divider.
#[test]
fn v4_6_new_task_starts_at_the_full_scale_whatever_the_cpu() {
    for (cfs_util, capacity) in [(0, 1024), (900, 1024), (1024, 1024), (100, 446)] {
        let mut se = init_entity_runnable_average(1024);
        init_util_avg_full_scale(&mut se, capacity, RunnableInit::UtilAvg);
        assert_eq!((se.util_avg, se.runnable_avg), (1024, 1024));
        let mut rq = cfs(cfs_util, 2048);
        rq.attach_entity_load_avg(&mut se, 1024);
        assert_eq!(rq.avg.util_avg, cfs_util + 1024);
        assert_eq!(
            u64::from(se.util_sum),
            1024 * u64::from(rq.avg.get_pelt_divider())
        );
    }
    // Beside it, v4.7+ on a CPU already at 900 of 1024: (1024 - 900) / 2 = 62.
    assert_eq!(check(900, 2048, 1024, 1024).0, 62);
    // The v5.7 runnable rule still applies to runnable_avg.
    let mut se = init_entity_runnable_average(1024);
    init_util_avg_full_scale(&mut se, 446, RunnableInit::CpuScale);
    assert_eq!((se.util_avg, se.runnable_avg), (1024, 446));
}
