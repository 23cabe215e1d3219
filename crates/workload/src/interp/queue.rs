//! The interpreter's queue of expanded actions still to return: the first inline, the rest
//! (a condvar wait's re-lock, a tally's second probe, rt-app's iteration probes) in a heap
//! block the task allocates the first time it needs one.

use std::collections::VecDeque;

/// A first-in first-out queue whose front is a field: nearly every event expands to one
/// action, which then costs a store and a take, where a small vector's push and pop test its
/// inline/spilled state and move its length each time. The same size as a
/// `SmallVec<[T; 1]>` (the front's niche holds its `None`, the rest is one pointer).
#[derive(Clone, Debug)]
pub(super) struct ActionQueue<T> {
    /// The front; `None` only when the queue is empty.
    first: Option<T>,
    /// The entries after the front, in order. Boxed: one pointer in every task's state,
    /// where a `VecDeque` inline would add 24 bytes for the few tasks that ever use it.
    #[allow(clippy::box_collection)]
    rest: Option<Box<VecDeque<T>>>,
}

impl<T> Default for ActionQueue<T> {
    fn default() -> Self {
        ActionQueue {
            first: None,
            rest: None,
        }
    }
}

impl<T> ActionQueue<T> {
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Appends `v` at the back.
    #[inline(always)]
    pub(super) fn push(&mut self, v: T) {
        if self.first.is_none() {
            // Empty (the rest is empty whenever the front is).
            self.first = Some(v);
        } else {
            self.rest.get_or_insert_with(Box::default).push_back(v);
        }
    }

    /// Takes the front.
    #[inline(always)]
    pub(super) fn pop_front(&mut self) -> Option<T> {
        let v = self.first.take();
        if let Some(rest) = &mut self.rest {
            self.first = rest.pop_front();
        }
        v
    }

    pub(super) fn clear(&mut self) {
        self.first = None;
        if let Some(rest) = &mut self.rest {
            rest.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ActionQueue;

    #[test]
    fn keeps_the_order_of_pushes_across_the_front_and_the_rest() {
        let mut q = ActionQueue::default();
        assert!(q.is_empty());
        q.push(1);
        q.push(2);
        q.push(3);
        assert_eq!(q.pop_front(), Some(1));
        q.push(4);
        let mut got = Vec::new();
        while let Some(v) = q.pop_front() {
            got.push(v);
        }
        assert_eq!(got, [2, 3, 4]);
        assert!(q.is_empty());
        q.push(5);
        q.push(6);
        q.clear();
        assert!(q.is_empty());
        assert_eq!(q.pop_front(), None);
    }

    #[test]
    fn the_interpreters_queue_is_no_bigger_than_a_one_slot_small_vector() {
        type Entry = (crate::action::Action, super::super::Meas);
        assert!(
            std::mem::size_of::<ActionQueue<Entry>>()
                <= std::mem::size_of::<smallvec::SmallVec<[Entry; 1]>>()
        );
    }
}
