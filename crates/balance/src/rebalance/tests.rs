use crate::params::{LbFeat, default_features};
use lbsim_topology::{CpuId, SdParams};

use super::*;
use crate::lb::harness::World;

/// Rule (get_sd_balance_interval, KERNEL-MODEL §3.7 worked example): an 8-CPU MC domain at
/// HZ=1000 has an idle interval of 8 jiffies and a busy one of 8*16-1 = 127; a 16-CPU PKG
/// domain 16 and 255. Without LB_BUSY_INTERVAL_SKEW the busy one is a multiple (128); with
/// busy_factor 32 (before v5.10) 255; at HZ=250 the ms round up to jiffies.
#[test]
fn worked_example_intervals() {
    let w = World::new("llcs=2,cores=8");
    let sd_mc = &w.topo.domains(CpuId(0))[0];
    let sd_pkg = &w.topo.domains(CpuId(0))[1];
    let st = &w.st;
    let i = |sd, level, busy, hz, skew| {
        get_sd_balance_interval(sd, st.sd(CpuId(0), level), busy, hz, 1600, skew)
    };
    assert_eq!(
        (
            i(sd_mc, 0, false, 1000, true),
            i(sd_mc, 0, true, 1000, true)
        ),
        (8, 127)
    );
    assert_eq!(
        (
            i(sd_pkg, 1, false, 1000, true),
            i(sd_pkg, 1, true, 1000, true)
        ),
        (16, 255)
    );
    assert_eq!(i(sd_mc, 0, true, 1000, false), 128);
    assert_eq!(i(sd_mc, 0, true, 250, true), 31);
    let w32 = World::with(
        "llcs=2,cores=8",
        SdParams {
            imbalance_pct: 117,
            busy_factor: 32,
        },
        default_features(),
    );
    let sd = &w32.topo.domains(CpuId(0))[0];
    assert_eq!(
        get_sd_balance_interval(sd, w32.st.sd(CpuId(0), 0), true, 1000, 1600, true),
        255
    );
    // Clamped to max_load_balance_interval.
    assert_eq!(
        get_sd_balance_interval(sd, w32.st.sd(CpuId(0), 0), true, 1000, 100, true),
        100
    );
}

/// Rule (update_newidle_cost): a bigger cost raises max_newidle_lb_cost at once; otherwise it
/// decays by 253/256 at most once per second (HZ jiffies after the last raise or decay).
#[test]
fn newidle_cost_decay() {
    let mut d = DomainState {
        balance_interval: 8,
        nr_balance_failed: 0,
        last_balance: 0,
        max_newidle_lb_cost: 0,
        last_decay_max_lb_cost: 0,
        nohz_idle: false,
    };
    assert!(!update_newidle_cost(&mut d, 25_600, 10, 1000));
    assert_eq!(
        (d.max_newidle_lb_cost, d.last_decay_max_lb_cost),
        (25_600, 10)
    );
    assert!(
        !update_newidle_cost(&mut d, 0, 1010, 1000),
        "not after exactly HZ jiffies"
    );
    assert!(update_newidle_cost(&mut d, 0, 1011, 1000));
    assert_eq!(d.max_newidle_lb_cost, 25_600 * 253 / 256);
    assert!(!update_newidle_cost(&mut d, 0, 1500, 1000));
}

/// Rule (rebalance_domains): a level is balanced when its interval has passed since
/// `last_balance`, which is then set to now; `rq->next_balance` becomes the earliest
/// `last_balance + interval` over the levels visited, with the interval recomputed after
/// the balance.
#[test]
fn rebalance_updates_last_and_next_balance() {
    let mut w = World::new("hikey");
    for c in 0..8 {
        w.spawn(c, None);
    }
    // Busy intervals: MC 4 ms * 16 - 1 = 63 jiffies; PKG 8 * 16 - 1 = 127. Both are due
    // 130 jiffies after boot.
    w.run_ticks(130);
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    rebalance_domains(&mut ctx, st, CpuId(0), CpuIdleType::NotIdle, &mut pass);
    assert_eq!(
        pass.work.domains, 2,
        "CPU 0 balances both levels (it is its groups' first CPU)"
    );
    assert_eq!(st.sd(CpuId(0), 0).last_balance, 130);
    assert_eq!(st.sd(CpuId(0), 1).last_balance, 130);
    // Both levels were balanced (one task per CPU), so each doubled its balance_interval
    // (MC 4 -> 8 ms, PKG 8 -> 16 ms): next_balance is 130 + min(8*16-1, 16*16-1).
    assert_eq!(st.sd(CpuId(0), 0).balance_interval, 8);
    assert_eq!(ctx.rqs[0].next_balance(), 130 + 127);
    // A CPU that is not the first of its group stops after the MC level.
    let mut pass = Pass::new(now);
    rebalance_domains(&mut ctx, st, CpuId(1), CpuIdleType::NotIdle, &mut pass);
    assert_eq!(pass.work.domains, 2);
    assert_eq!(
        st.sd(CpuId(1), 1).last_balance,
        130,
        "load_balance ran and said no"
    );
    let mut pass = Pass::new(now);
    rebalance_domains(&mut ctx, st, CpuId(1), CpuIdleType::NotIdle, &mut pass);
    assert_eq!(pass.work.domains, 0, "nothing due yet");
}

/// Rule (SD_SERIALIZE, v6.6 spin_trylock): while one CPU balances a serialized (NUMA) level,
/// another CPU reaching a serialized level skips it and does not retry; its other levels are
/// balanced as usual.
#[test]
fn serialize_is_skipped_not_retried() {
    let mut w = World::new("nodes=2,cores=2");
    let numa = w
        .topo
        .domains(CpuId(0))
        .iter()
        .position(|sd| sd.flags.contains(SdFlag::Serialize))
        .unwrap();
    w.spawn(0, None);
    w.spawn(2, None);
    w.run_ticks(200);
    // CPU 0 holds the flag until simulated time now + 1 ms.
    w.st.serialize_owner = Some(CpuId(0));
    w.st.serialize_busy_until_ns = w.now + 1_000_000;
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    rebalance_domains(&mut ctx, st, CpuId(2), CpuIdleType::NotIdle, &mut pass);
    assert_eq!(
        pass.work.domains, numa as u32,
        "every level below the serialized one"
    );
    assert_eq!(st.sd(CpuId(2), numa).last_balance, 0, "skipped");
    // After the holder is done, it is taken.
    let mut pass = Pass::new(now + 1_000_000);
    rebalance_domains(&mut ctx, st, CpuId(2), CpuIdleType::NotIdle, &mut pass);
    assert_eq!(st.sd(CpuId(2), numa).last_balance, ctx.jiffies);
    assert_eq!(st.serialize_owner, Some(CpuId(2)));
    assert!(st.serialize_busy_until_ns <= pass.now_ns(&ctx));
    let _ = LbFeat::LbBusyIntervalSkew;
}
