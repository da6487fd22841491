//! SSTD: a function's execution is anomalous when its runtime lies outside
//! `mean ± σ·stddev` of all executions of that function seen so far (all
//! ranks, all steps, this step included), as in Chimbuko. Score is
//! `|x − mean| / stddev`; the model is exact integer power sums, so mean and
//! stddev are bit-identical on every rank for any number of ranks.

use super::stats::exact::Moments;
use super::stats::exact::{ExactMoments, MOMENT_SUM_WORDS};
use super::stream_partial::StreamPartial;
use super::{moments_json, Detector, Label, ModelSnapshot, Verdict, Wire};
use crate::util::hash::Fnv1a;
use crate::util::slots::Touched;

/// SSTD parameters.
#[derive(Debug, Clone)]
pub struct SstdParams {
    /// Default σ (Chimbuko's default is 6).
    pub sigma: f64,
    /// Executions the global model must hold before a function is labelled
    /// (Chimbuko: 2).
    pub min_count: u64,
}

impl Default for SstdParams {
    fn default() -> Self {
        SstdParams {
            sigma: 6.0,
            min_count: 2,
        }
    }
}

/// The SSTD detector.
#[derive(Debug, Clone)]
pub struct Sstd {
    params: SstdParams,
    /// Per-function σ overrides, by global function index.
    sigma_of: Vec<Option<f64>>,
    global: Vec<ExactMoments>,
    partial: Touched<ExactMoments>,
    /// Mean, stddev and thresholds derived from `global`, refreshed after
    /// each merge so that labelling is a couple of compares per execution.
    derived: Vec<Derived>,
    /// The functions of this step's wire (see [`Detector::set_active`]).
    active: Option<Vec<u32>>,
    /// Whether this is the only AD rank: then the step's partial is its
    /// global share, and the merge adds it where it lies (no wire).
    single: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Derived {
    count: u64,
    mean: f64,
    stddev: f64,
    low: f64,
    high: f64,
}

impl Sstd {
    /// An SSTD detector with an empty model.
    pub fn new(params: SstdParams) -> Self {
        Sstd {
            params,
            sigma_of: Vec::new(),
            global: Vec::new(),
            partial: Touched::default(),
            derived: Vec::new(),
            active: None,
            single: false,
        }
    }

    fn refresh(&mut self, function: usize) {
        let Some(m) = self.global.get(function) else {
            return;
        };
        let (mean, stddev) = (m.mean(), m.stddev(1));
        let s = self.sigma(function as u32);
        self.derived[function] = Derived {
            count: m.n,
            mean,
            stddev,
            low: mean - s * stddev,
            high: mean + s * stddev,
        };
    }

    /// Sets σ for one function (from a per-function threshold file).
    pub fn set_sigma(&mut self, function: u32, sigma: f64) {
        let i = function as usize;
        if self.sigma_of.len() <= i {
            self.sigma_of.resize(i + 1, None);
        }
        self.sigma_of[i] = Some(sigma);
        self.refresh(i);
    }

    /// σ that `function` is labelled with: its own (threshold file) or the
    /// default.
    pub fn sigma(&self, function: u32) -> f64 {
        self.sigma_of
            .get(function as usize)
            .copied()
            .flatten()
            .unwrap_or(self.params.sigma)
    }

    /// The global model of one function.
    pub fn moments(&self, function: u32) -> ExactMoments {
        self.global
            .get(function as usize)
            .copied()
            .unwrap_or_default()
    }

    /// (lower, upper) thresholds of `function`.
    pub fn thresholds(&self, function: u32) -> (f64, f64) {
        let m = self.moments(function);
        let (mean, sd) = (m.mean(), m.stddev(1));
        let s = self.sigma(function);
        (mean - s * sd, mean + s * sd)
    }
}

impl Detector for Sstd {
    fn name(&self) -> &'static str {
        "sstd"
    }

    fn ensure_functions(&mut self, n: usize) {
        if self.global.len() < n {
            self.global.resize(n, ExactMoments::default());
            self.derived.resize(n, Derived::default());
        }
    }

    #[inline]
    fn observe(&mut self, function: u32, value: u64) {
        if (function as usize) < self.global.len() {
            self.partial.entry(function).push(value);
        }
    }

    fn stream_partial(&self) -> Option<StreamPartial> {
        Some(StreamPartial::Moments(Touched::default()))
    }

    fn absorb(&mut self, share: &StreamPartial) {
        if let StreamPartial::Moments(t) = share {
            for (f, m) in t.iter() {
                if (f as usize) < self.global.len() {
                    self.partial.entry(f).merge(m);
                }
            }
        }
    }

    fn set_active(&mut self, active: Option<&[u32]>) {
        self.active = active.map(<[u32]>::to_vec);
    }

    fn set_ranks(&mut self, _rank: usize, ranks: usize) {
        self.single = ranks == 1;
    }

    fn take_partial(&mut self) -> Wire {
        if self.single {
            // The sum over ranks is this rank's partial: `merge_reduced`
            // reads it where it is (the same integers a wire would carry).
            return Wire::default();
        }
        let fs = super::wire_functions(&self.active, self.global.len());
        let n = fs.len();
        let mut wire = Wire {
            sum: Vec::with_capacity(n * MOMENT_SUM_WORDS),
            min: Vec::with_capacity(n),
            max: Vec::with_capacity(n),
            or: Vec::new(),
            gather: None,
        };
        let none = ExactMoments::default();
        for &f in &fs {
            // A function of the wire that did not run here adds nothing.
            let m = self.partial.get(f).unwrap_or(&none);
            m.sum_words(&mut wire.sum);
            // Empty partials must not win a MIN/MAX reduction.
            wire.min.push(if m.n == 0 { u64::MAX } else { m.min });
            wire.max.push(if m.n == 0 { 0 } else { m.max });
        }
        self.partial.reset(|m| *m = ExactMoments::default());
        wire
    }

    fn merge_reduced(&mut self, reduced: &Wire) {
        let fs = super::wire_functions(&self.active, self.global.len());
        if self.single {
            for &f in &fs {
                match self.partial.get(f) {
                    Some(&step) if step.n > 0 => {
                        self.global[f].merge(&step);
                        self.refresh(f);
                    }
                    _ => {}
                }
            }
            self.partial.reset(|m| *m = ExactMoments::default());
            return;
        }
        let n = reduced
            .min
            .len()
            .min(reduced.max.len())
            .min(reduced.sum.len() / MOMENT_SUM_WORDS)
            .min(fs.len());
        for (k, &f) in fs.iter().enumerate().take(n) {
            let words = &reduced.sum[k * MOMENT_SUM_WORDS..(k + 1) * MOMENT_SUM_WORDS];
            let step = ExactMoments::from_words(words, reduced.min[k], reduced.max[k]);
            if step.n > 0 {
                self.global[f].merge(&step);
                self.refresh(f);
            }
        }
    }

    fn set_function_threshold(&mut self, function: u32, value: f64) {
        self.set_sigma(function, value);
    }

    #[inline]
    fn label(&self, function: u32, value: u64) -> Verdict {
        let d = self
            .derived
            .get(function as usize)
            .copied()
            .unwrap_or_default();
        if d.count < self.params.min_count.max(2) {
            return Verdict {
                label: Label::Unlabeled,
                score: 0.0,
            };
        }
        let x = value as f64;
        let label = if x < d.low || x > d.high {
            Label::Anomaly
        } else {
            Label::Normal
        };
        let score = (x - d.mean).abs() / if d.stddev == 0.0 { 1e-10 } else { d.stddev };
        Verdict { label, score }
    }

    fn model_json(&self, function: u32) -> serde_json::Value {
        let m = self.moments(function);
        let (lo, hi) = self.thresholds(function);
        let mut v = moments_json("sstd", &m);
        v["sigma"] = self.sigma(function).into();
        v["threshold_low"] = lo.into();
        v["threshold_high"] = hi.into();
        v["sum"] = m.s1.to_string().into();
        v["sum_squares"] = m.s2.to_string().into();
        v["sum_cubes"] = m.s3.to_decimal().into();
        v["sum_fourth_powers"] = m.s4.to_decimal().into();
        v
    }

    fn model_snapshot(&self, function: u32) -> ModelSnapshot {
        ModelSnapshot::of_moments(&self.moments(function), self.sigma(function))
    }

    fn mean(&self, function: u32) -> f64 {
        self.moments(function).mean()
    }

    fn hist_len(&self, _function: u32) -> usize {
        0
    }

    fn count(&self, function: u32) -> u64 {
        self.moments(function).n
    }

    fn digest(&self) -> u64 {
        // One function's words at a time into the running hash.
        let mut hash = Fnv1a::default();
        let mut words = Vec::with_capacity(MOMENT_SUM_WORDS + 2);
        for m in &self.global {
            words.clear();
            m.sum_words(&mut words);
            words.push(m.min);
            words.push(m.max);
            hash.write_words(&words);
        }
        hash.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_steps(parts: &[Vec<(u32, u64)>]) -> Sstd {
        // Simulates ranks: each part is one rank's data of a single step.
        let mut det = Sstd::new(SstdParams::default());
        det.ensure_functions(2);
        let mut total: Option<Wire> = None;
        for p in parts {
            let mut rank = Sstd::new(SstdParams::default());
            rank.ensure_functions(2);
            for &(f, v) in p {
                rank.observe(f, v);
            }
            let w = rank.take_partial();
            total = Some(match total {
                None => w,
                Some(t) => Wire::reduce_all(&[t, w]),
            });
        }
        det.merge_reduced(&total.unwrap());
        det
    }

    #[test]
    fn labels_outliers_beyond_sigma() {
        let mut data: Vec<(u32, u64)> = (0..1000).map(|i| (0, 100 + (i % 11))).collect();
        data.push((0, 1000));
        let det = run_steps(&[data]);
        assert_eq!(det.label(0, 105).label, Label::Normal);
        assert_eq!(det.label(0, 1000).label, Label::Anomaly);
        assert_eq!(det.label(1, 5).label, Label::Unlabeled);
        let m = det.moments(0);
        let v = det.label(0, 1000);
        assert!((v.score - (1000.0 - m.mean()) / m.stddev(1)).abs() < 1e-12);
    }

    #[test]
    fn a_single_rank_merges_its_partial_as_the_wire_would() {
        let (mut wired, mut own) = (
            Sstd::new(SstdParams::default()),
            Sstd::new(SstdParams::default()),
        );
        for d in [&mut wired, &mut own] {
            d.set_ranks(0, 1);
            d.ensure_functions(40);
        }
        wired.single = false;
        let mut seed = 9u64;
        let mut next = |n: u64| crate::util::hash::splitmix64(&mut seed) % n;
        for s in 0..8 {
            // Functions with 0 to 3 runtimes, some huge; in odd steps some
            // ran but are off the wire, and some on it did not run.
            let mut data = Vec::new();
            for f in 0..40u32 {
                for _ in 0..next(4) {
                    data.push((f, next(5000) << next(40)));
                }
            }
            let active: Vec<u32> = (0..40).filter(|f| s % 2 == 0 || f % 5 != 2).collect();
            for d in [&mut wired, &mut own] {
                for &(f, v) in &data {
                    d.observe(f, v);
                }
                d.set_active(Some(&active));
                let w = d.take_partial();
                d.merge_reduced(&Wire::reduce_all(&[w]));
            }
            assert_eq!(own.digest(), wired.digest(), "step {s}");
            for f in 0..40 {
                assert_eq!(own.model_json(f), wired.model_json(f), "step {s}");
            }
        }
        assert!(own.partial.is_empty());
    }

    #[test]
    fn split_over_ranks_is_bit_identical() {
        let data: Vec<(u32, u64)> = (0..997u64)
            .map(|i| ((i % 2) as u32, 50 + (i * 7919) % 101))
            .collect();
        let one = run_steps(std::slice::from_ref(&data));
        let split: Vec<Vec<(u32, u64)>> = data.chunks(100).map(|c| c.to_vec()).collect();
        let many = run_steps(&split);
        assert_eq!(one.digest(), many.digest());
        for v in [10u64, 55, 99, 500] {
            assert_eq!(
                one.label(1, v).score.to_bits(),
                many.label(1, v).score.to_bits()
            );
        }
    }
}
