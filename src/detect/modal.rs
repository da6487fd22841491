//! `modal`: robust distance to the nearest normal runtime mode.
//!
//! Built for what a single `mean ± kσ` band (SSTD) or a fixed-bin density
//! (HBOS, COPOD) handles badly: functions with two or three code paths,
//! heavy right tails, anomalies that are rare overall but come in a burst
//! within one step, and functions seen only a few times.
//!
//! After each merge, from the exact fine histogram of a function (all
//! ranks, all steps so far):
//!
//! 1. **Log scale.** Work in `u = ln(1 + x)` (x in µs): multiplicative
//!    spread and log-normal tails become symmetric, and modes of very
//!    different runtimes get comparable widths.
//! 2. **Modes.** Smooth the histogram with a Gaussian kernel (bandwidth by
//!    Silverman's rule on the robust spread of `u`, at least
//!    `min_spread`) and cut it into modes at the density valleys that dip
//!    below half of the lower neighbouring peak (1-D persistence
//!    clustering: shallow dips from noise do not split a mode).
//! 3. **Robust shape per mode.** Median and quartiles of `u` within the
//!    mode give a left and a right scale, `(q50 − q25)/0.6745` and
//!    `(q75 − q50)/0.6745` (equal to σ for a normal mode), widened by
//!    `1 + 1/√n` for small modes and never below `min_spread` nor half a
//!    microsecond.
//! 4. **Normal modes.** A mode is normal behaviour if it holds at least
//!    `min_share` of the function's executions (and at least 3). When the
//!    executions before this step outnumber this step's, the share is
//!    counted over the earlier executions only, so that a burst confined to
//!    the current step cannot vouch for itself. A mode more than
//!    [`SLOW_MODE_RATIO`] times slower than the largest mode must hold
//!    [`SLOW_MODE_SHARE`] of the executions: a slowdown that recurs (one
//!    rank periodically sending 50× more data makes every rank's exchange
//!    in that cycle 50× longer) piles up a mode of its own, yet each of its
//!    executions is time lost, and recurring does not make it normal. Real
//!    second code paths (a cache miss, a remote lookup) cost a few times
//!    the first, not twenty. The largest mode is always normal.
//! 5. **Score.** `score(x)` = distance of `u(x)` to the nearest normal mode's
//!    median in units of that mode's scale on that side. Anomaly iff
//!    `score > threshold` (default 6; per function from `--threshold-file`).
//!
//! Executions far from every normal mode are anomalies, whether they sit
//! between two modes, beyond the slowest, in a small cluster of their own
//! or in a sparse tail; a log-normal tail stays normal.
//!
//! This file is long because of its unit tests (the last fifth of it).

use super::binned::{BinnedDetector, Kernel};
use super::stats::fine::{bucket_bounds, FineHist, StepDelta};
use super::{Label, ModeSnapshot, ModelSnapshot, Verdict};

/// Modal parameters.
#[derive(Debug, Clone)]
pub struct ModalParams {
    /// Anomaly iff the robust distance to the nearest normal mode exceeds
    /// this (default 6).
    pub threshold: f64,
    /// Share of a function's executions a mode needs to count as normal
    /// behaviour (default 0.05).
    pub min_share: f64,
    /// Smallest scale of a mode and smallest smoothing bandwidth, in
    /// `ln(1 + µs)` units (default 0.025: with threshold 6, runtimes within
    /// about −14 %/+16 % of a mode's median are never anomalies).
    pub min_spread: f64,
}

impl Default for ModalParams {
    fn default() -> Self {
        ModalParams {
            threshold: 6.0,
            min_share: 0.05,
            min_spread: 0.025,
        }
    }
}

/// A normal mode needs at least this many executions.
const MIN_MODE_COUNT: u64 = 3;
/// A mode whose median runtime is more than this many times the largest
/// mode's is a recurring slowdown unless it holds [`SLOW_MODE_SHARE`].
pub const SLOW_MODE_RATIO: f64 = 20.0;
/// The share of executions a mode that much slower needs to be normal.
pub const SLOW_MODE_SHARE: f64 = 0.25;
/// A valley splits two modes when the density there is below this
/// fraction of the lower of the two peaks.
const VALLEY_RATIO: f64 = 0.5;
/// Most cells of the smoothing grid.
const MAX_GRID: usize = 4096;
/// Quartile offset of the standard normal (q75 − q50 = 0.6745σ).
const QUARTILE_Z: f64 = 0.674_489_750_196_081_7;

/// One runtime mode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mode {
    /// Median of `u = ln(1 + µs)`.
    pub centre: f64,
    /// Scale below the median (in `u`).
    pub left: f64,
    /// Scale above the median (in `u`).
    pub right: f64,
    /// Executions in the mode (all, this step included).
    pub count: u64,
    /// Share used to decide normality.
    pub share: f64,
}

impl Mode {
    /// Robust distance of `u` to this mode.
    #[inline]
    fn distance(&self, u: f64) -> f64 {
        if u >= self.centre {
            (u - self.centre) / self.right
        } else {
            (self.centre - u) / self.left
        }
    }
}

/// The labelling model of one function.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModalModel {
    /// The normal modes, in increasing runtime.
    pub normal: Vec<Mode>,
    /// How many modes the histogram was cut into.
    pub segments: usize,
    /// Smoothing bandwidth (in `u`).
    pub bandwidth: f64,
    /// Whether normality was decided on the executions before this step.
    pub shares_from_history: bool,
    /// Robust distance beyond which a runtime is an anomaly (the function's
    /// threshold when the model was derived).
    pub threshold: f64,
}

impl ModalModel {
    /// Robust distance of runtime `x` to the nearest normal mode.
    pub fn score(&self, x: u64) -> f64 {
        let u = (x as f64).ln_1p();
        self.normal
            .iter()
            .map(|m| m.distance(u))
            .fold(f64::INFINITY, f64::min)
    }

    /// Label and score of runtime `x` (µs): anomaly when its distance to
    /// the nearest normal mode exceeds the threshold.
    pub fn judge(&self, x: u64) -> Verdict {
        let score = self.score(x);
        Verdict {
            label: if score > self.threshold {
                Label::Anomaly
            } else {
                Label::Normal
            },
            score,
        }
    }

    /// Runtimes (µs) that a mode still judges normal.
    pub fn normal_range(&self, m: &Mode) -> (f64, f64) {
        let lo = (m.centre - self.threshold * m.left).exp_m1().max(0.0);
        let hi = (m.centre + self.threshold * m.right).exp_m1();
        (lo, hi)
    }
}

/// A non-empty fine bucket in `u` space: counts spread uniformly over
/// `[a, b)`, the `u` range of its integers `lo..=hi` (each integer `v`
/// standing for `[v − ½, v + ½]`).
#[derive(Debug, Clone, Copy)]
struct Cell {
    a: f64,
    b: f64,
    count: u64,
    /// Executions from before this step.
    history: u64,
}

impl Cell {
    fn mid(&self) -> f64 {
        0.5 * (self.a + self.b)
    }
}

/// The cells of a histogram, with this step's counts taken out as history.
fn cells(hist: &FineHist, step: &StepDelta) -> Vec<Cell> {
    let (min, max) = (hist.moments.min, hist.moments.max);
    let mut step_counts = step.buckets.iter().peekable();
    hist.counts
        .iter()
        .map(|(bucket, count)| {
            let mut now = 0;
            while let Some(&&(b, c)) = step_counts.peek() {
                if b > bucket {
                    break;
                }
                if b == bucket {
                    now = c;
                }
                step_counts.next();
            }
            let (lo, hi) = bucket_bounds(bucket);
            let (lo, hi) = (lo.max(min), hi.min(max));
            Cell {
                a: (lo as f64 - 0.5).ln_1p(),
                b: (hi as f64 + 0.5).ln_1p(),
                count,
                history: count.saturating_sub(now),
            }
        })
        .collect()
}

/// Quantile `p` of the cells (uniform within each cell).
fn quantile(cells: &[Cell], total: u64, p: f64) -> f64 {
    let target = p * total as f64;
    let mut acc = 0.0;
    for c in cells {
        let next = acc + c.count as f64;
        if next >= target && c.count > 0 {
            let f = ((target - acc) / c.count as f64).clamp(0.0, 1.0);
            return c.a + f * (c.b - c.a);
        }
        acc = next;
    }
    cells.last().map_or(0.0, |c| c.b)
}

/// Silverman's bandwidth on the robust spread of the cells, at least `floor`.
fn bandwidth(cells: &[Cell], total: u64, floor: f64) -> f64 {
    let n = total as f64;
    let mean = cells.iter().map(|c| c.mid() * c.count as f64).sum::<f64>() / n;
    let var = cells
        .iter()
        .map(|c| (c.mid() - mean).powi(2) * c.count as f64)
        .sum::<f64>()
        / n;
    let iqr = quantile(cells, total, 0.75) - quantile(cells, total, 0.25);
    let sd = var.sqrt();
    let spread = if iqr > 0.0 { sd.min(iqr / 1.349) } else { sd };
    (0.9 * spread * n.powf(-0.2)).max(floor)
}

/// Smoothed density of the cells on a regular grid: returns the grid
/// origin, cell width and density per grid cell.
fn smooth(cells: &[Cell], h: f64) -> (f64, f64, Vec<f64>) {
    let (first, last) = (cells[0].a, cells[cells.len() - 1].b);
    let origin = first - 4.0 * h;
    let span = last + 4.0 * h - origin;
    let mut step = h / 3.0;
    let mut n = (span / step).ceil() as usize;
    if n > MAX_GRID {
        n = MAX_GRID;
        step = span / n as f64;
    }
    let n = n.max(1);
    // Deposit each cell's count over the grid cells it overlaps.
    let mut mass = vec![0.0f64; n];
    for c in cells {
        let width = c.b - c.a;
        let j0 = (((c.a - origin) / step).floor() as usize).min(n - 1);
        let j1 = (((c.b - origin) / step).floor() as usize).min(n - 1);
        for (j, m) in mass.iter_mut().enumerate().take(j1 + 1).skip(j0) {
            let lo = c.a.max(origin + j as f64 * step);
            let hi = c.b.min(origin + (j + 1) as f64 * step);
            if hi > lo {
                *m += c.count as f64 * (hi - lo) / width;
            }
        }
    }
    // Gaussian kernel, truncated at 4 bandwidths.
    let reach = ((4.0 * h / step).ceil() as usize).max(1);
    let weights: Vec<f64> = (0..=reach)
        .map(|d| (-0.5 * (d as f64 * step / h).powi(2)).exp())
        .collect();
    let mut density = vec![0.0f64; n];
    for (j, &m) in mass.iter().enumerate() {
        if m == 0.0 {
            continue;
        }
        let lo = j.saturating_sub(reach);
        let hi = (j + reach).min(n - 1);
        for (k, d) in density.iter_mut().enumerate().take(hi + 1).skip(lo) {
            *d += m * weights[k.abs_diff(j)];
        }
    }
    (origin, step, density)
}

/// Cuts a density into modes (1-D persistence clustering): grid cells are
/// visited from the densest; a cell joins its visited neighbour; where two
/// clusters meet, they merge unless the meeting density is below
/// `VALLEY_RATIO` of the lower cluster's peak. Returns each grid cell's mode
/// number (in increasing position) or `usize::MAX` for empty cells.
fn segment(density: &[f64]) -> Vec<usize> {
    let n = density.len();
    let mut order: Vec<usize> = (0..n).filter(|&j| density[j] > 0.0).collect();
    order.sort_by(|&a, &b| density[b].total_cmp(&density[a]).then(a.cmp(&b)));
    const NONE: usize = usize::MAX;
    let mut parent = vec![NONE; n];
    let mut peak = vec![0.0f64; n];
    fn root(parent: &mut [usize], mut j: usize) -> usize {
        while parent[j] != j {
            parent[j] = parent[parent[j]];
            j = parent[j];
        }
        j
    }
    for &j in &order {
        let left = (j > 0 && parent[j - 1] != NONE).then(|| root(&mut parent, j - 1));
        let right = (j + 1 < n && parent[j + 1] != NONE).then(|| root(&mut parent, j + 1));
        parent[j] = match (left, right) {
            (None, None) => {
                peak[j] = density[j];
                j
            }
            (Some(r), None) | (None, Some(r)) => r,
            (Some(l), Some(r)) if l == r => l,
            (Some(l), Some(r)) => {
                let (high, low) = if peak[l] >= peak[r] { (l, r) } else { (r, l) };
                if density[j] >= VALLEY_RATIO * peak[low] {
                    parent[low] = high;
                }
                high
            }
        };
    }
    // Number the clusters left to right (in 1-D each is an interval).
    let mut label = vec![NONE; n];
    let (mut count, mut prev) = (0usize, NONE);
    for j in 0..n {
        if parent[j] == NONE {
            prev = NONE;
            continue;
        }
        let r = root(&mut parent, j);
        if r != prev {
            count += 1;
            prev = r;
        }
        label[j] = count - 1;
    }
    label
}

/// Derives the model of one function.
pub fn derive(params: &ModalParams, hist: &FineHist, step: &StepDelta, k: f64) -> ModalModel {
    let cells = cells(hist, step);
    let total: u64 = cells.iter().map(|c| c.count).sum();
    if cells.is_empty() || total == 0 {
        return ModalModel {
            threshold: k,
            ..Default::default()
        };
    }
    let h = bandwidth(&cells, total, params.min_spread);
    let (origin, width, density) = smooth(&cells, h);
    let grid_mode = segment(&density);
    let modes_n = grid_mode
        .iter()
        .filter(|&&m| m != usize::MAX)
        .max()
        .map_or(1, |m| m + 1);

    // Each fine cell goes to the mode of the grid cell at its centre.
    let mut members: Vec<Vec<Cell>> = vec![Vec::new(); modes_n];
    for c in &cells {
        let j = (((c.mid() - origin) / width).floor().max(0.0) as usize).min(grid_mode.len() - 1);
        let m = grid_mode[j];
        let m = if m == usize::MAX {
            nearest_mode(&grid_mode, j)
        } else {
            m
        };
        members[m.min(modes_n - 1)].push(*c);
    }

    let now = step.count().min(total);
    let history = total - now;
    let from_history = history > 0 && history >= now;
    let mut modes: Vec<(Mode, bool)> = Vec::new();
    for cs in members.iter().filter(|cs| !cs.is_empty()) {
        let count: u64 = cs.iter().map(|c| c.count).sum();
        let hist_count: u64 = cs.iter().map(|c| c.history).sum();
        let share = if from_history {
            hist_count as f64 / history as f64
        } else {
            count as f64 / total as f64
        };
        let mode = shape(cs, count, share, params.min_spread);
        let normal = share >= params.min_share && count >= MIN_MODE_COUNT;
        modes.push((mode, normal));
    }
    // Recurring slowdowns are not normal however often they recur: a mode
    // far slower than the usual one (the largest share, the first of
    // equals) needs a large share.
    let mut usual = 0;
    for (i, (m, _)) in modes.iter().enumerate() {
        if m.share > modes[usual].0.share {
            usual = i;
        }
    }
    let usual_us = modes[usual].0.centre.exp_m1().max(1.0);
    for (m, normal) in modes.iter_mut() {
        if m.centre.exp_m1() > SLOW_MODE_RATIO * usual_us && m.share < SLOW_MODE_SHARE {
            *normal = false;
        }
    }
    if !modes.iter().any(|(_, normal)| *normal) {
        // The largest mode (the first of equals) is always normal.
        let mut best = 0;
        for (i, (m, _)) in modes.iter().enumerate() {
            if m.count > modes[best].0.count {
                best = i;
            }
        }
        modes[best].1 = true;
    }
    ModalModel {
        segments: modes.len(),
        normal: modes
            .into_iter()
            .filter(|(_, n)| *n)
            .map(|(m, _)| m)
            .collect(),
        bandwidth: h,
        shares_from_history: from_history,
        threshold: k,
    }
}

/// The mode of the nearest labelled grid cell (for a cell whose centre
/// fell where the smoothed density underflowed to zero).
fn nearest_mode(grid_mode: &[usize], j: usize) -> usize {
    (1..grid_mode.len())
        .flat_map(|d| [j.checked_sub(d), Some(j + d)])
        .flatten()
        .filter_map(|i| grid_mode.get(i).copied())
        .find(|&m| m != usize::MAX)
        .unwrap_or(0)
}

/// Median and left/right robust scales of a mode's cells.
fn shape(cells: &[Cell], count: u64, share: f64, min_spread: f64) -> Mode {
    let q25 = quantile(cells, count, 0.25);
    let q50 = quantile(cells, count, 0.5);
    let q75 = quantile(cells, count, 0.75);
    // Half a microsecond at the median: integer timers cannot resolve less.
    let median_us = q50.exp_m1().max(0.0);
    let resolution = (0.5 / (median_us + 1.0)).ln_1p();
    let floor = min_spread.max(resolution);
    let widen = 1.0 + 1.0 / (count as f64).sqrt();
    Mode {
        centre: q50,
        left: ((q50 - q25) / QUARTILE_Z).max(floor) * widen,
        right: ((q75 - q50) / QUARTILE_Z).max(floor) * widen,
        count,
        share,
    }
}

/// The modal kernel of [`BinnedDetector`].
#[derive(Debug, Clone, Default)]
pub struct ModalKernel {
    /// The modal parameters.
    pub params: ModalParams,
}

/// The modal detector.
pub type Modal = BinnedDetector<ModalKernel>;

impl Modal {
    /// A modal detector; functions are labelled from `min_count` executions.
    pub fn with_params(params: ModalParams, min_count: u64) -> Self {
        BinnedDetector::new(ModalKernel { params }, min_count)
    }
}

impl Kernel for ModalKernel {
    type Model = ModalModel;

    fn name(&self) -> &'static str {
        "modal"
    }

    fn default_threshold(&self) -> f64 {
        self.params.threshold
    }

    fn empty_model(&self) -> ModalModel {
        ModalModel {
            threshold: self.params.threshold,
            ..Default::default()
        }
    }

    fn derive(&self, _: &ModalModel, hist: &FineHist, step: &StepDelta, k: f64) -> ModalModel {
        derive(&self.params, hist, step, k)
    }

    fn judge(&self, m: &ModalModel, value: u64) -> Verdict {
        m.judge(value)
    }

    fn is_slow(&self, m: &ModalModel, value: u64, mean: f64) -> bool {
        // Fast means faster than every normal code path: below the median
        // of the fastest normal mode. A runtime between two paths took
        // longer than the faster one predicts, so it counts as slow.
        let u = (value as f64).ln_1p();
        m.normal
            .iter()
            .map(|mode| mode.centre)
            .min_by(f64::total_cmp)
            .map_or(value as f64 > mean, |fastest| u > fastest)
    }

    fn json(&self, m: &ModalModel) -> serde_json::Value {
        let modes: Vec<serde_json::Value> = m
            .normal
            .iter()
            .map(|mode| {
                let (lo, hi) = m.normal_range(mode);
                serde_json::json!({
                    "median_us": mode.centre.exp_m1(),
                    "normal_low_us": lo,
                    "normal_high_us": hi,
                    "scale_left": mode.left,
                    "scale_right": mode.right,
                    "count": mode.count,
                    "share": mode.share,
                })
            })
            .collect();
        serde_json::json!({
            "min_share": self.params.min_share,
            "min_spread": self.params.min_spread,
            "bandwidth": m.bandwidth,
            "segments": m.segments,
            "shares_from_history": m.shares_from_history,
            "modes": modes,
        })
    }

    fn snapshot(&self, m: &ModalModel, s: &mut ModelSnapshot) {
        s.threshold = m.threshold;
        s.modes = m
            .normal
            .iter()
            .map(|mode| {
                let (low, high) = m.normal_range(mode);
                ModeSnapshot {
                    median: mode.centre.exp_m1(),
                    low,
                    high,
                    share: mode.share,
                }
            })
            .collect();
    }

    fn digest_words(&self, m: &ModalModel, out: &mut Vec<u64>) {
        out.push(m.threshold.to_bits());
        out.push(m.bandwidth.to_bits());
        for mode in &m.normal {
            out.extend([mode.centre, mode.left, mode.right].map(f64::to_bits));
            out.push(mode.count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::binned::testing;
    use crate::detect::Detector;

    /// Deterministic standard-normal-like draws (sum of 12 uniforms − 6).
    fn z(seed: &mut u64) -> f64 {
        let mut s = 0.0;
        for _ in 0..12 {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s += (*seed >> 11) as f64 / (1u64 << 53) as f64;
        }
        s - 6.0
    }

    fn normal(seed: &mut u64, mean: f64, sd: f64) -> u64 {
        (mean + sd * z(seed)).round().max(0.0) as u64
    }

    fn model_of(values: &[u64]) -> ModalModel {
        let mut h = FineHist::default();
        values.iter().for_each(|&v| h.push(v));
        derive(&ModalParams::default(), &h, &StepDelta::default(), 6.0)
    }

    #[test]
    fn separates_modes_and_flags_between_and_beyond() {
        let mut seed = 1;
        let mut v: Vec<u64> = Vec::new();
        for i in 0..20_000 {
            v.push(if i % 10 < 7 {
                normal(&mut seed, 200.0, 10.0)
            } else {
                normal(&mut seed, 1000.0, 30.0)
            });
        }
        // A small cluster between the modes (0.5 %) and a few far beyond.
        v.extend((0..100).map(|_| normal(&mut seed, 600.0, 10.0)));
        v.extend([4000, 4100, 3900]);
        let m = model_of(&v);
        assert_eq!(m.normal.len(), 2, "{m:?}");
        for x in [180, 200, 225, 950, 1000, 1080] {
            assert_eq!(m.judge(x).label, Label::Normal, "{x}: {:?}", m.judge(x));
        }
        for x in [600, 610, 400, 1400, 4000, 40] {
            assert_eq!(m.judge(x).label, Label::Anomaly, "{x}: {:?}", m.judge(x));
        }
        // The score is the robust z to the nearest mode: about 1 at 1 σ.
        let s = m.score(1030);
        assert!((0.7..1.3).contains(&s), "{s}");
    }

    #[test]
    fn log_normal_tail_stays_normal() {
        let mut seed = 7;
        let v: Vec<u64> = (0..30_000)
            .map(|_| (150.0 * (0.3 * z(&mut seed)).exp()).round() as u64)
            .collect();
        let m = model_of(&v);
        let flagged = v
            .iter()
            .filter(|&&x| m.judge(x).label == Label::Anomaly)
            .count();
        assert_eq!(flagged, 0);
        assert_eq!(m.judge(150 * 20).label, Label::Anomaly);
    }

    #[test]
    fn few_executions_and_constants() {
        // One clear outlier among five.
        let m = model_of(&[100, 101, 99, 100, 1000]);
        assert_eq!(m.judge(1000).label, Label::Anomaly);
        assert_eq!(m.judge(100).label, Label::Normal);
        // Two values: nothing to judge against, both normal.
        let m = model_of(&[100, 1000]);
        assert_eq!(m.judge(100).label, Label::Normal);
        assert_eq!(m.judge(1000).label, Label::Normal);
        // A constant function tolerates timer jitter but not 2x.
        let m = model_of(&[5; 50]);
        assert_eq!(m.judge(6).label, Label::Normal);
        assert_eq!(m.judge(12).label, Label::Anomaly);
        // Around 0 µs the timer resolution dominates.
        let m = model_of(&[0; 50]);
        assert_eq!(m.judge(1).label, Label::Normal);
        assert_eq!(m.judge(5).label, Label::Normal);
        assert_eq!(m.judge(20).label, Label::Anomaly);
    }

    #[test]
    fn burst_in_the_current_step_cannot_vouch_for_itself() {
        let mut seed = 3;
        let mut d = Modal::with_params(ModalParams::default(), 2);
        d.ensure_functions(1);
        let mut ranks: Vec<Box<dyn Detector>> = vec![Box::new(d)];
        for s in 0..4 {
            let mut rows: Vec<(u32, u64)> = (0..1000)
                .map(|_| (0, normal(&mut seed, 30.0, 4.0)))
                .collect();
            if s == 3 {
                // 20 % of this step's calls are 3 ms slower.
                rows.extend((0..250).map(|_| (0, 3000 + normal(&mut seed, 30.0, 4.0))));
            }
            testing::step(&mut ranks, &[rows]);
        }
        // The burst is 7 % of all executions, above min_share, but 0 % of
        // the history: anomalous.
        assert_eq!(ranks[0].label(0, 3030).label, Label::Anomaly);
        assert_eq!(ranks[0].label(0, 31).label, Label::Normal);
    }

    #[test]
    fn a_recurring_far_slower_mode_stays_anomalous_and_a_second_path_does_not() {
        let mut seed = 5;
        let mut d = Modal::with_params(ModalParams::default(), 2);
        d.ensure_functions(2);
        let mut ranks: Vec<Box<dyn Detector>> = vec![Box::new(d)];
        for _ in 0..6 {
            // Function 0: 8 % of the exchanges 50x slower, every step.
            let mut rows: Vec<(u32, u64)> = (0..1000)
                .map(|i| {
                    let x = normal(&mut seed, 3000.0, 100.0);
                    (0, if i % 12 == 0 { 50 * x } else { x })
                })
                .collect();
            // Function 1: a second code path, 3x slower, 10 % of calls.
            rows.extend((0..1000).map(|i| {
                let x = normal(&mut seed, 200.0, 8.0);
                (1, if i % 10 == 0 { 3 * x } else { x })
            }));
            testing::step(&mut ranks, &[rows]);
        }
        assert_eq!(ranks[0].label(0, 150_000).label, Label::Anomaly);
        assert_eq!(ranks[0].label(0, 3000).label, Label::Normal);
        assert_eq!(ranks[0].label(1, 600).label, Label::Normal);
        assert_eq!(ranks[0].label(1, 200).label, Label::Normal);
    }

    #[test]
    fn any_split_over_ranks_is_bit_identical() {
        let mut seed = 11;
        let steps: Vec<Vec<(u32, u64)>> = (0..4)
            .map(|_| {
                (0..3000)
                    .map(|i| {
                        let f = (i % 3) as u32;
                        let v = match f {
                            0 if i % 2 == 0 => normal(&mut seed, 200.0, 10.0),
                            0 => normal(&mut seed, 1000.0, 30.0),
                            1 => normal(&mut seed, 20.0, 3.0) + (i % 500 == 1) as u64 * 3000,
                            _ => 7,
                        };
                        (f, v)
                    })
                    .collect()
            })
            .collect();
        let probes = [
            (0, 210),
            (0, 600),
            (0, 1000),
            (1, 20),
            (1, 3020),
            (2, 7),
            (2, 30),
        ];
        testing::assert_partition_invariant(
            &|| Box::new(Modal::with_params(ModalParams::default(), 2)) as Box<dyn Detector>,
            3,
            &steps,
            &probes,
        );
    }
}
