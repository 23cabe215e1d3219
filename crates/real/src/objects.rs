//! The real sync objects behind a workload's ids: futex words for mutexes (glibc's
//! three-state protocol), condition variables (a sequence word), barriers (a generation word),
//! semaphores and per-task wake-up tokens, and OS pipes for pipe channels.
//!
//! Each blocking operation returns when the runner's stop flag is set and [`Objects::release`]
//! has been called, so that no thread stays blocked at the end of a run; the caller then sees
//! the flag and exits without acting on what it waited for.

use std::io::{Read as _, Write as _};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use lbsim_workload::{ChanKind, SyncSpec};

use crate::sys::{futex_wait, futex_wake};

/// A mutex with glibc's lowlevellock protocol: 0 free, 1 taken, 2 taken with waiters.
#[derive(Debug, Default)]
pub struct FutexMutex(AtomicU32);

impl FutexMutex {
    /// `pthread_mutex_lock()`: returns holding the mutex, or when `stop` is set.
    pub fn lock(&self, stop: &AtomicBool) {
        if self
            .0
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        while self.0.swap(2, Ordering::Acquire) != 0 {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            futex_wait(&self.0, 2);
        }
    }

    /// `pthread_mutex_unlock()`: wakes one waiter if there were any.
    pub fn unlock(&self) {
        if self.0.swap(0, Ordering::Release) == 2 {
            futex_wake(&self.0, 1);
        }
    }

    fn release(&self) {
        self.0.store(0, Ordering::Release);
        futex_wake(&self.0, u32::MAX);
    }
}

/// A condition variable as a sequence word: a waiter reads it, releases the mutex and waits
/// while it is unchanged; a signal or broadcast bumps it and wakes one or all.
#[derive(Debug, Default)]
pub struct FutexCond(AtomicU32);

impl FutexCond {
    /// `pthread_cond_wait()` without the re-lock (the program re-takes the mutex next).
    pub fn wait(&self, mutex: &FutexMutex, stop: &AtomicBool) {
        let seq = self.0.load(Ordering::Acquire);
        mutex.unlock();
        if !stop.load(Ordering::Relaxed) {
            futex_wait(&self.0, seq);
        }
    }

    /// `pthread_cond_signal()` (`all`: `pthread_cond_broadcast()`).
    pub fn wake(&self, all: bool) {
        self.0.fetch_add(1, Ordering::Release);
        futex_wake(&self.0, if all { u32::MAX } else { 1 });
    }
}

/// A barrier of `users`: the last arrival bumps the generation word and wakes everyone.
#[derive(Debug)]
pub struct FutexBarrier {
    users: u32,
    count: Mutex<u32>,
    generation: AtomicU32,
}

impl FutexBarrier {
    fn new(users: u32) -> FutexBarrier {
        FutexBarrier {
            users: users.max(1),
            count: Mutex::new(0),
            generation: AtomicU32::new(0),
        }
    }

    /// `pthread_barrier_wait()`.
    pub fn arrive(&self, stop: &AtomicBool) {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let g = self.generation.load(Ordering::Acquire);
        *count += 1;
        if *count >= self.users {
            *count = 0;
            self.generation.fetch_add(1, Ordering::Release);
            drop(count);
            futex_wake(&self.generation, u32::MAX);
            return;
        }
        drop(count);
        while self.generation.load(Ordering::Acquire) == g && !stop.load(Ordering::Relaxed) {
            futex_wait(&self.generation, g);
        }
    }
}

/// A counting semaphore on one futex word.
#[derive(Debug)]
pub struct FutexSem(AtomicU32);

impl FutexSem {
    /// `sem_wait()`.
    pub fn wait(&self, stop: &AtomicBool) {
        loop {
            let c = self.0.load(Ordering::Acquire);
            if c > 0 {
                if self
                    .0
                    .compare_exchange(c, c - 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
            futex_wait(&self.0, 0);
        }
    }

    /// `sem_post()`.
    pub fn post(&self) {
        self.0.fetch_add(1, Ordering::Release);
        futex_wake(&self.0, 1);
    }
}

/// A task's wake-up token: `Suspend` waits for it on the task's own futex word, `Resume`
/// posts it (schbench's and the ping-pong pair's `futex_wait()`/`futex_wake()` on a word).
#[derive(Debug, Default)]
pub struct Token(AtomicU32);

impl Token {
    /// Waits until the token is posted, and takes it.
    pub fn suspend(&self, stop: &AtomicBool) {
        while self.0.swap(0, Ordering::Acquire) == 0 {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            futex_wait(&self.0, 0);
        }
    }

    /// Posts the token and wakes its task.
    pub fn resume(&self) {
        self.0.store(1, Ordering::Release);
        futex_wake(&self.0, 1);
    }
}

/// A pipe channel: messages are 4-byte records, as `perf bench sched pipe` writes them.
#[derive(Debug)]
pub struct Pipe {
    reader: std::io::PipeReader,
    writer: std::io::PipeWriter,
}

/// Bytes of one channel message.
const MSG_BYTES: usize = 4;

impl Pipe {
    /// Writes `msgs` messages in one `write()` (atomic below `PIPE_BUF`).
    pub fn send(&self, msgs: u32) -> std::io::Result<()> {
        let buf = vec![0u8; MSG_BYTES * msgs as usize];
        (&self.writer).write_all(&buf)
    }

    /// Reads one message, blocking while the pipe is empty.
    pub fn recv(&self) -> std::io::Result<()> {
        let mut buf = [0u8; MSG_BYTES];
        (&self.reader).read_exact(&mut buf)
    }
}

/// Every sync object of a run, indexed as the workload's ids index them.
#[derive(Debug)]
pub struct Objects {
    /// Mutexes (`MutexId`).
    pub mutexes: Vec<FutexMutex>,
    /// Condition variables (`CondId`).
    pub conds: Vec<FutexCond>,
    /// Barriers (`BarrierId`).
    pub barriers: Vec<FutexBarrier>,
    /// Semaphores (`SemId`).
    pub sems: Vec<FutexSem>,
    /// Channels (`ChanId`): `None` for a kind the runner refuses (checked before the run).
    pub chans: Vec<Option<Pipe>>,
}

impl Objects {
    /// The objects `spec` declares, in their initial states.
    pub fn new(spec: &SyncSpec) -> std::io::Result<Objects> {
        let mut chans = Vec::with_capacity(spec.chans.len());
        for c in &spec.chans {
            chans.push(match c.kind {
                ChanKind::Pipe => {
                    let (reader, writer) = std::io::pipe()?;
                    Some(Pipe { reader, writer })
                }
                _ => None,
            });
        }
        Ok(Objects {
            mutexes: spec.mutexes.iter().map(|_| FutexMutex::default()).collect(),
            conds: spec.conds.iter().map(|_| FutexCond::default()).collect(),
            barriers: spec
                .barriers
                .iter()
                .map(|b| FutexBarrier::new(b.users))
                .collect(),
            sems: spec
                .sems
                .iter()
                .map(|s| FutexSem(AtomicU32::new(s.initial)))
                .collect(),
            chans,
        })
    }

    /// Once the stop flag is set: makes every blocked operation return (frees the mutexes,
    /// bumps conds and barriers, posts the semaphores and `tokens`, writes a message into each
    /// pipe). The runner calls it until every thread has exited, since a thread may block
    /// again between two calls.
    pub fn release(&self, tokens: &[&Token]) {
        for m in &self.mutexes {
            m.release();
        }
        for c in &self.conds {
            c.wake(true);
        }
        for b in &self.barriers {
            b.generation.fetch_add(1, Ordering::Release);
            futex_wake(&b.generation, u32::MAX);
        }
        for s in &self.sems {
            s.0.fetch_add(1, Ordering::Release);
            futex_wake(&s.0, u32::MAX);
        }
        for t in tokens {
            t.resume();
        }
        for p in self.chans.iter().flatten() {
            let _ = p.send(1);
        }
    }
}
