//! The augmented tree against the linear timeline it replaced (kept here as the reference):
//! random insertions, removals, picks, successor and minimum queries, with keys drawn from a
//! few values so that equal keys are common, on bases that make the keys wrap around 0 and
//! 2^63. Case counts follow PROPTEST_CASES; a failure prints the base and operations.
//!
//! Invariants (each checked after every operation):
//! - `first_matches_linear`: `first()` is the linear leftmost (smallest key, then earliest
//!   insertion);
//! - `min_vruntime_matches_linear` / `min_slice_matches_linear`: the root's minima are the
//!   linear folds;
//! - `pick_matches_linear`: `first_eligible()` is the linear EEVDF pick (the eligible node
//!   with the earliest deadline, then earliest insertion), with eligibility as `pick_eevdf()`
//!   computes it (`avg >= key * load`);
//! - `successor_matches_linear`: `successor()` is the linear in-order successor;
//! - `well_formed`: `check()` passes (sorted, balanced, minima and leftmost cached right) and
//!   `iter()` yields exactly the linear set;
//! - `renumber_keeps_order`: after `renumber()`, the tree's nodes in order carry 0, 1, ...
//!   and are the linear nodes sorted by (key, sequence); later insertions number on from the
//!   count it returned.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use slotmap::SlotMap;

use super::*;

/// The timeline as lbsim kept it before the tree: a vector in no order, scanned.
#[derive(Default)]
struct Linear {
    nodes: Vec<Node>,
}

impl Linear {
    fn key(order: FairPick, n: &Node) -> u64 {
        match order {
            FairPick::Eevdf => n.deadline,
            FairPick::Cfs => n.vruntime,
        }
    }

    /// The old `leftmost()`.
    fn first(&self, order: FairPick) -> Option<Node> {
        let mut best: Option<&Node> = None;
        for n in &self.nodes {
            best = match best {
                None => Some(n),
                Some(b) => {
                    let (kn, kb) = (Self::key(order, n), Self::key(order, b));
                    if before(kn, kb) || (kn == kb && n.seq < b.seq) {
                        Some(n)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        best.copied()
    }

    /// The old `timeline_min_vruntime()`.
    fn min_vruntime(&self) -> Option<u64> {
        let mut it = self.nodes.iter();
        let first = it.next()?.vruntime;
        Some(it.fold(first, |m, n| min_vruntime(m, n.vruntime)))
    }

    fn min_slice(&self) -> Option<u64> {
        self.nodes.iter().map(|n| n.slice).min()
    }

    /// The old loop of `pick_eevdf()`: the eligible node with the earliest deadline, then the
    /// earliest insertion.
    fn pick(&self, min_v: u64, avg: i64, load: i64) -> Option<Node> {
        let mut best: Option<&Node> = None;
        for n in &self.nodes {
            if avg < (n.vruntime.wrapping_sub(min_v) as i64).wrapping_mul(load) {
                continue;
            }
            best = match best {
                None => Some(n),
                Some(b) => {
                    if before(n.deadline, b.deadline) || (n.deadline == b.deadline && n.seq < b.seq)
                    {
                        Some(n)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        best.copied()
    }

    /// The old `successor_by_vruntime()`, for either order.
    fn successor(&self, order: FairPick, me: &Node) -> Option<Node> {
        let k = |n: &Node| Self::key(order, n);
        let after = |n: &Node| before(k(me), k(n)) || (k(n) == k(me) && n.seq > me.seq);
        let mut best: Option<&Node> = None;
        for n in self.nodes.iter().filter(|n| after(n)) {
            best = match best {
                None => Some(n),
                Some(b) => {
                    if before(k(n), k(b)) || (k(n) == k(b) && n.seq < b.seq) {
                        Some(n)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        best.copied()
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// Insert with vruntime `base + dv * 1000` and deadline `base + dd * 1000` (few values:
    /// many equal keys).
    Insert { dv: u8, dd: u8, slice: u8 },
    /// Remove the `i % len`-th node (in insertion order).
    Remove(usize),
    /// Pick with `min_vruntime = base + dmin * 1000`, the sums as `pick_eevdf()` builds them.
    Pick { dmin: u8, avg: i64, load: u8 },
    /// The successor of the `i % len`-th node.
    Successor(usize),
    /// Re-sort by the other policy's key.
    Flip,
    /// Renumber the insertion sequence (as the cfs_rq does before it would wrap).
    Renumber,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..6, 0u8..6, 0u8..4).prop_map(|(dv, dd, slice)| Op::Insert { dv, dd, slice }),
        3 => any::<usize>().prop_map(Op::Remove),
        3 => (0u8..6, -6_000i64..6_000, 1u8..8).prop_map(|(dmin, avg, load)| Op::Pick { dmin, avg, load }),
        2 => any::<usize>().prop_map(Op::Successor),
        1 => Just(Op::Flip),
        1 => Just(Op::Renumber),
    ]
}

fn base() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(u64::MAX - 2_500),
        Just((1u64 << 63) - 2_500),
        any::<u64>(),
    ]
}

/// What a run reached, for the "sometimes" side.
#[derive(Default, Debug)]
struct Seen {
    /// A pick where the leftmost was not eligible but another node was (the heap search ran).
    searched: u32,
    /// A pick decided between equal deadlines by insertion order.
    tie_broken: u32,
    /// A removal from a tree of at least 8 nodes.
    big_removal: u32,
    /// A successor with an equal key.
    equal_successor: u32,
    /// A renumbering of a tree holding equal keys.
    renumbered_ties: u32,
}

/// Run `ops` on the tree and the linear reference side by side, checking the invariants.
fn run(base: u64, ops: &[Op], seen: &mut Seen) -> Result<(), TestCaseError> {
    let mut ids: SlotMap<TaskId, ()> = SlotMap::with_key();
    let mut tree = Timeline::default();
    let mut lin = Linear::default();
    // (slot, node) in insertion order.
    let mut live: Vec<(u32, Node)> = Vec::new();
    let mut seq = 0u32;
    let at = |d: u8| base.wrapping_add(u64::from(d) * 1000);
    for op in ops {
        match *op {
            Op::Insert { dv, dd, slice } => {
                let node = Node {
                    id: ids.insert(()),
                    seq,
                    vruntime: at(dv),
                    deadline: at(dd),
                    slice: 100_000 * u64::from(slice + 1),
                };
                seq += 1;
                let slot = tree.insert(node);
                lin.nodes.push(node);
                live.push((slot, node));
            }
            Op::Remove(i) => {
                if live.is_empty() {
                    continue;
                }
                if live.len() >= 8 {
                    seen.big_removal += 1;
                }
                let (slot, node) = live.remove(i % live.len());
                prop_assert_eq!(tree.get(slot, node.id), Some(node));
                prop_assert_eq!(tree.remove(slot), node);
                prop_assert_eq!(tree.get(slot, node.id), None);
                let pos = lin.nodes.iter().position(|n| n.id == node.id).unwrap();
                lin.nodes.swap_remove(pos);
            }
            Op::Pick { dmin, avg, load } => {
                let min_v = at(dmin);
                let load = i64::from(load);
                let got = tree
                    .first_eligible(|v| avg >= (v.wrapping_sub(min_v) as i64).wrapping_mul(load));
                if tree.order() == FairPick::Eevdf {
                    let want = lin.pick(min_v, avg, load);
                    prop_assert_eq!(got, want, "pick_matches_linear");
                    if let (Some(w), Some(f)) = (want, tree.first())
                        && w.id != f.id
                    {
                        seen.searched += 1;
                    }
                    if let Some(w) = want
                        && lin.nodes.iter().any(|n| {
                            n.id != w.id
                                && n.deadline == w.deadline
                                && avg >= (n.vruntime.wrapping_sub(min_v) as i64) * load
                        })
                    {
                        seen.tie_broken += 1;
                    }
                }
            }
            Op::Successor(i) => {
                if live.is_empty() {
                    continue;
                }
                let (slot, node) = live[i % live.len()];
                let got = tree.successor(slot);
                let want = lin.successor(tree.order(), &node);
                prop_assert_eq!(got, want, "successor_matches_linear");
                if let Some(w) = want
                    && Linear::key(tree.order(), &w) == Linear::key(tree.order(), &node)
                {
                    seen.equal_successor += 1;
                }
            }
            Op::Flip => tree.set_order(match tree.order() {
                FairPick::Eevdf => FairPick::Cfs,
                FairPick::Cfs => FairPick::Eevdf,
            }),
            Op::Renumber => {
                let order = tree.order();
                if lin.nodes.iter().enumerate().any(|(i, a)| {
                    lin.nodes[..i]
                        .iter()
                        .any(|b| Linear::key(order, a) == Linear::key(order, b))
                }) {
                    seen.renumbered_ties += 1;
                }
                let next = tree.renumber();
                // The reference renumbered on its own: its nodes sorted by (key, sequence).
                lin.nodes.sort_by(|a, b| {
                    if Timeline::less_in(order, a, b) {
                        std::cmp::Ordering::Less
                    } else if Timeline::less_in(order, b, a) {
                        std::cmp::Ordering::Greater
                    } else {
                        std::cmp::Ordering::Equal
                    }
                });
                for (i, n) in lin.nodes.iter_mut().enumerate() {
                    n.seq = i as u32;
                }
                let got: Vec<(TaskId, u32)> = tree.iter().map(|n| (n.id, n.seq)).collect();
                let want: Vec<(TaskId, u32)> = lin.nodes.iter().map(|n| (n.id, n.seq)).collect();
                prop_assert_eq!(got, want, "renumber_keeps_order");
                prop_assert_eq!(next as usize, lin.nodes.len(), "renumber_keeps_order");
                for (_, node) in &mut live {
                    node.seq = lin.nodes.iter().find(|n| n.id == node.id).unwrap().seq;
                }
                seq = next;
            }
        }
        prop_assert_eq!(
            tree.first(),
            lin.first(tree.order()),
            "first_matches_linear"
        );
        prop_assert_eq!(
            tree.min_vruntime(),
            lin.min_vruntime(),
            "min_vruntime_matches_linear"
        );
        prop_assert_eq!(
            tree.min_slice(),
            lin.min_slice(),
            "min_slice_matches_linear"
        );
        if let Err(e) = tree.check() {
            return Err(TestCaseError::fail(format!("well_formed: {e}")));
        }
        let mut in_tree: Vec<u32> = tree.iter().map(|n| n.seq).collect();
        let mut in_lin: Vec<u32> = lin.nodes.iter().map(|n| n.seq).collect();
        in_tree.sort_unstable();
        in_lin.sort_unstable();
        prop_assert_eq!(in_tree, in_lin, "well_formed: the same set");
        prop_assert_eq!(tree.len(), lin.nodes.len());
    }
    Ok(())
}

proptest! {
    /// The tree answers every query as the linear timeline did.
    #[test]
    fn tree_matches_linear(base in base(), ops in prop::collection::vec(op(), 1..300)) {
        run(base, &ops, &mut Seen::default())?;
    }
}

/// The property above is not vacuous: over a fixed sample, the heap search runs, deadline ties
/// are broken by insertion order, large trees shrink, and successors with equal keys occur.
#[test]
fn sometimes_the_interesting_cases_occur() {
    let mut runner = TestRunner::deterministic();
    let mut seen = Seen::default();
    let case = (base(), prop::collection::vec(op(), 1..300));
    for _ in 0..100 {
        let (base, ops) = case.new_tree(&mut runner).unwrap().current();
        run(base, &ops, &mut seen).unwrap();
    }
    assert!(seen.searched > 0, "{seen:?}");
    assert!(seen.tie_broken > 0, "{seen:?}");
    assert!(seen.big_removal > 0, "{seen:?}");
    assert!(seen.equal_successor > 0, "{seen:?}");
    assert!(seen.renumbered_ties > 0, "{seen:?}");
}

/// Example: five equal deadlines come out in insertion order, whatever was removed between.
#[test]
fn equal_keys_keep_insertion_order() {
    let mut ids: SlotMap<TaskId, ()> = SlotMap::with_key();
    let mut tree = Timeline::default();
    let mut slots = Vec::new();
    for seq in 0..5 {
        let node = Node {
            id: ids.insert(()),
            seq,
            vruntime: 7,
            deadline: 42,
            slice: 3,
        };
        slots.push(tree.insert(node));
    }
    tree.remove(slots[0]);
    tree.remove(slots[3]);
    let order: Vec<u32> = tree.iter().map(|n| n.seq).collect();
    assert_eq!(order, [1, 2, 4]);
    assert_eq!(tree.first().map(|n| n.seq), Some(1));
    assert_eq!(tree.first_eligible(|_| true).map(|n| n.seq), Some(1));
    assert_eq!(tree.successor(slots[2]).map(|n| n.seq), Some(4));
}

/// Example: a renumbering keeps equal keys in insertion order, and what is inserted after it
/// goes to their right.
#[test]
fn renumbering_keeps_equal_keys_in_insertion_order() {
    let mut ids: SlotMap<TaskId, ()> = SlotMap::with_key();
    let mut tree = Timeline::default();
    let mut node = |seq: u32, deadline: u64| Node {
        id: ids.insert(()),
        seq,
        vruntime: 7,
        deadline,
        slice: 3,
    };
    // Sequences near the top of the range, equal deadlines inserted out of key order.
    let first = [
        node(u32::MAX - 4, 42),
        node(u32::MAX - 3, 41),
        node(u32::MAX - 2, 42),
    ];
    for n in first {
        tree.insert(n);
    }
    assert_eq!(tree.renumber(), 3);
    let later = node(3, 42);
    tree.insert(later);
    let got: Vec<(TaskId, u32)> = tree.iter().map(|n| (n.id, n.seq)).collect();
    assert_eq!(
        got,
        [
            (first[1].id, 0),
            (first[0].id, 1),
            (first[2].id, 2),
            (later.id, 3)
        ]
    );
    tree.check().unwrap();
}
