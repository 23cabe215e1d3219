//! The parameters `lbsim-topology` declares: the `sd_init()` inputs ([`SdParams`]).
//!
//! See `lbsim_kernel::params` for the registry machinery; `lbsim_sim::params::REGISTRY`
//! assembles every layer's declarations.

use lbsim_kernel::params::{Origin, Owner, ParamError};

lbsim_kernel::int_params! {
    /// Inputs of sd_init() that experiments change.
    ///
    /// `imbalance_pct` replaces the initializer's value (117 since v5.10, 125
    /// before). sd_init() then overrides it for SMT levels (110) and for LLC levels
    /// (117, already before v5.10), so the input applies to the levels that keep
    /// the initializer's value: PKG, NODE and NUMA. Setting 125 reproduces the
    /// pre-v5.10 kernel of the seed experiments ("125 -> 117, the LLC level was
    /// already 117 and SMT 110"). `busy_factor` (16 since v5.10, 32 before) is the
    /// initializer's value on every level.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct SdParams;
    /// The declarations of [`SdParams`].
    pub const SD_INIT_PARAMS;
    owner = Owner::Topology;
    /// sd_init()'s initial `imbalance_pct` for the levels that keep it (PKG, NODE, NUMA;
    /// 125 before v5.10; below 100 the balancer's `100 * busiest > imbalance_pct * local`
    /// tests would invert).
    pub imbalance_pct: u32 = "imbalance_pct", Percent, 117, 100..=10000,
        Origin::kernel("v6.1, v6.6, v6.12 (117 since v5.10)");
    /// sd_init()'s `busy_factor`: a busy CPU balances this many times less often (32 before
    /// v5.10).
    pub busy_factor: u32 = "busy_factor", Count, 16, 1..=1000,
        Origin::kernel("v6.1, v6.6, v6.12 (16 since v5.10)");
}

impl SdParams {
    /// Applies `name=value` (`lbsim topology --set imbalance_pct=125`).
    ///
    /// # Errors
    /// Not `name=value`, an unknown name (with suggestions), a bad or out-of-range value.
    pub fn set_assignment(&mut self, assignment: &str) -> Result<(), ParamError> {
        let (name, value) = assignment
            .split_once('=')
            .ok_or_else(|| ParamError::Malformed {
                text: assignment.to_owned(),
            })?;
        self.set(name, value)
    }

    /// Sets `imbalance_pct` (`lbsim topology --imbalance-pct`); see [`SD_INIT_PARAMS`].
    ///
    /// # Errors
    /// A value outside the declared range.
    pub fn set_imbalance_pct(&mut self, v: u32) -> Result<(), ParamError> {
        self.set("imbalance_pct", &v.to_string())
    }

    /// Sets `busy_factor` (`lbsim topology --busy-factor`); see [`SD_INIT_PARAMS`].
    ///
    /// # Errors
    /// A value outside the declared range.
    pub fn set_busy_factor(&mut self, v: u32) -> Result<(), ParamError> {
        self.set("busy_factor", &v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_ranges_from_the_declaration() {
        let mut p = SdParams::default();
        assert_eq!((p.imbalance_pct, p.busy_factor), (117, 16));
        p.set("imbalance_pct", "125").unwrap();
        p.set_busy_factor(32).unwrap();
        assert_eq!((p.imbalance_pct, p.busy_factor), (125, 32));
        assert!(matches!(
            p.set_imbalance_pct(99),
            Err(ParamError::OutOfRange { .. })
        ));
        assert!(matches!(
            p.set("busy_factor", "0"),
            Err(ParamError::OutOfRange { .. })
        ));
        assert_eq!((p.imbalance_pct, p.busy_factor), (125, 32));
        let err = |name: &str, value: &str| p.clone().set(name, value).unwrap_err().to_string();
        assert_eq!(
            err("imbalance_pct", "99"),
            "`imbalance_pct=99` is out of range: expected 100..=10000 percent"
        );
        assert_eq!(
            err("busy_factor", "0"),
            "`busy_factor=0` is out of range: expected 1..=1000 count"
        );
        assert_eq!(
            err("busy", "3"),
            "unknown parameter `busy`; did you mean `busy_factor`?"
        );
        assert_eq!(
            err("busy_factor", "x"),
            "invalid value `x` for `busy_factor`: expected an integer (1..=1000 count)"
        );
    }
}
