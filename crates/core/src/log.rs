//! Logs in simulated time: the sched tracepoints as `tracing` events, printed as they fire.
//!
//! A kernel developer reading a run wants what `trace_printk()` would show at the scheduler's
//! decision points. lbsim already fires the kernel's tracepoints ([`crate::trace`]); when a
//! `tracing` subscriber is listening, each record is also emitted, as its ftrace text, under
//! one of these targets:
//!
//! | target | level | events |
//! |---|---|---|
//! | `lbsim::lb` | DEBUG | `sched_load_balance`: each load_balance() pass past should_we_balance(): its groups' types, imbalance, source, outcome |
//! | `lbsim::wake` | DEBUG | `sched_wakeup`, `sched_wakeup_new`: where a woken or new task was placed (`target_cpu`) |
//! | `lbsim::migrate` | DEBUG | `sched_migrate_task`: every migration, by wake-up, balancer or stopper |
//! | `lbsim::sched` | TRACE | `sched_switch`, `sched_waking`, `sched_process_fork`/`exit`, `sched_pelt_cfs` |
//!
//! The event's time is the record's own simulated time, kept in a thread-local clock
//! ([`clock_ns`]) that the front end's timer prints (`lbsim -v`, `RUST_LOG`); each thread of a
//! multi-run command has its own. Which targets are on is read once, when the run is set up:
//! without a subscriber nothing is recorded or formatted and the run costs what it did.
//! Logging changes no decision (the run's event hash is the same).

use std::cell::Cell;

use crate::trace::{Trace, TraceEvent, TraceRecord};

thread_local! {
    static CLOCK_NS: Cell<u64> = const { Cell::new(0) };
}

/// The simulated time of the record being logged on this thread, ns (0 before any).
pub fn clock_ns() -> u64 {
    CLOCK_NS.with(Cell::get)
}

/// The log targets a subscriber listens to, read when a run is set up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LogTargets {
    lb: bool,
    wake: bool,
    migrate: bool,
    sched: bool,
}

impl LogTargets {
    /// What the installed subscriber (if any) wants.
    pub(crate) fn from_subscriber() -> LogTargets {
        LogTargets {
            lb: tracing::enabled!(target: "lbsim::lb", tracing::Level::DEBUG),
            wake: tracing::enabled!(target: "lbsim::wake", tracing::Level::DEBUG),
            migrate: tracing::enabled!(target: "lbsim::migrate", tracing::Level::DEBUG),
            sched: tracing::enabled!(target: "lbsim::sched", tracing::Level::TRACE),
        }
    }

    /// Whether any target is on.
    pub(crate) fn any(self) -> bool {
        self.lb || self.wake || self.migrate || self.sched
    }

    /// Emits `r` if its target is on: `COMM-PID [CPU] EVENT: TEXT`, the ftrace line without its
    /// timestamp, which the subscriber's timer prints from [`clock_ns`].
    pub(crate) fn emit(self, names: &Trace, r: &TraceRecord) {
        let on = match r.event {
            TraceEvent::LoadBalance(_) => self.lb,
            // A replay's aid, not a decision: no log target shows it.
            TraceEvent::Charge { .. } => false,
            TraceEvent::Wakeup { .. } | TraceEvent::WakeupNew { .. } => self.wake,
            TraceEvent::Migrate { .. } => self.migrate,
            TraceEvent::Switch { .. }
            | TraceEvent::Waking { .. }
            | TraceEvent::Fork { .. }
            | TraceEvent::Exit { .. }
            | TraceEvent::CgroupAttach { .. }
            | TraceEvent::PeltCfs { .. } => self.sched,
        };
        if !on {
            return;
        }
        CLOCK_NS.with(|c| c.set(r.time_ns));
        let line = names.line_text(r);
        match r.event {
            TraceEvent::LoadBalance(_) => tracing::debug!(target: "lbsim::lb", "{line}"),
            TraceEvent::Wakeup { .. } | TraceEvent::WakeupNew { .. } => {
                tracing::debug!(target: "lbsim::wake", "{line}");
            }
            TraceEvent::Migrate { .. } => tracing::debug!(target: "lbsim::migrate", "{line}"),
            _ => tracing::trace!(target: "lbsim::sched", "{line}"),
        }
    }
}
