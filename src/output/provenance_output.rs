//! The provenance file as a consumer of labelled executions: picks records
//! per stream ([`super::collect`]), buffers them in the
//! [`ProvenanceWriter`], and writes collectively every `flush_steps` steps
//! and at the end, with the run's root attributes, its tags (`run_tags`)
//! and, with `--model-samples`, the sampled executions' features
//! ([`super::samples`]).

use std::path::Path;

use rayon::prelude::*;

use super::collect::{ProvenanceOptions, StepContext, StreamProvenance};
use super::consumer::{LabelConsumer, LabelledStep, LateLabel, RunContext, RunEnd};
use super::samples::ModelSampler;
use crate::collectives::Collectives;
use crate::detect::model::ModelDocument;
use crate::detect::{Label, Prediction, Verdict};
use crate::events::names::GlobalNames;
use crate::events::Execution;
use crate::provenance::hdf5file::FileAttr;
use crate::provenance::records::{fixed, ModelDetectorRow, PerfRow, RunTagRow, StepRow};
use crate::provenance::writer::ProvenanceWriter;
use crate::util::disjoint::many_mut;
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
    /// Executions sampled per function for `model_samples` (0: none).
    pub model_samples: usize,
    /// The run's tags (key, value as given), for `run_tags`.
    pub tags: Vec<(String, String)>,
    /// The performance models of the model detector, for
    /// `model_detector` (empty with the other detectors).
    pub models: Vec<ModelDocument>,
}

/// An anomaly labelled after its step, recorded at the next collect (or at
/// the end of the run).
struct LateRecord {
    execution: Execution,
    prediction: Option<Prediction>,
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
    /// The model samples (`--model-samples`), written at the end.
    samples: Option<ModelSampler>,
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
        let mut writer = ProvenanceWriter::create(
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
        writer.write_out()?;
        let samples =
            (settings.model_samples > 0).then(|| ModelSampler::new(settings.model_samples));
        Ok(ProvenanceOutput {
            writer: Some(writer),
            streams: streams
                .iter()
                .map(|&(program, rank)| StreamProvenance::new(program, rank))
                .collect(),
            settings,
            late: Vec::new(),
            samples,
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
            predictions: s.predictions,
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
            s.record_detached(
                e,
                l.verdict,
                l.prediction,
                l.exit_step,
                l.labelled_step,
                names,
                anomalies,
            );
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
        // The tables written once go in before the close, whose first
        // phase would report a write error of theirs on every rank. They
        // are written here, not when the file is created: a failed write
        // is then handled (and the file closed) by the same end-of-run
        // path as every other write error.
        let tags: Vec<RunTagRow> = self
            .settings
            .tags
            .iter()
            .map(|(k, v)| tag_row(k, v))
            .collect();
        let mut samples_written = w.write_global_table(ctx.coll, "run_tags", &tags);
        if !self.settings.models.is_empty() {
            let (rows, text) = model_rows(&self.settings.models);
            samples_written = samples_written
                .and_then(|_| w.write_global_table(ctx.coll, "model_detector", &rows))
                .and_then(|_| w.write_global_table(ctx.coll, "model_detector_json", &text));
        }
        if let Some(list) = ctx.incidents {
            let (rows, evidence, members) = crate::provenance::incidents::incident_rows(list);
            samples_written = samples_written
                .and_then(|_| w.write_global_table(ctx.coll, "incidents", &rows))
                .and_then(|_| w.write_global_table(ctx.coll, "incident_evidence", &evidence))
                .and_then(|_| w.write_global_table(ctx.coll, "incident_members", &members));
            attrs.extend(
                crate::provenance::incidents::floor_attrs(list).map(|(k, v)| (k, FileAttr::F64(v))),
            );
        }
        if let Some(sampler) = self.samples.take() {
            let (rows, counters) = sampler.merge(ctx.coll, ctx.names);
            samples_written = samples_written
                .and_then(|_| w.write_global_table(ctx.coll, "model_samples", &rows))
                .and_then(|_| w.write_global_table(ctx.coll, "model_sample_counters", &counters));
        }
        let closed = w.finish(
            ctx.coll,
            ctx.names,
            ctx.detector,
            ctx.profiles,
            relabel,
            &attrs,
        );
        samples_written?;
        closed.map(|_pruned| ())
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
                    prediction: l.prediction,
                    verdict: l.verdict,
                    exit_step: l.exit_step,
                    labelled_step: l.labelled_step,
                }),
        );
        Ok(())
    }

    /// The metadata and samples of every stream in order, then each
    /// stream's offers on the worker threads: a stream's provenance state
    /// is its own.
    fn labelled_steps(
        &mut self,
        steps: &[LabelledStep<'_>],
        names: &GlobalNames,
        pool: &rayon::ThreadPool,
    ) -> anyhow::Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        let mut offered = Vec::with_capacity(steps.len());
        for s in steps {
            if let Some(p) = self.streams.get_mut(s.stream) {
                p.observe_metadata(s.new_attributes, &mut w.metadata);
                if let Some(sampler) = self.samples.as_mut() {
                    sampler.offer_step(s, names);
                }
                offered.push(s);
            }
        }
        let indices: Vec<usize> = offered.iter().map(|s| s.stream).collect();
        let records = &self.settings.records;
        let jobs: Vec<_> = many_mut(&mut self.streams, &indices)
            .into_iter()
            .zip(offered)
            .filter_map(|(p, s)| Some((p?, s)))
            .collect();
        pool.install(|| {
            jobs.into_par_iter()
                .for_each(|(p, s)| offer_step(p, s, records));
        });
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
        let path = self.writer.as_ref().map(|w| w.path().to_path_buf());
        let closed = self.close(ctx, end, relabel);
        // Where the results are, said again at the end of the output,
        // where a user looks for it.
        if let (Ok(()), Some(p), 0) = (&closed, path, ctx.coll.rank()) {
            let mb = std::fs::metadata(&p).map_or(0.0, |m| m.len() as f64 / 1e6);
            eprintln!("run: provenance written to {} ({mb:.1} MB)", p.display());
        }
        closed
    }

    fn abort(&mut self, ctx: &RunContext<'_>, end: &RunEnd) -> anyhow::Result<()> {
        // Best effort: the file keeps every flushed step and says the run
        // did not complete.
        let path = self.writer.as_ref().map(|w| w.path().to_path_buf());
        let closed = self.close(ctx, end, false);
        // A run that failed before its first step has nothing to keep, and
        // an empty file left behind would only block the re-run (it exists,
        // so the next run wants --overwrite).
        if end.steps == 0 && ctx.coll.rank() == 0 {
            if let Some(p) = path {
                if std::fs::remove_file(&p).is_ok() {
                    eprintln!(
                        "run: no step was analysed: the provenance file {} was removed",
                        p.display()
                    );
                }
            }
        }
        closed
    }
}

/// A `run_tags` row: numbers are kept as numbers (`value`), every value as
/// given (`text`).
pub fn tag_row(key: &str, value: &str) -> RunTagRow {
    let number = value.trim().parse::<f64>().ok().filter(|v| v.is_finite());
    RunTagRow {
        key: fixed(key),
        value: number.unwrap_or(f64::NAN),
        text: fixed(value),
        numeric: number.is_some() as u8,
    }
}

/// The `model_detector` rows of the models, and the bytes of
/// `model_detector_json` their rows point into (each model's JSON text,
/// one after the other: the text is longer than a fixed-length column).
fn model_rows(models: &[ModelDocument]) -> (Vec<ModelDetectorRow>, Vec<u8>) {
    let mut text = Vec::new();
    let rows = models
        .iter()
        .map(|m| {
            let start = text.len() as u64;
            text.extend_from_slice(m.json.as_bytes());
            ModelDetectorRow {
                func: fixed(&m.function),
                target: fixed(&m.target),
                metrics: fixed(&m.metrics.join(",")),
                json_start: start,
                json_len: m.json.len() as u64,
            }
        })
        .collect();
    (rows, text)
}

/// Offers every execution of a stream's labelled step to its provenance
/// state (anomalies, normal samples, end-of-run candidates).
fn offer_step(p: &mut StreamProvenance, s: &LabelledStep<'_>, records: &ProvenanceOptions) {
    p.begin_step(records);
    // The predictions are in execution order: walked alongside (a search
    // per execution would cost more than the offer).
    let mut predicted = s.predictions.iter().peekable();
    for (k, (e, v)) in s.events.executions.iter().zip(s.verdicts).enumerate() {
        let prediction = predicted.next_if(|p| p.0 as usize == k).map(|p| p.1);
        p.offer(k, e, *v, prediction);
    }
}
