//! Chimbuko's histogram, with the reference's rules (see
//! `reference/chimbuko-algorithms.md` §2): bins `(start + b·w, start + (b+1)·w]`
//! whose last upper edge is exactly `max`, the first edge `1e-6·w` below the
//! minimum, bin-width rules (Scott, fixed number of bins, ...), `getBin` with a
//! tolerance, negation, the empirical CDF and the histogram skewness;
//! rebinning by "uniform integer" splitting is in [`super::rebin`].
//!
//! HBOS and COPOD label against histograms built with these rules. In this
//! crate the histogram that is *merged* across ranks and steps is the exact
//! fine histogram of [`super::fine`]; the labelling histogram is derived from
//! it after every merge by rebinning (see
//! [`super::fine::FineHist::labelling_histogram`]).
//! Everything here is deterministic floating-point arithmetic on exact inputs,
//! so the result is the same on every rank.
//!
//! This file is long because of its unit tests (the `tests` module): the
//! reference's binning rules have many edge cases, each pinned by a test.

use super::rebin::{rebin, Piece};
use crate::util::round::ceil_usize;
use serde_json::json;

/// The first bin edge sits this fraction of a bin width below the minimum,
/// so that the minimum (lower edges are exclusive) falls inside bin 0.
pub const LOWER_SHIFT: f64 = 1e-6;

/// Merged histograms never get more bins than this (the reference's limit).
pub const MAX_MERGED_BINS: usize = 50_000;

/// Where a value falls relative to a histogram (`getBin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinPos {
    /// Below the first edge (beyond the tolerance).
    Left,
    /// Above the last edge (beyond the tolerance).
    Right,
    /// Inside bin `b` (or within the tolerance of the outer edges).
    In(usize),
}

/// How a bin width is chosen (`binWidthSpecifier` in the reference).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BinWidth {
    /// Scott's rule `3.5·σ/n^(1/3)` (σ: population standard deviation).
    Scott,
    /// Exactly `k` bins between min and max.
    FixedNbin(usize),
    /// A given width.
    Fixed(f64),
    /// A given width, unless that gives more than `max_bins` bins.
    FixedMaxNbin(f64, usize),
    /// Scott's rule, unless that gives more than `max_bins` bins.
    ScottMaxNbin(usize),
}

/// Why a histogram could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HistogramError {
    /// No value to build it from.
    #[error("no data")]
    Empty,
    /// A value (or extreme) is NaN or infinite.
    #[error("value {0} is not finite")]
    NotFinite(f64),
    /// The bin width is zero, negative or not finite.
    #[error("invalid bin width {0}")]
    BadWidth(f64),
    /// The grid would need fewer than 1 or more than 10^8 bins (the
    /// number computed).
    #[error("too many bins ({0})")]
    TooManyBins(f64),
    /// Parts that do not fit together (min outside bin 0, edges not
    /// reaching max), or a value outside its own histogram.
    #[error("inconsistent histogram: {0}")]
    Inconsistent(String),
}

/// Width `(max − min)/(k − 1e-6 − 0.001)`: with the first edge `1e-6·w`
/// below min this yields exactly `k` bins.
pub(super) fn width_for_nbins(min: f64, max: f64, k: usize) -> f64 {
    (max - min) / (k as f64 - LOWER_SHIFT - 0.001)
}

/// The "at most `max_bins`" correction of the reference.
fn cap_width(w: f64, min: f64, max: f64, max_bins: usize) -> f64 {
    if w == 0.0 || ceil_usize((max - min) / w + LOWER_SHIFT) > max_bins {
        width_for_nbins(min, max, max_bins)
    } else {
        w
    }
}

/// Scott's width for `n` values of population standard deviation `sd`.
pub fn scott_width(sd: f64, n: f64) -> f64 {
    3.5 * sd / n.cbrt()
}

impl BinWidth {
    /// Width for raw values with the given extrema.
    fn for_values(&self, values: &[f64], min: f64, max: f64) -> f64 {
        let scott = || {
            let n = values.len() as f64;
            let mean = values.iter().sum::<f64>() / n;
            let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            scott_width(var.sqrt(), n)
        };
        self.resolve(min, max, scott)
    }

    /// Width for the merge of two histograms (Scott from bin midpoints).
    fn for_pair(&self, g: &Histogram, l: &Histogram, min: f64, max: f64) -> f64 {
        let scott = || {
            let (mut n, mut s1, mut s2) = (0u64, 0.0f64, 0.0f64);
            for h in [g, l] {
                for (b, &c) in h.counts.iter().enumerate() {
                    let v = h.bin_value(b);
                    n += c;
                    s1 += c as f64 * v;
                    s2 += c as f64 * v * v;
                }
            }
            let n = n.max(1) as f64;
            let mean = s1 / n;
            let var = (s2 / n - mean * mean).max(0.0);
            scott_width(var.sqrt(), n)
        };
        self.resolve(min, max, scott)
    }

    /// Applies the rule; `scott` computes Scott's width when needed.
    pub fn resolve(&self, min: f64, max: f64, scott: impl Fn() -> f64) -> f64 {
        match *self {
            BinWidth::Scott => scott(),
            BinWidth::FixedNbin(k) => width_for_nbins(min, max, k.max(1)),
            BinWidth::Fixed(w) => w,
            BinWidth::FixedMaxNbin(w, m) => cap_width(w, min, max, m.max(1)),
            BinWidth::ScottMaxNbin(m) => cap_width(scott(), min, max, m.max(1)),
        }
    }
}

/// A histogram with equal-width bins. Bin `b` covers
/// `(start + b·bin_width, start + (b+1)·bin_width]`, except that the upper
/// edge of the last bin is `max` exactly.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Histogram {
    /// Count of each bin.
    pub counts: Vec<u64>,
    /// Lower edge of bin 0, just below `min` (by [`LOWER_SHIFT`]`·bin_width`
    /// on the reference's grid).
    pub start: f64,
    /// Width of every bin.
    pub bin_width: f64,
    /// Smallest value (inside bin 0).
    pub min: f64,
    /// Largest value (the last upper edge).
    pub max: f64,
}

impl Histogram {
    /// [`rebin`] of `pieces` onto the bins of this histogram (zero counts,
    /// e.g. from [`Histogram::reset_grid`]), into `counts`; the bins that
    /// received counts are appended to `filled`, in increasing order.
    ///
    /// The same result as `rebin(pieces, &self.edges())`, without walking every
    /// bin: a bin whose upper edge lies below the current piece receives
    /// nothing and leaves the piece as it is, and the upper edges
    /// `start + (b+1)·width` never decrease with `b` (except, perhaps, for
    /// the last one, `max`, which is always visited), so the walk jumps over
    /// such runs of bins, to the first whose upper edge reaches the piece
    /// (found from the bin width, then checked against the edges). The work
    /// then follows the pieces — a few dozen fine buckets — not the bins (200
    /// for HBOS).
    pub fn rebin_into(&mut self, pieces: impl IntoIterator<Item = Piece>, filled: &mut Vec<usize>) {
        let n = self.nbin();
        let mut pieces = pieces.into_iter().filter(|p| p.count > 0.0);
        let mut current: Option<Piece> = pieces.next();
        let mut b = 0;
        while b < n {
            let Some(p) = current else {
                break;
            };
            if b + 1 < n && p.above(self.upper_edge(b)) {
                b = self.first_bin_reaching(b, p.low(), |a| p.above(a));
            }
            // From here on, `rebin`'s step for bin b, with its edges.
            let l = if b == 0 {
                self.lower_edge(0)
            } else {
                self.upper_edge(b - 1)
            };
            let u = self.upper_edge(b);
            self.counts[b] = super::rebin::take_bin(&mut current, &mut pieces, l, u);
            if self.counts[b] > 0 {
                filled.push(b);
            }
            b += 1;
        }
    }

    /// [`Histogram::rebin_into`] of pieces that are each one value `v`
    /// holding `count` (integer microseconds below 256, where every fine
    /// bucket is one integer), given as increasing `(v, count)`: the same
    /// counts and `filled`, without the pieces' general splitting. A
    /// value goes whole into the first bin (from the last one filled) whose
    /// upper edge reaches it — what the general walk does with a piece
    /// that cannot straddle an edge — and values at or below the first
    /// lower edge or beyond the last upper edge are left out.
    pub fn rebin_points_into(
        &mut self,
        points: impl IntoIterator<Item = (f64, u64)>,
        filled: &mut Vec<usize>,
    ) {
        let n = self.nbin();
        if n == 0 {
            return;
        }
        let mut b = 0;
        for (v, c) in points {
            if c == 0 || (b == 0 && v <= self.lower_edge(0)) {
                continue;
            }
            if v > self.upper_edge(b) {
                if b + 1 == n {
                    break;
                }
                b = self.first_bin_reaching(b, v, |a| v > a);
                if v > self.upper_edge(b) {
                    // Only the last bin, whose upper edge is `max`: this
                    // value and all after it lie beyond the histogram.
                    break;
                }
            }
            self.counts[b] += c;
            if filled.last() != Some(&b) {
                filled.push(b);
            }
        }
    }

    /// The first bin after `from` whose upper edge reaches a piece that
    /// starts at `low` (`above(a)`: all of the piece lies above `a`), or
    /// the last bin; the piece lies above bin `from`'s upper edge. Found
    /// from where the bin width puts the piece, a step or two either way,
    /// then checked against the edges.
    fn first_bin_reaching(&self, from: usize, low: f64, above: impl Fn(f64) -> bool) -> usize {
        let n = self.nbin();
        let guess = ((low - self.start) / self.bin_width) as usize;
        let mut b = guess.saturating_sub(1).clamp(from + 1, n - 1);
        while b + 1 < n && above(self.upper_edge(b)) {
            b += 1;
        }
        while b > from + 1 && !above(self.upper_edge(b - 1)) {
            b -= 1;
        }
        b
    }

    /// A histogram from its parts, checked like the reference's
    /// `set_histogram` (min inside bin 0, last edge at max).
    pub fn from_parts(
        counts: Vec<u64>,
        min: f64,
        max: f64,
        start: f64,
        bin_width: f64,
    ) -> Result<Self, HistogramError> {
        let bad = |m: &str| Err(HistogramError::Inconsistent(m.to_owned()));
        if counts.is_empty() {
            return Err(HistogramError::Empty);
        }
        if max < min || max.is_nan() || min.is_nan() {
            return bad("max < min");
        }
        if min < start || min > start + bin_width {
            return bad("min is not inside the first bin");
        }
        let top = start + counts.len() as f64 * bin_width;
        if (top - max).abs() > 1e-8 * bin_width {
            return bad("start + nbin·width does not reach max");
        }
        Ok(Histogram {
            counts,
            start,
            bin_width,
            min,
            max,
        })
    }

    /// Builds the histogram of `values` (`create_histogram`).
    pub fn create(values: &[f64], spec: BinWidth) -> Result<Self, HistogramError> {
        let Some(&first) = values.first() else {
            return Err(HistogramError::Empty);
        };
        if let Some(&v) = values.iter().find(|v| !v.is_finite()) {
            return Err(HistogramError::NotFinite(v));
        }
        if values.iter().all(|&v| v == first) {
            return Ok(Histogram::delta(first, values.len() as u64));
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let width = spec.for_values(values, min, max);
        let mut h = Histogram::empty_grid(min, max, width)?;
        for &v in values {
            match h.get_bin(v, 0.0) {
                BinPos::In(b) => h.counts[b] += 1,
                _ => {
                    return Err(HistogramError::Inconsistent(format!(
                        "value {v} falls outside its own histogram"
                    )))
                }
            }
        }
        Ok(h)
    }

    /// All `n` values equal `v`: one tiny bin just below and up to `v`.
    pub fn delta(v: f64, n: u64) -> Self {
        let mut d = 1e-12 * v.abs();
        if d == 0.0 {
            d = 1e-12;
        }
        Histogram {
            counts: vec![n],
            start: v - d,
            bin_width: d,
            min: v,
            max: v,
        }
    }

    /// Zero counts on the grid the reference builds for `[min, max]` and a
    /// suggested width: first edge `1e-6·w` below min, the width then
    /// stretched so that a whole number of bins ends exactly at max.
    pub fn empty_grid(min: f64, max: f64, width: f64) -> Result<Self, HistogramError> {
        let mut h = Histogram::default();
        h.reset_grid(min, max, width, &[])?;
        Ok(h)
    }

    /// Makes this histogram [`Histogram::empty_grid`]`(min, max, width)`,
    /// keeping its buffer; on an error it is left as it was. `filled` lists
    /// the bins that hold counts now (or more): with as many bins as before
    /// only those are zeroed, not every bin.
    pub fn reset_grid(
        &mut self,
        min: f64,
        max: f64,
        width: f64,
        filled: &[usize],
    ) -> Result<(), HistogramError> {
        if width <= 0.0 || !width.is_finite() {
            return Err(HistogramError::BadWidth(width));
        }
        let first_edge = min - LOWER_SHIFT * width;
        let bins = (max - first_edge) / width;
        let nbin = ceil_usize(bins);
        if !(1..=100_000_000).contains(&nbin) {
            return Err(HistogramError::TooManyBins(bins.ceil()));
        }
        if self.counts.len() == nbin {
            filled.iter().for_each(|&b| self.counts[b] = 0);
        } else {
            self.counts.clear();
            self.counts.resize(nbin, 0);
        }
        self.start = first_edge;
        self.bin_width = (max - first_edge) / nbin as f64;
        self.min = min;
        self.max = max;
        Ok(())
    }

    /// Number of bins.
    pub fn nbin(&self) -> usize {
        self.counts.len()
    }

    /// Sum of the counts.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Lower edge of bin `b`.
    pub fn lower_edge(&self, b: usize) -> f64 {
        self.start + b as f64 * self.bin_width
    }

    /// Upper edge of bin `b` (the last one is `max` exactly).
    pub fn upper_edge(&self, b: usize) -> f64 {
        if b + 1 == self.nbin() {
            self.max
        } else {
            self.start + (b + 1) as f64 * self.bin_width
        }
    }

    /// Edges of every bin, each lower edge equal to the previous upper edge.
    pub fn edges(&self) -> Vec<(f64, f64)> {
        let mut out: Vec<(f64, f64)> = Vec::with_capacity(self.nbin());
        for b in 0..self.nbin() {
            let lo = out.last().map_or(self.lower_edge(0), |e| e.1);
            out.push((lo, self.upper_edge(b)));
        }
        out
    }

    /// Midpoint of bin `b` (the value a bin stands for in moments, Scott's
    /// rule and COPOD's threshold).
    pub fn bin_value(&self, b: usize) -> f64 {
        self.start + (b as f64 + 0.5) * self.bin_width
    }

    /// The bin of `v`; values up to `tol` bin widths outside the range fall
    /// in the first or last bin (`getBin`).
    #[inline]
    pub fn get_bin(&self, v: f64, tol: f64) -> BinPos {
        self.grid().get_bin(v, tol)
    }

    /// The bins without their counts.
    #[inline]
    pub fn grid(&self) -> Grid {
        Grid {
            start: self.start,
            bin_width: self.bin_width,
            min: self.min,
            max: self.max,
            nbin: self.nbin(),
        }
    }

    /// Counts in `(l, u]`, counts spread uniformly inside each bin; the
    /// range is clamped to the histogram (`uniformCountInRange`).
    pub fn uniform_count_in_range(&self, l: f64, u: f64) -> f64 {
        if self.nbin() == 0 || u <= l || u.is_nan() || l.is_nan() {
            return 0.0;
        }
        if self.min == self.max {
            // A delta function: all counts sit at the single value.
            return if l < self.max && u >= self.max {
                self.counts[0] as f64
            } else {
                0.0
            };
        }
        let (lbin, l) = match self.get_bin(l, 0.0) {
            BinPos::Left => (0, self.lower_edge(0)),
            BinPos::Right => return 0.0,
            BinPos::In(b) => (b, l),
        };
        let (ubin, u) = match self.get_bin(u, 0.0) {
            BinPos::Right => (self.nbin() - 1, self.max),
            BinPos::Left => return 0.0,
            BinPos::In(b) => (b, u),
        };
        let frac = |b: usize, from: f64, to: f64| {
            let (lo, hi) = (self.lower_edge(b), self.upper_edge(b));
            (to - from) / (hi - lo) * self.counts[b] as f64
        };
        if lbin == ubin {
            return frac(lbin, l, u);
        }
        let mut c = frac(lbin, l, self.upper_edge(lbin)) + frac(ubin, self.lower_edge(ubin), u);
        for b in lbin + 1..ubin {
            c += self.counts[b] as f64;
        }
        c
    }

    /// Fraction of counts at or below `v` (`empiricalCDF`).
    pub fn empirical_cdf(&self, v: f64) -> f64 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        self.uniform_count_in_range(f64::MIN, v) / total as f64
    }

    /// The histogram of the negated values (`operator-`): counts reversed,
    /// `[−max, −min]`, first edge re-placed `1e-6·w` below the new minimum.
    pub fn negate(&self) -> Histogram {
        let mut out = Histogram::default();
        self.negate_into(&mut out);
        out
    }

    /// [`Histogram::negate`] into `out`, reusing its buffer.
    pub fn negate_into(&self, out: &mut Histogram) {
        out.counts.clear();
        out.counts.extend(self.counts.iter().rev());
        let g = self.negated_grid();
        (out.start, out.bin_width, out.min, out.max) = (g.start, g.bin_width, g.min, g.max);
    }

    /// The bins of [`Histogram::negate`] (its bin `b` holds the count of
    /// bin `nbin − 1 − b`).
    pub fn negated_grid(&self) -> Grid {
        let min = -self.max;
        Grid {
            start: min - LOWER_SHIFT * self.bin_width,
            bin_width: self.bin_width,
            min,
            max: -self.min,
            nbin: self.nbin(),
        }
    }

    /// Skewness over bin midpoints with the reference's estimator
    /// `N/(N−1)·(E[x³] − 3E[x²]μ + 2μ³)/var^1.5`, with `var = E[x²] − μ²`.
    pub fn skewness(&self) -> f64 {
        let (mut n, mut s1, mut s2, mut s3) = (0u64, 0.0f64, 0.0f64, 0.0f64);
        for (b, &c) in self.counts.iter().enumerate() {
            let v = self.bin_value(b);
            let c64 = c as f64;
            s1 += c64 * v;
            s2 += c64 * v * v;
            s3 += c64 * v * v * v;
            n += c;
        }
        let nf = n as f64;
        let (m1, m2, m3) = (s1 / nf, s2 / nf, s3 / nf);
        let var = m2 - m1 * m1;
        let central3 = m3 - 3.0 * m2 * m1 + 2.0 * m1 * m1 * m1;
        nf / (nf - 1.0) * central3 / var.powf(1.5)
    }

    /// Merges two histograms onto a new grid chosen by `spec`
    /// (`merge_histograms`): each input is rebinned by uniform-integer
    /// splitting and the counts are added. Not associative; the detectors
    /// merge exact fine histograms instead and call this only in tests.
    pub fn merge(g: &Histogram, l: &Histogram, spec: BinWidth) -> Result<Self, HistogramError> {
        if g.nbin() == 0 {
            return Ok(l.clone());
        }
        if l.nbin() == 0 {
            return Ok(g.clone());
        }
        let (min, max) = (g.min.min(l.min), g.max.max(l.max));
        let too_many = |w: f64| w == 0.0 || ((max - min) / w).ceil() > MAX_MERGED_BINS as f64;
        let mut width = spec.for_pair(g, l, min, max);
        if too_many(width) {
            width = g.bin_width.min(l.bin_width);
            if too_many(width) {
                return Err(HistogramError::BadWidth(width));
            }
        }
        let mut start = min - LOWER_SHIFT * width;
        if start == max {
            // min == max and the shift vanished in rounding: one bin.
            start = min - width;
            if start == max {
                width = if min == 0.0 { 1e-6 } else { 1e-6 * min.abs() };
                start = min - width;
            }
        }
        let nbin = ((max - start) / width).ceil();
        if !(1.0..=MAX_MERGED_BINS as f64 + 1.0).contains(&nbin) {
            return Err(HistogramError::TooManyBins(nbin));
        }
        let nbin = nbin as usize;
        let mut out = Histogram {
            counts: vec![0; nbin],
            start,
            bin_width: (max - start) / nbin as f64,
            min,
            max,
        };
        let edges = out.edges();
        for src in [g, l] {
            let got = rebin(src.pieces(), &edges);
            for (o, c) in out.counts.iter_mut().zip(got) {
                *o += c;
            }
        }
        Ok(out)
    }

    /// The bins as rebinning pieces (a delta histogram is one point).
    fn pieces(&self) -> Vec<Piece> {
        if self.min == self.max {
            return vec![Piece::point(self.max, self.total() as f64)];
        }
        self.edges()
            .into_iter()
            .zip(&self.counts)
            .map(|((lo, hi), &c)| Piece::span(lo, hi, c as f64))
            .collect()
    }

    /// Chimbuko's JSON form of a histogram.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "Bin Counts": self.counts,
            "First edge": self.start,
            "Bin width": self.bin_width,
            "Min": self.min,
            "Max": self.max,
        })
    }
}

/// The bins of a histogram without their counts (`start`, `bin_width`,
/// `min`, `max` as in [`Histogram`], and the number of bins): what a model
/// that keeps only its non-empty bins needs to place a value.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Grid {
    /// Lower edge of bin 0.
    pub start: f64,
    /// Width of every bin.
    pub bin_width: f64,
    /// Smallest value (inside bin 0).
    pub min: f64,
    /// Largest value (the last upper edge).
    pub max: f64,
    /// Number of bins.
    pub nbin: usize,
}

impl Grid {
    /// Words of [`Grid::to_words`].
    pub const WORDS: usize = 5;

    /// The grid as words, every bit of its edges (for models that travel
    /// between ranks).
    pub fn to_words(&self) -> [u64; Self::WORDS] {
        [
            self.start.to_bits(),
            self.bin_width.to_bits(),
            self.min.to_bits(),
            self.max.to_bits(),
            self.nbin as u64,
        ]
    }

    /// The grid [`Grid::to_words`] wrote (missing words read as zero).
    pub fn from_words(words: &[u64]) -> Grid {
        let word = |i: usize| words.get(i).copied().unwrap_or(0);
        Grid {
            start: f64::from_bits(word(0)),
            bin_width: f64::from_bits(word(1)),
            min: f64::from_bits(word(2)),
            max: f64::from_bits(word(3)),
            nbin: word(4) as usize,
        }
    }

    /// Lower edge of bin `b` (as [`Histogram::lower_edge`]).
    #[inline]
    pub fn lower_edge(&self, b: usize) -> f64 {
        self.start + b as f64 * self.bin_width
    }

    /// Upper edge of bin `b` (as [`Histogram::upper_edge`]).
    #[inline]
    pub fn upper_edge(&self, b: usize) -> f64 {
        if b + 1 == self.nbin {
            self.max
        } else {
            self.start + (b + 1) as f64 * self.bin_width
        }
    }

    /// The bin of `v`; values up to `tol` bin widths outside the range fall
    /// in the first or last bin (`getBin`).
    #[inline]
    pub fn get_bin(&self, v: f64, tol: f64) -> BinPos {
        let n = self.nbin;
        if n == 0 || v.is_nan() {
            return BinPos::Left;
        }
        if v <= self.start - tol * self.bin_width {
            BinPos::Left
        } else if v <= self.start {
            BinPos::In(0)
        } else if v > self.max + tol * self.bin_width {
            BinPos::Right
        } else if v >= self.max {
            BinPos::In(n - 1)
        } else {
            // `floor` then `as usize` is `as usize` alone (truncation
            // towards zero, saturating at 0), without a call to `floor`
            // (not an instruction on baseline x86-64).
            let mut b = ((v - self.start) / self.bin_width) as usize;
            // Edges are *defined* as start + b·w: a value on (or, through
            // rounding, below) that edge belongs to the bin before.
            if b > 0 && v <= self.lower_edge(b) {
                b -= 1;
            }
            BinPos::In(b.min(n - 1))
        }
    }
}

/// `sign(x)` with `sign(0) = sign(NaN) = 0`.
pub fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(counts: &[u64], min: f64, max: f64, start: f64, w: f64) -> Histogram {
        Histogram::from_parts(counts.to_vec(), min, max, start, w).unwrap()
    }

    #[test]
    fn fixed_width_example_gives_four_refitted_bins() {
        let v = [0.1, 0.1, 0.1, 0.2, 0.4];
        let x = Histogram::create(&v, BinWidth::Fixed(0.1)).unwrap();
        assert_eq!(x.nbin(), 4);
        assert!((x.bin_width - 0.075000025).abs() < 1e-12, "{}", x.bin_width);
        assert_eq!(x.counts, vec![3, 1, 0, 1]);
        assert_eq!(x.get_bin(0.1, 0.0), BinPos::In(0));
        assert_eq!(x.get_bin(0.4, 0.0), BinPos::In(3));
        assert_eq!(x.get_bin(0.0, 0.0), BinPos::Left);
        assert_eq!(x.get_bin(0.5, 0.0), BinPos::Right);
        assert_eq!(x.upper_edge(3), 0.4);
    }

    #[test]
    fn fixed_nbin_and_delta() {
        let v = [0.1, 0.1, 0.1, 0.2, 0.4];
        for k in 1..=4 {
            let x = Histogram::create(&v, BinWidth::FixedNbin(k)).unwrap();
            assert_eq!(x.nbin(), k);
            assert_eq!(x.total(), 5);
        }
        let d = Histogram::create(&[0.0, 0.0, 0.0], BinWidth::Scott).unwrap();
        assert_eq!(d.counts, vec![3]);
        assert!(d.start < 0.0);
        assert_eq!(d.get_bin(0.0, 0.05), BinPos::In(0));
        assert!(Histogram::create(&[], BinWidth::Scott).is_err());
        assert!(Histogram::create(&[1.0, f64::NAN], BinWidth::Scott).is_err());
    }

    #[test]
    fn get_bin_edges_and_tolerance() {
        let x = h(&[1, 2, 0, 4], 0.11, 0.5, 0.1, 0.1);
        assert_eq!(x.get_bin(0.15, 0.05), BinPos::In(0));
        assert_eq!(x.get_bin(0.45, 0.05), BinPos::In(3));
        assert_eq!(x.get_bin(0.0, 0.05), BinPos::Left);
        assert_eq!(x.get_bin(0.096, 0.05), BinPos::In(0));
        assert_eq!(x.get_bin(0.6, 0.05), BinPos::Right);
        assert_eq!(x.get_bin(0.504, 0.05), BinPos::In(3));
        assert_eq!(x.get_bin(0.1, 0.0), BinPos::Left);
        assert_eq!(x.get_bin(0.1, 0.01), BinPos::In(0));
        assert_eq!(x.get_bin(0.2, 0.05), BinPos::In(0));
        assert_eq!(x.get_bin(0.20001, 0.05), BinPos::In(1));
        assert_eq!(x.get_bin(0.5, 0.05), BinPos::In(3));
    }

    #[test]
    fn merge_with_aligned_edges() {
        let target = h(&[0, 0, 0], 1e-8, 3.0, 0.0, 1.0);
        let a = h(&[0, 3, 0], 1e-8, 3.0, 0.0, 1.0);
        let b = h(&[2, 0, 1], 1e-8, 3.0, 0.0, 1.0);
        let edges = target.edges();
        let sum: Vec<u64> = rebin(a.pieces(), &edges)
            .iter()
            .zip(rebin(b.pieces(), &edges))
            .map(|(x, y)| x + y)
            .collect();
        assert_eq!(sum, vec![2, 3, 1]);
    }

    #[test]
    fn merge_onto_finer_bins_splits_counts() {
        let target = h(&[0; 6], -1.0 + 1e-8, 5.0, -1.0, 1.0);
        let g = h(&[6, 0], -1.0 + 1e-8, 3.0, -1.0, 2.0);
        let l = h(&[4, 0, 0], -1.0 + 1e-8, 5.0, -1.0, 2.0);
        let edges = target.edges();
        let sum: Vec<u64> = rebin(g.pieces(), &edges)
            .iter()
            .zip(rebin(l.pieces(), &edges))
            .map(|(x, y)| x + y)
            .collect();
        assert_eq!(sum, vec![5, 5, 0, 0, 0, 0]);
    }

    #[test]
    fn split_rounding_follows_the_reference() {
        // Counts 3 and 2 on two wide bins, rebinned onto 8 half-width bins.
        let target = h(&[0; 8], -1.0 + 1e-8, 3.0, -1.0, 0.5);
        let l = h(&[3, 0], -1.0 + 1e-8, 3.0, -1.0, 2.0);
        let g = h(&[0, 2], -1.0 + 1e-8, 3.0, -1.0, 2.0);
        let edges = target.edges();
        assert_eq!(rebin(l.pieces(), &edges), vec![1, 1, 0, 1, 0, 0, 0, 0]);
        assert_eq!(rebin(g.pieces(), &edges), vec![0, 0, 0, 0, 1, 0, 0, 1]);
    }

    #[test]
    fn merge_preserves_totals() {
        let g = h(&[0, 1, 4, 1, 0], 0.1 + 1e-8, 0.6, 0.1, 0.1);
        let l = h(&[1, 0, 6, 0, 1], 0.1 + 1e-8, 0.6, 0.1, 0.1);
        let c = Histogram::merge(&g, &l, BinWidth::Scott).unwrap();
        assert_eq!(c.total(), 14);
        assert_eq!(c.upper_edge(c.nbin() - 1), 0.6);
        assert!(c.lower_edge(0) < 0.1 + 1e-8);
        // A tiny suggested width falls back to the inputs' smaller width.
        let g = h(&[1, 4], 0.100001, 0.3, 0.1, 0.1);
        let l = h(&[3, 2], 0.000001, 0.6, 0.0, 0.3);
        let c = Histogram::merge(&g, &l, BinWidth::Fixed(1e-20)).unwrap();
        assert!((c.bin_width - 0.1).abs() < 1e-4);
        assert_eq!(c.upper_edge(c.nbin() - 1), 0.6);
    }

    #[test]
    fn negation_and_ecdf() {
        let g = h(&[2, 40, 24, 10, 3, 1, 0, 1], 0.11, 0.9, 0.1, 0.1);
        let n = g.negate();
        assert_eq!(n.get_bin(-0.95, 0.0), BinPos::Left);
        assert_eq!(n.get_bin(-0.85, 0.0), BinPos::In(0));
        assert_eq!(n.counts[0], 1);
        assert_eq!(n.counts[7], 2);
        assert_eq!(n.get_bin(-0.05, 0.0), BinPos::Right);
        assert_eq!((n.min, n.max), (-0.9, -0.11));

        let g = h(&[2, 40, 24, 10, 3, 1, 0, 1], 0.1 + 1e-8, 0.9, 0.1, 0.1);
        let total = 81.0;
        assert_eq!(g.empirical_cdf(0.05), 0.0);
        assert_eq!(g.empirical_cdf(0.95), 1.0);
        assert!((g.empirical_cdf(0.14) - 0.4 * 2.0 / total).abs() < 1e-3);
        assert!((g.empirical_cdf(0.34) - (42.0 + 0.4 * 24.0) / total).abs() < 1e-3);
        // Right-tail fractions from the negated histogram.
        let p = Histogram::create(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], BinWidth::Fixed(0.05)).unwrap();
        let n = p.negate();
        assert!((n.empirical_cdf(-5.94) - 1.0 / 6.0).abs() < 1e-6);
        assert!(n.empirical_cdf(-6.1).abs() < 1e-6);
        assert!((n.empirical_cdf(-1.1) - 5.0 / 6.0).abs() < 1e-6);
    }

    #[test]
    fn uniform_count_in_range_cases() {
        let x = h(&[1, 2, 3], 1e-12, 3.0, 0.0, 1.0);
        assert!((x.uniform_count_in_range(0.0, 3.0) - 6.0).abs() < 1e-5);
        assert!((x.uniform_count_in_range(2.5, 3.0) - 1.5).abs() < 1e-5);
        assert!((x.uniform_count_in_range(0.5, 2.5) - 4.0).abs() < 1e-5);
        let d = h(&[3], 0.5, 0.5, 0.5 - 1e-8, 1e-8);
        assert_eq!(d.uniform_count_in_range(0.499, 0.5), 3.0);
        assert_eq!(d.uniform_count_in_range(0.5, 0.501), 0.0);
    }

    #[test]
    fn skewness_matches_unpacked_values() {
        let g = h(&[8, 2, 1, 4], 0.11, 0.5, 0.1, 0.1);
        let vals: Vec<f64> = (0..4)
            .flat_map(|b| std::iter::repeat_n(g.bin_value(b), g.counts[b] as usize))
            .collect();
        let n = vals.len() as f64;
        let mean = vals.iter().sum::<f64>() / n;
        let var = vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let m3 = vals.iter().map(|v| (v - mean).powi(3)).sum::<f64>() / (n - 1.0);
        assert!((g.skewness() - m3 / var.powf(1.5)).abs() < 1e-5);
    }

    #[test]
    fn integer_pieces_split_by_whole_values() {
        // Integers 10..=19 (count 10) onto (9.5, 14.2], (14.2, 30]:
        // 10..=14 is half of the bucket.
        let edges = [(9.5, 14.2), (14.2, 30.0)];
        assert_eq!(rebin(vec![Piece::integers(10, 19, 10)], &edges), vec![5, 5]);
        // A single integer never splits.
        let edges = [(6.5, 7.0), (7.0, 7.5)];
        assert_eq!(rebin(vec![Piece::integers(7, 7, 4)], &edges), vec![4, 0]);
    }
}
