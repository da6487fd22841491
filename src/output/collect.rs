//! The collect stage for the provenance file: turning labelled executions
//! into records (no HDF5 here; `writer` writes what this module collects).
//!
//! For each stream and step, [`StreamProvenance::collect_step`] picks
//! - every anomaly (exclusive runtime at least `min_anomaly_us`), and
//! - normal samples: for each function with an anomaly in this stream and
//!   step, the `normal_samples` normal executions with the lowest score (as
//!   Chimbuko keeps its lowest-score normal event); a function whose
//!   anomaly found no normal execution in its step gets one from the next
//!   step that has one,
//!
//! and builds for each the call stack (the execution, then its parents up
//! to the root), its counter samples, the window of executions around it on
//! its thread (entry order, `window` each side) with their messages, its
//! GPU location and host parent, and the node state at its exit.
//!
//! Everything depends only on the stream's own data, never on which AD rank
//! reads it, so the records are the same for any number of AD ranks.
//!
//! Entry order: ids `(step, idx)` are assigned in ENTRY order within a
//! stream, so sorting by id is sorting by entry. Executions completed this
//! step that also entered this step are placed by direct addressing on
//! `idx` (no sort); the few that entered earlier are sorted apart.

use std::collections::{BTreeMap, HashMap};

use crate::detect::{Label, Verdict};
use crate::events::names::GlobalNames;
use crate::events::{CallStackBuilder, CommDirection, CommEvent, ExecId, Execution, StepEvents};
use crate::trace::format::{Attribute, MONITORING_PREFIX};

use super::label_code;
use super::records::*;

/// What to keep.
#[derive(Debug, Clone)]
pub struct ProvenanceOptions {
    /// Executions on each side of a record in its window.
    pub window: usize,
    /// Normal executions kept per function with anomalies, per stream and step.
    pub normal_samples: usize,
    /// Anomalies with a shorter exclusive runtime (µs) are not recorded.
    pub min_anomaly_us: u64,
}

impl Default for ProvenanceOptions {
    fn default() -> Self {
        ProvenanceOptions {
            window: 5,
            normal_samples: 1,
            min_anomaly_us: 0,
        }
    }
}

/// Records of one collection (`anomalies` or `normal_execs`) not yet
/// written. Companion rows name their record by its index in `records`
/// and records name their companion rows by index, both local to this
/// buffer; the writer shifts them to file rows.
#[derive(Debug, Default)]
pub struct Collection {
    /// Rows of the `records` table.
    pub records: Vec<ExecRecord>,
    /// Rows of the `call_stack` table.
    pub call_stack: Vec<CallStackRow>,
    /// Rows of the `counter_events` table.
    pub counter_events: Vec<CounterEventRow>,
    /// Rows of the `exec_window` table.
    pub exec_window: Vec<ExecWindowRow>,
    /// Rows of the `comm_window` table.
    pub comm_window: Vec<CommWindowRow>,
    /// Rows of the `gpu_location` table.
    pub gpu_location: Vec<GpuLocationRow>,
    /// Rows of the `gpu_parent` table.
    pub gpu_parent: Vec<GpuParentRow>,
    /// Rows of the `node_state` table.
    pub node_state: Vec<NodeStateRow>,
}

impl Collection {
    /// True when no record is waiting to be written.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Drops every row (after they were written).
    pub fn clear(&mut self) {
        *self = Collection::default();
    }

    /// Functions of the records added since `from` (for model snapshots).
    pub fn functions_since(&self, from: usize) -> impl Iterator<Item = u32> + '_ {
        self.records[from.min(self.records.len())..]
            .iter()
            .map(|r| r.fid)
    }
}

/// One execution in a thread's history or window.
#[derive(Debug, Clone)]
struct WindowEntry {
    id: ExecId,
    fid: u32,
    entry: u64,
    /// 0 while open.
    exit: u64,
    parent: Option<ExecId>,
    is_anomaly: bool,
    comms: Vec<CommEvent>,
}

/// Per-stream state carried from step to step.
#[derive(Debug, Default)]
pub struct StreamProvenance {
    program: u32,
    rank: u64,
    hostname: String,
    /// The last `window` executions (entry order) completed before this
    /// step, per thread.
    history: HashMap<u64, Vec<WindowEntry>>,
    /// Latest value and timestamp of each monitoring counter.
    node_state: BTreeMap<u32, (u64, u64)>,
    /// Functions whose anomalies still wait for a normal sample.
    outstanding_normal: Vec<u32>,
    /// This step's anomalies (indices into its executions).
    anomalies: Vec<u32>,
    /// Normal-sample candidates: `samples` slots per function, the lowest
    /// scores first, `cand_len[f]` of them used.
    cand: Vec<Candidate>,
    cand_len: Vec<u32>,
    samples: usize,
    min_anomaly_us: u64,
}

/// Everything `collect_step` reads.
pub struct StepContext<'a> {
    /// The I/O step being collected.
    pub step: u64,
    /// The stream's executions completed this step, with their attachments.
    pub events: &'a StepEvents,
    /// One per `events.executions`.
    pub verdicts: &'a [Verdict],
    /// The stream's call stacks: calls still open, GPU locations.
    pub stream: &'a CallStackBuilder,
    /// The global function and counter names.
    pub names: &'a GlobalNames,
    /// What to keep.
    pub opts: &'a ProvenanceOptions,
}

/// Execution `j` of this step as a window entry (kept in a thread's
/// history across steps).
fn window_entry(events: &StepEvents, verdicts: &[Verdict], j: usize) -> WindowEntry {
    let x = &events.executions[j];
    WindowEntry {
        id: x.id,
        fid: x.function,
        entry: x.entry,
        exit: x.exit,
        parent: x.parent(),
        is_anomaly: verdicts[j].label == Label::Anomaly,
        comms: events.comms_of(x).to_vec(),
    }
}

/// `rank:step:idx`, formatted on the stack: a record and its window carry
/// a dozen of these, and going through a heap `String` each time showed up
/// in the collect phase of anomaly-heavy runs.
fn id_str(id: &ExecId) -> EventIdStr {
    let mut buf = [0u8; 3 * 20 + 2];
    let mut len = 0;
    for (k, v) in [id.rank, id.step, id.idx].into_iter().enumerate() {
        if k > 0 {
            buf[len] = b':';
            len += 1;
        }
        len += write_decimal(v, &mut buf[len..]);
    }
    fixed(std::str::from_utf8(&buf[..len]).unwrap_or_default())
}

/// Writes `v` in decimal at the start of `out` (room for 20 digits) and
/// returns the number of bytes written.
fn write_decimal(mut v: u64, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for (o, d) in out.iter_mut().zip(digits[..n].iter().rev()) {
        *o = *d;
    }
    n
}

fn parent_str(p: Option<ExecId>) -> EventIdStr {
    p.map_or_else(|| fixed("root"), |p| id_str(&p))
}

impl StreamProvenance {
    /// The state of a stream of program `program` and application rank
    /// `rank`, before its first step.
    pub fn new(program: u32, rank: u64) -> Self {
        StreamProvenance {
            program,
            rank,
            ..Default::default()
        }
    }

    /// Notes the stream's host name and returns its new metadata as rows.
    pub fn observe_metadata(&mut self, attrs: &[Attribute], out: &mut Vec<MetadataRow>) {
        for a in attrs {
            let Attribute::Metadata(m) = a else { continue };
            if m.description == "Hostname" && self.hostname.is_empty() {
                self.hostname = m.value.clone();
            }
            out.push(MetadataRow {
                pid: self.program,
                rid: m.rank,
                tid: m.thread,
                descr: fixed(&m.description),
                value: fixed(&m.value),
            });
        }
    }

    /// Starts a step: forgets the previous step's candidates. Then call
    /// [`StreamProvenance::offer`] for every execution as it is labelled,
    /// [`StreamProvenance::collect_step`] once, and
    /// [`StreamProvenance::trim`] once.
    pub fn begin_step(&mut self, n_functions: usize, opts: &ProvenanceOptions) {
        self.anomalies.clear();
        self.samples = opts.normal_samples;
        self.min_anomaly_us = opts.min_anomaly_us;
        self.cand_len.clear();
        self.cand_len.resize(n_functions, 0);
        self.cand
            .resize(n_functions * self.samples, Candidate::default());
    }

    /// Notes execution `i` of the step with its verdict: an anomaly to
    /// record, or a candidate normal sample of its function (the lowest
    /// scores are kept). Done while labelling, so that picking costs no
    /// pass of its own over the step's executions.
    #[inline]
    pub fn offer(&mut self, i: usize, e: &Execution, v: Verdict) {
        match v.label {
            Label::Anomaly if e.exclusive >= self.min_anomaly_us => {
                self.anomalies.push(i as u32);
            }
            Label::Normal if self.samples > 0 => {
                let f = e.function as usize;
                let Some(len) = self.cand_len.get_mut(f) else {
                    return;
                };
                let n = self.samples;
                let list = &mut self.cand[f * n..(f + 1) * n];
                let c = Candidate {
                    score: v.score,
                    id: e.id,
                    index: i as u32,
                };
                let used = *len as usize;
                if used == n && !c.less(&list[n - 1]) {
                    return;
                }
                // Insertion into a short sorted list.
                let mut at = used.min(n - 1);
                list[at] = c;
                while at > 0 && list[at].less(&list[at - 1]) {
                    list.swap(at, at - 1);
                    at -= 1;
                }
                *len = (used + 1).min(n) as u32;
            }
            _ => {}
        }
    }

    /// Collects the records of one step; returns the number of anomalies
    /// recorded.
    pub fn collect_step(
        &mut self,
        ctx: &StepContext<'_>,
        anomalies: &mut Collection,
        normals: &mut Collection,
    ) -> u64 {
        let execs = &ctx.events.executions;
        let picked_anomalies = std::mem::take(&mut self.anomalies);
        let picked_normals = self.pick_normals(execs, &picked_anomalies);
        for &i in &picked_anomalies {
            self.record(ctx, i as usize, anomalies);
        }
        for &i in &picked_normals {
            self.record(ctx, i as usize, normals);
        }
        self.update_node_state(ctx.events);
        let n = picked_anomalies.len() as u64;
        self.anomalies = picked_anomalies;
        n
    }

    /// The trim of a step, after its records are collected: keeps, per
    /// thread, the last `window` executions a later step's windows can
    /// need, and forgets the rest.
    pub fn trim(&mut self, events: &StepEvents, verdicts: &[Verdict], window: usize) {
        self.update_history(events, verdicts, window);
    }

    /// Normal samples for the functions with anomalies this step (and those
    /// still waiting from earlier steps), from the candidates offered.
    fn pick_normals(&mut self, execs: &[Execution], anomalies: &[u32]) -> Vec<u32> {
        let mut wanted: Vec<u32> = anomalies
            .iter()
            .map(|&i| execs[i as usize].function)
            .chain(self.outstanding_normal.drain(..))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let n = self.samples;
        let mut normals = Vec::new();
        if n == 0 {
            return normals;
        }
        for f in wanted {
            let used = self.cand_len.get(f as usize).copied().unwrap_or(0) as usize;
            if used == 0 {
                self.outstanding_normal.push(f);
            }
            let start = f as usize * n;
            normals.extend(self.cand[start..start + used].iter().map(|c| c.index));
        }
        normals.sort_unstable();
        normals
    }

    /// Up to `n` executions of `thread` next to execution `i` in this
    /// step's entry order: before it (nearest first) when `backward`,
    /// otherwise after it (nearest first). Older entries come before all
    /// entries of this step.
    fn neighbours(
        &self,
        step: u64,
        events: &StepEvents,
        i: usize,
        backward: bool,
        n: usize,
    ) -> Vec<usize> {
        let execs = &events.executions;
        let e = &execs[i];
        let older = events.carried.iter().copied();
        let seq: Box<dyn Iterator<Item = u32> + '_> = if e.id.step == step {
            let k = e.id.idx as usize;
            if backward {
                Box::new(
                    self.current_of(events, e.thread, 0..k, true)
                        .chain(older.rev()),
                )
            } else {
                Box::new(self.current_of(events, e.thread, k + 1..usize::MAX, false))
            }
        } else {
            let p = events
                .carried
                .iter()
                .position(|&j| j as usize == i)
                .unwrap_or(0);
            if backward {
                Box::new(older.take(p).rev())
            } else {
                Box::new(older.skip(p + 1).chain(self.current_of(
                    events,
                    e.thread,
                    0..usize::MAX,
                    false,
                )))
            }
        };
        seq.filter(|&j| j != StepEvents::NOT_HERE && execs[j as usize].thread == e.thread)
            .take(n)
            .map(|j| j as usize)
            .collect()
    }

    /// This step's completed executions of `thread` whose entry ordinal is
    /// in `ordinals`, in entry order (reversed when `backward`). Walks only
    /// the thread's own runs of entries: scanning the step's whole entry
    /// order would cross every other thread's entries, which made a
    /// window near the start of a thread's run cost a pass over the step.
    fn current_of<'a>(
        &'a self,
        events: &'a StepEvents,
        thread: u64,
        ordinals: std::ops::Range<usize>,
        backward: bool,
    ) -> Box<dyn Iterator<Item = u32> + 'a> {
        let by_entry = &events.exec_of_entry;
        let len = by_entry.len();
        let (lo, hi) = (ordinals.start.min(len), ordinals.end.min(len));
        let slice = move |first: usize, end: usize| {
            let (a, b) = (first.max(lo), end.min(hi));
            &by_entry[a.min(b)..b]
        };
        if events.thread_runs.is_empty() {
            // No run information (steps assembled by hand): the whole
            // entry order, filtered by the caller.
            let all = slice(0, len).iter().copied();
            return if backward {
                Box::new(all.rev())
            } else {
                Box::new(all)
            };
        }
        let runs = events
            .thread_runs
            .iter()
            .filter(move |r| r.thread == thread);
        if backward {
            Box::new(runs.rev().flat_map(move |r| {
                let e = r.entries();
                slice(e.start, e.end).iter().rev().copied()
            }))
        } else {
            Box::new(runs.flat_map(move |r| {
                let e = r.entries();
                slice(e.start, e.end).iter().copied()
            }))
        }
    }

    fn record(&self, ctx: &StepContext<'_>, i: usize, out: &mut Collection) {
        let execs = &ctx.events.executions;
        let e = &execs[i];
        let v = ctx.verdicts[i];
        let rec_index = out.records.len() as u64;
        let step = StepOfRecord {
            io_step: ctx.step,
            io_step_tstart: ctx.events.first_ts.unwrap_or(0),
            io_step_tend: ctx.events.last_ts.unwrap_or(0),
            labelled_step: ctx.step,
        };
        let mut record = self.open_record(e, v, ctx.names, step, out);
        self.push_call_stack(ctx, e, rec_index, 0, &mut out.call_stack);

        out.counter_events
            .extend(ctx.events.counters_of(e).iter().map(|c| CounterEventRow {
                record: rec_index,
                pid: e.program,
                rid: e.rank(),
                tid: e.thread,
                counter_idx: c.counter,
                counter_value: c.value,
                ts: c.ts,
            }));

        for (offset, w) in self.window(ctx, i) {
            out.exec_window.push(ExecWindowRow {
                record: rec_index,
                offset,
                fid: w.fid,
                event_id: id_str(&w.id),
                entry: w.entry,
                exit: w.exit,
                parent_event_id: parent_str(w.parent),
                is_anomaly: w.is_anomaly as u8,
            });
            for c in &w.comms {
                out.comm_window.push(comm_row(rec_index, e, c, &w.id));
            }
        }

        if e.is_gpu {
            if let Some(loc) = ctx.stream.gpu_location(e.thread) {
                let s = |v: &Option<String>| fixed(v.as_deref().unwrap_or(""));
                out.gpu_location.push(GpuLocationRow {
                    record: rec_index,
                    context: s(&loc.context),
                    device: s(&loc.device),
                    stream: s(&loc.stream),
                    thread: e.thread,
                });
            }
        }
        if e.is_gpu {
            let host = ctx.events.gpu_partner_of(i);
            let row = self.gpu_parent(ctx, host, rec_index, &mut out.call_stack);
            out.gpu_parent.push(row);
        }

        self.push_node_state(ctx, e.exit, rec_index, &mut out.node_state);
        close_record_links(&mut record, out);
        out.records.push(record);
    }

    /// The execution, then its parents: completed this step, or still open.
    fn push_call_stack(
        &self,
        ctx: &StepContext<'_>,
        e: &Execution,
        record: u64,
        of_gpu_parent: u8,
        out: &mut Vec<CallStackRow>,
    ) {
        let execs = &ctx.events.executions;
        let open: Vec<_> = ctx.stream.open_calls_of(e.thread).collect();
        let mut level = 0u32;
        let mut push = |fid: u32, entry: u64, exit: u64, id: &ExecId, anomaly: bool| {
            out.push(CallStackRow {
                record,
                of_gpu_parent,
                level,
                fid,
                entry,
                exit,
                event_id: id_str(id),
                is_anomaly: anomaly as u8,
            });
            level += 1;
        };
        let is_anomaly = |j: usize| ctx.verdicts[j].label == Label::Anomaly;
        let me = ctx.events.find(ctx.step, e.id);
        push(
            e.function,
            e.entry,
            e.exit,
            &e.id,
            me.is_some_and(is_anomaly),
        );
        let mut next = e.parent();
        // Depth bounds the walk even if parent links were ever cyclic.
        for _ in 0..=e.depth {
            let Some(p) = next else { break };
            if let Some(j) = ctx.events.find(ctx.step, p) {
                let pe = &execs[j];
                push(pe.function, pe.entry, pe.exit, &pe.id, is_anomaly(j));
                next = pe.parent();
            } else if let Some(d) = open.iter().position(|o| o.id == p) {
                let o = &open[d];
                push(o.function, o.entry, 0, &o.id, false);
                next = d.checked_sub(1).map(|d| open[d].id);
            } else {
                break;
            }
        }
    }

    /// The window around execution `i`: `(offset, entry)` pairs, entry order.
    fn window(&self, ctx: &StepContext<'_>, i: usize) -> Vec<(i32, WindowEntry)> {
        let w = ctx.opts.window;
        let execs = &ctx.events.executions;
        let e = &execs[i];
        let thread = e.thread;
        let entry_of = |j: usize| window_entry(ctx.events, ctx.verdicts, j);
        // Candidates: up to w same-thread neighbours on each side in this
        // step's entry order, the thread's history and its open calls.
        let mut cands: Vec<WindowEntry> = Vec::with_capacity(4 * w + 4);
        cands.push(entry_of(i));
        for backward in [true, false] {
            let near = self.neighbours(ctx.step, ctx.events, i, backward, w);
            cands.extend(near.into_iter().map(entry_of));
        }
        if let Some(h) = self.history.get(&thread) {
            cands.extend(h.iter().cloned());
        }
        let open: Vec<_> = ctx.stream.open_calls_of(thread).collect();
        for (d, o) in open.iter().enumerate() {
            cands.push(WindowEntry {
                id: o.id,
                fid: o.function,
                entry: o.entry,
                exit: 0,
                parent: d.checked_sub(1).map(|d| open[d].id),
                is_anomaly: false,
                comms: Vec::new(),
            });
        }
        cands.sort_by_key(|c| c.id);
        cands.dedup_by_key(|c| c.id);
        let Some(me) = cands.iter().position(|c| c.id == e.id) else {
            return Vec::new();
        };
        let lo = me.saturating_sub(w);
        let hi = (me + w + 1).min(cands.len());
        cands
            .drain(lo..hi)
            .enumerate()
            .map(|(k, c)| ((lo + k) as i32 - me as i32, c))
            .collect()
    }

    fn gpu_parent(
        &self,
        ctx: &StepContext<'_>,
        host: Option<ExecId>,
        record: u64,
        call_stack: &mut Vec<CallStackRow>,
    ) -> GpuParentRow {
        let mut row = GpuParentRow {
            record,
            event_id: fixed(""),
            tid: 0,
            fid: 0,
            call_stack_start: call_stack.len() as u64,
            call_stack_len: 0,
            error: fixed(""),
        };
        let Some(host) = host else {
            row.error =
                fixed("Chimbuko error: Correlation ID of host parent event was not recorded");
            return row;
        };
        row.event_id = id_str(&host);
        match ctx.events.find(ctx.step, host) {
            Some(j) => {
                let h = &ctx.events.executions[j];
                row.tid = h.thread;
                row.fid = h.function;
                self.push_call_stack(ctx, h, record, 1, call_stack);
                row.call_stack_len = (call_stack.len() as u64 - row.call_stack_start) as u32;
            }
            None => {
                row.error = fixed("Chimbuko error: Host parent event could not be reached");
            }
        }
        row
    }

    /// Node state at `at`: the latest value of each monitoring counter.
    fn push_node_state(
        &self,
        ctx: &StepContext<'_>,
        at: u64,
        record: u64,
        out: &mut Vec<NodeStateRow>,
    ) {
        let mut state = self.node_state.clone();
        for s in ctx.events.node_state.iter().filter(|s| s.ts <= at) {
            let cur = state.entry(s.counter).or_insert((s.value, s.ts));
            if s.ts >= cur.1 {
                *cur = (s.value, s.ts);
            }
        }
        for (counter, (value, ts)) in state {
            let name = ctx.names.counters.name(counter);
            out.push(NodeStateRow {
                record,
                field: fixed(name.strip_prefix(MONITORING_PREFIX).unwrap_or(name)),
                value,
                timestamp: ts,
            });
        }
    }

    fn update_node_state(&mut self, events: &StepEvents) {
        for s in &events.node_state {
            let cur = self.node_state.entry(s.counter).or_insert((s.value, s.ts));
            if s.ts >= cur.1 {
                *cur = (s.value, s.ts);
            }
        }
    }

    /// Keeps the last `window` executions of each thread (entry order).
    ///
    /// One backward pass over the step's executions (exit order). A thread
    /// stops taking candidates once it holds `window` of them and meets an
    /// execution that exited before the earliest entry among them: every
    /// execution before it exited even earlier, so entered earlier too.
    fn update_history(&mut self, events: &StepEvents, verdicts: &[Verdict], w: usize) {
        if w == 0 {
            return;
        }
        let execs = &events.executions;
        // Backwards through the step's runs of one thread each, so that a
        // thread that has its candidates skips the rest of its executions
        // (without runs: one range of all threads, which must be walked).
        let runs = &events.thread_runs;
        let by_runs = runs.iter().map(|r| r.executions().len()).sum::<usize>() == execs.len();
        let ranges: Vec<std::ops::Range<usize>> = if by_runs {
            runs.iter().rev().map(|r| r.executions()).collect()
        } else {
            std::iter::once(0..execs.len()).collect()
        };
        // (thread, newest-by-id candidates sorted by id, done)
        let mut fresh: Vec<(u64, Vec<usize>, bool)> = Vec::new();
        let mut at = 0usize;
        for range in ranges {
            for j in range.rev() {
                let x = &execs[j];
                if fresh.get(at).map(|f| f.0) != Some(x.thread) {
                    at = match fresh.iter().position(|f| f.0 == x.thread) {
                        Some(p) => p,
                        None => {
                            fresh.push((x.thread, Vec::with_capacity(w + 1), false));
                            fresh.len() - 1
                        }
                    };
                }
                let (_, top, done) = &mut fresh[at];
                if !*done && top.len() == w && x.exit < execs[top[0]].entry {
                    *done = true;
                }
                if *done {
                    if by_runs {
                        break; // the rest of this run is the same thread's
                    }
                    continue;
                }
                if top.len() == w && x.id < execs[top[0]].id {
                    continue;
                }
                let pos = top.partition_point(|&k| execs[k].id < x.id);
                top.insert(pos, j);
                if top.len() > w {
                    top.remove(0);
                }
            }
        }
        for (thread, top, _) in fresh {
            let h = self.history.entry(thread).or_default();
            h.extend(top.into_iter().map(|j| window_entry(events, verdicts, j)));
            h.sort_by_key(|c| c.id);
            h.dedup_by_key(|c| c.id);
            let extra = h.len().saturating_sub(w);
            h.drain(..extra);
        }
    }

    /// A record for an execution labelled after its step (its function's
    /// model was too thin when it completed): the step's context is gone,
    /// so it has no window, counters or parents beyond itself.
    #[allow(clippy::too_many_arguments)]
    pub fn record_detached(
        &self,
        e: &Execution,
        v: Verdict,
        exit_step: u64,
        labelled_step: u64,
        names: &GlobalNames,
        out: &mut Collection,
    ) {
        let rec_index = out.records.len() as u64;
        let step = StepOfRecord {
            io_step: exit_step,
            io_step_tstart: 0,
            io_step_tend: 0,
            labelled_step,
        };
        let mut record = self.open_record(e, v, names, step, out);
        out.call_stack.push(CallStackRow {
            record: rec_index,
            of_gpu_parent: 0,
            level: 0,
            fid: e.function,
            entry: e.entry,
            exit: e.exit,
            event_id: id_str(&e.id),
            is_anomaly: (v.label == Label::Anomaly) as u8,
        });
        close_record_links(&mut record, out);
        out.records.push(record);
    }

    /// The record of `e` with every link table starting at its current end
    /// and empty; [`close_record_links`] sets the lengths once the rows of
    /// the record are pushed.
    fn open_record(
        &self,
        e: &Execution,
        v: Verdict,
        names: &GlobalNames,
        step: StepOfRecord,
        out: &Collection,
    ) -> ExecRecord {
        ExecRecord {
            event_id: id_str(&e.id),
            event_rank: e.id.rank,
            event_step: e.id.step,
            event_idx: e.id.idx,
            pid: e.program,
            rid: e.rank(),
            tid: e.thread,
            fid: e.function,
            func: fixed(names.functions.name(e.function)),
            entry: e.entry,
            exit: e.exit,
            runtime_total: e.inclusive(),
            runtime_exclusive: e.exclusive,
            io_step: step.io_step,
            io_step_tstart: step.io_step_tstart,
            io_step_tend: step.io_step_tend,
            labelled_step: step.labelled_step,
            label: label_code(v.label),
            outlier_score: v.score,
            outlier_severity: e.exclusive as f64,
            final_label: label_code(v.label),
            final_score: v.score,
            is_gpu_event: e.is_gpu as u8,
            hostname: fixed(&self.hostname),
            parent_event_id: parent_str(e.parent()),
            depth: e.depth,
            n_children: e.n_children,
            // The function index until the writer maps it to a model row.
            model_row: e.function as u64,
            dropped_attachments: e.dropped_attachments(),
            call_stack_start: out.call_stack.len() as u64,
            call_stack_len: 0,
            counter_events_start: out.counter_events.len() as u64,
            counter_events_len: 0,
            exec_window_start: out.exec_window.len() as u64,
            exec_window_len: 0,
            comm_window_start: out.comm_window.len() as u64,
            comm_window_len: 0,
            gpu_location_start: out.gpu_location.len() as u64,
            gpu_location_len: 0,
            gpu_parent_start: out.gpu_parent.len() as u64,
            gpu_parent_len: 0,
            node_state_start: out.node_state.len() as u64,
            node_state_len: 0,
        }
    }

    /// Program index of the stream.
    pub fn program(&self) -> u32 {
        self.program
    }

    /// Application rank of the stream.
    pub fn rank(&self) -> u64 {
        self.rank
    }
}

/// A candidate normal sample.
#[derive(Debug, Clone, Copy, Default)]
struct Candidate {
    score: f64,
    id: ExecId,
    index: u32,
}

impl Candidate {
    /// Lower score first, then lower id (deterministic).
    fn less(&self, o: &Candidate) -> bool {
        match self.score.total_cmp(&o.score) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => self.id < o.id,
        }
    }
}

fn comm_row(record: u64, e: &Execution, c: &CommEvent, owner: &ExecId) -> CommWindowRow {
    CommWindowRow {
        record,
        kind: match c.direction {
            CommDirection::Send => 0,
            CommDirection::Recv => 1,
        },
        pid: e.program,
        rid: e.rank(),
        tid: e.thread,
        src: c.src,
        tar: c.dst,
        bytes: c.bytes.unwrap_or(u64::MAX),
        tag: c.tag,
        timestamp: c.ts,
        execdata_key: id_str(owner),
    }
}

/// Where in the I/O stream a record was seen and labelled.
#[derive(Debug, Clone, Copy)]
struct StepOfRecord {
    io_step: u64,
    io_step_tstart: u64,
    io_step_tend: u64,
    labelled_step: u64,
}

/// Sets each link length of `record` to the rows pushed since
/// [`StreamProvenance::open_record`].
fn close_record_links(record: &mut ExecRecord, out: &Collection) {
    let len = |end: usize, start: u64| (end as u64 - start) as u32;
    record.call_stack_len = len(out.call_stack.len(), record.call_stack_start);
    record.counter_events_len = len(out.counter_events.len(), record.counter_events_start);
    record.exec_window_len = len(out.exec_window.len(), record.exec_window_start);
    record.comm_window_len = len(out.comm_window.len(), record.comm_window_start);
    record.gpu_location_len = len(out.gpu_location.len(), record.gpu_location_start);
    record.gpu_parent_len = len(out.gpu_parent.len(), record.gpu_parent_start);
    record.node_state_len = len(out.node_state.len(), record.node_state_start);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_format_like_their_display() {
        for (rank, step, idx) in [
            (0, 0, 0),
            (3, 17, 123_456),
            (9, 10, 100),
            (u64::MAX, u64::MAX, u64::MAX),
        ] {
            let id = ExecId { rank, step, idx };
            assert_eq!(id_str(&id), fixed(&id.to_string()), "{id}");
        }
    }
}
