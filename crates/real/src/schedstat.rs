//! `/proc/schedstat`: its text parsed into counters, and two snapshots diffed into what a run
//! added, per CPU and per domain.
//!
//! Follows kernel/sched/stats.c: show_schedstat() and Documentation/scheduler/sched-stats.rst
//! in the three layouts a kernel since v4.x prints:
//!
//! - a `version N` line and a `timestamp J` line (jiffies);
//! - per CPU a `cpu<N>` line of nine numbers: `yld_count`, a legacy 0, `sched_count`,
//!   `sched_goidle`, `ttwu_count`, `ttwu_local`, `rq_cpu_time` (ns), `run_delay` (ns) and
//!   `pcount`;
//! - under it one `domain<L> <span>` line per sched domain, bottom-up (version 17: `domain<L>
//!   <name> <span>`), the span a `%*pb` cpumask (hex, 32-bit chunks separated by commas),
//!   then for each of the three `enum cpu_idle_type` values the load-balance counters
//!   `lb_count lb_balanced lb_failed lb_imbalance lb_gained lb_hot_gained lb_nobusyq
//!   lb_nobusyg` (version 17: `lb_imbalance` as four columns, `_load _util _task _misfit`),
//!   then `alb_count alb_failed alb_pushed sbe_count sbe_balanced sbe_pushed sbf_count
//!   sbf_balanced sbf_pushed ttwu_wake_remote ttwu_move_affine ttwu_move_balance`.
//!
//! Version 15 (to v6.9) prints the idle types as its enum orders them: `CPU_IDLE`,
//! `CPU_NOT_IDLE`, `CPU_NEWLY_IDLE`; versions 16 (v6.10-v6.13) and 17 (v6.14 on) put the busy
//! type first (`__CPU_NOT_IDLE`, `CPU_IDLE`, `CPU_NEWLY_IDLE`). [`Snapshot`] keeps them in
//! the later order whatever the version ([`IDLE_TYPES`]).
//!
//! The counters are the kernel's `unsigned int` (`rq_cpu_time` and `run_delay` are `u64`,
//! `pcount` an `unsigned long`): a difference is taken modulo the field's width, so a counter
//! that wrapped during the run still diffs right. The counters move only while
//! `kernel.sched_schedstats` is on (schedstat_inc() tests the static key); the file exists
//! with CONFIG_SCHEDSTATS.
//!
//! Deliberately strict: a line with the wrong number of fields for its version, a version
//! other than 15, 16 and 17 (distribution kernels that add columns among them), or two
//! snapshots of different machines are a [`SchedstatError`], never a guess.

use std::fmt;

/// The path of the file.
pub const PATH: &str = "/proc/schedstat";

/// `/proc/sys/kernel/sched_schedstats`: whether the counters move.
pub const ENABLE_PATH: &str = "/proc/sys/kernel/sched_schedstats";

/// The idle types in [`Domain::lb`]'s order (v6.10's `enum cpu_idle_type`).
pub const IDLE_TYPES: [&str; 3] = ["busy", "idle", "newidle"];

/// Why `/proc/schedstat` text could not be read or two snapshots not diffed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchedstatError {
    /// A line is not what its layout says.
    #[error("/proc/schedstat line {line}: {what}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// The `version` line names a layout this parser does not read.
    #[error(
        "/proc/schedstat line 1: version {0}: lbsim reads versions 15, 16 and 17 (kernels v4.x to v6.14+)"
    )]
    Version(u64),
    /// The text ended before a required line.
    #[error("/proc/schedstat: no `{0}` line")]
    Missing(&'static str),
    /// Two snapshots do not describe the same machine in the same layout.
    #[error("/proc/schedstat snapshots differ in {0}: cannot diff them")]
    Mismatch(String),
}

/// The load-balance counters of one domain for one idle type (`sd->lb_*[itype]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbCounts {
    /// `lb_count`: load-balance attempts.
    pub lb_count: u64,
    /// `lb_balanced`: attempts that found the domain balanced.
    pub lb_balanced: u64,
    /// `lb_failed`: attempts that found an imbalance and moved nothing.
    pub lb_failed: u64,
    /// `lb_imbalance`: the imbalance found, summed (version 17: the sum of its four columns,
    /// modulo 2^32 as a version-16 kernel would have printed it).
    pub lb_imbalance: u64,
    /// Version 17's `lb_imbalance_{load,util,task,misfit}`; `None` in versions 15 and 16.
    pub lb_imbalance_by_type: Option<[u64; 4]>,
    /// `lb_gained`: tasks pulled.
    pub lb_gained: u64,
    /// `lb_hot_gained`: tasks pulled although cache hot.
    pub lb_hot_gained: u64,
    /// `lb_nobusyq`: no busiest runqueue.
    pub lb_nobusyq: u64,
    /// `lb_nobusyg`: no busiest group.
    pub lb_nobusyg: u64,
}

/// One `domain<L>` line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Domain {
    /// `L`: the level, 0 at the bottom.
    pub level: u32,
    /// The domain's name (`SMT`, `MC`, `PKG`, `NUMA`, ...), version 17 only.
    pub name: Option<String>,
    /// The span as printed (`%*pb`).
    pub span: String,
    /// Load-balance counters per idle type, in [`IDLE_TYPES`] order.
    pub lb: [LbCounts; 3],
    /// `alb_count`, `alb_failed`, `alb_pushed`: active balancing.
    pub alb_count: u64,
    /// See [`Domain::alb_count`].
    pub alb_failed: u64,
    /// See [`Domain::alb_count`].
    pub alb_pushed: u64,
    /// `sbe_count`, `sbe_balanced`, `sbe_pushed`: exec balancing (0 since v6.6).
    pub sbe: [u64; 3],
    /// `sbf_count`, `sbf_balanced`, `sbf_pushed`: fork balancing (0 since v6.6).
    pub sbf: [u64; 3],
    /// `ttwu_wake_remote`: wake-ups of a task last on another CPU of this domain.
    pub ttwu_wake_remote: u64,
    /// `ttwu_move_affine`: wake-ups wake_affine() moved to the waking CPU.
    pub ttwu_move_affine: u64,
    /// `ttwu_move_balance`: wake-ups that started passive balancing.
    pub ttwu_move_balance: u64,
}

/// One `cpu<N>` line and its domains.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cpu {
    /// `N`.
    pub cpu: u32,
    /// `yld_count`: sched_yield() calls.
    pub yld_count: u64,
    /// `sched_count`: schedule() calls.
    pub sched_count: u64,
    /// `sched_goidle`: schedule() calls that left the CPU idle.
    pub sched_goidle: u64,
    /// `ttwu_count`: try_to_wake_up() calls on this CPU.
    pub ttwu_count: u64,
    /// `ttwu_local`: of which woke a task on this CPU.
    pub ttwu_local: u64,
    /// `rq_cpu_time`: ns tasks ran here.
    pub rq_cpu_time: u64,
    /// `run_delay`: ns tasks waited on this runqueue.
    pub run_delay: u64,
    /// `pcount`: timeslices run here.
    pub pcount: u64,
    /// The domains, bottom-up.
    pub domains: Vec<Domain>,
}

/// The whole file at one instant, or (from [`Snapshot::delta`]) what was added between two.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The `version` line.
    pub version: u32,
    /// The `timestamp` line, jiffies (a delta's: the jiffies elapsed).
    pub timestamp: u64,
    /// The CPUs in the order printed.
    pub cpus: Vec<Cpu>,
}

/// A field's width in the kernel's printf: `%u` (32 bits) or 64 bits.
#[derive(Clone, Copy)]
enum Width {
    U32,
    U64,
}

impl Width {
    fn check(self, v: u64) -> bool {
        matches!(self, Width::U64) || v <= u64::from(u32::MAX)
    }

    fn sub(self, after: u64, before: u64) -> u64 {
        match self {
            Width::U32 => u64::from((after as u32).wrapping_sub(before as u32)),
            Width::U64 => after.wrapping_sub(before),
        }
    }
}

/// The numbers of one line, checked for count and width.
struct Fields<'a> {
    line: usize,
    it: std::str::SplitWhitespace<'a>,
}

impl<'a> Fields<'a> {
    fn err(&self, what: impl fmt::Display) -> SchedstatError {
        SchedstatError::Line {
            line: self.line,
            what: what.to_string(),
        }
    }

    fn word(&mut self, what: &str) -> Result<&'a str, SchedstatError> {
        let line = self.line;
        self.it.next().ok_or_else(|| SchedstatError::Line {
            line,
            what: format!("ends before {what}"),
        })
    }

    fn num(&mut self, what: &str, w: Width) -> Result<u64, SchedstatError> {
        let s = self.word(what)?;
        let v: u64 = s
            .parse()
            .map_err(|_| self.err(format!("{what} `{s}` is not a non-negative integer")))?;
        if !w.check(v) {
            return Err(self.err(format!("{what} {v} does not fit the kernel's unsigned int")));
        }
        Ok(v)
    }

    fn end(&mut self, kind: &str, n: usize) -> Result<(), SchedstatError> {
        match self.it.next() {
            None => Ok(()),
            Some(_) => Err(self.err(format!(
                "more than the {n} counters of a {kind} line of this version"
            ))),
        }
    }
}

/// The index, in [`IDLE_TYPES`] order, of the `i`-th idle type printed by `version`.
fn idle_slot(version: u32, i: usize) -> usize {
    if version == 15 {
        // CPU_IDLE, CPU_NOT_IDLE, CPU_NEWLY_IDLE.
        [1, 0, 2][i]
    } else {
        i
    }
}

/// Checks a `%*pb` cpumask: hex chunks of at most 8 digits separated by commas.
fn valid_span(s: &str) -> bool {
    s.split(',')
        .all(|c| !c.is_empty() && c.len() <= 8 && c.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn parse_domain(
    f: &mut Fields<'_>,
    version: u32,
    level_word: &str,
) -> Result<Domain, SchedstatError> {
    let level: u32 = level_word
        .parse()
        .map_err(|_| f.err(format!("`domain{level_word}`: no level")))?;
    let name = if version >= 17 {
        Some(f.word("the domain's name")?.to_owned())
    } else {
        None
    };
    let span = f.word("the domain's span")?.to_owned();
    if !valid_span(&span) {
        return Err(f.err(format!("span `{span}` is not a cpumask")));
    }
    let mut d = Domain {
        level,
        name,
        span,
        ..Domain::default()
    };
    for i in 0..3 {
        let it = IDLE_TYPES[idle_slot(version, i)];
        let w = Width::U32;
        let mut l = LbCounts {
            lb_count: f.num(&format!("lb_count ({it})"), w)?,
            lb_balanced: f.num(&format!("lb_balanced ({it})"), w)?,
            lb_failed: f.num(&format!("lb_failed ({it})"), w)?,
            ..LbCounts::default()
        };
        if version >= 17 {
            let mut by = [0; 4];
            for (k, kind) in ["load", "util", "task", "misfit"].iter().enumerate() {
                by[k] = f.num(&format!("lb_imbalance_{kind} ({it})"), w)?;
            }
            l.lb_imbalance = by
                .iter()
                .fold(0u32, |a, &x| a.wrapping_add(x as u32))
                .into();
            l.lb_imbalance_by_type = Some(by);
        } else {
            l.lb_imbalance = f.num(&format!("lb_imbalance ({it})"), w)?;
        }
        l.lb_gained = f.num(&format!("lb_gained ({it})"), w)?;
        l.lb_hot_gained = f.num(&format!("lb_hot_gained ({it})"), w)?;
        l.lb_nobusyq = f.num(&format!("lb_nobusyq ({it})"), w)?;
        l.lb_nobusyg = f.num(&format!("lb_nobusyg ({it})"), w)?;
        d.lb[idle_slot(version, i)] = l;
    }
    let w = Width::U32;
    d.alb_count = f.num("alb_count", w)?;
    d.alb_failed = f.num("alb_failed", w)?;
    d.alb_pushed = f.num("alb_pushed", w)?;
    for (k, n) in ["sbe_count", "sbe_balanced", "sbe_pushed"]
        .iter()
        .enumerate()
    {
        d.sbe[k] = f.num(n, w)?;
    }
    for (k, n) in ["sbf_count", "sbf_balanced", "sbf_pushed"]
        .iter()
        .enumerate()
    {
        d.sbf[k] = f.num(n, w)?;
    }
    d.ttwu_wake_remote = f.num("ttwu_wake_remote", w)?;
    d.ttwu_move_affine = f.num("ttwu_move_affine", w)?;
    d.ttwu_move_balance = f.num("ttwu_move_balance", w)?;
    let n = if version >= 17 { 45 } else { 36 };
    f.end("domain", n)?;
    Ok(d)
}

fn parse_cpu(f: &mut Fields<'_>, id_word: &str) -> Result<Cpu, SchedstatError> {
    let cpu: u32 = id_word
        .parse()
        .map_err(|_| f.err(format!("`cpu{id_word}`: no CPU number")))?;
    let w = Width::U32;
    let yld_count = f.num("yld_count", w)?;
    f.num("the legacy 0 column", Width::U64)?;
    let c = Cpu {
        cpu,
        yld_count,
        sched_count: f.num("sched_count", w)?,
        sched_goidle: f.num("sched_goidle", w)?,
        ttwu_count: f.num("ttwu_count", w)?,
        ttwu_local: f.num("ttwu_local", w)?,
        rq_cpu_time: f.num("rq_cpu_time", Width::U64)?,
        run_delay: f.num("run_delay", Width::U64)?,
        pcount: f.num("pcount", Width::U64)?,
        domains: Vec::new(),
    };
    f.end("cpu", 9)?;
    Ok(c)
}

/// Parses the text of `/proc/schedstat`.
pub fn parse(text: &str) -> Result<Snapshot, SchedstatError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty());
    let mut head = |key: &'static str| -> Result<(usize, u64), SchedstatError> {
        let (n, l) = lines.next().ok_or(SchedstatError::Missing(key))?;
        let mut f = Fields {
            line: n,
            it: l.split_whitespace(),
        };
        let w = f.word(key)?;
        if w != key {
            return Err(f.err(format!("expected `{key} N`, found `{w}`")));
        }
        let v = f.num(key, Width::U64)?;
        f.end(key, 1)?;
        Ok((n, v))
    };
    let (_, version) = head("version")?;
    if !(15..=17).contains(&version) {
        return Err(SchedstatError::Version(version));
    }
    let version = version as u32;
    let (_, timestamp) = head("timestamp")?;
    let mut snap = Snapshot {
        version,
        timestamp,
        cpus: Vec::new(),
    };
    for (n, l) in lines {
        let mut f = Fields {
            line: n,
            it: l.split_whitespace(),
        };
        let first = f.word("a tag")?;
        if let Some(id) = first.strip_prefix("cpu") {
            let c = parse_cpu(&mut f, id)?;
            if snap.cpus.iter().any(|o| o.cpu == c.cpu) {
                return Err(f.err(format!("cpu{} appears twice", c.cpu)));
            }
            snap.cpus.push(c);
        } else if let Some(level) = first.strip_prefix("domain") {
            if snap.cpus.is_empty() {
                return Err(f.err("a domain line before any cpu line"));
            }
            let d = parse_domain(&mut f, version, level)?;
            let c = snap.cpus.last_mut().expect("a cpu line was read");
            if d.level as usize != c.domains.len() {
                return Err(f.err(format!(
                    "domain{} of cpu{} after {} domains (levels count up from 0)",
                    d.level,
                    c.cpu,
                    c.domains.len()
                )));
            }
            c.domains.push(d);
        } else {
            return Err(f.err(format!(
                "`{first}`: expected a `cpu<N>` or `domain<N>` line"
            )));
        }
    }
    if snap.cpus.is_empty() {
        return Err(SchedstatError::Missing("cpu<N>"));
    }
    Ok(snap)
}

impl LbCounts {
    fn delta(&self, b: &LbCounts) -> LbCounts {
        let d = |a: u64, b: u64| Width::U32.sub(a, b);
        LbCounts {
            lb_count: d(self.lb_count, b.lb_count),
            lb_balanced: d(self.lb_balanced, b.lb_balanced),
            lb_failed: d(self.lb_failed, b.lb_failed),
            lb_imbalance: d(self.lb_imbalance, b.lb_imbalance),
            lb_imbalance_by_type: self
                .lb_imbalance_by_type
                .zip(b.lb_imbalance_by_type)
                .map(|(x, y)| std::array::from_fn(|k| d(x[k], y[k]))),
            lb_gained: d(self.lb_gained, b.lb_gained),
            lb_hot_gained: d(self.lb_hot_gained, b.lb_hot_gained),
            lb_nobusyq: d(self.lb_nobusyq, b.lb_nobusyq),
            lb_nobusyg: d(self.lb_nobusyg, b.lb_nobusyg),
        }
    }
}

impl Snapshot {
    /// What was added from `before` to `self` (after): every counter's difference, modulo
    /// its width, per CPU and per domain, and the jiffies elapsed as `timestamp`.
    ///
    /// The two must be of one layout and one machine: the same version, CPUs and domains
    /// (level, name and span); otherwise (a CPU hot-plugged, domains rebuilt) an error.
    pub fn delta(&self, before: &Snapshot) -> Result<Snapshot, SchedstatError> {
        if self.version != before.version {
            return Err(SchedstatError::Mismatch(format!(
                "version ({} then {})",
                before.version, self.version
            )));
        }
        if self.cpus.len() != before.cpus.len() {
            return Err(SchedstatError::Mismatch(format!(
                "CPUs ({} then {})",
                before.cpus.len(),
                self.cpus.len()
            )));
        }
        let u32d = |a: u64, b: u64| Width::U32.sub(a, b);
        let u64d = |a: u64, b: u64| Width::U64.sub(a, b);
        let mut cpus = Vec::with_capacity(self.cpus.len());
        for (a, b) in self.cpus.iter().zip(&before.cpus) {
            if a.cpu != b.cpu || a.domains.len() != b.domains.len() {
                return Err(SchedstatError::Mismatch(format!(
                    "cpu{} (cpu{} with {} domains before, cpu{} with {} after)",
                    a.cpu,
                    b.cpu,
                    b.domains.len(),
                    a.cpu,
                    a.domains.len()
                )));
            }
            let mut domains = Vec::with_capacity(a.domains.len());
            for (x, y) in a.domains.iter().zip(&b.domains) {
                if x.span != y.span || x.name != y.name {
                    return Err(SchedstatError::Mismatch(format!(
                        "cpu{} domain{} (span {} then {})",
                        a.cpu, x.level, y.span, x.span
                    )));
                }
                domains.push(Domain {
                    level: x.level,
                    name: x.name.clone(),
                    span: x.span.clone(),
                    lb: std::array::from_fn(|i| x.lb[i].delta(&y.lb[i])),
                    alb_count: u32d(x.alb_count, y.alb_count),
                    alb_failed: u32d(x.alb_failed, y.alb_failed),
                    alb_pushed: u32d(x.alb_pushed, y.alb_pushed),
                    sbe: std::array::from_fn(|k| u32d(x.sbe[k], y.sbe[k])),
                    sbf: std::array::from_fn(|k| u32d(x.sbf[k], y.sbf[k])),
                    ttwu_wake_remote: u32d(x.ttwu_wake_remote, y.ttwu_wake_remote),
                    ttwu_move_affine: u32d(x.ttwu_move_affine, y.ttwu_move_affine),
                    ttwu_move_balance: u32d(x.ttwu_move_balance, y.ttwu_move_balance),
                });
            }
            cpus.push(Cpu {
                cpu: a.cpu,
                yld_count: u32d(a.yld_count, b.yld_count),
                sched_count: u32d(a.sched_count, b.sched_count),
                sched_goidle: u32d(a.sched_goidle, b.sched_goidle),
                ttwu_count: u32d(a.ttwu_count, b.ttwu_count),
                ttwu_local: u32d(a.ttwu_local, b.ttwu_local),
                rq_cpu_time: u64d(a.rq_cpu_time, b.rq_cpu_time),
                run_delay: u64d(a.run_delay, b.run_delay),
                pcount: u64d(a.pcount, b.pcount),
                domains,
            });
        }
        Ok(Snapshot {
            version: self.version,
            timestamp: u64d(self.timestamp, before.timestamp),
            cpus,
        })
    }

    /// Sums of the counters over every CPU, domain and idle type: the machine-wide figures
    /// `lbsim validate` compares, each named as sched-stats.rst names it.
    pub fn totals(&self) -> Vec<(&'static str, u64)> {
        let doms = || self.cpus.iter().flat_map(|c| c.domains.iter());
        let lb = |f: fn(&LbCounts) -> u64| -> u64 { doms().flat_map(|d| d.lb.iter()).map(f).sum() };
        let dom = |f: fn(&Domain) -> u64| -> u64 { doms().map(f).sum() };
        let cpu = |f: fn(&Cpu) -> u64| -> u64 { self.cpus.iter().map(f).sum() };
        vec![
            ("lb_count", lb(|l| l.lb_count)),
            ("lb_balanced", lb(|l| l.lb_balanced)),
            ("lb_failed", lb(|l| l.lb_failed)),
            ("lb_imbalance", lb(|l| l.lb_imbalance)),
            ("lb_gained", lb(|l| l.lb_gained)),
            ("lb_hot_gained", lb(|l| l.lb_hot_gained)),
            ("lb_nobusyq", lb(|l| l.lb_nobusyq)),
            ("lb_nobusyg", lb(|l| l.lb_nobusyg)),
            ("alb_count", dom(|d| d.alb_count)),
            ("alb_failed", dom(|d| d.alb_failed)),
            ("alb_pushed", dom(|d| d.alb_pushed)),
            ("ttwu_count", cpu(|c| c.ttwu_count)),
            ("ttwu_local", cpu(|c| c.ttwu_local)),
            ("ttwu_wake_remote", dom(|d| d.ttwu_wake_remote)),
            ("ttwu_move_affine", dom(|d| d.ttwu_move_affine)),
            ("sched_count", cpu(|c| c.sched_count)),
            ("sched_goidle", cpu(|c| c.sched_goidle)),
        ]
    }
}

/// What this kernel offers of `/proc/schedstat`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// The file reads and parses, and `sched_schedstats` is on (or its switch is absent:
    /// kernels before v4.6 count always): the counters move.
    Counting(Snapshot),
    /// The file parses but `sched_schedstats` is 0: the counters stand still.
    Off,
    /// No file (CONFIG_SCHEDSTATS off, or /proc hides it).
    Absent,
}

/// Reads `/proc/schedstat` now. A file that exists but does not parse is an error.
pub fn read() -> Result<Availability, SchedstatError> {
    let Ok(text) = std::fs::read_to_string(PATH) else {
        return Ok(Availability::Absent);
    };
    let snap = parse(&text)?;
    match std::fs::read_to_string(ENABLE_PATH) {
        Ok(v) if v.trim() == "0" => Ok(Availability::Off),
        _ => Ok(Availability::Counting(snap)),
    }
}

#[cfg(test)]
mod tests;
