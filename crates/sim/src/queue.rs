//! The event queue: two 4-ary heaps ordered by `(time, seq)`.
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
//!
//! **Near and far.** Most of the pending events are far off (every CPU's tick, its watchdog,
//! the sleep timers, the cancelled segment ends of running tasks) while most of the pops are
//! of events pushed a few microseconds before (the wake-up IPIs, reschedules and segment
//! ends of tasks that run briefly). An event due less than [`NEAR_NS`] after the last popped
//! one goes to a small heap of near events, the others to a heap of far ones; a pop takes
//! the earlier `(time, seq)` of the two tops. The order is the total order of `(time, seq)`
//! whichever heap an event is in (the split only decides how deep each pop's walk is: about
//! 4 levels instead of 10 of a binary heap in `tbench:clients=96` on xeon-4s, where 800
//! events are pending; the heaps are 4-ary, which halves that again).

use crate::time::SimTime;

/// The slot of an event pushed without one (it cannot be cancelled).
pub const NO_SLOT: u32 = u32::MAX;

/// Events due less than this after the last popped one go to the near heap, ns. Any value
/// gives the same order; this one measured best (16 to 64 us were alike) on replays of the
/// queue's operations in `tbench:clients=96` and `hackbench:groups=4` on xeon-4s at HZ =
/// 1000, where pops took 0.52 and 0.75 of the time of one `std::collections::BinaryHeap`.
pub const NEAR_NS: u64 = 1 << 15;

#[derive(Clone, Copy)]
struct Entry<E> {
    time: SimTime,
    seq: u64,
    slot: u32,
    event: E,
}

impl<E> Entry<E> {
    /// The order: `(time, seq)` as one integer, compared without branches.
    #[inline(always)]
    fn key(&self) -> u128 {
        u128::from(self.time.0) << 64 | u128::from(self.seq)
    }
}

/// A 4-ary min-heap of entries by [`Entry::key`]: half the levels of a binary heap, each
/// a comparison of four children (as two pairs, then the pair's winners, without branches
/// on the keys); `(time, seq)` keys are unique, so any min-heap pops the same sequence. A
/// pop moves the hole at the top down to a leaf along the smallest children and puts the
/// last entry there, sifting it up (it rarely moves: it was a leaf), as std's
/// `BinaryHeap::pop` does; keys are compared as integers rather than as tuples.
struct Heap<E> {
    v: Vec<Entry<E>>,
}

/// Children per node.
const ARITY: usize = 4;

impl<E: Copy> Heap<E> {
    #[inline]
    fn peek(&self) -> Option<&Entry<E>> {
        self.v.first()
    }

    /// Moves `e` up from the hole at `i` to its place.
    #[inline(always)]
    fn sift_up(v: &mut [Entry<E>], mut i: usize, e: Entry<E>) {
        let key = e.key();
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if v[parent].key() <= key {
                break;
            }
            v[i] = v[parent];
            i = parent;
        }
        v[i] = e;
    }

    /// The smallest of the children `first..first + 4` (all four present).
    #[inline(always)]
    fn min4(v: &[Entry<E>], first: usize) -> usize {
        let a = first + usize::from(v[first + 1].key() < v[first].key());
        let b = first + 2 + usize::from(v[first + 3].key() < v[first + 2].key());
        if v[b].key() < v[a].key() { b } else { a }
    }

    /// The smallest of the children `first..n` (fewer than four).
    #[inline(always)]
    fn min_tail(v: &[Entry<E>], first: usize, n: usize) -> usize {
        let mut c = first;
        for j in first + 1..n {
            if v[j].key() < v[c].key() {
                c = j;
            }
        }
        c
    }

    #[inline]
    fn push(&mut self, e: Entry<E>) {
        let i = self.v.len();
        self.v.push(e);
        Self::sift_up(&mut self.v, i, e);
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.v.pop()?;
        let n = self.v.len();
        if n == 0 {
            return Some(last);
        }
        let v = &mut self.v[..];
        let top = v[0];
        let mut hole = 0;
        let mut first = 1;
        while first + ARITY <= n {
            let c = Self::min4(v, first);
            v[hole] = v[c];
            hole = c;
            first = ARITY * hole + 1;
        }
        if first < n {
            // Fewer than four children: they are leaves.
            let c = Self::min_tail(v, first, n);
            v[hole] = v[c];
            hole = c;
        }
        Self::sift_up(v, hole, last);
        Some(top)
    }

    /// Keeps the entries `keep` says to, and restores the heap order (bottom-up).
    fn retain(&mut self, keep: &mut impl FnMut(&Entry<E>) -> bool) {
        self.v.retain(|e| keep(e));
        let n = self.v.len();
        for i in (0..n.div_ceil(ARITY)).rev() {
            let v = &mut self.v[..];
            let e = v[i];
            let key = e.key();
            let mut hole = i;
            loop {
                let first = ARITY * hole + 1;
                if first >= n {
                    break;
                }
                let c = if first + ARITY <= n {
                    Self::min4(v, first)
                } else {
                    Self::min_tail(v, first, n)
                };
                if key <= v[c].key() {
                    break;
                }
                v[hole] = v[c];
                hole = c;
            }
            v[hole] = e;
        }
    }
}

/// A deterministic priority queue of events of type `E`.
pub struct EventQueue<E> {
    /// Events due less than [`NEAR_NS`] after `now` when pushed.
    near: Heap<E>,
    /// The others.
    far: Heap<E>,
    /// The time of the last popped event (0 before the first).
    now: u64,
    next_seq: u64,
}

impl<E> std::fmt::Debug for EventQueue<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventQueue")
            .field("queued", &(self.near.v.len() + self.far.v.len()))
            .field("near", &self.near.v.len())
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            near: Heap { v: Vec::new() },
            far: Heap { v: Vec::new() },
            now: 0,
            next_seq: 0,
        }
    }
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
        if time.0.saturating_sub(self.now) < NEAR_NS {
            self.near.push(e);
        } else {
            self.far.push(e);
        }
        seq
    }

    /// The heap whose top is the earliest event (`true`: the near one), with that event.
    #[inline]
    fn top(&self) -> Option<(bool, &Entry<E>)> {
        match (self.near.peek(), self.far.peek()) {
            (Some(n), Some(f)) => Some(if n.key() < f.key() {
                (true, n)
            } else {
                (false, f)
            }),
            (Some(n), None) => Some((true, n)),
            (None, Some(f)) => Some((false, f)),
            (None, None) => None,
        }
    }

    /// Removes the earliest event, from the heap [`EventQueue::top`] named.
    #[inline]
    fn take(&mut self, near: bool) -> Entry<E> {
        let e = if near {
            self.near.pop()
        } else {
            self.far.pop()
        }
        .expect("non-empty");
        self.now = e.time.0;
        e
    }

    /// Drops cancelled events from the top of the queue: `cancelled(slot)` says whether the
    /// event in `slot` was cancelled (and frees the slot if so).
    #[inline]
    fn skip_cancelled(&mut self, cancelled: &mut impl FnMut(u32) -> bool) -> Option<bool> {
        loop {
            let (near, top) = self.top()?;
            if top.slot == NO_SLOT || !cancelled(top.slot) {
                return Some(near);
            }
            self.take(near);
        }
    }

    /// Removes and returns the earliest event that is not cancelled (ties: the first
    /// pushed), with its slot.
    pub fn pop(&mut self, cancelled: &mut impl FnMut(u32) -> bool) -> Option<(SimTime, u32, E)> {
        let near = self.skip_cancelled(cancelled)?;
        let e = self.take(near);
        Some((e.time, e.slot, e.event))
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
        let Some(near) = self.skip_cancelled(cancelled) else {
            return Err(None);
        };
        let top = if near { &self.near } else { &self.far }
            .peek()
            .expect("non-empty");
        if top.time > until {
            return Err(Some(top.time));
        }
        let e = self.take(near);
        Ok((e.time, e.slot, e.event))
    }

    /// The time of the earliest event that is not cancelled.
    pub fn peek_time(&mut self, cancelled: &mut impl FnMut(u32) -> bool) -> Option<SimTime> {
        self.skip_cancelled(cancelled)?;
        self.top().map(|(_, e)| e.time)
    }

    /// Drops every cancelled event (`cancelled(slot)`, as for [`EventQueue::pop`]), not only
    /// those at the top. The order in which the others pop is unchanged: it is the total
    /// order of their `(time, seq)`, whatever the heaps' layout.
    pub fn compact(&mut self, cancelled: &mut impl FnMut(u32) -> bool) {
        let mut keep = |e: &Entry<E>| e.slot == NO_SLOT || !cancelled(e.slot);
        self.near.retain(&mut keep);
        self.far.retain(&mut keep);
    }

    /// Number of events in the queue, the cancelled ones not yet dropped included.
    pub fn queued(&self) -> usize {
        self.near.v.len() + self.far.v.len()
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
        /// reference list (`pop_until` and `compact` included): the heaps keep their order
        /// under any mix, and the slots that popped events free are reused without confusing
        /// their events. With `far`, times are multiples of an eighth of `NEAR_NS` and reach
        /// six times it ahead: events go to both heaps, an event in the far one can be due
        /// before those in the near one, and equal times are split between the two (they
        /// still pop in push order).
        #[test]
        fn interleaved_operations_match_a_sorted_list(
            ops in proptest::collection::vec((0u8..5, 0u64..50), 0..400),
            far in any::<bool>(),
        ) {
            let unit = if far { NEAR_NS / 8 } else { 1 };
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
                        model.sort_unstable();
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
                fx.drain();
            }
        }
    }
}
