//! Stage 5, label: executions held back in earlier steps are judged first,
//! in their original order, then every execution of the step; the outputs
//! see the late labels and each stream's labelled step as they are made.
//!
//! The step's verdicts are pure functions of the execution and the global
//! model, so the streams are judged in parallel on the rank's worker
//! threads; what is held, stored and counted is then decided on the main
//! thread in stream order, as it is shown to the outputs.

use rayon::prelude::*;

use crate::detect::{Label, Prediction};
use crate::util::disjoint::many_mut;

use super::StepStreams;
use crate::events::names::GlobalNames;
use crate::output::consumer::{LateLabel, Outputs};
use crate::run::held::{Disposition, HeldExecutions, LabelCounts};
use crate::run::options::RunOptions;
use crate::run::pipeline::ModelState;
use crate::run::streams::OwnedStream;

/// What the label makes besides each stream's verdicts.
pub(super) struct Labelled {
    /// Executions that got a label, and anomalies among them.
    pub counts: LabelCounts,
    /// Anomalies of earlier steps labelled in this one (held back for a
    /// fuller model), for the incidents.
    pub late: Vec<LateLabel>,
}

/// Labels the held executions and every execution of the step against the
/// global model, showing the outputs each stream's labelled step.
pub(super) fn label(
    (opts, pool): (&RunOptions, &rayon::ThreadPool),
    this: StepStreams<'_>,
    (streams, held, model): (&mut [OwnedStream], &mut HeldExecutions, &ModelState),
    names: &GlobalNames,
    outputs: &mut Outputs,
) -> Labelled {
    let step = this.step;
    let mut counts = LabelCounts::default();
    let judge = |e: &_, p| model.judge(opts.use_inclusive, e, p);
    let late = held.judge_held(step, judge, &mut counts);
    outputs.late_labels(&late, names);
    let late_anomalies = late
        .iter()
        .filter(|l| l.verdict.label == crate::detect::Label::Anomaly && !l.rejudged)
        .copied()
        .collect();
    let use_inclusive = opts.use_inclusive;
    let judged: Vec<Option<JudgedStream>> = pool.install(|| {
        many_mut(streams, this.active)
            .into_par_iter()
            .map(|s| s.map(|s| judge_stream(s, model, use_inclusive)))
            .collect()
    });
    for (&i, judged) in this.active.iter().zip(judged) {
        let Some(judged) = judged else { continue };
        let s = &mut streams[i];
        counts.labelled += judged.normal;
        // Only unlabelled executions and anomalies may be held or stored,
        // in execution order, stream after stream: as if every execution
        // had been disposed of here.
        for k in judged.to_dispose {
            let k = k as usize;
            let (e, verdict) = (&s.out.executions[k], s.verdicts[k]);
            let prediction = Prediction::of_execution(&s.predictions, k);
            let disposition = held.dispose(e, prediction, step, step, verdict, &mut counts);
            s.settled[k] = disposition == Disposition::Settled;
        }
    }
    let steps: Vec<_> = this
        .active
        .iter()
        .map(|&i| streams[i].labelled(i, step))
        .collect();
    outputs.labelled_steps(&steps, names, pool);
    Labelled {
        counts,
        late: late_anomalies,
    }
}

/// What judging a stream's step on a worker thread leaves for the main
/// thread (the verdicts themselves go into the stream).
struct JudgedStream {
    /// How many executions are normal (labelled, final).
    normal: u64,
    /// Indices of the unlabelled and anomalous ones.
    to_dispose: Vec<u32>,
}

/// Judges every execution of a stream's step into `s.verdicts`, with
/// `s.settled` true for the normal ones (the others are decided by
/// `HeldExecutions::dispose`).
fn judge_stream(s: &mut OwnedStream, model: &ModelState, use_inclusive: bool) -> JudgedStream {
    let mut judged = JudgedStream {
        normal: 0,
        to_dispose: Vec::new(),
    };
    s.verdicts.clear();
    s.settled.clear();
    let mut predicted = s.predictions.iter().peekable();
    for (k, e) in s.out.executions.iter().enumerate() {
        let prediction = predicted.next_if(|p| p.0 as usize == k).map(|p| p.1);
        let verdict = model.judge(use_inclusive, e, prediction);
        let normal = verdict.label == Label::Normal;
        judged.normal += u64::from(normal);
        if !normal {
            judged.to_dispose.push(k as u32);
        }
        s.verdicts.push(verdict);
        s.settled.push(normal);
    }
    judged
}
