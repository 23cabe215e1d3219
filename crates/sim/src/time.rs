//! Simulated time: integer nanoseconds, never floating point.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    /// The start of every run.
    pub const ZERO: SimTime = SimTime(0);
    /// Later than any event a run can schedule.
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// Nanoseconds since the start of the run.
    pub const fn as_ns(self) -> u64 {
        self.0
    }

    /// Microseconds since the start, truncated.
    pub const fn as_us(self) -> u64 {
        self.0 / 1_000
    }

    /// `self + ns`, saturating at [`SimTime::MAX`].
    pub const fn plus_ns(self, ns: u64) -> SimTime {
        SimTime(self.0.saturating_add(ns))
    }

    /// `self - earlier` in nanoseconds, 0 if `earlier` is later.
    pub const fn ns_since(self, earlier: SimTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<u64> for SimTime {
    type Output = SimTime;
    fn add(self, ns: u64) -> SimTime {
        self.plus_ns(ns)
    }
}

impl AddAssign<u64> for SimTime {
    fn add_assign(&mut self, ns: u64) {
        *self = self.plus_ns(ns);
    }
}

impl Sub for SimTime {
    type Output = u64;
    fn sub(self, earlier: SimTime) -> u64 {
        self.ns_since(earlier)
    }
}

impl fmt::Display for SimTime {
    /// Seconds with nanosecond precision, as ftrace prints timestamps (`12.000345678`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_displays_like_ftrace() {
        let t = SimTime(1_500_000_123);
        assert_eq!(t.to_string(), "1.500000123");
        assert_eq!(SimTime::MAX + 5, SimTime::MAX);
        assert_eq!(SimTime(3) - SimTime(5), 0);
        assert_eq!(SimTime(8) - SimTime(5), 3);
        assert_eq!(t.as_us(), 1_500_000);
    }
}
