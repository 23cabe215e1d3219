//! Workloads for lbsim: what the simulated tasks do.
//!
//! A workload is a [`WorkloadSpec`]: the tasks to create ([`TaskSpec`]: name, policy, nice,
//! affinity, start time, fairness group, and a [`Program`]), task definitions that `fork`
//! events instantiate, shared sync objects ([`SyncSpec`]: mutexes, condition variables,
//! barriers, semaphores, channels, ticket counters, wake lists, timers), and one [`Part`] per
//! `--workload` option with the report to print. Workloads come from rt-app JSON files
//! ([`rtapp`], following rt-app's `rt-app_parse_config.c`) or from generators shaped like the
//! benchmarks scheduler developers quote ([`generators`]: sysbench, hackbench, schbench, tbench,
//! ebizzy, `perf bench sched pipe`, pinned hogs, a ping-pong pair, busy and periodic threads),
//! parsed by [`parse_workload`] through the one list [`WORKLOADS`].
//!
//! # Adding a generator
//! One new file and one list entry: `src/generators/NAME.rs` with a unit struct implementing
//! [`Generator`] (name, one-line about, key table of [`Key`]s with defaults and docs, example,
//! `parse`, `build`, `report`, and for a generator that re-runs itself `rounds` and
//! `next_round`), then `pub mod NAME;` and `&NAME::X` in [`WORKLOADS`]
//! (`src/generators/mod.rs`). Dispatch, errors, help texts and the report at the end of a run
//! follow; `generators/busy.rs` is the smallest example. See [`generators`] for details.
//!
//! This crate knows nothing of CPUs, runqueues or the balancer. It models user space and the
//! blocking primitives' wake-up rules (futex-based mutexes, condition variables, barriers and
//! semaphores as glibc implements them; pipes and unix sockets as fs/pipe.c and
//! net/unix/af_unix.c wake their waiters, v6.x). It leaves out memory, I/O, real-time
//! policies, cgroups and uclamp (rt-app files using them get warnings or errors).
//!
//! # The engine's contract
//!
//! Setting up a run:
//! 1. `let spec = parse_workloads_within(&options, limits)?` (or `parse_workloads` with the
//!    default [`Limits`]), or `WorkloadSpec::combine`. (or `WorkloadSpec::combine`). Print
//!    `spec.warnings`. Check `spec.cpusets` (via [`WorkloadSpec::max_cpu`]) against the
//!    machine. The run lasts `min(--duration, spec.duration_ns)`, or until no task remains;
//!    without a `--duration`, [`WorkloadSpec::default_run_ns`]. After it,
//!    [`WorkloadSpec::cut_short`] names the parts the limit stopped early; at the end, record
//!    each live task's [`ProgramState::take_tally`] as its last tally probes.
//! 2. `let mut sync = spec.new_sync_state()`.
//! 3. For each `spec.tasks[i]`: create task `TaskRef(i)` with its policy, nice, affinity
//!    (`spec.cpuset(id)`; `None` is every CPU) and `custom_slice_ns`; its interpreter is
//!    `spec.tasks[i].start(TaskRef(i))`; its random stream is the engine's per-task
//!    `Pcg64Mcg` (derived from the master seed); wake it first at `start_ns`. Push
//!    [`TaskObservation::new`] for it into [`RunObservations::tasks`].
//!
//! Running a task: whenever the task is current on a CPU and has nothing to do (it just
//! started, its previous action completed, or it runs again after sleeping or blocking), call
//! `state.next_action(now_ns, &mut rng, &mut sync)` and perform the [`Action`]:
//! - [`Action::Run`]`{ work_ns }`: consume `work_ns` of work at capacity 1024 (longer on a
//!   smaller CPU); [`Action::RunWall`]`{ ns }`: run until `start + ns` of wall time, whatever
//!   the capacity and preemption; both are preemptible, then ask for the next action.
//! - [`Action::Sleep`] / [`Action::SleepUntil`]: dequeue the task, wake it at the time given
//!   (no sleep if `abs_ns <= now`).
//! - `Yield` ([`Action::Yield`]): `sched_yield()`.
//! - Sync actions ([`Action::is_sync`]: `Lock`, `Unlock`, `Wait`, `Signal`, `Broadcast`,
//!   `Barrier`, `SemWait`, `SemPost`, `Suspend`, `Resume`, `Send`, `Recv`): call
//!   `sync.apply(task, &action, now_ns, &mut wakes)`. Wake every task in `wakes`, in order,
//!   with `try_to_wake_up` (`Wake::sync` is the `WF_SYNC` hint). On [`Outcome::Done`] ask for
//!   the next action; on [`Outcome::Blocked`] dequeue the task (a voluntary sleep) and keep the
//!   action: when the task has been woken and next runs, call `apply` again with the *same*
//!   action instead of `next_action` (it may block again: futex semantics).
//! - [`Action::Fork`]`(t)`: `spec.fork_task(t, &mut sync, TaskRef(next))` gives the new
//!   task's spec (an error ends the run, as rt-app exits); create it as in step 3.
//! - [`Action::Probe`]`{ tag, value }`: push [`ProbeRecord`]`{ task, time_ns: now, tag, value }`
//!   into [`RunObservations::probes`].
//! - [`Action::SetAffinity`] / [`Action::SetSched`]: `sched_setaffinity` / `sched_setattr`.
//! - `Exit` ([`Action::Exit`]): the task exits; set its `exited_ns`.
//!
//! Every action but `Run`, `RunWall`, `Sleep`, `SleepUntil` and a blocking sync action takes
//! no simulated time of its own: ask for the next action at once (charging whatever cost the
//! engine's model says). [`ProgramState::next_action`] never loops forever:
//! [`WorkloadSpec::validate`] rejects programs that could repeat without taking time or
//! blocking.
//!
//! Reporting: fill the counters of each [`TaskObservation`] (runtime, work, wait, longest
//! wait, switches, migrations, last CPU), push a [`WakeupSample`] per wake-up, set
//! [`RunObservations::sim_time_ns`], then `spec.reports(&obs)` gives one [`Report`] per part:
//! the real tool's text and named [`Metric`]s for `lbsim compare`.
//!
//! Rounds: when [`WorkloadSpec::rounds`] is `Some` (`schbench -a`), run again with
//! `spec.next_round(&reports)` while it gives a workload; the last round's run is the result.

pub mod action;
pub mod generators;
pub mod ids;
pub mod interp;
pub mod length;
pub mod limits;
pub mod obs;
pub mod program;
pub mod report;
pub mod rtapp;
pub mod spec;
pub mod sync;
pub mod trace;

pub use action::Action;
pub use generators::{
    Generator, Key, KeyDefault, WORKLOADS, WorkloadError, WorkloadKind, parse_workload,
    parse_workloads, parse_workloads_within,
};
pub use ids::{
    BarrierId, ChanId, CondId, CounterId, CpusetId, ListId, MutexId, ProbeTag, SemId, TaskRef,
    TemplateId, TimerId,
};
pub use interp::{ProgramState, PureRuns};
pub use length::{COUNTED_LIMIT_NS, CutShort, OPEN_ENDED_NS};
pub use limits::{LimitError, Limits, Resource, Room, Size};
pub use obs::{
    LogIter, LogRecord, ProbeIter, ProbeLog, ProbeRecord, RunObservations, TaskObservation,
    VarintLog, WakeupIter, WakeupLog, WakeupSample,
};
pub use program::{Event, Loops, Phase, Policy, Program, SchedAttr, SchedChange};
pub use report::{Metric, PartReport, Report};
pub use rtapp::RtappError;
pub use spec::{ForkError, Part, SpecError, TaskSpec, Warning, WorkloadSpec};
pub use sync::{ChanKind, Outcome, SyncSpec, SyncState, Wake, Wakes};

#[cfg(test)]
mod tests;
