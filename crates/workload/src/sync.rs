//! Shared synchronisation objects as deterministic state machines.
//!
//! [`SyncSpec`] declares the objects of a workload; [`SyncState`] is their run-time state,
//! owned by the engine. The engine passes every sync action ([`Action::is_sync`]) to
//! [`SyncState::apply`], which answers [`Outcome::Done`] (continue with the next action) or
//! [`Outcome::Blocked`] (the task sleeps), and appends the tasks to wake to a list.
//!
//! **Retry protocol.** A blocked task is woken by some later `apply` of another task (it
//! appears in that call's wake list). When the woken task next runs, the engine calls `apply`
//! again with the *same* action. This is how futex-based primitives behave: a woken waiter
//! re-tries and may lose the race to a task that got there first (a woken mutex waiter finds
//! the mutex taken again and queues at the tail; a reader finds the pipe emptied). Condition
//! variables and barriers remember that the task was released, so their retry completes.
//!
//! Wait queues are FIFO, wake order is deterministic, nothing here reads time except what the
//! caller passes in.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::action::Action;
use crate::ids::{
    BarrierId, ChanId, CondId, CounterId, ListId, MutexId, SemId, TaskRef, TemplateId,
};

/// A barrier's declaration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BarrierSpec {
    /// Name (for messages).
    pub name: String,
    /// Arrivals that release everyone.
    pub users: u32,
}

/// A semaphore's declaration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SemSpec {
    /// Name (for messages).
    pub name: String,
    /// Initial value.
    pub initial: u32,
}

/// The kernel object a channel behaves like; they differ in whom a write or read wakes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChanKind {
    /// A pipe (fs/pipe.c pipe_read()/pipe_write(), v5.6 to v6.12; waits are exclusive): a
    /// write wakes one waiting reader if the pipe was empty; a read wakes one waiting writer if
    /// the pipe was full. A reader that had to wait wakes the next reader if data remains after
    /// its read, and a writer that had to wait wakes the next writer if room remains after its
    /// write (`wake_next_reader`, `wake_next_writer`).
    Pipe,
    /// An AF_UNIX stream socket (net/unix/af_unix.c): a write wakes every waiting reader
    /// (`sock_def_readable`); a read wakes every waiting writer once the queued data falls to a
    /// quarter of the send buffer (`unix_writable`).
    Socket,
}

/// A channel's declaration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChanSpec {
    /// Name (for messages).
    pub name: String,
    /// Pipe or socket wake-up rules.
    pub kind: ChanKind,
    /// Messages the channel buffers before writers block.
    pub capacity_msgs: u32,
}

/// A ticket counter's declaration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSpec {
    /// Name (for messages).
    pub name: String,
    /// Tickets handed out in total.
    pub tickets: u64,
}

/// A shared timer's declaration (rt-app `timer` without the `unique` prefix).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerSpec {
    /// Name (for messages).
    pub name: String,
    /// rt-app's `mode`: relative (true, the default) re-bases the timer when an expiry is
    /// missed; absolute keeps the original grid.
    pub relative: bool,
}

/// The sync objects a workload declares. Ids index these tables.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncSpec {
    /// Mutex names.
    pub mutexes: Vec<String>,
    /// Condition variable names.
    pub conds: Vec<String>,
    /// Barriers.
    pub barriers: Vec<BarrierSpec>,
    /// Semaphores.
    pub sems: Vec<SemSpec>,
    /// Channels.
    pub chans: Vec<ChanSpec>,
    /// Ticket counters.
    pub counters: Vec<CounterSpec>,
    /// Wake list names.
    pub lists: Vec<String>,
    /// Shared timers.
    pub timers: Vec<TimerSpec>,
}

fn push_named<T>(table: &mut Vec<T>, item: T) -> u32 {
    table.push(item);
    u32::try_from(table.len() - 1).expect("fewer than 2^32 sync objects")
}

impl SyncSpec {
    /// Declares a mutex.
    pub fn add_mutex(&mut self, name: impl Into<String>) -> MutexId {
        MutexId(push_named(&mut self.mutexes, name.into()))
    }
    /// Declares a condition variable.
    pub fn add_cond(&mut self, name: impl Into<String>) -> CondId {
        CondId(push_named(&mut self.conds, name.into()))
    }
    /// Declares a barrier.
    pub fn add_barrier(&mut self, name: impl Into<String>, users: u32) -> BarrierId {
        BarrierId(push_named(
            &mut self.barriers,
            BarrierSpec {
                name: name.into(),
                users,
            },
        ))
    }
    /// Declares a semaphore.
    pub fn add_sem(&mut self, name: impl Into<String>, initial: u32) -> SemId {
        SemId(push_named(
            &mut self.sems,
            SemSpec {
                name: name.into(),
                initial,
            },
        ))
    }
    /// Declares a channel.
    pub fn add_chan(
        &mut self,
        name: impl Into<String>,
        kind: ChanKind,
        capacity_msgs: u32,
    ) -> ChanId {
        ChanId(push_named(
            &mut self.chans,
            ChanSpec {
                name: name.into(),
                kind,
                capacity_msgs,
            },
        ))
    }
    /// Declares a ticket counter.
    pub fn add_counter(&mut self, name: impl Into<String>, tickets: u64) -> CounterId {
        CounterId(push_named(
            &mut self.counters,
            CounterSpec {
                name: name.into(),
                tickets,
            },
        ))
    }
    /// Declares a wake list.
    pub fn add_list(&mut self, name: impl Into<String>) -> ListId {
        ListId(push_named(&mut self.lists, name.into()))
    }
    /// Declares a shared timer; returns its index in the shared timer table.
    pub fn add_timer(&mut self, name: impl Into<String>, relative: bool) -> u32 {
        push_named(
            &mut self.timers,
            TimerSpec {
                name: name.into(),
                relative,
            },
        )
    }
}

/// What [`SyncState::apply`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The action completed; ask the program for its next action.
    Done,
    /// The task must sleep; when woken and running again, re-apply the same action.
    Blocked,
}

/// A task to wake, in the order the kernel would wake them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    /// The task.
    pub task: TaskRef,
    /// The kernel wakes it with `WF_SYNC` (pipe and socket wake-ups use
    /// `wake_up_interruptible_sync_poll`): the waker is expected to sleep soon.
    pub sync: bool,
}

/// The wakes one `apply` produces (rarely more than a few).
pub type Wakes = SmallVec<[Wake; 4]>;

/// State of a periodic timer (rt-app `timer`), whether per-thread or shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerState {
    /// rt-app `mode: relative` (re-base on a missed expiry).
    pub relative: bool,
    /// Next expiry, absolute ns; `None` until the first use.
    pub next_ns: Option<u64>,
}

#[derive(Clone, Debug, Default)]
struct MutexState {
    /// The futex word of glibc's lowlevellock: 0 free, 1 taken, 2 taken and maybe waited on.
    word: u8,
    owner: Option<TaskRef>,
    waiters: VecDeque<TaskRef>,
}

#[derive(Clone, Debug)]
struct BarrierState {
    users: u32,
    arrived: u32,
    waiters: Vec<TaskRef>,
}

#[derive(Clone, Debug)]
struct SemState {
    value: u64,
    waiters: VecDeque<TaskRef>,
}

#[derive(Clone, Debug)]
struct ChanState {
    kind: ChanKind,
    capacity: u64,
    queued: u64,
    readers: VecDeque<TaskRef>,
    writers: VecDeque<(TaskRef, u32)>,
    sent: u64,
    received: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockedOn {
    Cond(CondId),
    Barrier(BarrierId),
}

#[derive(Clone, Debug, Default)]
struct TaskSync {
    /// Futex-word token of Suspend/Resume: posted and not yet consumed.
    token: bool,
    /// Waiting in Suspend.
    suspended: bool,
    /// Queued on a condition variable or barrier.
    blocked_on: Option<BlockedOn>,
    /// Released by a signal/broadcast/barrier on this object; the retry completes.
    released: Option<BlockedOn>,
    /// Blocked on a channel since its last completed send or receive.
    waited_on_chan: bool,
    /// In glibc's `__lll_lock_wait()` (a woken mutex waiter, or the mutex re-take of a
    /// finished condition-variable wait): the next `Lock` exchanges the futex word to 2.
    lock_wait: bool,
    /// A stamped post (Resume / WakeList) not yet taken, and its time in `stamp_ns` (a
    /// flag beside the other flags rather than an `Option<u64>`: 8 bytes less per task).
    stamped: bool,
    /// Time of the last stamped post.
    stamp_ns: u64,
}

/// Run-time state of every sync object of a run. See the module documentation for the
/// engine's protocol.
#[derive(Clone, Debug)]
pub struct SyncState {
    mutexes: Vec<MutexState>,
    conds: Vec<VecDeque<TaskRef>>,
    barriers: Vec<BarrierState>,
    sems: Vec<SemState>,
    chans: Vec<ChanState>,
    counters: Vec<(u64, u64)>,
    lists: Vec<Vec<TaskRef>>,
    timers: Vec<TimerState>,
    tasks: Vec<TaskSync>,
    /// The tasks of the spec: room `tasks` takes at its first growth (a task's index may be
    /// any of them, and growing by doubling would hold up to twice the room needed).
    nr_spec_tasks: usize,
    fork_seq: Vec<u32>,
}

fn push_unique<T: PartialEq>(q: &mut VecDeque<T>, item: T) {
    if !q.contains(&item) {
        q.push_back(item);
    }
}

impl SyncState {
    /// Fresh state for the objects of `spec`, with `n_templates` fork counters.
    pub fn new(spec: &SyncSpec, n_templates: usize) -> SyncState {
        SyncState {
            mutexes: vec![MutexState::default(); spec.mutexes.len()],
            conds: vec![VecDeque::new(); spec.conds.len()],
            barriers: spec
                .barriers
                .iter()
                .map(|b| BarrierState {
                    users: b.users,
                    arrived: 0,
                    waiters: Vec::new(),
                })
                .collect(),
            sems: spec
                .sems
                .iter()
                .map(|s| SemState {
                    value: u64::from(s.initial),
                    waiters: VecDeque::new(),
                })
                .collect(),
            chans: spec
                .chans
                .iter()
                .map(|c| ChanState {
                    kind: c.kind,
                    capacity: u64::from(c.capacity_msgs),
                    queued: 0,
                    readers: VecDeque::new(),
                    writers: VecDeque::new(),
                    sent: 0,
                    received: 0,
                })
                .collect(),
            counters: spec.counters.iter().map(|c| (c.tickets, 0)).collect(),
            lists: vec![Vec::new(); spec.lists.len()],
            timers: spec
                .timers
                .iter()
                .map(|t| TimerState {
                    relative: t.relative,
                    next_ns: None,
                })
                .collect(),
            tasks: Vec::new(),
            nr_spec_tasks: 0,
            fork_seq: vec![0; n_templates],
        }
    }

    /// [`SyncState::new`] for a run whose spec has `nr_tasks` tasks: the per-task state, if
    /// any task needs it, is sized for all of them at once.
    pub fn with_spec_tasks(mut self, nr_tasks: usize) -> SyncState {
        self.nr_spec_tasks = nr_tasks;
        self
    }

    fn task(&mut self, t: TaskRef) -> &mut TaskSync {
        if self.tasks.len() <= t.index() {
            if self.tasks.capacity() == 0 {
                self.tasks
                    .reserve_exact((t.index() + 1).max(self.nr_spec_tasks));
            }
            self.tasks.resize_with(t.index() + 1, TaskSync::default);
        }
        &mut self.tasks[t.index()]
    }

    /// Applies a sync action of `task` and appends the tasks to wake to `wakes`.
    ///
    /// Semantics (each follows the kernel or glibc primitive named):
    /// - `Lock`: glibc normal mutex over a futex. Free: take it. Held: queue (FIFO) and block.
    /// - `Unlock`: release (glibc does not check the owner of a normal mutex) and wake the
    ///   first waiter, who re-tries `Lock` when it runs (it may find the mutex taken again).
    /// - `Wait { cond, mutex }`: `pthread_cond_wait`: release `mutex` as `Unlock` does, queue on
    ///   `cond`, block; completes once signalled. The program then re-takes `mutex`.
    /// - `Signal`/`Broadcast`: release the first/every waiter of the condition variable.
    /// - `Barrier`: the `users`-th arrival releases everyone and continues; earlier ones block.
    /// - `SemWait`/`SemPost`: counting semaphore over a futex; a post wakes the first waiter,
    ///   who re-tries.
    /// - `Suspend`/`Resume`: a futex word per task (schbench's `fwait`/`fpost`): `Resume` posts
    ///   the token and wakes the task if it is suspended; `Suspend` consumes a posted token or
    ///   blocks. A post is never lost.
    /// - `Send`/`Recv`: see [`ChanKind`] for who is woken.
    ///
    /// Non-sync actions are ignored (`Done`, no wake).
    pub fn apply(
        &mut self,
        task: TaskRef,
        action: &Action,
        now_ns: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        match *action {
            Action::Lock(m) => self.lock(task, m),
            Action::Unlock(m) => {
                self.unlock(m, wakes);
                Outcome::Done
            }
            Action::Wait { cond, mutex } => {
                let ts = self.task(task);
                if ts.released == Some(BlockedOn::Cond(cond)) {
                    ts.released = None;
                    ts.blocked_on = None;
                    // pthread_cond_wait() re-takes the mutex as a contended lock (glibc's
                    // __pthread_mutex_cond_lock), so that its unlock wakes a waiter.
                    ts.lock_wait = true;
                    return Outcome::Done;
                }
                if ts.blocked_on == Some(BlockedOn::Cond(cond)) {
                    return Outcome::Blocked;
                }
                ts.blocked_on = Some(BlockedOn::Cond(cond));
                self.unlock(mutex, wakes);
                self.conds[cond.index()].push_back(task);
                Outcome::Blocked
            }
            Action::Signal(c) => {
                if let Some(t) = self.conds[c.index()].pop_front() {
                    self.release(t, wakes);
                }
                Outcome::Done
            }
            Action::Broadcast(c) => {
                while let Some(t) = self.conds[c.index()].pop_front() {
                    self.release(t, wakes);
                }
                Outcome::Done
            }
            Action::Barrier(b) => {
                let ts = self.task(task);
                if ts.released == Some(BlockedOn::Barrier(b)) {
                    ts.released = None;
                    ts.blocked_on = None;
                    return Outcome::Done;
                }
                if ts.blocked_on == Some(BlockedOn::Barrier(b)) {
                    return Outcome::Blocked;
                }
                let bs = &mut self.barriers[b.index()];
                bs.arrived += 1;
                if bs.arrived >= bs.users {
                    bs.arrived = 0;
                    let waiters = std::mem::take(&mut bs.waiters);
                    for t in waiters {
                        self.release(t, wakes);
                    }
                    Outcome::Done
                } else {
                    bs.waiters.push(task);
                    self.task(task).blocked_on = Some(BlockedOn::Barrier(b));
                    Outcome::Blocked
                }
            }
            Action::SemWait(s) => {
                let ss = &mut self.sems[s.index()];
                if ss.value > 0 {
                    ss.value -= 1;
                    Outcome::Done
                } else {
                    push_unique(&mut ss.waiters, task);
                    Outcome::Blocked
                }
            }
            Action::SemPost(s) | Action::SemPostSync(s) => {
                let ss = &mut self.sems[s.index()];
                ss.value += 1;
                if let Some(t) = ss.waiters.pop_front() {
                    wakes.push(Wake {
                        task: t,
                        sync: matches!(action, Action::SemPostSync(_)),
                    });
                }
                Outcome::Done
            }
            Action::Suspend => {
                let ts = self.task(task);
                if ts.token {
                    ts.token = false;
                    ts.suspended = false;
                    Outcome::Done
                } else {
                    ts.suspended = true;
                    Outcome::Blocked
                }
            }
            Action::Resume(t) => {
                let ts = self.task(t);
                ts.token = true;
                if ts.suspended {
                    ts.suspended = false;
                    wakes.push(Wake {
                        task: t,
                        sync: false,
                    });
                }
                Outcome::Done
            }
            Action::Send { chan, msgs } => self.send(task, chan, msgs, wakes),
            Action::Recv { chan } => self.recv(task, chan, wakes),
            _ => {
                let _ = now_ns;
                Outcome::Done
            }
        }
    }

    /// Follows glibc nptl's `pthread_mutex_lock()` for a normal mutex (`lll_lock`): a
    /// compare-and-exchange of the futex word from 0 to 1 takes a free lock; otherwise
    /// `__lll_lock_wait()` exchanges the word to 2 and takes the lock if it was 0, or sleeps
    /// on the futex (queued FIFO) and repeats the exchange when woken. A task that took the
    /// lock with the exchange holds it "contended" (2) even if nobody waits.
    fn lock(&mut self, task: TaskRef, m: MutexId) -> Outcome {
        let retry = self.task(task).lock_wait;
        let ms = &mut self.mutexes[m.index()];
        if !retry && ms.word == 0 {
            ms.word = 1;
            ms.owner = Some(task);
            return Outcome::Done;
        }
        let old = std::mem::replace(&mut ms.word, 2);
        if old == 0 {
            ms.owner = Some(task);
            self.task(task).lock_wait = false;
            Outcome::Done
        } else {
            push_unique(&mut ms.waiters, task);
            self.task(task).lock_wait = true;
            Outcome::Blocked
        }
    }

    /// Follows glibc nptl's `pthread_mutex_unlock()` (`lll_unlock`): exchange the futex word
    /// to 0 and, only if it was 2, `FUTEX_WAKE` one waiter; the lock is not handed over. An
    /// owner that took the lock uncontended (1) wakes nobody even if tasks wait: the waiter
    /// woken last will set the word to 2 again when it retries.
    fn unlock(&mut self, m: MutexId, wakes: &mut Wakes) {
        let ms = &mut self.mutexes[m.index()];
        ms.owner = None;
        let old = std::mem::replace(&mut ms.word, 0);
        if old == 2
            && let Some(t) = ms.waiters.pop_front()
        {
            wakes.push(Wake {
                task: t,
                sync: false,
            });
        }
    }

    fn release(&mut self, t: TaskRef, wakes: &mut Wakes) {
        let ts = self.task(t);
        ts.released = ts.blocked_on;
        wakes.push(Wake {
            task: t,
            sync: false,
        });
    }

    /// Follows fs/pipe.c: pipe_write() (v6.6) for pipes, and net/unix/af_unix.c:
    /// unix_stream_sendmsg() with sock_alloc_send_pskb()'s wait for `sk_wmem_alloc <
    /// sk_sndbuf` and sock_def_readable() for sockets. Messages are written atomically (small
    /// writes; partial writes of large ones are not modelled).
    fn send(&mut self, task: TaskRef, chan: ChanId, msgs: u32, wakes: &mut Wakes) -> Outcome {
        let waited = std::mem::take(&mut self.task(task).waited_on_chan);
        let cs = &mut self.chans[chan.index()];
        let k = u64::from(msgs);
        if cs.queued + k > cs.capacity {
            if !cs.writers.iter().any(|&(t, _)| t == task) {
                cs.writers.push_back((task, msgs));
            }
            self.task(task).waited_on_chan = true;
            return Outcome::Blocked;
        }
        let was_empty = cs.queued == 0;
        cs.queued += k;
        cs.sent += k;
        match cs.kind {
            ChanKind::Pipe => {
                if was_empty && let Some(r) = cs.readers.pop_front() {
                    wakes.push(Wake {
                        task: r,
                        sync: true,
                    });
                }
                if waited
                    && cs.queued < cs.capacity
                    && let Some((w, _)) = cs.writers.pop_front()
                {
                    wakes.push(Wake {
                        task: w,
                        sync: true,
                    });
                }
            }
            ChanKind::Socket => {
                while let Some(r) = cs.readers.pop_front() {
                    wakes.push(Wake {
                        task: r,
                        sync: true,
                    });
                }
            }
        }
        Outcome::Done
    }

    /// Follows fs/pipe.c: pipe_read() (v6.6) for pipes, and net/unix/af_unix.c:
    /// unix_stream_read_generic() with unix_write_space() (writers woken once
    /// `unix_writable()`) for sockets. One read takes one message.
    fn recv(&mut self, task: TaskRef, chan: ChanId, wakes: &mut Wakes) -> Outcome {
        let waited = std::mem::take(&mut self.task(task).waited_on_chan);
        let cs = &mut self.chans[chan.index()];
        if cs.queued == 0 {
            push_unique(&mut cs.readers, task);
            self.task(task).waited_on_chan = true;
            return Outcome::Blocked;
        }
        let was_full = cs.queued >= cs.capacity;
        cs.queued -= 1;
        cs.received += 1;
        match cs.kind {
            ChanKind::Pipe => {
                if was_full && let Some((w, _)) = cs.writers.pop_front() {
                    wakes.push(Wake {
                        task: w,
                        sync: true,
                    });
                }
                if waited
                    && cs.queued > 0
                    && let Some(r) = cs.readers.pop_front()
                {
                    wakes.push(Wake {
                        task: r,
                        sync: true,
                    });
                }
            }
            ChanKind::Socket => {
                if cs.queued * 4 <= cs.capacity {
                    while let Some((w, _)) = cs.writers.pop_front() {
                        wakes.push(Wake {
                            task: w,
                            sync: true,
                        });
                    }
                }
            }
        }
        Outcome::Done
    }

    /// Takes a ticket from `counter`: true if one was left. Called by the program
    /// interpreter ([`crate::Event::Claim`]); atomic, never blocks.
    pub fn claim(&mut self, counter: CounterId) -> bool {
        let c = &mut self.counters[counter.index()];
        if c.0 > 0 {
            c.0 -= 1;
            c.1 += 1;
            true
        } else {
            false
        }
    }

    /// Tickets handed out so far by `counter`.
    pub fn claimed(&self, counter: CounterId) -> u64 {
        self.counters[counter.index()].1
    }

    /// Adds `task` to a wake list ([`crate::Event::ListAdd`]).
    pub fn list_add(&mut self, list: ListId, task: TaskRef) {
        self.lists[list.index()].push(task);
    }

    /// Takes the whole wake list, most recently added first ([`crate::Event::WakeList`]).
    pub fn list_take(&mut self, list: ListId) -> Vec<TaskRef> {
        let mut v = std::mem::take(&mut self.lists[list.index()]);
        v.reverse();
        v
    }

    /// Records that `task` was posted at `now_ns` (the time a waker wrote in its wake-up
    /// record, as schbench's `wake_time`).
    pub fn set_stamp(&mut self, task: TaskRef, now_ns: u64) {
        let t = self.task(task);
        t.stamped = true;
        t.stamp_ns = now_ns;
    }

    /// Takes `task`'s stamp, if it was stamped since the last take.
    pub fn take_stamp(&mut self, task: TaskRef) -> Option<u64> {
        let t = self.task(task);
        std::mem::take(&mut t.stamped).then_some(t.stamp_ns)
    }

    /// Clears `task`'s own wake-up token ([`crate::Event::ClearToken`]).
    pub fn clear_token(&mut self, task: TaskRef) {
        self.task(task).token = false;
    }

    /// A shared timer's state.
    pub fn timer_mut(&mut self, index: u32) -> &mut TimerState {
        &mut self.timers[index as usize]
    }

    /// The sequence number of the next fork of `template` (rt-app numbers forks per forked
    /// task definition), incremented.
    pub fn next_fork_seq(&mut self, template: TemplateId) -> u32 {
        let s = &mut self.fork_seq[template.index()];
        let v = *s;
        *s += 1;
        v
    }

    /// Messages written to and read from a channel so far.
    pub fn chan_counts(&self, chan: ChanId) -> (u64, u64) {
        let c = &self.chans[chan.index()];
        (c.sent, c.received)
    }

    /// Messages currently queued in a channel.
    pub fn chan_queued(&self, chan: ChanId) -> u64 {
        self.chans[chan.index()].queued
    }

    /// The current owner of a mutex.
    pub fn mutex_owner(&self, m: MutexId) -> Option<TaskRef> {
        self.mutexes[m.index()].owner
    }

    /// Every task currently queued on some object, in a deterministic order (for deadlock
    /// diagnostics: if the engine has nothing runnable, these are stuck).
    pub fn waiting_tasks(&self) -> Vec<TaskRef> {
        let mut v: Vec<TaskRef> = Vec::new();
        for m in &self.mutexes {
            v.extend(m.waiters.iter().copied());
        }
        for c in &self.conds {
            v.extend(c.iter().copied());
        }
        for b in &self.barriers {
            v.extend(b.waiters.iter().copied());
        }
        for s in &self.sems {
            v.extend(s.waiters.iter().copied());
        }
        for c in &self.chans {
            v.extend(c.readers.iter().copied());
            v.extend(c.writers.iter().map(|&(t, _)| t));
        }
        for (i, t) in self.tasks.iter().enumerate() {
            if t.suspended {
                v.push(TaskRef(i as u32));
            }
        }
        v.sort();
        v.dedup();
        v
    }
}
