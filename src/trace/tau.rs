//! Step-by-step reader of one TAU trace stream, with validation.
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

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::adios::{AdiosError, AttrValue, Engine, ReadOptions, StepStatus, StreamReader};
use super::format::*;

/// Largest plausible value of the (defunct) program column.
pub const MAX_PROGRAM: u64 = 1 << 16;
/// Largest plausible thread id (TAU numbers CPU and GPU virtual threads densely).
pub const MAX_THREAD: u64 = 1 << 20;
/// Largest plausible rank when the stream name does not tell the rank.
pub const MAX_RANK: u64 = 1 << 24;
/// Name indices accepted in `timer <i>` / `counter <i>` / `event_type <i>`
/// attributes are below this. TAU numbers them densely from 0 in order of
/// first use, so a million is far beyond any real process. The bound is
/// also what one bad attribute can cost: names are stored by index, so an
/// index `i` sizes the stream's tables to `i` entries (at 2^24, one
/// attribute cost ~0.5 GB per stream and 0.7 s per step).
pub const MAX_NAME_INDEX: u64 = 1 << 20;

/// An error that stops reading a stream.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{stream}: step {step}: {source}")]
    Adios {
        stream: String,
        step: usize,
        #[source]
        source: AdiosError,
    },
    #[error(transparent)]
    Open(#[from] AdiosError),
}

/// Kinds of rejected or repaired input, counted per step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum IssueKind {
    /// Program column implausibly large.
    BadProgram,
    /// Rank column differs from the stream's rank (or is implausible).
    BadRank,
    /// Thread column implausibly large.
    BadThread,
    /// Event-type index undefined, or a comm type in a function row (and vice versa).
    BadEventType,
    /// Function index with no `timer <i>` attribute (yet).
    UnknownFunction,
    /// Counter index with no `counter <i>` attribute (yet).
    UnknownCounter,
    /// Rows of a thread out of time order within the step (repaired by sorting).
    OutOfOrder,
    /// A row earlier than the thread's last row of a previous step (kept).
    OutOfOrderAcrossSteps,
    /// Declared count differs from the array's rows (the smaller is used).
    CountMismatch,
    /// A count says rows exist but the array is absent.
    MissingArray,
    /// An attribute key that looks like ours but does not parse.
    MalformedAttribute,
    /// An array of the wrong type or shape (the whole group is skipped).
    BadArray,
}

impl IssueKind {
    pub fn name(self) -> &'static str {
        match self {
            IssueKind::BadProgram => "bad program",
            IssueKind::BadRank => "bad rank",
            IssueKind::BadThread => "bad thread",
            IssueKind::BadEventType => "bad event type",
            IssueKind::UnknownFunction => "unknown function index",
            IssueKind::UnknownCounter => "unknown counter index",
            IssueKind::OutOfOrder => "out-of-order rows (sorted)",
            IssueKind::OutOfOrderAcrossSteps => "row older than previous step",
            IssueKind::CountMismatch => "count/array mismatch",
            IssueKind::MissingArray => "missing array",
            IssueKind::MalformedAttribute => "malformed attribute",
            IssueKind::BadArray => "bad array",
        }
    }
}

/// Issues found in one step: a count per kind and the first example of each.
#[derive(Debug, Clone, Default)]
pub struct StepIssues {
    pub counts: BTreeMap<IssueKind, u64>,
    pub first_example: BTreeMap<IssueKind, String>,
}

impl StepIssues {
    pub fn record(&mut self, kind: IssueKind, example: impl FnOnce() -> String) {
        let c = self.counts.entry(kind).or_insert(0);
        *c += 1;
        if *c == 1 {
            self.first_example.insert(kind, example());
        }
    }

    fn add(&mut self, kind: IssueKind, n: u64, example: impl FnOnce() -> String) {
        if n == 0 {
            return;
        }
        *self.counts.entry(kind).or_insert(0) += n;
        self.first_example.entry(kind).or_insert_with(example);
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    pub fn count(&self, kind: IssueKind) -> u64 {
        self.counts.get(&kind).copied().unwrap_or(0)
    }

    /// Rows dropped (issues that remove a row).
    pub fn dropped_rows(&self) -> u64 {
        use IssueKind::*;
        [
            BadProgram,
            BadRank,
            BadThread,
            BadEventType,
            UnknownFunction,
            UnknownCounter,
        ]
        .iter()
        .map(|k| self.count(*k))
        .sum()
    }

    /// One line for the log: `stream: step s: 3 unknown function index (first: ...); ...`.
    pub fn summary(&self, stream: &str, step: usize) -> String {
        let parts: Vec<String> = self
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {} (first: {})", k.name(), self.first_example[k]))
            .collect();
        format!("{stream}: step {step}: {}", parts.join("; "))
    }
}

/// Scalars TAU writes beside the arrays; `None` where absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeclaredCounts {
    pub timer_events: Option<u64>,
    pub comm_events: Option<u64>,
    pub counter_events: Option<u64>,
    /// `timer_count`: functions defined so far.
    pub timers: Option<i64>,
    /// `counter_count`: counters defined so far.
    pub counters: Option<i64>,
    pub event_types: Option<i64>,
    pub threads: Option<i64>,
    pub programs: Option<i64>,
    pub comm_ranks: Option<i64>,
}

/// Names known so far for one stream, by local index.
#[derive(Debug, Clone, Default)]
pub struct Dictionary {
    pub functions: Vec<Option<String>>,
    pub counters: Vec<Option<String>>,
    pub event_types: Vec<Option<EventKind>>,
    pub metadata: Vec<MetadataEntry>,
    pub other: Vec<(String, String)>,
}

fn set_at<T: Clone>(v: &mut Vec<Option<T>>, i: u64, value: T) {
    let i = i as usize;
    if v.len() <= i {
        v.resize(i + 1, None);
    }
    v[i] = Some(value);
}

impl Dictionary {
    pub fn function(&self, idx: u64) -> Option<&str> {
        self.functions.get(idx as usize)?.as_deref()
    }
    pub fn counter(&self, idx: u64) -> Option<&str> {
        self.counters.get(idx as usize)?.as_deref()
    }
    pub fn event_type(&self, idx: u64) -> Option<EventKind> {
        *self.event_types.get(idx as usize)?
    }
}

/// One step of a TAU stream, validated.
#[derive(Debug, Clone, Default)]
pub struct TauStep {
    /// Step number, counted from 0 in the order steps were read.
    pub step: usize,
    /// The program every row of the stream belongs to (`--program-idx`).
    pub program: u64,
    /// Function rows, checked and narrowed (see [`FuncEvent`]).
    pub funcs: Vec<FuncEvent>,
    /// Comm and counter rows as the stream has them, program column set.
    pub comms: Vec<CommRow>,
    pub counters: Vec<CounterRow>,
    /// Attributes that became visible in this step (first step: all so far).
    pub new_attributes: Vec<Attribute>,
    pub declared: DeclaredCounts,
    pub issues: StepIssues,
}

/// One step's rows as a stream has them, before any check: how tests and
/// the fuzz targets hand a step to [`StepValidator::accept`] without an
/// ADIOS2 stream.
#[derive(Debug, Clone, Default)]
pub struct RawStep {
    pub step: usize,
    pub funcs: Vec<FuncRow>,
    pub comms: Vec<CommRow>,
    pub counters: Vec<CounterRow>,
    pub new_attributes: Vec<Attribute>,
}

impl TauStep {
    /// The function rows in the stream's layout (dumps, tests).
    pub fn func_rows(&self) -> Vec<FuncRow> {
        self.funcs.iter().map(|e| e.to_row(self.program)).collect()
    }

    /// Smallest and largest timestamp over all rows of the step.
    pub fn time_range(&self) -> Option<(u64, u64)> {
        let ts = self
            .funcs
            .iter()
            .map(|r| r.timestamp)
            .chain(self.comms.iter().map(|r| r[COMM_COL_TIMESTAMP]))
            .chain(self.counters.iter().map(|r| r[COUNTER_COL_TIMESTAMP]));
        ts.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((a, b)) => Some((a.min(t), b.max(t))),
        })
    }
}

/// Result of [`TauStreamReader::next_step`].
#[derive(Debug)]
pub enum NextStep {
    Step(Box<TauStep>),
    /// Nothing arrived within the timeout; try again later.
    NotReady,
    /// The writer closed the stream.
    EndOfStream,
}

/// How to open and validate a TAU stream.
#[derive(Debug, Clone)]
pub struct TauReaderOptions {
    pub engine: Engine,
    /// Value written into the program column of every row (TAU's is defunct).
    pub program_idx: u64,
    /// Rank every row must carry; by default taken from the stream name.
    pub expected_rank: Option<u64>,
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

/// Small map thread id → last timestamp, dense for small ids.
#[derive(Debug, Default)]
struct LastTimestamp {
    dense: Vec<u64>,
    sparse: std::collections::HashMap<u64, u64>,
}

impl LastTimestamp {
    fn merge_max(&mut self, other: &LastTimestamp) {
        for (thread, &ts) in other.dense.iter().enumerate() {
            let t = self.get_mut(thread as u64);
            *t = (*t).max(ts);
        }
        for (&thread, &ts) in &other.sparse {
            let t = self.get_mut(thread);
            *t = (*t).max(ts);
        }
    }

    /// Inlined with the growth out of line: rows whose threads interleave
    /// (counter rows, in time order across threads) call this per row.
    #[inline(always)]
    fn get_mut(&mut self, thread: u64) -> &mut u64 {
        let t = thread as usize;
        if thread < 4096 && t < self.dense.len() {
            return &mut self.dense[t];
        }
        self.get_mut_slow(thread)
    }

    #[inline(never)]
    fn get_mut_slow(&mut self, thread: u64) -> &mut u64 {
        if thread < 4096 {
            let t = thread as usize;
            if self.dense.len() <= t {
                self.dense.resize(t + 1, 0);
            }
            &mut self.dense[t]
        } else {
            self.sparse.entry(thread).or_insert(0)
        }
    }
}

/// Checks the steps of one stream in memory: keeps the dictionary of names
/// the stream's attributes define, drops impossible rows, overrides the
/// program column and puts each thread's rows in time order.
///
/// [`TauStreamReader`] runs every step it reads through one of these; it is
/// public so that steps built in memory (tests, the fuzz target) get exactly
/// the same treatment without an ADIOS2 stream.
#[derive(Debug)]
pub struct StepValidator {
    /// Value written into the program column of every kept row.
    program_idx: u64,
    /// Rank every row must carry (`None`: any rank below [`MAX_RANK`]).
    expected_rank: Option<u64>,
    dict: Dictionary,
    /// Lookup tables of `dict`; rebuilt only after the dictionary changed,
    /// so a step costs time in its rows, not in the number of names.
    check: Option<RowCheck>,
    /// Last timestamp of each thread in earlier steps, per row kind.
    last_ts: [LastTimestamp; 3],
    /// The time-order check of this step's function rows, fed as they are
    /// taken (each chunk is still in cache then).
    func_order: OrderScan,
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

    pub fn stream(&self) -> &str {
        &self.stream
    }

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
    pub fn recycle(&mut self, step: TauStep) {
        self.spare = RowBuffers {
            funcs: step.funcs,
            comms: step.comms,
            counters: step.counters,
        };
    }

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

    fn read_open_step(&mut self) -> Result<TauStep, AdiosError> {
        let mut step = TauStep {
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
        let (comms, n) = self.read_group::<COMM_WIDTH>(
            VAR_COMM_COUNT,
            VAR_COMM_ROWS,
            spare.comms,
            &mut step.issues,
        )?;
        step.comms = comms;
        step.declared.comm_events = n;
        let (counters, n) = self.read_group::<COUNTER_WIDTH>(
            VAR_COUNTER_COUNT,
            VAR_COUNTER_ROWS,
            spare.counters,
            &mut step.issues,
        )?;
        step.counters = counters;
        step.declared.counter_events = n;
        Ok(step)
    }

    /// Reads the function rows a chunk at a time, each chunk checked and
    /// narrowed into `step.funcs` as it arrives (the dictionary already has
    /// this step's attributes), so the full-width rows of a big step are
    /// never all in memory.
    fn read_funcs(&mut self, step: &mut TauStep) -> Result<(), AdiosError> {
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

    fn read_new_attributes(&mut self, step: &mut TauStep) -> Result<(), AdiosError> {
        let names = self.reader.attribute_names()?;
        let mut new: Vec<String> = names
            .into_iter()
            .filter(|n| !self.seen_attributes.contains(n))
            .collect();
        // Deterministic order regardless of the engine's listing order.
        new.sort();
        for key in new {
            let value = match self.reader.attribute(&key)? {
                Some(AttrValue::Text(v)) => v,
                Some(AttrValue::Other(v)) => v,
                None => continue,
            };
            // Applied to the dictionary by `StepValidator::accept`.
            step.new_attributes.push(parse_attribute(&key, &value));
            self.seen_attributes.insert(key);
        }
        Ok(())
    }
}

impl StepValidator {
    /// A validator for a stream whose rows get program `program_idx` and
    /// must carry rank `expected_rank` (any plausible rank when `None`).
    pub fn new(program_idx: u64, expected_rank: Option<u64>) -> Self {
        StepValidator {
            program_idx,
            expected_rank,
            dict: Dictionary::default(),
            check: None,
            last_ts: Default::default(),
            func_order: OrderScan::default(),
        }
    }

    /// Names known so far.
    pub fn dictionary(&self) -> &Dictionary {
        &self.dict
    }

    /// Everything the reader does to a step, for a step whose rows are all
    /// in memory: applies its attributes to the dictionary (malformed ones
    /// are counted), then drops impossible rows, narrows the function rows
    /// and orders each thread's rows. Issues go to the returned step's
    /// `issues`.
    pub fn accept(&mut self, raw: RawStep) -> TauStep {
        let mut step = TauStep {
            step: raw.step,
            comms: raw.comms,
            counters: raw.counters,
            new_attributes: raw.new_attributes,
            ..Default::default()
        };
        self.begin(&mut step);
        self.take_funcs(&raw.funcs, 0, &mut step);
        self.finish(&mut step);
        step
    }

    /// First part of checking a step: applies `step.new_attributes` to the
    /// dictionary, so that the step's rows are checked against the names
    /// known up to and including this step.
    pub fn begin(&mut self, step: &mut TauStep) {
        step.program = self.program_idx;
        self.func_order = OrderScan::default();
        for attr in &step.new_attributes {
            self.apply_attribute(attr, &mut step.issues);
        }
    }

    /// Checks function rows (`rows[0]` is row `first_row` of the step) and
    /// appends the ones that can be right to `step.funcs`, narrowed; the
    /// others are counted in `step.issues` and dropped.
    pub fn take_funcs(&mut self, rows: &[FuncRow], first_row: usize, step: &mut TauStep) {
        let StepValidator {
            program_idx,
            expected_rank,
            dict,
            check,
            last_ts,
            func_order,
        } = self;
        let check = row_check(check, *program_idx, *expected_rank, dict);
        let (funcs, issues) = (&mut step.funcs, &mut step.issues);
        funcs.reserve(rows.len());
        // A plain loop, not `filter_map` + `extend`: this is the reader's
        // per-row hot path, and the loop keeps the check and the order scan
        // inline, with the rare bad row handled out of line.
        for (k, row) in rows.iter().enumerate() {
            match check.func(row) {
                Ok(event) => {
                    func_order.observe(&event, &mut last_ts[0]);
                    funcs.push(event);
                }
                Err(kind) => record_bad_func_row(issues, kind, row, first_row + k),
            }
        }
    }

    /// Last part of checking a step: drops impossible comm and counter rows
    /// (setting their program column) and puts each thread's rows of all
    /// three kinds in time order; counts rows older than their thread's rows
    /// of earlier steps.
    pub fn finish(&mut self, step: &mut TauStep) {
        let check = row_check(
            &mut self.check,
            self.program_idx,
            self.expected_rank,
            &self.dict,
        );
        let issues = &mut step.issues;
        validate_rows(&mut step.comms, "comm_timestamps", issues, |row| {
            check.comm(row)
        });
        validate_rows(&mut step.counters, "counter_values", issues, |row| {
            check.counter(row)
        });
        let [f, c, k] = &mut self.last_ts;
        let func_order = std::mem::take(&mut self.func_order);
        if func_order.seen == step.funcs.len() {
            func_order.finish(&mut step.funcs, f, "event_timestamps", issues);
        } else {
            // The rows were not all taken through `take_funcs` (a failed
            // read cleared them): check what is there from scratch.
            order_by_thread(&mut step.funcs, f, "event_timestamps", issues);
        }
        order_by_thread(&mut step.comms, c, "comm_timestamps", issues);
        order_by_thread(&mut step.counters, k, "counter_values", issues);
    }

    /// Records one attribute in the dictionary, or counts it as malformed.
    pub fn apply_attribute(&mut self, attr: &Attribute, issues: &mut StepIssues) {
        let too_big = |i: u64| i >= MAX_NAME_INDEX;
        match attr {
            Attribute::Function { index, name } if !too_big(*index) => {
                self.check = None;
                set_at(&mut self.dict.functions, *index, name.clone())
            }
            Attribute::Counter { index, name } if !too_big(*index) => {
                self.check = None;
                set_at(&mut self.dict.counters, *index, name.clone())
            }
            Attribute::EventType { index, name } if !too_big(*index) => {
                match EventKind::from_name(name) {
                    Some(kind) => {
                        self.check = None;
                        set_at(&mut self.dict.event_types, *index, kind)
                    }
                    None => issues.record(IssueKind::MalformedAttribute, || {
                        format!("event_type {index} = {name:?} is not ENTRY/EXIT/SEND/RECV")
                    }),
                }
            }
            Attribute::Metadata(m) => self.dict.metadata.push(m.clone()),
            Attribute::Other { key, value } => self.dict.other.push((key.clone(), value.clone())),
            Attribute::Malformed { key, value } => issues
                .record(IssueKind::MalformedAttribute, || {
                    format!("{key:?} = {value:?}")
                }),
            other => issues.record(IssueKind::MalformedAttribute, || {
                format!("index too large in {other:?}")
            }),
        }
    }
}

/// Counts a function row the checks rejected (kept out of the row loop).
#[cold]
#[inline(never)]
fn record_bad_func_row(issues: &mut StepIssues, kind: IssueKind, row: &FuncRow, index: usize) {
    issues.record(kind, || format!("event_timestamps row {index} = {row:?}"));
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

/// The dictionary's lookup tables, rebuilt only after it changed (`check`
/// was reset). A function of the validator's fields rather than a method,
/// so that callers can hold its other fields at the same time.
fn row_check<'a>(
    check: &'a mut Option<RowCheck>,
    program_idx: u64,
    expected_rank: Option<u64>,
    dict: &Dictionary,
) -> &'a RowCheck {
    check.get_or_insert_with(|| RowCheck::new(program_idx, expected_rank, dict))
}

/// Event-type codes in the lookup table.
const ET_NONE: u8 = 0;
const ET_FUNCTION: u8 = 1;
const ET_COMM: u8 = 2;

/// Validation rules with the dictionary flattened into lookup tables, so that
/// checking a row is a handful of compares (the reader is memcpy-class).
#[derive(Debug)]
struct RowCheck {
    program_idx: u64,
    expected_rank: Option<u64>,
    event_type: Vec<u8>,
    function_known: Vec<bool>,
    counter_known: Vec<bool>,
}

fn known(names: &[Option<String>]) -> Vec<bool> {
    names.iter().map(Option::is_some).collect()
}

#[inline]
fn lookup<T: Copy>(table: &[T], idx: u64, default: T) -> T {
    usize::try_from(idx)
        .ok()
        .and_then(|i| table.get(i).copied())
        .unwrap_or(default)
}

impl RowCheck {
    fn new(program_idx: u64, expected_rank: Option<u64>, dict: &Dictionary) -> Self {
        let event_type = dict
            .event_types
            .iter()
            .map(|k| match k {
                Some(k) if k.is_function() => ET_FUNCTION,
                Some(_) => ET_COMM,
                None => ET_NONE,
            })
            .collect();
        RowCheck {
            program_idx,
            expected_rank,
            event_type,
            function_known: known(&dict.functions),
            counter_known: known(&dict.counters),
        }
    }

    #[inline(always)]
    fn common(&self, program: u64, rank: u64, thread: u64) -> Result<(), IssueKind> {
        if program >= MAX_PROGRAM {
            return Err(IssueKind::BadProgram);
        }
        let rank_ok = match self.expected_rank {
            Some(r) => rank == r,
            None => rank < MAX_RANK,
        };
        if !rank_ok {
            return Err(IssueKind::BadRank);
        }
        if thread >= MAX_THREAD {
            return Err(IssueKind::BadThread);
        }
        Ok(())
    }

    /// A function row that passes every check, narrowed: the checks bound
    /// rank, thread, event type and function index below 2^32.
    #[inline(always)]
    fn func(&self, row: &FuncRow) -> Result<FuncEvent, IssueKind> {
        self.common(row[COL_PROGRAM], row[COL_RANK], row[COL_THREAD])?;
        if lookup(&self.event_type, row[FUNC_COL_EVENT_TYPE], ET_NONE) != ET_FUNCTION {
            return Err(IssueKind::BadEventType);
        }
        if !lookup(&self.function_known, row[FUNC_COL_FUNCTION], false) {
            return Err(IssueKind::UnknownFunction);
        }
        Ok(FuncEvent::from_row(row))
    }

    #[inline]
    fn comm(&self, row: &mut CommRow) -> Result<(), IssueKind> {
        self.common(row[COL_PROGRAM], row[COL_RANK], row[COL_THREAD])?;
        if lookup(&self.event_type, row[COMM_COL_EVENT_TYPE], ET_NONE) != ET_COMM {
            return Err(IssueKind::BadEventType);
        }
        row[COL_PROGRAM] = self.program_idx;
        Ok(())
    }

    #[inline]
    fn counter(&self, row: &mut CounterRow) -> Result<(), IssueKind> {
        self.common(row[COL_PROGRAM], row[COL_RANK], row[COL_THREAD])?;
        if !lookup(&self.counter_known, row[COUNTER_COL_COUNTER], false) {
            return Err(IssueKind::UnknownCounter);
        }
        row[COL_PROGRAM] = self.program_idx;
        Ok(())
    }
}

/// Keeps the rows `check` accepts (it may repair them in place), recording
/// the rest with their row index. Valid input costs one pass and no moves.
fn validate_rows<const W: usize>(
    rows: &mut Vec<[u64; W]>,
    what: &str,
    issues: &mut StepIssues,
    check: impl Fn(&mut [u64; W]) -> Result<(), IssueKind>,
) {
    let Some(first_bad) = rows.iter_mut().position(|r| check(r).is_err()) else {
        return;
    };
    let mut index = 0usize;
    rows.retain_mut(|row| {
        let i = index;
        index += 1;
        if i < first_bad {
            return true; // already checked and repaired
        }
        match check(row) {
            Ok(()) => true,
            Err(kind) => {
                issues.record(kind, || format!("{what} row {i} = {row:?}"));
                false
            }
        }
    });
}

/// What the time-order check needs of a row of any kind.
trait ThreadTimed: std::fmt::Debug {
    fn thread(&self) -> u64;
    fn timestamp(&self) -> u64;
}

/// Stream rows: the timestamp is the last column of all three kinds.
impl<const W: usize> ThreadTimed for [u64; W] {
    #[inline]
    fn thread(&self) -> u64 {
        self[COL_THREAD]
    }
    #[inline]
    fn timestamp(&self) -> u64 {
        self[W - 1]
    }
}

impl ThreadTimed for FuncEvent {
    #[inline]
    fn thread(&self) -> u64 {
        u64::from(self.thread)
    }
    #[inline]
    fn timestamp(&self) -> u64 {
        self.timestamp
    }
}

// The timestamp is the last column of every stream row kind.
const _: () = assert!(
    FUNC_COL_TIMESTAMP == FUNC_WIDTH - 1
        && COMM_COL_TIMESTAMP == COMM_WIDTH - 1
        && COUNTER_COL_TIMESTAMP == COUNTER_WIDTH - 1
);

/// The per-thread time-order check of one row kind over one step, fed a
/// row at a time: counts rows earlier than their thread's previous row of
/// the step (repaired by sorting) and rows older than the thread's last row
/// of an earlier step (counted, kept).
#[derive(Debug)]
struct OrderScan {
    step_last: LastTimestamp,
    /// The thread of the run of rows being scanned (`u64::MAX`: none yet)
    /// and its newest timestamp so far; rows come grouped by thread, so the
    /// maps are touched only when the thread changes.
    thread: u64,
    newest: u64,
    /// The thread's last timestamp of earlier steps.
    previous_step: u64,
    out_of_order: u64,
    first_bad: Option<usize>,
    stale: u64,
    first_stale: Option<usize>,
    /// Rows observed so far (the index of the next one).
    seen: usize,
}

impl Default for OrderScan {
    fn default() -> Self {
        OrderScan {
            step_last: LastTimestamp::default(),
            thread: u64::MAX,
            newest: 0,
            previous_step: 0,
            out_of_order: 0,
            first_bad: None,
            stale: 0,
            first_stale: None,
            seen: 0,
        }
    }
}

impl OrderScan {
    /// Takes the next row; `last` holds the threads' last timestamps of
    /// earlier steps.
    #[inline(always)]
    fn observe<R: ThreadTimed>(&mut self, row: &R, last: &mut LastTimestamp) {
        let i = self.seen;
        self.seen += 1;
        if row.thread() != self.thread {
            if self.thread != u64::MAX {
                *self.step_last.get_mut(self.thread) = self.newest;
            }
            self.thread = row.thread();
            self.newest = *self.step_last.get_mut(self.thread);
            self.previous_step = *last.get_mut(self.thread);
        }
        let ts = row.timestamp();
        if ts < self.previous_step {
            self.stale += 1;
            self.first_stale.get_or_insert(i);
        }
        if ts < self.newest {
            self.out_of_order += 1;
            self.first_bad.get_or_insert(i);
        } else {
            self.newest = ts;
        }
    }

    /// Counts the issues of the observed `rows` (with an example), sorts
    /// them stably by (thread, timestamp) if some thread is out of order,
    /// and moves `last` on to this step.
    fn finish<R: ThreadTimed>(
        mut self,
        rows: &mut [R],
        last: &mut LastTimestamp,
        what: &str,
        issues: &mut StepIssues,
    ) {
        if self.thread != u64::MAX {
            *self.step_last.get_mut(self.thread) = self.newest;
        }
        issues.add(IssueKind::OutOfOrderAcrossSteps, self.stale, || {
            let i = self.first_stale.unwrap_or(0);
            format!(
                "{what} row {i} = {:?} is earlier than its thread's last row of a previous step",
                rows[i]
            )
        });
        if self.out_of_order > 0 {
            issues.add(IssueKind::OutOfOrder, self.out_of_order, || {
                let i = self.first_bad.unwrap_or(0);
                format!(
                    "{what} row {i} = {:?} is earlier than its thread's previous row",
                    rows[i]
                )
            });
            // Stable: rows with equal timestamps keep their stream order.
            rows.sort_by_key(|r| (r.thread(), r.timestamp()));
        }
        last.merge_max(&self.step_last);
    }
}

/// Checks that each thread's rows are in time order; if not, sorts the rows
/// stably by (thread, timestamp). Also counts rows older than the thread's
/// last row of an earlier step (those cannot be repaired here; they are kept).
fn order_by_thread<R: ThreadTimed>(
    rows: &mut [R],
    last: &mut LastTimestamp,
    what: &str,
    issues: &mut StepIssues,
) {
    let mut scan = OrderScan::default();
    for row in rows.iter() {
        scan.observe(row, last);
    }
    scan.finish(rows, last, what, issues);
}
