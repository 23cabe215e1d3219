//! A categorical axis for bar and point plots: `n` categories side by side, category `i`
//! spanning `[i, i + 1)` with its tick (and label) at its centre.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};

/// `n` categories on an `f64` axis.
#[derive(Clone, Debug)]
pub struct Categories {
    /// How many.
    pub n: usize,
}

impl Categories {
    /// The category a tick at `v` labels (ticks are at the centres).
    pub fn index(v: f64) -> usize {
        (v - 0.5).round().max(0.0) as usize
    }
}

impl Ranged for Categories {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let n = self.n.max(1) as f64;
        let span = f64::from(limit.1 - limit.0);
        limit.0 + (value / n * span).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Every category's centre, or every k-th one when the hint allows fewer.
        let n = self.n.max(1);
        let max = hint.max_num_points().max(1);
        let step = n.div_ceil(max).max(1);
        (0..n).step_by(step).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.n.max(1) as f64
    }
}

impl ValueFormatter<f64> for Categories {
    fn format(value: &f64) -> String {
        Categories::index(*value).to_string()
    }
}
