//! Bad-input harness: turns arbitrary bytes into a TAU stream held in memory
//! and runs it through the reader's validation and the call-stack replay,
//! checking invariants on the way.
//!
//! The fuzz targets in `fuzz/` call [`run_steps`] and [`run_parse`] with
//! the bytes libFuzzer generates; `tests/fuzz_regressions.rs` replays the
//! inputs kept in `tests/fuzz-regressions/` and the seed corpus through the
//! same functions, so the normal test suite re-runs every input that ever
//! broke something. The tool itself does not use this module.
//!
//! A violated invariant panics, which is what the fuzzer reports.
//!
//! # Byte layout of a [`run_steps`] input
//!
//! Decoding never fails: missing bytes read as zero and decoding stops at
//! the end of the input, so every byte string is a valid stream.
//!
//! ```text
//! input  := flags:u8 param:u8 step*            (at most MAX_STEPS steps)
//! step   := n:u8 attr{n % 8}
//!           n:u8 funcrow{n} n:u8 commrow{n % 64} n:u8 counterrow{n % 64}
//! attr   := kind:u8 ...                        (see `Cursor::attribute`)
//! row    := field* timestamp                   (6, 8 or 6 columns)
//! field  := b:u8          b < 0xC0: a typical value for the column
//!         | b:u8          0xC0 ≤ b < 0xE0: INTERESTING[b & 31]
//!         | 0xFF.. u64le  b ≥ 0xE0: any value
//! ts     := b:u8          b < 0x60: clock += b % 32 (in order)
//!         | b:u8          0x60 ≤ b < 0xA0: clock − b % 64 (out of order)
//!         | b:u8          0xA0 ≤ b < 0xC0: clock += (b % 32) << 32 (a gap)
//!         | as a field otherwise (0, u64::MAX, ...: absurd)
//! ```
//!
//! `flags`: bit 0 leaves out the standard attributes (event types
//! ENTRY/EXIT/SEND/RECV as 0..3, timers `f0`..`f11`, counters `Correlation
//! ID`, a monitoring counter and a plain one) that are otherwise defined
//! before the first step; bit 1 reads with no expected rank; bit 2 uses tiny
//! [`EventOptions`] limits; bit 3 hides some local indices from the
//! [`IndexMap`] (names agreed a step late). `param` picks the expected rank
//! (`param % 4`), the program index and which indices bit 3 hides.
//!
//! This file is long because it is the whole harness of the fuzz targets:
//! input decoding, the reference oracle it checks against, and its tests.
//! It is behind the `fuzzing` feature, not part of the library users link.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::events::{
    gpu_metadata_key, CallStackBuilder, EventIssueKind, EventOptions, ExecId, IndexMap, StepEvents,
};
use crate::trace::dictionary::{Dictionary, MAX_NAME_INDEX};
use crate::trace::format::*;
use crate::trace::issues::{IssueKind, StepIssues};
use crate::trace::step::{RawStep, TraceStep};
use crate::trace::tau::{StepValidator, MAX_PROGRAM, MAX_RANK, MAX_THREAD};

/// Steps decoded at most (longer inputs are cut).
pub const MAX_STEPS: usize = 32;
/// Clock at the start of a decoded stream (µs since the epoch, like TAU's).
pub const T0: u64 = 1_700_000_000_000_000;

/// Values the decoder reaches with one byte: limits of the validation,
/// of dense tables, of 32-bit packing, and TAU's known garbage.
const INTERESTING: [u64; 32] = [
    0,
    1,
    4095,
    4096,
    MAX_PROGRAM - 1,
    MAX_PROGRAM,
    MAX_THREAD - 1,
    MAX_THREAD,
    MAX_NAME_INDEX - 1,
    MAX_NAME_INDEX,
    MAX_RANK,
    u32::MAX as u64 - 1,
    u32::MAX as u64,
    1 << 32,
    1 << 40,
    (1 << 40) + 1,
    1 << 44,
    1 << 53,
    (1 << 63) - 1,
    1 << 63,
    18_446_744_071_900_455_069, // a receive byte count seen in real TAU output
    u64::MAX - 1,
    u64::MAX,
    T0 - 1,
    T0,
    T0 + 1,
    2,
    3,
    5,
    7,
    11,
    255,
];

const FUNCTION_NAMES: [&str; 4] = [
    "main",
    "MPI_Send()",
    "component1_function(int) [{main.C} {19,0}]",
    "[PTHREAD] addr=<0x7f>",
];
const EVENT_TYPE_NAMES: [&str; 7] = ["ENTRY", "EXIT", "SEND", "RECV", " EXIT ", "entry", ""];
const COUNTER_NAMES: [&str; 4] = [
    CORRELATION_ID_COUNTER,
    "monitoring: Memory Footprint (VmRSS) (KB)",
    "PAPI_TOT_CYC",
    "Message size",
];
const METADATA_DESCRIPTIONS: [&str; 6] = [
    "CUDA Context",
    "CUDA Device",
    "CUDA Stream",
    "HIP Stream",
    "GPU[0] Device Name",
    "Hostname",
];
const METADATA_VALUES: [&str; 4] = ["\"0\"", "1", "'7'", "\""];
const KEY_PREFIXES: [&str; 7] = [
    "timer ",
    "event_type ",
    "counter ",
    "MetaData:",
    "MetaData:0:",
    "MetaData:0:1:",
    "",
];

/// How a column is usually filled (what a one-byte field means).
#[derive(Debug, Clone, Copy)]
enum Field {
    /// `b % m`.
    Small(u8),
    /// Mostly the expected rank, else `b % 4`.
    Rank,
    /// A byte count: `b * 64`.
    Bytes,
}

impl Field {
    fn typical(self, b: u8, rank: u64) -> u64 {
        match self {
            Field::Small(m) => u64::from(b % m),
            Field::Rank if b < 0x80 => rank,
            Field::Rank => u64::from(b % 4),
            Field::Bytes => u64::from(b) * 64,
        }
    }

    /// The one-byte form of `v`, where there is one.
    fn encode_typical(self, v: u64, rank: u64) -> Option<u8> {
        match self {
            Field::Small(m) => (v < u64::from(m)).then_some(v as u8),
            Field::Rank if v == rank => Some(0),
            Field::Rank => (v < 4).then_some(0x80 + v as u8),
            Field::Bytes => (v % 64 == 0 && v / 64 < 0xC0).then_some((v / 64) as u8),
        }
    }
}

/// Non-timestamp columns of each row kind (the timestamp is always last).
const FUNC_FIELDS: [Field; FUNC_WIDTH - 1] = [
    Field::Small(2), // program
    Field::Rank,
    Field::Small(4),  // thread
    Field::Small(6),  // event type
    Field::Small(12), // function
];
const COMM_FIELDS: [Field; COMM_WIDTH - 1] = [
    Field::Small(2),
    Field::Rank,
    Field::Small(4),
    Field::Small(6),
    Field::Small(4), // tag
    Field::Small(4), // partner
    Field::Bytes,
];
const COUNTER_FIELDS: [Field; COUNTER_WIDTH - 1] = [
    Field::Small(2),
    Field::Rank,
    Field::Small(4),
    Field::Small(6), // counter
    Field::Small(8), // value (small: correlation ids collide)
];

/// One decoded step: raw attribute strings and rows as TAU would write them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FuzzStep {
    /// Attributes defined in the step, as `(key, value)` strings.
    pub attributes: Vec<(String, String)>,
    /// Function rows (`event_timestamps`), unchecked.
    pub funcs: Vec<FuncRow>,
    /// Comm rows (`comm_timestamps`), unchecked.
    pub comms: Vec<CommRow>,
    /// Counter rows (`counter_values`), unchecked.
    pub counters: Vec<CounterRow>,
}

/// A decoded [`run_steps`] input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FuzzInput {
    /// Define the standard attributes before the first step.
    pub preamble: bool,
    /// Rank the reader expects in the rows (`param % 4`; `None` with flag
    /// bit 1: no expected rank).
    pub expected_rank: Option<u64>,
    /// Program index the reader assigns to the stream (`param / 4 % 4`).
    pub program_idx: u64,
    /// Use tiny [`EventOptions`] limits (flag bit 2).
    pub tight_limits: bool,
    /// Hide some indices from the [`IndexMap`]; `hide` says which.
    pub hide_indices: bool,
    /// Which indices are hidden (`param / 16`): every third function index
    /// from `hide % 3`, event type `hide % 4`, counter `hide % 3`.
    pub hide: u8,
    /// The decoded steps, in order.
    pub steps: Vec<FuzzStep>,
}

/// The attributes defined before the first step unless flag bit 0 is set.
pub fn standard_attributes() -> Vec<(String, String)> {
    let mut a: Vec<(String, String)> = ["ENTRY", "EXIT", "SEND", "RECV"]
        .iter()
        .enumerate()
        .map(|(i, n)| (format!("event_type {i}"), n.to_string()))
        .collect();
    a.extend((0..12).map(|i| (format!("timer {i}"), format!("f{i}"))));
    a.extend(
        COUNTER_NAMES[..3]
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("counter {i}"), n.to_string())),
    );
    a
}

/// Reads bytes; past the end everything is zero.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }

    fn raw_u64(&mut self) -> u64 {
        let mut v = [0u8; 8];
        for x in &mut v {
            *x = self.byte();
        }
        u64::from_le_bytes(v)
    }

    fn special(&mut self, b: u8) -> u64 {
        if b < 0xE0 {
            INTERESTING[usize::from(b & 31)]
        } else {
            self.raw_u64()
        }
    }

    fn field(&mut self, f: Field, rank: u64) -> u64 {
        match self.byte() {
            b @ 0..=0xBF => f.typical(b, rank),
            b => self.special(b),
        }
    }

    fn timestamp(&mut self, clock: &mut u64) -> u64 {
        match self.byte() {
            b @ 0..=0x5F => {
                *clock = clock.saturating_add(u64::from(b % 32));
                *clock
            }
            b @ 0x60..=0x9F => clock.saturating_sub(u64::from(b % 64)),
            b @ 0xA0..=0xBF => {
                *clock = clock.saturating_add(u64::from(b % 32) << 32);
                *clock
            }
            b => self.special(b),
        }
    }

    fn row<const W: usize>(&mut self, fields: &[Field], rank: u64, clock: &mut u64) -> [u64; W] {
        let mut row = [0u64; W];
        for (v, f) in row.iter_mut().zip(fields) {
            *v = self.field(*f, rank);
        }
        row[W - 1] = self.timestamp(clock);
        row
    }

    /// Up to 47 bytes, invalid UTF-8 replaced.
    fn string(&mut self) -> String {
        let n = usize::from(self.byte() % 48);
        let start = self.pos.min(self.data.len());
        let end = start.saturating_add(n).min(self.data.len());
        self.pos = self.pos.saturating_add(n);
        String::from_utf8_lossy(&self.data[start..end]).into_owned()
    }

    /// An entry of `table`, or (for a byte past its end) a free string.
    fn pick(&mut self, table: &[&str]) -> String {
        let b = usize::from(self.byte());
        match table.get(b) {
            Some(s) => s.to_string(),
            None => self.string(),
        }
    }

    fn attribute(&mut self, rank: u64) -> (String, String) {
        match self.byte() % 6 {
            0 => {
                let i = self.field(Field::Small(12), rank);
                (format!("timer {i}"), self.pick(&FUNCTION_NAMES))
            }
            1 => {
                let i = self.field(Field::Small(6), rank);
                (format!("event_type {i}"), self.pick(&EVENT_TYPE_NAMES))
            }
            2 => {
                let i = self.field(Field::Small(6), rank);
                (format!("counter {i}"), self.pick(&COUNTER_NAMES))
            }
            3 => {
                let r = self.field(Field::Rank, rank);
                let t = self.field(Field::Small(4), rank);
                let d = self.pick(&METADATA_DESCRIPTIONS);
                (format!("MetaData:{r}:{t}:{d}"), self.pick(&METADATA_VALUES))
            }
            4 => {
                let prefix = self.pick(&KEY_PREFIXES);
                let key = prefix + &self.string();
                (key, self.string())
            }
            _ => (self.string(), self.string()),
        }
    }
}

/// Decodes any byte string (see the module docs for the layout).
pub fn decode(data: &[u8]) -> FuzzInput {
    let mut c = Cursor { data, pos: 0 };
    let (flags, param) = (c.byte(), c.byte());
    let mut input = FuzzInput {
        preamble: flags & 1 == 0,
        expected_rank: (flags & 2 == 0).then_some(u64::from(param % 4)),
        program_idx: u64::from(param / 4 % 4),
        tight_limits: flags & 4 != 0,
        hide_indices: flags & 8 != 0,
        hide: param / 16,
        steps: Vec::new(),
    };
    let rank = input.expected_rank.unwrap_or(0);
    let mut clock = T0;
    while !c.done() && input.steps.len() < MAX_STEPS {
        let mut s = FuzzStep::default();
        let n = c.byte() % 8;
        for _ in 0..n {
            s.attributes.push(c.attribute(rank));
        }
        let n = c.byte();
        for _ in 0..n {
            if c.done() {
                break;
            }
            s.funcs.push(c.row(&FUNC_FIELDS, rank, &mut clock));
        }
        let n = c.byte() % 64;
        for _ in 0..n {
            if c.done() {
                break;
            }
            s.comms.push(c.row(&COMM_FIELDS, rank, &mut clock));
        }
        let n = c.byte() % 64;
        for _ in 0..n {
            if c.done() {
                break;
            }
            s.counters.push(c.row(&COUNTER_FIELDS, rank, &mut clock));
        }
        input.steps.push(s);
    }
    input
}

/// The bytes that [`decode`] turns back into `input`, provided it fits the
/// layout: at most [`MAX_STEPS`] steps, 7 attributes, 255 function rows and
/// 63 comm and counter rows per step, strings of at most 47 bytes, an
/// expected rank and program index below 4 (see the `tests`). Used to build
/// the seed corpus from hand-written and real streams.
pub fn encode(input: &FuzzInput) -> Vec<u8> {
    let mut out = Vec::new();
    let flags = u8::from(!input.preamble)
        | (u8::from(input.expected_rank.is_none()) << 1)
        | (u8::from(input.tight_limits) << 2)
        | (u8::from(input.hide_indices) << 3);
    let rank = input.expected_rank.unwrap_or(0);
    out.push(flags);
    out.push((rank % 4) as u8 | ((input.program_idx % 4) as u8) << 2 | (input.hide % 16) << 4);
    let string = |out: &mut Vec<u8>, s: &str| {
        let mut n = s.len().min(47);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        out.push(n as u8);
        out.extend_from_slice(&s.as_bytes()[..n]);
    };
    let field = |out: &mut Vec<u8>, f: Field, v: u64| match f.encode_typical(v, rank) {
        Some(b) => out.push(b),
        None => match INTERESTING.iter().position(|&x| x == v) {
            Some(i) => out.push(0xC0 + i as u8),
            None => {
                out.push(0xFF);
                out.extend_from_slice(&v.to_le_bytes());
            }
        },
    };
    let mut clock = T0;
    let mut row = |out: &mut Vec<u8>, fields: &[Field], r: &[u64]| {
        for (f, &v) in fields.iter().zip(r) {
            field(out, *f, v);
        }
        let ts = r[r.len() - 1];
        if ts >= clock && ts - clock < 32 {
            out.push((ts - clock) as u8);
            clock = ts;
        } else {
            out.push(0xFF);
            out.extend_from_slice(&ts.to_le_bytes());
        }
    };
    for s in input.steps.iter().take(MAX_STEPS) {
        let attrs = &s.attributes[..s.attributes.len().min(7)];
        out.push(attrs.len() as u8);
        for (k, v) in attrs {
            out.push(5); // free key and value
            string(&mut out, k);
            string(&mut out, v);
        }
        let funcs = &s.funcs[..s.funcs.len().min(255)];
        out.push(funcs.len() as u8);
        funcs.iter().for_each(|r| row(&mut out, &FUNC_FIELDS, r));
        let comms = &s.comms[..s.comms.len().min(63)];
        out.push(comms.len() as u8);
        comms.iter().for_each(|r| row(&mut out, &COMM_FIELDS, r));
        let counters = &s.counters[..s.counters.len().min(63)];
        out.push(counters.len() as u8);
        counters
            .iter()
            .for_each(|r| row(&mut out, &COUNTER_FIELDS, r));
    }
    out
}

/// What a run did (for tests and for a look at what the fuzzer reaches).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Steps run.
    pub steps: usize,
    /// Rows in the input, before validation.
    pub rows: u64,
    /// Rows the validation kept.
    pub rows_kept: u64,
    /// Executions completed from the validated steps.
    pub executions: u64,
    /// Executions completed from the raw (unchecked) rows.
    pub executions_raw: u64,
    /// Issues counted by the reader's validation.
    pub reader_issues: u64,
    /// Issues counted by the call-stack replay (validated and raw replays).
    pub event_issues: u64,
    /// CPU-launch/GPU-kernel pairs matched (validated and raw replays).
    pub gpu_pairs: u64,
}

/// Decodes `data` and checks it (see [`check`]).
pub fn run_steps(data: &[u8]) -> Outcome {
    check(&decode(data))
}

/// Runs `input` through [`StepValidator::accept`] and, step after step, two
/// [`CallStackBuilder`]: one fed the validated steps (what the tool does), one
/// fed the raw rows (the replay must survive unvalidated input too).
/// Panics when an invariant does not hold.
pub fn check(input: &FuzzInput) -> Outcome {
    let mut outcome = Outcome::default();
    let mut validator = StepValidator::new(input.program_idx, input.expected_rank);
    let mut oracle = Oracle::default();
    let opts = if input.tight_limits {
        EventOptions {
            max_attached: 2,
            max_depth: 4,
            correlation_window_steps: 2,
            max_pending_correlations: 3,
        }
    } else {
        EventOptions::default()
    };
    let program = input.program_idx as u32;
    let rank = input.expected_rank.unwrap_or(0);
    let mut clean = Replay::new(program, rank, &opts);
    let mut raw = Replay::new(program, rank, &opts);

    for (s, fs) in input.steps.iter().enumerate() {
        let mut attributes = Vec::new();
        if s == 0 && input.preamble {
            attributes = standard_attributes();
        }
        attributes.extend(fs.attributes.iter().cloned());
        let raw_step = RawStep {
            step: s,
            funcs: fs.funcs.clone(),
            comms: fs.comms.clone(),
            counters: fs.counters.clone(),
            new_attributes: attributes
                .iter()
                .map(|(k, v)| parse_attribute(k, v))
                .collect(),
        };
        let step = validator.accept(raw_step.clone());
        oracle.check_step(&raw_step, &step, &validator, input);
        check_issue_report(&step.issues);
        outcome.rows +=
            (raw_step.funcs.len() + raw_step.comms.len() + raw_step.counters.len()) as u64;
        outcome.rows_kept += (step.funcs.len() + step.comms.len() + step.counters.len()) as u64;
        outcome.reader_issues += step.issues.counts.values().sum::<u64>();

        let map = index_map(validator.dictionary(), input);
        clean.step(s as u64, &step, &map);
        if !input.hide_indices {
            // Validated rows use only names the dictionary knows, and the
            // map is the dictionary's: the replay finds nothing unknown.
            let i = &clean.out.issues;
            for k in [
                EventIssueKind::UnknownFunction,
                EventIssueKind::UnknownCounter,
                EventIssueKind::UnknownEventType,
            ] {
                assert_eq!(i.count(k), 0, "{}", i.summary("validated", s as u64));
            }
        }
        raw.step(s as u64, &unchecked(raw_step), &map);
        outcome.steps += 1;
    }
    for r in [&mut clean, &mut raw] {
        r.finish();
        outcome.event_issues += r.issues;
        outcome.gpu_pairs += r.gpu_pairs;
    }
    outcome.executions = clean.executions;
    outcome.executions_raw = raw.executions;
    outcome
}

/// A step as the event builder gets it when nothing checked the rows:
/// function rows narrowed as they are (columns beyond `u32` saturate).
fn unchecked(raw: RawStep) -> TraceStep {
    TraceStep {
        step: raw.step,
        funcs: raw.funcs.iter().map(FuncEvent::from_row).collect(),
        comms: raw.comms,
        counters: raw.counters,
        new_attributes: raw.new_attributes,
        ..Default::default()
    }
}

/// The map the run loop would build from the dictionary: identity, with
/// some entries missing when the input asks for it.
fn index_map(dict: &Dictionary, input: &FuzzInput) -> IndexMap {
    let mut map = IndexMap::identity(dict);
    if input.hide_indices {
        let h = usize::from(input.hide);
        for (i, f) in map.functions.iter_mut().enumerate() {
            if i % 3 == h % 3 {
                *f = None;
            }
        }
        if let Some(e) = map.event_types.get_mut(h % 4) {
            *e = None;
        }
        if let Some(c) = map.counters.get_mut(h % 3) {
            *c = None;
        }
    }
    map
}

/// Every counted kind has an example, and the log line can be built.
fn check_issue_report(issues: &StepIssues) {
    for (k, n) in &issues.counts {
        assert!(*n > 0, "{k:?} counted 0");
        assert!(issues.first_example.contains_key(k), "{k:?} has no example");
    }
    let line = issues.summary("fuzz", 0);
    assert!(issues.counts.keys().all(|k| line.contains(k.name())));
}

/// An independent statement of the validation rules: what must be kept,
/// in which order, and how many of each issue must be counted.
#[derive(Default)]
struct Oracle {
    functions: HashSet<u64>,
    counters: HashSet<u64>,
    event_types: HashMap<u64, EventKind>,
    /// Per row kind: thread → newest timestamp of earlier steps.
    newest: [HashMap<u64, u64>; 3],
}

impl Oracle {
    fn check_step(
        &mut self,
        raw: &RawStep,
        got: &TraceStep,
        validator: &StepValidator,
        input: &FuzzInput,
    ) {
        let mut want = StepIssues::default();
        for attr in &raw.new_attributes {
            let bad = match attr {
                Attribute::Function { index, .. } if *index < MAX_NAME_INDEX => {
                    self.functions.insert(*index);
                    false
                }
                Attribute::Counter { index, .. } if *index < MAX_NAME_INDEX => {
                    self.counters.insert(*index);
                    false
                }
                Attribute::EventType { index, name } if *index < MAX_NAME_INDEX => {
                    match EventKind::from_name(name) {
                        Some(k) => {
                            self.event_types.insert(*index, k);
                            false
                        }
                        None => true,
                    }
                }
                Attribute::Metadata(_) | Attribute::Other { .. } => false,
                _ => true, // malformed, or an index too large
            };
            if bad {
                want.record(IssueKind::MalformedAttribute, String::new);
            }
        }
        let common = |r: &[u64]| -> Result<(), IssueKind> {
            if r[COL_PROGRAM] >= MAX_PROGRAM {
                Err(IssueKind::BadProgram)
            } else if input
                .expected_rank
                .map_or(r[COL_RANK] >= MAX_RANK, |e| r[COL_RANK] != e)
            {
                Err(IssueKind::BadRank)
            } else if r[COL_THREAD] >= MAX_THREAD {
                Err(IssueKind::BadThread)
            } else {
                Ok(())
            }
        };
        let kind = |i: u64| self.event_types.get(&i).copied();
        let func_ok = |r: &FuncRow| {
            common(r)?;
            if !kind(r[FUNC_COL_EVENT_TYPE]).is_some_and(EventKind::is_function) {
                return Err(IssueKind::BadEventType);
            }
            if !self.functions.contains(&r[FUNC_COL_FUNCTION]) {
                return Err(IssueKind::UnknownFunction);
            }
            Ok(())
        };
        let comm_ok = |r: &CommRow| {
            common(r)?;
            let is_comm = kind(r[COMM_COL_EVENT_TYPE]).is_some_and(|k| !k.is_function());
            if !is_comm {
                return Err(IssueKind::BadEventType);
            }
            Ok(())
        };
        let counter_ok = |r: &CounterRow| {
            common(r)?;
            if !self.counters.contains(&r[COUNTER_COL_COUNTER]) {
                return Err(IssueKind::UnknownCounter);
            }
            Ok(())
        };
        let program = input.program_idx;
        let [nf, nc, nk] = &mut self.newest;
        let funcs = expect_rows(&raw.funcs, func_ok, program, nf, &mut want);
        let comms = expect_rows(&raw.comms, comm_ok, program, nc, &mut want);
        let counters = expect_rows(&raw.counters, counter_ok, program, nk, &mut want);
        assert_eq!(got.func_rows(), funcs, "kept function rows");
        assert_eq!(got.comms, comms, "kept comm rows");
        assert_eq!(got.counters, counters, "kept counter rows");
        assert_eq!(got.issues.counts, want.counts, "issue counts");
        let dropped = raw.funcs.len() + raw.comms.len() + raw.counters.len()
            - (got.funcs.len() + got.comms.len() + got.counters.len());
        assert_eq!(got.issues.dropped_rows(), dropped as u64);
        let dict = validator.dictionary();
        for &i in &self.functions {
            assert!(dict.function(i).is_some(), "timer {i} lost");
        }
    }
}

/// The rows `ok` accepts, program overridden, sorted by (thread, time)
/// when some thread is out of order; counts issues into `want` and moves
/// `newest` on.
fn expect_rows<const W: usize>(
    rows: &[[u64; W]],
    ok: impl Fn(&[u64; W]) -> Result<(), IssueKind>,
    program: u64,
    newest: &mut HashMap<u64, u64>,
    want: &mut StepIssues,
) -> Vec<[u64; W]> {
    let mut kept = Vec::new();
    for r in rows {
        match ok(r) {
            Ok(()) => {
                let mut r = *r;
                r[COL_PROGRAM] = program;
                kept.push(r);
            }
            Err(k) => want.record(k, String::new),
        }
    }
    let mut in_step: HashMap<u64, u64> = HashMap::new();
    let mut unordered = false;
    for r in &kept {
        let (thread, ts) = (r[COL_THREAD], r[W - 1]);
        if newest.get(&thread).is_some_and(|&n| ts < n) {
            want.record(IssueKind::OutOfOrderAcrossSteps, String::new);
        }
        let m = in_step.entry(thread).or_insert(ts);
        if ts < *m {
            want.record(IssueKind::OutOfOrder, String::new);
            unordered = true;
        }
        *m = (*m).max(ts);
    }
    for (thread, ts) in in_step {
        let n = newest.entry(thread).or_insert(ts);
        *n = (*n).max(ts);
    }
    if unordered {
        kept.sort_by_key(|r| (r[COL_THREAD], r[W - 1]));
    }
    kept
}

/// One [`CallStackBuilder`] and what the checks remember across its steps.
struct Replay {
    events: CallStackBuilder,
    out: StepEvents,
    program: u32,
    rank: u64,
    max_attached: usize,
    /// Every execution emitted so far, and whether it ran on a GPU thread.
    seen: HashMap<ExecId, bool>,
    executions: u64,
    issues: u64,
    gpu_pairs: u64,
}

impl Replay {
    fn new(program: u32, rank: u64, opts: &EventOptions) -> Self {
        Replay {
            events: CallStackBuilder::new(program, rank, "fuzz".into(), opts.clone()),
            out: StepEvents::default(),
            program,
            rank,
            max_attached: opts.max_attached,
            seen: HashMap::new(),
            executions: 0,
            issues: 0,
            gpu_pairs: 0,
        }
    }

    /// Replays step `s` and checks what the replay promises: the step's
    /// time range, calls opened against closed, each execution and its
    /// attachments, and the GPU pairs; then adds to the totals.
    fn step(&mut self, s: u64, tau: &TraceStep, map: &IndexMap) {
        let open_before = self.events.open_calls() as u64;
        // The output buffers are reused from the previous step on purpose.
        self.events
            .build_step_into(s, tau, map, &mut self.out, &mut |_| {});
        let open_after = self.events.open_calls() as u64;

        assert_eq!(
            (self.out.first_ts, self.out.last_ts),
            tau.time_range()
                .map_or((None, None), |(a, b)| (Some(a), Some(b))),
            "time range of the step"
        );
        let rows = FunctionRows::count(tau, map);
        check_calls_balance(&self.out, s, open_before, open_after, &rows);
        self.check_executions(s, rows.entries);
        self.check_gpu_pairs();

        let out = &self.out;
        let i = &out.issues;
        check_event_issues(i);
        self.executions += out.executions.len() as u64;
        self.issues += i.total();
        self.gpu_pairs += out.gpu_pairs.len() as u64;
    }

    /// Checks each execution of step `s` (`entries`: the step's ENTRY
    /// rows): its times, labels, parent, GPU flag and attachments; that
    /// none completes twice; and that the arenas hold exactly the
    /// attachments of the step's executions.
    fn check_executions(&mut self, s: u64, entries: u64) {
        let out = &self.out;
        let (mut comms, mut counters, mut cids) = (0usize, 0usize, 0usize);
        for e in &out.executions {
            assert!(e.exit >= e.entry, "{e:?}");
            assert_eq!(e.inclusive(), e.exit - e.entry, "{e:?}");
            assert!(e.exclusive <= e.inclusive(), "{e:?}");
            assert_eq!((e.id.rank, e.program), (self.rank, self.program));
            assert!(e.id.step <= s, "{e:?}");
            assert!(e.id.step < s || e.id.idx < entries, "{e:?}");
            assert_eq!(e.parent().is_some(), e.depth > 0, "{e:?}");
            assert_ne!(e.parent(), Some(e.id));
            assert_eq!(
                e.is_gpu,
                self.events.gpu_location(e.thread).is_some(),
                "{e:?}"
            );
            assert!(
                self.seen.insert(e.id, e.is_gpu).is_none(),
                "{} completed twice",
                e.id
            );
            let a = &e.attach;
            for (span, len) in [
                (a.comms, out.comms_of(e).len()),
                (a.counters, out.counters_of(e).len()),
                (a.correlation_ids, out.correlation_ids_of(e).len()),
            ] {
                assert_eq!(span.len as usize, len, "{e:?}");
                assert!(len <= self.max_attached, "{e:?}");
            }
            comms += a.comms.len as usize;
            counters += a.counters.len as usize;
            cids += a.correlation_ids.len as usize;
        }
        // The arenas hold exactly the attachments of this step's executions.
        assert_eq!(
            (comms, counters, cids),
            (
                out.comms.len(),
                out.counters.len(),
                out.correlation_ids.len()
            )
        );
    }

    /// Checks the step's GPU pairs (a CPU execution with a GPU one, both
    /// seen) and GPU partners (in execution order, each partner seen and
    /// another execution).
    fn check_gpu_pairs(&self) {
        let out = &self.out;
        for &(cpu, gpu) in &out.gpu_pairs {
            assert_eq!(self.seen.get(&cpu), Some(&false), "CPU side {cpu}");
            assert_eq!(self.seen.get(&gpu), Some(&true), "GPU side {gpu}");
        }
        assert!(out.gpu_partners.windows(2).all(|w| w[0].0 < w[1].0));
        for &(index, partner) in &out.gpu_partners {
            let e = out.executions[index as usize];
            assert!(self.seen.contains_key(&partner) && partner != e.id);
        }
    }

    fn finish(&mut self) {
        let open = self.events.open_calls() as u64;
        let pending = self.events.pending_correlations() as u64;
        let i = self.events.finish();
        assert_eq!(i.count(EventIssueKind::OpenAtEnd), open);
        assert_eq!(i.count(EventIssueKind::UnmatchedCorrelationAtEnd), pending);
        assert!(!i.has_problems());
        assert_eq!(self.events.open_calls(), 0);
        assert_eq!(self.events.pending_correlations(), 0);
        check_event_issues(&i);
        self.issues += i.total();
    }
}

/// Counts of a step's function rows, by what the replay can do with them.
struct FunctionRows {
    /// ENTRY rows, known function or not (they all take an id).
    entries: u64,
    /// ENTRY rows of a known function: each opens a call.
    entries_known: u64,
    /// EXIT rows of a known function: each closes a call or is an issue.
    exits_known: u64,
}

impl FunctionRows {
    /// Counts the function rows of `tau` with a usable ENTRY/EXIT type
    /// (and a known function) in `map`.
    fn count(tau: &TraceStep, map: &IndexMap) -> Self {
        let kind = |r: &FuncEvent| {
            map.event_types
                .get(r.event_type as usize)
                .copied()
                .flatten()
        };
        let known = |r: &FuncEvent| {
            map.functions
                .get(r.function as usize)
                .copied()
                .flatten()
                .is_some()
        };
        let entries = tau
            .funcs
            .iter()
            .filter(|r| kind(r) == Some(EventKind::Entry))
            .count() as u64;
        let entries_known = tau
            .funcs
            .iter()
            .filter(|r| kind(r) == Some(EventKind::Entry) && known(r))
            .count() as u64;
        let exits_known = tau
            .funcs
            .iter()
            .filter(|r| kind(r) == Some(EventKind::Exit) && known(r))
            .count() as u64;
        FunctionRows {
            entries,
            entries_known,
            exits_known,
        }
    }
}

/// Checks that step `s` opened and closed calls as its rows say: every
/// accepted ENTRY opens a call, every call closes at most once, and every
/// EXIT closes something or is counted as broken.
fn check_calls_balance(
    out: &StepEvents,
    s: u64,
    open_before: u64,
    open_after: u64,
    rows: &FunctionRows,
) {
    let i = &out.issues;
    let n = out.executions.len() as u64;
    // Every accepted ENTRY opens a call; every call closes at most once.
    assert_eq!(
        open_before + rows.entries_known - i.count(EventIssueKind::DepthLimit),
        open_after + n,
        "calls opened vs closed: {}",
        i.summary("fuzz", s)
    );
    // Every EXIT closes something or is counted as broken.
    assert_eq!(
        rows.exits_known,
        i.count(EventIssueKind::EmptyStackExit)
            + i.count(EventIssueKind::MismatchedExit)
            + i.count(EventIssueKind::ExitBeforeEntry)
            + n
            - i.count(EventIssueKind::ClosedImplicitly),
        "EXIT rows: {}",
        i.summary("fuzz", s)
    );
}

fn check_event_issues(issues: &crate::events::EventIssues) {
    for (k, n) in &issues.counts {
        assert!(*n > 0, "{k:?} counted 0");
        assert!(issues.first_example.contains_key(k), "{k:?} has no example");
    }
    let line = issues.summary("fuzz", 0);
    assert!(issues.counts.keys().all(|k| line.contains(k.name())));
}

/// Checks the text parsers on one arbitrary string: the bytes up to the
/// first newline are an attribute key (also tried as a stream name, an
/// execution id and a metadata description), the rest its value.
pub fn run_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (key, value) = text.split_once('\n').unwrap_or((&text, ""));

    let stripped = strip_quotes(value);
    assert!(stripped.len() <= value.len() && value.contains(stripped));

    let attr = parse_attribute(key, value);
    let index_of = |prefix: &str| key.strip_prefix(prefix).map(|r| r.trim().parse::<u64>());
    match &attr {
        Attribute::Function { index, .. } => {
            assert_eq!(index_of("timer "), Some(Ok(*index)));
            let again = parse_attribute(&format!("timer {index}"), value);
            assert_eq!(again, attr);
        }
        Attribute::EventType { index, .. } => {
            assert_eq!(index_of("event_type "), Some(Ok(*index)));
            let again = parse_attribute(&format!("event_type {index}"), value);
            assert_eq!(again, attr);
        }
        Attribute::Counter { index, .. } => {
            assert_eq!(index_of("counter "), Some(Ok(*index)));
            let again = parse_attribute(&format!("counter {index}"), value);
            assert_eq!(again, attr);
        }
        Attribute::Metadata(m) => {
            assert!(key.starts_with("MetaData:") && key.ends_with(m.description.as_str()));
            let k = format!("MetaData:{}:{}:{}", m.rank, m.thread, m.description);
            assert_eq!(parse_attribute(&k, value), attr);
        }
        Attribute::Malformed { key: k, .. } => {
            assert_eq!(k, key);
            assert!(["timer ", "event_type ", "counter ", "MetaData:"]
                .iter()
                .any(|p| key.starts_with(p)));
        }
        Attribute::Other { key: k, value: v } => {
            assert_eq!((k.as_str(), v.as_str()), (key, stripped));
        }
    }
    // Applying it to a dictionary never fails either; a malformed key is
    // counted, never fatal.
    let mut validator = StepValidator::new(0, None);
    let mut issues = StepIssues::default();
    validator.apply_attribute(&attr, &mut issues);
    check_issue_report(&issues);

    let _ = rank_from_stream_name(Path::new(key));
    let _ = gpu_metadata_key(key);
    let _ = EventKind::from_name(key);
    if let Ok(id) = key.parse::<ExecId>() {
        assert_eq!(id.to_string().parse::<ExecId>(), Ok(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FuzzInput {
        let f = |thread, et, func, ts| [0, 1, thread, et, func, T0 + ts];
        FuzzInput {
            preamble: true,
            expected_rank: Some(1),
            program_idx: 2,
            tight_limits: false,
            hide_indices: false,
            hide: 0,
            steps: vec![
                FuzzStep {
                    attributes: vec![("MetaData:1:3:CUDA Stream".into(), "\"7\"".into())],
                    funcs: vec![f(0, 0, 1, 0), f(0, 0, 2, 5), f(0, 1, 2, 9), f(3, 0, 4, 40)],
                    comms: vec![[0, 1, 0, 2, 0, 3, 1024, T0 + 6]],
                    counters: vec![[0, 1, 0, 0, 5, T0 + 7], [0, 1, 3, 0, 5, T0 + 41]],
                },
                FuzzStep {
                    funcs: vec![f(3, 1, 4, 50), f(0, 1, 1, 1 << 40), f(0, 1, 1, 3)],
                    ..Default::default()
                },
            ],
        }
    }

    #[test]
    fn encode_then_decode_is_the_identity() {
        let input = sample();
        assert_eq!(decode(&encode(&input)), input);
    }

    #[test]
    fn a_small_stream_runs_through() {
        let o = check(&sample());
        assert_eq!(o.steps, 2);
        assert_eq!(o.rows, 10);
        // The CPU call (f2, id 1:0:1) and the GPU kernel (thread 3) pair
        // through correlation id 5; one of the two EXITs of f1 in step 1
        // finds an empty stack.
        assert_eq!(o.executions, 3);
        assert_eq!(o.gpu_pairs, 2); // once per stream
    }

    #[test]
    fn any_bytes_decode() {
        for data in [&b""[..], b"\x01", b"\xff\xff\xff", &[0xE5; 300]] {
            run_steps(data);
            run_parse(data);
        }
    }
}
