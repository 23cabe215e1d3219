//! From measured samples to the cost model's parameters: the arithmetic of `lbsim calibrate`,
//! as pure functions (lbsim-real takes the samples; this module says what they mean).
//!
//! Each parameter is derived so that the model's own expression for the measured quantity
//! equals the measurement's median, with no correction factor. The expressions are what the
//! core model charges (crates/core: `ttwu.rs` charges `cost_wakeup_ns` to the waker,
//! `schedule.rs` charges `cost_context_switch_ns` to the CPU switching, `cpuidle/mod.rs`
//! delays a wake-up of another CPU by `cost_ipi_ns`, or `cost_poll_wake_ns` for a CPU that
//! polls, plus the idle state's exit time):
//!
//! | measured (median) | the model's expression | gives |
//! |---|---|---|
//! | waker's `futex_wake()` on one CPU, wakee not run inside it | `cost_wakeup_ns` | `cost_wakeup_ns` |
//! | round trip, both threads on one CPU | `2 x (cost_wakeup_ns + cost_context_switch_ns)` | `cost_context_switch_ns` |
//! | round trip across two CPUs, each busy with a `SCHED_IDLE` spinner | `2 x (cost_wakeup_ns + cost_ipi_ns + cost_context_switch_ns)` | `cost_ipi_ns` |
//! | round trip across two CPUs, the target idle in a polling state | `2 x (cost_wakeup_ns + cost_poll_wake_ns + cost_context_switch_ns)` | `cost_poll_wake_ns` |
//!
//! A derived value below 0 (the medians are noisy on a loaded machine) is 0, with a note.
//! `cost_lb_*` (balancing work) cannot be measured from user space without tracing and keep
//! their defaults; timer-sleep overshoot has no parameter (lbsim's sleep timers fire at their
//! deadline: timer slack is not modelled) and is only recorded.

use super::MAX_COST_NS;

/// The distribution of one measurement's samples, ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// How many samples.
    pub samples: u64,
    /// Their mean.
    pub mean: f64,
    /// The smallest.
    pub min: f64,
    /// 10th percentile (nearest rank).
    pub p10: f64,
    /// The median (nearest rank: the `ceil(n/2)`-th smallest).
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// The largest.
    pub max: f64,
}

impl Summary {
    /// The summary of `samples`, the non-finite ones left out; `None` if none is left.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        // Nearest rank: the smallest value with at least p of the samples at or below it.
        let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Summary {
            samples: n as u64,
            mean: v.iter().sum::<f64>() / n as f64,
            min: v[0],
            p10: rank(0.10),
            median: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            max: v[n - 1],
        })
    }
}

/// What calibration measured, summarized: the inputs of [`derive()`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// The waker's `futex_wake()` call with both threads on one CPU, the calls during which
    /// the wakee ran left out.
    pub local_wake_syscall: Summary,
    /// Round trips with both threads on one CPU.
    pub pinned_round_trip: Summary,
    /// Round trips across two CPUs, each busy with a `SCHED_IDLE` spinner.
    pub cross_busy_round_trip: Option<Summary>,
    /// Round trips across two CPUs with nothing else of lbsim's on them.
    pub cross_idle_round_trip: Option<Summary>,
    /// Idle-state entries of the two CPUs during the cross-CPU idle measurement: (entries
    /// of polling states, entries of the others); `None` where cpuidle's `usage` was not
    /// readable.
    pub idle_entries: Option<(u64, u64)>,
}

/// One derived parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derived {
    /// The cost model's parameter (`cost_ipi_ns`).
    pub param: &'static str,
    /// Its value, ns.
    pub value_ns: u64,
    /// The figures it was computed from (the keys of the profile's `[figures]`).
    pub from: Vec<&'static str>,
    /// The formula, over the figures' medians.
    pub formula: &'static str,
    /// What the formula takes for granted.
    pub assumes: &'static str,
    /// Why the value is not the formula's (clamped at 0 or at [`MAX_COST_NS`]), if it is not.
    pub note: Option<String>,
}

/// A parameter calibration could not derive, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotDerived {
    /// The parameter.
    pub param: &'static str,
    /// Why (one line).
    pub why: String,
}

/// A computed value as a parameter: rounded to whole ns, at least 0, at most [`MAX_COST_NS`];
/// the note says which bound it hit.
fn clamp(param: &'static str, x: f64) -> (u64, Option<String>) {
    if x < 0.0 {
        (
            0,
            Some(format!(
                "{param} came out at {x:.0} ns, below 0: the medians it subtracts are larger than the one it is taken from; set to 0"
            )),
        )
    } else if x > MAX_COST_NS as f64 {
        (
            MAX_COST_NS,
            Some(format!(
                "{param} came out at {x:.0} ns, above the 1 s bound"
            )),
        )
    } else {
        (x.round() as u64, None)
    }
}

/// The cost-model parameters `m` gives, in the order they are derived (each uses the ones
/// before it), and the ones it does not give with the reason.
pub fn derive(m: &Measured) -> (Vec<Derived>, Vec<NotDerived>) {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    let (wakeup, note) = clamp("cost_wakeup_ns", m.local_wake_syscall.median);
    out.push(Derived {
        param: "cost_wakeup_ns",
        value_ns: wakeup,
        from: vec!["local_wake_syscall"],
        formula: "local_wake_syscall",
        assumes: "the waker's futex_wake() call is try_to_wake_up()'s work on the waking CPU (select_task_rq, enqueue, the preemption check) plus the system call's entry and exit; a wake-up of a task on another CPU costs the waker the same (a cost the waker pays for the IPI's send is in cost_ipi_ns instead)",
        note,
    });
    let half = m.pinned_round_trip.median / 2.0;
    let (switch, note) = clamp("cost_context_switch_ns", half - wakeup as f64);
    out.push(Derived {
        param: "cost_context_switch_ns",
        value_ns: switch,
        from: vec!["pinned_round_trip", "local_wake_syscall"],
        formula: "pinned_round_trip / 2 - cost_wakeup_ns",
        assumes: "a round trip on one CPU is two hand-overs, each one wake-up by the waker and one switch to the wakee; the switch includes the waker's futex_wait() entry, __schedule() and the wakee's return to user space, all of which the model charges as the switch",
        note,
    });
    match m.cross_busy_round_trip {
        Some(busy) => {
            let (ipi, note) = clamp(
                "cost_ipi_ns",
                busy.median / 2.0 - wakeup as f64 - switch as f64,
            );
            out.push(Derived {
                param: "cost_ipi_ns",
                value_ns: ipi,
                from: vec![
                    "cross_busy_round_trip",
                    "local_wake_syscall",
                    "pinned_round_trip",
                ],
                formula: "cross_busy_round_trip / 2 - cost_wakeup_ns - cost_context_switch_ns",
                assumes: "each hand-over across CPUs to a CPU running a SCHED_IDLE spinner is the waker's wake-up, the reschedule IPI (the wakee always preempts a SCHED_IDLE task) and the target's switch; the waker's extra time to send the IPI (a VM exit in a guest) is counted as the IPI's latency, which is where the model puts it",
                note,
            });
        }
        None => missing.push(NotDerived {
            param: "cost_ipi_ns",
            why: "one CPU only: no wake-up across CPUs to measure".to_owned(),
        }),
    }
    let poll_why = match (m.cross_idle_round_trip, m.idle_entries) {
        (None, _) => Some("one CPU only: no wake-up across CPUs to measure".to_owned()),
        (Some(_), None) => Some(
            "cpuidle's usage counters were not readable, so whether the target polled is unknown"
                .to_owned(),
        ),
        (Some(_), Some((0, 0))) => Some(
            "the two CPUs entered no idle state during the idle-target measurement (other work kept them busy), so it measured no wake-up of an idle CPU"
                .to_owned(),
        ),
        (Some(_), Some((poll, other))) if poll < other => Some(format!(
            "the target CPUs mostly entered non-polling states ({other} of {} entries), which the model wakes with an IPI and an exit time of the machine's idle-state table, not with cost_poll_wake_ns",
            poll + other
        )),
        _ => None,
    };
    match (poll_why, m.cross_idle_round_trip) {
        (None, Some(idle)) => {
            let (poll, note) = clamp(
                "cost_poll_wake_ns",
                idle.median / 2.0 - wakeup as f64 - switch as f64,
            );
            out.push(Derived {
                param: "cost_poll_wake_ns",
                value_ns: poll,
                from: vec![
                    "cross_idle_round_trip",
                    "local_wake_syscall",
                    "pinned_round_trip",
                ],
                formula: "cross_idle_round_trip / 2 - cost_wakeup_ns - cost_context_switch_ns",
                assumes: "the target CPU waited in a polling state (POLL, whose exit time is 0) for at least half of its idle entries, so a hand-over is the waker's wake-up, the store the polling CPU sees and the target's switch",
                note,
            });
        }
        (why, _) => missing.push(NotDerived {
            param: "cost_poll_wake_ns",
            why: why.unwrap_or_default(),
        }),
    }
    for param in [
        "cost_lb_domain_ns",
        "cost_lb_cpu_ns",
        "cost_lb_task_ns",
        "cost_lb_migrate_ns",
        "cost_lb_redo_ns",
    ] {
        missing.push(NotDerived {
            param,
            why: "balancing work is not visible from user space without tracing; the default stays"
                .to_owned(),
        });
    }
    (out, missing)
}

#[cfg(test)]
mod tests;
