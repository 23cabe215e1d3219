//! Errors of the `lbsim pelt` front end (duration and pattern syntax, and
//! simulation parameters) and of a cgroup `cpu.weight` write, which the kernel
//! refuses outside 1..10000. The PELT model itself has no failure modes.

/// What is wrong with a duration, a run/sleep pattern or a simulation
/// parameter. Messages name the offending text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PeltError {
    /// The duration text is empty.
    #[error("empty duration (expected a number with a unit: ns, us, ms or s)")]
    EmptyDuration,
    /// The duration does not start with a decimal number.
    #[error("`{text}` is not a duration (expected a number with a unit: ns, us, ms or s)")]
    InvalidNumber {
        /// The duration text.
        text: String,
    },
    /// The number has no unit after it.
    #[error("`{text}` has no unit (use ns, us, ms or s)")]
    MissingUnit {
        /// The duration text.
        text: String,
    },
    /// The unit is not one of `ns`, `us`, `ms`, `s`.
    #[error("`{text}` has unknown unit `{unit}` (use ns, us, ms or s)")]
    UnknownUnit {
        /// The duration text.
        text: String,
        /// The unit found.
        unit: String,
    },
    /// The duration is not a whole number of nanoseconds.
    #[error("`{text}` is not a whole number of nanoseconds")]
    FractionalNanoseconds {
        /// The duration text.
        text: String,
    },
    /// The duration does not fit in 64-bit nanoseconds.
    #[error("`{text}` is too long (more than 2^64 - 1 ns)")]
    DurationOverflow {
        /// The duration text.
        text: String,
    },
    /// The pattern is empty.
    #[error("empty pattern (expected `always` or a list like `run=4ms,sleep=12ms`)")]
    EmptyPattern,
    /// A pattern item is not `run=DUR` or `sleep=DUR`.
    #[error("item {index} `{item}` is not `run=DURATION` or `sleep=DURATION`")]
    BadPatternItem {
        /// 1-based position of the item in the pattern.
        index: usize,
        /// The item text.
        item: String,
    },
    /// A pattern item's duration does not parse.
    #[error("item {index} `{item}`: {reason}")]
    BadPatternDuration {
        /// 1-based position of the item in the pattern.
        index: usize,
        /// The item text.
        item: String,
        /// What is wrong with the duration.
        reason: Box<PeltError>,
    },
    /// A pattern item lasts zero time.
    #[error("item {index} `{item}`: the duration must be greater than zero")]
    ZeroPatternDuration {
        /// 1-based position of the item in the pattern.
        index: usize,
        /// The item text.
        item: String,
    },
    /// The step between output rows is zero.
    #[error("the step must be greater than zero")]
    ZeroStep,
    /// The weight is outside the supported range.
    #[error("weight {weight} is out of range (expected 1 to {max})")]
    WeightOutOfRange {
        /// The weight given.
        weight: u64,
        /// The largest weight accepted.
        max: u64,
    },
    /// The CPU capacity is outside 1..=1024.
    #[error("capacity {capacity} is out of range (expected 1 to 1024)")]
    CapacityOutOfRange {
        /// The capacity given.
        capacity: u64,
    },
    /// A cgroup v2 `cpu.weight` outside 1..=10000 (the kernel answers `-ERANGE`).
    #[error("cpu.weight {weight} is out of range (expected 1 to 10000)")]
    CpuWeightOutOfRange {
        /// The weight given.
        weight: u64,
    },
}
