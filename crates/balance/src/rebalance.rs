//! Periodic balancing: the per-domain intervals and the walk up a CPU's domains.
//!
//! Follows kernel/sched/fair.c of v6.6 (rebalance_domains(), get_sd_balance_interval(),
//! update_next_balance(), update_newidle_cost(), update_max_interval(); renamed
//! sched_balance_domains() in v6.10), checked against v6.12. The SD_SERIALIZE lock is
//! v6.6's `spin_trylock(&balancing)` around one level (v6.12's `sched_balance_running`
//! cmpxchg has the same semantics: a CPU that finds it taken skips that level and does not
//! retry). lbsim holds it in simulated time: from when the holder takes it until its
//! balance at that level ends (`pass` clock), so a CPU whose pass reaches that level in
//! between finds it taken.
//!
//! The experiment switches here: `LB_BUSY_INTERVAL_SKEW` (the one-jiffy busy skew of v5.10)
//! and the topology's `busy_factor` (16 since v5.10, 32 before).

use crate::params::LbFeat;
use lbsim_topology::{CpuId, SchedDomain, SdFlag};

use crate::ctx::BalanceCtx;
use crate::lb::{CpuIdleType, Pass, idle_cpu, load_balance};
use crate::state::{BalanceState, DomainState, msecs_to_jiffies};

/// Follows fair.c: get_sd_balance_interval() (v6.6-v6.12): `balance_interval` (ms), times
/// `busy_factor` when busy, in jiffies, minus one jiffy when busy (with
/// `LB_BUSY_INTERVAL_SKEW`; without it, the pre-v5.10 interval), clamped to
/// `[1, max_load_balance_interval]`.
#[inline]
pub fn get_sd_balance_interval(
    sd: &SchedDomain,
    sd_state: &DomainState,
    busy: bool,
    hz: u32,
    max_load_balance_interval: u64,
    busy_skew: bool,
) -> u64 {
    let mut interval = sd_state.balance_interval;
    if busy {
        interval *= u64::from(sd.busy_factor);
    }
    interval = msecs_to_jiffies(interval, hz);
    if busy && busy_skew {
        interval = interval.saturating_sub(1);
    }
    interval.clamp(1, max_load_balance_interval.max(1))
}

/// [`get_sd_balance_interval`] for `cpu`'s domain at `level` with the context's HZ and
/// features.
pub fn sd_balance_interval(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    cpu: CpuId,
    level: usize,
    busy: bool,
) -> u64 {
    get_sd_balance_interval(
        &ctx.topo.domains(cpu)[level],
        st.sd(cpu, level),
        busy,
        ctx.hz,
        st.max_load_balance_interval,
        ctx.features.enabled(LbFeat::LbBusyIntervalSkew),
    )
}

/// Follows fair.c: update_next_balance() (v6.6-v6.12): pulls `next_balance` to the
/// domain's idle-interval deadline if that is earlier.
pub fn update_next_balance(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    cpu: CpuId,
    level: usize,
    next_balance: &mut u64,
) {
    let interval = sd_balance_interval(ctx, st, cpu, level, false);
    let next = st.sd(cpu, level).last_balance + interval;
    if *next_balance > next {
        *next_balance = next;
    }
}

/// Follows fair.c: update_newidle_cost() (v6.6; v6.12 without the recent proportional
/// newidle statistics): raises `max_newidle_lb_cost` to `cost_ns`, or decays it by 253/256
/// (about 1%) once per second (HZ jiffies). Returns whether it decayed.
pub fn update_newidle_cost(
    sd_state: &mut DomainState,
    cost_ns: u64,
    jiffies: u64,
    hz: u32,
) -> bool {
    let next_decay = sd_state.last_decay_max_lb_cost + u64::from(hz);
    if cost_ns > sd_state.max_newidle_lb_cost {
        sd_state.max_newidle_lb_cost = cost_ns;
        sd_state.last_decay_max_lb_cost = jiffies;
    } else if jiffies > next_decay {
        sd_state.max_newidle_lb_cost = sd_state.max_newidle_lb_cost * 253 / 256;
        sd_state.last_decay_max_lb_cost = jiffies;
        return true;
    }
    false
}

/// `sched_idle_cpu(cpu)`: the CPU runs only SCHED_IDLE tasks (and at least one).
pub fn sched_idle_cpu(ctx: &BalanceCtx<'_>, cpu: CpuId) -> bool {
    ctx.rqs[cpu.index()].sched_idle_rq()
}

/// Tries to take the SD_SERIALIZE flag for `cpu` at `at_ns`: fails while another CPU's
/// balance of a serialized level is still running in simulated time.
fn serialize_trylock(st: &mut BalanceState, cpu: CpuId, at_ns: u64) -> bool {
    if st.serialize_owner.is_some_and(|o| o != cpu) && at_ns < st.serialize_busy_until_ns {
        return false;
    }
    st.serialize_owner = Some(cpu);
    st.serialize_busy_until_ns = u64::MAX;
    true
}

/// Releases the SD_SERIALIZE flag at `at_ns`.
fn serialize_unlock(st: &mut BalanceState, at_ns: u64) {
    st.serialize_busy_until_ns = at_ns;
}

/// Follows fair.c: rebalance_domains() (v6.6; sched_balance_domains() since v6.10): for each
/// of `cpu`'s domains bottom-up, decay the newidle cost, and if the domain's interval has
/// passed since `last_balance`, run load_balance(); stop walking up when should_we_balance()
/// said another CPU balances the level above. Updates `rq->next_balance` and, on a decay,
/// `rq->max_idle_balance_cost`.
pub fn rebalance_domains(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    cpu: CpuId,
    mut idle: CpuIdleType,
    pass: &mut Pass,
) {
    let topo = ctx.topo;
    let jiffies = ctx.jiffies;
    let hz = ctx.hz;
    let mut continue_balancing = true;
    let mut busy = idle != CpuIdleType::Idle && !sched_idle_cpu(ctx, cpu);
    let mut next_balance = jiffies + 60 * u64::from(hz);
    let mut update_next = false;
    let mut need_decay = false;
    let mut max_cost = 0u64;
    // sd_balance_interval() with what it reads of the context read once.
    let max_interval = st.max_load_balance_interval;
    let skew = ctx.features.enabled(LbFeat::LbBusyIntervalSkew);
    let interval_of = |sd: &SchedDomain, s: &DomainState, busy: bool| {
        get_sd_balance_interval(sd, s, busy, hz, max_interval, skew)
    };
    // The CPU's domain states, looked up once: the one at `level` is `base + level`.
    let base = st.domain_base(cpu);
    debug_assert_eq!(st.nr_domains(cpu), topo.domains(cpu).len());
    for (level, sd) in topo.domains(cpu).iter().enumerate() {
        need_decay = update_newidle_cost(st.sd_at_mut(base + level), 0, jiffies, hz);
        max_cost += st.sd_at(base + level).max_newidle_lb_cost;
        if !continue_balancing {
            if need_decay {
                continue;
            }
            break;
        }
        let mut interval = interval_of(sd, st.sd_at(base + level), busy);
        let need_serialize = sd.flags.contains(SdFlag::Serialize);
        let mut locked = false;
        // The pass's clock when the lock was taken: it moves only with the work of a
        // load_balance(), so it is read again for the unlock only after one.
        let mut lock_ns = 0;
        if need_serialize {
            lock_ns = pass.now_ns(ctx);
            locked = serialize_trylock(st, cpu, lock_ns);
        }
        if !need_serialize || locked {
            if jiffies >= st.sd_at(base + level).last_balance + interval {
                if load_balance(ctx, st, cpu, level, idle, &mut continue_balancing, pass) > 0 {
                    idle = if idle_cpu(ctx, cpu, pass.now_ns(ctx)) {
                        CpuIdleType::Idle
                    } else {
                        CpuIdleType::NotIdle
                    };
                    busy = idle != CpuIdleType::Idle && !sched_idle_cpu(ctx, cpu);
                }
                let s = st.sd_at_mut(base + level);
                s.last_balance = jiffies;
                interval = interval_of(sd, s, busy);
                if locked {
                    lock_ns = pass.now_ns(ctx);
                }
            }
            if locked {
                serialize_unlock(st, lock_ns);
            }
        }
        let due = st.sd_at(base + level).last_balance + interval;
        if next_balance > due {
            next_balance = due;
            update_next = true;
        }
    }
    if need_decay {
        ctx.rqs
            .set_max_idle_balance_cost(cpu.index(), ctx.tunables.migration_cost_ns.max(max_cost));
    }
    if update_next {
        ctx.rqs.set_next_balance(cpu.index(), next_balance);
    }
}

#[cfg(test)]
mod tests;
