//! The run: the events due before the event queue's horizon, sorted
//! ([`super::EventQueue`]).

use super::heap::Entry;

/// The events due before the horizon in increasing `(time, seq)` from `head` on; the
/// entries before `head` have popped, and their room takes the shifts of inserts near the
/// head.
pub(super) struct Run<E> {
    v: Vec<Entry<E>>,
    head: usize,
}

impl<E> Default for Run<E> {
    fn default() -> Self {
        Run {
            v: Vec::new(),
            head: 0,
        }
    }
}

impl<E> Run<E> {
    /// Entries not popped yet.
    pub(super) fn len(&self) -> usize {
        self.v.len() - self.head
    }
}

impl<E: Copy> Run<E> {
    /// The earliest entry.
    #[inline]
    pub(super) fn first(&self) -> Option<&Entry<E>> {
        self.v.get(self.head)
    }

    /// Removes the earliest entry.
    #[inline]
    pub(super) fn pop_first(&mut self) -> Option<Entry<E>> {
        let e = *self.v.get(self.head)?;
        self.head += 1;
        Some(e)
    }

    /// Refills the empty run with the entries `fill` appends, in any order: they are sorted
    /// once (keys are unique, so any sort gives the one order).
    #[inline]
    pub(super) fn refill(&mut self, fill: impl FnOnce(&mut Vec<Entry<E>>)) {
        debug_assert_eq!(self.len(), 0);
        self.v.clear();
        self.head = 0;
        fill(&mut self.v);
        self.v.sort_unstable_by_key(Entry::key);
    }

    /// Inserts `e`, pushed after every entry of the run (its `seq` is the largest: the queue's
    /// counter gave every entry its `seq` when it was pushed, earlier, so `e` goes after the
    /// entries due at or before its time). The shorter side moves: the entries before it
    /// into the room of the last popped one, or those after it toward the end. An event
    /// pushed for now (a reschedule, a wake-up's IPI) lands near the head, most often before
    /// the first entry, in the room of the last popped one: nothing moves. Into an empty run
    /// it goes at the start of the vector, so that the popped entries' room does not grow.
    #[inline]
    pub(super) fn insert(&mut self, e: Entry<E>) {
        let head = self.head;
        debug_assert!(self.v.last().is_none_or(|x| x.seq < e.seq));
        if head == self.v.len() {
            self.v.clear();
            self.head = 0;
            self.v.push(e);
            return;
        }
        if head > 0 && self.v[head].time > e.time {
            self.head = head - 1;
            self.v[head - 1] = e;
            return;
        }
        let i = head + self.v[head..].partition_point(|x| x.time <= e.time);
        if head > 0 && i - head < self.v.len() - i {
            self.v.copy_within(head..i, head - 1);
            self.head = head - 1;
            self.v[i - 1] = e;
        } else {
            self.v.insert(i, e);
        }
    }

    /// Keeps the entries `keep` says to (in order).
    pub(super) fn retain(&mut self, keep: &mut impl FnMut(&Entry<E>) -> bool) {
        self.v.drain(..self.head);
        self.head = 0;
        self.v.retain(|e| keep(e));
    }
}
