//! The picture `model test --plot` draws: predicted against actual, one
//! point per row, on log–log axes when the values span decades (runtimes
//! usually do), with the line of perfect prediction. A PNG by `plotters`,
//! with the system's DejaVu Sans (Debian's fonts-dejavu-core), so it needs
//! no network and no display.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

const FONTS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Makes a TrueType font known to plotters as `sans-serif` (once per
/// process; later calls do nothing).
pub fn register_system_font() -> Result<(), String> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let path = FONTS
            .iter()
            .find(|p| Path::new(p).exists())
            .ok_or("no DejaVu Sans font (install fonts-dejavu-core)")?;
        let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("cannot load font {path}"))
    })
    .clone()
}

/// Draws predicted against actual values into a PNG.
pub fn predicted_vs_actual(
    path: &Path,
    title: &str,
    actual: &[f64],
    predicted: &[f64],
) -> Result<(), String> {
    register_system_font()?;
    let e = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
    let values: Vec<f64> = actual
        .iter()
        .chain(predicted)
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return Err(e(&"nothing finite to plot"));
    }
    let log = lo > 0.0 && hi / lo > 100.0;
    let root = BitMapBackend::new(path, (720, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let points: Vec<(f64, f64)> = actual
        .iter()
        .copied()
        .zip(predicted.iter().copied())
        .collect();
    if log {
        let (a, b) = (lo / 1.5, hi * 1.5);
        draw(
            &root,
            title,
            (a..b).log_scale(),
            (a..b).log_scale(),
            (a, b),
            &points,
        )
        .map_err(|x| e(&x))?;
    } else {
        let pad = (hi - lo).abs().max(1e-12) * 0.05;
        let (a, b) = (lo - pad, hi + pad);
        draw(&root, title, a..b, a..b, (a, b), &points).map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// The chart on either kind of axes: the mesh, the diagonal from `ends.0`
/// to `ends.1`, and the points.
fn draw<X, Y>(
    root: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    title: &str,
    x: X,
    y: Y,
    ends: (f64, f64),
    points: &[(f64, f64)],
) -> Result<(), String>
where
    X: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    Y: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    X::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
    Y::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let err = |x: &dyn std::fmt::Display| x.to_string();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(|x| err(&x))?;
    chart
        .configure_mesh()
        .x_desc("actual")
        .y_desc("predicted")
        .draw()
        .map_err(|x| err(&x))?;
    chart
        .draw_series(LineSeries::new([(ends.0, ends.0), (ends.1, ends.1)], RED))
        .map_err(|x| err(&x))?;
    chart
        .draw_series(
            points
                .iter()
                .map(|p| Circle::new(*p, 3, BLUE.mix(0.6).filled())),
        )
        .map_err(|x| err(&x))?;
    Ok(())
}
