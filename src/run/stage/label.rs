//! Stage 5, label: executions held back in earlier steps are judged first,
//! in their original order, then every execution of the step; the outputs
//! see the late labels and each stream's labelled step as they are made.

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
    opts: &RunOptions,
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
    for &i in this.active {
        let s = &mut streams[i];
        s.verdicts.clear();
        s.settled.clear();
        // The predictions are in execution order: walked alongside.
        let mut predicted = s.predictions.iter().peekable();
        for (k, e) in s.out.executions.iter().enumerate() {
            let prediction = predicted.next_if(|p| p.0 as usize == k).map(|p| p.1);
            let verdict = judge(e, prediction);
            let disposition = held.dispose(e, prediction, step, step, verdict, &mut counts);
            s.verdicts.push(verdict);
            s.settled.push(disposition == Disposition::Settled);
        }
        outputs.labelled_step(&s.labelled(i, step), names);
    }
    Labelled {
        counts,
        late: late_anomalies,
    }
}
