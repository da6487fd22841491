//! PNG charts for docs/benchmarks.md (plotters, bitmap backend, a system
//! TrueType font: DejaVu Sans from Debian's fonts-dejavu-core).

use std::path::Path;

use anyhow::{anyhow, Context};
use plotters::prelude::*;

/// Makes the font known to plotters (once per process).
pub fn init_font() -> anyhow::Result<()> {
    chimbuko_mpi::model::plot::register_system_font().map_err(|e| anyhow!(e))
}

use chimbuko_mpi::report::charts::PALETTE;

/// Grouped bars: one group per `groups` entry, one bar per series.
pub fn bars(
    path: &Path,
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[(String, Vec<f64>)],
) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.15;
    let n = groups.len().max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n as f64, 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = (x - 0.5).round() as isize;
            if i >= 0 && (i as usize) < groups.len() && (x - 0.5 - i as f64).abs() < 1e-6 {
                groups[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_desc(y_label)
        .draw()?;
    let k = series.len().max(1) as f64;
    let width = 0.8 / k;
    for (s, (name, values)) in series.iter().enumerate() {
        let color = PALETTE[s % PALETTE.len()];
        chart
            .draw_series(values.iter().enumerate().map(|(g, &v)| {
                let x0 = g as f64 + 0.1 + s as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v)], color.filled())
            }))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Lines through points; `log_x` for a logarithmic x axis.
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    series: &[(String, Vec<(f64, f64)>)],
) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1) = (1.0, 10.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y1 = y1.max(1e-9) * 1.15;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70);
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .draw()?;
            for (s, (name, p)) in series.iter().enumerate() {
                let color = PALETTE[s % PALETTE.len()];
                chart
                    .draw_series(LineSeries::new(p.iter().copied(), color.stroke_width(2)))?
                    .label(name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
                    });
                chart.draw_series(p.iter().map(|&xy| Circle::new(xy, 4, color.filled())))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()?;
        }};
    }
    if log_x {
        draw!(builder.build_cartesian_2d((x0 * 0.8..x1 * 1.25).log_scale(), 0f64..y1)?);
    } else {
        draw!(builder.build_cartesian_2d(x0..x1, 0f64..y1)?);
    }
    root.present()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
