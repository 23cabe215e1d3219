//! The balancer through the trait, driven by a miniature engine: every tick each CPU ticks
//! its runqueue, then the balancer's tick hook; a raised softirq runs at once, a kick is
//! delivered to the idle load balancer's softirq, a stopper runs at once; idle CPUs enter
//! nohz idle; CPUs reschedule on request.

use lbsim_topology::CpuId;

use super::*;
use crate::ctx::{IlbKick, Migration, NohzFlags};
use crate::lb::harness::World;

#[derive(Debug, Default)]
struct Log {
    migrations: Vec<(u64, Migration)>,
    kicks: Vec<(u64, CpuId, IlbKick)>,
    softirqs: Vec<(u64, CpuId)>,
    stoppers: u32,
}

fn engine(w: &mut World, b: &mut KernelBalancer, ticks: u64, log: &mut Log) {
    let n = w.rqs.len();
    for _ in 0..ticks {
        w.run_ticks(1);
        let j = w.jiffies();
        for c in 0..n {
            let cpu = CpuId(c as u32);
            let out = {
                let (mut ctx, _) = w.split();
                b.tick(&mut ctx, cpu)
            };
            let mut outcomes = vec![];
            if out.raise_softirq {
                log.softirqs.push((j, cpu));
                let (mut ctx, _) = w.split();
                outcomes.push(b.softirq(&mut ctx, cpu));
            }
            if let Some(k) = out.kick {
                log.kicks.push((j, cpu, k));
                let (mut ctx, _) = w.split();
                outcomes.push(b.softirq(&mut ctx, k.ilb_cpu));
            }
            while let Some(o) = outcomes.pop() {
                assert_eq!(o.elapsed_ns, w.cost.charge(&o.work));
                log.migrations.extend(o.migrations.iter().map(|m| (j, *m)));
                for req in o.stoppers {
                    log.stoppers += 1;
                    let (mut ctx, _) = w.split();
                    outcomes.push(b.active_balance(&mut ctx, req));
                }
            }
            for c2 in 0..n {
                w.resched(c2 as u32);
            }
        }
        for c in 0..n {
            if w.rqs[c].idle_cpu() && !b.state.cpus[c].nohz_tick_stopped {
                let (mut ctx, _) = w.split();
                b.nohz_enter_idle(&mut ctx, CpuId(c as u32));
            }
        }
        w.check();
    }
}

/// Rule (sched_balance_trigger, nohz_balancer_kick, rebalance_domains as CPU_IDLE): CPU 1 of a
/// 2-CPU machine is idle (and enters nohz idle after the first tick) while CPU 0 runs two
/// tasks. The MC level's idle interval is 2 ms, so CPU 1's first idle balance is due at
/// jiffy 2; there CPU 0's tick (two tasks) kicks CPU 1 as idle load balancer, which balances
/// for itself and pulls one task. Nothing moves afterwards.
#[test]
fn first_idle_balance_through_the_trait() {
    let mut w = World::new("cores=2");
    w.tunables.migration_cost_ns = 0;
    w.spawn(0, None);
    w.spawn(0, None);
    let mut b = KernelBalancer::new(&w.topo, 0, 1000);
    let mut log = Log::default();
    engine(&mut w, &mut b, 20, &mut log);
    assert_eq!(log.migrations.len(), 1, "{log:?}");
    let (j, m) = log.migrations[0];
    assert_eq!((m.src, m.dst), (CpuId(0), CpuId(1)));
    assert_eq!(j, 2, "the first balance the MC interval allows");
    assert_eq!(log.kicks[0].2.ilb_cpu, CpuId(1));
    assert_eq!(w.counts(), vec![1, 1]);
}

/// Rules (nohz_balancer_kick, kick_ilb, _nohz_idle_balance): on hikey with every CPU but 0
/// idle and in nohz idle, CPU 0 running three tasks kicks the first idle CPU (1) with
/// STATS | BALANCE; the idle load balancer runs rebalance_domains on behalf of the idle
/// CPUs (starting after itself), which pull CPU 0's extra tasks to idle CPUs.
#[test]
fn idle_load_balancer_pulls_for_idle_cpus() {
    let mut w = World::new("hikey");
    w.tunables.migration_cost_ns = 0;
    for _ in 0..3 {
        w.spawn(0, None);
    }
    let mut b = KernelBalancer::new(&w.topo, 0, 1000);
    // CPUs 1-7 stop their ticks at once.
    for c in 1..8 {
        let (mut ctx, _) = w.split();
        b.nohz_enter_idle(&mut ctx, CpuId(c));
    }
    assert_eq!(b.state.nohz.nr_cpus, 7);
    let mut log = Log::default();
    engine(&mut w, &mut b, 40, &mut log);
    let (_, from, k) = log.kicks[0];
    assert_eq!(from, CpuId(0));
    assert_eq!(k.ilb_cpu, CpuId(1));
    assert!(k.flags.contains(NohzFlags::STATS.union(NohzFlags::BALANCE)));
    assert_eq!(
        w.counts().iter().filter(|&&n| n == 1).count(),
        3,
        "{:?}",
        w.counts()
    );
    assert!(log.migrations.iter().all(|(_, m)| m.src == CpuId(0)));
    // The ILB pulled on behalf of another CPU at least once.
    assert!(log.migrations.iter().any(|(_, m)| m.dst != CpuId(1)));
    assert!(b.state.nohz.next_blocked > 0);
}

/// Rules (need_active_balance, migrate_misfit; active_load_balance_cpu_stop): on hikey960
/// the big CPUs' idle balance finds the little CPU 0's always-running task misfit, cannot
/// detach it (it runs), and asks for the stopper, which pushes it to a big CPU.
#[test]
fn misfit_goes_big_through_the_stopper() {
    let mut w = World::new("hikey960");
    let p = w.spawn(0, None);
    let mut b = KernelBalancer::new(&w.topo, 0, 1000);
    let mut log = Log::default();
    engine(&mut w, &mut b, 300, &mut log);
    assert!(log.stoppers >= 1);
    assert!(w.tasks[p].cpu.0 >= 4, "on a big CPU: {:?}", w.tasks[p].cpu);
    assert_eq!(log.migrations.len(), 1, "{log:?}");
}

/// Rule (newidle_balance through the trait): the outcome reports the pull and charges the
/// work; the root domain is marked overloaded from the runqueues (add_nr_running()).
#[test]
fn newidle_through_the_trait() {
    let mut w = World::new("cores=2");
    w.tunables.migration_cost_ns = 0;
    w.spawn(0, None);
    w.spawn(0, None);
    w.run_ticks(10);
    let mut b = KernelBalancer::new(&w.topo, 0, 1000);
    assert!(!b.state.rd.overloaded);
    let (mut ctx, _) = w.split();
    let o = b.newidle(&mut ctx, CpuId(1));
    assert!(o.pulled_task);
    assert_eq!(o.migrations.len(), 1);
    assert_eq!(o.elapsed_ns, w.cost.charge(&o.work));
    assert!(o.work.domains == 1 && o.work.tasks_moved == 1);
}
