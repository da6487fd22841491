//! Global function and counter statistics (`func_stats`, `counter_stats`).
//!
//! Each rank accumulates, from the start of the run, exact integer moments
//! of what its streams delivered; at a flush the partials are summed over
//! ranks (integer SUM/MIN/MAX, payload proportional to the number of
//! functions and counters) and the RunStats of the tables are derived from
//! the exact totals. So the tables are identical for any number of AD ranks.
//!
//! - Runtime profiles count every completed execution once (the reference
//!   counts executions held unlabeled again each step; we do not).
//! - Anomaly metrics: `anomaly_count` is the RunStats of the number of
//!   anomalies per (stream, step) with at least one; score RunStats are over
//!   scores rounded to 1/1000 (integer moments need integers; the rounding
//!   is far below what a score means); severity is the exclusive runtime.

use crate::collectives::Collectives;
use crate::detect::stats::exact::{ExactMoments, WideMoments, MOMENT_SUM_WORDS, WIDE_SUM_WORDS};

use super::records::RunStatsRow;
use crate::detect::stats::exact::Moments;

/// Scores are kept as integer thousandths in the anomaly metrics.
pub const SCORE_SCALE: f64 = 1000.0;
/// Scores above this (in thousandths; ~1.7e10) are clamped, keeping the
/// integer moments inside their proven range.
const SCORE_CAP: u64 = 1 << 44;

/// Per function, this rank's share since the start of the run.
#[derive(Debug, Clone, Default)]
pub struct FunctionStats {
    /// Inclusive runtimes (µs) of executions whose inclusive and exclusive
    /// times differ (calls with children); see [`FunctionStats::profile`].
    pub inclusive: ExactMoments,
    /// Exclusive runtimes (µs) of those same executions.
    pub exclusive: ExactMoments,
    /// Runtimes of executions whose two times are equal (calls without
    /// children: most of them), counted once for both.
    pub same: ExactMoments,
    /// Anomalies per (stream, step) bucket with at least one.
    pub anomaly_count: ExactMoments,
    /// Scores of the anomalies, in integer thousandths ([`SCORE_SCALE`]).
    pub score: ExactMoments,
    /// Severities of the anomalies (exclusive runtime, µs).
    pub severity: ExactMoments,
    /// First I/O step with an anomaly (`u64::MAX` while there is none).
    pub first_io_step: u64,
    /// Last I/O step with an anomaly (0 while there is none).
    pub last_io_step: u64,
    /// Earliest entry of an anomaly (µs; `u64::MAX` while there is none).
    pub min_timestamp: u64,
    /// Latest exit of an anomaly (µs; 0 while there is none).
    pub max_timestamp: u64,
}

impl FunctionStats {
    fn empty() -> Self {
        FunctionStats {
            first_io_step: u64::MAX,
            min_timestamp: u64::MAX,
            ..Default::default()
        }
    }

    /// Adds one execution to the runtime profile. Leaf calls (inclusive ==
    /// exclusive) cost one exact push instead of two.
    #[inline]
    pub fn profile(&mut self, inclusive: u64, exclusive: u64) {
        if inclusive == exclusive {
            self.same.push(inclusive);
        } else {
            self.inclusive.push(inclusive);
            self.exclusive.push(exclusive);
        }
    }

    /// The full inclusive and exclusive profiles.
    fn profiles(&self) -> (ExactMoments, ExactMoments) {
        let (mut inc, mut exc) = (self.inclusive, self.exclusive);
        inc.merge(&self.same);
        exc.merge(&self.same);
        (inc, exc)
    }

    /// Records one anomaly of a (stream, step) bucket (the bucket's count
    /// goes in with [`FunctionStats::close_bucket`]).
    pub fn anomaly(&mut self, io_step: u64, entry: u64, exit: u64, score: f64, severity: u64) {
        let q = (score.max(0.0) * SCORE_SCALE).round();
        self.score.push(if q.is_finite() {
            (q as u64).min(SCORE_CAP)
        } else {
            SCORE_CAP
        });
        self.severity.push(severity);
        self.first_io_step = self.first_io_step.min(io_step);
        self.last_io_step = self.last_io_step.max(io_step);
        self.min_timestamp = self.min_timestamp.min(entry);
        self.max_timestamp = self.max_timestamp.max(exit);
    }

    /// Adds everything of `o` (exact; any order gives the same result).
    pub fn merge(&mut self, o: &FunctionStats) {
        self.inclusive.merge(&o.inclusive);
        self.exclusive.merge(&o.exclusive);
        self.same.merge(&o.same);
        self.anomaly_count.merge(&o.anomaly_count);
        self.score.merge(&o.score);
        self.severity.merge(&o.severity);
        self.first_io_step = self.first_io_step.min(o.first_io_step);
        self.last_io_step = self.last_io_step.max(o.last_io_step);
        self.min_timestamp = self.min_timestamp.min(o.min_timestamp);
        self.max_timestamp = self.max_timestamp.max(o.max_timestamp);
    }

    /// Closes a (stream, step) bucket with `anomalies` anomalies of the
    /// function: counted in `anomaly_count` when there is at least one.
    pub fn close_bucket(&mut self, anomalies: u64) {
        if anomalies > 0 {
            self.anomaly_count.push(anomalies);
        }
    }
}

/// Words per function on the wire (sums; then 3 MIN and 3 MAX words).
const F_SUM: usize = 5 * MOMENT_SUM_WORDS;

/// Everything behind `func_stats` and `counter_stats` on one rank.
#[derive(Debug, Clone, Default)]
pub struct GlobalStats {
    /// Per global function index.
    pub functions: Vec<FunctionStats>,
    /// Per global counter index: every value of the counter.
    pub counters: Vec<WideMoments>,
}

impl GlobalStats {
    /// Makes room for `functions` functions and `counters` counters.
    pub fn ensure(&mut self, functions: usize, counters: usize) {
        if self.functions.len() < functions {
            self.functions.resize_with(functions, FunctionStats::empty);
        }
        if self.counters.len() < counters {
            self.counters.resize(counters, WideMoments::default());
        }
    }

    /// Function `f`'s entry, made on first use.
    #[inline]
    pub fn function(&mut self, f: u32) -> &mut FunctionStats {
        let f = f as usize;
        if f >= self.functions.len() {
            self.functions.resize_with(f + 1, FunctionStats::empty);
        }
        &mut self.functions[f]
    }

    /// Counter `c`'s entry, made on first use.
    #[inline]
    pub fn counter(&mut self, c: u32) -> &mut WideMoments {
        let c = c as usize;
        if c >= self.counters.len() {
            self.counters.resize(c + 1, WideMoments::default());
        }
        &mut self.counters[c]
    }

    /// Adds everything of `o`.
    pub fn merge(&mut self, o: &GlobalStats) {
        self.ensure(o.functions.len(), o.counters.len());
        for (a, b) in self.functions.iter_mut().zip(&o.functions) {
            a.merge(b);
        }
        for (a, b) in self.counters.iter_mut().zip(&o.counters) {
            a.merge(b);
        }
    }

    /// The totals over all ranks for `functions` functions and `counters`
    /// counters (collective; every rank gets the same result).
    pub fn reduce(&self, coll: &Collectives, functions: usize, counters: usize) -> GlobalStats {
        let mut me = self.clone();
        me.ensure(functions, counters);
        let (mut sum, mut min, mut max) = (Vec::new(), Vec::new(), Vec::new());
        for f in &me.functions[..functions] {
            let (inclusive, exclusive) = f.profiles();
            for m in [
                &inclusive,
                &exclusive,
                &f.anomaly_count,
                &f.score,
                &f.severity,
            ] {
                m.sum_words(&mut sum);
                min.push(if m.n == 0 { u64::MAX } else { m.min });
                max.push(if m.n == 0 { 0 } else { m.max });
            }
            min.extend([f.first_io_step, f.min_timestamp]);
            max.extend([f.last_io_step, f.max_timestamp]);
        }
        for c in &me.counters[..counters] {
            c.sum_words(&mut sum);
            min.push(if c.n == 0 { u64::MAX } else { c.min });
            max.push(if c.n == 0 { 0 } else { c.max });
        }
        let (sum, min, max) = (
            coll.allreduce_sum(&sum),
            coll.allreduce_min(&min),
            coll.allreduce_max(&max),
        );
        let mut out = GlobalStats::default();
        for f in 0..functions {
            let (s, lo, hi) = (&sum[f * F_SUM..], &min[f * 7..], &max[f * 7..]);
            let m = |k: usize| ExactMoments::from_words(&s[k * MOMENT_SUM_WORDS..], lo[k], hi[k]);
            out.functions.push(FunctionStats {
                inclusive: m(0),
                exclusive: m(1),
                same: ExactMoments::default(),
                anomaly_count: m(2),
                score: m(3),
                severity: m(4),
                first_io_step: lo[5],
                min_timestamp: lo[6],
                last_io_step: hi[5],
                max_timestamp: hi[6],
            });
        }
        let (s, lo, hi) = (
            &sum[functions * F_SUM..],
            &min[functions * 7..],
            &max[functions * 7..],
        );
        for c in 0..counters {
            out.counters.push(WideMoments::from_words(
                &s[c * WIDE_SUM_WORDS..],
                lo[c],
                hi[c],
            ));
        }
        out
    }
}

/// Chimbuko's RunStats of exact moments (`scale` divides every value:
/// 1 for runtimes and counts, [`SCORE_SCALE`] for scores).
pub fn run_stats(m: &ExactMoments, scale: f64) -> RunStatsRow {
    if m.n == 0 {
        return RunStatsRow::default();
    }
    RunStatsRow {
        count: m.n,
        accumulate: m.s1 as f64 / scale,
        minimum: m.min as f64 / scale,
        maximum: m.max as f64 / scale,
        mean: m.mean() / scale,
        stddev: m.stddev(1) / scale,
        skewness: m.skewness(),
        kurtosis: m.kurtosis(),
    }
}

/// RunStats of a counter's values.
pub fn wide_run_stats(m: &WideMoments) -> RunStatsRow {
    if m.n == 0 {
        return RunStatsRow::default();
    }
    RunStatsRow {
        count: m.n,
        accumulate: m.s1 as f64,
        minimum: m.min as f64,
        maximum: m.max as f64,
        mean: m.mean(),
        stddev: m.stddev(1),
        skewness: m.skewness(),
        kurtosis: m.kurtosis(),
    }
}
