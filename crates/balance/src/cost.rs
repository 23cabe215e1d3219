//! The cost model: simulated time charged to the CPU that does scheduler work.
//!
//! A real kernel spends time switching contexts, waking tasks and balancing; during that time
//! the CPU makes no progress on user work, and a wake-up that arrives meanwhile waits. lbsim
//! charges that time explicitly, so that (for example) a newly idle balance that keeps
//! scanning pinned tasks delays the wake-up pending behind it, as seed 002 measured.
//!
//! The defaults are plausible for a modern server core (2020s x86 or arm64, a few GHz):
//! - `cost_context_switch_ns` 1200: `perf bench sched pipe` reports 2.5-5 us per round trip on
//!   such machines, and a round trip is two wake-ups and two switches.
//! - `cost_wakeup_ns` 600: try_to_wake_up on the waking CPU (select_task_rq, enqueue). A
//!   waker's whole `FUTEX_WAKE` system call, ttwu and IPI send included, measured 420-510 ns
//!   on a Zen 2 Threadripper at 4.0 GHz (5.13/5.14) and 580-710 ns after a regression (LKML,
//!   "Performance regression: thread wakeup time (latency) increased up to 3x", 2021-10-23,
//!   Message-ID 70998f86-74d7-7ced-867e-f17695bc88e7@gmail.com); 600 is inside that range.
//!   It is also what a loop of wakes costs per wake: the waker's next wake waits for it.
//! - `cost_ipi_ns` 1500: latency of a reschedule / wake-list IPI between cores.
//! - `cost_lb_domain_ns` 200: entering one domain in a balance pass (env setup, should_we_balance).
//! - `cost_lb_cpu_ns` 60: reading one CPU's runqueue in update_sg_lb_stats or
//!   find_busiest_queue (a few remote cache lines).
//! - `cost_lb_task_ns` 120: one can_migrate_task examination in detach_tasks.
//! - `cost_lb_migrate_ns` 1500: detaching and attaching one task (two rq locks, PELT
//!   detach/attach, enqueue).
//! - `cost_lb_redo_ns` 800: one more pass after LBF_ALL_PINNED or NEED_BREAK (dropping and
//!   retaking the busiest rq lock, recomputing the group statistics' bookkeeping).
//!
//! A machine's own values come from `lbsim calibrate` as a cost profile ([`profile`]; how
//! each is derived from what was measured: [`mod@derive`]), which `--cost FILE` loads.
//!
//! Each is a tunable (`--set cost_lb_task_ns=200`); 0 switches a cost off. Each is at most
//! [`MAX_COST_NS`] (1 s), so that a cost times a count of scheduler work stays far inside
//! `u64` ([`CostModel::charge`] saturates besides).

use std::fmt;

pub mod derive;
pub mod profile;

use lbsim_kernel::params::{Origin, Owner, Params};

/// Scheduler work a balancing pass (or any decision) did, to be charged through the cost
/// model. Counts, not times: the engine multiplies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkAccount {
    /// Domains entered.
    pub domains: u32,
    /// CPUs whose runqueue was read (group statistics, busiest-queue search, idle scans).
    pub cpus_scanned: u32,
    /// Tasks examined by can_migrate_task.
    pub tasks_examined: u32,
    /// Tasks detached and attached.
    pub tasks_moved: u32,
    /// Extra passes (LBF_ALL_PINNED redo, NEED_BREAK, LBF_DST_PINNED retarget).
    pub redo_passes: u32,
}

impl WorkAccount {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &WorkAccount) {
        self.domains += other.domains;
        self.cpus_scanned += other.cpus_scanned;
        self.tasks_examined += other.tasks_examined;
        self.tasks_moved += other.tasks_moved;
        self.redo_passes += other.redo_passes;
    }
}

/// The largest value of each cost, 1 s: lbsim's own bound (no kernel value), which keeps
/// a cost times a `u32` count of work (at most about 4.3e18 ns) inside `u64`.
pub const MAX_COST_NS: u64 = 1_000_000_000;

lbsim_kernel::int_params! {
    /// The cost of each unit of scheduler work, in nanoseconds. Each field is a parameter
    /// (`--set cost_lb_task_ns=200`) declared here once: name, unit, default, range, doc.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct CostModel;
    /// The declarations of [`CostModel`]'s parameters, in the order `lbsim features` prints them.
    pub const COST_PARAMS;
    owner = Owner::CostModel;
    /// Switching from one task to another on a CPU.
    pub context_switch_ns: u64 = "cost_context_switch_ns", Ns, 1200, 0..=MAX_COST_NS, Origin::LbsimModel;
    /// A wake-up on the waking CPU.
    pub wakeup_ns: u64 = "cost_wakeup_ns", Ns, 600, 0..=MAX_COST_NS, Origin::LbsimModel;
    /// An inter-processor interrupt's delivery latency.
    pub ipi_ns: u64 = "cost_ipi_ns", Ns, 1500, 0..=MAX_COST_NS, Origin::LbsimModel;
    /// A wake-up signal to an idle CPU that polls its thread flags (a polling state, the
    /// idle loop, an MWAIT state): one cache-line transfer instead of an IPI
    /// (`set_nr_and_not_polling()`). An estimate of 0.1-0.3 us (../shared/MACHINE-MODEL.md
    /// 5.3, unverified).
    pub poll_wake_ns: u64 = "cost_poll_wake_ns", Ns, 200, 0..=MAX_COST_NS, Origin::LbsimModel;
    /// Entering one domain in a balancing pass.
    pub lb_domain_ns: u64 = "cost_lb_domain_ns", Ns, 200, 0..=MAX_COST_NS, Origin::LbsimModel;
    /// Reading one CPU's runqueue in a balancing pass.
    pub lb_cpu_ns: u64 = "cost_lb_cpu_ns", Ns, 60, 0..=MAX_COST_NS, Origin::LbsimModel;
    /// Examining one task in detach_tasks.
    pub lb_task_ns: u64 = "cost_lb_task_ns", Ns, 120, 0..=MAX_COST_NS, Origin::LbsimModel;
    /// Moving one task between runqueues.
    pub lb_migrate_ns: u64 = "cost_lb_migrate_ns", Ns, 1500, 0..=MAX_COST_NS, Origin::LbsimModel;
    /// One extra load_balance pass.
    pub lb_redo_ns: u64 = "cost_lb_redo_ns", Ns, 800, 0..=MAX_COST_NS, Origin::LbsimModel;
}

impl CostModel {
    /// The simulated time `work` takes (saturating: with every cost at its largest,
    /// [`MAX_COST_NS`], and every count at `u32::MAX` the exact sum would pass `u64`).
    ///
    /// Every term is non-negative, so the exact sum in `u128` (a `u64` cost times a `u32`
    /// count cannot pass it, nor can five such terms) clamped to `u64::MAX` is what adding
    /// the terms one by one with saturating `u64` arithmetic gives; it is computed that way
    /// because the balancer asks for its pass's clock at every group and idle CPU.
    #[inline]
    pub fn charge(&self, work: &WorkAccount) -> u64 {
        let term = |cost_ns: u64, count: u32| u128::from(cost_ns) * u128::from(count);
        let sum = term(self.lb_domain_ns, work.domains)
            + term(self.lb_cpu_ns, work.cpus_scanned)
            + term(self.lb_task_ns, work.tasks_examined)
            + term(self.lb_migrate_ns, work.tasks_moved)
            + term(self.lb_redo_ns, work.redo_passes);
        u64::try_from(sum).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for CostModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, v) in Params::entries(self) {
            writeln!(f, "{name} = {v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_by_name_and_charge() {
        let mut c = CostModel::default();
        c.set("cost_lb_task_ns", "200").unwrap();
        assert_eq!(c.lb_task_ns, 200);
        let w = WorkAccount {
            domains: 1,
            cpus_scanned: 10,
            tasks_examined: 3,
            tasks_moved: 1,
            redo_passes: 2,
        };
        assert_eq!(c.charge(&w), 200 + 600 + 600 + 1500 + 1600);
        assert_eq!(
            c.set("cost_bogus", "1").unwrap_err().to_string(),
            "unknown parameter `cost_bogus`; did you mean `cost_ipi_ns` or `cost_lb_cpu_ns`?"
        );
        assert_eq!(
            c.set("cost_ipi_ns", "-3").unwrap_err().to_string(),
            "invalid value `-3` for `cost_ipi_ns`: expected an integer (0..=1000000000 ns)"
        );
        assert_eq!(c.entries().len(), COST_PARAMS.len());
        assert_eq!(CostModel::default().ipi_ns, 1500);
    }

    #[test]
    fn costs_are_at_most_one_second_and_charge_saturates() {
        let mut c = CostModel::default();
        for def in COST_PARAMS {
            c.set(def.name, "1000000000").unwrap();
            assert!(
                c.set(def.name, "1000000001")
                    .unwrap_err()
                    .to_string()
                    .contains("out of range"),
                "{}",
                def.name
            );
        }
        let w = WorkAccount {
            domains: u32::MAX,
            cpus_scanned: u32::MAX,
            tasks_examined: u32::MAX,
            tasks_moved: u32::MAX,
            redo_passes: u32::MAX,
        };
        assert_eq!(c.charge(&w), u64::MAX);
    }

    /// The `u128` sum is the term-by-term saturating `u64` sum it replaced, including for
    /// costs beyond [`MAX_COST_NS`] (fields set directly) where a product saturates.
    #[test]
    fn charge_is_the_saturating_sum() {
        let saturating = |c: &CostModel, w: &WorkAccount| {
            [
                (c.lb_domain_ns, w.domains),
                (c.lb_cpu_ns, w.cpus_scanned),
                (c.lb_task_ns, w.tasks_examined),
                (c.lb_migrate_ns, w.tasks_moved),
                (c.lb_redo_ns, w.redo_passes),
            ]
            .iter()
            .fold(0u64, |sum, &(cost_ns, count)| {
                sum.saturating_add(cost_ns.saturating_mul(u64::from(count)))
            })
        };
        let costs = [0, 1, 300, MAX_COST_NS, u64::MAX / 3, u64::MAX];
        let counts = [0, 1, 7, 4096, u32::MAX / 2, u32::MAX];
        let mut c = CostModel::default();
        for (i, &a) in costs.iter().enumerate() {
            for (j, &n) in counts.iter().enumerate() {
                c.lb_domain_ns = a;
                c.lb_cpu_ns = costs[(i + 1) % costs.len()];
                c.lb_task_ns = costs[(i + j) % costs.len()];
                c.lb_migrate_ns = costs[(i + 2 * j) % costs.len()];
                c.lb_redo_ns = costs[j % costs.len()];
                let w = WorkAccount {
                    domains: n,
                    cpus_scanned: counts[(j + 1) % counts.len()],
                    tasks_examined: counts[(i + j) % counts.len()],
                    tasks_moved: counts[i % counts.len()],
                    redo_passes: counts[(2 * i + j) % counts.len()],
                };
                assert_eq!(c.charge(&w), saturating(&c, &w), "{c:?} {w:?}");
            }
        }
    }
}
