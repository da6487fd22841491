//! HBOS (histogram-based outlier score) with Chimbuko's meaning of every
//! parameter (`reference/chimbuko-algorithms.md` §5):
//!
//! - the labelling histogram has `--hbos-max-bins` (200) equal bins over
//!   the function's global `[min, max]` (one tiny bin for a constant
//!   function), derived after each merge from the exact fine histogram;
//! - bin score `s_b = −log2(c_b/N + α)` with `α = 78.88e-32` (an empty bin
//!   scores ≈ 100.0001); values more than 5 % of a bin width outside the
//!   range score `−log2(α)`;
//! - local threshold `l_thr = min_s + threshold·(max_s − min_s)` over the
//!   non-empty bins (`--hbos-threshold`, 0.99);
//! - the *global threshold ratchet* `g_t = max(g_{t−1}, l_thr_t)`, starting
//!   at `log2(1.00001)`, is part of the global model (the same on every
//!   rank); an execution is an anomaly iff its score `>= g_t`.

use super::binned::{BinnedDetector, Kernel};
use super::stats::fine::{lane_bits, FineHist, StepDelta};
use super::stats::histogram::{BinPos, BinWidth, Grid, Histogram};
use super::stats::memo::Memo;
use super::{ModelSnapshot, Verdict};

/// Chimbuko's α: keeps `log2` finite for empty bins.
pub const ALPHA: f64 = 78.88e-32;
/// Tolerance of `getBin` when labelling (fraction of a bin width).
pub const EDGE_TOLERANCE: f64 = 0.05;

/// Starting value of the global threshold, `log2(1.00001)`.
pub fn initial_global_threshold() -> f64 {
    1.00001f64.log2()
}

/// Score of a value outside the histogram, `−log2(α)` ≈ 100.0001.
pub fn outside_score() -> f64 {
    -ALPHA.log2()
}

/// HBOS parameters.
#[derive(Debug, Clone)]
pub struct HbosParams {
    /// Default threshold (Chimbuko's `hbos_thres`, 0.99).
    pub threshold: f64,
    /// Bins of the labelling histogram (`hbos_max_bins`, 200).
    pub max_bins: usize,
}

impl Default for HbosParams {
    fn default() -> Self {
        HbosParams {
            threshold: 0.99,
            max_bins: 200,
        }
    }
}

/// The labelling model of one function: the labelling histogram's grid,
/// and only the bins whose score is not an empty bin's (those with counts
/// and the empty ones [`Scoring::fill_held_empty_bins`] lowered). Most of
/// the 200 bins are empty, and at 10⁴ functions dense counts and scores
/// (3.2 kB a function) would not stay in cache from one step to the next;
/// the kernel derives each model on dense buffers of its own and keeps
/// this much of it.
#[derive(Debug, Clone)]
pub struct HbosModel {
    /// The labelling histogram's bins.
    pub grid: Grid,
    /// The bins that are not empty-scored, increasing.
    held: Vec<HeldBin>,
    /// The held bins below [`MASK_BINS`] as bits (bin `b`: bit `b % 64` of
    /// word `b / 64`). A label finds out here whether its bin is held, and
    /// where in `held` (the bits below it counted), instead of a binary
    /// search through `held`: at 10⁴ functions a step every model is cold,
    /// and each probe of the search was a cache miss.
    mask: [u64; MASK_WORDS],
    /// `l_thr` of the current histogram.
    pub local_threshold: f64,
    /// The ratchet `g` (what labels are compared with).
    pub global_threshold: f64,
}

/// Words of [`HbosModel::mask`], and the bins they cover (the default 200
/// bins and more).
const MASK_WORDS: usize = 4;
const MASK_BINS: usize = 64 * MASK_WORDS;

/// A bin of an [`HbosModel`] with its count and score.
#[derive(Debug, Clone, Copy, PartialEq)]
struct HeldBin {
    bin: u32,
    count: u64,
    score: f64,
}

impl PartialEq for HbosModel {
    fn eq(&self, o: &Self) -> bool {
        // What labels and reports see, whichever bins are held.
        (
            self.histogram(),
            self.scores(),
            self.local_threshold,
            self.global_threshold,
        ) == (
            o.histogram(),
            o.scores(),
            o.local_threshold,
            o.global_threshold,
        )
    }
}

impl Default for HbosModel {
    fn default() -> Self {
        HbosModel {
            grid: Grid::default(),
            held: Vec::new(),
            mask: [0; MASK_WORDS],
            local_threshold: 0.0,
            global_threshold: initial_global_threshold(),
        }
    }
}

impl HbosModel {
    /// Scores and thresholds of a labelling histogram; `prev_global` is the
    /// ratchet before this histogram.
    pub fn from_histogram(hist: Histogram, threshold: f64, prev_global: f64) -> Self {
        let mut s = Scoring {
            filled: (0..hist.nbin()).filter(|&b| hist.counts[b] > 0).collect(),
            hist,
            ..Default::default()
        };
        let mut m = HbosModel {
            global_threshold: prev_global,
            ..Default::default()
        };
        s.rescore(&mut m, threshold, &mut Memo::new(f64::log2, 1));
        m.keep(&mut s);
        m
    }

    /// The labelling histogram, dense.
    pub fn histogram(&self) -> Histogram {
        let g = &self.grid;
        let mut counts = vec![0; g.nbin];
        for h in &self.held {
            counts[h.bin as usize] = h.count;
        }
        Histogram {
            counts,
            start: g.start,
            bin_width: g.bin_width,
            min: g.min,
            max: g.max,
        }
    }

    /// The score of each bin, dense.
    pub fn scores(&self) -> Vec<f64> {
        let mut scores = vec![outside_score(); self.grid.nbin];
        for h in &self.held {
            scores[h.bin as usize] = h.score;
        }
        scores
    }

    /// The grid, counts and scores of `s` (just scored), in place of the
    /// model's; the held bins' buffer is reused.
    fn keep(&mut self, s: &mut Scoring) {
        self.grid = s.hist.grid();
        s.scored.sort_unstable();
        s.scored.dedup();
        self.held.clear();
        self.held.extend(s.scored.iter().map(|&b| HeldBin {
            bin: b as u32,
            count: s.hist.counts[b],
            score: s.scores[b],
        }));
        self.set_mask();
    }

    /// [`HbosModel::mask`] of the held bins.
    fn set_mask(&mut self) {
        self.mask = [0; MASK_WORDS];
        for h in &self.held {
            let b = h.bin as usize;
            if b < MASK_BINS {
                self.mask[b / 64] |= 1 << (b % 64);
            }
        }
    }

    /// Score of runtime `x`.
    pub fn score(&self, x: f64) -> f64 {
        match self.grid.get_bin(x, EDGE_TOLERANCE) {
            BinPos::In(b) => {
                if b < MASK_BINS {
                    let (word, bit) = (b / 64, b % 64);
                    if self.mask[word] >> bit & 1 == 0 {
                        return outside_score();
                    }
                    // Bins are held once each and in increasing order, so
                    // the held bins below `b` are `held[..at]`; checked, and
                    // searched for should the list ever not be so.
                    let below = self.mask[word] & ((1 << bit) - 1);
                    let at = self.mask[..word]
                        .iter()
                        .map(|m| m.count_ones())
                        .sum::<u32>()
                        + below.count_ones();
                    if let Some(h) = self.held.get(at as usize).filter(|h| h.bin as usize == b) {
                        return h.score;
                    }
                }
                let at = self.held.partition_point(|h| (h.bin as usize) < b);
                match self.held.get(at) {
                    Some(h) if h.bin as usize == b => h.score,
                    _ => outside_score(),
                }
            }
            BinPos::Left | BinPos::Right => outside_score(),
        }
    }

    /// Label and score of runtime `x` (µs): anomaly when the score reaches
    /// the global threshold.
    pub fn judge(&self, x: f64) -> Verdict {
        Verdict::by_threshold(self.score(x), self.global_threshold)
    }
}

/// Dense buffers on which the kernel scores one labelling histogram after
/// another (they stay in cache); the model keeps the result sparsely
/// ([`HbosModel::keep`]).
#[derive(Debug, Clone, Default)]
struct Scoring {
    /// The labelling histogram being scored.
    hist: Histogram,
    /// Score of each bin.
    scores: Vec<f64>,
    /// The bins that hold counts, and the bins whose score is not an empty
    /// bin's (these and the ones lowered by
    /// [`Scoring::fill_held_empty_bins`], perhaps more than once): the next
    /// histogram of as many bins resets only these instead of rewriting all
    /// of them.
    filled: Vec<usize>,
    scored: Vec<usize>,
}

impl Scoring {
    /// Scores of `self.hist` (whose bins with counts are `self.filled`) and
    /// the thresholds of `m`, the ratchet going on from its
    /// `global_threshold`.
    fn rescore(&mut self, m: &mut HbosModel, threshold: f64, log2: &mut Memo) {
        let counts = &self.hist.counts;
        let n = self.filled.iter().map(|&b| counts[b]).sum::<u64>() as f64;
        // Most of the 200 bins are often empty: their score is a constant.
        let empty = outside_score();
        if self.scores.len() == counts.len() {
            self.scored.iter().for_each(|&b| self.scores[b] = empty);
        } else {
            self.scores.clear();
            self.scores.resize(counts.len(), empty);
        }
        self.scored.clear();
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for &b in &self.filled {
            let s = -log2.get(counts[b] as f64 / n + ALPHA);
            self.scores[b] = s;
            self.scored.push(b);
            lo = lo.min(s);
            hi = hi.max(s);
        }
        let local = if lo.is_finite() {
            lo + threshold * (hi - lo)
        } else {
            0.0
        };
        m.local_threshold = local;
        m.global_threshold = m.global_threshold.max(local);
    }

    /// Gives an empty bin that holds observed runtimes the score of the
    /// bins their counts went to. Rebinning a fine bucket that straddles a
    /// bin edge splits its count with rounding, so a bucket of one count
    /// split half and half puts it on one side only; a runtime in the other
    /// bin is part of the model, yet its bin shows 0 and it would score as
    /// never seen (≈ 100, the maximum). `buckets` are the exact fine
    /// buckets `(lo, hi, count)` of integer runtimes the histogram was
    /// built from.
    fn fill_held_empty_bins(&mut self, buckets: impl Iterator<Item = (u64, u64, u64)>) {
        let n = self.hist.nbin();
        for (lo, hi, c) in buckets {
            // A bucket of one integer falls in one bin.
            if c == 0 || n == 0 || lo == hi {
                continue;
            }
            let bin = |v: u64| match self.hist.get_bin(v as f64, 0.0) {
                BinPos::In(b) => b,
                BinPos::Left => 0,
                BinPos::Right => n - 1,
            };
            let (a, b) = (bin(lo), bin(hi));
            if a == b {
                continue;
            }
            let held = (a..=b)
                .filter(|&k| self.hist.counts[k] > 0)
                .map(|k| self.scores[k])
                .fold(f64::INFINITY, f64::min);
            if held.is_finite() {
                for k in a..=b {
                    if self.hist.counts[k] == 0 {
                        self.scores[k] = self.scores[k].min(held);
                        self.scored.push(k);
                    }
                }
            }
        }
    }
}

/// The HBOS kernel of [`BinnedDetector`].
#[derive(Debug, Clone, Default)]
pub struct HbosKernel {
    /// The HBOS parameters.
    pub params: HbosParams,
    /// `log2` of the bins' shares: the same few counts out of the same
    /// number of executions recur from one function to the next.
    log2: Log2Memo,
    /// The buffers each function's model is derived on.
    scoring: Scoring,
}

/// A [`Memo`] of `log2`.
#[derive(Debug, Clone)]
struct Log2Memo(Memo);

impl Default for Log2Memo {
    fn default() -> Self {
        Log2Memo(Memo::new(f64::log2, 1024))
    }
}

/// The HBOS detector.
pub type Hbos = BinnedDetector<HbosKernel>;

impl Hbos {
    /// An HBOS detector; functions are labelled from `min_count` executions.
    pub fn with_params(params: HbosParams, min_count: u64) -> Self {
        let kernel = HbosKernel {
            params,
            log2: Log2Memo::default(),
            scoring: Scoring::default(),
        };
        BinnedDetector::new(kernel, min_count)
    }
}

impl Kernel for HbosKernel {
    type Model = HbosModel;

    fn name(&self) -> &'static str {
        "hbos"
    }

    fn default_threshold(&self) -> f64 {
        self.params.threshold
    }

    fn empty_model(&self) -> HbosModel {
        HbosModel::default()
    }

    fn derive(&mut self, model: &mut HbosModel, hist: &FineHist, _: &StepDelta, thr: f64) {
        let spec = BinWidth::FixedNbin(self.params.max_bins.max(1));
        // An error is unreachable for non-empty integer data; the old model
        // then stays.
        let s = &mut self.scoring;
        if hist
            .labelling_histogram_into(spec, &mut s.hist, &mut s.filled)
            .is_ok()
        {
            s.rescore(model, thr, &mut self.log2.0);
            if hist.has_wide_buckets() {
                s.fill_held_empty_bins(hist.buckets());
            }
            model.keep(s);
        }
    }

    fn shares_models(&self) -> bool {
        true
    }

    fn encode(&self, m: &HbosModel, count: u64, out: &mut Vec<u64>) {
        out.extend(m.grid.to_words());
        out.extend([m.local_threshold.to_bits(), m.global_threshold.to_bits()]);
        // A held bin's count is at most the function's: when that fits a
        // 32-bit lane (the same test on every rank) it shares a word with
        // the bin's index.
        let narrow = lane_bits(count) <= 32;
        for h in &m.held {
            if narrow {
                out.extend([u64::from(h.bin) | h.count << 32, h.score.to_bits()]);
            } else {
                out.extend([u64::from(h.bin), h.count, h.score.to_bits()]);
            }
        }
    }

    fn decode(&self, m: &mut HbosModel, count: u64, words: &[u64]) {
        const HEAD: usize = Grid::WORDS + 2;
        let (head, held) = words.split_at(words.len().min(HEAD));
        let float = |i: usize| f64::from_bits(head.get(i).copied().unwrap_or(0));
        m.grid = Grid::from_words(head);
        m.local_threshold = float(Grid::WORDS);
        m.global_threshold = float(Grid::WORDS + 1);
        m.held.clear();
        if lane_bits(count) <= 32 {
            m.held.extend(held.chunks_exact(2).map(|w| HeldBin {
                bin: w[0] as u32,
                count: w[0] >> 32,
                score: f64::from_bits(w[1]),
            }));
        } else {
            m.held.extend(held.chunks_exact(3).map(|w| HeldBin {
                bin: w[0] as u32,
                count: w[1],
                score: f64::from_bits(w[2]),
            }));
        }
        m.set_mask();
    }

    fn judge(&self, m: &HbosModel, value: u64) -> Verdict {
        m.judge(value as f64)
    }

    fn json(&self, m: &HbosModel) -> serde_json::Value {
        serde_json::json!({
            "histogram": m.histogram().to_json(),
            "internal_global_threshold": m.global_threshold,
            "local_threshold": m.local_threshold,
        })
    }

    fn snapshot(&self, m: &HbosModel, s: &mut ModelSnapshot) {
        s.threshold = m.global_threshold;
        s.hist_first_edge = m.grid.start;
        s.hist_bin_width = m.grid.bin_width;
        s.hist_counts = m.histogram().counts;
    }

    fn hist_len(&self, m: &HbosModel) -> usize {
        m.grid.nbin
    }

    fn digest_words(&self, m: &HbosModel, out: &mut Vec<u64>) {
        out.push(m.global_threshold.to_bits());
        out.push(m.grid.start.to_bits());
        out.push(m.grid.bin_width.to_bits());
        // The dense counts, zeros between the held bins.
        let mut next = 0;
        for h in &m.held {
            let b = h.bin as usize;
            out.resize(out.len() + (b - next), 0);
            out.push(h.count);
            next = b + 1;
        }
        out.resize(out.len() + (m.grid.nbin - next), 0);
    }
}

#[cfg(test)]
mod tests;
