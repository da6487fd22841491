//! The run report: counts every execution's final label per function, scores
//! the anomalies against ground truth (`--truth`), and at the end prints the
//! summary on rank 0 and writes `--model-out` and `--summary-out`.

use std::path::PathBuf;

use super::consumer::{LabelConsumer, LabelledStep, LateLabel, RunContext};
use super::summary::{print_summary, write_model, write_summary, RunSummary};
use super::totals::FunctionTotals;
use super::truth::TruthSet;
use crate::detect::Label;
use crate::events::names::GlobalNames;
use crate::events::Execution;

/// The run report (one per AD rank; rank 0 prints and writes).
pub struct RunReport {
    totals: FunctionTotals,
    truth: Option<TruthSet>,
    /// Rows of the top-functions table.
    top: usize,
    model_out: Option<PathBuf>,
    summary_out: Option<PathBuf>,
}

impl RunReport {
    /// A report with the summary table's `top` rows, scored against `truth`
    /// when given, writing the model and summary JSON where asked.
    pub fn new(
        truth: Option<TruthSet>,
        top: usize,
        model_out: Option<PathBuf>,
        summary_out: Option<PathBuf>,
    ) -> Self {
        RunReport {
            totals: FunctionTotals::default(),
            truth,
            top,
            model_out,
            summary_out,
        }
    }

    #[inline]
    fn count(&mut self, e: &Execution, label: Label, names: &GlobalNames) {
        self.totals.record(e, label);
        if let Some(t) = &mut self.truth {
            t.observe(e, label, names);
        }
    }
}

impl LabelConsumer for RunReport {
    fn late_labels(&mut self, labels: &[LateLabel], names: &GlobalNames) -> anyhow::Result<()> {
        for l in labels.iter().filter(|l| l.settled) {
            self.count(&l.execution, l.verdict.label, names);
        }
        Ok(())
    }

    fn labelled_step(&mut self, s: &LabelledStep<'_>, names: &GlobalNames) -> anyhow::Result<()> {
        for ((e, v), settled) in s.events.executions.iter().zip(s.verdicts).zip(s.settled) {
            if *settled {
                self.count(e, v.label, names);
            }
        }
        Ok(())
    }

    fn report(&mut self, ctx: &RunContext<'_>, summary: &mut RunSummary) -> anyhow::Result<()> {
        // The same length on every rank: the reduction needs it.
        self.totals.ensure(ctx.names.functions.len());
        let totals = self.totals.reduce(ctx.coll);
        summary.truth = self
            .truth
            .as_ref()
            .map(|t| t.reduce(ctx.coll))
            .transpose()?;
        summary.anomalies = totals.anomalies.iter().sum();
        if ctx.coll.rank() != 0 {
            return Ok(());
        }
        print_summary(summary, &totals, ctx.names, ctx.detector, self.top);
        if let Some(p) = &self.model_out {
            write_model(p, ctx.names, ctx.detector, &totals)?;
        }
        if let Some(p) = &self.summary_out {
            write_summary(p, summary, &totals, ctx.names, ctx.detector)?;
        }
        Ok(())
    }
}
