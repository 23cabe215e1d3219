//! [`ParamError`]: why a parameter write was refused.

use std::fmt::Write as _;

/// A refused parameter write. Each message is one line and names what is valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// No parameter has this name.
    #[error("unknown parameter `{name}`{}", did_you_mean(suggestions))]
    Unknown {
        /// The name as written.
        name: String,
        /// The nearest valid names (1 to 3).
        suggestions: Vec<String>,
    },
    /// No sched feature has this name (after an optional `NO_`).
    #[error("unknown sched feature `{name}`{}", did_you_mean(suggestions))]
    UnknownFeature {
        /// The item as written (with its `NO_`).
        name: String,
        /// The nearest valid spellings (1 to 3), with the `NO_` as written.
        suggestions: Vec<String>,
    },
    /// The value does not parse as this parameter's kind.
    #[error("invalid value `{value}` for `{name}`: expected {expected}")]
    BadValue {
        /// The parameter.
        name: &'static str,
        /// The value as written.
        value: String,
        /// What it accepts.
        expected: String,
    },
    /// An integer outside the parameter's range.
    #[error("`{name}={value}` is out of range: expected {range}")]
    OutOfRange {
        /// The parameter.
        name: &'static str,
        /// The value as written.
        value: String,
        /// The inclusive range and unit.
        range: String,
    },
    /// A sched feature given a value (`--set LB_MIN=1`).
    #[error("`{name}` is a sched feature: switch it with --features {name} or NO_{name}")]
    FeatureNotSettable {
        /// The feature.
        name: &'static str,
    },
    /// A sched feature list given a parameter that is not a feature.
    #[error("`{name}` is not a sched feature: give it a value, `{name}=VALUE`")]
    NotAFeature {
        /// The parameter.
        name: &'static str,
    },
    /// An assignment without `=`.
    #[error("expected NAME=VALUE, got `{text}`")]
    Malformed {
        /// The text as written.
        text: String,
    },
}

/// `; did you mean `a`, `b` or `c`?`, or nothing.
fn did_you_mean(suggestions: &[String]) -> String {
    let mut s = String::new();
    if let Some((last, rest)) = suggestions.split_last() {
        s.push_str("; did you mean ");
        for (i, n) in rest.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "`{n}`");
        }
        if !rest.is_empty() {
            s.push_str(" or ");
        }
        let _ = write!(s, "`{last}`?");
    }
    s
}
