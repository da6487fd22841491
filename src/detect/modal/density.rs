//! The density part of `modal` (steps 1 and 2 of the parent module): the
//! fine buckets as cells in `u = ln(1 + µs)`, their Gaussian-smoothed
//! density on a regular grid, and the grid cut into modes at deep valleys.
//!
//! A step derives the models of every function that ran, often thousands,
//! so this is written for speed without changing a single bit of the
//! result: a [`Workspace`] keeps every buffer between functions, the `u`
//! edges of the buckets come from a table of the very expressions they
//! replace, the kernel weights from a memo of `exp` by its exact argument,
//! the convolution adds the same products in the same order as a scatter
//! over the grid (vectorisable), and the persistence clustering visits only
//! the local minima in density order instead of sorting the whole grid.
//! The tests compare each piece with the straightforward version.

use super::super::stats::fine::{bucket_bounds, FineHist, StepDelta, NUM_BUCKETS};
use super::super::stats::memo::Memo;
use crate::util::bits::set_bits;
use crate::util::round::ceil_usize;
use std::iter::Peekable;
use std::slice::Iter;
use std::sync::OnceLock;

/// Most cells of the smoothing grid.
const MAX_GRID: usize = 4096;
/// A valley splits two modes when the density there is below this
/// fraction of the lower of the two peaks.
const VALLEY_RATIO: f64 = 0.5;
/// The mode of a grid cell without density.
pub(super) const NONE: usize = usize::MAX;

/// A non-empty fine bucket in `u` space: counts spread uniformly over
/// `[a, b)`, the `u` range of its integers `lo..=hi` (each integer `v`
/// standing for `[v − ½, v + ½]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Cell {
    pub a: f64,
    pub b: f64,
    pub count: u64,
    /// Executions from before this step.
    pub history: u64,
}

impl Cell {
    pub fn mid(&self) -> f64 {
        0.5 * (self.a + self.b)
    }
}

/// `(ln(1 + lo − ½), ln(1 + hi + ½))` of every fine bucket: what
/// [`cells`] computes for a bucket that the extremes do not clip, two
/// logarithms per bucket and function saved.
fn u_edges() -> &'static [(f64, f64)] {
    static TABLE: OnceLock<Vec<(f64, f64)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        (0..NUM_BUCKETS)
            .map(|i| {
                let (lo, hi) = bucket_bounds(i);
                ((lo as f64 - 0.5).ln_1p(), (hi as f64 + 0.5).ln_1p())
            })
            .collect()
    })
}

/// Runtimes below this many µs have their `ln(1 + x)` in a table.
pub(super) const LOG_TABLE: usize = 4096;

/// `ln(1 + x)` of runtime `x` (µs), the scale on which modes live: from a
/// table for runtimes below [`LOG_TABLE`] µs (most calls; the table holds
/// what the expression gives, bit for bit), computed above. Every
/// execution judged needs it, and `ln_1p` was the largest single cost of
/// labelling.
#[inline]
pub(super) fn log_runtime(x: u64) -> f64 {
    static TABLE: OnceLock<Vec<f64>> = OnceLock::new();
    let table = TABLE.get_or_init(|| (0..LOG_TABLE).map(|v| (v as f64).ln_1p()).collect());
    match table.get(x as usize) {
        Some(&u) => u,
        None => (x as f64).ln_1p(),
    }
}

/// Buffers for deriving one model after another; their contents are
/// scratch except the memos, which only ever return what `exp` and `powf`
/// return for the same argument.
#[derive(Debug, Clone, Default)]
pub(super) struct Workspace {
    /// The cells of the function being derived.
    pub cells: Vec<Cell>,
    /// Counts deposited on the grid, with `reach` zeros on either side.
    mass: Vec<f64>,
    /// The edges of the grid cells.
    edges: Vec<f64>,
    /// The smoothed density of each grid cell.
    pub density: Vec<f64>,
    /// Kernel weight of each offset `−reach..=reach`.
    weights: Vec<f64>,
    /// `exp` of the kernel weights' arguments: the weights of a function
    /// are `exp(−½(d·step/h)²)` with `step = h/3` and `d` up to 12, and
    /// their arguments differ from one function to the next only in their
    /// last bits, so a handful per `d` recur.
    exp: ExpMemo,
    /// The clustering of one run of cells with density: its peaks and
    /// valleys (grid cells), the valleys by density, each peak's cluster
    /// (union-find) and the cluster each valley joined.
    peaks: Vec<usize>,
    valleys: Vec<usize>,
    order: Vec<usize>,
    parent: Vec<usize>,
    joined: Vec<usize>,
    /// The mode of each grid cell (or [`NONE`]).
    pub grid_mode: Vec<usize>,
    /// The mode of each cell, and the cells grouped by mode: those of mode
    /// `m` are `by_mode[starts[m]..starts[m + 1]]` (`fill`: where the next
    /// one goes).
    pub mode_of: Vec<usize>,
    pub starts: Vec<usize>,
    pub fill: Vec<usize>,
    pub by_mode: Vec<Cell>,
    /// The modes found, each with whether it is normal and its median (µs).
    pub modes: Vec<(super::Mode, bool, f64)>,
    /// `n^(−1/5)` of the last count `n` asked for.
    pub pow: PowMemo,
}

/// A [`Memo`] of `exp`.
#[derive(Debug, Clone)]
struct ExpMemo(Memo);

impl Default for ExpMemo {
    fn default() -> Self {
        ExpMemo(Memo::new(f64::exp, 2048))
    }
}

/// `(n as f64).powf(-0.2)` of the last `n`: the functions that run every
/// step have the same count more often than not.
#[derive(Debug, Clone, Default)]
pub(super) struct PowMemo {
    last: Option<(u64, f64)>,
}

impl PowMemo {
    pub fn get(&mut self, n: u64) -> f64 {
        match self.last {
            Some((m, v)) if m == n => v,
            _ => {
                let v = (n as f64).powf(-0.2);
                self.last = Some((n, v));
                v
            }
        }
    }
}

/// Fills `ws.cells` with the cells of a histogram, with this step's counts
/// taken out as history.
pub(super) fn cells(ws: &mut Workspace, hist: &FineHist, step: &StepDelta) {
    let (min, max) = (hist.moments.min, hist.moments.max);
    let edges = u_edges();
    let mut step_counts = step.buckets.iter().peekable();
    ws.cells.clear();
    for (bucket, count) in hist.counts.iter() {
        let now = step_count_of(&mut step_counts, bucket);
        let (lo, hi) = bucket_bounds(bucket);
        let (mut a, mut b) = edges[bucket];
        // Only the first and last bucket can be clipped by the extremes.
        if lo < min {
            a = (min as f64 - 0.5).ln_1p();
        }
        if hi > max {
            b = (max as f64 + 0.5).ln_1p();
        }
        ws.cells.push(Cell {
            a,
            b,
            count,
            history: count.saturating_sub(now),
        });
    }
}

/// This step's count of `bucket`, read off `step_counts` (the step's
/// `(bucket, count)` pairs, increasing), which it moves past `bucket`:
/// asked for buckets in increasing order, it walks the step's buckets once.
#[inline]
pub(super) fn step_count_of(
    step_counts: &mut Peekable<Iter<'_, (usize, u64)>>,
    bucket: usize,
) -> u64 {
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
    now
}

/// The grid the density lives on: cell `j` covers
/// `[origin + j·width, origin + (j+1)·width)`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grid {
    pub origin: f64,
    pub width: f64,
}

impl Grid {
    /// `floor((u − origin) / width)` as an index, 0 below the grid (and
    /// for NaN). The float-to-integer cast truncates towards zero and
    /// saturates at 0, which is the same for every `f64` and needs no call
    /// to `floor` (not an instruction on baseline x86-64).
    #[inline]
    pub fn cell_of(&self, u: f64) -> usize {
        ((u - self.origin) / self.width) as usize
    }
}

/// The smoothing grid of `cells` (in increasing order) at bandwidth `h`,
/// and its number of cells (at least one): it reaches 4 bandwidths beyond
/// the first and last cell, in steps of `h / 3`, or of whatever width
/// keeps it within [`MAX_GRID`] cells.
pub(super) fn grid_for(cells: &[Cell], h: f64) -> (Grid, usize) {
    let (first, last) = (cells[0].a, cells[cells.len() - 1].b);
    let origin = first - 4.0 * h;
    let span = last + 4.0 * h - origin;
    let mut step = h / 3.0;
    let mut n = ceil_usize(span / step);
    if n > MAX_GRID {
        n = MAX_GRID;
        step = span / n as f64;
    }
    let grid = Grid {
        origin,
        width: step,
    };
    (grid, n.max(1))
}

/// Smooths `ws.cells` with bandwidth `h` into `ws.density`.
pub(super) fn smooth(ws: &mut Workspace, h: f64) -> Grid {
    let cells = &ws.cells;
    let (grid, n) = grid_for(cells, h);
    let Grid {
        origin,
        width: step,
    } = grid;
    // Gaussian kernel, truncated at 4 bandwidths.
    let reach = ceil_usize(4.0 * h / step).max(1);
    ws.weights.clear();
    ws.weights
        .extend((0..=reach).map(|d| -0.5 * (d as f64 * step / h).powi(2)));
    for w in ws.weights.iter_mut() {
        *w = ws.exp.0.get(*w);
    }
    // The grid's edges, `edge[j] = origin + j·step` (j < 2^12: exact as
    // u32 and as f64).
    ws.edges.clear();
    ws.edges.resize(n + 1, 0.0);
    for (j, e) in ws.edges.iter_mut().enumerate() {
        *e = origin + (j as u32) as f64 * step;
    }
    // Deposit each cell's count over the grid cells it overlaps (grid cell
    // `j` at `mass[reach + j]`; zeros after the grid for a whole block of
    // `convolve` past its last cell).
    ws.mass.clear();
    ws.mass.resize(n + BLOCK + 2 * reach, 0.0);
    let mass = &mut ws.mass[reach..reach + n];
    let (mut last_b, mut last_j1) = (f64::NAN, 0);
    let mut held = (n, 0);
    for c in cells {
        let width = c.b - c.a;
        // Adjacent buckets share an edge, hence a grid cell.
        let j0 = if c.a == last_b {
            last_j1
        } else {
            grid.cell_of(c.a).min(n - 1)
        };
        let j1 = grid.cell_of(c.b).min(n - 1);
        (last_b, last_j1) = (c.b, j1);
        if j1 < j0 {
            continue;
        }
        held = (held.0.min(j0), held.1.max(j1));
        let count = c.count as f64;
        let lower = &ws.edges[j0..=j1];
        let upper = &ws.edges[j0 + 1..=j1 + 1];
        for ((m, &e0), &e1) in mass[j0..=j1].iter_mut().zip(lower).zip(upper) {
            let lo = c.a.max(e0);
            let hi = c.b.min(e1);
            // Adding +0.0 where the cell misses the grid cell leaves the
            // (non-negative) mass as it is.
            let add = count * (hi - lo) / width;
            *m += if hi > lo { add } else { 0.0 };
        }
    }
    ws.density.clear();
    ws.density.resize(n, 0.0);
    if held.0 > held.1 {
        // No cell overlaps the grid: no density.
    } else if ws.weights.iter().all(|w| w.is_finite()) {
        // Only the grid cells that hold mass: beyond them the density
        // falls off strictly on both sides (every term shrinks with the
        // distance, by a factor of at least e^(1/18) per cell), so those
        // cells hold no peak or valley; they would join the first or last
        // mode, and no cell's centre lies there. Left at zero, they are
        // no mode's, and the modes are those of the whole grid.
        convolve(&ws.mass, &ws.weights, held, &mut ws.density);
    } else {
        // Never with a positive bandwidth; zeros times a non-finite weight
        // would not vanish as in the scatter below.
        let mass = &ws.mass[reach..reach + n];
        for (j, &m) in mass.iter().enumerate() {
            if m == 0.0 {
                continue;
            }
            let lo = j.saturating_sub(reach);
            let hi = (j + reach).min(n - 1);
            for (k, d) in ws.density.iter_mut().enumerate().take(hi + 1).skip(lo) {
                *d += m * ws.weights[k.abs_diff(j)];
            }
        }
    }
    grid
}

/// Grid cells whose sums [`convolve`] accumulates together in registers.
const BLOCK: usize = 16;

/// `density[k] = Σ_j mass[j]·w[|k − j|]` for the grid cells `k` of
/// `held.0..=held.1`, the only ones that hold mass (`density` elsewhere is
/// left as it is), the terms added in increasing `j` from 0 — the order in
/// which scattering each grid cell's mass over its neighbours adds them.
/// Every term from outside `held` is `+0.0` (finite weights), and adding
/// it leaves a (non-negative) sum as it is, so those terms may be added or
/// left out: the sums are those of the scatter, bit for bit. `mass` holds
/// `reach` zeros before the grid and at least `BLOCK + reach` after it;
/// blocks of [`BLOCK`] sums stay in registers while every weight that
/// reaches mass is applied to them.
fn convolve(mass: &[f64], w: &[f64], held: (usize, usize), density: &mut [f64]) {
    let reach = w.len() - 1;
    let cells = &mut density[held.0..=held.1];
    for (b, out) in cells.chunks_mut(BLOCK).enumerate() {
        let k0 = held.0 + b * BLOCK;
        // Offsets t (grid cell k + t − reach) that reach a held cell from
        // some cell of the block.
        let t0 = (held.0 + reach).saturating_sub(k0 + BLOCK - 1);
        let t1 = (held.1 + reach).saturating_sub(k0).min(2 * reach);
        let mut acc = [0.0f64; BLOCK];
        for t in t0..=t1 {
            let wt = w[t.abs_diff(reach)];
            let src = &mass[k0 + t..k0 + t + BLOCK];
            for (a, &m) in acc.iter_mut().zip(src) {
                *a += m * wt;
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = a;
        }
    }
}

/// Cuts `ws.density` into modes (1-D persistence clustering): grid cells
/// are visited from the densest (the leftmost of equals); a cell joins its
/// visited neighbour; where two clusters meet, they merge unless the
/// meeting density is below `VALLEY_RATIO` of the lower cluster's peak (the
/// first cluster's when the peaks are equal), and the meeting cell joins
/// the higher one. Fills `ws.grid_mode` with each grid cell's mode number
/// (in increasing position) or [`NONE`] for empty cells; returns the number
/// of modes.
///
/// Only the meetings need the visiting order. Within a run of cells with
/// density, a cell is visited after its left neighbour iff it is not
/// denser, so the run alternates peaks (visited before both neighbours: a
/// new cluster) and valleys (after both: a meeting), and every other cell
/// joins, whenever it is visited, the cluster of the peak its denser side
/// leads up to. So the valleys alone are sorted (a few, not the whole grid)
/// and replayed in order on the peaks; each cell then takes the final
/// cluster of its peak — or, for a valley, of the cluster it joined.
pub(super) fn segment(ws: &mut Workspace) -> usize {
    let n = ws.density.len();
    ws.grid_mode.clear();
    ws.grid_mode.resize(n, NONE);
    let mut modes = 0;
    let mut j = 0;
    while j < n {
        let has_density = ws.density[j] > 0.0;
        if !has_density {
            j += 1;
            continue;
        }
        let start = j;
        while j + 1 < n && ws.density[j + 1] > 0.0 {
            j += 1;
        }
        modes = segment_run(ws, start, j, modes);
        j += 1;
    }
    modes
}

/// [`segment`] of the run `start..=end` of cells with density, whose modes
/// are numbered from `modes` on; returns the number of modes after it.
fn segment_run(ws: &mut Workspace, start: usize, end: usize, modes: usize) -> usize {
    let d = &ws.density;
    // Peaks and valleys alternate, a peak first and last: a cell is a peak
    // where the density stops rising, a valley where it starts again.
    ws.peaks.clear();
    ws.valleys.clear();
    // The comparisons of 64 neighbours at a time go into one word (no
    // branch per cell); its bits where the direction changes are the
    // peaks and valleys.
    let mut rising = true;
    let mut j0 = start + 1;
    while j0 <= end {
        let len = (end + 1 - j0).min(64);
        let mut up = 0u64;
        for (i, pair) in d[j0 - 1..j0 + len].windows(2).enumerate() {
            up |= u64::from(pair[1] > pair[0]) << i;
        }
        let before = (up << 1) | u64::from(rising);
        let changes = (up ^ before) & (u64::MAX >> (64 - len));
        for i in set_bits(&[changes]) {
            let at = j0 + i as usize - 1;
            if up >> i & 1 == 1 {
                ws.valleys.push(at);
            } else {
                ws.peaks.push(at);
            }
        }
        rising = up >> (len - 1) & 1 == 1;
        j0 += len;
    }
    if rising {
        ws.peaks.push(end);
    }
    let out = &mut ws.grid_mode[start..=end];
    if ws.valleys.is_empty() {
        out.fill(modes);
        return modes + 1;
    }
    // Clusters by peak number (peak i lies between valleys i − 1 and i);
    // a cluster's peak density is that of its root.
    ws.parent.clear();
    ws.parent.extend(0..ws.peaks.len());
    ws.order.clear();
    ws.order.extend(0..ws.valleys.len());
    let (valleys, peaks) = (&ws.valleys, &ws.peaks);
    ws.order.sort_unstable_by(|&a, &b| {
        let (a, b) = (valleys[a], valleys[b]);
        d[b].total_cmp(&d[a]).then(a.cmp(&b))
    });
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    ws.joined.clear();
    ws.joined.resize(valleys.len(), 0);
    for &v in &ws.order {
        let l = root(&mut ws.parent, v);
        let r = root(&mut ws.parent, v + 1);
        let (high, low) = if d[peaks[l]] >= d[peaks[r]] {
            (l, r)
        } else {
            (r, l)
        };
        if d[valleys[v]] >= VALLEY_RATIO * d[peaks[low]] {
            ws.parent[low] = high;
        }
        ws.joined[v] = high;
    }
    // Number the clusters left to right: the cells up to each valley, then
    // the valley, then the cells after the last one.
    let (mut modes, mut prev, mut from) = (modes, NONE, start);
    for (v, &at) in valleys.iter().enumerate() {
        for (to, cluster) in [(at, v), (at + 1, ws.joined[v])] {
            let r = root(&mut ws.parent, cluster);
            if r != prev {
                modes += 1;
                prev = r;
            }
            out[from - start..to - start].fill(modes - 1);
            from = to;
        }
    }
    if root(&mut ws.parent, valleys.len()) != prev {
        modes += 1;
    }
    out[from - start..].fill(modes - 1);
    modes
}
