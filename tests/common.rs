//! Helpers shared by the scenario tests.

use std::sync::Arc;

use lbsim_balance::cost::CostModel;
use lbsim_balance::kernel::KernelBalancer;
use lbsim_rq::Tunables;
use lbsim_sim::engine::{EngineTunables, RunResult, Sim, SimConfig};
use lbsim_topology::{SdParams, Topology, parse_machine};
use lbsim_workload::parse_workloads;

/// A configuration with default features, tunables and costs, invariant checks on.
pub fn config(machine: &str, workloads: &[&str], duration_ms: u64, seed: u64) -> SimConfig {
    let machine = parse_machine(machine).expect("machine spec");
    let topology = Arc::new(Topology::build(&machine, &SdParams::default()).expect("topology"));
    let nr = topology.nr_cpus() as u32;
    SimConfig {
        topology,
        workload: parse_workloads(workloads).expect("workload"),
        features: lbsim_sim::params::default_features(),
        tunables: Tunables::new(nr),
        cost: CostModel::default(),
        engine: EngineTunables::default(),
        machine: Default::default(),
        kernel: None,
        duration_ns: duration_ms * 1_000_000,
        seed,
        check: true,
        cgroups: Vec::new(),
        autogroups: Vec::new(),
    }
}

/// Runs `cfg` under the kernel balancer.
pub fn run_kernel(cfg: SimConfig) -> RunResult {
    let balancer = KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz);
    Sim::new(cfg, balancer).expect("setup").run().expect("run")
}
