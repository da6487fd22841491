//! The streams one AD rank reads, with their state: open, reading, ended,
//! stalled or failed. A stream that fails or stalls mid-run ends on its own
//! (with a warning and a row in the provenance file's `streams` table); the
//! others go on. Only setup errors — a stream that never appears — stop the
//! run.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::options::RunOptions;
use crate::detect::{Prediction, Verdict};
use crate::events::{CallStackBuilder, EventOptions, IndexMap, StepEvents};
use crate::output::consumer::{LabelledStep, StreamStates};
use crate::provenance::records::{fixed, StreamRow};
use crate::sys::signals;
use crate::trace::issues::StepIssues;
use crate::trace::source::{SourceOpener, StreamSpec};
use crate::trace::step::TraceStep;
use crate::trace::threaded::{ThreadedReader, Waited};

/// Where a stream stands.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamState {
    /// Still delivering steps.
    Reading,
    /// The writer closed the stream after `steps` steps.
    Ended,
    /// No new step for the step timeout.
    Stalled {
        /// The step timeout that passed.
        after_secs: f64,
    },
    /// Reading failed (corrupt data, writer gone, ...).
    Failed {
        /// What went wrong.
        message: String,
    },
}

impl StreamState {
    /// The state's name in the `streams` table.
    pub fn name(&self) -> &'static str {
        match self {
            StreamState::Reading => "reading",
            StreamState::Ended => "ended",
            StreamState::Stalled { .. } => "stalled",
            StreamState::Failed { .. } => "failed",
        }
    }
}

/// One stream owned by this rank, with everything the step loop keeps of
/// it from step to step.
pub struct OwnedStream {
    /// Which stream.
    pub spec: StreamSpec,
    /// The stream, read on a thread of its own (`None` once stopped).
    reader: Option<ThreadedReader>,
    /// The step's rows once built (its name definitions are shown to the
    /// outputs), handed back for reuse with the next request.
    spare: Option<TraceStep>,
    /// The stream's call stacks, carried from step to step.
    pub calls: CallStackBuilder,
    /// The stream's local name indices → the global ones.
    pub map: IndexMap,
    /// This step's executions (buffers reused from step to step).
    pub out: StepEvents,
    /// The verdict of each of `out.executions`.
    pub verdicts: Vec<Verdict>,
    /// The model detector's predictions for this step's executions of
    /// modelled functions: `(index in out.executions, prediction)`, sorted
    /// by index (empty with the other detectors).
    pub predictions: Vec<(u32, Prediction)>,
    /// Indices in `out.executions` of this step's executions of modelled
    /// functions (noted by the build, predicted right after it).
    pub modelled: Vec<u32>,
    /// This step's runtimes for the partial model, gathered on a worker
    /// thread during the build (with detectors that take a stream's
    /// share; see `detect::stream_partial`).
    pub share: Option<crate::detect::stream_partial::StreamPartial>,
    /// This step's executions for the run's profiles, gathered on a worker
    /// thread during the build.
    pub profile_share: crate::provenance::stats::ProfileShare,
    /// Message-size classes this step's calls had that have no id yet.
    pub unknown_classes: Vec<(u32, u8)>,
    /// The functions this step executed, gathered with `share`.
    pub functions: crate::util::bits::MarkedSet,
    /// Whether each of `out.executions` has its final label.
    pub settled: Vec<bool>,
    /// Where the stream stands.
    state: StreamState,
    /// Steps read so far.
    steps: u64,
    /// Rows read so far.
    rows: u64,
    /// Since when the stream's next step has been awaited (its request,
    /// or its last step's arrival when the next was asked for at once):
    /// the `--step-timeout` of every stream runs from there, so streams
    /// waited for one after another time out together, not one after the
    /// other.
    waiting_since: Option<Instant>,
    /// The run step of the last step read.
    last_step: Option<u64>,
    /// Run step at which the stream stopped (ended, stalled or failed).
    stopped_at: Option<u64>,
    /// Problems in the input so far, by kind (reader and call-stack replay).
    issues: BTreeMap<&'static str, u64>,
    /// What the incident linking keeps of the stream (message ordinals,
    /// usual bytes per function).
    pub links: crate::incidents::tau::StreamLinks,
    /// First and last timestamp read so far (µs): the rank time the
    /// stream covers.
    span: Option<(u64, u64)>,
}

impl OwnedStream {
    /// A stream not yet opened.
    pub fn new(spec: StreamSpec) -> Self {
        OwnedStream {
            calls: CallStackBuilder::new(
                spec.program,
                spec.app_rank,
                spec.path.display().to_string(),
                EventOptions::default(),
            ),
            spec,
            reader: None,
            spare: None,
            map: IndexMap::default(),
            out: StepEvents::default(),
            verdicts: Vec::new(),
            predictions: Vec::new(),
            modelled: Vec::new(),
            share: None,
            unknown_classes: Vec::new(),
            profile_share: Default::default(),
            functions: Default::default(),
            settled: Vec::new(),
            state: StreamState::Reading,
            steps: 0,
            rows: 0,
            last_step: None,
            waiting_since: None,
            stopped_at: None,
            issues: BTreeMap::new(),
            links: Default::default(),
            span: None,
        }
    }

    /// The stream's path, for messages.
    pub fn name(&self) -> String {
        self.spec.path.display().to_string()
    }

    /// Where the stream stands.
    pub fn state(&self) -> &StreamState {
        &self.state
    }

    /// Keeps the step's rows, once built, until the next request (the
    /// outputs see its name definitions), then hands them back for reuse.
    pub fn keep_rows(&mut self, trace: TraceStep) {
        self.spare = Some(trace);
    }

    /// Widens the time the stream covers by this step's events.
    pub fn widen_span(&mut self) {
        self.span = match (self.span, self.out.first_ts, self.out.last_ts) {
            (Some((a, b)), Some(f), Some(l)) => Some((a.min(f), b.max(l))),
            (None, Some(f), Some(l)) => Some((f, l)),
            (span, _, _) => span,
        };
    }

    /// The rank time the stream covers so far (µs, first to last event).
    pub fn covered_us(&self) -> u64 {
        self.span.map_or(0, |(a, b)| b.saturating_sub(a))
    }

    /// Whether the stream has stopped delivering steps.
    pub fn done(&self) -> bool {
        self.state != StreamState::Reading
    }

    /// Starts opening the stream through `sources` (on its thread); see
    /// [`OwnedStream::opened`].
    pub fn start_open(&mut self, sources: &Arc<dyn SourceOpener>) {
        self.reader = Some(ThreadedReader::open(&self.spec, sources.clone()));
    }

    /// Waits for the open. A stream that does not appear within the open
    /// timeout is a setup error (`Err`: the run stops); one that exists but
    /// cannot be opened is marked failed and the run goes on.
    pub fn opened(&mut self, opts: &RunOptions) -> anyhow::Result<()> {
        let Some(reader) = self.reader.as_mut() else {
            return Ok(());
        };
        // The thread itself waits up to the open timeout; allow it a margin.
        let limit = opts.inputs.open_timeout + Duration::from_secs(30);
        match reader.wait(limit, &|| signals::received().is_some()) {
            Waited::Opened | Waited::Interrupted => Ok(()),
            Waited::Failed(e) if e.is_not_found() => Err(anyhow::Error::new(e))
                .with_context(|| format!("opening stream of app rank {}", self.spec.app_rank)),
            Waited::Failed(e) => {
                self.fail(0, format!("cannot open: {e}"), opts.quiet);
                Ok(())
            }
            other => {
                self.fail(0, format!("opening did not finish ({other:?})"), opts.quiet);
                Ok(())
            }
        }
    }

    fn stop(&mut self, step: u64, state: StreamState) {
        self.state = state;
        self.stopped_at = Some(step);
        if let Some(r) = self.reader.take() {
            if matches!(self.state, StreamState::Stalled { .. }) {
                r.abandon();
            }
            // Otherwise dropping `r` waits for its thread to close the
            // stream (see `ThreadedReader`'s `Drop`).
        }
    }

    fn fail(&mut self, step: u64, message: String, quiet: bool) {
        if !quiet {
            eprintln!(
                "warning: {}: stream failed at step {step}: {message}; the other streams go on",
                self.name()
            );
        }
        self.stop(step, StreamState::Failed { message });
    }

    /// Gives the step buffers (rows, executions, verdicts) back to the
    /// allocator once the stream has nothing more to deliver: a rank whose
    /// other streams go on, and the end-of-run write, then do not carry the
    /// largest step's memory.
    pub fn release_step_buffers(&mut self) {
        self.spare = None;
        self.out = StepEvents::default();
        self.verdicts = Vec::new();
        self.settled = Vec::new();
    }

    /// Asks the stream's thread for the next step (all streams of the rank
    /// are asked first, then waited for: they are read in parallel).
    pub fn request_step(&mut self) {
        let spare = self.spare.take();
        if let Some(r) = self.reader.as_mut() {
            r.request(spare);
            self.waiting_since.get_or_insert_with(Instant::now);
        }
    }

    /// The step requested, or `None` once the stream has ended, stalled
    /// (no step within `--step-timeout`) or failed — which this records —
    /// or when a stop signal interrupts the wait.
    pub fn wait_step(&mut self, opts: &RunOptions, step: u64) -> Option<TraceStep> {
        let reader = self.reader.as_mut()?;
        let limit = opts.step_timeout.max(Duration::from_millis(100));
        let since = *self.waiting_since.get_or_insert_with(Instant::now);
        let left = (since + limit).saturating_duration_since(Instant::now());
        let waited = reader.wait(left, &|| signals::received().is_some());
        if !matches!(waited, Waited::Interrupted | Waited::Opened) {
            self.waiting_since = None;
        }
        match waited {
            Waited::Step(st) => {
                self.steps += 1;
                self.rows += st.row_count();
                self.last_step = Some(step);
                self.count_reader_issues(&st.issues);
                Some(*st)
            }
            Waited::EndOfStream => {
                self.stop(step, StreamState::Ended);
                None
            }
            Waited::TimedOut => {
                let after_secs = since.elapsed().as_secs_f64();
                if !opts.quiet {
                    eprintln!(
                        "warning: {}: no new step for {after_secs:.0} s; treating the stream as ended",
                        self.name()
                    );
                }
                self.stop(step, StreamState::Stalled { after_secs });
                None
            }
            Waited::Failed(e) => {
                self.fail(step, format!("{e}"), opts.quiet);
                None
            }
            // Stopping: the request stays outstanding; the run ends.
            Waited::Interrupted | Waited::Opened => None,
        }
    }

    fn count_reader_issues(&mut self, issues: &StepIssues) {
        for (k, n) in &issues.counts {
            *self.issues.entry(k.name()).or_default() += n;
        }
    }

    /// Counts the problems the build of this step found (in `out.issues`).
    pub fn count_event_issues(&mut self) {
        for (k, n) in &self.out.issues.counts {
            *self.issues.entry(k.name()).or_default() += n;
        }
    }

    /// This step's labelled executions, as the outputs see them; `index`
    /// is the stream's index on this rank.
    pub fn labelled(&self, index: usize, step: u64) -> LabelledStep<'_> {
        LabelledStep {
            stream: index,
            program: self.spec.program,
            app_rank: self.spec.app_rank,
            step,
            events: &self.out,
            calls: &self.calls,
            verdicts: &self.verdicts,
            predictions: &self.predictions,
            settled: &self.settled,
            new_attributes: self.spare.as_ref().map_or(&[][..], |st| &st.new_attributes),
        }
    }

    /// The stream's row of the provenance file's `streams` table.
    pub fn row(&self) -> StreamRow {
        let (message, stalled) = match &self.state {
            StreamState::Failed { message } => (message.clone(), 0.0),
            StreamState::Stalled { after_secs } => (String::new(), *after_secs),
            _ => (String::new(), 0.0),
        };
        let issues: Vec<String> = self
            .issues
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        StreamRow {
            pid: self.spec.program,
            rid: self.spec.app_rank,
            path: fixed(&self.name()),
            state: fixed(self.state.name()),
            steps: self.steps,
            rows: self.rows,
            last_step: self.last_step.unwrap_or(u64::MAX),
            stopped_at: self.stopped_at.unwrap_or(u64::MAX),
            stalled_after_s: stalled,
            issues: self.issues.values().sum(),
            issue_counts: fixed(&issues.join("; ")),
            message: fixed(&message),
        }
    }
}

impl StreamStates for Vec<OwnedStream> {
    fn stream_rows(&self) -> Vec<StreamRow> {
        self.iter().map(OwnedStream::row).collect()
    }
}
