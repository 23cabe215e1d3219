//! Engine throughput: events per second on an 8-CPU machine running a mixed workload
//! (always-running threads, periodic threads and a pipe ping-pong pair), with the kernel's
//! balancer and with the trivial policy (which isolates the engine's own cost), and the
//! same machine with and without the machine model's idle states (`mixed_8cpu_cpuidle`:
//! `ideal` is `cpuidle=off` on a machine without idle states, `menu` the client Skylake
//! table under the menu governor), side by side.
//!
//! Run with `cargo xtask bench engine`; divan prints the time per run and, through the item
//! counter, events per second.

use std::sync::Arc;

use divan::counter::ItemsCount;
use lbsim_balance::TrivialBalancer;
use lbsim_balance::cost::CostModel;
use lbsim_balance::kernel::KernelBalancer;
use lbsim_rq::Tunables;
use lbsim_sim::engine::{EngineTunables, Sim, SimConfig};
use lbsim_topology::{SdParams, Topology, parse_machine};
use lbsim_workload::parse_workloads;

fn main() {
    divan::main();
}

fn config() -> SimConfig {
    config_on("sockets=1,clusters=2,cores=4")
}

fn config_on(spec: &str) -> SimConfig {
    let machine = parse_machine(spec).expect("machine");
    let topology = Arc::new(Topology::build(&machine, &SdParams::default()).expect("topology"));
    SimConfig {
        topology,
        workload: parse_workloads(&[
            "busy:threads=6",
            "periodic:threads=8,run=2ms,period=5ms",
            "pipe:loops=100000",
        ])
        .expect("workload"),
        features: lbsim_sim::params::default_features(),
        tunables: Tunables::new(8),
        cost: CostModel::default(),
        engine: EngineTunables::default(),
        machine: Default::default(),
        kernel: None,
        duration_ns: 500_000_000,
        seed: 1,
        check: false,
        cgroups: Vec::new(),
        autogroups: Vec::new(),
    }
}

#[divan::bench(sample_count = 10)]
fn mixed_8cpu_trivial(bencher: divan::Bencher<'_, '_>) {
    let cfg = config();
    let events = Sim::new(cfg.clone(), TrivialBalancer)
        .expect("setup")
        .run()
        .expect("run")
        .events;
    bencher.counter(ItemsCount::new(events)).bench(|| {
        Sim::new(cfg.clone(), TrivialBalancer)
            .expect("setup")
            .run()
            .expect("run")
    });
}

#[divan::bench(sample_count = 10)]
fn mixed_8cpu_kernel(bencher: divan::Bencher<'_, '_>) {
    let cfg = config();
    let kernel = |cfg: &SimConfig| KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz);
    let events = Sim::new(cfg.clone(), kernel(&cfg))
        .expect("setup")
        .run()
        .expect("run")
        .events;
    bencher.counter(ItemsCount::new(events)).bench(|| {
        Sim::new(cfg.clone(), kernel(&cfg))
            .expect("setup")
            .run()
            .expect("run")
    });
}

#[divan::bench(sample_count = 10, args = ["ideal", "menu"])]
fn mixed_8cpu_cpuidle(bencher: divan::Bencher<'_, '_>, model: &str) {
    let cfg = match model {
        "ideal" => config(),
        _ => config_on("sockets=1,clusters=2,cores=4,idle_states=skl"),
    };
    let kernel = |cfg: &SimConfig| KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz);
    let events = Sim::new(cfg.clone(), kernel(&cfg))
        .expect("setup")
        .run()
        .expect("run")
        .events;
    bencher.counter(ItemsCount::new(events)).bench(|| {
        Sim::new(cfg.clone(), kernel(&cfg))
            .expect("setup")
            .run()
            .expect("run")
    });
}
