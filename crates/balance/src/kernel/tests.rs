//! The balancer through the trait, driven by a miniature engine: every tick each CPU ticks
//! its runqueue, then the balancer's tick hook; a raised softirq runs at once, a kick is
//! delivered to the idle load balancer's softirq, a stopper runs at once; idle CPUs enter
//! nohz idle; CPUs reschedule on request.

use lbsim_topology::CpuId;

use super::*;
use crate::ctx::{IlbKick, Migration, NewidleStep, NohzFlags};
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
                b.idle_enter(&mut ctx, CpuId(c as u32));
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
        b.idle_enter(&mut ctx, CpuId(c));
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

/// Seed 002's set-up on a 2-socket, 16-core, SMT2 machine: the pair of threads that take
/// turns sleeping and waking each other is affined to cores 0 and 1 (CPUs 0-3); the
/// partner runs on CPU 2 while CPU 0, whose thread just went to sleep, goes newly idle.
/// Every other CPU runs two always-running threads pinned to it.
fn seed002_world(bail: bool) -> World {
    let mut w = World::new("sockets=2,cores=16,threads=2");
    w.set_feature(crate::params::LbFeat::NewidleBailOnPending, bail);
    w.spawn(2, Some(&[0, 1, 2, 3]));
    for c in 4..64 {
        w.spawn(c, Some(&[c]));
        w.spawn(c, Some(&[c]));
    }
    w.run_ticks(20);
    w
}

/// A newly idle balance of CPU 0 run step by step through the trait, each step when the
/// previous one's time has passed; `rq->ttwu_pending` is set on CPU 0 after `wake_after`
/// steps (a wake-up another CPU queued meanwhile). Returns every step.
fn newidle_steps(w: &mut World, b: &mut KernelBalancer, wake_after: usize) -> Vec<NewidleStep> {
    let cpu = CpuId(0);
    let mut steps = Vec::new();
    let mut step = {
        let (mut ctx, _) = w.split();
        b.newidle_begin(&mut ctx, cpu)
    };
    loop {
        assert_eq!(step.outcome.elapsed_ns, w.cost.charge(&step.outcome.work));
        w.now += step.outcome.elapsed_ns;
        let done = step.done;
        steps.push(step);
        assert_eq!(b.newidle_in_progress(cpu), !done);
        if done {
            return steps;
        }
        if steps.len() == wake_after {
            w.rqs[0].set_ttwu_pending();
        }
        let (mut ctx, _) = w.split();
        step = b.newidle_continue(&mut ctx, cpu);
    }
}

fn elapsed(steps: &[NewidleStep]) -> u64 {
    steps.iter().map(|s| s.outcome.elapsed_ns).sum()
}

fn work(steps: &[NewidleStep]) -> crate::cost::WorkAccount {
    let mut w = crate::cost::WorkAccount::default();
    for s in steps {
        w.add(&s.outcome.work);
    }
    w
}

/// The first step after `after` steps, and the rest of the balance from there.
fn rest(steps: &[NewidleStep], after: usize) -> (u64, usize) {
    (elapsed(&steps[after..]), steps.len() - after)
}

/// Rules (should_we_balance(), NEWIDLE_BAIL_ON_PENDING, v6.0, seed 002: "bail out if we're
/// doing a CPU_NEWLY_IDLE balance and new tasks are detected"; newidle_balance() v6.6: the
/// domain loop stops "if there are now runnable tasks on this rq", i.e. `pulled_task ||
/// nr_running > 0 || ttwu_pending`): a wake-up queued on CPU 0 while its newly idle balance
/// runs is seen at the next should_we_balance() with the feature, and only at the check
/// after the domain without it. Seed 002's machine, wake-ups queued (1) between
/// newidle_begin and the first newidle_continue, i.e. at the SMT load_balance()'s entry;
/// (2) at the MC load_balance()'s entry; (3) after its first LBF_ALL_PINNED `goto redo`.
///
/// With the feature the step after the wake-up is the last and takes no time. Without it
/// the load_balance() in progress runs to its end: at SMT that is one group scan (120 ns),
/// at MC all of its redo iterations, one per CPU with pinned tasks in the MC span (28),
/// which the wake-up waits for (62960 ns and 59880 ns under the default cost model). In
/// every case the steps before the wake-up are those of an undisturbed balance, and the
/// domain's measured cost (max_newidle_lb_cost) is the simulated time from the domain's
/// start to where the wake-up ended it.
#[test]
fn seed002_wakeup_between_steps() {
    let undisturbed = {
        let mut w = seed002_world(true);
        let mut b = KernelBalancer::new(&w.topo, 0, 1000);
        newidle_steps(&mut w, &mut b, usize::MAX)
    };
    // begin: update_blocked_averages() and the SMT domain's entry; then SMT's balance; the
    // MC domain's entry; 28 MC iterations ending in `goto redo`.
    assert!(
        undisturbed[..3]
            .iter()
            .all(|s| s.outcome.work.redo_passes == 0)
    );
    assert_eq!(undisturbed[0].outcome.work.domains, 1);
    assert_eq!(undisturbed[2].outcome.work.domains, 1);
    assert!(
        undisturbed[3..31]
            .iter()
            .all(|s| s.outcome.work.redo_passes == 1)
    );
    assert_eq!(
        work(&undisturbed[2..32]).domains,
        1,
        "MC alone in steps 2-31"
    );
    assert_eq!(
        work(&undisturbed[..32]).redo_passes,
        28,
        "one per pinned CPU of MC"
    );
    assert!(
        undisturbed
            .iter()
            .all(|s| s.done || s.outcome.elapsed_ns > 0)
    );
    assert!(undisturbed.iter().all(|s| s.outcome.migrations.is_empty()));

    let mut report = Vec::new();
    // (steps before the wake-up, domain it lands in, steps to the end of that domain's
    // load_balance() without the feature)
    for (wake_after, domain, lb_end) in [(1, "SMT", 2), (3, "MC", 32), (4, "MC", 32)] {
        let mut wb = seed002_world(true);
        let mut bb = KernelBalancer::new(&wb.topo, 0, 1000);
        let bail = newidle_steps(&mut wb, &mut bb, wake_after);
        let mut wn = seed002_world(false);
        let mut bn = KernelBalancer::new(&wn.topo, 0, 1000);
        let nobail = newidle_steps(&mut wn, &mut bn, wake_after);
        assert_eq!(bail[..wake_after], undisturbed[..wake_after]);
        assert_eq!(nobail[..wake_after], undisturbed[..wake_after]);

        // With the feature: should_we_balance() says no at once.
        assert_eq!(bail.len(), wake_after + 1, "{domain}: {bail:#?}");
        let last = &bail[wake_after].outcome;
        assert_eq!((last.elapsed_ns, last.work), (0, Default::default()));
        assert!(!last.pulled_task);

        // Without it: the same load_balance() goes on to its end, every step as undisturbed,
        // and the domain check after it stops the balance (no further domain entered).
        assert_eq!(nobail.len(), lb_end + 1, "{domain}: {nobail:#?}");
        assert_eq!(nobail[..lb_end], undisturbed[..lb_end]);
        let last = &nobail[lb_end].outcome;
        assert_eq!((last.elapsed_ns, last.work), (0, Default::default()));
        assert_eq!(work(&nobail[wake_after..]).domains, 0);

        let (bail_ns, _) = rest(&bail, wake_after);
        let (nobail_ns, nobail_steps) = rest(&nobail, wake_after);
        assert_eq!(bail_ns, 0);
        if domain == "MC" {
            assert!(nobail_ns > 50_000, "{nobail_ns}");
            assert_eq!(
                work(&nobail[wake_after..]).redo_passes,
                28 - work(&nobail[..wake_after]).redo_passes
            );
        } else {
            assert_eq!(
                work(&nobail[wake_after..]).cpus_scanned,
                2,
                "the SMT group scan"
            );
        }
        report.push((domain, wake_after, bail_ns, nobail_ns, nobail_steps));

        // The domain's cost runs from its start (the end of the domain before; for SMT
        // also update_blocked_averages()) to its end, across the steps.
        let level = wb.level(0, domain);
        let (from, to_bail) = if domain == "SMT" {
            (0, 2)
        } else {
            (2, wake_after + 1)
        };
        assert_eq!(
            bb.state.sd(CpuId(0), level).max_newidle_lb_cost,
            elapsed(&bail[from..to_bail])
        );
        assert_eq!(
            bn.state.sd(CpuId(0), level).max_newidle_lb_cost,
            elapsed(&nobail[from..lb_end])
        );
    }
    expect_test::expect![[r#"
        [
            (
                "SMT",
                1,
                0,
                120,
                2,
            ),
            (
                "MC",
                3,
                0,
                62960,
                30,
            ),
            (
                "MC",
                4,
                0,
                59880,
                29,
            ),
        ]
    "#]]
    .assert_debug_eq(&report);
}

/// Rule (newidle_balance() through the trait, run in steps): the trait's `newidle()` (the
/// steps back to back) and the steps driven one by one come to the same balance on seed
/// 002's machine: same outcome, work and simulated time (74320 ns over 36 steps with the
/// default cost model), and nothing is left in progress.
#[test]
fn seed002_newidle_is_its_steps() {
    let mut w = seed002_world(true);
    let mut b = KernelBalancer::new(&w.topo, 0, 1000);
    let steps = newidle_steps(&mut w, &mut b, usize::MAX);
    let mut w2 = seed002_world(true);
    let mut b2 = KernelBalancer::new(&w2.topo, 0, 1000);
    let (mut ctx, _) = w2.split();
    let o = b2.newidle(&mut ctx, CpuId(0));
    assert_eq!(o.work, work(&steps));
    assert_eq!(o.elapsed_ns, elapsed(&steps));
    assert_eq!((o.elapsed_ns, steps.len()), (74_320, 36));
    assert!(!o.pulled_task && o.migrations.is_empty());
    assert!(!b2.newidle_in_progress(CpuId(0)));
    assert_eq!(format!("{:?}", b.state), format!("{:?}", b2.state));
}
