//! `lbsim calibrate`'s measurements: what this machine's kernel takes to switch, to wake a
//! thread on another CPU (idle or busy), and to wake a timer sleeper, as raw samples in ns,
//! with what was read of the machine meanwhile (cpuidle usage, load, CPU model, kernel).
//!
//! Each measurement is a futex ping-pong (two threads, one word holding whose turn it is:
//! the thread whose turn it is hands the turn over with a store and `futex(FUTEX_WAKE)`, then
//! waits with `futex(FUTEX_WAIT)` until the turn comes back), timed with `CLOCK_MONOTONIC`:
//! - **round trip**: the time between two consecutive turns of the first thread;
//! - **wake syscall**: the waker's `futex_wake()` call, from just before to just after it,
//!   the only part of a wake-up that runs on the waker's CPU (the kernel's `try_to_wake_up()`
//!   with `select_task_rq()`, the enqueue or wake-list queueing, and the IPI's send).
//!
//! Variants: both threads pinned to one CPU; pinned to two CPUs with nothing else of ours on
//! them (the target goes idle between turns); the same with a `SCHED_IDLE` spinner on each of
//! the two CPUs (the target is busy: the wake-up preempts the spinner, since a fair task's
//! wake-up always preempts a `SCHED_IDLE` one, fair.c `check_preempt_wakeup_fair()`). The
//! timer: one thread sleeping with `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to
//! deadlines 1 ms apart, and the overshoot (wake-up time minus deadline) of each.
//!
//! The interpretation of the samples (which cost-model parameter each stands for) is not
//! here: lbsim-balance's `cost::derive` does it, as pure functions.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use lbsim_kernel::Policy;

use crate::sys;

/// How long each measurement runs, and its cap on samples.
#[derive(Clone, Copy, Debug)]
pub struct CalibrateOptions {
    /// Wall time of each of the four measurements, ns.
    pub duration_ns: u64,
    /// At most this many samples per measurement.
    pub max_samples: usize,
}

/// One ping-pong measurement's samples, ns.
#[derive(Clone, Debug, Default)]
pub struct PingPong {
    /// The CPUs of the two threads.
    pub cpus: (u32, u32),
    /// Round trips (first thread's turn to its next turn).
    pub round_trip_ns: Vec<f64>,
    /// Each `futex_wake()` call that handed the turn over, both threads', but on one CPU
    /// only the calls during which the wakee did not run (see `wakee_preempted`).
    pub wake_syscall_ns: Vec<f64>,
    /// On one CPU: the calls left out of `wake_syscall_ns` because the wakee preempted the
    /// waker inside them (the turn was back when the call returned). 0 across CPUs.
    pub wakee_preempted: u64,
}

/// One cpuidle state of one CPU, from sysfs, with its `usage` during a measurement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleStateRead {
    /// The CPU.
    pub cpu: u32,
    /// The state's index (`stateM`).
    pub index: u32,
    /// `name`.
    pub name: String,
    /// `latency`, us (the declared exit latency).
    pub latency_us: u64,
    /// `residency`, us (the target residency).
    pub residency_us: u64,
    /// How many times the state was entered during the cross-CPU idle measurement
    /// (`usage` after minus before), if `usage` could be read.
    pub entered_during_idle_wake: Option<u64>,
}

/// Everything `lbsim calibrate` measured.
#[derive(Clone, Debug, Default)]
pub struct Calibration {
    /// `model name` of /proc/cpuinfo (the first CPU's), or `cpu model`/`Processor` lines.
    pub cpu_model: Option<String>,
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// `cpuidle/current_driver`.
    pub cpuidle_driver: Option<String>,
    /// `cpuidle/current_governor` (else `current_governor_ro`).
    pub cpuidle_governor: Option<String>,
    /// The 1-minute load average before the first measurement.
    pub load_1min_before: Option<f64>,
    /// The 1-minute load average after the last.
    pub load_1min_after: Option<f64>,
    /// The CPUs this process may use.
    pub nr_cpus: usize,
    /// `/proc/self/timerslack_ns`: the slack the timer sleeps ran with.
    pub timer_slack_ns: Option<u64>,
    /// Two back-to-back `CLOCK_MONOTONIC` reads, ns each: what every timing here includes
    /// once.
    pub clock_read_ns: Vec<f64>,
    /// Both threads on one CPU.
    pub pinned: PingPong,
    /// Two CPUs, the target idle between turns (`None`: one CPU only).
    pub cross_idle: Option<PingPong>,
    /// Two CPUs, each also running a `SCHED_IDLE` spinner (`None`: one CPU only).
    pub cross_busy: Option<PingPong>,
    /// Timer-sleep overshoots, ns (`clock_nanosleep()` to absolute deadlines 1 ms apart).
    pub timer_overshoot_ns: Vec<f64>,
    /// The cpuidle states of the two CPUs used (empty: no cpuidle in sysfs).
    pub idle_states: Vec<IdleStateRead>,
}

/// Why calibration failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrateError {
    /// This process may run on no CPU.
    #[error("this process may run on no CPU")]
    NoCpu,
    /// A system call failed.
    #[error("{what}: {source}")]
    Sys {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

/// `CPUIDLE_STATE_MAX`: no cpuidle driver has more states.
const CPUIDLE_STATE_MAX: u32 = 10;

/// Whose turn the word says it is; [`STOP`] ends the ping-pong.
const STOP: u32 = 2;

/// One thread of a ping-pong: waits for turn `me`, hands it to `1 - me`. The first thread
/// (`me == 0`) records round trips and ends the measurement.
fn player(
    me: u32,
    cpu: u32,
    same_cpu: bool,
    word: &AtomicU32,
    opts: CalibrateOptions,
) -> Result<(Vec<f64>, Vec<f64>, u64), CalibrateError> {
    if let Err(source) = sys::set_affinity(&[cpu]) {
        // The other thread would wait for its turn forever.
        word.store(STOP, Ordering::Release);
        sys::futex_wake(word, u32::MAX);
        return Err(CalibrateError::Sys {
            what: "sched_setaffinity",
            source,
        });
    }
    let mut rt = Vec::new();
    let mut wake = Vec::new();
    let mut preempted = 0u64;
    let start = sys::monotonic_ns();
    let mut last_turn: Option<u64> = None;
    loop {
        let mut t = word.load(Ordering::Acquire);
        while t != me && t != STOP {
            sys::futex_wait(word, t);
            t = word.load(Ordering::Acquire);
        }
        if t == STOP {
            break;
        }
        let now = sys::monotonic_ns();
        if me == 0 {
            if let Some(l) = last_turn {
                rt.push((now - l) as f64);
            }
            last_turn = Some(now);
            if now - start >= opts.duration_ns || rt.len() >= opts.max_samples {
                word.store(STOP, Ordering::Release);
                sys::futex_wake(word, u32::MAX);
                break;
            }
        }
        word.store(1 - me, Ordering::Release);
        let t0 = sys::monotonic_ns();
        sys::futex_wake(word, 1);
        let t1 = sys::monotonic_ns();
        // On one CPU, the turn already back means the wakee preempted the waker inside the
        // call and ran its whole turn: the call's time is then not the wake's alone.
        if same_cpu && word.load(Ordering::Acquire) == me {
            preempted += 1;
        } else if wake.len() < opts.max_samples {
            wake.push((t1 - t0) as f64);
        }
    }
    Ok((rt, wake, preempted))
}

/// A futex ping-pong between a thread on `a` and one on `b`; with `busy`, a `SCHED_IDLE`
/// spinner runs on each of the two CPUs meanwhile.
pub fn ping_pong(
    a: u32,
    b: u32,
    busy: bool,
    opts: CalibrateOptions,
) -> Result<PingPong, CalibrateError> {
    let word = AtomicU32::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let spinners: Vec<_> = if busy {
            let mut cpus = vec![a, b];
            cpus.dedup();
            cpus.into_iter()
                .map(|cpu| {
                    let stop = &stop;
                    s.spawn(move || -> Result<(), CalibrateError> {
                        sys::set_affinity(&[cpu]).map_err(|source| CalibrateError::Sys {
                            what: "sched_setaffinity",
                            source,
                        })?;
                        sys::set_sched(Policy::Idle, 0).map_err(|source| CalibrateError::Sys {
                            what: "sched_setscheduler(SCHED_IDLE)",
                            source,
                        })?;
                        while !stop.load(Ordering::Relaxed) {
                            std::hint::spin_loop();
                        }
                        Ok(())
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let w = &word;
        let second = s.spawn(move || player(1, b, a == b, w, opts));
        let first = player(0, a, a == b, w, opts);
        let second = second.join().expect("a ping-pong thread panicked");
        stop.store(true, Ordering::Relaxed);
        for sp in spinners {
            sp.join().expect("a spinner panicked")?;
        }
        let (rt, mut wake, p1) = first?;
        let (_, w2, p2) = second?;
        wake.extend(w2);
        Ok(PingPong {
            cpus: (a, b),
            round_trip_ns: rt,
            wake_syscall_ns: wake,
            wakee_preempted: p1 + p2,
        })
    })
}

/// Overshoots of `clock_nanosleep()` to absolute deadlines 1 ms apart, on CPU `cpu`.
pub fn timer_overshoot(cpu: u32, opts: CalibrateOptions) -> Result<Vec<f64>, CalibrateError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            sys::set_affinity(&[cpu]).map_err(|source| CalibrateError::Sys {
                what: "sched_setaffinity",
                source,
            })?;
            let start = sys::monotonic_ns();
            let mut deadline = start;
            let mut out = Vec::new();
            while deadline - start < opts.duration_ns && out.len() < opts.max_samples {
                deadline += 1_000_000;
                sys::sleep_until_ns(deadline);
                let now = sys::monotonic_ns();
                out.push(now.saturating_sub(deadline) as f64);
                // A late wake-up past the next deadline starts the grid again from now.
                deadline = deadline.max(now);
            }
            Ok(out)
        })
        .join()
        .expect("the timer thread panicked")
    })
}

/// `n` pairs of back-to-back `CLOCK_MONOTONIC` reads.
fn clock_reads(n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let a = sys::monotonic_ns();
            let b = sys::monotonic_ns();
            (b - a) as f64
        })
        .collect()
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// The CPU model of `/proc/cpuinfo` text: the first `model name` (x86), else `cpu model`
/// (MIPS) or `Processor`/`cpu` (older arm, POWER).
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "cpu model", "Processor", "cpu"] {
        let found = cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_owned())
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The cpuidle states of `cpu` with their `usage` counters (`None` where unreadable).
fn idle_states(cpu: u32) -> Vec<(IdleStateRead, Option<u64>)> {
    let mut out = Vec::new();
    for index in 0..CPUIDLE_STATE_MAX {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{index}");
        let Some(name) = read_trim(&format!("{dir}/name")) else {
            break;
        };
        let num = |f: &str| read_trim(&format!("{dir}/{f}")).and_then(|v| v.parse::<u64>().ok());
        out.push((
            IdleStateRead {
                cpu,
                index,
                name,
                latency_us: num("latency").unwrap_or(0),
                residency_us: num("residency").unwrap_or(0),
                entered_during_idle_wake: None,
            },
            num("usage"),
        ));
    }
    out
}

/// Runs every measurement on this machine: the first two CPUs this process may use (one, if
/// that is all it may use).
///
/// # Errors
/// No usable CPU, or a system call failed (affinity, `SCHED_IDLE`).
pub fn calibrate(opts: CalibrateOptions) -> Result<Calibration, CalibrateError> {
    let cpus = sys::affinity().map_err(|source| CalibrateError::Sys {
        what: "sched_getaffinity",
        source,
    })?;
    let (&a, b) = match cpus.as_slice() {
        [] => return Err(CalibrateError::NoCpu),
        [a] => (a, None),
        [a, b, ..] => (a, Some(*b)),
    };
    let mut c = Calibration {
        cpu_model: std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| parse_cpu_model(&t)),
        kernel_release: crate::kernel_release().ok(),
        cpuidle_driver: read_trim("/sys/devices/system/cpu/cpuidle/current_driver"),
        cpuidle_governor: read_trim("/sys/devices/system/cpu/cpuidle/current_governor")
            .or_else(|| read_trim("/sys/devices/system/cpu/cpuidle/current_governor_ro")),
        load_1min_before: crate::load_average_1min().ok(),
        nr_cpus: cpus.len(),
        timer_slack_ns: read_trim("/proc/self/timerslack_ns").and_then(|v| v.parse().ok()),
        clock_read_ns: clock_reads(opts.max_samples.min(10_000)),
        ..Calibration::default()
    };
    c.pinned = ping_pong(a, a, false, opts)?;
    if let Some(b) = b {
        let used = [a, b];
        let before: Vec<_> = used.iter().flat_map(|&cpu| idle_states(cpu)).collect();
        c.cross_idle = Some(ping_pong(a, b, false, opts)?);
        let after: Vec<_> = used.iter().flat_map(|&cpu| idle_states(cpu)).collect();
        c.idle_states = before
            .into_iter()
            .map(|(mut s, u0)| {
                let u1 = after
                    .iter()
                    .find(|(t, _)| t.cpu == s.cpu && t.index == s.index)
                    .and_then(|(_, u)| *u);
                s.entered_during_idle_wake = u0.zip(u1).map(|(x, y)| y.saturating_sub(x));
                s
            })
            .collect();
        c.cross_busy = Some(ping_pong(a, b, true, opts)?);
    } else {
        c.idle_states = idle_states(a).into_iter().map(|(s, _)| s).collect();
    }
    c.timer_overshoot_ns = timer_overshoot(a, opts)?;
    c.load_1min_after = crate::load_average_1min().ok();
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_model_of_cpuinfo() {
        let x86 =
            "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nflags\t: fpu\n";
        assert_eq!(parse_cpu_model(x86).as_deref(), Some("AMD EPYC"));
        let power = "processor\t: 0\ncpu\t\t: POWER8E (raw), altivec supported\n";
        assert_eq!(
            parse_cpu_model(power).as_deref(),
            Some("POWER8E (raw), altivec supported")
        );
        assert_eq!(parse_cpu_model("processor : 0\n"), None);
    }
}
