//! Newly idle balancing: a CPU about to go idle tries to pull a task at once.
//!
//! Follows kernel/sched/fair.c of v6.6: newidle_balance() (renamed sched_balance_newidle()
//! in v6.10) and nohz_newidle_balance(), checked against v6.12. It runs in simulated time:
//! each domain's cost is the cost-model charge of the work done in it (what `sched_clock_cpu()`
//! measures in the kernel), which feeds `max_newidle_lb_cost`, and the pass's clock decides
//! whether a wake-up has arrived meanwhile.
//!
//! Where v6.6 and v6.12 differ, v6.6 is followed: the domain loop stops when a task was
//! pulled or when this runqueue now has a task or a wake-up pending (v6.10+ stops on
//! `!continue_balancing` instead, which with NEWIDLE_BAIL_ON_PENDING comes to the same).
//! The recent proportional newidle (`NI_RANDOM`, `newidle_ratio`) is not modelled.

use lbsim_topology::{CpuId, SdFlag};

use crate::ctx::BalanceCtx;
use crate::lb::{CpuIdleType, Pass, load_balance, ttwu_pending};
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

/// Follows fair.c: newidle_balance() (v6.6; sched_balance_newidle() since v6.10).
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
    r.idle_stamp = Some(r.rq_clock());

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
                pulled_task = load_balance(
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
        if curr_cost > r.max_idle_balance_cost {
            r.max_idle_balance_cost = curr_cost;
        }
        if ctx.rqs[c].cfs.h_nr_running > 0 && !pulled_task {
            pulled_task = true;
        }
    }
    if ctx.rqs[c].next_balance > next_balance {
        ctx.rqs[c].next_balance = next_balance;
    }
    if pulled_task {
        ctx.rqs[c].idle_stamp = None;
    } else {
        nohz_newidle_balance(ctx, st, this_cpu, pass);
    }
    NewidleResult {
        pulled_task,
        curr_cost_ns: curr_cost,
        domains_balanced,
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
    ctx.rqs[cpu.index()].update_blocked_averages(now);
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
