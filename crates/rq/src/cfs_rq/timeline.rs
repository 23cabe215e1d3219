//! `cfs_rq->tasks_timeline`: the queued entities (except `curr`) in a balanced search tree
//! augmented with each subtree's smallest vruntime and smallest slice.
//!
//! Follows fair.c (v6.12): `__enqueue_entity()`'s `rb_add_augmented_cached(..., __entity_less,
//! &min_vruntime_cb)`, `__dequeue_entity()`'s `rb_erase_augmented_cached()`,
//! `min_vruntime_update()` (`min_vruntime` and `min_slice` of a subtree),
//! `__pick_first_entity()` (the cached leftmost), `__pick_root_entity()` and `pick_eevdf()`'s
//! heap search; for `sched_policy=cfs`, v6.1's vruntime-ordered tree and
//! `__pick_next_entity()` (the in-order successor).
//!
//! **Deliberate differences.** The tree is an AVL tree over an arena of slots indexed by
//! `u32` (freed slots are chained into a free list, so that a warm timeline allocates
//! nothing), not a red-black tree of nodes embedded in the entities; the entity keeps only
//! its slot index ([`SchedEntity::run_node`](crate::entity::SchedEntity)). Its order is the
//! kernel's: by key (`deadline` under EEVDF, as v6.8+ sorts the tree; `vruntime` under
//! legacy CFS), compared as `(s64)(a - b) < 0`, and an entity inserted with a key equal to
//! others goes to their right, as `rb_add()` does with a strict `less`. That is the order
//! (key, insertion sequence), which this tree uses as its search key, so an entity is found
//! again for its removal by searching, not through parent pointers; like the kernel it needs
//! the keys of one timeline to lie within 2^63 of each other. The insertion sequence is 32
//! bits, renumbered in tree order before it would wrap ([`Timeline::renumber`]), so that a
//! slot is a 64-byte cache line. Each slot caches the entity's vruntime, deadline and slice
//! at insertion; the vruntime and deadline do not change while the entity is in the tree
//! (the kernel's tree would be corrupt otherwise), and a slice that changes goes through
//! [`Timeline::set_slice`], which updates the cached minima. Its weight is not cached: `__dequeue_entity()` reads it from
//! the entity, as the kernel's `avg_vruntime_sub()` does.

use crate::entity::TaskId;
use crate::tunables::FairPick;

use super::{before, min_vruntime};

/// The index of no slot: an empty subtree, or an entity in no timeline.
///
/// No slot has this index (the arena stops short of it), so `slots.get(NIL)` is `None`: a
/// child or root that may be `NIL` is read with one bounds check instead of a test for `NIL`
/// and a bounds check.
pub(crate) const NIL: u32 = u32::MAX;

/// The greatest height of an AVL tree of fewer than 2^32 nodes (at most `1.4405 * log2(n +
/// 2) - 0.3277`, 46): the longest path an insertion walks (within a `u64` of direction bits).
const MAX_HEIGHT: usize = 48;

/// What the timeline caches of one entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) id: TaskId,
    /// Insertion sequence: the rbtree's order among equal keys (renumbered in tree order
    /// before it would wrap: [`Timeline::renumber`]).
    pub(crate) seq: u32,
    pub(crate) vruntime: u64,
    pub(crate) deadline: u64,
    pub(crate) slice: u64,
}

/// One arena slot: a node's fields and its subtree's links and augmentation, flat so that a
/// slot is 64 bytes, a cache line (a nested `Node` would carry its own 4 bytes of padding,
/// and the slot would be 72).
#[derive(Clone, Debug)]
struct Slot {
    vruntime: u64,
    deadline: u64,
    slice: u64,
    /// `se->min_vruntime`: the smallest vruntime of the subtree (wrapping order).
    min_vruntime: u64,
    /// `se->min_slice`: the smallest slice of the subtree.
    min_slice: u64,
    id: TaskId,
    seq: u32,
    left: u32,
    right: u32,
    /// AVL height of the subtree (1 for a leaf); 0 for a free slot, whose `left` links the
    /// free list.
    height: u8,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 64);

/// The augmented timeline of one cfs_rq.
#[derive(Clone, Debug)]
pub(crate) struct Timeline {
    slots: Vec<Slot>,
    free: u32,
    root: u32,
    /// `tasks_timeline.rb_leftmost`.
    leftmost: u32,
    len: usize,
    order: FairPick,
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline {
            slots: Vec::with_capacity(16),
            free: NIL,
            root: NIL,
            leftmost: NIL,
            len: 0,
            order: FairPick::Eevdf,
        }
    }
}

impl Timeline {
    /// The number of entities in the tree.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The key the tree is sorted by (`__entity_less()`: `entity_before()`): the deadline under
    /// EEVDF (v6.8+), the vruntime under legacy CFS (v6.1).
    #[inline]
    fn key(order: FairPick, n: &Node) -> u64 {
        match order {
            FairPick::Eevdf => n.deadline,
            FairPick::Cfs => n.vruntime,
        }
    }

    /// `a` sorts before `b`: an earlier key, or an equal key inserted earlier.
    #[inline]
    fn less(&self, a: &Node, b: &Node) -> bool {
        Self::less_in(self.order, a, b)
    }

    /// [`Timeline::less`] in the order `order` (for a walk that holds a slot borrowed).
    #[inline]
    fn less_in(order: FairPick, a: &Node, b: &Node) -> bool {
        let (ka, kb) = (Self::key(order, a), Self::key(order, b));
        before(ka, kb) || (ka == kb && a.seq < b.seq)
    }

    /// The order the tree is sorted by.
    #[inline]
    pub(crate) fn order(&self) -> FairPick {
        self.order
    }

    /// Sort the tree by the key of `order` (the pick policy's). A change of order re-inserts
    /// every entity in sequence order (insertion order, or tree order among the nodes a
    /// [`Timeline::renumber`] numbered); the simulator's policy is fixed for a run, so this
    /// happens at most before the first insertion.
    #[inline]
    pub(crate) fn set_order(&mut self, order: FairPick) {
        if self.order != order {
            self.reorder(order);
        }
    }

    /// [`Timeline::set_order`] to a new order.
    fn reorder(&mut self, order: FairPick) {
        let mut nodes: Vec<(u32, Node)> = self.slot_nodes().collect();
        nodes.sort_by_key(|(_, n)| n.seq);
        self.order = order;
        self.root = NIL;
        self.leftmost = NIL;
        self.len = 0;
        for (slot, node) in nodes {
            self.slots[slot as usize] = Slot::leaf(node);
            self.link(slot);
        }
    }

    /// Number the nodes 0, 1, ... in tree order; returns the next free number (the number of
    /// nodes).
    ///
    /// lbsim's: the kernel's tree needs no insertion sequence (equal keys go right as
    /// `rb_add()` walks down, and a node is found again through its parent pointers), this
    /// one keeps it in 32 bits and renumbers before it would wrap. The order is unchanged:
    /// the tree's order is (key, sequence), so nodes of equal keys keep their relative
    /// order, and every later insertion numbers after all of them, to their right as before.
    /// Caches and links are untouched. (A later [`Timeline::set_order`] re-inserts in this
    /// order rather than in insertion order; the simulator never changes the order of a
    /// non-empty tree.)
    pub(crate) fn renumber(&mut self) -> u32 {
        let mut next = 0u32;
        let mut stack: Vec<u32> = Vec::new();
        let mut at = self.root;
        loop {
            while at != NIL {
                stack.push(at);
                at = self.slots[at as usize].left;
            }
            let Some(top) = stack.pop() else { break };
            self.slots[top as usize].seq = next;
            next += 1;
            at = self.slots[top as usize].right;
        }
        next
    }

    /// The node in a slot, if the slot holds `id`.
    #[inline]
    pub(crate) fn get(&self, slot: u32, id: TaskId) -> Option<Node> {
        self.slots
            .get(slot as usize)
            .filter(|s| s.height != 0 && s.id == id)
            .map(Slot::node)
    }

    // ---------------------------------------------------------------------------------
    // Queries

    /// Follows fair.c: `__pick_first_entity()`: the leftmost node.
    #[inline]
    pub(crate) fn first(&self) -> Option<Node> {
        self.slots.get(self.leftmost as usize).map(Slot::node)
    }

    /// The root's `min_vruntime` (`__pick_root_entity()->min_vruntime`).
    #[inline]
    pub(crate) fn min_vruntime(&self) -> Option<u64> {
        self.slots.get(self.root as usize).map(|s| s.min_vruntime)
    }

    /// The root's `min_slice` (`__pick_root_entity()->min_slice`).
    #[inline]
    pub(crate) fn min_slice(&self) -> Option<u64> {
        self.slots.get(self.root as usize).map(|s| s.min_slice)
    }

    /// The in-order first node whose vruntime is `eligible`: the leftmost if it is eligible,
    /// else the heap search down the subtrees whose `min_vruntime` is eligible.
    ///
    /// Follows fair.c: `pick_eevdf()` (v6.12) from "Pick the leftmost entity if it's eligible"
    /// to the end of the heap search (`curr` is the caller's). Each subtree entered has an
    /// eligible `min_vruntime`, so the search ends at an eligible node.
    #[inline]
    pub(crate) fn first_eligible(&self, eligible: impl Fn(u64) -> bool) -> Option<Node> {
        let first = self.first()?;
        if eligible(first.vruntime) {
            return Some(first);
        }
        let mut at = self.root;
        while at != NIL {
            let s = &self.slots[at as usize];
            if self
                .slots
                .get(s.left as usize)
                .is_some_and(|l| eligible(l.min_vruntime))
            {
                at = s.left;
                continue;
            }
            if eligible(s.vruntime) {
                return Some(s.node());
            }
            at = s.right;
        }
        None
    }

    /// The in-order successor of the node in `slot`.
    ///
    /// Follows v6.1 fair.c: `__pick_next_entity()` (`rb_next()`).
    pub(crate) fn successor(&self, slot: u32) -> Option<Node> {
        let me = self.slots[slot as usize].node();
        let mut at = self.root;
        let mut best = NIL;
        while at != NIL {
            let s = &self.slots[at as usize];
            if self.less(&me, &s.node()) {
                best = at;
                at = s.left;
            } else {
                at = s.right;
            }
        }
        (best != NIL).then(|| self.slots[best as usize].node())
    }

    /// The nodes in tree order.
    pub(crate) fn iter(&self) -> Iter<'_> {
        let mut it = Iter {
            tl: self,
            stack: Vec::new(),
            left: self.len(),
        };
        it.push_left(self.root);
        it
    }

    /// The occupied slots and their nodes, in slot order.
    fn slot_nodes(&self) -> impl Iterator<Item = (u32, Node)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.height != 0)
            .map(|(i, s)| (i as u32, s.node()))
    }

    // ---------------------------------------------------------------------------------
    // Insertion and removal

    /// Insert a node; returns its slot.
    ///
    /// Follows rbtree_augmented.h: `rb_add_augmented_cached()` with fair.c's `__entity_less`
    /// and `min_vruntime_cb` (v6.12): right of equal keys, the leftmost cache and the
    /// subtree minima kept.
    pub(crate) fn insert(&mut self, node: Node) -> u32 {
        let slot = if self.free != NIL {
            let slot = self.free;
            self.free = self.slots[slot as usize].left;
            self.slots[slot as usize] = Slot::leaf(node);
            slot
        } else {
            self.slots.push(Slot::leaf(node));
            u32::try_from(self.slots.len() - 1)
                .ok()
                .filter(|&slot| slot != NIL)
                .expect("2^32 - 1 timeline slots")
        };
        self.link(slot);
        slot
    }

    /// Link a leaf slot into the tree.
    ///
    /// Walks down to the leaf's place, then back up the path restoring each slot's balance
    /// and augmentation ([`Timeline::rebalance`]), as a recursive insertion would at every
    /// ancestor; it stops at the first subtree whose root (the same slot, or the one a
    /// rotation put there, linked in its place) has the height and minima the subtree's
    /// root had before: every slot above then has children of the heights and minima it
    /// had, so its cached values and its balance, a recomputation from them, are unchanged
    /// (lbsim's: the same tree in fewer steps).
    fn link(&mut self, slot: u32) {
        if self.leftmost == NIL
            || self.less(
                &self.slots[slot as usize].node(),
                &self.slots[self.leftmost as usize].node(),
            )
        {
            self.leftmost = slot;
        }
        self.len += 1;
        if self.root == NIL {
            self.root = slot;
            return;
        }
        let node = self.slots[slot as usize].node();
        // The path from the root: each slot, and (bit `depth` of `lefts`) whether the leaf
        // went to its left.
        let mut path = [0u32; MAX_HEIGHT];
        let mut lefts = 0u64;
        let mut depth = 0;
        let mut at = self.root;
        let order = self.order;
        loop {
            let s = &mut self.slots[at as usize];
            let left = Self::less_in(order, &node, &s.node());
            path[depth] = at;
            lefts |= u64::from(left) << depth;
            depth += 1;
            let next = if left { &mut s.left } else { &mut s.right };
            if *next == NIL {
                *next = slot;
                break;
            }
            at = *next;
        }
        self.rebalance_path(&path, lefts, depth, depth);
    }

    /// Remove the node in `slot`; returns it.
    ///
    /// Follows rbtree_augmented.h: `rb_erase_augmented_cached()` with `min_vruntime_cb`
    /// (v6.12).
    ///
    /// Walks down to the slot, unlinks it (a slot with two children is replaced by its
    /// in-order successor, unlinked from the right subtree), then goes back up the path
    /// restoring each slot's balance and augmentation ([`Timeline::rebalance`]), as a
    /// recursive removal would at every ancestor. Above the removed slot's place it stops at
    /// the first subtree whose root has the height and minima the subtree's root had before,
    /// as [`Timeline::link`] does (lbsim's: the same tree in fewer steps).
    pub(crate) fn remove(&mut self, slot: u32) -> Node {
        let node = self.slots[slot as usize].node();
        debug_assert!(
            self.slots[slot as usize].height != 0,
            "removing a free slot"
        );
        // The path from the root, as in `link`.
        let mut path = [0u32; MAX_HEIGHT];
        let mut lefts = 0u64;
        let mut depth = 0;
        let mut at = self.root;
        while at != slot {
            assert!(at != NIL, "timeline: {:?} not found", node.id);
            let s = &self.slots[at as usize];
            let left = self.less(&node, &s.node());
            path[depth] = at;
            lefts |= u64::from(left) << depth;
            depth += 1;
            at = if left { s.left } else { s.right };
        }
        let (l, r) = (
            self.slots[slot as usize].left,
            self.slots[slot as usize].right,
        );
        if self.leftmost == slot {
            // The in-order successor: in the right subtree if there is one, else the parent
            // (the leftmost is a left child).
            self.leftmost = if r != NIL {
                self.leftmost_of(r)
            } else if depth > 0 {
                path[depth - 1]
            } else {
                NIL
            };
        }
        // The removed slot's place in the path: it and what lies below are rebalanced in any
        // case, the ancestors above until one comes out unchanged.
        let place = depth;
        if l == NIL || r == NIL {
            self.set_child(&path, lefts, place, if l == NIL { r } else { l });
        } else {
            depth += 1;
            let mut succ = r;
            while self.slots[succ as usize].left != NIL {
                path[depth] = succ;
                lefts |= 1 << depth;
                depth += 1;
                succ = self.slots[succ as usize].left;
            }
            let succ_right = self.slots[succ as usize].right;
            let s = &mut self.slots[succ as usize];
            s.left = l;
            if succ != r {
                s.right = r;
                self.slots[path[depth - 1] as usize].left = succ_right;
            }
            path[place] = succ;
            self.set_child(&path, lefts, place, succ);
        }
        self.rebalance_path(&path, lefts, depth, place);
        debug_assert_eq!(self.leftmost, self.leftmost_of(self.root));
        self.len -= 1;
        let s = &mut self.slots[slot as usize];
        s.height = 0;
        s.left = self.free;
        s.right = NIL;
        self.free = slot;
        node
    }

    /// Rebalance the slots `path[..depth]` bottom-up ([`Timeline::rebalance`]), linking each
    /// subtree's new root in its place; above `path[stop_below]` (exclusive) it stops at the
    /// first subtree whose root has the height and minima its root had before.
    #[inline(always)]
    fn rebalance_path(
        &mut self,
        path: &[u32; MAX_HEIGHT],
        lefts: u64,
        mut depth: usize,
        stop_below: usize,
    ) {
        while depth > 0 {
            depth -= 1;
            let at = path[depth];
            let s = &self.slots[at as usize];
            let before = (s.height, s.min_vruntime, s.min_slice);
            let top = self.rebalance(at);
            if top != at {
                self.set_child(path, lefts, depth, top);
            }
            let s = &self.slots[top as usize];
            if depth < stop_below && before == (s.height, s.min_vruntime, s.min_slice) {
                return;
            }
        }
    }

    /// Make `child` the subtree at position `depth` of a path from the root (`path[depth - 1]`'s
    /// child on the side bit `depth - 1` of `lefts` says; the root at depth 0).
    #[inline]
    fn set_child(&mut self, path: &[u32; MAX_HEIGHT], lefts: u64, depth: usize, child: u32) {
        if depth == 0 {
            self.root = child;
        } else {
            let p = &mut self.slots[path[depth - 1] as usize];
            if lefts & (1 << (depth - 1)) != 0 {
                p.left = child;
            } else {
                p.right = child;
            }
        }
    }

    /// Change the slice of the node in `slot` and recompute the cached `min_slice` on its
    /// path from the root (`min_vruntime_cb_propagate()` after `se->slice = slice`).
    pub(crate) fn set_slice(&mut self, slot: u32, slice: u64) {
        let node = self.slots[slot as usize].node();
        self.slots[slot as usize].slice = slice;
        self.reaugment(self.root, &node);
    }

    fn reaugment(&mut self, at: u32, node: &Node) {
        assert!(at != NIL, "timeline: {:?} not found", node.id);
        let here = self.slots[at as usize].node();
        if !(here.seq == node.seq && here.id == node.id) {
            if self.less(node, &here) {
                self.reaugment(self.slots[at as usize].left, node);
            } else {
                self.reaugment(self.slots[at as usize].right, node);
            }
        }
        self.update(at);
    }

    fn leftmost_of(&self, mut at: u32) -> u32 {
        if at == NIL {
            return NIL;
        }
        while self.slots[at as usize].left != NIL {
            at = self.slots[at as usize].left;
        }
        at
    }

    // ---------------------------------------------------------------------------------
    // Balance and augmentation

    #[inline]
    fn height(&self, at: u32) -> u8 {
        self.slots.get(at as usize).map_or(0, |s| s.height)
    }

    /// Recompute a slot's height and minima from its children.
    ///
    /// Follows fair.c: `min_vruntime_update()` (v6.12): `min_vruntime` and `min_slice` of the
    /// node and its children.
    fn update(&mut self, at: u32) {
        let (l, r) = (self.slots[at as usize].left, self.slots[at as usize].right);
        self.update_with(at, l, r, self.height(l).max(self.height(r)));
    }

    /// [`Timeline::update`] of a slot whose children `l`, `r` and their greater height the
    /// caller has read.
    #[inline]
    fn update_with(&mut self, at: u32, l: u32, r: u32, h_children: u8) {
        let mut min_v = self.slots[at as usize].vruntime;
        let mut min_s = self.slots[at as usize].slice;
        for c in [r, l] {
            if let Some(cs) = self.slots.get(c as usize) {
                min_v = min_vruntime(min_v, cs.min_vruntime);
                min_s = min_s.min(cs.min_slice);
            }
        }
        let h = 1 + h_children;
        let s = &mut self.slots[at as usize];
        s.min_vruntime = min_v;
        s.min_slice = min_s;
        s.height = h;
    }

    fn rotate_right(&mut self, at: u32) -> u32 {
        let l = self.slots[at as usize].left;
        self.slots[at as usize].left = self.slots[l as usize].right;
        self.slots[l as usize].right = at;
        self.update(at);
        self.update(l);
        l
    }

    fn rotate_left(&mut self, at: u32) -> u32 {
        let r = self.slots[at as usize].right;
        self.slots[at as usize].right = self.slots[r as usize].left;
        self.slots[r as usize].left = at;
        self.update(at);
        self.update(r);
        r
    }

    /// Restore the AVL balance at a slot whose children are balanced; returns the subtree's
    /// new root. A balanced slot only has its height and minima recomputed (inlined into the
    /// walks up a path); a rotation is [`Timeline::rotate_to_balance`]'s.
    #[inline(always)]
    fn rebalance(&mut self, at: u32) -> u32 {
        let (l, r) = (self.slots[at as usize].left, self.slots[at as usize].right);
        let (h_l, h_r) = (self.height(l), self.height(r));
        if h_l.abs_diff(h_r) > 1 {
            return self.rotate_to_balance(at);
        }
        self.update_with(at, l, r, h_l.max(h_r));
        at
    }

    /// [`Timeline::rebalance`] of a slot whose children's heights differ by 2: one rotation,
    /// or two when the taller child leans the other way.
    #[inline(never)]
    fn rotate_to_balance(&mut self, at: u32) -> u32 {
        let (l, r) = (self.slots[at as usize].left, self.slots[at as usize].right);
        let (hl, hr) = (self.height(l), self.height(r));
        debug_assert_eq!(hl.abs_diff(hr), 2, "rotate_to_balance() of a balanced slot");
        if hl > hr {
            let ll = self.slots[l as usize].left;
            let lr = self.slots[l as usize].right;
            if self.height(lr) > self.height(ll) {
                let nl = self.rotate_left(l);
                self.slots[at as usize].left = nl;
            }
            self.rotate_right(at)
        } else {
            let rl = self.slots[r as usize].left;
            let rr = self.slots[r as usize].right;
            if self.height(rl) > self.height(rr) {
                let nr = self.rotate_right(r);
                self.slots[at as usize].right = nr;
            }
            self.rotate_left(at)
        }
    }

    // ---------------------------------------------------------------------------------
    // Invariants

    /// Check the tree: in-order sorted by (key, insertion), AVL-balanced, every cached
    /// height and minimum equal to a recomputation, the leftmost cache and the count right.
    pub(crate) fn check(&self) -> Result<(), String> {
        let n = self.check_at(self.root)?.0;
        if n != self.len {
            return Err(format!("timeline holds {n} nodes, len {}", self.len));
        }
        if self.leftmost != self.leftmost_of(self.root) {
            return Err("timeline: stale leftmost".to_owned());
        }
        let mut prev: Option<Node> = None;
        for node in self.iter() {
            if let Some(p) = prev
                && !self.less(&p, &node)
            {
                return Err(format!("timeline out of order at {:?}", node.id));
            }
            prev = Some(node);
        }
        Ok(())
    }

    /// (nodes, height) of a subtree, checked.
    fn check_at(&self, at: u32) -> Result<(usize, u8), String> {
        if at == NIL {
            return Ok((0, 0));
        }
        let s = &self.slots[at as usize];
        let (nl, hl) = self.check_at(s.left)?;
        let (nr, hr) = self.check_at(s.right)?;
        if hl.abs_diff(hr) > 1 || s.height != 1 + hl.max(hr) {
            return Err(format!("timeline unbalanced at {:?}", s.id));
        }
        let mut min_v = s.vruntime;
        let mut min_s = s.slice;
        for c in [s.left, s.right] {
            if c != NIL {
                min_v = min_vruntime(min_v, self.slots[c as usize].min_vruntime);
                min_s = min_s.min(self.slots[c as usize].min_slice);
            }
        }
        if min_v != s.min_vruntime || min_s != s.min_slice {
            return Err(format!("timeline: stale minima at {:?}", s.id));
        }
        Ok((nl + nr + 1, s.height))
    }
}

impl Slot {
    fn leaf(node: Node) -> Slot {
        Slot {
            vruntime: node.vruntime,
            deadline: node.deadline,
            slice: node.slice,
            min_vruntime: node.vruntime,
            min_slice: node.slice,
            id: node.id,
            seq: node.seq,
            left: NIL,
            right: NIL,
            height: 1,
        }
    }

    /// The node this slot holds.
    #[inline(always)]
    fn node(&self) -> Node {
        Node {
            id: self.id,
            seq: self.seq,
            vruntime: self.vruntime,
            deadline: self.deadline,
            slice: self.slice,
        }
    }
}

/// The timeline's nodes in tree order.
pub(crate) struct Iter<'a> {
    tl: &'a Timeline,
    stack: Vec<u32>,
    left: usize,
}

impl Iter<'_> {
    fn push_left(&mut self, mut at: u32) {
        while at != NIL {
            self.stack.push(at);
            at = self.tl.slots[at as usize].left;
        }
    }
}

impl Iterator for Iter<'_> {
    type Item = Node;

    fn next(&mut self) -> Option<Node> {
        let at = self.stack.pop()?;
        self.left -= 1;
        let s = &self.tl.slots[at as usize];
        self.push_left(s.right);
        Some(s.node())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests;
