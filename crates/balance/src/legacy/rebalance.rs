//! The balancing entry points of the pre-v5.5 balancer above load_balance(): the tick's
//! trigger_load_balance() with nohz_kick_needed(), run_rebalance_domains() with
//! nohz_idle_balance() and rebalance_domains(), and the newly idle idle_balance(),
//! following kernel/sched/fair.c of v4.6.
//!
//! Reused from today's balancer where v4.6 did the same: get_sd_balance_interval()
//! ([`crate::rebalance::get_sd_balance_interval`], without v5.10's busy skew),
//! the max_newidle_lb_cost decay ([`crate::rebalance::update_newidle_cost`]: v4.6's
//! `next_decay_max_lb_cost = jiffies + HZ` is the same test), update_blocked_averages(),
//! nohz_balance_enter_idle()/nohz_balance_exit_idle() and kick_ilb()/find_new_ilb()
//! ([`crate::nohz`]; v4.6 sets only NOHZ_BALANCE_KICK, which is all this balancer asks).

use lbsim_topology::{CpuId, SdFlag};

use crate::ctx::{BalanceCtx, IlbKick, NohzFlags};
use crate::lb::{CpuIdleType, Pass, idle_cpu};
use crate::newidle::update_blocked_averages;
use crate::nohz::{kick_ilb, nohz_balance_exit_idle};
use crate::rebalance::{get_sd_balance_interval, update_newidle_cost};
use crate::state::BalanceState;

use super::LegacyState;
use super::group_stats::rq_idle;
use super::load_balance::load_balance;

/// Follows fair.c: get_sd_balance_interval() (v4.6-v5.9): [`get_sd_balance_interval`]
/// without the one-jiffy busy skew of v5.10.
#[inline]
pub fn balance_interval(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    cpu: CpuId,
    level: usize,
    cpu_busy: bool,
) -> u64 {
    get_sd_balance_interval(
        &ctx.topo.domains(cpu)[level],
        st.sd(cpu, level),
        cpu_busy,
        ctx.hz,
        st.max_load_balance_interval,
        false,
    )
}

/// Follows fair.c: update_next_balance() (v4.6): pull `next_balance` to the domain's
/// (idle) interval deadline if earlier.
pub fn update_next_balance(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    cpu: CpuId,
    level: usize,
    next_balance: &mut u64,
) {
    let next = st.sd(cpu, level).last_balance + balance_interval(ctx, st, cpu, level, false);
    if *next_balance > next {
        *next_balance = next;
    }
}

/// `spin_trylock(&balancing)` in simulated time, as [`crate::rebalance`] holds it: taken
/// until the holder's pass at that level ends. The time, `at_ns()`, is read only when
/// another CPU held the flag last.
fn serialize_trylock(st: &mut BalanceState, cpu: CpuId, at_ns: impl FnOnce() -> u64) -> bool {
    if st.serialize_owner.is_some_and(|o| o != cpu) && at_ns() < st.serialize_busy_until_ns {
        return false;
    }
    st.serialize_owner = Some(cpu);
    st.serialize_busy_until_ns = u64::MAX;
    true
}

/// Follows fair.c: rebalance_domains() (v4.6): update_blocked_averages(); for each domain
/// bottom-up, decay `max_newidle_lb_cost` once a second; stop walking once
/// should_we_balance() said no (but keep decaying); run load_balance() when the domain's
/// interval (busy: times `busy_factor`; `idle != CPU_IDLE` counts as busy) has passed,
/// under the SD_SERIALIZE trylock (the interval is [`balance_interval`]'s, computed from the
/// domain in hand); then set `rq->next_balance` (and, at CPU_IDLE, pull
/// `nohz.next_balance`) and, after a decay, `max_idle_balance_cost`.
pub fn rebalance_domains(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    cpu: CpuId,
    mut idle: CpuIdleType,
    pass: &mut Pass,
) {
    let topo = ctx.topo;
    let (jiffies, hz) = (ctx.jiffies, ctx.hz);
    let mut continue_balancing = true;
    let mut next_balance = jiffies + 60 * u64::from(hz);
    let mut update_next = false;
    let mut need_decay = false;
    let mut max_cost = 0u64;
    update_blocked_averages(ctx, st, cpu, pass);
    // Set once, at boot (lbsim's: read once per call).
    let max_interval = st.max_load_balance_interval;
    for (level, sd) in topo.domains(cpu).iter().enumerate() {
        // The domain's state, looked up once until load_balance() may change it.
        let s = st.sd_mut(cpu, level);
        if update_newidle_cost(s, 0, jiffies, hz) {
            need_decay = true;
        }
        max_cost += s.max_newidle_lb_cost;
        if !continue_balancing {
            if need_decay {
                continue;
            }
            break;
        }
        let busy = idle != CpuIdleType::Idle;
        let mut interval = get_sd_balance_interval(sd, s, busy, hz, max_interval, false);
        let mut last_balance = s.last_balance;
        let need_serialize = sd.flags.contains(SdFlag::Serialize);
        // The pass clock when the flag was tried, if read: still the clock at the unlock
        // unless load_balance() ran in between.
        let mut lock_ns = None;
        let locked =
            need_serialize && serialize_trylock(st, cpu, || *lock_ns.insert(pass.now_ns(ctx)));
        if !need_serialize || locked {
            if jiffies >= last_balance + interval {
                lock_ns = None;
                if load_balance(ctx, st, lg, cpu, level, idle, &mut continue_balancing, pass) > 0 {
                    idle = if idle_cpu(ctx, cpu, pass.now_ns(ctx)) {
                        CpuIdleType::Idle
                    } else {
                        CpuIdleType::NotIdle
                    };
                }
                let s = st.sd_mut(cpu, level);
                s.last_balance = jiffies;
                last_balance = jiffies;
                let busy = idle != CpuIdleType::Idle;
                interval = get_sd_balance_interval(sd, s, busy, hz, max_interval, false);
            }
            if locked {
                st.serialize_busy_until_ns = lock_ns.unwrap_or_else(|| pass.now_ns(ctx));
            }
        }
        let due = last_balance + interval;
        if next_balance > due {
            next_balance = due;
            update_next = true;
        }
    }
    if need_decay {
        ctx.rqs[cpu.index()]
            .set_max_idle_balance_cost(ctx.tunables.migration_cost_ns.max(max_cost));
    }
    if update_next {
        ctx.rqs[cpu.index()].set_next_balance(next_balance);
        if idle == CpuIdleType::Idle && st.nohz.next_balance > next_balance {
            st.nohz.next_balance = next_balance;
        }
    }
}

/// What a newly idle balance did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdleBalanceResult {
    /// `pulled_task > 0`.
    pub pulled_task: bool,
    /// `curr_cost`, in ns.
    pub curr_cost_ns: u64,
}

/// Follows fair.c: idle_balance() (v4.6; renamed newidle_balance() in v5.6): `idle_stamp
/// = now`; if `avg_idle < migration_cost` or the root domain is not overloaded, only pull
/// `next_balance`; otherwise update_blocked_averages() and, bottom-up, stop where
/// `avg_idle < curr_cost + max_newidle_lb_cost`, else run a CPU_NEWLY_IDLE load_balance()
/// in SD_BALANCE_NEWIDLE domains, measuring its cost (in simulated time) into
/// `max_newidle_lb_cost`, until a task was pulled or one is queued here. Then raise
/// `max_idle_balance_cost`, count a task queued meanwhile as pulled, pull
/// `rq->next_balance`, and clear `idle_stamp` on success.
///
/// Runs as one step: these kernels had no bail-out on a pending wake-up (v6.0's
/// NEWIDLE_BAIL_ON_PENDING), so nothing inside the balance depends on what other CPUs do
/// meanwhile beyond what the kernel's own locking would let it see.
pub fn idle_balance(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    this_cpu: CpuId,
    pass: &mut Pass,
) -> IdleBalanceResult {
    let c = this_cpu.index();
    let now = ctx.now_ns;
    ctx.rqs[c].update_rq_clock(now);
    let stamp = ctx.rqs[c].rq_clock();
    ctx.rqs[c].set_idle_stamp(Some(stamp));
    let mut next_balance = ctx.jiffies + u64::from(ctx.hz);
    let mut pulled_task = false;
    let mut curr_cost = 0u64;
    let domains = ctx.topo.domains(this_cpu);
    if ctx.rqs[c].avg_idle < ctx.tunables.migration_cost_ns || !st.rd.overloaded {
        if !domains.is_empty() {
            update_next_balance(ctx, st, this_cpu, 0, &mut next_balance);
        }
    } else {
        update_blocked_averages(ctx, st, this_cpu, pass);
        let mut continue_balancing = true;
        for (level, sd) in domains.iter().enumerate() {
            if ctx.rqs[c].avg_idle < curr_cost + st.sd(this_cpu, level).max_newidle_lb_cost {
                update_next_balance(ctx, st, this_cpu, level, &mut next_balance);
                break;
            }
            if sd.flags.contains(SdFlag::BalanceNewidle) {
                let t0 = pass.now_ns(ctx);
                pulled_task = load_balance(
                    ctx,
                    st,
                    lg,
                    this_cpu,
                    level,
                    CpuIdleType::NewlyIdle,
                    &mut continue_balancing,
                    pass,
                ) > 0;
                let domain_cost = pass.now_ns(ctx) - t0;
                let s = st.sd_mut(this_cpu, level);
                if domain_cost > s.max_newidle_lb_cost {
                    s.max_newidle_lb_cost = domain_cost;
                }
                curr_cost += domain_cost;
            }
            update_next_balance(ctx, st, this_cpu, level, &mut next_balance);
            if pulled_task || ctx.rqs[c].nr_running > 0 {
                break;
            }
        }
        let r = &mut ctx.rqs[c];
        if curr_cost > r.max_idle_balance_cost() {
            r.set_max_idle_balance_cost(curr_cost);
        }
        if r.cfs.h_nr_running > 0 && !pulled_task {
            pulled_task = true;
        }
    }
    if ctx.rqs[c].next_balance() > next_balance {
        ctx.rqs[c].set_next_balance(next_balance);
    }
    if pulled_task {
        ctx.rqs[c].set_idle_stamp(None);
    }
    IdleBalanceResult {
        pulled_task,
        curr_cost_ns: curr_cost,
    }
}

/// Follows fair.c: nohz_kick_needed() and nohz_balancer_kick() (v4.6), on a tick of
/// `cpu` (`idle_balance`: the CPU is idle at the tick): leave nohz idle; with idle CPUs
/// in nohz and `nohz.next_balance` passed, kick the idle load balancer
/// (NOHZ_BALANCE_KICK) if this CPU has two or more tasks, its LLC more than one busy CPU
/// (v4.6's `sd_busy` group count, kept in `sd_llc_shared` since v4.13), or one CFS task
/// on a CPU of reduced capacity.
pub fn nohz_kick_needed(
    ctx: &BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &LegacyState,
    cpu: CpuId,
    idle_balance: bool,
    pass: &mut Pass,
) -> Option<IlbKick> {
    if idle_balance {
        return None;
    }
    nohz_balance_exit_idle(ctx, st, cpu);
    if st.nohz.nr_cpus == 0 || ctx.jiffies < st.nohz.next_balance {
        return None;
    }
    let r = &ctx.rqs[cpu.index()];
    let kick = r.nr_running >= 2
        || st
            .sd_llc_shared(ctx.topo, cpu)
            .is_some_and(|s| s.nr_busy_cpus > 1)
        || ctx
            .topo
            .domains(cpu)
            .first()
            .is_some_and(|sd| r.cfs.h_nr_running >= 1 && lg.check_cpu_capacity(ctx, cpu, sd));
    if !kick {
        return None;
    }
    kick_ilb(ctx, st, cpu, NohzFlags::BALANCE, pass)
}

/// Follows fair.c: nohz_idle_balance() (v4.6), on the kicked CPU `this_cpu` at CPU_IDLE
/// with NOHZ_BALANCE_KICK set: for each other CPU of `nohz.idle_cpus_mask` that is still
/// idle (stopping if this CPU got work), whose `next_balance` has come: bring its
/// `cpu_load[]` up to date (cpu_load_update_idle()) and run rebalance_domains() for it as
/// CPU_IDLE; collate `nohz.next_balance`; clear the kick.
pub fn nohz_idle_balance(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    this_cpu: CpuId,
    idle: CpuIdleType,
    pass: &mut Pass,
) {
    let c = this_cpu.index();
    let kicked = st.cpus[c].nohz_flags.contains(NohzFlags::BALANCE);
    if idle == CpuIdleType::Idle && kicked {
        let mut next_balance = ctx.jiffies + 60 * u64::from(ctx.hz);
        let mut update_next = false;
        // A copy of the mask, in storage kept between passes (lbsim's).
        let mut cpus = std::mem::take(&mut lg.nohz_cpus_scratch);
        cpus.clear();
        cpus.extend(st.nohz.idle_cpus_mask.iter());
        let ipi_in_flight = !ctx.pending.none_pending();
        for &balance_cpu in &cpus {
            let r = &ctx.rqs[balance_cpu.index()];
            if balance_cpu == this_cpu
                || !rq_idle(ctx, r, balance_cpu, ipi_in_flight, || pass.now_ns(ctx))
            {
                continue;
            }
            if ctx.rqs[c].nr_running > 0 || ctx.rqs[c].need_resched() {
                break;
            }
            let b = balance_cpu.index();
            if ctx.jiffies >= ctx.rqs[b].next_balance() {
                let t = pass.now_ns(ctx);
                ctx.rqs[b].update_rq_clock(t);
                let load = lg.weighted_cpuload(ctx, balance_cpu);
                if lg.version.has_cpu_load() {
                    let tickless = lg.version.tickless_load();
                    lg.cpu_load[b].cpu_load_update_idle(load, ctx.jiffies, tickless);
                }
                rebalance_domains(ctx, st, lg, balance_cpu, CpuIdleType::Idle, pass);
            }
            let nb = ctx.rqs[b].next_balance();
            if next_balance > nb {
                next_balance = nb;
                update_next = true;
            }
        }
        lg.nohz_cpus_scratch = cpus;
        if update_next {
            st.nohz.next_balance = next_balance;
        }
    }
    st.cpus[c].nohz_flags = NohzFlags(st.cpus[c].nohz_flags.0 & !crate::nohz::NOHZ_KICK_MASK.0);
}
