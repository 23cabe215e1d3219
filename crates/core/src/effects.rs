//! The core's events and the effects it hands the engine: events to schedule at a time, in
//! the order the core asked for them, and which of the pending ones are cancelled.

use std::num::NonZeroU64;

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
/// a sleep timer a wake-up made moot). It names a slot of [`Effects`]' table of pending
/// events (low 32 bits) and the slot's generation when the event was scheduled (high 32
/// bits): a slot is reused once its event has popped, under the next generation, so a key is
/// unique among the pending events and a stale one names no event.
///
/// Stored complemented, so that it is never zero (no slot is `u32::MAX`) and an
/// `Option<EventKey>` is 8 bytes, not 16: the engine state holds several per CPU and one per
/// task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventKey(NonZeroU64);

impl EventKey {
    #[inline(always)]
    fn new(slot: u32, generation: u32) -> EventKey {
        let raw = u64::from(generation) << 32 | u64::from(slot);
        EventKey(NonZeroU64::new(!raw).expect("no slot is u32::MAX"))
    }

    /// The slot of [`Effects`]' table this event holds until it pops.
    #[inline(always)]
    pub fn slot(self) -> u32 {
        !self.0.get() as u32
    }

    #[inline(always)]
    fn generation(self) -> u32 {
        (!self.0.get() >> 32) as u32
    }
}

/// One effect for the engine to apply: queue the event in `key`'s slot (what it is stays
/// in the slot: [`Effects::retire`] gives it back when it pops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effect {
    /// The handle to cancel it by.
    pub key: EventKey,
    /// When, ns.
    pub at_ns: u64,
}

/// One slot of the table of pending events.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The event, kept here rather than in the engine's heap, whose entries are then a
    /// third smaller (the slot's fields are read at the pop anyway).
    ev: Ev,
    /// Bumped when the slot's event pops, or is dropped or rescheduled before it was drained,
    /// so that keys of earlier events no longer match.
    generation: u32,
    /// The event was cancelled: the engine drops it when it reaches the top of its queue.
    cancelled: bool,
}

/// The events the core schedules, in the order it asked for them, and the table of the
/// events pending in the engine's queue. The engine drains and queues the new events after
/// each event, so events the core schedules at equal times keep the order it scheduled them
/// in. The engine queues an event only when it is drained: one cancelled before that never
/// reaches the queue. The cancellation of a drained event marks its slot
/// ([`Effects::cancel`]); the engine, which leaves a cancelled event in its queue (lazy
/// deletion: the order of the others is untouched),
/// asks the slot when the event comes up ([`Effects::take_cancelled`]) and frees it when the
/// event pops ([`Effects::retire`], which hands back the event: the engine's heap holds only
/// times, sequence numbers and slots). No hashing: a slot is an index.
#[derive(Debug, Default)]
pub struct Effects {
    ops: Vec<Effect>,
    slots: Vec<Slot>,
    /// Slots whose events have popped or were dropped before they were drained, reused
    /// last-freed first.
    free: Vec<u32>,
    /// Cancelled events still in the engine's queue.
    cancelled: usize,
}

impl Effects {
    /// Schedules `ev` at `at_ns`; returns its key.
    #[inline(always)]
    pub fn at(&mut self, at_ns: u64, ev: Ev) -> EventKey {
        let key = match self.free.pop() {
            Some(slot) => {
                let s = &mut self.slots[slot as usize];
                s.ev = ev;
                EventKey::new(slot, s.generation)
            }
            None => self.new_slot(ev),
        };
        self.ops.push(Effect { key, at_ns });
        key
    }

    /// A slot added for `ev` when none is free (the table grows to the most events ever
    /// pending at once, so this is rare after the start).
    #[cold]
    #[inline(never)]
    fn new_slot(&mut self, ev: Ev) -> EventKey {
        let slot = u32::try_from(self.slots.len())
            .ok()
            .filter(|&slot| slot != u32::MAX)
            .expect("fewer than 2^32 - 1 pending events");
        self.slots.push(Slot {
            ev,
            generation: 0,
            cancelled: false,
        });
        EventKey::new(slot, 0)
    }

    /// Cancels the pending event `key` (it has not popped yet).
    ///
    /// An event scheduled during the same handling (not yet drained: a segment end re-armed
    /// twice in one event) is dropped from the list at once and its slot freed, instead of
    /// going into the engine's queue only to be skipped there. That is exact: the engine
    /// orders events by `(time, seq)` with `seq` the order of the pushes, so leaving one out
    /// keeps the order of all the others, and the slot an event holds decides nothing.
    pub fn cancel(&mut self, key: EventKey) {
        let s = &mut self.slots[key.slot() as usize];
        debug_assert_eq!(s.generation, key.generation(), "cancel of a popped event");
        debug_assert!(!s.cancelled, "cancelled twice");
        if s.generation == key.generation() && !s.cancelled {
            if let Some(i) = self.ops.iter().rposition(|e| e.key == key) {
                self.ops.remove(i);
                s.generation = s.generation.wrapping_add(1);
                self.free.push(key.slot());
                return;
            }
            s.cancelled = true;
            self.cancelled += 1;
        }
    }

    /// Cancels the pending event `key` and schedules `ev` at `at_ns`: the same as
    /// [`Effects::cancel`] then [`Effects::at`], in one step when `key` is the last event
    /// scheduled (a segment end re-armed twice in a row): the cancel would drop that event
    /// from the list and free its slot, and `at` would take the slot back (the last freed
    /// is the first reused) under the next generation and append the event where it was,
    /// which is what this writes in place.
    pub fn reschedule(&mut self, key: EventKey, at_ns: u64, ev: Ev) -> EventKey {
        if let Some(last) = self.ops.last_mut()
            && last.key == key
        {
            let s = &mut self.slots[key.slot() as usize];
            s.generation = s.generation.wrapping_add(1);
            s.ev = ev;
            let new = EventKey::new(key.slot(), s.generation);
            *last = Effect { key: new, at_ns };
            return new;
        }
        self.cancel(key);
        self.at(at_ns, ev)
    }

    /// Whether the event in `slot` (at the top of the engine's queue) was cancelled; if so
    /// the engine drops it, and its slot is freed.
    #[inline]
    pub fn take_cancelled(&mut self, slot: u32) -> bool {
        let s = &mut self.slots[slot as usize];
        if !s.cancelled {
            return false;
        }
        s.cancelled = false;
        s.generation = s.generation.wrapping_add(1);
        self.free.push(slot);
        self.cancelled -= 1;
        true
    }

    /// The event in `slot`, not cancelled, has popped: its slot is freed; returns the event.
    #[inline]
    pub fn retire(&mut self, slot: u32) -> Ev {
        let s = &mut self.slots[slot as usize];
        debug_assert!(!s.cancelled, "a cancelled event popped");
        s.generation = s.generation.wrapping_add(1);
        self.free.push(slot);
        s.ev
    }

    /// Number of cancelled events still in the engine's queue.
    pub fn cancelled(&self) -> usize {
        self.cancelled
    }

    /// Releases the room of the list of events to schedule, which is empty after a drain.
    /// For the engine after the set-up's drain: the set-up schedules every task's start at
    /// once (a list of tens of thousands), an event's handling a few.
    pub fn release_list(&mut self) {
        debug_assert!(self.ops.is_empty(), "events not drained");
        self.ops = Vec::new();
    }

    /// Hands the events scheduled so far to `f`, in order, and forgets them (a plain loop
    /// over the list, then a clear: after every event, so no `Drain` iterator to keep and
    /// drop). Always inlined: the engine drains after every event.
    #[inline(always)]
    pub fn drain(&mut self, mut f: impl FnMut(Effect)) {
        for e in &self.ops {
            f(*e);
        }
        self.ops.clear();
    }
}

#[cfg(test)]
mod tests;
