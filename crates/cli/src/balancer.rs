//! Choosing the balancer (`--balancer`): the kernel's, or none.

use lbsim_balance::TrivialBalancer;
use lbsim_balance::ctx::Balancer;
use lbsim_balance::kernel::KernelBalancer;
use lbsim_sim::engine::SimConfig;

/// The balancers `--balancer` offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BalancerKind {
    /// The kernel's fair-class balancer (fair.c v6.6-v6.12 with the experiment switches).
    #[default]
    Kernel,
    /// No balancing at all: tasks wake on their previous CPU and are never migrated (a
    /// reference point, not a kernel).
    None,
}

/// The balancer for `kind`, at boot of the machine `cfg` describes.
pub fn make_balancer(kind: BalancerKind, cfg: &SimConfig) -> Box<dyn Balancer> {
    match kind {
        BalancerKind::Kernel => Box::new(KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz)),
        BalancerKind::None => Box::new(TrivialBalancer),
    }
}
