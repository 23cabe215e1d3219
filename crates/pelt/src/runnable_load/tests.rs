use proptest::prelude::*;

use super::*;
use crate::cfs_rq::{CfsRqAvg, CfsRqLoad};

const UNIT_NS: u64 = 1024;

fn kept(form: RunnableLoadForm) -> RunnableLoad {
    RunnableLoad {
        form,
        ..RunnableLoad::default()
    }
}

/// A cfs_rq signal at the start of period 40 that keeps `form`.
fn cfs(form: RunnableLoadForm) -> CfsRqAvg {
    let mut c = CfsRqAvg::default();
    c.avg.last_update_time = 40 * 1024 * UNIT_NS;
    c.runnable_load.form = form;
    c
}

fn load(weight: u64) -> CfsRqLoad {
    CfsRqLoad {
        load_weight: weight,
        h_nr_running: u64::from(weight != 0),
        curr: weight != 0,
    }
}

/// Releases: 4.6 and 4.11 (the old __update_load_avg()), 4.12-5.6 (accumulate_sum()),
/// none from 5.7 (0dacee1bfa70) or before 4.6.
#[test]
fn form_per_release() {
    use RunnableLoadForm::*;
    assert_eq!(RunnableLoadForm::for_release(4, 5), Off);
    assert_eq!(RunnableLoadForm::for_release(4, 6), V4_6);
    assert_eq!(RunnableLoadForm::for_release(4, 10), V4_6);
    assert_eq!(RunnableLoadForm::for_release(4, 11), V4_11);
    assert_eq!(RunnableLoadForm::for_release(4, 13), V4_13);
    assert_eq!(RunnableLoadForm::for_release(4, 18), V4_13);
    assert_eq!(RunnableLoadForm::for_release(5, 4), V4_13);
    assert_eq!(RunnableLoadForm::for_release(5, 6), V4_13);
    assert_eq!(RunnableLoadForm::for_release(5, 7), Off);
    assert_eq!(RunnableLoadForm::for_release(6, 12), Off);
}

/// v4.6 __update_load_avg(): `runnable_load_avg = runnable_load_sum / LOAD_AVG_MAX` only
/// when a period ended (`decayed`); within a period only the sum grows.
#[test]
fn v4_6_average_recomputed_only_at_a_period_end() {
    let mut r = kept(RunnableLoadForm::V4_6);
    // 300 units into the period, weight 1024: the sum grows, the average stays 0.
    assert!(!r.accrue(300, 0, 1024));
    assert_eq!((r.sum, r.avg), (300 * 1024, 0));
    assert!(!r.accrue(700, 300, 1024));
    assert_eq!((r.sum, r.avg), (1000 * 1024, 0));
    // 30 more units end the period at 1024: the rest (24) is added undecayed, the sum is
    // decayed once (periods + 1 = 1), the 6 units of the new period are added after.
    assert!(r.accrue(30, 1000, 1024));
    let at_end = decay_load(1024 * 1024, 1);
    assert_eq!(r.avg, at_end / LOAD_AVG_MAX);
    assert_eq!(r.sum, at_end + 6 * 1024);
}

/// v4.13+ (625ed2bf049d): the average divides by `LOAD_AVG_MAX - 1024 +
/// period_contrib`, the position reached in the new period.
#[test]
fn v4_13_divider_follows_period_contrib() {
    let mut r = kept(RunnableLoadForm::V4_13);
    assert!(!r.accrue(1000, 0, 1024));
    assert!(r.accrue(30, 1000, 1024));
    // accumulate_sum(): d1 = 24 decayed by y^1 for p = 1 (its own rounding), d3 = 6.
    let d1 = decay_load(24, 1);
    let contrib = accumulate_pelt_like(1, 24, 6);
    assert_eq!(
        contrib,
        d1 + 6 + (LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, 1) - 1024)
    );
    assert_eq!(r.sum, decay_load(1000 * 1024, 1) + 1024 * contrib);
    assert_eq!(r.avg, r.sum / (LOAD_AVG_MAX - 1024 + 6));
}

fn accumulate_pelt_like(p: u64, d1: u32, d3: u32) -> u64 {
    u64::from(crate::avg::accumulate_pelt_segments(p, d1, d3))
}

/// v4.6 dequeue_entity_load_avg(): the entity's `load_avg` and `load_sum` are subtracted
/// from values the cfs_rq decayed on its own, so after a period the cfs_rq keeps a
/// residue of a task that left, and the clamp at 0 stops an over-subtraction.
#[test]
fn residue_after_dequeue_and_clamp() {
    for form in [RunnableLoadForm::V4_6, RunnableLoadForm::V4_13] {
        let mut c = cfs(form);
        // A nice-0 task with a full history arrives (its unweighted sum at the maximum of
        // position 0, its load_avg 1024), runs alone for 5 ms.
        let se_sum = LOAD_AVG_MAX - 1024;
        c.runnable_load.enqueue(1024, 1024, se_sum);
        let mut t = c.avg.last_update_time;
        for _ in 0..5 {
            t += 1024 * UNIT_NS;
            c.update_load_avg_cfs_rq(t, &load(1024));
        }
        // The task's own signal did not move (always runnable, at the maximum), so the
        // tasks' sum is 1024; the cfs_rq recomputed its own average from its sum.
        let before = c.runnable_load;
        assert!(before.avg > 0);
        c.runnable_load.dequeue(1024, 1024, se_sum);
        let after = c.runnable_load;
        assert_eq!(after.avg, before.avg.saturating_sub(1024));
        assert_eq!(after.sum, before.sum.saturating_sub(1024 * se_sum));
        // The divider makes the residue differ per release: v4.6's average of a full sum
        // is below 1024 (47742 divides a sum of at most 46718 + period_contrib per unit),
        // so the dequeue clamps the average at 0 but leaves sum; v4.13's is 1024 exactly.
        match form {
            RunnableLoadForm::V4_6 => {
                assert!(before.avg < 1024, "{before:?}");
                assert_eq!(after.avg, 0);
            }
            _ => assert_eq!(before.avg, 1024),
        }
        // At the next period end the average is recomputed from the residue of the sum.
        t += 1024 * UNIT_NS;
        c.update_load_avg_cfs_rq(t, &load(0));
        assert_eq!(c.runnable_load.sum, decay_load(after.sum, 1));
        let div = match form {
            RunnableLoadForm::V4_6 => LOAD_AVG_MAX,
            _ => LOAD_AVG_MAX - 1024,
        };
        assert_eq!(c.runnable_load.avg, c.runnable_load.sum / div);
    }
}

/// A task that ran alone for a period and a half before it left: the cfs_rq accrued its
/// weight over that span on its own (v4.6: the open period's rest added, then the whole sum
/// decayed) and subtracts what the task's own signal brings (v6.x: each segment decayed on
/// its own): the two roundings differ, so the cfs_rq keeps a residue of a task that left.
#[test]
fn residue_of_a_task_that_left() {
    let mut c = cfs(RunnableLoadForm::V4_6);
    c.runnable_load.enqueue(0, 1024, 0);
    let t0 = c.avg.last_update_time;
    c.update_load_avg_cfs_rq(t0 + 1536 * UNIT_NS, &load(1024));
    let mut se = SchedAvg {
        last_update_time: t0,
        ..SchedAvg::default()
    };
    se.update_load_sum(t0 + 1536 * UNIT_NS, 1, 1, true);
    let cfs_sum = c.runnable_load.sum;
    assert_eq!(cfs_sum, decay_load(1024 * 1024, 1) + 512 * 1024);
    c.runnable_load.dequeue(0, 1024, se.load_sum);
    assert_eq!(
        c.runnable_load.sum,
        cfs_sum.saturating_sub(1024 * se.load_sum)
    );
    assert_ne!(cfs_sum, 1024 * se.load_sum, "no residue: {cfs_sum}");
}

/// __compute_runnable_contrib(): the v4.6 loop and the v4.11 table give the same sums
/// except at whole multiples of 32 periods beyond 32, where the loop's last decay_load()
/// by `y^32` truncates once more.
#[test]
fn runnable_contrib_loop_and_table() {
    for n in 0..=32 {
        assert_eq!(
            compute_runnable_contrib(n, false),
            RUNNABLE_AVG_YN_SUM[n as usize]
        );
        assert_eq!(
            compute_runnable_contrib(n, true),
            RUNNABLE_AVG_YN_SUM[n as usize]
        );
    }
    assert_eq!(compute_runnable_contrib(64, true), 35056);
    assert_eq!(compute_runnable_contrib(64, false), 35055);
    assert_eq!(
        compute_runnable_contrib(65, true),
        compute_runnable_contrib(65, false)
    );
    assert_eq!(compute_runnable_contrib(345, false), LOAD_AVG_MAX as u32);
    // The sum converges to LOAD_AVG_MAX: 1024 * y^0 is not part of it, so it stays below.
    assert!(compute_runnable_contrib(344, true) < LOAD_AVG_MAX as u32);
}

/// Off: nothing is kept.
#[test]
fn off_keeps_nothing() {
    let mut c = cfs(RunnableLoadForm::Off);
    c.runnable_load.enqueue(1024, 1024, 40000);
    c.update_load_avg_cfs_rq(c.avg.last_update_time + 5 * 1024 * UNIT_NS, &load(1024));
    assert_eq!((c.runnable_load.sum, c.runnable_load.avg), (0, 0));
}

/// An independent transcription of v4.6's `__update_load_avg()` for the cfs_rq's
/// `runnable_load_sum` only, with its own clock (`last_update_time` advanced by whole
/// units, as lbsim's cfs_rq does) and its own `period_contrib`.
#[derive(Default)]
struct RefV46 {
    last_update_time: u64,
    period_contrib: u64,
    sum: u64,
    avg: u64,
}

const YN_SUM: [u64; 33] = [
    0, 1002, 1982, 2941, 3880, 4798, 5697, 6576, 7437, 8279, 9103, 9909, 10698, 11470, 12226,
    12966, 13690, 14398, 15091, 15769, 16433, 17082, 17718, 18340, 18949, 19545, 20128, 20698,
    21256, 21802, 22336, 22859, 23371,
];

fn ref_decay(val: u64, n: u64) -> u64 {
    if n == 0 {
        return val;
    }
    if n > 32 * 63 {
        return 0;
    }
    let val = val >> (n / 32);
    ((u128::from(val) * u128::from(crate::consts::RUNNABLE_AVG_YN_INV[(n % 32) as usize])) >> 32)
        as u64
}

fn ref_contrib(mut n: u64) -> u64 {
    if n <= 32 {
        return YN_SUM[n as usize];
    }
    if n >= 345 {
        return 47742;
    }
    let mut c = 0u64;
    loop {
        c /= 2;
        c += YN_SUM[32];
        n -= 32;
        if n <= 32 {
            break;
        }
    }
    ref_decay(c, n) + YN_SUM[n as usize]
}

impl RefV46 {
    fn update(&mut self, now: u64, weight: u64) {
        if now < self.last_update_time {
            self.last_update_time = now;
            return;
        }
        let mut delta = (now - self.last_update_time) >> 10;
        if delta == 0 {
            return;
        }
        self.last_update_time += delta << 10;
        let mut delta_w = self.period_contrib;
        let mut decayed = false;
        if delta + delta_w >= 1024 {
            decayed = true;
            self.period_contrib = 0;
            delta_w = 1024 - delta_w;
            self.sum += weight * delta_w;
            delta -= delta_w;
            let periods = delta / 1024;
            delta %= 1024;
            self.sum = ref_decay(self.sum, periods + 1);
            self.sum += weight * ref_contrib(periods);
        }
        self.sum += weight * delta;
        self.period_contrib += delta;
        if decayed {
            self.avg = self.sum / 47742;
        }
    }
}

proptest! {
    /// Random enqueue/dequeue patterns at random times: the cfs_rq's kept runnable load
    /// (driven through its own PELT update, as the runqueue drives it) agrees bit for bit
    /// with the independent v4.6 transcription.
    #[test]
    fn v4_6_matches_an_independent_transcription(
        steps in prop::collection::vec((1u64..5_000_000, 0u8..3, 1u64..3000, 0u64..47000), 1..200)
    ) {
        let mut c = cfs(RunnableLoadForm::V4_6);
        let mut r = RefV46 { last_update_time: c.avg.last_update_time, ..RefV46::default() };
        let mut t = c.avg.last_update_time;
        let mut weight = 0u64;
        let mut queued: Vec<(u64, u64, u64)> = Vec::new();
        for (dt, op, w, s) in steps {
            t += dt;
            // enqueue_entity_load_avg(): the cfs_rq's update, then the add.
            c.update_load_avg_cfs_rq(t, &load(weight));
            r.update(t, weight);
            prop_assert_eq!((c.runnable_load.sum, c.runnable_load.avg), (r.sum, r.avg));
            match op {
                0 | 1 if queued.len() < 8 => {
                    let a = w * s / 47742;
                    c.runnable_load.enqueue(a, w, s);
                    r.avg += a;
                    r.sum += w * s;
                    weight += w;
                    queued.push((a, w, s));
                }
                _ if !queued.is_empty() => {
                    let (a, w, s) = queued.remove(0);
                    c.runnable_load.dequeue(a, w, s);
                    r.avg = r.avg.saturating_sub(a);
                    r.sum = r.sum.saturating_sub(w * s);
                    weight -= w;
                }
                _ => {}
            }
            prop_assert_eq!((c.runnable_load.sum, c.runnable_load.avg), (r.sum, r.avg));
        }
    }

    /// v4.13+: with every entity queued from the start and none leaving, the kept sum is
    /// the cfs_rq's own `load_sum` (v6.x's accumulate_sum(), the same arithmetic), bit for
    /// bit, whatever the queued weight does.
    #[test]
    fn v4_13_follows_the_cfs_rq_load_sum(
        start in 0u64..40_000, steps in prop::collection::vec((1u64..5_000_000, 0u64..4096), 1..200)
    ) {
        let mut c = cfs(RunnableLoadForm::V4_13);
        c.avg.load_sum = start * 1024;
        c.runnable_load.enqueue(0, 1024, start);
        let mut t = c.avg.last_update_time;
        for (dt, w) in steps {
            t += dt;
            c.update_load_avg_cfs_rq(t, &load(w));
            prop_assert_eq!(c.runnable_load.sum, c.avg.load_sum);
            prop_assert_eq!(c.runnable_load.avg, c.avg.load_avg);
        }
    }
}
