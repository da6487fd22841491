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

/// Anomaly metrics by function, only for functions with anomalies: a list
/// sorted by function. With 10⁵ functions and a detector that flags rare
/// ones (HBOS, COPOD) tens of thousands of functions have metrics of
/// 416 bytes each; a hash map would hold up to twice the room, touch all
/// of it, and briefly need old and new tables at once when it grows. A
/// sorted list grows in place and is merged from the back, in place.
#[derive(Debug, Clone, Default)]
pub struct AnomalyMetrics {
    by_function: Vec<(u32, AnomalyStats)>,
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
        // By function and bucket: each function's metrics are made in one
        // go, then merged in (the sums are exact and order-free).
        let mut order: Vec<&Anomaly> = anomalies.iter().collect();
        order.sort_unstable_by_key(|a| (a.fid, a.bucket));
        let mut batch: Vec<(u32, AnomalyStats)> = Vec::new();
        for group in order.chunk_by(|a, b| a.fid == b.fid) {
            let mut stats = AnomalyStats::default();
            for bucket in group.chunk_by(|a, b| a.bucket == b.bucket) {
                for a in bucket {
                    stats.anomaly(a);
                }
                stats.close_bucket(bucket.len() as u64);
            }
            batch.push((group[0].fid, stats));
        }
        self.merge_sorted(batch);
    }

    /// Adds everything of `o` (taken: its entries move here, no copy).
    pub fn merge(&mut self, o: AnomalyMetrics) {
        self.merge_sorted(o.by_function);
    }

    /// Adds the metrics of `more` (sorted by function, each once): the
    /// functions already here merge, the others are placed, from the back
    /// of the grown list so that nothing moves twice.
    fn merge_sorted(&mut self, more: Vec<(u32, AnomalyStats)>) {
        let mut added = Vec::new();
        for (f, s) in more {
            match self.by_function.binary_search_by_key(&f, |e| e.0) {
                Ok(at) => self.by_function[at].1.merge(&s),
                Err(_) => added.push((f, s)),
            }
        }
        if added.is_empty() {
            return;
        }
        let old = self.by_function.len();
        self.by_function
            .resize(old + added.len(), (0, AnomalyStats::default()));
        // Fill from the end: the larger of the two lists' last entries.
        let (mut i, mut out) = (old, self.by_function.len());
        while let Some(&(f, s)) = added.last() {
            out -= 1;
            if i > 0 && self.by_function[i - 1].0 > f {
                i -= 1;
                self.by_function[out] = self.by_function[i];
            } else {
                self.by_function[out] = (f, s);
                added.pop();
            }
        }
    }

    /// The metrics of function `f`, if it has anomalies.
    pub fn get(&self, f: u32) -> Option<&AnomalyStats> {
        let at = self.by_function.binary_search_by_key(&f, |e| e.0).ok()?;
        Some(&self.by_function[at].1)
    }

    /// The functions with anomalies, increasing.
    pub fn functions(&self) -> Vec<u32> {
        self.by_function.iter().map(|e| e.0).collect()
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
            let s = self.get(f).copied().unwrap_or_default();
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
            // In increasing function order: the list stays sorted.
            out.by_function.push((
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
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn anomaly(fid: u32, rank: u64, step: u64, score: f64, severity: u64) -> Anomaly {
        Anomaly {
            fid,
            bucket: (0, rank, step),
            entry: 100 * step + rank,
            exit: 100 * step + rank + severity,
            score,
            severity,
        }
    }

    fn text(m: &AnomalyMetrics) -> Vec<String> {
        m.functions()
            .iter()
            .map(|&f| format!("{f} {:?}", m.get(f).unwrap()))
            .collect()
    }

    #[test]
    fn metrics_stay_sorted_and_merge_whatever_the_order() {
        // Three (stream, step) buckets; functions in no order, new ones
        // before, between and after the ones already there.
        let calls = [
            vec![
                anomaly(40, 0, 1, 7.5, 30),
                anomaly(7, 0, 1, 9.0, 12),
                anomaly(40, 0, 1, 6.5, 31),
            ],
            vec![
                anomaly(3, 1, 1, 8.0, 5),
                anomaly(40, 1, 1, 7.0, 29),
                anomaly(90, 1, 1, 12.0, 400),
            ],
            vec![
                anomaly(7, 0, 2, 10.0, 13),
                anomaly(20, 0, 2, 6.1, 8),
                anomaly(7, 0, 2, 11.0, 14),
            ],
        ];
        let mut one = AnomalyMetrics::default();
        for c in &calls {
            one.add(c);
        }
        assert_eq!(one.functions(), vec![3, 7, 20, 40, 90]);
        let s = one.get(40).unwrap();
        // Two buckets (rank 0 and rank 1 of step 1) with 2 and 1 anomalies.
        assert_eq!((s.anomaly_count.n, s.anomaly_count.s1), (2, 3));
        assert_eq!((s.score.n, s.score.s1), (3, 7500 + 6500 + 7000));
        assert_eq!((s.severity.min, s.severity.max), (29, 31));
        assert_eq!((s.first_io_step, s.last_io_step), (1, 1));
        let s = one.get(7).unwrap();
        assert_eq!((s.anomaly_count.n, s.anomaly_count.s1), (2, 3));
        assert_eq!((s.first_io_step, s.last_io_step), (1, 2));
        assert!(one.get(8).is_none());
        // Split over two "ranks" and merged, in either order: the same.
        let (mut a, mut b) = (AnomalyMetrics::default(), AnomalyMetrics::default());
        a.add(&calls[2]);
        b.add(&calls[0]);
        b.add(&calls[1]);
        let mut ab = a.clone();
        ab.merge(b.clone());
        let mut ba = b;
        ba.merge(a);
        assert_eq!(text(&ab), text(&one));
        assert_eq!(text(&ba), text(&one));
        // Merging nothing new keeps the list as it is.
        let before = text(&ab);
        ab.merge(AnomalyMetrics::default());
        assert_eq!(text(&ab), before);
        assert!(AnomalyMetrics::default().is_empty());
    }
}
