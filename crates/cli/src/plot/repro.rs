//! `lbsim repro --plot`: one panel per row of the report (experiment, parameter point,
//! metric, statistic): for base and for patched, the number the mailing list reported (grey)
//! beside lbsim's (coloured, with a whisker of +/- one sample stddev for a mean), the
//! simulated change in the title, marked `*` where Welch's t-test finds the simulated sides
//! different (the [`ReproJson`] behind `--format json`).

use plotters::prelude::*;

use super::axis::Categories;
use super::{Area, BASE, DrawResult, FONT, PATCHED, REPORTED, SIGNIFICANT, tick, write_svg};
use crate::output::OutputFile;
use crate::repro::{ExperimentJson, ParamValue, ReproJson, RowJson};

/// Panels a row.
const COLS: usize = 4;

/// Draws report `r` into `file`.
///
/// # Errors
/// One line naming `--plot` and the file.
pub fn write(file: &OutputFile, r: &ReproJson<'_>) -> anyhow::Result<()> {
    let rows: Vec<(&ExperimentJson<'_>, &RowJson<'_>)> = r
        .experiments
        .iter()
        .flat_map(|e| e.rows.iter().map(move |row| (e, row)))
        .collect();
    let lines = rows.len().div_ceil(COLS).max(1) as u32;
    write_svg(file, (1600, 120 + 300 * lines), |root| {
        let area = super::titled(
            root,
            &[
                "lbsim repro: the reported numbers beside lbsim's".to_owned(),
                "grey: reported on the mailing list; blue (base) and orange (patched): lbsim, \
                 whisker +/- sample stddev over the runs (a `worst` row: the worst run)"
                    .to_owned(),
                "* = lbsim's base and patched differ significantly (Welch's t-test, \
                 two-sided, p < 0.05); a missing bar: no number"
                    .to_owned(),
            ],
        )?;
        for (panel, (e, row)) in super::panels(&area, rows.len(), COLS).iter().zip(&rows) {
            one_row(panel, e, row)?;
        }
        Ok(())
    })
}

/// `fairness threads=9`.
fn row_title(e: &ExperimentJson<'_>, row: &RowJson<'_>) -> String {
    let mut s = e.name.to_owned();
    for (k, v) in &row.params {
        match v {
            ParamValue::Number(n) => s.push_str(&format!(" {k}={n}")),
            ParamValue::Text(t) => s.push_str(&format!(" {k}={t}")),
        }
    }
    s
}

fn one_row(area: &Area<'_>, e: &ExperimentJson<'_>, row: &RowJson<'_>) -> DrawResult {
    let sides = [
        (
            row.reported_base,
            row.sim_base_mean,
            row.sim_base_stddev,
            BASE,
        ),
        (
            row.reported_patched,
            row.sim_patched_mean,
            row.sim_patched_stddev,
            PATCHED,
        ),
    ];
    let y = super::value_range(sides.iter().flat_map(|&(rep, mean, sd, _)| {
        let m = mean.unwrap_or(0.0);
        let d = sd.unwrap_or(0.0);
        [rep.unwrap_or(0.0), m + d, m - d]
    }));
    let (title_area, chart_area) = area.split_vertically(44);
    // As the text table: a mark for a mean row (a worst run is no sample to test).
    let significant = row.significant && row.stat == "mean";
    let mark = if significant { " *" } else { "" };
    let change = row
        .change_pct
        .map_or("-".to_owned(), crate::commands::compare::fmt_change);
    title_area.draw(&Text::new(
        row_title(e, row),
        (10, 6),
        (FONT, 15).into_font().color(&BLACK),
    ))?;
    title_area.draw(&Text::new(
        format!("{} ({}) lbsim change {change}{mark}", row.metric, row.stat),
        (10, 25),
        (FONT, 13)
            .into_font()
            .color(if significant { &SIGNIFICANT } else { &BLACK }),
    ))?;
    let mut chart = ChartBuilder::on(&chart_area)
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(62)
        .build_cartesian_2d(Categories { n: 2 }, y)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(row.unit)
        .x_label_formatter(&|v| ["base", "patched"][Categories::index(*v).min(1)].to_owned())
        .y_label_formatter(&|v| tick(*v))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 13))
        .draw()?;
    for (i, &(rep, mean, sd, colour)) in sides.iter().enumerate() {
        let x = i as f64;
        if let Some(v) = rep {
            chart.draw_series([Rectangle::new(
                [(x + 0.1, 0.0), (x + 0.48, v)],
                REPORTED.filled(),
            )])?;
        }
        if let Some(m) = mean {
            chart.draw_series([Rectangle::new(
                [(x + 0.52, 0.0), (x + 0.9, m)],
                colour.filled(),
            )])?;
            if let Some(d) = sd {
                chart.draw_series([ErrorBar::new_vertical(
                    x + 0.71,
                    m - d,
                    m,
                    m + d,
                    BLACK.stroke_width(2),
                    10,
                )])?;
            }
        }
    }
    Ok(())
}
