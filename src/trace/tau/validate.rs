//! Checks the rows of a TAU step against the names the stream defined, and
//! narrows function rows to [`FuncEvent`]s.

use super::order::{order_by_thread, LastTimestamp, OrderScan};
use super::{MAX_PROGRAM, MAX_RANK, MAX_THREAD};
use crate::trace::dictionary::{lookup, set_at, Dictionary, MAX_NAME_INDEX};
use crate::trace::format::*;
use crate::trace::issues::{IssueKind, StepIssues};
use crate::trace::step::{RawStep, TraceStep};

/// Checks the steps of one stream in memory: keeps the dictionary of names
/// the stream's attributes define, drops impossible rows, overrides the
/// program column and puts each thread's rows in time order.
///
/// [`super::TauStreamReader`] runs every step it reads through one of these; it is
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
    pub fn accept(&mut self, raw: RawStep) -> TraceStep {
        let mut step = TraceStep {
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
    pub fn begin(&mut self, step: &mut TraceStep) {
        step.program = self.program_idx;
        self.func_order = OrderScan::default();
        for attr in &step.new_attributes {
            self.apply_attribute(attr, &mut step.issues);
        }
    }

    /// Checks function rows (`rows[0]` is row `first_row` of the step) and
    /// appends the ones that can be right to `step.funcs`, narrowed; the
    /// others are counted in `step.issues` and dropped.
    pub fn take_funcs(&mut self, rows: &[FuncRow], first_row: usize, step: &mut TraceStep) {
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
    pub fn finish(&mut self, step: &mut TraceStep) {
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
