//! Unit tests of the pre-v5.5 placement, each quoting the rule of fair.c (the release named)
//! it checks: pure rules by direct calls on a small machine ([`crate::wake::bench::Bench`]).

use lbsim_rq::WakeFlags;
use lbsim_topology::CpuId;

use super::super::fork::find_idlest_group;
use super::super::sis::{Search, select_idle_sibling, select_idle_sibling_v4_6};
use super::*;
use crate::wake::bench::Bench;

fn cpus(b: &Bench, cpu: u32) -> Vec<u32> {
    b.topo
        .machine()
        .smt_mask(CpuId(cpu))
        .iter()
        .map(|c| c.0)
        .collect()
}

/// `select_idle_sibling_v4_6(p, prev, target)` on the bench, with the tests' work count.
fn sis_v4_6(b: &mut Bench, p: TaskId, prev: u32, target: u32) -> CpuId {
    let (ctx, _st, wake) = b.parts();
    let s = Search { ctx: &ctx, wake, p };
    let mut work = WorkAccount::default();
    select_idle_sibling_v4_6(&s, CpuId(prev), CpuId(target), &mut work)
}

/// Rule (fair.c v4.6, select_idle_sibling()): target and prev busy, so "iterate the domains
/// and find an eligible idle cpu": from sd_llc down, the first group whose every CPU is idle
/// (and not target) gives its first allowed CPU. On 4 cores x 2 threads with only core 2
/// wholly idle (one thread of core 3 idle too), the MC level's walk finds core 2's group
/// before any lone idle thread, and a task not allowed on the core's first thread gets the
/// second.
#[test]
fn v4_6_sis_returns_a_wholly_idle_groups_cpu() {
    let mut b = Bench::new("cores=4,threads=2");
    let core2 = cpus(&b, 4);
    assert_eq!(core2.len(), 2);
    let lone = cpus(&b, 6)[1];
    for c in 0..8u32 {
        if !core2.contains(&c) && c != lone {
            b.running(c);
        }
    }
    let p = b.sleeper(0, None, 300, 300);
    let target = 2;
    assert!(!core2.contains(&target) && !core2.contains(&0));
    assert_eq!(sis_v4_6(&mut b, p, 0, target), CpuId(core2[0]));
    let q = b.sleeper(0, Some(&[core2[1], 0, 1, 2]), 300, 300);
    assert_eq!(sis_v4_6(&mut b, q, 0, target), CpuId(core2[1]));
}

/// Rule (fair.c v4.6, select_idle_sibling()): a group counts only if all its CPUs are idle
/// ("if (i == target || !idle_cpu(i)) goto next"), and below the LLC only target's own
/// domains are walked; with one busy thread on every core (target's sibling busy too) no
/// group qualifies and the answer is target, though half the CPUs are idle. An idle prev
/// sharing the cache is taken before the walk.
#[test]
fn v4_6_sis_returns_target_when_no_group_is_wholly_idle() {
    let mut b = Bench::new("cores=4,threads=2");
    let mut idle = Vec::new();
    let mut busy = Vec::new();
    for core in [0u32, 2, 4, 6] {
        let t = cpus(&b, core);
        if !busy.contains(&t[0]) && !idle.contains(&t[0]) {
            busy.push(t[0]);
            idle.push(t[1]);
        }
    }
    // Target's sibling is busy too: both threads of target's core run a task.
    let target = busy[0];
    let sibling = idle.remove(0);
    busy.push(sibling);
    for &c in &busy {
        b.running(c);
    }
    let prev = busy[1];
    let p = b.sleeper(prev, None, 300, 300);
    assert_eq!(sis_v4_6(&mut b, p, prev, target), CpuId(target));
    // An idle prev in the LLC wins before the walk.
    let q = b.sleeper(idle[0], None, 300, 300);
    assert_eq!(sis_v4_6(&mut b, q, idle[0], target), CpuId(idle[0]));
}

/// Rule (fair.c v4.6, wake_affine()): with idx = wake_idx = 0, load = weighted_cpuload(prev)
/// and this_load = weighted_cpuload(this); `this_eff_load = 100 * capacity_of(prev) *
/// (this_load + effective_load(tg, this, w, w))` against `prev_eff_load = (100 + (117 - 100)
/// / 2) * capacity_of(this) * (load + effective_load(tg, prev, 0, w))`, effective_load()
/// being `wl` for the root group. A wakee of load 300 joins a waker CPU with one task: affine
/// when prev has two tasks (100 * (L + 300) <= 108 * 2L), not when prev has one (100 * (L +
/// 300) > 108 * L). A sync wake-up removes the waker (effective_load(-w, -w)), leaving
/// `this_load` 0, so only `100 * cap <= 108 * cap` is compared: affine even towards an idle
/// prev.
#[test]
fn v4_6_wake_affine_compares_loads_with_effective_load() {
    assert_eq!(effective_load(-1024, -1024), -1024);
    assert_eq!(effective_load(0, 300), 0);
    let check = |prev_tasks: u32, sync: bool, expected: bool| {
        let mut b = Bench::new("cores=2");
        b.running(0);
        for k in 0..prev_tasks {
            if k == 0 {
                b.running(1);
            } else {
                b.queued(1);
            }
        }
        let p = b.sleeper(1, None, 300, 300);
        let lg = LegacyState::new(&b.topo, 0, LegacyVersion::V4_6);
        let (ctx, st, _) = b.parts();
        let l_this = lg.weighted_cpuload(&ctx, CpuId(0)) as i64;
        let l_prev = lg.weighted_cpuload(&ctx, CpuId(1)) as i64;
        assert!(l_this > 0);
        let mut work = WorkAccount::default();
        let got = wake_affine_v4_6(&ctx, st, &lg, 0, p, CpuId(0), CpuId(1), sync, &mut work);
        let this_load = if sync { 0 } else { l_this };
        let formula = if this_load > 0 {
            100 * (this_load + 300) <= 108 * l_prev
        } else {
            100 <= 108
        };
        assert_eq!(got, formula, "prev {prev_tasks} tasks, sync {sync}");
        assert_eq!(got, expected, "prev {prev_tasks} tasks, sync {sync}");
        assert_eq!(
            st.schedstat.sd_mut(CpuId(0), 0).ttwu_move_affine,
            u32::from(got)
        );
    };
    check(2, false, true);
    check(1, false, false);
    check(0, true, true);
}

/// Rule (fair.c v4.6, find_idlest_group()): per group the load summed over its CPUs
/// (source_load() locally, target_load() remotely, at forkexec_idx 0), scaled by
/// SCHED_CAPACITY_SCALE / capacity; the idlest remote group is returned unless
/// `100 * this_load < imbalance * min_load` with `imbalance = 100 + (117 - 100) / 2 = 108`.
/// Local 1080 against remote 1000 is exactly 108% (not below): move; local 1079: stay.
#[test]
fn v4_6_find_idlest_group_needs_half_the_imbalance_pct() {
    let check = |local: u64, remote: u64, moves: bool| {
        let mut b = Bench::new("cores=2");
        let t0 = b.running(0);
        let t1 = b.running(1);
        b.tasks[t0].se.avg.load_avg = local;
        b.tasks[t1].se.avg.load_avg = remote;
        let p = b.newborn(0, None);
        let lg = LegacyState::new(&b.topo, 0, LegacyVersion::V4_6);
        let (ctx, st, _) = b.parts();
        let sd = &ctx.topo.domains(CpuId(0))[0];
        assert_eq!(sd.imbalance_pct, 117);
        let caps: Vec<u64> = ctx
            .topo
            .group_ids(sd)
            .map(|g| st.sgc(ctx.topo.group(g).sgc).capacity)
            .collect();
        assert_eq!(caps, vec![1024, 1024]);
        let mut work = WorkAccount::default();
        let fork = SdFlag::BalanceFork.bit();
        let g = find_idlest_group(&ctx, st, &lg, sd, p, CpuId(0), fork, &mut work);
        assert_eq!(g.is_some(), moves, "local {local}, remote {remote}");
        assert_eq!(100 * local >= 108 * remote, moves);
    };
    check(1080, 1000, true);
    check(1079, 1000, false);
    check(1000, 1000, false);
    check(2048, 1024, true);
}

/// Rule (fair.c v4.9-v5.4, select_idle_sibling() -> select_idle_cpu()): after target and
/// prev, the LLC is scanned from target round for an idle allowed CPU, where v4.6 found no
/// wholly idle group. Same machine as `v4_6_sis_returns_target_when_no_group_is_wholly_idle`:
/// v4.18 answers the first idle thread after target, v4.6 target.
#[test]
fn v4_9_sis_scans_for_any_idle_cpu() {
    let mut b = Bench::new("cores=4,threads=2");
    let busy = [0u32, 1, 2, 4, 6];
    for &c in &busy {
        b.running(c);
    }
    let p = b.sleeper(1, None, 300, 300);
    for (v, expected) in [(LegacyVersion::V4_6, 0u32), (LegacyVersion::V4_18, 3)] {
        let lg = LegacyState::new(&b.topo, 0, v);
        let mut lw = LegacyWakeState::new(8);
        b.rqs[0].avg_idle = 1_000_000;
        let (mut ctx, st, wake) = b.parts();
        let mut work = WorkAccount::default();
        let got = select_idle_sibling(
            &mut ctx,
            st,
            &lg,
            &mut lw,
            wake,
            p,
            CpuId(1),
            CpuId(0),
            CpuId(0),
            &mut work,
        );
        let first_idle = (1..8u32).find(|c| !busy.contains(c)).unwrap();
        let want = if v.sis_rewrite() {
            first_idle
        } else {
            expected
        };
        assert_eq!(got, CpuId(want), "{v}");
        if v.sis_rewrite() {
            // The scan (target 0 up to the idle CPU, each read) moved avg_scan_cost an
            // eighth of the way from 0 towards its simulated time.
            let time = u64::from(want + 1) * ctx.cost.lb_cpu_ns;
            assert_eq!(lw.avg_scan_cost[0], time / 8);
        }
    }
}

/// Rule (fair.c v4.6, select_task_rq_fair()): a wake-up whose waker CPU shares an
/// SD_WAKE_AFFINE domain with prev asks wake_affine(), then select_idle_sibling() on the
/// chosen CPU; a fork takes the slow path (SD_BALANCE_FORK on every level): the first of the
/// least loaded groups ("avg_load < min_load"), CPU 2's, and in it find_idlest_cpu()'s idle
/// CPU (an idle CPU needs an `idle_stamp` above 0 to be taken, else this_cpu stays).
#[test]
fn v4_6_select_task_rq_fast_and_slow_paths() {
    let mut b = Bench::new("cores=4");
    b.running(0);
    b.running(1);
    b.queued(1);
    b.idle_since(2, 1_000);
    b.idle_since(3, 2_000);
    let lg = LegacyState::new(&b.topo, 0, LegacyVersion::V4_6);
    let mut lw = LegacyWakeState::new(4);
    let p = b.sleeper(1, None, 300, 300);
    let q = b.newborn(0, None);
    let (mut ctx, st, wake) = b.parts();
    // Affine (prev has two tasks), target 0 busy, prev busy, CPU 2 wholly idle.
    let pl = select_task_rq(
        &mut ctx,
        st,
        &lg,
        &mut lw,
        wake,
        p,
        CpuId(1),
        CpuId(0),
        WakeFlags::TTWU,
    );
    assert_eq!(pl.cpu, CpuId(2));
    let pl = select_task_rq(
        &mut ctx,
        st,
        &lg,
        &mut lw,
        wake,
        q,
        CpuId(0),
        CpuId(0),
        WakeFlags::FORK,
    );
    assert_eq!(pl.cpu, CpuId(2));
    assert!(pl.work.domains >= 1);
}
