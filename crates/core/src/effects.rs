//! The core's events and the effects it hands the engine: events to schedule at a time, and
//! scheduled events to cancel, in the order the core asked for them.

use crate::prelude::*;

/// The core's events. A closed set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A workload task is created (forked by the launcher) and woken for the first time.
    Start(u32),
    /// The running task of `cpu` reaches the end of its current action (cancelled when the
    /// action is interrupted or re-armed).
    SegEnd { cpu: u32 },
    /// A sleeping task's timer fires on its CPU.
    Timer { run: u32 },
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
    /// `cpu`'s polling idle state reaches its time limit (`cpuidle_poll_time()`).
    PollLimit { cpu: u32 },
    /// The softlockup watchdog's hrtimer on `cpu`.
    Watchdog { cpu: u32 },
}

impl Ev {
    /// The CPUs whose runqueues handling the event acts on directly (others it reaches
    /// through accounting or balancing outcomes).
    pub fn cpus(&self) -> [Option<u32>; 2] {
        match *self {
            Ev::Start(_) | Ev::Timer { .. } => [None, None],
            Ev::SegEnd { cpu, .. }
            | Ev::Tick { cpu }
            | Ev::Ipi { cpu }
            | Ev::Resched { cpu }
            | Ev::Background { cpu }
            | Ev::NewidleStep { cpu }
            | Ev::NewidleDone { cpu }
            | Ev::PollLimit { cpu }
            | Ev::Watchdog { cpu } => [Some(cpu), None],
            Ev::Stopper(r) => [Some(r.busiest.0), Some(r.push_cpu.0)],
            Ev::Kick(k) => [Some(k.ilb_cpu.0), None],
        }
    }

    pub fn hash_key(&self) -> (u8, u64) {
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
            Ev::PollLimit { cpu } => (12, cpu.into()),
            Ev::Watchdog { cpu } => (13, cpu.into()),
        }
    }
}

/// A scheduled event's handle: the core keeps it to cancel the event (a re-armed segment end,
/// a sleep timer a wake-up made moot). Keys are unique within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventKey(pub u64);

/// One effect for the engine to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Schedule `ev` at `at_ns` under `key`.
    At {
        /// The handle to cancel it by.
        key: EventKey,
        /// When, ns.
        at_ns: u64,
        /// What.
        ev: Ev,
    },
    /// Cancel the event scheduled under this key (it has not fired yet).
    Cancel(EventKey),
}

/// The effects of handling events, in the order the core asked for them; the engine drains
/// and applies them after each event, so events the core schedules at equal times keep the
/// order it scheduled them in.
#[derive(Debug, Default)]
pub struct Effects {
    next_key: u64,
    ops: Vec<Effect>,
}

impl Effects {
    /// Schedules `ev` at `at_ns`; returns its key.
    pub fn at(&mut self, at_ns: u64, ev: Ev) -> EventKey {
        let key = EventKey(self.next_key);
        self.next_key += 1;
        self.ops.push(Effect::At { key, at_ns, ev });
        key
    }

    /// Cancels the pending event `key`.
    pub fn cancel(&mut self, key: EventKey) {
        self.ops.push(Effect::Cancel(key));
    }

    /// Takes the effects asked for so far, in order.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Effect> {
        self.ops.drain(..)
    }
}
