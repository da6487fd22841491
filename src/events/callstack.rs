//! Per-thread call-stack replay: the heart of [`CallStackBuilder`].
//!
//! # How a step is processed
//!
//! 1. New metadata attributes mark GPU virtual threads.
//! 2. Comm and counter rows are sorted out per thread (as row indices into
//!    the step's arrays, in their array order, which is time order per
//!    thread). Monitoring counters go straight to the step's node state.
//! 3. Function rows are replayed in array order. Before a function row at
//!    time `t` is applied, the thread's pending comm/counter rows with
//!    `ts < t` are attached to the current innermost call, and for an EXIT
//!    also those with `ts == t`. That realises the tie rule "ENTRY, then
//!    comm/counter, then EXIT" without ever reordering function rows among
//!    themselves (which would break the stack).
//! 4. Comm/counter rows left over (later than the thread's last function
//!    row, or on threads without function rows) go to whatever is open.
//!
//! Function rows come grouped by thread, so the thread's state is looked up
//! once per run of same-thread rows, not per row. Rows of a thread split over
//! several runs are still handled correctly, because each thread keeps its
//! own cursor into its comm/counter rows.
//!
//! # Ids
//!
//! An ENTRY's id is its ordinal among the step's ENTRY rows in array order,
//! whatever thread they belong to. Since rows are replayed in array order the
//! running count is that ordinal; it never depends on comm/counter rows,
//! on the [`IndexMap`] or on broken rows elsewhere.
//!
//! This file is long because the replay is one algorithm over one
//! per-thread state: ENTRY, EXIT (with the implicit closes), comm, counter
//! and GPU rows all update the same stacks and read best together.

use std::collections::HashMap;

use crate::trace::dictionary::lookup;
use crate::trace::format::*;
use crate::trace::step::TraceStep;

use super::gpu::{self, CorrelationMatcher};
use super::{
    AttachRange, CommDirection, CommEvent, CounterEvent, CounterRole, EventIssueKind, EventIssues,
    EventOptions, ExecId, Execution, GpuLocation, IndexMap, Span, StepEvents, ThreadRun,
    MAX_PLAUSIBLE_BYTES,
};

/// Threads below this id are found through a plain vector; others through a
/// hash map (TAU numbers threads densely, so that is the rare case).
const DENSE_THREADS: u64 = 4096;

/// Event-type codes of the per-step lookup table.
const ET_UNKNOWN: u8 = 0;
const ET_ENTRY: u8 = 1;
const ET_EXIT: u8 = 2;
const ET_SEND: u8 = 3;
const ET_RECV: u8 = 4;

/// A call that has been entered and not yet exited.
///
/// Owns no memory: its attachments are the tail of the thread's pending
/// stacks ([`ThreadState::comms`] etc.) from the offsets recorded at entry.
/// Attachments only ever go to the innermost open call and calls close
/// last-in first-out, so when a call closes its attachments are exactly
/// `pending[start..]`; they are copied to the step's arenas and truncated.
#[derive(Debug, Clone, Copy)]
struct Frame {
    id: ExecId,
    function: u32,
    entry: u64,
    /// Sum of the inclusive times of completed direct children.
    children_inclusive: u64,
    n_children: u32,
    dropped: u32,
    /// Where this call's attachments start in the thread's pending stacks.
    comms_start: usize,
    counters_start: usize,
    correlation_ids_start: usize,
}

/// Everything kept per thread of the stream.
#[derive(Debug)]
struct ThreadState {
    thread: u64,
    stack: Vec<Frame>,
    /// Attachments of the open calls, innermost call's last (see [`Frame`]);
    /// reused across steps, so open calls cost no allocation either.
    comms: Vec<CommEvent>,
    counters: Vec<CounterEvent>,
    correlation_ids: Vec<u64>,
    /// Set once GPU metadata names this thread.
    gpu: Option<GpuLocation>,
    /// This step's comm rows of the thread (indices into `trace.comms`) and
    /// the next one to attach; reused across steps.
    comm_rows: Vec<u32>,
    comm_next: usize,
    /// Same for counter rows (monitoring counters excluded).
    counter_rows: Vec<u32>,
    counter_next: usize,
    /// Timestamp of the earliest not yet attached comm/counter row
    /// (`u64::MAX` when none), so that the common check is one compare.
    next_attach_ts: u64,
    /// Listed in `CallStackBuilder::touched` this step.
    touched: bool,
}

impl ThreadState {
    fn new(thread: u64) -> Self {
        ThreadState {
            thread,
            stack: Vec::new(),
            comms: Vec::new(),
            counters: Vec::new(),
            correlation_ids: Vec::new(),
            gpu: None,
            comm_rows: Vec::new(),
            comm_next: 0,
            counter_rows: Vec::new(),
            counter_next: 0,
            next_attach_ts: u64::MAX,
            touched: false,
        }
    }
}

/// A call still open, as seen from outside (e.g. for provenance call
/// stacks or end-of-run reports).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OpenCall {
    /// The call's label (`rank:step:idx` of its ENTRY).
    pub id: ExecId,
    /// TAU thread id the call runs on.
    pub thread: u64,
    /// Global function index.
    pub function: u32,
    /// ENTRY timestamp (µs since the epoch).
    pub entry: u64,
    /// Stack depth at entry; a root call has depth 0.
    pub depth: u32,
}

/// Rebuilds the executions of one TAU stream (one application process),
/// step by step. Open calls, GPU thread knowledge and unmatched correlation
/// ids carry over from step to step.
pub struct CallStackBuilder {
    program: u32,
    rank: u64,
    stream_name: String,
    opts: EventOptions,
    threads: Vec<ThreadState>,
    /// Thread id → slot + 1 in `threads` (0 = none yet), for small ids.
    dense_slot: Vec<u32>,
    sparse_slot: HashMap<u64, u32>,
    /// Slots that received comm/counter rows this step.
    touched: Vec<u32>,
    /// Per-step event-type table (local index → `ET_*`), reused.
    event_codes: Vec<u8>,
    correlations: CorrelationMatcher,
    /// Output buffers handed back with [`CallStackBuilder::recycle`].
    spare: Option<StepEvents>,
}

/// Where completed executions and issues of the current step go; kept
/// apart from the thread states so both can be borrowed at once.
struct CompletionTarget<'a> {
    out: &'a mut StepEvents,
    /// Called with each execution as it completes.
    on_complete: &'a mut dyn FnMut(&Execution),
    correlations: &'a mut CorrelationMatcher,
    program: u32,
    rank: u64,
    step: u64,
    max_attached: usize,
}

impl CompletionTarget<'_> {
    /// Records that function row `row_idx` (`row`) of `thread` was
    /// rejected, and why (`why` runs only for the first of its kind).
    #[inline(always)]
    fn reject_row(
        &mut self,
        (thread, row_idx, row): (u64, usize, &FuncEvent),
        kind: EventIssueKind,
        why: impl FnOnce() -> String,
    ) {
        self.out.issues.record(kind, Some(thread), || {
            format!("function row {row_idx} = {row:?}: {}", why())
        });
    }
}

impl CallStackBuilder {
    /// A builder for the stream `stream_name` (used in messages) of
    /// program `program` and application rank `rank`, with no open calls.
    pub fn new(program: u32, rank: u64, stream_name: String, opts: EventOptions) -> Self {
        CallStackBuilder {
            program,
            rank,
            stream_name,
            opts,
            threads: Vec::new(),
            dense_slot: Vec::new(),
            sparse_slot: HashMap::new(),
            touched: Vec::new(),
            event_codes: Vec::new(),
            correlations: CorrelationMatcher::default(),
            spare: None,
        }
    }

    /// The stream's name, as used in messages (its path).
    pub fn stream_name(&self) -> &str {
        &self.stream_name
    }

    /// Application rank of the stream.
    pub fn rank(&self) -> u64 {
        self.rank
    }

    /// Program index of the stream.
    pub fn program(&self) -> u32 {
        self.program
    }

    /// The tuning the builder was made with.
    pub fn options(&self) -> &EventOptions {
        &self.opts
    }

    /// Calls still open (carried to the next step), over all threads.
    pub fn open_calls(&self) -> usize {
        self.threads.iter().map(|t| t.stack.len()).sum()
    }

    /// The open calls, outermost first per thread, threads in order of
    /// first appearance.
    pub fn open_call_list(&self) -> Vec<OpenCall> {
        self.threads
            .iter()
            .flat_map(|t| {
                t.stack.iter().enumerate().map(move |(d, f)| OpenCall {
                    id: f.id,
                    thread: t.thread,
                    function: f.function,
                    entry: f.entry,
                    depth: d as u32,
                })
            })
            .collect()
    }

    /// The open calls of one thread, outermost first (each one's parent is
    /// the call before it).
    pub fn open_calls_of(&self, thread: u64) -> impl Iterator<Item = OpenCall> + '_ {
        let stack = match self.find_slot(thread) {
            Some(slot) => &self.threads[slot].stack[..],
            None => &[],
        };
        stack.iter().enumerate().map(move |(d, f)| OpenCall {
            id: f.id,
            thread,
            function: f.function,
            entry: f.entry,
            depth: d as u32,
        })
    }

    /// Correlation ids waiting for their partner.
    pub fn pending_correlations(&self) -> usize {
        self.correlations.len()
    }

    /// The GPU location of `thread`, if metadata marked it as a GPU thread.
    pub fn gpu_location(&self, thread: u64) -> Option<&GpuLocation> {
        let slot = self.find_slot(thread)?;
        self.threads[slot].gpu.as_ref()
    }

    /// All GPU threads known so far, with their locations.
    pub fn gpu_threads(&self) -> impl Iterator<Item = (u64, &GpuLocation)> {
        self.threads
            .iter()
            .filter_map(|t| t.gpu.as_ref().map(|g| (t.thread, g)))
    }

    /// End of stream: reports (and forgets) the calls still open and the
    /// correlation ids never matched. Both are normal in real traces (TAU's
    /// monitoring thread never exits), hence informational kinds.
    pub fn finish(&mut self) -> EventIssues {
        let mut issues = EventIssues::default();
        for t in &mut self.threads {
            if let Some(f) = t.stack.first() {
                let thread = t.thread;
                issues.add(
                    EventIssueKind::OpenAtEnd,
                    t.stack.len() as u64,
                    Some(thread),
                    || {
                        format!(
                            "{} (function {}) entered at {} and {} more on the thread",
                            f.id,
                            f.function,
                            f.entry,
                            t.stack.len() - 1
                        )
                    },
                );
            }
            t.stack.clear();
            t.comms.clear();
            t.counters.clear();
            t.correlation_ids.clear();
        }
        self.correlations.drain(&mut issues);
        issues
    }

    /// Processes one step; `step` is the step number used in [`ExecId`]s.
    ///
    /// The output vectors are fresh unless a previous result was handed back
    /// with [`CallStackBuilder::recycle`]; for big steps that matters (a
    /// million-row step produces ~56 MB of executions, and first-touching
    /// fresh memory costs about as much as the replay itself).
    pub fn build_step(&mut self, step: u64, trace: &TraceStep, map: &IndexMap) -> StepEvents {
        let mut out = self.spare.take().unwrap_or_default();
        self.build_step_into(step, trace, map, &mut out, &mut |_| {});
        out
    }

    /// Hands a finished step's output back so that the next
    /// [`CallStackBuilder::build_step`] reuses its buffers (optional).
    pub fn recycle(&mut self, mut done: StepEvents) {
        done.clear();
        self.spare = Some(done);
    }

    /// Like [`CallStackBuilder::build_step`], but reuses `out`'s buffers
    /// (cleared first), so a steady-state loop does not reallocate them, and
    /// hands every execution to `on_complete` the moment it completes, in
    /// the order of `out.executions`. What a caller needs
    /// from every execution is cheapest to take there: the execution was
    /// just written and is still in cache, while a later pass over a big
    /// step's executions is a trip through memory.
    pub fn build_step_into(
        &mut self,
        step: u64,
        trace: &TraceStep,
        map: &IndexMap,
        out: &mut StepEvents,
        on_complete: &mut dyn FnMut(&Execution),
    ) {
        out.clear();
        self.apply_metadata(trace);
        self.build_event_codes(map);
        let mut range = TsRange::default();
        self.distribute_comms(trace, &mut out.issues, &mut range);
        self.distribute_counters(trace, map, out, &mut range);

        // Roughly half the function rows are EXITs.
        crate::sys::memory::reserve_empty(&mut out.executions, trace.funcs.len() / 2);
        let mut target = CompletionTarget {
            out,
            on_complete,
            correlations: &mut self.correlations,
            program: self.program,
            rank: self.rank,
            step,
            max_attached: self.opts.max_attached,
        };
        let funcs = &trace.funcs;
        let mut entry_ordinal = 0u64;
        let mut i = 0usize;
        while i < funcs.len() {
            let thread = u64::from(funcs[i].thread);
            let slot = slot_of(
                &mut self.threads,
                &mut self.dense_slot,
                &mut self.sparse_slot,
                thread,
            );
            let (first_entry, first_exec) = (entry_ordinal, target.out.executions.len());
            i += replay_run(
                &mut self.threads[slot],
                &funcs[i..],
                i,
                &mut entry_ordinal,
                trace,
                map,
                &self.event_codes,
                self.opts.max_depth,
                &mut target,
                &mut range,
            )
            .max(1); // never 0 (the first row is the thread's), but be safe
            let end_exec = target.out.executions.len();
            if entry_ordinal > first_entry || end_exec > first_exec {
                target.out.thread_runs.push(ThreadRun {
                    thread,
                    first_entry,
                    end_entry: entry_ordinal,
                    first_exec,
                    end_exec,
                });
            }
        }
        // Leftover comm/counter rows attach to whatever is open now.
        for &slot in &self.touched {
            let th = &mut self.threads[slot as usize];
            attach_until(th, u64::MAX, true, trace, map, &mut target);
            th.comm_rows.clear();
            th.counter_rows.clear();
            th.comm_next = 0;
            th.counter_next = 0;
            th.next_attach_ts = u64::MAX;
            th.touched = false;
        }
        self.touched.clear();
        target
            .correlations
            .expire(step, &self.opts, &mut target.out.issues);
        // Entries that never completed (or were rejected) at the end too.
        let out = target.out;
        out.exec_of_entry
            .resize(entry_ordinal as usize, StepEvents::NOT_HERE);
        let execs = &out.executions;
        out.carried.sort_unstable_by_key(|&i| execs[i as usize].id);
        out.first_ts = range.first;
        out.last_ts = range.last;
    }

    /// Marks GPU threads from this step's new metadata. The rank field of
    /// the key is not checked: a stream only carries its own process's
    /// metadata, and rows of other ranks were already rejected by the reader.
    fn apply_metadata(&mut self, trace: &TraceStep) {
        for attr in &trace.new_attributes {
            let Attribute::Metadata(m) = attr else {
                continue;
            };
            let Some(key) = gpu::gpu_metadata_key(&m.description) else {
                continue;
            };
            let slot = slot_of(
                &mut self.threads,
                &mut self.dense_slot,
                &mut self.sparse_slot,
                m.thread,
            );
            let loc = self.threads[slot]
                .gpu
                .get_or_insert_with(GpuLocation::default);
            gpu::set_location(loc, key, &m.value);
        }
    }

    fn build_event_codes(&mut self, map: &IndexMap) {
        self.event_codes.clear();
        self.event_codes
            .extend(map.event_types.iter().map(|k| match k {
                Some(EventKind::Entry) => ET_ENTRY,
                Some(EventKind::Exit) => ET_EXIT,
                Some(EventKind::Send) => ET_SEND,
                Some(EventKind::Recv) => ET_RECV,
                None => ET_UNKNOWN,
            }));
    }

    fn find_slot(&self, thread: u64) -> Option<usize> {
        if thread < DENSE_THREADS {
            match self.dense_slot.get(thread as usize) {
                Some(&s) if s > 0 => Some(s as usize - 1),
                _ => None,
            }
        } else {
            self.sparse_slot.get(&thread).map(|&s| s as usize)
        }
    }

    /// Marks a thread as having rows to attach this step.
    fn touch(&mut self, slot: usize) {
        let th = &mut self.threads[slot];
        if !th.touched {
            th.touched = true;
            self.touched.push(slot as u32);
        }
    }

    /// Sorts comm rows out per thread; rejects those with a bad event type.
    fn distribute_comms(
        &mut self,
        trace: &TraceStep,
        issues: &mut EventIssues,
        range: &mut TsRange,
    ) {
        // Taken out for the walk, which holds `self`, and put back after.
        let codes = std::mem::take(&mut self.event_codes);
        let table = (trace.comms.as_slice(), COMM_COL_TIMESTAMP);
        self.distribute(Pending::Comms, table, range, |i, row, _| {
            let code = lookup(&codes, row[COMM_COL_EVENT_TYPE], ET_UNKNOWN);
            let known = code == ET_SEND || code == ET_RECV;
            if !known {
                let what = || {
                    let et = row[COMM_COL_EVENT_TYPE];
                    format!("comm row {i} = {row:?}: event type {et} is not SEND/RECV")
                };
                issues.record(
                    EventIssueKind::UnknownEventType,
                    Some(row[COL_THREAD]),
                    what,
                );
            }
            known
        });
        self.event_codes = codes;
    }

    /// Sorts counter rows out per thread; monitoring counters go straight to
    /// the node state, unknown counters are rejected.
    fn distribute_counters(
        &mut self,
        trace: &TraceStep,
        map: &IndexMap,
        out: &mut StepEvents,
        range: &mut TsRange,
    ) {
        let table = (trace.counters.as_slice(), COUNTER_COL_TIMESTAMP);
        self.distribute(Pending::Counters, table, range, |i, row, ts| {
            let local = row[COUNTER_COL_COUNTER];
            let Some(global) = lookup(&map.counters, local, None) else {
                out.issues.record(
                    EventIssueKind::UnknownCounter,
                    Some(row[COL_THREAD]),
                    || format!("counter row {i} = {row:?}: counter {local} has no global index"),
                );
                return false;
            };
            if lookup(&map.counter_roles, local, CounterRole::Plain) == CounterRole::Monitoring {
                out.node_state.push(CounterEvent {
                    counter: global,
                    value: row[COUNTER_COL_VALUE],
                    ts,
                });
                return false;
            }
            true
        });
    }

    /// Makes the rows of one kind that `keep` accepts pending on their
    /// threads (`keep` records why it rejects one); widens `range` by every
    /// row's timestamp.
    #[inline(always)]
    fn distribute<const W: usize>(
        &mut self,
        pending: Pending,
        (table, ts_col): (&[[u64; W]], usize),
        range: &mut TsRange,
        mut keep: impl FnMut(usize, &[u64; W], u64) -> bool,
    ) {
        let mut last: Option<(u64, usize)> = None;
        for (i, row) in table.iter().enumerate() {
            let ts = row[ts_col];
            range.add(ts);
            if keep(i, row, ts) {
                self.pend(&mut last, row[COL_THREAD], pending, (i, ts));
            }
        }
    }

    /// Makes row `i` (at `ts`) of that kind pending on its thread.
    fn pend(
        &mut self,
        last: &mut Option<(u64, usize)>,
        thread: u64,
        pending: Pending,
        (i, ts): (usize, u64),
    ) {
        let slot = self.cached_slot(last, thread);
        let th = &mut self.threads[slot];
        match pending {
            Pending::Comms => th.comm_rows.push(i as u32),
            Pending::Counters => th.counter_rows.push(i as u32),
        }
        th.next_attach_ts = th.next_attach_ts.min(ts);
        self.touch(slot);
    }

    /// Slot lookup remembering the previous row's thread (comm and counter
    /// rows are time sorted, so runs of one thread are common).
    fn cached_slot(&mut self, last: &mut Option<(u64, usize)>, thread: u64) -> usize {
        match *last {
            Some((t, s)) if t == thread => s,
            _ => {
                let s = slot_of(
                    &mut self.threads,
                    &mut self.dense_slot,
                    &mut self.sparse_slot,
                    thread,
                );
                *last = Some((thread, s));
                s
            }
        }
    }
}

/// The slot of `thread`, created on first sight. A free function over the
/// fields so that callers can hold other fields borrowed meanwhile.
fn slot_of(
    threads: &mut Vec<ThreadState>,
    dense: &mut Vec<u32>,
    sparse: &mut HashMap<u64, u32>,
    thread: u64,
) -> usize {
    if thread < DENSE_THREADS {
        let t = thread as usize;
        if dense.len() <= t {
            dense.resize(t + 1, 0);
        }
        if dense[t] == 0 {
            threads.push(ThreadState::new(thread));
            dense[t] = threads.len() as u32;
        }
        dense[t] as usize - 1
    } else {
        *sparse.entry(thread).or_insert_with(|| {
            threads.push(ThreadState::new(thread));
            threads.len() as u32 - 1
        }) as usize
    }
}

/// Smallest and largest timestamp seen.
#[derive(Debug, Default, Clone, Copy)]
struct TsRange {
    first: Option<u64>,
    last: Option<u64>,
}

impl TsRange {
    #[inline]
    fn add(&mut self, ts: u64) {
        self.first = Some(self.first.map_or(ts, |f| f.min(ts)));
        self.last = Some(self.last.map_or(ts, |l| l.max(ts)));
    }

    #[inline]
    fn add_span(&mut self, lo: u64, hi: u64) {
        self.add(lo);
        self.add(hi);
    }
}

/// Replays the run of consecutive function rows of `th`'s thread at the
/// start of `rows` and returns its length (detecting the end of the run here
/// rather than beforehand saves a pass over the rows). `base` is the index
/// of `rows[0]` in `trace.funcs`.
#[allow(clippy::too_many_arguments)]
fn replay_run(
    th: &mut ThreadState,
    rows: &[FuncEvent],
    base: usize,
    entry_ordinal: &mut u64,
    trace: &TraceStep,
    map: &IndexMap,
    codes: &[u8],
    max_depth: usize,
    target: &mut CompletionTarget<'_>,
    range: &mut TsRange,
) -> usize {
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    let mut len = rows.len();
    for (k, row) in rows.iter().enumerate() {
        if u64::from(row.thread) != th.thread {
            len = k;
            break;
        }
        let ts = row.timestamp;
        lo = lo.min(ts);
        hi = hi.max(ts);
        let code = lookup(codes, u64::from(row.event_type), ET_UNKNOWN);
        let is_exit = code == ET_EXIT;
        if code != ET_ENTRY && !is_exit {
            let why = || format!("event type {} is not ENTRY/EXIT", row.event_type);
            let at = (th.thread, base + k, row);
            target.reject_row(at, EventIssueKind::UnknownEventType, why);
            continue;
        }
        // The ordinal counts every ENTRY row, valid or not, so ids depend
        // only on row positions.
        let ordinal = *entry_ordinal;
        *entry_ordinal += u64::from(!is_exit);

        // Attach comm/counter rows that precede this row (tie rule).
        if th.next_attach_ts < ts || (is_exit && th.next_attach_ts == ts) {
            attach_until(th, ts, is_exit, trace, map, target);
        }

        let local = u64::from(row.function);
        let Some(function) = lookup(&map.functions, local, None) else {
            let why = || format!("function {local} has no global index");
            let at = (th.thread, base + k, row);
            target.reject_row(at, EventIssueKind::UnknownFunction, why);
            continue;
        };

        if is_exit {
            apply_exit(th, function, row, base + k, target);
        } else {
            push_entry(th, function, row, ordinal, base + k, max_depth, target);
        }
    }
    if lo <= hi {
        range.add_span(lo, hi);
    }
    len
}

/// ENTRY row `row` (at index `row_idx`) of `function`: opens a call with
/// the id `ordinal` on top of `th`'s stack, unless the stack is already
/// `max_depth` deep (then the row is rejected as an issue).
///
/// Part of [`replay_run`]'s per-row loop, hence always inlined.
#[inline(always)]
fn push_entry(
    th: &mut ThreadState,
    function: u32,
    row: &FuncEvent,
    ordinal: u64,
    row_idx: usize,
    max_depth: usize,
    target: &mut CompletionTarget<'_>,
) {
    if th.stack.len() >= max_depth {
        let why = || format!("stack already {} deep", th.stack.len());
        let at = (th.thread, row_idx, row);
        target.reject_row(at, EventIssueKind::DepthLimit, why);
        return;
    }
    if let Some(parent) = th.stack.last_mut() {
        parent.n_children = parent.n_children.saturating_add(1);
    }
    // A slot for the execution, set when (if) it completes this step.
    let entries = &mut target.out.exec_of_entry;
    entries.resize(ordinal as usize + 1, StepEvents::NOT_HERE);
    th.stack.push(Frame {
        id: ExecId {
            rank: target.rank,
            step: target.step,
            idx: ordinal,
        },
        function,
        entry: row.timestamp,
        children_inclusive: 0,
        n_children: 0,
        dropped: 0,
        comms_start: th.comms.len(),
        counters_start: th.counters.len(),
        correlation_ids_start: th.correlation_ids.len(),
    });
}

/// EXIT row `row` (at index `row_idx`) of `function`: closes the matching
/// open call of `th`, or records why the row cannot close anything.
///
/// Part of [`replay_run`]'s per-row loop, hence always inlined; the rare
/// EXIT of a call that is not on top goes to [`close_deeper`].
#[inline(always)]
fn apply_exit(
    th: &mut ThreadState,
    function: u32,
    row: &FuncEvent,
    row_idx: usize,
    target: &mut CompletionTarget<'_>,
) {
    let ts = row.timestamp;
    // The common case is a match with the top of the stack.
    match th.stack.last() {
        None => {
            let why = || "no open call".to_owned();
            let at = (th.thread, row_idx, row);
            target.reject_row(at, EventIssueKind::EmptyStackExit, why);
        }
        Some(top) if top.function == function => {
            if ts < top.entry {
                let entry = top.entry;
                let why = || format!("exit at {ts} before its entry at {entry}");
                let at = (th.thread, row_idx, row);
                target.reject_row(at, EventIssueKind::ExitBeforeEntry, why);
            } else {
                close_top(th, ts, target);
            }
        }
        Some(_) => close_deeper(th, function, ts, row, row_idx, target),
    }
}

/// EXIT of a function that is not on top: close the calls above it if it is
/// open deeper, otherwise reject the row.
fn close_deeper(
    th: &mut ThreadState,
    function: u32,
    ts: u64,
    row: &FuncEvent,
    row_idx: usize,
    target: &mut CompletionTarget<'_>,
) {
    let Some(pos) = th.stack.iter().rposition(|f| f.function == function) else {
        let top = th.stack.last().map_or(0, |f| f.function);
        let why = || format!("function {function} is not open (top is {top})");
        let at = (th.thread, row_idx, row);
        target.reject_row(at, EventIssueKind::MismatchedExit, why);
        return;
    };
    let latest_entry = th.stack[pos..].iter().map(|f| f.entry).max().unwrap_or(0);
    if ts < latest_entry {
        let why =
            || format!("exit at {ts} before the entry at {latest_entry} of a call it would close");
        let at = (th.thread, row_idx, row);
        target.reject_row(at, EventIssueKind::ExitBeforeEntry, why);
        return;
    }
    while th.stack.len() > pos + 1 {
        let thread = th.thread;
        if let Some(f) = th.stack.last() {
            let (id, func) = (f.id, f.function);
            target.out
                .issues
                .record(EventIssueKind::ClosedImplicitly, Some(thread), || {
                    format!(
                        "{id} (function {func}) closed at {ts} by the EXIT of function {function} (row {row_idx})"
                    )
                });
        }
        close_top(th, ts, target);
    }
    close_top(th, ts, target);
}

/// Moves `pending[start..]` to the end of `arena` and returns where it
/// went there (an empty span when the tail is empty).
#[inline]
fn move_tail<T: Copy>(pending: &mut Vec<T>, start: usize, arena: &mut Vec<T>) -> Span {
    if start >= pending.len() {
        return Span::default();
    }
    let at = arena.len();
    arena.extend_from_slice(&pending[start..]);
    pending.truncate(start);
    Span {
        // Beyond u32 (not plausible within one step) the span reads as
        // empty rather than aliasing other attachments.
        start: u32::try_from(at).unwrap_or(u32::MAX),
        len: u32::try_from(arena.len() - at).unwrap_or(0),
    }
}

/// Pops the top call, completing it at `exit`.
#[inline]
fn close_top(th: &mut ThreadState, exit: u64, target: &mut CompletionTarget<'_>) {
    let Some(f) = th.stack.pop() else {
        return;
    };
    let inclusive = exit.saturating_sub(f.entry);
    let exclusive = inclusive.saturating_sub(f.children_inclusive);
    let parent = match th.stack.last_mut() {
        Some(p) => {
            p.children_inclusive = p.children_inclusive.saturating_add(inclusive);
            Some(p.id)
        }
        None => None,
    };
    let out = &mut *target.out;
    let attach = AttachRange {
        comms: move_tail(&mut th.comms, f.comms_start, &mut out.comms),
        counters: move_tail(&mut th.counters, f.counters_start, &mut out.counters),
        correlation_ids: move_tail(
            &mut th.correlation_ids,
            f.correlation_ids_start,
            &mut out.correlation_ids,
        ),
        dropped: f.dropped,
    };
    let at = out.executions.len();
    let index = at as u32;
    if attach.comms.len > 0 {
        out.with_comms.push(index);
    }
    // Built straight into the vector (not in a local first and then
    // copied): this runs once per execution, and the copy of a freshly
    // written 112-byte local costs more than everything else here.
    out.executions.push(Execution::new(
        f.id,
        target.program,
        th.thread,
        f.function,
        f.entry,
        exit,
        exclusive,
        parent,
        th.stack.len() as u32,
        f.n_children,
        th.gpu.is_some(),
        attach,
    ));
    if f.id.step == target.step {
        if let Some(slot) = out.exec_of_entry.get_mut(f.id.idx as usize) {
            *slot = index;
        }
    } else {
        out.carried.push(index);
    }
    (target.on_complete)(&out.executions[at]);
    if !attach.correlation_ids.is_empty() {
        let exec = out.executions[at];
        debug_assert_eq!(exec.inclusive(), inclusive);
        let ids = attach.correlation_ids.of(&out.correlation_ids);
        if let Some(partner) = target.correlations.complete(
            &exec,
            ids,
            target.step,
            &mut out.gpu_pairs,
            &mut out.issues,
        ) {
            out.gpu_partners.push((index, partner));
        }
    }
}

/// Attaches the thread's pending comm and counter rows with `ts < bound`
/// (or `ts <= bound` when `inclusive`) to the innermost open call.
fn attach_until(
    th: &mut ThreadState,
    bound: u64,
    inclusive: bool,
    trace: &TraceStep,
    map: &IndexMap,
    target: &mut CompletionTarget<'_>,
) {
    let due = (bound, inclusive);
    let (cap, rank) = (target.max_attached, target.rank);
    let comms = (trace.comms.as_slice(), COMM_COL_TIMESTAMP);
    attach_due_rows(th, Pending::Comms, comms, due, target, |th, row, ts| {
        attach_comm(th, (row, ts), (cap, rank), map);
    });
    let counters = (trace.counters.as_slice(), COUNTER_COL_TIMESTAMP);
    attach_due_rows(
        th,
        Pending::Counters,
        counters,
        due,
        target,
        |th, row, ts| {
            attach_counter(th, (row, ts), cap, map);
        },
    );
    th.next_attach_ts = next_pending_ts(th, trace);
}

/// Whether a pending row at `ts` is due before a function row at `bound`:
/// strictly earlier, or at the same time when `inclusive` (an EXIT).
#[inline(always)]
fn is_due(ts: u64, bound: u64, inclusive: bool) -> bool {
    ts < bound || (inclusive && ts == bound)
}

/// The next of a thread's rows (`rows[*next..]`, indices into `table`)
/// that is due (its timestamp, column `ts_col`, before the bound; see
/// [`is_due`]): moves `next` past it, and past indices outside the table,
/// and returns its index, the row and its timestamp; `None` at the first
/// row not due yet. What the comm and the counter halves of
/// [`attach_until`] walk their rows with.
#[inline(always)]
fn next_due_row<'t, const W: usize>(
    rows: &[u32],
    next: &mut usize,
    table: &'t [[u64; W]],
    ts_col: usize,
    (bound, inclusive): (u64, bool),
) -> Option<(u32, &'t [u64; W], u64)> {
    while let Some(&ri) = rows.get(*next) {
        let Some(row) = table.get(ri as usize) else {
            *next += 1;
            continue;
        };
        let ts = row[ts_col];
        if !is_due(ts, bound, inclusive) {
            return None;
        }
        *next += 1;
        return Some((ri, row, ts));
    }
    None
}

/// Which of a thread's pending rows: its comm rows or its counter rows.
#[derive(Clone, Copy)]
enum Pending {
    Comms,
    Counters,
}

impl ThreadState {
    /// The thread's pending rows of that kind and how far they are walked.
    #[inline(always)]
    fn cursor(&mut self, pending: Pending) -> (&[u32], &mut usize) {
        match pending {
            Pending::Comms => (&self.comm_rows, &mut self.comm_next),
            Pending::Counters => (&self.counter_rows, &mut self.counter_next),
        }
    }
}

/// Walks the thread's due rows of one kind (see [`next_due_row`]): a row
/// due while no call is open is recorded as unattached; any other is handed
/// to `attach` with its timestamp, while the thread's stack is not empty.
#[inline(always)]
fn attach_due_rows<const W: usize>(
    th: &mut ThreadState,
    pending: Pending,
    (table, ts_col): (&[[u64; W]], usize),
    due: (u64, bool),
    target: &mut CompletionTarget<'_>,
    mut attach: impl FnMut(&mut ThreadState, &[u64; W], u64),
) {
    let (kind, what) = match pending {
        Pending::Comms => (EventIssueKind::UnattachedComm, "comm"),
        Pending::Counters => (EventIssueKind::UnattachedCounter, "counter"),
    };
    loop {
        let (rows, next) = th.cursor(pending);
        let Some((ri, row, ts)) = next_due_row(rows, next, table, ts_col, due) else {
            return;
        };
        if th.stack.is_empty() {
            let thread = th.thread;
            target.out.issues.record(kind, Some(thread), || {
                format!("{what} row {ri} = {row:?}: no open call at {ts}")
            });
            continue;
        }
        attach(th, row, ts);
    }
}

/// Attaches comm row `row` (at `ts`) to the thread's innermost open call,
/// or counts it as dropped beyond the cap; `rank` is the stream's own.
#[inline(always)]
fn attach_comm(
    th: &mut ThreadState,
    (row, ts): (&CommRow, u64),
    (cap, rank): (usize, u64),
    map: &IndexMap,
) {
    let Some(frame) = th.stack.last_mut() else {
        return;
    };
    if th.comms.len() - frame.comms_start >= cap {
        frame.dropped = frame.dropped.saturating_add(1);
        return;
    }
    let partner = row[COMM_COL_PARTNER];
    let (direction, src, dst) =
        if lookup(&map.event_types, row[COMM_COL_EVENT_TYPE], None) == Some(EventKind::Send) {
            (CommDirection::Send, rank, partner)
        } else {
            (CommDirection::Recv, partner, rank)
        };
    let bytes = row[COMM_COL_BYTES];
    th.comms.push(CommEvent {
        direction,
        src,
        dst,
        tag: row[COMM_COL_TAG],
        bytes: (bytes <= MAX_PLAUSIBLE_BYTES).then_some(bytes),
        ts,
    });
}

/// Attaches counter row `row` (at `ts`) to the thread's innermost open
/// call, and collects a correlation-id value (for GPU matching) besides;
/// each list is capped on its own.
#[inline(always)]
fn attach_counter(th: &mut ThreadState, (row, ts): (&CounterRow, u64), cap: usize, map: &IndexMap) {
    let Some(frame) = th.stack.last_mut() else {
        return;
    };
    let local = row[COUNTER_COL_COUNTER];
    // Unknown counters were filtered out when distributing.
    let global = lookup(&map.counters, local, None).unwrap_or(u32::MAX);
    let value = row[COUNTER_COL_VALUE];
    let is_corr =
        lookup(&map.counter_roles, local, CounterRole::Plain) == CounterRole::CorrelationId;
    if is_corr && th.correlation_ids.len() - frame.correlation_ids_start < cap {
        th.correlation_ids.push(value);
    }
    if th.counters.len() - frame.counters_start >= cap {
        frame.dropped = frame.dropped.saturating_add(1);
        return;
    }
    th.counters.push(CounterEvent {
        counter: global,
        value,
        ts,
    });
}

/// Timestamp of the thread's earliest comm or counter row not yet
/// attached (`u64::MAX` when none): the value of
/// [`ThreadState::next_attach_ts`].
#[inline(always)]
fn next_pending_ts(th: &ThreadState, trace: &TraceStep) -> u64 {
    let next_comm = th
        .comm_rows
        .get(th.comm_next)
        .and_then(|&ri| trace.comms.get(ri as usize))
        .map_or(u64::MAX, |r| r[COMM_COL_TIMESTAMP]);
    let next_counter = th
        .counter_rows
        .get(th.counter_next)
        .and_then(|&ri| trace.counters.get(ri as usize))
        .map_or(u64::MAX, |r| r[COUNTER_COL_TIMESTAMP]);
    next_comm.min(next_counter)
}
