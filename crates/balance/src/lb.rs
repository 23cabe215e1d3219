//! One load-balancing pass at one domain: `load_balance()` (renamed `sched_balance_rq()` in
//! v6.10) and everything it calls, plus the active-balance stopper.
//!
//! Follows kernel/sched/fair.c of v6.6, checked line by line against a v6.12 tree
//! (6.12.67; its out-of-tree coursework blocks were skipped). Where the two differ the
//! doc comment says which one is followed:
//! - the newidle domain loop and the misfit bookkeeping follow v6.6 (see [`load_balance`]);
//! - the `lb_imbalance_*` and `lb_hot_gained` schedstat accounting follow v6.12+/v6.14
//!   (per migration type; hot tasks counted when actually detached), the counters
//!   /proc/schedstat version 17 prints (versions 15 and 16 print their sum).
//!
//! The experiment switches of ../shared/EXPERIMENTS.md that live here:
//! - `LB_UTIL_SKIP_SINGLE` ([`find_busiest_queue`], migrate_util);
//! - `LB_RELAX_BY_FAILED` ([`detach_tasks`]: off means the v5.5-v5.9 rule, `load/2 >
//!   imbalance` while `nr_balance_failed <= cache_nice_tries`; see [`load_too_big`],
//!   [`util_too_big`]);
//! - `NEWIDLE_BAIL_ON_PENDING` ([`should_we_balance`]);
//! - `LB_TIP_AVG_HIGH` ([`cpu_load`]);
//! - `PREFER_SIBLING_NR_DIFF` ([`find_busiest_group`] and [`calculate_imbalance`], see
//!   [`prefer_sibling_force`]).
//!
//! Deliberately left out: NUMA balancing (fbq_type filtering and migrate_degrades_locality
//! are the identities they are without CONFIG_NUMA_BALANCING), group scheduling
//! (task_h_load is the task's load_avg), CFS bandwidth (throttled_lb_pair), per-CPU kthreads,
//! core scheduling cookies, energy-aware scheduling (no perf domain: rd->overutilized is
//! never read), CPU hotplug (every CPU is active) and the out-of-tree cache-aware paths of
//! some recent trees.
//!
//! Files, one concern each (the kernel function each one follows is named in its `//!`):
//! - this file: the [`load_balance`] driver ([`LoadBalance`], `struct lb_env` as [`LbEnv`],
//!   the pass accounting [`Pass`]), the constants, fits_capacity() and capacity_greater();
//! - `types.rs`: `enum cpu_idle_type`, `group_type`, `migration_type`, the `LBF_*` flags,
//!   `struct sg_lb_stats` and `struct sd_lb_stats`;
//! - `cpu.rs`: reading runqueues (idle_cpu(), cpu_load(), capacity_of(), the asym helpers);
//! - `should_we_balance.rs`: should_we_balance();
//! - `group_stats.rs`: update_group_capacity(), update_sg_lb_stats(), group_classify(),
//!   update_sd_pick_busiest(), update_sd_lb_stats();
//! - `imbalance.rs`: calculate_imbalance(), find_busiest_group(), sibling_imbalance();
//! - `memo.rs`: the group statistics kept between two attempts of one load_balance() (lbsim's);
//! - `idle_settled.rs`: a pass at CPU_IDLE that find_busiest_group() balances from task
//!   counts alone, without the group statistics (lbsim's shortcut, same result);
//! - `find_busiest_queue.rs`: find_busiest_queue();
//! - `detach.rs`: task_hot(), can_migrate_task(), detach_tasks(), attach_tasks();
//! - `active.rs`: need_active_balance() and the active_load_balance_cpu_stop() stopper.

mod active;
pub(crate) mod cpu;
mod detach;
mod find_busiest_queue;
mod group_stats;
mod idle_settled;
mod imbalance;
mod memo;
mod should_we_balance;
mod types;

use crate::params::LbFeat;
use lbsim_rq::task::TaskId;
use lbsim_topology::{CpuId, Cpumask, SchedDomain, SgcId, SpanId, Topology};
use smallvec::SmallVec;

use crate::cost::WorkAccount;
use crate::ctx::{BalanceCtx, Migration, StopperRequest};
use crate::state::BalanceState;
use crate::trace::{LbEvent, LbOutcome, LbRecord};

use self::detach::attach_tasks;

pub use self::active::{
    active_load_balance_cpu_stop, need_active_balance, voluntary_active_balance,
};
pub use self::cpu::{
    arch_scale_cpu_capacity, capacity_of, check_cpu_capacity, cpu_load, cpu_runnable, cpu_util_cfs,
    cpu_util_cfs_boost, idle_cpu, idle_cpu_of, idle_cpu_with, is_core_idle, rq_idle_own,
    sched_smt_active, ttwu_pending, ttwu_pending_with,
};
pub use self::detach::{
    can_migrate_task, detach_tasks, load_too_big, shr_bound, task_hot, util_too_big,
};
pub use self::find_busiest_queue::find_busiest_queue;
pub(crate) use self::group_stats::is_local_group;
pub use self::group_stats::{
    group_classify, group_has_capacity, group_is_overloaded, update_group_capacity,
    update_sd_lb_stats, update_sd_pick_busiest, update_sg_lb_stats,
};
pub use self::imbalance::{
    FbgResult, adjust_numa_imbalance, calculate_imbalance, find_busiest_group,
    prefer_sibling_force, sibling_imbalance,
};
pub(crate) use self::memo::SdMemo;
pub use self::should_we_balance::should_we_balance;
pub use self::types::{CpuIdleType, GroupType, MigrationType, SdLbStats, SgLbStats, lbf};

pub use lbsim_kernel::SCHED_CAPACITY_SCALE;
/// `SCHED_NR_MIGRATE_BREAK`: detach_tasks() takes a breather every this many tasks.
pub const SCHED_NR_MIGRATE_BREAK: u32 = 32;
/// `MAX_PINNED_INTERVAL` (ms): how far balance_interval may grow when all tasks are pinned.
pub const MAX_PINNED_INTERVAL: u64 = 512;
/// `NUMA_IMBALANCE_MIN`: imbalances up to this many tasks are allowed between lightly
/// loaded NUMA groups.
pub const NUMA_IMBALANCE_MIN: i64 = 2;
pub use lbsim_kernel::NICE_0_LOAD;
/// `CONFIG_PREEMPTION`: set by the PREEMPT and PREEMPT_DYNAMIC models that arm64 defconfig
/// and the major distributions build; a newly idle detach_tasks() then stops after one task.
pub const CONFIG_PREEMPTION: bool = true;

/// `struct lb_env`.
#[derive(Clone, Debug)]
pub struct LbEnv {
    /// The CPU whose domain `env->sd` is (the balancing CPU; unchanged by a DST_PINNED retarget).
    pub sd_cpu: CpuId,
    /// `env->sd`: the level of the domain in `sd_cpu`'s domain list.
    pub level: usize,
    /// `src_cpu`.
    pub src_cpu: CpuId,
    /// `dst_cpu`.
    pub dst_cpu: CpuId,
    /// `dst_grpmask`: the balance mask of the local group (`None` for the stopper).
    pub dst_grpmask: Option<SpanId>,
    /// `new_dst_cpu`.
    pub new_dst_cpu: CpuId,
    /// `idle`.
    pub idle: CpuIdleType,
    /// `imbalance`, in the unit of `migration_type`.
    pub imbalance: i64,
    /// `cpus`: candidate CPUs.
    pub cpus: Cpumask,
    /// lbsim's: a CPU has been cleared from `cpus` since [`LbEnv::new`] (which set it to the
    /// domain's span), so a group's span may no longer be inside it.
    pub cpus_trimmed: bool,
    /// `flags` (see [`lbf`]).
    pub flags: u32,
    /// `loop`.
    pub loop_: u32,
    /// `loop_break`.
    pub loop_break: u32,
    /// `loop_max`.
    pub loop_max: u32,
    /// `migration_type`.
    pub migration_type: MigrationType,
    /// `tasks`: detached, not yet attached.
    pub tasks: SmallVec<[TaskId; 8]>,
    /// `p->sched_task_hot` of the task can_migrate_task() accepted last (v6.12+): it was
    /// hot and is moved only because nr_balance_failed > cache_nice_tries.
    pub task_hot: bool,
}

impl LbEnv {
    /// The env sched_balance_rq() sets up for `this_cpu` at `level`.
    pub fn new(topo: &Topology, this_cpu: CpuId, level: usize, idle: CpuIdleType) -> LbEnv {
        LbEnv::new_reusing(topo, this_cpu, level, idle, None)
    }

    /// [`LbEnv::new`], writing `env->cpus` into `spare` (a mask no longer used) if given.
    pub fn new_reusing(
        topo: &Topology,
        this_cpu: CpuId,
        level: usize,
        idle: CpuIdleType,
        spare: Option<Cpumask>,
    ) -> LbEnv {
        let sd = &topo.domains(this_cpu)[level];
        // `cpumask_and(cpus, sched_domain_span(sd), cpu_active_mask)`: every CPU is active
        // (no hotplug) and every span is made of the machine's CPUs, so the AND is the span
        // itself (checked in debug builds).
        let span = topo.span(sd.span);
        let cpus = match spare {
            Some(mut cpus) => {
                cpus.copy_from(span);
                cpus
            }
            None => span.clone(),
        };
        debug_assert!(topo.span_is_subset(sd.span, topo.machine().all_cpus()));
        LbEnv::with_cpus(topo, this_cpu, level, idle, cpus)
    }

    /// [`LbEnv::new`] with `env->cpus` given (the pre-v5.4 balancer's every active CPU),
    /// so that the caller builds the one mask it needs.
    pub fn with_cpus(
        topo: &Topology,
        this_cpu: CpuId,
        level: usize,
        idle: CpuIdleType,
        cpus: Cpumask,
    ) -> LbEnv {
        let sd = &topo.domains(this_cpu)[level];
        let local = topo.local_group(sd);
        LbEnv {
            sd_cpu: this_cpu,
            level,
            src_cpu: this_cpu,
            dst_cpu: this_cpu,
            dst_grpmask: Some(local.balance_mask),
            new_dst_cpu: this_cpu,
            idle,
            imbalance: 0,
            cpus,
            cpus_trimmed: false,
            flags: 0,
            loop_: 0,
            loop_break: SCHED_NR_MIGRATE_BREAK,
            loop_max: 0,
            migration_type: MigrationType::Load,
            tasks: SmallVec::new(),
            task_hot: false,
        }
    }

    /// `env->sd`.
    #[inline]
    pub fn sd<'t>(&self, topo: &'t Topology) -> &'t SchedDomain {
        &topo.domains(self.sd_cpu)[self.level]
    }
}

/// The accounting of one balancing pass: the work done so far (which is also the pass's
/// clock: `start_ns + cost.charge(work)`), and the decisions taken.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Simulated time the pass started.
    pub start_ns: u64,
    /// Work done so far.
    pub work: WorkAccount,
    /// Tasks moved, in order.
    pub migrations: SmallVec<[Migration; 4]>,
    /// Stoppers to queue.
    pub stoppers: SmallVec<[StopperRequest; 1]>,
}

impl Pass {
    /// A pass starting at `start_ns`.
    pub fn new(start_ns: u64) -> Pass {
        Pass {
            start_ns,
            ..Pass::default()
        }
    }

    /// The pass's clock: when the work done so far is finished.
    #[inline]
    pub fn now_ns(&self, ctx: &BalanceCtx<'_>) -> u64 {
        self.start_ns.saturating_add(ctx.cost.charge(&self.work))
    }

    /// [`Pass::now_ns`] kept out of line, for loops that read the clock rarely (only while a
    /// wake-up may be pending), so that they do not carry the cost model's reads.
    #[inline(never)]
    pub fn now_ns_cold(&self, ctx: &BalanceCtx<'_>) -> u64 {
        self.now_ns(ctx)
    }
}

// ---------------------------------------------------------------------------
// Pure rules.
// ---------------------------------------------------------------------------

pub use lbsim_kernel::{capacity_greater, fits_capacity};

// ---------------------------------------------------------------------------
// load_balance.
// ---------------------------------------------------------------------------

/// Follows fair.c: load_balance() (v6.6; sched_balance_rq() since v6.10) for `this_cpu`'s
/// domain at `level`: should_we_balance(), find_busiest_group(), find_busiest_queue(),
/// detach/attach with the NEED_BREAK, DST_PINNED and ALL_PINNED loops, the parent group's
/// imbalance flag, nr_balance_failed, active balance through a stopper request, and the
/// balance_interval reset/doubling. Returns the number of tasks moved (`ld_moved`).
///
/// Runs [`LoadBalance::begin`] and then [`LoadBalance::redo`] until it is done, all in one
/// pass: the periodic and idle balances call it as one unit, while the newly idle balance
/// drives the two halves itself so that time passes between a `goto redo` and the
/// should_we_balance() it leads to (see [`crate::newidle`]).
///
/// Work: one domain entered per call, one redo pass per NEED_BREAK, DST_PINNED retarget or
/// ALL_PINNED redo. Differences from the kernel: v6.6 counts a failed misfit balance in
/// nr_balance_failed and lets it double the interval (v6.12 stable excludes misfit); lbsim
/// follows v6.6. The SD_SERIALIZE flag is taken by the caller (rebalance_domains, v6.6).
pub fn load_balance(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    this_cpu: CpuId,
    level: usize,
    idle: CpuIdleType,
    continue_balancing: &mut bool,
    pass: &mut Pass,
) -> u32 {
    if idle == CpuIdleType::Idle
        && let Some(balanced) = idle_settled::load_balance_settled(ctx, st, this_cpu, level, pass)
    {
        if !balanced {
            *continue_balancing = false;
        }
        return 0;
    }
    let mut lb = LoadBalance::begin(ctx, st, this_cpu, level, idle, pass);
    loop {
        if let LbIteration::Done(ld_moved) = lb.redo(ctx, st, pass) {
            if !lb.continue_balancing {
                *continue_balancing = false;
            }
            lb.recycle(st);
            return ld_moved;
        }
    }
}

/// An empty memo, from the spares if there is one.
fn empty_memo(st: &mut BalanceState) -> Box<SdMemo> {
    let mut memo = st.sd_memo_spare.pop().unwrap_or_default();
    memo.reset();
    memo
}

/// What a traced load_balance() iteration found, for its [`LbRecord`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Found {
    local: GroupType,
    busiest: Option<GroupType>,
    /// `env->imbalance` as calculate_imbalance() set it (detach_tasks() then consumes it).
    imbalance: i64,
    src_cpu: Option<CpuId>,
}

/// What one [`LoadBalance::redo`] iteration ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbIteration {
    /// `goto redo`: every task examined was pinned (LBF_ALL_PINNED) and CPUs outside the
    /// local group are left to try; the next iteration starts with should_we_balance().
    Redo,
    /// load_balance() returned `ld_moved` (0 on every `out_*` path).
    Done(u32),
}

/// How the `redo:` loop of load_balance() was left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LbExit {
    /// `goto out_balanced`.
    Balanced,
    /// `goto out_all_pinned`.
    AllPinned,
    /// `goto out_one_pinned`.
    OnePinned,
    /// Fell through to the end (moved tasks, or failed and maybe asked for the stopper).
    Done,
}

/// A load_balance() (sched_balance_rq() since v6.10) in progress: `struct lb_env` and the
/// locals of the function that live across a `goto redo`.
///
/// The kernel re-enters should_we_balance() at every `goto redo`; a newly idle balance keeps
/// running meanwhile while wake-ups are queued on its CPU, so the newly idle path stops
/// between iterations and resumes after the time the previous one took (seed 002).
/// [`load_balance`] runs the iterations back to back.
#[derive(Clone, Debug)]
pub struct LoadBalance {
    /// `this_cpu`: the balancing CPU (`env.dst_cpu` may move to `new_dst_cpu`).
    this_cpu: CpuId,
    /// The sched_group_capacity of the parent domain's local group (`sd_parent->groups`).
    parent_sgc: Option<SgcId>,
    /// `env`.
    env: LbEnv,
    /// `ld_moved`.
    ld_moved: u32,
    /// `active_balance`.
    active_balance: bool,
    /// `*continue_balancing`: cleared when should_we_balance() says no.
    continue_balancing: bool,
    /// For the trace: what this iteration's find_busiest_group() and find_busiest_queue()
    /// found (`None` when should_we_balance() stopped it first).
    found: Option<Found>,
    /// The group statistics of the previous iteration, for the next (lbsim's; taken only
    /// once they are kept, see `lb/memo.rs`, and boxed so that moving the balance moves a
    /// pointer). None until an iteration ends in `goto redo`, or until the first iteration
    /// starts when the previous balance of the domain redid (`redid`): the balances that
    /// never redo run the kernel's code without a memo.
    memo: Option<Box<SdMemo>>,
    /// The previous balance of the domain ended an iteration in `goto redo`: the first
    /// iteration takes a memo (lbsim's, see `lb/memo.rs`; taken there rather than in
    /// [`LoadBalance::begin`], which then builds the balance in place).
    redid: bool,
}

impl LoadBalance {
    /// Follows fair.c: load_balance() (v6.6; sched_balance_rq() since v6.10) up to the
    /// `redo:` label: sets up `env` for `this_cpu`'s domain at `level` and counts the
    /// attempt (`lb_count`). Work: one domain entered.
    pub fn begin(
        ctx: &BalanceCtx<'_>,
        st: &mut BalanceState,
        this_cpu: CpuId,
        level: usize,
        idle: CpuIdleType,
        pass: &mut Pass,
    ) -> LoadBalance {
        let topo = ctx.topo;
        let parent_sgc = topo
            .domains(this_cpu)
            .get(level + 1)
            .map(|p| topo.local_group(p).sgc);
        pass.work.domains += 1;
        st.schedstat.sd_mut(this_cpu, level).lb_mut(idle).lb_count += 1;
        let redid = st.lb_redid(this_cpu, level);
        LoadBalance {
            this_cpu,
            parent_sgc,
            env: LbEnv::new_reusing(topo, this_cpu, level, idle, st.env_cpus_spare.pop()),
            ld_moved: 0,
            active_balance: false,
            continue_balancing: true,
            found: None,
            memo: None,
            redid,
        }
    }

    /// Ends a finished balance, leaving its `env->cpus` and its memo for the next one to
    /// reuse.
    #[inline]
    pub fn recycle(self, st: &mut BalanceState) {
        st.env_cpus_spare.push(self.env.cpus);
        if let Some(memo) = self.memo {
            st.sd_memo_spare.push(memo);
        }
    }

    /// `*continue_balancing` as the caller sees it: false once should_we_balance() said no.
    pub fn continue_balancing(&self) -> bool {
        self.continue_balancing
    }

    /// The balance's `env` (`struct lb_env`).
    pub fn env(&self) -> &LbEnv {
        &self.env
    }

    /// Follows fair.c: load_balance() (v6.6; sched_balance_rq() since v6.10) from the
    /// `redo:` label: should_we_balance(), find_busiest_group(), find_busiest_queue(),
    /// detach/attach with the NEED_BREAK and DST_PINNED `goto more_balance` loops, then
    /// either `goto redo` after LBF_ALL_PINNED (returns [`LbIteration::Redo`]; call again)
    /// or the rest of the function to its return (returns [`LbIteration::Done`]).
    pub fn redo(
        &mut self,
        ctx: &mut BalanceCtx<'_>,
        st: &mut BalanceState,
        pass: &mut Pass,
    ) -> LbIteration {
        match self.iteration(ctx, st, pass) {
            Some(exit) => {
                let ld_moved = self.finish(st, ctx.topo, exit);
                if let Some(memo) = &self.memo {
                    st.set_lb_redid(self.this_cpu, self.env.level, memo.redone());
                }
                if st.trace.enabled {
                    self.trace_pass(st, exit, pass.now_ns(ctx));
                }
                LbIteration::Done(ld_moved)
            }
            None => {
                self.memo.get_or_insert_with(|| empty_memo(st)).set_redone();
                LbIteration::Redo
            }
        }
    }

    /// One pass from `redo:` to `goto redo` (`None`) or to a way out of the loop.
    fn iteration(
        &mut self,
        ctx: &mut BalanceCtx<'_>,
        st: &mut BalanceState,
        pass: &mut Pass,
    ) -> Option<LbExit> {
        let topo = ctx.topo;
        let this_cpu = self.this_cpu;
        let env = &mut self.env;
        let (level, idle) = (env.level, env.idle);
        let sd = env.sd(topo);
        let mut start =
            st.checks
                .lb_pass_begin(ctx, env, pass.work.tasks_examined, pass.now_ns(ctx));
        self.found = None;
        if self.redid {
            self.redid = false;
            self.memo = Some(empty_memo(st));
        }
        if !should_we_balance(ctx, env, pass) {
            self.continue_balancing = false;
            return Some(LbExit::Balanced);
        }
        let fbg = imbalance::find_busiest_group_with(ctx, st, env, self.memo.as_deref_mut(), pass);
        self.found = Some(Found {
            local: fbg.sds.local_stat.group_type,
            busiest: fbg.sds.busiest.map(|_| fbg.sds.busiest_stat.group_type),
            imbalance: env.imbalance,
            src_cpu: None,
        });
        let Some(group) = fbg.busiest else {
            st.schedstat.sd_mut(this_cpu, level).lb_mut(idle).lb_nobusyg += 1;
            return Some(LbExit::Balanced);
        };
        let Some(busiest) = find_busiest_queue(ctx, env, topo.group(group), pass) else {
            st.schedstat.sd_mut(this_cpu, level).lb_mut(idle).lb_nobusyq += 1;
            return Some(LbExit::Balanced);
        };
        if let Some(f) = &mut self.found {
            f.src_cpu = Some(busiest);
        }
        debug_assert_ne!(busiest, env.dst_cpu);
        let busiest_type = fbg.sds.busiest_stat.group_type;
        st.checks
            .busiest_queue(ctx, env, busiest_type, busiest, pass.now_ns(ctx));
        st.schedstat
            .sd_mut(this_cpu, level)
            .add_imbalance(idle, env.migration_type, env.imbalance);
        env.src_cpu = busiest;
        self.ld_moved = 0;
        env.flags |= lbf::ALL_PINNED;
        if ctx.rqs[busiest.index()].nr_running > 1 {
            env.loop_max = ctx
                .tunables
                .nr_migrate
                .min(ctx.rqs[busiest.index()].nr_running);
            loop {
                // more_balance:
                let clock_ns = pass.now_ns(ctx);
                ctx.rqs[busiest.index()].update_rq_clock(clock_ns);
                let cur = detach_tasks(ctx, st, env, pass);
                let (examined, at) = (pass.work.tasks_examined, pass.now_ns(ctx));
                st.checks.detached(ctx, env, &start, examined, cur, at);
                if cur > 0 {
                    let first = env.tasks.first().copied();
                    st.checks.attached(ctx, env, &start, first, at);
                    attach_tasks(ctx, env, pass);
                    self.ld_moved += cur;
                }
                if env.flags & lbf::NEED_BREAK != 0 {
                    env.flags &= !lbf::NEED_BREAK;
                    pass.work.redo_passes += 1;
                    continue;
                }
                if env.flags & lbf::DST_PINNED != 0 && env.imbalance > 0 {
                    env.cpus.clear(env.dst_cpu);
                    env.cpus_trimmed = true;
                    if let Some(memo) = &mut self.memo {
                        memo.cpu_cleared(env.dst_cpu);
                    }
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
            if let Some(psgc) = self.parent_sgc
                && env.flags & lbf::SOME_PINNED != 0
                && env.imbalance > 0
            {
                st.set_sgc_imbalance(psgc, true);
            }
            if env.flags & lbf::ALL_PINNED != 0 {
                st.checks.all_pinned();
                env.cpus.clear(busiest);
                env.cpus_trimmed = true;
                if let Some(memo) = &mut self.memo {
                    memo.cpu_cleared(busiest);
                }
                if !env
                    .cpus
                    .is_subset(topo.span(topo.local_group(sd).balance_mask))
                {
                    env.loop_ = 0;
                    env.loop_break = SCHED_NR_MIGRATE_BREAK;
                    pass.work.redo_passes += 1;
                    return None;
                }
                return Some(LbExit::AllPinned);
            }
        }
        let at = pass.now_ns(ctx);
        if self.ld_moved == 0 {
            st.schedstat.sd_mut(this_cpu, level).lb_mut(idle).lb_failed += 1;
            if idle != CpuIdleType::NewlyIdle {
                st.sd_mut(this_cpu, level).nr_balance_failed += 1;
            }
            if need_active_balance(ctx, st, env, at) {
                let curr_allowed = ctx.rqs[busiest.index()]
                    .curr
                    .is_some_and(|c| ctx.tasks[c].cpus_mask.test(this_cpu));
                if !curr_allowed {
                    return Some(LbExit::OnePinned);
                }
                env.flags &= !lbf::ALL_PINNED;
                let b = &mut st.cpus[busiest.index()];
                if !b.active_balance {
                    b.active_balance = true;
                    b.push_cpu = this_cpu;
                    self.active_balance = true;
                    st.checks.active_balance_requested();
                    pass.stoppers.push(StopperRequest {
                        busiest,
                        push_cpu: this_cpu,
                    });
                }
                if !ctx.features.enabled(LbFeat::LbReduceActiveBalance) {
                    // Before v5.13 (this switch: v5.11): "We've kicked active balancing, force
                    // task migration": the stopper's can_migrate_task() then ignores cache
                    // hotness.
                    st.sd_mut(this_cpu, level).nr_balance_failed = sd.cache_nice_tries + 1;
                }
            }
        } else {
            st.sd_mut(this_cpu, level).nr_balance_failed = 0;
        }
        // "We were unbalanced, so reset the balancing interval"; v5.6-v5.11 asked
        // voluntary_active_balance() and otherwise, an active balance having begun, started
        // to back off.
        let reduce = ctx.features.enabled(LbFeat::LbReduceActiveBalance);
        let reset = !self.active_balance
            || if reduce {
                need_active_balance(ctx, st, env, at)
            } else {
                voluntary_active_balance(ctx, env, at)
            };
        let s = st.sd_mut(this_cpu, level);
        if reset {
            s.balance_interval = sd.min_interval;
        } else if !reduce && s.balance_interval < sd.max_interval {
            s.balance_interval *= 2;
        }
        Some(LbExit::Done)
    }

    /// Records the finished load_balance() in the trace, unless should_we_balance() stopped
    /// it before find_busiest_group().
    fn trace_pass(&self, st: &mut BalanceState, exit: LbExit, now_ns: u64) {
        let Some(Found {
            local,
            busiest,
            imbalance,
            src_cpu,
        }) = self.found
        else {
            return;
        };
        let env = &self.env;
        let outcome = match exit {
            LbExit::Balanced if busiest.is_some() && src_cpu.is_none() && imbalance != 0 => {
                LbOutcome::NoBusiestQueue
            }
            LbExit::Balanced => LbOutcome::Balanced,
            LbExit::AllPinned => LbOutcome::AllPinned,
            LbExit::OnePinned => LbOutcome::OnePinned,
            LbExit::Done if self.ld_moved > 0 => LbOutcome::Moved,
            LbExit::Done => LbOutcome::Failed,
        };
        let sd = st.sd(self.this_cpu, env.level);
        let record = LbRecord {
            time_ns: now_ns,
            cpu: self.this_cpu,
            level: env.level,
            idle: env.idle,
            local,
            busiest,
            migration_type: env.migration_type,
            imbalance,
            src_cpu,
            ld_moved: self.ld_moved,
            outcome,
            nr_balance_failed: sd.nr_balance_failed,
            balance_interval: sd.balance_interval,
            active_balance: self.active_balance,
        };
        st.trace.push(LbEvent::Balance(record));
    }

    /// The labels after the loop (`out_balanced`, `out_all_pinned`, `out_one_pinned`) and
    /// the return value.
    fn finish(&self, st: &mut BalanceState, topo: &Topology, exit: LbExit) -> u32 {
        if exit == LbExit::Done {
            return self.ld_moved;
        }
        let env = &self.env;
        let at = (self.this_cpu, env.level, env.idle);
        out_balanced(st, env.sd(topo), self.parent_sgc, at, exit, env.flags);
        0
    }
}

/// Follows fair.c: load_balance() (v6.6; sched_balance_rq() since v6.10) from its
/// `out_balanced:` label (`exit` [`LbExit::Balanced`]), `out_all_pinned:`
/// ([`LbExit::AllPinned`]) or `out_one_pinned:` ([`LbExit::OnePinned`]) to its return, for
/// the balance of `sd` at `(this_cpu, level, idle)` with `env->flags` `flags`: the parent
/// group's imbalance flag, `lb_balanced`, `nr_balance_failed` and the balance interval's
/// back-off.
fn out_balanced(
    st: &mut BalanceState,
    sd: &SchedDomain,
    parent_sgc: Option<SgcId>,
    (this_cpu, level, idle): (CpuId, usize, CpuIdleType),
    exit: LbExit,
    flags: u32,
) {
    debug_assert_ne!(exit, LbExit::Done);
    if exit == LbExit::Balanced
        && let Some(psgc) = parent_sgc
        && flags & lbf::ALL_PINNED == 0
    {
        st.set_sgc_imbalance(psgc, false);
    }
    let i = st.domain_index(this_cpu, level);
    if exit == LbExit::Balanced || exit == LbExit::AllPinned {
        st.schedstat
            .sd_at_mut(st.schedstat.domain_base(this_cpu) + level)
            .lb_mut(idle)
            .lb_balanced += 1;
        st.sd_at_mut(i).nr_balance_failed = 0;
    }
    // out_one_pinned:
    if idle == CpuIdleType::NewlyIdle {
        return;
    }
    let s = st.sd_at_mut(i);
    if (flags & lbf::ALL_PINNED != 0 && s.balance_interval < MAX_PINNED_INTERVAL)
        || s.balance_interval < sd.max_interval
    {
        s.balance_interval *= 2;
    }
}

#[cfg(test)]
pub(crate) mod harness;
#[cfg(test)]
mod tests;
