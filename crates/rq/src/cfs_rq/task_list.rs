//! `rq->cfs_tasks`: the queued tasks of a runqueue (`curr` included), most recently picked or
//! enqueued first, as an intrusive doubly linked list.
//!
//! Follows include/linux/list.h as fair.c uses it on `cfs_tasks` (v6.12): `list_add()` at
//! enqueue (`account_entity_enqueue()`), `list_del_init()` at dequeue
//! (`account_entity_dequeue()`), `list_move()` at a pick (`__set_next_task_fair()`) and for a
//! task `detach_tasks()` skips, `list_move_tail()` (v4.6-v4.14 `detach_tasks()`), walked from
//! either end.
//!
//! **Deliberate difference.** The links live in an arena of `u32`-indexed slots owned by the
//! list (freed slots chained into a free list), not in the entities; the entity keeps only
//! its slot ([`SchedEntity::group_node`](crate::entity::SchedEntity)), checked against the
//! slot's task on use. Callers that know only the task (the balancer) find its slot by
//! walking the list, as the Vec this replaces did.

use crate::entity::TaskId;

use super::timeline::NIL;

/// One arena slot (16 bytes: a free slot is marked by its `prev`, not by a flag).
#[derive(Clone, Debug)]
struct Link {
    id: TaskId,
    /// The previous slot ([`NIL`] at the head); [`FREE`] for a free slot.
    prev: u32,
    /// The next slot; for a free slot, the next free one.
    next: u32,
}

/// The `prev` of a free slot (no slot has this index either: the arena stops short of
/// [`NIL`] - 1).
const FREE: u32 = NIL - 1;

/// The list of one runqueue.
#[derive(Clone, Debug)]
pub(crate) struct TaskList {
    links: Vec<Link>,
    head: u32,
    tail: u32,
    free: u32,
    len: usize,
}

impl Default for TaskList {
    fn default() -> TaskList {
        TaskList {
            links: Vec::with_capacity(16),
            head: NIL,
            tail: NIL,
            free: NIL,
            len: 0,
        }
    }
}

impl TaskList {
    /// Whether `slot` holds `id`.
    #[inline]
    pub(crate) fn holds(&self, slot: u32, id: TaskId) -> bool {
        self.links
            .get(slot as usize)
            .is_some_and(|l| l.prev != FREE && l.id == id)
    }

    /// The slot of `id`, by walking from the head (for callers without the entity).
    pub(crate) fn find(&self, id: TaskId) -> Option<u32> {
        let mut at = self.head;
        while at != NIL {
            let l = &self.links[at as usize];
            if l.id == id {
                return Some(at);
            }
            at = l.next;
        }
        None
    }

    /// `list_add()`: put `id` at the head; returns its slot.
    pub(crate) fn push_front(&mut self, id: TaskId) -> u32 {
        let link = Link {
            id,
            prev: NIL,
            next: NIL,
        };
        let slot = if self.free != NIL {
            let slot = self.free;
            self.free = self.links[slot as usize].next;
            self.links[slot as usize] = link;
            slot
        } else {
            self.links.push(link);
            u32::try_from(self.links.len() - 1)
                .ok()
                .filter(|&slot| slot < FREE)
                .expect("more than 2^32 - 2 cfs_tasks slots")
        };
        self.link_front(slot);
        self.len += 1;
        slot
    }

    /// `list_del_init()`: take the task in `slot` off the list and free the slot.
    pub(crate) fn remove(&mut self, slot: u32) {
        debug_assert!(
            self.links[slot as usize].prev != FREE,
            "removing a free slot"
        );
        self.unlink(slot);
        self.len -= 1;
        let l = &mut self.links[slot as usize];
        l.prev = FREE;
        l.next = self.free;
        self.free = slot;
    }

    /// `list_move()`: move the task in `slot` to the head.
    pub(crate) fn move_to_head(&mut self, slot: u32) {
        if self.head == slot {
            return;
        }
        self.unlink(slot);
        self.link_front(slot);
    }

    /// `list_move_tail()`: move the task in `slot` to the tail.
    pub(crate) fn move_to_tail(&mut self, slot: u32) {
        if self.tail == slot {
            return;
        }
        self.unlink(slot);
        let l = &mut self.links[slot as usize];
        l.prev = self.tail;
        l.next = NIL;
        if self.tail == NIL {
            self.head = slot;
        } else {
            self.links[self.tail as usize].next = slot;
        }
        self.tail = slot;
    }

    /// The tasks, head first.
    pub(crate) fn iter(&self) -> Iter<'_> {
        Iter {
            list: self,
            front: self.head,
            back: self.tail,
            left: self.len,
        }
    }

    fn unlink(&mut self, slot: u32) {
        let (prev, next) = {
            let l = &self.links[slot as usize];
            (l.prev, l.next)
        };
        if prev == NIL {
            self.head = next;
        } else {
            self.links[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.links[next as usize].prev = prev;
        }
    }

    fn link_front(&mut self, slot: u32) {
        let l = &mut self.links[slot as usize];
        l.prev = NIL;
        l.next = self.head;
        if self.head == NIL {
            self.tail = slot;
        } else {
            self.links[self.head as usize].prev = slot;
        }
        self.head = slot;
    }
}

/// The list's tasks, from either end.
pub(crate) struct Iter<'a> {
    list: &'a TaskList,
    front: u32,
    back: u32,
    left: usize,
}

impl Iterator for Iter<'_> {
    type Item = TaskId;

    fn next(&mut self) -> Option<TaskId> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let l = &self.list.links[self.front as usize];
        self.front = l.next;
        Some(l.id)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<TaskId> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let l = &self.list.links[self.back as usize];
        self.back = l.prev;
        Some(l.id)
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests;
