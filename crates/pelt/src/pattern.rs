//! Durations (`4ms`, `1.5us`) and run/sleep patterns (`always`,
//! `run=4ms,sleep=12ms`) as `lbsim pelt` takes them.

use core::fmt;
use core::str::FromStr;

use crate::error::PeltError;

/// Parses a duration: a decimal number (an optional fraction is allowed when
/// the result is a whole number of nanoseconds) followed by `ns`, `us`, `ms`
/// or `s`. Returns nanoseconds.
///
/// # Errors
/// [`PeltError`] naming the text when it is empty, has no number or no known
/// unit, is not a whole number of nanoseconds, or overflows u64.
pub fn parse_duration_ns(text: &str) -> Result<u64, PeltError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(PeltError::EmptyDuration);
    }
    let num_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(num_end);
    let owned = || text.trim().to_owned();
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int_part.is_empty() && frac_part.is_empty()
        || frac_part.contains('.')
        || num.starts_with('.')
    {
        return Err(PeltError::InvalidNumber { text: owned() });
    }
    let unit = unit.trim_start();
    let mult: u64 = match unit {
        "" => return Err(PeltError::MissingUnit { text: owned() }),
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        other => {
            return Err(PeltError::UnknownUnit {
                text: owned(),
                unit: other.to_owned(),
            });
        }
    };
    let overflow = || PeltError::DurationOverflow { text: owned() };
    let int: u64 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| overflow())?
    };
    let mut ns = int.checked_mul(mult).ok_or_else(overflow)?;
    // The fraction: digits beyond the unit's resolution must be zeros.
    let frac_digits = frac_part.trim_end_matches('0');
    if !frac_digits.is_empty() {
        let mut scale = mult;
        let mut frac_ns: u64 = 0;
        for d in frac_digits.bytes() {
            if !scale.is_multiple_of(10) {
                return Err(PeltError::FractionalNanoseconds { text: owned() });
            }
            scale /= 10;
            frac_ns += u64::from(d - b'0') * scale;
        }
        ns = ns.checked_add(frac_ns).ok_or_else(overflow)?;
    }
    Ok(ns)
}

/// Formats nanoseconds with the largest unit that represents them exactly.
#[must_use]
pub fn format_duration_ns(ns: u64) -> String {
    for (mult, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns != 0 && ns.is_multiple_of(mult) {
            return format!("{}{unit}", ns / mult);
        }
    }
    format!("{ns}ns")
}

/// What the task does during one pattern item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The task runs.
    Run,
    /// The task sleeps.
    Sleep,
}

/// One `run=DUR` or `sleep=DUR` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatternItem {
    /// Run or sleep.
    pub phase: Phase,
    /// How long, in ns (greater than zero).
    pub duration_ns: u64,
}

/// A task's behaviour over time, starting at time 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// The task runs all the time.
    Always,
    /// The items in order, repeated for ever (at least one item).
    Cycle(Vec<PatternItem>),
}

impl FromStr for Pattern {
    type Err = PeltError;

    fn from_str(s: &str) -> Result<Self, PeltError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(PeltError::EmptyPattern);
        }
        if s == "always" {
            return Ok(Self::Always);
        }
        let mut items = Vec::new();
        for (i, raw) in s.split(',').enumerate() {
            let index = i + 1;
            let item = raw.trim();
            let bad = || PeltError::BadPatternItem {
                index,
                item: item.to_owned(),
            };
            let (key, value) = item.split_once('=').ok_or_else(bad)?;
            let phase = match key.trim() {
                "run" => Phase::Run,
                "sleep" => Phase::Sleep,
                _ => return Err(bad()),
            };
            let duration_ns =
                parse_duration_ns(value).map_err(|e| PeltError::BadPatternDuration {
                    index,
                    item: item.to_owned(),
                    reason: Box::new(e),
                })?;
            if duration_ns == 0 {
                return Err(PeltError::ZeroPatternDuration {
                    index,
                    item: item.to_owned(),
                });
            }
            items.push(PatternItem { phase, duration_ns });
        }
        Ok(Self::Cycle(items))
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Always => f.write_str("always"),
            Self::Cycle(items) => {
                for (i, it) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    let key = match it.phase {
                        Phase::Run => "run",
                        Phase::Sleep => "sleep",
                    };
                    write!(f, "{key}={}", format_duration_ns(it.duration_ns))?;
                }
                Ok(())
            }
        }
    }
}

/// Walks a [`Pattern`] from time 0: the phase at the current time and the
/// instant of the next change of phase.
#[derive(Debug, Clone)]
pub(crate) struct PhaseCursor<'a> {
    items: &'a [PatternItem],
    /// The phase from the last change on.
    pub(crate) phase: Phase,
    /// When the phase next changes (`u64::MAX`: never).
    pub(crate) next_change: u64,
    /// Index of the item that starts at `next_change`.
    next_idx: usize,
}

impl<'a> PhaseCursor<'a> {
    pub(crate) fn new(pattern: &'a Pattern) -> Self {
        match pattern {
            Pattern::Always => Self {
                items: &[],
                phase: Phase::Run,
                next_change: u64::MAX,
                next_idx: 0,
            },
            Pattern::Cycle(items) => {
                let mut c = Self {
                    items,
                    phase: items[0].phase,
                    next_change: 0,
                    next_idx: 0,
                };
                c.advance();
                c
            }
        }
    }

    /// Moves to the next phase change: the items from `next_idx` with the same
    /// phase run back to back; the first item of another phase ends them.
    pub(crate) fn advance(&mut self) {
        let Some(first) = self.items.get(self.next_idx) else {
            self.next_change = u64::MAX;
            return;
        };
        self.phase = first.phase;
        let start = self.next_change;
        let mut end = start;
        let n = self.items.len();
        let mut idx = self.next_idx;
        for _ in 0..n {
            let it = self.items[idx];
            if it.phase != self.phase {
                self.next_change = end;
                self.next_idx = idx;
                return;
            }
            end = end.saturating_add(it.duration_ns);
            idx = (idx + 1) % n;
        }
        // Every item has the same phase: it never changes.
        self.next_change = u64::MAX;
    }
}

#[cfg(test)]
mod tests;
