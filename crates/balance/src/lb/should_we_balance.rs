//! Follows fair.c: should_we_balance() (v6.6-v6.12): which CPU of the local group balances
//! the domain.

use crate::params::LbFeat;
use lbsim_topology::{CpuId, SdFlag};

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
    let mut swb_cpus = topo.span(sg.balance_mask).clone();
    swb_cpus.and_assign(&env.cpus);
    let smt = sched_smt_active(topo);
    let mut idle_smt: Option<CpuId> = None;
    let mut next = swb_cpus.first();
    while let Some(cpu) = next {
        next = swb_cpus.next(cpu);
        pass.work.cpus_scanned += 1;
        if !idle_cpu(ctx, cpu, at) {
            continue;
        }
        if smt && !sd.flags.contains(SdFlag::ShareCpucapacity) && !is_core_idle(ctx, cpu, at) {
            if idle_smt.is_none() {
                idle_smt = Some(cpu);
            }
            swb_cpus.andnot_assign(topo.machine().smt_mask(cpu));
            next = swb_cpus.next_from(cpu);
            continue;
        }
        return cpu == env.dst_cpu;
    }
    if let Some(c) = idle_smt {
        return c == env.dst_cpu;
    }
    sg.balance_cpu == env.dst_cpu
}
