//! The inputs of sd_init() (topology.c, v6.6-v6.12) that experiments change: [`SdParams`]
//! (`imbalance_pct`, `busy_factor`) and its `name=value` assignments.

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
pub struct SdParams {
    /// sd_init()'s initial `imbalance_pct` (default 117).
    pub imbalance_pct: u32,
    /// sd_init()'s `busy_factor` (default 16).
    pub busy_factor: u32,
}

impl Default for SdParams {
    fn default() -> SdParams {
        SdParams {
            imbalance_pct: 117,
            busy_factor: 16,
        }
    }
}

/// Why an [`SdParams`] assignment was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// Not `name=value`.
    #[error("`{text}` is not name=value")]
    Malformed {
        /// The text.
        text: String,
    },
    /// A name other than `imbalance_pct` or `busy_factor`.
    #[error("unknown parameter `{name}` (known: imbalance_pct, busy_factor)")]
    Unknown {
        /// The name.
        name: String,
    },
    /// A value that is not a number.
    #[error("`{name}={value}`: `{value}` is not a number")]
    BadNumber {
        /// The name.
        name: String,
        /// The value.
        value: String,
    },
    /// A value outside the accepted range.
    #[error("`{name}={value}`: must be {range}")]
    OutOfRange {
        /// The name.
        name: String,
        /// The value.
        value: u32,
        /// The accepted range.
        range: &'static str,
    },
}

impl SdParams {
    /// Applies `name=value` (`imbalance_pct=125`, `busy_factor=32`).
    pub fn set(&mut self, assignment: &str) -> Result<(), ParamError> {
        let Some((name, value)) = assignment.split_once('=') else {
            return Err(ParamError::Malformed {
                text: assignment.to_owned(),
            });
        };
        let (name, value) = (name.trim(), value.trim());
        let parse = || -> Result<u32, ParamError> {
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ParamError::BadNumber {
                    name: name.to_owned(),
                    value: value.to_owned(),
                });
            }
            value.parse().map_err(|_| ParamError::BadNumber {
                name: name.to_owned(),
                value: value.to_owned(),
            })
        };
        match name {
            "imbalance_pct" => self.set_imbalance_pct(parse()?),
            "busy_factor" => self.set_busy_factor(parse()?),
            _ => Err(ParamError::Unknown {
                name: name.to_owned(),
            }),
        }
    }

    /// Sets `imbalance_pct`; it must be 100..=10000 (below 100 the balancer's
    /// `100 * busiest > imbalance_pct * local` tests would invert).
    pub fn set_imbalance_pct(&mut self, v: u32) -> Result<(), ParamError> {
        if !(100..=10000).contains(&v) {
            return Err(ParamError::OutOfRange {
                name: "imbalance_pct".to_owned(),
                value: v,
                range: "100..=10000",
            });
        }
        self.imbalance_pct = v;
        Ok(())
    }

    /// Sets `busy_factor`; it must be 1..=1000.
    pub fn set_busy_factor(&mut self, v: u32) -> Result<(), ParamError> {
        if !(1..=1000).contains(&v) {
            return Err(ParamError::OutOfRange {
                name: "busy_factor".to_owned(),
                value: v,
                range: "1..=1000",
            });
        }
        self.busy_factor = v;
        Ok(())
    }
}
