//! Executions whose label is not final when they are judged: held back
//! because their function's model is still too thin (they are judged again
//! next step, up to `--max-pending` of them), and anomalies kept for the
//! end-of-run re-judgement against the final model (up to
//! `--max-stored-anomalies`). This is the one place that decides where a
//! judged execution goes.

use crate::detect::{Label, Prediction, Verdict};
use crate::events::Execution;
use crate::output::consumer::LateLabel;

/// Where a judged execution goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Its label is final now.
    Settled,
    /// Held back: judged again next step.
    Held,
    /// An anomaly kept for the end-of-run re-judgement.
    Stored,
}

/// Labels counted in one step (for the status exchange).
#[derive(Debug, Clone, Copy, Default)]
pub struct LabelCounts {
    /// Executions that got a label (not held back).
    pub labelled: u64,
    /// Of them, anomalies.
    pub anomalies: u64,
}

/// An anomaly kept for the end-of-run re-judgement.
#[derive(Debug, Clone, Copy)]
struct StoredAnomaly {
    exit_step: u64,
    labelled_step: u64,
    in_situ: Verdict,
    execution: Execution,
    prediction: Option<Prediction>,
}

/// The executions of a rank whose label is not final yet.
#[derive(Debug, Default)]
pub struct HeldExecutions {
    /// (step whose build completed it, execution, the model detector's
    /// prediction), in arrival order.
    pending: Vec<(u64, Execution, Option<Prediction>)>,
    stored: Vec<StoredAnomaly>,
    max_pending: usize,
    /// 0: no end-of-run re-judgement.
    max_stored: usize,
}

impl HeldExecutions {
    /// Holds at most `max_pending` executions back and keeps at most
    /// `max_stored` anomalies for the re-judgement (0: none).
    pub fn new(max_pending: usize, max_stored: usize) -> Self {
        HeldExecutions {
            max_pending,
            max_stored,
            ..Default::default()
        }
    }

    /// Decides where execution `e` (completed in `exit_step`, judged `v` in
    /// `labelled_step`, with the model detector's `prediction`) goes, keeps
    /// it if it is not settled, and counts it.
    #[inline]
    pub fn dispose(
        &mut self,
        e: &Execution,
        prediction: Option<Prediction>,
        exit_step: u64,
        labelled_step: u64,
        v: Verdict,
        counts: &mut LabelCounts,
    ) -> Disposition {
        if v.label == Label::Unlabeled && self.pending.len() < self.max_pending {
            self.pending.push((exit_step, *e, prediction));
            return Disposition::Held;
        }
        counts.labelled += 1;
        if v.label == Label::Anomaly {
            counts.anomalies += 1;
            if self.stored.len() < self.max_stored {
                self.stored.push(StoredAnomaly {
                    exit_step,
                    labelled_step,
                    in_situ: v,
                    execution: *e,
                    prediction,
                });
                return Disposition::Stored;
            }
        }
        Disposition::Settled
    }

    /// Judges the executions held back in earlier steps again, in their
    /// original order, during step `step`: those still without a model
    /// stay held; the others are returned.
    pub fn judge_held(
        &mut self,
        step: u64,
        judge: impl Fn(&Execution, Option<Prediction>) -> Verdict,
        counts: &mut LabelCounts,
    ) -> Vec<LateLabel> {
        let mut late = Vec::new();
        for (exit_step, e, p) in std::mem::take(&mut self.pending) {
            let verdict = judge(&e, p);
            let disposition = self.dispose(&e, p, exit_step, step, verdict, counts);
            if disposition != Disposition::Held {
                late.push(LateLabel {
                    execution: e,
                    prediction: p,
                    exit_step,
                    labelled_step: step,
                    in_situ: verdict.label,
                    verdict,
                    rejudged: false,
                    settled: disposition == Disposition::Settled,
                });
            }
        }
        late
    }

    /// End of the run: what is still held, labelled against the final model
    /// as of step `steps`, then every stored anomaly re-judged against it.
    /// Also returns how many stored anomalies the final model finds normal.
    pub fn judge_at_end(
        &mut self,
        steps: u64,
        judge: impl Fn(&Execution, Option<Prediction>) -> Verdict,
    ) -> (Vec<LateLabel>, u64) {
        let mut late = Vec::new();
        for (exit_step, e, p) in std::mem::take(&mut self.pending) {
            let verdict = judge(&e, p);
            late.push(LateLabel {
                execution: e,
                prediction: p,
                exit_step,
                labelled_step: steps,
                in_situ: verdict.label,
                verdict,
                rejudged: false,
                settled: true,
            });
        }
        let mut pruned = 0u64;
        for s in std::mem::take(&mut self.stored) {
            let verdict = judge(&s.execution, s.prediction);
            if verdict.label != Label::Anomaly {
                pruned += 1;
            }
            late.push(LateLabel {
                execution: s.execution,
                prediction: s.prediction,
                exit_step: s.exit_step,
                labelled_step: s.labelled_step,
                in_situ: s.in_situ.label,
                verdict,
                rejudged: true,
                settled: true,
            });
        }
        (late, pruned)
    }
}
