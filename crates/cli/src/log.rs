//! `-v` and `RUST_LOG`: the model's log events ([`lbsim_sim::log`]) on standard error, each
//! stamped with the simulated time of the record it shows.
//!
//! `-v` shows the decision points (`lbsim=debug`: load_balance() passes, placements,
//! migrations), `-vv` every tracepoint (`lbsim=trace`); `RUST_LOG` takes `tracing`'s filter
//! syntax instead (`RUST_LOG=lbsim::lb=debug`) and wins over `-v`. Without either, no
//! subscriber is installed and the model records nothing for it.

use std::fmt;

use anyhow::Context as _;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// Prints the simulated time of the record being logged, as ftrace prints its timestamps
/// (`SECONDS.NANOSECONDS`).
struct SimClock;

impl FormatTime for SimClock {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let t = lbsim_sim::log::clock_ns();
        write!(w, "{:5}.{:09}", t / 1_000_000_000, t % 1_000_000_000)
    }
}

/// The filter of `RUST_LOG` (when set and not empty), else of `verbose` (the count of `-v`):
/// `None` when nothing is to be logged.
///
/// # Errors
/// A `RUST_LOG` that is not a valid filter.
pub fn filter(rust_log: Option<&str>, verbose: u8) -> anyhow::Result<Option<EnvFilter>> {
    if let Some(spec) = rust_log.filter(|s| !s.trim().is_empty()) {
        let f = EnvFilter::builder()
            .parse(spec)
            .with_context(|| format!("RUST_LOG `{spec}` is not a log filter"))?;
        return Ok(Some(f));
    }
    Ok(match verbose {
        0 => None,
        1 => Some(EnvFilter::new("lbsim=debug")),
        _ => Some(EnvFilter::new("lbsim=trace")),
    })
}

/// Installs the subscriber for `filter`, writing to standard error.
pub fn install(filter: EnvFilter) {
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SimClock)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}
