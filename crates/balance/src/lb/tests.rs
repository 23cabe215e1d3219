//! Scenario tests of one load_balance() pass: each builds a machine, puts always-running
//! tasks on runqueues, lets PELT converge by ticking (no balancing), calls the balancer and
//! checks the decision against the rule quoted in the test.

use crate::params::{LbFeat, default_features};
use lbsim_rq::{Features, PrevAction, TaskId};
use lbsim_topology::{CpuId, SdParams};

use super::harness::World;
use super::*;
use crate::rebalance::rebalance_domains;

/// One load_balance() call of `cpu` at domain `name` with idle type `idle`.
fn balance(w: &mut World, cpu: u32, name: &str, idle: CpuIdleType) -> (u32, Pass, bool) {
    let level = w.level(cpu, name);
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    let mut cont = true;
    let moved = load_balance(&mut ctx, st, CpuId(cpu), level, idle, &mut cont, &mut pass);
    w.check();
    (moved, pass, cont)
}

/// find_busiest_group() for `cpu` at domain `name`, without moving anything.
fn fbg(w: &mut World, cpu: u32, name: &str, idle: CpuIdleType) -> (FbgResult, LbEnv) {
    let level = w.level(cpu, name);
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut env = LbEnv::new(ctx.topo, CpuId(cpu), level, idle);
    let mut pass = Pass::new(now);
    let r = find_busiest_group(&mut ctx, st, &mut env, &mut pass);
    (r, env)
}

fn cluster_counts(w: &World) -> (u32, u32) {
    let c = w.counts();
    (c[0..4].iter().sum(), c[4..8].iter().sum())
}

/// Rule (find_busiest_group, calculate_imbalance, detach_tasks): two always-running tasks
/// on CPU 0 of a 2-CPU machine; CPU 1 is idle. At CPU 1's first idle balance the busiest
/// group is CPU 0 (overloaded: 2 tasks on 1 CPU), the local group has spare capacity, the
/// MC domain shares the LLC so the imbalance is in tasks: `sibling_imbalance = 2 - 0`,
/// halved = 1 task; find_busiest_queue picks CPU 0 and detach_tasks moves its waiting task.
#[test]
fn two_tasks_one_moves_at_first_idle_balance() {
    let mut w = World::new("cores=2");
    let a = w.spawn(0, None);
    let b = w.spawn(0, None);
    w.run_ticks(50);
    // The waiting task (the tail of cfs_tasks) must be cache cold, or task_hot() refuses it
    // (nr_balance_failed 0 <= cache_nice_tries 1): wait for a tick where it is.
    while {
        let r = &w.rqs[0];
        let tail = r.cfs.cfs_tasks().next_back().unwrap();
        r.rq_clock_task() - w.tasks[tail].se.exec_start < w.tunables.migration_cost_ns
    } {
        w.run_ticks(1);
    }
    let (r, env) = fbg(&mut w, 1, "MC", CpuIdleType::Idle);
    assert_eq!(r.sds.local_stat.group_type, GroupType::HasSpare);
    assert_eq!(r.sds.busiest_stat.group_type, GroupType::Overloaded);
    assert_eq!(
        (env.migration_type, env.imbalance),
        (MigrationType::Task, 1)
    );

    let (moved, pass, _) = balance(&mut w, 1, "MC", CpuIdleType::Idle);
    assert_eq!(moved, 1);
    assert_eq!(w.counts(), vec![1, 1]);
    assert_eq!(pass.migrations.len(), 1);
    let m = pass.migrations[0];
    assert_eq!((m.src, m.dst), (CpuId(0), CpuId(1)));
    assert!(m.task == a || m.task == b);
    assert_ne!(
        Some(m.task),
        w.rqs[0].curr,
        "the running task is never detached"
    );
    let ss = w.st.schedstat.sd(CpuId(1), 0).lb(CpuIdleType::Idle);
    assert_eq!(
        (
            ss.lb_count,
            ss.lb_gained,
            ss.lb_imbalance[MigrationType::Task.index()]
        ),
        (1, 1, 1)
    );
}

/// Builds hikey with `per_cpu` always-running tasks per CPU and PELT converged (400 ms).
fn hikey(per_cpu: [u32; 8], params: SdParams, features: Features) -> World {
    let mut w = World::with("hikey", params, features);
    for (cpu, &n) in per_cpu.iter().enumerate() {
        for _ in 0..n {
            w.spawn(cpu as u32, None);
        }
    }
    w.run_ticks(400);
    w
}

/// Drives periodic balancing the way the tick does (sched_balance_trigger: softirq when
/// `jiffies >= rq->next_balance`, then rebalance_domains as busy or idle) for `ticks` ticks;
/// returns the number of PKG-level migrations between the clusters.
fn run_periodic(w: &mut World, ticks: u64) -> u32 {
    let mut cross = 0;
    for _ in 0..ticks {
        w.run_ticks(1);
        for c in 0..w.rqs.len() {
            if w.jiffies() < w.rqs[c].next_balance() {
                continue;
            }
            let now = w.now;
            let idle = if w.rqs[c].idle_cpu() {
                CpuIdleType::Idle
            } else {
                CpuIdleType::NotIdle
            };
            let (mut ctx, st) = w.split();
            let mut pass = Pass::new(now);
            rebalance_domains(&mut ctx, st, CpuId(c as u32), idle, &mut pass);
            cross += pass
                .migrations
                .iter()
                .filter(|m| (m.src.0 < 4) != (m.dst.0 < 4))
                .count() as u32;
            w.resched(c as u32);
            for m in &pass.migrations {
                w.resched(m.src.0);
                w.resched(m.dst.0);
            }
        }
    }
    w.check();
    cross
}

/// Rule (find_busiest_group, both groups overloaded): `100 * busiest_avg <= imbalance_pct *
/// local_avg` means balanced. 11 always-running tasks on hikey split 6/5 between the
/// clusters give avg_loads in the ratio 6:5 = 1.2. With imbalance_pct 125 (before v5.10)
/// the PKG level never moves a task between clusters; with 117 (v5.10+) it does.
#[test]
fn hikey_eleven_tasks_imbalance_pct_decides() {
    let split = [2, 2, 1, 1, 2, 1, 1, 1];
    let mut w = hikey(
        split,
        SdParams {
            imbalance_pct: 125,
            busy_factor: 16,
        },
        default_features(),
    );
    let (r, _) = fbg(&mut w, 4, "PKG", CpuIdleType::NotIdle);
    let (b, l) = (r.sds.busiest_stat, r.sds.local_stat);
    assert_eq!(
        (b.group_type, l.group_type),
        (GroupType::Overloaded, GroupType::Overloaded)
    );
    // The ratio is between 1.17 and 1.25, so the two thresholds disagree.
    assert!(
        100 * b.avg_load <= 125 * l.avg_load && 100 * b.avg_load > 117 * l.avg_load,
        "{b:?} {l:?}"
    );
    assert_eq!(r.busiest, None);
    assert_eq!(
        run_periodic(&mut w, 3000),
        0,
        "imbalance_pct 125: never corrected"
    );
    assert_eq!(cluster_counts(&w), (6, 5));

    let mut w = hikey(split, SdParams::default(), default_features());
    let (r, env) = fbg(&mut w, 4, "PKG", CpuIdleType::NotIdle);
    assert!(r.busiest.is_some());
    assert_eq!(env.migration_type, MigrationType::Load);
    assert!(
        run_periodic(&mut w, 3000) > 0,
        "imbalance_pct 117: a task moves between the clusters"
    );
}

/// Rule (detach_tasks, migrate_load): a task is too big when `(load >> nr_balance_failed) >
/// imbalance` with LB_RELAX_BY_FAILED, when `load / 2 > imbalance` (and the domain has not
/// failed more than cache_nice_tries times) without it. 9 tasks on
/// hikey split 5/4: the local cluster is only fully busy, the busiest overloaded, and the
/// load imbalance (about half a task) lies between load/2 and load: the old rule moves the
/// waiting task at once, the new one only after a failed balance, and further failures
/// relax it more.
#[test]
fn nine_tasks_size_test_and_relax_by_failed() {
    let split = [2, 1, 1, 1, 1, 1, 1, 1];
    for relax in [true, false] {
        let f = default_features().with(LbFeat::LbRelaxByFailed, relax);
        let mut w = hikey(split, SdParams::default(), f);
        // Cache hotness is not what this test is about: migration_cost 0 makes every task cold.
        w.tunables.migration_cost_ns = 0;
        let pkg = w.level(4, "PKG");
        let (r, env) = fbg(&mut w, 4, "PKG", CpuIdleType::NotIdle);
        assert_eq!(r.sds.local_stat.group_type, GroupType::FullyBusy);
        assert_eq!(r.sds.busiest_stat.group_type, GroupType::Overloaded);
        assert_eq!(env.migration_type, MigrationType::Load);
        let tail = w.rqs[0].cfs.cfs_tasks().next_back().unwrap();
        let load = w.tasks[tail].se.avg.load_avg;
        assert!(
            (load / 2) as i64 <= env.imbalance && load as i64 > env.imbalance,
            "load {load} imb {}",
            env.imbalance
        );

        let (moved, _, _) = balance(&mut w, 4, "PKG", CpuIdleType::NotIdle);
        if relax {
            assert_eq!(moved, 0, "failed 0: load > imbalance");
            assert_eq!(w.st.sd(CpuId(4), pkg).nr_balance_failed, 1);
            let (moved, _, _) = balance(&mut w, 4, "PKG", CpuIdleType::NotIdle);
            assert_eq!(moved, 1, "failed 1: load >> 1 <= imbalance");
            assert_eq!(w.st.sd(CpuId(4), pkg).nr_balance_failed, 0);
        } else {
            assert_eq!(moved, 1, "old rule: load / 2 <= imbalance");
        }
        assert_eq!(cluster_counts(&w), (4, 5));
    }
    // Rule (v5.10-v6.12): shr_bound(load, nr_balance_failed) > imbalance: each failure
    // halves the task's effective load.
    assert!(load_too_big(true, 1024, 1, 1, 300));
    assert!(!load_too_big(true, 1024, 2, 1, 300));
    assert!(
        !load_too_big(true, 1024, 200, 1, 0),
        "shr_bound caps the shift"
    );
    // Rule (v5.5-v5.9): load / 2 > imbalance && nr_balance_failed <= cache_nice_tries: the
    // size test holds until the domain has failed more than cache_nice_tries times, then
    // any task may go.
    assert!(load_too_big(false, 1024, 0, 1, 300));
    assert!(load_too_big(false, 1024, 1, 1, 300));
    assert!(
        !load_too_big(false, 1024, 2, 1, 300),
        "failed 2 > cache_nice_tries 1"
    );
    assert!(!load_too_big(false, 600, 0, 1, 300), "600 / 2 <= 300");
    // migrate_util: before the switch, `util > imbalance`; with it, relaxed like load.
    assert!(util_too_big(false, 600, 3, 500));
    assert!(!util_too_big(false, 500, 0, 500));
    assert!(util_too_big(true, 600, 0, 500));
    assert!(!util_too_big(true, 600, 1, 500));
}

/// Seed 000's situation on hikey: one long-running task on each of CPUs 0, 2, 3 and 4
/// (300 ticks), then `young` new tasks stacked on CPU 1 for `ticks`; cluster 1 (CPUs 4-7)
/// is mostly idle. Tasks are never cache hot (`migration_cost_ns` 0).
fn stacked_cluster(features: Features, young: u32, ticks: u64) -> World {
    let mut w = World::with("hikey", SdParams::default(), features);
    w.tunables.migration_cost_ns = 0;
    for cpu in [0, 2, 3, 4] {
        w.spawn(cpu, None);
    }
    w.run_ticks(300);
    for _ in 0..young {
        w.spawn(1, None);
    }
    w.run_ticks(ticks);
    w
}

/// Rule (find_busiest_queue, migrate_util): with LB_UTIL_SKIP_SINGLE a runqueue with at most
/// one CFS task is skipped (its only task runs and cannot be detached); without it the rq
/// with the highest utilization is chosen even so, and the balance then fails.
#[test]
fn util_skip_single() {
    for skip in [true, false] {
        let f = default_features().with(LbFeat::LbUtilSkipSingle, skip);
        // Two young tasks on CPU 1: their utilization is still low.
        let mut w = stacked_cluster(f, 2, 2);
        let (r, mut env) = fbg(&mut w, 5, "PKG", CpuIdleType::Idle);
        assert_eq!(r.sds.busiest_stat.group_type, GroupType::Overloaded);
        assert_eq!(r.sds.local_stat.group_type, GroupType::HasSpare);
        assert_eq!(env.migration_type, MigrationType::Util);
        let (ctx, _) = w.split();
        let mut pass = Pass::new(ctx.now_ns);
        let busiest =
            find_busiest_queue(&ctx, &env, ctx.topo.group(r.busiest.unwrap()), &mut pass).unwrap();
        let nr = ctx.rqs[busiest.index()].cfs.h_nr_running;
        if skip {
            assert_eq!(busiest, CpuId(1));
            assert!(nr >= 2);
        } else {
            assert_eq!(
                busiest,
                CpuId(0),
                "the highest utilization, one running task"
            );
            assert_eq!(nr, 1);
            env.src_cpu = busiest;
        }
        let (moved, _, _) = balance(&mut w, 5, "PKG", CpuIdleType::Idle);
        assert_eq!(moved, u32::from(skip));
    }
}

/// Rule (find_busiest_queue, migrate_util; 7d0583cf9ec7 "runnable boosting", v6.5): the
/// source is the CPU with the highest `cpu_util_cfs_boost()`, max(util_avg, runnable_avg)
/// capped at capacity, so three young tasks stacked on CPU 1 (util below CPU 0's, runnable
/// far above) outweigh CPU 0's single long-running task; with `NO_LB_UTIL_RUNNABLE_BOOST`
/// (v5.7-v6.4, `cpu_util()`) CPU 0 does.
#[test]
fn util_runnable_boost() {
    for boost in [true, false] {
        let f = default_features()
            .with(LbFeat::LbUtilSkipSingle, false)
            .with(LbFeat::LbUtilRunnableBoost, boost);
        let mut w = stacked_cluster(f, 3, 20);
        let (r, env) = fbg(&mut w, 5, "PKG", CpuIdleType::Idle);
        assert_eq!(r.sds.busiest_stat.group_type, GroupType::Overloaded);
        assert_eq!(env.migration_type, MigrationType::Util);
        let (ctx, _) = w.split();
        let (u0, u1) = (cpu_util_cfs(&ctx, CpuId(0)), cpu_util_cfs(&ctx, CpuId(1)));
        assert!(u1 < u0, "util: CPU 1 {u1} < CPU 0 {u0}");
        assert!(cpu_runnable(&ctx, CpuId(1)) > 1024);
        let mut pass = Pass::new(ctx.now_ns);
        let busiest =
            find_busiest_queue(&ctx, &env, ctx.topo.group(r.busiest.unwrap()), &mut pass).unwrap();
        assert_eq!(busiest, CpuId(if boost { 1 } else { 0 }), "boost {boost}");
    }
}

/// Rules (need_active_balance, load_balance; e9b9734b7465 "Reduce cases for active balance",
/// v5.12): an idle cluster's migrate_util balance that keeps picking CPU 0 (one running task,
/// the highest utilization) fails every time. Since v5.12 only migrate_task failures force
/// an active balance, so the failures just count up. Before (`NO_LB_REDUCE_ACTIVE_BALANCE`)
/// the fourth failure at PKG (`nr_balance_failed > cache_nice_tries + 2`, with
/// `cache_nice_tries` of one) asks the stopper to push CPU 0's task, sets `nr_balance_failed` to
/// `cache_nice_tries + 1` ("force task migration") and doubles the interval (a balance
/// that did not start the stopper resets it).
#[test]
fn reduce_active_balance() {
    for reduce in [true, false] {
        let f = default_features()
            .with(LbFeat::LbUtilSkipSingle, false)
            .with(LbFeat::LbReduceActiveBalance, reduce);
        let mut w = stacked_cluster(f, 2, 2);
        let pkg = w.level(5, "PKG");
        let min_interval = w.topo.domains(CpuId(5))[pkg].min_interval;
        let mut asked = Vec::new();
        for _ in 0..5 {
            let (moved, pass, _) = balance(&mut w, 5, "PKG", CpuIdleType::Idle);
            assert_eq!(moved, 0);
            let sd = w.st.sd(CpuId(5), pkg);
            asked.push((
                pass.stoppers.len(),
                sd.nr_balance_failed,
                sd.balance_interval,
            ));
        }
        if reduce {
            let m = min_interval;
            assert_eq!(
                asked,
                [(0, 1, m), (0, 2, m), (0, 3, m), (0, 4, m), (0, 5, m)]
            );
        } else {
            let m = min_interval;
            assert_eq!(
                asked,
                [(0, 1, m), (0, 2, m), (0, 3, m), (1, 2, 2 * m), (0, 3, m)],
                "the stopper on the fourth failure, with the interval doubled; the next \
                 failure does not ask again and resets the interval"
            );
            assert!(w.st.cpus[0].active_balance);
        }
    }
}

/// Rules (can_migrate_task, load_balance): a task whose affinity excludes the destination is
/// never detached (LBF_SOME_PINNED); when every task examined on the busiest CPU is pinned,
/// LBF_ALL_PINNED removes that CPU from `env->cpus` and load_balance redoes the search
/// without it, and then pulls from the next busiest CPU.
#[test]
fn pinned_tasks_and_all_pinned_redo() {
    let mut w = World::new("cores=4");
    w.tunables.migration_cost_ns = 0;
    let pinned: Vec<TaskId> = (0..3).map(|_| w.spawn(0, Some(&[0]))).collect();
    w.spawn(1, None);
    w.spawn(1, None);
    w.spawn(2, None);
    w.run_ticks(100);
    let (moved, pass, _) = balance(&mut w, 3, "MC", CpuIdleType::Idle);
    assert_eq!(moved, 1);
    assert_eq!(pass.work.redo_passes, 1, "one LBF_ALL_PINNED redo");
    assert_eq!(pass.migrations.len(), 1);
    assert_eq!(
        (pass.migrations[0].src, pass.migrations[0].dst),
        (CpuId(1), CpuId(3))
    );
    for p in pinned {
        assert_eq!(w.tasks[p].cpu, CpuId(0));
    }
    assert_eq!(w.counts(), vec![3, 1, 1, 1]);
}

/// Rule (load_balance out_all_pinned / out_one_pinned): when every task is pinned the pass
/// ends "all pinned": nr_balance_failed is reset and balance_interval doubles, beyond
/// max_interval up to MAX_PINNED_INTERVAL (512 ms); a balanced pass doubles it up to
/// max_interval only; a pass that moves a task resets it to min_interval.
#[test]
fn balance_interval_doubling_and_reset() {
    let mut w = World::new("cores=2");
    w.tunables.migration_cost_ns = 0;
    for _ in 0..3 {
        w.spawn(0, Some(&[0]));
    }
    w.run_ticks(50);
    let sd = w.topo.domains(CpuId(1))[0].clone();
    assert_eq!((sd.min_interval, sd.max_interval), (2, 4));
    let mut seen = vec![];
    for _ in 0..10 {
        let (moved, pass, _) = balance(&mut w, 1, "MC", CpuIdleType::Idle);
        assert_eq!(moved, 0);
        assert_eq!(pass.work.redo_passes, 0, "no other CPU to redo with");
        seen.push(w.st.sd(CpuId(1), 0).balance_interval);
    }
    assert_eq!(seen, vec![4, 8, 16, 32, 64, 128, 256, 512, 512, 512]);
    assert_eq!(w.st.sd(CpuId(1), 0).nr_balance_failed, 0);
    assert_eq!(
        w.st.schedstat
            .sd(CpuId(1), 0)
            .lb(CpuIdleType::Idle)
            .lb_balanced,
        10
    );

    // An unpinned task: the next pass moves it and resets the interval.
    w.spawn(0, None);
    w.run_ticks(20);
    let (moved, _, _) = balance(&mut w, 1, "MC", CpuIdleType::Idle);
    assert_eq!(moved, 1);
    assert_eq!(w.st.sd(CpuId(1), 0).balance_interval, sd.min_interval);

    // Balanced: doubles to max_interval and stays.
    let mut w = World::new("cores=2");
    w.spawn(0, None);
    w.spawn(1, None);
    w.run_ticks(20);
    let mut seen = vec![];
    for _ in 0..4 {
        balance(&mut w, 1, "MC", CpuIdleType::NotIdle);
        seen.push(w.st.sd(CpuId(1), 0).balance_interval);
    }
    assert_eq!(seen, vec![4, 4, 4, 4]);
}

/// Rules (load_balance, LBF_SOME_PINNED; group_classify; can_migrate_task LBF_DST_PINNED):
/// tasks allowed only on CPU 0 (cluster 0) and CPU 5 (cluster 1) cannot be spread inside
/// cluster 0; the MC balance ends all pinned with imbalance left, which sets the parent
/// group's `sgc->imbalance`. The PKG balance of idle cluster 1 (done by its first idle CPU,
/// 4) then sees cluster 0 as group_imbalanced (migrate_task, 1), finds the task cannot run
/// on CPU 4 but can on CPU 5 of its group, and retargets there (LBF_DST_PINNED).
#[test]
fn group_imbalanced_and_dst_pinned() {
    let mut w = World::new("hikey");
    w.tunables.migration_cost_ns = 0;
    let a = w.spawn(0, Some(&[0, 5]));
    let b = w.spawn(0, Some(&[0, 5]));
    w.run_ticks(50);
    let (moved, _, _) = balance(&mut w, 1, "MC", CpuIdleType::Idle);
    assert_eq!(moved, 0);
    let pkg_sgc = w.topo.local_group(&w.topo.domains(CpuId(0))[1]).sgc;
    assert!(
        w.st.sgc(pkg_sgc).imbalance,
        "child level failed on affinity: parent group imbalanced"
    );

    let (r, env) = fbg(&mut w, 4, "PKG", CpuIdleType::Idle);
    assert_eq!(r.sds.busiest_stat.group_type, GroupType::Imbalanced);
    assert_eq!(
        (env.migration_type, env.imbalance),
        (MigrationType::Task, 1)
    );
    let (moved, pass, _) = balance(&mut w, 4, "PKG", CpuIdleType::Idle);
    assert_eq!(moved, 1);
    assert_eq!(pass.work.redo_passes, 1, "one LBF_DST_PINNED retarget");
    let m = pass.migrations[0];
    assert_eq!((m.src, m.dst), (CpuId(0), CpuId(5)));
    assert!(m.task == a || m.task == b);
    // The child level now finds nothing to do (one task per CPU): a balanced pass that was
    // not all pinned clears the parent group's flag (out_balanced).
    w.resched(5);
    w.run_ticks(5);
    balance(&mut w, 1, "MC", CpuIdleType::Idle);
    assert!(!w.st.sgc(pkg_sgc).imbalance);
}

/// Rules (misfit): on an asymmetric machine (hikey960: 4 little CPUs of capacity 462, 4 big
/// of 1024) an always-running task on a little CPU does not fit (util * 1280 >= cap * 1024):
/// its rq is misfit, its cluster group_misfit_task; an idle big CPU's balance forces
/// migrate_misfit (imbalance 1). The only task runs, so detach_tasks moves nothing, and
/// need_active_balance (migrate_misfit) asks for the stopper, which pushes the task.
#[test]
fn misfit_task_is_pushed_by_the_stopper() {
    let mut w = World::new("hikey960");
    let p = w.spawn(0, None);
    w.run_ticks(200);
    assert!(w.rqs[0].misfit_task_load > 0);
    let (r, env) = fbg(&mut w, 4, "PKG", CpuIdleType::Idle);
    assert_eq!(r.sds.busiest_stat.group_type, GroupType::MisfitTask);
    assert_eq!(
        (env.migration_type, env.imbalance),
        (MigrationType::Misfit, 1)
    );
    let (moved, pass, _) = balance(&mut w, 4, "PKG", CpuIdleType::Idle);
    assert_eq!(moved, 0);
    assert_eq!(
        pass.stoppers.as_slice(),
        &[StopperRequest {
            busiest: CpuId(0),
            push_cpu: CpuId(4)
        }]
    );
    assert!(w.st.cpus[0].active_balance);

    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    active_load_balance_cpu_stop(
        &mut ctx,
        st,
        StopperRequest {
            busiest: CpuId(0),
            push_cpu: CpuId(4),
        },
        &mut pass,
    );
    assert_eq!(pass.migrations.len(), 1);
    assert_eq!(
        (pass.migrations[0].task, pass.migrations[0].dst),
        (p, CpuId(4))
    );
    assert!(!w.st.cpus[0].active_balance);
    let pkg = w.level(4, "PKG");
    let ss = w.st.schedstat.sd(CpuId(4), pkg);
    assert_eq!((ss.alb_count, ss.alb_pushed, ss.alb_failed), (1, 1, 0));
    w.resched(0);
    w.resched(4);
    w.check();
    assert_eq!(w.counts(), vec![0, 0, 0, 0, 1, 0, 0, 0]);
}

/// Rules (update_sg_lb_stats smt_balance; group_classify; calculate_imbalance): on an SMT2
/// machine a core running two tasks (one per thread), seen by a CPU of an idle core, is
/// group_smt_balance, and the imbalance is one task (migrate_task). Both tasks run, so
/// nothing can be detached; nr_balance_failed grows until imbalanced_active_balance()
/// (`> cache_nice_tries + 2`) starts the stopper.
#[test]
fn smt_balance_leads_to_active_balance() {
    let mut w = World::new("cores=2,threads=2");
    w.spawn(0, None);
    w.spawn(1, None);
    w.run_ticks(50);
    let (r, env) = fbg(&mut w, 2, "MC", CpuIdleType::Idle);
    assert_eq!(r.sds.busiest_stat.group_type, GroupType::SmtBalance);
    assert_eq!(
        (env.migration_type, env.imbalance),
        (MigrationType::Task, 1)
    );
    let mc = w.level(2, "MC");
    let tries = w.topo.domains(CpuId(2))[mc].cache_nice_tries;
    let mut stopper_at = None;
    for i in 1..=10 {
        let (moved, pass, _) = balance(&mut w, 2, "MC", CpuIdleType::Idle);
        assert_eq!(moved, 0);
        if !pass.stoppers.is_empty() {
            stopper_at = Some(i);
            break;
        }
    }
    assert_eq!(
        stopper_at,
        Some(tries + 3),
        "nr_balance_failed > cache_nice_tries + 2"
    );
}

/// Rule (group_classify precedence): overloaded, imbalanced, asym_packing, smt_balance,
/// misfit_task, fully_busy, has_spare; first match wins. asym_packing cannot come from a
/// topology (the topology crate builds no SD_ASYM_PACKING), so every type is checked here on
/// hand-made statistics too.
#[test]
fn group_classify_precedence() {
    let base = SgLbStats {
        group_capacity: 2048,
        group_weight: 2,
        ..SgLbStats::default()
    };
    let busy = SgLbStats {
        sum_nr_running: 2,
        group_util: 2000,
        group_runnable: 2000,
        ..base
    };
    let over = SgLbStats {
        sum_nr_running: 3,
        group_util: 2000,
        group_runnable: 3000,
        ..base
    };
    assert_eq!(group_classify(117, false, &base), GroupType::HasSpare);
    assert_eq!(group_classify(117, false, &busy), GroupType::FullyBusy);
    assert_eq!(group_classify(117, false, &over), GroupType::Overloaded);
    assert_eq!(group_classify(117, true, &over), GroupType::Overloaded);
    assert_eq!(group_classify(117, true, &busy), GroupType::Imbalanced);
    let all = SgLbStats {
        group_asym_packing: true,
        group_smt_balance: true,
        group_misfit_task_load: 5,
        ..busy
    };
    assert_eq!(group_classify(117, false, &all), GroupType::AsymPacking);
    assert_eq!(
        group_classify(
            117,
            false,
            &SgLbStats {
                group_asym_packing: false,
                ..all
            }
        ),
        GroupType::SmtBalance
    );
    let misfit = SgLbStats {
        group_asym_packing: false,
        group_smt_balance: false,
        ..all
    };
    assert_eq!(group_classify(117, false, &misfit), GroupType::MisfitTask);
    // has_capacity thresholds: util within imbalance_pct of capacity is still spare.
    // util 1800 of 2048: spare at imbalance_pct 110 (204800 > 198000), not at 117 (210600).
    let nearly = SgLbStats {
        sum_nr_running: 2,
        group_util: 1800,
        group_runnable: 1800,
        ..base
    };
    assert_eq!(group_classify(110, false, &nearly), GroupType::HasSpare);
    assert_eq!(group_classify(117, false, &nearly), GroupType::FullyBusy);
}

/// Rule (calculate_imbalance, asym_packing): all the group's CFS tasks are to move
/// (migrate_task, `sum_h_nr_running`). Checked on hand-made statistics (see above).
#[test]
fn calculate_imbalance_asym_packing() {
    let mut w = World::new("cores=4");
    let (ctx, _) = w.split();
    let mut env = LbEnv::new(ctx.topo, CpuId(0), 0, CpuIdleType::Idle);
    let mut sds = SdLbStats {
        busiest_stat: SgLbStats {
            group_type: GroupType::AsymPacking,
            sum_h_nr_running: 3,
            ..SgLbStats::default()
        },
        ..SdLbStats::default()
    };
    calculate_imbalance(&ctx, &mut env, &mut sds);
    assert_eq!(
        (env.migration_type, env.imbalance),
        (MigrationType::Task, 3)
    );
}

/// Rule (sibling_imbalance, v6.6+): equal core counts give the plain difference; different
/// ones a rounded per-core difference; an empty local group gets 2 from a group with more
/// than one task; a busy destination gets 0.
#[test]
fn sibling_imbalance_rule() {
    let g = |n| SgLbStats {
        sum_nr_running: n,
        ..SgLbStats::default()
    };
    assert_eq!(sibling_imbalance(true, 4, 4, &g(5), &g(3)), 2);
    assert_eq!(sibling_imbalance(true, 4, 4, &g(3), &g(5)), 0);
    assert_eq!(sibling_imbalance(false, 4, 4, &g(5), &g(0)), 0);
    // 2 cores vs 1 core: (1*4 - 2*1) = 2 -> (2*2 + 3) / 3 = 2.
    assert_eq!(sibling_imbalance(true, 2, 1, &g(4), &g(1)), 2);
    // 4 cores vs 1 core, 2 tasks on an empty local: (2 + 5)/5 = 1 -> 2.
    assert_eq!(sibling_imbalance(true, 4, 1, &g(2), &g(0)), 2);
    assert_eq!(adjust_numa_imbalance(2, 3, 4), 0);
    assert_eq!(adjust_numa_imbalance(3, 3, 4), 3);
    assert_eq!(adjust_numa_imbalance(2, 5, 4), 2);
}

/// Rule (PREFER_SIBLING_NR_DIFF, seed 004): on a 2-core SMT2 machine running 3 tasks, the
/// core running two (one per thread) and the core running one differ by one task. v6.6
/// (`sibling_imbalance() > 1`) leaves them balanced. The pre-2017 rule (the busiest group
/// has more than one task and the local group has capacity) forces a balance each time;
/// both tasks of the busy core run, so the balances fail until active balance
/// (`nr_balance_failed > cache_nice_tries + 2`) pushes one over, and then the other core
/// does the same: the lone extra task keeps moving between the cores.
#[test]
fn prefer_sibling_nr_diff() {
    for nr_diff in [true, false] {
        let f = default_features().with(LbFeat::PreferSiblingNrDiff, nr_diff);
        let mut w = World::with("cores=2,threads=2", SdParams::default(), f);
        w.spawn(0, None);
        w.spawn(1, None);
        w.spawn(2, None);
        w.run_ticks(50);
        let (r, env) = fbg(&mut w, 3, "MC", CpuIdleType::Idle);
        assert!(r.sds.prefer_sibling);
        assert_eq!(r.sds.local_stat.group_type, GroupType::HasSpare);
        if nr_diff {
            assert_eq!(r.busiest, None, "a one-task difference is balanced");
        } else {
            assert_eq!(r.sds.busiest_stat.group_type, GroupType::SmtBalance);
            assert_eq!(
                (env.migration_type, env.imbalance),
                (MigrationType::Task, 1)
            );
        }
        // Every 4 ms each idle CPU balances the MC level; stoppers run at once.
        let mut moves = 0;
        for _ in 0..100 {
            w.run_ticks(4);
            for cpu in 0..4u32 {
                if !w.rqs[cpu as usize].idle_cpu() {
                    continue;
                }
                let (_, pass, _) = balance(&mut w, cpu, "MC", CpuIdleType::Idle);
                moves += pass.migrations.len();
                for req in pass.stoppers {
                    let now = w.now;
                    let (mut ctx, st) = w.split();
                    let mut p2 = Pass::new(now);
                    active_load_balance_cpu_stop(&mut ctx, st, req, &mut p2);
                    moves += p2.migrations.len();
                }
                for c in 0..4 {
                    w.resched(c);
                }
            }
        }
        if nr_diff {
            assert_eq!(moves, 0);
        } else {
            assert!(moves >= 4, "the extra task moves back and forth: {moves}");
        }
        assert_eq!(w.counts().iter().sum::<u32>(), 3);
    }
}

/// Rule (detach_tasks, LBF_NEED_BREAK): with `sched_nr_migrate` raised to 64, loop_max is 64
/// but detach_tasks takes a breather every SCHED_NR_MIGRATE_BREAK (32) tasks: load_balance
/// attaches what it has and comes back (one redo pass) to move the rest.
#[test]
fn need_break_every_32_tasks() {
    let mut w = World::new("cores=2");
    w.tunables.migration_cost_ns = 0;
    w.tunables.nr_migrate = 64;
    for _ in 0..70 {
        w.spawn(0, None);
    }
    w.run_ticks(10);
    let (moved, pass, _) = balance(&mut w, 1, "MC", CpuIdleType::Idle);
    assert_eq!(moved, 35, "imbalance (70 - 0) >> 1");
    assert_eq!(pass.work.redo_passes, 1);
    assert_eq!(pass.work.tasks_examined, 35);
    assert_eq!(w.counts(), vec![35, 35]);
}

/// Rule (should_we_balance, periodic): only the first idle CPU of the local group's balance
/// mask balances a level (the group's first CPU if none is idle); any other CPU stops its
/// walk up the domains (`continue_balancing = 0`).
#[test]
fn should_we_balance_picks_one_cpu_per_group() {
    let mut w = World::new("hikey");
    for c in [0, 1, 4, 5, 6, 7] {
        w.spawn(c, None);
    }
    w.run_ticks(20);
    // Cluster 0: CPUs 2 and 3 idle: CPU 2 balances PKG for the cluster.
    let (_, _, cont) = balance(&mut w, 3, "PKG", CpuIdleType::Idle);
    assert!(!cont);
    let (_, _, cont) = balance(&mut w, 2, "PKG", CpuIdleType::Idle);
    assert!(cont);
    // Cluster 1: no idle CPU: its first CPU, 4, balances.
    let (_, _, cont) = balance(&mut w, 5, "PKG", CpuIdleType::NotIdle);
    assert!(!cont);
    let (_, _, cont) = balance(&mut w, 4, "PKG", CpuIdleType::NotIdle);
    assert!(cont);
}

/// Rule (should_we_balance, SMT-aware, v6.6): above the SMT level the first idle CPU on a
/// fully idle core of the local group balances; an idle CPU whose sibling is busy only if
/// no core of the group is idle (the first such CPU).
#[test]
fn should_we_balance_prefers_an_idle_core() {
    // Two LLCs of two SMT2 cores: cores {0,1} {2,3} | {4,5} {6,7}; PKG's local group of
    // CPUs 0-3 is the LLC.
    let mut w = World::new("llcs=2,cores=2,threads=2");
    assert!(w.topo.machine().smt_mask(CpuId(1)).test(CpuId(0)));
    w.spawn(0, None);
    w.run_ticks(20);
    // CPU 1 is idle but its core is busy; CPU 2 is the first CPU of an idle core.
    let (_, _, cont) = balance(&mut w, 1, "PKG", CpuIdleType::Idle);
    assert!(!cont);
    let (_, _, cont) = balance(&mut w, 2, "PKG", CpuIdleType::Idle);
    assert!(cont);
    // Both cores busy: the first idle CPU with a busy sibling (1) balances, not 3.
    w.spawn(2, None);
    w.run_ticks(5);
    let (_, _, cont) = balance(&mut w, 3, "PKG", CpuIdleType::Idle);
    assert!(!cont);
    let (_, _, cont) = balance(&mut w, 1, "PKG", CpuIdleType::Idle);
    assert!(cont);
    // At the SMT level every idle CPU counts: CPU 1 balances its core.
    let (_, _, cont) = balance(&mut w, 1, "SMT", CpuIdleType::Idle);
    assert!(cont);
}

/// What CPU `cpu`'s CPU_IDLE pass at domain `name` leaves on `spec`, with `tasks[c]`
/// always-running tasks spawned on CPU `c` and `prepare` run after their ticks: through
/// lbsim's shortcut (`idle_settled.rs`; `full` false) or the full statistics (the decision
/// record on, which the shortcut leaves to the full path). Returns whether the shortcut's
/// test settles the pass, `*continue_balancing`, and the tasks moved, it again, the charges,
/// schedstat, the domain's state, the local and parent groups' capacity state, the root
/// domain's flags, the LLC's SIS_UTIL scan budget and the CPU's capacity.
fn idle_pass(
    spec: &str,
    cpu: u32,
    name: &str,
    tasks: &[usize],
    prepare: impl Fn(&mut World),
    full: bool,
) -> (bool, bool, impl PartialEq + std::fmt::Debug) {
    let mut w = World::new(spec);
    for (c, &k) in tasks.iter().enumerate() {
        for _ in 0..k {
            w.spawn(c as u32, None);
        }
    }
    w.tunables.migration_cost_ns = 0;
    w.run_ticks(100);
    prepare(&mut w);
    w.st.checks.enabled = full;
    let level = w.level(cpu, name);
    let this = CpuId(cpu);
    let doms = w.topo.domains(this);
    let local_sgc = w.topo.local_group(&doms[level]).sgc;
    let parent_sgc = doms.get(level + 1).map(|p| w.topo.local_group(p).sgc);
    let now = w.now;
    let (mut ctx, st) = w.split();
    let settled = idle_settled::settled(&ctx, st, this, level);
    let mut pass = Pass::new(now);
    let mut cont = true;
    let moved = load_balance(
        &mut ctx,
        st,
        this,
        level,
        CpuIdleType::Idle,
        &mut cont,
        &mut pass,
    );
    let topo = ctx.topo;
    let state = (
        moved,
        cont,
        pass.work,
        st.schedstat.clone(),
        *st.sd(this, level),
        *st.sgc(local_sgc),
        parent_sgc.map(|p| *st.sgc(p)),
        st.rd,
        st.sd_llc_shared(topo, this).map(|s| s.nr_idle_scan),
        ctx.rqs[cpu as usize].cpu_capacity(),
    );
    w.check();
    (settled, cont, state)
}

/// lbsim's shortcut for CPU_IDLE passes (`idle_settled.rs`) against the full statistics
/// (fair.c v6.12, update_sd_pick_busiest(): "if (!sgs->sum_h_nr_running) return false;";
/// sched_balance_find_src_group(): "if (busiest->sum_h_nr_running == 1) goto
/// out_balanced" for a busiest group that is not overloaded at CPU_IDLE): a domain whose
/// CPUs are all idle, at any level, and an SMT or flat lowest domain whose other CPUs run
/// at most one task each, are balanced without the group statistics, and the pass leaves
/// what the full pass leaves ([`idle_pass`]): the second SMT thread's MC pass stopped by
/// should_we_balance(), the top level's `rd->overloaded`, the LLC's scan budget. A sibling
/// with two tasks, a wake-up in flight, `sgc->imbalance` on the sibling's group or a task
/// elsewhere in a larger domain take the full path, with the same result.
#[test]
fn idle_pass_settled_without_the_statistics() {
    // Two sockets of two cores of two threads: SMT (2), MC (4, the LLC), PKG (8, the top).
    const SMT: &str = "sockets=2,cores=2,threads=2";
    const FLAT: &str = "cores=4";
    let none = |_: &mut World| {};
    let pend_1 = |w: &mut World| w.pend(1, w.now);
    let imbalance_1 = |w: &mut World| {
        let sd = &w.topo.domains(CpuId(0))[0];
        let gid = w
            .topo
            .group_ids(sd)
            .find(|&g| w.topo.span(w.topo.group(g).span).test(CpuId(1)));
        let sgc = w.topo.group(gid.expect("CPU 1's group")).sgc;
        w.st.sgc_mut(sgc).imbalance = true;
    };
    let stale = |w: &mut World| {
        w.st.rd.overloaded = true;
        let topo = &w.topo;
        if let Some(s) = w.st.sd_llc_shared_mut(topo, CpuId(0)) {
            s.nr_idle_scan = 1;
        }
    };
    // (machine, CPU, domain, tasks per CPU, prepare, settled)
    type Case<'a> = (
        &'a str,
        u32,
        &'a str,
        &'a [usize],
        &'a dyn Fn(&mut World),
        bool,
    );
    let cases: [Case<'_>; 16] = [
        (SMT, 0, "SMT", &[0, 0, 0, 0, 0, 0, 0, 0], &none, true),
        (SMT, 0, "SMT", &[0, 1, 0, 0, 0, 0, 0, 0], &none, true),
        (SMT, 0, "SMT", &[0, 1, 2, 2, 0, 0, 0, 0], &none, true),
        (SMT, 0, "SMT", &[0, 2, 0, 0, 0, 0, 0, 0], &none, false),
        (SMT, 0, "SMT", &[0, 1, 0, 0, 0, 0, 0, 0], &pend_1, false),
        (
            SMT,
            0,
            "SMT",
            &[0, 1, 0, 0, 0, 0, 0, 0],
            &imbalance_1,
            false,
        ),
        (SMT, 0, "MC", &[0, 0, 0, 0, 1, 0, 0, 0], &stale, true),
        (SMT, 1, "MC", &[0, 0, 0, 0, 1, 0, 0, 0], &stale, true),
        (SMT, 0, "MC", &[0, 1, 0, 0, 0, 0, 0, 0], &stale, false),
        (SMT, 0, "MC", &[0, 0, 0, 1, 0, 0, 0, 0], &none, false),
        (SMT, 0, "PKG", &[0, 0, 0, 0, 0, 0, 0, 0], &stale, true),
        (SMT, 0, "PKG", &[0, 0, 0, 0, 0, 0, 0, 1], &stale, false),
        (FLAT, 0, "MC", &[0, 1, 1, 1], &stale, true),
        (FLAT, 0, "MC", &[0, 1, 2, 1], &stale, false),
        (FLAT, 0, "MC", &[0, 0, 0, 0], &stale, true),
        (FLAT, 2, "MC", &[1, 0, 0, 1], &stale, true),
    ];
    let mut stopped = false;
    for (spec, cpu, name, tasks, prepare, expected) in cases {
        let case = format!("{spec}: CPU {cpu} at {name}, tasks {tasks:?}");
        let (settled, cont, shortcut) = idle_pass(spec, cpu, name, tasks, prepare, false);
        let (_, _, full) = idle_pass(spec, cpu, name, tasks, prepare, true);
        assert_eq!(settled, expected, "{case}");
        assert_eq!(shortcut, full, "{case}");
        stopped |= settled && !cont;
    }
    assert!(
        stopped,
        "no settled pass was stopped by should_we_balance()"
    );
}

/// find_busiest_group() at every level of `cpu`'s domains and every idle type on
/// `sockets=2,cores=4,threads=2` with `tasks` (CPU, count) spawned, with the decision
/// record on (`full`: every group's statistics computed) or off (groups other than the
/// local one without a CFS task counted from their sums, `group_stats.rs`): per pass, the
/// result, `env->imbalance`, the charges, the root domain's flags and the LLC's scan budget.
fn fbg_all_levels(cpu: u32, tasks: &[(u32, usize)], full: bool) -> Vec<String> {
    let mut w = World::new("sockets=2,cores=4,threads=2");
    for &(c, k) in tasks {
        for _ in 0..k {
            w.spawn(c, None);
        }
    }
    w.run_ticks(50);
    w.st.checks.enabled = full;
    let mut out = Vec::new();
    let levels = w.topo.domains(CpuId(cpu)).len();
    for level in 0..levels {
        for idle in [
            CpuIdleType::NotIdle,
            CpuIdleType::Idle,
            CpuIdleType::NewlyIdle,
        ] {
            let now = w.now;
            let (mut ctx, st) = w.split();
            let mut env = LbEnv::new(ctx.topo, CpuId(cpu), level, idle);
            let mut pass = Pass::new(now);
            let r = find_busiest_group(&mut ctx, st, &mut env, &mut pass);
            let scan = st
                .sd_llc_shared(ctx.topo, CpuId(cpu))
                .map(|s| s.nr_idle_scan);
            out.push(format!(
                "level {level} {idle:?}: {r:?} {} {:?} {:?} {scan:?}",
                env.imbalance, pass.work, st.rd
            ));
        }
    }
    out
}

/// update_sd_lb_stats() counts a group other than the local one without a CFS task from its
/// sums (fair.c v6.12, update_sd_pick_busiest(): "if (!sgs->sum_h_nr_running) return
/// false;"): every pass of every level and idle type finds what the full statistics find,
/// with the same totals, charges and writes ([`fbg_all_levels`]). The machine has such
/// groups at every level above SMT (idle SMT pairs, an idle package) beside busy and
/// overloaded ones, so that passes both balance and find a busiest group.
#[test]
fn groups_without_tasks_counted_from_their_sums() {
    let tasks: &[(u32, usize)] = &[(2, 3), (5, 1), (9, 2)];
    let mut found_busiest = false;
    for cpu in [0, 1, 7, 8] {
        let shortcut = fbg_all_levels(cpu, tasks, false);
        let full = fbg_all_levels(cpu, tasks, true);
        assert_eq!(shortcut, full, "CPU {cpu}");
        found_busiest |= shortcut.iter().any(|l| l.contains("busiest: Some"));
    }
    assert!(found_busiest, "no pass found a busiest group");
}

mod props {
    //! Property tests over random small machines and runqueues.

    use crate::params::default_features;
    use lbsim_topology::{CpuId, SdParams};
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    use super::super::harness::World;
    use super::super::*;

    const SPECS: [&str; 6] = [
        "cores=2",
        "cores=4",
        "cores=2,threads=2",
        "llcs=2,cores=2",
        "hikey",
        "hikey960",
    ];

    #[derive(Clone, Debug)]
    struct Case {
        spec: usize,
        tasks: Vec<(u32, u32)>,
        ticks: u64,
        cpu: u32,
        level: usize,
        idle: usize,
        skip_single: bool,
    }

    fn case() -> impl Strategy<Value = Case> {
        (
            0..SPECS.len(),
            prop::collection::vec((0u32..8, 0u32..256), 0..14),
            0u64..80,
            0u32..8,
            0usize..3,
            0usize..3,
            any::<bool>(),
        )
            .prop_map(|(spec, tasks, ticks, cpu, level, idle, skip_single)| Case {
                spec,
                tasks,
                ticks,
                cpu,
                level,
                idle,
                skip_single,
            })
    }

    /// The world of a case: tasks on random CPUs with random affinity (always including the
    /// CPU they start on), random ticks.
    fn world(c: &Case) -> Option<(World, CpuId, usize, CpuIdleType)> {
        let f = default_features().with(LbFeat::LbUtilSkipSingle, c.skip_single);
        let mut w = World::with(SPECS[c.spec], SdParams::default(), f);
        let n = w.topo.nr_cpus() as u32;
        for &(cpu, mask) in &c.tasks {
            let cpu = cpu % n;
            let allowed: Vec<u32> = (0..n)
                .filter(|&x| x == cpu || mask & (1 << x) != 0)
                .collect();
            w.spawn(cpu, Some(&allowed));
        }
        w.run_ticks(c.ticks);
        let cpu = CpuId(c.cpu % n);
        let nlev = w.topo.domains(cpu).len();
        if nlev == 0 {
            return None;
        }
        let idle = CpuIdleType::ALL[c.idle];
        Some((w, cpu, c.level % nlev, idle))
    }

    proptest! {
        /// Invariant: a migrate_util pass never picks a source with nr_running <= 1 when
        /// LB_UTIL_SKIP_SINGLE is on (checked for every group of the domain, whatever the
        /// group statistics said).
        #[test]
        fn util_pass_never_picks_a_single_task_rq(c in case()) {
            let Some((mut w, cpu, level, idle)) = world(&c) else { return Ok(()) };
            let (ctx, _) = w.split();
            let mut env = LbEnv::new(ctx.topo, cpu, level, idle);
            env.migration_type = MigrationType::Util;
            env.imbalance = 1024;
            let mut pass = Pass::new(ctx.now_ns);
            for g in ctx.topo.groups(env.sd(ctx.topo)) {
                if let Some(b) = find_busiest_queue(&ctx, &env, g, &mut pass)
                    && c.skip_single
                {
                    prop_assert!(ctx.rqs[b.index()].cfs.h_nr_running >= 2);
                }
            }
        }

        /// Invariants: one detach_tasks() call examines at most `loop_max` tasks and never
        /// empties the source for an idle destination; no migration of a whole
        /// load_balance() violates affinity.
        #[test]
        fn detach_and_affinity_invariants(c in case()) {
            let Some((mut w, cpu, level, idle)) = world(&c) else { return Ok(()) };
            let now = w.now;
            {
                let (mut ctx, st) = w.split();
                let mut env = LbEnv::new(ctx.topo, cpu, level, idle);
                let mut pass = Pass::new(now);
                if should_we_balance(&ctx, &env, &mut pass)
                    && let Some(g) = find_busiest_group(&mut ctx, st, &mut env, &mut pass).busiest
                    && let Some(src) = find_busiest_queue(&ctx, &env, ctx.topo.group(g), &mut pass)
                {
                    env.src_cpu = src;
                    env.flags |= lbf::ALL_PINNED;
                    let before = ctx.rqs[src.index()].nr_running;
                    env.loop_max = ctx.tunables.nr_migrate.min(before);
                    let examined0 = pass.work.tasks_examined;
                    let n = detach_tasks(&mut ctx, st, &mut env, &mut pass);
                    prop_assert!(pass.work.tasks_examined - examined0 <= env.loop_max);
                    if idle.is_idle() && before >= 1 {
                        prop_assert!(ctx.rqs[src.index()].nr_running >= 1);
                    }
                    for &p in &env.tasks {
                        prop_assert!(ctx.tasks[p].cpus_mask.test(env.dst_cpu));
                    }
                    prop_assert_eq!(n as usize, env.tasks.len());
                    attach_tasks(&mut ctx, &mut env, &mut pass);
                }
            }
            w.check();
            let mut pass = Pass::new(w.now);
            let (mut ctx, st) = w.split();
            let mut cont = true;
            load_balance(&mut ctx, st, cpu, level, idle, &mut cont, &mut pass);
            for m in &pass.migrations {
                prop_assert!(ctx.tasks[m.task].cpus_mask.test(m.dst), "{m:?}");
                prop_assert_eq!(ctx.tasks[m.task].cpu, m.dst);
            }
            w.check();
        }
    }

    /// The properties above are not vacuous: over a fixed sample of cases, some
    /// load_balance() passes do move tasks, and some migrate_util searches do find a source.
    #[test]
    fn sometimes_something_moves() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut moved = 0;
        let mut util_found = 0;
        for _ in 0..200 {
            let c = case().new_tree(&mut runner).unwrap().current();
            let Some((mut w, cpu, level, idle)) = world(&c) else {
                continue;
            };
            let (mut ctx, st) = w.split();
            let mut env = LbEnv::new(ctx.topo, cpu, level, idle);
            env.migration_type = MigrationType::Util;
            env.imbalance = 1024;
            let mut pass = Pass::new(ctx.now_ns);
            for g in ctx.topo.groups(env.sd(ctx.topo)) {
                util_found += u32::from(find_busiest_queue(&ctx, &env, g, &mut pass).is_some());
            }
            let mut cont = true;
            moved += load_balance(&mut ctx, st, cpu, level, idle, &mut cont, &mut pass);
        }
        assert!(moved > 0, "no pass moved anything");
        assert!(util_found > 0, "no migrate_util search found a source");
    }
}

/// Rule (LB_TIP_AVG_HIGH, seed 003, never merged): when the queued weight exceeds twice the
/// PELT load average, the load balancing reads is `load_avg + min(NICE_0_LOAD, weight / 2)`;
/// otherwise, or with the feature off (the default), it is `load_avg`.
#[test]
fn tip_avg_high_cpu_load() {
    let mut w = World::new("cores=2");
    w.spawn(0, None);
    w.spawn(0, None);
    w.run_ticks(5);
    assert_eq!(w.rqs[0].cfs.load.weight, 2048);
    // As after a long sleep: the average lags the two queued nice-0 tasks.
    w.rqs[0].cfs.avg.avg.load_avg = 100;
    let read = |w: &mut World| {
        let (ctx, _) = w.split();
        cpu_load(&ctx, CpuId(0))
    };
    assert_eq!(read(&mut w), 100);
    w.set_feature(LbFeat::LbTipAvgHigh, true);
    assert_eq!(read(&mut w), 100 + 1024);
    w.rqs[0].cfs.avg.avg.load_avg = 1024;
    assert_eq!(
        read(&mut w),
        1024,
        "weight 2048 is not more than twice 1024"
    );
    w.rqs[0].cfs.avg.avg.load_avg = 1023;
    assert_eq!(read(&mut w), 1023 + 1024);
}

/// Rule (find_busiest_queue, "sched/fair: Use the new cfs_rq.h_nr_runnable", v6.14): with
/// `LB_BUSIEST_NR_RUNNABLE` a runqueue's task count leaves out its delayed-dequeue tasks
/// (`h_nr_runnable`); in v6.12 it counts every queued one (`h_nr_queued`). CPU 2 holds one
/// running task and one that blocked ineligible (delayed, still queued); CPU 3 two running
/// ones. For migrate_task the v6.12 count ties them at 2 and the first, CPU 2, is chosen;
/// the runnable count makes CPU 3 the busiest.
#[test]
fn busiest_nr_runnable_leaves_out_delayed_tasks() {
    for runnable in [false, true] {
        let f = default_features().with(LbFeat::LbBusiestNrRunnable, runnable);
        let mut w = World::with("llcs=2,cores=2", SdParams::default(), f);
        let (a, b) = (w.spawn(2, None), w.spawn(2, None));
        w.spawn(3, None);
        w.spawn(3, None);
        w.run_ticks(20);
        // Block CPU 2's current task once it has run ahead of the other: it is ineligible,
        // so DELAY_DEQUEUE keeps it queued.
        let mut curr = w.rqs[2].curr.expect("CPU 2 runs a task");
        for _ in 0..20 {
            if !w.rqs[2].cfs.entity_eligible(&w.tasks, curr) {
                break;
            }
            w.run_ticks(1);
            curr = w.rqs[2].curr.expect("CPU 2 runs a task");
        }
        assert!(curr == a || curr == b);
        let now = w.now;
        w.rqs[2].schedule(&mut w.tasks, PrevAction::Block, now);
        assert!(
            w.tasks[curr].se.sched_delayed,
            "blocked ineligible: delayed"
        );
        assert_eq!(
            (w.rqs[2].cfs.h_nr_running, w.rqs[2].cfs.h_nr_delayed),
            (2, 1)
        );
        assert_eq!(w.rqs[3].cfs.h_nr_running, 2);
        let (r, mut env) = fbg(&mut w, 0, "PKG", CpuIdleType::Idle);
        env.migration_type = MigrationType::Task;
        let (ctx, _) = w.split();
        let mut pass = Pass::new(ctx.now_ns);
        let group = ctx
            .topo
            .group(r.busiest.expect("CPUs 2-3 are the busiest group"));
        let busiest = find_busiest_queue(&ctx, &env, group, &mut pass);
        assert_eq!(busiest, Some(CpuId(if runnable { 3 } else { 2 })));
    }
}
