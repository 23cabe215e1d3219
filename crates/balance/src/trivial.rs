//! A balancer that never balances: the baseline that shows what the balancer adds.

use lbsim_rq::TaskId;
use lbsim_topology::CpuId;

use crate::cost::WorkAccount;
use crate::ctx::{
    BalanceCtx, BalanceOutcome, Balancer, NewidleStep, Placement, StopperRequest, TickOutcome,
    WakeFlags,
};

/// Never migrates a queued task, wakes a task on its previous CPU (or, if that CPU is not
/// allowed, the first allowed one), and places a new task on its parent's CPU.
///
/// This is not a kernel balancer: it is the "no load balancer" reference (every CPU schedules
/// only what lands on it), useful to isolate the engine and to show what balancing buys.
#[derive(Clone, Copy, Debug, Default)]
pub struct TrivialBalancer;

impl Balancer for TrivialBalancer {
    fn select_task_rq(
        &mut self,
        ctx: &mut BalanceCtx<'_>,
        p: TaskId,
        prev_cpu: CpuId,
        this_cpu: CpuId,
        wake_flags: WakeFlags,
    ) -> Placement {
        let mask = &ctx.tasks[p].cpus_mask;
        let want = if wake_flags.contains(WakeFlags::TTWU) {
            prev_cpu
        } else {
            this_cpu
        };
        let cpu = if mask.test(want) {
            want
        } else {
            mask.first().expect("a task's cpus_mask is never empty")
        };
        Placement {
            cpu,
            work: WorkAccount::default(),
        }
    }

    fn tick(&mut self, _ctx: &mut BalanceCtx<'_>, _cpu: CpuId) -> TickOutcome {
        TickOutcome::default()
    }

    fn softirq(&mut self, _ctx: &mut BalanceCtx<'_>, _cpu: CpuId) -> BalanceOutcome {
        BalanceOutcome::default()
    }

    fn newidle_begin(&mut self, _ctx: &mut BalanceCtx<'_>, _cpu: CpuId) -> NewidleStep {
        NewidleStep {
            outcome: BalanceOutcome::default(),
            done: true,
        }
    }

    fn newidle_continue(&mut self, _ctx: &mut BalanceCtx<'_>, _cpu: CpuId) -> NewidleStep {
        NewidleStep {
            outcome: BalanceOutcome::default(),
            done: true,
        }
    }

    fn active_balance(
        &mut self,
        _ctx: &mut BalanceCtx<'_>,
        _req: StopperRequest,
    ) -> BalanceOutcome {
        BalanceOutcome::default()
    }

    fn idle_enter(&mut self, _ctx: &mut BalanceCtx<'_>, _cpu: CpuId) {}
    fn nohz_enter_idle(&mut self, _ctx: &mut BalanceCtx<'_>, _cpu: CpuId) {}
}
