//! `lbsim run --plot`: the wake-up latency CDF, then every CPU's `nr_running` and root
//! `util_avg` over simulated time (the run's [`CpuSeries`], sampled at
//! [`series_period_ns`]).

use lbsim_sim::engine::{CpuSeries, RunResult};
use plotters::prelude::*;

use super::{Area, DrawResult, FONT, tick, write_svg};
use crate::output::OutputFile;

/// Up to this many CPUs get a line each; a larger machine gets its CPUs' least, mean and
/// greatest value at each sample.
pub const MAX_CPU_LINES: usize = 16;

/// The sampling period of a run's time series: 1 ms of simulated time, or the smallest whole
/// number of milliseconds that keeps a run of `run_ns` on `nr_cpus` CPUs to at most 2000
/// samples, and to at most 4 million values a series (`nr_cpus` x samples).
pub fn series_period_ns(run_ns: u64, nr_cpus: usize) -> u64 {
    const MS: u64 = 1_000_000;
    let samples = (4_000_000 / nr_cpus.max(1) as u64).clamp(100, 2000);
    let ms = run_ns.div_ceil(MS).div_ceil(samples).max(1);
    ms * MS
}

/// Draws run `r`'s figure (`title`: what ran) into `file`.
///
/// # Errors
/// One line naming `--plot` and the file.
pub fn write(file: &OutputFile, title: &str, r: &RunResult) -> anyhow::Result<()> {
    write_svg(file, (1100, 1200), |root| {
        let area = super::titled(
            root,
            &[
                format!("lbsim run: {title}"),
                format!(
                    "{:.3} s simulated, {} CPUs, {} wake-ups, {} migrations",
                    r.sim_time_ns as f64 / 1e9,
                    r.cpus.len(),
                    r.wakeup_latency.count,
                    r.migrations
                ),
            ],
        )?;
        let parts = area.split_evenly((3, 1));
        latency_cdf(&parts[0], r)?;
        if let Some(s) = &r.cpu_series {
            over_time(&parts[1], s, Signal::NrRunning)?;
            over_time(&parts[2], s, Signal::UtilAvg)?;
        }
        Ok(())
    })
}

/// The wake-up latency CDF on a log latency axis.
fn latency_cdf(area: &Area<'_>, r: &RunResult) -> DrawResult {
    let mut us: Vec<f64> = r
        .observations
        .wakeups
        .iter()
        .map(|w| w.latency_ns as f64 / 1000.0)
        .collect();
    us.sort_by(f64::total_cmp);
    let n = us.len();
    let least = us.iter().copied().find(|&v| v > 0.0).unwrap_or(0.1);
    let greatest = us.last().copied().unwrap_or(1.0).max(least * 10.0);
    let lo = 10f64.powf(least.log10().floor());
    let hi = 10f64.powf(greatest.log10().ceil());
    let l = &r.wakeup_latency;
    let caption = format!(
        "wake-up latency CDF: p50 {} us, p99 {} us, max {} us",
        tick(l.p50 as f64 / 1000.0),
        tick(l.p99 as f64 / 1000.0),
        tick(l.max as f64 / 1000.0)
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 18))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0f64..1.0)?;
    chart
        .configure_mesh()
        .x_desc("wake-up latency (us, wake to running; log scale)")
        .y_desc("fraction of wake-ups <= latency")
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;
    if n == 0 {
        area.draw(&Text::new(
            "no wake-ups in this run",
            (
                area.dim_in_pixel().0 as i32 / 2 - 80,
                area.dim_in_pixel().1 as i32 / 2,
            ),
            (FONT, 18),
        ))?;
        return Ok(());
    }
    // A step per wake-up, thinned to 2000 quantiles for a large run.
    let steps = n.min(2000);
    let mut pts = vec![(us[0].max(lo), 0.0)];
    for k in 0..steps {
        let i = if steps == n {
            k
        } else {
            k * (n - 1) / (steps - 1).max(1)
        };
        let x = us[i].max(lo);
        let y = (i + 1) as f64 / n as f64;
        pts.push((x, pts.last().map_or(0.0, |p| p.1)));
        pts.push((x, y));
    }
    chart
        .draw_series(LineSeries::new(pts, BLUE.stroke_width(2)))?
        .label(format!("{n} wake-ups"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 14))
        .draw()
}

#[derive(Clone, Copy)]
enum Signal {
    NrRunning,
    UtilAvg,
}

/// One signal of every CPU over time.
fn over_time(area: &Area<'_>, s: &CpuSeries, sig: Signal) -> DrawResult {
    let end_ns = s.times_ns.last().copied().unwrap_or(0);
    let (unit, div) = if end_ns >= 2_000_000_000 {
        ("s", 1e9)
    } else {
        ("ms", 1e6)
    };
    let value = |c: usize, i: usize| -> f64 {
        match sig {
            Signal::NrRunning => f64::from(s.nr_running[c][i]),
            Signal::UtilAvg => s.util_avg[c][i] as f64,
        }
    };
    let nr_cpus = s.nr_running.len();
    let greatest = (0..nr_cpus)
        .flat_map(|c| (0..s.times_ns.len()).map(move |i| (c, i)))
        .map(|(c, i)| value(c, i))
        .fold(0.0f64, f64::max);
    let (caption, y_desc, y_max) = match sig {
        Signal::NrRunning => (
            "nr_running per CPU",
            "rq->nr_running (tasks)",
            (greatest + 1.0).max(2.0),
        ),
        Signal::UtilAvg => (
            "util_avg per CPU (root cfs_rq)",
            "util_avg (capacity units, 1024 = a full CPU)",
            (greatest * 1.1).max(1100.0),
        ),
    };
    let period = s.period_ns as f64 / 1e6;
    let (plot, side) = area.split_horizontally(area.dim_in_pixel().0.saturating_sub(130));
    let mut keys: Vec<(String, RGBAColor)> = Vec::new();
    let mut chart = ChartBuilder::on(&plot)
        .caption(
            format!("{caption}, sampled every {} ms", tick(period)),
            (FONT, 18),
        )
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0f64..(end_ns as f64 / div).max(1e-9), 0.0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc(format!("simulated time ({unit})"))
        .y_desc(y_desc)
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;
    let t = |i: usize| s.times_ns[i] as f64 / div;
    let len = s.times_ns.len();
    if nr_cpus <= MAX_CPU_LINES {
        for c in 0..nr_cpus {
            let colour = Palette99::pick(c).to_rgba();
            chart.draw_series(LineSeries::new(
                (0..len).map(|i| (t(i), value(c, i))),
                colour.stroke_width(2),
            ))?;
            keys.push((format!("cpu{c}"), colour));
        }
    } else {
        // The least, mean and greatest over the CPUs at each sample.
        let mut least = Vec::with_capacity(len);
        let mut mean = Vec::with_capacity(len);
        let mut greatest = Vec::with_capacity(len);
        for i in 0..len {
            let v = (0..nr_cpus).map(|c| value(c, i));
            least.push(v.clone().fold(f64::MAX, f64::min));
            greatest.push(v.clone().fold(f64::MIN, f64::max));
            mean.push(v.sum::<f64>() / nr_cpus as f64);
        }
        let lines = [
            ("greatest", RED, greatest),
            ("mean", BLACK, mean),
            ("least", BLUE, least),
        ];
        for (name, colour, f) in lines {
            chart.draw_series(LineSeries::new(
                f.iter().enumerate().map(|(i, &v)| (t(i), v)),
                colour.stroke_width(2),
            ))?;
            keys.push((format!("{name} of {nr_cpus}"), colour.to_rgba()));
        }
    }
    super::legend(&side, &keys)
}
