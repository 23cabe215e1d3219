//! `--topology host`, `sysfs:DIR` and `lscpu:FILE`: the one place lbsim reads a real
//! machine's description, then hands the text to `lbsim_topology::host` to parse (the model
//! crates never read the host).
//!
//! [`resolve`] turns any `--topology` spec into a machine: the real-machine forms here,
//! every other form through `lbsim_topology::parse_machine`. Every command that takes
//! `--topology` (and scenario files' `topology`) goes through it.

mod walk;

use anyhow::Context as _;
use lbsim_topology::host::{lscpu, sysfs};
use lbsim_topology::{HostSpec, Machine, Probed, parse_machine};

use crate::budget::MachineBudget;

/// Where `host` reads: the kernel's `/sys/devices/system`.
pub const SYSFS_ROOT: &str = "/sys/devices/system";

/// A machine and, for a real one, what was found and assumed.
#[derive(Debug)]
pub struct Resolved {
    /// The machine.
    pub machine: Machine,
    /// `None` for a machine described by the spec itself.
    pub probed: Option<Probed>,
}

/// Builds the machine `spec` names, refusing a sysfs tree with more CPU directories than
/// `budget` allows before reading it (the budget's full check is the caller's, on the
/// machine).
///
/// # Errors
/// One line: the spec form's problem, naming the file (and line) where it shows.
pub fn resolve(spec: &str, budget: &MachineBudget) -> anyhow::Result<Resolved> {
    let probed = match HostSpec::parse(spec) {
        None => {
            return Ok(Resolved {
                machine: parse_machine(spec)?,
                probed: None,
            });
        }
        Some(HostSpec::Host) => sysfs::parse(&walk::read_tree(SYSFS_ROOT, budget)?)?,
        Some(HostSpec::Sysfs(dir)) => {
            if dir.is_empty() {
                anyhow::bail!(
                    "sysfs:DIR needs the directory of a copy of /sys/devices/system (docs/machines.md)"
                );
            }
            sysfs::parse(&walk::read_tree(dir, budget)?)?
        }
        Some(HostSpec::Lscpu(file)) => {
            if file.is_empty() {
                anyhow::bail!(
                    "lscpu:FILE needs a file of `lscpu -p=CPU,CORE,SOCKET,NODE,CLUSTER,CACHE` output"
                );
            }
            let text = lbsim_kernel::input::read_to_string_capped(std::path::Path::new(file))
                .with_context(|| format!("cannot read {file}"))?;
            lscpu::parse(&text, file)?
        }
    };
    Ok(Resolved {
        machine: probed.machine.clone(),
        probed: Some(probed),
    })
}

/// The machine alone ([`resolve`]).
///
/// # Errors
/// As [`resolve`].
pub fn machine(spec: &str, budget: &MachineBudget) -> anyhow::Result<Machine> {
    resolve(spec, budget).map(|r| r.machine)
}
