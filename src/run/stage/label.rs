//! Stage 5, label: executions held back in earlier steps are judged first,
//! in their original order, then every execution of the step; the outputs
//! see the late labels and each stream's labelled step as they are made.

use super::{Pipeline, StepWork};
use crate::run::held::Disposition;
use crate::run::pipeline::{judge, RunState};

impl Pipeline<'_> {
    /// Labels the held executions and every execution of the step.
    pub(in crate::run) fn label(&mut self, work: &mut StepWork) {
        let step = work.step;
        let RunState {
            streams,
            held,
            filter,
            detector,
            opts,
            names,
            ..
        } = &mut self.state;
        let judge = |e: &_, p| judge(filter, detector.as_ref(), opts.use_inclusive, e, p);
        let late = held.judge_held(step, judge, &mut work.labels);
        self.outputs.late_labels(&late, names);
        work.late_anomalies.extend(
            late.iter()
                .filter(|l| l.verdict.label == crate::detect::Label::Anomaly && !l.rejudged),
        );
        for &i in &work.active {
            let s = &mut streams[i];
            s.verdicts.clear();
            s.settled.clear();
            // The predictions are in execution order: walked alongside.
            let mut predicted = s.predictions.iter().peekable();
            for (k, e) in s.out.executions.iter().enumerate() {
                let prediction = predicted.next_if(|p| p.0 as usize == k).map(|p| p.1);
                let verdict = judge(e, prediction);
                let disposition =
                    held.dispose(e, prediction, step, step, verdict, &mut work.labels);
                s.verdicts.push(verdict);
                s.settled.push(disposition == Disposition::Settled);
            }
            self.outputs.labelled_step(&s.labelled(i, step), names);
        }
    }
}
