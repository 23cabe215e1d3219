//! The invariant suites: random machines, workload mixes, affinity masks and feature sets,
//! on a random kernel profile (none, or any of 4.6 to 6.12; built as `lbsim run` builds
//! it, so the 4.x and 5.4 profiles run the pre-v5.5 `lbsim_balance::legacy`),
//! run under the kernel balancer with every invariant check on (`SimConfig::check`, the
//! engine's checks and the balancer's decision record), so a run stops at the first
//! violation.
//!
//! Named invariants (see `lbsim_sim::engine::check` and `lbsim_balance::check`):
//! 1. with LB_UTIL_SKIP_SINGLE, migrate_util never picks a source with nr_running <= 1;
//! 2. no task runs, is placed or is migrated outside its affinity; a task pinned to one CPU
//!    is never migrated;
//! 3. task conservation: every task in exactly one place; each runqueue's nr_running and
//!    load.weight equal what it holds;
//! 4. PELT: per-entity bounds; cfs_rq sums equal their attached entities' within the
//!    kernel's rounding; no sum underflows on detach;
//! 5. with NEWIDLE_BAIL_ON_PENDING, a newly idle pass never pulls onto a CPU that had a
//!    runnable task or a pending wake-up when the pass began;
//! 6. with PREFER_SIBLING_NR_DIFF, prefer_sibling never forces a balance for a task-count
//!    difference of one or less;
//! 7. detach_tasks examines at most loop_max tasks per pass and never empties the source
//!    for an idle destination; the pre-v5.5 find_busiest_queue() picks a CPU of the
//!    busiest group (rules 1, 5 and 6 are about v5.5+ code: see `check_case`);
//! 8. simulated time never goes backwards; a waiting task runs within its bound;
//! 9. determinism: same inputs and seed, same event hash (checks on or off); results
//!    independent of the experiment runner's thread count;
//! 10. the machine model: a CPU inside an idle state runs no task and its `rq->idle_state`
//!     is that state's exit latency; an idle CPU that kept its tick has a tick pending.
//!
//! Random machines carry one of the presets' idle-state tables (or none), so the cpuidle
//! model runs in most cases. A third of the cases run their workloads in a random hierarchy
//! of task groups, half of those with rt-app threads moving between the groups at their
//! phases (rt-app's phase `taskgroup`: `sched_move_task()` of the running task).
//!
//! Each "always" is paired with "sometimes" counters summed over the suite's cases and
//! asserted at the end, so the suite cannot pass without reaching the states the
//! invariants are about.
//!
//! Case counts: `PROPTEST_CASES` (proptest's default config reads it; `cargo xtask verify`
//! sets 64). `LBSIM_FULL_TESTS` (set by `cargo xtask verify --full`) selects larger
//! machines, more tasks and longer runs. A failing case prints the seed and the `lbsim run`
//! command that replays it. The random cases come from a fixed proptest RNG seed unless
//! `PROPTEST_RNG_SEED` sets one; `LBSIM_SUITE_TRACE=1` prints every case with its counters.

use std::cell::RefCell;
use std::fmt;

use lbsim::balancer::{BalancerKind, make_balancer};
use lbsim::scenario::Scenario;
use lbsim_balance::check::CheckCounts;
use lbsim_balance::ctx::Balancer;
use lbsim_balance::lb::{GroupType, MigrationType};
use lbsim_balance::params::LbFeat;
use lbsim_kernel::params::{ParamDef, SchedFeature};
use lbsim_sim::engine::check::EngineCounts;
use lbsim_sim::engine::{RunResult, Sim, SimConfig, SimError};
use lbsim_sim::experiment::{Control, run_seeds};
use lbsim_sim::params::{Settings, behaviour_switches};
use lbsim_sim::profile::{Profile, VERSIONS};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestCaseError, TestRunner};

/// Whether the slow variant runs (`cargo xtask verify --full`).
fn full() -> bool {
    std::env::var_os("LBSIM_FULL_TESTS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The features the suites toggle: every modelled feature of the registry
/// (`lbsim_sim::params::behaviour_switches()`; those declared `not_modelled` are skipped).
fn toggled() -> Vec<&'static ParamDef> {
    behaviour_switches()
}

/// One random scenario: everything `lbsim run` takes.
#[derive(Clone)]
struct Case {
    machine: String,
    workloads: Vec<String>,
    /// Kernel-style feature writes (`NO_X`, `Y`) and tunables (`hz=1000`).
    features: Vec<String>,
    duration_ms: u64,
    seed: u64,
    /// The kernel profile (`--kernel`), if any.
    kernel: Option<&'static str>,
    /// Declared task groups (`--cgroup PATH:weight=W`); the workloads name them.
    cgroups: Vec<(String, u64)>,
}

impl Case {
    /// The `lbsim run` command that replays this case.
    fn command(&self) -> String {
        let mut s = format!("lbsim run --topology '{}'", self.machine);
        for w in &self.workloads {
            s.push_str(&format!(" --workload '{w}'"));
        }
        s.push_str(&format!(
            " --duration {}ms --seed {}",
            self.duration_ms, self.seed
        ));
        if let Some(k) = self.kernel {
            s.push_str(&format!(" --kernel {k}"));
        }
        if !self.features.is_empty() {
            s.push_str(&format!(" --features '{}'", self.features.join(",")));
        }
        for (path, weight) in &self.cgroups {
            s.push_str(&format!(" --cgroup '{path}:weight={weight}'"));
        }
        s.push_str(" --check");
        s
    }

    /// The settings `lbsim run` makes of the case: the profile (or the registry's defaults),
    /// then the features list: `name=value` items set parameters by name, the others are
    /// feature writes.
    fn settings(&self, nr_cpus: u32) -> Settings {
        let mut settings = match self.kernel {
            Some(k) => Settings::for_kernel(nr_cpus, Profile::parse(k).expect("a profile")),
            None => Settings::new(nr_cpus),
        };
        for f in &self.features {
            match f.split_once('=') {
                Some((k, v)) => settings.set(k, v).expect("parameter"),
                None => settings.apply_features(f).expect("feature"),
            }
        }
        settings
    }

    /// The engine configuration `lbsim run` builds of the case (the CLI's own
    /// [`Scenario::build`]: the profile's settings, its `SdParams` such as the 125
    /// `imbalance_pct` before v5.10, and `SimConfig::kernel`), so the replay command replays.
    fn config(&self, check: bool) -> SimConfig {
        let scenario = Scenario {
            topology: self.machine.clone(),
            workloads: self.workloads.clone(),
            features: vec![self.features.join(",")],
            duration_ns: Some(self.duration_ms * 1_000_000),
            kernel: self.kernel.map(str::to_owned),
            cgroups: self.cgroups.clone(),
            ..Scenario::default()
        };
        let mut cfg = scenario.build().expect("a valid case").config;
        cfg.seed = self.seed;
        cfg.check = check;
        cfg
    }

    fn enabled(&self, f: impl SchedFeature) -> bool {
        self.settings(1).features.enabled(f)
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seed {}: {}", self.seed, self.command())
    }
}

/// A random machine spec and its CPU count.
fn machine() -> impl Strategy<Value = (String, u32)> {
    let max_cpus: u32 = if full() { 32 } else { 16 };
    (
        1..=2u32,
        1..=2u32,
        1..=2u32,
        1..=4u32,
        1..=2u32,
        prop_oneof![Just(20u32), Just(21), Just(31)],
        prop_oneof![1 => Just(None), 1 => (1..4u32).prop_map(Some)],
        prop_oneof![
            Just("none"),
            Just("bdw"),
            Just("skl"),
            Just("zen2"),
            Just("hi6220"),
            Just("power8")
        ],
    )
        .prop_filter("2 to max CPUs", move |&(n, l, c, k, t, _, asym, _)| {
            let t = if asym.is_some() { 1 } else { t };
            (2..=max_cpus).contains(&(n * l * c * k * t))
        })
        .prop_map(
            |(nodes, llcs, clusters, cores, threads, distance, asym, idle)| {
                // Asymmetric capacities (big.LITTLE) come without SMT, where siblings would
                // have to share a capacity.
                let threads = if asym.is_some() { 1 } else { threads };
                let nr = nodes * llcs * clusters * cores * threads;
                let mut spec = format!(
                    "nodes={nodes},llcs={llcs},clusters={clusters},cores={cores},threads={threads}"
                );
                if nodes > 1 {
                    spec.push_str(&format!(",distance={distance}"));
                }
                // The upper half of the CPUs is the LITTLE one.
                if let Some(step) = asym
                    && nr > 1
                {
                    let little = nr / 2;
                    let cap = 1024 - 256 * step;
                    spec.push_str(&format!(",capacity=1024x{},{cap}x{little}", nr - little));
                }
                spec.push_str(&format!(",idle_states={idle}"));
                (spec, nr)
            },
        )
}

/// A cpulist of 1..=max distinct CPUs below `nr`.
fn cpulist(nr: u32, max: usize) -> impl Strategy<Value = String> {
    proptest::collection::btree_set(0..nr, 1..=max.min(nr as usize))
        .prop_map(|set| set.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
}

/// One workload for a machine of `nr` CPUs.
fn workload(nr: u32) -> impl Strategy<Value = String> {
    let threads = 1..=nr.min(8) + 2;
    let nice = prop_oneof![3 => Just(0i32), 1 => Just(-5), 1 => Just(5)];
    let busy = (
        threads.clone(),
        nice.clone(),
        proptest::option::weighted(0.3, cpulist(nr, 3)),
    )
        .prop_map(|(t, n, cpus)| {
            let mut s = format!("busy:threads={t}");
            if n != 0 {
                s.push_str(&format!(",nice={n}"));
            }
            if let Some(c) = cpus {
                s.push_str(&format!(",cpus={c}"));
            }
            s
        });
    let periodic = (threads.clone(), 100..4000u64, 1..4u64, nice).prop_map(|(t, run, k, n)| {
        let mut s = format!(
            "periodic:threads={t},run={run}us,period={}us",
            run * k + 500
        );
        if n != 0 {
            s.push_str(&format!(",nice={n}"));
        }
        s
    });
    let pipe = (100..1500u32).prop_map(|l| format!("pipe:loops={l}"));
    let pingpong = (0..nr, 1..nr, 2..60u64, prop_oneof![Just(0u64), Just(40)]).prop_map(
        move |(a, d, work, sleep)| {
            let b = (a + d) % nr;
            format!(
                "pingpong:cpus={},{},work={work}us,sleep={sleep}us",
                a.min(b),
                a.max(b)
            )
        },
    );
    let hogs = (cpulist(nr, 3), 1..=2u32).prop_map(|(c, k)| format!("hogs:cpus={c},per_cpu={k}"));
    let hackbench = (1..=2u32, 1..=3u32, 3..=20u32)
        .prop_map(|(g, f, l)| format!("hackbench:groups={g},fds={f},loops={l}"));
    let schbench = (1..=3u32, 1..5u64, 1..5u64).prop_map(|(t, c, s)| {
        format!("schbench:m=1,t={t},cputime={c}ms,sleeptime={s}ms,runtime=1")
    });
    prop_oneof![
        3 => busy,
        3 => periodic,
        1 => pipe,
        1 => pingpong,
        2 => hogs,
        1 => hackbench,
        1 => schbench,
    ]
}

/// Whether a case with toggle seed `seed` turns feature `name` away from its default: a
/// hash of the two, so that each feature's draw depends on nothing else and a feature added
/// to the registry changes no other feature's draw in any case (FNV-1a).
fn toggle(seed: u64, name: &str) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h >> 63 == 1
}

/// Random feature writes and tunables.
fn features() -> impl Strategy<Value = Vec<String>> {
    (
        any::<u64>(),
        prop_oneof![3 => Just(250u32), 1 => Just(1000)],
        prop_oneof![5 => Just(false), 1 => Just(true)],
        prop_oneof![2 => Just(None), 1 => prop_oneof![Just(20_000u64), Just(150_000)].prop_map(Some)],
        prop_oneof![2 => Just(None), 1 => prop_oneof![Just(0u64), Just(300)].prop_map(Some)],
    )
        .prop_map(|(toggles, hz, cfs, ipi, noise)| {
            let mut out: Vec<String> = toggled()
                .iter()
                .filter(|f| toggle(toggles, f.name))
                .map(|f| {
                    if f.feature().expect("a feature").default {
                        format!("NO_{}", f.name)
                    } else {
                        f.name.to_owned()
                    }
                })
                .collect();
            if hz != 250 {
                out.push(format!("hz={hz}"));
            }
            if cfs {
                out.push("sched_policy=cfs".to_owned());
            }
            // A slow IPI widens the windows in which a CPU has tasks queued but has not
            // scheduled yet; more background wake-ups mean more pinned kernel threads.
            if let Some(ns) = ipi {
                out.push(format!("cost_ipi_ns={ns}"));
            }
            if let Some(hz) = noise {
                out.push(format!("background_wakeups_hz={hz}"));
            }
            out
        })
}

/// The case's kernel profile: none (lbsim's defaults) or any profile lbsim has
/// (`lbsim_sim::profile::VERSIONS`, 4.6 to 6.12), each as likely, so that the pre-v5.5
/// profiles run their own balancer and wake-up path (`lbsim_balance::legacy`) as
/// `lbsim run --kernel 4.6` does.
fn profile() -> impl Strategy<Value = Option<&'static str>> {
    (0..=VERSIONS.len()).prop_map(|i| i.checked_sub(1).map(|i| VERSIONS[i]))
}

fn case() -> impl Strategy<Value = Case> {
    let (max_workloads, durations) = if full() {
        (5, 200..=600u64)
    } else {
        (3, 100..=250u64)
    };
    machine()
        .prop_flat_map(move |(m, nr)| {
            (
                Just(m),
                proptest::collection::vec(workload(nr), 1..=max_workloads),
                features(),
                durations.clone(),
                0..10_000u64,
                profile(),
            )
        })
        .prop_map(
            |(machine, workloads, features, duration_ms, seed, kernel)| {
                // A profile refuses to switch on a kernel feature its release lacks: such a
                // write is dropped from the case (switching it off is kept).
                let features = match kernel {
                    Some(k) => {
                        let p = Profile::parse(k).expect("a profile");
                        features
                            .into_iter()
                            .filter(|w| {
                                w.contains('=')
                                    || w.starts_with("NO_")
                                    || p.check_feature(w, true).is_ok()
                            })
                            .collect()
                    }
                    None => features,
                };
                let mut case = Case {
                    machine,
                    workloads,
                    features,
                    duration_ms,
                    seed,
                    kernel,
                    cgroups: Vec::new(),
                };
                with_task_groups(&mut case);
                case
            },
        )
}

/// Puts a third of the cases' workloads into a random hierarchy of task groups, drawn from
/// the case's seed (so that the other draws, and with them the cases without groups, stay
/// as they were): two to four groups, siblings under the root, possibly a nested group and
/// then either a group below it (three deep) or a sibling of it, weights 1..10000,
/// each workload in a group or left in the root, where it may be in an autogroup; and in half
/// of them an rt-app workload whose threads move between those groups at their phases
/// ([`mover_file`]). Task groups need the EEVDF pick, so cases on the legacy CFS pick
/// (`sched_policy=cfs`, profiles before 6.6) keep none.
fn with_task_groups(case: &mut Case) {
    let cfs = case.features.iter().any(|f| f == "sched_policy=cfs")
        || case.kernel.is_some_and(|k| {
            Profile::parse(k).expect("a profile").version().0 * 100
                + Profile::parse(k).expect("a profile").version().1
                < 606
        });
    let mut h = case.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x7467;
    let mut next = |n: u64| {
        h ^= h >> 29;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 32;
        h % n
    };
    if cfs || next(3) != 0 {
        return;
    }
    let nested = next(2) == 1;
    let mut paths = vec!["/g0".to_owned(), "/g1".to_owned()];
    if nested {
        paths.push("/g0/sub".to_owned());
        match next(3) {
            1 => paths.push("/g0/sub/leaf".to_owned()),
            2 => paths.push("/g0/sib".to_owned()),
            _ => {}
        }
    } else if next(2) == 1 {
        paths.push("/g2".to_owned());
    }
    for p in &paths {
        let weight = [1, 50, 100, 100, 300, 10_000][next(6) as usize];
        case.cgroups.push((p.clone(), weight));
    }
    let mut in_root = Vec::new();
    for (i, w) in case.workloads.iter_mut().enumerate() {
        let k = next(paths.len() as u64 + 1) as usize;
        match paths.get(k) {
            Some(p) => w.push_str(&format!(",cgroup={p}")),
            None => in_root.push(i),
        }
    }
    // Drawn after the groups, so the draws above are as before: a workload left in the root
    // cgroup is in session 0 (init's: the root group), 1 or 2 (an autogroup each, with
    // sched_autogroup_enabled at its default).
    for i in in_root {
        let session = next(3);
        if session != 0 {
            case.workloads[i].push_str(&format!(",session={session}"));
        }
    }
    // Drawn last, so the draws above are as before: in half the cases with groups, an
    // rt-app workload whose threads move between the groups (and the root cgroup) at its
    // phases (sched_move_task() of the running task).
    if next(2) == 0 {
        let nr_cpus = lbsim_topology::parse_machine(&case.machine)
            .expect("the case's machine")
            .nr_cpus() as u64;
        let file = mover_file(&paths, nr_cpus, &mut next);
        let session = next(3);
        let mut w = format!("rtapp:{}", file.display());
        if session != 0 {
            w.push_str(&format!(",session={session}"));
        }
        case.workloads.push(w);
    }
}

/// Writes an rt-app file of 1 or 2 threads (1 to 3 instances each) looping over 2 to 4
/// phases, each running 50 us to 3 ms and sleeping up to 2 ms, most with a phase-level
/// taskgroup drawn from `paths` and the root cgroup (a phase without one keeps the thread
/// where it is), a third with a phase-level affinity (`cpus`: one CPU or a range of the
/// machine's `nr_cpus`, which moves a thread running elsewhere), into the tests' temporary
/// directory, named by its content so that the case's replay command finds it. Returns its
/// path.
fn mover_file(
    paths: &[String],
    nr_cpus: u64,
    next: &mut impl FnMut(u64) -> u64,
) -> std::path::PathBuf {
    let mut groups: Vec<&str> = paths.iter().map(String::as_str).collect();
    groups.push("/");
    let mut tasks = Vec::new();
    for t in 0..=next(2) {
        let mut phases = Vec::new();
        for ph in 0..2 + next(3) {
            let mut body = format!("\"run\": {}", 50 + next(3000));
            let sleep = next(2001);
            if sleep > 0 {
                body.push_str(&format!(", \"sleep\": {sleep}"));
            }
            if next(4) != 0 {
                let g = groups[next(groups.len() as u64) as usize];
                body.push_str(&format!(", \"taskgroup\": \"{g}\""));
            }
            if next(3) == 0 {
                let first = next(nr_cpus);
                let last = first + next(nr_cpus - first);
                let cpus: Vec<String> = (first..=last).map(|c| c.to_string()).collect();
                body.push_str(&format!(", \"cpus\": [{}]", cpus.join(", ")));
            }
            phases.push(format!("\"p{ph}\": {{{body}}}"));
        }
        tasks.push(format!(
            "\"mover{t}\": {{\"instance\": {}, \"loop\": -1, \"phases\": {{{}}}}}",
            1 + next(3),
            phases.join(", ")
        ));
    }
    let json = format!("{{\"tasks\": {{{}}}}}\n", tasks.join(", "));
    // FNV-1a of the content names the file.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in json.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("invariants");
    std::fs::create_dir_all(&dir).expect("the tests' temporary directory");
    let path = dir.join(format!("mover-{h:016x}.json"));
    std::fs::write(&path, json).expect("a mover file");
    path
}

/// Where failing cases are kept (relative to the package, where `cargo test` runs).
const REGRESSIONS: &str = "proptest-regressions/invariants.txt";

/// The runner: `PROPTEST_CASES` from the environment (proptest's default config), failures
/// persisted under `tests/proptest-regressions/`.
fn runner() -> TestRunner {
    TestRunner::new(config(Config::default().cases))
}

/// The suite's proptest configuration with `cases` cases: failures persisted, and a fixed
/// RNG seed unless `PROPTEST_RNG_SEED` sets one, so that the suite (and its "sometimes"
/// totals) is the same from run to run.
fn config(cases: u32) -> Config {
    let mut c = Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(REGRESSIONS))),
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(SUITE_RNG_SEED);
    }
    c
}

/// The suite's default proptest RNG seed.
const SUITE_RNG_SEED: u64 = 0x6c62_7369_6d08;

/// Runs `case` with the balancer `lbsim run` picks for its profile (`make_balancer`: the
/// pre-v5.5 `LegacyBalancer` for 4.6 to 5.4, else `KernelBalancer`).
fn run(case: &Case, check: bool) -> Result<RunResult, SimError> {
    let cfg = case.config(check);
    let balancer = make_balancer(BalancerKind::Kernel, &cfg);
    Sim::new(cfg, balancer)?.run()
}

/// Sums over the suite's cases of what the checks saw.
#[derive(Default)]
struct Totals {
    cases: u64,
    /// Cases whose workloads run in task groups.
    cases_with_groups: u64,
    /// Cases with a workload in an autogroup (`session=N`).
    cases_with_autogroups: u64,
    /// Cases with a group three deep or two sibling groups below a group.
    cases_with_deep_groups: u64,
    /// Cases with threads that move between groups at their phases (rt-app `taskgroup`).
    cases_with_movers: u64,
    engine: EngineCounts,
    /// The v5.5+ balancer's decision record (cases on no profile or 5.7 to 6.12).
    balancer: CheckCounts,
    /// Cases on a pre-v5.5 profile (4.6 to 5.4: `lbsim_balance::legacy`).
    legacy_cases: u64,
    /// The legacy balancer's decision record, kept apart: it records fewer decisions than
    /// the v5.5+ one and classifies its groups by its own types (see `check_case`).
    legacy: CheckCounts,
    /// Tasks the legacy balancer pulled (schedstat `lb_gained`, over idle types and
    /// domains) and pushed by active balance (`alb_pushed`).
    legacy_gained: u64,
    legacy_pushed: u64,
    /// Cases with the feature on, and the counter of the situation it rules on.
    util_skip_on_util_passes: u64,
    util_skip_off_single: u64,
    bail_on_pending_passes: u64,
    bail_off_pulls: u64,
    nr_diff_on_small: u64,
    nr_diff_off_small_forced: u64,
    /// From /proc/schedstat: `lb_imbalance_*` sums per migration type, `alb_pushed`.
    lb_imbalance: [u64; 4],
    alb_pushed: u64,
}

/// `lb_imbalance_{load,util,task,misfit}` summed over idle types, and `alb_pushed`, from the
/// /proc/schedstat counters (what version 17 prints per migration type).
fn schedstat_sums(s: &lbsim_balance::schedstat::Schedstat) -> ([u64; 4], u64) {
    let mut imb = [0u64; 4];
    for (t, slot) in imb.iter_mut().enumerate() {
        *slot = s.total(|d| d.lb.iter().map(|l| u64::from(l.lb_imbalance[t])).sum());
    }
    (imb, s.total(|d| u64::from(d.alb_pushed)))
}

/// Names the group type of `counts.group_types[i]`.
const GROUP_TYPES: [GroupType; 7] = [
    GroupType::HasSpare,
    GroupType::FullyBusy,
    GroupType::MisfitTask,
    GroupType::SmtBalance,
    GroupType::AsymPacking,
    GroupType::Imbalanced,
    GroupType::Overloaded,
];

/// Whether `case` runs on a pre-v5.5 profile, and so under `lbsim_balance::legacy`.
fn legacy(case: &Case) -> bool {
    case.kernel
        .is_some_and(|k| Profile::parse(k).expect("a profile").pre_rework())
}

/// Runs `case` with every check on and adds what the checks saw to `t`; a broken invariant
/// is an error naming the seed and the command that replays it.
fn check_case(case: &Case, t: &mut Totals) -> Result<(), String> {
    let r = run(case, true).map_err(|e| {
        format!(
            "invariant broken: {e}\n  seed {}; replay with:\n  {}",
            case.seed,
            case.command()
        )
    })?;
    let checks = r.checks.as_ref().expect("check report");
    let b = checks
        .balancer
        .expect("both kernel balancers keep a decision record");
    if std::env::var_os("LBSIM_SUITE_TRACE").is_some() {
        eprintln!("{case:?}\n  engine {:?}\n  balancer {b:?}", checks.engine);
    }
    t.cases += 1;
    t.cases_with_groups += u64::from(!case.cgroups.is_empty());
    t.cases_with_deep_groups += u64::from(
        case.cgroups
            .iter()
            .any(|(p, _)| p == "/g0/sub/leaf" || p == "/g0/sib"),
    );
    t.cases_with_autogroups += u64::from(case.workloads.iter().any(|w| w.contains(",session=")));
    t.cases_with_movers += u64::from(case.workloads.iter().any(|w| w.starts_with("rtapp:")));
    // The engine's invariants (2, 3, 4, 8, 10) hold under either balancer.
    t.engine.add(&checks.engine);
    let (counters, _) = r.schedstat_counters.as_ref().expect("schedstat");
    let (imb, pushed) = schedstat_sums(counters);
    if legacy(case) {
        // The pre-v5.5 balancer checks rule 7 (detach_tasks(), the same in v4.6-v5.4) and
        // its own find_busiest_queue() rule in its decision record. Rules 1, 5 and 6 are
        // about v5.5+ code it does not have: migrate_util (v5.5's migration types), the
        // v6.1 newly idle bail-out (its idle_balance() runs in one step) and the v5.5
        // prefer_sibling decision it does not record; so their counters, the migration
        // types and the v5.5+ group types are summed over the v5.5+ cases only.
        t.legacy_cases += 1;
        t.legacy.add(&b);
        t.legacy_gained += counters.total(|d| d.lb.iter().map(|l| u64::from(l.lb_gained)).sum());
        t.legacy_pushed += pushed;
        return Ok(());
    }
    t.balancer.add(&b);
    if case.enabled(LbFeat::LbUtilSkipSingle) {
        t.util_skip_on_util_passes += b.migrate_util_passes;
    } else {
        t.util_skip_off_single += b.migrate_util_single_source;
    }
    if case.enabled(LbFeat::NewidleBailOnPending) {
        t.bail_on_pending_passes += b.newidle_passes_pending;
    } else {
        t.bail_off_pulls += b.newidle_pulls_despite_pending;
    }
    if case.enabled(LbFeat::PreferSiblingNrDiff) {
        t.nr_diff_on_small += b.prefer_sibling_small_diff;
    } else {
        t.nr_diff_off_small_forced += b.prefer_sibling_small_forced;
    }
    for (a, b) in t.lb_imbalance.iter_mut().zip(imb) {
        *a += b;
    }
    t.alb_pushed += pushed;
    Ok(())
}

/// Cases the random suite found that reach states it draws rarely, run before the random
/// ones so that the "sometimes" totals do not hang on the random draw. Each comment names
/// the state it reaches.
fn anchors() -> Vec<Case> {
    let case = |machine: &str, workloads: &[&str], features: &str, duration_ms, seed| Case {
        machine: machine.to_owned(),
        workloads: workloads.iter().map(|w| (*w).to_owned()).collect(),
        features: features
            .split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect(),
        duration_ms,
        seed,
        kernel: None,
        cgroups: Vec::new(),
    };
    vec![
        // Rule 1, off side: migrate_util picks single-task sources (big.LITTLE NUMA, more
        // periodic tasks than CPUs).
        case(
            "nodes=2,llcs=1,clusters=1,cores=3,threads=1,distance=21,capacity=1024x3,256x3",
            &["periodic:threads=7,run=3997us,period=4497us"],
            "NO_LB_UTIL_SKIP_SINGLE,NO_NEWIDLE_BAIL_ON_PENDING,NO_PREFER_SIBLING_NR_DIFF,\
             LB_TIP_AVG_HIGH,NO_LB_BUSY_INTERVAL_SKEW,NO_RUN_TO_PARITY,NO_DELAY_DEQUEUE,\
             NEXT_BUDDY,NO_SIS_UTIL,NO_WAKEUP_PREEMPTION",
            170,
            4042,
        ),
        // Rule 5, on side: newly idle passes begin with a wake-up pending (hackbench and
        // schbench wake-ups across NUMA nodes, SMT).
        case(
            "nodes=2,llcs=1,clusters=2,cores=2,threads=2,distance=20",
            &[
                "schbench:m=1,t=1,cputime=1ms,sleeptime=3ms,runtime=1",
                "busy:threads=9,cpus=7",
                "hackbench:groups=1,fds=3,loops=12",
            ],
            "NO_LB_UTIL_SKIP_SINGLE,LB_TIP_AVG_HIGH,NO_LB_BUSY_INTERVAL_SKEW,NO_PLACE_LAG,\
             NO_PLACE_DEADLINE_INITIAL,NO_DELAY_DEQUEUE,NO_SIS_UTIL,hz=1000",
            158,
            4117,
        ),
        case(
            "nodes=2,llcs=1,clusters=2,cores=2,threads=1,distance=31,capacity=1024x4,512x4",
            &[
                "hackbench:groups=2,fds=1,loops=20",
                "schbench:m=1,t=1,cputime=4ms,sleeptime=2ms,runtime=1",
                "hogs:cpus=0,per_cpu=2",
            ],
            "NO_PLACE_DEADLINE_INITIAL,NEXT_BUDDY,NO_CACHE_HOT_BUDDY,NO_SIS_UTIL,\
             NO_WAKEUP_PREEMPTION",
            217,
            3671,
        ),
        // Rule 5, both sides: hackbench wake-ups across NUMA nodes while periodic tasks
        // overload some CPUs: newly idle passes begin with a wake-up pending and, without
        // the rule, one pulls anyway. Two machines, each reaching it at every seed tried (1
        // to 4), found by a search over machines, workloads and seeds: the random draw
        // reaches it only at 256 cases, and a single anchor is fragile to model changes.
        case(
            "nodes=2,cores=3,threads=2",
            &[
                "hackbench:groups=2,fds=3,loops=30",
                "periodic:threads=6,run=2ms,period=3ms",
            ],
            "",
            150,
            1,
        ),
        case(
            "nodes=2,cores=3,threads=2",
            &[
                "hackbench:groups=2,fds=3,loops=30",
                "periodic:threads=6,run=2ms,period=3ms",
            ],
            "NO_NEWIDLE_BAIL_ON_PENDING",
            150,
            1,
        ),
        case(
            "nodes=2,cores=4,threads=2",
            &[
                "hackbench:groups=3,fds=2,loops=30",
                "periodic:threads=8,run=1ms,period=2ms",
            ],
            "NO_NEWIDLE_BAIL_ON_PENDING",
            150,
            1,
        ),
        // Rule 7: an idle destination meets a source with queued tasks and nothing running,
        // and leaves it one (two CPUs of different capacity, schbench, no wake lists).
        case(
            "nodes=1,llcs=1,clusters=1,cores=2,threads=1,capacity=1024x1,512x1",
            &["schbench:m=1,t=2,cputime=1ms,sleeptime=4ms,runtime=1"],
            "NO_LB_UTIL_SKIP_SINGLE,NO_NEWIDLE_BAIL_ON_PENDING,NO_PREFER_SIBLING_NR_DIFF,\
             LB_TIP_AVG_HIGH,IDLE_RESERVE,NO_LB_BUSY_INTERVAL_SKEW,NO_RUN_TO_PARITY,\
             NO_CACHE_HOT_BUDDY,NO_TTWU_QUEUE,background_wakeups_hz=300",
            208,
            8663,
        ),
        // Misfit tasks, migrate_misfit and active balance (big.LITTLE clusters, legacy CFS).
        case(
            "nodes=1,llcs=1,clusters=2,cores=3,threads=1,capacity=1024x3,512x3",
            &[
                "periodic:threads=5,run=1420us,period=1920us",
                "pingpong:cpus=0,2,work=25us,sleep=40us",
            ],
            "NO_LB_UTIL_SKIP_SINGLE,NO_LB_RELAX_BY_FAILED,NO_LB_BUSY_INTERVAL_SKEW,NO_PLACE_LAG,\
             NO_DELAY_DEQUEUE,hz=1000,sched_policy=cfs",
            170,
            8867,
        ),
        // Invariant 4 under the kernel's 32-bit max_t(): nice -20 tasks and a fork burst
        // take a cfs_rq's load_sum past u32::MAX at a dequeue, which cuts 2^32 from it.
        case(
            "nodes=2,llcs=2,cores=2,threads=2,distance=12",
            &[
                "busy:threads=4,nice=-20",
                "hackbench:groups=1,fds=25,mode=thread,ipc=socket",
            ],
            "",
            19,
            2_759_628_177,
        ),
        // Invariants 4 and 8 with newly idle balances lasting 100 ms a migration: the
        // previous task stays cfs_rq->curr all that time, which counts as running for the
        // cfs_rq, and a pulled task waits for the pass.
        case(
            "nodes=2,cores=3,threads=2",
            &[
                "hackbench:groups=2,fds=3,loops=30",
                "periodic:threads=6,run=2ms,period=3ms",
            ],
            "cost_lb_migrate_ns=100000000",
            150,
            1,
        ),
        // Rule 6, on side: prefer_sibling between NUMA nodes with a difference of one task.
        case(
            "nodes=2,llcs=2,clusters=1,cores=3,threads=1,distance=20",
            &[
                "pipe:loops=749",
                "pingpong:cpus=0,4,work=16us,sleep=0us",
                "hogs:cpus=11,per_cpu=2",
            ],
            "NO_LB_RELAX_BY_FAILED,LB_TIP_AVG_HIGH,NO_LB_BUSY_INTERVAL_SKEW,NO_CACHE_HOT_BUDDY,\
             NO_SIS_UTIL",
            247,
            1124,
        ),
    ]
}

#[test]
fn invariants_hold_over_random_machines_workloads_affinities_and_features() {
    let totals = RefCell::new(Totals::default());
    for case in anchors() {
        if let Err(e) = check_case(&case, &mut totals.borrow_mut()) {
            panic!("anchor case failed: {e}");
        }
    }
    let result = runner().run(&case(), |case| {
        check_case(&case, &mut totals.borrow_mut()).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let t = totals.into_inner();
    let (e, b) = (&t.engine, &t.balancer);
    eprintln!(
        "invariant suite: {} cases; engine {e:?}; balancer {b:?}; schedstat lb_imbalance {:?}, \
         alb_pushed {}; {} cases on pre-v5.5 profiles: legacy balancer {:?}, lb_gained {}, \
         alb_pushed {}",
        t.cases,
        t.lb_imbalance,
        t.alb_pushed,
        t.legacy_cases,
        t.legacy,
        t.legacy_gained,
        t.legacy_pushed
    );
    // The "sometimes" side, over the whole suite. With few cases (a PROPTEST_CASES below
    // the default used by `cargo xtask verify`) some states may not be reached; the
    // assertions apply from 32 cases on.
    if t.cases < 32 {
        return;
    }
    let sometimes = [
        // 1: migrate_util balances happen with the rule on; without it a single-task
        // source does get picked (so the rule is not vacuous).
        (
            "migrate_util balances (LB_UTIL_SKIP_SINGLE on)",
            t.util_skip_on_util_passes,
        ),
        (
            "single-task migrate_util sources (LB_UTIL_SKIP_SINGLE off)",
            t.util_skip_off_single,
        ),
        // 2: tasks are pinned, and balancing meets them.
        ("pinned tasks waiting on their CPU", e.pinned_waiting),
        ("balance passes that met a pinned task", b.some_pinned),
        ("balance passes that found every task pinned", b.all_pinned),
        // 3: every kind of place is visited.
        ("tasks on a wake list", e.on_wakelist),
        (
            "sleeping tasks still queued (delayed dequeue)",
            e.delayed_dequeue,
        ),
        (
            "newly idle balances holding the previous task",
            e.newidle_prev,
        ),
        // 10: CPUs sit in idle states, leave them, and keep their tick on short idles.
        ("CPUs in a non-polling idle state", e.in_idle_state),
        ("CPUs leaving an idle state", e.idle_exiting),
        ("idle CPUs that kept their tick", e.idle_tick_kept),
        // 4: PELT sums are compared, and entities leave cfs_rqs.
        ("cfs_rq sums compared", e.pelt_sums_checked),
        ("entities detached or removed", e.pelt_departures),
        (
            "cfs_rq sums cut by the kernel's 32-bit max_t()",
            e.pelt_u32_cuts,
        ),
        (
            "cfs_rq sums raised by the kernel's max_t() floor",
            e.pelt_floor_raises,
        ),
        (
            "cfs_rq updates with a dequeued curr (newly idle balances)",
            e.pelt_dequeued_curr,
        ),
        // Task groups: group cfs_rqs and queued group entities are checked, and delayed
        // dequeues happen below group entities (the runnable_sum allowance).
        ("group cfs_rq sums compared", e.pelt_group_sums_checked),
        (
            "cfs_rq sums compared with a queued group entity",
            e.pelt_group_entity_sums_checked,
        ),
        (
            "cfs_rq runnable_sums allowed delayed-dequeue walks (task groups)",
            e.pelt_runnable_stale,
        ),
        // 5: CPUs go newly idle with wake-ups pending.
        (
            "newly idle passes begun with work pending (rule on)",
            t.bail_on_pending_passes,
        ),
        (
            "newly idle pulls despite work pending (rule off)",
            t.bail_off_pulls,
        ),
        // 6: the prefer-sibling difference of one arises with the rule on.
        (
            "prefer_sibling differences of one (rule on)",
            t.nr_diff_on_small,
        ),
        // 7: detach_tasks reaches loop_max and keeps a source's last task.
        ("detach passes at loop_max", b.detach_at_loop_max),
        (
            "idle-destination detaches that left the source its last task",
            b.detach_kept_last,
        ),
        // Task groups: some cases run their workloads in a random hierarchy.
        ("cases with task groups", t.cases_with_groups),
        // Tasks move between groups (sched_move_task() of the running task, at rt-app
        // phases), under every check: the group cfs_rqs' counts, weights and shares, and
        // their PELT sums with the move's detach and attach.
        (
            "cases with threads moving between groups",
            t.cases_with_movers,
        ),
        ("moves of a running task between groups", e.tg_moves_running),
        ("cases with autogroups", t.cases_with_autogroups),
        (
            "cases with a group three deep or sibling groups below a group",
            t.cases_with_deep_groups,
        ),
        // 8: tasks wait and then run.
        ("waits that ended in a run", e.waits),
        // Active balance happens.
        ("active balances requested", b.active_balance_requests),
        (
            "active balances that pushed a task (schedstat alb_pushed)",
            t.alb_pushed,
        ),
        // The pre-v5.5 balancer (profiles 4.6 to 5.4) runs, balances and migrates, and
        // its detach_tasks() meets rule 7's states.
        ("cases on a pre-v5.5 profile", t.legacy_cases),
        ("legacy load_balance() passes", t.legacy.lb_passes),
        (
            "tasks the legacy balancer pulled (schedstat lb_gained)",
            t.legacy_gained,
        ),
        (
            "legacy find_busiest_queue() picks (rule checked)",
            t.legacy.legacy_busiest_queues,
        ),
        ("legacy detach_tasks() calls", t.legacy.detach_calls),
        (
            "legacy balance passes that met a pinned task",
            t.legacy.some_pinned,
        ),
    ];
    let missing: Vec<&str> = sometimes
        .iter()
        .filter(|(_, n)| *n == 0)
        .map(|(s, _)| *s)
        .collect();
    assert!(
        missing.is_empty(),
        "never reached over {} cases: {missing:?}",
        t.cases
    );
    // Every migration type occurs (schedstat's lb_imbalance columns, and the decision
    // record's count of passes that found a busiest queue of that type).
    for mt in MigrationType::ALL {
        assert!(
            t.lb_imbalance[mt.index()] > 0 && b.migration_types[mt.index()] > 0,
            "{} never occurred over {} cases (schedstat {:?}, passes {:?})",
            mt.name(),
            t.cases,
            t.lb_imbalance,
            b.migration_types
        );
    }
    // Every group type occurs, except group_asym_packing: lbsim's topology never builds
    // SD_ASYM_PACKING (see lbsim-balance's crate docs), so no group can be classified so.
    for (i, gt) in GROUP_TYPES.iter().enumerate() {
        if *gt == GroupType::AsymPacking {
            assert_eq!(b.group_types[i], 0, "asym packing without SD_ASYM_PACKING");
            continue;
        }
        assert!(
            b.group_types[i] > 0,
            "{} never classified over {} cases: {:?}",
            gt.name(),
            t.cases,
            b.group_types
        );
    }
}

#[test]
fn runs_are_deterministic_and_checks_do_not_change_them() {
    // Invariant 9: the same configuration and seed give the same event stream, with the
    // checks on or off (they only read the model).
    let mut runner = TestRunner::new(config(Config::default().cases.div_ceil(8).max(2)));
    let result = runner.run(&case(), |case| {
        let fail = |what: String| {
            TestCaseError::fail(format!(
                "{what}\n  seed {}; replay with:\n  {}",
                case.seed,
                case.command()
            ))
        };
        let a = run(&case, true).map_err(|e| fail(format!("invariant broken: {e}")))?;
        let b = run(&case, true).map_err(|e| fail(format!("invariant broken: {e}")))?;
        let c = run(&case, false).map_err(|e| fail(format!("run failed: {e}")))?;
        if a.event_hash != b.event_hash || a.tasks != b.tasks || a.cpus != b.cpus {
            return Err(fail(format!(
                "two runs differ: event hash {:#x} vs {:#x}",
                a.event_hash, b.event_hash
            )));
        }
        if a.event_hash != c.event_hash
            || a.tasks != c.tasks
            || a.schedstat_counters != c.schedstat_counters
        {
            return Err(fail(format!(
                "the checks changed the run: event hash {:#x} with, {:#x} without",
                a.event_hash, c.event_hash
            )));
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn experiment_results_do_not_depend_on_the_thread_count() {
    // Invariant 9: run_seeds hands runs to worker threads; outputs land in seed order and
    // equal the single-threaded ones.
    let mut runner = TestRunner::new(config(Config::default().cases.div_ceil(16).max(2)));
    let result = runner.run(&case(), |case| {
        let cfg = case.config(false);
        let seeds = [case.seed, case.seed + 1, case.seed + 2];
        let factory =
            |cfg: &SimConfig| -> Box<dyn Balancer> { make_balancer(BalancerKind::Kernel, cfg) };
        let with = |jobs| {
            run_seeds(
                &cfg,
                &seeds,
                &factory,
                &Control {
                    jobs,
                    ..Control::default()
                },
            )
            .map_err(|e| TestCaseError::fail(format!("{e}\n  replay with:\n  {}", case.command())))
        };
        let one = with(1)?;
        let three = with(3)?;
        for (i, (a, b)) in one.iter().zip(&three).enumerate() {
            if a != b {
                let hash =
                    |r: &Option<lbsim_sim::experiment::RunOutput>| r.as_ref().map(|r| r.event_hash);
                return Err(TestCaseError::fail(format!(
                    "seed {}: the run on 1 thread and on 3 differ (event hash {:x?} vs {:x?}); \
                     replay with:\n  {}",
                    seeds[i],
                    hash(a),
                    hash(b),
                    case.command()
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn the_replay_command_names_every_input() {
    let c = Case {
        machine: "nodes=2,llcs=1,clusters=1,cores=2,threads=1,distance=21".to_owned(),
        workloads: vec![
            "busy:threads=3".to_owned(),
            "hogs:cpus=1,per_cpu=1".to_owned(),
        ],
        features: vec!["NO_LB_UTIL_SKIP_SINGLE".to_owned(), "hz=1000".to_owned()],
        duration_ms: 80,
        seed: 42,
        kernel: Some("5.9"),
        cgroups: Vec::new(),
    };
    assert_eq!(
        c.command(),
        "lbsim run --topology 'nodes=2,llcs=1,clusters=1,cores=2,threads=1,distance=21' \
         --workload 'busy:threads=3' --workload 'hogs:cpus=1,per_cpu=1' --duration 80ms \
         --seed 42 --kernel 5.9 --features 'NO_LB_UTIL_SKIP_SINGLE,hz=1000' --check"
    );
    // Task groups are declared by --cgroup and named by the workloads.
    let g = Case {
        workloads: vec!["busy:threads=3,cgroup=/g0".to_owned()],
        kernel: None,
        features: Vec::new(),
        cgroups: vec![("/g0".to_owned(), 300)],
        ..c.clone()
    };
    assert_eq!(
        g.command(),
        "lbsim run --topology 'nodes=2,llcs=1,clusters=1,cores=2,threads=1,distance=21' \
         --workload 'busy:threads=3,cgroup=/g0' --duration 80ms --seed 42 \
         --cgroup '/g0:weight=300' --check"
    );
    let cfg = c.config(true);
    assert!(!cfg.features.enabled(LbFeat::LbUtilSkipSingle));
    assert!(
        !cfg.features.enabled(LbFeat::LbRelaxByFailed),
        "the 5.9 profile"
    );
    assert_eq!(cfg.tunables.hz, 1000);
}
