//! NOHZ idle balancing: idle CPUs with their tick stopped are balanced by one of them, the
//! idle load balancer (ILB), kicked by a busy CPU's tick.
//!
//! Follows kernel/sched/fair.c of v6.6 (nohz_balance_enter_idle(), nohz_balance_exit_idle(),
//! nohz_balancer_kick(), kick_ilb(), find_new_ilb(), _nohz_idle_balance(),
//! nohz_idle_balance(), update_nohz_stats()) and core.c: nohz_csd_func(), checked against
//! v6.12. Where they differ, v6.6 is followed: `_nohz_idle_balance()` aborts when the ILB
//! itself has work (`need_resched()`; v6.12 also requires it not to be idle).
//!
//! Kick flags are [`NohzFlags`] (ctx.rs); housekeeping masks are not modelled (every CPU
//! does scheduler housekeeping).

use lbsim_topology::{CpuId, Cpumask};

use crate::ctx::{BalanceCtx, IlbKick, NohzFlags};
use crate::lb::{CpuIdleType, Pass, check_cpu_capacity, idle_cpu, idle_cpu_of};
use crate::newidle::update_blocked_averages;
use crate::rebalance::rebalance_domains;
use crate::state::{BalanceState, msecs_to_jiffies};

/// `NOHZ_KICK_MASK`: the kicks delivered by IPI.
pub const NOHZ_KICK_MASK: NohzFlags =
    NohzFlags(NohzFlags::STATS.0 | NohzFlags::BALANCE.0 | NohzFlags::NEXT.0);

/// `LOAD_AVG_PERIOD` (ms): the blocked load of idle CPUs is updated at most this often.
pub const LOAD_AVG_PERIOD_MS: u64 = 32;

/// Follows fair.c: nohz_balance_enter_idle() with set_cpu_sd_state_idle() (v6.6-v6.12):
/// the CPU stops its tick; it joins `nohz.idle_cpus_mask`, leaves its LLC's
/// `nr_busy_cpus`, and marks blocked load to be decayed.
pub fn nohz_balance_enter_idle(ctx: &mut BalanceCtx<'_>, st: &mut BalanceState, cpu: CpuId) {
    let topo = ctx.topo;
    let c = cpu.index();
    ctx.rqs[c].set_has_blocked_load(true);
    if !st.cpus[c].nohz_tick_stopped {
        if topo.domains(cpu).is_empty() {
            return;
        }
        st.cpus[c].nohz_tick_stopped = true;
        st.nohz.idle_cpus_mask.set(cpu);
        st.nohz.nr_cpus += 1;
        if let Some(llc) = topo.sd_llc(cpu)
            && !st.sd(cpu, llc).nohz_idle
        {
            st.sd_mut(cpu, llc).nohz_idle = true;
            if let Some(s) = st.sd_llc_shared_mut(topo, cpu) {
                s.nr_busy_cpus = s.nr_busy_cpus.saturating_sub(1);
            }
        }
        st.nohz.needs_update = true;
    }
    st.nohz.has_blocked = true;
}

/// Follows fair.c: nohz_balance_exit_idle() with set_cpu_sd_state_busy() (v6.6-v6.12).
pub fn nohz_balance_exit_idle(ctx: &BalanceCtx<'_>, st: &mut BalanceState, cpu: CpuId) {
    let topo = ctx.topo;
    let c = cpu.index();
    if !st.cpus[c].nohz_tick_stopped {
        return;
    }
    st.cpus[c].nohz_tick_stopped = false;
    st.nohz.idle_cpus_mask.clear(cpu);
    st.nohz.nr_cpus -= 1;
    if let Some(llc) = topo.sd_llc(cpu)
        && st.sd(cpu, llc).nohz_idle
    {
        st.sd_mut(cpu, llc).nohz_idle = false;
        if let Some(s) = st.sd_llc_shared_mut(topo, cpu) {
            s.nr_busy_cpus += 1;
        }
    }
}

/// The CPUs find_new_ilb() reads one by one before it tests only the CPUs that may be idle
/// (lbsim's: on a mostly idle machine the first CPU read is idle, and the mask's catch-up
/// would cost more than the reads).
const FIND_NEW_ILB_READ: usize = 8;

/// Follows fair.c: find_new_ilb() (v6.6-v6.12): the first CPU of `nohz.idle_cpus_mask`,
/// other than the kicking CPU, that is idle.
/// Counts one CPU scanned per idle-mask CPU checked.
///
/// Deliberately differs in how, not what: the mask keeps a CPU that took work until its next
/// tick, so on a machine filling up the kernel's loop reads hundreds of busy CPUs. Only a CPU
/// in the runqueues' mask of CPUs that may be idle ([`crate::rqs::Rqs::idle_candidates`])
/// can pass idle_cpu(), so after the first `FIND_NEW_ILB_READ` (8) CPUs only those are tested,
/// and the CPUs of the mask before the one found (or all, if none is) are counted without
/// reading them. Debug builds run the kernel's loop beside it and compare.
pub fn find_new_ilb(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    this_cpu: CpuId,
    pass: &mut Pass,
) -> Option<CpuId> {
    let at_ns = pass.now_ns(ctx);
    // The first CPUs as the kernel reads them (on a mostly idle machine the first is idle);
    // then the rest from the mask of CPUs that may be idle.
    let mut scanned = 0u32;
    let mut from = 0usize;
    for c in st
        .nohz
        .idle_cpus_mask
        .iter()
        .filter(|&c| c != this_cpu)
        .take(FIND_NEW_ILB_READ)
    {
        scanned += 1;
        from = c.index() + 1;
        if idle_cpu(ctx, c, at_ns) {
            pass.work.cpus_scanned += scanned;
            return Some(c);
        }
    }
    if scanned < FIND_NEW_ILB_READ as u32 {
        pass.work.cpus_scanned += scanned;
        return None;
    }
    let (found, scanned) = {
        let candidates = ctx.rqs.idle_candidates();
        let mut found = None;
        let (this_word, this_bit) = (this_cpu.index() / 64, 1u64 << (this_cpu.index() % 64));
        let words = st.nohz.idle_cpus_mask.as_words();
        'words: for (wi, &w) in words.iter().enumerate().skip(from / 64) {
            let mut m = if wi == this_word { w & !this_bit } else { w };
            if wi == from / 64 {
                m &= u64::MAX << (from % 64);
            }
            let mut c = m & candidates.get(wi).copied().unwrap_or(0);
            while c != 0 {
                let b = c.trailing_zeros();
                let cpu = CpuId((wi * 64) as u32 + b);
                if idle_cpu(ctx, cpu, at_ns) {
                    scanned += (m & ((1u64 << b) - 1)).count_ones() + 1;
                    found = Some(cpu);
                    break 'words;
                }
                c &= c - 1;
            }
            scanned += m.count_ones();
        }
        (found, scanned)
    };
    if cfg!(debug_assertions) {
        let mut by_loop = (None, 0u32);
        for c in st.nohz.idle_cpus_mask.iter().filter(|&c| c != this_cpu) {
            by_loop.1 += 1;
            if idle_cpu(ctx, c, at_ns) {
                by_loop.0 = Some(c);
                break;
            }
        }
        assert_eq!(
            (found, scanned),
            by_loop,
            "find_new_ilb() differs from the kernel's loop"
        );
    }
    pass.work.cpus_scanned += scanned;
    found
}

/// Follows fair.c: kick_ilb() (v6.6-v6.12): with BALANCE, push `nohz.next_balance` one jiffy
/// ahead; pick the ILB; merge the flags into its `nohz_flags` and send the IPI unless all
/// the flags were already set or a kick is already in flight.
pub fn kick_ilb(
    ctx: &BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    flags: NohzFlags,
    pass: &mut Pass,
) -> Option<IlbKick> {
    if flags.contains(NohzFlags::BALANCE) {
        st.nohz.next_balance = ctx.jiffies + 1;
    }
    let ilb_cpu = find_new_ilb(ctx, st, this_cpu, pass)?;
    let cur = st.cpus[ilb_cpu.index()].nohz_flags;
    if cur.0 & flags.0 == flags.0 {
        return None;
    }
    st.cpus[ilb_cpu.index()].nohz_flags = cur.union(flags);
    if cur.0 & NOHZ_KICK_MASK.0 != 0 {
        return None;
    }
    Some(IlbKick { ilb_cpu, flags })
}

/// Follows fair.c: nohz_balancer_kick() (v6.6-v6.12), on a tick of `cpu`: leaves nohz idle,
/// then decides whether an idle CPU should balance on behalf of the idle ones: blocked load
/// due (STATS), or, once `nohz.next_balance` has passed, this CPU has two or more tasks, or
/// one CFS task on reduced capacity, or a misfit task on an asymmetric machine, or its LLC
/// has more than one busy CPU (STATS | BALANCE); NEXT when `nohz.needs_update`.
pub fn nohz_balancer_kick(
    ctx: &BalanceCtx<'_>,
    st: &mut BalanceState,
    cpu: CpuId,
    idle_balance: bool,
    pass: &mut Pass,
) -> Option<IlbKick> {
    if idle_balance {
        return None;
    }
    nohz_balance_exit_idle(ctx, st, cpu);
    if st.nohz.nr_cpus == 0 {
        return None;
    }
    let topo = ctx.topo;
    let now = ctx.jiffies;
    let r = &ctx.rqs[cpu.index()];
    let mut flags = NohzFlags::default();
    if st.nohz.has_blocked && now > st.nohz.next_blocked {
        flags = NohzFlags::STATS;
    }
    let stats_balance = NohzFlags::STATS.union(NohzFlags::BALANCE);
    'out: {
        if now < st.nohz.next_balance {
            break 'out;
        }
        if r.nr_running >= 2 {
            flags = stats_balance;
            break 'out;
        }
        if let Some(sd) = topo.domains(cpu).first()
            && r.cfs.h_nr_running >= 1
            && check_cpu_capacity(ctx, cpu, sd)
        {
            flags = stats_balance;
            break 'out;
        }
        // sd_asym_packing: SD_ASYM_PACKING is not built by the topology crate.
        if topo.sd_asym_cpucapacity(cpu).is_some() {
            if r.misfit_task_load != 0 {
                flags = stats_balance;
            }
            break 'out;
        }
        if st
            .sd_llc_shared(topo, cpu)
            .is_some_and(|s| s.nr_busy_cpus > 1)
        {
            flags = stats_balance;
        }
    }
    if st.nohz.needs_update {
        flags = flags.union(NohzFlags::NEXT);
    }
    if flags.is_empty() {
        return None;
    }
    kick_ilb(ctx, st, cpu, flags, pass)
}

/// Follows core.c: nohz_csd_func() and fair.c: nohz_idle_balance() (v6.6-v6.12), in the
/// softirq of `this_cpu`: takes the pending kick flags; if there were any and the CPU is
/// idle, runs [`nohz_idle_balance_flags`] and returns true (the softirq then does nothing
/// else).
pub fn nohz_idle_balance(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    pass: &mut Pass,
) -> bool {
    let c = this_cpu.index();
    let kicked = NohzFlags(st.cpus[c].nohz_flags.0 & NOHZ_KICK_MASK.0);
    if !kicked.is_empty() {
        st.cpus[c].nohz_flags = NohzFlags(st.cpus[c].nohz_flags.0 & !NOHZ_KICK_MASK.0);
        if idle_cpu(ctx, this_cpu, pass.now_ns(ctx)) {
            st.cpus[c].nohz_idle_balance = kicked;
        }
    }
    let flags = st.cpus[c].nohz_idle_balance;
    if flags.is_empty() {
        return false;
    }
    st.cpus[c].nohz_idle_balance = NohzFlags::default();
    if !idle_cpu(ctx, this_cpu, pass.now_ns(ctx)) {
        return false;
    }
    nohz_idle_balance_flags(ctx, st, this_cpu, flags, pass);
    true
}

/// Follows fair.c: update_nohz_stats() (v6.6-v6.12): decay an idle CPU's blocked load if it
/// has some and was not updated this jiffy; returns whether it still has blocked load.
fn update_nohz_stats(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    cpu: CpuId,
    pass: &mut Pass,
) -> bool {
    let c = cpu.index();
    if !ctx.rqs[c].has_blocked_load() {
        return false;
    }
    if !st.nohz.idle_cpus_mask.test(cpu) {
        return false;
    }
    if ctx.jiffies <= st.cpus[c].last_blocked_load_update_tick {
        return true;
    }
    update_blocked_averages(ctx, st, cpu, pass);
    ctx.rqs[c].has_blocked_load()
}

/// Follows fair.c: _nohz_idle_balance() (v6.6): for each CPU of `nohz.idle_cpus_mask`,
/// starting after `this_cpu` and ending with it, that is still idle: decay its blocked load
/// (STATS) and, if its `next_balance` is due, run rebalance_domains() on its behalf as
/// CPU_IDLE (BALANCE). Aborts if `this_cpu` gets work. Then collate `nohz.next_balance`
/// and schedule the next blocked-load update 32 ms later.
pub fn nohz_idle_balance_flags(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    flags: NohzFlags,
    pass: &mut Pass,
) {
    let now = ctx.jiffies;
    let mut next_balance = now + 60 * u64::from(ctx.hz);
    let mut has_blocked_load = false;
    let mut update_next = false;
    if flags.contains(NohzFlags::STATS) {
        st.nohz.has_blocked = false;
    }
    if flags.contains(NohzFlags::NEXT) {
        st.nohz.needs_update = false;
    }
    let n = ctx.topo.nr_cpus();
    let start = CpuId(((this_cpu.index() + 1) % n) as u32);
    // The mask as the walk starts (nothing below changes it: CPUs enter and leave nohz
    // idle on their own ticks and idle entries), copied into a spare mask so that the walk
    // does not hold `st`.
    let mut cpus = st.nohz.walk_spare.take().unwrap_or_else(|| Cpumask::new(n));
    cpus.copy_from(&st.nohz.idle_cpus_mask);
    let mut aborted = false;
    // Whether a wake-up IPI may be in flight: the engine's view does not change during the
    // walk, so it is asked once.
    let none_pending = ctx.pending.none_pending();
    for balance_cpu in cpus.iter_wrap(start) {
        // The pass's clock moves only with the work done below: one reading serves both
        // tests, taken only if a wake-up IPI may be in flight.
        let mut at = None;
        let mut clock = || *at.get_or_insert_with(|| pass.now_ns(ctx));
        if !idle_cpu_of(
            ctx,
            &ctx.rqs[balance_cpu.index()],
            || none_pending,
            &mut clock,
        ) {
            continue;
        }
        // need_resched() of this CPU: a task, or a wake-up pending (ttwu_pending()).
        let this = &ctx.rqs[this_cpu.index()];
        if this.nr_running > 0
            || this.ttwu_pending()
            || (!none_pending && ctx.pending.ttwu_pending_at(this_cpu, clock()))
        {
            if flags.contains(NohzFlags::STATS) {
                has_blocked_load = true;
            }
            if flags.contains(NohzFlags::NEXT) {
                st.nohz.needs_update = true;
            }
            aborted = true;
            break;
        }
        if flags.contains(NohzFlags::STATS) {
            has_blocked_load |= update_nohz_stats(ctx, st, balance_cpu, pass);
        }
        if now >= ctx.rqs[balance_cpu.index()].next_balance() {
            let t = pass.now_ns(ctx);
            ctx.rqs.update_rq_clock(balance_cpu.index(), t);
            if flags.contains(NohzFlags::BALANCE) {
                rebalance_domains(ctx, st, balance_cpu, CpuIdleType::Idle, pass);
            }
        }
        let nb = ctx.rqs[balance_cpu.index()].next_balance();
        if next_balance > nb {
            next_balance = nb;
            update_next = true;
        }
    }
    if !aborted {
        if update_next {
            st.nohz.next_balance = next_balance;
        }
        if flags.contains(NohzFlags::STATS) {
            st.nohz.next_blocked = now + msecs_to_jiffies(LOAD_AVG_PERIOD_MS, ctx.hz);
        }
    }
    if has_blocked_load {
        st.nohz.has_blocked = true;
    }
    st.nohz.walk_spare = Some(cpus);
}

#[cfg(test)]
mod tests;
