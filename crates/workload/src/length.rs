//! How long a run lasts when the command line does not say, and which parts of a workload a
//! shorter `--duration` cut before they were done.
//!
//! A benchmark with a run length (schbench `-r`, ebizzy `-S`, tbench's warmup and runtime,
//! sysbench `--time`, rt-app's `global.duration`) runs for it; one that stops after a count
//! (pipe loops, sysbench requests, a finite rt-app file) runs until its tasks have exited;
//! one with no end at all (busy threads, a looping rt-app file without a duration) runs for
//! [`OPEN_ENDED_NS`].

use std::fmt;

use crate::obs::RunObservations;
use crate::spec::WorkloadSpec;

/// The run length of a workload with no end of its own when no `--duration` is given: 1 s.
pub const OPEN_ENDED_NS: u64 = 1_000_000_000;

/// The longest a workload that ends by itself after a count may run when no `--duration` is
/// given (simulated time): one hour. It stops a workload whose tasks never finish (one left
/// waiting for a wake-up that never comes) from running forever.
pub const COUNTED_LIMIT_NS: u64 = 3600 * 1_000_000_000;

/// One part of a workload that the run's length cut before it was done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutShort {
    /// The part's `--workload` option.
    pub label: String,
    /// The run length the tool asked for, if it has one (else it stops after a count).
    pub asks_ns: Option<u64>,
    /// Where the run stopped.
    pub limit_ns: u64,
}

impl fmt::Display for CutShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |ns: u64| ns as f64 / 1e9;
        match self.asks_ns {
            Some(a) => write!(
                f,
                "{} asks for {} s but the run stops at {} s: its report covers the {} s simulated",
                self.label,
                s(a),
                s(self.limit_ns),
                s(self.limit_ns)
            ),
            None => write!(
                f,
                "{} had not finished when the run stopped at {} s: its report covers the {} s \
                 simulated",
                self.label,
                s(self.limit_ns),
                s(self.limit_ns)
            ),
        }
    }
}

impl WorkloadSpec {
    /// The run length when no `--duration` is given: the workload's own length (the longest
    /// of its parts'); else, when every task ends by itself, until they have all exited (at
    /// most [`COUNTED_LIMIT_NS`]); else [`OPEN_ENDED_NS`].
    pub fn default_run_ns(&self) -> u64 {
        match self.duration_ns {
            Some(d) => d,
            None if self.needs_duration() => OPEN_ENDED_NS,
            None => COUNTED_LIMIT_NS,
        }
    }

    /// The parts that a run limited to `limit_ns` stopped before they were done, given what
    /// the run observed: a part whose tool asks for a longer run than `limit_ns`, or, for a
    /// part that ends after a count, one with a task still alive when the run stopped at
    /// `limit_ns`. A part whose tasks may run forever is never cut short.
    pub fn cut_short(&self, obs: &RunObservations, limit_ns: u64) -> Vec<CutShort> {
        let mut out = Vec::new();
        for (i, part) in self.parts.iter().enumerate() {
            let cut = match part.asks_ns {
                Some(a) => limit_ns < a,
                None => {
                    let finite = self.tasks[part.tasks.start as usize..part.tasks.end as usize]
                        .iter()
                        .all(|t| !t.program.may_run_forever());
                    finite
                        && obs.sim_time_ns >= limit_ns
                        && obs.part_tasks(i as u16).any(|(_, t)| t.exited_ns.is_none())
                }
            };
            if cut {
                out.push(CutShort {
                    label: part.label.clone(),
                    asks_ns: part.asks_ns,
                    limit_ns,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::obs::RunObservations;
    use crate::parse_workloads;

    fn spec(w: &str) -> crate::WorkloadSpec {
        parse_workloads(&[w.to_owned()]).unwrap()
    }

    #[test]
    fn a_run_length_of_its_own_is_the_default() {
        assert_eq!(
            spec("schbench:m=2,t=4").default_run_ns(),
            30_000_000_000,
            "schbench -r 30"
        );
        assert_eq!(
            spec("schbench:m=2,t=4,runtime=2").default_run_ns(),
            2_000_000_000
        );
        // Counted: until the tasks exit, bounded.
        assert_eq!(
            spec("pipe:loops=1000").default_run_ns(),
            super::COUNTED_LIMIT_NS
        );
        // Open-ended.
        assert_eq!(
            spec("busy:threads=2").default_run_ns(),
            super::OPEN_ENDED_NS
        );
    }

    #[test]
    fn a_shorter_limit_cuts_a_part_that_asks_for_more() {
        let s = spec("schbench:m=2,t=4,runtime=2");
        let obs = RunObservations::default();
        let cut = s.cut_short(&obs, 1_000_000_000);
        assert_eq!(cut.len(), 1);
        assert_eq!(
            cut[0].to_string(),
            "schbench:m=2,t=4,runtime=2 asks for 2 s but the run stops at 1 s: its report \
             covers the 1 s simulated"
        );
        assert!(s.cut_short(&obs, 2_000_000_000).is_empty());
    }

    #[test]
    fn a_counted_part_is_cut_only_if_a_task_was_still_alive() {
        let s = spec("pipe:loops=1000");
        let mut obs = RunObservations {
            sim_time_ns: 500,
            ..RunObservations::default()
        };
        for t in &s.tasks {
            obs.tasks.push(crate::TaskObservation::new(t, 0));
        }
        assert_eq!(
            s.cut_short(&obs, 500).len(),
            1,
            "both tasks alive at the limit"
        );
        for t in &mut obs.tasks {
            t.exited_ns = Some(400);
        }
        assert!(s.cut_short(&obs, 500).is_empty(), "both exited");
        // An open-ended part is never cut.
        let b = spec("busy:threads=1");
        let obs = RunObservations {
            sim_time_ns: 500,
            tasks: vec![crate::TaskObservation::new(&b.tasks[0], 0)],
            ..RunObservations::default()
        };
        assert!(b.cut_short(&obs, 500).is_empty());
    }
}
