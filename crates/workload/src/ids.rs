//! Identifiers shared by programs, the sync objects and the engine.
//!
//! All identifiers are small dense indices into tables of the [`crate::WorkloadSpec`]:
//! a [`TaskRef`] indexes the run's task list (the spec's initial tasks in order, then forked
//! tasks in the order the engine creates them), the others index the declared sync objects.

use serde::{Deserialize, Serialize};

macro_rules! dense_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub struct $name(pub u32);

        impl $name {
            /// The index as a `usize`, for table look-ups.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

dense_id!(
    /// A task of the run: index into the engine's task list. The initial tasks of a
    /// [`crate::WorkloadSpec`] are `TaskRef(0)..TaskRef(n)` in `spec.tasks` order; each
    /// forked task takes the next free index at the moment the engine creates it.
    TaskRef
);
dense_id!(
    /// A mutex (pthread normal mutex semantics, see [`crate::SyncState`]).
    MutexId
);
dense_id!(
    /// A condition variable.
    CondId
);
dense_id!(
    /// A barrier that releases everyone when its user count is reached.
    BarrierId
);
dense_id!(
    /// A counting semaphore.
    SemId
);
dense_id!(
    /// A message channel (pipe- or socket-like).
    ChanId
);
dense_id!(
    /// A shared ticket counter (a work queue of a fixed number of requests).
    CounterId
);
dense_id!(
    /// A wake list: tasks add themselves, a waker takes the whole list and posts each.
    ListId
);
dense_id!(
    /// A task definition that `fork` events instantiate: index into `spec.templates`.
    TemplateId
);
dense_id!(
    /// A CPU set used by phase-level affinity changes: index into `spec.cpusets`.
    CpusetId
);

/// A timer of rt-app's `timer` event. rt-app shares a named timer between every thread that
/// uses it, unless its name starts with `unique`, in which case each thread has its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TimerId {
    /// Per-thread timer (index into the program's local timer table).
    Local(u32),
    /// Timer shared by all threads (index into the spec's shared timer table).
    Shared(u32),
}

/// What a probe record means. Probes are zero-time markers the engine records as
/// `(task, time, tag, value)`; reports turn them into benchmark numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ProbeTag {
    /// The task entered its measured section (after its start barrier). Value 0.
    Start,
    /// One request or operation completed. Value: its latency in ns (wall time).
    Request,
    /// The task runs after a stamped wake-up (schbench, pingpong). Value: ns from the waker's
    /// stamp to now.
    Wakeup,
    /// rt-app: a phase iteration starts. Value: the phase index.
    RtappPhaseStart,
    /// rt-app: wall time spent in `run`/`runtime` events of the iteration that ends. Value: ns.
    RtappRun,
    /// rt-app: work requested by `run`/`runtime` events of the iteration (the log's `perf`
    /// column, as ns of work at capacity 1024). Value: ns.
    RtappPerf,
    /// rt-app: summed wake-up latency after timer events of the iteration. Value: ns.
    RtappWuLat,
    /// rt-app: slack of the iteration's last timer. Value: ns as a two's-complement `i64`.
    RtappSlack,
    /// rt-app: the phase iteration ends. Value: the phase index.
    RtappPhaseEnd,
    /// Operations counted by [`crate::Event::Tally`] since the previous tally probe. Value:
    /// the count. The operations all completed before the first interval boundary after the
    /// previous tally probe of the task (or after time 0): a probe emitted late, because the
    /// task did not complete an operation for a while, still belongs to that interval.
    TallyCount,
    /// Largest latency among those operations (ns since their [`crate::Event::Mark`]).
    /// Emitted right after the matching [`ProbeTag::TallyCount`].
    TallyMaxLatency,
}

impl ProbeTag {
    /// Every tag, in declaration order: `ALL[tag as usize] == tag` (how a
    /// [`crate::obs::ProbeLog`] stores a tag in a byte).
    pub const ALL: [ProbeTag; 11] = [
        ProbeTag::Start,
        ProbeTag::Request,
        ProbeTag::Wakeup,
        ProbeTag::RtappPhaseStart,
        ProbeTag::RtappRun,
        ProbeTag::RtappPerf,
        ProbeTag::RtappWuLat,
        ProbeTag::RtappSlack,
        ProbeTag::RtappPhaseEnd,
        ProbeTag::TallyCount,
        ProbeTag::TallyMaxLatency,
    ];
}
