//! Follows fair.c: should_we_balance() (v6.6-v6.12): which CPU of the local group balances
//! the domain.

use crate::params::LbFeat;
use lbsim_topology::{CpuId, Cpumask, SdFlag};

use crate::ctx::BalanceCtx;

use super::cpu::{idle_cpu, is_core_idle, rq, sched_smt_active, ttwu_pending};
use super::types::CpuIdleType;
use super::{LbEnv, Pass};

/// Follows fair.c: should_we_balance() (v6.6-v6.12; the swb_cpus sibling skip of v6.7 is
/// the same decision as v6.6's full scan).
///
/// - Newly idle: every CPU balances for itself; with `NEWIDLE_BAIL_ON_PENDING` (v6.0,
///   seed 002) it gives up if the destination already has a task or a wake-up pending at
///   the pass's current time (the pass clock includes the work done so far, so a wake-up
///   that arrives during a long scan is seen at the next call, e.g. an LBF_ALL_PINNED redo).
/// - Otherwise the first idle CPU of the local group's balance mask on an idle core balances
///   (the first idle SMT sibling of a busy core if none; `group_balance_cpu()` if no CPU is
///   idle).
pub fn should_we_balance(ctx: &BalanceCtx<'_>, env: &LbEnv, pass: &mut Pass) -> bool {
    if !env.cpus.test(env.dst_cpu) {
        return false;
    }
    let at = pass.now_ns(ctx);
    if env.idle == CpuIdleType::NewlyIdle {
        if ctx.features.enabled(LbFeat::NewidleBailOnPending)
            && (rq(ctx, env.dst_cpu).nr_running > 0 || ttwu_pending(ctx, env.dst_cpu, at))
        {
            return false;
        }
        return true;
    }
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let sg = topo.local_group(sd);
    let smt = sched_smt_active(topo);
    let mut idle_smt: Option<CpuId> = None;
    // The kernel walks `swb_cpus = group_balance_mask(sg) & env->cpus` in order, removing
    // an idle CPU's busy core's siblings from it as it goes. lbsim walks the balance mask's
    // CPU list, skipping those not in `env->cpus` and those removed so far (kept in
    // `removed`, made at the first removal): the same CPUs in the same order.
    let mut removed: Option<Cpumask> = None;
    for &cpu in topo.span_cpus(sg.balance_mask) {
        if !env.cpus.test(cpu) || removed.as_ref().is_some_and(|r| r.test(cpu)) {
            continue;
        }
        pass.work.cpus_scanned += 1;
        if !idle_cpu(ctx, cpu, at) {
            continue;
        }
        if smt && !sd.flags.contains(SdFlag::ShareCpucapacity) && !is_core_idle(ctx, cpu, at) {
            if idle_smt.is_none() {
                idle_smt = Some(cpu);
            }
            removed
                .get_or_insert_with(|| Cpumask::new(env.cpus.nr_cpu_ids()))
                .or_assign(topo.machine().smt_mask(cpu));
            continue;
        }
        return cpu == env.dst_cpu;
    }
    if let Some(c) = idle_smt {
        return c == env.dst_cpu;
    }
    sg.balance_cpu == env.dst_cpu
}
