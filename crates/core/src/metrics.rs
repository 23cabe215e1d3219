//! Metrics: latency distributions and fairness measures.
//!
//! Samples are kept exactly (a `Vec<u64>`), and percentiles use the nearest-rank definition,
//! so summaries are exact and deterministic; a run's sample count is bounded by its events.

/// Exact samples of a latency, in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Samples {
    values: Vec<u64>,
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
        self.values.push(ns);
        self.sorted = false;
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there is no sample.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Appends all of `other`'s samples.
    pub fn extend(&mut self, other: &Samples) {
        self.values.extend_from_slice(&other.values);
        self.sorted = false;
    }

    fn sort(&mut self) {
        if !self.sorted {
            self.values.sort_unstable();
            self.sorted = true;
        }
    }

    /// The nearest-rank `permille`/1000 quantile: the smallest sample such that at least that
    /// fraction of samples is less than or equal to it. 0 without samples.
    pub fn quantile_permille(&mut self, permille: u64) -> u64 {
        self.sort();
        let n = self.values.len() as u64;
        if n == 0 {
            return 0;
        }
        let rank = (permille * n).div_ceil(1000).clamp(1, n);
        self.values[(rank - 1) as usize]
    }

    /// The summary.
    pub fn percentiles(&mut self) -> Percentiles {
        self.sort();
        Percentiles {
            count: self.values.len() as u64,
            p50: self.quantile_permille(500),
            p90: self.quantile_permille(900),
            p99: self.quantile_permille(990),
            p999: self.quantile_permille(999),
            min: self.values.first().copied().unwrap_or(0),
            max: self.values.last().copied().unwrap_or(0),
            sum: self.values.iter().sum(),
        }
    }

    /// The samples in recording order, or sorted if a summary was taken.
    pub fn values(&self) -> &[u64] {
        &self.values
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
