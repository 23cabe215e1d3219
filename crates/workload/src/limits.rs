//! The workloads' share of a run's resource budget: how many tasks and cpusets the workloads of
//! one run may make, checked from each workload's parameters before any task is built.
//!
//! A generator declares the [`Size`] its parameters make ([`crate::Generator::size`]); the
//! rt-app loader counts its tasks' instances once the file is read, before it instantiates
//! them. [`parse_workloads_within`](crate::parse_workloads_within) sums the sizes over every
//! `--workload` of the run, so three workloads of a million tasks each are refused as one run
//! of three million. Tasks forked from a program that forks a fixed number (sysbench's main
//! thread) count; rt-app's `fork` events, bounded by rt-app's own limit per task definition,
//! do not.

use std::fmt;
use std::ops::Add;

use thiserror::Error;

/// Tasks per run when the caller sets no limit (the largest single workload lbsim has always
/// accepted; about 2 GB of memory).
pub const DEFAULT_MAX_TASKS: u64 = 1_000_000;

/// Distinct affinity masks per run when the caller sets no limit.
pub const DEFAULT_MAX_CPUSETS: u64 = 65_536;

/// What one workload makes: tasks (those it starts and those its programs fork a fixed number
/// of) and cpusets (each affinity list it asks for, before identical lists are merged).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Size {
    /// Tasks.
    pub tasks: u64,
    /// Cpusets.
    pub cpusets: u64,
}

impl Size {
    /// `tasks` tasks and no cpuset.
    pub const fn tasks(tasks: u64) -> Size {
        Size { tasks, cpusets: 0 }
    }
}

impl Add for Size {
    type Output = Size;

    fn add(self, o: Size) -> Size {
        Size {
            tasks: self.tasks.saturating_add(o.tasks),
            cpusets: self.cpusets.saturating_add(o.cpusets),
        }
    }
}

/// The most a run's workloads may make together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Tasks, summed over the run's workloads.
    pub max_tasks: u64,
    /// Cpusets, summed over the run's workloads.
    pub max_cpusets: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_tasks: DEFAULT_MAX_TASKS,
            max_cpusets: DEFAULT_MAX_CPUSETS,
        }
    }
}

/// A resource [`Limits`] bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resource {
    /// [`Limits::max_tasks`].
    Tasks,
    /// [`Limits::max_cpusets`].
    Cpusets,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::Tasks => "tasks",
            Resource::Cpusets => "cpusets",
        })
    }
}

/// A run's workloads would make more of a resource than its limit allows.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
#[error("the run's workloads make {needed} {resource}, more than the limit of {limit}")]
pub struct LimitError {
    /// The resource.
    pub resource: Resource,
    /// What the workloads so far, this one included, would make.
    pub needed: u64,
    /// The limit.
    pub limit: u64,
}

/// The room left in [`Limits`] once earlier workloads of the run have taken `used`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Room {
    /// The run's limits.
    pub limits: Limits,
    /// What earlier workloads of the run make.
    pub used: Size,
}

impl Room {
    /// All of `limits`, nothing used yet.
    pub fn new(limits: Limits) -> Room {
        Room {
            limits,
            used: Size::default(),
        }
    }

    /// Refuses `more` if it does not fit beside what is used.
    ///
    /// # Errors
    /// The first resource over its limit.
    pub fn admit(&self, more: Size) -> Result<(), LimitError> {
        let total = self.used + more;
        for (resource, needed, limit) in [
            (Resource::Tasks, total.tasks, self.limits.max_tasks),
            (Resource::Cpusets, total.cpusets, self.limits.max_cpusets),
        ] {
            if needed > limit {
                return Err(LimitError {
                    resource,
                    needed,
                    limit,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
