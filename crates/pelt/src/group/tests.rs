use super::*;
use crate::cfs_rq::Removed;
use crate::consts::PELT_MIN_DIVIDER;

const PERIOD_NS: u64 = 1024 * 1024;
/// `pelt_divider(0)`: a signal at the start of a period.
const DIV0: u64 = PELT_MIN_DIVIDER;

/// A cfs_rq at the start of a period with consistent sums.
fn cfs_at(util_avg: u64, runnable_avg: u64, load_avg: u64) -> CfsRqAvg {
    CfsRqAvg {
        avg: SchedAvg {
            last_update_time: 40 * PERIOD_NS,
            util_avg,
            runnable_avg,
            load_avg,
            util_sum: (util_avg * DIV0) as u32,
            runnable_sum: runnable_avg * DIV0,
            load_sum: load_avg * DIV0,
            ..SchedAvg::default()
        },
        ..CfsRqAvg::default()
    }
}

#[test]
fn cpu_weight_to_shares() {
    // round(w * 1024 / 100)
    for (cpu_weight, weight) in [
        (1, 10),
        (33, 338),
        (50, 512),
        (100, 1024),
        (10_000, 102_400),
    ] {
        assert_eq!(sched_weight_from_cgroup(cpu_weight), weight, "{cpu_weight}");
        assert_eq!(
            tg_shares_from_cpu_weight(cpu_weight),
            Ok(weight << 10),
            "tg->shares is scaled"
        );
        assert_eq!(
            sched_weight_to_cgroup(weight),
            cpu_weight,
            "the round trip keeps the value"
        );
    }
    assert_eq!(tg_shares_from_cpu_weight(100), Ok(NICE_0_LOAD_SCALED));
    for bad in [0, 10_001] {
        assert_eq!(
            tg_shares_from_cpu_weight(bad),
            Err(PeltError::CpuWeightOutOfRange { weight: bad })
        );
    }
    // The clamp never binds for 1..10000: 10 and 102400 lie inside [2, 2^18].
    assert!(scale_load(MIN_SHARES) < scale_load(10));
    assert!(scale_load(102_400) < scale_load(MAX_SHARES));
    assert_eq!(sched_weight_to_cgroup(0), 1, "clamped to CGROUP_WEIGHT_MIN");
    assert_eq!(sched_weight_to_cgroup(1 << 30), 10_000);
}

/// calc_group_shares() for a cfs_rq of a group with cpu.weight 100.
fn check_shares(tg_load_avg: i64, load_weight: u64, load_avg: u64, contrib: u64, expected: u64) {
    let tg = TaskGroup {
        load_avg: tg_load_avg,
        ..TaskGroup::new(NICE_0_LOAD_SCALED)
    };
    let grq = CfsRqTg {
        tg_load_avg_contrib: contrib,
        ..CfsRqTg::default()
    };
    assert_eq!(
        calc_group_shares(&tg, load_weight, load_avg, &grq),
        expected,
        "tg load {tg_load_avg}, weight {load_weight}, avg {load_avg}, contrib {contrib}"
    );
}

#[test]
fn calc_group_shares_one_busy_cpu_among_four() {
    // CPU 0 runs one nice-0 task of the group (load.weight 1024, load_avg 1000, published);
    // CPUs 1-3 hold nothing and have published nothing: CPU 0's entity gets the whole
    // group weight: 2^20 * 1024 / (1000 - 1000 + max(1024, 1000)).
    check_shares(1000, 1024, 1000, 1000, 1 << 20);
    // The three others still carry 100 each of blocked load: 2^20 * 1024 / 1324.
    check_shares(1300, 1024, 1000, 1000, 810_983);
    // And one of those idle CPUs: load 100 of 1300, nothing queued: 2^20 * 100 / 1300.
    check_shares(1300, 0, 100, 100, 80_659);
    // A fully decayed idle CPU: shares 0, raised to MIN_SHARES = 2 (unscaled!).
    check_shares(1300, 0, 0, 0, MIN_SHARES);
    // The entity never gets more than tg->shares, even from a stale tg->load_avg.
    check_shares(0, 1024, 1000, 1000, 1 << 20);
}

#[test]
fn calc_group_shares_small_group_is_split_below_scaled_min_shares() {
    // The kernel's own example: tg->shares = scale_load(15) on 8 CPUs, one task on each:
    // 15360 * 1024 / 8192 = 1920, less than scale_load(MIN_SHARES) = 2048, and kept.
    let tg = TaskGroup {
        load_avg: 8 * 1024,
        ..TaskGroup::new(scale_load(15))
    };
    let grq = CfsRqTg {
        tg_load_avg_contrib: 1024,
        ..CfsRqTg::default()
    };
    assert_eq!(calc_group_shares(&tg, 1024, 1024, &grq), 1920);
}

#[test]
fn update_cfs_group_reweights_only_on_change() {
    let tg = TaskGroup {
        load_avg: 1300,
        ..TaskGroup::new(NICE_0_LOAD_SCALED)
    };
    let grq = CfsRqTg {
        tg_load_avg_contrib: 1000,
        ..CfsRqTg::default()
    };
    assert_eq!(
        update_cfs_group(NICE_0_LOAD_SCALED, &tg, 1024, 1000, &grq),
        Some(810_983)
    );
    assert_eq!(update_cfs_group(810_983, &tg, 1024, 1000, &grq), None);
    // v6.12.0 recomputes an emptied group too (no load.weight == 0 early return):
    // 2^20 * 1000 / 1300.
    assert_eq!(update_cfs_group(810_983, &tg, 0, 1000, &grq), Some(806_596));
}

#[test]
fn update_tg_load_avg_filter_and_rate_limit() {
    let mut tg = TaskGroup {
        load_avg: 5000,
        ..TaskGroup::new(NICE_0_LOAD_SCALED)
    };
    let mut cfs = CfsRqTg {
        tg_load_avg_contrib: 640,
        last_update_tg_load_avg: 10 * NSEC_PER_MSEC,
        ..CfsRqTg::default()
    };
    let now = 20 * NSEC_PER_MSEC;
    // |650 - 640| = 10 is not > 640 / 64 = 10: filtered, nothing stamped.
    assert!(!update_tg_load_avg(&mut tg, &mut cfs, 650, true, now));
    assert_eq!((tg.load_avg, cfs.tg_load_avg_contrib), (5000, 640));
    assert_eq!(cfs.last_update_tg_load_avg, 10 * NSEC_PER_MSEC);
    // Downwards too: 630 is filtered, 629 is not.
    assert!(!update_tg_load_avg(&mut tg, &mut cfs, 630, true, now));
    assert!(update_tg_load_avg(&mut tg, &mut cfs, 629, true, now));
    assert_eq!((tg.load_avg, cfs.tg_load_avg_contrib), (4989, 629));
    assert_eq!(cfs.last_update_tg_load_avg, now);
    // Within 1 ms of the last change: even a large delta waits.
    assert!(!update_tg_load_avg(
        &mut tg,
        &mut cfs,
        2000,
        true,
        now + NSEC_PER_MSEC - 1
    ));
    assert_eq!(tg.load_avg, 4989);
    // 1 ms later it goes through: +1371.
    assert!(update_tg_load_avg(
        &mut tg,
        &mut cfs,
        2000,
        true,
        now + NSEC_PER_MSEC
    ));
    assert_eq!((tg.load_avg, cfs.tg_load_avg_contrib), (6360, 2000));
    // An inactive CPU and the root group publish nothing.
    let later = now + 10 * NSEC_PER_MSEC;
    assert!(!update_tg_load_avg(&mut tg, &mut cfs, 9000, false, later));
    let mut root = TaskGroup::root();
    assert!(!update_tg_load_avg(&mut root, &mut cfs, 9000, true, later));
    assert_eq!((root.load_avg, tg.load_avg), (0, 6360));
}

#[test]
fn update_tg_load_avg_waits_for_the_first_millisecond_of_sched_clock() {
    let mut tg = TaskGroup::new(NICE_0_LOAD_SCALED);
    let mut cfs = CfsRqTg::default();
    assert!(!update_tg_load_avg(
        &mut tg,
        &mut cfs,
        500,
        true,
        NSEC_PER_MSEC - 1
    ));
    assert!(update_tg_load_avg(
        &mut tg,
        &mut cfs,
        500,
        true,
        NSEC_PER_MSEC
    ));
    assert_eq!(tg.load_avg, 500);
}

#[test]
fn clear_tg_load_avg_withdraws_the_contribution() {
    let mut tg = TaskGroup {
        load_avg: 3000,
        ..TaskGroup::new(NICE_0_LOAD_SCALED)
    };
    let mut cfs = CfsRqTg {
        tg_load_avg_contrib: 1200,
        ..CfsRqTg::default()
    };
    clear_tg_load_avg(&mut tg, &mut cfs, 77);
    assert_eq!(
        (
            tg.load_avg,
            cfs.tg_load_avg_contrib,
            cfs.last_update_tg_load_avg
        ),
        (1800, 0, 77)
    );
}

#[test]
fn update_tg_cfs_util_copies_the_group_signal() {
    let mut cfs = cfs_at(500, 600, 0);
    let mut se = SchedAvg {
        util_avg: 100,
        util_sum: 100 * 46_000,
        ..SchedAvg::default()
    };
    let gcfs = SchedAvg {
        util_avg: 300,
        ..SchedAvg::default()
    };
    update_tg_cfs_util(&mut cfs, &mut se, &gcfs);
    assert_eq!((se.util_avg, u64::from(se.util_sum)), (300, 300 * DIV0));
    // The parent gets +200 avg and new_sum - old_sum = 300 * 46718 - 100 * 46000.
    assert_eq!(cfs.avg.util_avg, 700);
    assert_eq!(
        u64::from(cfs.avg.util_sum),
        500 * DIV0 + 300 * DIV0 - 100 * 46_000
    );
    // A drop below 0 clamps at 0, then the sum is floored at avg * PELT_MIN_DIVIDER.
    let mut small = cfs_at(50, 0, 0);
    let gcfs = SchedAvg::default();
    update_tg_cfs_util(&mut small, &mut se, &gcfs);
    assert_eq!((small.avg.util_avg, small.avg.util_sum), (0, 0));
}

#[test]
fn update_tg_cfs_runnable_new_sum_is_32_bits() {
    // A group with 100 runnable tasks: runnable_avg 102400, and 102400 * 46718 =
    // 4_783_923_200 does not fit the u32 new_sum: the entity keeps 488_955_904.
    let mut cfs = cfs_at(0, 0, 0);
    let mut se = SchedAvg::default();
    let gcfs = SchedAvg {
        runnable_avg: 102_400,
        ..SchedAvg::default()
    };
    update_tg_cfs_runnable(&mut cfs, &mut se, &gcfs);
    assert_eq!(se.runnable_avg, 102_400);
    assert_eq!(se.runnable_sum, 488_955_904);
    assert_eq!(cfs.avg.runnable_avg, 102_400);
    // The parent's sum: 0 + 488_955_904, below the floor 102400 * 46718 taken in u32
    // (the same 488_955_904): kept.
    assert_eq!(cfs.avg.runnable_sum, 488_955_904);
}

#[test]
fn update_tg_cfs_load_added_runnable_sum() {
    // Parent at period start (divider 46718), load_avg 500. The group entity (weight 1024)
    // has load_sum 10000 (load_avg 1024 * 10000 / 46718 = 219) and ran 5000 units.
    let mut cfs = cfs_at(0, 0, 500);
    let mut se = SchedAvg {
        load_sum: 10_000,
        load_avg: 219,
        util_sum: 5000 << 10,
        ..SchedAvg::default()
    };
    let gcfs = SchedAvg::default();
    let mut gtg = CfsRqTg {
        propagate: 1,
        prop_runnable_sum: 20_000,
        ..CfsRqTg::default()
    };
    update_tg_cfs_load(&mut cfs, &mut se, 1024, &gcfs, 1024, &mut gtg);
    // runnable = min(20000 + 10000, 46718) = 30000; load_avg = 1024 * 30000 / 46718 = 657.
    assert_eq!((se.load_sum, se.load_avg), (30_000, 657));
    assert_eq!(gtg.prop_runnable_sum, 0, "consumed");
    assert_eq!(gtg.propagate, 1, "update_tg_cfs_load() leaves the flag");
    assert_eq!(cfs.avg.load_avg, 500 + 438);
    assert_eq!(cfs.avg.load_sum, 500 * DIV0 + 1024 * 20_000);

    // Capped at the divider: 40000 + 30000 -> 46718, load_avg exactly 1024.
    gtg.prop_runnable_sum = 40_000;
    update_tg_cfs_load(&mut cfs, &mut se, 1024, &gcfs, 1024, &mut gtg);
    assert_eq!((se.load_sum, se.load_avg), (DIV0, 1024));
}

#[test]
fn update_tg_cfs_load_removed_runnable_sum() {
    let se0 = SchedAvg {
        load_sum: 30_000,
        load_avg: 657,
        util_sum: 5000 << 10,
        ..SchedAvg::default()
    };
    // A removal: the group's unweighted sum is estimated as load_sum / weight =
    // 2048 * 20000 / 2048 = 20000, below the entity's 30000: 1024 * 20000 / 46718 = 438.
    let mut cfs = cfs_at(0, 0, 1000);
    let mut se = se0;
    let gcfs = SchedAvg {
        load_sum: 2048 * 20_000,
        ..SchedAvg::default()
    };
    let mut gtg = CfsRqTg {
        prop_runnable_sum: -5000,
        ..CfsRqTg::default()
    };
    update_tg_cfs_load(&mut cfs, &mut se, 1024, &gcfs, 2048, &mut gtg);
    assert_eq!((se.load_sum, se.load_avg), (20_000, 438));
    assert_eq!(cfs.avg.load_avg, 1000 - 219);
    // 1000 * 46718 - 1024 * 10000 = 36_478_000 is below the floor 781 * 46718: raised.
    assert_eq!(cfs.avg.load_sum, 781 * DIV0);

    // An emptied group (load.weight 0): the estimate is 0, raised to the running sum
    // 5000: 1024 * 5000 / 46718 = 109.
    let mut cfs = cfs_at(0, 0, 1000);
    let mut se = se0;
    gtg.prop_runnable_sum = -5000;
    update_tg_cfs_load(&mut cfs, &mut se, 1024, &gcfs, 0, &mut gtg);
    assert_eq!((se.load_sum, se.load_avg), (5000, 109));

    // No change of load_avg: nothing is written, not even load_sum, but the pending sum
    // is gone. 1024 * 30001 / 46718 is still 657.
    let mut cfs = cfs_at(0, 0, 1000);
    let before = cfs;
    let mut se = se0;
    gtg.prop_runnable_sum = 1;
    update_tg_cfs_load(&mut cfs, &mut se, 1024, &gcfs, 2048, &mut gtg);
    assert_eq!((se, cfs, gtg.prop_runnable_sum), (se0, before, 0));
}

#[test]
fn propagation_moves_up_one_level_per_update() {
    // The group cfs_rq has a pending +20000; the group entity sits in the parent.
    let mut parent = cfs_at(200, 200, 500);
    let mut parent_tg = CfsRqTg::default();
    let mut se = SchedAvg {
        util_avg: 200,
        util_sum: (200 * DIV0) as u32,
        runnable_avg: 200,
        runnable_sum: 200 * DIV0,
        load_sum: 10_000,
        load_avg: 219,
        ..SchedAvg::default()
    };
    let gavg = SchedAvg {
        util_avg: 250,
        runnable_avg: 260,
        ..SchedAvg::default()
    };
    let mut gtg = CfsRqTg {
        propagate: 1,
        prop_runnable_sum: 20_000,
        ..CfsRqTg::default()
    };
    let g = GroupRq {
        avg: &gavg,
        load_weight: 1024,
        tg: &mut gtg,
    };
    assert!(propagate_entity_load_avg(
        &mut parent,
        &mut parent_tg,
        &mut se,
        1024,
        g
    ));
    assert_eq!((gtg.propagate, gtg.prop_runnable_sum), (0, 0));
    assert_eq!(
        (parent_tg.propagate, parent_tg.prop_runnable_sum),
        (1, 20_000)
    );
    assert_eq!((se.util_avg, se.runnable_avg), (250, 260));
    assert_eq!((parent.avg.util_avg, parent.avg.runnable_avg), (250, 260));
    // runnable = max(min(30000, 46718), util_sum >> 10 = 250 * 46718 / 1024 = 11405).
    assert_eq!((se.load_sum, se.load_avg), (30_000, 657));

    // Nothing pending: nothing done, and skip_blocked_update() agrees once it is idle.
    let g = GroupRq {
        avg: &gavg,
        load_weight: 1024,
        tg: &mut gtg,
    };
    let se_before = se;
    assert!(!propagate_entity_load_avg(
        &mut parent,
        &mut parent_tg,
        &mut se,
        1024,
        g
    ));
    assert_eq!(se, se_before);
    assert!(!skip_blocked_update(&se, &gtg), "load left to decay");
    let idle = SchedAvg::default();
    assert!(skip_blocked_update(&idle, &gtg));
    assert!(
        !skip_blocked_update(&idle, &parent_tg),
        "a pending propagation"
    );
}

#[test]
fn removal_propagates_minus_ceil_of_the_runnable_sum() {
    // removed runnable_avg 3 at divider 46718: -(140154) >> 10 = -137 (floor of -136.87).
    let mut cfs = cfs_at(100, 100, 100);
    cfs.removed = Removed {
        nr: 1,
        load_avg: 3,
        util_avg: 3,
        runnable_avg: 3,
    };
    let mut tg = CfsRqTg::default();
    let now = cfs.avg.last_update_time;
    let mut plain = cfs;
    assert!(update_cfs_rq_load_avg_tg(
        &mut cfs,
        &mut tg,
        now,
        &CfsRqLoad::default()
    ));
    assert_eq!((tg.propagate, tg.prop_runnable_sum), (1, -137));
    // The signal itself is what the task-only update computes.
    plain.update_cfs_rq_load_avg(now, &CfsRqLoad::default());
    assert_eq!(cfs, plain);
    // No removal: no propagation.
    let mut tg = CfsRqTg::default();
    update_cfs_rq_load_avg_tg(&mut cfs, &mut tg, now + PERIOD_NS, &CfsRqLoad::default());
    assert_eq!(tg, CfsRqTg::default());
}

#[test]
fn attach_and_detach_queue_the_entity_load_sum() {
    let mut cfs = cfs_at(0, 0, 0);
    let mut tg = CfsRqTg::default();
    let mut se = SchedAvg {
        util_avg: 100,
        runnable_avg: 100,
        load_avg: 512,
        ..SchedAvg::default()
    };
    attach_entity_load_avg_tg(&mut cfs, &mut tg, &mut se, 1024);
    // load_sum = 512 * 46718 / 1024 = 23359
    assert_eq!(se.load_sum, 23_359);
    assert_eq!((tg.propagate, tg.prop_runnable_sum), (1, 23_359));
    detach_entity_load_avg_tg(&mut cfs, &mut tg, &se, 1024);
    assert_eq!(tg.prop_runnable_sum, 0);
    assert_eq!(
        tg.propagate, 1,
        "the flag stays until the group entity consumes it"
    );
}

#[test]
fn update_load_avg_tg_reports_propagation_as_decayed() {
    // Same instant, nothing to decay: only the pending propagation makes it "decayed".
    let mut parent = cfs_at(0, 0, 0);
    let mut parent_tg = CfsRqTg::default();
    let now = parent.avg.last_update_time;
    let mut se = SchedAvg {
        last_update_time: now,
        ..SchedAvg::default()
    };
    let gavg = SchedAvg::default();
    let mut gtg = CfsRqTg {
        propagate: 1,
        prop_runnable_sum: 5000,
        ..CfsRqTg::default()
    };
    let se_load = SeLoad {
        weight: 1024,
        on_rq: true,
        runnable: 1,
        curr: false,
    };
    let cfs_load = CfsRqLoad {
        load_weight: 1024,
        h_nr_running: 1,
        curr: false,
    };
    let out = update_load_avg_tg(
        &mut parent,
        &mut parent_tg,
        &mut se,
        now,
        &se_load,
        &cfs_load,
        UpdateFlags::UPDATE_TG,
        true,
        Some(GroupRq {
            avg: &gavg,
            load_weight: 1024,
            tg: &mut gtg,
        }),
    );
    assert!(out.decayed && out.update_tg_load_avg && !out.attached);
    // 1024 * 5000 / 46718 = 109
    assert_eq!(
        (se.load_sum, se.load_avg, parent.avg.load_avg),
        (5000, 109, 109)
    );
    assert_eq!(parent_tg.prop_runnable_sum, 5000);
}

#[test]
fn cfs_rq_is_decayed_rules() {
    let zero = SchedAvg::default();
    assert!(cfs_rq_is_decayed(0, &zero, false));
    assert!(!cfs_rq_is_decayed(2, &zero, false), "something queued");
    assert!(
        !cfs_rq_is_decayed(0, &zero, true),
        "a child still on the list"
    );
    for s in [
        SchedAvg {
            load_sum: 1,
            ..zero
        },
        SchedAvg {
            util_sum: 1,
            ..zero
        },
        SchedAvg {
            runnable_sum: 1,
            ..zero
        },
    ] {
        assert!(!cfs_rq_is_decayed(0, &s, false), "{s:?}");
    }
    // An average left without its sum (the kernel would warn) does not keep it.
    let stale = SchedAvg {
        load_avg: 4,
        ..zero
    };
    assert!(cfs_rq_is_decayed(0, &stale, false));
}

#[test]
fn h_load_walks_down_from_the_root_once_per_jiffy() {
    // root (load 2000) <- A's entity (1000); A's cfs_rq (3000) <- B's entity (1500);
    // B's cfs_rq (600) <- the task (300).
    let (mut root, mut a, mut b) = (CfsRqTg::default(), CfsRqTg::default(), CfsRqTg::default());
    let jiffy = 5;
    {
        let mut chain = [
            HLoadLevel {
                load_avg: 600,
                se_load_avg: 1500,
                tg: &mut b,
            },
            HLoadLevel {
                load_avg: 3000,
                se_load_avg: 1000,
                tg: &mut a,
            },
            HLoadLevel {
                load_avg: 2000,
                se_load_avg: 0,
                tg: &mut root,
            },
        ];
        // 2000 * 1000 / 2001 = 999; 999 * 1500 / 3001 = 499; 300 * 499 / 601 = 249.
        assert_eq!(task_h_load(300, &mut chain, jiffy), 249);
    }
    assert_eq!((root.h_load, a.h_load, b.h_load), (2000, 999, 499));
    assert_eq!(
        (
            root.last_h_load_update,
            a.last_h_load_update,
            b.last_h_load_update
        ),
        (jiffy, jiffy, jiffy)
    );

    // Same jiffy, new loads: h_load is not recomputed.
    let mut chain = [
        HLoadLevel {
            load_avg: 100,
            se_load_avg: 100,
            tg: &mut b,
        },
        HLoadLevel {
            load_avg: 100,
            se_load_avg: 100,
            tg: &mut a,
        },
        HLoadLevel {
            load_avg: 100,
            se_load_avg: 0,
            tg: &mut root,
        },
    ];
    assert_eq!(task_h_load(300, &mut chain, jiffy), 300 * 499 / 101);

    // Next jiffy, A already refreshed (by another task's walk): the walk starts at A's
    // stale-but-current h_load 999 and leaves the root alone.
    a.last_h_load_update = jiffy + 1;
    root.h_load = 7;
    let mut chain = [
        HLoadLevel {
            load_avg: 600,
            se_load_avg: 1500,
            tg: &mut b,
        },
        HLoadLevel {
            load_avg: 3000,
            se_load_avg: 1000,
            tg: &mut a,
        },
        HLoadLevel {
            load_avg: 2000,
            se_load_avg: 0,
            tg: &mut root,
        },
    ];
    update_cfs_rq_h_load(&mut chain, jiffy + 1);
    assert_eq!((root.h_load, root.last_h_load_update), (7, jiffy));
    assert_eq!((b.h_load, b.last_h_load_update), (499, jiffy + 1));

    // A task in the root cfs_rq: h_load is the root's load_avg, and task_h_load scales by
    // load_avg / (load_avg + 1).
    let mut r = CfsRqTg::default();
    let mut chain = [HLoadLevel {
        load_avg: 2000,
        se_load_avg: 0,
        tg: &mut r,
    }];
    assert_eq!(task_h_load(300, &mut chain, 9), 300 * 2000 / 2001);
}
