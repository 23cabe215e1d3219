//! Machines read from a real one: `host` (this machine's sysfs), `sysfs:DIR` (a copy of
//! `/sys/devices/system` taken elsewhere) and `lscpu:FILE` (`lscpu -p` output).
//!
//! The kernel learns its topology from firmware and exports what it built under
//! `/sys/devices/system/cpu/cpuN/topology/` (drivers/base/topology.c), the cache
//! hierarchy under `cpuN/cache/indexM/` (drivers/base/cacheinfo.c), `cpuN/cpu_capacity`
//! (drivers/base/arch_topology.c), `/sys/devices/system/node/nodeN/{cpulist,distance}`
//! (drivers/base/node.c) and the cpuidle states under `cpuN/cpuidle/stateM/`
//! (drivers/cpuidle/sysfs.c). [`sysfs`] turns those files into a [`Machine`]; [`lscpu`]
//! does the same for util-linux's parsable output, which carries less.
//!
//! This crate never touches the host: both readers are pure functions over text the
//! caller read ([`sysfs::SysfsFiles`], a map from relative path to contents; `lscpu`'s
//! text). The `lbsim` binary walks the directories and reads the files.
//!
//! Each reader returns a [`Probed`]: the machine, what it found, and what it had to
//! assume where the source says nothing (no `cpu_capacity`: every CPU 1024; no node
//! directory: one node; no `distance`: 10 local, 20 remote; no cpuidle directory: no
//! cpuidle driver, as the kernel without one; sysfs has no hardware exit time, so each
//! idle state's `exit_ns` is its declared latency).

pub mod lscpu;
pub mod sysfs;

use crate::machine::{CpuDesc, Machine, MachineError};

/// A machine spec that names a real machine rather than describing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostSpec<'a> {
    /// `host`: this machine's `/sys/devices/system`.
    Host,
    /// `sysfs:DIR`: a copy of `/sys/devices/system` (DIR holds `cpu/` and `node/`).
    Sysfs(&'a str),
    /// `lscpu:FILE`: the output of `lscpu -p=CPU,CORE,SOCKET,NODE,CLUSTER,CACHE`.
    Lscpu(&'a str),
}

impl HostSpec<'_> {
    /// Recognises `host`, `sysfs:DIR` and `lscpu:FILE` (`None`: another form of spec).
    pub fn parse(spec: &str) -> Option<HostSpec<'_>> {
        let spec = spec.trim();
        if spec == "host" {
            return Some(HostSpec::Host);
        }
        if let Some(dir) = spec.strip_prefix("sysfs:") {
            return Some(HostSpec::Sysfs(dir));
        }
        spec.strip_prefix("lscpu:").map(HostSpec::Lscpu)
    }
}

/// A machine read from a real one, with the account of how.
#[derive(Clone, Debug)]
pub struct Probed {
    /// The machine.
    pub machine: Machine,
    /// What was read, one line each (`8 CPUs (cpu/online: 0-7)`).
    pub found: Vec<String>,
    /// What the source did not say and was assumed, one line each.
    pub assumed: Vec<String>,
}

/// Why a real machine's description could not be turned into a machine. Every message is
/// one line naming the file (and line, for lscpu) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A file the machine cannot be built without is absent.
    #[error("{path}: missing ({why})")]
    Missing {
        /// The file, with its root.
        path: String,
        /// Why it is needed.
        why: String,
    },
    /// A file's contents do not parse.
    #[error("{path}: `{value}` {reason}")]
    Parse {
        /// The file (lscpu: `FILE line N`).
        path: String,
        /// The offending text.
        value: String,
        /// What it should have been.
        reason: String,
    },
    /// Files that parse but contradict each other (siblings that do not list each other).
    #[error("{path}: {reason}")]
    Inconsistent {
        /// The file where the contradiction shows.
        path: String,
        /// What contradicts what.
        reason: String,
    },
    /// The source describes no CPU.
    #[error("{path}: no CPU found")]
    NoCpus {
        /// The root directory or file.
        path: String,
    },
    /// The machine read is not one lbsim can build.
    #[error("{path}: {source}")]
    Machine {
        /// The root directory or file.
        path: String,
        /// What is wrong with it.
        source: MachineError,
    },
}

/// Cluster labels that describe no cluster: the kernel's `-1` (arm64, no cluster in the
/// PPTT) and x86's `BAD_APICID` (`0xffff`) when no L2 id was found; also a `u32` -1.
pub(crate) fn is_unknown_cluster(v: i64) -> bool {
    v < 0 || v == 0xffff || v == i64::from(u32::MAX)
}

/// Gives each CPU its cluster label if every CPU has one and clusters nest (each a union of
/// cores, inside one LLC); otherwise the LLC's label (no CLS level), saying why in
/// `assumed`. `clusters[i]` is CPU `i`'s label.
pub(crate) fn apply_clusters(
    descs: &mut [CpuDesc],
    clusters: Option<&[u32]>,
    source: &str,
    found: &mut Vec<String>,
    assumed: &mut Vec<String>,
) {
    let nests = |cl: &[u32]| {
        let mut of_core = std::collections::BTreeMap::new();
        let mut of_cluster = std::collections::BTreeMap::new();
        descs.iter().zip(cl).all(|(d, &c)| {
            *of_core.entry(d.core).or_insert(c) == c
                && *of_cluster.entry(c).or_insert(d.llc) == d.llc
        })
    };
    match clusters {
        Some(cl) if nests(cl) => {
            let n = cl.iter().collect::<std::collections::BTreeSet<_>>().len();
            found.push(format!("{} ({source})", nr(n, "cluster")));
            for (d, &c) in descs.iter_mut().zip(cl) {
                d.cluster = c;
            }
        }
        Some(_) => {
            assumed.push(format!(
                "clusters: {source} does not nest (a cluster must hold whole cores inside one LLC); no cluster level"
            ));
            for d in descs.iter_mut() {
                d.cluster = d.llc;
            }
        }
        None => {
            assumed.push(format!("clusters: {source} gives none; no cluster level"));
            for d in descs.iter_mut() {
                d.cluster = d.llc;
            }
        }
    }
}

/// `n` and `what`, plural unless `n` is 1 (`1 package`, `2 packages`).
pub(crate) fn nr(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Runs of equal values in order, as `VALUExCOUNT` (`446x4,1024x4`).
pub(crate) fn runs_text<T: PartialEq + std::fmt::Display>(values: &[T]) -> String {
    let mut runs: Vec<(&T, usize)> = Vec::new();
    for v in values {
        match runs.last_mut() {
            Some((last, n)) if *last == v => *n += 1,
            _ => runs.push((v, 1)),
        }
    }
    runs.iter()
        .map(|(v, n)| format!("{v}x{n}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Maps labels to dense ids in order of first appearance.
pub(crate) fn dense<T: Ord + Clone>(labels: &[T]) -> Vec<u32> {
    let mut map = std::collections::BTreeMap::new();
    labels
        .iter()
        .map(|l| {
            let next = map.len() as u32;
            *map.entry(l.clone()).or_insert(next)
        })
        .collect()
}

#[cfg(test)]
mod tests;
