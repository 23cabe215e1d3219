//! The task program model: phases of events, looped, as rt-app describes a thread.
//!
//! A [`Program`] is plain data. It is executed by a [`crate::ProgramState`], which turns it
//! into a stream of [`crate::Action`]s for the engine. Generators build programs from the same
//! events as rt-app files, plus a few events that benchmarks need (shared request counters,
//! wake lists, latency probes).

use serde::{Deserialize, Serialize};

use crate::ids::{
    BarrierId, ChanId, CondId, CounterId, CpusetId, ListId, MutexId, ProbeTag, SemId, TaskRef,
    TemplateId, TimerId,
};

pub use lbsim_kernel::Policy;

/// A phase's scheduling change (rt-app's phase-level `policy`/`priority`): each field left
/// `None` keeps the task's current value when the phase starts, as rt-app's `same` policy does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SchedChange {
    /// New policy, or keep the current one.
    pub policy: Option<Policy>,
    /// New nice value, or keep the current one.
    pub nice: Option<i32>,
}

/// Scheduling attributes of a task (policy and nice).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SchedAttr {
    /// The policy.
    pub policy: Policy,
    /// The nice value, -20..=19 (rt-app's `priority` for `SCHED_OTHER`).
    pub nice: i32,
}

/// How many times something repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Loops {
    /// A fixed number of iterations (0 runs nothing).
    Count(u64),
    /// Until the run ends (rt-app's `loop: -1`).
    Forever,
}

impl Loops {
    /// True when `done` iterations complete the loop.
    pub fn finished(self, done: u64) -> bool {
        match self {
            Loops::Count(n) => done >= n,
            Loops::Forever => false,
        }
    }
}

/// One event of a phase. rt-app's vocabulary, plus the generator events at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Event {
    /// rt-app `run`: `work_ns` of work at capacity 1024 (longer on a smaller CPU), stretched
    /// by the task's jitter.
    Run {
        /// Work at capacity 1024, ns.
        work_ns: u64,
    },
    /// rt-app `runtime`: run for `ns` of wall time, whatever the CPU's capacity.
    RunWall {
        /// Wall time, ns.
        ns: u64,
    },
    /// rt-app `sleep`.
    Sleep {
        /// Sleep length, ns.
        ns: u64,
    },
    /// Sleep `min_ns` plus a uniform draw in `0..spread_ns` from the task's stream
    /// (schbench's message thread: `usleep(sleeptime + rand() % (sleeptime / 4))`).
    SleepRandom {
        /// Fixed part, ns.
        min_ns: u64,
        /// Width of the random part, ns (0: no random part).
        spread_ns: u64,
    },
    /// rt-app `timer`: wait for the next expiry of a periodic timer.
    Timer {
        /// Which timer.
        timer: TimerId,
        /// Period, ns.
        period_ns: u64,
    },
    /// rt-app `yield`: `sched_yield()`.
    Yield,
    /// rt-app `lock`.
    Lock(MutexId),
    /// rt-app `unlock`.
    Unlock(MutexId),
    /// rt-app `wait`: `pthread_cond_wait(cond, mutex)`; the caller must hold `mutex`, which is
    /// released while waiting and re-acquired before the event completes.
    Wait {
        /// The condition variable.
        cond: CondId,
        /// The mutex released while waiting.
        mutex: MutexId,
    },
    /// rt-app `signal`: wake the first waiter of `cond`.
    Signal(CondId),
    /// rt-app `broad`: wake every waiter of `cond`.
    Broadcast(CondId),
    /// rt-app `barrier`.
    Barrier(BarrierId),
    /// `sem_wait`.
    SemWait(SemId),
    /// `sem_post`.
    SemPost(SemId),
    /// A post as [`Event::SemPost`] whose wake-up passes `WF_SYNC` (the waker is about to
    /// sleep, as a pipe's writer does): a trace replay's wake-up that the recording issued
    /// with it (lbsim's traces say so).
    SemPostSync(SemId),
    /// Wait for this task's wake-up token (futex wait on the task's own word; returns at once
    /// if the token was already posted).
    Suspend,
    /// Post `task`'s wake-up token (stamping the wake-up time for [`Event::ProbeWakeup`]).
    Resume(TaskRef),
    /// Clear this task's own wake-up token (schbench sets its futex word to BLOCKED).
    ClearToken,
    /// Write `msgs` messages to a channel, blocking while it lacks room for all of them.
    Send {
        /// The channel.
        chan: ChanId,
        /// Number of messages, written atomically.
        msgs: u32,
    },
    /// Read one message, blocking while the channel is empty.
    Recv {
        /// The channel.
        chan: ChanId,
    },
    /// rt-app `fork`: create a new thread from a task definition.
    Fork(TemplateId),
    /// `pthread_create()` of a task of the spec marked [`crate::TaskSpec::spawned`]: the
    /// engine forks it from this task's CPU now (a benchmark whose threads start their own
    /// threads, as schbench's message threads start their workers).
    Spawn(TaskRef),
    /// Record a probe with value 0.
    Probe(ProbeTag),
    /// Remember the current time (for [`Event::ProbeSinceMark`]).
    Mark,
    /// Record a probe whose value is the time since the last [`Event::Mark`].
    ProbeSinceMark(ProbeTag),
    /// Record a [`ProbeTag::Wakeup`] probe with the time since this task was last stamped by a
    /// [`Event::Resume`] or [`Event::WakeList`] (nothing if it was not stamped since).
    ProbeWakeup,
    /// Take one ticket from a shared counter; if none is left (or `until_ns` has passed) the
    /// task exits instead. This is sysbench's request generator.
    Claim {
        /// The counter.
        counter: CounterId,
        /// Absolute time after which no ticket is handed out (sysbench `--time`).
        until_ns: Option<u64>,
    },
    /// The task exits if `now >= abs_ns` (a benchmark's runtime is over).
    ExitAfter {
        /// Absolute time, ns.
        abs_ns: u64,
    },
    /// Count one completed operation, and track the largest time since the last
    /// [`Event::Mark`] among the operations of the current interval. At every multiple of
    /// `interval_ns` of simulated time (0: never) and when the program ends, the interpreter
    /// emits [`ProbeTag::TallyCount`] and [`ProbeTag::TallyMaxLatency`] for the operations
    /// since the previous emission. Benchmarks that complete millions of operations report
    /// through tallies instead of one probe per operation.
    Tally {
        /// Reporting interval, ns (0: only at the end).
        interval_ns: u64,
    },
    /// Add this task to a wake list (schbench's `xlist_add`).
    ListAdd(ListId),
    /// Take the whole wake list and [`Event::Resume`] each task on it, most recently added first
    /// (schbench's `xlist_wake_all`; the stamp is the time the list is taken).
    WakeList(ListId),
    /// The task exits.
    Exit,
}

impl Event {
    /// True if the event always lets simulated time pass or always blocks, so that a loop
    /// containing it cannot spin forever at one instant.
    pub fn makes_progress(&self) -> bool {
        match self {
            Event::Run { work_ns } => *work_ns > 0,
            Event::RunWall { ns } | Event::Sleep { ns } => *ns > 0,
            Event::SleepRandom { min_ns, spread_ns } => *min_ns > 0 || *spread_ns > 1,
            Event::Timer { period_ns, .. } => *period_ns > 0,
            Event::Wait { .. }
            | Event::Barrier(_)
            | Event::Suspend
            | Event::SemWait(_)
            | Event::Recv { .. }
            | Event::Claim { .. }
            | Event::ExitAfter { .. }
            | Event::Exit => true,
            _ => false,
        }
    }
}

/// A named sequence of events, repeated `loops` times, with optional affinity, scheduling and
/// task-group changes applied at the start of each iteration (rt-app's phase).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    /// The phase's name (rt-app key; generators name theirs).
    pub name: String,
    /// Iterations before the next phase.
    pub loops: Loops,
    /// The events in order.
    pub events: Vec<Event>,
    /// Phase-level affinity (rt-app `cpus` in a phase); `None` falls back to the task's.
    pub cpus: Option<CpusetId>,
    /// Phase-level scheduling change; `None` keeps the current attributes.
    pub sched: Option<SchedChange>,
    /// Phase-level task group (rt-app's phase `taskgroup`): the cgroup path (`/` is the root
    /// cgroup) the thread moves itself into at the start of each iteration, unless it is in
    /// that cgroup already. `None` leaves it in whatever cgroup it is in, which may be an
    /// earlier phase's: rt-app's `set_thread_taskgroup()` returns at once for a phase
    /// without a taskgroup, and never goes back to the task-level one by itself.
    #[serde(default)]
    pub taskgroup: Option<String>,
}

impl Phase {
    /// A phase with the given events, looped once, without property changes.
    pub fn once(name: impl Into<String>, events: Vec<Event>) -> Phase {
        Phase {
            name: name.into(),
            loops: Loops::Count(1),
            events,
            cpus: None,
            sched: None,
            taskgroup: None,
        }
    }
}

/// A task's whole behaviour: phases run in order, the sequence repeated `loops` times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Program {
    /// The phases.
    pub phases: Vec<Phase>,
    /// Iterations of the whole phase sequence (rt-app's task-level `loop`).
    pub loops: Loops,
    /// Per-thread timers ([`TimerId::Local`] indexes this table); each instance of the task
    /// gets its own copy of their state.
    pub local_timers: Vec<crate::sync::TimerSpec>,
    /// Emit the `Rtapp*` probes around every phase iteration (rt-app's per-thread log).
    pub rtapp_log: bool,
    /// rt-app `global.cumulative_slack`: the iteration's slack sums every timer's slack
    /// instead of keeping the last one.
    pub cumulative_slack: bool,
}

impl Program {
    /// One phase of `events` repeated forever.
    pub fn forever(events: Vec<Event>) -> Program {
        Program {
            phases: vec![Phase::once("main", events)],
            loops: Loops::Forever,
            local_timers: Vec::new(),
            rtapp_log: false,
            cumulative_slack: false,
        }
    }

    /// `prologue` once, then `body` forever.
    pub fn prologue_then_forever(prologue: Vec<Event>, body: Vec<Event>) -> Program {
        let mut body_phase = Phase::once("loop", body);
        body_phase.loops = Loops::Forever;
        Program {
            phases: vec![Phase::once("setup", prologue), body_phase],
            loops: Loops::Count(1),
            local_timers: Vec::new(),
            rtapp_log: false,
            cumulative_slack: false,
        }
    }

    /// Every event of every phase, in order.
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.phases.iter().flat_map(|p| p.events.iter())
    }

    /// True if the program may never end by itself: it has a loop that repeats forever with
    /// no event that can end the program ([`Event::Exit`], [`Event::ExitAfter`],
    /// [`Event::Claim`]). Such a workload needs a run duration.
    pub fn may_run_forever(&self) -> bool {
        let ends = |e: &Event| {
            matches!(
                e,
                Event::Exit | Event::ExitAfter { .. } | Event::Claim { .. }
            )
        };
        let phase_forever = self
            .phases
            .iter()
            .any(|p| p.loops == Loops::Forever && !p.events.iter().any(ends));
        let program_forever = self.loops == Loops::Forever && !self.events().any(ends);
        phase_forever || program_forever
    }

    /// Checks that no loop that can repeat forever spins without letting time pass.
    ///
    /// Returns the name of the first offending phase. A phase that loops forever must
    /// contain an event that [`Event::makes_progress`]; so must the whole program if it
    /// loops forever.
    pub fn find_zero_time_loop(&self) -> Option<&str> {
        for phase in &self.phases {
            if phase.loops == Loops::Forever && !phase.events.iter().any(Event::makes_progress) {
                return Some(&phase.name);
            }
        }
        if self.loops == Loops::Forever && !self.events().any(Event::makes_progress) {
            return Some(self.phases.first().map_or("", |p| p.name.as_str()));
        }
        None
    }
}
