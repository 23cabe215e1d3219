//! The event queue: a binary heap ordered by `(time, seq)`.
//!
//! `seq` is a counter that grows with every push, so two events at the same time pop in the
//! order they were pushed. That makes a run a pure function of its inputs and seed.
//!
//! An event pushed with a key ([`EventQueue::push_keyed`]) can be cancelled by it
//! ([`EventQueue::cancel`]): a cancelled event stays in the heap but is never returned (lazy
//! deletion), so the order of the other events is untouched. The cancelled keys are a hash
//! set that cannot be iterated (`KeySet`), so its order cannot reach a result; a pop
//! probes it only while it holds keys.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::time::SimTime;

/// The key of an event pushed without one (it cannot be cancelled).
const NO_KEY: u64 = u64::MAX;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    key: u64,
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

/// Hashes an event key (a distinct `u64` counter value) by one multiplication: keys are
/// never adversarial, and the set is only probed.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        // Fibonacci hashing: the high bits, which hashbrown uses, mix every bit of `v`.
        self.0 = v.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The keys of cancelled events: a hash set behind a type that can only insert, remove and
/// count, so that its iteration order (fixed by the hasher, but arbitrary and tied to the
/// table's layout) cannot be reached at all. It is
/// here instead of a `BTreeSet` because it is probed on every pop of a keyed event while
/// it holds any key (a `BTreeSet` search was 10% of a tbench run).
#[derive(Default)]
struct KeySet(
    #[allow(clippy::disallowed_types)] // never iterated: see the type's doc
    std::collections::HashSet<u64, BuildHasherDefault<KeyHasher>>,
);

impl KeySet {
    fn insert(&mut self, key: u64) {
        self.0.insert(key);
    }
    fn remove(&mut self, key: u64) -> bool {
        self.0.remove(&key)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// A deterministic priority queue of events of type `E`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    /// Keys of cancelled events still in the heap.
    cancelled: KeySet,
}

impl<E> std::fmt::Debug for EventQueue<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventQueue")
            .field("queued", &self.heap.len())
            .field("cancelled", &self.cancelled.len())
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
            cancelled: KeySet::default(),
        }
    }
}

impl<E> EventQueue<E> {
    /// Schedules `event` at `time`; returns its sequence number.
    pub fn push(&mut self, time: SimTime, event: E) -> u64 {
        self.push_entry(time, NO_KEY, event)
    }

    /// Schedules `event` at `time` under `key`, by which [`EventQueue::cancel`] can cancel
    /// it. Keys must be unique among the events in the queue and not `u64::MAX`.
    pub fn push_keyed(&mut self, time: SimTime, key: u64, event: E) {
        debug_assert_ne!(key, NO_KEY, "reserved key");
        self.push_entry(time, key, event);
    }

    fn push_entry(&mut self, time: SimTime, key: u64, event: E) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            time,
            seq,
            key,
            event,
        });
        seq
    }

    /// Cancels the queued event pushed under `key`: it will not be returned. `key` must be
    /// that of an event still in the queue.
    pub fn cancel(&mut self, key: u64) {
        self.cancelled.insert(key);
        debug_assert!(
            self.heap.len() >= self.cancelled.len(),
            "a cancelled key with no queued event"
        );
    }

    /// Drops cancelled events from the top of the heap.
    #[inline]
    fn skip_cancelled(&mut self) {
        while !self.cancelled.is_empty() {
            let Some(top) = self.heap.peek() else {
                return;
            };
            if top.key == NO_KEY || !self.cancelled.remove(top.key) {
                return;
            }
            self.heap.pop();
        }
    }

    /// Removes and returns the earliest event that is not cancelled (ties: the first pushed).
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.skip_cancelled();
        self.heap.pop().map(|e| (e.time, e.event))
    }

    /// Removes and returns the earliest event that is not cancelled if it is due at or before
    /// `until`; `Err(Some(t))` gives the time of a later one, `Err(None)` says the queue is
    /// empty. One look at the top per event, where `peek_time` then `pop` take two.
    pub fn pop_until(&mut self, until: SimTime) -> Result<(SimTime, E), Option<SimTime>> {
        self.skip_cancelled();
        match self.heap.peek() {
            None => Err(None),
            Some(top) if top.time > until => Err(Some(top.time)),
            Some(_) => Ok(self
                .heap
                .pop()
                .map(|e| (e.time, e.event))
                .expect("non-empty")),
        }
    }

    /// The time of the earliest event that is not cancelled.
    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.skip_cancelled();
        self.heap.peek().map(|e| e.time)
    }

    /// Number of queued events that are not cancelled.
    pub fn len(&self) -> usize {
        self.heap.len() - self.cancelled.len()
    }

    /// Whether no event is queued (cancelled ones aside).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total number of events ever pushed.
    pub fn pushed(&self) -> u64 {
        self.next_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Invariant: events pop in non-decreasing time, and equal times pop in push order.
        #[test]
        fn pops_in_time_then_insertion_order(times in proptest::collection::vec(0u64..20, 0..200)) {
            let mut q = EventQueue::default();
            for (i, &t) in times.iter().enumerate() {
                q.push(SimTime(t), i);
            }
            let mut last: Option<(SimTime, usize)> = None;
            while let Some((t, i)) = q.pop() {
                prop_assert_eq!(SimTime(times[i]), t);
                if let Some((lt, li)) = last {
                    prop_assert!(lt < t || (lt == t && li < i));
                }
                last = Some((t, i));
            }
            prop_assert_eq!(last.map(|(_, i)| i).is_some(), !times.is_empty());
        }

        /// Invariant: a cancelled event is never returned; the others pop as if it had never
        /// been pushed.
        #[test]
        fn cancelled_events_never_pop(
            times in proptest::collection::vec(0u64..20, 0..200),
            cancel in proptest::collection::vec(any::<bool>(), 200),
        ) {
            let mut q = EventQueue::default();
            let mut reference = EventQueue::default();
            for (i, &t) in times.iter().enumerate() {
                q.push_keyed(SimTime(t), i as u64, i);
                if !cancel[i] {
                    reference.push(SimTime(t), i);
                }
            }
            for (i, _) in times.iter().enumerate().filter(|&(i, _)| cancel[i]) {
                q.cancel(i as u64);
            }
            prop_assert_eq!(q.len(), reference.len());
            while let Some(e) = reference.pop() {
                prop_assert_eq!(q.peek_time(), Some(e.0));
                prop_assert_eq!(q.pop(), Some(e));
            }
            prop_assert_eq!(q.pop(), None);
            prop_assert!(q.is_empty());
        }

        /// Invariant: interleaved pushes, cancels and pops give the same sequence as a sorted
        /// reference list (`pop_until` included): the heap keeps its order under any mix.
        #[test]
        fn interleaved_operations_match_a_sorted_list(
            ops in proptest::collection::vec((0u8..4, 0u64..50), 0..400),
        ) {
            let mut q = EventQueue::default();
            // (time, seq, key) of the live events.
            let mut model: Vec<(u64, u64, u64)> = Vec::new();
            let mut now = 0u64;
            let mut next_key = 0u64;
            for (op, x) in ops {
                match op {
                    0 | 1 => {
                        let t = now + x;
                        let seq = q.pushed();
                        q.push_keyed(SimTime(t), next_key, next_key);
                        model.push((t, seq, next_key));
                        next_key += 1;
                    }
                    2 if !model.is_empty() => {
                        let victim = model.remove((x as usize) % model.len());
                        q.cancel(victim.2);
                    }
                    _ => {
                        model.sort_unstable();
                        let until = now + x / 4;
                        let got = q.pop_until(SimTime(until));
                        match model.first().copied() {
                            Some((t, _, k)) if t <= until => {
                                model.remove(0);
                                now = t;
                                prop_assert_eq!(got, Ok((SimTime(t), k)));
                            }
                            Some((t, _, _)) => prop_assert_eq!(got, Err(Some(SimTime(t)))),
                            None => prop_assert_eq!(got, Err(None)),
                        }
                    }
                }
                prop_assert_eq!(q.len(), model.len());
            }
        }
    }
}
