//! The provenance file as a consumer of labelled executions: picks records
//! per stream ([`super::collect`]), buffers them in the
//! [`ProvenanceWriter`], and writes collectively every `flush_steps` steps
//! and at the end, with the run's root attributes.

use std::path::Path;

use super::collect::{ProvenanceOptions, StepContext, StreamProvenance};
use super::consumer::{LabelConsumer, LabelledStep, LateLabel, RunContext, RunEnd};
use super::hdf5file::FileAttr;
use super::records::{PerfRow, StepRow};
use super::writer::ProvenanceWriter;
use crate::collectives::Collectives;
use crate::detect::{Label, Verdict};
use crate::events::names::GlobalNames;
use crate::events::Execution;
use crate::util::utc::utc_iso8601;

/// How the provenance file is written.
#[derive(Debug, Clone)]
pub struct ProvenanceSettings {
    /// Replace an existing file.
    pub overwrite: bool,
    /// Append buffered records every this many steps (0: only at the end).
    pub flush_steps: u64,
    /// Re-judge the stored records against the final model at the end.
    pub final_relabel: bool,
    /// Records kept per rank for that re-judgement.
    pub max_stored: usize,
    /// The detectors judged inclusive runtimes.
    pub use_inclusive: bool,
    /// What to record around each execution.
    pub records: ProvenanceOptions,
}

/// An anomaly labelled after its step, recorded at the next collect (or at
/// the end of the run).
struct LateRecord {
    execution: Execution,
    verdict: Verdict,
    exit_step: u64,
    labelled_step: u64,
}

/// The provenance file of a run (every AD rank holds one; all write it
/// together).
pub struct ProvenanceOutput {
    /// `None` once the file is closed.
    writer: Option<ProvenanceWriter>,
    /// Per-stream record state, by the stream's index on this rank.
    streams: Vec<StreamProvenance>,
    settings: ProvenanceSettings,
    late: Vec<LateRecord>,
}

impl ProvenanceOutput {
    /// Creates the file (collective: every rank opens it or all fail) for
    /// this rank's streams, given as (program, application rank), and sets
    /// the run's root attributes.
    pub fn create(
        path: &Path,
        coll: &Collectives,
        streams: &[(u32, u64)],
        settings: ProvenanceSettings,
        attrs: &[(&'static str, FileAttr)],
    ) -> anyhow::Result<Self> {
        // Flushed records are remembered only for the end-of-run
        // re-evaluation; without it, memory stays flat.
        let max_stored = if settings.final_relabel {
            settings.max_stored
        } else {
            0
        };
        let writer = ProvenanceWriter::create(
            path,
            coll,
            settings.overwrite,
            max_stored,
            settings.use_inclusive,
        )?;
        let mut start = attrs.to_vec();
        start.push(("completed", FileAttr::U64(0)));
        start.push(("steps_written", FileAttr::U64(0)));
        writer.set_attrs(&start)?;
        Ok(ProvenanceOutput {
            writer: Some(writer),
            streams: streams
                .iter()
                .map(|&(program, rank)| StreamProvenance::new(program, rank))
                .collect(),
            settings,
            late: Vec::new(),
        })
    }

    /// The step's records of one stream, as `collect` reads them.
    fn step_context<'a>(
        s: &'a LabelledStep<'a>,
        names: &'a GlobalNames,
        opts: &'a ProvenanceOptions,
    ) -> StepContext<'a> {
        StepContext {
            step: s.step,
            events: s.events,
            verdicts: s.verdicts,
            stream: s.calls,
            names,
            opts,
        }
    }

    /// Records the late anomalies, each with its own stream's state.
    fn record_late(&mut self, names: &GlobalNames) {
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        for l in std::mem::take(&mut self.late) {
            let e = &l.execution;
            let Some(s) = self
                .streams
                .iter()
                .find(|s| s.program() == e.program && s.rank() == e.rank())
            else {
                continue;
            };
            let (anomalies, _, _) = w.collections_mut();
            s.record_detached(e, l.verdict, l.exit_step, l.labelled_step, names, anomalies);
        }
    }

    /// Closes the file with the final attributes (collective).
    fn close(&mut self, ctx: &RunContext<'_>, end: &RunEnd, relabel: bool) -> anyhow::Result<()> {
        let Some(mut w) = self.writer.take() else {
            return Ok(());
        };
        w.stream_rows = ctx.streams.stream_rows();
        let mut attrs = vec![
            ("steps_written", FileAttr::U64(end.steps)),
            ("end_time", FileAttr::Str(utc_iso8601(end.ended_at))),
            ("completed", FileAttr::U64(end.completed as u64)),
        ];
        if let Some(sig) = &end.stopped_by {
            attrs.push(("stopped_by", FileAttr::Str(sig.clone())));
        }
        w.finish(
            ctx.coll,
            ctx.names,
            ctx.detector,
            ctx.profiles,
            relabel,
            &attrs,
        )
        .map(|_pruned| ())
    }
}

impl LabelConsumer for ProvenanceOutput {
    fn late_labels(&mut self, labels: &[LateLabel], _names: &GlobalNames) -> anyhow::Result<()> {
        self.late.extend(
            labels
                .iter()
                .filter(|l| !l.rejudged && l.verdict.label == Label::Anomaly)
                .map(|l| LateRecord {
                    execution: l.execution,
                    verdict: l.verdict,
                    exit_step: l.exit_step,
                    labelled_step: l.labelled_step,
                }),
        );
        Ok(())
    }

    fn labelled_step(&mut self, s: &LabelledStep<'_>, names: &GlobalNames) -> anyhow::Result<()> {
        let (Some(w), Some(p)) = (self.writer.as_mut(), self.streams.get_mut(s.stream)) else {
            return Ok(());
        };
        p.observe_metadata(s.new_attributes, &mut w.metadata);
        p.begin_step(names.functions.len(), &self.settings.records);
        for (k, (e, v)) in s.events.executions.iter().zip(s.verdicts).enumerate() {
            p.offer(k, e, *v);
        }
        Ok(())
    }

    fn collect_stream(&mut self, s: &LabelledStep<'_>, names: &GlobalNames) {
        let (Some(w), Some(p)) = (self.writer.as_mut(), self.streams.get_mut(s.stream)) else {
            return;
        };
        let ctx = Self::step_context(s, names, &self.settings.records);
        let (anomalies, normals, candidates) = w.collections_mut();
        let n = p.collect_step(&ctx, anomalies, normals, candidates);
        w.steps.push(StepRow {
            pid: s.program,
            rid: s.app_rank,
            io_step: s.step,
            executions: s.events.executions.len() as u64,
            anomalies: n,
            min_timestamp: s.events.first_ts.unwrap_or(0),
            max_timestamp: s.events.last_ts.unwrap_or(0),
        });
    }

    fn collect(&mut self, ctx: &RunContext<'_>, step: u64) {
        self.record_late(ctx.names);
        if let Some(w) = self.writer.as_mut() {
            w.snapshot_models(ctx.coll, step, ctx.detector, ctx.names);
        }
    }

    fn write(&mut self, ctx: &RunContext<'_>, step: u64, perf: &PerfRow) -> anyhow::Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        w.perf.push(PerfRow {
            rss_mb: crate::sys::allocator::current_rss_kb() as f64 / 1024.0,
            ..*perf
        });
        let every = self.settings.flush_steps;
        if every > 0 && (step + 1) % every == 0 {
            w.stream_rows = ctx.streams.stream_rows();
            let attrs = [("steps_written", FileAttr::U64(step + 1))];
            w.flush(ctx.coll, ctx.names, ctx.detector, ctx.profiles, &attrs)?;
        }
        Ok(())
    }

    fn trim_stream(&mut self, s: &LabelledStep<'_>) {
        if let Some(p) = self.streams.get_mut(s.stream) {
            p.trim(s.events, s.verdicts, self.settings.records.window);
        }
    }

    fn finish(&mut self, ctx: &RunContext<'_>, end: &RunEnd) -> anyhow::Result<()> {
        // What was still held at the end, labelled against the final model,
        // and the young-model candidates the final model finds anomalous.
        self.record_late(ctx.names);
        let relabel = self.settings.final_relabel;
        if let Some(w) = self.writer.as_mut() {
            if relabel {
                let found = w.add_found_at_end(ctx.detector);
                let total = ctx.coll.allreduce_sum(&[found])[0];
                if total > 0 && ctx.coll.rank() == 0 {
                    eprintln!(
                        "run: {total} anomal{} found at the end (judged normal against a young model), in the provenance file",
                        if total == 1 { "y" } else { "ies" }
                    );
                }
            }
            w.snapshot_models(ctx.coll, end.steps, ctx.detector, ctx.names);
        }
        self.close(ctx, end, relabel)
    }

    fn abort(&mut self, ctx: &RunContext<'_>, end: &RunEnd) -> anyhow::Result<()> {
        // Best effort: the file keeps every flushed step and says the run
        // did not complete.
        self.close(ctx, end, false)
    }
}
