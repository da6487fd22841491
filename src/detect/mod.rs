//! Anomaly detectors behind one trait.
//!
//! Every detector works in the bulk-synchronous step of the run:
//! 1. [`Detector::observe`] each runtime of this step into a *partial* model;
//! 2. [`Detector::take_partial`] encodes the partial as a [`Wire`] that the
//!    collectives reduce over all AD ranks with integer `SUM`/`MIN`/`MAX`/`BOR`
//!    (a later round may also gather words from every rank: the models the
//!    binned detectors derive on one rank and share, [`sharing`]);
//! 3. [`Detector::merge_reduced`] adds the reduced step totals to the global
//!    model — identical on every rank, whatever the number of ranks. A
//!    detector that needs a second reduction round in the same step (the
//!    histogram detectors: first which buckets, then their counts) hands it
//!    out through [`Detector::next_round`]; [`reduce_step`] drives the rounds;
//! 4. [`Detector::label`] scores each execution against that global model.
//!
//! Partial models must be exactly mergeable (integers), so that labels never
//! depend on how the streams were split among ranks. MPI itself stays in
//! `collectives`: detectors only produce and consume [`Wire`]s.
//!
//! The model detector ([`model`]) judges the executions of functions that
//! have a performance model by the ratio of their runtime to the model's
//! prediction for their features: the pipeline asks it for a
//! [`Prediction`] ([`Detector::predict`]) when an execution completes and
//! judges the prediction's ratio instead of the runtime. Every other
//! detector judges runtimes and keeps the defaults of those hooks.
//!
//! Layout: one file per detector (`sstd`, `hbos`, `copod`, `modal`,
//! `model`, with `binned` shared by the histogram detectors); the exact
//! statistics engines
//! they are built on (integer moments, fine histograms, labelling
//! histograms) live in [`stats`].

pub mod binned;
pub mod choice;
pub mod copod;
pub mod direction;
mod forward;
pub mod hbos;
pub mod modal;
pub mod model;
pub mod sharing;
pub mod size_classes;
pub mod sstd;
pub mod stats;
pub mod stream_partial;

use serde::Serialize;
use stats::exact::Moments;

/// A partial model in reducible form: `sum` words are added over ranks,
/// `min` words take the minimum, `max` words the maximum and `or` words the
/// bitwise OR. Every rank's wire of a round has the same lengths, except
/// `gather`, whose words are collected rather than reduced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wire {
    /// Words added over ranks (wrapping).
    pub sum: Vec<u64>,
    /// Words reduced to their minimum over ranks.
    pub min: Vec<u64>,
    /// Words reduced to their maximum over ranks.
    pub max: Vec<u64>,
    /// Words combined with bitwise OR over ranks.
    pub or: Vec<u64>,
    /// Words gathered from every rank (an allgather, not a reduction):
    /// `None` when the round gathers nothing, and then on every rank.
    pub gather: Option<Box<Gathered>>,
}

/// Words gathered from every rank of a round: a rank contributes any number
/// of its own; the reduced wire holds every rank's, in rank order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gathered {
    /// The words of every rank end to end (in a contribution, this rank's).
    pub words: Vec<u64>,
    /// Where each rank's words end in `words` (empty in a contribution).
    pub ends: Vec<usize>,
}

impl Gathered {
    /// This rank's contribution.
    pub fn own(words: Vec<u64>) -> Gathered {
        Gathered {
            words,
            ends: Vec::new(),
        }
    }

    /// The gathered words of every rank, in rank order.
    pub fn from_parts<'a>(parts: impl IntoIterator<Item = &'a [u64]>) -> Gathered {
        let mut g = Gathered::default();
        for p in parts {
            g.words.extend_from_slice(p);
            g.ends.push(g.words.len());
        }
        g
    }

    /// The words rank `rank` contributed (empty for a rank beyond those
    /// gathered).
    pub fn part(&self, rank: usize) -> &[u64] {
        let start = rank
            .checked_sub(1)
            .map_or(0, |r| self.ends.get(r).copied().unwrap_or(0));
        let end = self.ends.get(rank).copied().unwrap_or(start);
        self.words.get(start..end).unwrap_or(&[])
    }
}

impl Wire {
    /// Bytes this rank contributes to the reduction.
    pub fn bytes(&self) -> usize {
        let gathered = self.gather.as_ref().map_or(0, |g| g.words.len());
        8 * (self.sum.len() + self.min.len() + self.max.len() + self.or.len() + gathered)
    }

    /// The reduction of several ranks' wires, as MPI computes it (for
    /// tests and simulations; runs use `collectives`).
    pub fn reduce_all(wires: &[Wire]) -> Wire {
        let mut out = wires.first().cloned().unwrap_or_default();
        for w in wires.iter().skip(1) {
            out.sum
                .iter_mut()
                .zip(&w.sum)
                .for_each(|(a, b)| *a = a.wrapping_add(*b));
            out.min
                .iter_mut()
                .zip(&w.min)
                .for_each(|(a, b)| *a = (*a).min(*b));
            out.max
                .iter_mut()
                .zip(&w.max)
                .for_each(|(a, b)| *a = (*a).max(*b));
            out.or.iter_mut().zip(&w.or).for_each(|(a, b)| *a |= *b);
        }
        if out.gather.is_some() {
            let parts = wires
                .iter()
                .map(|w| w.gather.as_ref().map_or(&[][..], |g| &g.words[..]));
            out.gather = Some(Box::new(Gathered::from_parts(parts)));
        }
        out
    }
}

/// Runs the reduction rounds of one step: `first` is the detector's
/// [`Detector::take_partial`], `reduce` the collective reduction (MPI in a
/// run, [`Wire::reduce_all`] in simulations). Returns the bytes this rank
/// sent, over all rounds.
pub fn reduce_step(
    det: &mut dyn Detector,
    first: Wire,
    mut reduce: impl FnMut(&Wire) -> Wire,
) -> usize {
    reduce_step_into(det, first, &mut Vec::new(), |w, out| *out = reduce(&w))
}

/// [`reduce_step`] with each round's reduction written into a wire of
/// `buffers` (one per round, kept by the caller from step to step), so
/// that the receive buffers — megabytes per step at 10⁴ functions — are
/// allocated and zeroed once per run, not every step. `reduce` takes the
/// wire itself (on one rank it is its own reduction).
pub fn reduce_step_into(
    det: &mut dyn Detector,
    first: Wire,
    buffers: &mut Vec<Wire>,
    mut reduce: impl FnMut(Wire, &mut Wire),
) -> usize {
    let mut wire = first;
    let mut bytes = 0;
    for round in 0.. {
        bytes += wire.bytes();
        if buffers.len() <= round {
            buffers.push(Wire::default());
        }
        reduce(wire, &mut buffers[round]);
        det.merge_reduced(&buffers[round]);
        match det.next_round() {
            Some(next) => wire = next,
            None => break,
        }
    }
    bytes
}

/// The functions a step's wire covers, in wire order: the active set of
/// [`Detector::set_active`] (indices at or beyond `n` dropped), or all
/// `0..n`.
pub fn wire_functions(active: &Option<Vec<u32>>, n: usize) -> Vec<usize> {
    match active {
        Some(a) => a.iter().map(|&f| f as usize).filter(|&f| f < n).collect(),
        None => (0..n).collect(),
    }
}

/// Outcome for one execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Label {
    /// Within the model's normal range (Chimbuko code `1`).
    Normal,
    /// Outside it (Chimbuko code `-1`).
    Anomaly,
    /// The global model does not have enough data for this function yet.
    Unlabeled,
}

impl Label {
    /// Lower-case name (`normal`, `anomaly`, `unlabeled`), as in JSON and
    /// CSV output.
    pub fn name(self) -> &'static str {
        match self {
            Label::Normal => "normal",
            Label::Anomaly => "anomaly",
            Label::Unlabeled => "unlabeled",
        }
    }
}

/// Label and score of one execution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Verdict {
    /// The label.
    pub label: Label,
    /// Outlier score on the detector's own scale (SSTD: distance from the
    /// mean in standard deviations); 0 when unlabelled.
    pub score: f64,
}

impl Verdict {
    /// Anomaly when `score` reaches `threshold` (the score-based detectors).
    pub fn by_threshold(score: f64, threshold: f64) -> Self {
        let label = if score >= threshold {
            Label::Anomaly
        } else {
            Label::Normal
        };
        Verdict { label, score }
    }
}

/// What a performance model predicted for one execution (model detector
/// only), and the value judged in its place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// The model's prediction of the execution's target runtime (µs).
    pub predicted_us: f64,
    /// `runtime / max(predicted_us, 1 µs)` in parts per million, rounded
    /// half up: an integer, so that the statistics of the ratios stay
    /// exact.
    pub ratio_ppm: u64,
}

impl Prediction {
    /// Predictions below this (µs) judge the runtime against it: a model
    /// that predicts nothing for an execution must not make every runtime
    /// an infinite ratio.
    pub const FLOOR_US: f64 = 1.0;

    /// The prediction `predicted` of an execution whose target runtime is
    /// `runtime`; `None` when `predicted` is not a finite number.
    pub fn of(runtime: u64, predicted: f64) -> Option<Prediction> {
        if !predicted.is_finite() {
            return None;
        }
        let ratio = runtime as f64 / predicted.max(Self::FLOOR_US);
        // Half up by truncation (the ratio is never negative; no call to
        // `round` per execution); `as` saturates: a ratio beyond 1.8e13
        // reads as the largest one.
        let ratio_ppm = (ratio * 1e6 + 0.5) as u64;
        Some(Prediction {
            predicted_us: predicted,
            ratio_ppm,
        })
    }

    /// The ratio judged, `runtime / max(predicted, 1 µs)`.
    pub fn ratio(&self) -> f64 {
        self.ratio_ppm as f64 / 1e6
    }

    /// The prediction of execution `k` in a step's predictions, kept as
    /// `(execution index, prediction)` sorted by index (only the executions
    /// of modelled functions have one).
    #[inline]
    pub fn of_execution(predictions: &[(u32, Prediction)], k: usize) -> Option<Prediction> {
        if predictions.is_empty() {
            return None;
        }
        let k = u32::try_from(k).ok()?;
        predictions
            .binary_search_by_key(&k, |p| p.0)
            .ok()
            .map(|i| predictions[i].1)
    }
}

/// What a detector that judges calls by a performance model's prediction
/// adds to [`Detector`] (reached through [`Detector::predictor`]): it knows
/// functions and counters by name, predicts the runtime of an execution
/// from its features, and records the models it judges with.
pub trait Predictor {
    /// The global function `function` is named `name` (called as names are
    /// agreed, before [`Detector::set_function_threshold`]).
    fn function_named(&mut self, function: u32, name: &str);
    /// The global counter `counter` is named `name` (as names are agreed).
    fn counter_named(&mut self, counter: u32, name: &str);
    /// Whether executions of `function` are judged by a model's
    /// prediction: their [`Prediction::ratio_ppm`] is what
    /// [`Detector::observe`], [`Detector::label`] and
    /// [`Detector::is_slow`] take for them.
    fn predicts(&self, function: u32) -> bool;
    /// The prediction for an execution of `function` with these fixed
    /// features (in `model::features::FIXED` order) and counter values
    /// (`(global counter, value)`, sorted by counter); `None`: judge its
    /// runtime.
    fn predict(&self, function: u32, fixed: &[u64], counters: &[(u32, u64)]) -> Option<Prediction>;
    /// The performance models the detector judges with, for provenance.
    fn model_documents(&self) -> Vec<model::ModelDocument>;
}

/// What every detector implements.
pub trait Detector: Send + Sync {
    /// Name as given to `--algorithm`.
    fn name(&self) -> &'static str;
    /// Makes room for functions `0..n` (the global function table grew).
    fn ensure_functions(&mut self, n: usize);
    /// Adds one runtime (µs) of `function` to this step's partial model.
    fn observe(&mut self, function: u32, value: u64);
    /// Limits the reduction rounds of the coming step to the functions in
    /// `active` (sorted global indices, the same on every rank: those with
    /// an execution on some rank this step): [`Detector::take_partial`]
    /// then encodes, and [`Detector::merge_reduced`] and
    /// [`Detector::next_round`] decode, only their blocks, in that order.
    /// A function outside the set had no data this step, so its model is
    /// what the dense reduction would leave; the wire and the work follow
    /// the active functions, not every function ever seen. `None`: every
    /// function (the default).
    fn set_active(&mut self, active: Option<&[u32]>);
    /// The partial model of this step for functions `0..n` (or the active
    /// ones, see [`Detector::set_active`]), then cleared.
    fn take_partial(&mut self) -> Wire;
    /// Merges the step partial reduced over all ranks into the global model.
    fn merge_reduced(&mut self, reduced: &Wire);
    /// This rank's index among the `ranks` AD ranks (before the first
    /// step; 0 of 1 by default): a detector may deal work out over the
    /// ranks, such as deriving each changed function's model on one rank
    /// and sharing it (`sharing`), as long as every rank ends with the
    /// same model; alone (`ranks` 1), it may send an empty wire and merge
    /// its own partial in `merge_reduced`, the sum a reduction would give.
    fn set_ranks(&mut self, _rank: usize, _ranks: usize) {}
    /// The AD rank's worker threads, for work the detector can do per
    /// function in parallel (deriving the changed functions' models after
    /// a merge) with the same result as on one thread. Without a pool
    /// (the default) the detector works on the calling thread.
    fn set_pool(&mut self, _pool: std::sync::Arc<rayon::ThreadPool>) {}
    /// An empty share of the step's partial model for one stream, to be
    /// filled on a worker thread ([`stream_partial::StreamPartial`]);
    /// `None` (the default): the detector is fed by
    /// [`Detector::observe`] on the main thread only.
    fn stream_partial(&self) -> Option<stream_partial::StreamPartial> {
        None
    }
    /// Adds a stream's share (from [`Detector::stream_partial`]) to this
    /// rank's partial model, as if each of its runtimes had been
    /// observed. The share is left as it is: the stream empties it on its
    /// worker thread before its next build ([`StreamPartial::clear`]).
    ///
    /// [`StreamPartial::clear`]: stream_partial::StreamPartial::clear
    fn absorb(&mut self, _share: &stream_partial::StreamPartial) {}
    /// The function id of `function`'s message-size class `class`, once
    /// agreed (see [`size_classes`]); `None` without size classes.
    fn size_key(&self, _function: u32, _class: u8) -> Option<u32> {
        None
    }
    /// Size classes seen on this rank that [`Detector::size_key`] does not
    /// know, to be agreed at the next step.
    fn note_size_classes(&mut self, _classes: &[(u32, u8)]) {}
    /// The size classes to agree on now (and forgets them).
    fn take_new_size_classes(&mut self) -> Vec<(u32, u8)> {
        Vec::new()
    }
    /// The agreed function id `key` of `function`'s size class `class`.
    fn add_size_class(&mut self, _function: u32, _class: u8, _key: u32) {}
    /// No size class will be agreed any more (the end of the run): calls
    /// of classes without an id are judged with their function.
    fn end_size_classes(&mut self) {}
    /// After [`Detector::merge_reduced`]: the wire of a further reduction
    /// round of this step, if the detector needs one (all ranks agree, as
    /// the answer depends only on reduced data).
    fn next_round(&mut self) -> Option<Wire> {
        None
    }
    /// Sets a per-function threshold (SSTD: σ; HBOS/COPOD: the score
    /// quantile threshold; modal: robust distance), from `--threshold-file`.
    fn set_function_threshold(&mut self, function: u32, value: f64);
    /// Labels one runtime of `function` against the global model.
    fn label(&self, function: u32, value: u64) -> Verdict;
    /// The performance models of a detector that judges some functions by
    /// a model's prediction (`--algorithm model`): the seam of what only
    /// such a detector needs. `None` (the default): runtimes are judged.
    fn predictor(&self) -> Option<&dyn Predictor> {
        None
    }
    /// [`Detector::predictor`], to tell it the names as they are agreed.
    fn predictor_mut(&mut self) -> Option<&mut dyn Predictor> {
        None
    }
    /// Whether `value` is slower than the model of `function` predicts
    /// (for `--direction`): above its mean, unless the detector knows
    /// better (`modal`: above the fastest normal mode).
    fn is_slow(&self, function: u32, value: u64) -> bool {
        value as f64 > self.mean(function)
    }
    /// The runtime the model of `function` expects of an execution that
    /// took `value` (µs): what a slow execution is compared with to know
    /// the time it lost. Its mean by default; the detectors that know the
    /// shape of the distribution say better (`modal`: the median of the
    /// nearest normal mode below `value`; HBOS and COPOD: the median).
    fn expected(&self, function: u32, _value: u64) -> f64 {
        self.mean(function)
    }
    /// The mean of the global model of `function`: its snapshot's `mean`,
    /// which the detectors give without building the snapshot (skewness,
    /// kurtosis, histogram) — it is asked for calls as they are judged.
    fn mean(&self, function: u32) -> f64 {
        self.model_snapshot(function).mean
    }
    /// The model parameters of `function`, for provenance and reports.
    fn model_json(&self, function: u32) -> serde_json::Value;
    /// The parameters `label` uses for `function` right now, in a fixed
    /// structured form (the provenance file stores one per function and
    /// step in which that function had an anomaly).
    fn model_snapshot(&self, function: u32) -> ModelSnapshot;
    /// `model_snapshot(function).hist_counts.len()`, without building the
    /// snapshot (the provenance writer sizes histogram rooms with it).
    fn hist_len(&self, function: u32) -> usize {
        self.model_snapshot(function).hist_counts.len()
    }
    /// Number of executions the global model holds for `function`.
    fn count(&self, function: u32) -> u64;
    /// A digest of the whole global model (equal on every rank, or a bug).
    fn digest(&self) -> u64;
}

/// The parameters a detector labels one function with, in one shape for
/// every detector (fields a detector does not use stay at their defaults).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelSnapshot {
    /// Executions in the global model.
    pub count: u64,
    /// Mean runtime of the global model (µs).
    pub mean: f64,
    /// Standard deviation (ddof 1) of the model's runtimes (µs).
    pub stddev: f64,
    /// Skewness (g1) of the model's runtimes.
    pub skewness: f64,
    /// Excess kurtosis of the model's runtimes.
    pub kurtosis: f64,
    /// Smallest runtime in the model (µs; 0 when empty).
    pub minimum: u64,
    /// Largest runtime in the model (µs; 0 when empty).
    pub maximum: u64,
    /// The detector's threshold: SSTD σ; HBOS/COPOD the internal global
    /// score threshold; other detectors document theirs.
    pub threshold: f64,
    /// Left edge of the labelling histogram (histogram detectors; µs): bin
    /// `b` covers `(first_edge + b·bin_width, first_edge + (b+1)·bin_width]`.
    pub hist_first_edge: f64,
    /// Width of each histogram bin (µs).
    pub hist_bin_width: f64,
    /// Executions in each bin (empty for detectors without a histogram).
    pub hist_counts: Vec<u64>,
    /// Runtime modes judged normal (`modal`; empty otherwise).
    pub modes: Vec<ModeSnapshot>,
}

impl ModelSnapshot {
    /// The statistics part of a snapshot from the global moments of a
    /// function, with the detector's `threshold`; the histogram and mode
    /// fields stay empty for the detector to fill in.
    pub fn of_moments(m: &stats::exact::ExactMoments, threshold: f64) -> Self {
        let (skewness, kurtosis) = m.skewness_kurtosis();
        ModelSnapshot {
            count: m.n,
            mean: m.mean(),
            stddev: m.stddev(1),
            skewness,
            kurtosis,
            minimum: if m.n > 0 { m.min } else { 0 },
            maximum: if m.n > 0 { m.max } else { 0 },
            threshold,
            ..Default::default()
        }
    }
}

/// The part of a detector's `model_json` every detector shares: its name
/// and the statistics of a function's global moments.
pub fn moments_json(algorithm: &str, m: &stats::exact::ExactMoments) -> serde_json::Value {
    serde_json::json!({
        "algorithm": algorithm,
        "count": m.n,
        "mean": m.mean(),
        "stddev": m.stddev(1),
        "skewness": m.skewness(),
        "kurtosis": m.kurtosis(),
        "minimum": if m.n > 0 { Some(m.min) } else { None },
        "maximum": if m.n > 0 { Some(m.max) } else { None },
    })
}

/// One normal runtime mode of the `modal` detector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ModeSnapshot {
    /// Median runtime of the mode (µs).
    pub median: f64,
    /// Lowest runtime within the threshold of this mode (µs).
    pub low: f64,
    /// Highest runtime within the threshold of this mode (µs).
    pub high: f64,
    /// Fraction of the function's executions in the mode.
    pub share: f64,
}

/// FNV-1a over words: a cheap, stable digest for cross-rank model checks.
pub fn fnv1a(words: impl IntoIterator<Item = u64>) -> u64 {
    crate::util::hash::fnv1a(words.into_iter().flat_map(u64::to_le_bytes))
}
