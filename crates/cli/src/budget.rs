//! A run's resource budget: the most CPUs, NUMA nodes, tasks, cpusets and trace records one
//! run may have, each checked before the thing it bounds is built, each refused on one line
//! naming the limit and the flag that raises it.
//!
//! The machine is parsed first (bounded by lbsim's own [`MAX_CPUS`] and [`MAX_NUMNODES`], and
//! cheap at that size) and checked against `--max-cpus` and `--max-nodes` before its sched
//! domains are built; the workloads are checked against `--max-tasks` and `--max-cpusets` from
//! their parameters before any task is built ([`lbsim_workload::limits`]); the trace is
//! checked against `--max-trace-records` as it is recorded.

use anyhow::bail;
use lbsim_topology::machine::MAX_CPUS;
use lbsim_topology::{MAX_NUMNODES, Machine};
use lbsim_workload::{Limits, Resource, WorkloadError};

/// `--max-cpus` when not given.
pub const DEFAULT_MAX_CPUS: u32 = 1024;
/// `--max-nodes` when not given.
pub const DEFAULT_MAX_NODES: u32 = 64;
/// `lbsim run --max-trace-records` when not given (about 1 GB of ftrace text).
pub const DEFAULT_MAX_TRACE_RECORDS: u64 = 10_000_000;

/// The machine's share of the budget: `--max-cpus`, `--max-nodes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::Args)]
pub struct MachineBudget {
    /// Most CPUs a machine may have (at most 8192, lbsim's largest machine).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CPUS,
          value_parser = clap::value_parser!(u32).range(1..=MAX_CPUS as i64))]
    pub max_cpus: u32,
    /// Most NUMA nodes a machine may have (at most 1024, the kernel's MAX_NUMNODES).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_NODES,
          value_parser = clap::value_parser!(u32).range(1..=MAX_NUMNODES as i64))]
    pub max_nodes: u32,
}

impl Default for MachineBudget {
    fn default() -> MachineBudget {
        MachineBudget {
            max_cpus: DEFAULT_MAX_CPUS,
            max_nodes: DEFAULT_MAX_NODES,
        }
    }
}

impl MachineBudget {
    /// Refuses `machine` (given as `spec` to `flag`) if it has more CPUs or nodes than allowed.
    ///
    /// # Errors
    /// One line: the flag and spec, the count, the limit and the flag that raises it.
    pub fn check(&self, flag: &str, spec: &str, machine: &Machine) -> anyhow::Result<()> {
        let (cpus, nodes) = (machine.nr_cpus(), machine.nr_nodes());
        if cpus > self.max_cpus as usize {
            bail!(
                "{flag} `{spec}`: the machine has {cpus} CPUs, more than the limit of {} \
                 (--max-cpus N raises it, up to {MAX_CPUS})",
                self.max_cpus
            );
        }
        if nodes > self.max_nodes as usize {
            bail!(
                "{flag} `{spec}`: the machine has {nodes} NUMA nodes, more than the limit of {} \
                 (--max-nodes N raises it, up to {MAX_NUMNODES})",
                self.max_nodes
            );
        }
        Ok(())
    }
}

/// A run's budget: the machine's share and the workloads' (`lbsim run`'s trace has its own,
/// `--max-trace-records`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::Args)]
pub struct Budget {
    /// The machine's limits.
    #[command(flatten)]
    pub machine: MachineBudget,
    /// Most tasks a run may create, summed over all its workloads (tasks forked by a fixed
    /// count, as sysbench's workers are, included).
    #[arg(long, value_name = "N", default_value_t = lbsim_workload::limits::DEFAULT_MAX_TASKS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tasks: u64,
    /// Most cpusets (affinity lists) a run's workloads may ask for, summed over all of them.
    #[arg(long, value_name = "N", default_value_t = lbsim_workload::limits::DEFAULT_MAX_CPUSETS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_cpusets: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            machine: MachineBudget::default(),
            max_tasks: lbsim_workload::limits::DEFAULT_MAX_TASKS,
            max_cpusets: lbsim_workload::limits::DEFAULT_MAX_CPUSETS,
        }
    }
}

impl Budget {
    /// The workloads' share.
    pub fn workload_limits(&self) -> Limits {
        Limits {
            max_tasks: self.max_tasks,
            max_cpusets: self.max_cpusets,
        }
    }

    /// `e` on one line; a limit passed names the flag that raises it.
    pub fn describe(e: &WorkloadError) -> String {
        match e.over_limit().map(|l| l.resource) {
            Some(Resource::Tasks) => format!("{e} (--max-tasks N raises it)"),
            Some(_) => format!("{e} (--max-cpusets N raises it)"),
            None => e.to_string(),
        }
    }

    /// `e` on one line, `--workload` first; a limit passed names the flag that raises it.
    pub fn workload_error(e: WorkloadError) -> anyhow::Error {
        anyhow::anyhow!("--workload: {}", Budget::describe(&e))
    }
}

#[cfg(test)]
mod tests;
