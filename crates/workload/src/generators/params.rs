//! `NAME:key=value,...` parsing with typed errors; a key not given takes its declared
//! [`Key::default`].

use crate::generators::{Key, KeyDefault, WorkloadError};

/// The default unit of a bare duration number for one key (each follows the real tool's
/// option: schbench takes microseconds, sysbench seconds, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl Unit {
    fn ns(self) -> u64 {
        match self {
            Unit::Ns => 1,
            Unit::Us => 1_000,
            Unit::Ms => 1_000_000,
            Unit::S => 1_000_000_000,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Ms => "ms",
            Unit::S => "s",
        }
    }
}

/// Parses a duration: a decimal number with an optional unit suffix (`ns`, `us`, `ms`, `s`);
/// without a suffix, `default`. Exact integer arithmetic: `1.3ms` is 1 300 000 ns.
pub fn parse_duration(s: &str, default: Unit) -> Result<u64, String> {
    let s = s.trim();
    let (num, unit) = if let Some(n) = s.strip_suffix("ns") {
        (n, Unit::Ns)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, Unit::Us)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, Unit::Ms)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, Unit::S)
    } else {
        (s, default)
    };
    let bad = || {
        format!(
            "a duration like 30ms, 1.5s, 500us or a number of {}",
            default.name()
        )
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    if !int.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let scale = unit.ns();
    let int_v: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let mut total = int_v.checked_mul(scale).ok_or_else(bad)?;
    let mut place = scale;
    for c in frac.chars() {
        place /= 10;
        let d = u64::from(c.to_digit(10).expect("digit"));
        if place == 0 {
            if d != 0 {
                return Err(format!("{} (finer than 1 ns)", bad()));
            }
            continue;
        }
        total = total.checked_add(d * place).ok_or_else(bad)?;
    }
    Ok(total)
}

/// Parses a Linux cpulist (`0-3,8,10-11`) into sorted, deduplicated CPU ids.
pub fn parse_cpulist(s: &str) -> Result<Vec<u32>, String> {
    let bad = || "a CPU list like 0-3,8".to_string();
    let mut v = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(bad());
        }
        if let Some((a, b)) = part.split_once('-') {
            let a: u32 = a.trim().parse().map_err(|_| bad())?;
            let b: u32 = b.trim().parse().map_err(|_| bad())?;
            if b < a {
                return Err(format!("{} (range {a}-{b} is descending)", bad()));
            }
            if b - a > 65_535 {
                return Err(format!("{} (range {a}-{b} is too large)", bad()));
            }
            v.extend(a..=b);
        } else {
            v.push(part.parse().map_err(|_| bad())?);
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// The `key=value` pairs of one generator, consumed by typed getters; a key not given takes
/// its [`KeyDefault::Value`] (parsed as a given value is), and a getter without a fallback
/// reports a [`KeyDefault::Required`] key missing. [`Args::finish`] rejects keys nobody asked
/// for, listing the valid ones.
#[derive(Debug)]
pub struct Args {
    workload: &'static str,
    keys: &'static [Key],
    pairs: Vec<(String, String, bool)>,
}

impl Args {
    /// Splits `text` (after `NAME:`) on commas. A piece without `=` continues the previous
    /// value, so that lists read naturally: `cpus=0,2,sleep=10us` is `cpus=0,2` and
    /// `sleep=10us`.
    pub fn parse(
        workload: &'static str,
        keys: &'static [Key],
        text: &str,
    ) -> Result<Args, WorkloadError> {
        let valid: Vec<&str> = keys.iter().map(|k| k.name).collect();
        let mut pairs: Vec<(String, String, bool)> = Vec::new();
        if !text.trim().is_empty() {
            for piece in text.split(',') {
                if let Some((k, v)) = piece.split_once('=') {
                    let k = k.trim().to_string();
                    if k.is_empty() {
                        return Err(WorkloadError::BadSyntax {
                            workload: workload.to_string(),
                            message: format!("empty key in {piece:?}"),
                        });
                    }
                    if !valid.contains(&k.as_str()) {
                        return Err(WorkloadError::UnknownKey {
                            workload: workload.to_string(),
                            key: k,
                            valid: valid.join(", "),
                        });
                    }
                    if pairs.iter().any(|(pk, _, _)| *pk == k) {
                        return Err(WorkloadError::DuplicateKey {
                            workload: workload.to_string(),
                            key: k,
                        });
                    }
                    pairs.push((k, v.trim().to_string(), false));
                } else if let Some(last) = pairs.last_mut() {
                    last.1.push(',');
                    last.1.push_str(piece.trim());
                } else {
                    return Err(WorkloadError::BadSyntax {
                        workload: workload.to_string(),
                        message: format!(
                            "expected key=value, found {piece:?} (valid keys: {})",
                            valid.join(", ")
                        ),
                    });
                }
            }
        }
        Ok(Args {
            workload,
            keys,
            pairs,
        })
    }

    fn valid(&self) -> String {
        self.keys
            .iter()
            .map(|k| k.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The value given for `key`, else its declared default value.
    fn raw(&mut self, key: &str) -> Option<String> {
        let decl = self.keys.iter().find(|k| k.name == key);
        debug_assert!(decl.is_some(), "{key} not declared");
        let given = self.pairs.iter_mut().find(|(k, _, _)| k == key).map(|p| {
            p.2 = true;
            p.1.clone()
        });
        given.or_else(|| match decl?.default {
            KeyDefault::Value(v) => Some(v.to_owned()),
            _ => None,
        })
    }

    fn missing(&self, key: &str) -> WorkloadError {
        WorkloadError::MissingKey {
            workload: self.workload.to_string(),
            key: key.to_string(),
        }
    }

    fn bad(&self, key: &str, value: &str, expected: impl Into<String>) -> WorkloadError {
        WorkloadError::BadValue {
            workload: self.workload.to_string(),
            key: key.to_string(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// The text given for `key` (or its declared default), as is.
    pub fn text(&mut self, key: &str) -> Option<String> {
        self.raw(key)
    }

    /// True if `key` was given.
    pub fn has(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _, _)| k == key)
    }

    /// An integer in `min..=max`; `fallback` when neither given nor declared with a value
    /// (a [`KeyDefault::Derived`] key), a missing-key error if `None`.
    pub fn u64_or(
        &mut self,
        key: &str,
        fallback: Option<u64>,
        min: u64,
        max: u64,
    ) -> Result<u64, WorkloadError> {
        match self.raw(key) {
            Some(v) => match v.parse::<u64>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(self.bad(key, &v, format!("an integer in {min}..={max}"))),
            },
            None => fallback.ok_or_else(|| self.missing(key)),
        }
    }

    /// An integer in `min..=max`.
    pub fn u64_in(&mut self, key: &str, min: u64, max: u64) -> Result<u64, WorkloadError> {
        self.u64_or(key, None, min, max)
    }

    /// A `u32` in `min..=max`.
    pub fn u32_in(&mut self, key: &str, min: u32, max: u32) -> Result<u32, WorkloadError> {
        self.u64_in(key, u64::from(min), u64::from(max))
            .map(|v| v as u32)
    }

    /// A signed integer in `min..=max`.
    pub fn i32_in(&mut self, key: &str, min: i32, max: i32) -> Result<i32, WorkloadError> {
        match self.raw(key) {
            Some(v) => match v.parse::<i32>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(self.bad(key, &v, format!("an integer in {min}..={max}"))),
            },
            None => Err(self.missing(key)),
        }
    }

    /// A duration (see [`parse_duration`]) of at least `min_ns`; `fallback` as for
    /// [`Args::u64_or`].
    pub fn duration_or(
        &mut self,
        key: &str,
        fallback: Option<u64>,
        unit: Unit,
        min_ns: u64,
    ) -> Result<u64, WorkloadError> {
        match self.raw(key) {
            Some(v) => match parse_duration(&v, unit) {
                Ok(ns) if ns >= min_ns => Ok(ns),
                Ok(_) => Err(self.bad(key, &v, format!("a duration of at least {min_ns} ns"))),
                Err(e) => Err(self.bad(key, &v, e)),
            },
            None => fallback.ok_or_else(|| self.missing(key)),
        }
    }

    /// A duration (see [`parse_duration`]) of at least `min_ns`.
    pub fn duration(&mut self, key: &str, unit: Unit, min_ns: u64) -> Result<u64, WorkloadError> {
        self.duration_or(key, None, unit, min_ns)
    }

    /// An optional duration (a [`KeyDefault::Unset`] key).
    pub fn opt_duration(
        &mut self,
        key: &str,
        unit: Unit,
        min_ns: u64,
    ) -> Result<Option<u64>, WorkloadError> {
        if self.has(key) {
            self.duration(key, unit, min_ns).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A CPU list (`None` when not given).
    pub fn cpulist(&mut self, key: &str) -> Result<Option<Vec<u32>>, WorkloadError> {
        match self.raw(key) {
            Some(v) => parse_cpulist(&v)
                .map(Some)
                .map_err(|e| self.bad(key, &v, e)),
            None => Ok(None),
        }
    }

    /// One of `choices`.
    pub fn choice(
        &mut self,
        key: &str,
        choices: &'static [&'static str],
    ) -> Result<&'static str, WorkloadError> {
        match self.raw(key) {
            Some(v) => choices
                .iter()
                .copied()
                .find(|c| *c == v)
                .ok_or_else(|| self.bad(key, &v, format!("one of {}", choices.join(", ")))),
            None => Err(self.missing(key)),
        }
    }

    /// A boolean given as `0`/`1` (also `false`/`true`, `no`/`yes`).
    pub fn flag(&mut self, key: &str) -> Result<bool, WorkloadError> {
        match self.raw(key) {
            Some(v) => match v.as_str() {
                "1" | "true" | "yes" | "" => Ok(true),
                "0" | "false" | "no" => Ok(false),
                _ => Err(self.bad(key, &v, "0 or 1")),
            },
            None => Err(self.missing(key)),
        }
    }

    /// Errors if some given key was not consumed (a key valid for the generator in general but
    /// not in this combination is caught by the generator itself).
    pub fn finish(self) -> Result<(), WorkloadError> {
        if let Some((k, _, _)) = self.pairs.iter().find(|p| !p.2) {
            return Err(WorkloadError::UnknownKey {
                workload: self.workload.to_string(),
                key: k.clone(),
                valid: self.valid(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_exact() {
        assert_eq!(parse_duration("1.3ms", Unit::S), Ok(1_300_000));
        assert_eq!(parse_duration("30000", Unit::Us), Ok(30_000_000));
        assert_eq!(parse_duration("10", Unit::S), Ok(10_000_000_000));
        assert_eq!(parse_duration("0.5s", Unit::Ms), Ok(500_000_000));
        assert_eq!(parse_duration("250ns", Unit::S), Ok(250));
        assert_eq!(parse_duration(".5us", Unit::S), Ok(500));
        assert!(parse_duration("1.5ns", Unit::S).is_err());
        assert!(parse_duration("ms", Unit::S).is_err());
        assert!(parse_duration("-1ms", Unit::S).is_err());
        assert!(parse_duration("1e3", Unit::S).is_err());
        assert!(parse_duration("99999999999999999999s", Unit::S).is_err());
    }

    #[test]
    fn cpulists() {
        assert_eq!(parse_cpulist("0-3,8"), Ok(vec![0, 1, 2, 3, 8]));
        assert_eq!(parse_cpulist("5,1,1"), Ok(vec![1, 5]));
        assert!(parse_cpulist("3-1").is_err());
        assert!(parse_cpulist("a").is_err());
        assert!(parse_cpulist("1,,2").is_err());
    }

    #[test]
    fn list_values_continue_after_commas() {
        const KEYS: &[Key] = &[Key::required("cpus", "."), Key::value("sleep", "0", ".")];
        let mut a = Args::parse("pingpong", KEYS, "cpus=0,2,sleep=10us").unwrap();
        assert_eq!(a.cpulist("cpus").unwrap(), Some(vec![0, 2]));
        assert_eq!(a.duration("sleep", Unit::Us, 0).unwrap(), 10_000);
        a.finish().unwrap();
    }

    #[test]
    fn unknown_keys_list_valid_ones() {
        const KEYS: &[Key] = &[Key::value("loops", "1", ".")];
        let e = Args::parse("pipe", KEYS, "lops=3").unwrap_err();
        assert_eq!(
            e.to_string(),
            "pipe: unknown key \"lops\" (valid keys: loops)"
        );
        let e = Args::parse("pipe", KEYS, "loops=1,loops=2").unwrap_err();
        assert_eq!(e.to_string(), "pipe: key \"loops\" given twice");
        let e = Args::parse("pipe", KEYS, "3").unwrap_err();
        assert!(e.to_string().contains("expected key=value"));
    }
}
