//! The run's summary: counts every execution's final label per function, scores
//! the anomalies against ground truth (`--truth`), and at the end prints the
//! summary on rank 0 and writes `--model-out` and `--summary-out`.

use std::path::PathBuf;

use rayon::prelude::*;

use super::consumer::{LabelConsumer, LabelledStep, LateLabel, RunContext};
use super::summary::{summary_text, write_model, write_summary, RunSummary, SummaryFunctions};
use super::totals::{FunctionTotals, StepCounts};
use super::truth::TruthSet;
use crate::detect::Label;
use crate::events::names::GlobalNames;
use crate::events::Execution;

/// The run's summary (one per AD rank; rank 0 prints and writes).
pub struct SummaryOutput {
    totals: FunctionTotals,
    /// Each stream's counts of its step's settled executions, by the
    /// stream's index: counted on the worker threads, then added to
    /// `totals` (sums of integers: the same whatever the order).
    stream_counts: Vec<StepCounts>,
    truth: Option<TruthSet>,
    /// Rows of the top-functions table.
    top: usize,
    model_out: Option<PathBuf>,
    summary_out: Option<PathBuf>,
    /// What `summary_out` says of each function.
    summary_functions: SummaryFunctions,
    /// Print the end-of-run table on stderr (stdout carries JSON lines).
    summary_to_stderr: bool,
}

impl SummaryOutput {
    /// A report with the summary table's `top` rows, scored against `truth`
    /// when given, writing the model and summary JSON where asked.
    pub fn new(
        truth: Option<TruthSet>,
        top: usize,
        model_out: Option<PathBuf>,
        summary_out: Option<PathBuf>,
    ) -> Self {
        SummaryOutput {
            totals: FunctionTotals::default(),
            stream_counts: Vec::new(),
            truth,
            top,
            model_out,
            summary_out,
            summary_functions: SummaryFunctions::default(),
            summary_to_stderr: false,
        }
    }

    /// What the summary JSON says of each function.
    pub fn with_summary_functions(mut self, which: SummaryFunctions) -> Self {
        self.summary_functions = which;
        self
    }

    /// Prints the end-of-run table on stderr instead of stdout (when
    /// stdout carries the live statistics, `--stats-out -`).
    pub fn summary_on_stderr(mut self) -> Self {
        self.summary_to_stderr = true;
        self
    }

    #[inline]
    fn count(&mut self, e: &Execution, label: Label, names: &GlobalNames) {
        self.totals.record(e, label);
        if let Some(t) = &mut self.truth {
            t.observe(e, label, names);
        }
    }
}

impl LabelConsumer for SummaryOutput {
    fn late_labels(&mut self, labels: &[LateLabel], names: &GlobalNames) -> anyhow::Result<()> {
        for l in labels.iter().filter(|l| l.settled) {
            self.count(&l.execution, l.verdict.label, names);
        }
        Ok(())
    }

    /// Each stream's settled executions counted into its own totals on
    /// the worker threads (a pass over every execution of the step, which
    /// on the main thread would leave the other cores idle); the ground
    /// truth, when given, then sees the anomalies in stream order.
    fn labelled_steps(
        &mut self,
        steps: &[LabelledStep<'_>],
        names: &GlobalNames,
        pool: &rayon::ThreadPool,
    ) -> anyhow::Result<()> {
        let Some(last) = steps.iter().map(|s| s.stream).max() else {
            return Ok(());
        };
        if self.stream_counts.len() <= last {
            self.stream_counts
                .resize_with(last + 1, StepCounts::default);
        }
        let mut work: Vec<_> = steps
            .iter()
            .map(|s| (s, std::mem::take(&mut self.stream_counts[s.stream])))
            .collect();
        pool.install(|| {
            work.par_iter_mut().for_each(|(s, counts)| {
                counts.record_settled(&s.events.executions, s.verdicts, s.settled);
            });
        });
        for (s, mut counts) in work {
            self.totals.add_step(&counts);
            counts.clear();
            self.stream_counts[s.stream] = counts;
            if let Some(truth) = &mut self.truth {
                let labelled = s.events.executions.iter().zip(s.verdicts).zip(s.settled);
                for ((e, v), &settled) in labelled {
                    if settled {
                        truth.observe(e, v.label, names);
                    }
                }
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
        let mut text = summary_text(summary, &totals, ctx.names, ctx.detector, self.top);
        if let Some(list) = ctx.incidents {
            text.push_str(&crate::incidents::text::list_text(
                list,
                crate::incidents::Source::Tau,
                self.top,
            ));
        }
        if self.summary_to_stderr {
            // stdout carries the live statistics (`--stats-out -`) alone.
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        if let Some(p) = &self.model_out {
            write_model(p, ctx.names, ctx.detector, &totals)?;
        }
        if let Some(p) = &self.summary_out {
            let to = (p.as_path(), self.summary_functions);
            write_summary(to, summary, ctx.incidents, &totals, ctx.names, ctx.detector)?;
        }
        Ok(())
    }
}
