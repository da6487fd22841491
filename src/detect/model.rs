//! The model detector (`--algorithm model --models FILE_OR_DIR`): an
//! execution of a function that has a performance model is judged by how
//! far its runtime lies from what the model predicts for *its* inputs
//! (message sizes, counters, ...), not from the function's other
//! executions — a call that moves ten times the data may take ten times as
//! long without being an anomaly.
//!
//! For such an execution the pipeline computes the model's inputs from the
//! execution's features (`events::features`, the names of
//! `model::features`) and asks [`ModelDetector::prediction`] for the
//! prediction `p` of the model's target (`exclusive_us` or
//! `inclusive_us`); the value judged is the relative residual
//! `runtime / max(p, 1 µs)`, as an integer in parts per million so that the
//! statistics stay exact and every AD rank holds the same bits. Those
//! ratios are judged like SSTD judges runtimes: an anomaly lies outside
//! `mean ± σ·stddev` of all the function's ratios so far (`--sigma`, and
//! `--direction`: slow is a ratio above the mean). Functions without a
//! model go to the fallback detector (`--model-fallback`, default modal),
//! which sees only them, unchanged.
//!
//! One reduction carries both: the residual statistics' words first, then
//! the fallback's (whose further rounds, for the histogram detectors, follow
//! alone).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context};

use super::sstd::{Sstd, SstdParams};
use super::stats::exact::MOMENT_SUM_WORDS;
use super::{fnv1a, Detector, ModelSnapshot, Prediction, Predictor, Verdict, Wire};
use crate::model::features::{self, FIXED};
use crate::model::format::json;
use crate::model::library::{Index, ModelLibrary, INDEX};
use crate::model::model::Model;

/// Prefix of counter feature names (`counter:<name>`).
const COUNTER_PREFIX: &str = "counter:";

/// Where one model input comes from.
#[derive(Debug, Clone, PartialEq)]
enum Input {
    /// A fixed feature, by its position in [`FIXED`].
    Fixed(usize),
    /// A counter, by name; its global index once the name is agreed.
    Counter(String, Option<u32>),
}

/// One function's model, ready to evaluate.
#[derive(Debug, Clone)]
struct Plan {
    function: String,
    model: Model,
    /// Position of the target in [`FIXED`].
    target: usize,
    inputs: Vec<Input>,
    /// The model as JSON text (what the provenance file keeps).
    json: String,
}

/// Inputs gathered on the stack (models are small; bigger ones take a
/// vector).
const STACK: usize = 16;

/// A model the detector uses, as the provenance file records it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDocument {
    /// The traced function.
    pub function: String,
    /// The modelled runtime (`exclusive_us` or `inclusive_us`).
    pub target: String,
    /// The model's input metrics, in order.
    pub metrics: Vec<String>,
    /// The model in the project's JSON form.
    pub json: String,
}

/// The model detector.
pub struct ModelDetector {
    plans: Vec<Plan>,
    by_name: HashMap<String, u32>,
    /// Plan of each global function (`None`: judged by the fallback).
    plan_of: Vec<Option<u32>>,
    /// The statistics of the ratios (ppm) of modelled functions.
    residual: Sstd,
    fallback: Box<dyn Detector>,
    /// Lengths of the residual part of this step's first wire.
    split: [usize; 4],
    /// The next merge is a further round of the fallback alone.
    fallback_round: bool,
}

/// The file each function's model came from, for messages: the index
/// entry's file in a model directory, else the one file.
fn model_files(path: &Path) -> HashMap<String, String> {
    let mut files = HashMap::new();
    if path.is_dir() {
        let index = path.join(INDEX);
        if let Some(i) = std::fs::read_to_string(&index)
            .ok()
            .and_then(|t| serde_json::from_str::<Index>(&t).ok())
        {
            for e in i.models {
                files.insert(e.function, path.join(e.file).display().to_string());
            }
        }
    }
    files
}

impl ModelDetector {
    /// Loads the models of `path` (a directory with `index.json`, or one
    /// JSON model naming its function) and checks them: every input metric
    /// must be a feature and the target a runtime. `sigma` and `min_count`
    /// are those of the residual statistics; `fallback` judges the
    /// functions without a model.
    pub fn load(
        path: &Path,
        sigma: f64,
        min_count: u64,
        fallback: Box<dyn Detector>,
    ) -> anyhow::Result<Self> {
        let library = ModelLibrary::load(path)
            .map_err(anyhow::Error::new)
            .with_context(|| format!("--models {}", path.display()))?;
        let files = model_files(path);
        let mut plans = Vec::new();
        for (function, model) in library.models {
            let file = files
                .get(&function)
                .cloned()
                .unwrap_or_else(|| path.display().to_string());
            plans.push(
                Self::plan(function.clone(), model)
                    .with_context(|| format!("model file {file} (function {function:?})"))?,
            );
        }
        Self::new(plans, sigma, min_count, fallback)
    }

    /// The detector of `models` (function name, model), for tests and
    /// other front ends.
    pub fn with_models(
        models: Vec<(String, Model)>,
        sigma: f64,
        min_count: u64,
        fallback: Box<dyn Detector>,
    ) -> anyhow::Result<Self> {
        let mut plans = Vec::new();
        for (function, model) in models {
            plans.push(
                Self::plan(function.clone(), model)
                    .with_context(|| format!("model of function {function:?}"))?,
            );
        }
        Self::new(plans, sigma, min_count, fallback)
    }

    fn new(
        plans: Vec<Plan>,
        sigma: f64,
        min_count: u64,
        fallback: Box<dyn Detector>,
    ) -> anyhow::Result<Self> {
        if !(sigma.is_finite() && sigma > 0.0) {
            bail!("--sigma must be a positive number, got {sigma}");
        }
        let by_name = plans
            .iter()
            .enumerate()
            .map(|(i, p)| (p.function.clone(), i as u32))
            .collect();
        Ok(ModelDetector {
            plans,
            by_name,
            plan_of: Vec::new(),
            residual: Sstd::new(SstdParams { sigma, min_count }),
            fallback,
            split: [0; 4],
            fallback_round: false,
        })
    }

    /// Checks one model and maps its inputs to features.
    fn plan(function: String, model: Model) -> anyhow::Result<Plan> {
        model.validate().map_err(anyhow::Error::msg)?;
        let target = model
            .target
            .clone()
            .unwrap_or_else(|| features::EXCLUSIVE_US.to_owned());
        let target = match target.as_str() {
            features::EXCLUSIVE_US => 0,
            features::INCLUSIVE_US => 1,
            other => bail!(
                "the model's target {other:?} is not a runtime the detector can judge ({} or {})",
                features::EXCLUSIVE_US,
                features::INCLUSIVE_US
            ),
        };
        let mut inputs = Vec::new();
        for m in &model.metrics {
            if let Some(i) = FIXED.iter().position(|f| f == m) {
                inputs.push(Input::Fixed(i));
            } else if let Some(c) = m.strip_prefix(COUNTER_PREFIX).filter(|c| !c.is_empty()) {
                inputs.push(Input::Counter(c.to_owned(), None));
            } else {
                bail!(
                    "input metric {m:?} is not a feature of an execution (features: {}, and counter:<name>)",
                    FIXED.join(", ")
                );
            }
        }
        Ok(Plan {
            json: json::write(&model),
            function,
            model,
            target,
            inputs,
        })
    }

    /// The model and its prediction for an execution of `function` with
    /// these fixed features (in [`FIXED`] order) and counters
    /// (`(global counter, value)`, sorted by counter): `None` when the
    /// function has no model or the prediction is not a finite number (the
    /// execution then goes to the fallback). A counter the execution did
    /// not sample reads 0.
    pub fn prediction(
        &self,
        function: u32,
        fixed: &[u64],
        counters: &[(u32, u64)],
    ) -> Option<Prediction> {
        let plan = &self.plans[self.plan_of.get(function as usize).copied().flatten()? as usize];
        let value = |i: &Input| match i {
            Input::Fixed(k) => fixed.get(*k).copied().unwrap_or(0) as f64,
            Input::Counter(_, Some(c)) => counters
                .binary_search_by_key(c, |&(id, _)| id)
                .map_or(0.0, |k| counters[k].1 as f64),
            Input::Counter(_, None) => 0.0,
        };
        let runtime = fixed.get(plan.target).copied().unwrap_or(0);
        let n = plan.inputs.len();
        // This runs for every execution of a modelled function: the inputs
        // of the usual small model are gathered without allocating.
        let predicted = if n <= STACK {
            let mut x = [0.0f64; STACK];
            for (slot, i) in x.iter_mut().zip(&plan.inputs) {
                *slot = value(i);
            }
            plan.model.predict_one(&x[..n])
        } else {
            let x: Vec<f64> = plan.inputs.iter().map(value).collect();
            plan.model.predict_one(&x)
        };
        Prediction::of(runtime, predicted)
    }

    fn modelled(&self, function: u32) -> bool {
        self.plan_of
            .get(function as usize)
            .is_some_and(Option::is_some)
    }
}

impl Predictor for ModelDetector {
    fn function_named(&mut self, function: u32, name: &str) {
        let i = function as usize;
        if self.plan_of.len() <= i {
            self.plan_of.resize(i + 1, None);
        }
        self.plan_of[i] = self.by_name.get(name).copied();
        if let Some(p) = self.fallback.predictor_mut() {
            p.function_named(function, name);
        }
    }

    fn counter_named(&mut self, counter: u32, name: &str) {
        for p in &mut self.plans {
            for input in &mut p.inputs {
                if let Input::Counter(n, id) = input {
                    if n == name {
                        *id = Some(counter);
                    }
                }
            }
        }
        if let Some(p) = self.fallback.predictor_mut() {
            p.counter_named(counter, name);
        }
    }

    #[inline]
    fn predicts(&self, function: u32) -> bool {
        self.modelled(function)
    }

    fn predict(&self, function: u32, fixed: &[u64], counters: &[(u32, u64)]) -> Option<Prediction> {
        self.prediction(function, fixed, counters)
    }

    fn model_documents(&self) -> Vec<ModelDocument> {
        self.plans
            .iter()
            .map(|p| ModelDocument {
                function: p.function.clone(),
                target: FIXED[p.target].to_owned(),
                metrics: p.model.metrics.clone(),
                json: p.json.clone(),
            })
            .collect()
    }
}

impl Detector for ModelDetector {
    fn name(&self) -> &'static str {
        "model"
    }

    fn ensure_functions(&mut self, n: usize) {
        if self.plan_of.len() < n {
            self.plan_of.resize(n, None);
        }
        self.residual.ensure_functions(n);
        self.fallback.ensure_functions(n);
    }

    fn predictor(&self) -> Option<&dyn Predictor> {
        Some(self)
    }

    fn predictor_mut(&mut self) -> Option<&mut dyn Predictor> {
        Some(self)
    }

    #[inline]
    fn observe(&mut self, function: u32, value: u64) {
        if self.modelled(function) {
            self.residual.observe(function, value);
        } else {
            self.fallback.observe(function, value);
        }
    }

    fn set_active(&mut self, active: Option<&[u32]>) {
        self.residual.set_active(active);
        self.fallback.set_active(active);
    }

    fn take_partial(&mut self) -> Wire {
        let mut w = self.residual.take_partial();
        let fb = self.fallback.take_partial();
        self.split = [w.sum.len(), w.min.len(), w.max.len(), w.or.len()];
        w.sum.extend(fb.sum);
        w.min.extend(fb.min);
        w.max.extend(fb.max);
        w.or.extend(fb.or);
        w
    }

    fn merge_reduced(&mut self, reduced: &Wire) {
        if self.fallback_round {
            self.fallback.merge_reduced(reduced);
            return;
        }
        let [s, mn, mx, o] = self.split;
        // A wire of another shape cannot come from this program's ranks
        // (every rank has the same functions); never index past it.
        if reduced.sum.len() < s
            || reduced.min.len() < mn
            || reduced.max.len() < mx
            || reduced.or.len() < o
            || s != mn * MOMENT_SUM_WORDS
        {
            return;
        }
        let mine = Wire {
            sum: reduced.sum[..s].to_vec(),
            min: reduced.min[..mn].to_vec(),
            max: reduced.max[..mx].to_vec(),
            or: reduced.or[..o].to_vec(),
            gather: None,
        };
        let rest = Wire {
            sum: reduced.sum[s..].to_vec(),
            min: reduced.min[mn..].to_vec(),
            max: reduced.max[mx..].to_vec(),
            or: reduced.or[o..].to_vec(),
            // The first round gathers nothing (later rounds go to the
            // fallback whole).
            gather: None,
        };
        self.residual.merge_reduced(&mine);
        self.fallback.merge_reduced(&rest);
    }

    fn set_ranks(&mut self, rank: usize, ranks: usize) {
        // The residual model's SSTD has no derivation to deal out.
        self.fallback.set_ranks(rank, ranks);
    }

    fn set_pool(&mut self, pool: std::sync::Arc<rayon::ThreadPool>) {
        self.fallback.set_pool(pool);
    }

    fn next_round(&mut self) -> Option<Wire> {
        let next = self.fallback.next_round();
        self.fallback_round = next.is_some();
        next
    }

    fn set_function_threshold(&mut self, function: u32, value: f64) {
        if self.modelled(function) {
            self.residual.set_function_threshold(function, value);
        } else {
            self.fallback.set_function_threshold(function, value);
        }
    }

    #[inline]
    fn label(&self, function: u32, value: u64) -> Verdict {
        if self.modelled(function) {
            self.residual.label(function, value)
        } else {
            self.fallback.label(function, value)
        }
    }

    fn expected(&self, function: u32, value: u64) -> f64 {
        if self.modelled(function) {
            // A ratio to the prediction: the model expects 1.
            1e6
        } else {
            self.fallback.expected(function, value)
        }
    }

    fn is_slow(&self, function: u32, value: u64) -> bool {
        if self.modelled(function) {
            self.residual.is_slow(function, value)
        } else {
            self.fallback.is_slow(function, value)
        }
    }

    fn model_json(&self, function: u32) -> serde_json::Value {
        let Some(p) = self.plan_of.get(function as usize).copied().flatten() else {
            let mut j = self.fallback.model_json(function);
            if let Some(o) = j.as_object_mut() {
                o.insert("judged_by".into(), "fallback of model".into());
            }
            return j;
        };
        let plan = &self.plans[p as usize];
        let mut j = self.residual.model_json(function);
        if let Some(o) = j.as_object_mut() {
            o.insert("algorithm".into(), "model".into());
            o.insert(
                "judged".into(),
                "runtime / max(prediction, 1 µs), in ppm".into(),
            );
            o.insert("target".into(), FIXED[plan.target].into());
            // The statistics above are of the ratio in ppm; as ratios too.
            let snap = self.residual.model_snapshot(function);
            o.insert("mean_ratio".into(), (snap.mean / 1e6).into());
            o.insert("stddev_ratio".into(), (snap.stddev / 1e6).into());
            let model: serde_json::Value =
                serde_json::from_str(&plan.json).unwrap_or(serde_json::Value::Null);
            o.insert("model".into(), model);
        }
        j
    }

    fn model_snapshot(&self, function: u32) -> ModelSnapshot {
        if self.modelled(function) {
            self.residual.model_snapshot(function)
        } else {
            self.fallback.model_snapshot(function)
        }
    }

    fn mean(&self, function: u32) -> f64 {
        if self.modelled(function) {
            self.residual.mean(function)
        } else {
            self.fallback.mean(function)
        }
    }

    fn hist_len(&self, function: u32) -> usize {
        if self.modelled(function) {
            self.residual.hist_len(function)
        } else {
            self.fallback.hist_len(function)
        }
    }

    fn count(&self, function: u32) -> u64 {
        if self.modelled(function) {
            self.residual.count(function)
        } else {
            self.fallback.count(function)
        }
    }

    fn digest(&self) -> u64 {
        fnv1a([self.residual.digest(), self.fallback.digest()])
    }
}

#[cfg(test)]
mod tests;
