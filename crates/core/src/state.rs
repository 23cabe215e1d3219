//! The core's per-task and per-CPU state beside the runqueues: what a task is in the middle
//! of, and what a CPU is doing that is not its runqueue's (overhead, interrupts, wake list,
//! pending events, accounting).

use crate::prelude::*;

/// What a task is in the middle of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cur {
    /// Nothing: ask the program for its next action when the task runs.
    Idle,
    /// Work left, in units of ns-at-capacity-1024 times 1024 (so that a CPU of capacity `c`
    /// completes exactly `c` units per ns).
    Run { rem_units: u64 },
    /// Running until this wall time.
    RunWall { end_ns: u64 },
    /// Blocked in a sync action that is re-applied when the task runs again.
    Blocked(Action),
    /// In a system call that wakes tasks one after another (`futex_wake()`'s `wake_up_q()`,
    /// a condvar broadcast, a pipe write with several readers): its wakes still to issue and
    /// what follows them are entry `.0` of the core's [`Wakings`].
    Waking(u32),
}

/// What is left of a system call that wakes tasks one after another ([`Cur::Waking`]): the
/// wakes still to be issued, each after the previous one's cost; then the task blocks in
/// `then_block`, or goes on with its program.
#[derive(Debug, Default)]
pub(crate) struct Waking {
    /// The tasks still to wake (run indices) and whether with `WF_SYNC`, last first (the
    /// next one is popped from the end; no allocation for up to four wakes).
    pub(crate) wakes: smallvec::SmallVec<[(u32, bool); 4]>,
    /// The action the task blocks in once the wakes are issued, if it blocks.
    pub(crate) then_block: Option<Action>,
}

/// The system calls in progress that wake tasks one after another, out of the tasks' state
/// ([`TaskRun::cur`]): few tasks are in one at any time, and inline every task's state would
/// be 48 bytes larger. Entries are reused: no allocation per system call once warm.
#[derive(Debug, Default)]
pub(crate) struct Wakings {
    entries: Vec<Waking>,
    /// Entries not in use.
    free: Vec<u32>,
}

impl Wakings {
    /// Stores `w`; returns its index.
    pub(crate) fn insert(&mut self, w: Waking) -> u32 {
        if let Some(i) = self.free.pop() {
            self.entries[i as usize] = w;
            return i;
        }
        self.entries.push(w);
        u32::try_from(self.entries.len() - 1).expect("fewer than 2^32 system calls at once")
    }

    /// Entry `i`.
    pub(crate) fn get_mut(&mut self, i: u32) -> &mut Waking {
        &mut self.entries[i as usize]
    }

    /// Takes entry `i` out, freeing it.
    pub(crate) fn remove(&mut self, i: u32) -> Waking {
        self.free.push(i);
        std::mem::take(&mut self.entries[i as usize])
    }
}

/// What a task is: a workload task with its program state inline (nearly every task is one,
/// and inline it saves a dependent cache miss per event), or a background kernel thread.
#[derive(Debug)]
pub(crate) enum Kind {
    /// A task of the workload (its [`TaskRef`] is `program.task()`, not kept twice: with it
    /// beside the program state, every task's state was 16 bytes larger, 12 of them padding
    /// before the 16-byte aligned `rng`).
    Workload {
        program: ProgramState,
        rng: Pcg64Mcg,
    },
    /// A background kernel thread pinned to a CPU; `ran` is set once it has run since its
    /// last wake-up.
    Kworker { ran: bool },
}

#[derive(Debug)]
pub(crate) struct TaskRun {
    pub(crate) id: TaskId,
    pub(crate) kind: Kind,
    pub(crate) cur: Cur,
    /// The task decided to block (sleep, blocking sync action); the next `__schedule()` on its
    /// CPU dequeues it.
    pub(crate) block_pending: bool,
    /// The pending block only moves the task off a CPU its new affinity excludes: the
    /// `__schedule()` that dequeues it does so at once (never delayed) and wakes it onto an
    /// allowed CPU ([`lbsim_rq::PrevAction::Move`]).
    pub(crate) moving: bool,
    /// The task exits at its next `__schedule()`.
    pub(crate) exit_pending: bool,
    /// It was woken and has not run since: `wake_ns` holds when ([`TaskRun::set_wake_ns`],
    /// [`TaskRun::take_wake_ns`]; a flag beside the others rather than an `Option<u64>`,
    /// which made every task's state 16 bytes larger with the alignment).
    woken: bool,
    /// The task's pending sleep timer (cancelled when a wake-up makes it moot): its event,
    /// and where it is queued: its CPU and expiry.
    pub(crate) timer: Option<(EventKey, u32, u64)>,
    /// When it was last woken (for the wake-up latency), while `woken`.
    wake_ns: u64,
    /// When it last started running (context-switched in).
    pub(crate) on_cpu_since: u64,
    /// Time on a CPU, ns.
    pub(crate) runtime_ns: u64,
    /// Work completed, in units of ns-at-1024 times 1024.
    pub(crate) work_units: u128,
    /// Longest single wait between becoming runnable and running, ns.
    pub(crate) max_wait_ns: u64,
    /// The task's autogroup (`task->signal->autogroup`'s group; 0: none), where it runs
    /// whenever it is in the root cgroup with `sched_autogroup_enabled`.
    pub(crate) autogroup: u32,
    /// Each move between task groups (`sched_move_task()`): the group left, `runtime_ns` at
    /// the move and the time of the move, so that a group's runtime share counts the time a
    /// task ran while in it. `None` for a task that never moved (boxed: few tasks move, and
    /// a `Vec` inline would make every task's state 16 bytes larger).
    #[expect(
        clippy::box_collection,
        reason = "a thin pointer: the Vec inline would be 16 bytes more in every task's state"
    )]
    pub(crate) tg_moves: Option<Box<Vec<(u32, u64, u64)>>>,
    /// When the task was created. (When it exited is in [`Core::exits`]: few tasks exit
    /// before the end of a run, and an `Option<u64>` here made every task's state 16 bytes
    /// larger.)
    ///
    /// [`Core::exits`]: crate::core::Core
    pub(crate) created_ns: u64,
}

impl TaskRun {
    /// A run for task `id` of kind `kind`, created at `now_ns`, not started.
    pub(crate) fn new(id: TaskId, kind: Kind, now_ns: u64) -> TaskRun {
        TaskRun {
            id,
            kind,
            cur: Cur::Idle,
            block_pending: false,
            moving: false,
            exit_pending: false,
            woken: false,
            timer: None,
            wake_ns: 0,
            on_cpu_since: 0,
            runtime_ns: 0,
            work_units: 0,
            max_wait_ns: 0,
            autogroup: 0,
            tg_moves: None,
            created_ns: now_ns,
        }
    }

    /// Its program has a pure run loop (lbsim-workload's `ProgramState::has_pure_loop`):
    /// its runs may be covered several to a segment end.
    #[inline]
    pub(crate) fn has_pure_loop(&self) -> bool {
        matches!(&self.kind, Kind::Workload { program, .. } if program.has_pure_loop())
    }

    /// It was woken at `now_ns` (the start of its wake-up latency).
    #[inline]
    pub(crate) fn set_wake_ns(&mut self, now_ns: u64) {
        self.woken = true;
        self.wake_ns = now_ns;
    }

    /// When it was woken, if it was since it last ran; forgets it.
    #[inline]
    pub(crate) fn take_wake_ns(&mut self) -> Option<u64> {
        std::mem::take(&mut self.woken).then_some(self.wake_ns)
    }
}

/// Per-CPU engine state (what is not the runqueue's).
///
/// The fields are in this order, `repr(C)`, so that what most events on a CPU read and write
/// (its segment, the time accounting, its pending events' keys) shares the struct's first 190
/// bytes, three or four cache lines as the vector's 528-byte elements fall on them, and the
/// idle governor's and /proc's state come last (lbsim's layout: 1024 CPUs' states at 528 bytes
/// each are half a megabyte; a cache simulation of the 1024 x 20000 cell counts 9% fewer write
/// misses in a 2 MiB cache than with the compiler's order, docs/performance.md session 22).
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct CpuState {
    /// When the current task's progress (re)started.
    pub(crate) seg_start: u64,
    /// Scheduler overhead in progress until then; user progress resumes after it.
    pub(crate) busy_until: u64,
    /// Interrupts are off until then (a newly idle balance): IPIs and timers wait.
    pub(crate) irq_off_until: u64,
    /// Accounting: last update, busy and idle time, integral of nr_running over time.
    pub(crate) acct_last: u64,
    pub(crate) busy_ns: u64,
    pub(crate) idle_ns: u64,
    pub(crate) nr_running_ns: u128,
    /// The pending end of the current task's action ([`Ev::SegEnd`]).
    pub(crate) seg_end: Option<EventKey>,
    /// The queued tick event (it may fire on a stopped tick, which then does nothing).
    pub(crate) tick: Option<EventKey>,
    /// The queued reschedule.
    pub(crate) resched: Option<EventKey>,
    /// The wake-list IPI on its way.
    pub(crate) ipi: Option<EventKey>,
    /// The capacity (`arch_scale_cpu_capacity`).
    pub(crate) capacity: u64,
    /// How fast the current task's work advances, in units per ns: the capacity, or less
    /// while SMT siblings share the core ([`crate::smt`]).
    pub(crate) speed: u64,
    /// Scheduler work charged to this CPU so far (balancing passes, newly idle steps, the
    /// stopper), ns: what `--check`'s wait bound allows a queued task to wait for besides
    /// other tasks.
    pub(crate) sched_work_ns: u64,
    /// The tick's phase within a tick period.
    pub(crate) tick_phase_ns: u64,
    /// Where the CPU is in the idle loop.
    pub(crate) idle: crate::cpuidle::IdleCpu,
    /// `seg_end` is the end of several runs of a pure loop (lbsim's: [`Core::arm_segment`]),
    /// whose ends [`Core::settle`] accounts as it passes them.
    ///
    /// [`Core::arm_segment`]: crate::core::Core
    /// [`Core::settle`]: crate::core::Core
    pub(crate) seg_chain: bool,
    /// How many runs of a pure loop the next segment end may cover (lbsim's; at most
    /// `pure_runs_ahead`): doubled (up to that) when a chain's end is handled, halved when one is armed
    /// again or cancelled before its end, and at least 2 again when a single run's end is
    /// handled. Drawing runs ahead is wasted on a CPU where something else keeps settling the
    /// task; below 2 no chain is tried.
    pub(crate) chain_window: u16,
    /// The tick is stopped (nohz idle).
    pub(crate) tick_stopped: bool,
    /// The current task called `sched_yield()`: its next switch is not a preemption (for
    /// the trace's `prev_state`).
    pub(crate) yielded: bool,
    /// Wake-list entries: (task, migrated, time the waker queued it).
    pub(crate) wakelist: Vec<(TaskId, bool, u64)>,
    /// The pinned background kernel thread, if background noise is on.
    pub(crate) kworker: Option<u32>,
    /// In `__schedule()`'s newly idle balance: the previous task and how it left.
    pub(crate) newidle: Option<(Option<TaskId>, PrevAction)>,
    /// When that `__schedule()` began (for the trace's `lbsim_charge` of the balance).
    pub(crate) newidle_since: u64,
    /// The polling state's time limit, while the CPU polls.
    pub(crate) poll_limit: Option<EventKey>,
    /// The softlockup watchdog hrtimer's next expiry (`u64::MAX` on the ideal machine).
    pub(crate) watchdog_at: u64,
    /// The `cpu<N>` line of /proc/schedstat.
    pub(crate) stat: CpuSchedstat,
    /// The menu governor's state (`struct menu_device`).
    pub(crate) menu: crate::cpuidle::menu::MenuDevice,
    /// The sleep timers queued on this CPU: (expiry, run index).
    pub(crate) timers: std::collections::BTreeSet<(u64, u32)>,
    /// Per idle state: entries and time in it, ns.
    pub(crate) idle_usage: Vec<(u64, u64)>,
    /// `ts->idle_calls` and `ts->idle_sleeps` (/proc/timer_list).
    pub(crate) stats_idle_calls: u64,
    pub(crate) stats_idle_sleeps: u64,
}

#[cfg(test)]
mod tests {
    /// A run of tens of thousands of tasks holds one `TaskRun` per task all run long: its size
    /// is part of the memory per task (issue 13).
    #[test]
    fn a_tasks_run_state_stays_small() {
        assert!(
            std::mem::size_of::<super::TaskRun>() <= 320,
            "TaskRun is {} bytes",
            std::mem::size_of::<super::TaskRun>()
        );
    }
}
