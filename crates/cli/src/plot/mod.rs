//! `--plot FILE.svg`: the SVG figures of `run`, `compare`, `sweep` and `repro`, drawn with
//! plotters' SVG backend (text is written as SVG text elements, so no font is read), one
//! module per kind of figure, each fed from the result type the command's JSON output is
//! made from. The file goes through [`OutputFile`]: whole or not at all, never over an
//! existing file without `--force`.

pub mod axis;
pub mod compare;
pub mod repro;
pub mod run;
pub mod sweep;

use std::path::Path;

use anyhow::bail;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::output::OutputFile;

/// The drawing area every figure draws on.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// What drawing on an [`Area`] can fail with.
pub type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// The font of every text, with its size in pixels.
pub const FONT: &str = "sans-serif";

/// The base side's colour (and a sweep's line).
pub const BASE: RGBColor = RGBColor(55, 110, 180);
/// The patched side's colour.
pub const PATCHED: RGBColor = RGBColor(230, 120, 30);
/// The colour of a reported (seed) number.
pub const REPORTED: RGBColor = RGBColor(170, 170, 170);
/// The colour of a significance mark.
pub const SIGNIFICANT: RGBColor = RGBColor(200, 20, 20);

/// Checks a `--plot` path before any work: it names an `.svg` file that can be written
/// ([`OutputFile::new`]).
///
/// # Errors
/// One line naming `--plot` and the file.
pub fn plot_file(path: Option<&Path>, force: bool) -> anyhow::Result<Option<OutputFile>> {
    let Some(path) = path else {
        return Ok(None);
    };
    if path
        .extension()
        .is_none_or(|e| !e.eq_ignore_ascii_case("svg"))
    {
        bail!(
            "--plot {}: lbsim draws SVG only; name the file FILE.svg",
            path.display()
        );
    }
    OutputFile::new("--plot", path, force).map(Some)
}

/// Draws a `width` x `height` figure with `draw` on a white page and writes it to `file`.
///
/// # Errors
/// One line naming `--plot` and the file when drawing or writing fails.
pub fn write_svg(
    file: &OutputFile,
    (width, height): (u32, u32),
    draw: impl FnOnce(&Area<'_>) -> DrawResult,
) -> anyhow::Result<()> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present())
            .map_err(|e| {
                anyhow::anyhow!("--plot {}: drawing failed: {e}", file.path().display())
            })?;
    }
    file.write(|w| w.write_all(svg.as_bytes()))
}

/// A figure's title line at the top of `root`, returning the area below it.
pub fn titled<'a>(
    root: &Area<'a>,
    lines: &[String],
) -> Result<Area<'a>, DrawingAreaErrorKind<std::io::Error>> {
    let line_px = 22;
    let head = 10 + line_px * lines.len() as u32;
    let (top, rest) = root.split_vertically(head);
    for (i, l) in lines.iter().enumerate() {
        let size = if i == 0 { 20 } else { 15 };
        top.draw(&Text::new(
            l.clone(),
            (12, 8 + line_px as i32 * i as i32),
            (FONT, size).into_font().color(&BLACK),
        ))?;
    }
    Ok(rest)
}

/// A legend in its own column (`area`, beside the chart): a line of each entry's colour and
/// its name, one a row.
pub fn legend(area: &Area<'_>, entries: &[(String, RGBAColor)]) -> DrawResult {
    for (i, (name, colour)) in entries.iter().enumerate() {
        let y = 40 + 19 * i as i32;
        area.draw(&PathElement::new([(6, y), (30, y)], colour.stroke_width(4)))?;
        area.draw(&Text::new(
            name.clone(),
            (36, y - 7),
            (FONT, 14).into_font().color(&BLACK),
        ))?;
    }
    Ok(())
}

/// Splits `area` into `n` panels, `cols` a row.
pub fn panels<'a>(area: &Area<'a>, n: usize, cols: usize) -> Vec<Area<'a>> {
    let cols = cols.max(1);
    let rows = n.div_ceil(cols).max(1);
    area.split_evenly((rows, cols))
        .into_iter()
        .take(n)
        .collect()
}

/// A value axis's range over `values` (and 0 when they are all on one side of it), with a
/// margin above for the marks.
pub fn value_range(values: impl IntoIterator<Item = f64>) -> std::ops::Range<f64> {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for v in values.into_iter().filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi - lo <= f64::EPSILON {
        hi = lo + 1.0;
    }
    let pad = (hi - lo) * 0.15;
    (if lo < 0.0 { lo - pad } else { lo })..(hi + pad)
}

/// A tick label: about three significant digits, no trailing zeros.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    let s = if a == 0.0 {
        "0".to_owned()
    } else if a >= 10_000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests;
