//! The event queue: a binary heap ordered by `(time, seq)`.
//!
//! `seq` is a counter that grows with every push, so two events at the same time pop in the
//! order they were pushed. That makes a run a pure function of its inputs and seed.
//!
//! An event pushed with a slot ([`EventQueue::push_keyed`]) can be cancelled through it: the
//! queue does not keep cancellations itself, the caller does (the core's table of pending
//! events, [`lbsim_core::Effects`]), and the queue asks it about each keyed event that
//! reaches the top (`cancelled(slot)`). A cancelled event stays in the heap until then but
//! is never returned (lazy deletion), so the order of the other events is untouched, and no
//! cancelled key is hashed or searched: the slot is an index. Cancelled events far in the
//! future (the end of an always-running task's action, re-armed at each preemption) would
//! never reach the top: the caller drops them all with [`EventQueue::compact`] when they
//! are half the heap.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::SimTime;

/// The slot of an event pushed without one (it cannot be cancelled).
pub const NO_SLOT: u32 = u32::MAX;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    slot: u32,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that the max-heap pops the earliest `(time, seq)` first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A deterministic priority queue of events of type `E`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
}

impl<E> std::fmt::Debug for EventQueue<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventQueue")
            .field("queued", &self.heap.len())
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
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

    fn push_entry(&mut self, time: SimTime, slot: u32, event: E) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            time,
            seq,
            slot,
            event,
        });
        seq
    }

    /// Drops cancelled events from the top of the heap: `cancelled(slot)` says whether the
    /// event in `slot` was cancelled (and frees the slot if so).
    #[inline]
    fn skip_cancelled(&mut self, cancelled: &mut impl FnMut(u32) -> bool) {
        while let Some(top) = self.heap.peek() {
            if top.slot == NO_SLOT || !cancelled(top.slot) {
                return;
            }
            self.heap.pop();
        }
    }

    /// Removes and returns the earliest event that is not cancelled (ties: the first
    /// pushed), with its slot.
    pub fn pop(&mut self, cancelled: &mut impl FnMut(u32) -> bool) -> Option<(SimTime, u32, E)> {
        self.skip_cancelled(cancelled);
        self.heap.pop().map(|e| (e.time, e.slot, e.event))
    }

    /// Removes and returns the earliest event that is not cancelled, with its slot, if it is
    /// due at or before `until`; `Err(Some(t))` gives the time of a later one, `Err(None)`
    /// says the queue is empty. One look at the top per event, where `peek_time` then `pop`
    /// take two.
    pub fn pop_until(
        &mut self,
        until: SimTime,
        cancelled: &mut impl FnMut(u32) -> bool,
    ) -> Result<(SimTime, u32, E), Option<SimTime>> {
        self.skip_cancelled(cancelled);
        match self.heap.peek() {
            None => Err(None),
            Some(top) if top.time > until => Err(Some(top.time)),
            Some(_) => Ok(self
                .heap
                .pop()
                .map(|e| (e.time, e.slot, e.event))
                .expect("non-empty")),
        }
    }

    /// The time of the earliest event that is not cancelled.
    pub fn peek_time(&mut self, cancelled: &mut impl FnMut(u32) -> bool) -> Option<SimTime> {
        self.skip_cancelled(cancelled);
        self.heap.peek().map(|e| e.time)
    }

    /// Drops every cancelled event (`cancelled(slot)`, as for [`EventQueue::pop`]), not only
    /// those at the top. The order in which the others pop is unchanged: it is the total
    /// order of their `(time, seq)`, whatever the heap's layout.
    pub fn compact(&mut self, cancelled: &mut impl FnMut(u32) -> bool) {
        self.heap
            .retain(|e| e.slot == NO_SLOT || !cancelled(e.slot));
    }

    /// Number of events in the heap, the cancelled ones not yet dropped included.
    pub fn queued(&self) -> usize {
        self.heap.len()
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
            fx.drain();
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
        /// reference list (`pop_until` and `compact` included): the heap keeps its order under
        /// any mix, and the slots that popped events free are reused without confusing their
        /// events.
        #[test]
        fn interleaved_operations_match_a_sorted_list(
            ops in proptest::collection::vec((0u8..5, 0u64..50), 0..400),
        ) {
            let mut fx = Effects::default();
            let mut q = EventQueue::default();
            // (time, seq, id, key) of the live events.
            let mut model = Vec::new();
            let mut now = 0u64;
            let mut next_id = 0u64;
            for (op, x) in ops {
                match op {
                    0 | 1 => {
                        let t = now + x;
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
                        model.sort_unstable();
                        let until = now + x / 4;
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
                fx.drain();
            }
        }
    }
}
