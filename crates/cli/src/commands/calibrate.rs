//! `lbsim calibrate`: measures this machine's scheduler costs (lbsim-real's ping-pongs and
//! timer sleeps), derives the cost model's parameters from them (lbsim-balance's
//! `cost::derive`) and writes the cost profile (`cost::profile`) that `--cost FILE` loads:
//! to standard output, or with `-o FILE` to a file that appears whole or not at all.

use anyhow::{Context as _, bail};
use lbsim_balance::cost::derive::{Measured, Summary, derive};
use lbsim_balance::cost::profile::{CostProfile, Figure};
use lbsim_real::calibrate::{CalibrateOptions, Calibration, PingPong};
use toml::Value;

use crate::output::OutputFile;

/// Arguments of `lbsim calibrate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the cost profile to FILE (it must not exist yet, see --force; it appears whole
    /// or not at all) [default: standard output].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Overwrite the -o file if it exists.
    #[arg(long)]
    pub force: bool,
    /// How long each of the four measurements runs (`1s`, `200ms`).
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub duration: String,
    /// At most this many samples per measurement.
    #[arg(long, value_name = "N", default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_samples: u64,
}

/// Whether idle state `name` polls (`cpuidle_poll_state_init()`'s `POLL`, powernv's
/// `snooze`), as lbsim-topology's sysfs reader decides it.
fn polls(name: &str) -> bool {
    name == "POLL" || name == "snooze"
}

fn string(s: impl Into<String>) -> Value {
    Value::String(s.into())
}

fn int(x: u64) -> Value {
    Value::Integer(i64::try_from(x).unwrap_or(i64::MAX))
}

fn cpus(c: &[u32]) -> Value {
    Value::Array(c.iter().map(|&c| int(u64::from(c))).collect())
}

/// The summary of a measurement that must have samples.
fn summary(what: &str, samples: &[f64], duration: &str) -> anyhow::Result<Summary> {
    Summary::of(samples).with_context(|| {
        format!("calibrate: no {what} completed in --duration {duration}: give a longer one")
    })
}

/// The profile of what `c` measured.
fn profile(c: &Calibration, args: &Args, opts: CalibrateOptions) -> anyhow::Result<CostProfile> {
    let d = &args.duration;
    let ping = |p: &PingPong| -> [u32; 2] { [p.cpus.0, p.cpus.1] };
    let pinned_rt = summary("round trip on one CPU", &c.pinned.round_trip_ns, d)?;
    let local_wake = summary("wake-up on one CPU", &c.pinned.wake_syscall_ns, d)?;
    let cross = |p: &Option<PingPong>, what: &str| -> anyhow::Result<Option<(Summary, Summary)>> {
        p.as_ref()
            .map(|p| {
                Ok((
                    summary(&format!("{what} round trip"), &p.round_trip_ns, d)?,
                    summary(&format!("{what} wake-up"), &p.wake_syscall_ns, d)?,
                ))
            })
            .transpose()
    };
    let idle = cross(&c.cross_idle, "cross-CPU (idle target)")?;
    let busy = cross(&c.cross_busy, "cross-CPU (busy target)")?;
    let entries = c
        .idle_states
        .iter()
        .map(|s| s.entered_during_idle_wake.map(|n| (polls(&s.name), n)))
        .collect::<Option<Vec<_>>>()
        .filter(|v| !v.is_empty())
        .map(|v| {
            v.iter().fold(
                (0, 0),
                |(p, o), &(poll, n)| {
                    if poll { (p + n, o) } else { (p, o + n) }
                },
            )
        });
    let measured = Measured {
        local_wake_syscall: local_wake,
        pinned_round_trip: pinned_rt,
        cross_busy_round_trip: busy.map(|b| b.0),
        cross_idle_round_trip: idle.map(|i| i.0),
        idle_entries: entries,
    };
    let (derived, not_derived) = derive(&measured);

    let fig = |key, what: &str, method: &str, summary, extra| Figure {
        key,
        what: what.to_owned(),
        method: method.to_owned(),
        summary,
        extra,
    };
    let pingpong = "a futex ping-pong: two threads pinned with sched_setaffinity() and one futex word saying whose turn it is; the thread whose turn it is stores the other's turn, calls futex(FUTEX_WAKE_PRIVATE) and waits with futex(FUTEX_WAIT_PRIVATE) until the turn is back; CLOCK_MONOTONIC";
    let pinned_cpus = ping(&c.pinned);
    let mut figures = vec![
        fig(
            "local_wake_syscall",
            "the waker's futex_wake() call, both threads on one CPU",
            &format!(
                "{pingpong}; the time of each FUTEX_WAKE call, leaving out the calls during which the wakee ran (the turn was back when the call returned: the wakee preempted the waker)"
            ),
            local_wake,
            vec![
                ("cpus", cpus(&pinned_cpus[..1])),
                ("left_out_wakee_ran", int(c.pinned.wakee_preempted)),
            ],
        ),
        fig(
            "pinned_round_trip",
            "a round trip (two hand-overs), both threads on one CPU",
            &format!("{pingpong}; from one turn of the first thread to its next"),
            pinned_rt,
            vec![("cpus", cpus(&pinned_cpus))],
        ),
    ];
    let (poll, other) = entries.unwrap_or((0, 0));
    if let (Some((rt, wake)), Some(p)) = (idle, &c.cross_idle) {
        let mut extra = vec![("cpus", cpus(&ping(p)))];
        if entries.is_some() {
            extra.push(("idle_entries_polling", int(poll)));
            extra.push(("idle_entries_other", int(other)));
        }
        figures.push(fig(
            "cross_idle_round_trip",
            "a round trip across two CPUs, nothing else of lbsim's on them (each thread's CPU may go idle while it waits)",
            &format!(
                "{pingpong}; from one turn of the first thread to its next; the idle states the two CPUs entered meanwhile from cpuidle's usage counters"
            ),
            rt,
            extra.clone(),
        ));
        figures.push(fig(
            "cross_idle_wake_syscall",
            "the waker's futex_wake() call across two CPUs, target not running lbsim work (recorded; no parameter is derived from it)",
            &format!("{pingpong}; the time of each FUTEX_WAKE call"),
            wake,
            extra,
        ));
    }
    if let (Some((rt, wake)), Some(p)) = (busy, &c.cross_busy) {
        let extra = vec![("cpus", cpus(&ping(p)))];
        figures.push(fig(
            "cross_busy_round_trip",
            "a round trip across two CPUs, each also running a SCHED_IDLE spinner (every wake-up preempts it: a reschedule IPI)",
            &format!("{pingpong}; a SCHED_IDLE thread spinning on each of the two CPUs throughout"),
            rt,
            extra.clone(),
        ));
        figures.push(fig(
            "cross_busy_wake_syscall",
            "the waker's futex_wake() call across two CPUs, target busy (recorded; no parameter is derived from it)",
            &format!("{pingpong}; the time of each FUTEX_WAKE call"),
            wake,
            extra,
        ));
    }
    let timer = summary("timer sleep", &c.timer_overshoot_ns, d)?;
    let mut extra = vec![
        ("cpus", cpus(&pinned_cpus[..1])),
        ("period_ns", int(1_000_000)),
    ];
    if let Some(slack) = c.timer_slack_ns {
        extra.push(("timer_slack_ns", int(slack)));
    }
    figures.push(fig(
        "timer_overshoot",
        "how late a timer sleep wakes: the time its thread runs again minus its deadline (no lbsim parameter: sleep timers fire at their deadline in lbsim, timer slack is not modelled)",
        "one thread pinned to one CPU sleeping with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to deadlines 1 ms apart, with the process's timer slack; CLOCK_MONOTONIC on waking",
        timer,
        extra,
    ));
    if let Some(clock) = Summary::of(&c.clock_read_ns) {
        figures.push(fig(
            "clock_read",
            "two back-to-back CLOCK_MONOTONIC reads: included once in every timing above (not subtracted)",
            "clock_gettime(CLOCK_MONOTONIC) twice, the difference",
            clock,
            Vec::new(),
        ));
    }

    let opt = |k: &'static str, v: &Option<String>| v.as_ref().map(|v| (k, string(v.clone())));
    let optf = |k: &'static str, v: Option<f64>| v.map(|v| (k, Value::Float(v)));
    let used: Vec<u32> = match &c.cross_idle {
        Some(p) => vec![p.cpus.0, p.cpus.1],
        None => vec![c.pinned.cpus.0],
    };
    let machine: Vec<(&'static str, Value)> = [
        opt("cpu_model", &c.cpu_model),
        opt("kernel", &c.kernel_release),
        Some(("nr_cpus", int(c.nr_cpus as u64))),
        Some(("cpus_used", cpus(&used))),
        opt("cpuidle_driver", &c.cpuidle_driver),
        opt("cpuidle_governor", &c.cpuidle_governor),
        optf("load_1min_before", c.load_1min_before),
        optf("load_1min_after", c.load_1min_after),
        Some(("duration_ns_each", int(opts.duration_ns))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let cpuidle_states = c
        .idle_states
        .iter()
        .map(|s| {
            let mut r = vec![
                ("cpu", int(u64::from(s.cpu))),
                ("state", int(u64::from(s.index))),
                ("name", string(s.name.clone())),
                ("latency_us", int(s.latency_us)),
                ("residency_us", int(s.residency_us)),
                ("polls", Value::Boolean(polls(&s.name))),
            ];
            if let Some(n) = s.entered_during_idle_wake {
                r.push(("entered_during_cross_idle", int(n)));
            }
            r
        })
        .collect();
    let mut notes = vec![
        "Each [cost] value makes the model's own expression for a measured median equal to it (see [derivations]); the parameters not derived keep lbsim's defaults.".to_owned(),
        "Idle exit latencies are the machine's, not the cost model's: `--topology host` reads the cpuidle states listed in [[cpuidle_states]] (latency and residency as declared; the exit time taken as the declared latency), and a cost profile does not change them.".to_owned(),
    ];
    if c.load_1min_before.is_some_and(|l| l > 0.5) {
        notes.push(format!(
            "The machine was loaded while this was measured (1-minute load {:.2} before, {:.2} after): other work's threads shared the CPUs, so the round trips include waits behind them.",
            c.load_1min_before.unwrap_or(0.0),
            c.load_1min_after.unwrap_or(0.0)
        ));
    }
    Ok(CostProfile {
        notes,
        derived,
        not_derived,
        machine,
        figures,
        cpuidle_states,
    })
}

/// Runs `lbsim calibrate`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let duration_ns = lbsim_pelt::parse_duration_ns(&args.duration)
        .with_context(|| format!("--duration `{}`", args.duration))?;
    if duration_ns == 0 {
        bail!("--duration must be greater than 0");
    }
    if duration_ns > 600_000_000_000 {
        bail!("--duration `{}`: at most 600s", args.duration);
    }
    let out = args
        .output
        .as_deref()
        .map(|p| OutputFile::new("-o", p, args.force))
        .transpose()?;
    let opts = CalibrateOptions {
        duration_ns,
        max_samples: usize::try_from(args.max_samples).unwrap_or(usize::MAX),
    };
    let c = lbsim_real::calibrate::calibrate(opts).context("calibrate")?;
    let text = profile(&c, args, opts)?.to_toml();
    match out {
        Some(f) => f.write(|w| w.write_all(text.as_bytes())),
        None => crate::stdout::print(&text),
    }
}
