//! Metrics: latency distributions and fairness measures.
//!
//! Samples are kept exactly, and percentiles use the nearest-rank definition, so summaries are
//! exact and deterministic; a run's sample count is bounded by its events.

/// Exact samples of a latency, in nanoseconds: those under 2^32 ns (4.3 s, nearly all) in four
/// bytes each, the others in eight.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Samples {
    small: Vec<u32>,
    large: Vec<u64>,
    sorted: bool,
}

/// A percentile summary of [`Samples`], in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    /// Number of samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Sum of the samples (for the mean).
    pub sum: u64,
}

impl Samples {
    /// Records one sample.
    pub fn record(&mut self, ns: u64) {
        match u32::try_from(ns) {
            Ok(v) => self.small.push(v),
            Err(_) => self.large.push(ns),
        }
        self.sorted = false;
    }

    /// The samples `ns`, room for them reserved at once (an exact-size iterator's).
    pub fn of(ns: impl ExactSizeIterator<Item = u64>) -> Samples {
        let mut s = Samples {
            small: Vec::with_capacity(ns.len()),
            ..Samples::default()
        };
        for v in ns {
            s.record(v);
        }
        s
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.small.len() + self.large.len()
    }

    /// Whether there is no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends all of `other`'s samples.
    pub fn extend(&mut self, other: &Samples) {
        self.small.extend_from_slice(&other.small);
        self.large.extend_from_slice(&other.large);
        self.sorted = false;
    }

    fn sort(&mut self) {
        if !self.sorted {
            self.small.sort_unstable();
            self.large.sort_unstable();
            self.sorted = true;
        }
    }

    /// The `k`-th smallest sample (from 0), once sorted: every small one is below every large
    /// one.
    fn nth(&self, k: usize) -> u64 {
        match self.small.get(k) {
            Some(&v) => u64::from(v),
            None => self.large[k - self.small.len()],
        }
    }

    /// The nearest-rank `permille`/1000 quantile: the smallest sample such that at least that
    /// fraction of samples is less than or equal to it. 0 without samples.
    pub fn quantile_permille(&mut self, permille: u64) -> u64 {
        self.sort();
        let n = self.len() as u64;
        if n == 0 {
            return 0;
        }
        let rank = (permille * n).div_ceil(1000).clamp(1, n);
        self.nth((rank - 1) as usize)
    }

    /// The `k`-th smallest sample (from 0), found by selection: afterwards the samples at
    /// `lo..k` are at most it and those after `k` at least it. The caller has placed every
    /// sample before `lo` (at most `k`) below those from `lo` on.
    fn select(&mut self, lo: usize, k: usize) -> u64 {
        let s = self.small.len();
        if k < s {
            self.small[lo..].select_nth_unstable(k - lo);
        } else {
            let llo = lo.saturating_sub(s);
            self.large[llo..].select_nth_unstable(k - s - llo);
        }
        self.nth(k)
    }

    /// The summary. Its quantiles are those of [`Samples::quantile_permille`], found by
    /// selection (ascending ranks, each searched among the samples above the last) rather
    /// than by sorting every sample.
    pub fn percentiles(&mut self) -> Percentiles {
        let n = self.len();
        if n == 0 {
            return Percentiles::default();
        }
        let mut q = [500, 900, 990, 999];
        if self.sorted {
            q = q.map(|permille| self.quantile_permille(permille));
        } else {
            let mut lo = 0;
            for v in &mut q {
                let rank = (*v * n as u64).div_ceil(1000).clamp(1, n as u64);
                let k = (rank - 1) as usize;
                *v = if k < lo {
                    self.nth(k)
                } else {
                    let x = self.select(lo, k);
                    lo = k + 1;
                    x
                };
            }
        }
        let small_min = self.small.iter().min().map(|&v| u64::from(v));
        let large_max = self.large.iter().max().copied();
        Percentiles {
            count: n as u64,
            p50: q[0],
            p90: q[1],
            p99: q[2],
            p999: q[3],
            min: small_min
                .or_else(|| self.large.iter().min().copied())
                .unwrap_or(0),
            max: large_max
                .or_else(|| self.small.iter().max().map(|&v| u64::from(v)))
                .unwrap_or(0),
            sum: self.small.iter().map(|&v| u64::from(v)).sum::<u64>()
                + self.large.iter().sum::<u64>(),
        }
    }
}

/// Fairness of a group of tasks' shares: the workload crate's definition (min/max ratio and
/// Jain's index), which the workloads' own reports use too.
pub use lbsim_workload::report::Fairness;

/// Fairness of `shares` (e.g. each task's work done in ns).
pub fn fairness(shares: &[u64]) -> Fairness {
    Fairness::of(shares)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut s = Samples::default();
        for v in (1..=100).rev() {
            s.record(v);
        }
        let p = s.percentiles();
        assert_eq!((p.p50, p.p90, p.p99, p.p999), (50, 90, 99, 100));
        assert_eq!((p.min, p.max, p.count, p.sum), (1, 100, 100, 5050));
        assert_eq!(Samples::default().percentiles(), Percentiles::default());
        // Samples of 2^32 ns and more are kept apart, and still rank above the others.
        let mut s = Samples::default();
        let big = u64::from(u32::MAX);
        for v in [big + 5, 3, big, big + 1, 1] {
            s.record(v);
        }
        let p = s.percentiles();
        assert_eq!((p.p50, p.p90, p.min, p.max), (big, big + 5, 1, big + 5));
        assert_eq!((p.count, p.sum), (5, 3 * big + 10));
    }

    /// The selection gives the sorted samples' quantiles, whatever the order and the ties,
    /// samples of 2^32 ns and more included.
    #[test]
    fn percentiles_by_selection_are_the_sorted_ones() {
        let big = u64::from(u32::MAX);
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for n in [1, 2, 3, 7, 10, 999, 1000, 1001, 4321] {
            for spread in [3, 1000, u64::MAX] {
                let mut s = Samples::default();
                let mut all = Vec::new();
                for _ in 0..n {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let v = if spread == u64::MAX {
                        big - 2 + x % 5
                    } else {
                        x % spread
                    };
                    s.record(v);
                    all.push(v);
                }
                all.sort_unstable();
                let mut sorted = s.clone();
                sorted.sort();
                let want = Percentiles {
                    count: n as u64,
                    p50: sorted.quantile_permille(500),
                    p90: sorted.quantile_permille(900),
                    p99: sorted.quantile_permille(990),
                    p999: sorted.quantile_permille(999),
                    min: all[0],
                    max: all[n - 1],
                    sum: all.iter().sum(),
                };
                assert_eq!(s.percentiles(), want, "n {n} spread {spread}");
                assert_eq!(sorted.percentiles(), want, "n {n} spread {spread}, sorted");
            }
        }
    }

    #[test]
    fn fairness_measures() {
        let f = fairness(&[100, 100, 100]);
        assert_eq!(f.min_max_ratio, 1.0);
        assert!((f.jain - 1.0).abs() < 1e-12);
        // Two tasks, one with half the other's share: ratio 0.5, Jain 9/10.
        let f = fairness(&[50, 100]);
        assert_eq!(f.min_max_ratio, 0.5);
        assert!((f.jain - 0.9).abs() < 1e-12);
        // One task starved entirely among n: Jain (n-1)/n.
        let f = fairness(&[0, 10, 10, 10]);
        assert_eq!(f.min_max_ratio, 0.0);
        assert!((f.jain - 0.75).abs() < 1e-12);
    }
}
