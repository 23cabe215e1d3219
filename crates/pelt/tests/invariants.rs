//! Property tests of the PELT model: named invariants over random run/sleep
//! histories, weights and capacities. Case counts follow PROPTEST_CASES.

use lbsim_pelt::{
    CfsRqAvg, CfsRqLoad, OneTaskCpu, OneTaskCpuConfig, RUNNABLE_AVG_YN_INV, SchedAvg, SeLoad,
    TaskState, UpdateFlags,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

const PERIOD_NS: u64 = 1024 * 1024;

/// `1024 / (1 - y1)` rounded up, `y1 = runnable_avg_yN_inv[1] / 2^32`: the
/// bound on how far a sum kept at 1024 times the resolution (util_sum,
/// runnable_sum) can drift above `load_sum << 10` through truncated decays.
/// Each decay truncates `load_sum` by less than 1 (1024 at util_sum's scale)
/// while the accumulated gap decays by at least y1: gap < 1024 / (1 - y1).
fn gap_bound() -> u64 {
    let y1 = f64::from(RUNNABLE_AVG_YN_INV[1]) / 4_294_967_296.0;
    (1024.0 / (1.0 - y1)).ceil() as u64
}

fn state() -> impl Strategy<Value = TaskState> {
    prop_oneof![
        4 => Just(TaskState::Running),
        4 => Just(TaskState::Sleeping),
        1 => Just(TaskState::Runnable),
    ]
}

/// A history: (state, how long in ns, number of updates inside the segment).
fn history() -> impl Strategy<Value = Vec<(TaskState, u64, u64)>> {
    prop::collection::vec(
        (
            state(),
            prop_oneof![
                1u64..2_000_000,
                2_000_000u64..60_000_000,
                100_000_000u64..700_000_000
            ],
            prop_oneof![0u64..4, 4u64..200],
        ),
        1..25,
    )
}

fn cpu_config() -> impl Strategy<Value = OneTaskCpuConfig> {
    (
        1u64..=88761,
        1u64..=1024,
        256u64..=1024,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(weight, cpu_capacity, freq_capacity, util_est, new_task)| OneTaskCpuConfig {
                weight,
                cpu_capacity,
                freq_capacity,
                util_est,
                new_task,
            },
        )
}

/// Drives a [`OneTaskCpu`] through `hist`, calling `check` after every update.
fn drive(
    cfg: OneTaskCpuConfig,
    hist: &[(TaskState, u64, u64)],
    mut check: impl FnMut(&OneTaskCpu),
) {
    let mut cpu = OneTaskCpu::new(cfg, hist[0].0);
    check(&cpu);
    let mut t = 0u64;
    for (i, &(_, len, updates)) in hist.iter().enumerate() {
        let step = (len / (updates + 1)).max(1);
        let end = t + len;
        while t + step < end {
            t += step;
            cpu.update(t);
            check(&cpu);
        }
        t = end;
        let next = hist.get(i + 1).map_or(cpu.state(), |h| h.0);
        cpu.set_state(t, next);
        check(&cpu);
    }
}

/// The signal bounds of one task entity.
fn check_entity_bounds(cpu: &OneTaskCpu) -> Result<(), TestCaseError> {
    let se = cpu.se();
    let w = cpu.config().weight;
    let div = u64::from(se.get_pelt_divider());
    prop_assert!(se.util_avg <= 1024, "util_avg {}", se.util_avg);
    prop_assert!(se.runnable_avg <= 1024, "runnable_avg {}", se.runnable_avg);
    prop_assert!(se.load_avg <= w, "load_avg {} > weight {}", se.load_avg, w);
    // load_sum of a 0/1 signal: at most the divider. By induction: decaying
    // both the sum and the unfinished part of the last period stays below
    // decay_load(LOAD_AVG_MAX, p) (truncation is superadditive), and the rest
    // of the new contribution is exactly LOAD_AVG_MAX - that - 1024 + d3.
    prop_assert!(
        se.load_sum <= div,
        "load_sum {} > divider {}",
        se.load_sum,
        div
    );
    prop_assert!(
        u64::from(se.util_sum) <= (se.load_sum << 10) + gap_bound(),
        "util_sum {}",
        se.util_sum
    );
    prop_assert!(
        se.runnable_sum <= (se.load_sum << 10) + gap_bound(),
        "runnable_sum {}",
        se.runnable_sum
    );
    prop_assert!(se.period_contrib < 1024);
    prop_assert!(se.util_est_value() <= 1024);
    Ok(())
}

proptest! {
    /// Invariant `entity_bounds`: for any run/runnable/sleep history, weight,
    /// capacity and frequency, a task's util_avg and runnable_avg stay within
    /// 1024, its load_avg within its weight, and its sums within their maxima.
    #[test]
    fn entity_bounds(cfg in cpu_config(), hist in history()) {
        let mut result = Ok(());
        drive(cfg, &hist, |cpu| {
            if result.is_ok() {
                result = check_entity_bounds(cpu);
            }
        });
        result?;
    }

    /// Invariant `single_task_cfs_rq_is_its_entity`: with one task, attached
    /// from time 0, the cfs_rq and the entity are updated at the same instants
    /// with the same contributions: util and runnable sums and averages agree
    /// exactly; the cfs_rq load_sum (weight times the sum, decayed as one)
    /// exceeds weight times the entity's load_sum by truncation only, less
    /// than weight / (1 - y1).
    #[test]
    fn single_task_cfs_rq_is_its_entity(cfg in cpu_config(), hist in history()) {
        let cfg = OneTaskCpuConfig { new_task: false, ..cfg };
        let mut result = Ok(());
        drive(cfg, &hist, |cpu| {
            let (se, cfs) = (cpu.se(), &cpu.cfs_rq().avg);
            let w = cfg.weight;
            let r = (|| {
                prop_assert_eq!((se.util_sum, se.util_avg), (cfs.util_sum, cfs.util_avg));
                prop_assert_eq!((se.runnable_sum, se.runnable_avg), (cfs.runnable_sum, cfs.runnable_avg));
                prop_assert!(cfs.load_sum >= w * se.load_sum);
                prop_assert!(cfs.load_sum - w * se.load_sum <= w * gap_bound() / 1024 + w);
                Ok(())
            })();
            if result.is_ok() {
                result = r;
            }
        });
        result?;
    }
}

/// A cfs_rq signal after a random history of queued weight, runnable count and
/// running flag, updated at random instants from a non-zero start.
fn cfs_rq_history() -> impl Strategy<Value = CfsRqAvg> {
    prop::collection::vec(
        (0u64..=80_000, 0u64..=8, any::<bool>(), 1u64..20_000_000),
        1..40,
    )
    .prop_map(|steps| {
        let mut cfs = CfsRqAvg::default();
        cfs.avg.last_update_time = PERIOD_NS;
        let mut t = PERIOD_NS;
        for (load_weight, h_nr_running, curr, dt) in steps {
            t += dt;
            let load = CfsRqLoad {
                load_weight,
                h_nr_running,
                curr: curr && h_nr_running > 0,
            };
            cfs.update_cfs_rq_load_avg(t, &load);
        }
        cfs
    })
}

proptest! {
    /// Invariant `attach_then_detach_restores_cfs_rq`: attaching an entity and
    /// detaching it at the same instant leaves the cfs_rq's averages and sums
    /// exactly as they were. Attach adds `avg * divider` to each sum and the
    /// avg itself; detach subtracts the same values, and its floor
    /// `sum >= avg * PELT_MIN_DIVIDER` already held before the attach (every
    /// avg is `sum / divider` with `divider >= PELT_MIN_DIVIDER`). Holds while
    /// the cfs_rq's load_sum fits in 32 bits (queued weight up to ~89000): above
    /// that, the kernel's `max_t(u32, ...)` in dequeue_load_avg() truncates it
    /// (see the unit test of that truncation).
    #[test]
    fn attach_then_detach_restores_cfs_rq(
        cfs in cfs_rq_history(),
        util_avg in 0u64..=1024,
        runnable_extra in 0u64..=1024,
        weight in 1u64..=88761,
        load_frac in 0u64..=1024,
    ) {
        prop_assume!(cfs.avg.load_sum < 1 << 32);
        let mut cfs = cfs;
        let before = cfs;
        let mut se = SchedAvg {
            util_avg,
            runnable_avg: (util_avg + runnable_extra).min(1024),
            load_avg: weight * load_frac / 1024,
            ..SchedAvg::default()
        };
        cfs.attach_entity_load_avg(&mut se, weight);
        prop_assert_eq!(se.last_update_time, before.avg.last_update_time);
        cfs.detach_entity_load_avg(&se, weight);
        prop_assert_eq!(cfs, before);
    }
}

/// One event on a cfs_rq with several tasks.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// Time passes; the running task (if any) ticks.
    Tick,
    /// The running task is preempted by queued task `i` (if queued).
    Switch(usize),
    /// The running task sleeps; the next queued one (if any) runs.
    Sleep,
    /// Task `i` wakes (if asleep), and runs if the CPU is idle.
    Wake(usize),
}

fn events(n: usize) -> impl Strategy<Value = Vec<(Event, u64)>> {
    let ev = prop_oneof![
        3 => Just(Event::Tick),
        1 => (0..n).prop_map(Event::Switch),
        1 => Just(Event::Sleep),
        2 => (0..n).prop_map(Event::Wake),
    ];
    prop::collection::vec(
        (
            ev,
            prop_oneof![
                1u64..100_000,
                100_000u64..4_000_000,
                4_000_000u64..50_000_000
            ],
        ),
        1..120,
    )
}

/// N tasks on one cfs_rq, driven through the kernel's enqueue, dequeue, pick,
/// put and tick paths.
struct MultiTask {
    cfs: CfsRqAvg,
    se: Vec<SchedAvg>,
    weight: Vec<u64>,
    queued: Vec<bool>,
    curr: Option<usize>,
    now: u64,
}

impl MultiTask {
    fn new(weight: Vec<u64>) -> Self {
        let n = weight.len();
        let mut cfs = CfsRqAvg::default();
        cfs.avg.last_update_time = PERIOD_NS;
        // Attached, fully decayed tasks, asleep, aligned with the cfs_rq.
        let se = vec![
            SchedAvg {
                last_update_time: PERIOD_NS,
                ..SchedAvg::default()
            };
            n
        ];
        Self {
            cfs,
            se,
            weight,
            queued: vec![false; n],
            curr: None,
            now: PERIOD_NS,
        }
    }

    fn cfs_load(&self) -> CfsRqLoad {
        let queued = (0..self.se.len()).filter(|&i| self.queued[i]);
        CfsRqLoad {
            load_weight: queued.clone().map(|i| self.weight[i]).sum(),
            h_nr_running: queued.count() as u64,
            curr: self.curr.is_some(),
        }
    }

    fn update(&mut self, i: usize, flags: UpdateFlags) {
        let se_load = SeLoad::task(self.weight[i], self.queued[i], self.curr == Some(i));
        let cfs_load = self.cfs_load();
        self.cfs
            .update_load_avg(&mut self.se[i], self.now, &se_load, &cfs_load, flags, true);
    }

    fn put_prev(&mut self) {
        if let Some(c) = self.curr {
            self.update(c, UpdateFlags::NONE);
            self.curr = None;
        }
    }

    fn set_next(&mut self, i: usize) {
        self.update(i, UpdateFlags::UPDATE_TG);
        self.curr = Some(i);
    }

    fn apply(&mut self, ev: Event, dt: u64) {
        self.now += dt;
        match ev {
            Event::Tick => {
                if let Some(c) = self.curr {
                    self.update(c, UpdateFlags::UPDATE_TG);
                }
            }
            Event::Switch(i) => {
                if self.queued[i] && self.curr != Some(i) && self.curr.is_some() {
                    self.put_prev();
                    self.set_next(i);
                }
            }
            Event::Sleep => {
                if let Some(c) = self.curr {
                    self.update(c, UpdateFlags::UPDATE_TG);
                    self.queued[c] = false;
                    self.curr = None;
                    if let Some(next) = (0..self.se.len()).find(|&j| self.queued[j]) {
                        self.set_next(next);
                    }
                }
            }
            Event::Wake(i) => {
                if !self.queued[i] {
                    self.update(i, UpdateFlags::UPDATE_TG | UpdateFlags::DO_ATTACH);
                    self.queued[i] = true;
                    if self.curr.is_none() {
                        self.set_next(i);
                    }
                }
            }
        }
    }

    /// Brings the cfs_rq to now (as update_blocked_averages() does), then every
    /// entity to the cfs_rq's time: queued ones through update_load_avg() with
    /// their current flags, blocked ones by a sync.
    fn sync_all(&mut self) {
        let load = self.cfs_load();
        self.cfs.update_cfs_rq_load_avg(self.now, &load);
        for i in 0..self.se.len() {
            if self.queued[i] {
                self.update(i, UpdateFlags::NONE);
            } else {
                self.cfs
                    .sync_entity_load_avg(&mut self.se[i], self.weight[i]);
            }
        }
    }
}

proptest! {
    /// Invariant `cfs_rq_sums_its_entities`: on a cfs_rq with N tasks waking,
    /// running, being preempted and sleeping, once every entity is synced to
    /// the cfs_rq's time, the cfs_rq's util, runnable and load sums equal the
    /// sums of its entities' up to truncation. The bound: contributions inside
    /// a period are exact; each period boundary the cfs_rq or an entity
    /// crosses truncates the cfs_rq's decay, its two decayed contribution terms
    /// and each entity's decay by less than 1 unit (times the multiplier: 1024
    /// for util, 1024 times the runnable count for runnable, the weight for
    /// load), i.e. less than (N + 3) units times the largest multiplier per
    /// boundary, and the accumulated difference decays by y1 per boundary:
    /// |difference| < (N + 3) * multiplier / (1 - y1). In avg units that is
    /// about N + 3.
    #[test]
    fn cfs_rq_sums_its_entities(
        weight in prop::collection::vec(1u64..=88761, 1..=4),
        evs in events(4),
    ) {
        let n = weight.len();
        let mut m = MultiTask::new(weight.clone());
        for (ev, dt) in evs {
            let ev = match ev {
                Event::Switch(i) => Event::Switch(i % n),
                Event::Wake(i) => Event::Wake(i % n),
                e => e,
            };
            m.apply(ev, dt);
        }
        m.sync_all();
        let k = (n as u64) + 3;
        let per_unit = gap_bound(); // ceil(1024 / (1 - y1))
        let util: u64 = m.se.iter().map(|s| u64::from(s.util_sum)).sum();
        let runnable: u64 = m.se.iter().map(|s| s.runnable_sum).sum();
        let load: u64 = m.se.iter().zip(&weight).map(|(s, w)| w * s.load_sum).sum();
        let w_total: u64 = weight.iter().sum();
        let cfs = m.cfs.avg;
        prop_assert!(u64::from(cfs.util_sum).abs_diff(util) <= k * per_unit, "util {} vs {}", cfs.util_sum, util);
        prop_assert!(cfs.runnable_sum.abs_diff(runnable) <= k * per_unit * n as u64, "runnable {} vs {}", cfs.runnable_sum, runnable);
        prop_assert!(cfs.load_sum.abs_diff(load) <= k * w_total * per_unit / 1024 + k * w_total, "load {} vs {}", cfs.load_sum, load);
    }
}

/// "Sometimes" checks: the strategies above do reach the states the
/// invariants are about (saturation, waiting, several queued tasks), so the
/// properties cannot pass vacuously.
#[test]
fn strategies_reach_interesting_states() {
    let mut runner = TestRunner::deterministic();
    let strat = (cpu_config(), history());
    let (mut saturated, mut waited, mut decayed_out) = (false, false, false);
    for _ in 0..300 {
        let (cfg, hist) = strat.new_tree(&mut runner).unwrap().current();
        drive(cfg, &hist, |cpu| {
            saturated |= cpu.se().util_avg >= 1000;
            waited |= cpu.se().runnable_avg > cpu.se().util_avg + 100;
            decayed_out |= cpu.se().util_avg == 0 && cpu.se().last_update_time > 500_000_000;
        });
    }
    assert!(
        saturated && waited && decayed_out,
        "saturated {saturated}, waited {waited}, decayed {decayed_out}"
    );

    let mut several_queued = false;
    let strat = (prop::collection::vec(1u64..=88761, 1..=4), events(4));
    for _ in 0..300 {
        let (weight, evs) = strat.new_tree(&mut runner).unwrap().current();
        let n = weight.len();
        let mut m = MultiTask::new(weight);
        for (ev, dt) in evs {
            let ev = match ev {
                Event::Switch(i) => Event::Switch(i % n),
                Event::Wake(i) => Event::Wake(i % n),
                e => e,
            };
            m.apply(ev, dt);
            several_queued |=
                m.queued.iter().filter(|&&q| q).count() >= 3 && m.cfs.avg.util_avg > 300;
        }
    }
    assert!(several_queued);
}
