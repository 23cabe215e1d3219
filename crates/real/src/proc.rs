//! What the kernel counted for one thread: `/proc/self/task/TID/sched` (CONFIG_SCHED_DEBUG),
//! `/proc/self/task/TID/schedstat` (CONFIG_SCHED_INFO) and, as a fallback for the switch
//! counts, `/proc/self/task/TID/status`. Parsing is pure (`parse_*`); [`read`] reads the files
//! and notes what this kernel lacks.

use std::collections::BTreeSet;

/// One thread's counters at one instant; a field is `None` when this kernel does not show it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// `se.sum_exec_runtime`, ns (from `sched`, else schedstat's first field).
    pub sum_exec_runtime_ns: Option<u64>,
    /// `se.nr_migrations`.
    pub nr_migrations: Option<u64>,
    /// `nr_voluntary_switches` (or `voluntary_ctxt_switches` of `status`).
    pub nr_voluntary_switches: Option<u64>,
    /// `nr_involuntary_switches` (or `nonvoluntary_ctxt_switches` of `status`).
    pub nr_involuntary_switches: Option<u64>,
    /// Time runnable but not running, ns: schedstat's `run_delay`, else `sched`'s
    /// `se.statistics.wait_sum` / `wait_sum` (sched_schedstats on).
    pub wait_ns: Option<u64>,
    /// The longest wait, ns (`wait_max`, sched_schedstats on).
    pub wait_max_ns: Option<u64>,
    /// Waits to run (schedstat's third field, `pcount`).
    pub nr_waits: Option<u64>,
}

/// A `sched` value in ms with six decimals (`1234.567890`) as ns, exactly.
fn ms_to_ns(v: &str) -> Option<u64> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    let int: u64 = int.trim().parse().ok()?;
    let mut f = frac.trim().to_owned();
    f.truncate(6);
    while f.len() < 6 {
        f.push('0');
    }
    Some(int * 1_000_000 + f.parse::<u64>().ok()?)
}

/// The value of `key` in `/proc/.../sched` text (`key   :   value` lines).
fn sched_field<'a>(text: &'a str, keys: &[&str]) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        keys.contains(&k.trim()).then(|| v.trim())
    })
}

/// Parses `/proc/PID/task/TID/sched`.
pub fn parse_sched(text: &str) -> Counters {
    let int = |keys: &[&str]| sched_field(text, keys).and_then(|v| v.parse().ok());
    let ms = |keys: &[&str]| sched_field(text, keys).and_then(ms_to_ns);
    Counters {
        sum_exec_runtime_ns: ms(&["se.sum_exec_runtime"]),
        nr_migrations: int(&["se.nr_migrations"]),
        nr_voluntary_switches: int(&["nr_voluntary_switches"]),
        nr_involuntary_switches: int(&["nr_involuntary_switches"]),
        wait_ns: ms(&["se.statistics.wait_sum", "wait_sum"]),
        wait_max_ns: ms(&["se.statistics.wait_max", "wait_max"]),
        nr_waits: None,
    }
}

/// Parses `/proc/PID/task/TID/schedstat`: `run_ns run_delay_ns pcount`.
pub fn parse_schedstat(text: &str) -> Option<(u64, u64, u64)> {
    let mut it = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// Parses the context-switch counts of `/proc/PID/task/TID/status`.
pub fn parse_status(text: &str) -> (Option<u64>, Option<u64>) {
    let f = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim_start_matches(':').trim().parse().ok())
    };
    (
        f("voluntary_ctxt_switches"),
        f("nonvoluntary_ctxt_switches"),
    )
}

/// Reads thread `tid`'s counters, adding to `lacks` one line per thing this kernel does not
/// show.
pub fn read(tid: i32, lacks: &mut BTreeSet<String>) -> Counters {
    let dir = format!("/proc/self/task/{tid}");
    let mut c = match std::fs::read_to_string(format!("{dir}/sched")) {
        Ok(t) => parse_sched(&t),
        Err(_) => {
            lacks.insert(
                "no /proc/TID/sched (CONFIG_SCHED_DEBUG off): no se.nr_migrations; switches from /proc/TID/status"
                    .to_owned(),
            );
            Counters::default()
        }
    };
    match std::fs::read_to_string(format!("{dir}/schedstat"))
        .ok()
        .as_deref()
        .and_then(parse_schedstat)
    {
        Some((run, delay, pcount)) => {
            c.sum_exec_runtime_ns = c.sum_exec_runtime_ns.or(Some(run));
            // run_delay counts every wait, with or without sched_schedstats.
            c.wait_ns = Some(delay);
            c.nr_waits = Some(pcount);
        }
        None => {
            lacks.insert(
                "no /proc/TID/schedstat (CONFIG_SCHED_INFO off): wait time only with sched_schedstats"
                    .to_owned(),
            );
        }
    }
    if c.wait_max_ns.is_none() {
        lacks.insert(
            "sched_schedstats off (/proc/sys/kernel/sched_schedstats): no wait_max".to_owned(),
        );
    }
    if c.nr_voluntary_switches.is_none()
        && let Ok(t) = std::fs::read_to_string(format!("{dir}/status"))
    {
        let (v, i) = parse_status(&t);
        c.nr_voluntary_switches = v;
        c.nr_involuntary_switches = i;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sched_text() {
        let t = "head (31719, #threads: 1)\n---\n\
                 se.sum_exec_runtime                          :           1.137426\n\
                 se.nr_migrations                             :                    3\n\
                 nr_switches                                  :                    5\n\
                 nr_voluntary_switches                        :                    1\n\
                 nr_involuntary_switches                      :                    4\n";
        let c = parse_sched(t);
        assert_eq!(c.sum_exec_runtime_ns, Some(1_137_426));
        assert_eq!(c.nr_migrations, Some(3));
        assert_eq!(c.nr_voluntary_switches, Some(1));
        assert_eq!(c.nr_involuntary_switches, Some(4));
        assert_eq!(c.wait_ns, None);
        let s = "se.statistics.wait_sum : 12.5\nwait_max : 0.000001\n";
        assert_eq!(parse_sched(s).wait_ns, Some(12_500_000));
        assert_eq!(parse_sched(s).wait_max_ns, Some(1));
    }

    #[test]
    fn schedstat_and_status() {
        assert_eq!(parse_schedstat("123 45 6\n"), Some((123, 45, 6)));
        assert_eq!(parse_schedstat("123 x"), None);
        let st = "Name:\tx\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t2\n";
        assert_eq!(parse_status(st), (Some(7), Some(2)));
    }
}
