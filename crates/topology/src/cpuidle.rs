//! The idle states a CPU's cpuidle driver exposes (`struct cpuidle_state`, read through
//! `/sys/devices/system/cpu/cpuN/cpuidle/stateM/`), and the tables of the drivers behind the
//! presets.
//!
//! A state has what the kernel's governors read (`exit_latency` and `target_residency`,
//! declared by the driver as worst cases) and what the hardware does, which the kernel never
//! sees: how long the CPU actually takes from the wake-up signal to running again
//! ([`IdleState::exit_ns`]). The two are kept apart because they can be far apart: a Zen 2
//! C2 declared at 400 us measured about 1.2 us.
//!
//! How a wake-up reaches a CPU in a state ([`IdleState::wake_by_store`]): states that wait
//! with `MWAIT` (every intel_idle state, the ACPI FFH C1 of AMD) or that poll keep
//! `TIF_POLLING_NRFLAG` set, so the waker's store to the thread flags wakes the CPU and no
//! IPI is sent (core.c: `set_nr_and_not_polling()`, `set_nr_if_polling()`). HLT, I/O-port
//! states, arm64's WFI and PSCI states and POWER's nap need an IPI.
//!
//! Sources of each table are on the constants below; `../shared/MACHINE-MODEL.md` §1 has the
//! full reasoning. Deliberate simplifications: cluster- and package-level states are entered
//! whenever the CPU asks for them (platform coordination, which enters a cluster state only
//! when the last CPU of the cluster goes idle, is not modelled); entry costs, the cold TLB
//! after `TLB_FLUSHED` states and tick broadcast for `TIMER_STOP` states are not modelled.

use std::fmt;

use crate::spec::SpecError;

/// One idle state (`struct cpuidle_state`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleState {
    /// `name` (sysfs `name`).
    pub name: String,
    /// `exit_latency_ns`: the declared worst-case exit latency the governors and
    /// `idle_get_state()` read.
    pub exit_latency_ns: u64,
    /// `target_residency_ns`: the shortest stay worth the state's entry and exit.
    pub target_residency_ns: u64,
    /// What the hardware takes from the wake-up signal's arrival to executing again, ns
    /// (lbsim's; the kernel does not know it). Defaults to the declared exit latency where no
    /// measurement is known.
    pub exit_ns: u64,
    /// `CPUIDLE_FLAG_POLLING`: the state busy-polls (`poll_idle()`, POWER's snooze).
    pub polling: bool,
    /// `TIF_POLLING_NRFLAG` stays set in the state (polling or MWAIT): a wake-up is a store
    /// the CPU sees, not an IPI.
    pub wake_by_store: bool,
    /// `CPUIDLE_FLAG_TIMER_STOP`: the local timer stops in the state (printed only).
    pub timer_stop: bool,
}

impl IdleState {
    /// The declared exit latency in microseconds, as `struct cpuidle_state::exit_latency`
    /// holds it (what `sched_balance_find_dst_group_cpu()` compares).
    pub fn exit_latency_us(&self) -> u32 {
        u32::try_from(self.exit_latency_ns / 1000).unwrap_or(u32::MAX)
    }
}

/// One CPU's cpuidle driver: its states, shallowest first. Empty: no cpuidle driver (the
/// idle loop's `default_idle_call()`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdleStates {
    /// The table's name (a built-in table's, or `custom`).
    pub name: String,
    /// The states, state 0 first.
    pub states: Vec<IdleState>,
}

/// The largest number of states a driver has (`CPUIDLE_STATE_MAX`).
pub const CPUIDLE_STATE_MAX: usize = 10;

/// The longest declared exit latency or residency a table may give, us (one second: every
/// real driver's is far below; POWER8's FastSleep residency, 300 ms, is the largest here).
pub const MAX_IDLE_US: u64 = 1_000_000;

/// A row of a built-in table: name, declared exit latency (us), target residency (us),
/// measured exit (ns; `None`: the declared latency), polling, wake by store, timer stop.
type Row = (&'static str, u64, u64, Option<u64>, bool, bool, bool);

const POLL: Row = ("POLL", 0, 0, None, true, true, false);

/// `bdw_cstates` and `hsw_cstates` as a server leaves them on: they differ only in C3, which
/// is left out (see [`TABLES`]).
const BDW_HSW: &[Row] = &[
    POLL,
    ("C1", 2, 2, None, false, true, false),
    ("C1E", 10, 20, None, false, true, false),
    ("C6", 133, 400, None, false, true, false),
];

/// A built-in table.
struct Table {
    name: &'static str,
    rows: &'static [Row],
}

/// The built-in tables.
///
/// - `bdw`, `hsw`: intel_idle's `bdw_cstates` / `hsw_cstates` (v6.12 drivers/idle/intel_idle.c,
///   `INTEL_BROADWELL_X` -> `idle_cpu_bdx`, `INTEL_HASWELL_X` -> `idle_cpu_hsx`), reduced to
///   the states a server's CPUID and BIOS `_CST` leave enabled: POLL, C1, C1E, C6 (C7s-C10
///   have no MWAIT sub-state on server parts; C3 is usually absent from `_CST` and then
///   disabled; MACHINE-MODEL.md §1.3). The two differ only in C3, which is left out, so they
///   are the same table here. Exit times: the declared latencies (no measurement of
///   Broadwell-EX wake-up times was found; intel_idle's values were measured by Intel and are
///   taken as the hardware's).
/// - `skx`: intel_idle's `skx_cstates` (Skylake-SP / Cascade Lake), likewise.
/// - `skl`: intel_idle's `skl_cstates` (client Skylake / Kaby Lake; no `use_acpi`, so every
///   state with an MWAIT sub-state is enabled).
/// - `zen2`: acpi_idle with a Zen 2 `_CST` as published on LKML ("Performance regression:
///   thread wakeup time (latency) increased up to 3x", 2021-10-23, Message-ID
///   70998f86-74d7-7ced-867e-f17695bc88e7@gmail.com): POLL, C1 (FFH MWAIT, 1/2 us), C2
///   (I/O port, declared 400/800 us). The same mail measured futex wake to waiter running at
///   1071 ns from POLL, 1155 ns from C1 and 3540 ns from C2 on a 4.0 GHz Threadripper: C1's
///   own exit is the 84 ns difference (100 ns here); C2's 2469 ns difference includes the IPI
///   that a non-MWAIT state needs, which lbsim charges separately (`cost_ipi_ns`, 1500 ns, in
///   place of `cost_poll_wake_ns`, 200 ns), leaving 1169 ns (1200 ns here) for the exit.
///   EPYC firmware of the same generation is assumed to publish the same table.
/// - `hi6220`: the HiKey's PSCI idle states (v6.12 arch/arm64/boot/dts/hisilicon/hi6220.dtsi;
///   the declared exit latency is `wakeup-latency-us` if given, else entry + exit latency, as
///   dt_idle_states.c computes it: the worst case of a wake-up that arrives while the CPU is
///   still entering). The exit time is the DT's `exit-latency-us` (250 us for cpu-sleep, 700
///   us for cluster-sleep), the binding's worst case for leaving a state the CPU is in; WFI is
///   1/1 (cpuidle-psci.c).
/// - `hi3660-a53`, `hi3660-a73`: HiKey960's two clusters (hi3660.dtsi), likewise (exit times
///   650/1600 us and 550/2900 us).
/// - `power8`: cpuidle-powernv with skiboot's POWER8 firmware values (hw/slw-p8.c): snooze
///   (polling), Nap 4/100 us, FastSleep 40/300000 us; winkle is not exposed (above
///   `POWERNV_THRESHOLD_LATENCY_NS`). The driver rounds ns up to us.
/// - `tx2`: ThunderX2 boots ACPI with `_LPI` states whose values are not published; only the
///   architectural WFI state (1/1 us) is given, deeper states are left out rather than
///   invented.
/// - `none`: no cpuidle driver.
const TABLES: &[Table] = &[
    Table {
        name: "bdw",
        rows: BDW_HSW,
    },
    Table {
        name: "hsw",
        rows: BDW_HSW,
    },
    Table {
        name: "skx",
        rows: &[
            POLL,
            ("C1", 2, 2, None, false, true, false),
            ("C1E", 10, 20, None, false, true, false),
            ("C6", 133, 600, None, false, true, false),
        ],
    },
    Table {
        name: "skl",
        rows: &[
            POLL,
            ("C1", 2, 2, None, false, true, false),
            ("C1E", 10, 20, None, false, true, false),
            ("C3", 70, 100, None, false, true, false),
            ("C6", 85, 200, None, false, true, false),
            ("C7s", 124, 800, None, false, true, false),
            ("C8", 200, 800, None, false, true, false),
            ("C9", 480, 5000, None, false, true, false),
            ("C10", 890, 5000, None, false, true, false),
        ],
    },
    Table {
        name: "zen2",
        rows: &[
            POLL,
            ("C1", 1, 2, Some(100), false, true, false),
            ("C2", 400, 800, Some(1200), false, false, false),
        ],
    },
    Table {
        name: "hi6220",
        rows: &[
            ("WFI", 1, 1, None, false, false, false),
            ("cpu-sleep", 950, 1000, Some(250_000), false, false, true),
            (
                "cluster-sleep",
                1500,
                2700,
                Some(700_000),
                false,
                false,
                true,
            ),
        ],
    },
    Table {
        name: "hi3660-a53",
        rows: &[
            ("WFI", 1, 1, None, false, false, false),
            ("cpu-sleep-0", 1050, 1500, Some(650_000), false, false, true),
            (
                "cluster-sleep-0",
                2100,
                3500,
                Some(1_600_000),
                false,
                false,
                true,
            ),
        ],
    },
    Table {
        name: "hi3660-a73",
        rows: &[
            ("WFI", 1, 1, None, false, false, false),
            ("cpu-sleep-1", 950, 1500, Some(550_000), false, false, true),
            (
                "cluster-sleep-1",
                3700,
                3500,
                Some(2_900_000),
                false,
                false,
                true,
            ),
        ],
    },
    Table {
        name: "power8",
        rows: &[
            ("snooze", 0, 0, None, true, true, false),
            ("Nap", 4, 100, None, false, false, false),
            ("FastSleep", 40, 300_000, None, false, false, true),
        ],
    },
    Table {
        name: "tx2",
        rows: &[("WFI", 1, 1, None, false, false, false)],
    },
    Table {
        name: "none",
        rows: &[],
    },
];

fn table_names() -> String {
    TABLES.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
}

impl IdleStates {
    /// A built-in table by name (`bdw`, `zen2`, `hi6220`, ...; `none` for no driver).
    pub fn builtin(name: &str) -> Option<IdleStates> {
        let t = TABLES.iter().find(|t| t.name == name)?;
        Some(IdleStates {
            name: t.name.to_owned(),
            states: t
                .rows
                .iter()
                .map(
                    |&(name, exit_us, residency_us, exit_ns, polling, store, timer_stop)| {
                        IdleState {
                            name: name.to_owned(),
                            exit_latency_ns: exit_us * 1000,
                            target_residency_ns: residency_us * 1000,
                            exit_ns: exit_ns.unwrap_or(exit_us * 1000),
                            polling,
                            wake_by_store: store,
                            timer_stop,
                        }
                    },
                )
                .collect(),
        })
    }

    /// No cpuidle driver.
    pub fn none() -> IdleStates {
        IdleStates::builtin("none").expect("built in")
    }

    /// Whether there is a cpuidle driver (at least one state).
    pub fn has_driver(&self) -> bool {
        !self.states.is_empty()
    }

    /// Parses one table: a built-in name, or a custom table of `/`-separated states
    /// `NAME:EXIT_US:RESIDENCY_US[:OPTION...]`, options `poll` (a polling state),
    /// `store` (wakes by a store, as MWAIT states do), `timer_stop`, `exit_ns=N` (the
    /// measured exit time; default the declared latency).
    ///
    /// # Errors
    /// An unknown name or a malformed, out-of-range or unordered custom table.
    pub fn parse(text: &str) -> Result<IdleStates, SpecError> {
        let text = text.trim();
        if !text.contains(':') {
            return IdleStates::builtin(text).ok_or_else(|| {
                bad(
                    text,
                    &format!(
                        "unknown idle-state table; built-in tables: {}; or a custom table \
                 `NAME:EXIT_US:RESIDENCY_US[:poll][:store][:timer_stop][:exit_ns=N]/...`",
                        table_names()
                    ),
                )
            });
        }
        let mut states = Vec::new();
        for item in text.split('/') {
            let mut fields = item.split(':').map(str::trim);
            let name = fields.next().unwrap_or("");
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(bad(item, "a state needs a name of visible characters"));
            }
            let mut us = |what: &str| -> Result<u64, SpecError> {
                fields
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .filter(|&v| v <= MAX_IDLE_US)
                    .ok_or_else(|| bad(item, &format!("expected {what} in us, 0..={MAX_IDLE_US}")))
            };
            let exit_us = us("the exit latency")?;
            let residency_us = us("the target residency")?;
            let mut s = IdleState {
                name: name.to_owned(),
                exit_latency_ns: exit_us * 1000,
                target_residency_ns: residency_us * 1000,
                exit_ns: exit_us * 1000,
                polling: false,
                wake_by_store: false,
                timer_stop: false,
            };
            for opt in fields {
                match opt {
                    "poll" => {
                        s.polling = true;
                        s.wake_by_store = true;
                    }
                    "store" => s.wake_by_store = true,
                    "timer_stop" => s.timer_stop = true,
                    _ => match opt.strip_prefix("exit_ns=").map(str::parse::<u64>) {
                        Some(Ok(ns)) if ns <= MAX_IDLE_US * 1000 => s.exit_ns = ns,
                        _ => {
                            return Err(bad(
                                item,
                                &format!(
                                    "unknown option `{opt}` (poll, store, timer_stop, exit_ns=N \
                                     with N at most {} ns)",
                                    MAX_IDLE_US * 1000
                                ),
                            ));
                        }
                    },
                }
            }
            states.push(s);
        }
        if states.len() > CPUIDLE_STATE_MAX {
            return Err(bad(
                text,
                &format!("at most {CPUIDLE_STATE_MAX} states (CPUIDLE_STATE_MAX)"),
            ));
        }
        if let Some(i) = states.iter().skip(1).position(|s| s.polling) {
            return Err(bad(
                &states[i + 1].name,
                "only state 0 may be a polling state (cpuidle_poll_state_init())",
            ));
        }
        if let Some(w) = states
            .windows(2)
            .find(|w| w[1].target_residency_ns < w[0].target_residency_ns)
        {
            return Err(bad(
                &w[1].name,
                "states must be listed shallowest first (target residencies not decreasing)",
            ));
        }
        Ok(IdleStates {
            name: "custom".to_owned(),
            states,
        })
    }
}

fn bad(value: &str, reason: &str) -> SpecError {
    SpecError::BadIdleStates {
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

impl fmt::Display for IdleStates {
    /// The text [`IdleStates::parse`] reads back: the built-in name, or the custom table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name != "custom" {
            return f.write_str(&self.name);
        }
        for (i, s) in self.states.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            write!(
                f,
                "{}:{}:{}",
                s.name,
                s.exit_latency_ns / 1000,
                s.target_residency_ns / 1000
            )?;
            if s.polling {
                f.write_str(":poll")?;
            } else if s.wake_by_store {
                f.write_str(":store")?;
            }
            if s.timer_stop {
                f.write_str(":timer_stop")?;
            }
            if s.exit_ns != s.exit_latency_ns {
                write!(f, ":exit_ns={}", s.exit_ns)?;
            }
        }
        Ok(())
    }
}

/// Per-CPU idle-state tables in CPU order, as a spec gives them: one table for every CPU
/// (returned as one run of count 0), or runs `TABLExCOUNT` separated by commas
/// (`hi3660-a53x4,hi3660-a73x4`). A table's own name is tried before the `xCOUNT` reading
/// (`tx2` is a table, not `t` twice).
pub fn parse_per_cpu(text: &str) -> Result<Vec<(IdleStates, usize)>, SpecError> {
    let text = text.trim();
    if text.contains(':') {
        return Ok(vec![(IdleStates::parse(text)?, 0)]);
    }
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if let [one] = items[..]
        && let Some(t) = IdleStates::builtin(one)
    {
        return Ok(vec![(t, 0)]);
    }
    let mut runs = Vec::new();
    for item in items {
        if let Some(t) = IdleStates::builtin(item) {
            runs.push((t, 1));
            continue;
        }
        let (name, count) = match item.rsplit_once('x') {
            Some((n, c)) if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) => {
                let count = c
                    .parse::<usize>()
                    .ok()
                    .filter(|&c| (1..=crate::machine::MAX_CPUS).contains(&c))
                    .ok_or_else(|| bad(item, "a run's count must be 1..=8192"))?;
                (n, count)
            }
            _ => (item, 1),
        };
        runs.push((IdleStates::parse(name)?, count));
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rule: the built-in tables are intel_idle's and the device trees' values, in ns.
    #[test]
    fn builtin_tables_carry_the_drivers_values() {
        let bdw = IdleStates::builtin("bdw").unwrap();
        let names: Vec<&str> = bdw.states.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["POLL", "C1", "C1E", "C6"]);
        let c6 = &bdw.states[3];
        assert_eq!(
            (c6.exit_latency_ns, c6.target_residency_ns),
            (133_000, 400_000)
        );
        assert!(bdw.states[0].polling && c6.wake_by_store && !c6.polling);
        let zen2 = IdleStates::builtin("zen2").unwrap();
        assert_eq!(zen2.states[2].exit_latency_ns, 400_000);
        assert_eq!(zen2.states[2].exit_ns, 1200, "measured, not declared");
        assert!(
            !zen2.states[2].wake_by_store,
            "an I/O-port state needs an IPI"
        );
        let hikey = IdleStates::builtin("hi6220").unwrap();
        assert!(hikey.states.iter().all(|s| !s.wake_by_store), "arm64: IPIs");
        assert_eq!(hikey.states[1].exit_latency_ns, 950_000);
        assert_eq!(hikey.states[1].exit_ns, 250_000, "the DT exit-latency-us");
        assert!(!IdleStates::none().has_driver());
    }

    #[test]
    fn custom_tables_parse_and_print_back() {
        let t = IdleStates::parse("POLL:0:0:poll/C1:2:2:store/C6:133:600:exit_ns=40000").unwrap();
        assert_eq!(t.states.len(), 3);
        assert_eq!(t.states[2].exit_ns, 40_000);
        assert_eq!(IdleStates::parse(&t.to_string()).unwrap(), t);
        for bad in [
            "C1:2",
            "C1:x:2",
            "C1:2:2:fast",
            "C6:133:600/C1:2:2",
            "C1:2:2/POLL:0:0:poll",
            "nosuch",
            "C1:2000000:1",
        ] {
            assert!(IdleStates::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn per_cpu_runs() {
        let r = parse_per_cpu("hi3660-a53x4,hi3660-a73x4").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].0.name.as_str(), r[0].1), ("hi3660-a53", 4));
        let one = parse_per_cpu("bdw").unwrap();
        assert_eq!(one[0].1, 0, "0: every CPU");
        let tx2 = parse_per_cpu("tx2").unwrap();
        assert_eq!(
            (tx2[0].0.name.as_str(), tx2[0].1),
            ("tx2", 0),
            "a name, not t x 2"
        );
        assert_eq!(parse_per_cpu("tx2x4,bdwx4").unwrap()[0].1, 4);
        assert!(parse_per_cpu("bdwx0").is_err());
    }
}
