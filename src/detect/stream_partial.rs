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
    /// Adds one runtime of `function`.
    #[inline]
    pub fn observe(&mut self, function: u32, value: u64) {
        match self {
            StreamPartial::Moments(t) => t.entry(function).push(value),
            StreamPartial::Fine(t) => t.entry(function).push(value),
        }
    }
}
