//! Stage 6, link: the step's slow anomalies of every stream become
//! incident nodes (with the keys of their messages and their bytes against
//! the usual), the AD ranks exchange them in one allgather, and every rank
//! feeds the same sorted list to its incident tracker, which links waits to
//! the delays that caused them (`incidents::tau`). Only anomalous
//! executions travel, so the exchange stays small.

use super::{Pipeline, StepWork};
use crate::detect::{Detector, Label, Prediction};
use crate::events::Execution;
use crate::incidents::tau::mpi_calls::classify;
use crate::incidents::tau::{CallClass, Judgement, Node, StreamLinks};
use crate::run::pipeline::RunState;

impl Pipeline<'_> {
    /// Links the step's anomalies into incidents (collective).
    pub(in crate::run) fn link(&mut self, work: &StepWork) {
        let st = &mut self.state;
        let mut words = Vec::new();
        for &i in &work.active {
            let s = &mut st.streams[i];
            s.links.observe_step(&s.out);
            s.span = match (s.span, s.out.first_ts, s.out.last_ts) {
                (Some((a, b)), Some(f), Some(l)) => Some((a.min(f), b.max(l))),
                (None, Some(f), Some(l)) => Some((f, l)),
                (span, _, _) => span,
            };
        }
        let RunState {
            streams,
            detector,
            names,
            call_classes,
            opts,
            ..
        } = st;
        let n = names.functions.len();
        while call_classes.len() < n {
            call_classes.push(classify(names.functions.name(call_classes.len() as u32)));
        }
        let inclusive = opts.use_inclusive;
        for &i in &work.active {
            let s = &streams[i];
            let program = s.spec.program;
            for (k, (e, v)) in s.out.executions.iter().zip(&s.verdicts).enumerate() {
                if v.label != Label::Anomaly {
                    continue;
                }
                let prediction = Prediction::of_execution(&s.predictions, k);
                let Some((runtime, expected)) = judged(detector.as_ref(), e, prediction, inclusive)
                else {
                    continue;
                };
                let judgement = Judgement {
                    class: call_classes[e.function as usize],
                    runtime_us: runtime,
                    expected_us: expected,
                    score: v.score,
                    labelled_step: work.step,
                };
                s.links
                    .node(program, &s.out, e, judgement)
                    .encode(&mut words);
            }
        }
        for l in &work.late_anomalies {
            let e = &l.execution;
            let Some((runtime, expected)) = judged(detector.as_ref(), e, l.prediction, inclusive)
            else {
                continue;
            };
            let judgement = Judgement {
                class: call_classes
                    .get(e.function as usize)
                    .copied()
                    .unwrap_or(CallClass::Compute),
                runtime_us: runtime,
                expected_us: expected,
                score: l.verdict.score,
                labelled_step: work.step,
            };
            StreamLinks::late_node(e.program, e, judgement).encode(&mut words);
        }
        // This rank's rank time so far goes first, so that every rank
        // knows the run's and the floor it makes.
        let span: u64 = st
            .streams
            .iter()
            .filter_map(|s| s.span)
            .map(|(a, b)| b.saturating_sub(a))
            .sum();
        words.insert(0, span);
        let gathered = st.coll.allgather_words(&words);
        st.incidents
            .set_rank_time(gathered.iter().filter_map(|w| w.first()).sum());
        let nodes: Vec<Node> = gathered
            .iter()
            .flat_map(|w| Node::decode_all(w.get(1..).unwrap_or(&[])))
            .collect();
        st.incidents.step(work.step, nodes);
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
        None => detector.expected(e.function, runtime),
    };
    let expected = if expected.is_finite() && expected > 0.0 {
        expected.round() as u64
    } else {
        0
    };
    (runtime > expected).then_some((runtime, expected))
}
