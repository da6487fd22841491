//! Stage 6, link: the step's slow anomalies of every stream become
//! incident nodes (with the keys of their messages and their bytes against
//! the usual; each stream's on a worker thread), the AD ranks exchange them in one allgather, and every rank
//! feeds the same sorted list to its incident tracker, which links waits to
//! the delays that caused them (`incidents::tau`). Only anomalous
//! executions travel, so the exchange stays small.

use rayon::prelude::*;

use super::StepStreams;
use crate::detect::size_classes::sized;
use crate::detect::{Detector, Label, Prediction};
use crate::events::names::GlobalNames;
use crate::events::Execution;
use crate::incidents::tau::mpi_calls::classify;
use crate::incidents::tau::{CallClass, Judgement, Node, StreamLinks};
use crate::output::consumer::LateLabel;
use crate::run::pipeline::{Linking, ModelState, RunSetup};
use crate::run::streams::OwnedStream;
use crate::util::disjoint::many_mut;

/// Links the step's anomalies (and the `late` ones of earlier steps) into
/// incidents (collective): every rank's nodes are gathered and fed, in
/// the same order everywhere, to the tracker in `links`.
pub(super) fn link(
    run: &RunSetup<'_>,
    this: StepStreams<'_>,
    late: &[LateLabel],
    streams: &mut [OwnedStream],
    (model, names): (&ModelState, &GlobalNames),
    links: &mut Linking,
) {
    let classes = &mut links.call_classes;
    while classes.len() < names.functions.len() {
        classes.push(classify(names.functions.name(classes.len() as u32)));
    }
    let judging = (model.detector.as_ref(), run.opts.use_inclusive);
    // Each stream's messages and anomalies are its own: they are numbered
    // and encoded on the worker threads, then joined in stream order.
    let classes = &links.call_classes[..];
    let step = this.step;
    let per_stream: Vec<Vec<u64>> = run.pool.install(|| {
        many_mut(streams, this.active)
            .into_par_iter()
            .map(|s| {
                let mut words = Vec::new();
                if let Some(s) = s {
                    s.links.observe_step(&s.out);
                    s.widen_span();
                    step_nodes(step, s, judging, classes, &mut words);
                }
                words
            })
            .collect()
    });
    // This rank's rank time so far goes first, so that every rank knows
    // the run's and the floor it makes.
    let span: u64 = streams.iter().map(|s| s.covered_us()).sum();
    let mut words = Vec::with_capacity(1 + per_stream.iter().map(Vec::len).sum::<usize>());
    words.push(span);
    per_stream.iter().for_each(|w| words.extend_from_slice(w));
    late_nodes(this.step, late, judging, classes, &mut words);
    let gathered = run.coll.allgather_words(&words);
    links
        .tracker
        .set_rank_time(gathered.iter().filter_map(|w| w.first()).sum());
    let nodes: Vec<Node> = gathered
        .iter()
        .flat_map(|w| Node::decode_all(w.get(1..).unwrap_or(&[])))
        .collect();
    links.tracker.step(this.step, nodes);
}

/// The nodes of the slow anomalies of stream `s` in step `step`, encoded
/// into `words`.
fn step_nodes(
    step: u64,
    s: &OwnedStream,
    (detector, inclusive): (&dyn Detector, bool),
    classes: &[CallClass],
    words: &mut Vec<u64>,
) {
    let program = s.spec.program;
    for (k, (e, v)) in s.out.executions.iter().zip(&s.verdicts).enumerate() {
        if v.label != Label::Anomaly {
            continue;
        }
        let prediction = Prediction::of_execution(&s.predictions, k);
        let Some((runtime, expected)) = judged(detector, e, prediction, inclusive) else {
            continue;
        };
        let judgement = Judgement {
            class: classes[e.function as usize],
            runtime_us: runtime,
            expected_us: expected,
            score: v.score,
            labelled_step: step,
        };
        s.links.node(program, &s.out, e, judgement).encode(words);
    }
}

/// The nodes of the slow anomalies of earlier steps labelled in step
/// `step`, encoded into `words`.
fn late_nodes(
    step: u64,
    late: &[LateLabel],
    (detector, inclusive): (&dyn Detector, bool),
    classes: &[CallClass],
    words: &mut Vec<u64>,
) {
    for l in late {
        let e = &l.execution;
        let Some((runtime, expected)) = judged(detector, e, l.prediction, inclusive) else {
            continue;
        };
        let judgement = Judgement {
            class: classes
                .get(e.function as usize)
                .copied()
                .unwrap_or(CallClass::Compute),
            runtime_us: runtime,
            expected_us: expected,
            score: l.verdict.score,
            labelled_step: step,
        };
        StreamLinks::late_node(e.program, e, judgement).encode(words);
    }
}

/// The runtime an anomalous execution was judged at and what its model
/// expected of it (µs); `None` when it was not slower than expected (a
/// fast anomaly costs no time).
fn judged(
    detector: &dyn Detector,
    e: &Execution,
    prediction: Option<Prediction>,
    inclusive: bool,
) -> Option<(u64, u64)> {
    let runtime = e.judged_runtime(inclusive);
    let expected = match prediction {
        Some(p) => p.predicted_us,
        None => detector.expected(sized(e.function, e.size_class), runtime),
    };
    let expected = if expected.is_finite() && expected > 0.0 {
        expected.round() as u64
    } else {
        0
    };
    (runtime > expected).then_some((runtime, expected))
}
