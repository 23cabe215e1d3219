//! Machines and their sched domains, as the Linux kernel's `kernel/sched/topology.c` builds them.
//!
//! This crate models what the load balancer stands on: CPU masks
//! ([`cpumask`]: include/linux/cpumask.h, lib/bitmap.c), a machine's CPUs with
//! their SMT siblings, clusters, last-level caches, packages, NUMA nodes,
//! capacities and node distances ([`machine`]), the idle states their cpuidle drivers
//! expose ([`cpuidle`]), the text a user types to name a
//! machine ([`spec`]), machines read from a real one's sysfs or lscpu output, given as
//! text ([`host`]: this crate never reads the host), and the sched domains and groups built from it
//! ([`domains`]: kernel/sched/topology.c, with include/linux/sched/sd_flags.h
//! in [`flags`]), printed as debugfs and sched_domain_debug() show them
//! ([`dump`]: kernel/sched/debug.c). It follows Linux v6.6 to v6.12 (the source
//! read was a v6.11/6.12 tree); names from that range (`PKG`, `SD_SHARE_LLC`)
//! are used throughout.
//!
//! Deliberately left out: CPU hotplug, isolated CPUs and cpuset partitions
//! (every CPU is online in one root domain), architecture topology tables
//! other than default_topology (x86 ITMT and hybrid, powerpc) and with them
//! `SD_ASYM_PACKING`, relax_domain_level, energy-model perf domains, and the
//! runtime state the balancer changes (it keeps that itself, indexed by CPU and
//! level, [`SgcId`] or [`SharedId`]).

pub mod cpuidle;
pub mod cpumask;
pub mod domains;
pub mod dump;
pub mod flags;
pub mod host;
pub mod machine;
pub mod params;
pub mod smt;
pub mod spec;

pub use cpuidle::{IdleState, IdleStates};
pub use cpumask::{CpuId, Cpumask, CpumaskParseError};
pub use domains::{
    CpuShortcuts, DomainName, GroupId, GroupList, NumaTopologyType, SchedDomain, SchedDomainShared,
    SchedGroup, SchedGroupCapacity, SgcId, SharedId, SpanId, Topology, TopologyError,
    TopologyLevel,
};
pub use dump::TopologyDump;
pub use flags::{SdFlag, SdFlags};
pub use host::{HostError, HostSpec, Probed};
pub use lbsim_kernel::params::ParamError;
pub use machine::{CpuDesc, CpuTopology, MAX_NUMNODES, Machine, MachineError};
pub use params::SdParams;
pub use smt::SmtThroughput;
pub use spec::{MachineSpec, Preset, SpecError, parse_file_text, parse_machine, presets};
