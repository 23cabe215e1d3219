//! Detaching and attaching tasks, following kernel/sched/fair.c (v6.6-v6.12): task_hot(),
//! can_migrate_task(), detach_task(), attach_tasks(), shr_bound(), the size tests of
//! detach_tasks() ([`load_too_big`], [`util_too_big`]), detach_tasks() and task_h_load().

use crate::params::LbFeat;
use lbsim_rq::task::TaskId;
use lbsim_topology::SdFlag;

use crate::ctx::{BalanceCtx, Migration};
use crate::state::BalanceState;
use crate::trace::LbEvent;

use super::cpu::{rq, task_on_cpu};
use super::types::{CpuIdleType, MigrationType, lbf};
use super::{CONFIG_PREEMPTION, LbEnv, Pass, SCHED_NR_MIGRATE_BREAK};

/// Follows fair.c: task_hot() (v6.6-v6.12), without core scheduling: an idle-policy task and
/// any task in an SMT domain are cold; with CACHE_HOT_BUDDY the `next` buddy of the source
/// is hot when the destination has tasks; otherwise hot iff it ran within
/// `migration_cost_ns` of the source's clock_task.
pub fn task_hot(ctx: &BalanceCtx<'_>, env: &LbEnv, p: TaskId) -> bool {
    let task = &ctx.tasks[p];
    if task.has_idle_policy() {
        return false;
    }
    if env.sd(ctx.topo).flags.contains(SdFlag::ShareCpucapacity) {
        return false;
    }
    let src = rq(ctx, env.src_cpu);
    if ctx.features.enabled(LbFeat::CacheHotBuddy)
        && rq(ctx, env.dst_cpu).nr_running > 0
        && src.is_next_buddy(ctx.tasks, p)
    {
        return true;
    }
    let cost = ctx.tunables.migration_cost_ns;
    if cost == 0 {
        return false;
    }
    let delta = src.rq_clock_task() as i64 - task.se.exec_start as i64;
    delta < cost as i64
}

/// Follows fair.c: can_migrate_task() (v6.6-v6.12, without NUMA balancing, bandwidth,
/// per-CPU kthreads): affinity (LBF_SOME_PINNED, and LBF_DST_PINNED with `new_dst_cpu` for
/// a periodic balance), then LBF_ALL_PINNED is cleared; the running task is refused; the
/// stopper (LBF_ACTIVE_LB) takes anything else; a cache-hot task only once
/// `nr_balance_failed > cache_nice_tries`. Counts one task examined.
pub fn can_migrate_task(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    env: &mut LbEnv,
    p: TaskId,
    pass: &mut Pass,
) -> bool {
    pass.work.tasks_examined += 1;
    env.task_hot = false;
    let task = &ctx.tasks[p];
    if !task.cpus_mask.test(env.dst_cpu) {
        env.flags |= lbf::SOME_PINNED;
        if env.idle == CpuIdleType::NewlyIdle || env.flags & (lbf::DST_PINNED | lbf::ACTIVE_LB) != 0
        {
            return false;
        }
        if let Some(mask) = env.dst_grpmask
            && let Some(cpu) = ctx
                .topo
                .span(mask)
                .iter()
                .find(|c| env.cpus.test(*c) && task.cpus_mask.test(*c))
        {
            env.flags |= lbf::DST_PINNED;
            env.new_dst_cpu = cpu;
        }
        return false;
    }
    env.flags &= !lbf::ALL_PINNED;
    // With LBF_ACTIVE_LB the stopper is what runs on the source: no fair task is on the CPU.
    if env.flags & lbf::ACTIVE_LB == 0 && task_on_cpu(ctx, env.src_cpu, p) {
        return false;
    }
    if env.flags & lbf::ACTIVE_LB != 0 {
        return true;
    }
    let hot = task_hot(ctx, env, p);
    let sd_st = st.sd(env.sd_cpu, env.level);
    if !hot || sd_st.nr_balance_failed > env.sd(ctx.topo).cache_nice_tries {
        env.task_hot = hot;
        return true;
    }
    false
}

/// Follows fair.c: detach_task() (v6.12; lb_hot_gained counted here since v6.14):
/// deactivate_task() on the source and set_task_cpu() to the destination.
pub(super) fn detach_task(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &mut LbEnv,
    p: TaskId,
    now: u64,
) {
    if env.task_hot {
        env.task_hot = false;
        st.schedstat
            .sd_mut(env.sd_cpu, env.level)
            .lb_mut(env.idle)
            .lb_hot_gained += 1;
    }
    st.trace.push(LbEvent::Migrate {
        time_ns: now,
        // The CPU running the code: the stopper runs on the source.
        on_cpu: if env.flags & lbf::ACTIVE_LB != 0 {
            env.src_cpu
        } else {
            env.sd_cpu
        },
        task: p,
        orig_cpu: env.src_cpu,
        dest_cpu: env.dst_cpu,
    });
    ctx.rqs[env.src_cpu.index()].detach_task(ctx.tasks, p, env.dst_cpu, now);
}

/// Follows fair.c: attach_tasks() (v6.6-v6.12): activate each detached task on the
/// destination, in detach order, with wake-up preemption. Records the migrations.
pub(super) fn attach_tasks(ctx: &mut BalanceCtx<'_>, env: &mut LbEnv, pass: &mut Pass) {
    let dst = env.dst_cpu;
    let now = pass.now_ns(ctx);
    for p in env.tasks.drain(..) {
        ctx.rqs[dst.index()].attach_task(ctx.tasks, p, now);
        pass.work.tasks_moved += 1;
        pass.migrations.push(Migration {
            task: p,
            src: env.src_cpu,
            dst,
        });
    }
}

/// `shr_bound(val, shift)`: `val >> min(shift, BITS_PER_TYPE(val) - 1)`.
pub const fn shr_bound(val: u64, shift: u32) -> u64 {
    val >> if shift < 63 { shift } else { 63 }
}

/// The size test of detach_tasks() for migrate_load: is a task of load `load` too big for
/// the remaining imbalance?
///
/// With `LB_RELAX_BY_FAILED` (v5.10, seed 001, fair.c: detach_tasks() of v5.10-v6.12):
/// `shr_bound(load, nr_balance_failed) > imbalance`, so each failed balance halves the
/// effective size. Without it, the v5.5-v5.9 rule: `load / 2 > imbalance &&
/// nr_balance_failed <= cache_nice_tries`, so once the domain has failed more than
/// `cache_nice_tries` times the size test no longer applies.
pub fn load_too_big(
    relax_by_failed: bool,
    load: u64,
    nr_balance_failed: u32,
    cache_nice_tries: u32,
    imbalance: i64,
) -> bool {
    if relax_by_failed {
        shr_bound(load, nr_balance_failed) as i64 > imbalance
    } else {
        (load / 2) as i64 > imbalance && nr_balance_failed <= cache_nice_tries
    }
}

/// The size test of detach_tasks() for migrate_util: is a task of utilization `util` too
/// big for the remaining imbalance?
///
/// v6.12 (Pierre Gondois' v6.8 patch, also in 6.6.y stable): `shr_bound(util,
/// nr_balance_failed) > imbalance`, the relaxation migrate_load has had since v5.10; v6.6.0
/// itself still had `util > imbalance`. lbsim follows v6.12 with `LB_RELAX_BY_FAILED`, and
/// without it the rule of the kernels before that switch (v5.5-v5.9): `util > imbalance`.
pub fn util_too_big(
    relax_by_failed: bool,
    util: u64,
    nr_balance_failed: u32,
    imbalance: i64,
) -> bool {
    let eff = if relax_by_failed {
        shr_bound(util, nr_balance_failed)
    } else {
        util
    };
    eff as i64 > imbalance
}

/// Follows fair.c: detach_tasks() (v6.6-v6.12): scans the source's `cfs_tasks` from the
/// tail, detaching what can_migrate_task() accepts and fits the imbalance, rotating skipped
/// tasks to the head; stops at `loop_max`, takes a breather (LBF_NEED_BREAK) every
/// `loop_break` tasks, never leaves an idle destination's source empty, and (with
/// CONFIG_PREEMPTION) stops a newly idle balance after one task.
pub fn detach_tasks(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &mut LbEnv,
    pass: &mut Pass,
) -> u32 {
    let src = env.src_cpu;
    if ctx.rqs[src.index()].nr_running <= 1 {
        env.flags &= !lbf::ALL_PINNED;
        return 0;
    }
    if env.imbalance <= 0 {
        return 0;
    }
    let relax = ctx.features.enabled(LbFeat::LbRelaxByFailed);
    let lb_min = ctx.features.enabled(LbFeat::LbMin);
    let mut detached = 0u32;
    loop {
        let tail = ctx.rqs[src.index()].cfs.cfs_tasks().next_back();
        let Some(p) = tail else {
            break;
        };
        if env.idle.is_idle() && ctx.rqs[src.index()].nr_running <= 1 {
            break;
        }
        env.loop_ += 1;
        if env.loop_ > env.loop_max {
            break;
        }
        if env.loop_ > env.loop_break {
            env.loop_break += SCHED_NR_MIGRATE_BREAK;
            env.flags |= lbf::NEED_BREAK;
            break;
        }
        let accept = can_migrate_task(ctx, st, env, p, pass) && {
            let failed = st.sd(env.sd_cpu, env.level).nr_balance_failed;
            match env.migration_type {
                MigrationType::Load => {
                    let load = task_h_load(ctx, p).max(1);
                    let tries = env.sd(ctx.topo).cache_nice_tries;
                    if (lb_min && load < 16 && failed == 0)
                        || load_too_big(relax, load, failed, tries, env.imbalance)
                    {
                        false
                    } else {
                        env.imbalance -= load as i64;
                        true
                    }
                }
                MigrationType::Util => {
                    let util = lbsim_pelt::task_util_est(&ctx.tasks[p].se.avg);
                    if util_too_big(relax, util, failed, env.imbalance) {
                        false
                    } else {
                        env.imbalance -= util as i64;
                        true
                    }
                }
                MigrationType::Task => {
                    env.imbalance -= 1;
                    true
                }
                MigrationType::Misfit => {
                    if crate::fork::task_fits_cpu(ctx, p, src) {
                        false
                    } else {
                        env.imbalance = 0;
                        true
                    }
                }
            }
        };
        if !accept {
            env.task_hot = false;
            ctx.rqs[src.index()].cfs.cfs_tasks_move_to_head(p);
            continue;
        }
        let now = pass.now_ns(ctx);
        detach_task(ctx, st, env, p, now);
        env.tasks.push(p);
        detached += 1;
        if CONFIG_PREEMPTION && env.idle == CpuIdleType::NewlyIdle {
            break;
        }
        if env.imbalance <= 0 {
            break;
        }
    }
    st.schedstat
        .sd_mut(env.sd_cpu, env.level)
        .lb_mut(env.idle)
        .lb_gained += detached;
    detached
}

/// Follows fair.c: task_h_load() (v6.12): the task's load as its runqueue's root cfs_rq
/// sees it (its `load_avg` without task groups).
fn task_h_load(ctx: &BalanceCtx<'_>, p: TaskId) -> u64 {
    crate::lb::cpu::task_h_load(ctx, p)
}
