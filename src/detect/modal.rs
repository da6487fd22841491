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
//! The density (cells, smoothing, valleys) is in [`density`]; the tests
//! are in `tests.rs`, and `reference.rs` keeps the straightforward
//! derivation that the fast one must match bit for bit.

mod density;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use super::binned::{BinnedDetector, Kernel};
use super::stats::fine::{FineHist, StepDelta};
use super::{Label, ModeSnapshot, ModelSnapshot, Verdict};
use density::{log_runtime, Cell, Grid, Workspace, NONE};

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
        let u = log_runtime(x);
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

/// Derives the model of one function.
pub fn derive(params: &ModalParams, hist: &FineHist, step: &StepDelta, k: f64) -> ModalModel {
    let mut model = ModalModel::default();
    derive_into(&mut Workspace::default(), &mut model, params, hist, step, k);
    model
}

/// Derives the model of one function into `model`, with the buffers of
/// `ws` (the detector keeps one workspace for all its functions).
fn derive_into(
    ws: &mut Workspace,
    model: &mut ModalModel,
    params: &ModalParams,
    hist: &FineHist,
    step: &StepDelta,
    k: f64,
) {
    density::cells(ws, hist, step);
    let total: u64 = ws.cells.iter().map(|c| c.count).sum();
    model.normal.clear();
    model.threshold = k;
    if ws.cells.is_empty() || total == 0 {
        model.segments = 0;
        model.bandwidth = 0.0;
        model.shares_from_history = false;
        return;
    }
    let scale = ws.pow.get(total);
    let h = bandwidth(&ws.cells, total, scale, params.min_spread);
    let grid = density::smooth(ws, h);
    let modes_n = density::segment(ws).max(1);

    group_by_mode(ws, grid, modes_n);

    let basis = ShareBasis::new(total, step);
    let modes = &mut ws.modes;
    modes.clear();
    for m in 0..modes_n {
        let cs = &ws.by_mode[ws.starts[m]..ws.starts[m + 1]];
        if cs.is_empty() {
            continue;
        }
        let (count, share) = basis.count_and_share(cs);
        let (mode, median_us) = shape(cs, count, share, params.min_spread);
        let normal = share >= params.min_share && count >= MIN_MODE_COUNT;
        modes.push((mode, normal, median_us));
    }
    // Recurring slowdowns are not normal however often they recur: a mode
    // far slower than the usual one (the largest share, the first of
    // equals) needs a large share.
    let usual = first_largest(modes, |(m, _, _)| m.share);
    let usual_us = modes[usual].2.max(1.0);
    for (m, normal, median_us) in modes.iter_mut() {
        if *median_us > SLOW_MODE_RATIO * usual_us && m.share < SLOW_MODE_SHARE {
            *normal = false;
        }
    }
    if !modes.iter().any(|(_, normal, _)| *normal) {
        // The largest mode (the first of equals) is always normal.
        let largest = first_largest(modes, |(m, _, _)| m.count);
        modes[largest].1 = true;
    }
    model.segments = modes.len();
    model
        .normal
        .extend(modes.iter().filter(|(_, n, _)| *n).map(|(m, _, _)| *m));
    // A model lives as long as its function; most have one normal mode,
    // and the vector's growth would leave room for four (120 bytes per
    // function at 10^5 functions). Shrinking happens once per change in
    // the number of modes, not per derivation.
    model.normal.shrink_to_fit();
    model.bandwidth = h;
    model.shares_from_history = basis.from_history;
}

/// What the share of a mode is a share of: the function's executions from
/// before this step when they are at least as many as this step's (and
/// some), else all of them.
#[derive(Debug, Clone, Copy)]
struct ShareBasis {
    /// All the executions of the function, this step's included.
    total: u64,
    /// Those from before this step.
    history: u64,
    /// Whether shares are of `history`.
    from_history: bool,
}

impl ShareBasis {
    /// The basis of a function with `total` executions, `step`'s included.
    fn new(total: u64, step: &StepDelta) -> Self {
        let now = step.count().min(total);
        let history = total - now;
        ShareBasis {
            total,
            history,
            from_history: history > 0 && history >= now,
        }
    }

    /// The executions a mode's cells `cs` hold, and their share.
    fn count_and_share(&self, cs: &[Cell]) -> (u64, f64) {
        let count: u64 = cs.iter().map(|c| c.count).sum();
        let hist_count: u64 = cs.iter().map(|c| c.history).sum();
        let share = if self.from_history {
            hist_count as f64 / self.history as f64
        } else {
            count as f64 / self.total as f64
        };
        (count, share)
    }
}

/// The index of the first of the items with the largest `key` (0 when
/// there are none).
fn first_largest<T, K: PartialOrd>(items: &[T], key: impl Fn(&T) -> K) -> usize {
    let mut best = 0;
    for (i, item) in items.iter().enumerate() {
        if key(item) > key(&items[best]) {
            best = i;
        }
    }
    best
}

/// Quantiles `ps` (increasing) of the cells (uniform within each cell), in
/// one pass: each is what a pass of its own would give, as the running
/// count adds the same numbers in the same order.
fn quantiles<const K: usize>(cells: &[Cell], total: u64, ps: [f64; K]) -> [f64; K] {
    let last = cells.last().map_or(0.0, |c| c.b);
    let mut out = [last; K];
    let mut q = 0;
    let mut acc = 0.0;
    'cells: for c in cells {
        let next = acc + c.count as f64;
        while q < K {
            let target = ps[q] * total as f64;
            if !(next >= target && c.count > 0) {
                break;
            }
            let f = ((target - acc) / c.count as f64).clamp(0.0, 1.0);
            out[q] = c.a + f * (c.b - c.a);
            q += 1;
            if q == K {
                break 'cells;
            }
        }
        acc = next;
    }
    out
}

/// Silverman's bandwidth on the robust spread of the cells, at least
/// `floor`; `scale` is `total^(−1/5)`.
fn bandwidth(cells: &[Cell], total: u64, scale: f64, floor: f64) -> f64 {
    let [q25, q75] = quantiles(cells, total, [0.25, 0.75]);
    (0.9 * robust_spread(cells, total, q75 - q25) * scale).max(floor)
}

/// The spread Silverman's bandwidth is made of: the standard deviation of
/// the cells (`total` values at their centres), or `iqr / 1.349`, the
/// standard deviation a normal law with that interquartile range has,
/// where that is smaller and the range is not empty.
fn robust_spread(cells: &[Cell], total: u64, iqr: f64) -> f64 {
    let n = total as f64;
    let mean = cells.iter().map(|c| c.mid() * c.count as f64).sum::<f64>() / n;
    let var = cells
        .iter()
        .map(|c| (c.mid() - mean).powi(2) * c.count as f64)
        .sum::<f64>()
        / n;
    let sd = var.sqrt();
    if iqr > 0.0 {
        sd.min(iqr / 1.349)
    } else {
        sd
    }
}

/// Groups the cells by the mode of the grid cell at their centre, in order
/// within each mode (a counting sort): mode `m`'s cells are
/// `ws.by_mode[ws.starts[m]..ws.starts[m + 1]]`. With one mode, every cell
/// is in it, wherever its centre fell.
fn group_by_mode(ws: &mut Workspace, grid: Grid, modes_n: usize) {
    ws.starts.clear();
    ws.by_mode.clear();
    if modes_n == 1 {
        ws.starts.extend([0, ws.cells.len()]);
        ws.by_mode.extend_from_slice(&ws.cells);
        return;
    }
    ws.starts.resize(modes_n + 1, 0);
    ws.mode_of.clear();
    let last = ws.grid_mode.len() - 1;
    for c in &ws.cells {
        let j = grid.cell_of(c.mid()).min(last);
        let m = match ws.grid_mode[j] {
            NONE => nearest_mode(&ws.grid_mode, j),
            m => m,
        };
        let m = m.min(modes_n - 1);
        ws.mode_of.push(m);
        ws.starts[m + 1] += 1;
    }
    for m in 0..modes_n {
        ws.starts[m + 1] += ws.starts[m];
    }
    ws.by_mode.resize(ws.cells.len(), ws.cells[0]);
    ws.fill.clear();
    ws.fill.extend_from_slice(&ws.starts[..modes_n]);
    for (c, &m) in ws.cells.iter().zip(&ws.mode_of) {
        ws.by_mode[ws.fill[m]] = *c;
        ws.fill[m] += 1;
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

/// Median and left/right robust scales of a mode's cells, and the median
/// in µs (`centre.exp_m1()`, which the caller needs again).
fn shape(cells: &[Cell], count: u64, share: f64, min_spread: f64) -> (Mode, f64) {
    let [q25, q50, q75] = quantiles(cells, count, [0.25, 0.5, 0.75]);
    // Half a microsecond at the median: integer timers cannot resolve less.
    let median_us = q50.exp_m1();
    let resolution = (0.5 / (median_us.max(0.0) + 1.0)).ln_1p();
    let floor = min_spread.max(resolution);
    let widen = 1.0 + 1.0 / (count as f64).sqrt();
    let mode = Mode {
        centre: q50,
        left: ((q50 - q25) / QUARTILE_Z).max(floor) * widen,
        right: ((q75 - q50) / QUARTILE_Z).max(floor) * widen,
        count,
        share,
    };
    (mode, median_us)
}

/// The modal kernel of [`BinnedDetector`].
#[derive(Debug, Clone, Default)]
pub struct ModalKernel {
    /// The modal parameters.
    pub params: ModalParams,
    /// Buffers reused from one function's derivation to the next.
    ws: Workspace,
}

/// The modal detector.
pub type Modal = BinnedDetector<ModalKernel>;

impl Modal {
    /// A modal detector; functions are labelled from `min_count` executions.
    pub fn with_params(params: ModalParams, min_count: u64) -> Self {
        BinnedDetector::new(
            ModalKernel {
                params,
                ws: Workspace::default(),
            },
            min_count,
        )
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

    fn derive(&mut self, model: &mut ModalModel, hist: &FineHist, step: &StepDelta, k: f64) {
        derive_into(&mut self.ws, model, &self.params, hist, step, k);
    }

    fn judge(&self, m: &ModalModel, value: u64) -> Verdict {
        m.judge(value)
    }

    fn shares_models(&self) -> bool {
        true
    }

    fn encode(&self, m: &ModalModel, _count: u64, out: &mut Vec<u64>) {
        out.extend([
            m.segments as u64,
            m.bandwidth.to_bits(),
            u64::from(m.shares_from_history),
            m.threshold.to_bits(),
        ]);
        for mode in &m.normal {
            out.extend([
                mode.centre.to_bits(),
                mode.left.to_bits(),
                mode.right.to_bits(),
                mode.count,
                mode.share.to_bits(),
            ]);
        }
    }

    fn decode(&self, m: &mut ModalModel, _count: u64, words: &[u64]) {
        let (head, modes) = words.split_at(words.len().min(4));
        let word = |i: usize| head.get(i).copied().unwrap_or(0);
        m.segments = word(0) as usize;
        m.bandwidth = f64::from_bits(word(1));
        m.shares_from_history = word(2) != 0;
        m.threshold = f64::from_bits(word(3));
        m.normal.clear();
        m.normal.extend(modes.chunks_exact(5).map(|w| Mode {
            centre: f64::from_bits(w[0]),
            left: f64::from_bits(w[1]),
            right: f64::from_bits(w[2]),
            count: w[3],
            share: f64::from_bits(w[4]),
        }));
        // As `derive_into` leaves it: no room beyond the modes.
        m.normal.shrink_to_fit();
    }

    fn expected(&self, m: &ModalModel, hist: &FineHist, value: u64) -> f64 {
        // The code path it took: the slowest normal mode at or below it
        // (a call between two paths took longer than the faster one).
        let u = log_runtime(value);
        let below = m.normal.iter().map(|mode| mode.centre).filter(|c| *c <= u);
        match below.max_by(f64::total_cmp).or_else(|| {
            m.normal
                .iter()
                .map(|mode| mode.centre)
                .min_by(f64::total_cmp)
        }) {
            Some(c) => c.exp_m1(),
            None => hist.median(),
        }
    }

    fn is_slow(&self, m: &ModalModel, value: u64, mean: f64) -> bool {
        // Fast means faster than every normal code path: below the median
        // of the fastest normal mode. A runtime between two paths took
        // longer than the faster one predicts, so it counts as slow.
        let u = log_runtime(value);
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
