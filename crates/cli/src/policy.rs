//! Choosing the balancer policy.

use lbsim_balance::TrivialBalancer;
use lbsim_balance::ctx::Balancer;

/// The balancer policies `--balancer` offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BalancerKind {
    /// No balancing at all: tasks wake on their previous CPU and are never migrated (a
    /// reference point, not a kernel).
    #[default]
    None,
}

/// The policy for `kind`.
pub fn make_balancer(kind: BalancerKind) -> Box<dyn Balancer> {
    match kind {
        BalancerKind::None => Box::new(TrivialBalancer),
    }
}
