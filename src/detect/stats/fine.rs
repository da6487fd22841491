//! The exactly mergeable histogram behind HBOS, COPOD and `modal`.
//!
//! Runtimes are integer microseconds. Each one is counted in a *log-linear*
//! bucket (HDR-histogram style): values below 256 µs have a bucket each;
//! above, every octave `[2^m, 2^(m+1))` is cut into 128 equal buckets, so a
//! bucket is at most 1/128 (0.78 %) of its values wide. Counts are integers,
//! so merging histograms is integer addition: associative and commutative,
//! whatever ranks and steps the data came from. There are 7424 buckets
//! covering all of `u64`.
//!
//! Alongside the counts every histogram keeps the exact moments
//! ([`ExactMoments`]: count, Σx…Σx⁴, min, max), so that count, mean,
//! standard deviation and the exact extremes are known without rounding.
//!
//! On the wire a step's histograms travel in two rounds (see
//! [`FineModel`]): first the count, the extremes, a bit mask of the bucket
//! *groups* (16 consecutive buckets) each function touched on any rank and
//! the widths of the power sums (`MPI_BOR`); then the power sums and the
//! counts of exactly those groups (`MPI_SUM`), both packed as tightly as
//! the first round allows ([`wire`]). The payload per function is bounded
//! (at most 464 groups) and in practice is a few groups around each
//! runtime mode.

use super::exact::ExactMoments;
use super::exact::Moments;
use super::histogram::{BinWidth, Histogram, HistogramError, MAX_MERGED_BINS};
use super::rebin::Piece;
use crate::detect::Wire;
use crate::util::round::ceil_usize;
use crate::util::slots::Touched;
use rayon::prelude::*;
use rayon::ThreadPool;

mod counts;
mod step_parts;
mod wire;
use counts::mark_group;
pub use counts::Counts;
use step_parts::{on_chunks, CHUNK};
pub use step_parts::{StepChunk, StepPart, MERGE_CHUNK};
pub use wire::{lane_bits, push_lanes, read_lanes};

/// log2 of the number of buckets per octave.
pub const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// Number of buckets needed for every `u64`.
pub const NUM_BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;
/// Buckets per group (the unit of the second reduction round).
pub const GROUP: usize = 16;
/// Number of groups.
pub const NUM_GROUPS: usize = NUM_BUCKETS / GROUP;
/// 64-bit words of a function's group mask.
pub const MASK_WORDS: usize = NUM_GROUPS.div_ceil(64);

/// The bucket of runtime `x`.
#[inline]
pub fn bucket_of(x: u64) -> usize {
    let msb = 63 - (x | 1).leading_zeros();
    let shift = msb.saturating_sub(SUB_BITS);
    ((shift as usize) << SUB_BITS) + (x >> shift) as usize
}

/// The smallest and largest runtime of bucket `i` (inclusive).
pub fn bucket_bounds(i: usize) -> (u64, u64) {
    if i < 2 * SUB {
        return (i as u64, i as u64);
    }
    let shift = (i / SUB - 1) as u32;
    let lo = ((i - (shift as usize) * SUB) as u64) << shift;
    (lo, lo + ((1u64 << shift) - 1))
}

/// A function's exact histogram: bucket counts plus exact moments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FineHist {
    /// Exact count, power sums, min and max of the runtimes (µs).
    pub moments: ExactMoments,
    /// Executions per log-linear bucket (see [`bucket_of`]).
    pub counts: Counts,
}

impl FineHist {
    /// Adds the runtimes of `other` (exact: the same as pushing them).
    pub fn merge(&mut self, other: &FineHist) {
        self.moments.merge(&other.moments);
        let m = &other.moments;
        // One or two runtimes are the extremes: their buckets are known
        // without walking the counts' window. With many functions, a
        // stream's share of a step holds one or two runtimes of most.
        match m.n {
            0 => {}
            1 => self.counts.add(bucket_of(m.min), 1),
            2 => {
                self.counts.add(bucket_of(m.min), 1);
                self.counts.add(bucket_of(m.max), 1);
            }
            _ => {
                for (b, c) in other.counts.iter() {
                    self.counts.add(b, c);
                }
            }
        }
    }

    /// Empties the histogram, keeping the counts' window for the next step
    /// (see [`Counts::clear`]).
    pub fn clear(&mut self) {
        match self.moments.n {
            1 | 2 => {
                self.counts.zero(bucket_of(self.moments.min));
                self.counts.zero(bucket_of(self.moments.max));
            }
            _ => self.counts.clear(),
        }
        self.moments = ExactMoments::default();
    }

    /// Sets the bit of every bucket group holding a count in `mask`.
    pub fn mark_groups(&self, mask: &mut [u64]) {
        match self.moments.n {
            0 => {}
            1 | 2 => {
                mark_group(mask, bucket_of(self.moments.min));
                mark_group(mask, bucket_of(self.moments.max));
            }
            _ => self.counts.mark_groups(mask),
        }
    }

    /// Adds one runtime.
    #[inline]
    pub fn push(&mut self, x: u64) {
        self.moments.push(x);
        self.counts.add(bucket_of(x), 1);
    }

    /// Number of runtimes in the histogram.
    pub fn count(&self) -> u64 {
        self.moments.n
    }

    /// Whether some bucket spans several integers: only those from 256 µs
    /// up do (below, every bucket is one integer, the usual case for short
    /// calls).
    pub fn has_wide_buckets(&self) -> bool {
        self.moments.n > 0 && self.moments.max >= 2 * SUB as u64
    }

    /// Non-empty buckets as integer ranges clamped to the exact [min, max]
    /// (the first and last bucket hold nothing beyond the extremes).
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let (min, max) = (self.moments.min, self.moments.max);
        self.counts.iter().map(move |(b, c)| {
            let (lo, hi) = bucket_bounds(b);
            (lo.max(min), hi.min(max), c)
        })
    }

    /// The labelling histogram of HBOS/COPOD on the reference's grid for
    /// `[min, max]` (bin width from `spec`; Scott from the exact population
    /// standard deviation; at most [`MAX_MERGED_BINS`] bins), with counts
    /// rebinned from the fine buckets by uniform-integer splitting.
    pub fn labelling_histogram(&self, spec: BinWidth) -> Result<Histogram, HistogramError> {
        let mut h = Histogram::default();
        self.labelling_histogram_into(spec, &mut h, &mut Vec::new())?;
        Ok(h)
    }

    /// [`FineHist::labelling_histogram`] into `h`, reusing its buffer.
    /// `filled` lists the bins of `h` that hold counts (or more), and then
    /// those of the new histogram (increasing); on an error both are left as
    /// they were.
    pub fn labelling_histogram_into(
        &self,
        spec: BinWidth,
        h: &mut Histogram,
        filled: &mut Vec<usize>,
    ) -> Result<(), HistogramError> {
        let m = &self.moments;
        if m.n == 0 {
            return Err(HistogramError::Empty);
        }
        let (min, max) = (m.min as f64, m.max as f64);
        if m.min == m.max {
            *h = Histogram::delta(min, m.n);
            filled.clear();
            filled.push(0);
            return Ok(());
        }
        // Scott's σ comes from the exact moments (512-bit arithmetic), so it
        // is computed only when the rule needs it.
        let scott = || super::histogram::scott_width(m.variance(0).max(0.0).sqrt(), m.n as f64);
        let mut width = spec.resolve(min, max, scott);
        if width == 0.0 || ceil_usize((max - min) / width) > MAX_MERGED_BINS {
            width = BinWidth::FixedNbin(MAX_MERGED_BINS).resolve(min, max, || 0.0);
        }
        h.reset_grid(min, max, width, filled)?;
        filled.clear();
        if !self.has_wide_buckets() {
            // Every bucket is one integer: the values go whole into their
            // bins.
            h.rebin_points_into(self.counts.iter().map(|(b, c)| (b as f64, c)), filled);
        } else {
            let pieces = self.buckets().map(|(lo, hi, c)| Piece::integers(lo, hi, c));
            h.rebin_into(pieces, filled);
        }
        Ok(())
    }

    /// The median runtime, to the resolution of the buckets (the middle
    /// of the bucket holding it, clamped to the exact extremes; 0 when
    /// empty).
    pub fn median(&self) -> f64 {
        let half = self.count().div_ceil(2);
        let mut seen = 0;
        for (lo, hi, c) in self.buckets() {
            seen += c;
            if seen >= half {
                return (lo as f64 + hi as f64) * 0.5;
            }
        }
        0.0
    }

    /// Mean integer value of each non-empty bucket with its count (exact
    /// below 256 µs; within 0.4 % above).
    pub fn representatives(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.buckets()
            .map(|(lo, hi, c)| ((lo as f64 + hi as f64) * 0.5, c))
    }

    /// Digest words: moments, then (bucket, count) pairs.
    pub fn digest_words(&self, out: &mut Vec<u64>) {
        self.moments.sum_words(out);
        out.push(self.moments.min);
        out.push(self.moments.max);
        for (b, c) in self.counts.iter() {
            out.push(b as u64);
            out.push(c);
        }
    }
}

/// One function's share of a step, after the global reduction: the step's
/// exact moments and its non-zero buckets.
#[derive(Debug, Clone, Default)]
pub struct StepDelta {
    /// The step's exact moments of the function's runtimes, over all ranks.
    pub moments: ExactMoments,
    /// The step's non-zero buckets as `(bucket, count)`, increasing.
    pub buckets: Vec<(usize, u64)>,
}

impl StepDelta {
    /// Number of runtimes the step added.
    pub fn count(&self) -> u64 {
        self.moments.n
    }
}

/// Where a [`FineModel`] is in the two-round reduction of a step.
#[derive(Debug, Clone, Default)]
enum Round {
    /// Between steps.
    #[default]
    Idle,
    /// On a single AD rank: the step's partial is its global share, and
    /// the merge reads it where it is (no wire; see
    /// [`FineModel::set_single_rank`]).
    Own,
    /// Round 1 was reduced; these are the step's global count, extremes,
    /// widths and group masks per function, and round 2 (the power sums
    /// and counts) is to be sent.
    Counts {
        /// The functions of the wire, in wire order.
        functions: Vec<usize>,
        heads: Vec<StepHead>,
        masks: Vec<u64>,
        wire: Option<Wire>,
    },
}

/// What round 1 tells about a function's step: the global count and
/// extremes, and the layout of its round-2 words.
#[derive(Debug, Clone, Copy, Default)]
struct StepHead {
    n: u64,
    min: u64,
    max: u64,
    /// 32-bit limbs of Σx..Σx⁴ on the wire (the widest rank's).
    widths: [u8; 4],
    /// Bits per bucket count on the wire.
    lane_bits: u32,
    /// Round-2 words of the function: its power sums' limbs and the
    /// counts of its marked groups (the same on every rank, as the
    /// widths, lane bits and mask are).
    words: u32,
}

/// Global fine histograms of every function plus this rank's partial of the
/// current step, with the two-round wire protocol. The detectors built on
/// it (HBOS, COPOD, modal) only derive labelling models from
/// [`FineModel::global`] after each merge.
#[derive(Debug, Clone, Default)]
pub struct FineModel {
    /// The global histogram of each function (identical on every rank).
    pub global: Vec<FineHist>,
    /// This rank's additions of the step, for the functions it ran only.
    partial: Touched<FineHist>,
    round: Round,
    /// Per function: steps in which it had data, and bucket groups whose
    /// counts were reduced in those steps (the round-2 payload).
    pub traffic: Vec<Traffic>,
    /// The functions of this step's wire (`Detector::set_active`).
    active: Option<Vec<u32>>,
    /// Round 1's layout of the round-2 wire being merged.
    merged: MergedRound,
    /// Whether this is the only AD rank (see
    /// [`FineModel::set_single_rank`]).
    single: bool,
}

/// What round 1 agreed about the round-2 wire: its functions, in wire
/// order, their heads and their group masks.
#[derive(Debug, Clone, Default)]
struct MergedRound {
    functions: Vec<usize>,
    heads: Vec<StepHead>,
    masks: Vec<u64>,
    /// Where each function's round-2 words start, and the end of the
    /// last one's (filled by the merge).
    starts: Vec<usize>,
}

/// How much of the round-2 payload a function caused so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Steps in which the function had data.
    pub steps: u64,
    /// Bucket groups whose counts were reduced for it, over those steps.
    pub groups: u64,
}

/// Words per function of round 1 combined with `MPI_BOR`: the group mask
/// and the power sums' widths.
pub const ROUND1_OR_WORDS: usize = MASK_WORDS + 1;

impl FineModel {
    /// Makes room for functions `0..n`.
    pub fn ensure_functions(&mut self, n: usize) {
        if self.global.len() < n {
            self.global.resize_with(n, FineHist::default);
            self.traffic.resize(n, Traffic::default());
        }
    }

    /// Whether this is the only AD rank. Then the sum over ranks of a
    /// step's partials is this rank's own, and a reduction would only
    /// copy it through two wires: the step's wire is empty and the merge
    /// adds the partial histograms to the global ones directly (the same
    /// integer sums, so the same histograms, bit for bit).
    pub fn set_single_rank(&mut self, single: bool) {
        self.single = single;
    }

    /// Adds one runtime (µs) of `function` to this rank's partial of the
    /// step (ignored for a function beyond [`FineModel::ensure_functions`]).
    #[inline]
    pub fn observe(&mut self, function: u32, value: u64) {
        if (function as usize) < self.global.len() {
            self.partial.entry(function).push(value);
        }
    }

    /// Adds a stream's share of the step (see `detect::stream_partial`)
    /// to this rank's partial.
    pub fn absorb(&mut self, share: &Touched<FineHist>) {
        for (f, h) in share.iter() {
            if (f as usize) < self.global.len() {
                self.partial.entry(f).merge(h);
            }
        }
    }

    /// The functions of the coming step's wire (see
    /// `Detector::set_active`); `None`: all of them.
    pub fn set_active(&mut self, active: Option<&[u32]>) {
        self.active = active.map(<[u32]>::to_vec);
    }

    /// Merges a reduced round. After round 1 it prepares round 2 (see
    /// [`FineModel::next_round`]), on `pool`'s threads if given, and
    /// returns `None`. After round 2 it returns the step's merge cut into
    /// independent [`StepChunk`]s of consecutive functions of the wire, in
    /// wire order, for the caller to run on whatever threads it likes
    /// (each chunk changes only its own functions' histograms). On a single
    /// AD rank the step's (empty) wire is the only round, and the chunks
    /// merge the partial itself.
    pub fn merge_round<'a>(
        &'a mut self,
        reduced: &'a Wire,
        pool: Option<&ThreadPool>,
    ) -> Option<Vec<StepChunk<'a>>> {
        match std::mem::take(&mut self.round) {
            Round::Own => Some(self.own_chunks()),
            Round::Idle => {
                self.start_counts_round(reduced, pool);
                None
            }
            Round::Counts {
                functions,
                heads,
                masks,
                ..
            } => {
                self.merged = MergedRound {
                    functions,
                    heads,
                    masks,
                    starts: std::mem::take(&mut self.merged.starts),
                };
                Some(self.step_chunks(reduced))
            }
        }
    }

    /// The round-2 wire, once, after round 1 was merged.
    pub fn next_round(&mut self) -> Option<Wire> {
        match &mut self.round {
            Round::Counts { wire, .. } => wire.take(),
            Round::Idle | Round::Own => None,
        }
    }

    fn start_counts_round(&mut self, reduced: &Wire, pool: Option<&ThreadPool>) {
        let mut functions = crate::detect::wire_functions(&self.active, self.global.len());
        let n = functions
            .len()
            .min(reduced.min.len())
            .min(reduced.max.len())
            .min(reduced.sum.len())
            .min(reduced.or.len() / ROUND1_OR_WORDS);
        functions.truncate(n);
        let partial = &self.partial;
        let fs = &functions;
        // Each chunk of functions writes its heads and masks in place and
        // returns its round-2 words (of lengths known only now).
        let mut heads = vec![StepHead::default(); n];
        let mut masks = vec![0; n * MASK_WORDS];
        let encode = |(c, (heads, masks)): (usize, (&mut [StepHead], &mut [u64]))| {
            let nothing = FineHist::default();
            let mut sum = Vec::new();
            for (i, head) in heads.iter_mut().enumerate() {
                let k = c * CHUNK + i;
                let or = &reduced.or[k * ROUND1_OR_WORDS..(k + 1) * ROUND1_OR_WORDS];
                *head = StepHead {
                    n: reduced.sum[k],
                    min: reduced.min[k],
                    max: reduced.max[k],
                    widths: wire::widest_limbs(or[MASK_WORDS]),
                    lane_bits: wire::lane_bits(reduced.sum[k]),
                    words: 0,
                };
                masks[i * MASK_WORDS..(i + 1) * MASK_WORDS].copy_from_slice(&or[..MASK_WORDS]);
                let p = partial.get(fs[k]).unwrap_or(&nothing);
                let start = sum.len();
                wire::push_sums(&p.moments, head.widths, &mut sum);
                for g in set_bits(&or[..MASK_WORDS]) {
                    wire::push_group(&p.counts, g, head.lane_bits, &mut sum);
                }
                // Where each function's words lie is known here, on the
                // workers, rather than recounted from the masks later.
                head.words = (sum.len() - start) as u32;
            }
            sum
        };
        let chunks = heads
            .chunks_mut(CHUNK)
            .zip(masks.chunks_mut(CHUNK * MASK_WORDS))
            .enumerate();
        let mut sums = on_chunks(pool, n, chunks, encode);
        let sum = if sums.len() == 1 {
            sums.pop().unwrap_or_default()
        } else {
            sums.concat()
        };
        // The sums and counts are on the wire: the step's partials are spent.
        self.partial.reset(FineHist::clear);
        self.round = Round::Counts {
            functions,
            heads,
            masks,
            wire: Some(Wire {
                sum,
                ..Default::default()
            }),
        };
    }
}

/// Indices of the set bits of a group mask, in increasing order.
fn set_bits(mask: &[u64]) -> impl Iterator<Item = usize> + '_ {
    crate::util::bits::set_bits(mask).map(|g| g as usize)
}

#[cfg(test)]
mod tests;
