//! The straightforward derivation of a modal model, as it was before
//! [`super::density`] made it fast: every buffer allocated per function,
//! both logarithms per bucket computed, the whole grid sorted by density.
//! Kept for the tests, which require the fast derivation to give the same
//! model bit for bit.

use super::density::{grid_for, step_count_of, Cell};
use super::{first_largest, ShareBasis};
use super::{ModalModel, ModalParams, Mode, MIN_MODE_COUNT, QUARTILE_Z};
use super::{SLOW_MODE_RATIO, SLOW_MODE_SHARE};
use crate::detect::stats::fine::{bucket_bounds, FineHist, StepDelta};

/// A valley splits two modes when the density there is below this
/// fraction of the lower of the two peaks.
const VALLEY_RATIO: f64 = 0.5;

/// The cells of a histogram, with this step's counts taken out as history.
pub(super) fn cells(hist: &FineHist, step: &StepDelta) -> Vec<Cell> {
    let (min, max) = (hist.moments.min, hist.moments.max);
    let mut step_counts = step.buckets.iter().peekable();
    hist.counts
        .iter()
        .map(|(bucket, count)| {
            let now = step_count_of(&mut step_counts, bucket);
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
    let iqr = quantile(cells, total, 0.75) - quantile(cells, total, 0.25);
    (0.9 * super::robust_spread(cells, total, iqr) * (total as f64).powf(-0.2)).max(floor)
}

/// Smoothed density of the cells on a regular grid: returns the grid
/// origin, cell width and density per grid cell.
pub(super) fn smooth(cells: &[Cell], h: f64) -> (f64, f64, Vec<f64>) {
    let (grid, n) = grid_for(cells, h);
    let (origin, step) = (grid.origin, grid.width);
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
pub(super) fn segment(density: &[f64]) -> Vec<usize> {
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
pub(super) fn derive(
    params: &ModalParams,
    hist: &FineHist,
    step: &StepDelta,
    k: f64,
) -> ModalModel {
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
            super::nearest_mode(&grid_mode, j)
        } else {
            m
        };
        members[m.min(modes_n - 1)].push(*c);
    }

    let basis = ShareBasis::new(total, step);
    let mut modes: Vec<(Mode, bool)> = Vec::new();
    for cs in members.iter().filter(|cs| !cs.is_empty()) {
        let (count, share) = basis.count_and_share(cs);
        let mode = shape(cs, count, share, params.min_spread);
        let normal = share >= params.min_share && count >= MIN_MODE_COUNT;
        modes.push((mode, normal));
    }
    // Recurring slowdowns are not normal however often they recur: a mode
    // far slower than the usual one (the largest share, the first of
    // equals) needs a large share.
    let usual = first_largest(&modes, |(m, _)| m.share);
    let usual_us = modes[usual].0.centre.exp_m1().max(1.0);
    for (m, normal) in modes.iter_mut() {
        if m.centre.exp_m1() > SLOW_MODE_RATIO * usual_us && m.share < SLOW_MODE_SHARE {
            *normal = false;
        }
    }
    if !modes.iter().any(|(_, normal)| *normal) {
        // The largest mode (the first of equals) is always normal.
        let largest = first_largest(&modes, |(m, _)| m.count);
        modes[largest].1 = true;
    }
    ModalModel {
        segments: modes.len(),
        normal: modes
            .into_iter()
            .filter(|(_, n)| *n)
            .map(|(m, _)| m)
            .collect(),
        bandwidth: h,
        shares_from_history: basis.from_history,
        threshold: k,
    }
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

#[cfg(test)]
mod tests {
    use super::super::density::{self, Workspace};
    use super::*;

    /// A small deterministic generator (64-bit LCG, high bits).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
        fn unit(&mut self) -> f64 {
            self.next() as f64 / (1u64 << 31) as f64
        }
    }

    /// A runtime around `centre` with relative spread `spread`.
    fn draw(r: &mut Rng, centre: f64, spread: f64) -> u64 {
        let z: f64 = (0..4).map(|_| r.unit()).sum::<f64>() - 2.0;
        (centre * (1.0 + spread * z)).round().max(0.0) as u64
    }

    /// Histories of many shapes: one to four modes from 0 µs to seconds,
    /// constants, far outliers, few and many executions; the last chunk is
    /// "this step".
    fn case(r: &mut Rng) -> (FineHist, StepDelta) {
        let modes = 1 + r.below(4) as usize;
        let centres: Vec<f64> = (0..modes)
            .map(|_| {
                [0.0, 3.0, 20.0, 150.0, 900.0, 4e4, 3e6][r.below(7) as usize] * (1.0 + r.unit())
            })
            .collect();
        let spread = [0.0, 0.01, 0.05, 0.2, 0.6][r.below(5) as usize];
        let n = [1, 2, 3, 5, 20, 200, 3000][r.below(7) as usize];
        let mut hist = FineHist::default();
        let mut step = FineHist::default();
        for i in 0..n {
            let centre = centres[r.below(modes as u64) as usize];
            let mut v = draw(r, centre, spread);
            if r.below(50) == 0 {
                v = v * 30 + r.below(1000);
            }
            hist.push(v);
            if i >= n / 2 {
                step.push(v);
            }
        }
        let delta = StepDelta {
            moments: step.moments,
            buckets: step.counts.iter().collect(),
        };
        (hist, delta)
    }

    #[test]
    fn the_fast_derivation_gives_the_reference_model_bit_for_bit() {
        let mut r = Rng(7);
        let mut ws = Workspace::default();
        let mut model = ModalModel::default();
        for params in [
            ModalParams::default(),
            ModalParams {
                threshold: 4.0,
                min_share: 0.2,
                min_spread: 0.001,
            },
        ] {
            for _ in 0..1500 {
                let (hist, step) = case(&mut r);
                let want = derive(&params, &hist, &step, params.threshold);
                let k = params.threshold;
                super::super::derive_into(&mut ws, &mut model, &params, &hist, &step, k);
                assert_eq!(format!("{model:?}"), format!("{want:?}"), "{hist:?}");
            }
        }
    }

    #[test]
    fn the_fast_clustering_cuts_where_the_sorted_one_does() {
        let mut r = Rng(3);
        let mut ws = Workspace::default();
        for _ in 0..20_000 {
            // Few distinct levels: many ties, plateaus and empty cells;
            // runs longer than the 64 cells compared at a time.
            let n = 1 + r.below(160) as usize;
            let levels = 1 + r.below(6);
            ws.density.clear();
            ws.density
                .extend((0..n).map(|_| r.below(levels) as f64 * [1.0, 0.3][r.below(2) as usize]));
            let want = segment(&ws.density);
            density::segment(&mut ws);
            assert_eq!(ws.grid_mode, want, "{:?}", ws.density);
        }
    }
}
