//! `lbsim compare --plot`: one panel per metric, a bar per side (the mean over the seeds)
//! with a whisker of +/- one sample stddev, and the change in the panel's title, marked
//! `*` where Welch's t-test finds the sides different (the [`Comparison`] behind
//! `--format json`).

use lbsim_sim::experiment::{Comparison, MetricComparison};
use plotters::prelude::*;

use super::axis::Categories;
use super::{Area, BASE, DrawResult, FONT, PATCHED, SIGNIFICANT, tick, write_svg};
use crate::output::OutputFile;

/// Panels a row.
const COLS: usize = 3;

/// Draws comparison `c` of `base` against `patched` into `file`.
///
/// # Errors
/// One line naming `--plot` and the file.
pub fn write(
    file: &OutputFile,
    title: &str,
    base: &str,
    patched: &str,
    c: &Comparison,
) -> anyhow::Result<()> {
    let rows = c.metrics.len().div_ceil(COLS).max(1) as u32;
    write_svg(file, (1200, 110 + 330 * rows), |root| {
        let area = super::titled(
            root,
            &[
                format!("lbsim compare: {title}"),
                format!(
                    "base: {base}    patched: {patched}    ({} runs a side)",
                    c.runs
                ),
                "bar: mean over the runs; whisker: +/- sample stddev; * = significant by \
                 Welch's t-test (two-sided, p < 0.05)"
                    .to_owned(),
            ],
        )?;
        for (panel, m) in super::panels(&area, c.metrics.len(), COLS)
            .iter()
            .zip(&c.metrics)
        {
            metric(panel, m)?;
        }
        Ok(())
    })
}

/// A metric's caption: name, unit, change and the significance mark.
pub fn caption(
    name: &str,
    unit: &str,
    change_pct: f64,
    significant: bool,
    better: Option<bool>,
) -> String {
    let mark = match (significant, better) {
        (true, Some(true)) => " * better",
        (true, Some(false)) => " * worse",
        (true, None) => " *",
        _ => "",
    };
    format!(
        "{name} [{unit}]: {}{mark}",
        crate::commands::compare::fmt_change(change_pct)
    )
}

fn metric(area: &Area<'_>, m: &MetricComparison) -> DrawResult {
    let sides = [(&m.base, "base", BASE), (&m.patched, "patched", PATCHED)];
    let y = super::value_range(
        sides
            .iter()
            .flat_map(|(s, _, _)| [s.mean + s.stddev, s.mean - s.stddev]),
    );
    let mut chart = ChartBuilder::on(area)
        .caption(
            caption(&m.name, &m.unit, m.change_pct, m.significant, m.improved()),
            (FONT, 16)
                .into_font()
                .color(if m.significant { &SIGNIFICANT } else { &BLACK }),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(Categories { n: 2 }, y)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(m.unit.as_str())
        .x_label_formatter(&|v| ["base", "patched"][Categories::index(*v).min(1)].to_owned())
        .y_label_formatter(&|v| tick(*v))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 14))
        .draw()?;
    for (i, (s, _, colour)) in sides.iter().enumerate() {
        let x = i as f64;
        chart.draw_series([Rectangle::new(
            [(x + 0.2, 0.0), (x + 0.8, s.mean)],
            colour.filled(),
        )])?;
        chart.draw_series([ErrorBar::new_vertical(
            x + 0.5,
            s.mean - s.stddev,
            s.mean,
            s.mean + s.stddev,
            BLACK.stroke_width(2),
            16,
        )])?;
    }
    Ok(())
}
