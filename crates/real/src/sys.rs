//! The system calls the runner makes that std does not wrap, each a thin safe function over
//! `libc`. This is the only module of the crate allowed `unsafe`; every block says why it is
//! sound. Errors are `std::io::Error`s from `errno`.

use std::io;
use std::sync::atomic::AtomicU32;

use lbsim_kernel::Policy;

/// Nanoseconds of `clock`, as `clock_gettime()` reads it.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here always exist on Linux,
    // so the call cannot fail and writes only `ts`.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` in ns.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) in ns: what the kernel charges
/// to `se.sum_exec_runtime`, so spinning until it has grown by `x` does `x` of CPU work.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until `abs_ns`, restarted after a
/// signal; returns at once if `abs_ns` has passed.
pub fn sleep_until_ns(abs_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (abs_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (abs_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: `ts` is a valid timespec; with TIMER_ABSTIME the remaining-time pointer may
        // be null.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            return;
        }
    }
}

/// `futex(FUTEX_WAIT_PRIVATE)`: sleeps while `*word == expected`, until a [`futex_wake`] on
/// it (or a spurious wake-up: callers re-check in a loop).
pub fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` points to a live, aligned u32 for the whole call (the reference outlives
    // it); FUTEX_WAIT only reads it; a null timeout waits without limit.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

/// `futex(FUTEX_WAKE_PRIVATE)`: wakes up to `n` waiters of `word`.
pub fn futex_wake(word: &AtomicU32, n: u32) {
    let n = n.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: as in `futex_wait`; FUTEX_WAKE does not touch the word's value.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        )
    };
}

/// The calling thread's id (`gettid()`), as `/proc/self/task/TID` names it.
pub fn gettid() -> i32 {
    // SAFETY: gettid() has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The CPU the calling thread runs on (`sched_getcpu()`), if the call works.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu() has no arguments; it returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

/// `sched_setaffinity(0, cpus)` for the calling thread; `None` is every CPU the process may
/// use (the affinity it had at start, `allowed`).
pub fn set_affinity(cpus: &[u32]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set (CPU_ZERO).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c as usize >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `c` is below CPU_SETSIZE, checked above, so CPU_SET stays inside `set`.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPUs the calling thread may run on (`sched_getaffinity(0)`).
pub fn affinity() -> io::Result<Vec<u32>> {
    // SAFETY: as in `set_affinity`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below CPU_SETSIZE, so CPU_ISSET reads inside `set`.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .map(|c| c as u32)
        .collect())
}

/// The calling thread's policy (`sched_setscheduler(0, policy)`, priority 0 as the fair
/// class requires) and nice value (`setpriority(PRIO_PROCESS, tid)`: on Linux a thread's nice
/// is per thread).
pub fn set_sched(policy: Policy, nice: i32) -> io::Result<()> {
    let p = match policy {
        Policy::Normal => libc::SCHED_OTHER,
        Policy::Batch => libc::SCHED_BATCH,
        Policy::Idle => libc::SCHED_IDLE,
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, p, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: setpriority takes plain integers; the tid is the calling thread's own.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid() as libc::id_t, nice) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Clock ticks a second of `/proc/stat`'s times (`sysconf(_SC_CLK_TCK)`, `USER_HZ`).
pub fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf takes an integer and returns -1 for an unknown name.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|&t| t > 0).unwrap_or(100)
}
