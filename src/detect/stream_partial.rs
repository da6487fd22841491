//! A stream's share of a step's partial model, filled on a worker thread
//! while the stream is built and added to the detector's partial on the
//! main thread afterwards ([`Detector::absorb`](super::Detector::absorb)).
//!
//! The partials are exact integer sums (counts, power sums, minima and
//! maxima, bucket counts), so adding the streams' shares one by one gives
//! the same partial as observing every execution on one thread, whatever
//! the number of threads.

use super::stats::exact::ExactMoments;
use super::stats::fine::FineHist;
use crate::util::slots::Touched;

/// One stream's observations of a step, of the kind its detector keeps.
#[derive(Debug, Clone)]
pub enum StreamPartial {
    /// Exact moments per function (SSTD).
    Moments(Touched<ExactMoments>),
    /// Exact moments and fine-histogram counts per function (HBOS, COPOD,
    /// modal).
    Fine(Touched<FineHist>),
}

impl StreamPartial {
    /// Empties the share for the stream's next step, keeping each
    /// function's buffers. Done by the stream's worker before it builds
    /// (not by the main thread after absorbing it): with thousands of
    /// functions a step, emptying is a pass over all of them.
    pub fn clear(&mut self) {
        match self {
            StreamPartial::Moments(t) => t.reset(|m| *m = ExactMoments::default()),
            StreamPartial::Fine(t) => t.reset(FineHist::clear),
        }
    }

    /// Adds one runtime of `function`.
    #[inline]
    pub fn observe(&mut self, function: u32, value: u64) {
        match self {
            StreamPartial::Moments(t) => t.entry(function).push(value),
            StreamPartial::Fine(t) => t.entry(function).push(value),
        }
    }
}
