//! Hand-built examples of the EEVDF and legacy CFS rules, with the expected values computed by
//! hand from the kernel's formulas (shown in each test).

use slotmap::SlotMap;

use super::*;
use crate::entity::SchedEntity;
use crate::params::{RqFeat, default_features};
use crate::tunables::{SchedParams, Tunables};

type Ents = SlotMap<TaskId, SchedEntity>;

fn params() -> SchedParams {
    SchedParams::new(default_features(), &Tunables::new(1))
}

fn se(weight: u64, vruntime: u64, deadline: u64) -> SchedEntity {
    let mut se = SchedEntity::new(
        LoadWeight {
            weight,
            inv_weight: 0,
        },
        false,
        750_000,
    );
    se.vruntime = vruntime;
    se.deadline = deadline;
    se
}

/// Put an entity in the timeline with its current vruntime/deadline, as `enqueue_entity()`
/// would after placement (no placement, no PELT).
fn queue(cfs: &mut CfsRq, ents: &mut Ents, id: TaskId) {
    cfs.account_entity_enqueue(ents, id);
    cfs.h_nr_running += 1;
    cfs.__enqueue_entity(ents, id);
    ents[id].on_rq = true;
}

/// Rule (avg_vruntime): V = v0 + Σ(v_i - v0) w_i / Σ w_i, the division rounded towards minus
/// infinity ("sign flips effective floor / ceiling").
///
/// v0 = 10000; keys 0 (w 1024), -1000 (w 1024), 2001 (w 335): Σ = -1024000 + 670335 = -353665,
/// W = 2383, -353665 / 2383 = -148.4 → floor -149, so V = 9851 (truncation would give 9852).
#[test]
fn avg_vruntime_floors_negative_sums() {
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    cfs.min_vruntime = 10_000;
    let a = ents.insert(se(1024, 10_000, 20_000));
    let b = ents.insert(se(1024, 9_000, 20_000));
    let c = ents.insert(se(335, 12_001, 20_000));
    for id in [a, b, c] {
        queue(&mut cfs, &mut ents, id);
    }
    assert_eq!(cfs.avg_vruntime, -353_665);
    assert_eq!(cfs.avg_load, 2383);
    assert_eq!(cfs.avg_vruntime(&ents), 9851);
    // Eligibility by cross-multiplication: lag >= 0 <=> Σ >= (v - v0) W.
    assert!(!cfs.entity_eligible(&ents, a));
    assert!(cfs.entity_eligible(&ents, b));
    assert!(!cfs.entity_eligible(&ents, c));
    // avg_vruntime() + 0 is eligible; one more virtual ns is not (-149*2383 <= -353665 <
    // -148*2383).
    assert!(cfs.vruntime_eligible(&ents, 9851));
    assert!(!cfs.vruntime_eligible(&ents, 9852));
}

/// Rule (avg_vruntime): a positive sum truncates (= floors), and the running `curr` counts
/// while queued but not after it is dequeued.
#[test]
fn avg_vruntime_counts_a_queued_curr() {
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    cfs.min_vruntime = 0;
    let a = ents.insert(se(1024, 3_000, 0));
    let b = ents.insert(se(2048, 1_000, 0));
    queue(&mut cfs, &mut ents, a);
    queue(&mut cfs, &mut ents, b);
    // (3000*1024 + 1000*2048) / 3072 = 5120000 / 3072 = 1666.67 → 1666.
    assert_eq!(cfs.avg_vruntime(&ents), 1666);
    // b becomes curr: out of the timeline, still in V while on_rq.
    cfs.__dequeue_entity(&mut ents, b);
    cfs.curr = Some(b);
    assert_eq!(cfs.avg_load, 1024);
    assert_eq!(cfs.avg_vruntime(&ents), 1666);
    ents[b].on_rq = false;
    assert_eq!(cfs.avg_vruntime(&ents), 3000);
}

/// Rule (update_min_vruntime): min of queued curr and the timeline, never backwards, and the
/// relative sums are rebased (avg_vruntime -= avg_load * delta) so V does not move.
#[test]
fn min_vruntime_advances_and_rebases() {
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    cfs.min_vruntime = 100;
    let a = ents.insert(se(1024, 500, 0));
    let b = ents.insert(se(1024, 700, 0));
    queue(&mut cfs, &mut ents, a);
    queue(&mut cfs, &mut ents, b);
    let v = cfs.avg_vruntime(&ents);
    cfs.update_min_vruntime(&ents);
    assert_eq!(cfs.min_vruntime, 500);
    assert_eq!(cfs.avg_vruntime, 200 * 1024);
    assert_eq!(cfs.avg_vruntime(&ents), v);
    // Removing the minimum moves it forward; it never goes back below.
    cfs.__dequeue_entity(&mut ents, a);
    cfs.update_min_vruntime(&ents);
    assert_eq!(cfs.min_vruntime, 700);
    ents[a].vruntime = 10;
    cfs.__enqueue_entity(&mut ents, a);
    cfs.update_min_vruntime(&ents);
    assert_eq!(cfs.min_vruntime, 700);
}

/// Rule (pick_eevdf): the eligible entity with the earliest deadline; among equal deadlines the
/// one inserted first (rbtree insertion order); an earlier but ineligible deadline loses.
#[test]
fn pick_eevdf_earliest_eligible_deadline_with_insertion_tie_break() {
    let p = params();
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    cfs.min_vruntime = 0;
    // V = (0 + 0 + 3000) * 1024 / 3072 = 1000: x, y eligible, z not.
    let x = ents.insert(se(1024, 0, 5_000));
    let y = ents.insert(se(1024, 0, 5_000));
    let z = ents.insert(se(1024, 3_000, 4_000));
    for id in [x, y, z] {
        queue(&mut cfs, &mut ents, id);
    }
    assert!(!cfs.entity_eligible(&ents, z));
    assert_eq!(cfs.pick_eevdf(&ents, &p), Some(x));
    // Re-inserting x puts it after y (rb_add goes right on equal keys).
    cfs.__dequeue_entity(&mut ents, x);
    cfs.__enqueue_entity(&mut ents, x);
    assert_eq!(cfs.pick_eevdf(&ents, &p), Some(y));
    // The leftmost by deadline (z) is what __pick_first_entity() sees, eligible or not.
    assert_eq!(cfs.__pick_first_entity(FairPick::Eevdf), Some(z));
}

/// The same tie-break across the 32-bit insertion sequence's renumbering: entities queued
/// with equal deadlines just before and after it are picked in the order they were queued.
#[test]
fn insertion_tie_break_survives_the_sequence_wrapping() {
    let p = params();
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    cfs.min_vruntime = 0;
    cfs.next_seq = u32::MAX - 2;
    let ids: Vec<TaskId> = (0..5).map(|_| ents.insert(se(1024, 0, 5_000))).collect();
    for &id in &ids {
        queue(&mut cfs, &mut ents, id);
    }
    // Renumbered at the third: the two before it numbered 0 and 1, the rest after.
    assert_eq!(cfs.next_seq, 5);
    for &id in &ids {
        assert_eq!(cfs.pick_eevdf(&ents, &p), Some(id));
        cfs.__dequeue_entity(&mut ents, id);
    }
}

/// Rule (cfs_rq_min_slice, v6.12): the smallest slice of a queued curr and the timeline's
/// root `min_slice`; `u64::MAX` when nothing is queued; a dequeued curr does not count.
#[test]
fn cfs_rq_min_slice_counts_a_queued_curr_and_the_tree() {
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    assert_eq!(cfs.cfs_rq_min_slice(&ents), u64::MAX);
    let mut slices = Vec::new();
    for slice in [3_000_000, 700_000, 2_000_000] {
        let mut e = se(1024, 0, 5_000);
        e.slice = slice;
        let id = ents.insert(e);
        queue(&mut cfs, &mut ents, id);
        slices.push(id);
    }
    assert_eq!(cfs.cfs_rq_min_slice(&ents), 700_000);
    // The 0.7 ms entity runs: as curr it still counts while queued, not once dequeued.
    let short = slices[1];
    cfs.__dequeue_entity(&mut ents, short);
    cfs.curr = Some(short);
    assert_eq!(cfs.cfs_rq_min_slice(&ents), 700_000);
    ents[short].on_rq = false;
    assert_eq!(cfs.cfs_rq_min_slice(&ents), 2_000_000);
}

/// Rule (pick_eevdf, RUN_TO_PARITY): an eligible curr whose vlag still equals its deadline (set
/// at pick) is kept even if a queued entity has an earlier deadline; without RUN_TO_PARITY, or
/// once the marker is gone, the earliest eligible deadline wins; curr wins only if strictly
/// earlier.
#[test]
fn run_to_parity_keeps_a_protected_curr() {
    let mut p = params();
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    cfs.min_vruntime = 0;
    let c = ents.insert(se(1024, 0, 9_000));
    let o = ents.insert(se(1024, 0, 3_000));
    queue(&mut cfs, &mut ents, c);
    queue(&mut cfs, &mut ents, o);
    cfs.__dequeue_entity(&mut ents, c);
    cfs.curr = Some(c);
    ents[c].vlag = 9_000; // the set_next_entity() marker
    assert_eq!(cfs.pick_eevdf(&ents, &p), Some(c));
    p.features.set(RqFeat::RunToParity, false);
    assert_eq!(cfs.pick_eevdf(&ents, &p), Some(o));
    p.features.set(RqFeat::RunToParity, true);
    ents[c].vlag = 9_001; // PREEMPT_SHORT cancelled the protection
    assert_eq!(cfs.pick_eevdf(&ents, &p), Some(o));
    // Equal deadlines: the queued entity wins (curr needs a strictly earlier one).
    ents[c].deadline = 3_000;
    assert_eq!(cfs.pick_eevdf(&ents, &p), Some(o));
    ents[c].deadline = 2_999;
    assert_eq!(cfs.pick_eevdf(&ents, &p), Some(c));
    // An ineligible curr is ignored even when protected.
    ents[c].vruntime = 5_000;
    ents[c].vlag = ents[c].deadline as i64;
    assert_eq!(cfs.pick_eevdf(&ents, &p), Some(o));
}

/// Rule (update_deadline): nothing until vruntime reaches the deadline, then
/// deadline = vruntime + calc_delta_fair(base_slice).
#[test]
fn update_deadline_takes_a_new_slice() {
    let mut s = se(335, 1_000, 1_001);
    s.load = LoadWeight::for_task(5, false);
    assert!(!CfsRq::update_deadline(&mut s, 750_000));
    s.vruntime = 1_001;
    assert!(CfsRq::update_deadline(&mut s, 750_000));
    // 750000 * 1024 / 335 with the nice-5 inverse 12820798: 2292537.
    assert_eq!(s.deadline, 1_001 + 2_292_537);
    assert_eq!(s.slice, 750_000);
}

/// Rule (entity_lag): V - v clamped to ±calc_delta_fair(max(2 * slice, TICK_NSEC)).
#[test]
fn entity_lag_is_clamped() {
    let s = se(1024, 10_000_000, 0);
    // slice 0.75 ms, TICK_NSEC 4 ms: limit 4 ms.
    assert_eq!(
        CfsRq::entity_lag(10_000_000 + 3_999_999, &s, 4_000_000),
        3_999_999
    );
    assert_eq!(
        CfsRq::entity_lag(10_000_000 + 9_000_000, &s, 4_000_000),
        4_000_000
    );
    assert_eq!(CfsRq::entity_lag(1_000_000, &s, 4_000_000), -4_000_000);
    // HZ=1000: limit max(1.5 ms, 1 ms) = 1.5 ms.
    assert_eq!(CfsRq::entity_lag(20_000_000, &s, 1_000_000), 1_500_000);
}

/// Rule (place_entity, PLACE_LAG): the saved lag is inflated by (W + w) / W so that after the
/// entity joins, V' - v equals the lag it left with.
///
/// Two nice-0 entities at v = 0 (V = 0, W = 2048) and a returning one with vlag 300000:
/// lag' = 300000 * 3072 / 2048 = 450000, v = -450000, V' = -450000 * 1024 / 3072 = -150000,
/// and V' - v = 300000.
#[test]
fn place_entity_preserves_lag() {
    let p = params();
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    cfs.min_vruntime = 0;
    let a = ents.insert(se(1024, 0, 1_000));
    let b = ents.insert(se(1024, 0, 1_000));
    queue(&mut cfs, &mut ents, a);
    queue(&mut cfs, &mut ents, b);
    let w = ents.insert(se(1024, 77, 77));
    ents[w].vlag = 300_000;
    cfs.place_entity(&mut ents, w, EnqueueFlags::WAKEUP, &p);
    assert_eq!(ents[w].vruntime, (-450_000i64) as u64);
    // deadline = vruntime + vslice (0.75 ms at nice 0).
    assert_eq!(ents[w].deadline, (-450_000i64 + 750_000) as u64);
    queue(&mut cfs, &mut ents, w);
    let v = cfs.avg_vruntime(&ents);
    assert_eq!(v, (-150_000i64) as u64);
    assert_eq!(v.wrapping_sub(ents[w].vruntime) as i64, 300_000);
    // A new task (ENQUEUE_INITIAL, vlag 0) is placed at V with half a slice of deadline.
    let n = ents.insert(se(1024, 0, 0));
    cfs.place_entity(&mut ents, n, EnqueueFlags::INITIAL, &p);
    assert_eq!(ents[n].vruntime, v);
    assert_eq!(ents[n].deadline, v.wrapping_add(375_000));
    // Without PLACE_LAG the lag is ignored.
    let mut q = p;
    q.features.set(RqFeat::PlaceLag, false);
    cfs.place_entity(&mut ents, n, EnqueueFlags::WAKEUP, &q);
    assert_eq!(ents[n].vruntime, v);
}

/// Rule (place_entity): on an empty queue the lag is not applied (no W to inflate by).
#[test]
fn place_entity_on_an_empty_queue_starts_at_v() {
    let p = params();
    let mut ents = Ents::with_key();
    let cfs = CfsRq::new();
    let w = ents.insert(se(1024, 5, 5));
    ents[w].vlag = -123_456;
    cfs.place_entity(&mut ents, w, EnqueueFlags::WAKEUP, &p);
    assert_eq!(ents[w].vruntime, cfs.min_vruntime);
}

/// Rule (v6.1 sched_slice): period = sched_latency (nr <= sched_nr_latency) split by weight with
/// __calc_delta() on the cfs_rq load (inverse WMULT_CONST / W), floored at min_granularity.
#[test]
fn cfs_sched_slice() {
    let mut t = Tunables::new(1);
    t.set("sched_policy", "cfs").unwrap();
    let p = SchedParams::new(default_features(), &t);
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    let a = ents.insert(se(1024, 0, 0));
    let b = ents.insert(se(1024, 0, 0));
    queue(&mut cfs, &mut ents, a);
    queue(&mut cfs, &mut ents, b);
    // 6 ms * 1024 * (2^32-1)/2048 >> 32 = 2999998 (not 3000000: the lazy inverse truncates).
    assert_eq!(cfs.sched_slice(&ents, a, &p), 2_999_998);
    // A not-yet-queued entity counts itself in the period and the load.
    let c = ents.insert(se(335, 0, 0));
    // 6 ms * 335 / 2383.
    assert_eq!(cfs.sched_slice(&ents, c, &p), 843_474);
    // nr > sched_nr_latency stretches the period to nr * min_granularity.
    for _ in 0..8 {
        let id = ents.insert(se(1024, 0, 0));
        queue(&mut cfs, &mut ents, id);
    }
    assert_eq!(cfs.nr_running, 10);
    // 10 * 0.75 ms / 10 = 0.75 ms, minus the inverse's truncation, floored at 0.75 ms.
    assert_eq!(cfs.sched_slice(&ents, a, &p), 750_000);
}

/// Rule (v6.1 place_entity): a waking entity gets at most sched_latency / 2 of credit below
/// min_vruntime (GENTLE_FAIR_SLEEPERS) and never moves backwards; a new one starts a vslice
/// after min_vruntime (START_DEBIT).
#[test]
fn cfs_place_entity() {
    let mut t = Tunables::new(1);
    t.set("sched_policy", "cfs").unwrap();
    let p = SchedParams::new(default_features(), &t);
    let mut ents = Ents::with_key();
    let mut cfs = CfsRq::new();
    cfs.min_vruntime = 100_000_000;
    let a = ents.insert(se(1024, 0, 0));
    queue(&mut cfs, &mut ents, a);
    let w = ents.insert(se(1024, 50_000_000, 0));
    cfs.place_entity_cfs(&mut ents, w, false, 0, &p);
    assert_eq!(ents[w].vruntime, 97_000_000);
    ents[w].vruntime = 99_000_000;
    cfs.place_entity_cfs(&mut ents, w, false, 0, &p);
    assert_eq!(
        ents[w].vruntime, 99_000_000,
        "max_vruntime: no gain from placement"
    );
    let mut q = p;
    q.features.set(RqFeat::GentleFairSleepers, false);
    ents[w].vruntime = 0;
    cfs.place_entity_cfs(&mut ents, w, false, 0, &q);
    assert_eq!(ents[w].vruntime, 94_000_000);
    // START_DEBIT: one vslice of a 2-task period: 6 ms * 1024/2048 = 2999998.
    let n = ents.insert(se(1024, 0, 0));
    cfs.place_entity_cfs(&mut ents, n, true, 0, &p);
    assert_eq!(ents[n].vruntime, 100_000_000 + 2_999_998);
}

/// Rule (v6.1 wakeup_preempt_entity): -1 if se is not behind curr, 1 if behind by more than
/// wakeup_granularity in se's virtual time, else 0.
#[test]
fn cfs_wakeup_preempt_entity() {
    let mut t = Tunables::new(1);
    t.set("sched_policy", "cfs").unwrap();
    let p = SchedParams::new(default_features(), &t);
    let mut ents = Ents::with_key();
    let c = ents.insert(se(1024, 10_000_000, 0));
    let s = ents.insert(se(1024, 10_000_000, 0));
    assert_eq!(CfsRq::wakeup_preempt_entity(&ents, c, s, &p), -1);
    ents[s].vruntime = 9_000_000;
    assert_eq!(
        CfsRq::wakeup_preempt_entity(&ents, c, s, &p),
        0,
        "exactly the 1 ms granularity"
    );
    ents[s].vruntime = 8_999_999;
    assert_eq!(CfsRq::wakeup_preempt_entity(&ents, c, s, &p), 1);
    // A light wakee has a larger granularity: 1 ms * 1024 / 335 = 3056716.
    ents[s].load = LoadWeight::for_task(5, false);
    assert_eq!(CfsRq::wakeup_preempt_entity(&ents, c, s, &p), 0);
    ents[s].vruntime = 10_000_000 - 3_056_717;
    assert_eq!(CfsRq::wakeup_preempt_entity(&ents, c, s, &p), 1);
}

/// A plain binary search tree with the kernel's insertion rule (`rb_add`: less → left, else
/// right) and `pick_eevdf()`'s heap search over a subtree-min vruntime. Balancing does not
/// change the in-order sequence, so an unbalanced tree searched the same way returns what the
/// kernel's rbtree returns.
struct Bst {
    nodes: Vec<BstNode>,
    root: Option<usize>,
}

/// vruntime, deadline, id, left child, right child.
type BstNode = (u64, u64, TaskId, Option<usize>, Option<usize>);

impl Bst {
    fn insert(&mut self, vruntime: u64, deadline: u64, id: TaskId) {
        let idx = self.nodes.len();
        self.nodes.push((vruntime, deadline, id, None, None));
        let Some(mut cur) = self.root else {
            self.root = Some(idx);
            return;
        };
        loop {
            let go_left = before(deadline, self.nodes[cur].1);
            let next = if go_left {
                self.nodes[cur].3
            } else {
                self.nodes[cur].4
            };
            match next {
                Some(n) => cur = n,
                None => {
                    if go_left {
                        self.nodes[cur].3 = Some(idx);
                    } else {
                        self.nodes[cur].4 = Some(idx);
                    }
                    return;
                }
            }
        }
    }

    fn min_vruntime(&self, n: Option<usize>) -> Option<u64> {
        let n = n?;
        let (v, _, _, l, r) = self.nodes[n];
        let mut m = v;
        for c in [self.min_vruntime(l), self.min_vruntime(r)]
            .into_iter()
            .flatten()
        {
            m = min_vruntime(m, c);
        }
        Some(m)
    }

    /// pick_eevdf()'s loop: go left while the left subtree has an eligible entity, else take
    /// the node if eligible, else go right.
    fn search(&self, eligible: impl Fn(u64) -> bool) -> Option<TaskId> {
        let mut node = self.root;
        while let Some(n) = node {
            let (v, _, id, l, r) = self.nodes[n];
            if let Some(lm) = self.min_vruntime(l)
                && eligible(lm)
            {
                node = l;
                continue;
            }
            if eligible(v) {
                return Some(id);
            }
            node = r;
        }
        None
    }
}

proptest::proptest! {
    /// Rule (pick_eevdf): the linear scan returns exactly what the kernel's tree search returns,
    /// including ties between equal deadlines (insertion order), over random queues with
    /// re-insertions.
    #[test]
    fn linear_pick_equals_tree_search(
        entities in proptest::collection::vec((0u64..20, 0u64..8, 0usize..40), 2..14),
        reinsert in proptest::collection::vec(0usize..14, 0..6),
    ) {
        let p = params();
        let mut ents = Ents::with_key();
        let mut cfs = CfsRq::new();
        cfs.min_vruntime = 0;
        let mut order = Vec::new();
        for &(v, d, w) in &entities {
            // Coarse values so that equal deadlines and vruntimes are common.
            let weight = u64::from(crate::weights::SCHED_PRIO_TO_WEIGHT[w]);
            let id = ents.insert(se(weight, v * 100_000, (v + d) * 100_000));
            queue(&mut cfs, &mut ents, id);
            order.push(id);
        }
        for &i in &reinsert {
            let id = order.remove(i % order.len());
            cfs.__dequeue_entity(&mut ents, id);
            cfs.__enqueue_entity(&mut ents, id);
            order.push(id);
        }
        let mut bst = Bst { nodes: Vec::new(), root: None };
        for &id in &order {
            bst.insert(ents[id].vruntime, ents[id].deadline, id);
        }
        let expected = bst.search(|v| cfs.vruntime_eligible(&ents, v));
        proptest::prop_assert!(expected.is_some(), "some entity is always eligible");
        proptest::prop_assert_eq!(cfs.pick_eevdf(&ents, &p), expected);
    }
}
