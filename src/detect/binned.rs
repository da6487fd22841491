//! The detectors that label against a function's runtime *distribution*
//! (HBOS, COPOD, modal) share one model: the exact fine histogram of
//! [`super::stats::fine`], merged over ranks in two reduction rounds per step.
//! After each merge, every function that received data gets its labelling
//! model re-derived from the global fine histogram by the detector's
//! [`Kernel`] — a pure function of integer data, hence identical on every
//! rank. With several AD ranks each changed function is derived on one of
//! them and its model shared with the others (`super::sharing`), bit for
//! bit. Labelling then only reads the derived model.

use std::sync::{Arc, Mutex, PoisonError};

use rayon::prelude::*;

use super::sharing::{push_framed, ModelSharing};
use super::stats::fine::{
    bucket_bounds, FineHist, FineModel, StepChunk, StepDelta, GROUP, MERGE_CHUNK, ROUND1_OR_WORDS,
    SUB_BITS,
};
use super::stream_partial::StreamPartial;
use super::{moments_json, Detector, Label, ModelSnapshot, Verdict, Wire};
use crate::util::bits;
use crate::util::disjoint::{many_mut, stretches_mut};
use crate::util::hash::Fnv1a;

/// Functions per unit of the parallel encoding of this rank's shared
/// models.
const ENCODE_CHUNK: usize = 256;

/// The detector-specific part: how a labelling model is derived from the
/// fine histogram, and how it scores a runtime.
pub trait Kernel: Send + Sync + Clone {
    /// Derived labelling model of one function.
    type Model: Clone + Send + Sync;

    /// Name as given to `--algorithm`.
    fn name(&self) -> &'static str;
    /// Threshold of functions without a `--threshold-file` entry.
    fn default_threshold(&self) -> f64;
    /// The model of a function that has no data yet.
    fn empty_model(&self) -> Self::Model;
    /// Re-derives the labelling model after a merge, in place: `model` is
    /// the model before this step (HBOS/COPOD carry their threshold ratchet
    /// in it), `hist` the global histogram (this step included), `step`
    /// what this step added. A step re-derives every function that ran, so
    /// the kernel may keep buffers between calls (`&mut self`) and reuse
    /// the model's own.
    fn derive(
        &mut self,
        model: &mut Self::Model,
        hist: &FineHist,
        step: &StepDelta,
        threshold: f64,
    );
    /// Label (normal or anomaly) and score of one runtime.
    fn judge(&self, model: &Self::Model, value: u64) -> Verdict;
    /// Whether `value` is slower than the model predicts; `mean` is the
    /// function's mean runtime.
    fn is_slow(&self, _model: &Self::Model, value: u64, mean: f64) -> bool {
        value as f64 > mean
    }
    /// The runtime the model expects of an execution that took `value`
    /// (see [`Detector::expected`]): the histogram's median by default.
    fn expected(&self, _model: &Self::Model, hist: &FineHist, _value: u64) -> f64 {
        hist.median()
    }
    /// Detector-specific JSON fields of a function's model.
    fn json(&self, model: &Self::Model) -> serde_json::Value;
    /// Fills the detector-specific fields of a snapshot.
    fn snapshot(&self, model: &Self::Model, snap: &mut ModelSnapshot);
    /// Words that identify the derived model (for the cross-rank digest).
    fn digest_words(&self, model: &Self::Model, out: &mut Vec<u64>);
    /// Length of the histogram [`Kernel::snapshot`] stores (none by
    /// default).
    fn hist_len(&self, _model: &Self::Model) -> usize {
        0
    }
    /// Whether derived models travel between ranks ([`Kernel::encode`],
    /// [`Kernel::decode`]): then each changed function's model is derived
    /// on one AD rank and shared (see `detect::sharing`). Without it,
    /// every rank derives every changed function.
    fn shares_models(&self) -> bool {
        false
    }
    /// Appends the words of a derived model, every bit of it. `count` is
    /// the function's global count of executions, the same on every rank:
    /// no count in the model exceeds it, so counts may travel in lanes
    /// that narrow ([`crate::detect::stats::fine::lane_bits`]).
    fn encode(&self, _model: &Self::Model, _count: u64, _out: &mut Vec<u64>) {}
    /// Sets `model` to the one [`Kernel::encode`] wrote as `words` with the
    /// same `count`.
    fn decode(&self, _model: &mut Self::Model, _count: u64, _words: &[u64]) {}
}

/// One chunk of a step's round-2 merge with the models of its stretch of
/// functions (and the index of the first) and which of its functions this
/// rank derives.
type MergeJob<'a, K> = (
    StepChunk<'a>,
    (&'a mut [<K as Kernel>::Model], usize),
    &'a [bool],
);

/// A detector on the exact fine histogram, specialised by a [`Kernel`].
pub struct BinnedDetector<K: Kernel> {
    kernel: K,
    /// Executions the global model must hold before a function is labelled.
    min_count: u64,
    fine: FineModel,
    models: Vec<K::Model>,
    threshold_of: Vec<Option<f64>>,
    /// The functions whose global histogram holds enough executions to be
    /// labelled, one bit each: labelling reads this and the model only,
    /// not the histogram (with 10^5 functions seen, the histograms of a
    /// step's few active ones lie megabytes apart, one cache and TLB miss
    /// per execution labelled). Counts only grow, so a bit once set stays.
    labelled: Vec<u64>,
    /// The changed functions' models dealt out over the AD ranks.
    sharing: ModelSharing,
    /// The AD rank's worker threads, if the run has any.
    pool: Option<Arc<rayon::ThreadPool>>,
    /// The step's changed functions dealt to this rank and what the step
    /// added to each (buffers kept from step to step).
    changed: Vec<usize>,
    /// The step delta of the merge when it runs on the main thread.
    delta: StepDelta,
    /// Per worker thread of the pool: a copy of the kernel and a step
    /// delta, kept from step to step so that their buffers and memos stay
    /// warm (a memo only ever returns what its function returns: the copies
    /// derive what the kernel would).
    workers: Vec<Mutex<(K, StepDelta)>>,
}

impl<K: Kernel> BinnedDetector<K> {
    /// An empty detector; a function is labelled once its global model
    /// holds `min_count` executions.
    pub fn new(kernel: K, min_count: u64) -> Self {
        BinnedDetector {
            kernel,
            min_count,
            fine: FineModel::default(),
            models: Vec::new(),
            threshold_of: Vec::new(),
            labelled: Vec::new(),
            sharing: ModelSharing::default(),
            pool: None,
            changed: Vec::new(),
            delta: StepDelta::default(),
            workers: Vec::new(),
        }
    }

    /// The detector-specific kernel (its parameters).
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    /// The derived labelling model of `function`.
    pub fn model(&self, function: u32) -> Option<&K::Model> {
        self.models.get(function as usize)
    }

    /// The global fine histogram of `function`.
    pub fn histogram(&self, function: u32) -> Option<&FineHist> {
        self.fine.global.get(function as usize)
    }

    /// The threshold `function` is labelled with: its `--threshold-file`
    /// entry, or the kernel's default.
    pub fn threshold(&self, function: u32) -> f64 {
        let default = self.kernel.default_threshold();
        threshold_in(&self.threshold_of, function as usize, default)
    }

    fn rederive(&mut self, f: usize, step: &StepDelta) {
        let threshold = self.threshold(f as u32);
        let (Some(model), Some(hist)) = (self.models.get_mut(f), self.fine.global.get(f)) else {
            return;
        };
        if hist.count() == 0 {
            return;
        }
        self.kernel.derive(model, hist, step, threshold);
    }

    /// The sharing round's merge: the models the other ranks derived,
    /// decoded on the workers (each touches only its own function's
    /// model).
    fn decode_shared(&mut self, reduced: &Wire) {
        let pool = self.pool.as_deref().filter(|p| p.current_num_threads() > 1);
        let (kernel, models) = (&self.kernel, &mut self.models);
        let received = self.sharing.take_received(reduced);
        let functions: Vec<usize> = received.iter().map(|r| r.0 as usize).collect();
        let global = &self.fine.global;
        let decode = |((f, words), model): ((u32, &[u64]), Option<&mut K::Model>)| {
            let count = global.get(f as usize).map_or(0, FineHist::count);
            if let Some(model) = model {
                kernel.decode(model, count, words);
            }
        };
        let jobs = received.into_iter().zip(many_mut(models, &functions));
        match pool {
            Some(pool) if functions.len() > 1 => pool.install(|| {
                jobs.collect::<Vec<_>>()
                    .into_par_iter()
                    .with_min_len(64)
                    .for_each(decode)
            }),
            _ => jobs.for_each(decode),
        }
    }

    /// Puts this rank's newly derived models (`changed`) on the sharing
    /// round: encoded in chunks on the workers, joined in deal order.
    fn share_own(&mut self) {
        let pool = self.pool.as_deref().filter(|p| p.current_num_threads() > 1);
        let (kernel, models, global) = (&self.kernel, &self.models, &self.fine.global);
        let encode = |fs: &[usize]| {
            let mut out = Vec::new();
            for &f in fs {
                let count = global.get(f).map_or(0, FineHist::count);
                push_framed(&mut out, |out| kernel.encode(&models[f], count, out));
            }
            out
        };
        let changed = &self.changed;
        let encoded: Vec<Vec<u64>> = match pool {
            Some(pool) if changed.len() > ENCODE_CHUNK => {
                pool.install(|| changed.par_chunks(ENCODE_CHUNK).map(encode).collect())
            }
            _ => vec![encode(changed)],
        };
        for framed in &encoded {
            self.sharing.append_own(framed);
        }
        self.sharing.start();
    }
}

impl<K: Kernel> Detector for BinnedDetector<K> {
    fn name(&self) -> &'static str {
        self.kernel.name()
    }

    fn ensure_functions(&mut self, n: usize) {
        self.fine.ensure_functions(n);
        if self.models.len() < n {
            let empty = self.kernel.empty_model();
            self.models.resize(n, empty);
        }
    }

    #[inline]
    fn observe(&mut self, function: u32, value: u64) {
        self.fine.observe(function, value);
    }

    fn set_active(&mut self, active: Option<&[u32]>) {
        self.fine.set_active(active);
    }

    fn take_partial(&mut self) -> Wire {
        self.fine.take_partial(self.pool.as_deref())
    }

    fn set_ranks(&mut self, rank: usize, ranks: usize) {
        self.sharing.set_ranks(rank, ranks);
        self.fine.set_single_rank(ranks == 1);
    }

    fn set_pool(&mut self, pool: Arc<rayon::ThreadPool>) {
        self.pool = Some(pool);
    }

    fn stream_partial(&self) -> Option<StreamPartial> {
        Some(StreamPartial::Fine(Default::default()))
    }

    fn absorb(&mut self, share: &StreamPartial) {
        if let StreamPartial::Fine(t) = share {
            self.fine.absorb(t);
        }
    }

    fn merge_reduced(&mut self, reduced: &Wire) {
        let (kernel, models, sharing) = (&mut self.kernel, &mut self.models, &mut self.sharing);
        let workers = &mut self.workers;
        let pool = self.pool.as_deref().filter(|p| p.current_num_threads() > 1);
        if sharing.awaiting() {
            self.decode_shared(reduced);
            return;
        }
        let share = sharing.enabled() && kernel.shares_models();
        let Some(chunks) = self.fine.merge_round(reduced, pool) else {
            return;
        };
        // Which functions this rank derives (with sharing, those dealt to
        // it), in the merge's order: dealt one after the other, as every
        // rank deals them.
        let changed = &mut self.changed;
        changed.clear();
        let mut derives = Vec::with_capacity(chunks.len() * MERGE_CHUNK);
        for c in &chunks {
            for (k, &f) in c.functions().iter().enumerate() {
                let mine = c.has_data(k) && f < models.len() && (!share || sharing.deal(f as u32));
                if mine {
                    changed.push(f);
                }
                derives.push(mine);
            }
        }
        let (thresholds, default) = (&self.threshold_of, kernel.default_threshold());
        let (labelled, need) = (&self.labelled, self.min_count.max(2));
        // A chunk's merge and derivations touch only its own functions'
        // histograms and models (the same stretch of functions), so chunks
        // run on the worker threads (each with its own kernel's buffers)
        // with the same result as one after the other. Each returns its
        // functions that now have enough executions to be labelled and did
        // not before (a few, in the first steps of a function).
        let stretches = stretches_mut(models, chunks.iter().map(StepChunk::range));
        let mut jobs = Vec::with_capacity(chunks.len());
        let mut at = 0;
        for (chunk, stretch) in chunks.into_iter().zip(stretches) {
            let n = chunk.functions().len();
            jobs.push((chunk, stretch, &derives[at..at + n]));
            at += n;
        }
        let work = |k: &mut K, d: &mut StepDelta, (chunk, stretch, mine): MergeJob<'_, K>| {
            let (models, base) = stretch;
            let mut now_labelled = Vec::new();
            for (mut part, &mine) in chunk.into_parts().zip(mine) {
                let merged = part.merge(d);
                let f = part.function;
                if part.hist.count() >= need && !bits::contains(labelled, f as u32) {
                    now_labelled.push(f as u32);
                }
                let model = f.checked_sub(base).and_then(|i| models.get_mut(i));
                if let (true, true, Some(model)) = (merged, mine, model) {
                    k.derive(model, part.hist, d, threshold_in(thresholds, f, default));
                }
            }
            now_labelled
        };
        let now_labelled: Vec<Vec<u32>> = match pool {
            Some(pool) if jobs.len() > 1 => {
                let threads = pool.current_num_threads();
                if workers.len() != threads {
                    *workers = (0..threads)
                        .map(|_| Mutex::new((kernel.clone(), StepDelta::default())))
                        .collect();
                }
                let workers = &*workers;
                pool.install(|| {
                    jobs.into_par_iter()
                        .map(|job| {
                            // Each worker has its own: the lock is never
                            // contended (a job calls no parallel work that
                            // could start another job on this thread).
                            let i = rayon::current_thread_index().unwrap_or(0) % threads;
                            let mut mine =
                                workers[i].lock().unwrap_or_else(PoisonError::into_inner);
                            let (k, d) = &mut *mine;
                            work(k, d, job)
                        })
                        .collect()
                })
            }
            _ => {
                let d = &mut self.delta;
                jobs.into_iter().map(|job| work(kernel, d, job)).collect()
            }
        };
        for f in now_labelled.into_iter().flatten() {
            bits::insert(&mut self.labelled, f);
        }
        if share {
            self.share_own();
        }
    }

    fn next_round(&mut self) -> Option<Wire> {
        self.fine.next_round().or_else(|| self.sharing.next_round())
    }

    fn set_function_threshold(&mut self, function: u32, value: f64) {
        let i = function as usize;
        if self.threshold_of.len() <= i {
            self.threshold_of.resize(i + 1, None);
        }
        self.threshold_of[i] = Some(value);
        // Normally set before the function has data; if not, the model is
        // re-derived at once (as if this step had added nothing).
        self.rederive(i, &StepDelta::default());
    }

    #[inline]
    fn label(&self, function: u32, value: u64) -> Verdict {
        let f = function as usize;
        let enough = bits::contains(&self.labelled, function);
        match self.models.get(f) {
            Some(m) if enough => self.kernel.judge(m, value),
            _ => Verdict {
                label: Label::Unlabeled,
                score: 0.0,
            },
        }
    }

    fn model_json(&self, function: u32) -> serde_json::Value {
        let f = function as usize;
        let empty = FineHist::default();
        let h = self.fine.global.get(f).unwrap_or(&empty);
        let mut v = moments_json(self.kernel.name(), &h.moments);
        v["threshold"] = self.threshold(function).into();
        v["fine_histogram"] = fine_json(h);
        if let Some(t) = self.fine.traffic.get(f) {
            v["fine_histogram"]["steps_merged"] = t.steps.into();
            v["fine_histogram"]["groups_merged"] = t.groups.into();
        }
        if let (Some(model), Some(obj)) = (self.models.get(f), v.as_object_mut()) {
            if let serde_json::Value::Object(extra) = self.kernel.json(model) {
                obj.extend(extra);
            }
        }
        v
    }

    fn expected(&self, function: u32, value: u64) -> f64 {
        let f = function as usize;
        match (self.models.get(f), self.fine.global.get(f)) {
            (Some(m), Some(h)) => self.kernel.expected(m, h, value),
            (None, Some(h)) => h.median(),
            _ => 0.0,
        }
    }

    fn is_slow(&self, function: u32, value: u64) -> bool {
        let mean = self.mean(function);
        match self.models.get(function as usize) {
            Some(m) => self.kernel.is_slow(m, value, mean),
            None => value as f64 > mean,
        }
    }

    fn mean(&self, function: u32) -> f64 {
        let f = function as usize;
        self.fine.global.get(f).map_or(0.0, |h| h.moments.mean())
    }

    fn model_snapshot(&self, function: u32) -> ModelSnapshot {
        let f = function as usize;
        let m = self
            .fine
            .global
            .get(f)
            .map(|h| h.moments)
            .unwrap_or_default();
        let mut s = ModelSnapshot::of_moments(&m, self.threshold(function));
        if let Some(model) = self.models.get(f) {
            self.kernel.snapshot(model, &mut s);
        }
        s
    }

    fn hist_len(&self, function: u32) -> usize {
        self.models
            .get(function as usize)
            .map_or(0, |m| self.kernel.hist_len(m))
    }

    fn count(&self, function: u32) -> u64 {
        self.fine
            .global
            .get(function as usize)
            .map_or(0, |h| h.count())
    }

    fn digest(&self) -> u64 {
        // One function's words at a time into the running hash.
        let mut hash = Fnv1a::default();
        let mut words = Vec::new();
        for (h, m) in self.fine.global.iter().zip(&self.models) {
            words.clear();
            h.digest_words(&mut words);
            self.kernel.digest_words(m, &mut words);
            hash.write_words(&words);
        }
        hash.finish()
    }
}

/// The threshold of function `f`: its entry in `thresholds`, or `default`.
fn threshold_in(thresholds: &[Option<f64>], f: usize, default: f64) -> f64 {
    thresholds.get(f).copied().flatten().unwrap_or(default)
}

/// The fine histogram as JSON: its resolution and the non-empty buckets as
/// `[lowest µs, highest µs, count]`.
fn fine_json(h: &FineHist) -> serde_json::Value {
    let buckets: Vec<[u64; 3]> = h
        .counts
        .iter()
        .map(|(b, c)| {
            let (lo, hi) = bucket_bounds(b);
            [lo, hi, c]
        })
        .collect();
    serde_json::json!({
        "buckets_per_octave": 1u32 << SUB_BITS,
        "exact_below_us": 2u64 << SUB_BITS,
        "buckets": buckets,
    })
}

/// Bytes one rank contributes per function and step: round 1 (count, min,
/// max, group mask and the power sums' widths: 96 bytes), then round 2: 8
/// bytes per 32-bit limb of the power sums Σx..Σx⁴ (`sum_limbs`, the
/// widest rank's) and, per bucket group with data on any rank, its 16
/// counts in `lane_bits`-bit lanes (16 while the step's global count of
/// the function is below 2^16: 32 bytes).
pub fn payload_bytes_per_function(sum_limbs: usize, groups: usize, lane_bits: u32) -> usize {
    8 * (3 + ROUND1_OR_WORDS + sum_limbs) + groups * GROUP * lane_bits as usize / 8
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod testing;
