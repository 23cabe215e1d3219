//! What a task asks the engine to do next.

use serde::{Deserialize, Serialize};

use crate::ids::{
    BarrierId, ChanId, CondId, CpusetId, MutexId, ProbeTag, SemId, TaskRef, TemplateId,
};
use crate::program::SchedAttr;

/// One step of a task, returned by [`crate::ProgramState::next_action`].
///
/// Time-consuming actions (`Run`, `RunWall`, `Sleep`, `SleepUntil`, and the sync actions when
/// they block) end at a later simulated time; every other action takes no simulated time of
/// its own and the engine asks for the next action at once (charging whatever syscall, switch
/// or wake-up cost its cost model says).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Action {
    /// Run until `work_ns` of work at capacity 1024 is done: on a CPU of capacity `c` it needs
    /// `work_ns * 1024 / c` ns of running time. Preemption pauses it.
    Run {
        /// Work at capacity 1024, ns.
        work_ns: u64,
    },
    /// Run until `ns` of wall time have passed since the action started, whatever the CPU's
    /// capacity and even while preempted: it ends at the first instant the task is running at
    /// or after `start + ns` (rt-app `runtime`, schbench's `usec_spin`).
    RunWall {
        /// Wall time, ns.
        ns: u64,
    },
    /// Block for `ns` (`nanosleep`); the engine wakes the task at `now + ns`.
    Sleep {
        /// Sleep length, ns.
        ns: u64,
    },
    /// Block until the absolute time `abs_ns` (`clock_nanosleep(TIMER_ABSTIME)`); if
    /// `abs_ns <= now` it does not block.
    SleepUntil {
        /// Absolute simulated time, ns.
        abs_ns: u64,
    },
    /// `sched_yield()`.
    Yield,
    /// Take a mutex: [`crate::SyncState::apply`].
    Lock(MutexId),
    /// Release a mutex: [`crate::SyncState::apply`].
    Unlock(MutexId),
    /// Release `mutex` and wait on `cond`: [`crate::SyncState::apply`]. After it completes the
    /// program re-takes the mutex with a separate [`Action::Lock`].
    Wait {
        /// The condition variable.
        cond: CondId,
        /// The mutex to release while waiting.
        mutex: MutexId,
    },
    /// Wake the first waiter of a condition variable.
    Signal(CondId),
    /// Wake every waiter of a condition variable.
    Broadcast(CondId),
    /// Arrive at a barrier.
    Barrier(BarrierId),
    /// `sem_wait`.
    SemWait(SemId),
    /// `sem_post`.
    SemPost(SemId),
    /// `sem_post` whose wake-up passes `WF_SYNC`.
    SemPostSync(SemId),
    /// Wait for this task's wake-up token.
    Suspend,
    /// Post a task's wake-up token, waking it if it is suspended.
    Resume(TaskRef),
    /// Write messages to a channel.
    Send {
        /// The channel.
        chan: ChanId,
        /// Messages written atomically.
        msgs: u32,
    },
    /// Read one message from a channel.
    Recv {
        /// The channel.
        chan: ChanId,
    },
    /// Create a new task from `spec.templates[id]` with
    /// [`crate::WorkloadSpec::fork_task`].
    Fork(TemplateId),
    /// Create `spec.tasks[task]`, a [`crate::TaskSpec::spawned`] task, forking it from this
    /// task's CPU.
    Spawn(TaskRef),
    /// A zero-time marker: the engine records `(task, now, tag, value)` in
    /// [`crate::RunObservations::probes`].
    Probe {
        /// What the record means.
        tag: ProbeTag,
        /// Tag-specific value (see [`ProbeTag`]).
        value: u64,
    },
    /// Change the task's affinity (`sched_setaffinity`); `None` is every CPU of the machine.
    SetAffinity(Option<CpusetId>),
    /// Change the task's policy and nice value (`sched_setattr`/`setpriority`).
    SetSched(SchedAttr),
    /// Move the task into the cgroup at this path (`/` is the root cgroup) by writing its tid
    /// into the cgroup's `tasks` file, as rt-app's `cgroup_attach_task()` does; the kernel
    /// then moves it to that cgroup's task group (`cpu_cgroup_attach()` ->
    /// `sched_move_task()`).
    SetTaskGroup(String),
    /// The task exits. `next_action` keeps returning `Exit` afterwards.
    Exit,
}

impl Action {
    /// True for the actions the engine must pass to [`crate::SyncState::apply`].
    pub fn is_sync(&self) -> bool {
        matches!(
            self,
            Action::Lock(_)
                | Action::Unlock(_)
                | Action::Wait { .. }
                | Action::Signal(_)
                | Action::Broadcast(_)
                | Action::Barrier(_)
                | Action::SemWait(_)
                | Action::SemPost(_)
                | Action::SemPostSync(_)
                | Action::Suspend
                | Action::Resume(_)
                | Action::Send { .. }
                | Action::Recv { .. }
        )
    }
}
