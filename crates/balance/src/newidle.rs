//! Newly idle balancing: a CPU about to go idle tries to pull a task at once.
//!
//! Follows kernel/sched/fair.c of v6.6: newidle_balance() (renamed sched_balance_newidle()
//! in v6.10) and nohz_newidle_balance(), checked against v6.12. It runs in simulated time:
//! each domain's cost is the simulated time from its start to its end (what
//! `sched_clock_cpu()` measures in the kernel), which feeds `max_newidle_lb_cost`.
//!
//! The kernel balances with this runqueue's lock dropped, so other CPUs go on meanwhile and
//! may queue a wake-up here; it looks for one (or for a task queued here) at three kinds of
//! points: on entry, at every should_we_balance() (each load_balance() entry and each
//! `goto redo` after LBF_ALL_PINNED; with NEWIDLE_BAIL_ON_PENDING, seed 002), and after
//! each domain. lbsim therefore runs a newly idle balance in steps that end at those points
//! ([`sched_balance_newidle_begin`], [`sched_balance_newidle_continue`], with the state in
//! between in a [`NewidleCursor`]): the engine runs the next step once the previous step's
//! work has taken its simulated time, after whatever other CPUs did in between. A step
//! ends at a check point only if its clock has moved since the step began (a check with no
//! time since the previous one would see the same machine), so every step takes time.
//! `avg_idle` and `jiffies` are read when the loop gets to them, as the kernel reads them.
//! [`sched_balance_newidle`] runs the steps back to back in one pass.
//!
//! Where v6.6 and v6.12 differ, v6.6 is followed: the domain loop stops when a task was
//! pulled or when this runqueue now has a task or a wake-up pending (v6.10+ stops on
//! `!continue_balancing` instead, which with NEWIDLE_BAIL_ON_PENDING comes to the same).
//! The recent proportional newidle (`NI_RANDOM`, `newidle_ratio`) is not modelled.

use lbsim_topology::{CpuId, SdFlag};

use crate::ctx::BalanceCtx;
use crate::lb::{CpuIdleType, LbIteration, LoadBalance, Pass, ttwu_pending};
use crate::nohz;
use crate::rebalance::{update_newidle_cost, update_next_balance};
use crate::state::BalanceState;

/// What a newly idle balance did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewidleResult {
    /// `pulled_task > 0`: a CFS task is now queued here.
    pub pulled_task: bool,
    /// The cost of the domain loop (`curr_cost`), in ns.
    pub curr_cost_ns: u64,
    /// Domains in which load_balance() ran.
    pub domains_balanced: u32,
}

/// Where the domain loop of a newly idle balance is.
#[derive(Clone, Debug)]
enum At {
    /// The head of the loop body for domain `level`: update_next_balance(), the `avg_idle`
    /// gate, and entering load_balance() if the domain has SD_BALANCE_NEWIDLE.
    DomainHead,
    /// Check point: should_we_balance() of the load_balance() in progress at `level`.
    ShouldWeBalance(Box<LoadBalance>),
    /// Check point: the loop's test after domain `level` (`pulled_task ||
    /// this_rq->nr_running > 0 || this_rq->ttwu_pending`, v6.6).
    DomainCheck,
}

/// A newly idle balance between two steps: the locals of newidle_balance()
/// (sched_balance_newidle()) and the load_balance() in progress.
#[derive(Clone, Debug)]
pub struct NewidleCursor {
    /// `this_cpu`.
    this_cpu: CpuId,
    /// `next_balance`, in jiffies.
    next_balance: u64,
    /// `pulled_task`.
    pulled_task: bool,
    /// `curr_cost`, in ns.
    curr_cost: u64,
    /// `t0`: when the current domain's balance started (simulated ns).
    t0: u64,
    /// The level of the domain the loop is at.
    level: usize,
    /// Domains in which load_balance() ran.
    domains_balanced: u32,
    /// Where in the loop.
    at: At,
}

impl NewidleCursor {
    /// The CPU balancing.
    pub fn this_cpu(&self) -> CpuId {
        self.this_cpu
    }
}

/// How far a step of a newly idle balance went.
#[derive(Clone, Debug)]
pub enum NewidleProgress {
    /// The step stopped at a check point; continue with [`sched_balance_newidle_continue`]
    /// once the step's work has taken its time.
    Pending(NewidleCursor),
    /// The balance is over.
    Done(NewidleResult),
}

/// Follows fair.c: newidle_balance() (v6.6; sched_balance_newidle() since v6.10), all its
/// steps back to back in `pass` (nothing happens elsewhere in between).
///
/// 1. A wake-up already pending on this CPU: return at once (nothing to do).
/// 2. `idle_stamp = now`.
/// 3. If the root domain is not overloaded, or `avg_idle` is below the lowest domain's
///    `max_newidle_lb_cost`, only pull `next_balance` earlier.
/// 4. Otherwise update the blocked load and, bottom-up, balance each SD_BALANCE_NEWIDLE
///    domain while `avg_idle >= curr_cost + max_newidle_lb_cost`, measuring each domain's
///    cost; stop on a pull, a queued task or a pending wake-up.
/// 5. Raise `max_idle_balance_cost`; a task queued meanwhile counts as pulled.
/// 6. Pull `rq->next_balance` earlier; clear `idle_stamp` on success, else
///    nohz_newidle_balance().
pub fn sched_balance_newidle(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    pass: &mut Pass,
) -> NewidleResult {
    let mut progress = sched_balance_newidle_begin(ctx, st, this_cpu, pass);
    loop {
        match progress {
            NewidleProgress::Done(r) => return r,
            NewidleProgress::Pending(cursor) => {
                progress = sched_balance_newidle_continue(ctx, st, cursor, pass);
            }
        }
    }
}

/// Follows fair.c: newidle_balance() (v6.6; sched_balance_newidle() since v6.10) from its
/// entry to the first check point after some work: steps 1 to 3 of
/// [`sched_balance_newidle`], then update_blocked_averages() and the domain loop up to the
/// first should_we_balance() (or the check after the first domain). `pass` starts at the
/// step's time.
pub fn sched_balance_newidle_begin(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    pass: &mut Pass,
) -> NewidleProgress {
    let step_start_ns = pass.now_ns(ctx);
    let c = this_cpu.index();
    let mut cursor = NewidleCursor {
        this_cpu,
        next_balance: ctx.jiffies + u64::from(ctx.hz),
        pulled_task: false,
        curr_cost: 0,
        t0: 0,
        level: 0,
        domains_balanced: 0,
        at: At::DomainHead,
    };

    ctx.rqs[c].update_misfit_status(ctx.tasks, None);
    let pending = ttwu_pending(ctx, this_cpu, pass.now_ns(ctx));
    st.checks.newidle_begin(pending);
    if pending {
        return NewidleProgress::Done(NewidleResult {
            pulled_task: false,
            curr_cost_ns: 0,
            domains_balanced: 0,
        });
    }
    let now = ctx.now_ns;
    let r = &mut ctx.rqs[c];
    r.update_rq_clock(now);
    r.set_idle_stamp(Some(r.rq_clock()));

    if ctx.topo.domains(this_cpu).is_empty() {
        return NewidleProgress::Done(newidle_out(ctx, st, &cursor, pass));
    }
    if !st.rd.overloaded || ctx.rqs[c].avg_idle < st.sd(this_cpu, 0).max_newidle_lb_cost {
        update_next_balance(ctx, st, this_cpu, 0, &mut cursor.next_balance);
        return NewidleProgress::Done(newidle_out(ctx, st, &cursor, pass));
    }
    cursor.t0 = pass.now_ns(ctx);
    update_blocked_averages(ctx, st, this_cpu, pass);
    newidle_run(ctx, st, cursor, pass, step_start_ns)
}

/// Follows fair.c: newidle_balance() (v6.6; sched_balance_newidle() since v6.10) from the
/// check point where the previous step stopped to the next one after some work, or to the
/// end. `pass` starts at the step's time (or goes on from the previous step's pass).
pub fn sched_balance_newidle_continue(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    cursor: NewidleCursor,
    pass: &mut Pass,
) -> NewidleProgress {
    let step_start_ns = pass.now_ns(ctx);
    newidle_run(ctx, st, cursor, pass, step_start_ns)
}

/// The domain loop (`for_each_domain(this_cpu, sd)`) from where `cursor` is, up to a check
/// point reached after `step_start_ns` (returns the cursor) or to the end of the balance.
fn newidle_run(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    mut cursor: NewidleCursor,
    pass: &mut Pass,
    step_start_ns: u64,
) -> NewidleProgress {
    let topo = ctx.topo;
    let this_cpu = cursor.this_cpu;
    let c = this_cpu.index();
    let domains = topo.domains(this_cpu);
    // A check point ends the step if the step's clock has moved.
    let stop_here = |ctx: &BalanceCtx<'_>, pass: &Pass| pass.now_ns(ctx) > step_start_ns;
    loop {
        match &mut cursor.at {
            At::DomainHead => {
                let level = cursor.level;
                let Some(sd) = domains.get(level) else {
                    break;
                };
                update_next_balance(ctx, st, this_cpu, level, &mut cursor.next_balance);
                if ctx.rqs[c].avg_idle
                    < cursor.curr_cost + st.sd(this_cpu, level).max_newidle_lb_cost
                {
                    break;
                }
                if sd.flags.contains(SdFlag::BalanceNewidle) {
                    let lb =
                        LoadBalance::begin(ctx, st, this_cpu, level, CpuIdleType::NewlyIdle, pass);
                    cursor.at = At::ShouldWeBalance(Box::new(lb));
                } else {
                    cursor.at = At::DomainCheck;
                }
                if stop_here(ctx, pass) {
                    return NewidleProgress::Pending(cursor);
                }
            }
            At::ShouldWeBalance(lb) => match lb.redo(ctx, st, pass) {
                LbIteration::Redo => {
                    if stop_here(ctx, pass) {
                        return NewidleProgress::Pending(cursor);
                    }
                }
                LbIteration::Done(ld_moved) => {
                    let level = cursor.level;
                    cursor.pulled_task = ld_moved > 0;
                    cursor.domains_balanced += 1;
                    let t1 = pass.now_ns(ctx);
                    let domain_cost = t1 - cursor.t0;
                    update_newidle_cost(
                        st.sd_mut(this_cpu, level),
                        domain_cost,
                        ctx.jiffies,
                        ctx.hz,
                    );
                    cursor.curr_cost += domain_cost;
                    cursor.t0 = t1;
                    if let At::ShouldWeBalance(lb) =
                        std::mem::replace(&mut cursor.at, At::DomainCheck)
                    {
                        lb.recycle(st);
                    }
                    if stop_here(ctx, pass) {
                        return NewidleProgress::Pending(cursor);
                    }
                }
            },
            At::DomainCheck => {
                if cursor.pulled_task
                    || ctx.rqs[c].nr_running > 0
                    || ttwu_pending(ctx, this_cpu, pass.now_ns(ctx))
                {
                    break;
                }
                cursor.level += 1;
                cursor.at = At::DomainHead;
            }
        }
    }
    let r = &mut ctx.rqs[c];
    if cursor.curr_cost > r.max_idle_balance_cost() {
        r.set_max_idle_balance_cost(cursor.curr_cost);
    }
    if r.cfs.h_nr_running > 0 && !cursor.pulled_task {
        cursor.pulled_task = true;
    }
    NewidleProgress::Done(newidle_out(ctx, st, &cursor, pass))
}

/// The `out:` label of newidle_balance() (v6.6; sched_balance_newidle() since v6.10): pull
/// `rq->next_balance` earlier; clear `idle_stamp` on a pull, else nohz_newidle_balance().
fn newidle_out(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    cursor: &NewidleCursor,
    pass: &mut Pass,
) -> NewidleResult {
    let this_cpu = cursor.this_cpu;
    let c = this_cpu.index();
    if ctx.rqs[c].next_balance() > cursor.next_balance {
        ctx.rqs[c].set_next_balance(cursor.next_balance);
    }
    if cursor.pulled_task {
        ctx.rqs[c].set_idle_stamp(None);
    } else {
        nohz_newidle_balance(ctx, st, this_cpu, pass);
    }
    NewidleResult {
        pulled_task: cursor.pulled_task,
        curr_cost_ns: cursor.curr_cost,
        domains_balanced: cursor.domains_balanced,
    }
}

/// Follows fair.c: update_blocked_averages() (v6.6; sched_balance_update_blocked_averages()
/// since v6.10) for one CPU: decays its PELT signals to now through the runqueue's own
/// update, records the tick, and clears `has_blocked_load` once nothing is left to decay.
/// Charged as reading one runqueue.
pub fn update_blocked_averages(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    cpu: CpuId,
    pass: &mut Pass,
) {
    pass.work.cpus_scanned += 1;
    let now = pass.now_ns(ctx);
    st.cpus[cpu.index()].last_blocked_load_update_tick = ctx.jiffies;
    // The runqueue clears its `has_blocked_load` once nothing is left to decay.
    ctx.rqs[cpu.index()].update_blocked_averages(ctx.tasks, now);
}

/// Follows fair.c: nohz_newidle_balance() (v6.6-v6.12) and, because the CPU goes idle right
/// after, nohz_run_idle_balance(): if the CPU expects to stay idle long enough
/// (`avg_idle >= migration_cost`) and the blocked load of idle CPUs is due for an update,
/// update it here instead of waking another idle CPU (NOHZ_NEWILB_KICK, STATS only). Not
/// done when a wake-up is already pending (`need_resched()`).
pub fn nohz_newidle_balance(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    pass: &mut Pass,
) {
    let c = this_cpu.index();
    if ctx.rqs[c].avg_idle < ctx.tunables.migration_cost_ns {
        return;
    }
    if !st.nohz.has_blocked || ctx.jiffies < st.nohz.next_blocked {
        return;
    }
    // atomic_or(NOHZ_NEWILB_KICK), then do_idle() -> nohz_run_idle_balance().
    if st.cpus[c].nohz_flags.0 & crate::nohz::NOHZ_KICK_MASK.0 != 0
        || ttwu_pending(ctx, this_cpu, pass.now_ns(ctx))
        || ctx.rqs[c].nr_running > 0
    {
        return;
    }
    nohz::nohz_idle_balance_flags(ctx, st, this_cpu, crate::ctx::NohzFlags::STATS, pass);
}

#[cfg(test)]
mod tests;
