//! The linked `cfs_tasks` against the `VecDeque` it replaced (kept here as the reference):
//! random `list_add()`, `list_del()`, `list_move()`, `list_move_tail()` and walks. Case counts
//! follow PROPTEST_CASES.
//!
//! Invariants (after every operation):
//! - `same_order`: walking from the head and from the tail gives the reference's order;
//! - `same_len`: the iterators' exact sizes are the reference's length;
//! - `slots_hold_their_tasks`: each listed task's slot holds it and `find()` returns that slot,
//!   and a removed task's old slot no longer holds it.

use std::collections::VecDeque;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use slotmap::SlotMap;

use super::*;

#[derive(Clone, Debug)]
enum Op {
    Add,
    Remove(usize),
    MoveHead(usize),
    MoveTail(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Add),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => any::<usize>().prop_map(Op::MoveHead),
        1 => any::<usize>().prop_map(Op::MoveTail),
    ]
}

/// Moves of a task that was not already at that end, for the "sometimes" side.
#[derive(Default, Debug)]
struct Seen {
    inner_moves: u32,
    removals_from_middle: u32,
}

fn run(ops: &[Op], seen: &mut Seen) -> Result<(), TestCaseError> {
    let mut ids: SlotMap<TaskId, ()> = SlotMap::with_key();
    let mut list = TaskList::default();
    let mut reference: VecDeque<TaskId> = VecDeque::new();
    // (task, slot) of the listed tasks, in no order.
    let mut live: Vec<(TaskId, u32)> = Vec::new();
    for op in ops {
        match *op {
            Op::Add => {
                let id = ids.insert(());
                live.push((id, list.push_front(id)));
                reference.push_front(id);
            }
            Op::Remove(i) | Op::MoveHead(i) | Op::MoveTail(i) if !live.is_empty() => {
                let k = i % live.len();
                let (id, slot) = live[k];
                let pos = reference.iter().position(|&t| t == id).unwrap();
                let inner = pos != 0 && pos + 1 != reference.len();
                reference.remove(pos);
                match op {
                    Op::Remove(_) => {
                        seen.removals_from_middle += u32::from(inner);
                        list.remove(slot);
                        live.swap_remove(k);
                        prop_assert!(!list.holds(slot, id), "slots_hold_their_tasks");
                    }
                    Op::MoveHead(_) => {
                        seen.inner_moves += u32::from(inner);
                        list.move_to_head(slot);
                        reference.push_front(id);
                    }
                    _ => {
                        seen.inner_moves += u32::from(inner);
                        list.move_to_tail(slot);
                        reference.push_back(id);
                    }
                }
            }
            _ => {}
        }
        let fwd: Vec<TaskId> = list.iter().collect();
        let back: Vec<TaskId> = list.iter().rev().collect();
        let want: Vec<TaskId> = reference.iter().copied().collect();
        let want_back: Vec<TaskId> = reference.iter().rev().copied().collect();
        prop_assert_eq!(fwd, want, "same_order");
        prop_assert_eq!(back, want_back, "same_order (from the tail)");
        prop_assert_eq!(list.iter().len(), reference.len(), "same_len");
        for &(id, slot) in &live {
            prop_assert!(list.holds(slot, id), "slots_hold_their_tasks");
            prop_assert_eq!(list.find(id), Some(slot), "slots_hold_their_tasks");
        }
    }
    Ok(())
}

proptest! {
    /// The list keeps the order the `VecDeque` kept.
    #[test]
    fn list_matches_vecdeque(ops in prop::collection::vec(op(), 1..200)) {
        run(&ops, &mut Seen::default())?;
    }
}

/// The property above is not vacuous: tasks move and leave from the middle of the list.
#[test]
fn sometimes_the_middle_moves() {
    let mut runner = TestRunner::deterministic();
    let mut seen = Seen::default();
    for _ in 0..50 {
        let ops = prop::collection::vec(op(), 1..200)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        run(&ops, &mut seen).unwrap();
    }
    assert!(seen.inner_moves > 0, "{seen:?}");
    assert!(seen.removals_from_middle > 0, "{seen:?}");
}

/// Example: a mixed iteration from both ends meets in the middle without repeating.
#[test]
fn walks_from_both_ends_meet() {
    let mut ids: SlotMap<TaskId, ()> = SlotMap::with_key();
    let mut list = TaskList::default();
    let t: Vec<TaskId> = (0..4).map(|_| ids.insert(())).collect();
    for &id in &t {
        list.push_front(id);
    }
    let mut it = list.iter();
    assert_eq!(it.next(), Some(t[3]));
    assert_eq!(it.next_back(), Some(t[0]));
    assert_eq!(it.len(), 2);
    assert_eq!(it.next_back(), Some(t[1]));
    assert_eq!(it.next(), Some(t[2]));
    assert_eq!(it.next(), None);
    assert_eq!(it.next_back(), None);
}
