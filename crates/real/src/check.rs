//! What the real runner can execute: the events of the `busy`, `periodic`, `pipe`,
//! `pingpong`, `hogs` and `sysbench-cpu` generators and of rt-app files, and nothing else.
//! Everything is checked before any thread starts.

use lbsim_workload::{ChanKind, Event, TaskSpec, WorkloadSpec};

use crate::RealError;

/// The name of an event as rt-app's JSON (or, for generator events, lbsim's docs) calls it.
pub fn event_name(e: &Event) -> &'static str {
    match e {
        Event::Run { .. } => "run",
        Event::RunWall { .. } => "runtime",
        Event::Sleep { .. } => "sleep",
        Event::SleepRandom { .. } => "sleep_random",
        Event::Timer { .. } => "timer",
        Event::Yield => "yield",
        Event::Lock(_) => "lock",
        Event::Unlock(_) => "unlock",
        Event::Wait { .. } => "wait",
        Event::Signal(_) => "signal",
        Event::Broadcast(_) => "broad",
        Event::Barrier(_) => "barrier",
        Event::SemWait(_) => "sem_wait",
        Event::SemPost(_) | Event::SemPostSync(_) => "sem_post",
        Event::Suspend => "suspend",
        Event::Resume(_) => "resume",
        Event::ClearToken => "clear_token",
        Event::Send { .. } => "send",
        Event::Recv { .. } => "recv",
        Event::Fork(_) => "fork",
        Event::Spawn(_) => "spawn",
        Event::Probe(_) => "probe",
        Event::Mark => "mark",
        Event::ProbeSinceMark(_) => "probe_since_mark",
        Event::ProbeWakeup => "probe_wakeup",
        Event::Claim { .. } => "claim",
        Event::ExitAfter { .. } => "exit_after",
        Event::Tally { .. } => "tally",
        Event::ListAdd(_) => "list_add",
        Event::WakeList(_) => "wake_list",
        Event::Exit => "exit",
        _ => "unknown",
    }
}

/// Whether the runner executes `e` (channels are checked apart, by kind).
fn supported(e: &Event) -> bool {
    matches!(
        e,
        Event::Run { .. }
            | Event::RunWall { .. }
            | Event::Sleep { .. }
            | Event::Timer { .. }
            | Event::Yield
            | Event::Lock(_)
            | Event::Unlock(_)
            | Event::Wait { .. }
            | Event::Signal(_)
            | Event::Broadcast(_)
            | Event::Barrier(_)
            | Event::SemWait(_)
            | Event::SemPost(_)
            | Event::SemPostSync(_)
            | Event::Suspend
            | Event::Resume(_)
            | Event::Send { .. }
            | Event::Recv { .. }
            | Event::Fork(_)
            | Event::Mark
            | Event::ProbeSinceMark(_)
            | Event::ProbeWakeup
            | Event::Claim { .. }
            | Event::Tally { .. }
            | Event::Exit
    )
}

fn check_task(spec: &WorkloadSpec, t: &TaskSpec, allowed: &[u32]) -> Result<(), RealError> {
    let unsupported = |event: &str| RealError::Unsupported {
        task: t.name.clone(),
        event: event.to_owned(),
    };
    if t.spawned {
        return Err(unsupported("spawn"));
    }
    if let Some(path) = &t.cgroup {
        // Moving threads into cgroups needs a delegated cgroup v2 subtree, which the runner
        // does not set up.
        return Err(unsupported(&format!("a task group (cgroup={path})")));
    }
    if let Some(path) = t.program.phases.iter().find_map(|p| p.taskgroup.as_deref()) {
        return Err(unsupported(&format!("a phase-level taskgroup ({path})")));
    }
    if t.custom_slice_ns.is_some() {
        return Err(unsupported(
            "a custom slice (sched_setattr's sched_runtime)",
        ));
    }
    for e in t.program.events() {
        if !supported(e) {
            return Err(unsupported(event_name(e)));
        }
        if let Event::Send { chan, .. } | Event::Recv { chan } = e {
            let kind = spec.sync.chans.get(chan.index()).map(|c| c.kind);
            if kind != Some(ChanKind::Pipe) {
                return Err(RealError::Unsupported {
                    task: t.name.clone(),
                    event: format!("{} on a socket channel", event_name(e)),
                });
            }
        }
    }
    let sets = t
        .affinity
        .into_iter()
        .chain(t.program.phases.iter().filter_map(|p| p.cpus));
    for set in sets {
        if let Some(&cpu) = spec.cpuset(set).iter().find(|c| !allowed.contains(c)) {
            return Err(RealError::NoSuchCpu {
                task: t.name.clone(),
                cpu,
            });
        }
    }
    Ok(())
}

/// Checks that every task and fork template of `spec` uses only what the runner executes and
/// only CPUs in `allowed` (this process's affinity).
///
/// # Errors
/// The first task with an unsupported event, or pinned to a CPU it may not use.
pub fn check_spec(spec: &WorkloadSpec, allowed: &[u32]) -> Result<(), RealError> {
    for t in spec.tasks.iter().chain(&spec.templates) {
        check_task(spec, t, allowed)?;
    }
    Ok(())
}
