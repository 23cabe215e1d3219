//! The engine's invariant checks (`SimConfig::check`, `lbsim run --check`).
//!
//! The engine calls `Core::check_clock` with the time of each event before its clock
//! moves, and `Core::check_event` after the event. In debug builds the clock check always
//! runs (O(1): simulated time never goes backwards); with `check` on both run, and stop the
//! run at the first violation with the time, the CPU, the task and what broke:
//!
//! - **the balancer's decision rules** (invariants 1, 5, 6, 7): the policy's decision
//!   record ([`lbsim_balance::check::Checks`], enabled here through
//!   [`Balancer::checks`]) holds the first decision that broke a rule;
//! - **affinity** (invariant 2): a task pinned to one CPU and sitting on it is never moved
//!   off it (its `se.nr_migrations` and `task_cpu` unchanged). Running outside
//!   the affinity, and placements or migrations outside it, are the engine's own checks
//!   (`check_invariants`, `checked_placement`, `apply_outcome`);
//! - **task conservation** (invariant 3): every task is in exactly one place: running on
//!   one CPU (`rq->curr` of `task_cpu(p)`, queued there too), queued on one runqueue
//!   (`task_cpu(p)`'s `cfs_tasks`), sleeping (off every runqueue, or still queued there as
//!   a delayed dequeue, or on exactly one wake list), or exited (nowhere); a CPU's `curr`
//!   that is not running is the previous task of a newly idle balance in progress. Each
//!   runqueue's `nr_running` and `load.weight` against what it holds is
//!   `Rq::check_invariants`, run by the engine;
//! - **PELT** (invariant 4): per entity `util_avg <= 1024`, `runnable_avg <= 1024`,
//!   `load_avg <= se_weight`; an attached entity is never ahead of its cfs_rq; and each
//!   cfs_rq's sums (`util_sum`, `runnable_sum`, `load_sum`) equal the sums of the entities
//!   attached to it (each decayed to the cfs_rq's `last_update_time`, as
//!   `sync_entity_load_avg()` would; `load_sum` weighted by `se_weight`), plus the pending
//!   `removed` averages times the divider, within the bound of [`pelt_bound`] expressed in
//!   units of the averages (sums over the divider). Sums, not averages, because a PELT
//!   average is recomputed only when an update crosses a period boundary, so the cfs_rq's
//!   and each entity's averages are snapshots of different moments while their sums are all
//!   current at the cfs_rq's last update. An excess below minus the bound is a sum that
//!   underflowed (or was clamped by `sub_positive()`) on a detach. With task groups every
//!   group cfs_rq is checked too, its entities being its own tasks and the group entities
//!   below it (each attached since its group came online, never detached, and never bounded
//!   as a task is: its averages are copies of its cfs_rq's); there `runnable_sum` may also
//!   part from its entities' by what the kernel's delayed-dequeue walks allow (group
//!   entities' `runnable_weight` left behind, counts changed before the PELT update: the
//!   `runnable_stale` slack, derived in `Core::check_pelt`);
//! - **time and waiting** (invariant 8): events are processed in time order (the clock
//!   check); a task that waits on a runqueue runs within the bound of [`wait_bound`].
//!
//! Determinism (invariant 9) is a property of whole runs (`RunResult::event_hash`), checked
//! by the workspace's property tests.
//!
//! The checks only read the model; a run with `check` on has the same event stream as one
//! without.

use lbsim_balance::check::CheckCounts;
use lbsim_pelt::{SeLoad, update_load_avg_se};

use crate::prelude::*;

/// PELT's half-life in periods (`LOAD_AVG_PERIOD`), and a period in ns of PELT time.
const LOAD_AVG_PERIOD: f64 = 32.0;
const PELT_PERIOD_NS: f64 = 1024.0 * 1024.0;

/// The rounding allowance of one entity in a cfs_rq's sums, in units of the averages
/// (see [`pelt_bound`]).
pub const PELT_ROUNDING_PER_ENTITY: u64 = 3;

/// The allowance one departure (detach or lazy removal) leaves behind, in units of the
/// averages (per NICE_0 of weight for load), before it decays (see [`pelt_bound`]):
/// `2 + 1024 * 1024 / PELT_MIN_DIVIDER`, rounded up.
pub const PELT_SLACK_PER_DEPARTURE: f64 = 25.0;

/// The bound on `|cfs_rq sum - (attached entities' sums + removed avg * divider)| /
/// divider`, for `n` entities (attached plus pending removals), `weight_units` their
/// weights in units of NICE_0 (`se_weight / 1024`, at least 1 each; 0 for the util and
/// runnable sums), and `slack` the allowance of recent departures, decayed since.
///
/// Derivation (the kernel arithmetic of pelt.c and fair.c, v6.6-v6.12):
/// - Sums decay (`decay_load()`) and accumulate (`__accumulate_pelt_segments()`) with
///   truncation at each period boundary an update crosses, and the cfs_rq crosses each
///   boundary in a different update than each entity does: under 2 units of contribution
///   per boundary, shifted by `SCHED_CAPACITY_SHIFT` for util and runnable and multiplied
///   by the weight for load. Decaying with PELT over its memory (`LOAD_AVG_MAX / 1024`,
///   about 47 periods) and divided by the divider (about 47000), that is under 2 average
///   units per entity (per NICE_0 of weight for load) and for the cfs_rq itself. Rounded
///   up to [`PELT_ROUNDING_PER_ENTITY`] (3) per entity, per NICE_0 and for the cfs_rq.
/// - A departure leaves an error in the cfs_rq's sum that then decays with it. A detach
///   (`detach_entity_load_avg()`) subtracts the entity's own sums, then raises each sum to
///   `avg * PELT_MIN_DIVIDER` if below (`max_t()`), and the averages are snapshots: the
///   raise is at most what a sum grows by within one period over the divider, `1024 *
///   1024 / PELT_MIN_DIVIDER` (about 22) average units, plus one for truncation. A lazy
///   removal (`update_cfs_rq_load_avg()`) subtracts `removed avg * divider` instead of the
///   entity's sum, which differs by the same snapshot error, plus the same `max_t()`.
///   Hence [`PELT_SLACK_PER_DEPARTURE`] (25) per departure (times the weight in NICE_0
///   units for load), halving every 32 periods of the cfs_rq's PELT time.
///
/// `bound = 3 * (n + weight_units + 1) + slack`.
pub fn pelt_bound(n: u64, weight_units: u64, slack: f64) -> u64 {
    PELT_ROUNDING_PER_ENTITY * (n + weight_units + 1) + slack.ceil() as u64
}

/// The bound on how long a task that waits on a runqueue may wait before it runs, ns.
///
/// `w_max` is the largest `load.weight` of the runqueue (all queued entities, the waiting
/// task and the running one included) and `n_max` its largest `nr_running` over the wait,
/// `w_p` the waiting task's weight, `r` the largest slice of the entities queued there over
/// the wait (`se->slice`, or under the legacy CFS pick `sysctl_sched_latency` if larger),
/// `q` the tick period (`TICK_NSEC`).
///
/// Derivation (EEVDF as in fair.c v6.6-v6.12; `N` is NICE_0's weight, `V` the runqueue's
/// weighted average vruntime, lag `V - v`): while others run for `t` ns, `V` advances by at
/// least `t * N / w_max`.
/// - The waiting task's negative lag when its wait begins is at most the placement clamp
///   `max(2 r, q) * N / w_p` (a woken or migrated task, `update_entity_lag()`), or what it
///   overran its slice by when preempted at a tick, `(r + q) * N / w_p`; becoming eligible
///   therefore takes others at most `(2 r + 2 q) * w_max / w_p` ns of CPU time (one `q`
///   for the truncation of `V` against joining and leaving tasks).
/// - Once eligible, its deadline is within one virtual slice `r * N / w_p` of `V`; every
///   other task picked first (earlier deadline) runs at most its slice plus the tick that
///   notices its deadline, and moves its deadline on by its own virtual slice, so the
///   others take at most `(r + q) * w_max / w_p` plus one pick each, `n_max * (r + q)`,
///   before its deadline is the earliest (`RUN_TO_PARITY` only lets the running task finish
///   a slice, counted in the same `r + q`).
/// - The engine adds at most two ticks of gaps in which the CPU does not run a task
///   although one is queued (the reschedule IPI, interrupts off during a newly idle
///   balance or a context switch) while the task waits; the check adds to the bound what
///   its cost tunables and idle exits can make longer (`signal_gap_ns()`: two signals, two
///   switches, two wake-ups and the slowest idle exit), so that a 1 s `cost_ipi_ns` is not
///   taken for a starved task, and the scheduler work charged to the CPU during the wait
///   (balancing passes, newly idle steps, the stopper: a 100 ms `cost_lb_migrate_ns` makes
///   a pulled task wait for the pass that pulled it).
///
/// Hence `bound = (w_max / w_p) * (3 r + 3 q) + 2 * n_max * (r + q) + 2 q`, with a second
/// `n_max * (r + q)` for tasks that join with positive lag while the task waits (each is
/// owed at most one clamped lag, which it is served once). The legacy CFS pick has the same
/// shape with `sysctl_sched_latency` in place of the slice (a sleeper is placed at most
/// half a latency behind `min_vruntime`; the running task is preempted at the tick after
/// its ideal runtime or a latency-sized vruntime lead).
///
/// The arithmetic is in `u128` (saturating there), and the result saturates at `u64::MAX`:
/// no input, the largest tunables included, wraps the bound.
pub fn wait_bound(w_max: u64, w_p: u64, n_max: u64, r: u64, q: u64) -> u64 {
    let (r, q) = (u128::from(r), u128::from(q));
    let share = u128::from(w_max).div_ceil(u128::from(w_p.max(1)));
    let lag = share.saturating_mul(3 * r + 3 * q);
    let picks = (2 * u128::from(n_max)).saturating_mul(r + q);
    lag.saturating_add(picks)
        .saturating_add(2 * q)
        .min(u128::from(u64::MAX)) as u64
}

/// What the engine's checks saw, for the "sometimes" side of the invariants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EngineCounts {
    /// Events after which the full checks ran.
    pub events_checked: u64,
    /// (check, task) pairs where a task pinned to one CPU waited on that CPU's runqueue.
    pub pinned_waiting: u64,
    /// (check, task) pairs where a task sat on a wake list.
    pub on_wakelist: u64,
    /// (check, task) pairs where a sleeping task was still queued (delayed dequeue).
    pub delayed_dequeue: u64,
    /// (check, CPU) pairs where a newly idle balance kept the previous task as `curr`.
    pub newidle_prev: u64,
    /// Waits on a runqueue that ended with the task running.
    pub waits: u64,
    /// The longest of them, ns.
    pub max_wait_ns: u64,
    /// The largest wait over its bound, in thousandths.
    pub max_wait_per_mille: u64,
    /// cfs_rq sum comparisons with at least one attached entity.
    pub pelt_sums_checked: u64,
    /// The largest `|excess|` over its bound, in thousandths, over all three signals.
    pub max_pelt_per_mille: u64,
    /// Entities that left a cfs_rq (detach, removal, exit).
    pub pelt_departures: u64,
    /// Checks that found a cfs_rq whose `load_sum` or `runnable_sum` the kernel's 32-bit
    /// `max_t()` had cut since the last check ([`lbsim_pelt::SumsTruncated`]).
    pub pelt_u32_cuts: u64,
    /// (check, cfs_rq, sum) triples where the kernel's floor on a sum (`max_t(u32, sum,
    /// avg * PELT_MIN_DIVIDER)`) had raised it since the last check
    /// ([`lbsim_pelt::SumsTruncated::load_raised`] and the others).
    pub pelt_floor_raises: u64,
    /// Checks that found a cfs_rq updated while its `curr` was a dequeued task (the
    /// previous task of a newly idle balance), which counts as running time.
    pub pelt_dequeued_curr: u64,
    /// Checks that allowed a cfs_rq's `runnable_sum` the drift of delayed-dequeue walks
    /// below it (task groups: group entities' `runnable_weight` behind, or `h_nr_delayed`
    /// changed before the PELT update; see `Core::check_pelt`).
    pub pelt_runnable_stale: u64,
    /// Of `pelt_sums_checked`, those of a group's cfs_rq (not a root one).
    pub pelt_group_sums_checked: u64,
    /// Of `pelt_sums_checked`, those of a cfs_rq with a queued group entity.
    pub pelt_group_entity_sums_checked: u64,
    /// Moves between task groups (`sched_move_task()`) of a running task.
    pub tg_moves_running: u64,
    /// Moves between task groups of a queued task that was not running (none today: lbsim's
    /// programs move only themselves).
    pub tg_moves_queued: u64,
    /// (check, CPU) pairs where a CPU sat in a non-polling idle state.
    pub in_idle_state: u64,
    /// (check, CPU) pairs where a CPU was leaving an idle state (an interrupt waiting for
    /// the exit).
    pub idle_exiting: u64,
    /// (check, CPU) pairs where an idle CPU in a state kept its tick (the governor
    /// predicted an idle shorter than a tick).
    pub idle_tick_kept: u64,
}

impl EngineCounts {
    /// Adds `other` to `self` (maxima are maxima).
    pub fn add(&mut self, other: &EngineCounts) {
        self.events_checked += other.events_checked;
        self.pinned_waiting += other.pinned_waiting;
        self.on_wakelist += other.on_wakelist;
        self.delayed_dequeue += other.delayed_dequeue;
        self.newidle_prev += other.newidle_prev;
        self.waits += other.waits;
        self.max_wait_ns = self.max_wait_ns.max(other.max_wait_ns);
        self.max_wait_per_mille = self.max_wait_per_mille.max(other.max_wait_per_mille);
        self.pelt_sums_checked += other.pelt_sums_checked;
        self.max_pelt_per_mille = self.max_pelt_per_mille.max(other.max_pelt_per_mille);
        self.pelt_departures += other.pelt_departures;
        self.pelt_u32_cuts += other.pelt_u32_cuts;
        self.pelt_floor_raises += other.pelt_floor_raises;
        self.pelt_dequeued_curr += other.pelt_dequeued_curr;
        self.pelt_runnable_stale += other.pelt_runnable_stale;
        self.pelt_group_sums_checked += other.pelt_group_sums_checked;
        self.pelt_group_entity_sums_checked += other.pelt_group_entity_sums_checked;
        self.tg_moves_running += other.tg_moves_running;
        self.tg_moves_queued += other.tg_moves_queued;
        self.in_idle_state += other.in_idle_state;
        self.idle_exiting += other.idle_exiting;
        self.idle_tick_kept += other.idle_tick_kept;
    }
}

/// What the checks of a run saw: the engine's counters and the balancer's (if its policy
/// keeps a decision record).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// The engine's counters.
    pub engine: EngineCounts,
    /// The balancer's decision-record counters.
    pub balancer: Option<CheckCounts>,
}

/// A wait in progress.
#[derive(Clone, Copy, Debug)]
struct Wait {
    cpu: CpuId,
    since_ns: u64,
    /// `nvcsw + nivcsw` when the wait began: a change means the task ran meanwhile.
    switches: u64,
    w_max: u64,
    n_max: u64,
    r_max: u64,
    /// The CPU's `sched_work_ns` when the wait began, less the part of it not yet done.
    sched_work_ns: u64,
}

/// Where a pinned task was last seen on its only CPU.
#[derive(Clone, Copy, Debug)]
struct Pinned {
    cpu: CpuId,
    nr_migrations: u64,
}

/// The departure allowance of one cfs_rq ([`PELT_SLACK_PER_DEPARTURE`]), decayed in PELT
/// time.
#[derive(Clone, Copy, Debug, Default)]
struct Slack {
    at_pelt_ns: u64,
    util: f64,
    load: f64,
    /// What the kernel's 32-bit `max_t()` has cut from `load_sum` and `runnable_sum`
    /// ([`lbsim_pelt::SumsTruncated`]), in units of the averages, decayed since: the sums
    /// may be that much below their entities' and no more.
    load_cut: f64,
    runnable_cut: f64,
    /// What the kernel's floors on the sums (`max_t(u32, sum, avg * PELT_MIN_DIVIDER)`,
    /// with the clamps at 0 before them) have added to them
    /// ([`lbsim_pelt::SumsTruncated::load_raised`] and the others), in units of the
    /// averages, decayed since: each sum may be that much above its entities' (see
    /// [`Core::check_pelt`]).
    load_raised: f64,
    runnable_raised: f64,
    util_raised: f64,
    /// What util_sum may have gained as running time with a dequeued `curr`, in units
    /// of the averages, decayed since.
    running: f64,
    /// The cfs_rq's cut totals at the last check.
    seen: lbsim_pelt::SumsTruncated,
    /// The cfs_rq's PELT time at the last check if its `curr` was then a dequeued task
    /// (see [`Core::check_pelt`]).
    curr_dequeued_at: Option<u64>,
    /// What runnable_sum may have drifted from its entities' because of delayed-dequeue
    /// walks below it with task groups, in units of the averages, decayed since (see
    /// [`Core::check_pelt`]).
    runnable_stale: f64,
    /// The cfs_rq's PELT time when its current stretch of `runnable_stale` began (its last
    /// update seen at a check), its group entities' summed staleness then and its
    /// `delayed_walks` then.
    stale_from_pelt_ns: u64,
    stale_from: u64,
    stale_walks_seen: u64,
}

/// One cfs_rq's attached entities: their sums synced to its last update, their number and
/// their weights in NICE_0 units.
#[derive(Clone, Copy, Debug, Default)]
struct PeltSums {
    util: u128,
    runnable: u128,
    load: u128,
    n: u64,
    weight_units: u64,
    /// Over the cfs_rq's group entities: `|se_runnable(se) - (h_nr_running - h_nr_delayed)
    /// of its group cfs_rq|`, how far each `runnable_weight` is behind its cfs_rq.
    stale_runnable: u64,
    /// How many of the `n` are queued group entities.
    queued_groups: u64,
}

/// The checks' own state.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    waits: SecondaryMap<TaskId, Wait>,
    pinned: SecondaryMap<TaskId, Pinned>,
    /// The CPU and task group whose cfs_rq each entity was attached to at the last check.
    attached: SecondaryMap<TaskId, (CpuId, u32)>,
    slack: Vec<Slack>,
    /// [`Core::signal_gap_ns`], fixed for the run (its costs and machine are).
    signal_gap_ns: Option<u64>,
    pub(crate) counts: EngineCounts,
}

impl Checker {
    /// The checks of a run; turns the balancer's decision record on if `check` is.
    pub(crate) fn new<B: Balancer>(check: bool, balancer: &mut B) -> Checker {
        if check && let Some(c) = balancer.checks() {
            c.enabled = true;
        }
        Checker::default()
    }
}

/// A broken invariant at `now` on `cpu`.
fn broken(now: u64, cpu: CpuId, task: Option<&Task>, detail: String) -> SimError {
    SimError::Invariant {
        time_ns: now,
        cpu: cpu.0,
        task: task.map_or_else(String::new, |t| format!(" task {}", t.name)),
        detail,
    }
}

/// One place a task can be found in.
#[derive(Clone, Copy, Debug, Default)]
struct Found {
    curr: Option<CpuId>,
    queued: Option<CpuId>,
    wakelist: Option<CpuId>,
}

impl<B: Balancer> Core<B> {
    pub(crate) fn check_invariants(&self) -> Result<(), SimError> {
        let exited = self
            .by_ref
            .iter()
            .filter(|&&r| {
                r != NOT_CREATED && self.tasks[self.runs[r as usize].id].state == TaskState::Exited
            })
            .count();
        if exited != self.workload_exited {
            return Err(SimError::Invariant {
                time_ns: self.now,
                cpu: 0,
                task: String::new(),
                detail: format!(
                    "{exited} workload tasks have exited but the engine counted {}",
                    self.workload_exited
                ),
            });
        }
        // Each task read once: bucketed by task_cpu() for the runqueues' own checks.
        let mut here: Vec<Vec<TaskId>> = vec![Vec::new(); self.rqs.len()];
        for (id, t) in &self.tasks {
            if let Some(v) = here.get_mut(t.cpu.index()) {
                v.push(id);
            }
        }
        for (c, rq) in self.rqs.iter().enumerate() {
            rq.check_invariants_of(&self.tasks, &here[c])
                .map_err(|e| SimError::Invariant {
                    time_ns: self.now,
                    cpu: c as u32,
                    task: String::new(),
                    detail: e.to_string(),
                })?;
            if let Some(p) = rq.curr {
                let t = &self.tasks[p];
                // `curr` may be a task on its way off a CPU its new affinity excludes, as the
                // kernel's stays `rq->curr` then: from its own sched_setaffinity() until the
                // reschedule already pending here (it blocks, and its wake-up places it on an
                // allowed CPU), and through the newly idle balance of that __schedule(),
                // where `curr` is the task leaving (dequeued already).
                let leaving = self.cpus[c]
                    .newidle
                    .is_some_and(|(prev, _)| prev == Some(p))
                    || (self
                        .run_of
                        .get(p)
                        .is_some_and(|&ri| self.runs[ri as usize].block_pending)
                        && self.cpus[c].resched.is_some());
                if !leaving && !t.cpus_mask.test(CpuId(c as u32)) {
                    return Err(SimError::Invariant {
                        time_ns: self.now,
                        cpu: c as u32,
                        task: format!(" task {}", t.name),
                        detail: format!("runs outside its affinity {}", t.cpus_mask.to_cpulist()),
                    });
                }
            }
        }
        Ok(())
    }

    /// Invariant 8, first half: the next event, at `t`, is not before the current time.
    /// Checked in debug builds, and with `check` on, before the clock moves.
    pub(crate) fn check_clock(&self, t: u64) -> Result<(), SimError> {
        if t >= self.now {
            return Ok(());
        }
        let detail = format!("simulated time went back from {} ns to {t} ns", self.now);
        if self.cfg.check {
            return Err(broken(t, CpuId(0), None, detail));
        }
        debug_assert!(false, "{detail}");
        Ok(())
    }

    /// The checks after an event (see the module documentation).
    pub(crate) fn check_event(&mut self) -> Result<(), SimError> {
        if !self.cfg.check {
            return Ok(());
        }
        self.checker.counts.events_checked += 1;
        self.check_balancer_record()?;
        self.check_places()?;
        self.check_pinned()?;
        self.check_pelt()?;
        self.check_idle_states()?;
        self.check_waits()
    }

    /// Invariant 10 (the machine model): a CPU inside an idle state runs no task and its
    /// `rq->idle_state` is that state's exit latency; a CPU running a task has none; a CPU
    /// in a state with its tick kept has a tick on its way.
    fn check_idle_states(&mut self) -> Result<(), SimError> {
        use crate::cpuidle::IdleCpu;
        let topo = self.cfg.topology.clone();
        for (c, cpu) in self.cpus.iter().enumerate() {
            let rq = &self.rqs[c];
            let err = |detail: String| {
                Err(SimError::Invariant {
                    time_ns: self.now,
                    cpu: c as u32,
                    task: String::new(),
                    detail,
                })
            };
            let state = match cpu.idle {
                IdleCpu::Out => {
                    if rq.curr.is_some() && rq.idle_get_state().is_some() {
                        return err(format!(
                            "runs a task but rq->idle_state is {:?}",
                            rq.idle_get_state()
                        ));
                    }
                    continue;
                }
                IdleCpu::In { state, .. } => state,
                IdleCpu::Exiting { state, .. } => {
                    self.checker.counts.idle_exiting += 1;
                    state
                }
            };
            let s = &topo.machine().idle_states(CpuId(c as u32)).states[usize::from(state)];
            if rq.curr.is_some() || cpu.newidle.is_some() {
                return err(format!("is in idle state {} but runs a task", s.name));
            }
            if rq.idle_get_state() != Some(s.exit_latency_us()) {
                return err(format!(
                    "is in idle state {} (exit latency {} us) but rq->idle_state is {:?}",
                    s.name,
                    s.exit_latency_us(),
                    rq.idle_get_state()
                ));
            }
            if !s.polling {
                self.checker.counts.in_idle_state += 1;
            }
            if !cpu.tick_stopped {
                if cpu.tick.is_none() {
                    return err(format!(
                        "is in idle state {} with its tick kept but no tick pending",
                        s.name
                    ));
                }
                self.checker.counts.idle_tick_kept += 1;
            }
        }
        Ok(())
    }

    /// What the checks saw (with `check` on).
    pub(crate) fn check_report(&mut self) -> Option<CheckReport> {
        if !self.cfg.check {
            return None;
        }
        Some(CheckReport {
            engine: self.checker.counts,
            balancer: self.balancer.checks().map(|c| c.counts),
        })
    }

    /// Invariants 1, 5, 6, 7: the first decision the balancer's record saw break a rule.
    fn check_balancer_record(&mut self) -> Result<(), SimError> {
        let Some(v) = self
            .balancer
            .checks()
            .and_then(|c| c.first_violation.clone())
        else {
            return Ok(());
        };
        let task = v.task.and_then(|p| self.tasks.get(p));
        Err(broken(
            v.time_ns,
            v.cpu,
            task,
            format!("the balancer broke {}: {}", v.rule, v.decision),
        ))
    }

    /// Invariant 3: every task in exactly one place.
    fn check_places(&mut self) -> Result<(), SimError> {
        let now = self.now;
        let mut found: SecondaryMap<TaskId, Found> = SecondaryMap::new();
        for id in self.tasks.keys() {
            found.insert(id, Found::default());
        }
        let dup = |what: &str, id: TaskId, a: CpuId, b: CpuId, tasks: &Tasks| {
            broken(
                now,
                b,
                tasks.get(id),
                format!("{what} on cpu {} and on cpu {}", a.0, b.0),
            )
        };
        for (c, rq) in self.rqs.iter().enumerate() {
            let cpu = CpuId(c as u32);
            if let Some(p) = rq.curr {
                let f = found.get_mut(p).ok_or_else(|| {
                    broken(now, cpu, None, "curr is a task that does not exist".into())
                })?;
                if let Some(other) = f.curr.replace(cpu) {
                    return Err(dup("is curr", p, other, cpu, &self.tasks));
                }
            }
            for p in rq.cfs.cfs_tasks() {
                let f = found.get_mut(p).ok_or_else(|| {
                    broken(
                        now,
                        cpu,
                        None,
                        "cfs_tasks holds a task that does not exist".into(),
                    )
                })?;
                if let Some(other) = f.queued.replace(cpu) {
                    return Err(dup("is queued", p, other, cpu, &self.tasks));
                }
            }
            for &(p, _, _) in &self.cpus[c].wakelist {
                let f = found.get_mut(p).ok_or_else(|| {
                    broken(
                        now,
                        cpu,
                        None,
                        "a wake list holds a task that does not exist".into(),
                    )
                })?;
                if let Some(other) = f.wakelist.replace(cpu) {
                    return Err(dup("is on the wake list", p, other, cpu, &self.tasks));
                }
                self.checker.counts.on_wakelist += 1;
            }
        }
        for (id, t) in &self.tasks {
            let f = found[id];
            let at = t.cpu;
            let err = |detail: String| Err(broken(now, at, Some(t), detail));
            let newidle_prev = f
                .curr
                .and_then(|c| self.cpus[c.index()].newidle.as_ref())
                .and_then(|n| n.0)
                == Some(id);
            if let Some(c) = f.curr
                && c != at
            {
                return err(format!("is curr of cpu {} but task_cpu is {}", c.0, at.0));
            }
            if let Some(c) = f.queued {
                if c != at {
                    return err(format!("is queued on cpu {} but task_cpu is {}", c.0, at.0));
                }
                if !t.se.on_rq {
                    return err(format!("is on cpu {}'s cfs_tasks but not on_rq", c.0));
                }
            } else if t.se.on_rq {
                return err("is on_rq but on no runqueue's cfs_tasks".into());
            }
            if f.wakelist.is_some() && (t.se.on_rq || t.state != TaskState::Sleeping) {
                return err(format!(
                    "is on a wake list while {:?} (on_rq {})",
                    t.state, t.se.on_rq
                ));
            }
            match t.state {
                TaskState::Running => {
                    if f.curr.is_none() || f.queued.is_none() {
                        return err(format!(
                            "is running but curr of {:?} and queued on {:?}",
                            f.curr, f.queued
                        ));
                    }
                }
                TaskState::Queued => {
                    if f.curr.is_some() || f.queued.is_none() || t.se.sched_delayed {
                        return err(format!(
                            "is runnable but curr of {:?}, queued on {:?}, delayed {}",
                            f.curr, f.queued, t.se.sched_delayed
                        ));
                    }
                }
                TaskState::Sleeping => {
                    if f.curr.is_some() && !newidle_prev {
                        return err("is sleeping but curr of its CPU".into());
                    }
                    if f.queued.is_some() && !t.se.sched_delayed {
                        return err("is sleeping but queued without a delayed dequeue".into());
                    }
                    if f.queued.is_some() {
                        self.checker.counts.delayed_dequeue += 1;
                    }
                }
                TaskState::Exited | TaskState::New => {
                    let curr_ok = f.curr.is_none() || newidle_prev;
                    if !curr_ok || f.queued.is_some() || f.wakelist.is_some() {
                        return err(format!(
                            "is {:?} but curr of {:?}, queued on {:?}, on the wake list of {:?}",
                            t.state, f.curr, f.queued, f.wakelist
                        ));
                    }
                }
            }
            if newidle_prev {
                self.checker.counts.newidle_prev += 1;
            }
        }
        Ok(())
    }

    /// Invariant 2: a task pinned to one CPU and sitting on it never leaves it.
    fn check_pinned(&mut self) -> Result<(), SimError> {
        for (id, t) in &self.tasks {
            let only = if t.cpus_mask.weight() == 1 {
                t.cpus_mask.first()
            } else {
                None
            };
            let Some(only) = only else {
                self.checker.pinned.remove(id);
                continue;
            };
            if let Some(prev) = self.checker.pinned.get(id)
                && prev.cpu == only
                && (t.cpu != only || t.se.nr_migrations != prev.nr_migrations)
            {
                return Err(broken(
                    self.now,
                    only,
                    Some(t),
                    format!(
                        "pinned to cpu {} but moved (now task_cpu {}, {} migration(s) since)",
                        only.0,
                        t.cpu.0,
                        t.se.nr_migrations - prev.nr_migrations
                    ),
                ));
            }
            if t.cpu == only && t.state != TaskState::Exited {
                self.checker.pinned.insert(
                    id,
                    Pinned {
                        cpu: only,
                        nr_migrations: t.se.nr_migrations,
                    },
                );
                if t.state == TaskState::Queued {
                    self.checker.counts.pinned_waiting += 1;
                }
            } else {
                self.checker.pinned.remove(id);
            }
        }
        Ok(())
    }

    /// Invariant 4: PELT bounds per entity, and each cfs_rq's sums against its entities'.
    fn check_pelt(&mut self) -> Result<(), SimError> {
        let now = self.now;
        let nr = self.rqs.len();
        // One cfs_rq per CPU per group (index 0: the root, `rq->cfs`), at `cpu * n_cfs + k`.
        let n_cfs = self.tg_tree.as_ref().map_or(1, |t| t.len());
        if self.checker.slack.len() != nr * n_cfs {
            self.checker.slack = vec![Slack::default(); nr * n_cfs];
        }
        let mut sums = vec![PeltSums::default(); nr * n_cfs];
        let mut departed: Vec<(usize, u64)> = Vec::new();
        for (id, t) in &self.tasks {
            let err = |detail: String| Err(broken(now, t.cpu, Some(t), detail));
            let a = &t.se.avg;
            let w = t.se.se_weight();
            if a.util_avg > 1024 || a.runnable_avg > 1024 || a.load_avg > w {
                return err(format!(
                    "entity signals out of bounds: util_avg {} runnable_avg {} (max 1024), \
                     load_avg {} (weight {w})",
                    a.util_avg, a.runnable_avg, a.load_avg
                ));
            }
            let c = t.cpu.index();
            // An exiting task stays attached until task_dead_fair(), after a newly idle
            // balance of its CPU.
            let exit_pending = t.state == TaskState::Exited
                && self.rqs[c].curr == Some(id)
                && self.cpus[c].newidle.is_some();
            let attached = a.last_update_time != 0
                && (t.state != TaskState::Exited || exit_pending)
                && t.state != TaskState::New;
            // A departure is from the cfs_rq the task was attached to at the last check: its
            // group's on its previous CPU, or its previous group's (sched_move_task()).
            let k = t.tg as usize;
            if let Some((prev, prev_tg)) = self.checker.attached.get(id).copied()
                && (!attached || prev != t.cpu || prev_tg != t.tg)
            {
                departed.push((prev.index() * n_cfs + prev_tg as usize, w));
            }
            if !attached {
                self.checker.attached.remove(id);
                continue;
            }
            self.checker.attached.insert(id, (t.cpu, t.tg));
            let rq = &self.rqs[c];
            // cfs_rq_of(se): the task's group cfs_rq with task groups.
            let lut = rq.task_cfs_last_update_time(&self.tasks, id);
            if a.last_update_time > lut {
                return err(format!(
                    "entity updated at PELT time {} ns, after its cfs_rq ({lut} ns)",
                    a.last_update_time
                ));
            }
            // sync_entity_load_avg(): the entity's sums at its cfs_rq's last update.
            let mut synced = *a;
            let load = SeLoad {
                weight: w,
                on_rq: t.se.on_rq,
                runnable: u64::from(t.se.on_rq && !t.se.sched_delayed),
                curr: rq.fair_curr_is(&self.tasks, id),
            };
            update_load_avg_se(lut, &mut synced, &load, false);
            let s = &mut sums[c * n_cfs + k];
            s.util += u128::from(synced.util_sum);
            s.runnable += u128::from(synced.runnable_sum);
            s.load += u128::from(w) * u128::from(synced.load_sum);
            s.n += 1;
            s.weight_units += (w / 1024).max(1);
        }
        for (at, w) in departed {
            let s = &mut self.checker.slack[at];
            s.util += PELT_SLACK_PER_DEPARTURE;
            s.load += PELT_SLACK_PER_DEPARTURE * (w as f64 / 1024.0).max(1.0);
            self.checker.counts.pelt_departures += 1;
        }
        // Group entities: attached to their parent cfs_rq since the group came online
        // (online_fair_sched_group()), each synced to the parent's last update like a task.
        for (c, rq) in self.rqs.iter().enumerate() {
            let Some(g) = rq.task_groups() else {
                continue;
            };
            let tree = g.tree();
            for gg in 1..tree.len() as u32 {
                let se = g.se(gg);
                let a = &se.avg;
                let w = se.se_weight();
                let pk = tree.parent[gg as usize] as usize;
                let pcfs = if pk == 0 {
                    &rq.cfs
                } else {
                    g.cfs_rq(pk as u32)
                };
                let broken_at = |detail: String| Err(broken(now, CpuId(c as u32), None, detail));
                // No bounds on a group entity's averages: they are copied from its cfs_rq
                // (whose util_avg passes 1024 while migrated tasks' signals settle) and its
                // load_sum estimated from the cfs_rq's weighted sum (update_tg_cfs_load()).
                if a.last_update_time == 0 {
                    // Never happens once the group is online: a group entity is never
                    // detached.
                    return broken_at(format!(
                        "group {} entity is not attached to its parent cfs_rq",
                        tree.paths[gg as usize]
                    ));
                }
                let lut = pcfs.avg.avg.last_update_time;
                if a.last_update_time > lut {
                    return broken_at(format!(
                        "group {} entity updated at PELT time {} ns, after its cfs_rq ({lut} ns)",
                        tree.paths[gg as usize], a.last_update_time
                    ));
                }
                let mut synced = *a;
                let load = SeLoad {
                    weight: w,
                    on_rq: se.on_rq,
                    runnable: if se.sched_delayed {
                        0
                    } else {
                        g.runnable_weight(gg)
                    },
                    curr: pcfs.curr == Some(lbsim_rq::group_se_id(gg)),
                };
                let gcfs = g.cfs_rq(gg);
                let behind = load
                    .runnable
                    .abs_diff(u64::from(gcfs.h_nr_running - gcfs.h_nr_delayed));
                update_load_avg_se(lut, &mut synced, &load, false);
                let s = &mut sums[c * n_cfs + pk];
                s.util += u128::from(synced.util_sum);
                s.runnable += u128::from(synced.runnable_sum);
                s.load += u128::from(w) * u128::from(synced.load_sum);
                s.n += 1;
                s.weight_units += (w / 1024).max(1);
                s.stale_runnable += behind;
                s.queued_groups += u64::from(se.on_rq);
            }
        }
        let on_rq = |id: TaskId, g: Option<&lbsim_rq::RqGroups>| match lbsim_rq::se_group(id) {
            Some(gg) => g.is_some_and(|g| g.se(gg).on_rq),
            None => self.tasks[id].se.on_rq,
        };
        for (at, &s) in sums.iter().enumerate() {
            let (c, k) = (at / n_cfs, at % n_cfs);
            let rq = &self.rqs[c];
            let groups = rq.task_groups();
            let cfs_rq = match groups {
                Some(g) if k != 0 => g.cfs_rq(k as u32),
                _ => &rq.cfs,
            };
            let group = match groups {
                Some(g) => format!(" of group {}", g.tree().paths[k]),
                None => String::new(),
            };
            let cfs = &cfs_rq.avg;
            let lut = cfs.avg.last_update_time;
            let slack = &mut self.checker.slack[at];
            if lut > slack.at_pelt_ns {
                let periods = (lut - slack.at_pelt_ns) as f64 / PELT_PERIOD_NS;
                let f = (-periods / LOAD_AVG_PERIOD).exp2();
                slack.util *= f;
                slack.load *= f;
                slack.load_cut *= f;
                slack.load_raised *= f;
                slack.runnable_raised *= f;
                slack.util_raised *= f;
                slack.runnable_cut *= f;
                slack.running *= f;
                slack.runnable_stale *= f;
                slack.at_pelt_ns = lut;
            }
            let divider_f = f64::from(cfs.avg.get_pelt_divider());
            if cfs.truncated != slack.seen {
                // Cut at this update or an earlier one since the last check; the cut
                // decays with the sum from then, in whole periods where this decays
                // continuously, hence the margin of one period's decay (2^(1/32)) and
                // a unit for rounding.
                let cut = |now: u64, then: u64| {
                    if now == then {
                        0.0
                    } else {
                        (now - then) as f64 / divider_f * 1.03 + 1.0
                    }
                };
                slack.load_cut += cut(cfs.truncated.load_sum, slack.seen.load_sum);
                slack.runnable_cut += cut(cfs.truncated.runnable_sum, slack.seen.runnable_sum);
                // The floors' raises (fair.c v6.12: `max_t(u32, sum, avg *
                // PELT_MIN_DIVIDER)` after each subtraction or propagated difference, in
                // detach_entity_load_avg() with its dequeue_load_avg(),
                // update_cfs_rq_load_avg()'s removal and update_tg_cfs_util(),
                // update_tg_cfs_runnable() and update_tg_cfs_load()): the average is a
                // snapshot of the cfs_rq's last period boundary, moved since by each change's
                // `delta_avg` while the sum moved by its `delta_sum`, and the two disagree
                // (a group entity's old averages are its own snapshots; its new sum is
                // rebuilt from its new average for util and runnable, and its old load_sum
                // is not its old load_avg times the divider). When the changes took more
                // from the sum than the average times the divider, the floor puts the
                // difference back and it stays in the sum, above its entities'. A task moved
                // between two groups (sched_move_task()) propagates a removal through one
                // group entity and an addition through the other into the same parent. The
                // raise is what the kernel's arithmetic added, recorded where it happened;
                // decayed as the cuts are.
                let raised = [
                    (
                        &mut slack.load_raised,
                        cfs.truncated.load_raised,
                        slack.seen.load_raised,
                    ),
                    (
                        &mut slack.runnable_raised,
                        cfs.truncated.runnable_raised,
                        slack.seen.runnable_raised,
                    ),
                    (
                        &mut slack.util_raised,
                        cfs.truncated.util_raised,
                        slack.seen.util_raised,
                    ),
                ];
                for (allow, now_total, seen) in raised {
                    if now_total != seen {
                        *allow += cut(now_total, seen);
                        self.checker.counts.pelt_floor_raises += 1;
                    }
                }
                if (cfs.truncated.load_sum, cfs.truncated.runnable_sum)
                    != (slack.seen.load_sum, slack.seen.runnable_sum)
                {
                    self.checker.counts.pelt_u32_cuts += 1;
                }
                slack.seen = cfs.truncated;
            }
            // A newly idle balance keeps the sleeping previous task as `cfs_rq->curr`
            // (v6.12's pick_next_task_fair() puts it only once it has picked), and an
            // update of the cfs_rq meanwhile counts as running (`curr != NULL`) time no
            // entity accrues: `___update_load_sum()` clears `running` for the entity,
            // which is not queued. The kernel's newly idle balance lasts microseconds;
            // lbsim's lasts what its costs say. So the util_sum may gain, while that lasts,
            // up to the PELT time that passed.
            if let Some(since) = slack.curr_dequeued_at
                && lut > since
            {
                slack.running += (lut - since) as f64 / divider_f + 1.0;
                self.checker.counts.pelt_dequeued_curr += 1;
            }
            slack.curr_dequeued_at = cfs_rq.curr.filter(|&id| !on_rq(id, groups)).map(|_| lut);
            // With task groups the kernel's own arithmetic lets a cfs_rq's runnable_sum part
            // from its entities' (fair.c v6.12.y; the drift tests/groups.rs' nested run
            // showed, 31 units at 2.3 ms). set_delayed() and clear_delayed() change the
            // h_nr_delayed of every cfs_rq above the task without updating their PELT
            // first (dequeue_entity() and requeue_delayed_entity() update only the task's
            // own cfs_rq), so the next update of such a cfs_rq counts the new number of
            // runnable tasks back to its previous update; and they leave each group
            // entity's runnable_weight (se_update_runnable()) as it was until a walk through
            // it refreshes it, so meanwhile the entity counts a number its group cfs_rq no
            // longer does. In runnable_sum one runnable unit over PELT time t is t (scaled
            // by 1024, over 1024 ns), so between this cfs_rq's updates seen at two checks the
            // sums may part by at most (the staleness of its group entities at the first,
            // plus the walks since) times that time, over the divider. A walk at t1 inside
            // the stretch [t0, t2] shifts this cfs_rq's count over [t0, t1] and leaves an
            // entity's runnable_weight behind over [t1, t2] at most (refreshing it takes
            // update_load_avg() of the entity, which updates this cfs_rq too and so ends the
            // stretch): one unit over the stretch per walk. Rounding is the per-entity part
            // of pelt_bound(). The walks that happen while the cfs_rq is not updated fall in
            // the stretch that ends at its next update.
            if lut > slack.stale_from_pelt_ns {
                let walks = cfs_rq.delayed_walks - slack.stale_walks_seen;
                let d = slack.stale_from + walks;
                if d > 0 {
                    slack.runnable_stale +=
                        d as f64 * (lut - slack.stale_from_pelt_ns) as f64 / divider_f;
                    self.checker.counts.pelt_runnable_stale += 1;
                }
                slack.stale_from_pelt_ns = lut;
                slack.stale_from = s.stale_runnable;
                slack.stale_walks_seen = cfs_rq.delayed_walks;
            }
            let removed = cfs.removed;
            let n = s.n + u64::from(removed.nr);
            if n == 0 && cfs.avg.util_sum == 0 && cfs.avg.load_sum == 0 {
                continue;
            }
            self.checker.counts.pelt_sums_checked += u64::from(n > 0);
            self.checker.counts.pelt_group_sums_checked += u64::from(n > 0 && k != 0);
            self.checker.counts.pelt_group_entity_sums_checked += u64::from(s.queued_groups > 0);
            // The removed entities' sums, as update_cfs_rq_load_avg() will subtract them.
            let divider = u128::from(cfs.avg.get_pelt_divider());
            // Each check: the name, the cfs_rq's sum, its entities', the bound, and what
            // the kernel's own arithmetic allows beyond it below and above (the 32-bit
            // cuts, the running time of a dequeued curr).
            let checks = [
                (
                    "util_sum",
                    u128::from(cfs.avg.util_sum),
                    s.util + u128::from(removed.util_avg) * divider,
                    pelt_bound(n, 0, slack.util),
                    (0, (slack.running + slack.util_raised).ceil() as u64),
                ),
                (
                    "runnable_sum",
                    u128::from(cfs.avg.runnable_sum),
                    s.runnable + u128::from(removed.runnable_avg) * divider,
                    pelt_bound(n, 0, slack.util),
                    (
                        (slack.runnable_cut + slack.runnable_stale).ceil() as u64,
                        (slack.runnable_stale + slack.runnable_raised).ceil() as u64,
                    ),
                ),
                (
                    "load_sum",
                    u128::from(cfs.avg.load_sum),
                    s.load + u128::from(removed.load_avg) * divider,
                    pelt_bound(n, s.weight_units + u64::from(removed.nr), slack.load),
                    (
                        slack.load_cut.ceil() as u64,
                        slack.load_raised.ceil() as u64,
                    ),
                ),
            ];
            for (name, have, want, bound, (below, above)) in checks {
                // In units of the averages: sums over the divider.
                let excess = (have as i128 - want as i128) / divider as i128;
                let bound = bound + if excess < 0 { below } else { above };
                let per_mille = (excess.unsigned_abs() * 1000 / u128::from(bound.max(1))) as u64;
                let m = &mut self.checker.counts.max_pelt_per_mille;
                *m = (*m).max(per_mille);
                if excess.unsigned_abs() > u128::from(bound) {
                    let what = if excess < 0 {
                        "below (a sum underflowed or was clamped on a detach)"
                    } else {
                        "above"
                    };
                    return Err(broken(
                        now,
                        CpuId(c as u32),
                        None,
                        format!(
                            "cfs_rq{group} {name} {have} is {} average units {what} the sum of its \
                             {n} attached and removed entities' ({want}, divider {divider}); \
                             bound {bound}",
                            excess.unsigned_abs()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Invariant 8: a task that waits on a runqueue runs within [`wait_bound`].
    /// What the engine's own costs can add to a wait beyond the bound's two ticks: two
    /// wake-up signals (an IPI or a store to a polling CPU), two context switches and two
    /// wake-up costs, and the slowest idle exit of the machine with its seeded spread. With
    /// the default costs this is a few microseconds and the exits; a tunable at its largest
    /// (1 s) dominates, and the bound follows it.
    fn signal_gap_ns(&self) -> u64 {
        let c = &self.cfg.cost;
        let per_switch = c
            .ipi_ns
            .max(c.poll_wake_ns)
            .saturating_add(c.context_switch_ns)
            .saturating_add(c.wakeup_ns);
        let m = self.cfg.topology.machine();
        let exit = (0..self.rqs.len())
            .flat_map(|i| {
                m.idle_states(CpuId(i as u32))
                    .states
                    .iter()
                    .map(|s| s.exit_ns)
            })
            .max()
            .unwrap_or(0);
        let spread = 100 + self.cfg.machine.idle_exit_spread_pct;
        per_switch
            .saturating_mul(2)
            .saturating_add(exit.saturating_mul(spread) / 100)
    }

    fn check_waits(&mut self) -> Result<(), SimError> {
        let now = self.now;
        let q = self.tick_nsec;
        let legacy = self.cfg.tunables.sched_policy == lbsim_rq::FairPick::Cfs;
        let base = if legacy {
            self.cfg
                .tunables
                .latency_ns
                .max(self.cfg.tunables.base_slice_ns)
        } else {
            self.cfg.tunables.base_slice_ns
        };
        let gap = match self.checker.signal_gap_ns {
            Some(g) => g,
            None => *self.checker.signal_gap_ns.insert(self.signal_gap_ns()),
        };
        // The largest slice queued on each runqueue now.
        let mut r_now = vec![base; self.rqs.len()];
        for (_, t) in &self.tasks {
            if t.se.on_rq {
                let r = &mut r_now[t.cpu.index()];
                *r = (*r).max(t.se.slice);
            }
        }
        for (id, t) in &self.tasks {
            let c = t.cpu;
            let rq = &self.rqs[c.index()];
            let waiting = t.state == TaskState::Queued && rq.curr != Some(id);
            let switches = t.nvcsw + t.nivcsw;
            let (w_now, n_now) = (rq.cfs.load.weight, u64::from(rq.nr_running));
            let cur = self.checker.waits.get(id).copied();
            let restart = match cur {
                None => true,
                Some(w) => w.cpu != c || w.switches != switches,
            };
            if let Some(w) = cur
                && (restart || !waiting)
            {
                // The wait ended (the task ran, moved or left the runqueue).
                let ran = w.switches != switches || rq.curr == Some(id);
                self.checker.counts.waits += u64::from(ran);
                self.checker.waits.remove(id);
            }
            if !waiting {
                continue;
            }
            let w = if restart {
                Wait {
                    cpu: c,
                    since_ns: now,
                    switches,
                    w_max: w_now,
                    n_max: n_now,
                    r_max: r_now[c.index()],
                    // Less what of it is still to come: a newly idle step or a charge in
                    // progress when the wait begins delays the task too.
                    sched_work_ns: {
                        let cs = &self.cpus[c.index()];
                        let ahead = cs.busy_until.max(cs.irq_off_until).saturating_sub(now);
                        cs.sched_work_ns.saturating_sub(ahead)
                    },
                }
            } else {
                let mut w = cur.expect("not a restart");
                w.w_max = w.w_max.max(w_now);
                w.n_max = w.n_max.max(n_now);
                w.r_max = w.r_max.max(r_now[c.index()]);
                w
            };
            self.checker.waits.insert(id, w);
            let waited = now - w.since_ns;
            // The scheduler work charged to the CPU meanwhile (balancing passes, newly idle
            // steps, the stopper) kept it from running any task.
            let work = self.cpus[c.index()].sched_work_ns - w.sched_work_ns;
            // With task groups the task's weight at the root is its hierarchical share, and
            // each level of its hierarchy (its cfs_rq and every group entity's above) may add
            // its own EEVDF lag: the flat bound once per level.
            let (w_p, levels) = match &self.tg_tree {
                Some(tree) => (
                    rq.task_h_weight(&self.tasks, id),
                    u64::from(tree.depth[t.tg as usize]) + 1,
                ),
                None => (t.se.load.weight, 1),
            };
            let bound = wait_bound(w.w_max, w_p, w.n_max, w.r_max, q)
                .saturating_mul(levels)
                .saturating_add(gap)
                .saturating_add(work);
            let counts = &mut self.checker.counts;
            counts.max_wait_ns = counts.max_wait_ns.max(waited);
            counts.max_wait_per_mille = counts
                .max_wait_per_mille
                .max((u128::from(waited) * 1000 / u128::from(bound.max(1))) as u64);
            if waited > bound {
                return Err(broken(
                    now,
                    c,
                    Some(t),
                    format!(
                        "runnable since {} ns and not run for {waited} ns, over the bound of \
                         {bound} ns (weight {} of at most {} queued, nr_running at most {}, \
                         slice {} ns, tick {q} ns)",
                        w.since_ns, t.se.load.weight, w.w_max, w.n_max, w.r_max
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::wait_bound;

    #[test]
    fn wait_bound_saturates_instead_of_wrapping() {
        // NICE_0 tasks, 4 queued, a 3 ms slice at HZ=250: 3 (r + q) + 8 (r + q) + 2 q.
        assert_eq!(
            wait_bound(1024, 1024, 4, 3_000_000, 4_000_000),
            11 * 7_000_000 + 8_000_000
        );
        // The largest slice the registry allows, and far beyond it: never smaller than the
        // slice itself (a wrapped bound would be).
        let r = u64::from(u32::MAX);
        assert!(wait_bound(1024, 1024, 1, r, 4_000_000) > r);
        assert_eq!(
            wait_bound(u64::MAX, 1, u64::MAX, u64::MAX, u64::MAX),
            u64::MAX
        );
        assert_eq!(wait_bound(1024, 1024, 1, u64::MAX, 4_000_000), u64::MAX);
    }
}
