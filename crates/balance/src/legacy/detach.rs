//! Detaching and attaching tasks before v5.5, following kernel/sched/fair.c of v4.6 (with
//! v4.15's tail-first scan): task_hot(), can_migrate_task(), detach_task(),
//! detach_tasks(), detach_one_task() and attach_tasks().

use lbsim_rq::task::TaskId;

use crate::ctx::{BalanceCtx, Migration};
use crate::lb::{CONFIG_PREEMPTION, CpuIdleType, LbEnv, Pass, SCHED_NR_MIGRATE_BREAK, lbf};
use crate::params::LbFeat;
use crate::state::BalanceState;
use crate::trace::LbEvent;

use super::version::LegacyVersion;

/// Follows fair.c: task_hot() (v4.6-v5.4), without NUMA balancing: a SCHED_IDLE task is
/// cold; with CACHE_HOT_BUDDY a task that is the source's `next` or `last` buddy is hot
/// when the destination has tasks; otherwise hot iff it ran within `migration_cost_ns` of
/// the source's clock_task (0: never hot).
///
/// Differs from today's [`crate::lb::task_hot`]: the `last` buddy counts, and a task in an
/// SMT domain is not cold for that reason alone (both as in v4.6).
pub fn task_hot(ctx: &BalanceCtx<'_>, env: &LbEnv, p: TaskId) -> bool {
    let task = &ctx.tasks[p];
    if task.has_idle_policy() {
        return false;
    }
    let src = &ctx.rqs[env.src_cpu.index()];
    if ctx.features.enabled(LbFeat::CacheHotBuddy)
        && ctx.rqs[env.dst_cpu.index()].nr_running > 0
        && (src.cfs.next == Some(p) || src.cfs.last == Some(p))
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

/// Follows fair.c: can_migrate_task() (v4.6-v5.4), without throttling and NUMA
/// locality: a task not allowed on the destination sets LBF_SOME_PINNED and, except at
/// newidle or once LBF_DST_PINNED is set, records the first allowed CPU of the
/// destination's group (`new_dst_cpu`, LBF_DST_PINNED); otherwise LBF_ALL_PINNED is
/// cleared, the running task refused, and a cache-hot task taken only once
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
        if env.idle == CpuIdleType::NewlyIdle || env.flags & lbf::DST_PINNED != 0 {
            return false;
        }
        // The stopper's env has no dst_grpmask (v4.6 would walk a NULL mask; lbsim does
        // not retarget there).
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
    if ctx.rqs[env.src_cpu.index()].curr == Some(p) {
        return false;
    }
    let hot = task_hot(ctx, env, p);
    if !hot || st.sd(env.sd_cpu, env.level).nr_balance_failed > env.sd(ctx.topo).cache_nice_tries {
        env.task_hot = hot;
        return true;
    }
    false
}

/// Follows fair.c: detach_task() (v4.6-v5.4): deactivate_task() on the source and
/// set_task_cpu() to the destination; counts `lb_hot_gained` for a hot task taken after
/// failures (v4.6 counted it in can_migrate_task(); the count is the same).
fn detach_task(
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

/// Follows fair.c: attach_tasks() (v4.6-v5.4): activate each detached task on the
/// destination with check_preempt_curr(). Records the migrations.
pub fn attach_tasks(ctx: &mut BalanceCtx<'_>, env: &mut LbEnv, pass: &mut Pass) {
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

/// The size test of detach_tasks() in v4.6-v5.4: a task is too big for the remaining
/// imbalance if `load / 2 > imbalance`, whatever `nr_balance_failed` (the v5.5-v5.9 rule
/// lifted it after `cache_nice_tries` failures; v5.10 halves the load per failure).
pub const fn load_too_big_v4(load: u64, imbalance: i64) -> bool {
    (load / 2) as i64 > imbalance
}

/// Follows fair.c: detach_tasks() (v4.6; v4.15+ from the tail): with an imbalance left,
/// scan `cfs_tasks` (v4.6-v4.14 from the head, rotating a skipped task to the tail;
/// v4.15+ from the tail, rotating to the head); stop when an idle destination would leave
/// the source without a task, after `loop_max` tasks, or every `loop_break` tasks with
/// LBF_NEED_BREAK. Skip what can_migrate_task() refuses, with `LB_MIN` a task of load
/// below 16 before any failure, and a task with `load / 2 > imbalance`
/// ([`load_too_big_v4`]). Detach the rest, subtract their load, stop at imbalance <= 0
/// (and, with CONFIG_PREEMPT, after one task at newidle).
pub fn detach_tasks(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &mut LbEnv,
    version: LegacyVersion,
    pass: &mut Pass,
) -> u32 {
    let src = env.src_cpu;
    if env.imbalance <= 0 {
        return 0;
    }
    let lb_min = ctx.features.enabled(LbFeat::LbMin);
    let mut detached = 0u32;
    loop {
        let cfs = &ctx.rqs[src.index()].cfs;
        let next = if version.detach_from_tail() {
            cfs.cfs_tasks().next_back()
        } else {
            cfs.cfs_tasks().next()
        };
        let Some(p) = next else {
            break;
        };
        if env.idle != CpuIdleType::NotIdle && ctx.rqs[src.index()].nr_running <= 1 {
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
            let load = ctx.tasks[p].se.avg.load_avg;
            let failed = st.sd(env.sd_cpu, env.level).nr_balance_failed;
            !((lb_min && load < 16 && failed == 0) || load_too_big_v4(load, env.imbalance))
        };
        if !accept {
            env.task_hot = false;
            let cfs = &mut ctx.rqs[src.index()].cfs;
            if version.detach_from_tail() {
                cfs.cfs_tasks_move_to_head(p);
            } else {
                cfs.cfs_tasks_move_to_tail(p);
            }
            continue;
        }
        let load = ctx.tasks[p].se.avg.load_avg;
        let now = pass.now_ns(ctx);
        detach_task(ctx, st, env, p, now);
        env.tasks.push(p);
        detached += 1;
        env.imbalance -= load as i64;
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

/// Follows fair.c: detach_one_task() (v4.6-v5.4): the first task of `cfs_tasks` that
/// can_migrate_task() accepts, walking from the head (v4.15+: from the tail, as
/// "Search a task from the tail of the queue" made both walks; lbsim assumes the same
/// release for both).
pub fn detach_one_task(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &mut LbEnv,
    version: LegacyVersion,
    pass: &mut Pass,
) -> Option<TaskId> {
    let tasks = ctx.rqs[env.src_cpu.index()].cfs.cfs_tasks();
    let candidates: smallvec::SmallVec<[TaskId; 16]> = if version.detach_from_tail() {
        tasks.rev().collect()
    } else {
        tasks.collect()
    };
    for p in candidates {
        if !can_migrate_task(ctx, st, env, p, pass) {
            continue;
        }
        let now = pass.now_ns(ctx);
        detach_task(ctx, st, env, p, now);
        st.schedstat
            .sd_mut(env.sd_cpu, env.level)
            .lb_mut(env.idle)
            .lb_gained += 1;
        return Some(p);
    }
    None
}
