//! The 4-ary heap of queue entries ordered by `(time, seq)` that holds the events beyond the
//! ring ([`super::EventQueue`]).

use crate::time::SimTime;

#[derive(Clone, Copy)]
pub(super) struct Entry<E> {
    pub(super) time: SimTime,
    pub(super) seq: u64,
    pub(super) slot: u32,
    pub(super) event: E,
}

impl<E> Entry<E> {
    /// The order: `(time, seq)` as one integer, compared without branches.
    #[inline(always)]
    pub(super) fn key(&self) -> u128 {
        u128::from(self.time.0) << 64 | u128::from(self.seq)
    }
}

/// A 4-ary min-heap of entries by [`Entry::key`]: half the levels of a binary heap, each
/// a comparison of four children (as two pairs, then the pair's winners, without branches
/// on the keys); `(time, seq)` keys are unique, so any min-heap pops the same sequence. A
/// pop moves the hole at the top down to a leaf along the smallest children and puts the
/// last entry there, sifting it up (it rarely moves: it was a leaf), as std's
/// `BinaryHeap::pop` does; keys are compared as integers rather than as tuples.
pub(super) struct Heap<E> {
    pub(super) v: Vec<Entry<E>>,
}

/// Children per node.
const ARITY: usize = 4;

impl<E: Copy> Heap<E> {
    #[inline]
    pub(super) fn peek(&self) -> Option<&Entry<E>> {
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
    pub(super) fn push(&mut self, e: Entry<E>) {
        let i = self.v.len();
        self.v.push(e);
        Self::sift_up(&mut self.v, i, e);
    }

    #[inline]
    pub(super) fn pop(&mut self) -> Option<Entry<E>> {
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
    pub(super) fn retain(&mut self, keep: &mut impl FnMut(&Entry<E>) -> bool) {
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

impl<E> Default for Heap<E> {
    fn default() -> Self {
        Heap { v: Vec::new() }
    }
}
