//! Progress of one long simulation on a terminal: `lbsim run` shows how much simulated time
//! has passed and an estimate of the wall time left, on stderr, once a run has taken more
//! than a second; nothing when stderr is not a terminal, and nothing for a short run.

// The estimate is wall-clock time: this is the front end, not the model.
#![allow(clippy::disallowed_methods)]

use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

/// Wall time before the first line is drawn.
const QUIET_FOR: Duration = Duration::from_secs(1);
/// Wall time between two redraws.
const REDRAW_EVERY: Duration = Duration::from_millis(250);

/// The progress line of one run.
#[derive(Debug)]
pub struct SimProgress {
    enabled: bool,
    start: Instant,
    last: Option<Instant>,
}

impl Default for SimProgress {
    fn default() -> SimProgress {
        SimProgress::new()
    }
}

impl SimProgress {
    /// A progress line, drawn only when stderr is a terminal.
    pub fn new() -> SimProgress {
        SimProgress {
            enabled: std::io::stderr().is_terminal(),
            start: Instant::now(),
            last: None,
        }
    }

    /// The line for simulated time `now_ns` of `end_ns` after `elapsed` of wall time.
    pub fn line(elapsed: Duration, now_ns: u64, end_ns: u64) -> String {
        let frac = if end_ns == 0 {
            1.0
        } else {
            now_ns as f64 / end_ns as f64
        };
        let left = if frac > 0.0 {
            format!(
                ", about {:.0} s left",
                elapsed.as_secs_f64() * (1.0 - frac) / frac
            )
        } else {
            String::new()
        };
        format!(
            "lbsim: simulated {:.3} s of {:.3} s ({:.0}%){left}",
            now_ns as f64 / 1e9,
            end_ns as f64 / 1e9,
            frac * 100.0
        )
    }

    /// Called with the simulated time as the run goes.
    pub fn update(&mut self, now_ns: u64, end_ns: u64) {
        if !self.enabled {
            return;
        }
        let t = Instant::now();
        let elapsed = t - self.start;
        if elapsed < QUIET_FOR || self.last.is_some_and(|l| t - l < REDRAW_EVERY) {
            return;
        }
        self.last = Some(t);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[K{}",
            SimProgress::line(elapsed, now_ns, end_ns)
        );
        let _ = err.flush();
    }

    /// Erases the line if one was drawn.
    pub fn finish(&mut self) {
        if self.last.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_how_far_and_how_long_is_left() {
        assert_eq!(
            SimProgress::line(Duration::from_secs(10), 2_500_000_000, 10_000_000_000),
            "lbsim: simulated 2.500 s of 10.000 s (25%), about 30 s left"
        );
        assert_eq!(
            SimProgress::line(Duration::from_secs(2), 0, 1_000_000_000),
            "lbsim: simulated 0.000 s of 1.000 s (0%)"
        );
    }

    #[test]
    fn nothing_is_drawn_off_a_terminal() {
        let mut p = SimProgress {
            enabled: false,
            start: Instant::now() - Duration::from_secs(5),
            last: None,
        };
        p.update(1, 2);
        assert!(p.last.is_none());
    }
}
