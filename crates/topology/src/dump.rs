//! Text and JSON dumps of a [`Topology`].
//!
//! The text dump shows, per CPU, what `/sys/kernel/debug/sched/domains/cpuN/domainM/`
//! holds (kernel/sched/debug.c: register_sd(); only the files named in
//! [`debugfs_text`]), one `cpuN/domainM/file: value` line each, as
//! `grep . cpu0/domain*/*` prints them, followed by the lines
//! sched_domain_debug() (topology.c, v6.6) prints when it attaches the domains:
//!
//! ```text
//! CPU0 attaching sched-domain(s):
//!  domain-0: span=0-3 level=MC
//!   groups: 0:{ span=0 }, 1:{ span=1 }, 2:{ span=2 }, 3:{ span=3 }
//!   domain-1: span=0-7 level=PKG
//!    groups: 0:{ span=0-3 cap=4096 }, 4:{ span=4-7 cap=4096 }
//! ```
//!
//! (each level is indented one more space, as the kernel's `%*s` does). The number before `:{` is the sgc id; ` mask=` appears on `SD_OVERLAP`
//! domains whose group balance mask differs from the group span; ` cap=`
//! appears when the group capacity is not 1024. The debugfs `flags` file ends
//! with a space after the last name; the dump leaves it out.
//!
//! The JSON dump ([`TopologyDump`]) has one entry per CPU per domain, levels
//! bottom-up, flags in the kernel's definition order and masks as cpulists.

use std::fmt::Write as _;

use crate::cpumask::{CpuId, Cpumask};
use crate::domains::Topology;
use crate::flags::SdFlag;

/// The per-domain debugfs files the text dump shows, in the order it shows them.
/// `groups_flags` (v6.5+) is the local group's flags: the child domain's flags
/// as cpu_attach_domain() left them.
pub const DEBUGFS_FILES: [&str; 8] = [
    "name",
    "flags",
    "groups_flags",
    "imbalance_pct",
    "min_interval",
    "max_interval",
    "busy_factor",
    "cache_nice_tries",
];

/// The text dump of the CPUs in `cpus` (see the module docs).
pub fn debugfs_text(topo: &Topology, cpus: &Cpumask) -> String {
    let mut out = String::new();
    for cpu in cpus.iter().filter(|c| c.index() < topo.nr_cpus()) {
        if !out.is_empty() {
            out.push('\n');
        }
        for sd in topo.domains(cpu) {
            let p = format!("cpu{cpu}/domain{}", sd.level);
            let _ = writeln!(out, "{p}/name: {}", sd.name);
            line(&mut out, &p, "flags", &sd.flags.to_string());
            line(
                &mut out,
                &p,
                "groups_flags",
                &topo.local_group(sd).flags.to_string(),
            );
            let _ = writeln!(out, "{p}/imbalance_pct: {}", sd.imbalance_pct);
            let _ = writeln!(out, "{p}/min_interval: {}", sd.min_interval);
            let _ = writeln!(out, "{p}/max_interval: {}", sd.max_interval);
            let _ = writeln!(out, "{p}/busy_factor: {}", sd.busy_factor);
            let _ = writeln!(out, "{p}/cache_nice_tries: {}", sd.cache_nice_tries);
        }
        sched_domain_debug(topo, cpu, &mut out);
        cpuidle_text(topo, cpu, &mut out);
    }
    out
}

/// The CPU's idle states as sysfs shows them (`/sys/devices/system/cpu/cpuN/cpuidle/stateM/`
/// `name`, `latency` and `residency`, in us), with lbsim's measured exit time
/// (`lbsim_exit_ns`, which the kernel does not have) and the flags that matter to the model.
pub fn cpuidle_text(topo: &Topology, cpu: CpuId, out: &mut String) {
    let table = topo.machine().idle_states(cpu);
    if !table.has_driver() {
        let _ = writeln!(out, "cpu{cpu}/cpuidle: no cpuidle driver");
        return;
    }
    for (i, s) in table.states.iter().enumerate() {
        let p = format!("cpu{cpu}/cpuidle/state{i}");
        let _ = writeln!(out, "{p}/name: {}", s.name);
        let _ = writeln!(out, "{p}/latency: {}", s.exit_latency_ns / 1000);
        let _ = writeln!(out, "{p}/residency: {}", s.target_residency_ns / 1000);
        let _ = writeln!(out, "{p}/lbsim_exit_ns: {}", s.exit_ns);
        let mut flags = Vec::new();
        if s.polling {
            flags.push("POLLING");
        }
        if s.timer_stop {
            flags.push("TIMER_STOP");
        }
        if s.wake_by_store {
            flags.push("wake_by_store");
        }
        line(out, &p, "lbsim_flags", &flags.join(" "));
    }
}

/// `prefix/file: value`, without a trailing space when the value is empty.
fn line(out: &mut String, prefix: &str, file: &str, value: &str) {
    let _ = write!(out, "{prefix}/{file}:");
    if !value.is_empty() {
        out.push(' ');
        out.push_str(value);
    }
    out.push('\n');
}

/// Follows topology.c: sched_domain_debug() and sched_domain_debug_one() (v6.6),
/// the lines without the error checks (a built topology passes them).
pub fn sched_domain_debug(topo: &Topology, cpu: CpuId, out: &mut String) {
    let sds = topo.domains(cpu);
    if sds.is_empty() {
        let _ = writeln!(out, "CPU{cpu} attaching NULL sched-domain.");
        return;
    }
    let _ = writeln!(out, "CPU{cpu} attaching sched-domain(s):");
    for sd in sds {
        let level = sd.level;
        let _ = writeln!(
            out,
            "{:level$} domain-{level}: span={} level={}",
            "",
            topo.span(sd.span),
            sd.name
        );
        let _ = write!(out, "{:w$} groups:", "", w = level + 1);
        let n = sd.nr_groups();
        for (k, g) in topo.groups(sd).enumerate() {
            let _ = write!(out, " {}:{{ span={}", topo.sgc(g.sgc).id, topo.span(g.span));
            if sd.flags.contains(SdFlag::Overlap) && g.balance_mask != g.span {
                let _ = write!(out, " mask={}", topo.span(g.balance_mask));
            }
            if g.capacity != 1024 {
                let _ = write!(out, " cap={}", g.capacity);
            }
            out.push_str(" }");
            if k + 1 < n {
                out.push(',');
            }
        }
        out.push('\n');
    }
}

/// The JSON dump: `{"cpus": N, "domains": [...]}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyDump {
    /// Number of CPUs in the machine.
    pub cpus: usize,
    /// One entry per CPU per domain, CPUs ascending, levels bottom-up.
    pub domains: Vec<DomainDump>,
    /// Each CPU's idle states, CPUs ascending (empty states: no cpuidle driver).
    #[serde(default)]
    pub cpuidle: Vec<CpuIdleDump>,
}

/// One CPU's cpuidle driver.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuIdleDump {
    /// The CPU.
    pub cpu: u32,
    /// The table's name (`bdw`, `custom`, ...).
    pub table: String,
    /// The states, state 0 first.
    pub states: Vec<IdleStateDump>,
}

/// One idle state.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleStateDump {
    /// sysfs `name`.
    pub name: String,
    /// sysfs `latency`: the declared exit latency, us.
    pub latency: u64,
    /// sysfs `residency`: the target residency, us.
    pub residency: u64,
    /// lbsim's measured exit time, ns.
    pub exit_ns: u64,
    /// `CPUIDLE_FLAG_POLLING`.
    pub polling: bool,
    /// A wake-up is a store, not an IPI.
    pub wake_by_store: bool,
}

/// One CPU's domain at one level.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainDump {
    /// The CPU.
    pub cpu: u32,
    /// Position bottom-up (debugfs `domainN`).
    pub level: usize,
    /// `sd->name`.
    pub name: String,
    /// The span as a cpulist.
    pub span: String,
    /// Kernel flag names in definition order.
    pub flags: Vec<String>,
    /// `imbalance_pct`.
    pub imbalance_pct: u32,
    /// `min_interval` (ms).
    pub min_interval: u64,
    /// `max_interval` (ms).
    pub max_interval: u64,
    /// `busy_factor`.
    pub busy_factor: u32,
    /// `cache_nice_tries`.
    pub cache_nice_tries: u32,
    /// Groups, local group first.
    pub groups: Vec<GroupDump>,
}

/// One group of a domain.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupDump {
    /// The span as a cpulist.
    pub span: String,
    /// The balance mask as a cpulist.
    pub balance_mask: String,
    /// `sgc->capacity`.
    pub capacity: u64,
}

impl TopologyDump {
    /// The dump of the CPUs in `cpus`.
    pub fn new(topo: &Topology, cpus: &Cpumask) -> TopologyDump {
        let mut domains = Vec::new();
        for cpu in cpus.iter().filter(|c| c.index() < topo.nr_cpus()) {
            for sd in topo.domains(cpu) {
                domains.push(DomainDump {
                    cpu: cpu.0,
                    level: sd.level,
                    name: sd.name.as_str().to_owned(),
                    span: topo.span(sd.span).to_cpulist(),
                    flags: sd.flags.names().into_iter().map(str::to_owned).collect(),
                    imbalance_pct: sd.imbalance_pct,
                    min_interval: sd.min_interval,
                    max_interval: sd.max_interval,
                    busy_factor: sd.busy_factor,
                    cache_nice_tries: sd.cache_nice_tries,
                    groups: topo
                        .groups(sd)
                        .map(|g| GroupDump {
                            span: topo.span(g.span).to_cpulist(),
                            balance_mask: topo.span(g.balance_mask).to_cpulist(),
                            capacity: g.capacity,
                        })
                        .collect(),
                });
            }
        }
        let cpuidle = cpus
            .iter()
            .filter(|c| c.index() < topo.nr_cpus())
            .map(|cpu| {
                let t = topo.machine().idle_states(cpu);
                CpuIdleDump {
                    cpu: cpu.0,
                    table: t.name.clone(),
                    states: t
                        .states
                        .iter()
                        .map(|s| IdleStateDump {
                            name: s.name.clone(),
                            latency: s.exit_latency_ns / 1000,
                            residency: s.target_residency_ns / 1000,
                            exit_ns: s.exit_ns,
                            polling: s.polling,
                            wake_by_store: s.wake_by_store,
                        })
                        .collect(),
                }
            })
            .collect();
        TopologyDump {
            cpus: topo.nr_cpus(),
            domains,
            cpuidle,
        }
    }

    /// Pretty-printed JSON, ending with a newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}
