//! The kernel's balancer behind the [`Balancer`] trait: fair.c's balancing entry points
//! (v6.6, checked against v6.12) with the experiment switches of EXPERIMENTS.md.
//!
//! Entry points and the kernel functions they follow:
//! - `select_task_rq`: core.c select_task_rq() -> fair.c select_task_rq_fair()
//!   ([`crate::wake`]);
//! - `tick`: sched_balance_trigger() (trigger_load_balance() before v6.10) with
//!   nohz_balancer_kick();
//! - `softirq`: sched_balance_softirq() (run_rebalance_domains()): the nohz idle balance if
//!   this CPU was kicked as idle load balancer, else update_blocked_averages() and
//!   rebalance_domains() for itself;
//! - `newidle_begin`, `newidle_continue`: newidle_balance() (sched_balance_newidle()) in
//!   steps that end where the kernel looks for a pending wake-up or a queued task
//!   ([`crate::newidle`]); the per-CPU state between steps is kept here. `newidle` is the
//!   trait's default: the steps back to back;
//! - `active_balance`: active_load_balance_cpu_stop();
//! - `idle_enter`: __update_idle_core();
//! - `nohz_enter_idle`: nohz_balance_enter_idle().
//!
//! One modelling shortcut: the kernel sets `rd->overloaded` in add_nr_running() whenever a
//! runqueue reaches two tasks, which the engine does not report to the balancer; lbsim sets
//! it before each newly idle balance (its only reader) if some runqueue has two or more
//! tasks. The root-level load_balance() statistics set and clear it as in the kernel.

use lbsim_rq::TaskId;
use lbsim_topology::{CpuId, Topology};

use crate::ctx::{
    BalanceCtx, BalanceOutcome, Balancer, NewidleStep, Placement, StopperRequest, TickOutcome,
    WakeFlags,
};
use crate::lb::{CpuIdleType, Pass, active_load_balance_cpu_stop, idle_cpu};
use crate::newidle::{
    NewidleCursor, NewidleProgress, sched_balance_newidle_begin, sched_balance_newidle_continue,
    update_blocked_averages,
};
use crate::nohz::{nohz_balance_enter_idle, nohz_balancer_kick, nohz_idle_balance};
use crate::rebalance::rebalance_domains;
use crate::state::BalanceState;
use crate::wake::{self, WakeState};

/// The Linux fair class's balancer.
#[derive(Clone, Debug)]
pub struct KernelBalancer {
    /// Domain, group, nohz and schedstat state.
    pub state: BalanceState,
    /// The wake-up path's own state.
    pub wake: WakeState,
    /// Per CPU, the newly idle balance in progress between two steps.
    newidle: Vec<Option<NewidleCursor>>,
}

impl KernelBalancer {
    /// The balancer of `topo` at boot (`jiffies`, `hz`).
    pub fn new(topo: &Topology, jiffies: u64, hz: u32) -> KernelBalancer {
        KernelBalancer {
            state: BalanceState::new(topo, jiffies, hz),
            wake: WakeState::new(topo.nr_cpus()),
            newidle: vec![None; topo.nr_cpus()],
        }
    }

    /// Whether a newly idle balance is in progress on `cpu` (begun, not yet done).
    pub fn newidle_in_progress(&self, cpu: CpuId) -> bool {
        self.newidle.get(cpu.index()).is_some_and(Option::is_some)
    }

    /// The step `pass` made: keeps the cursor of an unfinished balance for the next step.
    fn newidle_step(
        &mut self,
        ctx: &BalanceCtx<'_>,
        cpu: CpuId,
        pass: Pass,
        progress: NewidleProgress,
    ) -> NewidleStep {
        let (pulled_task, done) = match progress {
            NewidleProgress::Pending(cursor) => {
                self.newidle[cpu.index()] = Some(cursor);
                (false, false)
            }
            NewidleProgress::Done(r) => {
                self.newidle[cpu.index()] = None;
                (r.pulled_task, true)
            }
        };
        NewidleStep {
            outcome: self.outcome(ctx, pass, pulled_task),
            done,
        }
    }

    fn outcome(&mut self, ctx: &BalanceCtx<'_>, pass: Pass, pulled_task: bool) -> BalanceOutcome {
        for m in &pass.migrations {
            wake::idle_reserve_task_moved(&mut self.wake, m.task, m.src);
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

impl Balancer for KernelBalancer {
    fn select_task_rq(
        &mut self,
        ctx: &mut BalanceCtx<'_>,
        p: TaskId,
        prev_cpu: CpuId,
        this_cpu: CpuId,
        wake_flags: WakeFlags,
    ) -> Placement {
        wake::select_task_rq(
            ctx,
            &mut self.state,
            &mut self.wake,
            p,
            prev_cpu,
            this_cpu,
            wake_flags,
        )
    }

    /// Follows fair.c: sched_balance_trigger() (v6.10+; trigger_load_balance() in v6.6): no
    /// domains, nothing; raise SCHED_SOFTIRQ when `jiffies >= rq->next_balance`; then
    /// nohz_balancer_kick() (`rq->idle_balance` is whether the CPU is idle at the tick).
    fn tick(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> TickOutcome {
        if ctx.topo.domains(cpu).is_empty() {
            return TickOutcome::default();
        }
        let mut pass = Pass::new(ctx.now_ns);
        let raise_softirq = ctx.jiffies >= ctx.rqs[cpu.index()].next_balance();
        let idle_balance = idle_cpu(ctx, cpu, ctx.now_ns);
        let kick = nohz_balancer_kick(ctx, &mut self.state, cpu, idle_balance, &mut pass);
        TickOutcome {
            raise_softirq,
            kick,
            work: pass.work,
        }
    }

    /// Follows fair.c: sched_balance_softirq() (run_rebalance_domains() in v6.6).
    fn softirq(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> BalanceOutcome {
        let mut pass = Pass::new(ctx.now_ns);
        if !nohz_idle_balance(ctx, &mut self.state, cpu, &mut pass) {
            let idle = if idle_cpu(ctx, cpu, ctx.now_ns) {
                CpuIdleType::Idle
            } else {
                CpuIdleType::NotIdle
            };
            update_blocked_averages(ctx, &mut self.state, cpu, &mut pass);
            rebalance_domains(ctx, &mut self.state, cpu, idle, &mut pass);
        }
        self.outcome(ctx, pass, false)
    }

    /// Follows fair.c: newidle_balance() (v6.6; sched_balance_newidle() since v6.10) up to
    /// its first check point after some work (see [`crate::newidle`]).
    fn newidle_begin(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> NewidleStep {
        // The machine-wide count that `Rqs` keeps answers on a big machine (as cheaply as
        // the kernel's flag set in add_nr_running()); a small one is scanned (but for debug
        // builds, which compare the two).
        let overloaded = if ctx.rqs.len() >= 64 || cfg!(debug_assertions) {
            ctx.rqs.any_overloaded()
        } else {
            ctx.rqs.iter().any(|r| r.nr_running >= 2)
        };
        debug_assert_eq!(overloaded, ctx.rqs.iter().any(|r| r.nr_running >= 2));
        if overloaded {
            self.state.rd.overloaded = true;
        }
        let mut pass = Pass::new(ctx.now_ns);
        let progress = sched_balance_newidle_begin(ctx, &mut self.state, cpu, &mut pass);
        self.newidle_step(ctx, cpu, pass, progress)
    }

    /// Follows fair.c: newidle_balance() (v6.6; sched_balance_newidle() since v6.10) from
    /// the check point the last step stopped at. Called with no balance in progress on
    /// `cpu` (which the trait rules out), it reports a finished balance that did nothing.
    fn newidle_continue(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) -> NewidleStep {
        let Some(cursor) = self.newidle.get_mut(cpu.index()).and_then(Option::take) else {
            return NewidleStep {
                outcome: BalanceOutcome::default(),
                done: true,
            };
        };
        let mut pass = Pass::new(ctx.now_ns);
        let progress = sched_balance_newidle_continue(ctx, &mut self.state, cursor, &mut pass);
        self.newidle_step(ctx, cpu, pass, progress)
    }

    /// Follows fair.c: active_load_balance_cpu_stop() (v6.6-v6.12).
    fn active_balance(&mut self, ctx: &mut BalanceCtx<'_>, req: StopperRequest) -> BalanceOutcome {
        let mut pass = Pass::new(ctx.now_ns);
        active_load_balance_cpu_stop(ctx, &mut self.state, req, &mut pass);
        self.outcome(ctx, pass, false)
    }

    /// Follows fair.c: __update_idle_core() (v6.6-v6.12).
    fn idle_enter(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) {
        wake::update_idle_core(ctx, &mut self.state, cpu);
    }

    /// Follows fair.c: nohz_balance_enter_idle() (v6.6-v6.12).
    fn nohz_enter_idle(&mut self, ctx: &mut BalanceCtx<'_>, cpu: CpuId) {
        nohz_balance_enter_idle(ctx, &mut self.state, cpu);
    }

    fn task_running(&mut self, _ctx: &mut BalanceCtx<'_>, p: TaskId, cpu: CpuId) {
        wake::idle_reserve_task_running(&mut self.wake, p, cpu);
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
