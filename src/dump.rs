//! `chimbuko-mpi dump`: what a TAU stream holds, step by step.
//!
//! Used to check real TAU output (and our own `synth` output) before
//! analysing it, and as the reader benchmark (`--summary` reports rows/s).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::trace::format::*;
use crate::trace::source::{NextStep, TraceError};
use crate::trace::step::TraceStep;
use crate::trace::tau::{TauReaderOptions, TauStreamReader};

/// Summary of one step.
#[derive(Debug, Clone, Serialize)]
pub struct StepSummary {
    /// Step number, counted from 0 in the order steps were read.
    pub step: usize,
    /// Function rows kept after validation.
    pub func_events: usize,
    /// ENTRY rows among them.
    pub entries: usize,
    /// EXIT rows among them (the function rows that are not ENTRY).
    pub exits: usize,
    /// Comm rows kept after validation.
    pub comm_events: usize,
    /// SEND rows among them.
    pub sends: usize,
    /// RECV rows among them (the comm rows that are not SEND).
    pub recvs: usize,
    /// Counter rows kept after validation.
    pub counter_events: usize,
    /// `timer_count` scalar as TAU wrote it (functions defined so far).
    pub timers_declared: Option<i64>,
    /// `counter_count` scalar as TAU wrote it (counters defined so far).
    pub counters_declared: Option<i64>,
    /// Attributes visible after this step.
    pub attributes_total: usize,
    /// Functions first defined in this step: `(local index, name)`, sorted.
    pub new_functions: Vec<(u64, String)>,
    /// Counters first defined in this step: `(local index, name)`, sorted.
    pub new_counters: Vec<(u64, String)>,
    /// Event types first defined in this step: `(local index, name)`, sorted.
    pub new_event_types: Vec<(u64, String)>,
    /// Number of `MetaData:` attributes first seen in this step.
    pub new_metadata: usize,
    /// Smallest timestamp of the step's rows (µs; `None` when empty).
    pub ts_first: Option<u64>,
    /// Largest timestamp of the step's rows (µs; `None` when empty).
    pub ts_last: Option<u64>,
    /// Rows rejected or repaired while reading, by issue name.
    pub issues: std::collections::BTreeMap<String, u64>,
    /// All rows, only with `--rows`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<StepRows>,
}

/// Every row of one step after validation, in the stream's layouts.
#[derive(Debug, Clone, Serialize)]
pub struct StepRows {
    /// Function rows ([`FuncRow`]).
    pub funcs: Vec<FuncRow>,
    /// Comm rows ([`CommRow`]).
    pub comms: Vec<CommRow>,
    /// Counter rows ([`CounterRow`]).
    pub counters: Vec<CounterRow>,
}

/// Summary of a whole stream.
#[derive(Debug, Clone, Serialize)]
pub struct StreamSummary {
    /// Path of the stream.
    pub stream: String,
    /// One summary per step (empty with `totals_only`).
    pub steps: Vec<StepSummary>,
    /// Function rows kept over all steps.
    pub total_func_events: u64,
    /// Comm rows kept over all steps.
    pub total_comm_events: u64,
    /// Counter rows kept over all steps.
    pub total_counter_events: u64,
    /// Every function defined by the end: `(local index, name)`.
    pub functions: Vec<(u64, String)>,
    /// Every counter defined by the end: `(local index, name)`.
    pub counters: Vec<(u64, String)>,
    /// Wall-clock seconds spent reading the stream.
    pub seconds: f64,
}

/// What to collect.
#[derive(Debug, Clone, Default)]
pub struct DumpOptions {
    /// Keep every row (for cross-checks; large).
    pub rows: bool,
    /// Keep no per-step summaries (benchmark mode).
    pub totals_only: bool,
    /// Give up when no step arrives for this long (streaming engines).
    pub step_timeout: Option<Duration>,
}

fn summarise_step(step: &TraceStep, reader: &TauStreamReader, keep_rows: bool) -> StepSummary {
    let dict = reader.dictionary();
    let kind = |i: u64| dict.event_type(i);
    let count_kind = |rows: &mut dyn Iterator<Item = u64>, k: EventKind| {
        rows.filter(|&t| kind(t) == Some(k)).count()
    };
    let entries = count_kind(
        &mut step.funcs.iter().map(|r| u64::from(r.event_type)),
        EventKind::Entry,
    );
    let sends = count_kind(
        &mut step.comms.iter().map(|r| r[COMM_COL_EVENT_TYPE]),
        EventKind::Send,
    );
    let (mut new_functions, mut new_counters, mut new_event_types, mut new_metadata) =
        (vec![], vec![], vec![], 0);
    for a in &step.new_attributes {
        match a {
            Attribute::Function { index, name } => new_functions.push((*index, name.clone())),
            Attribute::Counter { index, name } => new_counters.push((*index, name.clone())),
            Attribute::EventType { index, name } => new_event_types.push((*index, name.clone())),
            Attribute::Metadata(_) => new_metadata += 1,
            _ => {}
        }
    }
    new_functions.sort();
    new_counters.sort();
    new_event_types.sort();
    let range = step.time_range();
    StepSummary {
        step: step.step,
        func_events: step.funcs.len(),
        entries,
        exits: step.funcs.len() - entries,
        comm_events: step.comms.len(),
        sends,
        recvs: step.comms.len() - sends,
        counter_events: step.counters.len(),
        timers_declared: step.declared.timers,
        counters_declared: step.declared.counters,
        attributes_total: reader.attribute_count(),
        new_functions,
        new_counters,
        new_event_types,
        new_metadata,
        ts_first: range.map(|r| r.0),
        ts_last: range.map(|r| r.1),
        issues: step
            .issues
            .counts
            .iter()
            .map(|(k, n)| (k.name().to_owned(), *n))
            .collect(),
        rows: keep_rows.then(|| StepRows {
            funcs: step.func_rows(),
            comms: step.comms.clone(),
            counters: step.counters.clone(),
        }),
    }
}

/// Reads the whole stream and summarises it.
pub fn dump_stream(
    path: &Path,
    reader_opts: TauReaderOptions,
    opts: &DumpOptions,
) -> Result<StreamSummary, TraceError> {
    let start = Instant::now();
    // A read that never returns (data cut short, a writer that hangs
    // mid-step) would hang `dump` silently: a watchdog ends it after the
    // step timeout, or the open timeout for file engines without one.
    let limit = match opts.step_timeout {
        Some(t) => Some(t),
        None if reader_opts.engine.is_file() => Some(reader_opts.adios.open_timeout),
        None => None,
    };
    let watchdog = limit.map(|l| ReadWatchdog::start(path, l));
    let mut reader = TauStreamReader::open(path, reader_opts)?;
    let mut summary = StreamSummary {
        stream: path.display().to_string(),
        steps: Vec::new(),
        total_func_events: 0,
        total_comm_events: 0,
        total_counter_events: 0,
        functions: Vec::new(),
        counters: Vec::new(),
        seconds: 0.0,
    };
    let poll = Duration::from_millis(200);
    let mut waited = Duration::ZERO;
    loop {
        if let Some(w) = &watchdog {
            w.alive(summary.steps.len());
        }
        let next = reader.next_step(poll)?;
        match next {
            NextStep::Step(step) => {
                waited = Duration::ZERO;
                summary.total_func_events += step.funcs.len() as u64;
                summary.total_comm_events += step.comms.len() as u64;
                summary.total_counter_events += step.counters.len() as u64;
                if !opts.totals_only {
                    summary
                        .steps
                        .push(summarise_step(&step, &reader, opts.rows));
                }
            }
            NextStep::NotReady => {
                waited += poll;
                if opts.step_timeout.is_some_and(|t| waited >= t) {
                    eprintln!(
                        "{}: no new step for {:.1} s, stopping",
                        summary.stream,
                        waited.as_secs_f64()
                    );
                    break;
                }
            }
            NextStep::EndOfStream => break,
        }
    }
    let dict = reader.dictionary();
    let named = |v: &[Option<String>]| -> Vec<(u64, String)> {
        v.iter()
            .enumerate()
            .filter_map(|(i, n)| n.as_ref().map(|n| (i as u64, n.clone())))
            .collect()
    };
    summary.functions = named(&dict.functions);
    summary.counters = named(&dict.counters);
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// Ends the process when the reading thread shows no sign of life for
/// longer than its limit (see [`dump_stream`]). ADIOS2 calls cannot be
/// interrupted, so ending the process is the only way out of one that
/// never returns; `dump` only reads, so nothing is left half-written.
struct ReadWatchdog {
    state: std::sync::Arc<WatchdogState>,
}

struct WatchdogState {
    start: Instant,
    /// Milliseconds since `start` at the last sign of life.
    last_ms: std::sync::atomic::AtomicU64,
    /// Steps read by then.
    steps: std::sync::atomic::AtomicUsize,
    done: std::sync::atomic::AtomicBool,
}

impl ReadWatchdog {
    fn start(path: &Path, limit: Duration) -> ReadWatchdog {
        use std::sync::atomic::Ordering::Relaxed;
        let state = std::sync::Arc::new(WatchdogState {
            start: Instant::now(),
            last_ms: 0.into(),
            steps: 0.into(),
            done: false.into(),
        });
        let s = state.clone();
        let stream = path.display().to_string();
        std::thread::spawn(move || {
            while !s.done.load(Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let now = s.start.elapsed().as_millis() as u64;
                let quiet = Duration::from_millis(now.saturating_sub(s.last_ms.load(Relaxed)));
                if quiet > limit && !s.done.load(Relaxed) {
                    eprintln!(
                        "chimbuko-mpi: error: {stream}: reading step {} made no progress for {:.1} s \
                         (its data is shorter than its metadata says, e.g. a truncated data file, \
                         or its writer hangs); giving up",
                        s.steps.load(Relaxed),
                        quiet.as_secs_f64()
                    );
                    std::process::exit(1);
                }
            }
        });
        ReadWatchdog { state }
    }

    /// A sign of life: `steps` steps read so far.
    fn alive(&self, steps: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let now = self.state.start.elapsed().as_millis() as u64;
        self.state.last_ms.store(now, Relaxed);
        self.state.steps.store(steps, Relaxed);
    }
}

impl Drop for ReadWatchdog {
    fn drop(&mut self) {
        self.state
            .done
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

/// Human-readable table.
pub fn print_table(s: &StreamSummary, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "stream: {}", s.stream)?;
    if !s.steps.is_empty() {
        writeln!(out, "steps: {}", s.steps.len())?;
        writeln!(
            out,
            "{:>5} {:>22} {:>9} {:>11} {:>7} {:>9} {:>6}  ts_first..ts_last",
            "step", "func_ev (entry/exit)", "comm_ev", "counter_ev", "timers", "counters", "attrs"
        )?;
    }
    for st in &s.steps {
        let range = match (st.ts_first, st.ts_last) {
            (Some(a), Some(b)) => format!("{a}..{b}"),
            _ => "-".into(),
        };
        writeln!(
            out,
            "{:>5} {:>22} {:>9} {:>11} {:>7} {:>9} {:>6}  {range}",
            st.step,
            format!("{} ({}/{})", st.func_events, st.entries, st.exits),
            st.comm_events,
            st.counter_events,
            opt(st.timers_declared),
            opt(st.counters_declared),
            st.attributes_total
        )?;
        for (i, n) in &st.new_functions {
            writeln!(out, "        new function {i}: {n}")?;
        }
        for (i, n) in &st.new_counters {
            writeln!(out, "        new counter {i}: {n}")?;
        }
        if st.new_metadata > 0 {
            writeln!(out, "        new metadata entries: {}", st.new_metadata)?;
        }
        for (k, n) in &st.issues {
            writeln!(out, "        issue: {n} {k}")?;
        }
    }
    let rows = s.total_func_events;
    writeln!(
        out,
        "TOTAL func_events={} comm_events={} counter_events={} functions={} counters={}",
        rows,
        s.total_comm_events,
        s.total_counter_events,
        s.functions.len(),
        s.counters.len()
    )?;
    writeln!(
        out,
        "read in {:.3} s: {:.2} M function rows/s",
        s.seconds,
        rows as f64 / s.seconds.max(1e-9) / 1e6
    )
}
