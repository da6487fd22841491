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

use super::{Pipeline, StepWork};
use crate::detect::Detector;
use crate::events::features::{counter_features, fixed_features};
use crate::events::Execution;
use crate::run::streams::OwnedStream;

impl Pipeline<'_> {
    /// Builds the executions of every stream that delivered a step.
    pub(in crate::run) fn build(&mut self, work: &mut StepWork) {
        let st = &mut self.state;
        for s in &mut st.streams {
            s.out.clear();
        }
        let use_inclusive = st.opts.use_inclusive;
        let modelling = st.detector.predictor().is_some();
        let (filter, detector, profiles, profiling, modelled, touched) = (
            &st.filter,
            &mut st.detector,
            &mut st.profiles,
            st.profiling,
            &st.modelled,
            &mut st.touched,
        );
        let is_modelled = |f: u32| modelling && modelled.get(f as usize).copied().unwrap_or(false);
        for (i, trace) in std::mem::take(&mut work.traces) {
            let s = &mut st.streams[i];
            s.modelled.clear();
            // Executions come in the order of `out.executions`: counting
            // them gives each one's index there.
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
                if profiling {
                    profiles.profile(e.function, e.inclusive(), e.exclusive);
                }
            };
            s.calls
                .build_step_into(work.step, &trace, &s.map, &mut s.out, &mut on_complete);
            if modelling {
                predict_stream(s, work.step, detector.as_mut(), use_inclusive);
            }
            if s.out.issues.has_problems() && !st.opts.quiet {
                eprintln!("warning: {}", s.out.issues.summary(&s.name(), work.step));
            }
            st.issues.merge(&s.out.issues);
            s.count_event_issues();
            // Kept until the next request: the outputs see its names.
            s.spare = Some(trace);
            work.active.push(i);
        }
        if st.profiling {
            for s in &st.streams {
                for c in s.out.counters.iter().chain(&s.out.node_state) {
                    st.profiles.counter(c.counter, c.value);
                }
            }
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
