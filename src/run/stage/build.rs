//! Stage 3, build: each stream's rows are replayed on its threads' call
//! stacks into completed executions (inclusive and exclusive time, messages,
//! counters, GPU correlation; open calls carry over to the next step).
//!
//! The streams are built in parallel on the rank's worker threads: a
//! stream's call stacks, name map and output are its own. The executions
//! then go into this step's partial model (and the run's profiles) on the
//! main thread, stream by stream in stream order and each stream's in
//! completion order, so the partial model is the same for any number of
//! threads. The stage ends with the counters' profiles and the partial
//! model taken for the reduction.
//!
//! With the model detector, an execution of a function that has a model is
//! judged by its features, which live in the step's arenas: its prediction
//! is made in a pass over the stream's executions right after its build
//! (only those of modelled functions are touched), and its ratio is what
//! goes into the partial model.

use rayon::prelude::*;

use crate::detect::size_classes::class_of_bytes;
use crate::detect::Detector;
use crate::events::features::{counter_features, fixed_features};
use crate::events::{EventIssues, Execution};
use crate::run::options::RunOptions;
use crate::run::pipeline::{ModelState, Profiling};
use crate::run::streams::OwnedStream;
use crate::trace::step::TraceStep;

/// Builds the executions of every stream that delivered step `step` (in
/// parallel on `pool`), then feeds them to the partial model (and the
/// profiles) in order; the streams' event issues go to `issues`. Returns
/// the streams that delivered, in order.
pub(super) fn build(
    (opts, pool): (&RunOptions, &rayon::ThreadPool),
    step: u64,
    traces: Vec<(usize, TraceStep)>,
    streams: &mut [OwnedStream],
    (model, profiling, issues): (&mut ModelState, &mut Profiling, &mut EventIssues),
) -> Vec<usize> {
    for s in streams.iter_mut() {
        s.out.clear();
    }
    let mut work = delivering(streams, traces);
    let use_inclusive = opts.use_inclusive;
    let modelling = model.detector.predictor().is_some();
    // With a detector that takes a stream's share of the partial model,
    // each worker feeds its stream's executions as they complete.
    let sharing = !modelling && model.detector.stream_partial().is_some();
    let profiling_on = profiling.on;
    {
        let (detector, filter) = (model.detector.as_ref(), &model.filter);
        pool.install(|| {
            work.par_iter_mut().for_each(|(_, s, trace)| {
                let s = &mut **s;
                // The stream's shares of the last step were absorbed: the
                // worker empties them (a pass over every function the
                // stream ran), not the main thread.
                s.profile_share.clear();
                if !sharing {
                    s.calls
                        .build_step_into(step, trace, &s.map, &mut s.out, &mut |_| {});
                    if profiling_on {
                        profile_counters(s);
                    }
                    return;
                }
                let share = s.share.get_or_insert_with(|| {
                    detector
                        .stream_partial()
                        .expect("the detector gives shares (checked above)")
                });
                share.clear();
                let (functions, profile) = (&mut s.functions, &mut s.profile_share);
                let mut on_complete = |e: &Execution| {
                    if !filter.is_ignored(e.function) {
                        share.observe(e.function, e.judged_runtime(use_inclusive));
                        functions.mark(e.function);
                    }
                    if profiling_on {
                        profile.profile(e.function, e.inclusive(), e.exclusive);
                    }
                };
                s.calls
                    .build_step_into(step, trace, &s.map, &mut s.out, &mut on_complete);
                if profiling_on {
                    profile_counters(s);
                }
                classify_by_size(s, detector, filter, use_inclusive);
            });
        });
    }
    let mut active = Vec::with_capacity(work.len());
    for (i, s, trace) in work {
        if sharing {
            if let Some(share) = &s.share {
                model.detector.absorb(share);
            }
            model.detector.note_size_classes(&s.unknown_classes);
            for f in s.functions.take() {
                model.touched.mark(f);
            }
        } else {
            feed(s, model, profiling, modelling, use_inclusive);
        }
        if profiling.on {
            profiling.profiles.absorb(&s.profile_share);
        }
        if modelling {
            predict_stream(s, step, model.detector.as_mut(), use_inclusive);
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
    active
}

/// Adds the stream's counter values of the step to its share of the
/// profiles (on its worker thread; the moments are exact, so the rank's
/// profile is the same as if the main thread had added them).
fn profile_counters(s: &mut OwnedStream) {
    for c in s.out.counters.iter().chain(&s.out.node_state) {
        s.profile_share.counter(c.counter, c.value);
    }
}

/// Sets the size class of the stream's executions that moved messages,
/// and feeds each to its function's size class too, where that class has
/// an id (the others are noted for the next agreement); see
/// `detect::size_classes`.
fn classify_by_size(
    s: &mut OwnedStream,
    detector: &dyn Detector,
    filter: &crate::run::rules::FunctionFilter,
    use_inclusive: bool,
) {
    s.unknown_classes.clear();
    let out = &mut s.out;
    for &k in &out.with_comms {
        let Some(e) = out.executions.get_mut(k as usize) else {
            continue;
        };
        let bytes: u64 = e
            .attach
            .comms
            .of(&out.comms)
            .iter()
            .filter_map(|c| c.bytes)
            .fold(0u64, u64::saturating_add);
        e.size_class = class_of_bytes(bytes);
        if e.size_class == 0 || filter.is_ignored(e.function) {
            continue;
        }
        match (
            detector.size_key(e.function, e.size_class),
            s.share.as_mut(),
        ) {
            (Some(key), Some(share)) => {
                share.observe(key, e.judged_runtime(use_inclusive));
                s.functions.mark(key);
            }
            _ => s.unknown_classes.push((e.function, e.size_class)),
        }
    }
}

/// Each delivered step with its stream (`traces` is in stream order, as
/// the read delivers it), the streams borrowed apart so that they can be
/// built on different threads.
fn delivering(
    streams: &mut [OwnedStream],
    traces: Vec<(usize, TraceStep)>,
) -> Vec<(usize, &mut OwnedStream, TraceStep)> {
    let mut traces = traces.into_iter().peekable();
    let mut work = Vec::with_capacity(traces.len());
    for (i, s) in streams.iter_mut().enumerate() {
        if let Some((_, trace)) = traces.next_if(|(j, _)| *j == i) {
            work.push((i, s, trace));
        }
    }
    work
}

/// Feeds a built stream's executions, in the order they completed, to the
/// partial model (or notes them for the model detector's predictions),
/// marks their functions as touched and adds them to the profiles.
fn feed(
    s: &mut OwnedStream,
    model: &mut ModelState,
    profiling: &mut Profiling,
    modelling: bool,
    use_inclusive: bool,
) {
    let ModelState {
        filter,
        detector,
        touched,
        modelled,
        ..
    } = model;
    let is_modelled = |f: u32| modelling && modelled.get(f as usize).copied().unwrap_or(false);
    s.modelled.clear();
    for (index, e) in s.out.executions.iter().enumerate() {
        if !filter.is_ignored(e.function) {
            if is_modelled(e.function) {
                s.modelled.push(index as u32);
            } else {
                detector.observe(e.function, e.judged_runtime(use_inclusive));
            }
            touched.mark(e.function);
        }
        if profiling.on {
            profiling
                .profiles
                .profile(e.function, e.inclusive(), e.exclusive);
        }
    }
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
