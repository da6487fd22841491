//! Stage 3, build: each stream's rows are replayed on its threads' call
//! stacks into completed executions (inclusive and exclusive time, messages,
//! counters, GPU correlation; open calls carry over to the next step).
//!
//! Each execution goes into this step's partial model (and the run's
//! profiles) the moment it completes, while it is in cache: a separate pass
//! over a big step's executions would be a trip through memory. The stage
//! ends with the counters' profiles and the partial model taken for the
//! reduction.
//!
//! With the model detector, an execution of a function that has a model is
//! judged by its features, which live in the step's arenas: its prediction
//! is made in a pass over the stream's executions right after its build
//! (only those of modelled functions are touched), and its ratio is what
//! goes into the partial model.

use crate::detect::Detector;
use crate::events::features::{counter_features, fixed_features};
use crate::events::{EventIssues, Execution};
use crate::run::options::RunOptions;
use crate::run::pipeline::{ModelState, Profiling};
use crate::run::streams::OwnedStream;
use crate::trace::step::TraceStep;

/// Builds the executions of every stream that delivered step `step`, each
/// fed to the partial model (and the profiles) as it completes; the
/// streams' event issues go to `issues`. Returns the streams that
/// delivered, in order.
pub(super) fn build(
    opts: &RunOptions,
    step: u64,
    traces: Vec<(usize, TraceStep)>,
    streams: &mut [OwnedStream],
    (model, profiling, issues): (&mut ModelState, &mut Profiling, &mut EventIssues),
) -> Vec<usize> {
    let mut active = Vec::with_capacity(traces.len());
    for s in streams.iter_mut() {
        s.out.clear();
    }
    let use_inclusive = opts.use_inclusive;
    let modelling = model.detector.predictor().is_some();
    let ModelState {
        filter,
        detector,
        touched,
        modelled,
        ..
    } = model;
    let (profiles, profiling_on) = (&mut profiling.profiles, profiling.on);
    let is_modelled = |f: u32| modelling && modelled.get(f as usize).copied().unwrap_or(false);
    for (i, trace) in traces {
        let s = &mut streams[i];
        s.modelled.clear();
        // Executions come in the order of `out.executions`: counting them
        // gives each one's index there.
        let mut index = 0u32;
        let noted = &mut s.modelled;
        let mut on_complete = |e: &Execution| {
            if !filter.is_ignored(e.function) {
                if is_modelled(e.function) {
                    noted.push(index);
                } else {
                    detector.observe(e.function, e.judged_runtime(use_inclusive));
                }
                touched.mark(e.function);
            }
            index += 1;
            if profiling_on {
                profiles.profile(e.function, e.inclusive(), e.exclusive);
            }
        };
        s.calls
            .build_step_into(step, &trace, &s.map, &mut s.out, &mut on_complete);
        if modelling {
            predict_stream(s, step, detector.as_mut(), use_inclusive);
        }
        if s.out.issues.has_problems() && !opts.quiet {
            eprintln!("warning: {}", s.out.issues.summary(&s.name(), step));
        }
        issues.merge(&s.out.issues);
        s.count_event_issues();
        // Kept until the next request: the outputs see its names.
        s.keep_rows(trace);
        active.push(i);
    }
    if profiling_on {
        for s in streams.iter() {
            for c in s.out.counters.iter().chain(&s.out.node_state) {
                profiles.counter(c.counter, c.value);
            }
        }
    }
    active
}

/// The model detector's predictions for a stream's executions of modelled
/// functions in this step (noted by the build), each fed to the partial
/// model: the ratio for those it predicts, the runtime for one whose
/// prediction failed (not a finite number; judged by the fallback).
fn predict_stream(
    s: &mut OwnedStream,
    step: u64,
    detector: &mut dyn Detector,
    use_inclusive: bool,
) {
    s.predictions.clear();
    let mut counters = Vec::new();
    for &k in &s.modelled {
        let Some(e) = s.out.executions.get(k as usize) else {
            continue;
        };
        let fixed = fixed_features(e, &s.out, step);
        counter_features(e, &s.out, &mut counters);
        let prediction = detector
            .predictor()
            .and_then(|m| m.predict(e.function, &fixed, &counters));
        match prediction {
            Some(p) => {
                detector.observe(e.function, p.ratio_ppm);
                s.predictions.push((k, p));
            }
            None => detector.observe(e.function, e.judged_runtime(use_inclusive)),
        }
    }
}
