use super::*;

const PERIOD_NS: u64 = 1024 * 1024;

#[test]
fn rt_and_dl_signals_follow_the_running_flag() {
    let mut rt = SchedAvg::default();
    let mut se = SchedAvg::default();
    for p in 1..=50 {
        update_rt_rq_load_avg(p * PERIOD_NS, &mut rt, true);
        if se.update_load_sum(p * PERIOD_NS, 1, 1, true) {
            se.update_load_avg(1);
        }
    }
    assert_eq!(rt, se, "an rt signal is a 0/1 signal with weight 1");
    let mut dl = SchedAvg::default();
    for p in 1..=50 {
        update_dl_rq_load_avg(p * PERIOD_NS, &mut dl, true);
    }
    assert_eq!(dl, se);
    assert!(!update_rt_rq_load_avg(50 * PERIOD_NS + 100, &mut rt, false));
    assert!(update_rt_rq_load_avg(60 * PERIOD_NS, &mut rt, false));
    assert!(rt.util_avg < se.util_avg);
}

#[test]
fn irq_signal_decays_then_accrues_the_scaled_irq_time() {
    let mut irq = SchedAvg::default();
    // 2 periods of irq time ending at 10 periods, at full capacity.
    assert!(update_irq_load_avg(
        10 * PERIOD_NS,
        &mut irq,
        2 * PERIOD_NS,
        1024,
        1024
    ));
    let mut expect = SchedAvg::default();
    expect.update_load_sum(8 * PERIOD_NS, 0, 0, false);
    expect.update_load_sum(10 * PERIOD_NS, 1, 1, true);
    expect.update_load_avg(1);
    assert_eq!(irq, expect);

    // On a half-capacity CPU the same irq time counts half.
    let mut half = SchedAvg::default();
    update_irq_load_avg(10 * PERIOD_NS, &mut half, 2 * PERIOD_NS, 512, 1024);
    let mut expect = SchedAvg::default();
    expect.update_load_sum(9 * PERIOD_NS, 0, 0, false);
    expect.update_load_sum(10 * PERIOD_NS, 1, 1, true);
    expect.update_load_avg(1);
    assert_eq!(half, expect);
}

fn util(u: u64) -> SchedAvg {
    SchedAvg {
        util_avg: u,
        ..SchedAvg::default()
    }
}

#[test]
fn scale_rt_capacity_values() {
    let z = util(0);
    assert_eq!(scale_rt_capacity(1024, &z, &z, &z), 1024);
    assert_eq!(scale_rt_capacity(1024, &util(256), &z, &z), 768);
    assert_eq!(scale_rt_capacity(1024, &util(200), &util(56), &z), 768);
    // free 768 scaled by (1024 - 512) / 1024.
    assert_eq!(scale_rt_capacity(1024, &util(256), &z, &util(512)), 384);
    // 1000 * (1024 - 100) / 1024 = 902.3
    assert_eq!(scale_rt_capacity(1024, &util(24), &z, &util(100)), 902);
    assert_eq!(
        scale_rt_capacity(512, &z, &z, &util(512)),
        1,
        "irq uses it all"
    );
    assert_eq!(
        scale_rt_capacity(512, &util(300), &util(212), &z),
        1,
        "rt + dl use it all"
    );
    assert_eq!(scale_irq_capacity(768, 512, 1024), 384);
}
