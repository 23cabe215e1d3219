//! Random scenarios for the `sim` target and the soak: a machine spec, workloads, sched
//! features, tunables within their registry ranges, a kernel profile, cpuidle on or off.
//!
//! A scenario is drawn from a [`Choices`] source: the fuzzer's bytes ([`Bytes`]) or a seeded
//! generator ([`crate::driver::rng::Rng`]), so the same bytes or seed give the same scenario.

use lbsim_kernel::params::Kind;
use lbsim_sim::params::REGISTRY;
use lbsim_sim::profile::VERSIONS;
use lbsim_topology::{parse_machine, presets};

/// A source of choices.
pub trait Choices {
    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64;

    /// One of `items`.
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

/// Choices read from bytes, one or four at a time; zeros once they run out.
#[derive(Debug)]
pub struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    /// Choices from `data`.
    pub fn new(data: &'a [u8]) -> Bytes<'a> {
        Bytes { data, pos: 0 }
    }

    fn byte(&mut self) -> u64 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        u64::from(b)
    }
}

impl Choices for Bytes<'_> {
    fn below(&mut self, n: u64) -> u64 {
        let v = if n <= 256 {
            self.byte()
        } else {
            (0..4).fold(0, |acc, _| (acc << 8) | self.byte())
        };
        v % n.max(1)
    }
}

/// How big a drawn scenario may be.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Most CPUs of a machine.
    pub max_cpus: u64,
    /// Most threads a workload asks for.
    pub max_threads: u64,
    /// Whether presets may be drawn (only those within `max_cpus` are).
    pub presets: bool,
    /// Shortest and longest simulated duration, ms.
    pub duration_ms: (u64, u64),
}

/// A drawn scenario, as `lbsim run` flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scenario {
    /// `--topology`.
    pub topology: String,
    /// `--workload`, each.
    pub workloads: Vec<String>,
    /// `--features` (one list).
    pub features: String,
    /// `--set`, each.
    pub sets: Vec<String>,
    /// `--kernel`.
    pub kernel: Option<String>,
    /// `--duration`, ms.
    pub duration_ms: u64,
    /// `--seed`.
    pub seed: u64,
}

impl Scenario {
    /// The `lbsim run` arguments that run it under `--check`.
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            "run".to_owned(),
            "--check".to_owned(),
            format!("--topology={}", self.topology),
        ];
        a.extend(self.workloads.iter().map(|w| format!("--workload={w}")));
        if !self.features.is_empty() {
            a.push(format!("--features={}", self.features));
        }
        a.extend(self.sets.iter().map(|s| format!("--set={s}")));
        if let Some(k) = &self.kernel {
            a.push(format!("--kernel={k}"));
        }
        a.push(format!("--duration={}ms", self.duration_ms));
        a.push(format!("--seed={}", self.seed));
        a
    }

    /// The shell command that replays it.
    pub fn command(&self) -> String {
        let quoted: Vec<String> = self.args().iter().map(|a| quote(a)).collect();
        format!("lbsim {}", quoted.join(" "))
    }
}

/// `arg` quoted for a POSIX shell where it needs it.
fn quote(arg: &str) -> String {
    if arg
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_=.,:+".contains(&b))
    {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Draws a scenario within `b`.
pub fn scenario(c: &mut impl Choices, b: &Bounds) -> Scenario {
    let (topology, nr_cpus) = machine(c, b);
    let n_workloads = c.range(1, 2);
    let workloads = (0..n_workloads)
        .map(|_| workload(c, nr_cpus, b.max_threads))
        .collect();
    let (features, sets) = params(c);
    let kernel = match c.below(3) {
        0 => Some((*c.pick(&VERSIONS)).to_owned()),
        _ => None,
    };
    Scenario {
        topology,
        workloads,
        features,
        sets,
        kernel,
        duration_ms: c.range(b.duration_ms.0, b.duration_ms.1),
        seed: c.below(1 << 32),
    }
}

/// A machine spec and its CPU count: a preset, or a `key=value` list.
fn machine(c: &mut impl Choices, b: &Bounds) -> (String, u64) {
    if b.presets && c.below(3) == 0 {
        let fitting: Vec<(&str, u64)> = presets()
            .iter()
            .filter_map(|p| {
                let n = parse_machine(p.name).ok()?.nr_cpus() as u64;
                (n <= b.max_cpus).then_some((p.name, n))
            })
            .collect();
        if !fitting.is_empty() {
            let (name, n) = *c.pick(&fitting);
            return (name.to_owned(), n);
        }
    }
    let nodes = *c.pick(&[1, 1, 2, 4]);
    let llcs = c.range(1, 4);
    let threads = *c.pick(&[1, 1, 2, 4]);
    let mut cores = c.range(1, 16);
    while cores > 1 && nodes * llcs * cores * threads > b.max_cpus {
        cores -= 1;
    }
    let (nodes, llcs) = if nodes * llcs * threads > b.max_cpus {
        (1, 1)
    } else {
        (nodes, llcs)
    };
    let threads = threads.min(b.max_cpus);
    let total = nodes * llcs * cores * threads;
    let mut spec = format!("nodes={nodes},llcs={llcs},cores={cores},threads={threads}");
    if nodes > 1 {
        spec += &format!(",distance={}", c.pick(&[12, 21, 32, 40]));
    }
    if c.below(3) == 0 {
        spec += ",numbering=spread";
    }
    if nodes == 1 && threads == 1 && total > 1 && c.below(3) == 0 {
        let little = c.range(1, total - 1);
        let cap = c.pick(&[160, 462, 512, 800]);
        spec += &format!(",capacity={cap}x{little},1024x{}", total - little);
    }
    if threads > 1 && c.below(2) == 0 {
        spec += &format!(",smt_throughput={}", c.pick(&["1.2", "1.6", "ideal"]));
    }
    (spec, total)
}

/// One `--workload` option for a machine of `nr_cpus` CPUs.
fn workload(c: &mut impl Choices, nr_cpus: u64, max_threads: u64) -> String {
    let threads = 1 + c.below(max_threads);
    let nice = c.below(40) as i64 - 20;
    match c.below(10) {
        0 => format!("busy:threads={threads},nice={nice}"),
        1 => format!(
            "periodic:threads={threads},run={}us,period={}us",
            1 + c.below(4000),
            100 + c.below(20000)
        ),
        2 => format!(
            "hackbench:groups={},fds={},mode={},ipc={}",
            1 + c.below(3),
            1 + c.below(max_threads.div_ceil(2).max(1)),
            ["process", "thread"][c.below(2) as usize],
            ["socket", "pipe"][c.below(2) as usize]
        ),
        3 => format!(
            "schbench:m={},t={},runtime={}",
            1 + c.below(2),
            1 + c.below(max_threads.div_ceil(2).max(1)),
            1 + c.below(2)
        ),
        4 => format!("pipe:loops={}", 1 + c.below(100_000)),
        5 => {
            let last = c.below(nr_cpus);
            format!("hogs:cpus=0-{},per_cpu={}", c.below(last), 1 + c.below(3))
        }
        6 => {
            let a = c.below(nr_cpus);
            let b = c.below(nr_cpus);
            format!("pingpong:cpus={a},{b}")
        }
        7 => format!(
            "sysbench-cpu:threads={threads},requests={}",
            1 + c.below(1000)
        ),
        8 => format!("tbench:clients={}", 1 + c.below(max_threads)),
        _ => format!("ebizzy:threads={threads}"),
    }
}

/// A features list and `--set`s: a few sched features on or off, a few tunables (integers
/// within their range, or one of a choice's names), cpuidle on or off.
fn params(c: &mut impl Choices) -> (String, Vec<String>) {
    let defs: Vec<_> = REGISTRY.iter().collect();
    let features: Vec<_> = defs
        .iter()
        .filter(|d| matches!(d.kind, Kind::Feature(_)))
        .collect();
    let others: Vec<_> = defs
        .iter()
        .filter(|d| !matches!(d.kind, Kind::Feature(_)) && d.name != "nr_cpus")
        .collect();
    let mut list = Vec::new();
    for _ in 0..c.below(4) {
        let f = c.pick(&features);
        let no = if c.below(2) == 0 { "NO_" } else { "" };
        list.push(format!("{no}{}", f.name));
    }
    let mut sets = Vec::new();
    for _ in 0..c.below(4) {
        let d = c.pick(&others);
        let value = match d.kind {
            Kind::Int(i) if !i.allowed.is_empty() => c.pick(i.allowed).to_string(),
            Kind::Int(i) => int_value(c, i.min, i.max).to_string(),
            Kind::Choice(ch) => (*c.pick(ch.values)).to_owned(),
            Kind::Feature(_) => continue,
        };
        sets.push(format!("{}={value}", d.name));
    }
    if c.below(2) == 0 {
        sets.push("cpuidle=off".to_owned());
    }
    (list.join(","), sets)
}

/// A value in `lo..=hi`: an end now and then, else spread evenly over orders of magnitude.
fn int_value(c: &mut impl Choices, lo: u64, hi: u64) -> u64 {
    match c.below(8) {
        0 => lo,
        1 => hi,
        _ => {
            let bits = 64 - (hi - lo).leading_zeros();
            let top = c.below(u64::from(bits) + 1);
            let span = if top >= 64 {
                u64::MAX
            } else {
                (1u64 << top) - 1
            };
            lo + (c.below(span.saturating_add(1).max(1)) & span).min(hi - lo)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `sim` target: a one-CPU machine asked for `below(0)` (a divide by zero).
    #[test]
    fn below_zero_is_zero_and_draws_fit_their_bounds() {
        assert_eq!(Bytes::new(&[7]).below(0), 0);
        for seed in 0..200u8 {
            let data: Vec<u8> = (0..64)
                .map(|i| seed.wrapping_mul(31).wrapping_add(i))
                .collect();
            let s = scenario(&mut Bytes::new(&data), &crate::sim::SIM_BOUNDS);
            let cpus = parse_machine(&s.topology).unwrap().nr_cpus() as u64;
            assert!(cpus <= 16, "{}", s.topology);
            assert!((1..=8).contains(&s.duration_ms));
        }
    }
}
