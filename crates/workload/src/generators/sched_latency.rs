//! The `perf sched latency` table that the generators without a tool of their own print.

use std::fmt::Write as _;

use crate::obs::RunObservations;
use crate::report::{Fairness, nearest_rank};

/// The `perf sched latency` table of a part's tasks (runtime, switches, average and maximum
/// delay from becoming runnable to running), followed by an lbsim line with the fairness of
/// the work they did. Follows perf's builtin-sched.c output_lat_thread(): the task cell is
/// `"  %s:%d "` padded to 24 columns, then `"|%11.3f ms |%9d | avg:%8.3f ms | max:%8.3f ms |"`;
/// the average is `total_lat / nb_atoms`, over the waits (each arrival on a CPU, and the
/// wait still going on at the end of the run, which counts in the maximum too).
pub(crate) fn sched_latency_table(obs: &RunObservations, part: u16) -> String {
    let rule = format!(" {}\n", "-".repeat(83));
    let mut s = String::new();
    s.push_str(&rule);
    s.push_str("  Task                  |   Runtime ms  | Switches | Avg delay ms    | Max delay ms    |\n");
    s.push_str(&rule);
    let mut total_runtime = 0u64;
    let mut total_switches = 0u64;
    let mut works = Vec::new();
    for (r, t) in obs.part_tasks(part) {
        let cell = format!("  {}:{} ", t.name, r.0);
        let pad = 24usize.saturating_sub(cell.len());
        let n = t.nr_switches();
        let avg = (t.wait_ns + t.final_wait_ns)
            .checked_div(t.nr_waits)
            .unwrap_or(0);
        let max = t.max_wait_ns.max(t.final_wait_ns);
        let _ = writeln!(
            s,
            "{cell}{}|{:11.3} ms |{:9} | avg:{:8.3} ms | max:{:8.3} ms |",
            " ".repeat(pad),
            t.runtime_ns as f64 / 1e6,
            n,
            avg as f64 / 1e6,
            max as f64 / 1e6
        );
        total_runtime += t.runtime_ns;
        total_switches += n;
        works.push(t.work_ns);
    }
    s.push_str(&rule);
    let _ = writeln!(
        s,
        "  TOTAL:                |{:11.3} ms |{:9} |",
        total_runtime as f64 / 1e6,
        total_switches
    );
    s.push_str(&format!(" {}\n", "-".repeat(51)));
    let f = Fairness::of(&works);
    let _ = writeln!(
        s,
        "# lbsim: fairness of the work done: min/max {:.4}, Jain's index {:.4} over {} tasks",
        f.min_max_ratio,
        f.jain,
        works.len()
    );
    let mut lat: Vec<u64> = obs
        .wakeups
        .iter()
        .filter(|w| {
            obs.tasks
                .get(w.task.index())
                .is_some_and(|t| t.part == part)
        })
        .map(|w| w.latency_ns)
        .collect();
    if !lat.is_empty() {
        lat.sort_unstable();
        let us = |ns: u64| ns as f64 / 1e3;
        let _ = writeln!(
            s,
            "# lbsim: wake-up latency p50 {:.1} us, p99 {:.1} us, max {:.1} us over {} wake-ups",
            us(nearest_rank(&lat, 50.0)),
            us(nearest_rank(&lat, 99.0)),
            us(*lat.last().expect("not empty")),
            lat.len()
        );
    }
    s
}
