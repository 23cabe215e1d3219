//! The idle loop and cpuidle: what an idle CPU does between tasks.
//!
//! Follows kernel/sched/idle.c: do_idle(), cpuidle_idle_call() (v6.12);
//! drivers/cpuidle/cpuidle.c: cpuidle_enter_state(), cpuidle_poll_time();
//! drivers/cpuidle/poll_state.c: poll_idle(); kernel/time/tick-sched.c:
//! tick_nohz_idle_stop_tick(), tick_nohz_idle_retain_tick(), tick_nohz_get_sleep_length().
//!
//! An idle CPU asks the governor ([`menu`]) for a state and whether the tick may stop; the
//! tick stops (and the CPU enters the nohz idle mask, `nohz_balance_enter_idle()`) only when
//! the governor allows it, so a CPU expecting a short idle keeps its tick, stays out of the
//! mask and balances itself from its idle ticks. Then the CPU sits in the state
//! (`rq->idle_state` set, which `sched_balance_find_dst_group_cpu()` reads). An interrupt or
//! a wake-up reaching it waits for the state's exit time ([`IdleState::exit_ns`], with a
//! seeded spread) before the CPU runs anything; after the handler, if nothing is to run, the
//! CPU goes round the loop again: the governor learns from the period that ended
//! (`menu_reflect()`) and chooses anew. A polling state stops after `cpuidle_poll_time()`.
//!
//! Deliberate differences: the only kernel timers besides the tick and the tasks' own sleep
//! timers are the softlockup watchdog's per-CPU hrtimer (every 4 s, [`WATCHDOG_PERIOD_NS`],
//! so that menu always has a next timer to scale, as on a real system); no timer-wheel
//! timers, so `tick_nohz_next_event()` never vetoes a tick stop; RCU,
//! irq_work and broadcast-timer needs of the tick are not modelled. With `cpuidle=off`, or on
//! a machine without an idle-state table, every idle CPU is in one zero-latency state and
//! its tick stops at once (lbsim's ideal machine).

pub mod menu;

use lbsim_topology::IdleState;

use crate::params::Governor;
use crate::prelude::*;
use menu::{LastIdle, MenuInput};

/// The softlockup watchdog's per-CPU hrtimer period (kernel/watchdog.c: `sample_period` =
/// `watchdog_thresh` (10 s) * 2 / 5), ns: the one per-CPU kernel timer lbsim models, so
/// that an idle CPU with no task timer still has a next timer event within 4 s, as on a
/// real system, and menu's correction factors can learn.
pub const WATCHDOG_PERIOD_NS: u64 = 4_000_000_000;

/// `PM_QOS_CPU_LATENCY_DEFAULT_VALUE` (2000 s) in ns: no latency constraint.
pub const LATENCY_REQ_NONE_NS: u64 = 2_000 * 1_000_000_000;

/// `CPUIDLE_POLL_MIN`: a state's residency must be at least this to bound polling, ns.
const CPUIDLE_POLL_MIN_NS: u64 = 10_000;

/// Where a CPU is in the idle loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdleCpu {
    /// Not in an idle state: running a task, scheduling, or the idle task between states.
    Out,
    /// In `state` since `entered_ns` (`cpuidle_enter_state()`).
    In {
        /// The state's index.
        state: u8,
        /// When it entered.
        entered_ns: u64,
    },
    /// A wake-up reached it in `state`: it executes again at `until_ns`.
    Exiting {
        /// The state's index.
        state: u8,
        /// When it entered.
        entered_ns: u64,
        /// When the exit is over.
        until_ns: u64,
        /// The tick was what woke it (`tick_nohz_idle_got_tick()`).
        tick: bool,
    },
}

/// Idle-state usage of one CPU, as sysfs `cpuidle/stateN/usage` and `time` count it, and
/// the tick-stop counters of `/proc/timer_list` (`idle_calls`, `idle_sleeps`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuidleStats {
    /// The driver's table name.
    pub table: String,
    /// Per state, state 0 first.
    pub states: Vec<IdleStateUsage>,
    /// Times the idle loop asked to stop the tick (`ts->idle_calls`).
    pub idle_calls: u64,
    /// Times the tick was stopped (`ts->idle_sleeps`).
    pub idle_sleeps: u64,
}

/// One state's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IdleStateUsage {
    /// sysfs `name`.
    pub name: String,
    /// sysfs `usage`: entries.
    pub usage: u64,
    /// sysfs `time`: time in the state, us.
    pub time_us: u64,
}

impl<B: Balancer> Core<B> {
    /// Whether `cpu` runs the cpuidle governor (the menu governor is on and the machine has
    /// a table for the CPU).
    pub(crate) fn cpuidle_on(&self, cpu: CpuId) -> bool {
        self.cfg.machine.cpuidle == Governor::Menu
            && self.cfg.topology.machine().idle_states(cpu).has_driver()
    }

    /// The idle task starts on `cpu` (the end of a `__schedule()` that picked no task, or
    /// the CPU at start-up): `set_next_task_idle()`'s idle-core bookkeeping, then the idle
    /// loop.
    pub(crate) fn enter_idle_task(&mut self, cpu: CpuId) {
        if !self.cpuidle_on(cpu) {
            // The ideal machine: the tick stops at once, one zero-latency state.
            if !self.cpus[cpu.index()].tick_stopped {
                self.cpus[cpu.index()].tick_stopped = true;
                self.ctx_call(|b, ctx| {
                    b.nohz_enter_idle(ctx, cpu);
                    b.idle_enter(ctx, cpu);
                });
            }
            self.rqs[cpu.index()].sched_idle_set_state(Some(0));
            return;
        }
        self.ctx_call(|b, ctx| b.idle_enter(ctx, cpu));
        self.cpuidle_idle_call(cpu);
    }

    /// Whether `cpu` would go (back) into an idle state now: the idle task runs, nothing is
    /// queued or on its way, no reschedule is pending.
    fn idle_loop_continues(&self, cpu: CpuId) -> bool {
        let c = &self.cpus[cpu.index()];
        let rq = &self.rqs[cpu.index()];
        c.idle == IdleCpu::Out
            && rq.curr.is_none()
            && rq.nr_running == 0
            && c.newidle.is_none()
            && c.resched.is_none()
            && c.wakelist.is_empty()
    }

    /// After an event: the CPUs whose idle state an interrupt ended go round the idle loop
    /// again if nothing is to run.
    pub(crate) fn idle_loop_again(&mut self) {
        while let Some(c) = self.idle_reentry.pop() {
            let cpu = CpuId(c);
            if self.cpuidle_on(cpu) && self.idle_loop_continues(cpu) {
                self.cpuidle_idle_call(cpu);
            }
        }
    }

    /// Follows idle.c: cpuidle_idle_call() with the menu governor (v6.12): select a state
    /// and whether the tick may stop; stop it (`tick_nohz_idle_stop_tick()`, which calls
    /// `nohz_balance_enter_idle()` on the running-to-stopped transition) or retain it; enter
    /// the state.
    fn cpuidle_idle_call(&mut self, cpu: CpuId) {
        let ci = cpu.index();
        let now = self.now;
        let topo = self.cfg.topology.clone();
        let states = &topo.machine().idle_states(cpu).states;
        let (sleep_length_ns, delta_tick_ns) = self.tick_nohz_get_sleep_length(cpu);
        let tick_stopped = self.cpus[ci].tick_stopped;
        let sel = self.cpus[ci].menu.select(&MenuInput {
            states,
            latency_req_ns: LATENCY_REQ_NONE_NS,
            sleep_length_ns,
            delta_tick_ns,
            tick_stopped,
            tick_nsec: self.tick_nsec,
            nr_iowaiters: 0,
        });
        if sel.stop_tick || self.cpus[ci].tick_stopped {
            self.cpus[ci].stats_idle_calls += 1;
            if !self.cpus[ci].tick_stopped {
                self.cpus[ci].tick_stopped = true;
                self.cpus[ci].stats_idle_sleeps += 1;
                if let Some(k) = self.cpus[ci].tick.take() {
                    self.fx.cancel(k);
                }
                self.ctx_call(|b, ctx| b.nohz_enter_idle(ctx, cpu));
            }
        } else {
            // tick_nohz_idle_retain_tick(): the tick goes on.
            self.restart_tick(cpu);
        }
        let state = &states[sel.idx];
        let c = &mut self.cpus[ci];
        c.idle = IdleCpu::In {
            state: sel.idx as u8,
            entered_ns: now,
        };
        c.idle_usage[sel.idx].0 += 1;
        self.rqs[ci].sched_idle_set_state(Some(state.exit_latency_us()));
        if state.polling {
            let limit = cpuidle_poll_time(states, self.tick_nsec);
            let key = self.fx.at(now + limit, Ev::PollLimit { cpu: cpu.0 });
            self.cpus[ci].poll_limit = Some(key);
        }
    }

    /// `tick_nohz_get_sleep_length()`: the time to the next timer event as if the tick were
    /// stopped (the earliest sleep timer queued on `cpu`, or the watchdog's hrtimer), and
    /// `delta_next`, the time to the next clock event (that timer or the next tick, if the
    /// tick runs).
    fn tick_nohz_get_sleep_length(&self, cpu: CpuId) -> (u64, u64) {
        let c = &self.cpus[cpu.index()];
        let now = self.now;
        let next_timer = c
            .timers
            .first()
            .map_or(c.watchdog_at, |&(at, _)| at.min(c.watchdog_at))
            .saturating_sub(now);
        let delta_next = if c.tick_stopped {
            next_timer
        } else {
            let period = self.tick_nsec;
            let k = now.saturating_sub(c.tick_phase_ns) / period + 1;
            let tick_at = c.tick_phase_ns + k * period;
            next_timer.min(tick_at - now)
        };
        (next_timer, delta_next)
    }

    /// An interrupt (or, for a state that waits with MWAIT or polls, a wake-up store)
    /// reaches `cpu`: when its handler can run, if not now. A CPU in an idle state starts
    /// its exit and runs the handler when the exit is over; one already exiting runs it then.
    /// The first handler to run after the exit ends the idle period (`cpuidle_enter_state()`
    /// returns, `menu_reflect()`).
    pub(crate) fn idle_exit_deferral(&mut self, cpu: CpuId, by_tick: bool) -> Option<u64> {
        let ci = cpu.index();
        let now = self.now;
        match self.cpus[ci].idle {
            IdleCpu::Out => None,
            IdleCpu::In { state, entered_ns } => {
                let exit = self.sample_exit_ns(cpu, state);
                if let Some(k) = self.cpus[ci].poll_limit.take() {
                    self.fx.cancel(k);
                }
                if exit == 0 {
                    self.leave_idle_state(cpu, state, entered_ns, now, by_tick, false);
                    None
                } else {
                    self.cpus[ci].idle = IdleCpu::Exiting {
                        state,
                        entered_ns,
                        until_ns: now + exit,
                        tick: by_tick,
                    };
                    Some(now + exit)
                }
            }
            IdleCpu::Exiting { until_ns, .. } if until_ns > now => Some(until_ns),
            IdleCpu::Exiting {
                state,
                entered_ns,
                until_ns,
                tick,
            } => {
                self.leave_idle_state(cpu, state, entered_ns, until_ns, tick, false);
                None
            }
        }
    }

    /// The softlockup watchdog's hrtimer fires on `cpu` (`watchdog_timer_fn()`): an
    /// interrupt, which first waits for the CPU to leave its idle state; then it is
    /// re-armed one period later.
    pub(crate) fn watchdog(&mut self, cpu: CpuId) {
        if let Some(at) = self.irq_deferral(cpu, false) {
            self.fx.at(at, Ev::Watchdog { cpu: cpu.0 });
            return;
        }
        let c = &mut self.cpus[cpu.index()];
        c.watchdog_at = c.watchdog_at.saturating_add(WATCHDOG_PERIOD_NS);
        let at = c.watchdog_at;
        self.fx.at(at, Ev::Watchdog { cpu: cpu.0 });
        self.idle_reentry.push(cpu.0);
    }

    /// The polling state's time limit on `cpu` (`poll_idle()` gives up, `poll_time_limit`).
    pub(crate) fn poll_limit(&mut self, cpu: CpuId) {
        let ci = cpu.index();
        self.cpus[ci].poll_limit = None;
        if let IdleCpu::In { state, entered_ns } = self.cpus[ci].idle {
            let now = self.now;
            self.leave_idle_state(cpu, state, entered_ns, now, false, true);
        }
    }

    /// `cpuidle_enter_state()` returns on `cpu` at `end_ns`: the usage counters,
    /// `sched_idle_set_state(NULL)`, `menu_reflect()`; the idle loop goes round again after
    /// the event if nothing is to run.
    fn leave_idle_state(
        &mut self,
        cpu: CpuId,
        state: u8,
        entered_ns: u64,
        end_ns: u64,
        tick_wakeup: bool,
        poll_time_limit: bool,
    ) {
        let ci = cpu.index();
        let residency_ns = end_ns.saturating_sub(entered_ns);
        let c = &mut self.cpus[ci];
        c.idle = IdleCpu::Out;
        c.idle_usage[usize::from(state)].1 += residency_ns;
        c.menu.reflect(LastIdle {
            state_idx: usize::from(state),
            residency_ns,
            tick_wakeup,
            poll_time_limit,
        });
        self.rqs[ci].sched_idle_set_state(None);
        self.idle_reentry.push(cpu.0);
    }

    /// One exit from `state` on `cpu`: the state's exit time times a factor drawn from the
    /// run's seed within `idle_exit_spread_pct`.
    fn sample_exit_ns(&mut self, cpu: CpuId, state: u8) -> u64 {
        let topo = &self.cfg.topology;
        let s: &IdleState = &topo.machine().idle_states(cpu).states[usize::from(state)];
        spread(
            &mut self.idle_rng,
            s.exit_ns,
            self.cfg.machine.idle_exit_spread_pct,
        )
    }

    /// Whether a wake-up of `cpu` is a store the CPU sees without an IPI
    /// (`set_nr_and_not_polling()` / `set_nr_if_polling()` find `TIF_POLLING_NRFLAG`): the
    /// idle task polls in the idle loop, in a polling state, or in a state that waits with
    /// MWAIT. On the ideal machine every wake-up is an IPI.
    pub(crate) fn wakes_by_store(&self, cpu: CpuId) -> bool {
        if !self.cpuidle_on(cpu) || self.rqs[cpu.index()].curr.is_some() {
            return false;
        }
        let states = &self.cfg.topology.machine().idle_states(cpu).states;
        match self.cpus[cpu.index()].idle {
            IdleCpu::Out => self.cpus[cpu.index()].newidle.is_none(),
            IdleCpu::In { state, .. } | IdleCpu::Exiting { state, .. } => {
                states[usize::from(state)].wake_by_store
            }
        }
    }

    /// How long a wake-up signal from another CPU takes to reach `cpu`: the store to a
    /// polling CPU's thread flags (`cost_poll_wake_ns`), or an IPI (`cost_ipi_ns`).
    pub(crate) fn signal_ns(&self, cpu: CpuId) -> u64 {
        if self.wakes_by_store(cpu) {
            self.cfg.cost.poll_wake_ns
        } else {
            self.cfg.cost.ipi_ns
        }
    }

    /// The usage counters of every CPU, when the governor ran.
    pub(crate) fn cpuidle_stats(&self, cpu: CpuId) -> Option<CpuidleStats> {
        if !self.cpuidle_on(cpu) {
            return None;
        }
        let t = self.cfg.topology.machine().idle_states(cpu);
        let c = &self.cpus[cpu.index()];
        Some(CpuidleStats {
            table: t.name.clone(),
            states: t
                .states
                .iter()
                .zip(&c.idle_usage)
                .map(|(s, &(usage, time_ns))| IdleStateUsage {
                    name: s.name.clone(),
                    usage,
                    time_us: time_ns / 1000,
                })
                .collect(),
            idle_calls: c.stats_idle_calls,
            idle_sleeps: c.stats_idle_sleeps,
        })
    }
}

/// `cpuidle_poll_time()`: how long the polling state spins before giving up: the target
/// residency of the first state after it that is at least `CPUIDLE_POLL_MIN` (10 us), at
/// most `CPUIDLE_POLL_MAX` (`TICK_NSEC / 16`).
pub fn cpuidle_poll_time(states: &[IdleState], tick_nsec: u64) -> u64 {
    let max = tick_nsec / 16;
    states
        .iter()
        .skip(1)
        .find(|s| s.target_residency_ns >= CPUIDLE_POLL_MIN_NS)
        .map_or(max, |s| s.target_residency_ns.min(max))
}

/// `ns` times a factor drawn uniformly from `[1 - pct/100, 1 + pct/100]`.
pub(crate) fn spread(rng: &mut Pcg64Mcg, ns: u64, pct: u64) -> u64 {
    if ns == 0 || pct == 0 {
        return ns;
    }
    // Parts per 2^20: the factor is (2^20 - w + draw) / 2^20 with draw in [0, 2w].
    let w = (1u64 << 20) * pct / 100;
    let draw = crate::rng::below(rng, 2 * w + 1);
    let factor = (1u64 << 20) - w + draw;
    ((u128::from(ns) * u128::from(factor)) >> 20) as u64
}

#[cfg(test)]
mod tests;
