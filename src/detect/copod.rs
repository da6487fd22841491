//! COPOD (copula-based outlier detection) with Chimbuko's meaning of every
//! parameter (`reference/chimbuko-algorithms.md` §6):
//!
//! - the labelling histogram uses Scott's rule (`3.5·σ/n^(1/3)`, at most
//!   50 000 bins), derived after each merge from the exact fine histogram;
//! - left and right tail probabilities from the histogram's empirical CDF
//!   and from the CDF of the negated histogram, each shifted by `+1/N` for
//!   values at or beyond the minimum (the first edge sits just below it);
//! - tail scores `s = −log2(p + α)` combined as
//!   `max((sL + sR)/2, −sign(skew − 1)·sL + sign(skew + 1)·sR)` with the
//!   histogram's skewness;
//! - the threshold from the scores of the bin midpoints with the same
//!   `--hbos-threshold` (0.99) and the global ratchet as HBOS.

use super::binned::{BinnedDetector, Kernel};
use super::hbos::{initial_global_threshold, ALPHA};
use super::stats::fine::{lane_bits, push_lanes, read_lanes, FineHist, StepDelta};
use super::stats::histogram::{sign, BinPos, BinWidth, Grid, Histogram};
use super::{ModelSnapshot, Verdict};
use std::sync::atomic::{AtomicU64, Ordering};

/// COPOD parameters.
#[derive(Debug, Clone)]
pub struct CopodParams {
    /// Default threshold (Chimbuko passes `hbos_thres` to COPOD too).
    pub threshold: f64,
}

impl Default for CopodParams {
    fn default() -> Self {
        CopodParams { threshold: 0.99 }
    }
}

/// The empirical CDF of a histogram in O(1): cumulative counts before each
/// bin plus the uniform share of the value's own bin (`empiricalCDF`).
/// The share's slope (count per unit of value) is computed where a value
/// is placed, not kept per bin: at 10⁴ functions every buffer of a model
/// is one more cache miss per function and step, and a model's bins are
/// placed about as often as they are built.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ecdf {
    /// The histogram the CDF is taken of.
    pub hist: Histogram,
    /// `before[b]` = counts of bins `< b`.
    before: Vec<f64>,
    total: u64,
}

impl Ecdf {
    /// The empirical CDF of `hist`.
    pub fn new(hist: Histogram) -> Self {
        let mut e = Ecdf {
            hist,
            ..Default::default()
        };
        e.refresh();
        e
    }

    /// Recomputes the CDF after `self.hist` changed, reusing the buffers.
    fn refresh(&mut self) {
        let counts = &self.hist.counts;
        self.before.clear();
        let mut acc = 0u64;
        self.before.extend(counts.iter().map(|&c| {
            let before = acc as f64;
            acc += c;
            before
        }));
        self.total = acc;
    }

    /// Fraction of counts at or below `v`.
    pub fn at(&self, v: f64) -> f64 {
        let h = &self.hist;
        cdf_at(&h.grid(), self.total, v, |b| (h.counts[b], self.before[b]))
    }
}

/// The empirical CDF at `v` of a histogram on `grid` with `total` counts,
/// of which `bin(b)` gives the count of bin `b` and the counts before it.
#[inline]
fn cdf_at(grid: &Grid, total: u64, v: f64, bin: impl Fn(usize) -> (u64, f64)) -> f64 {
    if total == 0 {
        return 0.0;
    }
    if grid.min == grid.max {
        return if v >= grid.max { 1.0 } else { 0.0 };
    }
    let below = match grid.get_bin(v, 0.0) {
        BinPos::Left => 0.0,
        BinPos::Right => total as f64,
        BinPos::In(b) => {
            let (count, before) = bin(b);
            let lower = grid.lower_edge(b);
            let slope = count as f64 / (grid.upper_edge(b) - lower);
            before + (v - lower) * slope
        }
    };
    below / total as f64
}

/// The labelling model of one function.
#[derive(Debug, Clone, PartialEq)]
pub struct CopodModel {
    /// CDF of the labelling histogram (left tail).
    pub left: Ecdf,
    /// The bins of the negated histogram (right tail). Its counts are the
    /// left ones reversed, and the counts before its bin `b` are those from
    /// left bin `nbin − b` on: integers, so `total − before` is exact and the
    /// right tail's CDF needs no buffers of its own (one model's buffers are
    /// cache misses at 10⁴ functions a step).
    pub right: Grid,
    /// Skewness of the labelling histogram (picks how the tails combine).
    pub skewness: f64,
    /// `sign(skewness − 1)` and `sign(skewness + 1)`.
    p_sign: f64,
    n_sign: f64,
    /// `l_thr` of the current histogram: the point at fraction `threshold`
    /// of the range of the bin midpoints' scores.
    pub local_threshold: f64,
    /// The ratchet `g` (what labels are compared with).
    pub global_threshold: f64,
    /// Which scores the threads' caches hold for this model.
    generation: Generation,
    /// The bins of the labelling histogram that hold counts (what the next
    /// one resets when it has as many bins).
    filled: Vec<usize>,
}

/// The scores of recently judged runtimes, per thread. Runtimes are
/// integer microseconds and repeat a lot (a short MPI call takes 2 µs
/// thousands of times), and a score costs two CDF lookups and two
/// logarithms. A cache, not part of the model: each thread keeps its own
/// (no cache line travels between the threads judging the same function),
/// keyed by the model's [`Generation`] and the runtime, and returns
/// exactly what [`CopodModel::score`] computes.
struct ScoreCache {
    keys: Vec<(u64, u64)>,
    scores: Vec<f64>,
}

/// Slots of a thread's [`ScoreCache`] (direct-mapped): 48 KiB, a few
/// thousand recurring runtimes over all functions.
const CACHE_SLOTS_LOG2: u32 = 11;

thread_local! {
    static SCORES: std::cell::RefCell<ScoreCache> = std::cell::RefCell::new(ScoreCache {
        keys: vec![(0, 0); 1 << CACHE_SLOTS_LOG2],
        scores: vec![0.0; 1 << CACHE_SLOTS_LOG2],
    });
}

impl ScoreCache {
    /// The score of `value` under the model of `generation`: from the
    /// cache, or `compute`d and kept. Generation 0 is never cached.
    fn get_or(&mut self, generation: u64, value: u64, compute: impl FnOnce() -> f64) -> f64 {
        if generation == 0 {
            return compute();
        }
        let mixed = generation.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ value.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        let slot = (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CACHE_SLOTS_LOG2)) as usize;
        if self.keys[slot] == (generation, value) {
            return self.scores[slot];
        }
        let score = compute();
        self.keys[slot] = (generation, value);
        self.scores[slot] = score;
        score
    }
}

/// A number that names one state of a model, new at every change (derive
/// or decode), so that cached scores are never those of another state. A
/// copy of a model has the same state and keeps it. Not part of the model:
/// models compare equal whatever their generations.
#[derive(Clone, Copy, Default)]
struct Generation(u64);

/// The first [`Generation`] of the next block a thread takes (0 is the
/// default model's, never cached).
static NEXT_GENERATION_BLOCK: AtomicU64 = AtomicU64::new(1);

/// Generations a thread takes at once: one shared counter bumped per
/// derivation would travel between the cores deriving a step's models.
const GENERATION_BLOCK: u64 = 1 << 16;

thread_local! {
    /// The calling thread's next generation and the end of its block.
    static GENERATIONS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

impl Generation {
    fn new() -> Self {
        GENERATIONS.with(|g| {
            let (mut next, mut end) = g.get();
            if next == end {
                next = NEXT_GENERATION_BLOCK.fetch_add(GENERATION_BLOCK, Ordering::Relaxed);
                end = next + GENERATION_BLOCK;
            }
            g.set((next + 1, end));
            Generation(next)
        })
    }
}

impl PartialEq for Generation {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Generation")
    }
}

impl Default for CopodModel {
    fn default() -> Self {
        CopodModel {
            left: Ecdf::default(),
            right: Grid::default(),
            skewness: 0.0,
            p_sign: 0.0,
            n_sign: 0.0,
            local_threshold: 0.0,
            global_threshold: initial_global_threshold(),
            generation: Generation::default(),
            filled: Vec::new(),
        }
    }
}

impl CopodModel {
    /// CDFs and thresholds of a labelling histogram; `prev_global` is the
    /// ratchet before this histogram.
    pub fn from_histogram(hist: Histogram, threshold: f64, prev_global: f64) -> Self {
        let mut m = CopodModel {
            filled: (0..hist.nbin()).filter(|&b| hist.counts[b] > 0).collect(),
            left: Ecdf {
                hist,
                ..Default::default()
            },
            global_threshold: prev_global,
            ..Default::default()
        };
        m.rebuild(threshold);
        m
    }

    /// CDFs and thresholds of `self.left.hist`, the ratchet going on from
    /// `self.global_threshold`; reuses the buffers of the model.
    fn rebuild(&mut self, threshold: f64) {
        let prev_global = self.global_threshold;
        let skewness = self.left.hist.skewness();
        self.right = self.left.hist.negated_grid();
        self.left.refresh();
        self.skewness = skewness;
        self.p_sign = sign(skewness - 1.0);
        self.n_sign = sign(skewness + 1.0);
        self.generation = Generation::new();
        // Score range over the bin midpoints, from the reference's start.
        let mut lo = -ALPHA.log2();
        let mut hi = (1.0 + ALPHA).log2() - lo;
        for b in 0..self.left.hist.nbin() {
            let s = self.score(self.left.hist.bin_value(b));
            lo = lo.min(s);
            hi = hi.max(s);
        }
        let local = if hi < 0.0 {
            -threshold * (hi - lo)
        } else {
            lo + threshold * (hi - lo)
        };
        self.local_threshold = local;
        // The reference keeps g only if it is above −log2(1.00001) (always,
        // as g starts at +log2(1.00001)); otherwise l_thr replaces it.
        if !(local < prev_global && prev_global > -initial_global_threshold()) {
            self.global_threshold = local;
        }
    }

    /// The CDF of the negated histogram at `v` (what an [`Ecdf`] of
    /// [`Histogram::negate`] gives, bit for bit).
    pub fn right_at(&self, v: f64) -> f64 {
        let (l, n) = (&self.left, self.right.nbin);
        cdf_at(&self.right, l.total, v, |b| {
            let before = if b == 0 {
                0.0
            } else {
                l.total as f64 - l.before[n - b]
            };
            (l.hist.counts[n - 1 - b], before)
        })
    }

    /// COPOD score of runtime `x`.
    pub fn score(&self, x: f64) -> f64 {
        let n = self.left.total as f64;
        let mut pl = self.left.at(x);
        if x >= self.left.hist.min {
            pl = (pl + 1.0 / n).min(1.0);
        }
        let mut pr = self.right_at(-x);
        if -x >= self.right.min {
            pr = (pr + 1.0 / n).min(1.0);
        }
        let sl = -(pl + ALPHA).log2();
        let sr = -(pr + ALPHA).log2();
        ((sl + sr) / 2.0).max(-self.p_sign * sl + self.n_sign * sr)
    }

    /// Label and score of runtime `x` (µs): anomaly when the score reaches
    /// the global threshold.
    pub fn judge(&self, x: f64) -> Verdict {
        Verdict::by_threshold(self.score(x), self.global_threshold)
    }
}

/// The COPOD kernel of [`BinnedDetector`].
#[derive(Debug, Clone, Default)]
pub struct CopodKernel {
    /// The COPOD parameters.
    pub params: CopodParams,
}

/// The COPOD detector.
pub type Copod = BinnedDetector<CopodKernel>;

impl Copod {
    /// A COPOD detector; functions are labelled from `min_count` executions.
    pub fn with_params(params: CopodParams, min_count: u64) -> Self {
        BinnedDetector::new(CopodKernel { params }, min_count)
    }
}

impl Kernel for CopodKernel {
    type Model = CopodModel;

    fn name(&self) -> &'static str {
        "copod"
    }

    fn default_threshold(&self) -> f64 {
        self.params.threshold
    }

    fn empty_model(&self) -> CopodModel {
        CopodModel::default()
    }

    fn derive(&mut self, model: &mut CopodModel, hist: &FineHist, _: &StepDelta, thr: f64) {
        // On an error (unreachable for non-empty integer data) the old model
        // stays. The new one takes the old one's buffers.
        let (spec, left) = (BinWidth::Scott, &mut model.left.hist);
        if hist
            .labelling_histogram_into(spec, left, &mut model.filled)
            .is_ok()
        {
            model.rebuild(thr);
        }
    }

    fn shares_models(&self) -> bool {
        true
    }

    fn encode(&self, m: &CopodModel, count: u64, out: &mut Vec<u64>) {
        out.extend(m.left.hist.grid().to_words());
        out.extend(m.right.to_words());
        out.extend([
            m.skewness.to_bits(),
            m.p_sign.to_bits(),
            m.n_sign.to_bits(),
            m.local_threshold.to_bits(),
            m.global_threshold.to_bits(),
            m.left.hist.counts.len() as u64,
        ]);
        // No bin holds more than the function's count: the counts travel
        // in lanes that narrow (four to a word below 2^16 executions).
        push_lanes(&m.left.hist.counts, lane_bits(count), out);
    }

    fn decode(&self, m: &mut CopodModel, count: u64, words: &[u64]) {
        const HEAD: usize = 2 * Grid::WORDS + 6;
        let (head, counts) = words.split_at(words.len().min(HEAD));
        let float = |i: usize| f64::from_bits(head.get(i).copied().unwrap_or(0));
        let left = Grid::from_words(head);
        let h = &mut m.left.hist;
        (h.start, h.bin_width, h.min, h.max) = (left.start, left.bin_width, left.min, left.max);
        h.counts.clear();
        let bits = lane_bits(count);
        // The length word, never beyond what the words hold.
        let len = (head.get(HEAD - 1).copied().unwrap_or(0) as usize)
            .min(counts.len() * (64 / bits) as usize);
        read_lanes(counts, len, bits, &mut h.counts);
        m.right = Grid::from_words(head.get(Grid::WORDS..).unwrap_or(&[]));
        let at = 2 * Grid::WORDS;
        m.skewness = float(at);
        m.p_sign = float(at + 1);
        m.n_sign = float(at + 2);
        m.local_threshold = float(at + 3);
        m.global_threshold = float(at + 4);
        // What the derivation leaves besides the model proper: the CDF's
        // running counts (a pure function of the counts), the bins holding
        // counts (which the next labelling histogram resets) and an empty
        // score cache.
        m.left.refresh();
        m.filled.clear();
        m.filled
            .extend((0..m.left.hist.counts.len()).filter(|&b| m.left.hist.counts[b] > 0));
        m.generation = Generation::new();
    }

    fn judge(&self, m: &CopodModel, value: u64) -> Verdict {
        let compute = || m.score(value as f64);
        let score = SCORES.with(|c| c.borrow_mut().get_or(m.generation.0, value, compute));
        Verdict::by_threshold(score, m.global_threshold)
    }

    fn json(&self, m: &CopodModel) -> serde_json::Value {
        serde_json::json!({
            "histogram": m.left.hist.to_json(),
            "internal_global_threshold": m.global_threshold,
            "local_threshold": m.local_threshold,
            "histogram_skewness": m.skewness,
        })
    }

    fn snapshot(&self, m: &CopodModel, s: &mut ModelSnapshot) {
        s.threshold = m.global_threshold;
        s.hist_first_edge = m.left.hist.start;
        s.hist_bin_width = m.left.hist.bin_width;
        s.hist_counts = m.left.hist.counts.clone();
    }

    fn hist_len(&self, m: &CopodModel) -> usize {
        m.left.hist.counts.len()
    }

    fn digest_words(&self, m: &CopodModel, out: &mut Vec<u64>) {
        out.push(m.global_threshold.to_bits());
        out.push(m.left.hist.start.to_bits());
        out.push(m.left.hist.bin_width.to_bits());
        out.extend_from_slice(&m.left.hist.counts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::binned::testing;
    use crate::detect::{Detector, Label};

    fn example() -> CopodModel {
        let h = Histogram::from_parts(vec![2, 8, 1, 0, 0, 2], 101.0, 700.0, 100.0, 100.0).unwrap();
        CopodModel::from_histogram(h, 0.99, initial_global_threshold())
    }

    #[test]
    fn worked_example() {
        let m = example();
        assert!((m.skewness - 1.668).abs() < 1e-3, "{}", m.skewness);
        assert!((m.global_threshold - 2.6814).abs() < 1e-4);
        let cases = [
            (95.0, 50.0001, Label::Anomaly),
            (705.0, 100.0001, Label::Anomaly),
            (250.0, 0.797, Label::Normal),
            (101.0, 1.836, Label::Normal),
            (650.0, 2.7004, Label::Anomaly),
            (700.0, 3.7004, Label::Anomaly),
        ];
        for (x, want, label) in cases {
            let v = m.judge(x);
            assert!(
                (v.score - want).abs() < 1e-3,
                "x={x}: {} vs {want}",
                v.score
            );
            assert_eq!(v.label, label, "x={x}");
        }
    }

    #[test]
    fn memoised_scores_are_the_computed_ones() {
        let m = example();
        let k = CopodKernel::default();
        // Every value is judged thrice (the first time computed, then
        // from the cache), u64::MAX and 0 among them.
        for _ in 0..3 {
            for x in [
                95u64,
                103,
                111,
                95,
                101,
                250,
                650,
                700,
                705,
                250,
                7,
                u64::MAX,
                0,
                7,
            ] {
                let (got, want) = (k.judge(&m, x), m.judge(x as f64));
                assert_eq!(got.score.to_bits(), want.score.to_bits(), "x={x}");
                assert_eq!(got.label, want.label, "x={x}");
            }
        }
        assert_eq!(m, example(), "the generation is not part of the model");
        assert_eq!(std::mem::size_of::<Generation>(), 8);
    }

    #[test]
    fn fast_ecdf_matches_the_reference_formula() {
        let h =
            Histogram::from_parts(vec![2, 40, 24, 10, 3, 1, 0, 1], 0.11, 0.9, 0.1, 0.1).unwrap();
        for e in [Ecdf::new(h.clone()), Ecdf::new(h.negate())] {
            for i in -20..120 {
                let v = if e.hist.min < 0.0 {
                    -i as f64 / 100.0
                } else {
                    i as f64 / 100.0
                };
                assert!((e.at(v) - e.hist.empirical_cdf(v)).abs() < 1e-12, "{v}");
            }
        }
        // The right tail from the left CDF is the negated histogram's CDF.
        for m in [
            CopodModel::from_histogram(h.clone(), 0.99, 0.0),
            CopodModel::from_histogram(Histogram::delta(3.0, 4), 0.99, 0.0),
            example(),
        ] {
            let neg = Ecdf::new(m.left.hist.negate());
            // Across the range and beyond it, and on every (negated) edge
            // and midpoint.
            let (lo, hi) = (m.left.hist.min, m.left.hist.max);
            let across = (-100..=600).map(|i| -(lo + (hi - lo) * i as f64 / 500.0));
            let g = neg.hist.grid();
            let edges = (0..g.nbin).flat_map(|b| {
                let v = [g.lower_edge(b), g.upper_edge(b), neg.hist.bin_value(b)];
                v.into_iter()
            });
            for v in across.chain(edges) {
                assert_eq!(m.right_at(v).to_bits(), neg.at(v).to_bits(), "{v}");
            }
            assert_eq!(neg.hist.grid(), m.right);
        }
        let d = Ecdf::new(Histogram::delta(3.0, 4));
        assert_eq!((d.at(2.0), d.at(3.0), d.at(4.0)), (0.0, 1.0, 1.0));
    }

    #[test]
    fn any_split_over_ranks_is_bit_identical() {
        let steps: Vec<Vec<(u32, u64)>> = (0..4u64)
            .map(|s| {
                (0..1500u64)
                    .map(|i| {
                        let x = (i * 7919 + s * 131) % 500;
                        let f = (i % 2) as u32;
                        (
                            f,
                            if f == 0 {
                                300 + x
                            } else {
                                40 + x % 13 + (i % 211 == 0) as u64 * 900
                            },
                        )
                    })
                    .collect()
            })
            .collect();
        let probes = [(0, 350), (0, 5000), (1, 45), (1, 940), (0, 1)];
        testing::assert_partition_invariant(
            &|| Box::new(Copod::with_params(CopodParams::default(), 2)) as Box<dyn Detector>,
            2,
            &steps,
            &probes,
        );
    }
}
