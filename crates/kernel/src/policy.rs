//! The fair class's scheduling policies (`SCHED_NORMAL`, `SCHED_BATCH`, `SCHED_IDLE` of
//! include/uapi/linux/sched.h), as workloads ask for them and runqueues apply them.
//!
//! lbsim models the fair class only: a workload asking for `SCHED_FIFO`, `SCHED_RR` or
//! `SCHED_DEADLINE` is refused rather than silently demoted.

use serde::{Deserialize, Serialize};

/// A fair-class scheduling policy (`p->policy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Policy {
    /// `SCHED_NORMAL` (POSIX and glibc call it `SCHED_OTHER`).
    #[default]
    Normal,
    /// `SCHED_BATCH`: never preempts on wakeup.
    Batch,
    /// `SCHED_IDLE`: weight 3, never preempts, preempted by any non-idle wakeup.
    Idle,
}

impl Policy {
    /// The kernel's name (`SCHED_NORMAL`, ...).
    pub fn kernel_name(self) -> &'static str {
        match self {
            Policy::Normal => "SCHED_NORMAL",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
        }
    }

    /// The name POSIX and glibc use, as rt-app's logs print it (`SCHED_OTHER` for normal).
    pub fn posix_name(self) -> &'static str {
        match self {
            Policy::Normal => "SCHED_OTHER",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
        }
    }
}
