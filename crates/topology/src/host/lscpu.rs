//! A machine from `lscpu -p=CPU,CORE,SOCKET,NODE,CLUSTER,CACHE` output (util-linux,
//! sys-utils/lscpu.c: print_cpus_parsable()).
//!
//! lscpu prints three comment lines, then a header comment naming the columns, then one
//! line per online CPU:
//!
//! ```text
//! # CPU,Core,Socket,Node,Cluster,L1d:L1i:L2:L3
//! 0,0,0,0,,0:0:0:0
//! ```
//!
//! An empty field is unknown (lscpu leaves NODE empty without NUMA, CLUSTER empty unless it
//! finds clusters). The CACHE column holds one logical id per cache, `:`-separated in the
//! order the header names them; in lscpu's "compatible" layout (plain `lscpu -p`, and what
//! util-linux 2.38 prints even with a column list) the caches are separate columns after an
//! empty one (`# CPU,Core,Socket,Node,,L1d,L1i,L2`). The header is read to find the columns,
//! so both layouts and any column order parse; without a header the columns are taken in
//! the order of the command above. The LLC is the highest-level data or unified cache.
//!
//! lscpu says nothing of capacities, distances or idle states: every CPU is 1024, nodes are
//! 10 local and 20 remote, and there is no cpuidle driver (each said in what was assumed).

use std::collections::BTreeSet;

use crate::host::{HostError, Probed, apply_clusters, dense, nr};
use crate::machine::{
    CpuDesc, LOCAL_DISTANCE, MAX_CPU_CAPACITY, MAX_CPUS, Machine, MachineError, RECLAIM_DISTANCE,
    REMOTE_DISTANCE,
};

/// What a column holds.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Column {
    Cpu,
    Core,
    Socket,
    Node,
    Cluster,
    /// Caches by name (`L1d`, `L2`), one id each, `:`-separated when several.
    Caches(Vec<String>),
    /// A column lbsim does not read (BOOK, DRAWER, MAXMHZ, ..., or the empty one before the
    /// caches of the compatible layout).
    Other,
}

fn column(name: &str) -> Column {
    let name = name.trim();
    let is_cache = |n: &str| {
        let b = n.as_bytes();
        b.len() >= 2 && (b[0] == b'L' || b[0] == b'l') && b[1].is_ascii_digit()
    };
    match name.to_ascii_uppercase().as_str() {
        "CPU" => Column::Cpu,
        "CORE" => Column::Core,
        "SOCKET" => Column::Socket,
        "NODE" => Column::Node,
        "CLUSTER" => Column::Cluster,
        _ if name.split(':').all(is_cache) => {
            Column::Caches(name.split(':').map(str::to_owned).collect())
        }
        _ => Column::Other,
    }
}

/// A cache name's level and whether it holds data (`L1i` does not).
fn cache_level(name: &str) -> (u32, bool) {
    let digits: String = name[1..].chars().take_while(char::is_ascii_digit).collect();
    (
        digits.parse().unwrap_or(0),
        !name.to_ascii_lowercase().ends_with('i'),
    )
}

/// One CPU line's fields lbsim reads (`None`: empty, unknown).
#[derive(Default)]
struct Row {
    line: usize,
    cpu: u32,
    core: Option<u32>,
    socket: Option<u32>,
    node: Option<u32>,
    cluster: Option<u32>,
    llc: Option<u32>,
}

/// Reads a machine from lscpu's parsable output; `path` names the file in messages.
///
/// # Errors
/// A line whose fields do not match the header or do not parse, CPUs other than `0..N-1`
/// once each, or a machine lbsim cannot build; the message names the file and line.
pub fn parse(text: &str, path: &str) -> Result<Probed, HostError> {
    let (mut found, mut assumed) = (Vec::new(), Vec::new());
    let at = |line: usize| format!("{path} line {line}");
    let mut header: Option<Vec<Column>> = None;
    let mut rows: Vec<Row> = Vec::new();
    let mut llc_col: Option<(usize, usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(comment) = l.strip_prefix('#') {
            let body = comment.trim();
            if rows.is_empty() && body.to_ascii_uppercase().starts_with("CPU") {
                header = Some(body.split(',').map(column).collect());
            }
            continue;
        }
        let cols = header.get_or_insert_with(|| {
            assumed.push(
                "columns: no header line; taken as CPU,CORE,SOCKET,NODE,CLUSTER,CACHE (L1d:L1i:L2:L3)"
                    .to_owned(),
            );
            ["CPU", "Core", "Socket", "Node", "Cluster", "L1d:L1i:L2:L3"]
                .iter()
                .map(|n| column(n))
                .collect()
        });
        if !cols.contains(&Column::Cpu) {
            return Err(HostError::Parse {
                path: at(line),
                value: l.to_owned(),
                reason: "comes before any header naming a CPU column".to_owned(),
            });
        }
        if llc_col.is_none() {
            let mut best: Option<(u32, usize, usize, String)> = None;
            for (c, col) in cols.iter().enumerate() {
                if let Column::Caches(names) = col {
                    for (k, n) in names.iter().enumerate() {
                        let (level, data) = cache_level(n);
                        if data && best.as_ref().is_none_or(|b| level > b.0) {
                            best = Some((level, c, k, n.clone()));
                        }
                    }
                }
            }
            llc_col = best.map(|(_, c, k, n)| (c, k, n));
        }
        let fields: Vec<&str> = l.split(',').collect();
        if fields.len() != cols.len() {
            return Err(HostError::Parse {
                path: at(line),
                value: l.to_owned(),
                reason: format!(
                    "has {} fields; the header names {} columns",
                    fields.len(),
                    cols.len()
                ),
            });
        }
        if rows.len() >= MAX_CPUS {
            return Err(HostError::Machine {
                path: path.to_owned(),
                source: MachineError::TooManyCpus {
                    nr_cpus: rows.len() as u64 + 1,
                    max: MAX_CPUS,
                },
            });
        }
        let id = |v: &str, what: &str| -> Result<Option<u32>, HostError> {
            let v = v.trim();
            if v.is_empty() || v == "-" {
                return Ok(None);
            }
            v.parse::<u32>().map(Some).map_err(|_| HostError::Parse {
                path: at(line),
                value: v.to_owned(),
                reason: format!("is not a {what} id"),
            })
        };
        let mut row = Row {
            line,
            ..Row::default()
        };
        let mut cpu = None;
        for (c, (col, v)) in cols.iter().zip(&fields).enumerate() {
            match col {
                Column::Cpu => cpu = id(v, "CPU")?,
                Column::Core => row.core = id(v, "core")?,
                Column::Socket => row.socket = id(v, "socket")?,
                Column::Node => row.node = id(v, "node")?,
                Column::Cluster => row.cluster = id(v, "cluster")?,
                Column::Caches(names) => {
                    let Some((lc, k, _)) = &llc_col else { continue };
                    if *lc != c || v.trim().is_empty() {
                        continue;
                    }
                    let ids: Vec<&str> = v.split(':').collect();
                    if ids.len() != names.len() {
                        return Err(HostError::Parse {
                            path: at(line),
                            value: (*v).to_owned(),
                            reason: format!(
                                "has {} cache ids; the header names {} ({})",
                                ids.len(),
                                names.len(),
                                names.join(":")
                            ),
                        });
                    }
                    row.llc = id(ids[*k], "cache")?;
                }
                Column::Other => {}
            }
        }
        row.cpu = cpu.ok_or_else(|| HostError::Parse {
            path: at(line),
            value: l.to_owned(),
            reason: "has no CPU number".to_owned(),
        })?;
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(HostError::NoCpus {
            path: path.to_owned(),
        });
    }
    rows.sort_by_key(|r| r.cpu);
    for (i, r) in rows.iter().enumerate() {
        if r.cpu as usize != i {
            return Err(HostError::Inconsistent {
                path: at(r.line),
                reason: format!(
                    "cpu {} {}; lbsim's CPUs are 0..N-1, all online (lscpu -p lists the online CPUs)",
                    r.cpu,
                    if (r.cpu as usize) < i {
                        "is listed twice"
                    } else {
                        "leaves a gap before it"
                    }
                ),
            });
        }
    }
    let n = rows.len();
    found.push(format!("{n} CPUs (lines with a CPU number)"));

    // A field is read when every line gives it, assumed when none does.
    let all = |f: fn(&Row) -> Option<u32>, what: &str| -> Result<Option<Vec<u32>>, HostError> {
        match rows.iter().position(|r| f(r).is_none()) {
            None => Ok(Some(rows.iter().map(|r| f(r).unwrap_or(0)).collect())),
            Some(_) if rows.iter().all(|r| f(r).is_none()) => Ok(None),
            Some(i) => Err(HostError::Inconsistent {
                path: at(rows[i].line),
                reason: format!("the {what} field is empty but other lines give one"),
            }),
        }
    };
    let socket = match all(|r| r.socket, "SOCKET")? {
        Some(s) => {
            let d = dense(&s);
            found.push(format!(
                "{} (SOCKET)",
                nr(d.iter().collect::<BTreeSet<_>>().len(), "package")
            ));
            d
        }
        None => {
            assumed.push("packages: no SOCKET; one package".to_owned());
            vec![0; n]
        }
    };
    let core = match all(|r| r.core, "CORE")? {
        Some(c) => {
            let pairs: Vec<(u32, u32)> = socket.iter().copied().zip(c).collect();
            let d = dense(&pairs);
            let cores = d.iter().collect::<BTreeSet<_>>().len();
            found.push(format!("{} of {n} CPUs (CORE)", nr(cores, "core")));
            d
        }
        None => {
            assumed.push("cores: no CORE; every CPU its own core (no SMT)".to_owned());
            (0..n as u32).collect()
        }
    };
    let llc_name = llc_col.as_ref().map(|(_, _, name)| name.clone());
    let llc = match (all(|r| r.llc, "CACHE")?, &llc_name) {
        (Some(l), Some(name)) => {
            let d = dense(&l);
            found.push(format!(
                "{}, {name} (CACHE)",
                nr(d.iter().collect::<BTreeSet<_>>().len(), "LLC")
            ));
            d
        }
        _ => {
            assumed.push("LLCs: no CACHE ids; each package its own LLC".to_owned());
            socket.clone()
        }
    };
    let node = match all(|r| r.node, "NODE")? {
        Some(ids) => {
            let set: BTreeSet<u32> = ids.iter().copied().collect();
            let names: Vec<String> = set.iter().map(|i| format!("node{i}")).collect();
            found.push(format!(
                "{}: {} (NODE)",
                nr(set.len(), "node"),
                names.join(", ")
            ));
            if set.iter().enumerate().any(|(k, &id)| k as u32 != id) {
                assumed.push(format!(
                    "nodes {} numbered 0..{} in that order",
                    names.join(", "),
                    set.len() - 1
                ));
            }
            ids.iter()
                .map(|id| set.range(..id).count() as u32)
                .collect()
        }
        None => {
            assumed.push("nodes: no NODE; one node".to_owned());
            vec![0; n]
        }
    };
    let mut descs: Vec<CpuDesc> = (0..n)
        .map(|i| CpuDesc {
            node: node[i],
            package: socket[i],
            llc: llc[i],
            cluster: 0,
            core: core[i],
            capacity: MAX_CPU_CAPACITY,
        })
        .collect();
    let clusters = all(|r| r.cluster, "CLUSTER")?.map(|c| dense(&c));
    apply_clusters(
        &mut descs,
        clusters.as_deref(),
        "CLUSTER",
        &mut found,
        &mut assumed,
    );
    assumed.push(format!(
        "capacities: lscpu has none; every CPU {MAX_CPU_CAPACITY}"
    ));
    if node.iter().any(|&k| k > 0) {
        assumed.push(format!(
            "distances: lscpu has none; {LOCAL_DISTANCE} local, {REMOTE_DISTANCE} remote"
        ));
    }
    assumed.push("idle states: lscpu has none; no cpuidle driver".to_owned());
    let machine =
        Machine::new(&descs, None, RECLAIM_DISTANCE).map_err(|source| HostError::Machine {
            path: path.to_owned(),
            source,
        })?;
    if machine.has_smt() {
        assumed.push(format!(
            "smt_throughput {} (lbsim's default; lscpu does not show how siblings share a core)",
            machine.smt_throughput()
        ));
    }
    Ok(Probed {
        machine,
        found,
        assumed,
    })
}
