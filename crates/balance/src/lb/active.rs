//! Active balance, following kernel/sched/fair.c (v6.6-v6.12): asym_active_balance(),
//! imbalanced_active_balance(), need_active_balance(), voluntary_active_balance() (v5.6-v5.11)
//! and the stopper, active_load_balance_cpu_stop() with detach_one_task().

use crate::params::LbFeat;
use lbsim_rq::task::TaskId;
use smallvec::SmallVec;

use crate::ctx::{BalanceCtx, StopperRequest};
use crate::state::BalanceState;

use super::cpu::{capacity_of, check_cpu_capacity, rq, sched_asym_prefer, sched_use_asym_prio};
use super::detach::{attach_tasks, can_migrate_task, detach_task};
use super::types::{CpuIdleType, MigrationType, lbf};
use super::{LbEnv, Pass};

/// Follows fair.c: asym_active_balance() (v6.6-v6.12).
fn asym_active_balance(ctx: &BalanceCtx<'_>, env: &LbEnv, at_ns: u64) -> bool {
    let sd = env.sd(ctx.topo);
    env.idle.is_idle()
        && sched_use_asym_prio(ctx, sd, env.dst_cpu, at_ns)
        && (sched_asym_prefer(env.dst_cpu, env.src_cpu)
            || !sched_use_asym_prio(ctx, sd, env.src_cpu, at_ns))
}

/// Follows fair.c: imbalanced_active_balance() (v5.13-v6.12): migrate_task and
/// `nr_balance_failed > cache_nice_tries + 2`.
fn imbalanced_active_balance(ctx: &BalanceCtx<'_>, st: &BalanceState, env: &LbEnv) -> bool {
    env.migration_type == MigrationType::Task
        && st.sd(env.sd_cpu, env.level).nr_balance_failed > env.sd(ctx.topo).cache_nice_tries + 2
}

/// Follows fair.c: need_active_balance() (v6.6-v6.12).
///
/// With `NO_LB_REDUCE_ACTIVE_BALANCE` it is the v5.6-v5.11 function: voluntary_active_balance()
/// (the asym, reduced-capacity and misfit cases, see [`voluntary_active_balance`]) or
/// `nr_balance_failed > cache_nice_tries + 2` whatever the migration type.
pub fn need_active_balance(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    at_ns: u64,
) -> bool {
    if !ctx.features.enabled(LbFeat::LbReduceActiveBalance) {
        return voluntary_active_balance(ctx, env, at_ns)
            || st.sd(env.sd_cpu, env.level).nr_balance_failed
                > env.sd(ctx.topo).cache_nice_tries + 2;
    }
    // asym_active_balance(), imbalanced_active_balance(), then the rest: all pure tests, so
    // the order of the first two does not matter.
    imbalanced_active_balance(ctx, st, env) || voluntary_active_balance(ctx, env, at_ns)
}

/// Follows fair.c: voluntary_active_balance() (v5.6-v5.11): the cases that are worth an
/// active balance whatever the failures. In v6.6-v6.12 these are the tail of
/// need_active_balance(), after imbalanced_active_balance().
pub fn voluntary_active_balance(ctx: &BalanceCtx<'_>, env: &LbEnv, at_ns: u64) -> bool {
    let sd = env.sd(ctx.topo);
    if asym_active_balance(ctx, env, at_ns) {
        return true;
    }
    if env.idle.is_idle()
        && rq(ctx, env.src_cpu).cfs.h_nr_running == 1
        && check_cpu_capacity(ctx, env.src_cpu, sd)
        && capacity_of(ctx, env.src_cpu) * u64::from(sd.imbalance_pct)
            < capacity_of(ctx, env.dst_cpu) * 100
    {
        return true;
    }
    env.migration_type == MigrationType::Misfit
}

/// Follows fair.c: active_load_balance_cpu_stop() and detach_one_task() (v6.6-v6.12): the
/// stopper on `req.busiest` moves the first task (from the tail of cfs_tasks) that
/// can_migrate_task() accepts with LBF_ACTIVE_LB to `req.push_cpu`, in the lowest domain
/// of the target spanning the source. The stopper is the running thread, so the fair task
/// that was running is a waiting task and may be moved: lbsim puts it back on its
/// runqueue (`put_prev_task`, `rq.curr = None`) as switching to the stop class does, and
/// the engine must schedule `busiest` afterwards.
pub fn active_load_balance_cpu_stop(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    req: StopperRequest,
    pass: &mut Pass,
) {
    let busiest = req.busiest;
    // The stopper preempts whatever runs on `busiest` (the stop class is above CFS):
    // put_prev_task() of the running fair task, which stays queued. The engine schedules
    // `busiest` again when the stopper is done.
    {
        let now = pass.now_ns(ctx);
        let r = &mut ctx.rqs[busiest.index()];
        r.update_rq_clock(now);
        if let Some(curr) = r.curr {
            if r.fair_curr_is(ctx.tasks, curr) {
                r.put_prev_task_fair(ctx.tasks, curr);
            }
            r.context_switch(ctx.tasks, None);
        }
    }
    let target = st.cpus[busiest.index()].push_cpu;
    let valid = st.cpus[busiest.index()].active_balance && target == req.push_cpu;
    // `busiest_rq->nr_running <= 1`: the kernel counts the stopper itself, lbsim does not.
    if valid && ctx.rqs[busiest.index()].nr_running + 1 > 1 {
        let topo = ctx.topo;
        if let Some(level) = topo
            .domains(target)
            .iter()
            .position(|sd| topo.span(sd.span).test(busiest))
        {
            pass.work.domains += 1;
            let mut env = LbEnv::new(topo, target, level, CpuIdleType::Idle);
            env.dst_grpmask = None;
            env.src_cpu = busiest;
            env.flags = lbf::ACTIVE_LB;
            st.schedstat.sd_mut(target, level).alb_count += 1;
            let clock_ns = pass.now_ns(ctx);
            ctx.rqs[busiest.index()].update_rq_clock(clock_ns);
            let candidates: SmallVec<[TaskId; 16]> =
                ctx.rqs[busiest.index()].cfs.cfs_tasks().rev().collect();
            let mut moved = None;
            for p in candidates {
                if !can_migrate_task(ctx, st, &mut env, p, pass) {
                    continue;
                }
                let now = pass.now_ns(ctx);
                detach_task(ctx, st, &mut env, p, now);
                st.schedstat
                    .sd_mut(target, level)
                    .lb_mut(CpuIdleType::Idle)
                    .lb_gained += 1;
                moved = Some(p);
                break;
            }
            match moved {
                Some(p) => {
                    st.schedstat.sd_mut(target, level).alb_pushed += 1;
                    st.sd_mut(target, level).nr_balance_failed = 0;
                    env.tasks.push(p);
                    env.dst_cpu = target;
                    attach_tasks(ctx, &mut env, pass);
                }
                None => st.schedstat.sd_mut(target, level).alb_failed += 1,
            }
        }
    }
    st.cpus[busiest.index()].active_balance = false;
}
