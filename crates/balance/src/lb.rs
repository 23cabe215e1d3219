//! One load-balancing pass at one domain: `load_balance()` (renamed `sched_balance_rq()` in
//! v6.10) and everything it calls, plus the active-balance stopper.
//!
//! Follows kernel/sched/fair.c of v6.6, checked line by line against a v6.12 tree
//! (6.12.67; its out-of-tree coursework blocks were skipped). Where the two differ the
//! doc comment says which one is followed:
//! - the newidle domain loop and the misfit bookkeeping follow v6.6 (see [`load_balance`]);
//! - the `lb_imbalance_*` and `lb_hot_gained` schedstat accounting follow v6.12+/v6.14
//!   (per migration type; hot tasks counted when actually detached), the counters
//!   /proc/schedstat version 17 prints.
//!
//! The experiment switches of ../shared/EXPERIMENTS.md that live here:
//! - `LB_UTIL_SKIP_SINGLE` ([`find_busiest_queue`], migrate_util);
//! - `LB_RELAX_BY_FAILED` ([`detach_tasks`]: off means `load/2 > imbalance` whatever
//!   `nr_balance_failed`, the v5.5-v5.9 rule; see [`load_too_big`], [`util_too_big`]);
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

use crate::params::LbFeat;
use crate::trace::{LbEvent, LbOutcome, LbRecord};
use lbsim_rq::rq::Rq;
use lbsim_rq::task::TaskId;
use lbsim_topology::{
    CpuId, Cpumask, GroupId, SchedDomain, SchedGroup, SdFlag, SgcId, SpanId, Topology,
};
use smallvec::SmallVec;

use crate::cost::WorkAccount;
use crate::ctx::{BalanceCtx, Migration, StopperRequest};
use crate::state::{BalanceState, msecs_to_jiffies};

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

/// `enum cpu_idle_type`, in the v6.10+ order that /proc/schedstat versions 16 and 17 print
/// (`__CPU_NOT_IDLE`, `CPU_IDLE`, `CPU_NEWLY_IDLE`; v6.6 ordered CPU_IDLE first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuIdleType {
    /// `__CPU_NOT_IDLE` (`CPU_NOT_IDLE` before v6.10): a busy CPU's periodic balance.
    NotIdle,
    /// `CPU_IDLE`: an idle CPU's periodic balance (its own tick, or the nohz idle balancer).
    Idle,
    /// `CPU_NEWLY_IDLE`: a CPU about to go idle.
    NewlyIdle,
}

impl CpuIdleType {
    /// Every idle type, in schedstat column order.
    pub const ALL: [CpuIdleType; 3] = [
        CpuIdleType::NotIdle,
        CpuIdleType::Idle,
        CpuIdleType::NewlyIdle,
    ];

    /// The index into `sd->lb_*[]` (v6.10+ numbering).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `env->idle` as a truth value (v6.10+): the destination is idle or newly idle.
    pub const fn is_idle(self) -> bool {
        !matches!(self, CpuIdleType::NotIdle)
    }

    /// The kernel name (v6.10+).
    pub const fn name(self) -> &'static str {
        match self {
            CpuIdleType::NotIdle => "__CPU_NOT_IDLE",
            CpuIdleType::Idle => "CPU_IDLE",
            CpuIdleType::NewlyIdle => "CPU_NEWLY_IDLE",
        }
    }
}

/// `enum group_type`, ordered by pull priority (lowest first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupType {
    /// `group_has_spare`: spare capacity.
    #[default]
    HasSpare,
    /// `group_fully_busy`: no spare capacity, but no task waits for long.
    FullyBusy,
    /// `group_misfit_task`: a task does not fit its CPU's capacity.
    MisfitTask,
    /// `group_smt_balance`: an SMT group with more than one task, seen by an idle CPU.
    SmtBalance,
    /// `group_asym_packing`: the destination has a higher asym-packing priority.
    AsymPacking,
    /// `group_imbalanced`: affinity kept the child level from balancing.
    Imbalanced,
    /// `group_overloaded`: more tasks than the group can serve.
    Overloaded,
}

impl GroupType {
    /// The kernel name.
    pub const fn name(self) -> &'static str {
        match self {
            GroupType::HasSpare => "group_has_spare",
            GroupType::FullyBusy => "group_fully_busy",
            GroupType::MisfitTask => "group_misfit_task",
            GroupType::SmtBalance => "group_smt_balance",
            GroupType::AsymPacking => "group_asym_packing",
            GroupType::Imbalanced => "group_imbalanced",
            GroupType::Overloaded => "group_overloaded",
        }
    }
}

/// `enum migration_type`: the unit of `env->imbalance`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MigrationType {
    /// `migrate_load`: PELT load.
    #[default]
    Load,
    /// `migrate_util`: PELT utilization.
    Util,
    /// `migrate_task`: number of tasks.
    Task,
    /// `migrate_misfit`: one misfit task.
    Misfit,
}

impl MigrationType {
    /// Every migration type, in schedstat column order.
    pub const ALL: [MigrationType; 4] = [
        MigrationType::Load,
        MigrationType::Util,
        MigrationType::Task,
        MigrationType::Misfit,
    ];

    /// The index of the `lb_imbalance_*` column.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The kernel name.
    pub const fn name(self) -> &'static str {
        match self {
            MigrationType::Load => "migrate_load",
            MigrationType::Util => "migrate_util",
            MigrationType::Task => "migrate_task",
            MigrationType::Misfit => "migrate_misfit",
        }
    }
}

/// `LBF_*` flags of `env->flags`.
pub mod lbf {
    /// `LBF_ALL_PINNED`: no task examined could run on the destination.
    pub const ALL_PINNED: u32 = 0x01;
    /// `LBF_NEED_BREAK`: detach_tasks() took a breather after `loop_break` tasks.
    pub const NEED_BREAK: u32 = 0x02;
    /// `LBF_DST_PINNED`: a task could go to `new_dst_cpu` of the local group instead.
    pub const DST_PINNED: u32 = 0x04;
    /// `LBF_SOME_PINNED`: some task could not run on the destination.
    pub const SOME_PINNED: u32 = 0x08;
    /// `LBF_ACTIVE_LB`: the active-balance stopper is detaching.
    pub const ACTIVE_LB: u32 = 0x10;
}

/// `struct sg_lb_stats`: one group's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SgLbStats {
    /// `avg_load`: `group_load * 1024 / group_capacity`, computed for overloaded groups only.
    pub avg_load: u64,
    /// `group_load`: sum of cpu_load().
    pub group_load: u64,
    /// `group_capacity`: `sgc->capacity`.
    pub group_capacity: u64,
    /// `group_util`: sum of cpu_util_cfs().
    pub group_util: u64,
    /// `group_runnable`: sum of cpu_runnable().
    pub group_runnable: u64,
    /// `sum_nr_running`: tasks of every class.
    pub sum_nr_running: u32,
    /// `sum_h_nr_running`: CFS tasks.
    pub sum_h_nr_running: u32,
    /// `idle_cpus`.
    pub idle_cpus: u32,
    /// `group_weight`.
    pub group_weight: u32,
    /// `group_type`.
    pub group_type: GroupType,
    /// `group_asym_packing`.
    pub group_asym_packing: bool,
    /// `group_smt_balance`.
    pub group_smt_balance: bool,
    /// `group_misfit_task_load`.
    pub group_misfit_task_load: u64,
}

/// `struct sd_lb_stats`: a domain's statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdLbStats {
    /// `busiest`.
    pub busiest: Option<GroupId>,
    /// `local`.
    pub local: Option<GroupId>,
    /// `total_load`.
    pub total_load: u64,
    /// `total_capacity`.
    pub total_capacity: u64,
    /// `avg_load`: the domain average, computed where needed.
    pub avg_load: u64,
    /// `prefer_sibling`: the busiest group's child domain has SD_PREFER_SIBLING.
    pub prefer_sibling: bool,
    /// `busiest_stat`.
    pub busiest_stat: SgLbStats,
    /// `local_stat`.
    pub local_stat: SgLbStats,
}

impl Default for SdLbStats {
    /// init_sd_lb_stats(): the busiest sentinel is has_spare with `idle_cpus = UINT_MAX`.
    fn default() -> SdLbStats {
        SdLbStats {
            busiest: None,
            local: None,
            total_load: 0,
            total_capacity: 0,
            avg_load: 0,
            prefer_sibling: false,
            busiest_stat: SgLbStats {
                idle_cpus: u32::MAX,
                group_type: GroupType::HasSpare,
                ..SgLbStats::default()
            },
            local_stat: SgLbStats::default(),
        }
    }
}

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
        let sd = &topo.domains(this_cpu)[level];
        let local = topo.local_group(sd);
        let mut cpus = topo.span(sd.span).clone();
        cpus.and_assign(topo.machine().all_cpus());
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
    pub fn now_ns(&self, ctx: &BalanceCtx<'_>) -> u64 {
        self.start_ns + ctx.cost.charge(&self.work)
    }
}

// ---------------------------------------------------------------------------
// Pure rules.
// ---------------------------------------------------------------------------

pub use lbsim_kernel::{capacity_greater, fits_capacity};

/// Follows fair.c: group_has_capacity() (v6.6-v6.12): fewer tasks than CPUs, or neither
/// runnable nor util exceeds the capacity by more than imbalance_pct.
pub fn group_has_capacity(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    let pct = u64::from(imbalance_pct);
    if sgs.sum_nr_running < sgs.group_weight {
        return true;
    }
    if sgs.group_capacity * pct < sgs.group_runnable * 100 {
        return false;
    }
    sgs.group_capacity * 100 > sgs.group_util * pct
}

/// Follows fair.c: group_is_overloaded() (v6.6-v6.12): more tasks than CPUs, and util or
/// runnable exceeds the capacity by more than imbalance_pct.
pub fn group_is_overloaded(imbalance_pct: u32, sgs: &SgLbStats) -> bool {
    let pct = u64::from(imbalance_pct);
    if sgs.sum_nr_running <= sgs.group_weight {
        return false;
    }
    if sgs.group_capacity * 100 < sgs.group_util * pct {
        return true;
    }
    sgs.group_capacity * pct < sgs.group_runnable * 100
}

/// Follows fair.c: group_classify() (v6.6-v6.12): the first matching type of overloaded,
/// imbalanced (`sg_imbalanced`: the group's `sgc->imbalance`), asym_packing, smt_balance,
/// misfit_task, fully_busy, has_spare.
pub fn group_classify(imbalance_pct: u32, sg_imbalanced: bool, sgs: &SgLbStats) -> GroupType {
    if group_is_overloaded(imbalance_pct, sgs) {
        return GroupType::Overloaded;
    }
    if sg_imbalanced {
        return GroupType::Imbalanced;
    }
    if sgs.group_asym_packing {
        return GroupType::AsymPacking;
    }
    if sgs.group_smt_balance {
        return GroupType::SmtBalance;
    }
    if sgs.group_misfit_task_load != 0 {
        return GroupType::MisfitTask;
    }
    if !group_has_capacity(imbalance_pct, sgs) {
        return GroupType::FullyBusy;
    }
    GroupType::HasSpare
}

/// Follows fair.c: sibling_imbalance() (v6.6-v6.12): the task-count difference between the
/// busiest and the local group, normalised by their core counts (rounded), with an empty
/// local group always offered 2 when busiest has more than one task.
pub fn sibling_imbalance(
    dst_idle: bool,
    ncores_busiest: u32,
    ncores_local: u32,
    busiest: &SgLbStats,
    local: &SgLbStats,
) -> i64 {
    if !dst_idle || busiest.sum_nr_running == 0 {
        return 0;
    }
    let (nb, nl) = (i64::from(ncores_busiest), i64::from(ncores_local));
    if nb == nl {
        return (i64::from(busiest.sum_nr_running) - i64::from(local.sum_nr_running)).max(0);
    }
    let mut imbalance =
        (nl * i64::from(busiest.sum_nr_running) - nb * i64::from(local.sum_nr_running)).max(0);
    imbalance = (2 * imbalance + nl + nb) / (nl + nb);
    if imbalance <= 1 && local.sum_nr_running == 0 && busiest.sum_nr_running > 1 {
        imbalance = 2;
    }
    imbalance
}

/// Follows fair.c: adjust_numa_imbalance() (v6.0-v6.12): with at most `imb_numa_nr` tasks
/// on the destination, an imbalance of up to NUMA_IMBALANCE_MIN tasks is allowed (0).
pub fn adjust_numa_imbalance(imbalance: i64, dst_running: i64, imb_numa_nr: i64) -> i64 {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imbalance
}

/// `shr_bound(val, shift)`: `val >> min(shift, BITS_PER_TYPE(val) - 1)`.
pub const fn shr_bound(val: u64, shift: u32) -> u64 {
    val >> if shift < 63 { shift } else { 63 }
}

// ---------------------------------------------------------------------------
// Reading runqueues.
// ---------------------------------------------------------------------------

fn rq<'c>(ctx: &'c BalanceCtx<'_>, cpu: CpuId) -> &'c Rq {
    &ctx.rqs[cpu.index()]
}

/// Follows core.c: idle_cpu() (v6.6-v6.12), at the pass's time `at_ns`: the CPU runs its
/// idle task, has nothing queued and no wake-up on its wake list (`rq->ttwu_pending`, or a
/// wake-up the engine reports sent by `at_ns`).
pub fn idle_cpu(ctx: &BalanceCtx<'_>, cpu: CpuId, at_ns: u64) -> bool {
    let r = rq(ctx, cpu);
    r.curr.is_none() && r.nr_running == 0 && !ttwu_pending(ctx, cpu, at_ns)
}

/// `rq->ttwu_pending` at `at_ns`: set by the runqueue, or by a wake-up IPI already sent.
pub fn ttwu_pending(ctx: &BalanceCtx<'_>, cpu: CpuId, at_ns: u64) -> bool {
    rq(ctx, cpu).ttwu_pending || ctx.pending.ttwu_pending_at(cpu, at_ns)
}

/// `sched_smt_active()`: some core has more than one hardware thread.
pub fn sched_smt_active(topo: &Topology) -> bool {
    topo.machine().has_smt()
}

/// Follows fair.c: is_core_idle() (v6.6-v6.12): every other SMT sibling of `cpu` is idle.
pub fn is_core_idle(ctx: &BalanceCtx<'_>, cpu: CpuId, at_ns: u64) -> bool {
    ctx.topo
        .machine()
        .smt_mask(cpu)
        .iter()
        .all(|s| s == cpu || idle_cpu(ctx, s, at_ns))
}

/// Follows fair.c: cpu_load() (v6.6-v6.12): `rq->cfs.avg.load_avg`.
///
/// With the experiment feature `LB_TIP_AVG_HIGH` (seed 003, never merged; EXPERIMENTS.md):
/// when the instantaneous weight exceeds twice the average (`load.weight > 2 * load_avg`,
/// both in the 10-bit domain), the load read is `load_avg + min(NICE_0_LOAD,
/// load.weight / 2)`, so a runqueue that just received tasks looks loaded at once.
pub fn cpu_load(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cpu_load_lb(ctx.features.enabled(LbFeat::LbTipAvgHigh))
}

/// Follows fair.c: cpu_runnable() (v6.6-v6.12): `rq->cfs.avg.runnable_avg`.
pub fn cpu_runnable(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cfs.avg.avg.runnable_avg
}

/// Follows fair.c: cpu_util_cfs() (v6.6-v6.12): `cpu_util(cpu, NULL, -1, 0)`.
pub fn cpu_util_cfs(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cpu_util_cfs(ctx.tasks)
}

/// Follows fair.c: cpu_util_cfs_boost() (v6.6-v6.12): `cpu_util(cpu, NULL, -1, 1)`.
pub fn cpu_util_cfs_boost(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cpu_util_cfs_boost(ctx.tasks)
}

/// `capacity_of(cpu)`: `rq->cpu_capacity`.
pub fn capacity_of(ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
    rq(ctx, cpu).cpu_capacity
}

/// `arch_scale_cpu_capacity(cpu)`.
pub fn arch_scale_cpu_capacity(topo: &Topology, cpu: CpuId) -> u64 {
    u64::from(topo.machine().capacity(cpu))
}

/// Follows fair.c: check_cpu_capacity() (v6.6-v6.12): the CPU lost more than
/// `imbalance_pct - 100` percent of its capacity to rt/dl/irq.
pub fn check_cpu_capacity(ctx: &BalanceCtx<'_>, cpu: CpuId, sd: &SchedDomain) -> bool {
    capacity_of(ctx, cpu) * u64::from(sd.imbalance_pct)
        < arch_scale_cpu_capacity(ctx.topo, cpu) * 100
}

/// Follows fair.c: update_cpu_capacity() / scale_rt_capacity() (v6.12, no hardware
/// pressure): the capacity left to CFS after rt, dl and irq, at least 1; stored in
/// `rq->cpu_capacity`.
fn update_cpu_capacity(ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> u64 {
    let max = arch_scale_cpu_capacity(ctx.topo, cpu);
    let r = &mut ctx.rqs[cpu.index()];
    let capacity = lbsim_pelt::scale_rt_capacity(max, &r.avg_rt, &r.avg_dl, &r.avg_irq).max(1);
    r.cpu_capacity = capacity;
    capacity
}

/// Follows fair.c: sched_reduced_capacity() (v6.6-v6.12): exactly one CFS task on a CPU
/// with reduced capacity.
fn sched_reduced_capacity(ctx: &BalanceCtx<'_>, cpu: CpuId, sd: &SchedDomain) -> bool {
    rq(ctx, cpu).cfs.h_nr_running == 1 && check_cpu_capacity(ctx, cpu, sd)
}

/// `arch_asym_cpu_priority()`: the generic default, `-cpu` (lower-numbered CPUs preferred).
fn arch_asym_cpu_priority(cpu: CpuId) -> i64 {
    -i64::from(cpu.0)
}

/// `sched_asym_prefer(a, b)`.
fn sched_asym_prefer(a: CpuId, b: CpuId) -> bool {
    arch_asym_cpu_priority(a) > arch_asym_cpu_priority(b)
}

/// Follows fair.c: sched_use_asym_prio() (v6.6-v6.12).
fn sched_use_asym_prio(ctx: &BalanceCtx<'_>, sd: &SchedDomain, cpu: CpuId, at_ns: u64) -> bool {
    if !sd.flags.contains(SdFlag::AsymPacking) {
        return false;
    }
    if !sched_smt_active(ctx.topo) {
        return true;
    }
    sd.flags.contains(SdFlag::ShareCpucapacity) || is_core_idle(ctx, cpu, at_ns)
}

/// Follows fair.c: sched_asym() (v6.6-v6.12).
fn sched_asym(
    ctx: &BalanceCtx<'_>,
    sd: &SchedDomain,
    dst_cpu: CpuId,
    src_cpu: CpuId,
    at_ns: u64,
) -> bool {
    sched_use_asym_prio(ctx, sd, dst_cpu, at_ns) && sched_asym_prefer(dst_cpu, src_cpu)
}

/// `task_on_cpu(rq, p)`: `p` is the task running on `cpu`.
fn task_on_cpu(ctx: &BalanceCtx<'_>, cpu: CpuId, p: TaskId) -> bool {
    rq(ctx, cpu).curr == Some(p)
}

// ---------------------------------------------------------------------------
// should_we_balance.
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Group statistics.
// ---------------------------------------------------------------------------

/// Follows fair.c: update_group_capacity() / update_cpu_capacity() (v6.6-v6.12): refreshes
/// the capacity of `cpu`'s local group at `level` and its `next_update`.
pub fn update_group_capacity(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    cpu: CpuId,
    level: usize,
) {
    let topo = ctx.topo;
    let doms = topo.domains(cpu);
    let sd = &doms[level];
    let sdg = topo.local_group(sd);
    let interval = msecs_to_jiffies(st.sd(cpu, level).balance_interval, ctx.hz)
        .clamp(1, st.max_load_balance_interval);
    st.sgc_mut(sdg.sgc).next_update = ctx.jiffies + interval;
    if level == 0 {
        let capacity = update_cpu_capacity(ctx, cpu);
        let s = st.sgc_mut(sdg.sgc);
        s.capacity = capacity;
        s.min_capacity = capacity;
        s.max_capacity = capacity;
        return;
    }
    let child = &doms[level - 1];
    let (mut capacity, mut min_capacity, mut max_capacity) = (0u64, u64::MAX, 0u64);
    if child.flags.contains(SdFlag::Overlap) {
        for c in topo.span(sdg.span).iter() {
            let cap = capacity_of(ctx, c);
            capacity += cap;
            min_capacity = min_capacity.min(cap);
            max_capacity = max_capacity.max(cap);
        }
    } else {
        for g in topo.groups(child) {
            let s = st.sgc(g.sgc);
            capacity += s.capacity;
            min_capacity = min_capacity.min(s.min_capacity);
            max_capacity = max_capacity.max(s.max_capacity);
        }
    }
    let s = st.sgc_mut(sdg.sgc);
    s.capacity = capacity;
    s.min_capacity = min_capacity;
    s.max_capacity = max_capacity;
}

/// Follows fair.c: smt_balance() (v6.6-v6.12).
fn smt_balance(env: &LbEnv, sgs: &SgLbStats, group: &SchedGroup) -> bool {
    env.idle.is_idle() && group.flags.contains(SdFlag::ShareCpucapacity) && sgs.sum_h_nr_running > 1
}

/// Follows fair.c: sched_group_asym() (v6.6 sched_asym(); v6.12 form).
fn sched_group_asym(
    ctx: &BalanceCtx<'_>,
    env: &LbEnv,
    sgs: &SgLbStats,
    group: &SchedGroup,
    at_ns: u64,
) -> bool {
    if group.flags.contains(SdFlag::ShareCpucapacity) && sgs.group_weight - sgs.idle_cpus != 1 {
        return false;
    }
    match group.asym_prefer_cpu {
        Some(prefer) => sched_asym(ctx, env.sd(ctx.topo), env.dst_cpu, prefer, at_ns),
        None => false,
    }
}

/// Follows fair.c: update_sg_lb_stats() (v6.6-v6.12). Counts one CPU scanned per CPU read.
pub fn update_sg_lb_stats(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    group: &SchedGroup,
    local_group: bool,
    sg_overloaded: &mut bool,
    pass: &mut Pass,
) -> SgLbStats {
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let at = pass.now_ns(ctx);
    let mut sgs = SgLbStats::default();
    for i in topo.span(group.span).iter().filter(|c| env.cpus.test(*c)) {
        pass.work.cpus_scanned += 1;
        let r = rq(ctx, i);
        let load = cpu_load(ctx, i);
        sgs.group_load += load;
        sgs.group_util += cpu_util_cfs(ctx, i);
        sgs.group_runnable += cpu_runnable(ctx, i);
        sgs.sum_h_nr_running += r.cfs.h_nr_running;
        let nr_running = r.nr_running;
        sgs.sum_nr_running += nr_running;
        if nr_running > 1 {
            *sg_overloaded = true;
        }
        // cpu_overutilized() is false without an energy model (v6.10+; in v6.6 it only
        // fed rd->overutilized, which nothing reads without a perf domain).
        if nr_running == 0 && idle_cpu(ctx, i, at) {
            sgs.idle_cpus += 1;
            continue;
        }
        if local_group {
            continue;
        }
        if sd.flags.contains(SdFlag::AsymCpucapacity) {
            if sgs.group_misfit_task_load < r.misfit_task_load {
                sgs.group_misfit_task_load = r.misfit_task_load;
                *sg_overloaded = true;
            }
        } else if env.idle.is_idle()
            && sched_reduced_capacity(ctx, i, sd)
            && sgs.group_misfit_task_load < load
        {
            sgs.group_misfit_task_load = load;
        }
    }
    sgs.group_capacity = st.sgc(group.sgc).capacity;
    sgs.group_weight = group.group_weight;
    if !local_group
        && env.idle.is_idle()
        && sgs.sum_h_nr_running > 0
        && sched_group_asym(ctx, env, &sgs, group, at)
    {
        sgs.group_asym_packing = true;
    }
    if !local_group && smt_balance(env, &sgs, group) {
        sgs.group_smt_balance = true;
    }
    sgs.group_type = group_classify(sd.imbalance_pct, st.sgc(group.sgc).imbalance, &sgs);
    if sgs.group_type == GroupType::Overloaded {
        sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity;
    }
    sgs
}

/// Follows fair.c: smt_vs_nonsmt_groups() (v6.6-v6.12).
fn smt_vs_nonsmt_groups(sg1: Option<&SchedGroup>, sg2: Option<&SchedGroup>) -> bool {
    match (sg1, sg2) {
        (Some(a), Some(b)) => {
            a.flags.contains(SdFlag::ShareCpucapacity) != b.flags.contains(SdFlag::ShareCpucapacity)
        }
        _ => false,
    }
}

/// Follows fair.c: update_sd_pick_busiest() (v6.6-v6.12): whether `sg` (with `sgs`) is
/// busier than the current `sds.busiest`.
pub fn update_sd_pick_busiest(
    ctx: &BalanceCtx<'_>,
    st: &BalanceState,
    env: &LbEnv,
    sds: &SdLbStats,
    sg: &SchedGroup,
    sgs: &SgLbStats,
) -> bool {
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let busiest = &sds.busiest_stat;
    let busiest_sg = sds.busiest.map(|id| topo.group(id));
    if sgs.sum_h_nr_running == 0 {
        return false;
    }
    let asym_cap = sd.flags.contains(SdFlag::AsymCpucapacity);
    if asym_cap
        && sgs.group_type == GroupType::MisfitTask
        && (!capacity_greater(capacity_of(ctx, env.dst_cpu), st.sgc(sg.sgc).max_capacity)
            || sds.local_stat.group_type != GroupType::HasSpare)
    {
        return false;
    }
    if sgs.group_type > busiest.group_type {
        return true;
    }
    if sgs.group_type < busiest.group_type {
        return false;
    }
    let has_spare_rule = |sgs: &SgLbStats| -> bool {
        if sgs.idle_cpus > busiest.idle_cpus {
            return false;
        }
        !(sgs.idle_cpus == busiest.idle_cpus && sgs.sum_nr_running <= busiest.sum_nr_running)
    };
    match sgs.group_type {
        GroupType::Overloaded => return sgs.avg_load > busiest.avg_load,
        GroupType::Imbalanced => return false,
        GroupType::AsymPacking => {
            let (Some(b), Some(s)) = (
                busiest_sg.and_then(|g| g.asym_prefer_cpu),
                sg.asym_prefer_cpu,
            ) else {
                return false;
            };
            return sched_asym_prefer(b, s);
        }
        GroupType::MisfitTask => {
            return sgs.group_misfit_task_load > busiest.group_misfit_task_load;
        }
        GroupType::SmtBalance if sgs.idle_cpus != 0 || busiest.idle_cpus != 0 => {
            if !has_spare_rule(sgs) {
                return false;
            }
        }
        GroupType::SmtBalance | GroupType::FullyBusy => {
            if sgs.avg_load < busiest.avg_load {
                return false;
            }
            if sgs.avg_load == busiest.avg_load
                && busiest_sg.is_some_and(|b| b.flags.contains(SdFlag::ShareCpucapacity))
            {
                return false;
            }
        }
        GroupType::HasSpare => {
            if smt_vs_nonsmt_groups(busiest_sg, Some(sg)) {
                return !(sg.flags.contains(SdFlag::ShareCpucapacity) && sgs.sum_h_nr_running <= 1);
            }
            if !has_spare_rule(sgs) {
                return false;
            }
        }
    }
    if asym_cap
        && sgs.group_type <= GroupType::FullyBusy
        && capacity_greater(st.sgc(sg.sgc).min_capacity, capacity_of(ctx, env.dst_cpu))
    {
        return false;
    }
    true
}

/// Follows fair.c: update_idle_cpu_scan() (v6.1-v6.12): SIS_UTIL's scan budget for the LLC,
/// written on periodic (not newly idle) balances of the LLC domain.
fn update_idle_cpu_scan(ctx: &BalanceCtx<'_>, st: &mut BalanceState, env: &LbEnv, sum_util: u64) {
    if !ctx.features.enabled(LbFeat::SisUtil) || env.idle == CpuIdleType::NewlyIdle {
        return;
    }
    let topo = ctx.topo;
    let llc_weight = u64::from(topo.sd_llc_size(env.dst_cpu));
    let sd = env.sd(topo);
    if u64::from(sd.span_weight) != llc_weight {
        return;
    }
    let Some(share) = st.sd_llc_shared_mut(topo, env.dst_cpu) else {
        return;
    };
    let x = sum_util / llc_weight;
    let pct = u64::from(sd.imbalance_pct);
    let tmp = (x * x * pct * pct / (10000 * SCHED_CAPACITY_SCALE)).min(SCHED_CAPACITY_SCALE);
    let y = (SCHED_CAPACITY_SCALE - tmp) * llc_weight / SCHED_CAPACITY_SCALE;
    share.nr_idle_scan = y as u32;
}

/// Follows fair.c: update_sd_lb_stats() (v6.6-v6.12): statistics of every group (local
/// first), the busiest candidate, `prefer_sibling` from the busiest group's flags, the root
/// domain's overloaded flag at the top level, and SIS_UTIL's scan budget.
pub fn update_sd_lb_stats(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &LbEnv,
    pass: &mut Pass,
) -> SdLbStats {
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let mut sds = SdLbStats::default();
    let mut sum_util = 0u64;
    let mut sg_overloaded = false;
    for gid in topo.group_ids(sd) {
        let sg = topo.group(gid);
        let local_group = topo.span(sg.span).test(env.dst_cpu);
        if local_group {
            sds.local = Some(gid);
            if env.idle != CpuIdleType::NewlyIdle || ctx.jiffies >= st.sgc(sg.sgc).next_update {
                update_group_capacity(ctx, st, env.sd_cpu, env.level);
            }
        }
        let sgs = update_sg_lb_stats(ctx, st, env, sg, local_group, &mut sg_overloaded, pass);
        st.checks.group_classified(sgs.group_type);
        if local_group {
            sds.local_stat = sgs;
        } else if update_sd_pick_busiest(ctx, st, env, &sds, sg, &sgs) {
            sds.busiest = Some(gid);
            sds.busiest_stat = sgs;
        }
        sds.total_load += sgs.group_load;
        sds.total_capacity += sgs.group_capacity;
        sum_util += sgs.group_util;
    }
    if let Some(b) = sds.busiest {
        sds.prefer_sibling = topo.group(b).flags.contains(SdFlag::PreferSibling);
    }
    if env.level + 1 == topo.domains(env.sd_cpu).len() {
        st.rd.overloaded = sg_overloaded;
        st.rd.overutilized = false;
    }
    update_idle_cpu_scan(ctx, st, env, sum_util);
    sds
}

/// Whether `PREFER_SIBLING_NR_DIFF` is off and the pre-2017 prefer-sibling rule applies.
///
/// The experiment switch (seed 004; EXPERIMENTS.md, KERNEL-MODEL §7e) within the v6.6
/// structure:
/// - **on** (v6.6+): find_busiest_group() forces a balance for prefer_sibling only if
///   `sibling_imbalance() > 1`, and calculate_imbalance() moves half that difference, so a
///   one-task difference between sibling groups is left alone.
/// - **off** (the rule before Srikar Dronamraju's 2017 patch, from Nikhil Rao's 2010
///   "group_capacity to 1 only if local group has extra capacity"): an idle destination
///   whose local group has spare capacity treats a busiest group with more than one task
///   as lacking capacity (`group_no_capacity`, hence overloaded), and that kernel's
///   calculate_imbalance() then balanced load: for a difference of one task
///   fix_small_imbalance() set the imbalance to one task's load, so the lone extra task
///   moved, and moved back at the next balance of the other side. In the v6.6 structure
///   this is: the force_balance condition becomes `busiest.sum_nr_running > 1`, and the
///   prefer_sibling migrate_task imbalance is at least one task.
///
/// This returns true when the off-rule forces a balance (`env.idle` and the busiest group
/// has more than one task); the caller has checked prefer_sibling and a has_spare local.
pub fn prefer_sibling_force(ctx: &BalanceCtx<'_>, env: &LbEnv, busiest: &SgLbStats) -> bool {
    !ctx.features.enabled(LbFeat::PreferSiblingNrDiff)
        && env.idle.is_idle()
        && busiest.sum_nr_running > 1
}

/// Follows fair.c: calculate_imbalance() (v6.6-v6.12): the migration type and the amount.
/// With `NO_PREFER_SIBLING_NR_DIFF`, see [`prefer_sibling_force`].
pub fn calculate_imbalance(ctx: &BalanceCtx<'_>, env: &mut LbEnv, sds: &mut SdLbStats) {
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let local = &mut sds.local_stat;
    let busiest = &sds.busiest_stat;
    match busiest.group_type {
        GroupType::MisfitTask => {
            if sd.flags.contains(SdFlag::AsymCpucapacity) {
                env.migration_type = MigrationType::Misfit;
                env.imbalance = 1;
            } else {
                env.migration_type = MigrationType::Load;
                env.imbalance = busiest.group_misfit_task_load as i64;
            }
            return;
        }
        GroupType::AsymPacking => {
            env.migration_type = MigrationType::Task;
            env.imbalance = i64::from(busiest.sum_h_nr_running);
            return;
        }
        GroupType::SmtBalance | GroupType::Imbalanced => {
            env.migration_type = MigrationType::Task;
            env.imbalance = 1;
            return;
        }
        _ => {}
    }
    if local.group_type == GroupType::HasSpare {
        if busiest.group_type > GroupType::FullyBusy && !sd.flags.contains(SdFlag::ShareLlc) {
            env.migration_type = MigrationType::Util;
            env.imbalance = (local.group_capacity.max(local.group_util) - local.group_util) as i64;
            if env.idle.is_idle() && env.imbalance == 0 {
                env.migration_type = MigrationType::Task;
                env.imbalance = 1;
            }
            return;
        }
        env.migration_type = MigrationType::Task;
        if busiest.group_weight == 1 || sds.prefer_sibling {
            let (nb, nl) = (
                sds.busiest.map_or(0, |g| topo.group(g).cores),
                sds.local.map_or(0, |g| topo.group(g).cores),
            );
            env.imbalance = sibling_imbalance(env.idle.is_idle(), nb, nl, busiest, local);
        } else {
            env.imbalance = (i64::from(local.idle_cpus) - i64::from(busiest.idle_cpus)).max(0);
        }
        if sd.flags.contains(SdFlag::Numa) {
            env.imbalance = adjust_numa_imbalance(
                env.imbalance,
                i64::from(local.sum_nr_running) + 1,
                i64::from(sd.imb_numa_nr),
            );
        }
        env.imbalance >>= 1;
        if sds.prefer_sibling && env.imbalance == 0 && prefer_sibling_force(ctx, env, busiest) {
            env.imbalance = 1;
        }
        return;
    }
    if local.group_type < GroupType::Overloaded {
        local.avg_load = local.group_load * SCHED_CAPACITY_SCALE / local.group_capacity;
        if local.avg_load >= busiest.avg_load {
            env.imbalance = 0;
            return;
        }
        sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity;
        if local.avg_load >= sds.avg_load {
            env.imbalance = 0;
            return;
        }
    }
    env.migration_type = MigrationType::Load;
    let a = (busiest.avg_load.wrapping_sub(sds.avg_load)).wrapping_mul(busiest.group_capacity);
    let b = (sds.avg_load.wrapping_sub(local.avg_load)).wrapping_mul(local.group_capacity);
    env.imbalance = (a.min(b) / SCHED_CAPACITY_SCALE) as i64;
}

/// What find_busiest_group() found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FbgResult {
    /// The busiest group, if there is an imbalance to fix.
    pub busiest: Option<GroupId>,
    /// The domain statistics (for tests and traces).
    pub sds: SdLbStats,
}

/// Follows fair.c: find_busiest_group() (v6.6; sched_balance_find_src_group() since v6.10):
/// the early exits in the kernel's order, then calculate_imbalance(). Sets `env.imbalance`
/// (0 when balanced). With `NO_PREFER_SIBLING_NR_DIFF` the prefer-sibling exit uses the
/// pre-2017 rule (see [`prefer_sibling_force`]).
pub fn find_busiest_group(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    env: &mut LbEnv,
    pass: &mut Pass,
) -> FbgResult {
    let mut sds = update_sd_lb_stats(ctx, st, env, pass);
    let ctx: &BalanceCtx<'_> = ctx;
    let topo = ctx.topo;
    let balanced = |env: &mut LbEnv, sds: SdLbStats| {
        env.imbalance = 0;
        FbgResult { busiest: None, sds }
    };
    if sds.busiest.is_none() {
        return balanced(env, sds);
    }
    let busiest = sds.busiest_stat;
    let local = sds.local_stat;
    let force = 'checks: {
        if busiest.group_type == GroupType::MisfitTask {
            break 'checks true;
        }
        // !is_rd_overutilized() && rd->pd: no perf domain is modelled, never taken.
        if busiest.group_type == GroupType::AsymPacking
            || busiest.group_type == GroupType::Imbalanced
        {
            break 'checks true;
        }
        if local.group_type > busiest.group_type {
            return balanced(env, sds);
        }
        if local.group_type == GroupType::Overloaded {
            if local.avg_load >= busiest.avg_load {
                return balanced(env, sds);
            }
            sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity;
            if local.avg_load >= sds.avg_load {
                return balanced(env, sds);
            }
            let pct = u64::from(env.sd(topo).imbalance_pct);
            if 100 * busiest.avg_load <= pct * local.avg_load {
                return balanced(env, sds);
            }
        }
        if sds.prefer_sibling && local.group_type == GroupType::HasSpare {
            let force = if ctx.features.enabled(LbFeat::PreferSiblingNrDiff) {
                let (nb, nl) = (
                    sds.busiest.map_or(0, |g| topo.group(g).cores),
                    sds.local.map_or(0, |g| topo.group(g).cores),
                );
                sibling_imbalance(env.idle.is_idle(), nb, nl, &busiest, &local) > 1
            } else {
                prefer_sibling_force(ctx, env, &busiest)
            };
            st.checks
                .prefer_sibling_exit(ctx, env, &sds, force, pass.now_ns(ctx));
            if force {
                break 'checks true;
            }
        }
        if busiest.group_type != GroupType::Overloaded {
            if !env.idle.is_idle() {
                return balanced(env, sds);
            }
            if busiest.group_type == GroupType::SmtBalance
                && smt_vs_nonsmt_groups(
                    sds.local.map(|g| topo.group(g)),
                    sds.busiest.map(|g| topo.group(g)),
                )
            {
                break 'checks true;
            }
            if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                return balanced(env, sds);
            }
            if busiest.sum_h_nr_running == 1 {
                return balanced(env, sds);
            }
        }
        true
    };
    debug_assert!(force);
    calculate_imbalance(ctx, env, &mut sds);
    st.checks
        .imbalance_calculated(ctx, env, &sds, pass.now_ns(ctx));
    FbgResult {
        busiest: if env.imbalance != 0 {
            sds.busiest
        } else {
            None
        },
        sds,
    }
}

/// Follows fair.c: find_busiest_queue() (v6.6; sched_balance_find_src_rq() since v6.10).
///
/// With `LB_UTIL_SKIP_SINGLE` (v5.7, seed 000) migrate_util skips a runqueue with at most
/// one CFS task: its only task is running and cannot be detached. Without it (the v5.5-v5.6
/// rule) such a runqueue can be chosen for its utilization. migrate_util reads
/// `cpu_util_cfs_boost()` (v6.5 on); with `NO_LB_UTIL_RUNNABLE_BOOST` it reads `cpu_util_cfs()`
/// as v5.7-v6.4 did, so a runqueue of stacked tasks whose runnable_avg is high but whose
/// util_avg is low loses to one running a single task. Ties keep the first CPU.
pub fn find_busiest_queue(
    ctx: &BalanceCtx<'_>,
    env: &LbEnv,
    group: &SchedGroup,
    pass: &mut Pass,
) -> Option<CpuId> {
    let topo = ctx.topo;
    let sd = env.sd(topo);
    let at = pass.now_ns(ctx);
    let mut busiest: Option<CpuId> = None;
    let (mut busiest_util, mut busiest_load, mut busiest_capacity, mut busiest_nr) =
        (0u64, 0u64, 1u64, 0u32);
    for i in topo.span(group.span).iter().filter(|c| env.cpus.test(*c)) {
        pass.work.cpus_scanned += 1;
        let r = rq(ctx, i);
        // fbq_classify_rq() is `regular` and env->fbq_type `all` without NUMA balancing.
        let nr_running = r.cfs.h_nr_running;
        if nr_running == 0 {
            continue;
        }
        let capacity = capacity_of(ctx, i);
        if sd.flags.contains(SdFlag::AsymCpucapacity)
            && !capacity_greater(capacity_of(ctx, env.dst_cpu), capacity)
            && nr_running == 1
        {
            continue;
        }
        if sched_asym(ctx, sd, i, env.dst_cpu, at) && nr_running == 1 {
            continue;
        }
        match env.migration_type {
            MigrationType::Load => {
                let load = cpu_load(ctx, i);
                if nr_running == 1 && load as i64 > env.imbalance && !check_cpu_capacity(ctx, i, sd)
                {
                    continue;
                }
                if load * busiest_capacity > busiest_load * capacity {
                    busiest_load = load;
                    busiest_capacity = capacity;
                    busiest = Some(i);
                }
            }
            MigrationType::Util => {
                let util = if ctx.features.enabled(LbFeat::LbUtilRunnableBoost) {
                    cpu_util_cfs_boost(ctx, i)
                } else {
                    cpu_util_cfs(ctx, i)
                };
                if ctx.features.enabled(LbFeat::LbUtilSkipSingle) && nr_running <= 1 {
                    continue;
                }
                if busiest_util < util {
                    busiest_util = util;
                    busiest = Some(i);
                }
            }
            MigrationType::Task => {
                if busiest_nr < nr_running {
                    busiest_nr = nr_running;
                    busiest = Some(i);
                }
            }
            MigrationType::Misfit => {
                if r.misfit_task_load > busiest_load {
                    busiest_load = r.misfit_task_load;
                    busiest = Some(i);
                }
            }
        }
    }
    busiest
}

// ---------------------------------------------------------------------------
// Detaching tasks.
// ---------------------------------------------------------------------------

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
        && src.cfs.next == Some(p)
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
fn attach_tasks(ctx: &mut BalanceCtx<'_>, env: &mut LbEnv, pass: &mut Pass) {
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

/// The size test of detach_tasks() for migrate_load: is a task of load `load` too big for
/// the remaining imbalance?
///
/// With `LB_RELAX_BY_FAILED` (v5.10, seed 001): `shr_bound(load, nr_balance_failed) >
/// imbalance`, so each failed balance halves the effective size. Without it, the v5.5-v5.9
/// rule: `load / 2 > imbalance`, whatever the failures.
pub fn load_too_big(
    relax_by_failed: bool,
    load: u64,
    nr_balance_failed: u32,
    imbalance: i64,
) -> bool {
    let eff = if relax_by_failed {
        shr_bound(load, nr_balance_failed)
    } else {
        load / 2
    };
    eff as i64 > imbalance
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
                    if (lb_min && load < 16 && failed == 0)
                        || load_too_big(relax, load, failed, env.imbalance)
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

/// `task_h_load(p)` without group scheduling: the task's load_avg.
fn task_h_load(ctx: &BalanceCtx<'_>, p: TaskId) -> u64 {
    ctx.tasks[p].se.avg.load_avg
}

// ---------------------------------------------------------------------------
// Active balance.
// ---------------------------------------------------------------------------

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
    let mut lb = LoadBalance::begin(ctx, st, this_cpu, level, idle, pass);
    loop {
        if let LbIteration::Done(ld_moved) = lb.redo(ctx, st, pass) {
            if !lb.continue_balancing {
                *continue_balancing = false;
            }
            return ld_moved;
        }
    }
}

/// What a traced load_balance() iteration found, for its [`LbRecord`].
#[derive(Clone, Copy, Debug)]
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
        LoadBalance {
            this_cpu,
            parent_sgc,
            env: LbEnv::new(topo, this_cpu, level, idle),
            ld_moved: 0,
            active_balance: false,
            continue_balancing: true,
            found: None,
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
                if st.trace.enabled {
                    self.trace_pass(st, exit, pass.now_ns(ctx));
                }
                LbIteration::Done(ld_moved)
            }
            None => LbIteration::Redo,
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
        if !should_we_balance(ctx, env, pass) {
            self.continue_balancing = false;
            return Some(LbExit::Balanced);
        }
        let fbg = find_busiest_group(ctx, st, env, pass);
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
                ctx.rqs[busiest.index()].update_rq_clock(pass.now_ns(ctx));
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
                st.sgc_mut(psgc).imbalance = true;
            }
            if env.flags & lbf::ALL_PINNED != 0 {
                st.checks.all_pinned();
                env.cpus.clear(busiest);
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
        let env = &self.env;
        let (this_cpu, level, idle) = (self.this_cpu, env.level, env.idle);
        if exit == LbExit::Done {
            return self.ld_moved;
        }
        if exit == LbExit::Balanced
            && let Some(psgc) = self.parent_sgc
            && env.flags & lbf::ALL_PINNED == 0
        {
            st.sgc_mut(psgc).imbalance = false;
        }
        if exit == LbExit::Balanced || exit == LbExit::AllPinned {
            st.schedstat
                .sd_mut(this_cpu, level)
                .lb_mut(idle)
                .lb_balanced += 1;
            st.sd_mut(this_cpu, level).nr_balance_failed = 0;
        }
        // out_one_pinned:
        if idle == CpuIdleType::NewlyIdle {
            return 0;
        }
        let sd = env.sd(topo);
        let s = st.sd_mut(this_cpu, level);
        if (env.flags & lbf::ALL_PINNED != 0 && s.balance_interval < MAX_PINNED_INTERVAL)
            || s.balance_interval < sd.max_interval
        {
            s.balance_interval *= 2;
        }
        0
    }
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
            if r.cfs.curr == Some(curr) {
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
            ctx.rqs[busiest.index()].update_rq_clock(pass.now_ns(ctx));
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

#[cfg(test)]
pub(crate) mod harness;
#[cfg(test)]
mod tests;
