//! `lbsim sweep --plot`: one panel per metric, its mean at every point of the grid with a
//! whisker of +/- one sample stddev, joined by a line; a point whose difference from the
//! first point Welch's t-test finds significant is drawn red and marked `*` (the sweep's
//! [`MetricJson`] behind `--format json`).

use plotters::prelude::*;

use super::axis::Categories;
use super::{Area, BASE, DrawResult, FONT, SIGNIFICANT, tick, write_svg};
use crate::commands::sweep::{Definition, MetricJson, grid};
use crate::output::OutputFile;

/// Panels a row.
const COLS: usize = 2;

/// Draws sweep `def`'s `metrics` (`seeds` seeds at every point) into `file`.
///
/// # Errors
/// One line naming `--plot` and the file.
pub fn write(
    file: &OutputFile,
    def: &Definition,
    metrics: &[MetricJson],
    seeds: usize,
) -> anyhow::Result<()> {
    let points = grid(&def.axes);
    let labels: Vec<String> = points.iter().map(|p| p.values.join("/")).collect();
    let axis_name = def
        .axes
        .iter()
        .map(|a| a.name.as_str())
        .collect::<Vec<_>>()
        .join(" / ");
    let rows = metrics.len().div_ceil(COLS).max(1) as u32;
    write_svg(file, (1200, 110 + 360 * rows), |root| {
        let area = super::titled(
            root,
            &[
                format!(
                    "lbsim sweep: {} on {}, over {axis_name}",
                    def.workloads.join(" "),
                    def.topology
                ),
                format!(
                    "{} points, {seeds} seeds each; point: mean, whisker: +/- sample stddev",
                    labels.len()
                ),
                "red with * = differs from the first point (Welch's t-test, two-sided, \
                 p < 0.05)"
                    .to_owned(),
            ],
        )?;
        for (panel, m) in super::panels(&area, metrics.len(), COLS)
            .iter()
            .zip(metrics)
        {
            metric(panel, m, &labels, &axis_name)?;
        }
        Ok(())
    })
}

fn metric(area: &Area<'_>, m: &MetricJson, labels: &[String], axis_name: &str) -> DrawResult {
    let n = m.points.len();
    let y = super::value_range(
        m.points
            .iter()
            .flat_map(|p| [p.mean + p.stddev, p.mean - p.stddev]),
    );
    let better = if m.higher_is_better {
        "higher"
    } else {
        "lower"
    };
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{} [{}], {better} is better", m.name, m.unit),
            (FONT, 16),
        )
        .margin(10)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(Categories { n }, y)?;
    let label = |v: &f64| {
        labels
            .get(Categories::index(*v))
            .cloned()
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        // About 40 px a label.
        .x_labels((area.dim_in_pixel().0 as usize / 40).max(2))
        .x_desc(axis_name)
        .y_desc(m.unit.as_str())
        .x_label_formatter(&label)
        .y_label_formatter(&|v| tick(*v))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()?;
    let x = |i: usize| i as f64 + 0.5;
    chart.draw_series(LineSeries::new(
        m.points.iter().enumerate().map(|(i, p)| (x(i), p.mean)),
        BASE.stroke_width(2),
    ))?;
    for (i, p) in m.points.iter().enumerate() {
        let colour = if p.significant { SIGNIFICANT } else { BASE };
        chart.draw_series([ErrorBar::new_vertical(
            x(i),
            p.mean - p.stddev,
            p.mean,
            p.mean + p.stddev,
            colour.stroke_width(2),
            10,
        )])?;
        chart.draw_series([Circle::new((x(i), p.mean), 4, colour.filled())])?;
        if p.significant {
            chart.draw_series([EmptyElement::at((x(i), p.mean + p.stddev))
                + Text::new("*", (-5, -22), (FONT, 20).into_font().color(&SIGNIFICANT))])?;
        }
    }
    Ok(())
}
