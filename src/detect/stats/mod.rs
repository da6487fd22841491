//! Exact statistics engines the detectors are built on.
//!
//! Everything here is integer arithmetic that merges exactly over ranks, so
//! that a model reduced from any split of the streams is bit-identical:
//! - [`exact`]: power sums of integer runtimes ([`exact::ExactMoments`]) and
//!   of counter values ([`exact::WideMoments`]), and the statistics derived
//!   from them;
//! - [`fine`]: the fine histogram on a fixed global bucket grid, reduced in
//!   two rounds (which buckets and how wide the sums are, then the sums and
//!   the counts, packed to those widths);
//! - [`histogram`]: the labelling histogram derived from the fine one, and
//!   [`rebin`]: how the fine counts are spread onto its bins;
//! - [`memo`]: a memo of a pure function by its argument's exact bits;
//! - [`narrow`]: the exact skewness and kurtosis in 128-bit integers when
//!   they fit (the same bits as the wide path).

pub mod exact;
pub mod fine;
pub mod histogram;
pub mod memo;
pub mod narrow;
pub mod rebin;
