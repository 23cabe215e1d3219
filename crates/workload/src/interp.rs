//! The program interpreter: turns a [`Program`] into a stream of [`Action`]s.

use std::sync::Arc;

use rand_core::Rng;

use crate::action::Action;
use crate::ids::{CpusetId, ProbeTag, TaskRef, TimerId};
use crate::program::{Event, Loops, Program, SchedAttr};
use crate::spec::TaskSpec;
use crate::sync::{SyncState, TimerState};

mod pure;
mod queue;

pub use pure::PureRuns;
use pure::pure_loop_phase;
use queue::ActionQueue;

/// What to measure when the previously returned action completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Meas {
    None,
    /// A `run`/`runtime` event started at the time it was returned.
    Run,
    /// A timer sleep toward the expiry the action (an [`Action::SleepUntil`]) names: the
    /// expiry is not kept twice, which makes each queued action 8 bytes smaller.
    Timer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    Run { start_ns: u64 },
    Timer { expiry_ns: u64 },
}

/// Steps the interpreter may take inside one `next_action` call before it concludes that the
/// program produces no action. [`Program::find_zero_time_loop`] rejects programs that could
/// reach it; this is a backstop against a bug, not a feature.
const MAX_SILENT_STEPS: u32 = 1 << 20;

/// What a program that logs keeps ([`Cursor::iter`]): the iteration's statistics, and the
/// measure of the action last returned, which [`Cursor::settle`] adds to them (a program that
/// does not log has no use for it: inline it made every task's state 16 bytes larger).
#[derive(Clone, Copy, Debug, Default)]
struct IterLog {
    stats: IterStats,
    pending: Option<Pending>,
}

/// Per-iteration accounting for rt-app's log (the `Rtapp*` probes).
#[derive(Clone, Copy, Debug, Default)]
struct IterStats {
    run_ns: u64,
    perf_ns: u64,
    wu_lat_ns: u64,
    slack_ns: i64,
}

/// A task's position in its program plus the per-thread state rt-app keeps (unique timers,
/// current affinity and scheduling attributes), and the generator registers (mark time).
///
/// The engine creates one per task with [`TaskSpec::start`] and calls
/// [`ProgramState::next_action`] whenever the task, running on a CPU, needs something to do.
#[derive(Clone, Debug)]
pub struct ProgramState {
    program: Arc<Program>,
    cur: Cursor,
}

/// The interpreter's mutable state, apart from the shared [`Program`] it walks, so that a step
/// borrows the program without touching its reference count.
#[derive(Clone, Debug)]
struct Cursor {
    task: TaskRef,
    jitter_pct: u32,
    start_ns: u64,
    task_cpus: Option<CpusetId>,
    cur_cpus: Option<CpusetId>,
    cur_sched: SchedAttr,
    thread_loop: u64,
    /// The phase and the event in it (u32: 8 bytes less per task than two `usize`; a
    /// program of 2^32 phases or events would not fit in memory).
    phase: u32,
    phase_loop: u64,
    ev: u32,
    in_iteration: bool,
    /// The actions an event expanded to, still to return (the first inline: nearly every
    /// event expands to one, and a heap block per task would cost a cache miss per action;
    /// the few that expand to more, a condvar wait or a tally's probes, spill to the heap
    /// once per task: room for two inline would make every task's state 32 bytes larger).
    queue: ActionQueue<(Action, Meas)>,
    local_timers: Box<[TimerState]>,
    mark_ns: u64,
    /// Only for a program that logs (`rtapp_log`), the only reader of these statistics and of
    /// the measure of the action in progress; out of line, as few programs do.
    iter: Option<Box<IterLog>>,
    /// The state few tasks have (a cgroup other than the root, a tally), out of line: inline
    /// it would make every task's state 32 bytes larger. `None` until a task needs it.
    rare: Option<Box<Rare>>,
    exiting: bool,
    exited: bool,
    /// The current phase is a pure run loop ([`pure_loop_phase`]), kept from the phase
    /// change on so that [`ProgramState::pure_runs`] need not scan the phase at every
    /// segment.
    pure_phase: bool,
    /// Some phase of the program is ([`ProgramState::has_pure_loop`]).
    has_pure_loop: bool,
}

/// What few tasks' interpreters keep ([`Cursor::rare`]).
#[derive(Clone, Debug, Default)]
struct Rare {
    /// The cgroup the thread is in (`None`: the root cgroup), for rt-app's phase
    /// `taskgroup`.
    cur_cgroup: Option<Box<str>>,
    /// Operations counted since the last tally probes (tbench, pipe, ebizzy).
    tally: Option<Tally>,
}

/// Operations counted since the last tally probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tally {
    count: u64,
    max_latency_ns: u64,
    next_emit_ns: Option<u64>,
}

/// Draws `work_ns` stretched or shrunk by up to `pct` percent, uniformly, from `rng`.
///
/// The draw uses Lemire's multiply-shift on one `next_u64`, so the stream advances by exactly
/// one value per jittered run.
pub fn jitter_work<R: Rng + ?Sized>(work_ns: u64, pct: u32, rng: &mut R) -> u64 {
    if pct == 0 || work_ns == 0 {
        return work_ns;
    }
    let j = (u128::from(work_ns) * u128::from(pct.min(100)) / 100) as u64;
    let span = u128::from(j) * 2 + 1;
    let off = ((u128::from(rng.next_u64()) * span) >> 64) as u64;
    work_ns - j + off
}

/// A uniform draw in `0..n` (0 if `n == 0`).
fn uniform<R: Rng + ?Sized>(n: u64, rng: &mut R) -> u64 {
    if n == 0 {
        return 0;
    }
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

impl ProgramState {
    /// The interpreter for `spec`'s program, run as `task`.
    ///
    /// `spec.start_ns` is rt-app's `t_first` (use-case start plus the task's `delay`): timers
    /// count their first period from it.
    pub fn new(task: TaskRef, spec: &TaskSpec) -> ProgramState {
        let mut st = ProgramState {
            program: Arc::clone(&spec.program),
            cur: Cursor {
                task,
                jitter_pct: spec.jitter_pct,
                start_ns: spec.start_ns,
                task_cpus: spec.affinity,
                cur_cpus: spec.affinity,
                cur_sched: SchedAttr {
                    policy: spec.policy,
                    nice: spec.nice,
                },
                thread_loop: 0,
                phase: 0,
                phase_loop: 0,
                ev: 0,
                in_iteration: false,
                queue: ActionQueue::default(),
                local_timers: spec
                    .program
                    .local_timers
                    .iter()
                    .map(|t| TimerState {
                        relative: t.relative,
                        next_ns: None,
                    })
                    .collect(),
                mark_ns: 0,
                iter: spec.program.rtapp_log.then(Box::default),
                rare: spec.cgroup.as_deref().map(|c| {
                    Box::new(Rare {
                        cur_cgroup: Some(Box::from(c)),
                        tally: None,
                    })
                }),
                exiting: false,
                exited: false,
                pure_phase: false,
                has_pure_loop: false,
            },
        };
        let p = &st.program;
        st.cur.pure_phase = pure_loop_phase(p, 0).is_some();
        st.cur.has_pure_loop =
            st.cur.pure_phase || (1..p.phases.len()).any(|i| pure_loop_phase(p, i).is_some());
        st
    }

    /// The task this interpreter runs.
    #[inline]
    pub fn task(&self) -> TaskRef {
        self.cur.task
    }

    /// True once the program returned [`Action::Exit`].
    pub fn exited(&self) -> bool {
        self.cur.exited
    }

    /// The next action of the task.
    ///
    /// Call it only while the task is running on a CPU: when it starts, when its previous
    /// action completed (a `Run` finished, a sync action returned [`crate::Outcome::Done`]), or,
    /// after a sleep or a block, when it runs again. `now_ns` is the current simulated time;
    /// the program measures durations with it (rt-app's log, request latencies). `rng` is the
    /// task's own stream; `sync` the run's shared objects (tickets, wake lists, shared timers
    /// and wake-up stamps are read and written here, without blocking).
    pub fn next_action<R: Rng + ?Sized>(
        &mut self,
        now_ns: u64,
        rng: &mut R,
        sync: &mut SyncState,
    ) -> Action {
        self.cur.next_action(&self.program, now_ns, rng, sync)
    }

    /// The operations counted since the last tally probes, for a run that stops while the
    /// task is alive: `(count, max_latency_ns)`, taken (a second call gives `None`). The
    /// engine records them as the task's last [`ProbeTag::TallyCount`] and
    /// [`ProbeTag::TallyMaxLatency`] probes at the run's end.
    pub fn take_tally(&mut self) -> Option<(u64, u64)> {
        self.cur
            .rare
            .as_mut()
            .and_then(|r| r.tally.take())
            .filter(|t| t.count > 0)
            .map(|t| (t.count, t.max_latency_ns))
    }
}

impl Cursor {
    #[inline]
    fn next_action<R: Rng + ?Sized>(
        &mut self,
        program: &Program,
        now_ns: u64,
        rng: &mut R,
        sync: &mut SyncState,
    ) -> Action {
        if self.exited {
            return Action::Exit;
        }
        self.settle(now_ns);
        let mut silent = 0u32;
        loop {
            if let Some((action, meas)) = self.queue.pop_front() {
                if let Some(log) = self.iter.as_deref_mut() {
                    log.pending = match meas {
                        Meas::None => None,
                        Meas::Run => Some(Pending::Run { start_ns: now_ns }),
                        Meas::Timer => {
                            let Action::SleepUntil { abs_ns } = action else {
                                unreachable!("a timer's measure on {action:?}")
                            };
                            Some(Pending::Timer { expiry_ns: abs_ns })
                        }
                    };
                }
                return action;
            }
            if self.exiting {
                return self.finish();
            }
            silent += 1;
            if silent > MAX_SILENT_STEPS {
                debug_assert!(false, "program of {:?} produces no action", self.task);
                return self.finish();
            }
            if !self.step(program, now_ns, rng, sync, &mut silent) {
                // The program is over: flush the tally, then exit.
                self.exiting = true;
                if let Some(t) = self.rare.as_mut().and_then(|r| r.tally.take())
                    && t.count > 0
                {
                    self.probe(ProbeTag::TallyCount, t.count);
                    self.probe(ProbeTag::TallyMaxLatency, t.max_latency_ns);
                }
            }
        }
    }

    fn finish(&mut self) -> Action {
        self.exited = true;
        self.queue.clear();
        if let Some(log) = self.iter.as_deref_mut() {
            log.pending = None;
        }
        Action::Exit
    }

    /// Accounts for the completion of the previously returned action.
    fn settle(&mut self, now_ns: u64) {
        let Some(IterLog {
            stats: iter,
            pending,
        }) = self.iter.as_deref_mut()
        else {
            return;
        };
        match pending.take() {
            Some(Pending::Run { start_ns }) => {
                iter.run_ns += now_ns.saturating_sub(start_ns);
            }
            Some(Pending::Timer { expiry_ns }) => {
                iter.wu_lat_ns += now_ns.saturating_sub(expiry_ns);
            }
            None => {}
        }
    }

    fn push(&mut self, a: Action) {
        self.queue.push((a, Meas::None));
    }

    fn probe(&mut self, tag: ProbeTag, value: u64) {
        self.push(Action::Probe { tag, value });
    }

    /// One unit of progress: the start of a phase iteration and its events up to the first
    /// that gives an action, or the events from there up to the next that does, or the end
    /// of the iteration, or the skip of a phase looped zero times. Returns false when the
    /// program is over (or an event ended it). An iteration that ends without an action
    /// runs on into the phase's next one, adding to `silent` the step that would have
    /// started it.
    #[inline]
    fn step<R: Rng + ?Sized>(
        &mut self,
        program: &Program,
        now: u64,
        rng: &mut R,
        sync: &mut SyncState,
        silent: &mut u32,
    ) -> bool {
        if program.phases.is_empty() || program.loops.finished(self.thread_loop) {
            return false;
        }
        let phase = &program.phases[self.phase as usize];
        loop {
            if !self.in_iteration {
                if phase.loops == Loops::Count(0) {
                    // A phase looped zero times is skipped.
                    self.next_phase(program);
                    return true;
                }
                self.in_iteration = true;
                self.ev = 0;
                // Follows rt-app's thread_body(): affinity (phase, else task, else all CPUs) and
                // scheduling parameters are applied at the start of every phase iteration, and
                // only when they change.
                let want = phase.cpus.or(self.task_cpus);
                if want != self.cur_cpus {
                    self.cur_cpus = want;
                    self.push(Action::SetAffinity(want));
                }
                if let Some(ch) = phase.sched {
                    let s = SchedAttr {
                        policy: ch.policy.unwrap_or(self.cur_sched.policy),
                        nice: ch.nice.unwrap_or(self.cur_sched.nice),
                    };
                    if s != self.cur_sched {
                        self.cur_sched = s;
                        self.push(Action::SetSched(s));
                    }
                }
                // Follows rt-app's set_thread_taskgroup() (src/rt-app_taskgroups.c, called by
                // thread_body() in src/rt-app.c at the start of every phase iteration): a phase
                // with a taskgroup moves the thread there (writing its tid into the group's
                // `tasks` file) unless it is already in it; a phase without one changes nothing,
                // so the thread stays in the last group it moved to (rt-app's
                // doc/examples/tutorial/example11.json says so of its phase1).
                if let Some(path) = &phase.taskgroup {
                    let here = self
                        .rare
                        .as_ref()
                        .and_then(|r| r.cur_cgroup.as_deref())
                        .unwrap_or("/");
                    if here != path {
                        let cg = (path != "/").then(|| Box::from(path.as_str()));
                        self.rare.get_or_insert_with(Box::default).cur_cgroup = cg;
                        self.push(Action::SetTaskGroup(path.clone()));
                    }
                }
                if let Some(log) = self.iter.as_deref_mut() {
                    log.stats = IterStats::default();
                    self.probe(ProbeTag::RtappPhaseStart, self.phase as u64);
                }
                if !self.queue.is_empty() {
                    return true;
                }
            }
            // The iteration's events, until one gives an action (or ends the program). One step
            // for all of them: between them `next_action` would only find the queue empty and
            // step again, through the checks above, which an event cannot change (the thread
            // loop counts at the end of an iteration only).
            while (self.ev as usize) < phase.events.len() {
                let ev = self.ev as usize;
                self.ev += 1;
                if !self.expand(program, &phase.events[ev], now, rng, sync) {
                    return false;
                }
                if !self.queue.is_empty() {
                    return true;
                }
            }
            // End of a phase iteration.
            if let Some(it) = self.iter.as_deref().map(|l| l.stats) {
                self.probe(ProbeTag::RtappRun, it.run_ns);
                self.probe(ProbeTag::RtappPerf, it.perf_ns);
                self.probe(ProbeTag::RtappWuLat, it.wu_lat_ns);
                self.probe(ProbeTag::RtappSlack, it.slack_ns as u64);
                self.probe(ProbeTag::RtappPhaseEnd, self.phase as u64);
            }
            self.in_iteration = false;
            self.phase_loop += 1;
            if phase.loops.finished(self.phase_loop) {
                self.next_phase(program);
                return true;
            }
            if !self.queue.is_empty() || *silent >= MAX_SILENT_STEPS {
                return true;
            }
            // The same phase again: `next_action` would find the queue empty and step again,
            // through the checks above, which the end of an iteration inside a phase cannot
            // change (the thread loop counts only when the phase changes, and a phase looped
            // zero times was never entered); so the next iteration starts here, counted as the
            // step it would have been.
            *silent += 1;
        }
    }

    /// Follows rt-app's thread_body(): after the last phase, the thread loop counts one.
    fn next_phase(&mut self, program: &Program) {
        self.phase_loop = 0;
        self.phase += 1;
        if self.phase as usize == program.phases.len() {
            self.phase = 0;
            self.thread_loop += 1;
        }
        // The one phase of a program is as pure as it was.
        if self.has_pure_loop && program.phases.len() > 1 {
            self.pure_phase = pure_loop_phase(program, self.phase as usize).is_some();
        }
    }

    #[inline]
    fn expand<R: Rng + ?Sized>(
        &mut self,
        program: &Program,
        ev: &Event,
        now: u64,
        rng: &mut R,
        sync: &mut SyncState,
    ) -> bool {
        match *ev {
            Event::Run { work_ns } => {
                let w = jitter_work(work_ns, self.jitter_pct, rng);
                if let Some(iter) = self.iter.as_deref_mut().map(|l| &mut l.stats) {
                    iter.perf_ns += w;
                }
                self.queue.push((Action::Run { work_ns: w }, Meas::Run));
            }
            Event::RunWall { ns } => {
                self.queue.push((Action::RunWall { ns }, Meas::Run));
            }
            Event::Sleep { ns } => self.push(Action::Sleep { ns }),
            Event::SleepRandom { min_ns, spread_ns } => {
                let ns = min_ns + uniform(spread_ns, rng);
                self.push(Action::Sleep { ns });
            }
            Event::Timer { timer, period_ns } => self.timer(program, timer, period_ns, now, sync),
            Event::Yield => self.push(Action::Yield),
            Event::Lock(m) => self.push(Action::Lock(m)),
            Event::Unlock(m) => self.push(Action::Unlock(m)),
            Event::Wait { cond, mutex } => {
                self.push(Action::Wait { cond, mutex });
                self.push(Action::Lock(mutex));
            }
            Event::Signal(c) => self.push(Action::Signal(c)),
            Event::Broadcast(c) => self.push(Action::Broadcast(c)),
            Event::Barrier(b) => self.push(Action::Barrier(b)),
            Event::SemWait(s) => self.push(Action::SemWait(s)),
            Event::SemPost(s) => self.push(Action::SemPost(s)),
            Event::SemPostSync(s) => self.push(Action::SemPostSync(s)),
            Event::Suspend => self.push(Action::Suspend),
            Event::Resume(t) => {
                sync.set_stamp(t, now);
                self.push(Action::Resume(t));
            }
            Event::ClearToken => sync.clear_token(self.task),
            Event::Send { chan, msgs } => self.push(Action::Send { chan, msgs }),
            Event::Recv { chan } => self.push(Action::Recv { chan }),
            Event::Fork(t) => self.push(Action::Fork(t)),
            Event::Spawn(t) => self.push(Action::Spawn(t)),
            Event::Probe(tag) => self.probe(tag, 0),
            Event::Mark => self.mark_ns = now,
            Event::ProbeSinceMark(tag) => self.probe(tag, now.saturating_sub(self.mark_ns)),
            Event::ProbeWakeup => {
                if let Some(s) = sync.take_stamp(self.task) {
                    self.probe(ProbeTag::Wakeup, now.saturating_sub(s));
                }
            }
            Event::Claim { counter, until_ns } => {
                if until_ns.is_some_and(|u| now >= u) || !sync.claim(counter) {
                    return false;
                }
            }
            Event::ExitAfter { abs_ns } => {
                if now >= abs_ns {
                    return false;
                }
            }
            Event::Tally { interval_ns } => self.tally(interval_ns, now),
            Event::ListAdd(l) => sync.list_add(l, self.task),
            Event::WakeList(l) => {
                for t in sync.list_take(l) {
                    sync.set_stamp(t, now);
                    self.push(Action::Resume(t));
                }
            }
            Event::Exit => return false,
        }
        true
    }

    #[inline]
    fn tally(&mut self, interval_ns: u64, now: u64) {
        let t = self
            .rare
            .get_or_insert_with(Box::default)
            .tally
            .get_or_insert_with(|| Tally {
                count: 0,
                max_latency_ns: 0,
                next_emit_ns: (interval_ns > 0).then_some(interval_ns),
            });
        if let Some(b) = t.next_emit_ns
            && now >= b
        {
            let (count, max) = (t.count, t.max_latency_ns);
            t.count = 0;
            t.max_latency_ns = 0;
            t.next_emit_ns = Some((now / interval_ns + 1) * interval_ns);
            self.probe(ProbeTag::TallyCount, count);
            self.probe(ProbeTag::TallyMaxLatency, max);
        }
        let lat = now.saturating_sub(self.mark_ns);
        let t = self
            .rare
            .as_mut()
            .and_then(|r| r.tally.as_mut())
            .expect("tally set above");
        t.count += 1;
        t.max_latency_ns = t.max_latency_ns.max(lat);
    }

    /// Follows rt-app's run_event() for `rtapp_timer`: the first use sets the reference to the
    /// thread's start (`t_first`); every use adds one period; if that expiry is still ahead the
    /// thread sleeps until it (the wake-up latency is measured when it runs again), otherwise
    /// the expiry was missed: a relative timer re-bases on now, an absolute one keeps its grid,
    /// and the iteration's wake-up latency is reset to 0 (as rt-app does).
    fn timer(
        &mut self,
        program: &Program,
        timer: TimerId,
        period_ns: u64,
        now: u64,
        sync: &mut SyncState,
    ) {
        let start = self.start_ns;
        let st: &mut TimerState = match timer {
            TimerId::Local(i) => &mut self.local_timers[i as usize],
            TimerId::Shared(i) => sync.timer_mut(i),
        };
        let next = st.next_ns.unwrap_or(start).saturating_add(period_ns);
        st.next_ns = Some(next);
        let slack = next as i64 - now as i64;
        if let Some(iter) = self.iter.as_deref_mut().map(|l| &mut l.stats) {
            if program.cumulative_slack {
                iter.slack_ns += slack;
            } else {
                iter.slack_ns = slack;
            }
        }
        if now < next {
            self.queue
                .push((Action::SleepUntil { abs_ns: next }, Meas::Timer));
        } else {
            if st.relative {
                st.next_ns = Some(now);
            }
            if let Some(iter) = self.iter.as_deref_mut().map(|l| &mut l.stats) {
                iter.wu_lat_ns = 0;
            }
        }
    }
}
