//! The discrete-event engine: runs task programs on per-CPU runqueues under a balancer policy.
//!
//! The engine owns simulated time. It follows the kernel's control flow at the points where
//! scheduling happens, each named after the kernel function it stands for:
//! - `try_to_wake_up()` (`Sim::ttwu`): `select_task_rq()` through the [`Balancer`],
//!   `set_task_cpu()` on a CPU change, then `ttwu_queue()`: a remote wake-up to a CPU that
//!   does not share the waker's LLC, or to an idle CPU, goes through the wake list (sets
//!   `rq->ttwu_pending`, sends an IPI that arrives after `cost_ipi_ns`); otherwise
//!   `ttwu_do_activate()` runs at once and a reschedule IPI goes to the target if needed.
//!   Follows core.c: try_to_wake_up(), ttwu_queue_cond() (v6.12).
//! - `__schedule()` (`Sim::schedule`): put the previous task back (or block it), pick,
//!   newly idle balance when nothing is runnable (the CPU keeps interrupts off meanwhile, so
//!   wake-up IPIs and timers wait for it to finish), context switch.
//! - `sched_tick()` (`Ev::Tick`): per-CPU periodic tick with a per-CPU phase, stopped while
//!   the CPU is idle (nohz) and restarted on the next tick boundary when work arrives; then
//!   the balancer's trigger (SCHED_SOFTIRQ runs at once on the same CPU) and nohz kick.
//! - The active-balance stopper preempts the busiest CPU's task, runs the balancer's
//!   `active_load_balance_cpu_stop()`, then the CPU schedules again.
//!
//! Work is time at capacity 1024: a task running on a CPU of capacity `c` completes
//! `c / 1024` ns of work per ns. Scheduler overhead (context switches, wake-ups, balancing)
//! is charged through the [`CostModel`] to the CPU that does it: during that time the CPU
//! makes no progress on user work.
//!
//! Determinism: events are ordered by `(time, insertion)`; every random draw comes from a
//! stream of the run's seed ([`SeedStreams`]); no host state is read. The same
//! configuration and seed give the same event stream ([`RunResult::event_hash`]).

use lbsim_balance::ctx::{
    BalanceCtx, BalanceOutcome, Balancer, IlbKick, NewidleStep, PendingWakeups, StopperRequest,
    WakeFlags,
};
use lbsim_balance::schedstat::CpuSchedstat;
use lbsim_rq::{
    Policy as RqPolicy, PrevAction, Rq, SchedParams, Task, TaskId, TaskState, Tasks, set_task_cpu,
};
use lbsim_topology::{CpuId, Cpumask};
use lbsim_workload::{
    Action, Outcome, Policy as WlPolicy, ProbeRecord, ProgramState, RunObservations, SyncState,
    TaskObservation, TaskRef, Wakes, WakeupSample,
};
use rand_pcg::Pcg64Mcg;
use slotmap::SecondaryMap;

#[path = "check.rs"]
pub mod check;

use crate::metrics::{Samples, fairness};
use crate::queue::EventQueue;
use crate::rng::{SeedStreams, Stream, below};

pub use crate::config::{EngineTunables, SimConfig, SimError};
use crate::params::CoreFeat;
pub use crate::result::{CpuResult, GroupFairness, RunResult, TaskResult};

/// The engine's events. A closed set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// A workload task is created (forked by the launcher) and woken for the first time.
    Start(u32),
    /// The running task of `cpu` reaches the end of its current action (stale unless `generation`
    /// matches the CPU's generation).
    SegEnd { cpu: u32, generation: u64 },
    /// A sleeping task's timer fires on its CPU.
    Timer { run: u32, generation: u64 },
    /// The periodic tick of `cpu`.
    Tick { cpu: u32 },
    /// A wake-list IPI arrives at `cpu` (`sched_ttwu_pending()`).
    Ipi { cpu: u32 },
    /// A reschedule request takes effect on `cpu` (`__schedule()`).
    Resched { cpu: u32 },
    /// The active-balance stopper runs on `busiest`.
    Stopper(StopperRequest),
    /// An idle-load-balancer kick arrives: SCHED_SOFTIRQ runs on the ILB CPU.
    Kick(IlbKick),
    /// A background kernel thread wakes on `cpu`.
    Background { cpu: u32 },
    /// The next step of `cpu`'s newly idle balance.
    NewidleStep { cpu: u32 },
    /// `cpu`'s newly idle balance has finished its last step: complete the schedule.
    NewidleDone { cpu: u32 },
}

impl Ev {
    /// The CPUs whose runqueues handling the event acts on directly (others it reaches
    /// through accounting or balancing outcomes).
    fn cpus(&self) -> [Option<u32>; 2] {
        match *self {
            Ev::Start(_) | Ev::Timer { .. } => [None, None],
            Ev::SegEnd { cpu, .. }
            | Ev::Tick { cpu }
            | Ev::Ipi { cpu }
            | Ev::Resched { cpu }
            | Ev::Background { cpu }
            | Ev::NewidleStep { cpu }
            | Ev::NewidleDone { cpu } => [Some(cpu), None],
            Ev::Stopper(r) => [Some(r.busiest.0), Some(r.push_cpu.0)],
            Ev::Kick(k) => [Some(k.ilb_cpu.0), None],
        }
    }

    fn hash_key(&self) -> (u8, u64) {
        match *self {
            Ev::Start(r) => (1, r.into()),
            Ev::SegEnd { cpu, .. } => (2, cpu.into()),
            Ev::Timer { run, .. } => (3, run.into()),
            Ev::Tick { cpu } => (4, cpu.into()),
            Ev::Ipi { cpu } => (5, cpu.into()),
            Ev::Resched { cpu } => (6, cpu.into()),
            Ev::Stopper(r) => (7, r.busiest.0.into()),
            Ev::Kick(k) => (8, k.ilb_cpu.0.into()),
            Ev::Background { cpu } => (9, cpu.into()),
            Ev::NewidleStep { cpu } => (10, cpu.into()),
            Ev::NewidleDone { cpu } => (11, cpu.into()),
        }
    }
}

/// What a task is in the middle of.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Cur {
    /// Nothing: ask the program for its next action when the task runs.
    Idle,
    /// Work left, in units of ns-at-capacity-1024 times 1024 (so that a CPU of capacity `c`
    /// completes exactly `c` units per ns).
    Run { rem_units: u64 },
    /// Running until this wall time.
    RunWall { end_ns: u64 },
    /// Blocked in a sync action that is re-applied when the task runs again.
    Blocked(Action),
}

#[derive(Debug)]
enum Kind {
    /// A task of the workload.
    Workload {
        wref: TaskRef,
        program: Box<ProgramState>,
        rng: Pcg64Mcg,
    },
    /// A background kernel thread pinned to a CPU; `ran` is set once it has run since its
    /// last wake-up.
    Kworker { ran: bool },
}

#[derive(Debug)]
struct TaskRun {
    id: TaskId,
    kind: Kind,
    cur: Cur,
    /// The task decided to block (sleep, blocking sync action); the next `__schedule()` on its
    /// CPU dequeues it.
    block_pending: bool,
    /// The task exits at its next `__schedule()`.
    exit_pending: bool,
    /// Generation of the task's sleep timer (stale timers are ignored).
    timer_gen: u64,
    /// When it was last woken (for the wake-up latency), until it runs.
    wake_ns: Option<u64>,
    /// When it last started running (context-switched in).
    on_cpu_since: u64,
    /// Time on a CPU, ns.
    runtime_ns: u64,
    /// Work completed, in units of ns-at-1024 times 1024.
    work_units: u128,
    /// Longest single wait between becoming runnable and running, ns.
    max_wait_ns: u64,
}

/// Per-CPU engine state (what is not the runqueue's).
#[derive(Debug, Clone)]
struct CpuState {
    /// When the current task's progress (re)started.
    seg_start: u64,
    /// Scheduler overhead in progress until then; user progress resumes after it.
    busy_until: u64,
    /// Interrupts are off until then (a newly idle balance): IPIs and timers wait.
    irq_off_until: u64,
    /// Generation of the pending segment-end event.
    generation: u64,
    /// The tick is stopped (nohz idle).
    tick_stopped: bool,
    /// The tick's phase within a tick period.
    tick_phase_ns: u64,
    /// A tick event is queued.
    tick_queued: bool,
    /// Wake-list entries: (task, migrated, time the waker queued it).
    wakelist: Vec<(TaskId, bool, u64)>,
    /// A wake-list IPI is on its way.
    ipi_queued: bool,
    /// A reschedule is queued.
    resched_queued: bool,
    /// The capacity (`arch_scale_cpu_capacity`).
    capacity: u64,
    /// The pinned background kernel thread, if background noise is on.
    kworker: Option<u32>,
    /// In `__schedule()`'s newly idle balance: the previous task and how it left.
    newidle: Option<(Option<TaskId>, PrevAction)>,
    /// The current task called `sched_yield()`: its next switch is not a preemption (for
    /// the trace's `prev_state`).
    yielded: bool,
    /// Accounting: last update, busy and idle time, integral of nr_running over time.
    acct_last: u64,
    busy_ns: u64,
    idle_ns: u64,
    nr_running_ns: u128,
    /// The `cpu<N>` line of /proc/schedstat.
    stat: CpuSchedstat,
}

/// The view of pending wake-ups the balancer's passes consult.
struct Pending<'a> {
    cpus: &'a [CpuState],
}

impl PendingWakeups for Pending<'_> {
    fn ttwu_pending_at(&self, cpu: CpuId, at_ns: u64) -> bool {
        self.cpus[cpu.index()]
            .wakelist
            .iter()
            .any(|&(_, _, sent)| sent <= at_ns)
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv(mut h: u64, v: u64) -> u64 {
    for b in v.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The most zero-time actions a task may take in a row before the run is stopped (a program
/// that never blocks nor consumes time would otherwise hang the simulation).
const MAX_ZERO_TIME_ACTIONS: u32 = 100_000;

/// A simulation in progress.
#[derive(Debug)]
pub struct Sim<B: Balancer> {
    cfg: SimConfig,
    balancer: B,
    now: u64,
    end_ns: u64,
    tick_nsec: u64,
    queue: EventQueue<Ev>,
    rqs: Vec<Rq>,
    tasks: Tasks,
    cpus: Vec<CpuState>,
    runs: Vec<TaskRun>,
    run_of: SecondaryMap<TaskId, u32>,
    /// Workload TaskRef index -> run index.
    by_ref: Vec<u32>,
    /// Workload tasks that have exited (so that the end-of-workload test is O(1) per event).
    workload_exited: usize,
    /// The scheduler trace, when [`Sim::with_trace`] asked for one; pid = run index + 1.
    trace: Option<crate::trace::Trace>,
    sync: SyncState,
    obs: RunObservations,
    streams: SeedStreams,
    bg_rng: Pcg64Mcg,
    latency: Samples,
    iwo_ns: u64,
    iwo_active: bool,
    events: u64,
    hash: u64,
    error: Option<SimError>,
    checker: check::Checker,
    /// The idle-while-overloaded summary, kept up to date per CPU (see [`IwoSummary`]).
    iwo: IwoSummary,
}

/// Which CPUs are idle (no current task) and which have a task waiting (`nr_running` above
/// the running one), refreshed after each event for the CPUs whose runqueue the event may
/// have changed ([`IwoSummary::mark`]), so that the idle-while-overloaded test costs O(1)
/// per event when no CPU is idle or none has a waiting task. Under `SimConfig::check` the
/// summary is compared with a full scan after every event.
#[derive(Clone, Debug)]
struct IwoSummary {
    idle: Cpumask,
    waiting: Cpumask,
    nr_idle: usize,
    nr_waiting: usize,
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
}

impl IwoSummary {
    /// Every CPU is dirty at first.
    fn new(nr_cpus: usize) -> IwoSummary {
        IwoSummary {
            idle: Cpumask::new(nr_cpus),
            waiting: Cpumask::new(nr_cpus),
            nr_idle: 0,
            nr_waiting: 0,
            dirty: (0..nr_cpus as u32).collect(),
            is_dirty: vec![true; nr_cpus],
        }
    }

    /// `cpu`'s runqueue may have changed.
    fn mark(&mut self, cpu: CpuId) {
        let d = &mut self.is_dirty[cpu.index()];
        if !*d {
            *d = true;
            self.dirty.push(cpu.0);
        }
    }

    /// `cpu`'s status as its runqueue shows it.
    fn status(rq: &Rq) -> (bool, bool) {
        let idle = rq.curr.is_none();
        (idle, rq.nr_running > u32::from(!idle))
    }

    /// Re-reads the dirty CPUs.
    fn refresh(&mut self, rqs: &[Rq]) {
        while let Some(c) = self.dirty.pop() {
            let cpu = CpuId(c);
            self.is_dirty[cpu.index()] = false;
            let (idle, waiting) = Self::status(&rqs[cpu.index()]);
            if idle != self.idle.test(cpu) {
                if idle {
                    self.idle.set(cpu);
                    self.nr_idle += 1;
                } else {
                    self.idle.clear(cpu);
                    self.nr_idle -= 1;
                }
            }
            if waiting != self.waiting.test(cpu) {
                if waiting {
                    self.waiting.set(cpu);
                    self.nr_waiting += 1;
                } else {
                    self.waiting.clear(cpu);
                    self.nr_waiting -= 1;
                }
            }
        }
    }

    /// The first CPU whose summary disagrees with its runqueue.
    fn stale(&self, rqs: &[Rq]) -> Option<usize> {
        rqs.iter().enumerate().find_map(|(c, rq)| {
            let (idle, waiting) = Self::status(rq);
            let cpu = CpuId(c as u32);
            (idle != self.idle.test(cpu) || waiting != self.waiting.test(cpu)).then_some(c)
        })
    }
}

impl<B: Balancer> Sim<B> {
    /// Sets up a run: runqueues, background threads, the workload's tasks' start events and
    /// the first ticks.
    pub fn new(cfg: SimConfig, mut balancer: B) -> Result<Sim<B>, SimError> {
        let topo = cfg.topology.clone();
        let machine = topo.machine();
        let nr_cpus = machine.nr_cpus();
        if let Some(cpu) = cfg.workload.max_cpu()
            && cpu as usize >= nr_cpus
        {
            return Err(SimError::NoSuchCpu {
                cpu,
                last: nr_cpus as u32 - 1,
            });
        }
        cfg.workload
            .validate()
            .map_err(|e| SimError::Workload(e.to_string()))?;
        let params = SchedParams::new(cfg.features, &cfg.tunables);
        let asym =
            (0..nr_cpus).any(|c| machine.capacity(CpuId(c as u32)) != machine.capacity(CpuId(0)));
        let streams = SeedStreams::new(cfg.seed);
        let mut phase_rng = streams.rng(Stream::TickPhase, 0);
        let tick_nsec = cfg.tunables.tick_nsec();
        let mut rqs = Vec::with_capacity(nr_cpus);
        let mut cpus = Vec::with_capacity(nr_cpus);
        for c in 0..nr_cpus {
            let cpu = CpuId(c as u32);
            let cap = u64::from(machine.capacity(cpu));
            let mut rq = Rq::new(cpu, cap, params);
            rq.asym_cpucap_active = asym;
            rqs.push(rq);
            let jitter = cfg.engine.tick_jitter_ns.min(tick_nsec);
            let tick_phase_ns = if jitter == 0 {
                0
            } else {
                below(&mut phase_rng, jitter)
            };
            cpus.push(CpuState {
                seg_start: 0,
                busy_until: 0,
                irq_off_until: 0,
                generation: 0,
                tick_stopped: true,
                tick_phase_ns,
                tick_queued: false,
                wakelist: Vec::new(),
                ipi_queued: false,
                resched_queued: false,
                capacity: cap,
                kworker: None,
                newidle: None,
                yielded: false,
                acct_last: 0,
                busy_ns: 0,
                idle_ns: 0,
                nr_running_ns: 0,
                stat: CpuSchedstat::default(),
            });
        }
        let end_ns = cfg
            .workload
            .duration_ns
            .map_or(cfg.duration_ns, |d| d.min(cfg.duration_ns));
        let sync = cfg.workload.new_sync_state();
        let bg_rng = streams.rng(Stream::Background, 0);
        let checker = check::Checker::new(cfg.check, &mut balancer);
        let mut sim = Sim {
            balancer,
            now: 0,
            end_ns,
            tick_nsec,
            queue: EventQueue::default(),
            rqs,
            tasks: Tasks::with_key(),
            cpus,
            runs: Vec::new(),
            run_of: SecondaryMap::new(),
            by_ref: Vec::new(),
            workload_exited: 0,
            trace: None,
            sync,
            obs: RunObservations::default(),
            streams,
            bg_rng,
            latency: Samples::default(),
            iwo_ns: 0,
            iwo_active: false,
            events: 0,
            hash: FNV_OFFSET,
            error: None,
            checker,
            iwo: IwoSummary::new(nr_cpus),
            cfg,
        };
        // Every CPU starts idle with its tick stopped (the idle loop's
        // tick_nohz_idle_stop_tick() -> nohz_balance_enter_idle()); a tick starts when work
        // arrives.
        for c in 0..nr_cpus {
            let cpu = CpuId(c as u32);
            sim.ctx_call(|b, ctx| b.nohz_enter_idle(ctx, cpu));
        }
        for (i, spec) in sim.cfg.workload.tasks.iter().enumerate() {
            sim.queue.push_at(spec.start_ns, Ev::Start(i as u32));
        }
        if sim.cfg.engine.background_wakeups_hz > 0 {
            for c in 0..nr_cpus {
                let run = sim.create_kworker(CpuId(c as u32));
                sim.cpus[c].kworker = Some(run);
                let t = sim.next_background_delay();
                sim.queue.push_at(t, Ev::Background { cpu: c as u32 });
            }
        }
        Ok(sim)
    }

    fn next_background_delay(&mut self) -> u64 {
        // Exponential inter-arrival times with mean 1/hz, from a uniform draw:
        // -ln(u) * mean, with u in (0, 1].
        let mean = 1_000_000_000 / self.cfg.engine.background_wakeups_hz.max(1);
        let u = (below(&mut self.bg_rng, 1 << 53) + 1) as f64 / (1u64 << 53) as f64;
        self.now + ((-u.ln()) * mean as f64) as u64
    }

    fn create_kworker(&mut self, cpu: CpuId) -> u32 {
        let nr = self.rqs.len();
        let mask = Cpumask::from_cpus(nr, [cpu]);
        let mut task = Task::new(
            format!("kworker/{}", cpu.0),
            RqPolicy::Normal,
            0,
            mask,
            cpu,
            self.cfg.tunables.base_slice_ns,
        );
        task.max_allowed_capacity = self.cpus[cpu.index()].capacity;
        task.state = TaskState::Sleeping;
        let id = self.tasks.insert(task);
        self.add_run(id, Kind::Kworker { ran: true })
    }

    fn add_run(&mut self, id: TaskId, kind: Kind) -> u32 {
        let idx = self.runs.len() as u32;
        self.runs.push(TaskRun {
            id,
            kind,
            cur: Cur::Idle,
            block_pending: false,
            exit_pending: false,
            timer_gen: 0,
            wake_ns: None,
            on_cpu_since: 0,
            runtime_ns: 0,
            work_units: 0,
            max_wait_ns: 0,
        });
        self.run_of.insert(id, idx);
        if let Some(tr) = &mut self.trace {
            let t = &self.tasks[id];
            tr.add_task(&t.name, t.nice);
        }
        idx
    }

    /// Records the scheduler trace of the run ([`crate::trace`]) into
    /// [`RunResult::trace`]. Tracing changes no decision.
    #[must_use]
    pub fn with_trace(mut self) -> Self {
        let mut tr = crate::trace::Trace::new(self.rqs.len() as u32);
        for r in &self.runs {
            let t = &self.tasks[r.id];
            tr.add_task(&t.name, t.nice);
        }
        self.trace = Some(tr);
        if let Some(lt) = self.balancer.trace() {
            lt.enabled = true;
        }
        self
    }

    /// The trace pid of task `p` (0 for none: the idle task).
    fn pid(&self, p: Option<TaskId>) -> u32 {
        p.map_or(0, |p| self.run_of[p] + 1)
    }

    /// Records `event`, fired on `cpu` at `time_ns`, when tracing.
    fn trace_at(&mut self, time_ns: u64, cpu: CpuId, event: crate::trace::TraceEvent) {
        if self.trace.is_none() {
            return;
        }
        let common = self.pid(self.rqs[cpu.index()].curr);
        if let Some(tr) = &mut self.trace {
            tr.push(time_ns, cpu.0, common, event);
        }
    }

    /// Records an event about task `p` (built from its pid), fired on `cpu` at `time_ns`,
    /// when tracing.
    fn trace_task(
        &mut self,
        time_ns: u64,
        cpu: CpuId,
        p: TaskId,
        event: impl FnOnce(u32) -> crate::trace::TraceEvent,
    ) {
        if self.trace.is_some() {
            let pid = self.pid(Some(p));
            self.trace_at(time_ns, cpu, event(pid));
        }
    }

    /// Records `sched_migrate_task` of `p`, fired on `cpu`.
    fn trace_migrate(&mut self, time_ns: u64, cpu: CpuId, p: TaskId, orig: CpuId, dest: CpuId) {
        self.trace_task(time_ns, cpu, p, |pid| crate::trace::TraceEvent::Migrate {
            pid,
            orig_cpu: orig.0,
            dest_cpu: dest.0,
        });
    }

    /// Records `sched_pelt_cfs`: `cpu`'s root cfs_rq signals as they stand.
    fn trace_pelt(&mut self, cpu: CpuId) {
        if self.trace.is_some() {
            let a = &self.rqs[cpu.index()].cfs.avg.avg;
            let ev = crate::trace::TraceEvent::PeltCfs {
                load: a.load_avg,
                runnable: a.runnable_avg,
                util: a.util_avg,
                update_time: a.last_update_time,
            };
            let now = self.now;
            self.trace_at(now, cpu, ev);
        }
    }

    /// Records `sched_waking` of `p` for `target`, fired on the waker's CPU.
    fn trace_waking(&mut self, this_cpu: CpuId, p: TaskId, target: CpuId) {
        let now = self.now;
        self.trace_task(now, this_cpu, p, |pid| crate::trace::TraceEvent::Waking {
            pid,
            target_cpu: target.0,
        });
    }

    /// Moves the balancer's trace records into the run's trace.
    fn drain_balancer_trace(&mut self) {
        let Some(lt) = self.balancer.trace() else {
            return;
        };
        if lt.events.is_empty() {
            return;
        }
        let events = std::mem::take(&mut lt.events);
        for ev in events {
            match ev {
                lbsim_balance::trace::LbEvent::Migrate {
                    time_ns,
                    on_cpu,
                    task,
                    orig_cpu,
                    dest_cpu,
                } => self.trace_migrate(time_ns, on_cpu, task, orig_cpu, dest_cpu),
                lbsim_balance::trace::LbEvent::Balance(rec) => {
                    self.trace_at(
                        rec.time_ns,
                        rec.cpu,
                        crate::trace::TraceEvent::LoadBalance(rec),
                    );
                }
            }
        }
    }

    /// Runs to the end and returns what was measured.
    pub fn run(mut self) -> Result<RunResult, SimError> {
        while let Some(t) = self.queue.peek_time() {
            if t.as_ns() > self.end_ns {
                break;
            }
            let (t, ev) = self.queue.pop().expect("peeked");
            let t = t.as_ns();
            self.check_clock(t)?;
            if self.iwo_active {
                self.iwo_ns += t - self.now;
            }
            self.now = t;
            self.events += 1;
            let (k, v) = ev.hash_key();
            self.hash = fnv(fnv(fnv(self.hash, t), u64::from(k)), v);
            let touched = ev.cpus();
            self.dispatch(ev);
            for c in touched.into_iter().flatten() {
                self.iwo.mark(CpuId(c));
            }
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            if self.cfg.check {
                self.check_invariants()?;
            }
            self.check_event()?;
            self.iwo_active = self.idle_while_overloaded();
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            if self.all_workload_tasks_exited() {
                break;
            }
        }
        let end = if self.all_workload_tasks_exited() {
            self.now
        } else {
            self.end_ns.max(self.now)
        };
        if self.iwo_active {
            self.iwo_ns += end - self.now;
        }
        self.now = end;
        Ok(self.finish())
    }

    fn all_workload_tasks_exited(&self) -> bool {
        !self.by_ref.is_empty()
            && self.by_ref.len() >= self.cfg.workload.tasks.len()
            && self.workload_exited == self.by_ref.len()
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Start(i) => self.start_task(i),
            Ev::SegEnd { cpu, generation } => {
                if self.cpus[cpu as usize].generation == generation {
                    self.segment_end(CpuId(cpu));
                }
            }
            Ev::Timer { run, generation } => self.timer(run, generation),
            Ev::Tick { cpu } => self.tick(CpuId(cpu)),
            Ev::Ipi { cpu } => self.ipi(CpuId(cpu)),
            Ev::Resched { cpu } => {
                self.cpus[cpu as usize].resched_queued = false;
                self.schedule(CpuId(cpu));
            }
            Ev::Stopper(req) => self.stopper(req),
            Ev::Kick(kick) => self.kick(kick),
            Ev::Background { cpu } => self.background(CpuId(cpu)),
            Ev::NewidleStep { cpu } => self.newidle_step(CpuId(cpu)),
            Ev::NewidleDone { cpu } => self.newidle_done(CpuId(cpu)),
        }
    }

    // ----------------------------------------------------------------------------------
    // Accounting

    /// Brings `cpu`'s accounting up to `now` before its runqueue changes (which marks it for
    /// the idle-while-overloaded summary).
    fn account(&mut self, cpu: CpuId) {
        self.iwo.mark(cpu);
        self.account_time(cpu);
    }

    fn account_time(&mut self, cpu: CpuId) {
        let now = self.now;
        let c = &mut self.cpus[cpu.index()];
        let dt = now.saturating_sub(c.acct_last);
        if dt == 0 {
            return;
        }
        let rq = &self.rqs[cpu.index()];
        if rq.curr.is_some() {
            c.busy_ns += dt;
        } else {
            c.idle_ns += dt;
        }
        c.nr_running_ns += u128::from(rq.nr_running) * u128::from(dt);
        c.acct_last = now;
    }

    /// Adds `p`'s time on its CPU since it was last accounted to its runtime.
    fn account_runtime(&mut self, p: TaskId) {
        let now = self.now;
        let r = &mut self.runs[self.run_of[p] as usize];
        r.runtime_ns += now.saturating_sub(r.on_cpu_since);
        r.on_cpu_since = now;
    }

    /// Brings every CPU's accounting up to `now` before a balancing pass; the CPUs the pass
    /// changes are marked from its migrations ([`Sim::apply_outcome`]).
    fn account_all(&mut self) {
        for c in 0..self.cpus.len() {
            self.account_time(CpuId(c as u32));
        }
    }

    /// Whether some CPU is idle while another has a waiting task allowed to run on it.
    ///
    /// The summary of idle and waiting CPUs is refreshed for the CPUs the event touched; a
    /// waiting task allowed everywhere can run on any idle CPU, one with a restricted
    /// affinity needs an idle CPU in it. Under `SimConfig::check` the summary is compared
    /// with every runqueue.
    fn idle_while_overloaded(&mut self) -> bool {
        self.iwo.refresh(&self.rqs);
        if self.cfg.check
            && let Some(c) = self.iwo.stale(&self.rqs)
        {
            self.error.get_or_insert(SimError::Invariant {
                time_ns: self.now,
                cpu: c as u32,
                task: String::new(),
                detail: "the idle-while-overloaded summary missed a change of this CPU's \
                         runqueue"
                    .to_owned(),
            });
        }
        if self.iwo.nr_idle == 0 || self.iwo.nr_waiting == 0 {
            return false;
        }
        let nr = self.rqs.len();
        for c in self.iwo.waiting.iter() {
            let rq = &self.rqs[c.index()];
            for p in rq.cfs.cfs_tasks() {
                let t = &self.tasks[p];
                if Some(p) == rq.curr || t.se.sched_delayed || t.state != TaskState::Queued {
                    continue;
                }
                if t.nr_cpus_allowed as usize == nr || t.cpus_mask.intersects(&self.iwo.idle) {
                    return true;
                }
            }
        }
        false
    }

    // ----------------------------------------------------------------------------------
    // Helpers around the balancer

    fn ctx_call<R>(&mut self, f: impl FnOnce(&mut B, &mut BalanceCtx<'_>) -> R) -> R {
        let Sim {
            cfg,
            balancer,
            now,
            tick_nsec,
            rqs,
            tasks,
            cpus,
            ..
        } = self;
        let pending = Pending { cpus };
        let mut ctx = BalanceCtx {
            now_ns: *now,
            jiffies: *now / *tick_nsec,
            hz: cfg.tunables.hz,
            topo: &cfg.topology,
            rqs,
            tasks,
            features: cfg.features,
            tunables: &cfg.tunables,
            cost: &cfg.cost,
            pending: &pending,
        };
        let r = f(balancer, &mut ctx);
        if self.trace.is_some() {
            self.drain_balancer_trace();
        }
        r
    }

    /// Applies what a balancing pass decided, beyond its runqueue changes: reschedules on
    /// the CPUs that received tasks, stoppers and kicks.
    fn apply_outcome(&mut self, from: CpuId, out: &BalanceOutcome) {
        for m in &out.migrations {
            self.iwo.mark(m.src);
            self.iwo.mark(m.dst);
            if self.cfg.check {
                let t = &self.tasks[m.task];
                if !t.cpus_mask.test(m.dst) {
                    self.error.get_or_insert(SimError::Invariant {
                        time_ns: self.now,
                        cpu: m.dst.0,
                        task: format!(" task {}", t.name),
                        detail: format!(
                            "balancer migrated the task from cpu {} to cpu {} outside its affinity {}",
                            m.src.0,
                            m.dst.0,
                            t.cpus_mask.to_cpulist()
                        ),
                    });
                }
            }
            if self.rqs[m.dst.index()].need_resched() {
                self.resched_cpu(m.dst, from);
            }
        }
        let ipi = self.cfg.cost.ipi_ns;
        for s in &out.stoppers {
            self.queue.push_at(self.now + ipi, Ev::Stopper(*s));
        }
        for k in &out.kicks {
            self.queue.push_at(self.now + ipi, Ev::Kick(*k));
        }
    }

    /// Charges `ns` of scheduler overhead to `cpu` (its current task makes no progress).
    fn charge(&mut self, cpu: CpuId, ns: u64) {
        if ns == 0 {
            return;
        }
        self.settle(cpu);
        let now = self.now;
        let c = &mut self.cpus[cpu.index()];
        c.busy_until = c.busy_until.max(now) + ns;
        if self.rqs[cpu.index()].curr.is_some() {
            c.seg_start = c.seg_start.max(c.busy_until);
            self.arm_segment(cpu);
        }
    }

    /// `resched_curr()` of a remote or local CPU: local takes effect now, remote after an IPI.
    fn resched_cpu(&mut self, cpu: CpuId, from: CpuId) {
        let c = &mut self.cpus[cpu.index()];
        if c.resched_queued {
            return;
        }
        c.resched_queued = true;
        let at = if cpu == from {
            self.now
        } else {
            self.now + self.cfg.cost.ipi_ns
        };
        self.queue.push_at(at, Ev::Resched { cpu: cpu.0 });
    }

    // ----------------------------------------------------------------------------------
    // Progress of the running task

    /// Accounts the current task's progress up to now.
    fn settle(&mut self, cpu: CpuId) {
        let now = self.now;
        let Some(p) = self.rqs[cpu.index()].curr else {
            return;
        };
        if self.cpus[cpu.index()].newidle.is_some() {
            return;
        }
        let c = &mut self.cpus[cpu.index()];
        let from = c.seg_start;
        if now <= from {
            return;
        }
        c.seg_start = now;
        let cap = c.capacity;
        let r = &mut self.runs[self.run_of[p] as usize];
        if let Cur::Run { rem_units } = &mut r.cur {
            let done = (now - from).saturating_mul(cap).min(*rem_units);
            *rem_units -= done;
            r.work_units += u128::from(done);
        }
    }

    /// Queues the segment end of `cpu`'s current task (invalidating any earlier one).
    fn arm_segment(&mut self, cpu: CpuId) {
        let c = &mut self.cpus[cpu.index()];
        c.generation += 1;
        if c.newidle.is_some() {
            // In __schedule()'s newly idle balance `curr` is the task leaving the CPU: it
            // makes no progress and has no action to finish.
            return;
        }
        let Some(p) = self.rqs[cpu.index()].curr else {
            return;
        };
        let start = c.seg_start.max(self.now);
        let r = &self.runs[self.run_of[p] as usize];
        let at = match r.cur {
            Cur::Idle | Cur::Blocked(_) => start,
            Cur::Run { rem_units } => start + rem_units.div_ceil(c.capacity),
            Cur::RunWall { end_ns } => end_ns.max(start),
        };
        if r.block_pending || r.exit_pending {
            return;
        }
        let generation = c.generation;
        self.queue.push_at(
            at,
            Ev::SegEnd {
                cpu: cpu.0,
                generation,
            },
        );
    }

    fn segment_end(&mut self, cpu: CpuId) {
        self.settle(cpu);
        let Some(p) = self.rqs[cpu.index()].curr else {
            return;
        };
        let ri = self.run_of[p] as usize;
        let done = match self.runs[ri].cur {
            Cur::Idle | Cur::Blocked(_) => true,
            Cur::Run { rem_units } => rem_units == 0,
            Cur::RunWall { end_ns } => self.now >= end_ns,
        };
        if !done {
            // Rounding left a sliver: arm again.
            self.arm_segment(cpu);
            return;
        }
        if !matches!(self.runs[ri].cur, Cur::Blocked(_)) {
            self.runs[ri].cur = Cur::Idle;
        }
        self.advance(cpu, ri);
    }

    /// The running task `ri` on `cpu` asks for actions until one takes time or blocks.
    fn advance(&mut self, cpu: CpuId, ri: usize) {
        let mut steps = 0u32;
        loop {
            steps += 1;
            if steps > MAX_ZERO_TIME_ACTIONS {
                self.error.get_or_insert(SimError::Workload(format!(
                    "task {} took {MAX_ZERO_TIME_ACTIONS} actions without consuming time",
                    self.tasks[self.runs[ri].id].name
                )));
                return;
            }
            let action = match std::mem::replace(&mut self.runs[ri].cur, Cur::Idle) {
                Cur::Blocked(a) => a,
                _ => match &mut self.runs[ri].kind {
                    Kind::Workload { program, rng, .. } => {
                        program.next_action(self.now, rng, &mut self.sync)
                    }
                    Kind::Kworker { ran } => {
                        // A background kernel thread runs once per wake-up, then sleeps
                        // until the background source wakes it again.
                        if *ran {
                            self.runs[ri].block_pending = true;
                            self.resched_cpu(cpu, cpu);
                            self.cpus[cpu.index()].generation += 1;
                            return;
                        }
                        *ran = true;
                        Action::Run {
                            work_ns: self.cfg.engine.background_run_ns,
                        }
                    }
                },
            };
            match action {
                Action::Run { work_ns } => {
                    self.runs[ri].cur = Cur::Run {
                        rem_units: work_ns.saturating_mul(1024),
                    };
                    self.arm_segment(cpu);
                    return;
                }
                Action::RunWall { ns } => {
                    self.runs[ri].cur = Cur::RunWall {
                        end_ns: self.now + ns,
                    };
                    self.arm_segment(cpu);
                    return;
                }
                Action::Sleep { ns } => {
                    self.sleep_until(cpu, ri, self.now + ns);
                    return;
                }
                Action::SleepUntil { abs_ns } => {
                    if abs_ns <= self.now {
                        continue;
                    }
                    self.sleep_until(cpu, ri, abs_ns);
                    return;
                }
                Action::Yield => {
                    self.cpus[cpu.index()].stat.yld_count += 1;
                    self.cpus[cpu.index()].yielded = true;
                    let now = self.now;
                    self.rqs[cpu.index()].yield_task_fair(&mut self.tasks, now);
                    self.resched_cpu(cpu, cpu);
                    self.cpus[cpu.index()].generation += 1;
                    return;
                }
                Action::Fork(t) => {
                    let wref = TaskRef(self.obs.tasks.len() as u32);
                    match self.cfg.workload.fork_task(t, &mut self.sync, wref) {
                        Ok(spec) => self.create_workload_task(spec, cpu),
                        Err(e) => {
                            self.error.get_or_insert(SimError::Workload(e.to_string()));
                            return;
                        }
                    }
                }
                Action::Probe { tag, value } => {
                    if let Kind::Workload { wref, .. } = self.runs[ri].kind {
                        self.obs.probes.push(ProbeRecord {
                            task: wref,
                            time_ns: self.now,
                            tag,
                            value,
                        });
                    }
                }
                Action::SetAffinity(set) => {
                    let nr = self.rqs.len();
                    let mask = match set {
                        None => Cpumask::full(nr),
                        Some(id) => Cpumask::from_cpus(
                            nr,
                            self.cfg.workload.cpuset(id).iter().map(|&c| CpuId(c)),
                        ),
                    };
                    self.set_affinity(ri, mask);
                    if !self.tasks[self.runs[ri].id].cpus_mask.test(cpu) {
                        // The task must leave this CPU: it blocks here and is woken at once
                        // on an allowed CPU (the kernel's migration stopper does the same
                        // move through the stopper thread).
                        self.runs[ri].block_pending = true;
                        self.resched_cpu(cpu, cpu);
                        let generation = self.runs[ri].timer_gen + 1;
                        self.runs[ri].timer_gen = generation;
                        self.queue.push_at(
                            self.now,
                            Ev::Timer {
                                run: ri as u32,
                                generation,
                            },
                        );
                        self.cpus[cpu.index()].generation += 1;
                        return;
                    }
                }
                Action::SetSched(_) => {
                    self.error.get_or_insert(SimError::Workload(
                        "sched_setattr/setpriority while running is not modelled (the runqueue model does not reweight a task)".to_owned(),
                    ));
                    return;
                }
                Action::Exit => {
                    self.runs[ri].exit_pending = true;
                    self.resched_cpu(cpu, cpu);
                    self.cpus[cpu.index()].generation += 1;
                    return;
                }
                a if a.is_sync() => {
                    let Kind::Workload { wref, .. } = self.runs[ri].kind else {
                        unreachable!("kernel threads take no sync action")
                    };
                    let mut wakes = Wakes::new();
                    let outcome = self.sync.apply(wref, &a, self.now, &mut wakes);
                    for w in wakes {
                        let target = self.by_ref[w.task.index()];
                        self.ttwu(target as usize, cpu, w.sync);
                    }
                    if outcome == Outcome::Blocked {
                        self.runs[ri].cur = Cur::Blocked(a);
                        self.runs[ri].block_pending = true;
                        self.resched_cpu(cpu, cpu);
                        self.cpus[cpu.index()].generation += 1;
                        return;
                    }
                }
                other => {
                    self.error.get_or_insert(SimError::Workload(format!(
                        "action {other:?} is not modelled by the engine"
                    )));
                    return;
                }
            }
        }
    }

    fn sleep_until(&mut self, cpu: CpuId, ri: usize, at: u64) {
        let r = &mut self.runs[ri];
        r.block_pending = true;
        r.timer_gen += 1;
        let generation = r.timer_gen;
        self.queue.push_at(
            at,
            Ev::Timer {
                run: ri as u32,
                generation,
            },
        );
        self.resched_cpu(cpu, cpu);
        self.cpus[cpu.index()].generation += 1;
    }

    fn set_affinity(&mut self, ri: usize, mask: Cpumask) {
        let id = self.runs[ri].id;
        let machine = self.cfg.topology.machine();
        let max_cap = mask
            .iter()
            .map(|c| u64::from(machine.capacity(c)))
            .max()
            .unwrap_or(1024);
        let t = &mut self.tasks[id];
        t.nr_cpus_allowed = mask.weight() as u32;
        t.cpus_mask = mask;
        t.max_allowed_capacity = max_cap;
    }

    // ----------------------------------------------------------------------------------
    // Creation and wake-up

    fn start_task(&mut self, i: u32) {
        let spec = self.cfg.workload.tasks[i as usize].clone();
        // Top-level tasks are forked by the launcher (rt-app's or the benchmark's main thread),
        // which lbsim places on CPU 0, or on the task's first allowed CPU.
        let nr = self.rqs.len();
        let mask = match spec.affinity {
            None => Cpumask::full(nr),
            Some(id) => {
                Cpumask::from_cpus(nr, self.cfg.workload.cpuset(id).iter().map(|&c| CpuId(c)))
            }
        };
        let parent = if mask.test(CpuId(0)) {
            CpuId(0)
        } else {
            mask.first().unwrap_or(CpuId(0))
        };
        self.create_workload_task(spec, parent);
    }

    /// `fork()` + `wake_up_new_task()` from `parent_cpu`.
    fn create_workload_task(&mut self, spec: lbsim_workload::TaskSpec, parent_cpu: CpuId) {
        let nr = self.rqs.len();
        let wref = TaskRef(self.obs.tasks.len() as u32);
        let mask = match spec.affinity {
            None => Cpumask::full(nr),
            Some(id) => {
                Cpumask::from_cpus(nr, self.cfg.workload.cpuset(id).iter().map(|&c| CpuId(c)))
            }
        };
        if mask.is_empty() {
            self.error.get_or_insert(SimError::Workload(format!(
                "task {} has an empty affinity",
                spec.name
            )));
            return;
        }
        let policy = match spec.policy {
            WlPolicy::Normal => RqPolicy::Normal,
            WlPolicy::Batch => RqPolicy::Batch,
            WlPolicy::Idle => RqPolicy::Idle,
        };
        let mut task = Task::new(
            spec.name.clone(),
            policy,
            spec.nice,
            mask.clone(),
            parent_cpu,
            self.cfg.tunables.base_slice_ns,
        );
        if let Some(slice) = spec.custom_slice_ns {
            task.se.slice = slice;
            task.se.custom_slice = true;
        }
        let id = self.tasks.insert(task);
        let program = Box::new(spec.start(wref));
        let rng = self.streams.rng(Stream::Task, u64::from(wref.0));
        let ri = self.add_run(id, Kind::Workload { wref, program, rng });
        self.set_affinity(ri as usize, mask);
        self.by_ref.push(ri);
        self.obs.tasks.push(TaskObservation::new(&spec, self.now));
        // fork: sched_fork() / task_fork_fair() on the parent's CPU.
        let now = self.now;
        self.rqs[parent_cpu.index()].task_fork_fair(&mut self.tasks, id, now);
        // wake_up_new_task(): select_task_rq(WF_FORK) from the parent's CPU.
        let placement = self
            .ctx_call(|b, ctx| b.select_task_rq(ctx, id, parent_cpu, parent_cpu, WakeFlags::FORK));
        let cost = self.cfg.cost.charge(&placement.work);
        self.charge(parent_cpu, cost);
        let cpu = self.checked_placement(id, placement.cpu);
        self.trace_task(now, parent_cpu, id, |pid| {
            crate::trace::TraceEvent::WakeupNew {
                pid,
                target_cpu: cpu.0,
            }
        });
        self.account(cpu);
        self.tasks[id].cpu = cpu;
        self.tasks[id].wake_cpu = cpu;
        // A new task's first run is not a wake-up: no latency sample (perf sched counts
        // sched_wakeup_new apart from sched_wakeup).
        self.rqs[cpu.index()].wake_up_new_task(&mut self.tasks, id, now);
        self.after_enqueue(cpu, parent_cpu);
    }

    fn checked_placement(&mut self, p: TaskId, cpu: CpuId) -> CpuId {
        let t = &self.tasks[p];
        if cpu.index() >= self.rqs.len() || !t.cpus_mask.test(cpu) {
            self.error.get_or_insert(SimError::Invariant {
                time_ns: self.now,
                cpu: cpu.0,
                task: format!(" task {}", t.name),
                detail: format!(
                    "select_task_rq chose cpu {} outside the task's affinity {}",
                    cpu.0,
                    t.cpus_mask.to_cpulist()
                ),
            });
            return t.cpus_mask.first().unwrap_or(CpuId(0));
        }
        cpu
    }

    /// After a task was queued on `cpu` by an action on `from`: restart the tick of an idle
    /// CPU, and reschedule if the enqueue asked for it.
    fn after_enqueue(&mut self, cpu: CpuId, from: CpuId) {
        self.restart_tick(cpu);
        if self.rqs[cpu.index()].need_resched() || self.rqs[cpu.index()].curr.is_none() {
            self.resched_cpu(cpu, from);
        }
    }

    fn timer(&mut self, run: u32, generation: u64) {
        let ri = run as usize;
        if self.runs[ri].timer_gen != generation {
            return;
        }
        let id = self.runs[ri].id;
        // The hrtimer fires on the CPU the task slept on; it waits for interrupts to be on.
        let cpu = self.tasks[id].cpu;
        if let Some(at) = self.irq_deferral(cpu) {
            self.queue.push_at(at, Ev::Timer { run, generation });
            return;
        }
        self.ttwu(ri, cpu, false);
    }

    fn background(&mut self, cpu: CpuId) {
        let next = self.next_background_delay();
        self.queue.push_at(next, Ev::Background { cpu: cpu.0 });
        let Some(ri) = self.cpus[cpu.index()].kworker else {
            return;
        };
        let id = self.runs[ri as usize].id;
        if self.tasks[id].state != TaskState::Sleeping || self.runs[ri as usize].block_pending {
            return;
        }
        if let Kind::Kworker { ran } = &mut self.runs[ri as usize].kind {
            *ran = false;
        }
        self.ttwu(ri as usize, cpu, false);
    }

    /// `try_to_wake_up()` of task `ri`, run on `this_cpu`.
    ///
    /// Follows core.c: try_to_wake_up() (v6.12): `ttwu_runnable()` if the task is still queued;
    /// else `select_task_rq()`, `set_task_cpu()` if the CPU changes (`WF_MIGRATED`), and
    /// `ttwu_queue()` (the wake list when `ttwu_queue_cond()` says so).
    fn ttwu(&mut self, ri: usize, this_cpu: CpuId, sync: bool) {
        let id = self.runs[ri].id;
        let now = self.now;
        if self.runs[ri].block_pending {
            // Woken before it got off its CPU (`p->on_rq` still set): it keeps running.
            // Follows core.c: ttwu_runnable() for the running task.
            self.runs[ri].block_pending = false;
            self.runs[ri].timer_gen += 1;
            let cpu = self.tasks[id].cpu;
            self.trace_waking(this_cpu, id, cpu);
            if self.rqs[cpu.index()].curr == Some(id) {
                self.arm_segment(cpu);
            }
            return;
        }
        match self.tasks[id].state {
            TaskState::Sleeping => {}
            _ => return,
        }
        // Already woken onto a wake list (its task_cpu's): the kernel's task is TASK_WAKING
        // by then, so a second waker's ttwu_state_match() fails and it does nothing.
        if self.cpus[self.tasks[id].cpu.index()]
            .wakelist
            .iter()
            .any(|&(p, _, _)| p == id)
        {
            return;
        }
        self.charge(this_cpu, self.cfg.cost.wakeup_ns);
        self.cpus[this_cpu.index()].stat.ttwu_count += 1;
        let prev_cpu = self.tasks[id].cpu;
        if self.tasks[id].on_rq_queued() {
            // Delayed dequeue: still queued on its old CPU.
            self.account(prev_cpu);
            let wf = if sync {
                WakeFlags::TTWU | WakeFlags::SYNC
            } else {
                WakeFlags::TTWU
            };
            self.trace_waking(this_cpu, id, prev_cpu);
            self.rqs[prev_cpu.index()].ttwu_runnable(&mut self.tasks, id, wf, now);
            self.runs[ri].wake_ns = Some(now);
            self.after_enqueue(prev_cpu, this_cpu);
            return;
        }
        if self.rqs[prev_cpu.index()].curr == Some(id) {
            // Still its CPU's `curr` (`p->on_cpu`): that CPU is in __schedule(), balancing
            // newly idle. Follows core.c: try_to_wake_up(): `ttwu_queue_wakelist(p,
            // task_cpu(p), wake_flags | WF_ON_CPU)` without selecting a CPU.
            self.runs[ri].wake_ns = Some(now);
            self.trace_waking(this_cpu, id, prev_cpu);
            self.queue_wakelist(prev_cpu, id, false);
            return;
        }
        let mut wf = WakeFlags::TTWU;
        if sync {
            wf |= WakeFlags::SYNC;
        }
        let wake_cpu = self.tasks[id].wake_cpu;
        let placement = self.ctx_call(|b, ctx| b.select_task_rq(ctx, id, wake_cpu, this_cpu, wf));
        let work = self.cfg.cost.charge(&placement.work);
        self.charge(this_cpu, work);
        let cpu = self.checked_placement(id, placement.cpu);
        if cpu == this_cpu {
            self.cpus[this_cpu.index()].stat.ttwu_local += 1;
        }
        let migrated = cpu != prev_cpu;
        // sched_waking fires before select_task_rq(): its target_cpu is task_cpu(p).
        self.trace_waking(this_cpu, id, prev_cpu);
        if migrated {
            self.trace_migrate(now, this_cpu, id, prev_cpu, cpu);
            wf |= WakeFlags::MIGRATED;
            set_task_cpu(
                &mut self.rqs[prev_cpu.index()],
                &mut self.tasks,
                id,
                cpu,
                now,
            );
        }
        self.tasks[id].wake_cpu = cpu;
        self.runs[ri].wake_ns = Some(now);
        // ttwu_queue_cond() (v6.12): a remote CPU that does not share the waker's cache, or
        // that has nothing running, gets the wake-up through its wake list.
        let queue = self.cfg.features.enabled(CoreFeat::TtwuQueue)
            && cpu != this_cpu
            && (!self.cfg.topology.cpus_share_cache(this_cpu, cpu)
                || self.rqs[cpu.index()].nr_running == 0);
        if queue {
            self.queue_wakelist(cpu, id, migrated);
        } else {
            self.account(cpu);
            self.rqs[cpu.index()].ttwu_do_activate(&mut self.tasks, id, wf, now);
            self.after_enqueue(cpu, this_cpu);
        }
    }

    /// When an interrupt for `cpu` can be taken, if not now: interrupts are off while a
    /// newly idle balance runs in `__schedule()` (and for the last step's cost after it).
    fn irq_deferral(&self, cpu: CpuId) -> Option<u64> {
        let c = &self.cpus[cpu.index()];
        if c.irq_off_until > self.now {
            Some(c.irq_off_until)
        } else if c.newidle.is_some() {
            // A zero-length step is due now; look again just after it.
            Some(self.now + 1)
        } else {
            None
        }
    }

    /// Follows core.c: __ttwu_queue_wakelist(): queue `p` on `cpu`'s wake list, set
    /// `rq->ttwu_pending`, send the IPI.
    fn queue_wakelist(&mut self, cpu: CpuId, p: TaskId, migrated: bool) {
        let now = self.now;
        let c = &mut self.cpus[cpu.index()];
        c.wakelist.push((p, migrated, now));
        self.rqs[cpu.index()].ttwu_pending = true;
        if !c.ipi_queued {
            c.ipi_queued = true;
            let at = now + self.cfg.cost.ipi_ns;
            self.queue.push_at(at, Ev::Ipi { cpu: cpu.0 });
        }
    }

    /// The wake-list IPI: `sched_ttwu_pending()`.
    fn ipi(&mut self, cpu: CpuId) {
        if let Some(at) = self.irq_deferral(cpu) {
            // Interrupts are off in __schedule(): the IPI is taken when it completes.
            self.queue.push_at(at, Ev::Ipi { cpu: cpu.0 });
            return;
        }
        let c = &mut self.cpus[cpu.index()];
        c.ipi_queued = false;
        let list = std::mem::take(&mut c.wakelist);
        if list.is_empty() {
            return;
        }
        self.account(cpu);
        let now = self.now;
        self.rqs[cpu.index()].sched_ttwu_pending(
            &mut self.tasks,
            list.iter().map(|&(p, migrated, _)| (p, migrated)),
            now,
        );
        self.after_enqueue(cpu, cpu);
    }

    // ----------------------------------------------------------------------------------
    // __schedule()

    /// `__schedule()` on `cpu`: put the previous task back or block it, pick the next one;
    /// when nothing is runnable, start the newly idle balance, whose steps then run as
    /// [`Ev::NewidleStep`] events in simulated time before the schedule completes
    /// ([`Sim::finish_schedule`]).
    fn schedule(&mut self, cpu: CpuId) {
        let ci = cpu.index();
        if self.cpus[ci].newidle.is_some() {
            // Already in __schedule(), balancing: it will pick when the balance is over.
            return;
        }
        let now = self.now;
        self.settle(cpu);
        self.account(cpu);
        let prev = self.rqs[ci].curr;
        let mut action = PrevAction::Preempt;
        if let Some(p) = prev {
            self.account_runtime(p);
            let r = &mut self.runs[self.run_of[p] as usize];
            if r.exit_pending {
                action = PrevAction::Exit;
            } else if r.block_pending {
                action = PrevAction::Block;
                r.block_pending = false;
            }
        }
        self.cpus[ci].stat.sched_count += 1;
        self.rqs[ci].__schedule_prev(&mut self.tasks, action, now);
        if action == PrevAction::Exit
            && let Some(p) = prev
            && matches!(
                self.runs[self.run_of[p] as usize].kind,
                Kind::Workload { .. }
            )
        {
            // The task is TASK_DEAD from here on, although its CPU may still balance before
            // switching away.
            self.workload_exited += 1;
        }
        let next = self.rqs[ci].pick_next_task_fair(&mut self.tasks);
        if next.is_some() {
            self.finish_schedule(cpu, prev, action, next);
            return;
        }
        // sched_balance_newidle(): interrupts stay off until the schedule completes; the
        // previous task is still this CPU's `curr` (`p->on_cpu`), so a wake-up of it goes
        // through this CPU's wake list.
        self.cpus[ci].generation += 1;
        self.cpus[ci].newidle = Some((prev, action));
        self.account_all();
        let step = self.ctx_call(|b, ctx| b.newidle_begin(ctx, cpu));
        self.newidle_stepped(cpu, step);
    }

    /// A step of the newly idle balance on `cpu` is due.
    fn newidle_step(&mut self, cpu: CpuId) {
        self.account_all();
        let step = self.ctx_call(|b, ctx| b.newidle_continue(ctx, cpu));
        self.newidle_stepped(cpu, step);
    }

    fn newidle_stepped(&mut self, cpu: CpuId, step: NewidleStep) {
        let ci = cpu.index();
        self.apply_outcome(cpu, &step.outcome);
        let end = self.now + step.outcome.elapsed_ns;
        let c = &mut self.cpus[ci];
        c.irq_off_until = c.irq_off_until.max(end);
        if !step.done {
            self.queue.push_at(end, Ev::NewidleStep { cpu: cpu.0 });
            return;
        }
        if end > self.now {
            // The schedule completes when the last step's work is done.
            self.queue.push_at(end, Ev::NewidleDone { cpu: cpu.0 });
        } else {
            self.newidle_done(cpu);
        }
    }

    /// The newly idle balance on `cpu` is over: pick again (it may have pulled a task) and
    /// complete the schedule.
    fn newidle_done(&mut self, cpu: CpuId) {
        let ci = cpu.index();
        let Some((prev, action)) = self.cpus[ci].newidle.take() else {
            return;
        };
        let next = if self.rqs[ci].nr_running > 0 {
            self.rqs[ci].pick_next_task_fair(&mut self.tasks)
        } else {
            None
        };
        self.finish_schedule(cpu, prev, action, next);
    }

    /// Follows core.c: context_switch() on `cpu` to `next` (`None`: the idle task), with the
    /// `sched_switch` tracepoint before it and a PELT sample after; `action` is how the
    /// previous task leaves. Returns whether the current task changed.
    fn context_switch(&mut self, cpu: CpuId, next: Option<TaskId>, action: PrevAction) -> bool {
        let ci = cpu.index();
        // A yield's switch is voluntary; the flag is spent by any switch.
        let yielded = std::mem::take(&mut self.cpus[ci].yielded);
        let curr = self.rqs[ci].curr;
        if self.trace.is_some() && curr != next {
            use crate::trace::PrevState;
            let prev_state = match (curr.is_some(), action) {
                (false, _) => PrevState::Runnable,
                (true, PrevAction::Preempt) if yielded => PrevState::Runnable,
                (true, PrevAction::Preempt) => PrevState::Preempted,
                (true, PrevAction::Block) => PrevState::Sleeping,
                (true, PrevAction::Exit) => PrevState::Dead,
            };
            let (prev_pid, next_pid) = (self.pid(curr), self.pid(next));
            let now = self.now;
            self.trace_at(
                now,
                cpu,
                crate::trace::TraceEvent::Switch {
                    prev_pid,
                    prev_state,
                    next_pid,
                },
            );
        }
        let changed = self.rqs[ci].context_switch(&mut self.tasks, next);
        if changed {
            self.trace_pelt(cpu);
        }
        changed
    }

    /// The end of `__schedule()`: switch to `next` (or idle).
    fn finish_schedule(
        &mut self,
        cpu: CpuId,
        prev: Option<TaskId>,
        action: PrevAction,
        next: Option<TaskId>,
    ) {
        let ci = cpu.index();
        let now = self.now;
        self.account(cpu);
        if next.is_none() {
            self.rqs[ci].pick_next_task_idle(&mut self.tasks);
        }
        let mut start = self.cpus[ci].busy_until.max(now);
        if let Some(n) = next
            && next != prev
            && let Some(q) = self.tasks[n].sched_info.last_queued
        {
            let wait = self.rqs[ci].rq_clock().saturating_sub(q);
            self.cpus[ci].stat.run_delay += wait;
            let r = &mut self.runs[self.run_of[n] as usize];
            r.max_wait_ns = r.max_wait_ns.max(wait);
        }
        if action == PrevAction::Exit
            && let Some(p) = prev
        {
            self.trace_task(now, cpu, p, |pid| crate::trace::TraceEvent::Exit { pid });
        }
        let changed = self.context_switch(cpu, next, action);
        if next.is_none() {
            self.cpus[ci].stat.sched_goidle += 1;
        } else if changed {
            self.cpus[ci].stat.pcount += 1;
        }
        if action == PrevAction::Exit
            && let Some(p) = prev
        {
            self.rqs[ci].task_dead_fair(&mut self.tasks, p, now);
            let r = &self.runs[self.run_of[p] as usize];
            if let Kind::Workload { wref, .. } = r.kind {
                self.obs.tasks[wref.index()].exited_ns = Some(now);
            }
        }
        if changed {
            // A switch costs the same whether the next task is a fair task or the idle task;
            // interrupts come back on only at its end (finish_task_switch()).
            start += self.cfg.cost.context_switch_ns;
        }
        let c = &mut self.cpus[ci];
        c.busy_until = start;
        c.seg_start = start;
        if next.is_none() {
            c.irq_off_until = c.irq_off_until.max(start);
        }
        match next {
            Some(n) => {
                let ri = self.run_of[n] as usize;
                if changed {
                    let r = &mut self.runs[ri];
                    r.on_cpu_since = now;
                    if let Some(w) = r.wake_ns.take() {
                        let lat = start.saturating_sub(w);
                        if let Kind::Workload { wref, .. } = r.kind {
                            self.latency.record(lat);
                            self.obs.wakeups.push(WakeupSample {
                                task: wref,
                                wake_ns: w,
                                latency_ns: lat,
                            });
                        }
                    }
                    self.ctx_call(|b, ctx| b.task_running(ctx, n, cpu));
                }
                self.restart_tick(cpu);
                self.arm_segment(cpu);
            }
            None => {
                self.cpus[ci].generation += 1;
                if !self.cpus[ci].tick_stopped {
                    // The idle loop stops the tick: tick_nohz_idle_stop_tick() ->
                    // nohz_balance_enter_idle().
                    self.cpus[ci].tick_stopped = true;
                    self.ctx_call(|b, ctx| b.nohz_enter_idle(ctx, cpu));
                }
            }
        }
        if self.rqs[ci].need_resched() || (next.is_none() && self.rqs[ci].nr_running > 0) {
            self.resched_cpu(cpu, cpu);
        }
    }

    // ----------------------------------------------------------------------------------
    // Tick, softirq, stopper, kicks

    fn restart_tick(&mut self, cpu: CpuId) {
        let c = &mut self.cpus[cpu.index()];
        if c.tick_stopped {
            c.tick_stopped = false;
        }
        if !c.tick_queued {
            c.tick_queued = true;
            // The next tick boundary of this CPU strictly after now.
            let period = self.tick_nsec;
            let phase = c.tick_phase_ns;
            let k = (self.now.saturating_sub(phase)) / period + 1;
            let at = phase + k * period;
            self.queue.push_at(at, Ev::Tick { cpu: cpu.0 });
        }
    }

    fn tick(&mut self, cpu: CpuId) {
        let ci = cpu.index();
        self.cpus[ci].tick_queued = false;
        if self.cpus[ci].tick_stopped {
            return;
        }
        if let Some(at) = self.irq_deferral(cpu) {
            // The tick interrupt waits for interrupts to be enabled again.
            self.cpus[ci].tick_queued = true;
            self.queue.push_at(at, Ev::Tick { cpu: cpu.0 });
            return;
        }
        self.settle(cpu);
        self.account(cpu);
        let now = self.now;
        let resched = self.rqs[ci].sched_tick(&mut self.tasks, now);
        self.trace_pelt(cpu);
        // sched_balance_trigger(): SCHED_SOFTIRQ and the nohz kick. (It moves no task, so
        // the other CPUs' accounting need not be brought up to date; the softirq does that.)
        let out = self.ctx_call(|b, ctx| b.tick(ctx, cpu));
        self.charge(cpu, self.cfg.cost.charge(&out.work));
        if let Some(k) = out.kick {
            self.queue.push_at(now + self.cfg.cost.ipi_ns, Ev::Kick(k));
        }
        if out.raise_softirq {
            self.softirq(cpu);
        }
        if resched || self.rqs[ci].need_resched() {
            self.resched_cpu(cpu, cpu);
        }
        // Keep ticking while busy; an idle CPU stopped its tick when it went idle.
        if self.rqs[ci].curr.is_some() || self.rqs[ci].nr_running > 0 {
            self.restart_tick(cpu);
        } else if !self.cpus[ci].tick_stopped {
            self.cpus[ci].tick_stopped = true;
            self.ctx_call(|b, ctx| b.nohz_enter_idle(ctx, cpu));
        }
    }

    /// SCHED_SOFTIRQ on `cpu`.
    fn softirq(&mut self, cpu: CpuId) {
        self.account_all();
        let out = self.ctx_call(|b, ctx| b.softirq(ctx, cpu));
        self.charge(cpu, out.elapsed_ns.max(self.cfg.cost.charge(&out.work)));
        self.apply_outcome(cpu, &out);
        if self.rqs[cpu.index()].nr_running > 0 && self.rqs[cpu.index()].curr.is_none() {
            self.restart_tick(cpu);
            self.resched_cpu(cpu, cpu);
        }
    }

    fn kick(&mut self, kick: IlbKick) {
        let cpu = kick.ilb_cpu;
        if let Some(at) = self.irq_deferral(cpu) {
            self.queue.push_at(at, Ev::Kick(kick));
            return;
        }
        self.softirq(cpu);
    }

    /// The stopper preempts the busiest CPU's task and runs active balancing there.
    fn stopper(&mut self, req: StopperRequest) {
        let cpu = req.busiest;
        let ci = cpu.index();
        if let Some(at) = self.irq_deferral(cpu) {
            // The stopper's IPI waits for the CPU to enable interrupts.
            self.queue.push_at(at, Ev::Stopper(req));
            return;
        }
        self.settle(cpu);
        self.account(cpu);
        let now = self.now;
        if let Some(p) = self.rqs[ci].curr {
            // The stopper class preempts the fair task: put it back on the queue.
            self.account_runtime(p);
            let r = &self.runs[self.run_of[p] as usize];
            if r.block_pending || r.exit_pending {
                // It was about to leave the CPU anyway; schedule that first.
                self.schedule(cpu);
            } else {
                self.rqs[ci].__schedule_prev(&mut self.tasks, PrevAction::Preempt, now);
                self.rqs[ci].pick_next_task_idle(&mut self.tasks);
                // The stopper (migration/N) preempts it; lbsim has no stopper task, so the
                // trace shows a switch to idle.
                self.context_switch(cpu, None, PrevAction::Preempt);
                self.cpus[ci].generation += 1;
            }
        }
        self.account_all();
        let out = self.ctx_call(|b, ctx| b.active_balance(ctx, req));
        self.apply_outcome(cpu, &out);
        let c = &mut self.cpus[ci];
        c.busy_until = c.busy_until.max(now) + out.elapsed_ns + self.cfg.cost.context_switch_ns;
        self.resched_cpu(cpu, cpu);
    }

    // ----------------------------------------------------------------------------------
    // Checks and results

    fn check_invariants(&self) -> Result<(), SimError> {
        let exited = self
            .by_ref
            .iter()
            .filter(|&&r| self.tasks[self.runs[r as usize].id].state == TaskState::Exited)
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
        for (c, rq) in self.rqs.iter().enumerate() {
            rq.check_invariants(&self.tasks)
                .map_err(|e| SimError::Invariant {
                    time_ns: self.now,
                    cpu: c as u32,
                    task: String::new(),
                    detail: e.to_string(),
                })?;
            if let Some(p) = rq.curr {
                let t = &self.tasks[p];
                if !t.cpus_mask.test(CpuId(c as u32)) {
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

    fn finish(mut self) -> RunResult {
        let checks = self.check_report();
        for c in 0..self.cpus.len() {
            let cpu = CpuId(c as u32);
            self.settle(cpu);
            if let Some(p) = self.rqs[c].curr {
                self.account_runtime(p);
            }
        }
        self.account_all();
        let mut tasks = Vec::new();
        let mut migrations = 0;
        let mut switches = 0;
        for (i, &ri) in self.by_ref.iter().enumerate() {
            let r = &self.runs[ri as usize];
            let t = &self.tasks[r.id];
            let work_ns = (r.work_units / 1024) as u64;
            let o = &mut self.obs.tasks[i];
            o.runtime_ns = r.runtime_ns;
            o.work_ns = work_ns;
            o.wait_ns = t.sched_info.run_delay;
            o.max_wait_ns = r.max_wait_ns;
            o.nr_voluntary_switches = t.nvcsw;
            o.nr_involuntary_switches = t.nivcsw;
            o.nr_migrations = t.se.nr_migrations;
            o.last_cpu = Some(t.cpu.0);
            migrations += t.se.nr_migrations;
            switches += t.nvcsw + t.nivcsw;
            tasks.push(TaskResult {
                name: t.name.clone(),
                group: o.group.clone(),
                cpu: t.cpu.0,
                runtime_ns: r.runtime_ns,
                work_ns,
                wait_ns: t.sched_info.run_delay,
                nr_migrations: t.se.nr_migrations,
                nr_switches: t.nvcsw + t.nivcsw,
            });
        }
        self.obs.sim_time_ns = self.now;
        // Fairness compares tasks that do the same thing: the largest group (a benchmark's
        // workers, not its main thread).
        let main_group =
            lbsim_workload::report::largest_group(tasks.iter().map(|t| t.group.as_str()));
        let shares: Vec<u64> = tasks
            .iter()
            .filter(|t| Some(t.group.as_str()) == main_group)
            .map(|t| t.work_ns)
            .collect();
        let mut groups: Vec<GroupFairness> = Vec::new();
        let mut labels: Vec<&str> = tasks.iter().map(|t| t.group.as_str()).collect();
        labels.sort_unstable();
        labels.dedup();
        for g in labels {
            let s: Vec<u64> = tasks
                .iter()
                .filter(|t| t.group == g)
                .map(|t| t.work_ns)
                .collect();
            let f = fairness(&s);
            groups.push(GroupFairness {
                group: g.to_owned(),
                tasks: s.len(),
                min_max_ratio: f.min_max_ratio,
                jain: f.jain,
            });
        }
        let cpus = self
            .cpus
            .iter()
            .enumerate()
            .map(|(c, s)| CpuResult {
                cpu: c as u32,
                busy_ns: s.busy_ns,
                idle_ns: s.idle_ns,
                avg_nr_running: if self.now == 0 {
                    0.0
                } else {
                    s.nr_running_ns as f64 / self.now as f64
                },
                nr_switches: self.rqs[c].nr_switches,
            })
            .collect();
        let jiffies = self.now / self.tick_nsec;
        let topo = self.cfg.topology.clone();
        let cpu_stats: Vec<CpuSchedstat> = self
            .cpus
            .iter()
            .map(|c| CpuSchedstat {
                rq_cpu_time: c.busy_ns,
                ..c.stat
            })
            .collect();
        let schedstat = self.balancer.schedstat_mut().map(|ss| {
            ss.cpus.clone_from_slice(&cpu_stats);
            ss.format(&topo, jiffies)
        });
        RunResult {
            schedstat,
            checks,
            sim_time_ns: self.now,
            migrations,
            context_switches: switches,
            idle_while_overloaded_ns: self.iwo_ns,
            wakeup_latency: self.latency.percentiles(),
            fairness: fairness(&shares),
            groups,
            tasks,
            cpus,
            observations: self.obs,
            events: self.events,
            event_hash: self.hash,
            trace: self.trace,
        }
    }
}

impl<E> EventQueue<E> {
    fn push_at(&mut self, at: u64, ev: E) {
        self.push(crate::time::SimTime(at), ev);
    }
}

#[cfg(test)]
mod tests;
