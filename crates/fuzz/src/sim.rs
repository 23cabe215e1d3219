//! The `sim` target: bytes become a small scenario ([`crate::draw`]: at most 16 CPUs, a few
//! simulated ms) that runs under `check`, as `lbsim run --check` runs it. An invariant
//! violation or a panic is a failure; any other error (a feature the profile lacks, a
//! workload that does not fit) is a refused input.

use lbsim::balancer::{BalancerKind, make_balancer};
use lbsim::scenario::Scenario as RunScenario;
use lbsim_sim::engine::{Sim, SimError};

use crate::draw::{Bounds, Bytes, Scenario, scenario};

/// The sim target's bounds: small enough for hundreds of runs a second.
pub const SIM_BOUNDS: Bounds = Bounds {
    max_cpus: 16,
    max_threads: 16,
    presets: true,
    duration_ms: (1, 8),
};

/// Runs the scenario `data` draws (see the module docs).
pub fn sim(data: &[u8]) -> bool {
    let s = scenario(&mut Bytes::new(data), &SIM_BOUNDS);
    run_checked(&s)
}

/// Builds and runs `s` under `check`; panics on an invariant violation, naming the
/// `lbsim run` command that replays it.
pub fn run_checked(s: &Scenario) -> bool {
    let run = RunScenario {
        topology: s.topology.clone(),
        workloads: s.workloads.clone(),
        features: if s.features.is_empty() {
            Vec::new()
        } else {
            vec![s.features.clone()]
        },
        sets: s.sets.clone(),
        duration_ns: Some(s.duration_ms * 1_000_000),
        budget: crate::targets::fuzz_budget(),
        kernel: s.kernel.clone(),
        cgroups: Vec::new(),
        autogroups: Vec::new(),
        cost: None,
    };
    let Ok(built) = run.build() else {
        return false;
    };
    let mut cfg = built.config;
    cfg.seed = s.seed;
    cfg.check = true;
    let sim = match Sim::new(cfg.clone(), make_balancer(BalancerKind::Kernel, &cfg)) {
        Ok(sim) => sim,
        Err(e) => return refused(s, e),
    };
    match sim.run() {
        Ok(_) => true,
        Err(e) => refused(s, e),
    }
}

fn refused(s: &Scenario, e: SimError) -> bool {
    if let SimError::Invariant { .. } = e {
        panic!("{e}; replay: {}", s.command());
    }
    false
}
