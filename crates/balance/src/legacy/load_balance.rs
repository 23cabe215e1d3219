//! One load-balancing pass at one domain before v5.5: load_balance() with
//! should_we_balance(), need_active_balance() and the active-balance stopper
//! (active_load_balance_cpu_stop()), following kernel/sched/fair.c of v4.6 (with the v4.20
//! misfit case and the v5.4 changes of KERNEL-HISTORY §2.10 as [`super::LegacyVersion`] decides).

use lbsim_topology::{CpuId, Cpumask, SchedDomain, SgcId, Topology};

use crate::ctx::{BalanceCtx, StopperRequest};
use crate::lb::{
    CpuIdleType, LbEnv, MAX_PINNED_INTERVAL, MigrationType, Pass, SCHED_NR_MIGRATE_BREAK, lbf,
};
use crate::state::BalanceState;
use crate::trace::{LbEvent, LbOutcome, LbRecord};

use super::LegacyState;
use super::detach::{attach_tasks, detach_one_task, detach_tasks};
use super::find_busiest_queue::find_busiest_queue;
use super::group_stats::rq_idle;
use super::idle_settled::{find_busiest_group_counted, load_balance_settled};
use super::imbalance::find_busiest_group;
use super::version::LegacyVersion;

/// Follows fair.c: should_we_balance() (v4.6): at newidle every CPU balances; otherwise
/// the first idle CPU of the local group's balance mask (in `env->cpus`), or
/// group_balance_cpu() if none is idle, balances the domain. (v5.4 first refuses a
/// destination outside `env->cpus`, which only a DST_PINNED retarget produces; lbsim
/// applies that test in every release, where it changes nothing.)
pub fn should_we_balance(ctx: &BalanceCtx<'_>, env: &LbEnv, pass: &mut Pass) -> bool {
    if !env.cpus.test(env.dst_cpu) {
        return false;
    }
    if env.idle == CpuIdleType::NewlyIdle {
        return true;
    }
    let topo = ctx.topo;
    let sg = topo.local_group(env.sd(topo));
    // The pass clock when the scan starts, read only if a wake-up may be in flight
    // ([`rq_idle`]); the CPUs read are charged once the scan ends, so that the clock
    // stays the scan's start meanwhile.
    let pass_at_start = &*pass;
    let at = || pass_at_start.now_ns(ctx);
    let ipi_in_flight = !ctx.pending.none_pending();
    let mask = topo.span(sg.balance_mask);
    let mut scanned = 0u32;
    let mut first_idle = None;
    for &cpu in topo.span_cpus(sg.span) {
        // With no CPU cleared from `env->cpus`, it holds the local group (every active
        // CPU, or from v5.4 the domain's span), so the test is skipped.
        debug_assert!(
            env.cpus_trimmed || env.cpus.test(cpu),
            "CPU{} not in env->cpus",
            cpu.0
        );
        if env.cpus_trimmed && !env.cpus.test(cpu) {
            continue;
        }
        scanned += 1;
        if !mask.test(cpu) || !rq_idle(ctx, &ctx.rqs[cpu.index()], cpu, ipi_in_flight, at) {
            continue;
        }
        first_idle = Some(cpu);
        break;
    }
    pass.work.cpus_scanned += scanned;
    first_idle.unwrap_or(sg.balance_cpu) == env.dst_cpu
}

/// Follows fair.c: need_active_balance() (v4.6; v4.20 adds the misfit case): at newidle
/// with SD_ASYM_PACKING a higher source (never: the topology builds no asym packing); an
/// idle destination, one CFS task on a source of reduced capacity
/// (check_cpu_capacity()) and `capacity_of(src) * imbalance_pct < capacity_of(dst) *
/// 100`; (v4.20+) a misfit source; or `nr_balance_failed > cache_nice_tries + 2`.
pub fn need_active_balance(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    lg: &LegacyState,
    env: &LbEnv,
) -> bool {
    let sd = env.sd(ctx.topo);
    let src = &ctx.rqs[env.src_cpu.index()];
    if env.idle != CpuIdleType::NotIdle
        && src.cfs.h_nr_running == 1
        && lg.check_cpu_capacity(ctx, env.src_cpu, sd)
        && src.cpu_capacity() * u64::from(sd.imbalance_pct)
            < ctx.rqs[env.dst_cpu.index()].cpu_capacity() * 100
    {
        return true;
    }
    if lg.version.group_misfit_task() && env.migration_type == MigrationType::Misfit {
        return true;
    }
    st.sd(env.sd_cpu, env.level).nr_balance_failed > sd.cache_nice_tries + 2
}

/// How the `redo:` loop was left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Exit {
    Balanced,
    AllPinned,
    OnePinned,
    Done,
}

/// Follows fair.c: load_balance() (v4.6-v5.4) for `this_cpu`'s domain at `level`:
/// should_we_balance(), find_busiest_group(), find_busiest_queue(), detach/attach with
/// the LBF_NEED_BREAK and LBF_DST_PINNED `goto more_balance` loops, the parent group's
/// imbalance flag on LBF_SOME_PINNED, the LBF_ALL_PINNED `goto redo` (while `cpus` is
/// not empty; v5.4: while it is not within the local group), `nr_balance_failed`, the
/// active balance (the stopper, then `nr_balance_failed = cache_nice_tries + 1`), and the
/// `balance_interval` reset or doubling. Returns `ld_moved`.
///
/// `env->cpus` is every active CPU before v5.4 and the domain's span from v5.4, as in the
/// kernel. `env->dst_grpmask` is NULL at newidle (v4.6). The SD_SERIALIZE flag is taken
/// by the caller.
#[allow(clippy::too_many_arguments)]
pub fn load_balance(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &mut LegacyState,
    this_cpu: CpuId,
    level: usize,
    idle: CpuIdleType,
    continue_balancing: &mut bool,
    pass: &mut Pass,
) -> u32 {
    // A pass whose outcome is known before the group statistics (`idle_settled.rs`).
    if idle == CpuIdleType::Idle && load_balance_settled(ctx, st, lg, this_cpu, level, pass) {
        return 0;
    }
    let topo = ctx.topo;
    let version = lg.version;
    let doms = topo.domains(this_cpu);
    let sd = &doms[level];
    let parent_sgc = parent_sgc(topo, doms, level);
    let mut env = first_env(topo, lg, this_cpu, level, idle);
    if idle == CpuIdleType::NewlyIdle {
        env.dst_grpmask = None;
    }
    pass.work.domains += 1;
    st.schedstat.sd_mut(this_cpu, level).lb_mut(idle).lb_count += 1;
    let mut ld_moved = 0u32;
    let mut active_balance = false;
    let mut found: Option<(
        crate::lb::GroupType,
        Option<crate::lb::GroupType>,
        i64,
        Option<CpuId>,
    )> = None;
    let exit = 'redo: loop {
        let mut start =
            st.checks
                .lb_pass_begin(ctx, &env, pass.work.tasks_examined, pass.now_ns(ctx));
        if !should_we_balance(ctx, &env, pass) {
            *continue_balancing = false;
            break 'redo Exit::Balanced;
        }
        // A first pass at CPU_IDLE decided before the group statistics (`idle_settled.rs`).
        if find_busiest_group_counted(ctx, st, lg, &mut env, pass) {
            break 'redo Exit::Balanced;
        }
        let fbg = find_busiest_group(ctx, st, lg, &mut env, pass);
        found = Some((
            fbg.sds.local_stat.group_type.as_group_type(),
            fbg.sds
                .busiest
                .map(|_| fbg.sds.busiest_stat.group_type.as_group_type()),
            env.imbalance,
            None,
        ));
        let Some(group) = fbg.busiest else {
            st.schedstat.sd_mut(this_cpu, level).lb_mut(idle).lb_nobusyg += 1;
            break 'redo Exit::Balanced;
        };
        let Some(busiest) = find_busiest_queue(ctx, lg, &env, topo.group(group), pass) else {
            st.schedstat.sd_mut(this_cpu, level).lb_mut(idle).lb_nobusyq += 1;
            break 'redo Exit::Balanced;
        };
        if let Some(f) = &mut found {
            f.3 = Some(busiest);
        }
        let at = pass.now_ns(ctx);
        st.checks
            .legacy_busiest_queue(ctx, &env, topo.group(group).span, busiest, at);
        debug_assert_ne!(busiest, env.dst_cpu);
        st.schedstat
            .sd_mut(this_cpu, level)
            .add_imbalance(idle, env.migration_type, env.imbalance);
        env.src_cpu = busiest;
        ld_moved = 0;
        if ctx.rqs[busiest.index()].nr_running > 1 {
            env.flags |= lbf::ALL_PINNED;
            env.loop_max = ctx
                .tunables
                .nr_migrate
                .min(ctx.rqs[busiest.index()].nr_running);
            loop {
                // more_balance:
                let clock_ns = pass.now_ns(ctx);
                ctx.rqs[busiest.index()].update_rq_clock(clock_ns);
                let cur = detach_tasks(ctx, st, &mut env, version, pass);
                let (examined, at) = (pass.work.tasks_examined, pass.now_ns(ctx));
                st.checks.detached(ctx, &env, &start, examined, cur, at);
                if cur > 0 {
                    let first = env.tasks.first().copied();
                    st.checks.attached(ctx, &env, &start, first, at);
                    attach_tasks(ctx, &mut env, pass);
                    ld_moved += cur;
                }
                if env.flags & lbf::NEED_BREAK != 0 {
                    env.flags &= !lbf::NEED_BREAK;
                    pass.work.redo_passes += 1;
                    continue;
                }
                if env.flags & lbf::DST_PINNED != 0 && env.imbalance > 0 {
                    env.cpus.clear(env.dst_cpu);
                    env.cpus_trimmed = true;
                    env.dst_cpu = env.new_dst_cpu;
                    env.flags &= !lbf::DST_PINNED;
                    env.loop_ = 0;
                    env.loop_break = SCHED_NR_MIGRATE_BREAK;
                    pass.work.redo_passes += 1;
                    start.examined_base = pass.work.tasks_examined;
                    continue;
                }
                break;
            }
            if let Some(psgc) = parent_sgc
                && env.flags & lbf::SOME_PINNED != 0
                && env.imbalance > 0
            {
                st.set_sgc_imbalance(psgc, true);
            }
            if env.flags & lbf::ALL_PINNED != 0 {
                st.checks.all_pinned();
                env.cpus.clear(busiest);
                env.cpus_trimmed = true;
                let again = if version.v5_4_load_balance_tail() {
                    let dst_group = topo.span(topo.local_group(sd).span);
                    !env.cpus.is_subset(dst_group)
                } else {
                    env.cpus.iter().next().is_some()
                };
                if again {
                    env.loop_ = 0;
                    env.loop_break = SCHED_NR_MIGRATE_BREAK;
                    pass.work.redo_passes += 1;
                    continue 'redo;
                }
                break 'redo Exit::AllPinned;
            }
        }
        if ld_moved == 0 {
            st.schedstat.sd_mut(this_cpu, level).lb_mut(idle).lb_failed += 1;
            if idle != CpuIdleType::NewlyIdle {
                st.sd_mut(this_cpu, level).nr_balance_failed += 1;
            }
            if need_active_balance(ctx, st, lg, &env) {
                let curr_allowed = ctx.rqs[busiest.index()]
                    .curr
                    .is_some_and(|c| ctx.tasks[c].cpus_mask.test(this_cpu));
                if !curr_allowed {
                    env.flags |= lbf::ALL_PINNED;
                    break 'redo Exit::OnePinned;
                }
                let b = &mut st.cpus[busiest.index()];
                if !b.active_balance {
                    b.active_balance = true;
                    b.push_cpu = this_cpu;
                    active_balance = true;
                    st.checks.active_balance_requested();
                    pass.stoppers.push(StopperRequest {
                        busiest,
                        push_cpu: this_cpu,
                    });
                }
                st.sd_mut(this_cpu, level).nr_balance_failed = sd.cache_nice_tries + 1;
            }
        } else {
            st.sd_mut(this_cpu, level).nr_balance_failed = 0;
        }
        // v5.4 also resets after a voluntary active balance (an idle destination pulling
        // the one task of a reduced-capacity source, or a misfit task).
        let voluntary = version.v5_4_load_balance_tail()
            && active_balance
            && (need_active_balance_voluntary(ctx, lg, &env));
        let s = st.sd_mut(this_cpu, level);
        if !active_balance || voluntary {
            s.balance_interval = sd.min_interval;
        } else if s.balance_interval < sd.max_interval {
            s.balance_interval *= 2;
        }
        break 'redo Exit::Done;
    };
    let moved = if exit == Exit::Done { ld_moved } else { 0 };
    if exit != Exit::Done {
        let all_pinned = env.flags & lbf::ALL_PINNED != 0;
        out_balanced(
            st,
            version,
            sd,
            parent_sgc,
            (this_cpu, level, idle),
            exit,
            all_pinned,
        );
    }
    if st.trace.enabled
        && let Some((local, busiest, imbalance, src_cpu)) = found
    {
        let outcome = match exit {
            Exit::Balanced if busiest.is_some() && src_cpu.is_none() && imbalance != 0 => {
                LbOutcome::NoBusiestQueue
            }
            Exit::Balanced => LbOutcome::Balanced,
            Exit::AllPinned => LbOutcome::AllPinned,
            Exit::OnePinned => LbOutcome::OnePinned,
            Exit::Done if ld_moved > 0 => LbOutcome::Moved,
            Exit::Done => LbOutcome::Failed,
        };
        let s = st.sd(this_cpu, level);
        let record = LbRecord {
            time_ns: pass.now_ns(ctx),
            cpu: this_cpu,
            level,
            idle,
            local,
            busiest,
            migration_type: env.migration_type,
            imbalance,
            src_cpu,
            ld_moved: moved,
            outcome,
            nr_balance_failed: s.nr_balance_failed,
            balance_interval: s.balance_interval,
            active_balance,
        };
        st.trace.push(LbEvent::Balance(record));
    }
    put_back_env(topo, lg, env);
    moved
}

/// The local group's capacity of the domain above `level` among a CPU's domains `doms`
/// (`sd->parent->groups`), whose imbalance flag load_balance() (v4.6-v5.4) sets and clears;
/// `None` at the top.
#[inline]
pub(super) fn parent_sgc(topo: &Topology, doms: &[SchedDomain], level: usize) -> Option<SgcId> {
    doms.get(level + 1).map(|p| topo.local_group(p).sgc)
}

/// Follows fair.c: load_balance()'s `struct lb_env` (v4.6-v5.4) for a first pass: before
/// v5.4 `env->cpus` is every active CPU (`cpu_active_mask`, copied into the per-CPU
/// `load_balance_mask`), from v5.4 the domain's span. lbsim reuses the storage of the mask
/// the last pass put back ([`put_back_env`]).
#[inline]
pub(super) fn first_env(
    topo: &Topology,
    lg: &mut LegacyState,
    this_cpu: CpuId,
    level: usize,
    idle: CpuIdleType,
) -> LbEnv {
    if lg.version.v5_4_load_balance_tail() {
        LbEnv::new(topo, this_cpu, level, idle)
    } else {
        // Every active CPU, in the mask the last pass put back (a pass that cleared CPUs of
        // it set them again).
        let all = topo.machine().all_cpus();
        let cpus = lg.cpus_scratch.take().unwrap_or_else(|| all.clone());
        debug_assert!(cpus == *all);
        LbEnv::with_cpus(topo, this_cpu, level, idle, cpus)
    }
}

/// Keeps the storage of a pass's `env->cpus` for the next [`first_env`], every active CPU
/// set again (before v5.4; from v5.4 the mask is the domain's span, built each pass).
#[inline]
pub(super) fn put_back_env(topo: &Topology, lg: &mut LegacyState, env: LbEnv) {
    if !lg.version.v5_4_load_balance_tail() {
        let mut cpus = env.cpus;
        if env.cpus_trimmed {
            cpus.or_assign(topo.machine().all_cpus());
        }
        lg.cpus_scratch = Some(cpus);
    }
}

/// Follows fair.c: the `out_balanced:` and `out_one_pinned:` tail of load_balance()
/// (v4.6-v5.4), for a pass
/// that left the `redo:` loop by `exit` (not [`Exit::Done`]) on `this_cpu`'s domain `sd` at
/// `level` (`at`): a balanced domain clears the parent group's imbalance flag (v5.4: unless
/// LBF_ALL_PINNED), counts `lb_balanced` and resets `nr_balance_failed` (neither after
/// LBF_ALL_PINNED on the busiest CPU's current task, `out_one_pinned`); then
/// `balance_interval` doubles below `MAX_PINNED_INTERVAL` when all tasks were pinned, or
/// below `max_interval` (v5.4: not at newidle).
pub(super) fn out_balanced(
    st: &mut BalanceState,
    version: LegacyVersion,
    sd: &SchedDomain,
    parent_sgc: Option<SgcId>,
    at: (CpuId, usize, CpuIdleType),
    exit: Exit,
    all_pinned: bool,
) {
    let (this_cpu, level, idle) = at;
    debug_assert_ne!(exit, Exit::Done);
    if exit == Exit::Balanced
        && let Some(psgc) = parent_sgc
        && (!version.v5_4_load_balance_tail() || !all_pinned)
    {
        st.set_sgc_imbalance(psgc, false);
    }
    if exit != Exit::OnePinned {
        st.schedstat
            .sd_mut(this_cpu, level)
            .lb_mut(idle)
            .lb_balanced += 1;
    }
    let s = st.sd_mut(this_cpu, level);
    if exit != Exit::OnePinned {
        s.nr_balance_failed = 0;
    }
    // out_one_pinned: (v5.4: not at newidle)
    if !(version.v5_4_load_balance_tail() && idle == CpuIdleType::NewlyIdle)
        && ((all_pinned && s.balance_interval < MAX_PINNED_INTERVAL)
            || s.balance_interval < sd.max_interval)
    {
        s.balance_interval *= 2;
    }
}

/// The voluntary cases of need_active_balance() (v5.4's voluntary_active_balance()): the
/// reduced-capacity and misfit cases, without the failure count.
fn need_active_balance_voluntary(ctx: &BalanceCtx<'_>, lg: &LegacyState, env: &LbEnv) -> bool {
    let sd = env.sd(ctx.topo);
    let src = &ctx.rqs[env.src_cpu.index()];
    (env.idle != CpuIdleType::NotIdle
        && src.cfs.h_nr_running == 1
        && lg.check_cpu_capacity(ctx, env.src_cpu, sd)
        && src.cpu_capacity() * u64::from(sd.imbalance_pct)
            < ctx.rqs[env.dst_cpu.index()].cpu_capacity() * 100)
        || env.migration_type == MigrationType::Misfit
}

/// Follows fair.c: active_load_balance_cpu_stop() (v4.6-v5.4): the stopper on `busiest`
/// (still marked `active_balance`, pushing to `push_cpu`, with more than one task counting
/// itself) moves the first task detach_one_task() accepts, as CPU_IDLE, in the lowest
/// domain of the target spanning the source; then clears `active_balance`. Unlike v5.12+
/// it does not reset `nr_balance_failed` after a push, and has no LBF_ACTIVE_LB (the
/// failure count set by load_balance() makes the task cold enough).
///
/// The stopper preempts the running fair task, which stays queued (put_prev_task()):
/// lbsim does that here, and the engine schedules `busiest` afterwards, as with
/// [`crate::lb::active_load_balance_cpu_stop`].
pub fn active_load_balance_cpu_stop(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    lg: &LegacyState,
    req: StopperRequest,
    pass: &mut Pass,
) {
    let busiest = req.busiest;
    {
        let now = pass.now_ns(ctx);
        let r = &mut ctx.rqs[busiest.index()];
        r.update_rq_clock(now);
        if let Some(curr) = r.curr {
            if r.cfs.curr == Some(curr) {
                r.put_prev_task_fair(ctx.tasks, curr);
            }
            r.context_switch(ctx.tasks, None);
        }
    }
    let target = st.cpus[busiest.index()].push_cpu;
    let valid = st.cpus[busiest.index()].active_balance && target == req.push_cpu;
    // `busiest_rq->nr_running <= 1` counts the stopper itself; lbsim's count does not.
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
            env.cpus = Cpumask::full(topo.nr_cpus());
            st.schedstat.sd_mut(target, level).alb_count += 1;
            let clock_ns = pass.now_ns(ctx);
            ctx.rqs[busiest.index()].update_rq_clock(clock_ns);
            match detach_one_task(ctx, st, &mut env, lg.version, pass) {
                Some(p) => {
                    st.schedstat.sd_mut(target, level).alb_pushed += 1;
                    env.tasks.push(p);
                    attach_tasks(ctx, &mut env, pass);
                }
                None => st.schedstat.sd_mut(target, level).alb_failed += 1,
            }
        }
    }
    st.cpus[busiest.index()].active_balance = false;
}
