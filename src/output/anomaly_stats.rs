//! Anomaly metrics per function (the anomaly columns of `func_stats`),
//! kept only for the functions that have anomalies.
//!
//! - `anomaly_count` is the RunStats of the number of anomalies per
//!   (stream, step) bucket with at least one;
//! - score RunStats are over scores rounded to 1/1000 (integer moments need
//!   integers; the rounding is far below what a score means);
//! - severity is the exclusive runtime.
//!
//! Sums over ranks are exact integer reductions over the union of the
//! ranks' functions with anomalies ([`super::stats::reduce_sparse`]), so
//! the metrics are identical for any number of AD ranks and their wire
//! follows the functions with anomalies, not every function.

use std::collections::HashMap;

use crate::collectives::Collectives;
use crate::detect::stats::exact::{ExactMoments, MOMENT_SUM_WORDS};

use super::stats::{push_min_max, reduce_sparse};

/// Scores are kept as integer thousandths in the anomaly metrics.
pub const SCORE_SCALE: f64 = 1000.0;
/// Scores above this (in thousandths; ~1.7e10) are clamped, keeping the
/// integer moments inside their proven range.
const SCORE_CAP: u64 = 1 << 44;

/// One function's anomalies in one (stream, step) bucket, summed.
#[derive(Debug, Clone, Copy, Default)]
pub struct BucketMetrics {
    /// Anomalies in the bucket.
    pub anomalies: u64,
    /// Their quantized scores ([`quantized_score`]).
    pub score: ExactMoments,
    /// Their severities (µs).
    pub severity: ExactMoments,
    /// Earliest entry (µs).
    pub min_timestamp: u64,
    /// Latest exit (µs).
    pub max_timestamp: u64,
}

/// The anomaly metrics of one function.
#[derive(Debug, Clone, Copy)]
pub struct AnomalyStats {
    /// Anomalies per (stream, step) bucket with at least one.
    pub anomaly_count: ExactMoments,
    /// Scores of the anomalies, in integer thousandths ([`SCORE_SCALE`]).
    pub score: ExactMoments,
    /// Severities of the anomalies (exclusive runtime, µs).
    pub severity: ExactMoments,
    /// First I/O step with an anomaly.
    pub first_io_step: u64,
    /// Last I/O step with an anomaly.
    pub last_io_step: u64,
    /// Earliest entry of an anomaly (µs).
    pub min_timestamp: u64,
    /// Latest exit of an anomaly (µs).
    pub max_timestamp: u64,
}

impl Default for AnomalyStats {
    fn default() -> Self {
        AnomalyStats {
            anomaly_count: ExactMoments::default(),
            score: ExactMoments::default(),
            severity: ExactMoments::default(),
            first_io_step: u64::MAX,
            last_io_step: 0,
            min_timestamp: u64::MAX,
            max_timestamp: 0,
        }
    }
}

/// A score as the metrics hold it: integer thousandths, capped (scores are
/// summed exactly, so a non-finite or huge one must not overflow them).
pub fn quantized_score(score: f64) -> u64 {
    let q = (score.max(0.0) * SCORE_SCALE).round();
    if q.is_finite() {
        (q as u64).min(SCORE_CAP)
    } else {
        SCORE_CAP
    }
}

impl AnomalyStats {
    /// Records one anomaly (its bucket's count goes in with
    /// [`AnomalyStats::close_bucket`]).
    fn anomaly(&mut self, a: &Anomaly) {
        self.score.push(quantized_score(a.score));
        self.severity.push(a.severity);
        self.first_io_step = self.first_io_step.min(a.bucket.2);
        self.last_io_step = self.last_io_step.max(a.bucket.2);
        self.min_timestamp = self.min_timestamp.min(a.entry);
        self.max_timestamp = self.max_timestamp.max(a.exit);
    }

    /// Closes a (stream, step) bucket with `anomalies` (≥ 1) anomalies.
    fn close_bucket(&mut self, anomalies: u64) {
        self.anomaly_count.push(anomalies);
    }

    /// Adds a whole (stream, step) bucket at once: its anomaly count, the
    /// moments of its quantized scores and severities, and its time span.
    pub fn add_bucket(&mut self, step: u64, bucket: &BucketMetrics) {
        self.anomaly_count.push(bucket.anomalies);
        self.score.merge(&bucket.score);
        self.severity.merge(&bucket.severity);
        self.first_io_step = self.first_io_step.min(step);
        self.last_io_step = self.last_io_step.max(step);
        self.min_timestamp = self.min_timestamp.min(bucket.min_timestamp);
        self.max_timestamp = self.max_timestamp.max(bucket.max_timestamp);
    }

    /// Adds everything of `o` (exact; any order gives the same result).
    pub fn merge(&mut self, o: &AnomalyStats) {
        self.anomaly_count.merge(&o.anomaly_count);
        self.score.merge(&o.score);
        self.severity.merge(&o.severity);
        self.first_io_step = self.first_io_step.min(o.first_io_step);
        self.last_io_step = self.last_io_step.max(o.last_io_step);
        self.min_timestamp = self.min_timestamp.min(o.min_timestamp);
        self.max_timestamp = self.max_timestamp.max(o.max_timestamp);
    }
}

/// An anomaly as the statistics see it.
#[derive(Debug, Clone, Copy)]
pub struct Anomaly {
    /// Global function index.
    pub fid: u32,
    /// (program, rank, io_step): Chimbuko counts anomalies per rank and step.
    pub bucket: (u32, u64, u64),
    /// Entry (µs).
    pub entry: u64,
    /// Exit (µs).
    pub exit: u64,
    /// Outlier score.
    pub score: f64,
    /// Exclusive runtime (µs).
    pub severity: u64,
}

/// Anomaly metrics by function, only for functions with anomalies.
#[derive(Debug, Clone, Default)]
pub struct AnomalyMetrics {
    by_function: HashMap<u32, AnomalyStats>,
}

/// Sum words per function on the wire: three moments.
const SUM_WORDS: usize = 3 * MOMENT_SUM_WORDS;
/// MIN words per function: min and negated max of the three moments, then
/// of the steps and the timestamps.
const LO_WORDS: usize = 3 * 2 + 4;

impl AnomalyMetrics {
    /// Adds anomalies; buckets are closed here, so the anomalies of one
    /// (stream, step) must come in one call.
    pub fn add(&mut self, anomalies: &[Anomaly]) {
        let mut buckets: HashMap<(u32, (u32, u64, u64)), u64> = HashMap::new();
        for a in anomalies {
            self.by_function.entry(a.fid).or_default().anomaly(a);
            *buckets.entry((a.fid, a.bucket)).or_default() += 1;
        }
        // Sorted, so that the (exact, order-free) sums see the same values.
        let mut buckets: Vec<_> = buckets.into_iter().collect();
        buckets.sort_unstable();
        for ((fid, _), n) in buckets {
            if let Some(s) = self.by_function.get_mut(&fid) {
                s.close_bucket(n);
            }
        }
    }

    /// Adds everything of `o`.
    pub fn merge(&mut self, o: &AnomalyMetrics) {
        for (&f, s) in &o.by_function {
            self.by_function.entry(f).or_default().merge(s);
        }
    }

    /// The metrics of function `f`, if it has anomalies.
    pub fn get(&self, f: u32) -> Option<&AnomalyStats> {
        self.by_function.get(&f)
    }

    /// The functions with anomalies, increasing.
    pub fn functions(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.by_function.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Whether no function has anomalies.
    pub fn is_empty(&self) -> bool {
        self.by_function.is_empty()
    }

    /// The sums over all ranks, for the functions with anomalies on some
    /// rank (collective; every rank gets the same metrics). `n`: the
    /// number of global functions.
    pub fn reduce(&self, coll: &Collectives, n: usize) -> AnomalyMetrics {
        let keys = self.functions();
        let fill = |f: u32, sum: &mut Vec<u64>, lo: &mut Vec<u64>| {
            let s = self.by_function.get(&f).copied().unwrap_or_default();
            for m in [&s.anomaly_count, &s.score, &s.severity] {
                m.sum_words(sum);
                push_min_max(lo, m.n, m.min, m.max);
            }
            lo.extend([
                s.first_io_step,
                !s.last_io_step,
                s.min_timestamp,
                !s.max_timestamp,
            ]);
        };
        let mut out = AnomalyMetrics::default();
        let absorb = |f: u32, s: &[u64], lo: &[u64]| {
            let m = |i: usize| {
                ExactMoments::from_words(&s[i * MOMENT_SUM_WORDS..], lo[2 * i], !lo[2 * i + 1])
            };
            out.by_function.insert(
                f,
                AnomalyStats {
                    anomaly_count: m(0),
                    score: m(1),
                    severity: m(2),
                    first_io_step: lo[6],
                    last_io_step: !lo[7],
                    min_timestamp: lo[8],
                    max_timestamp: !lo[9],
                },
            );
        };
        reduce_sparse(
            coll,
            n,
            &keys,
            (SUM_WORDS, LO_WORDS),
            fill,
            (&[], &[]),
            absorb,
        );
        out
    }
}
