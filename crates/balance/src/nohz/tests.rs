use lbsim_topology::CpuId;

use super::*;
use crate::lb::harness::World;

fn enter(w: &mut World, cpu: u32) {
    let (mut ctx, st) = w.split();
    nohz_balance_enter_idle(&mut ctx, st, CpuId(cpu));
}

fn kick(w: &mut World, cpu: u32) -> (Option<IlbKick>, Pass) {
    let now = w.now;
    let (ctx, st) = w.split();
    let mut pass = Pass::new(now);
    let idle = idle_cpu(&ctx, CpuId(cpu), now);
    (
        nohz_balancer_kick(&ctx, st, CpuId(cpu), idle, &mut pass),
        pass,
    )
}

/// Rule (nohz_balance_enter_idle / exit_idle): entering sets the CPU in idle_cpus_mask,
/// decrements its LLC's nr_busy_cpus once, marks blocked load; leaving reverses it.
#[test]
fn enter_and_exit_bookkeeping() {
    let mut w = World::new("hikey");
    enter(&mut w, 2);
    enter(&mut w, 2);
    assert!(w.st.nohz.idle_cpus_mask.test(CpuId(2)));
    assert_eq!(w.st.nohz.nr_cpus, 1);
    assert_eq!(
        w.st.sd_llc_shared(&w.topo, CpuId(0)).unwrap().nr_busy_cpus,
        3
    );
    assert!(w.st.nohz.has_blocked && w.st.nohz.needs_update && w.rqs[2].has_blocked_load());
    let (ctx, st) = w.split();
    nohz_balance_exit_idle(&ctx, st, CpuId(2));
    nohz_balance_exit_idle(&ctx, st, CpuId(2));
    assert_eq!(st.nohz.nr_cpus, 0);
    assert_eq!(
        st.sd_llc_shared(ctx.topo, CpuId(0)).unwrap().nr_busy_cpus,
        4
    );
}

/// Rules (nohz_balancer_kick, kick_ilb, find_new_ilb): a busy CPU with two tasks kicks the
/// first idle CPU of the nohz mask (not itself) with STATS | BALANCE (and NEXT while
/// `needs_update`), pushing nohz.next_balance one jiffy ahead; a second kick with the same
/// flags sends nothing; before nohz.next_balance only a due blocked-load update kicks.
#[test]
fn kick_conditions() {
    let mut w = World::new("hikey");
    w.spawn(0, None);
    w.spawn(0, None);
    w.run_ticks(5);
    for c in [5, 3, 6] {
        enter(&mut w, c);
    }
    let (k, _) = kick(&mut w, 0);
    let k = k.expect("a kick");
    assert_eq!(k.ilb_cpu, CpuId(3));
    assert_eq!(
        k.flags,
        NohzFlags::STATS
            .union(NohzFlags::BALANCE)
            .union(NohzFlags::NEXT)
    );
    assert_eq!(w.st.nohz.next_balance, w.jiffies() + 1);
    assert_eq!(kick(&mut w, 0).0, None, "kick already pending on the ILB");
    // The ILB takes the kick in its softirq and balances on behalf of CPUs 5, 6 and itself.
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    assert!(nohz_idle_balance(&mut ctx, st, CpuId(3), &mut pass));
    assert!(
        pass.migrations.len() == 1,
        "one idle CPU pulls CPU 0's extra task"
    );
    // NEXT collated next_balance; STATS decayed the idle CPUs' blocked load, none of which
    // had any (they never ran).
    assert!(!st.nohz.needs_update);
    assert!(!st.nohz.has_blocked);
    assert_eq!(st.nohz.next_blocked, ctx.jiffies + 32);
    // Next tick: nohz.next_balance not reached, blocked load not due: no kick.
    let _ = (ctx, st);
    w.run_ticks(1);
    for c in 0..8 {
        w.resched(c);
    }
    let busy = (0..8).find(|&c| w.rqs[c as usize].nr_running >= 1).unwrap();
    w.st.nohz.next_balance = w.jiffies() + 10;
    w.st.nohz.needs_update = false;
    assert_eq!(kick(&mut w, busy).0, None);
}

/// Rule (nohz_balancer_kick, LLC rule): a CPU with one task kicks when its LLC has more
/// than one busy CPU (nr_busy_cpus > 1), not when it is the only one.
#[test]
fn llc_busy_rule() {
    let mut w = World::new("hikey");
    w.spawn(0, None);
    w.run_ticks(5);
    for c in [1, 2, 3, 4, 5, 6, 7] {
        enter(&mut w, c);
    }
    w.st.nohz.needs_update = false;
    w.st.nohz.has_blocked = false;
    assert_eq!(
        w.st.sd_llc_shared(&w.topo, CpuId(0)).unwrap().nr_busy_cpus,
        1
    );
    assert_eq!(kick(&mut w, 0).0, None);
    let (ctx, st) = w.split();
    nohz_balance_exit_idle(&ctx, st, CpuId(1));
    let _ = ctx;
    let (k, _) = kick(&mut w, 0);
    assert_eq!(
        k.map(|k| k.flags),
        Some(NohzFlags::STATS.union(NohzFlags::BALANCE))
    );
}

/// Rule (find_new_ilb): the first CPU of nohz.idle_cpus_mask, in CPU order and other than
/// the kicking CPU, that is idle; every mask CPU before it is read (and counted), however
/// it is found. A CPU stays in the mask after taking work until its next tick, so on a
/// machine filling up most of the mask is busy: 150 CPUs, all entered nohz idle, then CPUs
/// 1-130 given a task.
#[test]
fn find_new_ilb_reads_the_mask_up_to_the_first_idle_cpu() {
    let mut w = World::new("cores=150");
    for c in 1..150 {
        enter(&mut w, c);
    }
    for c in 1..=130 {
        w.spawn(c, None);
        w.resched(c);
    }
    let ilb = |w: &mut World, this_cpu: u32| {
        let now = w.now;
        let (ctx, st) = w.split();
        let mut pass = Pass::new(now);
        let cpu = find_new_ilb(&ctx, st, CpuId(this_cpu), &mut pass);
        (cpu, pass.work.cpus_scanned)
    };
    // From CPU 0 (not in the mask): CPUs 1-131 read, 131 the first idle.
    assert_eq!(ilb(&mut w, 0), (Some(CpuId(131)), 131));
    // From CPU 131 itself: 1-130 and 132 read.
    assert_eq!(ilb(&mut w, 131), (Some(CpuId(132)), 131));
    // Every CPU busy: the whole mask read (but the kicking CPU), none found.
    for c in 131..150 {
        w.spawn(c, None);
        w.resched(c);
    }
    assert_eq!(ilb(&mut w, 0), (None, 149));
    assert_eq!(ilb(&mut w, 7), (None, 148));
    // The first CPU read is idle again: found without the mask of maybe-idle CPUs.
    let mut w = World::new("cores=150");
    for c in 1..150 {
        enter(&mut w, c);
    }
    assert_eq!(ilb(&mut w, 1), (Some(CpuId(2)), 1));
}
