//! Pure run loops ([`PureRuns`]): what the interpreter tells the engine so that one segment
//! end may cover several runs of a loop only its task sees, and the step that takes such a
//! loop's next run without the general one.

use rand_core::Rng;

#[cfg(debug_assertions)]
use super::Tally;
use super::{Cursor, ProgramState, jitter_work};
#[cfg(debug_assertions)]
use crate::action::Action;
use crate::program::{Event, Loops, Program};
use crate::sync::SyncState;

/// A loop of pure CPU work the task is in: its iterations only run (one `run` event of
/// `work_ns`, jittered by `jitter_pct`) and do what the task alone sees (a tally without
/// probes, a mark, an exit check at `exit_at_ns`). Between two of its runs nothing happens
/// that the kernel or another task could see, so the engine may account several runs in one
/// step ([`ProgramState::pure_runs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PureRuns {
    /// The run event's work, ns at capacity 1024, before jitter.
    pub work_ns: u64,
    /// The task's jitter.
    pub jitter_pct: u32,
    /// The earliest `ExitAfter` of the loop (`u64::MAX`: none): a run that ends at or after
    /// it ends the program.
    pub exit_at_ns: u64,
}

impl PureRuns {
    /// The next run's work, drawn as the interpreter draws it (one value of `rng` when
    /// jittered).
    #[inline]
    pub fn next_work<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        jitter_work(self.work_ns, self.jitter_pct, rng)
    }
}

/// The most events a phase may have to count as a pure loop (a longer one would be scanned
/// at every chain of runs for nothing: the generators' pure loops have three).
const PURE_LOOP_MAX_EVENTS: usize = 8;

/// Whether phase `i` of `program` is a pure run loop: it repeats until the run ends (a
/// `Forever` phase, or the one phase of a program looped forever), changes no affinity,
/// scheduling attribute or task group at its iterations' start, logs nothing, and its events
/// are one `run` of positive work and otherwise only exit checks, marks and tallies without
/// probes. Returns the run's work (`jitter_pct` 0) and the earliest exit check.
pub(super) fn pure_loop_phase(program: &Program, i: usize) -> Option<PureRuns> {
    let phase = program.phases.get(i)?;
    let repeats = phase.loops == Loops::Forever
        || (program.phases.len() == 1
            && program.loops == Loops::Forever
            && phase.loops != Loops::Count(0));
    if !repeats
        || program.rtapp_log
        || phase.sched.is_some()
        || phase.taskgroup.is_some()
        || phase.events.len() > PURE_LOOP_MAX_EVENTS
    {
        return None;
    }
    let mut work = None;
    let mut exit_at_ns = u64::MAX;
    for ev in &phase.events {
        match *ev {
            Event::Run { work_ns } if work_ns > 0 && work.is_none() => work = Some(work_ns),
            Event::ExitAfter { abs_ns } => exit_at_ns = exit_at_ns.min(abs_ns),
            Event::Tally { interval_ns: 0 } | Event::Mark => {}
            _ => return None,
        }
    }
    Some(PureRuns {
        work_ns: work?,
        jitter_pct: 0,
        exit_at_ns,
    })
}

impl ProgramState {
    /// Whether any phase of the program is a pure run loop (the engine asks
    /// [`ProgramState::pure_runs`] only of such tasks).
    #[inline]
    pub fn has_pure_loop(&self) -> bool {
        self.cur.has_pure_loop
    }

    /// The pure run loop the task is in ([`PureRuns`]), if the action it was last given is
    /// that loop's run: then every later call of [`ProgramState::next_action`] made before
    /// `exit_at_ns` returns the loop's next run ([`Action::Run`] of
    /// [`PureRuns::next_work`]'s work from the task's stream), and changes nothing but this
    /// task's interpreter and stream.
    #[inline]
    pub fn pure_runs(&self) -> Option<PureRuns> {
        let c = &self.cur;
        if !c.pure_phase || c.exited || c.exiting || !c.in_iteration || !c.queue.is_empty() {
            return None;
        }
        let phase = &self.program.phases[c.phase as usize];
        if phase.cpus.or(c.task_cpus) != c.cur_cpus {
            return None;
        }
        // A tally begun with an interval (by an earlier phase) would emit probes.
        if c.rare
            .as_ref()
            .and_then(|r| r.tally)
            .is_some_and(|t| t.next_emit_ns.is_some())
        {
            return None;
        }
        let p = pure_loop_phase(&self.program, c.phase as usize)?;
        Some(PureRuns {
            jitter_pct: c.jitter_pct,
            ..p
        })
    }

    /// [`ProgramState::next_action`] for a task in a pure run loop ([`ProgramState::pure_runs`]
    /// said so, with the loop's `pure`) at `now_ns`, before the loop's exit check: the next
    /// run's work, with the interpreter's state moved as the general step moves it (the rest
    /// of the iteration, the next iteration's start, which changes nothing in a pure loop,
    /// and its events up to the run), without its queue. Debug builds take the general step
    /// beside it and compare.
    pub fn next_pure_run<R: Rng + Clone>(
        &mut self,
        pure: &PureRuns,
        now_ns: u64,
        rng: &mut R,
        sync: &mut SyncState,
    ) -> u64 {
        debug_assert!(now_ns < pure.exit_at_ns);
        debug_assert_eq!(self.pure_runs().as_ref(), Some(pure));
        #[cfg(debug_assertions)]
        let general = {
            let (mut me, mut r) = (self.clone(), rng.clone());
            let a = me.next_action(now_ns, &mut r, sync);
            (a, me.cur.pure_fingerprint())
        };
        let work_ns = self.cur.pure_step(&self.program, now_ns, rng);
        #[cfg(debug_assertions)]
        {
            assert_eq!(
                general.0,
                Action::Run { work_ns },
                "pure step of {:?}",
                self.cur.task
            );
            assert_eq!(general.1, self.cur.pure_fingerprint());
        }
        #[cfg(not(debug_assertions))]
        let _ = sync;
        work_ns
    }
}

impl Cursor {
    /// [`ProgramState::next_pure_run`]'s step: from just after the loop's run, the rest of the
    /// iteration (marks, tallies without probes, exit checks that do not fire), the end of the
    /// iteration as [`Cursor::step`] ends it, the start of the next (a pure loop's pushes
    /// nothing), and its events up to the run, whose work it draws.
    fn pure_step<R: Rng + ?Sized>(&mut self, program: &Program, now: u64, rng: &mut R) -> u64 {
        loop {
            let phase = &program.phases[self.phase as usize];
            while let Some(ev) = phase.events.get(self.ev as usize) {
                self.ev += 1;
                match *ev {
                    Event::Run { work_ns } => return jitter_work(work_ns, self.jitter_pct, rng),
                    Event::Mark => self.mark_ns = now,
                    Event::Tally { interval_ns } => self.tally(interval_ns, now),
                    Event::ExitAfter { abs_ns } => debug_assert!(now < abs_ns),
                    _ => unreachable!("{ev:?} in a pure run loop"),
                }
            }
            self.phase_loop += 1;
            if phase.loops.finished(self.phase_loop) {
                // The one phase of a program looped forever: it starts again.
                self.next_phase(program);
            }
            self.ev = 0;
        }
    }

    /// What [`Cursor::pure_step`] moves, for debug builds' comparison with the general step.
    #[cfg(debug_assertions)]
    #[expect(clippy::type_complexity, reason = "a debug check's tuple of fields")]
    fn pure_fingerprint(&self) -> ((u32, u32, u64, u64), (bool, u64, bool), Option<Tally>) {
        (
            (self.phase, self.ev, self.phase_loop, self.thread_loop),
            (self.in_iteration, self.mark_ns, self.queue.is_empty()),
            self.rare.as_ref().and_then(|r| r.tally),
        )
    }
}
