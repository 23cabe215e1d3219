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
//! - `cost_wakeup_ns` 600: try_to_wake_up on the waking CPU (select_task_rq, enqueue).
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
//! Each is a tunable (`--set cost_lb_task_ns=200`); 0 switches a cost off.

use std::fmt;

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

/// The cost of each unit of scheduler work, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CostModel {
    /// Switching from one task to another on a CPU.
    pub context_switch_ns: u64,
    /// A wake-up on the waking CPU.
    pub wakeup_ns: u64,
    /// An inter-processor interrupt's delivery latency.
    pub ipi_ns: u64,
    /// Entering one domain in a balancing pass.
    pub lb_domain_ns: u64,
    /// Reading one CPU's runqueue in a balancing pass.
    pub lb_cpu_ns: u64,
    /// Examining one task in detach_tasks.
    pub lb_task_ns: u64,
    /// Moving one task between runqueues.
    pub lb_migrate_ns: u64,
    /// One extra load_balance pass.
    pub lb_redo_ns: u64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            context_switch_ns: 1200,
            wakeup_ns: 600,
            ipi_ns: 1500,
            lb_domain_ns: 200,
            lb_cpu_ns: 60,
            lb_task_ns: 120,
            lb_migrate_ns: 1500,
            lb_redo_ns: 800,
        }
    }
}

/// An unknown cost name or a bad value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CostError {
    /// The name is not a cost tunable.
    #[error("unknown cost tunable `{name}` (valid: {valid})")]
    Unknown {
        /// What was given.
        name: String,
        /// The valid names, comma-separated.
        valid: String,
    },
    /// The value is not a non-negative integer number of nanoseconds.
    #[error("cost tunable `{name}`: `{value}` is not a non-negative integer (nanoseconds)")]
    BadValue {
        /// The tunable.
        name: String,
        /// What was given.
        value: String,
    },
}

impl CostModel {
    /// Tunable names, in the order `lbsim features` prints them.
    pub const NAMES: [&'static str; 8] = [
        "cost_context_switch_ns",
        "cost_wakeup_ns",
        "cost_ipi_ns",
        "cost_lb_domain_ns",
        "cost_lb_cpu_ns",
        "cost_lb_task_ns",
        "cost_lb_migrate_ns",
        "cost_lb_redo_ns",
    ];

    fn slot(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "cost_context_switch_ns" => &mut self.context_switch_ns,
            "cost_wakeup_ns" => &mut self.wakeup_ns,
            "cost_ipi_ns" => &mut self.ipi_ns,
            "cost_lb_domain_ns" => &mut self.lb_domain_ns,
            "cost_lb_cpu_ns" => &mut self.lb_cpu_ns,
            "cost_lb_task_ns" => &mut self.lb_task_ns,
            "cost_lb_migrate_ns" => &mut self.lb_migrate_ns,
            "cost_lb_redo_ns" => &mut self.lb_redo_ns,
            _ => return None,
        })
    }

    /// Whether `name` is a cost tunable.
    pub fn is_tunable(name: &str) -> bool {
        Self::NAMES.contains(&name)
    }

    /// Sets tunable `name` from its text value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), CostError> {
        let v: u64 = value.trim().parse().map_err(|_| CostError::BadValue {
            name: name.to_owned(),
            value: value.to_owned(),
        })?;
        let slot = self.slot(name).ok_or_else(|| CostError::Unknown {
            name: name.to_owned(),
            valid: Self::NAMES.join(", "),
        })?;
        *slot = v;
        Ok(())
    }

    /// `(name, value)` pairs in [`CostModel::NAMES`] order.
    pub fn entries(&self) -> [(&'static str, u64); 8] {
        let mut copy = *self;
        Self::NAMES.map(|n| (n, *copy.slot(n).expect("every listed name has a slot")))
    }

    /// The simulated time `work` takes.
    pub fn charge(&self, work: &WorkAccount) -> u64 {
        self.lb_domain_ns * u64::from(work.domains)
            + self.lb_cpu_ns * u64::from(work.cpus_scanned)
            + self.lb_task_ns * u64::from(work.tasks_examined)
            + self.lb_migrate_ns * u64::from(work.tasks_moved)
            + self.lb_redo_ns * u64::from(work.redo_passes)
    }
}

impl fmt::Display for CostModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, v) in self.entries() {
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
        assert!(matches!(
            c.set("cost_bogus", "1"),
            Err(CostError::Unknown { .. })
        ));
        assert!(matches!(
            c.set("cost_ipi_ns", "-3"),
            Err(CostError::BadValue { .. })
        ));
        assert_eq!(c.entries().len(), CostModel::NAMES.len());
    }
}
