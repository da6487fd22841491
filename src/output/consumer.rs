//! The output seam: everything that consumes labelled executions.
//!
//! The step loop does not know what happens to its labels. It hands them,
//! stage by stage, to a list of [`LabelConsumer`]s — the provenance file,
//! the live statistics, the label CSVs and the run's summary are the ones this
//! crate has — through [`Outputs`]. A new output (a visual report, another
//! file format) is one more implementation of the trait, added to the list
//! in `run::setup`; the loop does not change.
//!
//! Every AD rank builds the same list, and every hook marked *collective*
//! is called on every rank in the same order (the list's), so consumers may
//! use the run's collectives there. Hooks that can fail return an error;
//! the loop records the first one and stops all ranks together at the end
//! of the step.

use crate::collectives::Collectives;
use crate::detect::{Detector, Label, Prediction, Verdict};
use crate::events::names::GlobalNames;
use crate::events::{CallStackBuilder, Execution, StepEvents};
use crate::trace::format::Attribute;

use super::summary::RunSummary;
use crate::provenance::records::{PerfRow, StreamRow};
use crate::provenance::stats::RunProfiles;

/// One stream's step, labelled: what the label, collect and trim stages
/// show each consumer. `verdicts[k]` is the in-situ verdict of
/// `events.executions[k]`.
pub struct LabelledStep<'a> {
    /// The stream's index among this AD rank's streams (stable for the run).
    pub stream: usize,
    /// The program (of the workflow) the stream belongs to.
    pub program: u32,
    /// The application rank that wrote the stream.
    pub app_rank: u64,
    /// The run's step.
    pub step: u64,
    /// The executions completed in the step, with their attachments.
    pub events: &'a StepEvents,
    /// The stream's call stacks (calls still open, GPU threads).
    pub calls: &'a CallStackBuilder,
    /// The verdict of each execution, as labelled in this step.
    pub verdicts: &'a [Verdict],
    /// The model detector's predictions, as `(index in
    /// events.executions, prediction)` sorted by index: the executions
    /// judged by a model (empty with the other detectors); see
    /// [`Prediction::of_execution`].
    pub predictions: &'a [(u32, Prediction)],
    /// Whether each execution's label is final now; `false` for executions
    /// held back for a fuller model or kept for the end-of-run
    /// re-judgement (they come again through [`LabelConsumer::late_labels`]).
    pub settled: &'a [bool],
    /// Name definitions and metadata the stream made visible in the step.
    pub new_attributes: &'a [Attribute],
}

/// An execution labelled after its own step: held back because its
/// function's model was too thin, or re-judged against the final model at
/// the end of the run.
#[derive(Debug, Clone, Copy)]
pub struct LateLabel {
    /// The execution.
    pub execution: Execution,
    /// The model detector's prediction it was judged with, if any.
    pub prediction: Option<Prediction>,
    /// The step whose build completed it.
    pub exit_step: u64,
    /// The step in which it was labelled.
    pub labelled_step: u64,
    /// The label it got when it was first judged.
    pub in_situ: Label,
    /// Its verdict now.
    pub verdict: Verdict,
    /// A re-judgement at the end of the run of an execution already shown
    /// with its in-situ label (`false`: labelled for the first time now).
    pub rejudged: bool,
    /// Whether this label is final (`false`: kept for the end-of-run
    /// re-judgement, which will show it again).
    pub settled: bool,
}

/// What the run shares with its consumers in the collective hooks.
pub struct RunContext<'a> {
    /// The AD ranks' communicator.
    pub coll: &'a Collectives,
    /// The agreed function and counter tables.
    pub names: &'a GlobalNames,
    /// The global model (the same on every rank).
    pub detector: &'a dyn Detector,
    /// This rank's runtime and counter profiles since the start.
    pub profiles: &'a RunProfiles,
    /// This rank's streams, for the `streams` table.
    pub streams: &'a dyn StreamStates,
    /// Incident occurrences found in the last step (every rank).
    pub incidents_in_step: u64,
    /// The run's incidents, ranked, once the run has ended (`finish`,
    /// `report`); `None` before.
    pub incidents: Option<&'a crate::incidents::IncidentList>,
}

/// Where this rank's streams stand, as rows of the `streams` table.
pub trait StreamStates {
    /// One row per stream of this rank, now.
    fn stream_rows(&self) -> Vec<StreamRow>;
}

/// How the run ended, for [`LabelConsumer::finish`].
#[derive(Debug, Clone)]
pub struct RunEnd {
    /// Steps that delivered data.
    pub steps: u64,
    /// Unix time of the end, agreed by all ranks.
    pub ended_at: u64,
    /// The run read every stream to its end (no failure, no signal).
    pub completed: bool,
    /// The signal that stopped the run, if one did.
    pub stopped_by: Option<String>,
}

/// Something that consumes labelled executions. Every hook has a default
/// that does nothing, so a consumer implements only what it uses.
pub trait LabelConsumer {
    /// Executions of earlier steps labelled now (label stage, before this
    /// step's own), or at the end of the run (after the last step).
    fn late_labels(&mut self, _labels: &[LateLabel], _names: &GlobalNames) -> anyhow::Result<()> {
        Ok(())
    }

    /// One stream's step has been labelled (label stage).
    fn labelled_step(
        &mut self,
        _step: &LabelledStep<'_>,
        _names: &GlobalNames,
    ) -> anyhow::Result<()> {
        Ok(())
    }

    /// All streams' labelled steps of this step, in stream order (label
    /// stage); `pool` is the AD rank's worker threads, for consumers whose
    /// work per stream is independent of the other streams'. By default,
    /// [`LabelConsumer::labelled_step`] of each in order.
    fn labelled_steps(
        &mut self,
        steps: &[LabelledStep<'_>],
        names: &GlobalNames,
        _pool: &rayon::ThreadPool,
    ) -> anyhow::Result<()> {
        for s in steps {
            self.labelled_step(s, names)?;
        }
        Ok(())
    }

    /// Collect stage, for each stream that had a step.
    fn collect_stream(&mut self, _step: &LabelledStep<'_>, _names: &GlobalNames) {}

    /// End of the collect stage (collective).
    fn collect(&mut self, _ctx: &RunContext<'_>, _step: u64) {}

    /// Write stage (collective): `perf` is this rank's cost of the step.
    fn write(&mut self, _ctx: &RunContext<'_>, _step: u64, _perf: &PerfRow) -> anyhow::Result<()> {
        Ok(())
    }

    /// Trim stage, for each stream that had a step: drop what no later
    /// step can need.
    fn trim_stream(&mut self, _step: &LabelledStep<'_>) {}

    /// After the status exchange (collective); `any_data`: some rank read
    /// data in the step.
    fn step_done(&mut self, _ctx: &RunContext<'_>, _step: u64, _any_data: bool) {}

    /// End of the run: write everything (collective). After an error on
    /// any rank the run fails.
    fn finish(&mut self, _ctx: &RunContext<'_>, _end: &RunEnd) -> anyhow::Result<()> {
        Ok(())
    }

    /// The run stopped early (a failure on some rank, or a signal): keep
    /// what can be kept, best effort (collective).
    fn abort(&mut self, _ctx: &RunContext<'_>, _end: &RunEnd) -> anyhow::Result<()> {
        Ok(())
    }

    /// After a successful finish on every rank: report on the run, whose
    /// headline numbers are in `summary` (collective).
    fn report(&mut self, _ctx: &RunContext<'_>, _summary: &mut RunSummary) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The consumers of a run, called in order. Errors of the non-collective
/// hooks are kept (the first one) for the step's status exchange.
#[derive(Default)]
pub struct Outputs {
    consumers: Vec<Box<dyn LabelConsumer>>,
    failure: Option<String>,
}

impl Outputs {
    /// Adds a consumer at the end of the list.
    pub fn push(&mut self, c: Box<dyn LabelConsumer>) {
        self.consumers.push(c);
    }

    /// Whether no consumer was added.
    pub fn is_empty(&self) -> bool {
        self.consumers.is_empty()
    }

    /// The first error a hook returned since the last call, if any.
    pub fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }

    fn keep(&mut self, r: anyhow::Result<()>) {
        if let Err(e) = r {
            self.failure.get_or_insert(format!("{e:#}"));
        }
    }

    /// [`LabelConsumer::late_labels`] of every consumer.
    pub fn late_labels(&mut self, labels: &[LateLabel], names: &GlobalNames) {
        if labels.is_empty() {
            return;
        }
        for i in 0..self.consumers.len() {
            let r = self.consumers[i].late_labels(labels, names);
            self.keep(r);
        }
    }

    /// [`LabelConsumer::labelled_steps`] of every consumer.
    pub fn labelled_steps(
        &mut self,
        steps: &[LabelledStep<'_>],
        names: &GlobalNames,
        pool: &rayon::ThreadPool,
    ) {
        for i in 0..self.consumers.len() {
            let r = self.consumers[i].labelled_steps(steps, names, pool);
            self.keep(r);
        }
    }

    /// [`LabelConsumer::collect_stream`] of every consumer.
    pub fn collect_stream(&mut self, step: &LabelledStep<'_>, names: &GlobalNames) {
        self.consumers
            .iter_mut()
            .for_each(|c| c.collect_stream(step, names));
    }

    /// [`LabelConsumer::collect`] of every consumer (collective).
    pub fn collect(&mut self, ctx: &RunContext<'_>, step: u64) {
        self.consumers.iter_mut().for_each(|c| c.collect(ctx, step));
    }

    /// [`LabelConsumer::write`] of every consumer (collective).
    pub fn write(&mut self, ctx: &RunContext<'_>, step: u64, perf: &PerfRow) {
        for i in 0..self.consumers.len() {
            let r = self.consumers[i].write(ctx, step, perf);
            self.keep(r);
        }
    }

    /// [`LabelConsumer::trim_stream`] of every consumer.
    pub fn trim_stream(&mut self, step: &LabelledStep<'_>) {
        self.consumers.iter_mut().for_each(|c| c.trim_stream(step));
    }

    /// [`LabelConsumer::step_done`] of every consumer (collective).
    pub fn step_done(&mut self, ctx: &RunContext<'_>, step: u64, any_data: bool) {
        self.consumers
            .iter_mut()
            .for_each(|c| c.step_done(ctx, step, any_data));
    }

    /// [`LabelConsumer::finish`] of every consumer (collective); the first
    /// error, after every consumer has finished.
    pub fn finish(&mut self, ctx: &RunContext<'_>, end: &RunEnd) -> Option<String> {
        for i in 0..self.consumers.len() {
            let r = self.consumers[i].finish(ctx, end);
            self.keep(r);
        }
        self.take_failure()
    }

    /// [`LabelConsumer::abort`] of every consumer (collective); errors are
    /// printed, since the run is failing already.
    pub fn abort(&mut self, ctx: &RunContext<'_>, end: &RunEnd) {
        for c in &mut self.consumers {
            match c.abort(ctx, end) {
                // The earlier write error is the one reported.
                Err(e) if e.is::<crate::provenance::writer::UnusableAfterEarlierError>() => {}
                Err(e) => eprintln!("chimbuko-mpi: AD rank {}: {e:#}", ctx.coll.rank()),
                Ok(()) => {}
            }
        }
    }

    /// [`LabelConsumer::report`] of every consumer (collective).
    pub fn report(&mut self, ctx: &RunContext<'_>, summary: &mut RunSummary) -> anyhow::Result<()> {
        for c in &mut self.consumers {
            c.report(ctx, summary)?;
        }
        Ok(())
    }
}
