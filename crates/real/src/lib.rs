//! lbsim's real runner: a workload's task programs executed for real on the host kernel, one
//! OS thread per task, and what the kernel counted for each thread read back.
//!
//! The model crates never do I/O, read the wall clock or spawn threads; this crate does all
//! three, so that `lbsim validate` can put a real run beside a simulated one. The programs are
//! the model's: lbsim-workload's interpreter ([`lbsim_workload::ProgramState`]) turns each
//! task's events into actions exactly as it does for the engine, with the wall clock
//! (`CLOCK_MONOTONIC` since the run's start) as its time; the runner performs each action
//! with the system call it stands for:
//!
//! | action | system call |
//! |---|---|
//! | `run` (work at capacity 1024) | spin until the thread's `CLOCK_THREAD_CPUTIME_ID` has grown by it |
//! | `runtime` (wall time) | spin until `CLOCK_MONOTONIC` has |
//! | `sleep`, `timer` | `clock_nanosleep(CLOCK_MONOTONIC)`, absolute deadlines (a timer's grid) |
//! | `yield` | `sched_yield()` |
//! | `lock`/`unlock`, `wait`/`signal`/`broad`, `barrier`, `sem_wait`/`sem_post` | futex words (glibc's mutex protocol, a sequence word, a generation word, a count) |
//! | `suspend`/`resume` | `futex_wait()`/`futex_wake()` on the task's own word |
//! | `send`/`recv` on a pipe channel | `write()`/`read()` of 4-byte messages on a pipe |
//! | `fork` | a new thread |
//! | affinity, policy, nice | `sched_setaffinity()`, `sched_setscheduler()`, `setpriority()` |
//!
//! Each thread is named after its task (`pthread_setname_np`, cut to 15 bytes). Claims,
//! marks, tallies, probes and wake-up stamps are the interpreter's own bookkeeping, shared
//! under a lock; the ping-pong pair's round trips are therefore measured by the programs
//! themselves, from the waker's stamp to the wakee running.
//!
//! Read back per thread, at its start and its end ([`proc`]): `se.sum_exec_runtime`,
//! `se.nr_migrations`, the voluntary and involuntary switches (`/proc/self/task/TID/sched`,
//! else `status`), the wait time and waits (`schedstat`'s `run_delay` and `pcount`), and
//! `wait_max` where `sched_schedstats` is on. The result is a
//! [`lbsim_workload::RunObservations`], the type the engine fills, so that the same reports
//! and metrics read both; [`RealRun::lacks`] says what this kernel did not show.
//!
//! Left out: socket channels, schbench's and tbench's events (`spawn`, wake lists, random
//! sleeps, `exit_after`, `clear_token`, bare probes) and custom slices are refused before
//! anything starts ([`check::check_spec`]); per-wake-up latencies measured by the kernel
//! (tracing) are not read.

pub mod calibrate;
pub mod check;
pub mod objects;
pub mod proc;
mod runner;
pub mod schedstat;
#[allow(unsafe_code)]
mod sys;

pub use runner::{RealRun, RunOptions, run};

/// Why a real run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RealError {
    /// A task's program has an event the runner does not execute.
    #[error("the real runner does not support event `{event}` (task `{task}`)")]
    Unsupported {
        /// The task (or fork template).
        task: String,
        /// The event, as rt-app names it.
        event: String,
    },
    /// A task is pinned to a CPU this process may not use.
    #[error("task `{task}` is pinned to CPU {cpu}, which this process may not use")]
    NoSuchCpu {
        /// The task.
        task: String,
        /// The CPU.
        cpu: u32,
    },
    /// A system call failed.
    #[error("task `{task}`: {what}: {source}")]
    Sys {
        /// The task.
        task: String,
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A fork failed as rt-app's would.
    #[error("{0}")]
    Fork(#[from] lbsim_workload::ForkError),
}

/// The CPUs this process may run on (`sched_getaffinity()`): the CPUs a real run uses.
///
/// # Errors
/// The system call failed.
pub fn allowed_cpus() -> std::io::Result<Vec<u32>> {
    sys::affinity()
}

/// The running kernel's release (`uname -r`, from `/proc/sys/kernel/osrelease`).
///
/// # Errors
/// The file could not be read.
pub fn kernel_release() -> std::io::Result<String> {
    Ok(std::fs::read_to_string("/proc/sys/kernel/osrelease")?
        .trim()
        .to_owned())
}

/// The first two numbers of a kernel release (`6.18.44-fc` is `(6, 18)`).
pub fn release_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The machine's CPU time from the first line of `/proc/stat` text, in clock ticks:
/// `(busy, total)`, busy being user, nice, system, irq, softirq and steal (the hypervisor
/// running someone else), total adding idle and iowait.
pub fn parse_proc_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    Some((busy, busy + at(3) + at(4)))
}

/// The machine's busy and total CPU time so far, ns (`/proc/stat`), if it can be read.
pub fn machine_cpu_ns() -> Option<(u64, u64)> {
    let t = std::fs::read_to_string("/proc/stat").ok()?;
    let (busy, total) = parse_proc_stat(&t)?;
    let ns = 1_000_000_000 / sys::clock_ticks_per_s();
    Some((busy * ns, total * ns))
}

/// The 1-minute load average of `/proc/loadavg` text.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// This machine's 1-minute load average (`/proc/loadavg`).
///
/// # Errors
/// The file could not be read or parsed.
pub fn load_average_1min() -> std::io::Result<f64> {
    let t = std::fs::read_to_string("/proc/loadavg")?;
    parse_loadavg(&t).ok_or_else(|| std::io::Error::other("/proc/loadavg: no 1-minute load"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_text() {
        assert_eq!(release_version("6.18.44-fc-v1045"), Some((6, 18)));
        assert_eq!(release_version("5.4.0"), Some((5, 4)));
        assert_eq!(release_version("x"), None);
        assert_eq!(parse_loadavg("1.76 1.28 1.36 3/97 31717\n"), Some(1.76));
        assert_eq!(parse_loadavg(""), None);
        let stat = "cpu  10 1 2 100 3 4 5 6 0 0\ncpu0 1 2 3\n";
        assert_eq!(parse_proc_stat(stat), Some((28, 131)));
        assert_eq!(parse_proc_stat("intr 1"), None);
    }
}
