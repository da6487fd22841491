//! The report's static charts, drawn as SVG with `plotters` when the
//! report is written: the browser only places them. Static charts cost no
//! script at all when the page opens, scale with the data that is drawn
//! (points are thinned to a few thousand), and look the same in every
//! browser. Interactive parts (sorting, filtering, one anomaly's timeline)
//! are plain JavaScript in `assets/report.js`.
//!
//! Every function returns the SVG text, or a short SVG that says why there
//! is nothing to draw: a chart never fails the report.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Draws a series on a chart, returning plotters' error as text.
macro_rules! draw {
    ($chart:expr, $series:expr $(,)?) => {
        $chart.draw_series($series).map_err(|e| e.to_string())?
    };
}

/// Width of a full-width chart (px).
pub const WIDE: u32 = 960;
/// Height of a chart (px).
pub const TALL: u32 = 300;
/// Points drawn per scatter series at most (thinned evenly beyond).
const MAX_POINTS: usize = 4000;

/// Series colours, in order (also the benchmark's plots).
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];
/// Anomalies are drawn in this red.
const ANOMALY: RGBColor = RGBColor(214, 39, 40);
/// Normal samples and model shapes in this grey-blue.
const NORMAL: RGBColor = RGBColor(110, 130, 160);

/// A chart that could not be drawn: its title and the reason, as SVG.
pub fn placeholder(title: &str, why: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDE}\" height=\"60\" role=\"img\">\
         <text x=\"8\" y=\"22\" font-family=\"sans-serif\" font-size=\"14\">{}</text>\
         <text x=\"8\" y=\"44\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#666\">{}</text></svg>",
        super::page::escape(title),
        super::page::escape(why)
    )
}

/// Draws with `draw` into an SVG of `size`; a placeholder on error.
fn svg(
    title: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> String {
    if let Err(e) = crate::model::plot::register_system_font() {
        return placeholder(title, &e);
    }
    let mut out = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|_| draw(&root))
            .and_then(|_| root.present().map_err(|e| e.to_string()))
    };
    match result {
        Ok(()) => out,
        Err(e) => placeholder(title, &e),
    }
}

/// `(lo, hi)` of `values` with a margin, never empty.
fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi <= lo {
        return (lo - 0.5, hi + 0.5);
    }
    let pad = (hi - lo) * 0.04;
    (lo - pad, hi + pad)
}

/// Every `k`-th item so that at most [`MAX_POINTS`] remain.
fn thin<T: Copy>(v: &[T]) -> Vec<T> {
    let k = v.len().div_ceil(MAX_POINTS).max(1);
    v.iter().step_by(k).copied().collect()
}

/// One named series of a line chart.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x, y)` points in x order.
    pub points: Vec<(f64, f64)>,
}

/// Lines over a shared x axis, with x ranges shaded (anomaly windows).
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    shade: &[(f64, f64)],
) -> String {
    if series.iter().all(|s| s.points.is_empty()) {
        return placeholder(title, "no data");
    }
    let (x0, x1) = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let (y0, y1) = range(
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain([0.0]),
    );
    svg(title, (WIDE, TALL), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| e.to_string())?;
        // Steps and intervals are whole numbers: no "2.5" on their axis.
        let whole = series
            .iter()
            .all(|s| s.points.iter().all(|p| p.0.fract() == 0.0));
        let span = (x1 - x0).round().max(1.0) as usize;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(if whole { span.min(12) + 1 } else { 10 })
            .x_label_formatter(&|v| {
                if whole {
                    format!("{v:.0}")
                } else {
                    format!("{v}")
                }
            })
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|e| e.to_string())?;
        for &(a, b) in shade {
            let band = Rectangle::new([(a, y0), (b, y1)], ANOMALY.mix(0.15).filled());
            draw!(chart, std::iter::once(band));
        }
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let line = LineSeries::new(s.points.iter().copied(), color.stroke_width(2));
            draw!(chart, line)
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                });
        }
        if series.len() > 1 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .draw()
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}

/// Counts per row and column as coloured cells (anomalies per rank and
/// step); `cells[r][c]`, rows labelled by `rows`, columns by `cols`.
pub fn heatmap(title: &str, rows: &[String], cols: &[u64], cells: &[Vec<u64>]) -> String {
    if rows.is_empty() || cols.is_empty() {
        return placeholder(title, "no data");
    }
    let max = cells.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
    let height = (80 + 16 * rows.len() as u32).clamp(160, 1100);
    let n_rows = rows.len();
    svg(title, (WIDE, height), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(format!("{title} (darkest: {max})"), ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(140)
            // A segmented `0..n` has a segment for `n` too: one cell per
            // value takes `0..n - 1`.
            .build_cartesian_2d(
                (0..cols.len() - 1).into_segmented(),
                (0..n_rows - 1).into_segmented(),
            )
            .map_err(|e| e.to_string())?;
        // Labels at the centre of each cell: row 0 (most anomalies) on top.
        let centre = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => Some(*i),
            _ => None,
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("step")
            .x_labels(cols.len().min(20))
            .x_label_formatter(&|v| {
                centre(v)
                    .and_then(|i| cols.get(i))
                    .map_or(String::new(), |s| s.to_string())
            })
            .y_labels(n_rows.min(40))
            .y_label_formatter(&|v| {
                centre(v)
                    .and_then(|i| n_rows.checked_sub(1 + i))
                    .and_then(|i| rows.get(i))
                    .cloned()
                    .unwrap_or_default()
            })
            .draw()
            .map_err(|e| e.to_string())?;
        let rects = cells.iter().enumerate().flat_map(|(r, row)| {
            row.iter()
                .enumerate()
                .filter(|(_, &v)| v > 0)
                .map(move |(c, &v)| {
                    let y = n_rows - 1 - r;
                    let shade = 0.15 + 0.85 * (v as f64 / max);
                    Rectangle::new(
                        [
                            (SegmentValue::Exact(c), SegmentValue::Exact(y)),
                            (SegmentValue::Exact(c + 1), SegmentValue::Exact(y + 1)),
                        ],
                        ANOMALY.mix(shade).filled(),
                    )
                })
        });
        draw!(chart, rects);
        Ok(())
    })
}

/// What a detector's model of one function looks like, to draw it over the
/// function's runtimes.
pub enum ModelShape {
    /// Histogram bins: first left edge, width, counts.
    Bins {
        /// Left edge of the first bin (µs).
        first: f64,
        /// Bin width (µs).
        width: f64,
        /// Count per bin.
        counts: Vec<u64>,
    },
    /// Mean and standard deviation, with the runtime beyond which an
    /// execution is anomalous (when the detector has such a cut).
    Moments {
        /// Mean runtime (µs).
        mean: f64,
        /// Standard deviation (µs).
        stddev: f64,
        /// The anomaly threshold on the runtime (µs), if any.
        cut: Option<f64>,
    },
}

/// A function's runtimes: the model (bins, or a normal curve from the
/// moments with the threshold), the stored normal samples (grey) and the
/// anomalies (red ticks).
pub fn distribution(title: &str, model: &ModelShape, normal: &[f64], anomalies: &[f64]) -> String {
    let (x0, x1) = range(
        model
            .x_extent()
            .iter()
            .chain(normal)
            .chain(anomalies)
            .copied()
            .map(|v| v.max(0.0)),
    );
    let layers = DistributionLayers {
        bars: model.bars(),
        curve: model.curve(x0, x1),
        cut: model.cut(),
        normal: thin(normal),
        anomalies: thin(anomalies),
    };
    svg(title, (WIDE / 2 - 10, TALL), |root| {
        draw_distribution(root, title, x0..x1, &layers)
    })
}

impl ModelShape {
    /// The runtimes the model spans, so that the x axis shows all of it:
    /// the bins' outer edges, or three deviations either side of the mean
    /// and the threshold.
    fn x_extent(&self) -> Vec<f64> {
        match self {
            ModelShape::Bins { .. } => {
                let edges = self.bin_edges();
                edges
                    .first()
                    .into_iter()
                    .chain(edges.last())
                    .copied()
                    .collect()
            }
            ModelShape::Moments { mean, stddev, cut } => {
                let mut v = vec![mean - 3.0 * stddev, mean + 3.0 * stddev];
                v.extend(cut);
                v
            }
        }
    }

    /// The histogram's bin edges, one more than its bins; none for moments.
    fn bin_edges(&self) -> Vec<f64> {
        match self {
            ModelShape::Bins {
                first,
                width,
                counts,
            } => (0..=counts.len())
                .map(|b| first + width * b as f64)
                .collect(),
            ModelShape::Moments { .. } => Vec::new(),
        }
    }

    /// The histogram's bars as (left, right, height), heights scaled to 1
    /// at the tallest bin; none for moments.
    fn bars(&self) -> Vec<(f64, f64, f64)> {
        let ModelShape::Bins { counts, .. } = self else {
            return Vec::new();
        };
        let peak = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
        let edges = self.bin_edges();
        let heights = counts.iter().map(|&c| c as f64 / peak);
        edges
            .windows(2)
            .zip(heights)
            .map(|(e, h)| (e[0], e[1], h))
            .collect()
    }

    /// The normal curve of the moments over `x0..x1` (201 points, 1 at the
    /// mean); none for bins or a zero deviation.
    fn curve(&self, x0: f64, x1: f64) -> Vec<(f64, f64)> {
        match self {
            ModelShape::Moments { mean, stddev, .. } if *stddev > 0.0 => (0..=200)
                .map(|i| {
                    let x = x0 + (x1 - x0) * i as f64 / 200.0;
                    let z = (x - mean) / stddev;
                    (x, (-0.5 * z * z).exp())
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The anomaly threshold on the runtime, if the model has one.
    fn cut(&self) -> Option<f64> {
        match self {
            ModelShape::Moments { cut, .. } => *cut,
            ModelShape::Bins { .. } => None,
        }
    }
}

/// What [`distribution`] draws, in data coordinates (density heights
/// scaled to 1 at the model's peak).
struct DistributionLayers {
    /// Histogram bars: (left, right, height).
    bars: Vec<(f64, f64, f64)>,
    /// The normal curve of the moments.
    curve: Vec<(f64, f64)>,
    /// The anomaly threshold, drawn as a vertical line.
    cut: Option<f64>,
    /// Runtimes of normal samples (thinned), drawn as grey dots.
    normal: Vec<f64>,
    /// Runtimes of anomalies (thinned), drawn as red triangles.
    anomalies: Vec<f64>,
}

/// Draws a distribution chart's axes and `layers` into `root`, runtimes
/// over `x`: the model below, the samples in a band above it.
fn draw_distribution(
    root: &DrawingArea<SVGBackend, Shift>,
    title: &str,
    x: std::ops::Range<f64>,
    layers: &DistributionLayers,
) -> Result<(), String> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(40)
        .build_cartesian_2d(x, 0.0..1.25)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("runtime (µs)")
        .y_desc("model density")
        .y_labels(3)
        .disable_y_mesh()
        .draw()
        .map_err(|e| e.to_string())?;
    let bars = layers.bars.iter();
    draw!(
        chart,
        bars.map(|&(a, b, h)| Rectangle::new([(a, 0.0), (b, h)], NORMAL.mix(0.45).filled()))
    );
    if !layers.curve.is_empty() {
        let curve = layers.curve.iter().copied();
        draw!(chart, LineSeries::new(curve, NORMAL.stroke_width(2)));
    }
    if let Some(c) = layers.cut.filter(|c| c.is_finite()) {
        let cut = PathElement::new([(c, 0.0), (c, 1.2)], BLACK.stroke_width(1));
        draw!(chart, std::iter::once(cut));
    }
    let normal = layers.normal.iter();
    draw!(
        chart,
        normal.map(|&x| Circle::new((x, 1.08), 3, NORMAL.filled()))
    );
    let anomalies = layers.anomalies.iter();
    draw!(
        chart,
        anomalies.map(|&x| TriangleMarker::new((x, 1.17), 5, ANOMALY.filled()))
    );
    Ok(())
}

/// Points `(x, y, is_anomaly)`: normal ones grey, anomalies red.
pub fn scatter(title: &str, x_desc: &str, y_desc: &str, points: &[(f64, f64, bool)]) -> String {
    if points.is_empty() {
        return placeholder(title, "no data");
    }
    let (x0, x1) = range(points.iter().map(|p| p.0));
    let (y0, y1) = range(points.iter().map(|p| p.1).chain([0.0]));
    // The normal and the anomalous points, each thinned on its own.
    let labelled = |anomaly: bool| -> Vec<(f64, f64)> {
        let these: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.2 == anomaly)
            .map(|p| (p.0, p.1))
            .collect();
        thin(&these)
    };
    let (normal, anomalous) = (labelled(false), labelled(true));
    svg(title, (WIDE / 2 - 10, TALL), |root| {
        let mut chart = half_width_frame(root, title, (x0..x1, y0..y1), (x_desc, y_desc))?;
        draw!(
            chart,
            normal.iter().map(|&p| Circle::new(p, 2, NORMAL.filled()))
        );
        draw!(
            chart,
            anomalous
                .iter()
                .map(|&p| Circle::new(p, 3, ANOMALY.filled())),
        );
        Ok(())
    })
}

/// The frame of the half-width charts: the caption, the margins, the axes
/// over `x` × `y` with their descriptions, and the mesh, drawn.
fn half_width_frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    (x, y): (std::ops::Range<f64>, std::ops::Range<f64>),
    (x_desc, y_desc): (&str, &str),
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>, String> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(chart)
}

/// Predicted against actual values with the diagonal (model runs).
pub fn predicted_vs_actual(title: &str, points: &[(f64, f64)]) -> String {
    if points.is_empty() {
        return placeholder(title, "no predictions");
    }
    let (lo, hi) = range(points.iter().flat_map(|p| [p.0, p.1]).chain([0.0]));
    let points = thin(points);
    svg(title, (WIDE / 2 - 10, TALL + 40), |root| {
        let axes = ("predicted (µs)", "actual (µs)");
        let mut chart = half_width_frame(root, title, (lo..hi, lo..hi), axes)?;
        draw!(chart, LineSeries::new([(lo, lo), (hi, hi)], BLACK.mix(0.4)));
        draw!(
            chart,
            points.iter().map(|&p| Circle::new(p, 3, ANOMALY.filled()))
        );
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_even_without_data() {
        let empty = lines("t", "x", "y", &[], &[]);
        assert!(empty.starts_with("<svg") && empty.contains("no data"));
        let s = lines(
            "anomalies per step",
            "step",
            "anomalies",
            &[Series {
                name: "all".into(),
                points: vec![(0.0, 1.0), (1.0, 3.0)],
            }],
            &[(0.5, 0.8)],
        );
        assert!(s.contains("<svg"), "{s}");
        let h = heatmap("h", &["a:0".into()], &[0, 1], &[vec![0, 2]]);
        assert!(h.contains("<svg"));
        let d = distribution(
            "f",
            &ModelShape::Moments {
                mean: 10.0,
                stddev: 2.0,
                cut: Some(22.0),
            },
            &[9.0, 11.0],
            &[30.0],
        );
        assert!(d.contains("<svg"));
    }

    #[test]
    fn thinning_keeps_at_most_the_cap() {
        let v: Vec<u32> = (0..10_001).collect();
        assert!(thin(&v).len() <= MAX_POINTS);
        assert_eq!(thin(&v[..10]).len(), 10);
    }
}
