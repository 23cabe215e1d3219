//! How much work one core does with `n` of its hardware threads busy.
//!
//! Two busy SMT siblings share one core's pipelines: together they do more than one thread
//! alone, but each does less. The kernel does not see this (on x86 `arch_scale_cpu_capacity()`
//! is 1024 for every logical CPU, and nothing scales PELT by sibling activity); only the
//! progress of work does. A table gives the core's total throughput by the number of busy
//! threads, relative to one busy thread; each busy thread progresses at `total / n`.
//!
//! Sources of the preset values (the published figure each default comes from):
//! - Intel Hyper-Threading (`x86-4c-smt2`, `xeon-4s`): total 1.2 at 2 threads. AnandTech,
//!   "Assessing IBM's POWER8, Part 1", p. 4 (2016, <https://www.anandtech.com/show/10435>):
//!   the HT gain is "relatively small (10-20%) in many applications"; Intel has claimed up
//!   to 30%. 1.2 is the top of the typical range.
//! - AMD Zen (`epyc-2s`): total 1.36 at 2 threads: the average SMT gain of +35.8% measured
//!   on Zen 1 (<http://zen.looncraz.net/smt_ccx.php>, an enthusiast measurement); later Zen
//!   generations are assumed alike (unverified).
//! - IBM POWER8 (`power8-22c`): total 1.6 at 2 threads (the same AnandTech page: IBM claims
//!   +60%, a thread under SMT2 runs at about 80% of its single-thread speed). Beyond two
//!   threads no figure was verified: lbsim assumes a saturating curve (below).
//! - Cavium ThunderX2 (`tx2-2n`, SMT4): no published figure was found; lbsim uses the generic
//!   default below, an assumption.
//!
//! Beyond the last listed thread count each further thread adds half the previous increment
//! (1.0, 1.6, 1.9, 2.05, ... for POWER8): an assumption, not a measurement. A machine with no
//! table of its own gets [`SmtThroughput::DEFAULT_TWO_THREADS`] at two threads, saturating
//! likewise. `ideal` gives every busy thread a whole core (lbsim's ideal machine; not what
//! hardware does).

use std::fmt;

use crate::spec::SpecError;

/// Fixed-point scale of the per-thread speed factors.
const SCALE: u64 = 1024;

/// Total core throughput by number of busy threads, as per-thread speed factors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmtThroughput {
    /// The totals given for 2, 3, ... busy threads (empty: [`SmtThroughput::ideal`]), in
    /// thousandths, as written.
    totals_milli: Vec<u32>,
    /// Per-thread speed in 1/1024 for `n` busy threads at index `n - 1`, up to
    /// [`SmtThroughput::MAX_THREADS`].
    speed_1024: Vec<u32>,
}

impl SmtThroughput {
    /// The most hardware threads per core the table covers.
    pub const MAX_THREADS: usize = 64;
    /// Total throughput at two busy threads for a machine with no table of its own (the
    /// Intel HT figure above), in thousandths.
    pub const DEFAULT_TWO_THREADS: u32 = 1200;

    /// Every busy thread progresses as if it had the core to itself.
    pub fn ideal() -> SmtThroughput {
        SmtThroughput {
            totals_milli: Vec::new(),
            speed_1024: vec![SCALE as u32; Self::MAX_THREADS],
        }
    }

    /// The table for a machine that gives none.
    pub fn default_table() -> SmtThroughput {
        SmtThroughput::from_totals(&[Self::DEFAULT_TWO_THREADS]).expect("valid default")
    }

    /// A table from the totals at 2, 3, ... busy threads, in thousandths of one thread's
    /// throughput; further threads saturate (each adds half the previous increment). Each
    /// total must be at least the previous one and at most the thread count.
    pub fn from_totals(totals_milli: &[u32]) -> Result<SmtThroughput, SpecError> {
        if totals_milli.is_empty() {
            return Ok(SmtThroughput::ideal());
        }
        let mut totals = vec![1000u64];
        for (i, &t) in totals_milli.iter().enumerate() {
            let threads = i as u64 + 2;
            let prev = *totals.last().expect("nonempty");
            if u64::from(t) < prev || u64::from(t) > threads * 1000 {
                return Err(SpecError::BadSmtThroughput {
                    value: format!("{}.{:03}", t / 1000, t % 1000),
                    reason: format!(
                        "the total at {threads} threads must be between {}.{:03} (the total at one \
                         thread fewer) and {threads}",
                        prev / 1000,
                        prev % 1000
                    ),
                });
            }
            totals.push(u64::from(t));
        }
        while totals.len() < Self::MAX_THREADS {
            let n = totals.len();
            let inc = totals[n - 1] - totals[n - 2];
            totals.push(totals[n - 1] + inc / 2);
        }
        let speed_1024 = totals
            .iter()
            .enumerate()
            .map(|(i, &t)| ((t * SCALE + 500 * (i as u64 + 1)) / (1000 * (i as u64 + 1))) as u32)
            .collect();
        Ok(SmtThroughput {
            totals_milli: totals_milli.to_vec(),
            speed_1024,
        })
    }

    /// Parses `ideal` or the totals at 2, 3, ... threads as decimals separated by commas
    /// (`1.2`, `1.6,1.9`).
    pub fn parse(text: &str) -> Result<SmtThroughput, SpecError> {
        let text = text.trim();
        if text == "ideal" {
            return Ok(SmtThroughput::ideal());
        }
        let mut totals = Vec::new();
        for item in text.split(',') {
            let item = item.trim();
            totals.push(parse_milli(item).ok_or_else(|| {
                SpecError::BadSmtThroughput {
                    value: item.to_owned(),
                    reason:
                        "expected `ideal` or decimal totals for 2, 3, ... busy threads (`1.2`, \
                         `1.6,1.9`)"
                            .to_owned(),
                }
            })?);
        }
        SmtThroughput::from_totals(&totals)
    }

    /// Whether every busy thread runs at full speed.
    pub fn is_ideal(&self) -> bool {
        self.totals_milli.is_empty()
    }

    /// The speed of each of `busy` busy threads of one core, in 1/1024 of a whole core's
    /// (1024 for one busy thread).
    pub fn thread_speed_1024(&self, busy: usize) -> u32 {
        let i = busy.clamp(1, Self::MAX_THREADS) - 1;
        self.speed_1024[i]
    }
}

/// `1.25` -> 1250; at most three decimals.
fn parse_milli(s: &str) -> Option<u32> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() || frac.len() > 3 || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let int: u32 = int.parse().ok().filter(|&v| v <= 64)?;
    let frac: u32 = format!("{frac:0<3}").parse().ok()?;
    Some(int * 1000 + frac)
}

impl Default for SmtThroughput {
    fn default() -> SmtThroughput {
        SmtThroughput::default_table()
    }
}

/// `ideal`, or the totals as given (`1.2`, `1.6,1.9`).
impl fmt::Display for SmtThroughput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_ideal() {
            return f.write_str("ideal");
        }
        for (i, t) in self.totals_milli.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let frac = format!("{:03}", t % 1000);
            let frac = frac.trim_end_matches('0');
            if frac.is_empty() {
                write!(f, "{}.0", t / 1000)?;
            } else {
                write!(f, "{}.{frac}", t / 1000)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_busy_thread_has_the_whole_core() {
        for t in [SmtThroughput::ideal(), SmtThroughput::parse("1.6").unwrap()] {
            assert_eq!(t.thread_speed_1024(1), 1024);
        }
    }

    #[test]
    fn two_busy_threads_each_progress_at_half_the_total() {
        // Rule: each of n busy threads runs at total(n) / n.
        let t = SmtThroughput::parse("1.2").unwrap();
        assert_eq!(t.thread_speed_1024(2), 614); // 1.2 / 2 * 1024 = 614.4
        let p8 = SmtThroughput::parse("1.6").unwrap();
        assert_eq!(p8.thread_speed_1024(2), 819); // 0.8 of single-thread speed (AnandTech)
    }

    #[test]
    fn beyond_the_table_each_thread_adds_half_the_previous_increment() {
        let p8 = SmtThroughput::parse("1.6").unwrap();
        // totals 1.0, 1.6, 1.9, 2.05: per thread 1.9/3 and 2.05/4.
        assert_eq!(p8.thread_speed_1024(3), 649);
        assert_eq!(p8.thread_speed_1024(4), 525);
    }

    #[test]
    fn ideal_is_full_speed_at_any_count() {
        let t = SmtThroughput::ideal();
        assert_eq!(t.thread_speed_1024(8), 1024);
        assert_eq!(t.to_string(), "ideal");
    }

    #[test]
    fn bad_tables_are_refused() {
        for bad in ["0.9", "2.5", "1.6,1.5", "x", "1.2345", ""] {
            assert!(SmtThroughput::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            SmtThroughput::parse("1.6,1.9").unwrap().to_string(),
            "1.6,1.9"
        );
    }
}
