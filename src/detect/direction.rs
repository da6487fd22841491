//! Which side of its model an execution must fall on to be flagged
//! (`--direction`).
//!
//! A performance engineer looks for time lost: an execution that returned
//! faster than its model predicts (a ring exchange that found its partner
//! already waiting, an early exit on an error path) is rarely what slowed a
//! run, and flagging it buries the real findings. So by default only
//! executions *slower* than their model predicts are anomalies
//! ([`Direction::Slow`]); [`Direction::Fast`] keeps only the fast ones and
//! [`Direction::Both`] is the two-sided behaviour of Chimbuko's detectors,
//! kept for compatibility (its labels are exactly those of the detectors
//! alone: no wrapper is built for it).
//!
//! "Slower than predicted" is the detector's own notion
//! ([`Detector::is_slow`]): above the mean for SSTD, HBOS and COPOD; for
//! `modal` above the median of the fastest normal mode (faster than every
//! normal code path is fast; between two paths is slower than the fast one
//! predicts). An execution on the other side keeps its score but is
//! labelled normal.

use super::forward::forward_to_inner;
use super::{Detector, Label, Verdict};

/// Which executions may be anomalies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// Slower than the model predicts (the default).
    #[default]
    Slow,
    /// Faster than the model predicts.
    Fast,
    /// Either side (Chimbuko's behaviour).
    Both,
}

impl Direction {
    /// Every direction, as named on the command line.
    pub const ALL: [Direction; 3] = [Direction::Slow, Direction::Fast, Direction::Both];

    /// The name `--direction` takes.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Slow => "slow",
            Direction::Fast => "fast",
            Direction::Both => "both",
        }
    }

    /// Whether an anomaly on the slow (`true`) or fast side is kept.
    pub fn keeps(self, slow: bool) -> bool {
        match self {
            Direction::Slow => slow,
            Direction::Fast => !slow,
            Direction::Both => true,
        }
    }
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Direction {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Direction::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown direction {s:?} (one of slow, fast, both)"))
    }
}

/// A detector whose anomalies on the unwanted side are labelled normal.
pub struct Directed {
    inner: Box<dyn Detector>,
    direction: Direction,
}

impl Directed {
    /// `inner`, keeping only the anomalies on `direction`'s side.
    pub fn new(inner: Box<dyn Detector>, direction: Direction) -> Self {
        Directed { inner, direction }
    }
}

impl Detector for Directed {
    forward_to_inner!(plumbing);
    forward_to_inner!(model);
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn ensure_functions(&mut self, n: usize) {
        self.inner.ensure_functions(n);
    }
    fn observe(&mut self, function: u32, value: u64) {
        self.inner.observe(function, value);
    }
    fn label(&self, function: u32, value: u64) -> Verdict {
        let v = self.inner.label(function, value);
        if v.label == Label::Anomaly && !self.direction.keeps(self.inner.is_slow(function, value)) {
            Verdict {
                label: Label::Normal,
                score: v.score,
            }
        } else {
            v
        }
    }
    fn is_slow(&self, function: u32, value: u64) -> bool {
        self.inner.is_slow(function, value)
    }
    fn expected(&self, function: u32, value: u64) -> f64 {
        self.inner.expected(function, value)
    }
    fn model_json(&self, function: u32) -> serde_json::Value {
        let mut j = self.inner.model_json(function);
        if let Some(o) = j.as_object_mut() {
            o.insert("direction".into(), self.direction.name().into());
        }
        j
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::choice::{Algorithm, DetectorSettings};
    use crate::detect::{reduce_step, Wire};

    /// A detector of `algorithm` in `direction` whose function 0 holds
    /// 200 runtimes around 1000 µs (and, for modal, a second mode at 3000).
    fn trained(algorithm: Algorithm, direction: Direction) -> Box<dyn Detector> {
        let mut d = DetectorSettings {
            algorithm,
            direction,
            ..Default::default()
        }
        .build()
        .unwrap();
        d.ensure_functions(1);
        for i in 0..200u64 {
            d.observe(0, 990 + i % 21);
            if algorithm == Algorithm::Modal {
                d.observe(0, 2970 + i % 61);
            }
        }
        let w = d.take_partial();
        reduce_step(d.as_mut(), w, Wire::clone);
        d
    }

    #[test]
    fn only_the_wanted_side_is_flagged_and_both_is_the_detector_alone() {
        for algorithm in [Algorithm::Sstd, Algorithm::Modal] {
            let slow = trained(algorithm, Direction::Slow);
            let fast = trained(algorithm, Direction::Fast);
            let both = trained(algorithm, Direction::Both);
            for (x, is_slow) in [(100_000u64, true), (3, false)] {
                let b = both.label(0, x);
                assert_eq!(b.label, Label::Anomaly, "{algorithm} {x}");
                let want = |keep: bool| if keep { Label::Anomaly } else { Label::Normal };
                assert_eq!(slow.label(0, x).label, want(is_slow), "{algorithm} {x}");
                assert_eq!(fast.label(0, x).label, want(!is_slow), "{algorithm} {x}");
                // The score is the detector's either way.
                assert_eq!(slow.label(0, x).score, b.score);
            }
            // Normal runtimes stay normal.
            assert_eq!(slow.label(0, 1000).label, Label::Normal);
        }
    }

    #[test]
    fn modal_judges_the_side_against_the_fastest_normal_mode() {
        // 1500 and 2500 µs lie between the modes at 1000 and 3000: slower
        // than the fast path predicts, though one is below the mean (2000).
        let slow = trained(Algorithm::Modal, Direction::Slow);
        assert!(slow.is_slow(0, 1500) && slow.is_slow(0, 2500));
        assert!(!slow.is_slow(0, 500));
        assert_eq!(slow.label(0, 1500).label, Label::Anomaly);
        assert_eq!(slow.label(0, 300).label, Label::Normal);
    }

    #[test]
    fn the_expected_runtime_is_the_detectors_whatever_the_direction() {
        // Modal expects a 1500 µs call to take what the mode below it takes
        // (about 1000 µs), not the mean of both modes (2000 µs): an
        // incident's cost rests on it.
        for direction in Direction::ALL {
            let d = trained(Algorithm::Modal, direction);
            let e = d.expected(0, 1500);
            assert!((990.0..=1010.0).contains(&e), "{direction:?}: {e}");
        }
    }

    #[test]
    fn names_parse_back() {
        for d in Direction::ALL {
            assert_eq!(d.name().parse::<Direction>(), Ok(d));
        }
        assert!("up".parse::<Direction>().is_err());
    }
}
