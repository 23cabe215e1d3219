//! Unit tests of the pre-v5.5 slow path, each quoting the rule of fair.c (the releases named)
//! it checks: direct calls on a small machine ([`crate::wake::bench::Bench`]).

use lbsim_rq::{Policy, TaskId};
use lbsim_topology::{CpuId, GroupId, SdFlag};

use super::*;
use crate::legacy::LegacyVersion;
use crate::wake::bench::Bench;

const FORK: u32 = SdFlag::BalanceFork.bit();
const EXEC: u32 = SdFlag::BalanceExec.bit();

/// A task running on `cpu` whose `load_avg` (its share of `runnable_load_avg`) is `load`.
fn runs(b: &mut Bench, cpu: u32, load: u64) -> TaskId {
    let t = b.running(cpu);
    b.tasks[t].se.avg.load_avg = load;
    t
}

/// Sets `cpu`'s cfs_rq `load_avg` (runnable plus blocked load) and `util_avg`.
fn avg(b: &mut Bench, cpu: u32, load_avg: u64, util_avg: u64) {
    b.set_avg(cpu, load_avg, util_avg);
}

/// find_idlest_group() of `version` at the domain `level` of CPU 0, for `p`.
fn idlest(
    b: &mut Bench,
    version: LegacyVersion,
    level: usize,
    p: TaskId,
    sd_flag: u32,
) -> Option<GroupId> {
    let lg = LegacyState::new(&b.topo, 0, version);
    let (ctx, st, _) = b.parts();
    let sd = &ctx.topo.domains(CpuId(0))[level];
    let mut work = WorkAccount::default();
    find_idlest_group(&ctx, st, &lg, sd, p, CpuId(0), sd_flag, &mut work)
}

/// The group of `sd` (CPU 0's domain at `level`) that holds `cpu`.
fn group_of(b: &Bench, level: usize, cpu: u32) -> GroupId {
    let sd = &b.topo.domains(CpuId(0))[level];
    b.topo
        .group_ids(sd)
        .find(|&g| b.topo.span(b.topo.group(g).span).test(CpuId(cpu)))
        .expect("a group with the CPU")
}

/// Rule (fair.c v4.10, 6b94780e45c1, find_idlest_group()): `imbalance =
/// scale_load_down(NICE_0_LOAD) * (imbalance_pct - 100) / 100` (174 at 117) beside
/// `imbalance_scale = 100 + (117 - 100) / 2 = 108`. A remote group whose runnable load is
/// lower by less than `imbalance` is still chosen when its `avg_load` (the cfs_rq's
/// `load_avg`, blocked load included) is lower by more than `imbalance_scale` ("the
/// runnable loads are close so take the blocked load into account"); with equal `avg_load`
/// the local group keeps it. v4.6 compares the runnable loads alone at 108%: local 1000
/// against remote 950 stays there whatever the blocked load.
#[test]
fn v4_10_near_tie_of_runnable_load_is_decided_by_avg_load() {
    let case = |version: LegacyVersion, local_avg: u64| {
        let mut b = Bench::new("cores=2");
        runs(&mut b, 0, 1000);
        runs(&mut b, 1, 950);
        avg(&mut b, 0, local_avg, 500);
        avg(&mut b, 1, 1000, 500);
        let p = b.newborn(0, None);
        assert_eq!(b.topo.domains(CpuId(0))[0].imbalance_pct, 117);
        let remote = group_of(&b, 0, 1);
        (idlest(&mut b, version, 0, p, FORK), remote)
    };
    for v in [
        LegacyVersion::V4_11,
        LegacyVersion::V4_13,
        LegacyVersion::V4_18,
    ] {
        // 100 * 3000 >= 108 * 1000: the blocked load makes the local group the busier.
        let (g, remote) = case(v, 3000);
        assert_eq!(g, Some(remote), "{v}");
        // 100 * 1000 < 108 * 1000: stay.
        assert_eq!(case(v, 1000).0, None, "{v}");
    }
    // v4.6: 100 * 1000 < 108 * 950, stay either way.
    assert_eq!(case(LegacyVersion::V4_6, 3000).0, None);
    assert_eq!(case(LegacyVersion::V4_6, 1000).0, None);
}

/// Rule (fair.c v4.10, find_idlest_group()): a runnable load lower by more than
/// `imbalance` wins outright, and one within `imbalance` needs the `avg_load` rule: local
/// 1100 against remote 1000 (10% more, within 174) stays on v4.11 with equal `avg_load`,
/// where v4.6 (110% >= 108%) moves; local 1200 (more than 174 above) moves on both.
#[test]
fn v4_10_runnable_load_allowance_is_absolute() {
    let case = |version: LegacyVersion, local: u64| {
        let mut b = Bench::new("cores=2");
        runs(&mut b, 0, local);
        runs(&mut b, 1, 1000);
        avg(&mut b, 0, 1000, 500);
        avg(&mut b, 1, 1000, 500);
        let p = b.newborn(0, None);
        idlest(&mut b, version, 0, p, FORK).is_some()
    };
    assert!(case(LegacyVersion::V4_6, 1100));
    assert!(!case(LegacyVersion::V4_11, 1100));
    assert!(case(LegacyVersion::V4_6, 1200));
    assert!(case(LegacyVersion::V4_11, 1200));
    assert!(case(LegacyVersion::V5_4, 1200));
}

/// Rule (fair.c v4.10, 6a0b19c0f39a and the fork exemption, find_idlest_group()): except at
/// fork ("spare capacity can't be used for fork because the utilization has not been set
/// yet"), the group with the most spare capacity (`capacity_of - cpu_util_wake`) is taken
/// if its spare exceeds `task_util(p) / 2`, unless the local spare also does and
/// `imbalance_scale * this_spare > 100 * most_spare`. Equal loads (the load rule stays):
/// an exec of a util-300 task from a CPU at full utilization (spare 1024 - (1024 - 300))
/// goes to the idler group; the same placement at fork, or on v4.6, stays.
#[test]
fn v4_10_spare_capacity_rule_applies_at_exec_not_fork() {
    let case = |version: LegacyVersion, sd_flag: u32| {
        let mut b = Bench::new("cores=2");
        runs(&mut b, 0, 1000);
        runs(&mut b, 1, 1000);
        avg(&mut b, 0, 1000, 1024);
        avg(&mut b, 1, 1000, 100);
        let p = b.sleeper(0, None, 300, 300);
        let lg = LegacyState::new(&b.topo, 0, version);
        {
            let (ctx, _, _) = b.parts();
            assert_eq!(capacity_spare_wake(&ctx, &lg, CpuId(0), p), 300);
            assert_eq!(capacity_spare_wake(&ctx, &lg, CpuId(1), p), 924);
        }
        let remote = group_of(&b, 0, 1);
        (idlest(&mut b, version, 0, p, sd_flag), remote)
    };
    let (g, remote) = case(LegacyVersion::V4_11, EXEC);
    assert_eq!(g, Some(remote));
    assert_eq!(case(LegacyVersion::V5_4, EXEC).0, Some(remote));
    assert_eq!(case(LegacyVersion::V4_11, FORK).0, None);
    assert_eq!(case(LegacyVersion::V4_6, EXEC).0, None);
}

/// Rule (fair.c v4.10, find_idlest_group()): the local group with spare capacity above
/// `task_util(p) / 2` and within `imbalance_scale` of the most spare one keeps an exec'ing
/// task even when the load rule would move it (local runnable 2000 against 1000): spare 924
/// locally (p's own 100 of the 200 discounted) against 824 remotely, 108 * 924 > 100 * 824.
#[test]
fn v4_10_local_spare_capacity_keeps_an_exec() {
    let case = |sd_flag: u32| {
        let mut b = Bench::new("cores=2");
        runs(&mut b, 0, 1000);
        let q = b.queued(0);
        b.tasks[q].se.avg.load_avg = 1000;
        runs(&mut b, 1, 1000);
        avg(&mut b, 0, 2000, 200);
        avg(&mut b, 1, 1000, 200);
        let p = b.sleeper(0, None, 100, 100);
        idlest(&mut b, LegacyVersion::V4_13, 0, p, sd_flag)
    };
    assert_eq!(case(EXEC), None);
    assert!(case(FORK).is_some());
}

/// Rule (fair.c v4.18, 2c83362734da, find_idlest_group()): on an `SD_NUMA` domain "add
/// imbalance to the runnable load on the remote node and consider staying local": stay if
/// `min_runnable_load + imbalance >= this_runnable_load`. Local 1000 against remote 900 with
/// the remote node's `avg_load` far lower: v4.13 moves by the `avg_load` rule, v4.18 and
/// v5.4 stay; a remote node lighter by more than `imbalance` still wins.
#[test]
fn v4_18_numa_domain_stays_local_within_imbalance() {
    let case = |version: LegacyVersion, remote: u64| {
        let mut b = Bench::new("nodes=2,cores=1");
        let level = b.topo.domains(CpuId(0)).len() - 1;
        let sd = &b.topo.domains(CpuId(0))[level];
        assert!(sd.flags.contains(SdFlag::Numa) && sd.flags.contains(SdFlag::BalanceFork));
        let imbalance = 1024 * (u64::from(sd.imbalance_pct) - 100) / 100;
        assert!(imbalance > 100 && imbalance < 1000, "imbalance {imbalance}");
        runs(&mut b, 0, 1000);
        runs(&mut b, 1, remote);
        avg(&mut b, 0, 5000, 500);
        avg(&mut b, 1, remote, 500);
        let p = b.newborn(0, None);
        idlest(&mut b, version, level, p, FORK).is_some()
    };
    assert!(case(LegacyVersion::V4_13, 900));
    assert!(!case(LegacyVersion::V4_18, 900));
    assert!(!case(LegacyVersion::V5_4, 900));
    assert!(case(LegacyVersion::V4_18, 0));
}

/// Rule (fair.c v4.15, find_idlest_group(), "Fix find_idlest_group when local group is not
/// allowed" [U: id]): the local group's loads start at `ULONG_MAX` instead of 0. For a task
/// allowed only on the remote CPU, with a remote runnable load of 100 (below `imbalance`)
/// and an `avg_load` of 100: v4.13's `this_runnable_load` 0 and `this_avg_load` 0 stay
/// (`0 < 100 + 174` and `100 * 0 < 108 * 100`); v4.18 returns the remote group. With a
/// remote load of 200 both stay: `ULONG_MAX + imbalance` wraps to 173 in unsigned long, so
/// `min_runnable_load > this_runnable_load + imbalance` holds.
#[test]
fn v4_15_local_group_not_allowed_starts_at_ulong_max() {
    let case = |version: LegacyVersion, remote: u64| {
        let mut b = Bench::new("cores=2");
        runs(&mut b, 1, remote);
        avg(&mut b, 1, remote, 100);
        let p = b.newborn(0, Some(&[1]));
        idlest(&mut b, version, 0, p, FORK).is_some()
    };
    assert!(!case(LegacyVersion::V4_13, 100));
    assert!(case(LegacyVersion::V4_18, 100));
    assert!(!case(LegacyVersion::V4_13, 200));
    assert!(!case(LegacyVersion::V4_18, 200));
}

/// Rule (fair.c v4.15, find_idlest_cpu(), "Fix usage of find_idlest_group() when the local
/// group is idlest" [U: id]): `new_cpu` starts as `cpu`, not `prev_cpu`, so a walk that finds
/// no group answers the deciding CPU. Balanced loads, decided on CPU 0 with `prev_cpu` 1:
/// v4.13 answers 1, v4.18 answers 0.
#[test]
fn v4_15_slow_path_starts_from_this_cpu() {
    let case = |version: LegacyVersion| {
        let mut b = Bench::new("cores=2");
        runs(&mut b, 0, 1000);
        runs(&mut b, 1, 1000);
        let p = b.newborn(0, None);
        let lg = LegacyState::new(&b.topo, 0, version);
        let (mut ctx, st, _) = b.parts();
        let mut work = WorkAccount::default();
        find_idlest_cpu_slow_path(&mut ctx, st, &lg, 0, CpuId(0), CpuId(1), p, FORK, &mut work)
    };
    assert_eq!(case(LegacyVersion::V4_13), CpuId(1));
    assert_eq!(case(LegacyVersion::V4_18), CpuId(0));
}

/// Rule (fair.c v5.4, 3c29e651e16d, find_idlest_group_cpu()): with no idle CPU, the first
/// CPU running only `SCHED_IDLE` tasks is taken before the least loaded one; v4.18 takes the
/// least loaded. Rule (v4.9, eaecf41f5abf): a group of one CPU answers it unscanned.
#[test]
fn v5_4_find_idlest_group_cpu_falls_back_to_a_sched_idle_cpu() {
    let case = |version: LegacyVersion| {
        let mut b = Bench::new("cores=2,threads=2");
        let this_cpu = 0u32;
        let sd = &b.topo.domains(CpuId(this_cpu))[1];
        let remote = b
            .topo
            .group_ids(sd)
            .find(|&g| !b.topo.span(b.topo.group(g).span).test(CpuId(this_cpu)))
            .expect("a remote core");
        let cpus: Vec<u32> = b
            .topo
            .span(b.topo.group(remote).span)
            .iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(cpus.len(), 2);
        let t = b.running_policy(cpus[0], Policy::Idle);
        b.tasks[t].se.avg.load_avg = 2000;
        runs(&mut b, cpus[1], 500);
        let p = b.newborn(this_cpu, None);
        let lg = LegacyState::new(&b.topo, 0, version);
        let (ctx, _, _) = b.parts();
        let mut work = WorkAccount::default();
        let group = ctx.topo.group(remote);
        (
            find_idlest_cpu(&ctx, &lg, group, p, CpuId(this_cpu), &mut work),
            cpus,
        )
    };
    let (cpu, cpus) = case(LegacyVersion::V4_18);
    assert_eq!(cpu, CpuId(cpus[1]));
    let (cpu, cpus) = case(LegacyVersion::V5_4);
    assert_eq!(cpu, CpuId(cpus[0]));

    let single = |version: LegacyVersion| {
        let mut b = Bench::new("cores=2");
        runs(&mut b, 1, 500);
        let p = b.newborn(0, None);
        let lg = LegacyState::new(&b.topo, 0, version);
        let (ctx, _, _) = b.parts();
        let group = ctx.topo.group(group_of_ctx(&ctx, 1));
        let mut work = WorkAccount::default();
        let cpu = find_idlest_cpu(&ctx, &lg, group, p, CpuId(0), &mut work);
        (cpu, work.cpus_scanned)
    };
    assert_eq!(single(LegacyVersion::V4_6), (CpuId(1), 1));
    assert_eq!(single(LegacyVersion::V4_11), (CpuId(1), 0));
}

fn group_of_ctx(ctx: &BalanceCtx<'_>, cpu: u32) -> GroupId {
    let sd = &ctx.topo.domains(CpuId(0))[0];
    ctx.topo
        .group_ids(sd)
        .find(|&g| ctx.topo.span(ctx.topo.group(g).span).test(CpuId(cpu)))
        .expect("a group with the CPU")
}

/// Rule (fair.c cpu_util_wake(), v4.17-v4.19; cpu_util_without(), v4.20-v5.4): for a task
/// that last ran on the CPU, its `util_avg` is taken off the CPU's (`400 - 300`); with
/// `UTIL_EST` on the result is then raised to the cfs_rq's enqueued estimate (700, the
/// runnable tasks' expected utilization) whole in v4.18 (the sleeping task is not in it),
/// less the task's own estimate only from v4.20 and only when it is queued there; capped at
/// `capacity_orig`. Without `UTIL_EST` (the v4.6-v4.13 profiles have no such feature) the
/// average alone counts.
#[test]
fn cpu_util_wake_reads_util_est_from_v4_17() {
    use lbsim_rq::RqFeat;
    let bench = |util_est_on: bool| {
        let f = crate::params::default_features().with(RqFeat::UtilEst, util_est_on);
        let mut b = Bench::with_features("cores=2", f);
        runs(&mut b, 0, 1000);
        avg(&mut b, 0, 1000, 400);
        b
    };
    let wake = |b: &mut Bench, version: LegacyVersion, p: TaskId, est: u32| {
        b.rqs[0].cfs.avg.avg.util_est = est;
        let lg = LegacyState::new(&b.topo, 0, version);
        let (ctx, _, _) = b.parts();
        (
            cpu_util_wake(&ctx, &lg, CpuId(0), p),
            capacity_spare_wake(&ctx, &lg, CpuId(0), p),
        )
    };
    // A sleeper woken: v4.18 and v5.4 both take the estimate whole.
    let mut b = bench(true);
    let p = b.sleeper(0, None, 300, 300);
    assert_eq!(
        wake(&mut b, LegacyVersion::V4_18, p, 700),
        (700, 1024 - 700)
    );
    assert_eq!(wake(&mut b, LegacyVersion::V5_4, p, 700), (700, 1024 - 700));
    // An estimate below the discounted average changes nothing; one above capacity is capped.
    assert_eq!(wake(&mut b, LegacyVersion::V4_18, p, 50).0, 100);
    assert_eq!(wake(&mut b, LegacyVersion::V4_18, p, 2000), (1024, 0));
    // Not its CPU: cpu_util(), which reads the estimate too.
    assert_eq!(
        {
            b.rqs[1].cfs.avg.avg.util_est = 600;
            let lg = LegacyState::new(&b.topo, 0, LegacyVersion::V4_18);
            let (ctx, _, _) = b.parts();
            cpu_util_wake(&ctx, &lg, CpuId(1), p)
        },
        600
    );
    // UTIL_EST off: the discounted average.
    let mut b = bench(false);
    let p = b.sleeper(0, None, 300, 300);
    assert_eq!(wake(&mut b, LegacyVersion::V4_18, p, 700).0, 100);
    // A task queued on the CPU (an exec'ing one): v4.20+ takes its own estimate (200) off.
    let mut b = bench(true);
    let q = b.queued(0);
    b.tasks[q].se.avg.last_update_time = 1;
    b.tasks[q].se.avg.util_avg = 300;
    b.tasks[q].se.avg.util_est = 200;
    assert!(b.tasks[q].on_rq_queued());
    assert_eq!(wake(&mut b, LegacyVersion::V4_18, q, 700).0, 700);
    assert_eq!(wake(&mut b, LegacyVersion::V5_4, q, 700).0, 500);
}
