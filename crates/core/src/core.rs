//! The core model's state and its entry points: set-up, event dispatch, the balancer
//! calls, applying a balancing pass's outcome, charging scheduler overhead, `resched_curr()`.

use std::sync::Arc;

use crate::prelude::*;
use lbsim_pelt::RunnableLoadForm;

/// [`Core::by_ref`]'s entry for a task of the spec not created yet.
pub(crate) const NOT_CREATED: u32 = u32::MAX;

/// A simulation in progress.
#[derive(Debug)]
pub struct Core<B: Balancer> {
    pub(crate) cfg: SimConfig,
    pub(crate) balancer: B,
    pub(crate) now: u64,
    pub(crate) tick_nsec: u64,
    /// `jiffies` at `now` (`now / tick_nsec`), kept with the time it stops holding: a
    /// balancing call reads it, and a division per call cost more than the tick boundary's
    /// test per event.
    jiffies: Jiffies,
    /// Events to schedule and cancel, for the engine.
    pub(crate) fx: Effects,
    pub(crate) rqs: lbsim_balance::rqs::Rqs,
    /// The run's task groups (`None`: none declared or named, a flat hierarchy).
    pub(crate) tg_tree: Option<Arc<lbsim_rq::TaskGroupTree>>,
    pub(crate) tasks: Tasks,
    pub(crate) cpus: Vec<CpuState>,
    pub(crate) runs: Vec<TaskRun>,
    /// The system calls in progress that wake tasks one after another ([`Cur::Waking`]).
    pub(crate) wakings: Wakings,
    pub(crate) run_of: SecondaryMap<TaskId, u32>,
    /// The affinity masks handed out so far, by the workload's cpuset (`None`: every CPU):
    /// the tasks of one cpuset share one mask.
    pub(crate) masks: std::collections::BTreeMap<Option<u32>, Arc<Cpumask>>,
    /// Workload TaskRef index -> run index ([`NOT_CREATED`] for a task of the spec not
    /// created yet).
    pub(crate) by_ref: Vec<u32>,
    /// Tasks of the spec not created yet (delayed starts, threads another task spawns).
    pub(crate) not_created: usize,
    /// The spec's tasks, taken out of `cfg.workload.tasks` at set-up ([`crate::spec_tasks`]).
    pub(crate) spec: crate::spec_tasks::SpecTasks,
    /// The workload tasks that have exited: run index and time, in the order they exited
    /// (the end of the run looks them up by run index).
    pub(crate) exits: Vec<(u32, u64)>,
    /// Workload tasks that have exited (so that the end-of-workload test is O(1) per event).
    pub(crate) workload_exited: usize,
    /// The scheduler trace, when [`Core::with_trace`] asked for one or a log target is on
    /// ([`crate::log`]); pid = run index + 1.
    pub(crate) trace: Option<crate::trace::Trace>,
    /// Whether the trace keeps its records (a trace was asked for), or only names the tasks
    /// of logged records.
    pub(crate) trace_keep: bool,
    /// The log targets on, read at set-up.
    pub(crate) log: crate::log::LogTargets,
    /// The per-CPU time series, when [`Core::with_cpu_series`] asked for them.
    pub(crate) series: Option<crate::series::Sampler>,
    pub(crate) sync: SyncState,
    /// What the run observed. Its per-task table stays empty until the end of the run
    /// (`finish()` builds it from the spec, the runs and the runqueue tasks): for a run
    /// of many tasks it would double what the spec holds.
    pub(crate) obs: RunObservations,
    /// The observations of the tasks forked from templates (`Action::Fork`), whose
    /// [`TaskRef`]s follow the spec's: TaskRef `spec.len() + k` is entry `k`.
    pub(crate) forked: Vec<TaskObservation>,
    pub(crate) streams: SeedStreams,
    pub(crate) bg_rng: Pcg64Mcg,
    pub(crate) iwo_ns: u64,
    pub(crate) iwo_active: bool,
    pub(crate) error: Option<SimError>,
    pub(crate) checker: check::Checker,
    /// The idle-while-overloaded summary, kept up to date per CPU (see [`IwoSummary`]).
    pub(crate) iwo: IwoSummary,
    /// Busy threads per core, when SMT siblings share their core's throughput.
    pub(crate) smt: Option<crate::smt::SmtCores>,
    /// CPUs whose idle state an interrupt ended during this event (the idle loop runs again
    /// for them after it).
    pub(crate) idle_reentry: Vec<u32>,
    /// Idle-state exit times and per-wake-up costs are drawn from these.
    pub(crate) idle_rng: Pcg64Mcg,
    pub(crate) wake_rng: Pcg64Mcg,
    /// The largest CPU capacity of the machine (`arch_scale_cpu_capacity()`).
    pub(crate) max_cpu_capacity: u64,
}

impl<B: Balancer> Core<B> {
    /// Sets up a run: runqueues, background threads, the workload's tasks' start events and
    /// the first ticks.
    pub fn new(cfg: SimConfig, mut balancer: B) -> Result<Core<B>, SimError> {
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
        let tg_tree = build_task_groups(&cfg, &params)?;
        let tg_shared = tg_tree.as_ref().map(|t| t.shared());
        let mut rqs = Vec::with_capacity(nr_cpus);
        let mut cpus = Vec::with_capacity(nr_cpus);
        for c in 0..nr_cpus {
            let cpu = CpuId(c as u32);
            let cap = u64::from(machine.capacity(cpu));
            let mut rq = Rq::new(cpu, cap, params);
            // Kernels before v5.7 keep the root cfs_rq's runnable_load_avg/_sum (read by
            // the pre-v5.5 balancer's weighted_cpuload()).
            rq.cfs.avg.runnable_load.form = cfg.kernel.map_or(RunnableLoadForm::Off, |(a, b)| {
                RunnableLoadForm::for_release(a, b)
            });
            rq.set_asym_cpucap_active(asym);
            if let (Some(tree), Some(shared)) = (&tg_tree, &tg_shared) {
                rq.set_task_groups(Arc::clone(tree), Arc::clone(shared));
            }
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
                sched_work_ns: 0,
                irq_off_until: 0,
                seg_end: None,
                seg_chain: false,
                chain_window: 2,
                tick_stopped: true,
                tick_phase_ns,
                tick: None,
                wakelist: Vec::new(),
                ipi: None,
                resched: None,
                capacity: cap,
                speed: cap,
                kworker: None,
                newidle: None,
                newidle_since: 0,
                yielded: false,
                acct_last: 0,
                busy_ns: 0,
                idle_ns: 0,
                nr_running_ns: 0,
                stat: CpuSchedstat::default(),
                idle: crate::cpuidle::IdleCpu::Out,
                menu: Default::default(),
                poll_limit: None,
                timers: Default::default(),
                watchdog_at: u64::MAX,
                idle_usage: vec![(0, 0); machine.idle_states(cpu).states.len()],
                stats_idle_calls: 0,
                stats_idle_sleeps: 0,
            });
        }
        // sched_online_group() of each group at its creation (set-up, t=0), parents first.
        if let Some(tree) = &tg_tree {
            for g in 1..tree.len() as u32 {
                for rq in &mut rqs {
                    rq.online_fair_sched_group(g, 0);
                }
            }
        }
        let sync = cfg.workload.new_sync_state();
        let bg_rng = streams.rng(Stream::Background, 0);
        let checker = check::Checker::new(cfg.check, &mut balancer);
        // The tasks of the spec and the background threads, sized at once: a run with tens of
        // thousands of tasks would otherwise hold up to twice the room it needs.
        let nr_tasks = cfg.workload.tasks.len();
        let nr_runs = nr_tasks
            + if cfg.engine.background_wakeups_hz > 0 {
                nr_cpus
            } else {
                0
            };
        let mut sim = Core {
            balancer,
            now: 0,
            tick_nsec,
            jiffies: Jiffies::at(0, tick_nsec),
            fx: Effects::default(),
            rqs: rqs.into(),
            tasks: Tasks::with_capacity_and_key(nr_runs),
            cpus,
            runs: Vec::with_capacity(nr_runs),
            wakings: Wakings::default(),
            run_of: SecondaryMap::with_capacity(nr_runs),
            masks: std::collections::BTreeMap::new(),
            by_ref: Vec::with_capacity(nr_tasks),
            not_created: 0,
            spec: crate::spec_tasks::SpecTasks::default(),
            workload_exited: 0,
            exits: Vec::new(),
            trace: None,
            trace_keep: false,
            log: crate::log::LogTargets::from_subscriber(),
            series: None,
            sync,
            obs: RunObservations::default(),
            forked: Vec::new(),
            streams,
            bg_rng,
            iwo_ns: 0,
            iwo_active: false,
            error: None,
            checker,
            iwo: IwoSummary::new(nr_cpus),
            smt: if cfg.machine.smt_ideal {
                None
            } else {
                crate::smt::SmtCores::new(machine)
            },
            idle_reentry: Vec::new(),
            idle_rng: streams.rng(Stream::IdleExit, 0),
            wake_rng: streams.rng(Stream::WakeCost, 0),
            max_cpu_capacity: (0..nr_cpus)
                .map(|c| u64::from(machine.capacity(CpuId(c as u32))))
                .max()
                .unwrap_or(1024),
            tg_tree,
            cfg,
        };
        if sim.log.any() {
            // Logging needs the tracepoints fired and the tasks named, not the records kept.
            let mut tr = crate::trace::Trace::new(nr_cpus as u32);
            tr.groups = trace_groups(sim.tg_tree.as_deref());
            sim.trace = Some(tr);
            if let Some(lt) = sim.balancer.trace() {
                lt.enabled = true;
            }
        }
        // Every CPU starts idle with its tick stopped (the idle loop's
        // tick_nohz_idle_stop_tick() -> nohz_balance_enter_idle()), in the idle state its
        // governor picks; a tick starts when work arrives.
        for c in 0..nr_cpus {
            let cpu = CpuId(c as u32);
            sim.ctx_call(|b, ctx| {
                b.nohz_enter_idle(ctx, cpu);
                b.idle_enter(ctx, cpu);
            });
            if sim.cpuidle_on(cpu) {
                // The watchdog hrtimers were armed at boot, at times unrelated across CPUs.
                let phase = below(&mut phase_rng, crate::cpuidle::WATCHDOG_PERIOD_NS);
                sim.cpus[c].watchdog_at = phase;
                sim.fx.at(phase, Ev::Watchdog { cpu: cpu.0 });
            }
            sim.enter_idle_task(cpu);
        }
        // Every task of the spec has its TaskRef (its index) from the start, whenever it is
        // created: at its start time by the launcher, or when another task spawns it.
        sim.spec = crate::spec_tasks::SpecTasks::new(std::mem::take(&mut sim.cfg.workload.tasks));
        for i in 0..sim.spec.len() {
            sim.by_ref.push(NOT_CREATED);
            sim.not_created += 1;
            let spec = sim.spec.spec(i);
            if !spec.spawned {
                sim.fx.at(spec.start_ns, Ev::Start(i as u32));
            }
        }
        if sim.cfg.engine.background_wakeups_hz > 0 {
            for c in 0..nr_cpus {
                let run = sim.create_kworker(CpuId(c as u32));
                sim.cpus[c].kworker = Some(run);
                let t = sim.next_background_delay();
                sim.fx.at(t, Ev::Background { cpu: c as u32 });
            }
        }
        Ok(sim)
    }

    pub(crate) fn next_background_delay(&mut self) -> u64 {
        // Exponential inter-arrival times with mean 1/hz, from a uniform draw:
        // -ln(u) * mean, with u in (0, 1].
        let mean = 1_000_000_000 / self.cfg.engine.background_wakeups_hz.max(1);
        let u = (below(&mut self.bg_rng, 1 << 53) + 1) as f64 / (1u64 << 53) as f64;
        // `mean` is at least 1000 ns (`background_wakeups_hz` is at most 1,000,000) and
        // `-ln(u)` at most 53 ln 2, so the gap is under 37 s; the sum saturates at the end
        // of time.
        self.now.saturating_add(((-u.ln()) * mean as f64) as u64)
    }

    pub(crate) fn create_kworker(&mut self, cpu: CpuId) -> u32 {
        let nr = self.rqs.len();
        let mask = Cpumask::from_cpus(nr, [cpu]);
        let mut task = Task::new(
            format!("kworker/{}", cpu.0),
            Policy::Normal,
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

    pub(crate) fn add_run(&mut self, id: TaskId, kind: Kind) -> u32 {
        let idx = self.runs.len() as u32;
        self.runs.push(TaskRun::new(id, kind, self.now));
        self.run_of.insert(id, idx);
        if let Some(tr) = &mut self.trace {
            let t = &self.tasks[id];
            tr.add_task_in(&t.name, t.nice, tg_path(self.tg_tree.as_deref(), t.tg));
        }
        idx
    }

    /// Samples every CPU's `nr_running` and root `util_avg` every `period_ns` of simulated
    /// time into [`RunResult::cpu_series`] ([`crate::series`]). Sampling changes no decision.
    #[must_use]
    pub fn with_cpu_series(mut self, period_ns: u64) -> Self {
        self.series = Some(crate::series::Sampler::new(period_ns, self.rqs.len()));
        self
    }

    /// Records the scheduler trace of the run ([`crate::trace`]) into
    /// [`RunResult::trace`]. Tracing changes no decision.
    #[must_use]
    pub fn with_trace(mut self) -> Self {
        let mut tr = crate::trace::Trace::new(self.rqs.len() as u32);
        tr.cpu_capacity = self.cpus.iter().map(|c| c.capacity).collect();
        tr.groups = trace_groups(self.tg_tree.as_deref());
        for r in &self.runs {
            let t = &self.tasks[r.id];
            tr.add_task_in(&t.name, t.nice, tg_path(self.tg_tree.as_deref(), t.tg));
        }
        self.trace = Some(tr);
        self.trace_keep = true;
        if let Some(lt) = self.balancer.trace() {
            lt.enabled = true;
        }
        self
    }

    /// Records in the trace so far (0 without one).
    pub fn trace_records(&self) -> usize {
        self.trace.as_ref().map_or(0, |t| t.records.len())
    }

    /// When the run ends at the latest, ns: `--duration`, or the workload's own duration if
    /// shorter.
    pub fn end_ns(&self) -> u64 {
        let cfg = &self.cfg;
        cfg.workload
            .duration_ns
            .map_or(cfg.duration_ns, |d| d.min(cfg.duration_ns))
    }

    /// The events to schedule and cancel that handling asked for since the last drain.
    pub fn effects(&mut self) -> &mut Effects {
        &mut self.fx
    }

    /// Handles `ev` at time `t_ns`: the clock moves to `t_ns` (the idle-while-overloaded
    /// time accrues up to it), the event runs, then the per-event checks.
    pub fn handle(&mut self, t_ns: u64, ev: Ev) -> Result<(), SimError> {
        self.check_clock(t_ns)?;
        if self.series.is_some() {
            self.sample_until(t_ns, false);
        }
        if self.iwo_active {
            self.iwo_ns += t_ns - self.now;
        }
        self.now = t_ns;
        self.jiffies.advance(t_ns, self.tick_nsec);
        let [touched, touched_too] = ev.cpus();
        self.dispatch(ev);
        self.idle_loop_again();
        if let Some(c) = touched {
            self.iwo.mark(CpuId(c));
        }
        if let Some(c) = touched_too {
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
        Ok(())
    }

    /// Whether every task of the workload has exited (the run ends there).
    pub fn workload_done(&self) -> bool {
        self.all_workload_tasks_exited()
    }

    /// Ends the run at `end_ns` (or now, if the workload is done) and returns what was
    /// measured; the engine fills in [`RunResult::events`] and [`RunResult::event_hash`].
    pub fn close(mut self, end_ns: u64) -> RunResult {
        let end = if self.all_workload_tasks_exited() {
            self.now
        } else {
            end_ns.max(self.now)
        };
        if self.iwo_active {
            self.iwo_ns += end - self.now;
        }
        if self.series.is_some() {
            self.sample_until(end, true);
        }
        self.now = end;
        self.jiffies.advance(end, self.tick_nsec);
        self.finish()
    }

    pub(crate) fn all_workload_tasks_exited(&self) -> bool {
        !self.by_ref.is_empty()
            && self.not_created == 0
            && self.workload_exited == self.by_ref.len()
    }

    /// The event's handler. Inlined into [`Core::handle`], its only caller (kept apart for
    /// reading: a separate function costs every event a call).
    #[inline(always)]
    pub(crate) fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Start(i) => self.start_task(i),
            Ev::SegEnd { cpu } => {
                self.cpus[cpu as usize].seg_end = None;
                self.segment_end(CpuId(cpu));
            }
            Ev::Timer { run } => {
                if let Some((_, c, at)) = self.runs[run as usize].timer.take() {
                    self.cpus[c as usize].timers.remove(&(at, run));
                }
                self.timer(run);
            }
            Ev::Tick { cpu } => self.tick(CpuId(cpu)),
            Ev::Ipi { cpu } => self.ipi(CpuId(cpu)),
            Ev::Resched { cpu } => {
                self.cpus[cpu as usize].resched = None;
                if let Some(at) = self.idle_exit_deferral(CpuId(cpu), false) {
                    // The reschedule waits for the CPU to leave its idle state.
                    let key = self.fx.at(at, Ev::Resched { cpu });
                    self.cpus[cpu as usize].resched = Some(key);
                    return;
                }
                self.schedule(CpuId(cpu));
            }
            Ev::PollLimit { cpu } => self.poll_limit(CpuId(cpu)),
            Ev::Watchdog { cpu } => self.watchdog(CpuId(cpu)),
            Ev::Stopper(req) => self.stopper(req),
            Ev::Kick(kick) => self.kick(kick),
            Ev::Background { cpu } => self.background(CpuId(cpu)),
            Ev::NewidleStep { cpu } => self.newidle_step(CpuId(cpu)),
            Ev::NewidleDone { cpu } => self.newidle_done(CpuId(cpu)),
        }
    }

    pub(crate) fn ctx_call<R>(&mut self, f: impl FnOnce(&mut B, &mut BalanceCtx<'_>) -> R) -> R {
        let Core {
            cfg,
            balancer,
            now,
            tick_nsec,
            jiffies,
            rqs,
            tasks,
            ..
        } = self;
        // The engine sets `rq->ttwu_pending` whenever it queues a wake-up (queue_wakelist()),
        // at the engine's own time, so the runqueue flag already tells a pass about every
        // wake-up queued by then; wake-ups other CPUs will queue later are events not yet
        // handled, which no view could give. Hence no extra view of pending wake-ups.
        let pending = lbsim_balance::ctx::NoPendingWakeups;
        let mut ctx = BalanceCtx {
            now_ns: *now,
            jiffies: jiffies.get(*now, *tick_nsec),
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
    pub(crate) fn apply_outcome(&mut self, from: CpuId, out: &BalanceOutcome) {
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
            self.fx.at(self.now + ipi, Ev::Stopper(*s));
        }
        for k in &out.kicks {
            self.fx.at(self.now + ipi, Ev::Kick(*k));
        }
    }

    /// Charges `ns` of scheduler overhead to `cpu` (its current task makes no progress).
    pub(crate) fn charge(&mut self, cpu: CpuId, ns: u64) {
        if ns == 0 {
            return;
        }
        self.settle(cpu);
        let now = self.now;
        let c = &mut self.cpus[cpu.index()];
        c.busy_until = c.busy_until.max(now) + ns;
        c.sched_work_ns = c.sched_work_ns.saturating_add(ns);
        if self.rqs[cpu.index()].curr.is_some() {
            c.seg_start = c.seg_start.max(c.busy_until);
            self.arm_segment(cpu);
        }
    }

    /// `resched_curr()` of a remote or local CPU: local takes effect now, remote after an IPI.
    pub(crate) fn resched_cpu(&mut self, cpu: CpuId, from: CpuId) {
        if self.cpus[cpu.index()].resched.is_some() {
            return;
        }
        let at = if cpu == from {
            self.now
        } else {
            self.now + self.signal_ns(cpu)
        };
        self.cpus[cpu.index()].resched = Some(self.fx.at(at, Ev::Resched { cpu: cpu.0 }));
    }
}

/// Each task group's path and depth, for the trace's `cgroup_attach_task`.
fn trace_groups(tree: Option<&lbsim_rq::TaskGroupTree>) -> Vec<(String, u32)> {
    tree.map_or_else(Vec::new, |t| {
        t.paths
            .iter()
            .cloned()
            .zip(t.depth.iter().copied())
            .collect()
    })
}

/// Task group `tg`'s path as `task_group_path()` prints it, `None` for the root group.
fn tg_path(tree: Option<&lbsim_rq::TaskGroupTree>, tg: u32) -> Option<&str> {
    tree.filter(|_| tg != 0)
        .map(|t| t.paths[tg as usize].as_str())
}

/// The run's task-group tree: the declared groups (`SimConfig::cgroups`), those the
/// workload's tasks name, and, with `sched_autogroup_enabled`, the autogroup of each session
/// (`session=N`, N >= 1) that has a task in the root cgroup (nice from
/// `SimConfig::autogroups`, else 0); or `None` if there are none (the flat hierarchy of a run
/// without groups). Task groups need the EEVDF pick (lbsim models no legacy CFS hierarchy).
fn build_task_groups(
    cfg: &SimConfig,
    params: &lbsim_rq::SchedParams,
) -> Result<Option<Arc<lbsim_rq::TaskGroupTree>>, SimError> {
    let specs = || {
        cfg.workload
            .tasks
            .iter()
            .chain(cfg.workload.templates.iter())
    };
    let mut tree = lbsim_rq::TaskGroupTree::default();
    let bad = |e: lbsim_rq::TaskGroupError| SimError::Cgroup(e.to_string());
    for (path, weight) in &cfg.cgroups {
        tree.declare(path, *weight).map_err(bad)?;
    }
    for path in specs().filter_map(|t| t.cgroup.as_deref()) {
        tree.get_or_insert(path).map_err(bad)?;
    }
    // Then the cgroups phases move threads into (rt-app's phase `taskgroup`), after the
    // others so that a run without them numbers its groups as before.
    for path in specs()
        .flat_map(|t| t.program.phases.iter())
        .filter_map(|p| p.taskgroup.as_deref())
        .filter(|&p| p != "/")
    {
        tree.get_or_insert(path).map_err(bad)?;
    }
    for &(id, nice) in &cfg.autogroups {
        // A nice for a session that never gets an autogroup is still checked.
        lbsim_rq::group::autogroup_shares(id, nice).map_err(bad)?;
    }
    if cfg.tunables.sched_autogroup_enabled {
        for t in specs() {
            // A task whose phases move it into the root cgroup may run in its autogroup
            // then.
            let to_root = || {
                t.program
                    .phases
                    .iter()
                    .any(|p| p.taskgroup.as_deref() == Some("/"))
            };
            let Some(id) = t.session.filter(|&s| s != 0) else {
                continue;
            };
            if t.cgroup.is_some() && !to_root() {
                continue;
            }
            // autogroup_task_group(): only a task in the root cgroup runs in its autogroup.
            if tree.find_autogroup(id).is_none() {
                let nice = cfg
                    .autogroups
                    .iter()
                    .rev()
                    .find(|(s, _)| *s == id)
                    .map_or(0, |&(_, n)| n);
                tree.autogroup_create(id, nice).map_err(bad)?;
            }
        }
    }
    if tree.is_empty() {
        return Ok(None);
    }
    if params.pick == lbsim_rq::FairPick::Cfs {
        return Err(SimError::Cgroup(
            "task groups (cgroups, or autogroups of sessions) need the EEVDF pick \
             (sched_policy=eevdf); sched_autogroup_enabled=0 leaves sessions in the root group"
                .to_string(),
        ));
    }
    Ok(Some(Arc::new(tree)))
}

/// `jiffies` (`now / tick_nsec`) at the core's clock, with the time that jiffy began.
#[derive(Clone, Copy, Debug)]
struct Jiffies {
    jiffies: u64,
    start_ns: u64,
}

impl Jiffies {
    fn at(now_ns: u64, tick_nsec: u64) -> Jiffies {
        let jiffies = now_ns / tick_nsec;
        Jiffies {
            jiffies,
            start_ns: jiffies * tick_nsec,
        }
    }

    /// Moves to `now_ns`: one comparison while it stays in the same jiffy, a division when it
    /// leaves it (forward, or back: a release build without `--check` goes on after the
    /// clock went backwards, see `Core::check_clock`).
    #[inline]
    fn advance(&mut self, now_ns: u64, tick_nsec: u64) {
        if now_ns.wrapping_sub(self.start_ns) >= tick_nsec {
            *self = Jiffies::at(now_ns, tick_nsec);
        }
    }

    /// `jiffies` at `now_ns`, the time it was last moved to.
    #[inline]
    fn get(&self, now_ns: u64, tick_nsec: u64) -> u64 {
        debug_assert_eq!(
            self.jiffies,
            now_ns / tick_nsec,
            "jiffies not moved to {now_ns}"
        );
        self.jiffies
    }
}
