//! A whole workload: tasks, their sync objects, and how to report on them.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use thiserror::Error;

use crate::generators::WorkloadError;
use crate::ids::{
    BarrierId, ChanId, CondId, CounterId, CpusetId, ListId, MutexId, SemId, TaskRef, TemplateId,
    TimerId,
};
use crate::interp::ProgramState;
use crate::obs::RunObservations;
use crate::program::{Event, Policy, Program};
use crate::report::{PartReport, Report};
use crate::sync::{SyncSpec, SyncState};

/// One task (thread) to create: rt-app's task object with its instance count expanded, or
/// one thread of a generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    /// The thread's name (rt-app: `<name>-<index>`; generators: the real tool's thread role
    /// and index).
    pub name: String,
    /// Scheduling policy at creation.
    pub policy: Policy,
    /// Nice value at creation, -20..=19.
    pub nice: i32,
    /// Affinity at creation (`spec.cpusets`); `None` is every CPU.
    pub affinity: Option<CpusetId>,
    /// A custom slice request (rt-app `dl-runtime` on `SCHED_OTHER`, honoured by kernels from
    /// v6.12 with EEVDF); `None` uses the default slice.
    pub custom_slice_ns: Option<u64>,
    /// The engine first wakes the task at `max(creation time, start_ns)` (rt-app's `delay`
    /// counted from the use-case start); timers count from it too.
    pub start_ns: u64,
    /// Run-length jitter in percent applied to every `run` (drawn from the task's stream).
    pub jitter_pct: u32,
    /// Fairness group: reports compare the work of tasks with the same group.
    pub group: String,
    /// Index of the [`Part`] (the `--workload` option) the task belongs to.
    pub part: u16,
    /// The cgroup v2 path of the task's task group (`cgroup=/a/b`; rt-app's `taskgroup`);
    /// `None` is the root group.
    pub cgroup: Option<String>,
    /// The session whose autogroup the task is in (`session=N`; autogroup.c numbers each
    /// `setsid()`'s group): `None` (or 0) is init's session, whose autogroup is the root group.
    /// With `sched_autogroup_enabled` on, a task of session N >= 1 in the root cgroup runs in
    /// `/autogroup-N` (`autogroup_task_group()`).
    pub session: Option<u32>,
    /// Created by another task's [`Event::Spawn`] (its `pthread_create()`), from that task's
    /// CPU when it runs the event, rather than by the launcher at `start_ns`. The task keeps
    /// its [`TaskRef`] (its index in `spec.tasks`) either way.
    pub spawned: bool,
    /// What the task does.
    pub program: Arc<Program>,
}

impl TaskSpec {
    /// The interpreter that runs this task as `task`.
    pub fn start(&self, task: TaskRef) -> ProgramState {
        ProgramState::new(task, self)
    }
}

/// One `--workload` option of the run: which tasks and fork templates came from it and how to
/// report on them.
#[derive(Clone, Debug)]
pub struct Part {
    /// The option as given (`sysbench-cpu:threads=8,requests=1000`, `rtapp:file.json`).
    pub label: String,
    /// The report to print, with the parameters it needs.
    pub report: Arc<dyn PartReport>,
    /// Its initial tasks (indices into `spec.tasks`, which are also their [`TaskRef`]s).
    pub tasks: Range<u32>,
    /// Its fork templates (indices into `spec.templates`).
    pub templates: Range<u32>,
    /// How long the tool itself asks to run (schbench `-r`, ebizzy `-S`, tbench's warmup and
    /// runtime, sysbench `--time`, rt-app `global.duration`); `None` when it stops after a
    /// count (pipe loops, sysbench requests) or never.
    pub asks_ns: Option<u64>,
}

impl PartialEq for Part {
    fn eq(&self, other: &Part) -> bool {
        self.label == other.label
            && self.report.eq_dyn(other.report.as_ref())
            && self.tasks == other.tasks
            && self.templates == other.templates
            && self.asks_ns == other.asks_ns
    }
}

/// A non-fatal remark about the input (an rt-app key lbsim accepts but does not model, ...).
/// Libraries return warnings as data; the binary prints them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// Where the remark comes from (a file path or a workload option).
    pub source: String,
    /// Line and column (1-based) in the source, when known.
    pub location: Option<(usize, usize)>,
    /// The remark.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Some((l, c)) => write!(f, "{}:{}:{}: {}", self.source, l, c, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

/// A workload: the tasks to create at start, the task definitions `fork` events create later,
/// the shared sync objects, and one [`Part`] per `--workload` option.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// Tasks created at the start, in order; `tasks[i]` runs as `TaskRef(i)`.
    pub tasks: Vec<TaskSpec>,
    /// Task definitions for [`crate::Action::Fork`].
    pub templates: Vec<TaskSpec>,
    /// CPU sets referenced by [`TaskSpec::affinity`] and [`crate::Action::SetAffinity`]
    /// (CPU ids, ascending, non-empty). The engine checks them against the machine.
    pub cpusets: Vec<Vec<u32>>,
    /// The sync objects.
    pub sync: SyncSpec,
    /// One per `--workload` option.
    pub parts: Vec<Part>,
    /// The workload's own length (rt-app `global.duration`, a benchmark's runtime); `None`
    /// runs until every task has exited or the command line's `--duration`.
    pub duration_ns: Option<u64>,
    /// Remarks for the user.
    pub warnings: Vec<Warning>,
    /// The CPU count of the machine the workload was recorded on (a `trace:FILE`'s), which
    /// the run's machine defaults to when no topology is given; the largest of the parts'.
    pub cpus_hint: Option<u32>,
    /// `cpusets` indexed by their CPU lists, for [`WorkloadSpec::add_cpuset`].
    cpuset_index: CpusetIndex,
}

/// A cache of `WorkloadSpec::cpusets`: each CPU list's first id, so that interning a cpuset
/// is O(log n) rather than a linear search (`hogs:cpus=0-39999` adds 40,000 of them). It
/// covers `cpusets[..indexed]`; [`WorkloadSpec::add_cpuset`] indexes the rest first (the
/// sets [`WorkloadSpec::combine`] appended). Derived data: it never makes two workloads
/// unequal.
#[derive(Clone, Debug, Default)]
struct CpusetIndex {
    ids: BTreeMap<Vec<u32>, u32>,
    indexed: usize,
}

impl PartialEq for CpusetIndex {
    fn eq(&self, _: &CpusetIndex) -> bool {
        true
    }
}

/// An invalid workload specification (a bug in a generator or an rt-app file the parser let
/// through). Each variant names the task.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecError {
    /// A program refers to a sync object, template, cpuset or task that does not exist.
    #[error("task {task}: {what} {index} does not exist")]
    DanglingId {
        /// The task.
        task: String,
        /// Kind of object.
        what: &'static str,
        /// The bad index.
        index: u32,
    },
    /// A loop that repeats forever contains no event that lets time pass or blocks.
    #[error(
        "task {task}: phase {phase:?} loops forever without any event that takes time or blocks (run, runtime, sleep, timer, wait, barrier, suspend, ...)"
    )]
    ZeroTimeLoop {
        /// The task.
        task: String,
        /// The phase.
        phase: String,
    },
    /// A send writes more messages at once than the channel holds: it could never complete.
    #[error(
        "task {task}: sends {msgs} messages at once to channel {chan:?}, which holds {capacity}"
    )]
    SendTooLarge {
        /// The task.
        task: String,
        /// The channel's name.
        chan: String,
        /// Messages per send.
        msgs: u32,
        /// Channel capacity.
        capacity: u32,
    },
    /// A spawn of a task created at the start, or a spawned task that no other task spawns
    /// exactly once.
    #[error("task {task}: spawns task {target}, which {why}")]
    BadSpawn {
        /// The task holding the spawn event (or the spawned task itself).
        task: String,
        /// The task spawned.
        target: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A nice value outside -20..=19.
    #[error("task {task}: nice {nice} is outside -20..=19")]
    BadNice {
        /// The task.
        task: String,
        /// The value.
        nice: i32,
    },
    /// An empty CPU set.
    #[error("cpuset {index} is empty")]
    EmptyCpuset {
        /// Its index.
        index: u32,
    },
}

/// The engine could not fork a task.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForkError {
    /// rt-app stops a run when one forked task definition has been forked `FORKS_LIMIT` (1024)
    /// times, to stop fork bombs; lbsim does the same.
    #[error("task {template} was forked {limit} times, rt-app's limit")]
    Limit {
        /// The task definition's name.
        template: String,
        /// The limit.
        limit: u32,
    },
    /// No such template.
    #[error("fork template {0} does not exist")]
    NoTemplate(u32),
}

/// rt-app's `FORKS_LIMIT`: forks allowed per forked task definition.
pub const FORKS_LIMIT: u32 = 1024;

/// Index offsets applied when workloads are combined.
#[derive(Clone, Copy, Debug, Default)]
struct Offsets {
    task: u32,
    template: u32,
    cpuset: u32,
    mutex: u32,
    cond: u32,
    barrier: u32,
    sem: u32,
    chan: u32,
    counter: u32,
    list: u32,
    timer: u32,
    part: u16,
}

fn remap_event(e: &Event, o: &Offsets) -> Event {
    match *e {
        Event::Timer {
            timer: TimerId::Shared(i),
            period_ns,
        } => Event::Timer {
            timer: TimerId::Shared(i + o.timer),
            period_ns,
        },
        Event::Lock(m) => Event::Lock(MutexId(m.0 + o.mutex)),
        Event::Unlock(m) => Event::Unlock(MutexId(m.0 + o.mutex)),
        Event::Wait { cond, mutex } => Event::Wait {
            cond: CondId(cond.0 + o.cond),
            mutex: MutexId(mutex.0 + o.mutex),
        },
        Event::Signal(c) => Event::Signal(CondId(c.0 + o.cond)),
        Event::Broadcast(c) => Event::Broadcast(CondId(c.0 + o.cond)),
        Event::Barrier(b) => Event::Barrier(BarrierId(b.0 + o.barrier)),
        Event::SemWait(s) => Event::SemWait(SemId(s.0 + o.sem)),
        Event::SemPost(s) => Event::SemPost(SemId(s.0 + o.sem)),
        Event::SemPostSync(s) => Event::SemPostSync(SemId(s.0 + o.sem)),
        Event::Resume(t) => Event::Resume(TaskRef(t.0 + o.task)),
        Event::Spawn(t) => Event::Spawn(TaskRef(t.0 + o.task)),
        Event::Send { chan, msgs } => Event::Send {
            chan: ChanId(chan.0 + o.chan),
            msgs,
        },
        Event::Recv { chan } => Event::Recv {
            chan: ChanId(chan.0 + o.chan),
        },
        Event::Fork(t) => Event::Fork(TemplateId(t.0 + o.template)),
        Event::Claim { counter, until_ns } => Event::Claim {
            counter: CounterId(counter.0 + o.counter),
            until_ns,
        },
        Event::ListAdd(l) => Event::ListAdd(ListId(l.0 + o.list)),
        Event::WakeList(l) => Event::WakeList(ListId(l.0 + o.list)),
        ref other => other.clone(),
    }
}

fn remap_program(p: &Program, o: &Offsets) -> Program {
    let mut q = p.clone();
    for phase in &mut q.phases {
        phase.cpus = phase.cpus.map(|c| CpusetId(c.0 + o.cpuset));
        for e in &mut phase.events {
            *e = remap_event(e, o);
        }
    }
    q
}

/// The last program [`remap_task`] renumbered and its renumbered copy.
type RemapMemo = Option<(Arc<Program>, Arc<Program>)>;

/// `t` with its ids renumbered by `o`. Tasks that share a program (a generator's threads:
/// ten thousand `busy` threads, one program) share its renumbered copy too: `memo` holds the
/// last one made, for the next task of the same program.
fn remap_task(t: &TaskSpec, o: &Offsets, memo: &mut RemapMemo) -> TaskSpec {
    let mut t = t.clone();
    t.affinity = t.affinity.map(|c| CpusetId(c.0 + o.cpuset));
    t.part += o.part;
    let program = match memo {
        Some((from, to)) if Arc::ptr_eq(from, &t.program) => Arc::clone(to),
        _ => {
            let to = Arc::new(remap_program(&t.program, o));
            *memo = Some((Arc::clone(&t.program), Arc::clone(&to)));
            to
        }
    };
    t.program = program;
    t
}

fn len32<T>(v: &[T]) -> u32 {
    u32::try_from(v.len()).expect("fewer than 2^32 objects")
}

impl WorkloadSpec {
    /// An empty workload (add tasks and objects, then a [`Part`]).
    pub fn empty() -> WorkloadSpec {
        WorkloadSpec {
            tasks: Vec::new(),
            templates: Vec::new(),
            cpusets: Vec::new(),
            sync: SyncSpec::default(),
            parts: Vec::new(),
            duration_ns: None,
            warnings: Vec::new(),
            cpus_hint: None,
            cpuset_index: CpusetIndex::default(),
        }
    }

    /// Interns a CPU set (sorted, deduplicated), returning its id: the first cpuset with
    /// these CPUs, or a new one. O(log n) in the number of cpusets.
    pub fn add_cpuset(&mut self, mut cpus: Vec<u32>) -> CpusetId {
        cpus.sort_unstable();
        cpus.dedup();
        let index = &mut self.cpuset_index;
        for (i, c) in self.cpusets.iter().enumerate().skip(index.indexed) {
            index.ids.entry(c.clone()).or_insert(i as u32);
        }
        index.indexed = self.cpusets.len();
        if let Some(&i) = index.ids.get(&cpus) {
            return CpusetId(i);
        }
        let id = len32(&self.cpusets);
        index.ids.insert(cpus.clone(), id);
        self.cpusets.push(cpus);
        index.indexed = self.cpusets.len();
        CpusetId(id)
    }

    /// The CPUs of a cpuset.
    pub fn cpuset(&self, id: CpusetId) -> &[u32] {
        &self.cpusets[id.index()]
    }

    /// The highest CPU id any task may be pinned to (for the engine's check against the
    /// machine), if any task is pinned.
    pub fn max_cpu(&self) -> Option<u32> {
        self.cpusets.iter().filter_map(|c| c.last().copied()).max()
    }

    /// True if the run has no natural end: no `duration_ns` and some task may loop forever
    /// ([`Program::may_run_forever`]). The engine then needs a `--duration`.
    pub fn needs_duration(&self) -> bool {
        self.duration_ns.is_none() && self.tasks.iter().any(|t| t.program.may_run_forever())
    }

    /// Fresh run-time state for this workload's sync objects.
    pub fn new_sync_state(&self) -> SyncState {
        SyncState::new(&self.sync, self.templates.len()).with_spec_tasks(self.tasks.len())
    }

    /// Combines several workloads (several `--workload` options) into one run: tasks,
    /// templates, cpusets and sync objects are concatenated and every id renumbered. The run's
    /// own length is the longest of the parts' lengths.
    pub fn combine(specs: Vec<WorkloadSpec>) -> WorkloadSpec {
        let mut out = WorkloadSpec::empty();
        for s in specs {
            let o = Offsets {
                task: len32(&out.tasks),
                template: len32(&out.templates),
                cpuset: len32(&out.cpusets),
                mutex: len32(&out.sync.mutexes),
                cond: len32(&out.sync.conds),
                barrier: len32(&out.sync.barriers),
                sem: len32(&out.sync.sems),
                chan: len32(&out.sync.chans),
                counter: len32(&out.sync.counters),
                list: len32(&out.sync.lists),
                timer: len32(&out.sync.timers),
                part: u16::try_from(out.parts.len()).expect("fewer than 65536 workloads"),
            };
            let mut memo = None;
            out.tasks
                .extend(s.tasks.iter().map(|t| remap_task(t, &o, &mut memo)));
            out.templates
                .extend(s.templates.iter().map(|t| remap_task(t, &o, &mut memo)));
            out.cpusets.extend(s.cpusets);
            out.sync.mutexes.extend(s.sync.mutexes);
            out.sync.conds.extend(s.sync.conds);
            out.sync.barriers.extend(s.sync.barriers);
            out.sync.sems.extend(s.sync.sems);
            out.sync.chans.extend(s.sync.chans);
            out.sync.counters.extend(s.sync.counters);
            out.sync.lists.extend(s.sync.lists);
            out.sync.timers.extend(s.sync.timers);
            out.parts.extend(s.parts.into_iter().map(|mut p| {
                p.tasks = p.tasks.start + o.task..p.tasks.end + o.task;
                p.templates = p.templates.start + o.template..p.templates.end + o.template;
                p
            }));
            out.duration_ns = match (out.duration_ns, s.duration_ns) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            out.warnings.extend(s.warnings);
            out.cpus_hint = out.cpus_hint.max(s.cpus_hint);
        }
        out
    }

    /// The task the engine creates for [`crate::Action::Fork`]`(template)`, which will run as
    /// `new_task`. Names follow rt-app: `<name>-<index>-<nnnn>` with the fork's sequence
    /// number per template.
    pub fn fork_task(
        &self,
        template: TemplateId,
        sync: &mut SyncState,
        new_task: TaskRef,
    ) -> Result<TaskSpec, ForkError> {
        let t = self
            .templates
            .get(template.index())
            .ok_or(ForkError::NoTemplate(template.0))?;
        let seq = sync.next_fork_seq(template);
        if seq >= FORKS_LIMIT {
            return Err(ForkError::Limit {
                template: t.name.clone(),
                limit: FORKS_LIMIT,
            });
        }
        let mut spec = t.clone();
        spec.name = format!("{}-{}-{:04}", t.name, new_task.0, seq);
        Ok(spec)
    }

    /// Checks ids, nice values, channel sizes and zero-time loops.
    pub fn validate(&self) -> Result<(), SpecError> {
        for (i, c) in self.cpusets.iter().enumerate() {
            if c.is_empty() {
                return Err(SpecError::EmptyCpuset { index: i as u32 });
            }
        }
        let n_tasks = len32(&self.tasks);
        for t in self.tasks.iter().chain(self.templates.iter()) {
            self.validate_task(t, n_tasks)?;
        }
        self.validate_spawns()?;
        Ok(())
    }

    /// Every [`TaskSpec::spawned`] task is the target of exactly one [`Event::Spawn`] among
    /// the initial tasks' programs (templates may not spawn: a second instance would spawn the
    /// same thread again), so that each such thread is created once.
    fn validate_spawns(&self) -> Result<(), SpecError> {
        for t in &self.templates {
            if let Some(Event::Spawn(x)) = t.program.events().find(|e| matches!(e, Event::Spawn(_)))
            {
                return Err(SpecError::BadSpawn {
                    task: t.name.clone(),
                    target: self.tasks[x.index()].name.clone(),
                    why: "a fork template would create again at each fork",
                });
            }
        }
        let mut spawns = vec![0u32; self.tasks.len()];
        for t in &self.tasks {
            for e in t.program.events() {
                if let Event::Spawn(x) = e {
                    spawns[x.index()] = spawns[x.index()].saturating_add(1);
                }
            }
        }
        for (t, &n) in self.tasks.iter().zip(&spawns) {
            if t.spawned && n != 1 {
                return Err(SpecError::BadSpawn {
                    task: t.name.clone(),
                    target: t.name.clone(),
                    why: if n == 0 {
                        "no task spawns"
                    } else {
                        "more than one event spawns"
                    },
                });
            }
        }
        Ok(())
    }

    fn validate_task(&self, t: &TaskSpec, n_tasks: u32) -> Result<(), SpecError> {
        let dangling = |what: &'static str, index: u32| SpecError::DanglingId {
            task: t.name.clone(),
            what,
            index,
        };
        if !(-20..=19).contains(&t.nice) {
            return Err(SpecError::BadNice {
                task: t.name.clone(),
                nice: t.nice,
            });
        }
        let s = &self.sync;
        let check = |what: &'static str, index: u32, len: usize| {
            if (index as usize) < len {
                Ok(())
            } else {
                Err(dangling(what, index))
            }
        };
        if let Some(c) = t.affinity {
            check("cpuset", c.0, self.cpusets.len())?;
        }
        for phase in &t.program.phases {
            if let Some(c) = phase.cpus {
                check("cpuset", c.0, self.cpusets.len())?;
            }
            if let Some(nice) = phase.sched.and_then(|a| a.nice)
                && !(-20..=19).contains(&nice)
            {
                return Err(SpecError::BadNice {
                    task: t.name.clone(),
                    nice,
                });
            }
            for e in &phase.events {
                match *e {
                    Event::Timer { timer, .. } => match timer {
                        TimerId::Local(i) => check("local timer", i, t.program.local_timers.len())?,
                        TimerId::Shared(i) => check("timer", i, s.timers.len())?,
                    },
                    Event::Lock(m) | Event::Unlock(m) => check("mutex", m.0, s.mutexes.len())?,
                    Event::Wait { cond, mutex } => {
                        check("condition variable", cond.0, s.conds.len())?;
                        check("mutex", mutex.0, s.mutexes.len())?;
                    }
                    Event::Signal(c) | Event::Broadcast(c) => {
                        check("condition variable", c.0, s.conds.len())?;
                    }
                    Event::Barrier(b) => check("barrier", b.0, s.barriers.len())?,
                    Event::SemWait(x) | Event::SemPost(x) | Event::SemPostSync(x) => {
                        check("semaphore", x.0, s.sems.len())?
                    }
                    Event::Resume(x) => check("task", x.0, n_tasks as usize)?,
                    Event::Spawn(x) => {
                        check("task", x.0, n_tasks as usize)?;
                        if !self.tasks[x.index()].spawned {
                            return Err(SpecError::BadSpawn {
                                task: t.name.clone(),
                                target: self.tasks[x.index()].name.clone(),
                                why: "is created at the start",
                            });
                        }
                    }
                    Event::Send { chan, msgs } => {
                        check("channel", chan.0, s.chans.len())?;
                        let c = &s.chans[chan.index()];
                        if msgs > c.capacity_msgs {
                            return Err(SpecError::SendTooLarge {
                                task: t.name.clone(),
                                chan: c.name.clone(),
                                msgs,
                                capacity: c.capacity_msgs,
                            });
                        }
                    }
                    Event::Recv { chan } => check("channel", chan.0, s.chans.len())?,
                    Event::Fork(x) => check("fork template", x.0, self.templates.len())?,
                    Event::Claim { counter, .. } => check("counter", counter.0, s.counters.len())?,
                    Event::ListAdd(l) | Event::WakeList(l) => {
                        check("wake list", l.0, s.lists.len())?
                    }
                    _ => {}
                }
            }
        }
        if let Some(phase) = t.program.find_zero_time_loop() {
            return Err(SpecError::ZeroTimeLoop {
                task: t.name.clone(),
                phase: phase.to_string(),
            });
        }
        Ok(())
    }

    /// The reports of every part, in `--workload` order.
    pub fn reports(&self, obs: &RunObservations) -> Vec<Report> {
        (0..self.parts.len())
            .map(|i| crate::report::part_report(self, i, obs))
            .collect()
    }

    /// When the workload is one part that re-runs itself in rounds (`schbench -a`): the title
    /// of the one-line-per-round summary (each line is the first line of a round's report).
    pub fn rounds(&self) -> Option<&'static str> {
        match self.parts.as_slice() {
            [part] => part.report.rounds(),
            _ => None,
        }
    }

    /// The workload of the next round, from this round's [`WorkloadSpec::reports`]; `None`
    /// when the workload does not run in rounds or its search is over.
    pub fn next_round(&self, reports: &[Report]) -> Option<Result<WorkloadSpec, WorkloadError>> {
        match (self.parts.as_slice(), reports) {
            ([part], [report]) => part.report.next_round(report),
            _ => None,
        }
    }
}
