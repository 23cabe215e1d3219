//! Scenario tests of the slow path (fork and exec placement), each quoting the rule of fair.c
//! (v6.12) it checks.

use lbsim_rq::{TaskId, WakeFlags};
use lbsim_topology::CpuId;

use super::{sched_balance_find_dst_group, sched_balance_find_dst_group_cpu};
use crate::cost::WorkAccount;
use crate::ctx::Placement;
use crate::lb::GroupType;
use crate::wake::bench::Bench;
use crate::wake::select_task_rq;

fn place(b: &mut Bench, p: TaskId, prev: u32, this_cpu: u32, flags: WakeFlags) -> Placement {
    let (mut ctx, st, wake) = b.parts();
    select_task_rq(&mut ctx, st, wake, p, CpuId(prev), CpuId(this_cpu), flags)
}

fn fork(b: &mut Bench, child: TaskId, parent_cpu: u32) -> Placement {
    place(b, child, parent_cpu, parent_cpu, WakeFlags::FORK)
}

/// Every idle CPU went newly idle at a distinct time (`rq->idle_stamp`), CPU `c` at `c` ms.
fn stamp_idle_cpus(b: &mut Bench) {
    for c in 0..b.nr_cpus() as u32 {
        if b.rqs[c as usize].curr.is_none() {
            b.idle_since(c, u64::from(c + 1) * 1_000_000);
        }
    }
}

#[test]
fn fork_spreads_tasks_over_idle_groups() {
    // hikey: LLC 0 = CPUs 0-3 (the parent runs on 0), LLC 1 = CPUs 4-7, all idle.
    // Rule (find_idlest_group): both groups have spare capacity; the non-local one with more
    // idle CPUs (4 > 3) wins. Rule (find_idlest_group_cpu): among idle CPUs the most recently
    // idled (largest idle_stamp): CPU 7. Then the walk goes down CPU 7's MC domain, where
    // every single-CPU group has one idle CPU: the local one (7) stays.
    let mut b = Bench::new("hikey");
    b.running(0);
    b.set_avg(0, 1024, 300);
    stamp_idle_cpus(&mut b);
    let c1 = b.newborn(0, None);
    let pl = fork(&mut b, c1, 0);
    assert_eq!(pl.cpu, CpuId(7));
    assert_eq!(pl.work.domains, 2, "PKG of CPU 0, then MC of CPU 7");
    assert_eq!(
        pl.work.cpus_scanned,
        8 + 4 + 4,
        "both LLCs, LLC 1's CPUs, MC of 7's groups"
    );

    // The first child runs on 7. Rule: now both LLCs have 3 idle CPUs, and the local group
    // wins ties (local idle_cpus >= idlest idle_cpus): stay in LLC 0, where at MC level the
    // parent's CPU (0 idle CPUs) loses to the first idle single-CPU group, CPU 1.
    b.running(7);
    let c2 = b.newborn(0, None);
    assert_eq!(fork(&mut b, c2, 0).cpu, CpuId(1));
}

#[test]
fn fork_respects_affinity() {
    // Rule (find_idlest_group): groups without an allowed CPU are skipped; with the local
    // group skipped, the idlest is taken; find_idlest_group_cpu() looks at allowed CPUs only.
    let mut b = Bench::new("hikey");
    b.running(0);
    stamp_idle_cpus(&mut b);
    let c = b.newborn(0, Some(&[2, 3]));
    assert_eq!(
        fork(&mut b, c, 0).cpu,
        CpuId(2),
        "first of equal single-CPU groups"
    );
    let c = b.newborn(0, Some(&[4, 6]));
    assert_eq!(
        fork(&mut b, c, 0).cpu,
        CpuId(6),
        "most recently idled allowed CPU of LLC 1"
    );
    let c = b.newborn(0, Some(&[5]));
    assert_eq!(
        fork(&mut b, c, 0).cpu,
        CpuId(5),
        "pinned: core.c takes the only CPU"
    );
}

#[test]
fn overloaded_local_group_pushes_to_a_fully_busy_one() {
    // Two LLCs of two CPUs. LLC 0: two tasks on each CPU, util 1000 each CPU: sum_nr_running 4
    // > 2 and util 2000 * 117 > capacity 2048 * 100: overloaded. LLC 1: one task per CPU, util
    // 1000 each: not more tasks than CPUs, and capacity 2048 * 100 <= 2000 * 117: fully busy.
    // Rule (find_idlest_group): a local group of a higher type than the idlest pushes.
    // Rule (find_idlest_group_cpu): no idle CPU: the least loaded (CPU 3, load 800).
    // Rule (MC of CPU 3): both single-CPU groups fully busy; the idlest (CPU 2, avg_load 900)
    // must be lighter by 1024 * 17 / 100 = 174 and by imbalance_pct: 900 >= 800 + 174 is false
    // but 100 * 800 <= 117 * 900, so stay on CPU 3.
    let mut b = Bench::new("llcs=2,cores=2");
    for cpu in 0..4 {
        b.running(cpu);
    }
    b.queued(0);
    b.queued(1);
    b.set_avg(0, 2048, 1000);
    b.set_avg(1, 2048, 1000);
    b.set_avg(2, 900, 1000);
    b.set_avg(3, 800, 1000);
    let c = b.newborn(0, None);
    let pl = fork(&mut b, c, 0);
    assert_eq!(pl.cpu, CpuId(3));
}

#[test]
fn fully_busy_groups_compare_avg_load_with_imbalance_pct() {
    // Both LLCs fully busy (one task per CPU, util 1000 each CPU). Local avg_load = 2000 *
    // 1024 / 2048 = 1000.
    // Rule: move iff idlest_avg < local_avg + 174 and 100 * local_avg > 117 * idlest_avg.
    for (remote_load, moves) in [
        (1600, true),  // avg 800: 100000 > 93600
        (1720, false), // avg 860: 100000 <= 100620
    ] {
        let mut b = Bench::new("llcs=2,cores=2");
        for cpu in 0..4 {
            b.running(cpu);
            b.set_avg(cpu, 1000, 1000);
        }
        b.set_avg(2, remote_load / 2, 1000);
        b.set_avg(3, remote_load / 2, 1000);
        let c = b.newborn(0, None);
        let cpu = fork(&mut b, c, 0).cpu;
        assert_eq!(cpu.0 >= 2, moves, "remote load {remote_load}: cpu {cpu}");
    }
}

#[test]
fn numa_allowance_keeps_a_lightly_loaded_node_local() {
    // Two nodes of 16 CPUs, one LLC each (distance 20 < node_reclaim_distance, so
    // SD_BALANCE_FORK stays on the NUMA level). imb_numa_nr (build_sched_domains(), before
    // degeneration): the PKG level over one LLC gets span_weight >> 3 = 2; the NUMA level
    // spans the first NUMA span, factor 1: 2.
    // Rule (find_idlest_group, has_spare on SD_NUMA): imbalance = |local idle - idlest idle|;
    // stay local if adjust_numa_imbalance(imbalance, local sum_nr_running + 1, imb_numa_nr)
    // is 0: dst_running <= imb_numa_nr and imbalance <= NUMA_IMBALANCE_MIN (2).
    let mut b = Bench::new("nodes=2,cores=16");
    let top = b.topo.domains(CpuId(0)).last().unwrap().clone();
    assert!(top.flags.contains(lbsim_topology::SdFlag::Numa));
    assert_eq!(top.imb_numa_nr, 2);
    b.running(0);
    stamp_idle_cpus(&mut b);
    let c = b.newborn(0, None);
    // imbalance |15 - 16| = 1, dst_running 2 <= 2: stay on node 0; its MC level then takes
    // the first idle single-CPU group, CPU 1.
    assert_eq!(fork(&mut b, c, 0).cpu, CpuId(1));

    // The same shape without NUMA (two LLCs of one package) moves to the idler LLC.
    let mut b = Bench::new("llcs=2,cores=16");
    b.running(0);
    stamp_idle_cpus(&mut b);
    let c = b.newborn(0, None);
    assert!(fork(&mut b, c, 0).cpu.0 >= 16);

    // Two tasks on node 0: dst_running 3 > 2, the imbalance |14 - 16| = 2 stands, and node 1
    // has more idle CPUs: move.
    let mut b = Bench::new("nodes=2,cores=16");
    b.running(0);
    b.running(1);
    stamp_idle_cpus(&mut b);
    let c = b.newborn(0, None);
    assert!(fork(&mut b, c, 0).cpu.0 >= 16);

    // On 2 x 4 CPUs, imb_numa_nr is 1 (4 >> 3 = 0, at least 1): one running task already
    // exceeds it, and the fork moves to the idler node.
    let mut b = Bench::new("nodes=2,cores=4");
    assert_eq!(b.topo.domains(CpuId(0)).last().unwrap().imb_numa_nr, 1);
    b.running(0);
    stamp_idle_cpus(&mut b);
    let c = b.newborn(0, None);
    assert!(fork(&mut b, c, 0).cpu.0 >= 4);
}

#[test]
fn exec_moves_a_big_task_to_a_big_cpu() {
    // hikey960: CPUs 0-3 capacity 462, 4-7 capacity 1024. A task of util 600 exec's on CPU 0.
    // Rule (update_sg_wakeup_stats, SD_ASYM_CPUCAPACITY): a group is misfit unless the task
    // fits one of its CPUs (fits_capacity: 600 * 1280 < capacity * 1024 only for 1024).
    // Rule (find_idlest_group): the local misfit group is of a higher type than the big
    // has_spare group: move there; then its most recently idled CPU.
    let mut b = Bench::new("hikey960");
    let p = b.running(0);
    b.tasks[p].se.avg.util_avg = 600;
    b.tasks[p].se.avg.load_avg = 600;
    stamp_idle_cpus(&mut b);
    let pl = place(&mut b, p, 0, 0, WakeFlags::EXEC);
    assert_eq!(pl.cpu, CpuId(7));

    // A small task fits the little CPUs: their group is has_spare, not misfit, and the
    // exec'ing task's own CPU counts as idle without it (idle_cpu_without).
    let mut b = Bench::new("hikey960");
    let q = b.running(0);
    b.tasks[q].se.avg.util_avg = 100;
    b.tasks[q].se.avg.load_avg = 100;
    let (ctx, st, _) = b.parts();
    let sd = ctx.topo.domains(CpuId(0)).last().unwrap();
    let little = ctx.topo.local_group(sd);
    let mut work = Default::default();
    let sgs = super::update_sg_wakeup_stats(&ctx, st, sd, little, q, &mut work);
    assert_eq!(
        sgs.group_type,
        GroupType::HasSpare,
        "a small task fits the little CPUs"
    );
    assert_eq!(
        sgs.idle_cpus, 4,
        "the exec'ing task's own CPU counts as idle without it"
    );
}

/// find_idlest_group_cpu() over LLC 1 of hikey (CPUs 4-7), asked from CPU 0.
fn idlest_cpu_of_llc1(b: &mut Bench, p: TaskId) -> CpuId {
    let (ctx, _, _) = b.parts();
    let pkg = ctx.topo.domains(CpuId(0)).last().unwrap();
    let llc1 = ctx.topo.groups(pkg).nth(1).unwrap();
    let mut work = Default::default();
    super::sched_balance_find_dst_group_cpu(&ctx, llc1, p, CpuId(0), &mut work)
}

#[test]
fn find_idlest_group_cpu_prefers_sched_idle_then_recent_idle_then_least_loaded() {
    use lbsim_rq::Policy;
    let mut b = Bench::new("hikey");
    b.running(4);
    b.running(5);
    b.set_avg(4, 700, 500);
    b.set_avg(5, 600, 500);
    b.idle_since(6, 5_000);
    b.idle_since(7, 9_000);
    let p = b.newborn(0, None);
    // Rule: the most recently idled CPU (largest idle_stamp) among the idle ones.
    assert_eq!(idlest_cpu_of_llc1(&mut b, p), CpuId(7));

    // Rule: with every idle CPU in the same idle state, the first idle CPU is the candidate
    // and a later one replaces it only with a strictly larger idle_stamp: without stamps,
    // the first idle CPU (6).
    b.rqs[6].set_idle_stamp(None);
    b.rqs[7].set_idle_stamp(None);
    b.rqs[6].sched_idle_set_state(Some(1));
    b.rqs[7].sched_idle_set_state(Some(1));
    assert_eq!(idlest_cpu_of_llc1(&mut b, p), CpuId(6));
    // Rule: a shallower idle state wins whatever the stamps (WFI at 1 us beats cpu-sleep at
    // 950 us).
    b.rqs[6].sched_idle_set_state(Some(950));
    assert_eq!(idlest_cpu_of_llc1(&mut b, p), CpuId(7));
    // Rule: with no idle state (NULL, outside cpuidle_enter_state()) and no idle_stamp, an
    // idle CPU is never the candidate: the least loaded busy CPU is taken.
    b.rqs[6].sched_idle_set_state(None);
    b.rqs[7].sched_idle_set_state(None);
    assert_eq!(idlest_cpu_of_llc1(&mut b, p), CpuId(5));
    b.rqs[6].sched_idle_set_state(Some(1));
    b.rqs[7].sched_idle_set_state(Some(1));
    b.idle_since(6, 9_000);
    b.idle_since(7, 9_000);
    assert_eq!(
        idlest_cpu_of_llc1(&mut b, p),
        CpuId(6),
        "equal stamps: the first stays"
    );

    // Rule: a CPU running only SCHED_IDLE tasks is taken as soon as it is reached, before
    // the later, more recently idled CPU 7.
    b.idle_since(7, 20_000);
    b.running_policy(6, Policy::Idle);
    assert_eq!(idlest_cpu_of_llc1(&mut b, p), CpuId(6));

    // Rule: no idle CPU: the least loaded one.
    let mut b = Bench::new("hikey");
    for (cpu, load) in [(4, 700), (5, 600), (6, 900), (7, 800)] {
        b.running(cpu);
        b.set_avg(cpu, load, 500);
    }
    let p = b.newborn(0, None);
    assert_eq!(idlest_cpu_of_llc1(&mut b, p), CpuId(5));
}

/// A xorshift step: the tests' own deterministic choices.
fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// What [`idlest_group_index_answers_as_the_group_loop`] reached.
#[derive(Default)]
struct Reached {
    spare: u32,
    busy: u32,
    over: u32,
    kept: u32,
    moved: u32,
    sums_cpu: u32,
    cpu_loop: u32,
    incremental: u64,
    full: u64,
}

/// Fills machine `spec` fork by fork from idle to fully busy (from step `steps / 3` the CPUs'
/// utilization is set full) to overloaded (tasks queue from step `2 * steps / 3`), with loads
/// changed at random (in steps of 64, so that groups tie) and group capacities changed now
/// and then; at each fork every CPU's domains at `levels` are asked both ways (index and
/// loop), and the CPU of the group chosen both ways (shortcut and loop).
fn drive_idlest_index(spec: &str, levels: &[usize], steps: u32, r: &mut Reached) {
    let mut b = Bench::new(spec);
    let n = b.nr_cpus() as u32;
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    for step in 0..steps {
        for _ in 0..1 + next(&mut rng) % 3 {
            let cpu = (next(&mut rng) % u64::from(n)) as u32;
            match next(&mut rng) % 8 {
                0..=2 if b.rqs[cpu as usize].curr.is_none() => {
                    b.running(cpu);
                }
                0..=2 if step >= 2 * steps / 3 => {
                    b.queued(cpu);
                }
                3..=5 => {
                    let load = 64 * (next(&mut rng) % 24);
                    let util = if step >= steps / 3 {
                        1024
                    } else {
                        load.min(1024)
                    };
                    b.set_avg(cpu, load, util);
                }
                6 if step % 50 == 0 => {
                    let sd = &b.topo.domains(CpuId(cpu))[levels[0]];
                    let sgc = b.topo.local_group(sd).sgc;
                    b.st.sgc_mut(sgc).capacity = 1024 + 64 * (next(&mut rng) % 16);
                }
                _ => {}
            }
        }
        let parent = (next(&mut rng) % u64::from(n)) as u32;
        let p = b.newborn(parent, None);
        let (ctx, st, _) = b.parts();
        let ctx = &ctx;
        for c in 0..n {
            for &level in levels {
                let sd = &ctx.topo.domains(CpuId(c))[level];
                assert!(sd.nr_groups() >= super::idlest_index::MIN_GROUPS);
                let (mut w_index, mut w_loop) = (WorkAccount::default(), WorkAccount::default());
                let by_index =
                    super::find_dst_group_indexed(ctx, st, sd, p, CpuId(c), &mut w_index);
                let pick = super::find_dst_group_loop(ctx, st, sd, p, CpuId(c), &mut w_loop);
                let by_loop = sched_balance_find_dst_group(ctx, st, sd, p, CpuId(c), &mut w_loop);
                assert_eq!(
                    by_index, by_loop,
                    "{spec}: step {step}, cpu {c}, level {level}"
                );
                assert_eq!(w_index.domains * 2, w_loop.domains);
                assert_eq!(w_index.cpus_scanned * 2, w_loop.cpus_scanned);
                match (by_loop, pick.idlest_sgs.group_type) {
                    (None, _) => r.kept += 1,
                    (Some(_), t) => {
                        r.moved += 1;
                        match t {
                            GroupType::HasSpare => r.spare += 1,
                            GroupType::FullyBusy => r.busy += 1,
                            GroupType::Overloaded => r.over += 1,
                            _ => {}
                        }
                    }
                }
                let g = ctx
                    .topo
                    .group(by_loop.unwrap_or(pick.local.expect("a local group")));
                if g.group_weight == 1 {
                    continue;
                }
                let mut w = WorkAccount::default();
                let cpu = sched_balance_find_dst_group_cpu(ctx, g, p, CpuId(c), &mut w);
                let mut w_l = WorkAccount::default();
                assert_eq!(
                    cpu,
                    super::find_dst_group_cpu_loop(ctx, g, p, CpuId(c), true, &mut w_l)
                );
                assert_eq!(w, w_l);
                if g.group_weight >= crate::rqs::span_sums_min_cpus(ctx.topo)
                    && super::no_idle_candidate(ctx, g)
                {
                    r.sums_cpu += 1;
                } else {
                    r.cpu_loop += 1;
                }
            }
        }
    }
    let answered = b.st.idlest_index.borrow().answered;
    r.incremental += answered.0;
    r.full += answered.1;
}

#[test]
fn idlest_group_index_answers_as_the_group_loop() {
    // lbsim's idlest-group index (fork/idlest_index.rs) must give what the kernel's loop over
    // the groups gives (sched_balance_find_dst_group(), v6.12: the first group in walk order
    // that update_pick_idlest() prefers, then the comparison with the local group), and
    // charge the same work; and sched_balance_find_dst_group_cpu()'s least loaded CPU from
    // the sums what its CPU loop gives. Machines: a 32-CPU LLC of 16 SMT cores (16 groups
    // of two at the MC level), and 8 LLCs of 16 cores (16 one-CPU groups at MC, 8 groups of
    // 16 at the package level, large enough for the sums in release builds too).
    let mut r = Reached::default();
    drive_idlest_index("cores=16,threads=2", &[1], 600, &mut r);
    drive_idlest_index("llcs=8,cores=16", &[0, 1], 900, &mut r);
    for (what, count) in [
        ("has_spare idlest", u64::from(r.spare)),
        ("fully_busy idlest", u64::from(r.busy)),
        ("overloaded idlest", u64::from(r.over)),
        ("local kept", u64::from(r.kept)),
        ("idlest taken", u64::from(r.moved)),
        ("index refreshed from the changes", r.incremental),
        ("index re-evaluated whole", r.full),
        ("least loaded CPU from the sums", u64::from(r.sums_cpu)),
        ("CPU loop", u64::from(r.cpu_loop)),
    ] {
        assert!(count > 0, "never reached: {what}");
    }
}

#[test]
fn idlest_group_index_notices_a_group_capacity_change_alone() {
    // The index must re-key a group whose sgc capacity changed even when none of its CPUs'
    // runqueues did. 16 SMT pairs, every CPU running a task with one more queued and the
    // same load: every group overloaded with the same avg_load, so the first group after
    // the local one is the idlest. Then CPU 20's group gets 4 times the capacity, nothing
    // else changing: its avg_load falls to a quarter and it must become the idlest, as the
    // kernel's loop finds.
    let mut b = Bench::new("cores=16,threads=2");
    for c in 0..32 {
        b.running(c);
        b.queued(c);
        b.set_avg(c, 1024, 1024);
    }
    let p = b.newborn(0, None);
    let ask = |b: &mut Bench| {
        let (ctx, st, _) = b.parts();
        let sd = &ctx.topo.domains(CpuId(0))[1];
        let mut w = WorkAccount::default();
        let by_index = super::find_dst_group_indexed(&ctx, st, sd, p, CpuId(0), &mut w);
        let by_loop = sched_balance_find_dst_group(&ctx, st, sd, p, CpuId(0), &mut w);
        assert_eq!(by_index, by_loop);
        let pick = super::find_dst_group_loop(&ctx, st, sd, p, CpuId(0), &mut w);
        let idlest = pick.idlest.expect("an idlest group");
        ctx.topo.span(ctx.topo.group(idlest).span).iter().next()
    };
    assert_eq!(
        ask(&mut b),
        Some(CpuId(2)),
        "the first group after the local one"
    );
    let sd = &b.topo.domains(CpuId(20))[1];
    let group_sgc = b
        .topo
        .groups(sd)
        .find(|g| b.topo.span(g.span).test(CpuId(20)))
        .expect("CPU 20's group")
        .sgc;
    b.st.set_sgc_capacity(group_sgc, 4 * 2048, 4 * 1024, 4 * 1024);
    assert_eq!(
        ask(&mut b),
        Some(CpuId(20)),
        "the group whose capacity grew"
    );
}
