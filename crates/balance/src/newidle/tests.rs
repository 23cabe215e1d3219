use crate::params::LbFeat;
use lbsim_topology::CpuId;

use super::*;
use crate::lb::harness::World;

/// Seed 002's machine: 8 CPUs in one LLC; CPU 0 becomes newly idle; every other CPU runs 3
/// always-running tasks pinned to it. A wake-up for CPU 0 arrives 1 ns after the newly idle
/// balance starts.
fn pinned_world() -> World {
    let mut w = World::pinned_llc();
    // add_nr_running() has marked the root domain overloaded.
    w.st.rd.overloaded = true;
    w.pend(0, w.now + 1);
    w
}

fn newidle(w: &mut World) -> (NewidleResult, Pass) {
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    let r = sched_balance_newidle(&mut ctx, st, CpuId(0), &mut pass);
    (r, pass)
}

/// Rule (should_we_balance, NEWIDLE_BAIL_ON_PENDING, v6.0, seed 002): a newly idle balance
/// gives up as soon as the destination has a wake-up pending: with the feature the first
/// should_we_balance() call (after entering the domain, 200 ns in) bails out and nothing
/// is scanned. Without it load_balance() keeps trying to pull pinned tasks: every CPU's
/// tasks are examined and LBF_ALL_PINNED redoes the search six times, and only the check
/// between domains stops it; the wake-up waits for all of it.
#[test]
fn newidle_bails_on_pending_wakeup() {
    let mut w = pinned_world();
    let (r, pass) = newidle(&mut w);
    assert!(!r.pulled_task);
    assert_eq!(pass.work.tasks_examined, 0);
    assert_eq!(pass.work.domains, 1);
    let fast = w.cost.charge(&pass.work);

    let mut w = pinned_world();
    w.set_feature(LbFeat::NewidleBailOnPending, false);
    let (r, pass) = newidle(&mut w);
    assert!(!r.pulled_task);
    assert_eq!(
        pass.work.tasks_examined,
        7 * 3,
        "loop_max = 3 tasks of each CPU, all pinned"
    );
    assert_eq!(pass.work.redo_passes, 6);
    let slow = w.cost.charge(&pass.work);
    assert!(slow > 10 * fast, "{slow} vs {fast}");
    assert_eq!(r.curr_cost_ns, slow);
}

/// Rule (newidle_balance): a wake-up already pending when the CPU goes idle: return at once.
#[test]
fn pending_before_start_returns_at_once() {
    let mut w = pinned_world();
    w.pend(0, w.now);
    let (r, pass) = newidle(&mut w);
    assert_eq!((r.pulled_task, r.domains_balanced), (false, 0));
    assert_eq!(pass.work, Default::default());
    assert_eq!(w.rqs[0].idle_stamp(), None);
}

/// Rules (newidle_balance): nothing is tried unless the root domain is overloaded and
/// `avg_idle` covers the lowest domain's `max_newidle_lb_cost`; a domain is skipped once
/// `avg_idle < curr_cost + max_newidle_lb_cost`; the loop stops after a pull; the measured
/// cost raises max_newidle_lb_cost and rq->max_idle_balance_cost.
#[test]
fn newidle_gates_and_pull() {
    let mut w = World::new("hikey");
    w.tunables.migration_cost_ns = 0;
    w.spawn(1, None);
    w.spawn(1, None);
    w.run_ticks(20);
    w.st.rd.overloaded = false;
    let (r, pass) = newidle(&mut w);
    assert_eq!(
        (r.pulled_task, r.domains_balanced, pass.work.domains),
        (false, 0, 0)
    );
    assert_eq!(w.rqs[0].rq_clock(), w.now + lbsim_rq::SCHED_CLOCK_OFFSET_NS);
    assert_eq!(
        w.rqs[0].idle_stamp(),
        Some(w.rqs[0].rq_clock()),
        "rq_clock before the gates"
    );

    w.st.rd.overloaded = true;
    w.st.sd_mut(CpuId(0), 0).max_newidle_lb_cost = w.rqs[0].avg_idle + 1;
    let (r, _) = newidle(&mut w);
    assert_eq!(r.domains_balanced, 0);

    w.st.sd_mut(CpuId(0), 0).max_newidle_lb_cost = 0;
    let (r, pass) = newidle(&mut w);
    assert!(r.pulled_task);
    assert_eq!(r.domains_balanced, 1, "stops after the pull at MC");
    assert_eq!(pass.migrations.len(), 1);
    assert_eq!(pass.migrations[0].dst, CpuId(0));
    assert_eq!(w.st.sd(CpuId(0), 0).max_newidle_lb_cost, r.curr_cost_ns);
    assert!(r.curr_cost_ns > 0);
    assert_eq!(w.rqs[0].idle_stamp(), None, "cleared on a pull");
}

/// The newly idle balance as it was before it ran in steps: one call, one pass, the whole
/// domain loop at once (v6.6 newidle_balance()). The stepwise model must come to exactly
/// this on a machine where nothing happens between the steps.
fn oracle_newidle_balance(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    pass: &mut Pass,
) -> NewidleResult {
    let topo = ctx.topo;
    let hz = ctx.hz;
    let jiffies = ctx.jiffies;
    let mut next_balance = jiffies + u64::from(hz);
    let mut pulled_task = false;
    let mut curr_cost = 0u64;
    let mut domains_balanced = 0u32;
    let c = this_cpu.index();

    ctx.rqs[c].update_misfit_status(ctx.tasks, None);
    if ttwu_pending(ctx, this_cpu, pass.now_ns(ctx)) {
        return NewidleResult {
            pulled_task: false,
            curr_cost_ns: 0,
            domains_balanced: 0,
        };
    }
    let now = ctx.now_ns;
    let r = &mut ctx.rqs[c];
    r.update_rq_clock(now);
    r.set_idle_stamp(Some(r.rq_clock()));

    let domains = topo.domains(this_cpu);
    'out: {
        if domains.is_empty() {
            break 'out;
        }
        let avg_idle = ctx.rqs[c].avg_idle;
        if !st.rd.overloaded || avg_idle < st.sd(this_cpu, 0).max_newidle_lb_cost {
            update_next_balance(ctx, st, this_cpu, 0, &mut next_balance);
            break 'out;
        }
        let mut t0 = pass.now_ns(ctx);
        update_blocked_averages(ctx, st, this_cpu, pass);
        for (level, sd) in domains.iter().enumerate() {
            update_next_balance(ctx, st, this_cpu, level, &mut next_balance);
            if avg_idle < curr_cost + st.sd(this_cpu, level).max_newidle_lb_cost {
                break;
            }
            if sd.flags.contains(SdFlag::BalanceNewidle) {
                let mut continue_balancing = true;
                pulled_task = crate::lb::load_balance(
                    ctx,
                    st,
                    this_cpu,
                    level,
                    CpuIdleType::NewlyIdle,
                    &mut continue_balancing,
                    pass,
                ) > 0;
                domains_balanced += 1;
                let t1 = pass.now_ns(ctx);
                let domain_cost = t1 - t0;
                update_newidle_cost(st.sd_mut(this_cpu, level), domain_cost, jiffies, hz);
                curr_cost += domain_cost;
                t0 = t1;
            }
            if pulled_task
                || ctx.rqs[c].nr_running > 0
                || ttwu_pending(ctx, this_cpu, pass.now_ns(ctx))
            {
                break;
            }
        }
        let r = &mut ctx.rqs[c];
        if curr_cost > r.max_idle_balance_cost() {
            r.set_max_idle_balance_cost(curr_cost);
        }
        if ctx.rqs[c].cfs.h_nr_running > 0 && !pulled_task {
            pulled_task = true;
        }
    }
    if ctx.rqs[c].next_balance() > next_balance {
        ctx.rqs[c].set_next_balance(next_balance);
    }
    if pulled_task {
        ctx.rqs[c].set_idle_stamp(None);
    } else {
        nohz_newidle_balance(ctx, st, this_cpu, pass);
    }
    NewidleResult {
        pulled_task,
        curr_cost_ns: curr_cost,
        domains_balanced,
    }
}

/// Everything a newly idle balance leaves behind, for comparing two runs.
#[derive(Debug, PartialEq, Eq)]
struct Trace {
    result: NewidleResult,
    work: crate::cost::WorkAccount,
    elapsed_ns: u64,
    migrations: Vec<crate::ctx::Migration>,
    state: String,
    rqs: String,
    tasks: String,
}

fn trace(w: &World, result: NewidleResult, pass: &Pass, elapsed_ns: u64) -> Trace {
    Trace {
        result,
        work: pass.work,
        elapsed_ns,
        migrations: pass.migrations.to_vec(),
        state: format!("{:?}", w.st),
        rqs: format!("{:?}", w.rqs),
        tasks: format!("{:?}", w.tasks),
    }
}

/// The old single call on `cpu`.
fn run_oracle(w: &mut World, cpu: u32) -> Trace {
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    let r = oracle_newidle_balance(&mut ctx, st, CpuId(cpu), &mut pass);
    let elapsed = w.cost.charge(&pass.work);
    trace(w, r, &pass, elapsed)
}

/// The steps on `cpu`, each in its own pass starting when the previous one's work is done
/// (as KernelBalancer runs them); returns the trace of all of them and the number of steps.
fn run_stepwise(w: &mut World, cpu: u32) -> (Trace, usize) {
    let start = w.now;
    let mut now = start;
    let mut all = Pass::new(start);
    let mut steps = 0;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    let mut progress = sched_balance_newidle_begin(&mut ctx, st, CpuId(cpu), &mut pass);
    let result = loop {
        steps += 1;
        let elapsed = ctx.cost.charge(&pass.work);
        if !matches!(progress, NewidleProgress::Done(_)) {
            assert!(
                elapsed > 0,
                "a step that does not end the balance takes time"
            );
        }
        now += elapsed;
        all.work.add(&pass.work);
        all.migrations.extend(pass.migrations.iter().copied());
        match progress {
            NewidleProgress::Done(r) => break r,
            NewidleProgress::Pending(cursor) => {
                assert_eq!(cursor.this_cpu(), CpuId(cpu));
                ctx.now_ns = now;
                pass = Pass::new(now);
                progress = sched_balance_newidle_continue(&mut ctx, st, cursor, &mut pass);
            }
        }
    };
    (trace(w, result, &all, now - start), steps)
}

/// Rule (the stepwise newly idle balance is the kernel's one function cut at its check
/// points): on a machine where nothing happens between the steps, running
/// newidle_balance() in steps leaves the same runqueues, tasks, balancer state and
/// schedstat, does the same work in the same simulated time and returns the same result as
/// the single call it replaced; including when a wake-up (declared at a fixed simulated
/// time) stops it at a should_we_balance() or a domain check.
#[test]
fn stepwise_equals_the_single_call() {
    type Make = fn() -> World;
    let scenarios: [(&str, Make, u32); 5] = [
        ("cores=8, pinned", pinned_world, 0),
        (
            "cores=8, pinned, no bail",
            || {
                let mut w = pinned_world();
                w.set_feature(LbFeat::NewidleBailOnPending, false);
                w
            },
            0,
        ),
        (
            "hikey, pull",
            || {
                let mut w = World::new("hikey");
                w.tunables.migration_cost_ns = 0;
                for c in [1, 1, 1, 5, 5, 6] {
                    w.spawn(c, None);
                }
                w.spawn(4, Some(&[4]));
                w.spawn(4, Some(&[4]));
                w.run_ticks(20);
                w.st.rd.overloaded = true;
                w
            },
            0,
        ),
        (
            "2x4x2, some pinned",
            || {
                let mut w = World::new("sockets=2,cores=4,threads=2");
                for c in 2..16 {
                    w.spawn(c, Some(&[c]));
                    if c % 3 == 0 {
                        w.spawn(c, Some(&[c]));
                    }
                }
                w.spawn(9, Some(&[0, 9]));
                w.spawn(9, None);
                w.spawn(12, None);
                w.run_ticks(20);
                w.st.rd.overloaded = true;
                w
            },
            0,
        ),
        (
            "seed 002, 2x16x2",
            || {
                let mut w = World::new("sockets=2,cores=16,threads=2");
                for c in 4..64 {
                    w.spawn(c, Some(&[c]));
                    w.spawn(c, Some(&[c]));
                }
                w.run_ticks(10);
                w.st.rd.overloaded = true;
                w
            },
            0,
        ),
    ];
    let mut multi_step = 0;
    for (name, make, cpu) in scenarios {
        for pend_after in [
            None,
            Some(0u64),
            Some(1),
            Some(200),
            Some(1_000),
            Some(9_000),
        ] {
            for bail in [true, false] {
                let setup = || {
                    let mut w = make();
                    w.set_feature(LbFeat::NewidleBailOnPending, bail);
                    w.pending.at.borrow_mut()[cpu as usize] = pend_after.map(|d| w.now + d);
                    w
                };
                let mut a = setup();
                let mut b = setup();
                let old = run_oracle(&mut a, cpu);
                let (new, steps) = run_stepwise(&mut b, cpu);
                assert_eq!(
                    old, new,
                    "{name}, wake-up after {pend_after:?}, bail {bail}"
                );
                if steps > 2 {
                    multi_step += 1;
                }
            }
        }
    }
    assert!(
        multi_step >= 20,
        "most runs went through several steps: {multi_step}"
    );
}
