//! The event queue: events ordered by `(time, seq)`.
//!
//! `seq` is a counter that grows with every push, so two events at the same time pop in the
//! order they were pushed. That makes a run a pure function of its inputs and seed.
//!
//! An event pushed with a slot ([`EventQueue::push_keyed`]) can be cancelled through it: the
//! queue does not keep cancellations itself, the caller does (the core's table of pending
//! events, [`lbsim_core::Effects`]), and the queue asks it about each keyed event that
//! reaches the run or the top (`cancelled(slot)`). A cancelled event stays in the
//! queue until then but is never returned (lazy deletion), so the order of the others is
//! untouched, and no cancelled key is hashed or searched: the slot is an index. Cancelled
//! events far in the future (the end of an always-running task's action, re-armed at each
//! preemption) would stay for long: the caller drops them all with [`EventQueue::compact`]
//! when they are half the queue.
//!
//! **Run, ring and far heap.** Time is cut into buckets of [`BUCKET_NS`]. A horizon, a
//! bucket boundary, splits the pending events: those due before it are in a sorted run, the
//! others in a ring of [`BUCKETS`] unsorted buckets (those due in the next 4 ms or so) or,
//! beyond the ring, in a 4-ary heap (the far heap). When the run is empty the horizon moves
//! past the next bucket that holds events, whose entries (and the far heap's in that bucket)
//! are sorted into the run, once. An event pushed before the horizon (for now, or later in
//! the open bucket) is inserted in the run, after the events due at or before its time (its
//! `seq` is the largest); the shorter side of the run moves, and one pushed for now lands
//! near the run's head. So the run holds exactly the events due before the horizon and every
//! other event is due at or after it: its first is the earliest event of the queue, and the
//! order is the total order of `(time, seq)` whatever the split. A push beyond the horizon is
//! an append, and a pop takes the run's first. (Before the ring, events due less than 32 us
//! ahead went to a near heap and the others to the far one: in `ebizzy:threads=48` on
//! power8-22c, where every action's end is 150 us ahead, each pop walked a far heap of 450
//! events; in `tbench:clients=96` on xeon-4s the near heap held 110. Before the run, a
//! bucket's events went into the near heap: 37 a bucket in that tbench, 140 instructions a
//! pop.)
//!
//! Cancelled events met when a bucket moves into the run are dropped there, rather
//! than pushed and popped: `cancelled(slot)` frees their slots earlier than at the top, which
//! changes which slot later events take but not their order, which is by `(time, seq)` only.

mod heap;
mod ring;
mod run;

use crate::time::SimTime;
use heap::{Entry, Heap};
pub use ring::{BUCKET_NS, BUCKETS};
use ring::{BUCKET_SHIFT, Ring};
use run::Run;

/// The slot of an event pushed without one (it cannot be cancelled).
pub const NO_SLOT: u32 = u32::MAX;

/// A deterministic priority queue of events of type `E`.
pub struct EventQueue<E> {
    /// The events due before bucket number `horizon` (`time >> BUCKET_SHIFT`), sorted.
    run: Run<E>,
    /// The others due before bucket `horizon + BUCKETS` when pushed.
    ring: Ring<E>,
    /// The others.
    far: Heap<E>,
    /// The first bucket number not in the run; it only grows, and only while the run is
    /// empty. It starts at 1: the events of set-up due at time 0 (every task's start, in most
    /// runs) go straight to the run (each appended: none is due after it), whose room they
    /// need anyway when they pop, rather than through the ring, which would keep room for
    /// all of them too.
    horizon: u64,
    next_seq: u64,
}

impl<E> std::fmt::Debug for EventQueue<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventQueue")
            .field("run", &self.run.len())
            .field("ring", &self.ring.len())
            .field("far", &self.far.v.len())
            .field("horizon", &self.horizon)
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            run: Run::default(),
            ring: Ring::default(),
            far: Heap::default(),
            horizon: 1,
            next_seq: 0,
        }
    }
}

/// Whether the queue keeps the entry: it has no slot or `cancelled(slot)` says no.
#[inline(always)]
fn live<E>(e: &Entry<E>, cancelled: &mut impl FnMut(u32) -> bool) -> bool {
    e.slot == NO_SLOT || !cancelled(e.slot)
}

impl<E: Copy> EventQueue<E> {
    /// Schedules `event` at `time`; returns its sequence number.
    pub fn push(&mut self, time: SimTime, event: E) -> u64 {
        self.push_entry(time, NO_SLOT, event)
    }

    /// Schedules `event` at `time` in `slot` of the caller's table of pending events, by
    /// which the caller can cancel it. Slots must be unique among the events in the queue
    /// and not [`NO_SLOT`].
    pub fn push_keyed(&mut self, time: SimTime, slot: u32, event: E) {
        debug_assert_ne!(slot, NO_SLOT, "reserved slot");
        self.push_entry(time, slot, event);
    }

    #[inline]
    fn push_entry(&mut self, time: SimTime, slot: u32, event: E) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let e = Entry {
            time,
            seq,
            slot,
            event,
        };
        let b = time.0 >> BUCKET_SHIFT;
        if b < self.horizon {
            self.run.insert(e);
        } else if b - self.horizon < BUCKETS as u64 {
            self.ring.push(b, e);
        } else {
            self.far.push(e);
        }
        seq
    }

    /// With the run empty, moves the horizon past the next bucket that holds events and
    /// sorts their entries into the run (the cancelled ones, `cancelled(slot)`, are dropped
    /// instead). Returns false if the queue is empty.
    ///
    /// The bucket `b` taken is the earliest of the ring's and the far heap's: every event
    /// left in either is due in a later bucket, so the run holds exactly the events due
    /// before the new horizon `b + 1`. The ring's window moves on with the horizon; its
    /// events were all in buckets from `b` on, so they stay within it.
    fn advance(&mut self, cancelled: &mut impl FnMut(u32) -> bool) -> bool {
        debug_assert_eq!(self.run.len(), 0);
        let in_ring = self.ring.next_occupied(self.horizon);
        let in_far = self.far.peek().map(|e| e.time.0 >> BUCKET_SHIFT);
        let b = match (in_ring, in_far) {
            (Some(r), Some(f)) => r.min(f),
            (Some(r), None) => r,
            (None, Some(f)) => f,
            (None, None) => return false,
        };
        debug_assert!(b >= self.horizon);
        let mut keep = |e: &Entry<E>| live(e, cancelled);
        let (ring, far) = (&mut self.ring, &mut self.far);
        self.run.refill(|v| {
            if in_ring == Some(b) {
                ring.drain_into(b, v, &mut keep);
            }
            while far.peek().is_some_and(|e| e.time.0 >> BUCKET_SHIFT == b) {
                let e = far.pop().expect("peeked");
                if keep(&e) {
                    v.push(e);
                }
            }
        });
        self.horizon = b + 1;
        true
    }

    /// Drops cancelled events from the top of the queue (`cancelled(slot)` says whether the
    /// event in `slot` was cancelled, and frees the slot if so); returns whether an event is
    /// left, first in the run.
    #[inline]
    fn skip_cancelled(&mut self, cancelled: &mut impl FnMut(u32) -> bool) -> bool {
        loop {
            let Some(top) = self.run.first() else {
                if self.advance(cancelled) {
                    continue;
                }
                return false;
            };
            if live(top, cancelled) {
                return true;
            }
            self.run.pop_first();
        }
    }

    /// Removes the earliest event, first in the run.
    #[inline]
    fn take(&mut self) -> Entry<E> {
        self.run.pop_first().expect("non-empty")
    }

    /// Removes and returns the earliest event that is not cancelled (ties: the first
    /// pushed), with its slot.
    pub fn pop(&mut self, cancelled: &mut impl FnMut(u32) -> bool) -> Option<(SimTime, u32, E)> {
        if !self.skip_cancelled(cancelled) {
            return None;
        }
        let e = self.take();
        Some((e.time, e.slot, e.event))
    }

    /// Removes and returns the earliest event that is not cancelled, with its slot, if it is
    /// due at or before `until`; `Err(Some(t))` gives the time of a later one, `Err(None)`
    /// says the queue is empty. One look at the top per event, where `peek_time` then `pop`
    /// take two. Inlined into the engine's loop, its one caller there (lbsim's: a call's
    /// register saves and restores were about 20 instructions an event).
    #[inline(always)]
    pub fn pop_until(
        &mut self,
        until: SimTime,
        cancelled: &mut impl FnMut(u32) -> bool,
    ) -> Result<(SimTime, u32, E), Option<SimTime>> {
        if !self.skip_cancelled(cancelled) {
            return Err(None);
        }
        let top = self.run.first().expect("non-empty");
        if top.time > until {
            return Err(Some(top.time));
        }
        let e = self.take();
        Ok((e.time, e.slot, e.event))
    }

    /// The time of the earliest event that is not cancelled.
    pub fn peek_time(&mut self, cancelled: &mut impl FnMut(u32) -> bool) -> Option<SimTime> {
        if !self.skip_cancelled(cancelled) {
            return None;
        }
        self.run.first().map(|e| e.time)
    }

    /// Drops every cancelled event (`cancelled(slot)`, as for [`EventQueue::pop`]), not only
    /// those at the top. The order in which the others pop is unchanged: it is the total
    /// order of their `(time, seq)`, whatever the far heap's layout (and the run stays
    /// sorted).
    pub fn compact(&mut self, cancelled: &mut impl FnMut(u32) -> bool) {
        let mut keep = |e: &Entry<E>| live(e, cancelled);
        self.run.retain(&mut keep);
        self.ring.retain(&mut keep);
        self.far.retain(&mut keep);
    }

    /// Number of events in the queue, the cancelled ones not yet dropped included.
    pub fn queued(&self) -> usize {
        self.run.len() + self.ring.len() + self.far.v.len()
    }

    /// Total number of events ever pushed.
    pub fn pushed(&self) -> u64 {
        self.next_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lbsim_core::{Effects, Ev};
    use proptest::prelude::*;

    /// No event is cancelled.
    fn none(_: u32) -> bool {
        false
    }

    proptest! {
        /// Invariant: events pop in non-decreasing time, and equal times pop in push order.
        #[test]
        fn pops_in_time_then_insertion_order(times in proptest::collection::vec(0u64..20, 0..200)) {
            let mut q = EventQueue::default();
            for (i, &t) in times.iter().enumerate() {
                q.push(SimTime(t), i);
            }
            let mut last: Option<(SimTime, usize)> = None;
            while let Some((t, _, i)) = q.pop(&mut none) {
                prop_assert_eq!(SimTime(times[i]), t);
                if let Some((lt, li)) = last {
                    prop_assert!(lt < t || (lt == t && li < i));
                }
                last = Some((t, i));
            }
            prop_assert_eq!(last.map(|(_, i)| i).is_some(), !times.is_empty());
        }

        /// Invariant: a cancelled event is never returned; the others pop as if it had never
        /// been pushed. Cancellations go through the core's table of pending events.
        #[test]
        fn cancelled_events_never_pop(
            times in proptest::collection::vec(0u64..20, 0..200),
            cancel in proptest::collection::vec(any::<bool>(), 200),
        ) {
            let mut fx = Effects::default();
            let mut q = EventQueue::default();
            let mut reference = EventQueue::default();
            let mut keys = Vec::new();
            for (i, &t) in times.iter().enumerate() {
                let key = fx.at(t, Ev::Start(i as u32));
                q.push_keyed(SimTime(t), key.slot(), i);
                keys.push(key);
                if !cancel[i] {
                    reference.push(SimTime(t), i);
                }
            }
            fx.drain(|_| {});
            for (i, _) in times.iter().enumerate().filter(|&(i, _)| cancel[i]) {
                fx.cancel(keys[i]);
            }
            while let Some((t, _, i)) = reference.pop(&mut none) {
                prop_assert_eq!(q.peek_time(&mut |s| fx.take_cancelled(s)), Some(t));
                let got = q.pop(&mut |s| fx.take_cancelled(s));
                prop_assert_eq!(got, Some((t, keys[i].slot(), i)));
                prop_assert_eq!(fx.retire(keys[i].slot()), Ev::Start(i as u32));
            }
            prop_assert_eq!(q.pop(&mut |s| fx.take_cancelled(s)), None);
            prop_assert_eq!(q.queued(), 0);
        }

        /// Invariant: interleaved pushes, cancels and pops give the same sequence as a sorted
        /// reference list (`pop_until` and `compact` included): the run, the ring and the heap keep
        /// their order under any mix, and the slots that popped events free are reused
        /// without confusing their events. With `scale` 1, times are multiples of a quarter
        /// bucket and reach a dozen buckets ahead: events are inserted in the run and go to several
        /// buckets, and equal times are split between the two; with `scale` 2, multiples of
        /// an eighth of the ring's span, reaching six spans ahead: events go to the ring and
        /// the far heap, and equal times are split between those too (they still pop in push
        /// order).
        #[test]
        fn interleaved_operations_match_a_sorted_list(
            ops in proptest::collection::vec((0u8..5, 0u64..50), 0..400),
            scale in 0u8..3,
        ) {
            let unit = [1, BUCKET_NS / 4, BUCKET_NS * BUCKETS as u64 / 8][usize::from(scale)];
            let mut fx = Effects::default();
            let mut q = EventQueue::default();
            // (time, seq, id, key) of the live events.
            let mut model = Vec::new();
            let mut now = 0u64;
            let mut next_id = 0u64;
            for (op, x) in ops {
                match op {
                    0 | 1 => {
                        let t = now + x * unit;
                        let seq = q.pushed();
                        let key = fx.at(t, Ev::Start(next_id as u32));
                        q.push_keyed(SimTime(t), key.slot(), next_id);
                        model.push((t, seq, next_id, key));
                        next_id += 1;
                    }
                    2 if !model.is_empty() => {
                        let victim = model.remove((x as usize) % model.len());
                        fx.cancel(victim.3);
                    }
                    4 => {
                        q.compact(&mut |s| fx.take_cancelled(s));
                        prop_assert_eq!(q.queued(), model.len());
                        prop_assert_eq!(fx.cancelled(), 0);
                    }
                    _ => {
                        model.sort_unstable_by_key(|&(t, seq, _, _)| (t, seq));
                        let until = now + x / 4 * unit;
                        let got = q.pop_until(SimTime(until), &mut |s| fx.take_cancelled(s));
                        match model.first().copied() {
                            Some((t, _, id, key)) if t <= until => {
                                model.remove(0);
                                now = t;
                                prop_assert_eq!(got, Ok((SimTime(t), key.slot(), id)));
                                prop_assert_eq!(fx.retire(key.slot()), Ev::Start(id as u32));
                            }
                            Some((t, _, _, _)) => prop_assert_eq!(got, Err(Some(SimTime(t)))),
                            None => prop_assert_eq!(got, Err(None)),
                        }
                    }
                }
                fx.drain(|_| {});
            }
        }
    }
}
