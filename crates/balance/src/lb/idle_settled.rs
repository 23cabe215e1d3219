//! A balancing pass at CPU_IDLE that find_busiest_group() balances from task counts alone:
//! lbsim's shortcut for the passes the nohz idle balancer runs on behalf of idle CPUs on a
//! mostly idle machine (on 4096 CPUs with 1000 tasks, about 900 SMT-domain passes a
//! millisecond), with the result and the side effects of the full load_balance()
//! (v6.6-v6.12).
//!
//! Why the outcome is known. Two cases:
//! - Every CPU of the domain is idle (any level; at the lowest level, tried when the next
//!   case does not hold, e.g. a core without SMT whose lowest domain's groups are cores). update_sd_pick_busiest() refuses a group
//!   without a CFS task before anything else (`if (!sgs->sum_h_nr_running) return false;`),
//!   so there is no busiest group.
//! - The lowest level, each CPU its own group (the SMT domain, or a flat domain of single
//!   CPUs), without `SD_ASYM_CPUCAPACITY`, this CPU idle and every other CPU idle or running
//!   at most one task, a CFS one, with no misfit load (its capacity not reduced, which
//!   is how a non-asymmetric domain makes one at CPU_IDLE), in a group without
//!   `sgc->imbalance`, an asym-packing CPU or `SD_PREFER_SIBLING`. Whichever group is
//!   picked, it is `group_has_spare` or `group_fully_busy` (one task on one CPU is not
//!   overloaded), not misfit, imbalanced or asym-packing; the local group (this CPU, idle)
//!   is `group_has_spare`, there is no prefer-sibling test, and for a busiest group that is
//!   not overloaded at CPU_IDLE, one of one CPU with `sum_h_nr_running == 1` is balanced
//!   (an SMT-balance group has more than one task).
//!
//! In both cases find_busiest_group() returns no group and load_balance() goes to
//! `out_balanced`; nothing else it reads on the way (loads, utilization, group capacities)
//! changes that. What the pass still does, in the kernel's order:
//! - counts the attempt (`lb_count`) and the domain entered (the cost model's charge);
//! - should_we_balance(): the local group's balance mask is walked from its first CPU, which
//!   is idle and on an idle core (in the first case every CPU of the domain, and so every
//!   SMT sibling of its CPUs, is idle; in the second the mask is this CPU alone), so the
//!   first CPU of the mask balances, after one CPU read. If that is not this CPU, the pass
//!   ends there (`*continue_balancing = 0`, `out_balanced`);
//! - update_sd_lb_stats(): the local group's capacity refresh (always done at CPU_IDLE) and
//!   one CPU read for every CPU of every group (in a domain without `SD_OVERLAP` the groups
//!   partition the span, and `env->cpus` is the whole span); at the top level the root
//!   domain's `overloaded` (no CPU runs two tasks) and `overutilized` flags cleared; at the
//!   LLC level SIS_UTIL's scan budget from the CPUs' summed utilization;
//! - `lb_nobusyg`, and the `out_balanced:` tail (the parent group's imbalance flag,
//!   `lb_balanced`, `nr_balance_failed`, the interval's back-off).
//!
//! The shortcut is taken only when nothing else could differ: no wake-up IPI in flight
//! anywhere (so that idleness does not depend on the pass's clock), a domain without
//! `SD_OVERLAP`, the decision record (`--check`) and the trace off, and no memo due from a
//! previous redo of the domain (`BalanceState::lb_redid`). Debug builds run the full
//! should_we_balance() and find_busiest_group() beside it and check that they agree, with
//! the same charges.

use lbsim_topology::{CpuId, SchedDomain, SdFlag};

use crate::ctx::BalanceCtx;
use crate::state::BalanceState;

use super::cpu::{rq_idle_own, sched_reduced_capacity};
use super::group_stats::{update_group_capacity, update_idle_cpu_scan_of};
use super::types::CpuIdleType;
use super::{LbExit, Pass, out_balanced};

/// Follows fair.c: load_balance() (v6.6; sched_balance_rq() since v6.10) at CPU_IDLE for
/// `this_cpu`'s domain at `level` when find_busiest_group() balances it from task counts
/// alone (see the module doc):
/// does what load_balance() does then and returns `Some(continue_balancing)` (`ld_moved` is
/// 0), or returns `None`, having done nothing, when load_balance() must run.
pub(super) fn load_balance_settled(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    level: usize,
    pass: &mut Pass,
) -> Option<bool> {
    let topo = ctx.topo;
    let doms = topo.domains(this_cpu);
    let sd = &doms[level];
    if !settled_in(ctx, st, this_cpu, level, sd) {
        return None;
    }
    let idle = CpuIdleType::Idle;
    #[cfg(debug_assertions)]
    let before = pass.clone();
    // LoadBalance::begin().
    pass.work.domains += 1;
    // The domain's counters, looked up once.
    let stat_i = st.schedstat.domain_base(this_cpu) + level;
    st.schedstat.sd_at_mut(stat_i).lb_mut(idle).lb_count += 1;
    let parent_sgc = doms.get(level + 1).map(|p| topo.local_group(p).sgc);
    // should_we_balance(): the balance mask's first CPU is idle on an idle core.
    let local = topo.local_group(sd);
    pass.work.cpus_scanned += 1;
    let balance = topo.span_cpus(local.balance_mask).first() == Some(&this_cpu);
    if balance {
        // update_sd_lb_stats(), find_busiest_group(): no busiest group.
        update_group_capacity(ctx, st, this_cpu, level);
        pass.work.cpus_scanned += sd.span_weight;
        if level + 1 == doms.len() {
            st.rd.overloaded = false;
            st.rd.overutilized = false;
        }
        let ctx: &BalanceCtx<'_> = ctx;
        update_idle_cpu_scan_of(ctx, st, this_cpu, sd, idle, || {
            let rqs: &[lbsim_rq::Rq] = ctx.rqs;
            topo.span_cpus(sd.span)
                .iter()
                .map(|&i| rqs[i.index()].cpu_util_cfs(ctx.tasks))
                .sum()
        });
        st.schedstat.sd_at_mut(stat_i).lb_mut(idle).lb_nobusyg += 1;
    }
    #[cfg(debug_assertions)]
    check_against_full_pass(ctx, st, this_cpu, level, before, balance, pass);
    out_balanced(
        st,
        sd,
        parent_sgc,
        (this_cpu, level, idle),
        LbExit::Balanced,
        0,
    );
    Some(balance)
}

/// Whether a pass at CPU_IDLE for `this_cpu`'s domain at `level` may take the shortcut:
/// find_busiest_group() balances it from task counts alone, and nothing else could differ
/// (see the module doc).
#[cfg(test)]
pub(super) fn settled(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    this_cpu: CpuId,
    level: usize,
) -> bool {
    settled_in(ctx, st, this_cpu, level, &ctx.topo.domains(this_cpu)[level])
}

/// [`settled`] of `this_cpu`'s domain `sd` at `level`, which the caller has looked up.
fn settled_in(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    this_cpu: CpuId,
    level: usize,
    sd: &SchedDomain,
) -> bool {
    if st.checks.enabled || st.trace.enabled || st.lb_redid(this_cpu, level) {
        return false;
    }
    let topo = ctx.topo;
    if sd.flags.contains(SdFlag::Overlap) || !ctx.pending.none_pending() {
        return false;
    }
    if level == 0
        && !sd.flags.contains(SdFlag::AsymCpucapacity)
        && lowest_level_settled(ctx, st, this_cpu, sd)
    {
        return true;
    }
    let rqs: &[lbsim_rq::Rq] = ctx.rqs;
    topo.span_cpus(sd.span)
        .iter()
        .all(|&i| rq_idle_own(&rqs[i.index()]))
}

/// For a domain at the lowest level (each CPU its own group), without
/// `SD_ASYM_CPUCAPACITY`: whether find_busiest_group() balances an idle `this_cpu` at
/// CPU_IDLE from task counts alone (see the module doc): every other CPU is idle or runs at
/// most one task, a CFS one, on a CPU whose capacity is not reduced (no misfit load), in a
/// group without `sgc->imbalance`, an asym-packing CPU or `SD_PREFER_SIBLING`.
fn lowest_level_settled(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    this_cpu: CpuId,
    sd: &SchedDomain,
) -> bool {
    let topo = ctx.topo;
    let rqs: &[lbsim_rq::Rq] = ctx.rqs;
    if !rq_idle_own(&rqs[this_cpu.index()]) {
        return false;
    }
    topo.group_ids(sd).all(|gid| {
        let g = topo.group(gid);
        let &[cpu] = topo.span_cpus(g.span) else {
            return false;
        };
        let r = &rqs[cpu.index()];
        rq_idle_own(r)
            || (r.nr_running <= 1
                && r.cfs.h_nr_running <= 1
                && g.asym_prefer_cpu.is_none()
                && !g.flags.contains(SdFlag::PreferSibling)
                && !st.sgc(g.sgc).imbalance
                && !sched_reduced_capacity(ctx, cpu, sd))
    })
}

/// Debug builds: the full should_we_balance() and find_busiest_group(), on the pass as it
/// stood before the shortcut, decide the same and charge the same. (Their writes, the
/// capacity refresh, the root domain's flags and the scan budget, give the values the
/// shortcut wrote, before the interval's back-off that the refresh reads.)
#[cfg(debug_assertions)]
fn check_against_full_pass(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    level: usize,
    mut full: Pass,
    balance: bool,
    pass: &Pass,
) {
    let mut env = super::LbEnv::new(ctx.topo, this_cpu, level, CpuIdleType::Idle);
    full.work.domains += 1;
    assert_eq!(
        super::should_we_balance(ctx, &env, &mut full),
        balance,
        "should_we_balance() decides otherwise"
    );
    if balance {
        let fbg = super::find_busiest_group(ctx, st, &mut env, &mut full);
        assert!(
            fbg.busiest.is_none(),
            "find_busiest_group() found a busiest group"
        );
    }
    assert_eq!(full.work, pass.work, "the full pass charges otherwise");
}
