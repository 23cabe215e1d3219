//! Choosing the balancer (`--balancer`): the kernel's, or none.

use lbsim_balance::TrivialBalancer;
use lbsim_balance::ctx::Balancer;
use lbsim_balance::kernel::KernelBalancer;
use lbsim_balance::legacy::{LegacyBalancer, LegacyVersion};
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

/// The balancer for `kind`, at boot of the machine `cfg` describes: for a kernel profile
/// before v5.5 the balancer of those kernels ([`LegacyBalancer`], fair.c v4.6-v5.4), else
/// today's ([`KernelBalancer`], v5.5-v6.12).
pub fn make_balancer(kind: BalancerKind, cfg: &SimConfig) -> Box<dyn Balancer> {
    let legacy = cfg
        .kernel
        .and_then(|(a, b)| LegacyVersion::new(u8::try_from(a).ok()?, u8::try_from(b).ok()?));
    match (kind, legacy) {
        (BalancerKind::Kernel, Some(v)) => {
            Box::new(LegacyBalancer::new(&cfg.topology, 0, cfg.tunables.hz, v))
        }
        (BalancerKind::Kernel, None) => {
            Box::new(KernelBalancer::new(&cfg.topology, 0, cfg.tunables.hz))
        }
        (BalancerKind::None, _) => Box::new(TrivialBalancer),
    }
}
