//! The fair-class balancer before "sched/fair: Rework load_balance()" (0b0695f2b34a,
//! v5.5): kernel/sched/fair.c of v4.6 to v5.4 behind the [`Balancer`] trait, as
//! [`LegacyBalancer`], for the kernel profiles 4.6, 4.11, 4.13, 4.18 and 5.4.
//!
//! The algorithm those kernels ran: `avg_load` per group capacity, `load_per_task`,
//! `group_other`/`group_imbalanced`/`group_overloaded` (and `group_misfit_task` from
//! v4.20), the `imbalance_pct` test of find_busiest_group(), calculate_imbalance() with
//! fix_small_imbalance(), find_busiest_queue() on weighted_cpuload() per capacity,
//! detach_tasks() with the v4.x size rule (`load / 2 > imbalance`, whatever the
//! failures), active balance after `cache_nice_tries + 2` failures; the load read through
//! `rq->cpu_load[]` and the domains' load indices (source_load()/target_load(), `LB_BIAS`,
//! until v5.2), decayed every tick and over missed ticks (decay_load_missed()); and
//! `runnable_load_avg` as the load of a runqueue, with seed 003's `LB_TIP_AVG_HIGH`.
//! The release is a parameter ([`LegacyVersion`]), not a copy per release.
//!
//! Files, one concern each: `version.rs` (the releases and what changed when),
//! `load.rs` (runnable_load_avg, weighted_cpuload()), `cpu_load.rs` (`cpu_load[]`, the
//! load indices), `types.rs` (group types and statistics), `group_stats.rs` (capacity,
//! update_sg_lb_stats(), update_sd_pick_busiest(), update_sd_lb_stats()),
//! `idle_settled.rs` (lbsim's shortcut for a CPU_IDLE pass find_busiest_group() balances
//! before any load is read), `imbalance.rs` (fix_small_imbalance(),
//! calculate_imbalance(), find_busiest_group()),
//! `find_busiest_queue.rs`, `detach.rs` (task_hot(), can_migrate_task(),
//! detach_tasks()), `load_balance.rs` (load_balance(), should_we_balance(),
//! need_active_balance(), the stopper), `rebalance.rs` (tick trigger, nohz kick and idle
//! balance, rebalance_domains(), idle_balance()), `wake.rs` (select_task_rq_fair(),
//! wake_affine() with effective_load() and its v4.13/v4.14/v4.16 forms, wake_cap(),
//! idle_cpu()), `sis.rs` (select_idle_sibling() of v4.6 and of the v4.9 rewrite with
//! select_idle_core/cpu/smt(), SIS_PROP, recent_used_cpu), `fork.rs` (the slow path:
//! find_idlest_group() of v4.6, find_idlest_cpu()/find_idlest_group_cpu() and the walk of
//! each release) with `fork/idlest_group.rs` (find_idlest_group() of v4.10-v5.4,
//! capacity_spare_wake()).
//!
//! Reused from today's balancer because the kernel's code was the same: the domain,
//! group-capacity, nohz and schedstat state ([`BalanceState`]), `struct lb_env`
//! ([`crate::lb::LbEnv`]), the balance-interval arithmetic, update_blocked_averages(), the
//! nohz idle mask bookkeeping and kick_ilb(), the decision record of the invariant
//! checks, and on the wake-up path record_wakee(), wake_wide(), core.c's select_task_rq()
//! wrapper and the idle-core hint (see `wake.rs`). Left out as in today's balancer: NUMA balancing (fbq_type), group
//! scheduling, CFS bandwidth, SD_ASYM_PACKING (check_asym_packing(), which the topology
//! crate never builds), energy-aware scheduling.

pub mod cpu_load;
pub mod detach;
pub mod find_busiest_queue;
pub mod fork;
pub mod group_stats;
pub mod idle_settled;
pub mod imbalance;
pub mod load;
pub mod load_balance;
pub mod rebalance;
pub mod sis;
pub mod types;
pub mod version;
pub mod wake;

use lbsim_rq::TaskId;
use lbsim_topology::{CpuId, Cpumask, SchedDomain, Topology};

use crate::ctx::{
    BalanceCtx, BalanceOutcome, Balancer, NewidleStep, Placement, StopperRequest, TickOutcome,
    WakeFlags,
};
use crate::lb::{CpuIdleType, Pass, idle_cpu};
use crate::params::LbFeat;
use crate::state::BalanceState;
use crate::wake::WakeState;

pub use self::cpu_load::{CpuLoad, LoadIdx};
pub use self::version::LegacyVersion;

use self::cpu_load::{sd_load_idx, source_load, target_load};
use self::load::weighted_cpuload;

/// The legacy balancer's own per-CPU state, beside [`BalanceState`]: `rq->cpu_load[]` and
/// `rq->cpu_capacity_orig` as these kernels computed it (589 on an SMT thread before
/// v5.0), and the release with its `LB_BIAS`.
#[derive(Clone, Debug)]
pub struct LegacyState {
    /// The release followed.
    pub version: LegacyVersion,
    /// `sched_feat(LB_BIAS)`: on up to v4.19, off from v4.20 ([`LegacyVersion::lb_bias_default`]);
    /// read only while the release has `cpu_load[]` (until v5.2).
    pub lb_bias: bool,
    /// Per CPU, `rq->cpu_load[]`.
    pub cpu_load: Vec<CpuLoad>,
    /// Per CPU, `rq->cpu_capacity_orig`.
    pub capacity_orig: Vec<u64>,
    /// lbsim's: the storage of load_balance()'s `env->cpus` (every active CPU before v5.4),
    /// kept between passes so that a pass takes it instead of allocating a mask. No state:
    /// a pass that clears CPUs of it sets them again before it puts it back, so it always
    /// holds every active CPU here.
    pub(crate) cpus_scratch: Option<Cpumask>,
    /// lbsim's: the storage of nohz_idle_balance()'s copy of `nohz.idle_cpus_mask`, kept
    /// between passes (no state).
    pub(crate) nohz_cpus_scratch: Vec<CpuId>,
}

impl LegacyState {
    /// The state at boot (`jiffies`) of `topo` under `version`.
    pub fn new(topo: &Topology, jiffies: u64, version: LegacyVersion) -> LegacyState {
        let n = topo.nr_cpus();
        let capacity_orig = (0..n)
            .map(|c| {
                let cpu = CpuId(c as u32);
                group_stats::legacy_scale_cpu_capacity(
                    topo,
                    topo.domains(cpu).first(),
                    cpu,
                    version,
                )
            })
            .collect();
        LegacyState {
            version,
            lb_bias: version.lb_bias_default(),
            cpu_load: vec![
                CpuLoad {
                    last_load_update_tick: jiffies,
                    ..CpuLoad::default()
                };
                n
            ],
            capacity_orig,
            cpus_scratch: None,
            nohz_cpus_scratch: Vec::new(),
        }
    }

    /// Whether seed 003's `LB_TIP_AVG_HIGH` is on.
    pub fn tip_avg_high(&self, ctx: &BalanceCtx<'_>) -> bool {
        ctx.features.enabled(LbFeat::LbTipAvgHigh)
    }

    /// weighted_cpuload() of `cpu` (see [`load::weighted_cpuload`]).
    #[inline]
    pub fn weighted_cpuload(&self, ctx: &BalanceCtx<'_>, cpu: CpuId) -> u64 {
        weighted_cpuload(&ctx.rqs[cpu.index()], ctx.tasks, self.tip_avg_high(ctx))
    }

    fn lb_bias_on(&self) -> bool {
        self.version.has_cpu_load() && self.lb_bias
    }

    /// source_load(`cpu`, `idx`) (see [`cpu_load::source_load`]).
    #[inline]
    pub fn source_load(&self, ctx: &BalanceCtx<'_>, cpu: CpuId, idx: usize) -> u64 {
        let total = self.weighted_cpuload(ctx, cpu);
        source_load(&self.cpu_load[cpu.index()], total, idx, self.lb_bias_on())
    }

    /// target_load(`cpu`, `idx`) (see [`cpu_load::target_load`]).
    #[inline]
    pub fn target_load(&self, ctx: &BalanceCtx<'_>, cpu: CpuId, idx: usize) -> u64 {
        let total = self.weighted_cpuload(ctx, cpu);
        target_load(&self.cpu_load[cpu.index()], total, idx, self.lb_bias_on())
    }

    /// The load indices of `sd` in this release.
    pub fn load_idx(&self, sd: &SchedDomain) -> LoadIdx {
        sd_load_idx(sd, self.version.has_cpu_load())
    }

    /// Follows fair.c: check_cpu_capacity() (v4.6-v5.4): `cpu_capacity * imbalance_pct <
    /// cpu_capacity_orig * 100`, against this release's `capacity_orig`.
    pub fn check_cpu_capacity(&self, ctx: &BalanceCtx<'_>, cpu: CpuId, sd: &SchedDomain) -> bool {
        ctx.rqs[cpu.index()].cpu_capacity() * u64::from(sd.imbalance_pct)
            < self.capacity_orig[cpu.index()] * 100
    }
}

/// The pre-v5.5 fair-class balancer (fair.c v4.6-v5.4), selected by its release.
#[derive(Clone, Debug)]
pub struct LegacyBalancer {
    /// Domain, group, nohz and schedstat state (today's layout; the kernel's fields were
    /// the same).
    pub state: BalanceState,
    /// `cpu_load[]`, `capacity_orig`, the release.
    pub legacy: LegacyState,
    /// The wake-up path's state shared with today's path: the idle tasks' record_wakee()
    /// fields and the `IDLE_RESERVE` marks.
    pub wake: WakeState,
    /// The wake-up path's own state (`avg_scan_cost`).
    pub lwake: self::wake::LegacyWakeState,
}

impl LegacyBalancer {
    /// The balancer of `topo` at boot (`jiffies`, as [`crate::kernel::KernelBalancer::new`]
    /// takes it; callers pass 0), with `hz` ticks per second, following `version`.
    pub fn new(topo: &Topology, jiffies: u64, hz: u32, version: LegacyVersion) -> LegacyBalancer {
        LegacyBalancer {
            state: BalanceState::new(topo, jiffies, hz),
            legacy: LegacyState::new(topo, jiffies, version),
            wake: WakeState::new(topo.nr_cpus()),
            lwake: self::wake::LegacyWakeState::new(topo.nr_cpus()),
        }
    }

    /// The release this balancer follows.
    pub fn version(&self) -> LegacyVersion {
        self.legacy.version
    }

    fn outcome(&mut self, ctx: &BalanceCtx<'_>, pass: Pass, pulled_task: bool) -> BalanceOutcome {
        for m in &pass.migrations {
            crate::wake::idle_reserve_task_moved(&mut self.wake, m.task, m.src);
        }
        BalanceOutcome {
            elapsed_ns: ctx.cost.charge(&pass.work),
            migrations: pass.migrations,
            stoppers: pass.stoppers,
            kicks: Default::default(),
            work: pass.work,
            pulled_task,
        }
    }
}

impl Balancer for LegacyBalancer {
    /// Follows core.c: select_task_rq() -> fair.c: select_task_rq_fair() (v4.6-v5.4, by
    /// release; see [`self::wake::select_task_rq`]).
    fn select_task_rq(
        &mut self,
        ctx: &mut BalanceCtx<'_>,
        p: TaskId,
        prev_cpu: CpuId,
        this_cpu: CpuId,
        wake_flags: WakeFlags,
    ) -> Placement {
        self::wake::select_task_rq(
            ctx,
            &mut self.state,
            &self.legacy,
            &mut self.lwake,
            &mut self.wake,
            p,
            prev_cpu,
            this_cpu,
            wake_flags,
        )
    }

    /// Follows core.c: scheduler_tick() (v4.6) -> cpu_load_update_active() (v4.7 name),
    /// then fair.c: trigger_load_balance() (v4.6): no domains, nothing; raise
    /// SCHED_SOFTIRQ when `jiffies >= rq->next_balance`; nohz_kick_needed() and the kick.
    fn tick(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> TickOutcome {
        let v = self.legacy.version;
        if v.has_cpu_load() {
            let load = self.legacy.weighted_cpuload(ctx, cpu);
            let exit_load = if v.tickless_load() { load } else { 0 };
            self.legacy.cpu_load[cpu.index()].cpu_load_update_active(
                load,
                ctx.jiffies,
                exit_load,
                v.tickless_load(),
            );
        }
        if ctx.topo.domains(cpu).is_empty() {
            return TickOutcome::default();
        }
        let mut pass = Pass::new(ctx.now_ns);
        let raise_softirq = ctx.jiffies >= ctx.rqs[cpu.index()].next_balance();
        let idle_balance = idle_cpu(ctx, cpu, ctx.now_ns);
        let kick = rebalance::nohz_kick_needed(
            ctx,
            &mut self.state,
            &self.legacy,
            cpu,
            idle_balance,
            &mut pass,
        );
        TickOutcome {
            raise_softirq,
            kick,
            work: pass.work,
        }
    }

    /// Follows fair.c: run_rebalance_domains() (v4.6): nohz_idle_balance() for the idle
    /// CPUs if this one was kicked, then rebalance_domains() for itself.
    fn softirq(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> BalanceOutcome {
        let mut pass = Pass::new(ctx.now_ns);
        let idle = if idle_cpu(ctx, cpu, ctx.now_ns) {
            CpuIdleType::Idle
        } else {
            CpuIdleType::NotIdle
        };
        rebalance::nohz_idle_balance(ctx, &mut self.state, &mut self.legacy, cpu, idle, &mut pass);
        rebalance::rebalance_domains(ctx, &mut self.state, &mut self.legacy, cpu, idle, &mut pass);
        self.outcome(ctx, pass, false)
    }

    /// Follows fair.c: idle_balance() (v4.6), in one step (see
    /// [`rebalance::idle_balance`]). `rd->overload` is set first if some runqueue has two
    /// or more tasks, as [`crate::kernel::KernelBalancer`] does (the kernel sets it in
    /// add_nr_running(), which the engine does not report).
    fn newidle_begin(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> NewidleStep {
        // Already set, the flag stays set: the scan could only set it again. Otherwise the
        // runqueues' machine-wide count of CPUs with `nr_running > 1`, kept up to date with
        // the CPUs changed since its last read, answers whether some runqueue has two or more
        // tasks, as a scan of every runqueue would (debug builds scan them too).
        if !self.state.rd.overloaded && ctx.rqs.any_overloaded() {
            self.state.rd.overloaded = true;
        }
        debug_assert_eq!(
            ctx.rqs.any_overloaded(),
            ctx.rqs.iter().any(|r| r.nr_running >= 2),
            "the runqueues' overloaded count and a scan disagree"
        );
        debug_assert!(
            self.state.rd.overloaded || ctx.rqs.iter().all(|r| r.nr_running < 2),
            "rd->overload missed a runqueue with two tasks"
        );
        let mut pass = Pass::new(ctx.now_ns);
        self.state.checks.newidle_begin(false);
        let r = rebalance::idle_balance(ctx, &mut self.state, &mut self.legacy, cpu, &mut pass);
        NewidleStep {
            outcome: self.outcome(ctx, pass, r.pulled_task),
            done: true,
        }
    }

    /// Never called: [`Balancer::newidle_begin`] finishes in one step. Reports a finished
    /// balance that did nothing.
    fn newidle_continue(&mut self, _ctx: &mut BalanceCtx<'_>, _cpu: CpuId) -> NewidleStep {
        NewidleStep {
            outcome: BalanceOutcome::default(),
            done: true,
        }
    }

    /// Follows fair.c: active_load_balance_cpu_stop() (v4.6-v5.4).
    fn active_balance(&mut self, ctx: &mut BalanceCtx<'_>, req: StopperRequest) -> BalanceOutcome {
        let mut pass = Pass::new(ctx.now_ns);
        load_balance::active_load_balance_cpu_stop(
            ctx,
            &mut self.state,
            &self.legacy,
            req,
            &mut pass,
        );
        self.outcome(ctx, pass, false)
    }

    /// Follows fair.c: __update_idle_core() (v4.9-v5.4, the same as v6.6-v6.12's, so
    /// today's [`crate::wake::update_idle_core`]), which select_idle_core() reads; v4.6-v4.8
    /// had no idle-core hint and no reader of it.
    fn idle_enter(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) {
        crate::wake::update_idle_core(ctx, &mut self.state, cpu);
    }

    /// Follows fair.c: nohz_balance_enter_idle() (v4.6: the idle mask, `nr_cpus` and the
    /// LLC's busy count, as [`crate::nohz::nohz_balance_enter_idle`] keeps them) and, from
    /// v4.7, tick-sched.c's call of cpu_load_update_nohz_start() as the tick stops.
    fn nohz_enter_idle(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) {
        let v = self.legacy.version;
        if v.has_cpu_load() && v.tickless_load() {
            let load = self.legacy.weighted_cpuload(ctx, cpu);
            self.legacy.cpu_load[cpu.index()].cpu_load_update_nohz_start(load);
        }
        crate::nohz::nohz_balance_enter_idle(ctx, &mut self.state, cpu);
    }

    fn task_running(&mut self, _ctx: &mut BalanceCtx<'_>, p: TaskId, cpu: CpuId) {
        crate::wake::idle_reserve_task_running(&mut self.wake, p, cpu);
    }

    fn schedstat_mut(&mut self) -> Option<&mut crate::schedstat::Schedstat> {
        Some(&mut self.state.schedstat)
    }

    fn checks(&mut self) -> Option<&mut crate::check::Checks> {
        Some(&mut self.state.checks)
    }

    fn trace(&mut self) -> Option<&mut crate::trace::LbTrace> {
        Some(&mut self.state.trace)
    }
}

#[cfg(test)]
mod tests;
