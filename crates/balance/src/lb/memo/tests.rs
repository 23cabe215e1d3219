use crate::params::LbFeat;
use lbsim_rq::PrevAction;
use lbsim_topology::{CpuId, Cpumask, SgcId};

use crate::lb::harness::World;
use crate::lb::{CpuIdleType, Found, LbIteration, LoadBalance, Pass};

/// Seed 002's machine without a wake-up: 8 CPUs in one LLC, CPU 0 idle, every other CPU
/// running 3 always-running tasks pinned to it.
fn pinned_world() -> World {
    let mut w = World::pinned_llc();
    w.set_feature(LbFeat::NewidleBailOnPending, false);
    w
}

/// Runs CPU 0's newly idle load_balance() at the LLC to its end; returns the redos and the
/// groups whose statistics its memo reused.
fn balance(w: &mut World) -> (u32, u32) {
    let now = w.now;
    let (mut ctx, st) = w.split();
    let mut pass = Pass::new(now);
    let mut lb = LoadBalance::begin(&ctx, st, CpuId(0), 0, CpuIdleType::NewlyIdle, &mut pass);
    let mut redos = 0;
    while lb.redo(&mut ctx, st, &mut pass) == LbIteration::Redo {
        redos += 1;
    }
    lb.recycle(st);
    let reused = st.sd_memo_spare.last().expect("recycled").reused();
    (redos, reused)
}

/// Invariant (lb/memo.rs): the attempts after a `goto redo` reuse the statistics of the
/// groups that lost no CPU and whose runqueues did not change (debug builds recompute each
/// and compare); sometimes: it happens, from the third attempt of the first balance and
/// from the second attempt of the next balance of the same domain, which redid too.
#[test]
fn redo_reuses_unchanged_groups() {
    let mut w = pinned_world();
    let (redos, reused) = balance(&mut w);
    assert_eq!(redos, 6, "every busy CPU's tasks are pinned");
    // The memo starts keeping after the first redo, so attempt 2 computes all 8 groups;
    // attempts 3 to 7 recompute only the group of the CPU cleared last. No wake-up is in
    // flight, so the local group's idle CPU 0 is idle whatever the pass's clock, and its
    // result is reused too.
    assert_eq!(reused, 5 * 7);
    // This domain redid last time, so the next balance keeps from its first attempt.
    let (redos, reused) = balance(&mut w);
    assert_eq!(redos, 6);
    assert_eq!(reused, 6 * 7);
}

/// As [`redo_reuses_unchanged_groups`], with a wake-up IPI that may be in flight (declared
/// on CPU 5, arriving after the pass): a group that counted an idle CPU read the pass's
/// clock, so its result is never reused; the local group (idle CPU 0) is recomputed on
/// every attempt, besides the group of the CPU cleared last.
#[test]
fn redo_recomputes_a_group_with_an_idle_cpu_while_a_wakeup_may_be_in_flight() {
    let mut w = pinned_world();
    w.pend(5, u64::MAX);
    let (redos, reused) = balance(&mut w);
    assert_eq!(redos, 6);
    assert_eq!(reused, 5 * 6);
    let (redos, reused) = balance(&mut w);
    assert_eq!(redos, 6);
    assert_eq!(reused, 6 * 6);
}

/// What one attempt of a load_balance() found and left behind.
#[derive(Debug, PartialEq, Eq)]
struct Attempt {
    /// find_busiest_group()'s local and busiest group types and `env->imbalance`, and
    /// find_busiest_queue()'s CPU.
    found: Option<Found>,
    /// How the attempt ended.
    end: LbIteration,
    /// The CPUs read by the pass so far (what its clock charges).
    cpus_scanned: u32,
    /// `env->cpus` after the attempt.
    cpus: Cpumask,
    /// The root domain's overloaded flag after the attempt.
    rd_overloaded: bool,
}

/// A scripted balance: what each attempt left, and the groups its memo reused and, of
/// those, replayed ahead of update_sd_pick_busiest().
struct Script {
    attempts: Vec<Attempt>,
    reused: u32,
    replayed: u32,
}

/// On [`pinned_world`], runs CPU 0's newly idle balance at the LLC once (so that the
/// domain redid), then runs the next one attempt by attempt, calling `between(i, w)`
/// before attempt `i` (from 1). With `memo` false, the second balance runs every attempt
/// without a memo: the kernel's code.
fn scripted(memo: bool, between: impl Fn(u32, &mut World)) -> Script {
    let mut w = pinned_world();
    balance(&mut w);
    let mut pass = Pass::new(w.now);
    let mut lb = {
        let (ctx, st) = w.split();
        LoadBalance::begin(&ctx, st, CpuId(0), 0, CpuIdleType::NewlyIdle, &mut pass)
    };
    let mut attempts = Vec::new();
    for i in 1.. {
        between(i, &mut w);
        if !memo {
            lb.redid = false;
            lb.memo = None;
        }
        let (mut ctx, st) = w.split();
        let end = lb.redo(&mut ctx, st, &mut pass);
        attempts.push(Attempt {
            found: lb.found,
            end,
            cpus_scanned: pass.work.cpus_scanned,
            cpus: lb.env.cpus.clone(),
            rd_overloaded: st.rd.overloaded,
        });
        if end != LbIteration::Redo {
            break;
        }
    }
    let (reused, replayed) = lb
        .memo
        .as_ref()
        .filter(|_| memo)
        .map_or((0, 0), |m| (m.reused(), m.replayed()));
    lb.recycle(&mut w.st);
    Script {
        attempts,
        reused,
        replayed,
    }
}

/// The group capacity of the LLC's group holding `cpu`.
fn sgc_of(w: &World, cpu: u32) -> SgcId {
    let sd = &w.topo.domains(CpuId(0))[0];
    w.topo
        .groups(sd)
        .find(|g| w.topo.span(g.span).test(CpuId(cpu)))
        .expect("a group holds every CPU of the domain")
        .sgc
}

/// Every task of `cpu` exits.
fn empty_cpu(w: &mut World, cpu: usize) {
    let now = w.now;
    while w.rqs[cpu].curr.is_some() {
        w.rqs[cpu].schedule(&mut w.tasks, PrevAction::Exit, now);
    }
    assert_eq!(w.rqs[cpu].nr_running, 0);
}

/// Regression: a result kept without a wake-up in flight, for a group whose only CPU had
/// been cleared from `env->cpus` and was idle, is reused once a wake-up may be in flight;
/// the debug builds' check recomputed it as `timed` (asked the clock) because the CPU
/// outside `env->cpus` looked idle, though update_sg_lb_stats() never reads it, and
/// panicked on a correct reuse. The attempts equal those without a memo.
#[test]
fn kept_result_of_a_group_cleared_from_env_cpus_survives_a_wakeup_in_flight() {
    let between = |i: u32, w: &mut World| match i {
        // Attempt 1 clears CPU 1 (every busy CPU ties; the first one found is the busiest).
        2 => empty_cpu(w, 1),
        3 => w.pend(5, u64::MAX),
        _ => {}
    };
    let with_memo = scripted(true, between);
    assert!(!with_memo.attempts[0].cpus.test(CpuId(1)));
    assert!(with_memo.reused > 0);
    assert_eq!(with_memo.attempts, scripted(false, between).attempts);
}

/// Invariant (lb/memo.rs): with a memo, every attempt of a load_balance() finds, scans and
/// leaves what it does without one (the kernel's code), whatever changes between attempts
/// that the memo must notice: a task forked on a CPU still in `env->cpus`, a group
/// capacity and a group's `sgc->imbalance` rewritten, a wake-up IPI pending on the idle
/// local CPU and then handled. Sometimes: kept results are reused, and replayed ahead of
/// update_sd_pick_busiest().
#[test]
fn memo_changes_no_attempt_of_a_balance_changed_between_attempts() {
    let between = |i: u32, w: &mut World| match i {
        // Attempt 1 cleared CPU 1; CPU 7, with one task more, is the busiest of attempt 2.
        2 => {
            w.spawn(7, Some(&[7]));
        }
        // Attempt 3 replays the groups of CPUs 0 to 3, restoring a busiest candidate
        // among them, which CPU 4's group, now of less capacity, then beats.
        3 => {
            let sgc = sgc_of(w, 4);
            w.st.sgc_mut(sgc).capacity = 700;
        }
        4 => {
            let sgc = sgc_of(w, 6);
            w.st.sgc_mut(sgc).imbalance = true;
        }
        // The local group becomes group_imbalanced.
        5 => {
            let sgc = sgc_of(w, 0);
            w.st.sgc_mut(sgc).imbalance = true;
        }
        // A wake-up reaches CPU 0, which stops looking idle, and is then handled.
        6 => w.pend(0, 0),
        7 => w.pending.at.borrow_mut()[0] = None,
        _ => {}
    };
    let with_memo = scripted(true, between);
    let without = scripted(false, between);
    assert_eq!(with_memo.attempts, without.attempts);
    assert!(with_memo.attempts.len() >= 7, "every change is made");
    assert!(with_memo.replayed > 0, "no group was replayed");
    assert!(
        with_memo.reused > with_memo.replayed,
        "no group was reused but replayed ones"
    );
}
