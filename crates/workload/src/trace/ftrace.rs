//! ftrace text: the kernel's `trace` file (`/sys/kernel/tracing/trace`) and `trace-cmd report`.
//!
//! A line is `COMM-PID [(TGID)] [CPU] [FLAGS] SECS.FRAC: EVENT: BODY` (kernel/trace/
//! trace_output.c `trace_print_context()`, v6.12; `trace-cmd report` prints the same without
//! the flags column unless `-l` is given, and `-t`/`-N` print nanoseconds). Bodies are the
//! events' `TP_printk` text (`include/trace/events/sched.h`, v6.12) or the shorter forms of
//! libtraceevent's sched plugin that `trace-cmd report` uses by default
//! (`prev:pid [prio] S ==> next:pid [prio]`, `comm:pid [prio] CPU:003`). Header lines (`#`),
//! `cpus=N` and blank lines are accepted; events other than the sched ones are counted and
//! skipped, and so are the lines without a `[CPU]` field that follow a skipped event (the
//! rest of a `bprint` whose text holds a newline). A waking printed in interrupt context (flags `h`, `H` or `s` in the third column)
//! has no waking task. lbsim's own `lbsim_charge` (`cpu=N cost=NS what=KIND`, its traces
//! only; `sync=` and `irq=` for a wake-up's) is read too, and so are the CPUs' capacities:
//! LISA's `sched_cpu_capacity` (lbsim's traces write it, one per CPU at the start) and the
//! older `cpu_capacity`.

use super::record::{Ev, LeftAs, Parsed, Record};

/// A line that is not ftrace text: its 1-based number and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line.
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

/// Parses a whole text trace.
///
/// # Errors
/// The first line that is neither a header nor an event line, or a sched event whose fields
/// cannot be read.
pub fn parse(text: &str) -> Result<Parsed, LineError> {
    let mut out = Parsed::default();
    let mut after_skipped = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i as u64 + 1;
        let l = raw.trim_end_matches('\r');
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(n) = t.strip_prefix("cpus=") {
            out.nr_cpus = Some(n.trim().parse().map_err(|_| LineError {
                line,
                message: format!("bad CPU count {n:?}"),
            })?);
            continue;
        }
        if t.starts_with('#') {
            if let Some(p) = t.find("#P:") {
                let n: String = t[p + 3..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                out.nr_cpus = n.parse().ok();
            }
            continue;
        }
        if t.starts_with("version =") || t.starts_with("CPU ") && t.contains("is empty") {
            continue;
        }
        // A line without a [CPU] field right after an event the replay skips continues that
        // event's text (a `bprint` whose format holds a newline).
        if after_skipped && find_cpu(l).is_none() {
            continue;
        }
        match parse_line(l, line)? {
            Line::Event(r) => {
                out.records.push(r);
                after_skipped = false;
            }
            Line::Capacity { cpu, capacity } => {
                out.capacities.entry(cpu).or_insert(capacity);
                after_skipped = false;
            }
            Line::Other => {
                out.ignored += 1;
                after_skipped = true;
            }
        }
    }
    Ok(out)
}

fn err(line: u64, message: impl Into<String>) -> LineError {
    LineError {
        line,
        message: message.into(),
    }
}

/// The position of the first `[DIGITS]` in `l`, with the CPU number.
fn find_cpu(l: &str) -> Option<(usize, usize, u32)> {
    let b = l.as_bytes();
    let mut i = 0;
    while let Some(o) = l[i..].find('[') {
        let s = i + o;
        let digits = b[s + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 && b.get(s + 1 + digits) == Some(&b']') {
            let cpu = l[s + 1..s + 1 + digits].parse().ok()?;
            return Some((s, s + 2 + digits, cpu));
        }
        i = s + 1;
    }
    None
}

/// A timestamp `SECS.FRAC` in ns (FRAC of 1 to 9 digits).
fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let f: u64 = frac.parse().ok()?;
    let scale = 10u64.pow(9 - frac.len() as u32);
    secs.checked_mul(1_000_000_000)?.checked_add(f * scale)
}

/// What one event line is.
enum Line {
    /// A sched event the replay uses.
    Event(Record),
    /// A CPU's capacity.
    Capacity {
        /// The CPU the event names (its `cpu=` field, not the CPU it fired on).
        cpu: u32,
        /// Its capacity.
        capacity: u64,
    },
    /// Any other event.
    Other,
}

/// A capacity event's CPU and capacity: LISA's `sched_cpu_capacity` (its sched_tp module:
/// `cpu=%d capacity=%lu, capacity_orig=%lu`; the later `lisa__sched_cpu_capacity`:
/// `cpu=%d capacity=%lu[ capacity_orig=%lu capacity_curr=%lu]`), whose `capacity_orig` is
/// the CPU's own (`arch_scale_cpu_capacity()`) and `capacity` what is left to CFS
/// (`rq->cpu_capacity`, less RT and IRQ pressure), so `capacity_orig` is taken where there
/// is one; or the `cpu_capacity` event of older EAS kernels that trappy reads (`state=%lu
/// cpu_id=%lu`, the cpu template of `cpu_frequency`).
fn capacity(name: &str, body: &str, line: u64) -> Result<Option<(u32, u64)>, LineError> {
    let value = |key: &str| {
        body.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim_end_matches(','))
    };
    let get = |key: &str| -> Result<u64, LineError> {
        let v = value(key).ok_or_else(|| err(line, format!("{name} without {key}=")))?;
        num(v, key, line)
    };
    let cpu = |n: u64| {
        u32::try_from(n)
            .ok()
            .filter(|&c| c < super::MAX_TRACE_CPUS)
            .ok_or_else(|| {
                err(
                    line,
                    format!(
                        "{name}: CPU {n} out of range (at most {} CPUs)",
                        super::MAX_TRACE_CPUS
                    ),
                )
            })
    };
    Ok(match name {
        "sched_cpu_capacity" | "lisa__sched_cpu_capacity" => {
            let cap = match value("capacity_orig") {
                Some(v) => num(v, "capacity_orig", line)?,
                None => get("capacity")?,
            };
            Some((cpu(get("cpu")?)?, cap))
        }
        "cpu_capacity" => Some((cpu(get("cpu_id")?)?, get("state")?)),
        _ => None,
    })
}

fn parse_line(l: &str, line: u64) -> Result<Line, LineError> {
    let (cpu_start, cpu_end, cpu) =
        find_cpu(l).ok_or_else(|| err(line, "no [CPU] field: not an ftrace event line"))?;
    // COMM-PID, possibly followed by "(TGID)".
    let mut head = l[..cpu_start].trim_end();
    if head.ends_with(')')
        && let Some(p) = head.rfind('(')
    {
        head = head[..p].trim_end();
    }
    let (_, pid) = head
        .trim_start()
        .rsplit_once('-')
        .ok_or_else(|| err(line, "no COMM-PID before the [CPU] field"))?;
    let pid: u32 = pid
        .trim()
        .parse()
        .map_err(|_| err(line, format!("bad pid {pid:?}")))?;
    // [FLAGS] TIMESTAMP: EVENT: BODY
    let rest = &l[cpu_end..];
    let (pre, after_ts) = rest
        .split_once(": ")
        .ok_or_else(|| err(line, "no 'TIMESTAMP: ' after the [CPU] field"))?;
    let mut toks = pre.split_whitespace().collect::<Vec<_>>();
    let ts = toks
        .pop()
        .and_then(parse_ts)
        .ok_or_else(|| err(line, format!("bad timestamp in {:?}", pre.trim())))?;
    let irq = toks
        .first()
        .is_some_and(|f| matches!(f.as_bytes().get(2), Some(b'h' | b'H' | b's')));
    let (name, body) = match after_ts.split_once(':') {
        Some((n, b)) => (n.trim(), b.trim()),
        None => (after_ts.trim(), ""),
    };
    if let Some((cpu, capacity)) = capacity(name, body, line)? {
        if capacity == 0 || capacity > 1024 {
            return Err(err(
                line,
                format!("{name}: capacity {capacity} is not in 1..=1024"),
            ));
        }
        return Ok(Line::Capacity { cpu, capacity });
    }
    let ev = match name {
        "sched_switch" => switch(body, line)?,
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            let (comm, pid, prio) = wakee(body, line)?;
            if name == "sched_wakeup_new" {
                Ev::WakeupNew { pid, comm, prio }
            } else {
                Ev::Wake {
                    pid,
                    comm,
                    prio,
                    waking: name == "sched_waking",
                }
            }
        }
        "sched_process_fork" => {
            let f = fields(body, &["comm", "pid", "child_comm", "child_pid"], line)?;
            Ev::Fork {
                parent_pid: num(&f[1], "pid", line)?,
                child_comm: f[2].clone(),
                child_pid: num(&f[3], "child_pid", line)?,
            }
        }
        "sched_process_exit" => {
            let f = fields(body, &["comm", "pid"], line)?;
            Ev::Exit {
                pid: num(&f[1], "pid", line)?,
            }
        }
        // lbsim's own event: `cpu=N cost=NS what=KIND[ sync=0|1 irq=0|1]`.
        "lbsim_charge" => {
            let f = fields(body, &["cost", "what"], line)?;
            Ev::Charge {
                cost_ns: num(&f[0], "cost", line)?,
                newidle: f[1] == "newidle",
                sync: body.contains(" sync=1"),
                irq: body.contains(" irq=1"),
            }
        }
        _ => return Ok(Line::Other),
    };
    Ok(Line::Event(Record {
        time_ns: ts,
        cpu,
        common_pid: if irq { None } else { Some(pid) },
        at: line,
        ev,
    }))
}

/// The values of `keys`, given in that order as `key=value` (a value may hold spaces: it
/// ends where the next key starts).
fn fields(body: &str, keys: &[&str], line: u64) -> Result<Vec<String>, LineError> {
    let mut starts = Vec::with_capacity(keys.len());
    let mut from = 0;
    for k in keys {
        let pat = format!("{k}=");
        let mut p = None;
        let mut i = from;
        while let Some(o) = body[i..].find(&pat) {
            let s = i + o;
            if s == 0 || body.as_bytes()[s - 1] == b' ' {
                p = Some(s);
                break;
            }
            i = s + 1;
        }
        let s = p.ok_or_else(|| err(line, format!("no {k}= field")))?;
        starts.push((s, s + pat.len()));
        from = s + pat.len();
    }
    let mut out = Vec::with_capacity(keys.len());
    for (i, &(_, v)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(body.len(), |&(s, _)| s);
        let mut val = body[v..end].trim();
        if let Some(x) = val.strip_suffix("==>") {
            val = x.trim_end();
        }
        // The last key's value is one token (Android adds fields after it).
        if i + 1 == starts.len() {
            val = val.split_whitespace().next().unwrap_or("");
        }
        out.push(val.to_string());
    }
    Ok(out)
}

fn num<T: std::str::FromStr>(v: &str, key: &str, line: u64) -> Result<T, LineError> {
    v.parse().map_err(|_| err(line, format!("bad {key}={v:?}")))
}

/// The state letters of `prev_state` (`S`, `R+`, `D|K`, `X`...).
fn left_as(s: &str, line: u64) -> Result<LeftAs, LineError> {
    let s = s.trim_end_matches('+');
    if s.is_empty() || s == "R" {
        return Ok(LeftAs::Runnable);
    }
    if s.contains('X') || s.contains('Z') {
        return Ok(LeftAs::Dead);
    }
    if s.chars().all(|c| {
        matches!(
            c,
            'S' | 'D' | 'T' | 't' | 'P' | 'I' | 'K' | 'W' | 'N' | 'x' | '|'
        )
    }) {
        return Ok(LeftAs::Blocked);
    }
    // A numeric state (an unresolved print): 0 runnable, anything else blocked.
    match s.parse::<i64>() {
        Ok(0) => Ok(LeftAs::Runnable),
        Ok(v) if v & 0x30 != 0 => Ok(LeftAs::Dead),
        Ok(_) => Ok(LeftAs::Blocked),
        Err(_) => Err(err(line, format!("bad prev_state {s:?}"))),
    }
}

fn switch(body: &str, line: u64) -> Result<Ev, LineError> {
    if body.contains("prev_pid=") || body.contains("prev_comm=") {
        let f = fields(
            body,
            &[
                "prev_comm",
                "prev_pid",
                "prev_prio",
                "prev_state",
                "next_comm",
                "next_pid",
                "next_prio",
            ],
            line,
        )?;
        return Ok(Ev::Switch {
            prev_comm: Some(f[0].clone()),
            prev_pid: Some(num(&f[1], "prev_pid", line)?),
            prev_prio: Some(num(&f[2], "prev_prio", line)?),
            prev_state: left_as(&f[3], line)?,
            next_comm: f[4].clone(),
            next_pid: num(&f[5], "next_pid", line)?,
            next_prio: num(&f[6], "next_prio", line)?,
        });
    }
    // libtraceevent's sched plugin: "prev:pid [prio] STATE ==> next:pid [prio]".
    let (prev, next) = body
        .split_once("==>")
        .ok_or_else(|| err(line, "sched_switch without '==>'"))?;
    let (pc, pp, pr, rest) = plugin_task(prev, line)?;
    let state = rest.split_whitespace().next().unwrap_or("R");
    let (nc, np, nr, _) = plugin_task(next, line)?;
    Ok(Ev::Switch {
        prev_comm: Some(pc),
        prev_pid: Some(pp),
        prev_prio: Some(pr),
        prev_state: left_as(state, line)?,
        next_comm: nc,
        next_pid: np,
        next_prio: nr,
    })
}

/// `comm:pid [prio] REST` of the sched plugin.
fn plugin_task(s: &str, line: u64) -> Result<(String, u32, i32, String), LineError> {
    let s = s.trim();
    let open = s
        .rfind('[')
        .ok_or_else(|| err(line, format!("expected COMM:PID [PRIO] in {s:?}")))?;
    let close = s[open..]
        .find(']')
        .map(|c| open + c)
        .ok_or_else(|| err(line, format!("expected COMM:PID [PRIO] in {s:?}")))?;
    let (comm, pid) = s[..open]
        .trim()
        .rsplit_once(':')
        .ok_or_else(|| err(line, format!("expected COMM:PID in {s:?}")))?;
    Ok((
        comm.to_string(),
        num(pid.trim(), "pid", line)?,
        num(s[open + 1..close].trim(), "prio", line)?,
        s[close + 1..].to_string(),
    ))
}

/// The wakee of a `sched_waking`/`sched_wakeup`/`sched_wakeup_new` body.
fn wakee(body: &str, line: u64) -> Result<(String, u32, i32), LineError> {
    if body.contains("pid=") {
        let f = fields(body, &["comm", "pid", "prio"], line)?;
        return Ok((
            f[0].clone(),
            num(&f[1], "pid", line)?,
            num(&f[2], "prio", line)?,
        ));
    }
    let (c, p, r, _) = plugin_task(body, line)?;
    Ok((c, p, r))
}
