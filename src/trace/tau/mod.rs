//! TAU traces over ADIOS2: the first [`TraceSource`].
//!
//! Each call to [`TauStreamReader::next_step`] returns the function, comm and
//! counter rows of one ADIOS2 step plus the attributes that became visible in
//! that step. Rows that cannot be right (impossible program/rank/thread
//! values, unknown event-type, function or counter index) are counted per
//! kind, summarised once per step with stream/step/row context, and dropped.
//! Rows of a thread that are out of time order are stably sorted.
//!
//! Function rows, by far the most numerous, are checked as they are read,
//! a chunk at a time, and kept narrowed to a [`FuncEvent`] (half the
//! stream's width): a step's full-width rows are never all in memory.
//!
//! Layout: this file reads (ADIOS2 variables and attributes into rows);
//! [`validate`] checks rows against the names the stream defined;
//! `order` puts each thread's rows in time order; [`streams`] lists the
//! streams of a run from TAU's naming.

mod order;
pub mod streams;
pub mod validate;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::adios::{AdiosAttrValue, AdiosError, Engine, ReadOptions, StepStatus, StreamReader};
use super::dictionary::Dictionary;
use super::format::*;
use super::issues::{IssueKind, StepIssues};
use super::source::{NextStep, SourceOpener, StreamSpec, TraceError, TraceSource};
use super::step::TraceStep;
pub use validate::StepValidator;

/// Largest plausible value of the (defunct) program column.
pub const MAX_PROGRAM: u64 = 1 << 16;
/// Largest plausible thread id (TAU numbers CPU and GPU virtual threads densely).
pub const MAX_THREAD: u64 = 1 << 20;
/// Largest plausible rank when the stream name does not tell the rank.
pub const MAX_RANK: u64 = 1 << 24;
pub use crate::trace::dictionary::MAX_NAME_INDEX;

/// How to open and validate a TAU stream.
#[derive(Debug, Clone)]
pub struct TauReaderOptions {
    /// ADIOS2 engine the stream was written with.
    pub engine: Engine,
    /// Value written into the program column of every row (TAU's is defunct).
    pub program_idx: u64,
    /// Rank every row must carry; by default taken from the stream name.
    pub expected_rank: Option<u64>,
    /// Open time-out and engine parameters.
    pub adios: ReadOptions,
    /// Print the per-step issue summary to stderr.
    pub report_issues: bool,
}

impl Default for TauReaderOptions {
    fn default() -> Self {
        TauReaderOptions {
            engine: Engine::BPFile,
            program_idx: 0,
            expected_rank: None,
            adios: ReadOptions::default(),
            report_issues: true,
        }
    }
}

/// Reads one TAU stream step by step.
pub struct TauStreamReader {
    reader: StreamReader,
    opts: TauReaderOptions,
    stream: String,
    validator: StepValidator,
    seen_attributes: HashSet<String>,
    steps_read: usize,
    /// Row buffers handed back with [`TauStreamReader::recycle`].
    spare: RowBuffers,
    /// Function rows at full width, one read chunk at a time.
    func_chunk: Vec<FuncRow>,
}

/// Function rows per ADIOS2 read: 16 Ki rows are 768 KiB at the stream's
/// width, small enough to stay in cache while they are checked and narrowed.
const FUNC_CHUNK_ROWS: usize = 1 << 14;

/// Reusable row storage, so that steady-state reading does not allocate.
#[derive(Debug, Default)]
struct RowBuffers {
    funcs: Vec<FuncEvent>,
    comms: Vec<CommRow>,
    counters: Vec<CounterRow>,
}

impl TauStreamReader {
    /// Opens `path` (waits up to `opts.adios.open_timeout` for it to appear).
    pub fn open(path: &Path, opts: TauReaderOptions) -> Result<Self, TraceError> {
        let reader = StreamReader::open(path, opts.engine, &opts.adios)?;
        let expected_rank = opts.expected_rank.or_else(|| rank_from_stream_name(path));
        Ok(TauStreamReader {
            reader,
            stream: path.display().to_string(),
            validator: StepValidator::new(opts.program_idx, expected_rank),
            opts,
            seen_attributes: HashSet::new(),
            steps_read: 0,
            spare: RowBuffers::default(),
            func_chunk: Vec::new(),
        })
    }

    /// The stream's path, as text.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// The stream's path.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(&self.stream)
    }

    /// Names known so far.
    pub fn dictionary(&self) -> &Dictionary {
        self.validator.dictionary()
    }

    /// Number of attributes seen so far.
    pub fn attribute_count(&self) -> usize {
        self.seen_attributes.len()
    }

    /// Hands a finished step's row buffers back for reuse by the next step
    /// (optional; saves the page faults of fresh multi-megabyte buffers).
    pub fn recycle(&mut self, step: TraceStep) {
        self.spare = RowBuffers {
            funcs: step.funcs,
            comms: step.comms,
            counters: step.counters,
        };
    }

    /// Steps read so far.
    pub fn steps_read(&self) -> usize {
        self.steps_read
    }

    fn ctx(&self, source: AdiosError) -> TraceError {
        TraceError::Adios {
            stream: self.stream.clone(),
            step: self.steps_read,
            source,
        }
    }

    /// Waits up to `timeout` for the next step and reads it completely
    /// (the ADIOS2 step is released before returning, so a staging writer is
    /// not held up while the step is analysed).
    pub fn next_step(&mut self, timeout: Duration) -> Result<NextStep, TraceError> {
        match self.reader.begin_step(timeout).map_err(|e| self.ctx(e))? {
            StepStatus::NotReady => return Ok(NextStep::NotReady),
            StepStatus::EndOfStream => return Ok(NextStep::EndOfStream),
            StepStatus::Ready => {}
        }
        let step = self.read_open_step().map_err(|e| self.ctx(e));
        let end = self.reader.end_step().map_err(|e| self.ctx(e));
        let mut step = step?;
        end?;
        self.validator.finish(&mut step);
        if self.opts.report_issues && !step.issues.is_empty() {
            eprintln!("warning: {}", step.issues.summary(&self.stream, step.step));
        }
        self.steps_read += 1;
        Ok(NextStep::Step(Box::new(step)))
    }

    fn read_open_step(&mut self) -> Result<TraceStep, AdiosError> {
        let mut step = TraceStep {
            step: self.steps_read,
            ..Default::default()
        };
        self.read_new_attributes(&mut step)?;
        // The rows are checked as they are read, against this step's names.
        self.validator.begin(&mut step);
        let int = |r: &mut StreamReader, n: &str| -> Result<Option<i64>, AdiosError> {
            Ok(r.read_integer(n)?
                .map(|v| v.clamp(i64::MIN as i128, i64::MAX as i128) as i64))
        };
        let d = &mut step.declared;
        d.timers = int(&mut self.reader, VAR_TIMER_COUNT)?;
        d.counters = int(&mut self.reader, VAR_COUNTER_DEF_COUNT)?;
        d.event_types = int(&mut self.reader, VAR_EVENT_TYPE_COUNT)?;
        d.threads = int(&mut self.reader, VAR_THREAD_COUNT)?;
        d.programs = int(&mut self.reader, VAR_PROGRAM_COUNT)?;
        d.comm_ranks = int(&mut self.reader, VAR_COMM_RANK_COUNT)?;
        let spare = std::mem::take(&mut self.spare);
        step.funcs = spare.funcs;
        self.read_funcs(&mut step)?;
        let issues = &mut step.issues;
        let (comms, n) =
            self.read_group::<COMM_WIDTH>(VAR_COMM_COUNT, VAR_COMM_ROWS, spare.comms, issues)?;
        step.comms = comms;
        step.declared.comm_events = n;
        let (counters, n) = self.read_group::<COUNTER_WIDTH>(
            VAR_COUNTER_COUNT,
            VAR_COUNTER_ROWS,
            spare.counters,
            issues,
        )?;
        step.counters = counters;
        step.declared.counter_events = n;
        Ok(step)
    }

    /// Reads the function rows a chunk at a time, each chunk checked and
    /// narrowed into `step.funcs` as it arrives (the dictionary already has
    /// this step's attributes), so the full-width rows of a big step are
    /// never all in memory.
    fn read_funcs(&mut self, step: &mut TraceStep) -> Result<(), AdiosError> {
        step.funcs.clear();
        let (n, declared) =
            self.row_count::<FUNC_WIDTH>(VAR_FUNC_COUNT, VAR_FUNC_ROWS, &mut step.issues)?;
        step.declared.timer_events = declared;
        let Some(n) = n else {
            return Ok(());
        };
        let (reader, validator) = (&mut self.reader, &mut self.validator);
        let read = reader.read_rows_chunked::<FUNC_WIDTH>(
            VAR_FUNC_ROWS,
            n,
            FUNC_CHUNK_ROWS,
            &mut self.func_chunk,
            |rows, first_row| validator.take_funcs(rows, first_row, step),
        );
        if !array_read(read, &mut step.issues)? {
            step.funcs.clear();
        }
        Ok(())
    }

    /// Reads a count scalar and its array; the array is read with an explicit
    /// selection of the rows that exist this step.
    fn read_group<const W: usize>(
        &mut self,
        count_var: &str,
        rows_var: &str,
        mut buf: Vec<[u64; W]>,
        issues: &mut StepIssues,
    ) -> Result<(Vec<[u64; W]>, Option<u64>), AdiosError> {
        buf.clear();
        let (n, declared) = self.row_count::<W>(count_var, rows_var, issues)?;
        let Some(n) = n else {
            return Ok((buf, declared));
        };
        let read = self.reader.read_rows_into::<W>(rows_var, n, &mut buf);
        if !array_read(read, issues)? {
            buf.clear();
        }
        Ok((buf, declared))
    }

    /// The count scalar of a row array (as declared) and the number of rows
    /// to read: the declared count bounded by the array's rows, or `None`
    /// when the array is absent or not `[n, W]` (counted as an issue).
    fn row_count<const W: usize>(
        &mut self,
        count_var: &str,
        rows_var: &str,
        issues: &mut StepIssues,
    ) -> Result<(Option<usize>, Option<u64>), AdiosError> {
        let declared = self
            .reader
            .read_integer(count_var)?
            .map(|v| v.clamp(0, u64::MAX as i128) as u64);
        let Some(shape) = self.reader.shape(rows_var)? else {
            if declared.unwrap_or(0) > 0 {
                issues.record(IssueKind::MissingArray, || {
                    format!(
                        "{count_var} = {} but {rows_var} is absent",
                        declared.unwrap_or(0)
                    )
                });
            }
            return Ok((None, declared));
        };
        if shape.len() != 2 || shape[1] != W {
            issues.record(IssueKind::BadArray, || {
                format!("{rows_var} has shape {shape:?}, expected [n, {W}]")
            });
            return Ok((None, declared));
        }
        let available = shape[0] as u64;
        let n = match declared {
            Some(d) if d != available => {
                issues.record(IssueKind::CountMismatch, || {
                    format!("{count_var} = {d} but {rows_var} has {available} rows")
                });
                d.min(available)
            }
            _ => available,
        };
        Ok((Some(n as usize), declared))
    }

    fn read_new_attributes(&mut self, step: &mut TraceStep) -> Result<(), AdiosError> {
        // Every attribute is dropped from the IO once read (below), so the
        // engine lists only the attributes it installed since: a step costs
        // its new names, not every name defined so far (at 10^5 functions,
        // tens of milliseconds per stream and step, and the engine's copy
        // of every name). An engine that installs all of them again each
        // step is still right: known names are skipped.
        let names = self.reader.attribute_names()?;
        let mut new: Vec<String> = names
            .into_iter()
            .filter(|n| !self.seen_attributes.contains(n))
            .collect();
        // Deterministic order regardless of the engine's listing order.
        new.sort();
        for key in new {
            let value = match self.reader.attribute(&key)? {
                Some(AdiosAttrValue::Text(v)) => v,
                Some(AdiosAttrValue::Other(v)) => v,
                None => continue,
            };
            // Applied to the dictionary by `StepValidator::accept`.
            step.new_attributes.push(parse_attribute(&key, &value));
            self.seen_attributes.insert(key);
        }
        self.reader.forget_attributes()?;
        Ok(())
    }
}

/// Whether a row array was read: an array ADIOS2 calls invalid (wrong type
/// or shape) is a counted issue of the step, not an error of the stream,
/// and reads as `false`; the caller drops what it got of it.
fn array_read(read: Result<bool, AdiosError>, issues: &mut StepIssues) -> Result<bool, AdiosError> {
    match read {
        Ok(_) => Ok(true),
        Err(AdiosError::Invalid { msg, .. }) => {
            issues.record(IssueKind::BadArray, || msg);
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

impl TraceSource for TauStreamReader {
    fn name(&self) -> &str {
        &self.stream
    }

    fn next_step(&mut self, timeout: Duration) -> Result<NextStep, TraceError> {
        TauStreamReader::next_step(self, timeout)
    }

    fn recycle(&mut self, step: TraceStep) {
        TauStreamReader::recycle(self, step)
    }
}

/// The TAU streams of a run: listed from the inputs, each opened with the
/// same engine and open time-out, rows stamped with the stream's program
/// index and checked against its application rank.
#[derive(Debug, Clone)]
pub struct TauSources {
    /// Which streams, and their engine.
    pub inputs: streams::TauInputs,
    /// Print each step's issue summary to stderr.
    pub report_issues: bool,
}

impl SourceOpener for TauSources {
    fn list_streams(&self) -> anyhow::Result<Vec<StreamSpec>> {
        let mut specs = streams::list_streams(&self.inputs)?;
        streams::wait_for_streams(&self.inputs, &mut specs, !self.report_issues)?;
        Ok(specs)
    }

    fn open(&self, stream: &StreamSpec) -> Result<Box<dyn TraceSource>, TraceError> {
        if stream.waited_in_vain && self.inputs.engine.for_reading(&stream.path)?.is_none() {
            return Err(TraceError::Open(AdiosError::NotFound {
                path: stream.path.display().to_string(),
                what: "it (by AD rank 0, while listing the streams)".into(),
                waited: self.inputs.open_timeout.as_secs_f64(),
            }));
        }
        let opts = TauReaderOptions {
            engine: self.inputs.engine,
            program_idx: u64::from(stream.program),
            expected_rank: Some(stream.app_rank),
            adios: ReadOptions {
                // Rank 0 waited the whole timeout for it already.
                open_timeout: if stream.waited_in_vain {
                    std::time::Duration::ZERO
                } else {
                    self.inputs.open_timeout
                },
                ..Default::default()
            },
            report_issues: self.report_issues,
        };
        Ok(Box::new(TauStreamReader::open(&stream.path, opts)?))
    }
}
