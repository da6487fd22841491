//! From trace rows to completed function executions.
//!
//! TAU does not write "function `f` ran from `a` to `b`"; it writes a flat
//! list of ENTRY and EXIT rows per thread, plus communication (SEND/RECV)
//! and counter rows that carry only a timestamp. Everything downstream (the
//! anomaly detectors, provenance, GPU pairing) wants *executions*: one record
//! per call with its inclusive and exclusive time, its parent, and the
//! messages and counters that happened while it was the innermost open call.
//! This module rebuilds those records by replaying each thread's rows on a
//! call stack, exactly as Chimbuko's `ADEvent` does (see
//! `../shared/reference/chimbuko-algorithms.md` §7.1–7.3), with three
//! deliberate differences:
//!
//! * Broken input never stops the run and is never silently ignored: every
//!   rejected or repaired row is counted per [`EventIssueKind`] with the first
//!   example, so a log line can say what was wrong and where.
//! * An EXIT for a function that is open *deeper* in the stack closes the
//!   calls above it at that time (TAU loses EXIT rows when a thread is torn
//!   down or a throw unwinds through instrumented code); Chimbuko would leave
//!   the stack corrupted for the rest of the run.
//! * Ids are deterministic: an execution's [`ExecId`] depends only on where
//!   its ENTRY row sits in the step's array, never on processing order, so
//!   every rank, every rerun and every test names the same call the same way.
//!
//! The module knows nothing about MPI or ADIOS2: the caller reads a
//! [`TraceStep`](crate::trace::step::TraceStep), builds an [`IndexMap`]
//! (local → global indices) and calls [`CallStackBuilder::build_step`].
//!
//! Attachments are not owned by the executions: each [`StepEvents`] keeps
//! arenas ([`StepEvents::comms`], [`StepEvents::counters`],
//! [`StepEvents::correlation_ids`]) and an [`Execution`] holds only ranges
//! into them ([`AttachRange`]). Executions are therefore plain `Copy` data:
//! a step of ~200k executions costs no allocation per execution once the
//! buffers have grown, and clearing a step drops nothing element by element.
//! Open calls do not allocate either: a call's attachments are the tail of
//! its thread's stacks of pending attachments from where it was entered
//! (calls close last-in first-out), moved to the arenas when it closes.
//!
//! Layout: this file holds the data types of executions and steps;
//! `callstack` the per-thread replay; `gpu` the GPU-thread metadata and
//! correlation-ID pairing; `index_map` local → global indices and counter
//! roles; `issues` the problems counted on the way; [`names`] the global
//! function and counter tables every AD rank agrees on; [`features`] an
//! execution's features by the names performance models use.

mod callstack;
pub mod features;
mod gpu;
mod index_map;
mod issues;
pub mod names;

use std::fmt;

pub use callstack::{CallStackBuilder, OpenCall};
pub use gpu::{gpu_metadata_key, GpuMetadataKey};
pub use index_map::{CounterRole, IndexMap};
pub use issues::{EventIssueKind, EventIssues};

/// Names one function execution: the rank, the step in which its ENTRY row
/// arrived, and the ENTRY's ordinal among the step's ENTRY rows.
///
/// Chimbuko labels events `"rank:step:idx"`; [`fmt::Display`] produces the
/// same text so that ids can be compared with the reference's output.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct ExecId {
    /// Application rank of the stream the call was traced on.
    pub rank: u64,
    /// I/O step in which the call's ENTRY row arrived.
    pub step: u64,
    /// Ordinal of the ENTRY among that step's ENTRY rows (from 0).
    pub idx: u64,
}

impl fmt::Display for ExecId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.rank, self.step, self.idx)
    }
}

impl std::str::FromStr for ExecId {
    type Err = String;

    /// Parses the `"rank:step:idx"` label back.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split(':');
        let mut next = |what: &str| -> Result<u64, String> {
            parts
                .next()
                .and_then(|p| p.trim().parse().ok())
                .ok_or_else(|| format!("bad event id {s:?}: missing or invalid {what}"))
        };
        let id = ExecId {
            rank: next("rank")?,
            step: next("step")?,
            idx: next("idx")?,
        };
        if parts.next().is_some() {
            return Err(format!("bad event id {s:?}: more than three fields"));
        }
        Ok(id)
    }
}

/// Direction of a point-to-point message, from this rank's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum CommDirection {
    /// This rank sent the message (a SEND row).
    Send,
    /// This rank received the message (a RECV row).
    Recv,
}

/// Above this a byte count is treated as unknown: TAU's receive-side counts
/// can be garbage (e.g. 18446744071900455069 from `MPI_Sendrecv`), and a
/// terabyte in one message is not plausible either.
pub const MAX_PLAUSIBLE_BYTES: u64 = 1 << 40;

/// One message attached to an execution.
///
/// `src`/`dst` follow Chimbuko's convention: for a SEND `src` is this rank
/// and `dst` the partner; for a RECV `src` is the partner and `dst` this rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CommEvent {
    /// Whether this rank sent or received the message.
    pub direction: CommDirection,
    /// Sending rank.
    pub src: u64,
    /// Receiving rank.
    pub dst: u64,
    /// MPI message tag.
    pub tag: u64,
    /// `None` when the count is absurd (> [`MAX_PLAUSIBLE_BYTES`]); the event
    /// itself is kept, only the size is unknown.
    pub bytes: Option<u64>,
    /// Timestamp of the SEND or RECV row (µs since the epoch).
    pub ts: u64,
}

/// One counter sample attached to an execution (or, for monitoring
/// counters, to the node state of the step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CounterEvent {
    /// Global counter index.
    pub counter: u32,
    /// Sampled value, in the counter's own unit.
    pub value: u64,
    /// Timestamp of the counter row (µs since the epoch).
    pub ts: u64,
}

/// Where a GPU virtual thread runs, from its `MetaData:<rank>:<thread>:CUDA
/// Device|Context|Stream` attributes (values verbatim, quotes stripped).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct GpuLocation {
    /// Value of `CUDA Device`, if given.
    pub device: Option<String>,
    /// Value of `CUDA Context`, if given.
    pub context: Option<String>,
    /// Value of `CUDA Stream`, if given.
    pub stream: Option<String>,
}

/// One completed function call.
///
/// Plain data (`Copy`, no heap-owning fields): a step holds hundreds of
/// thousands of these, and per-execution allocations dominated the replay.
/// The messages, counters and correlation ids attached to a call live in the
/// arenas of the [`StepEvents`] that produced it; [`Execution::attach`]
/// holds only ranges into them. Read them with [`StepEvents::comms_of`],
/// [`StepEvents::counters_of`] and [`StepEvents::correlation_ids_of`], or
/// take an [`OwnedExecution`] when the record must outlive its step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Execution {
    /// The label; `id.rank` is the application rank of the stream.
    pub id: ExecId,
    /// ENTRY timestamp (µs since the epoch).
    pub entry: u64,
    /// EXIT timestamp (µs since the epoch; for a call closed implicitly,
    /// the timestamp of the EXIT that closed it).
    pub exit: u64,
    /// [`Execution::inclusive`] minus the inclusive time of the direct children (the time
    /// spent in this function's own code); what the detectors judge.
    pub exclusive: u64,
    /// TAU thread id the call ran on (a virtual thread for GPU work).
    pub thread: u64,
    /// The call that was open below this one; see [`Execution::parent`].
    parent: PackedId,
    /// Program index of the stream (`--program-idx`).
    pub program: u32,
    /// Global function index (from [`IndexMap::functions`]).
    pub function: u32,
    /// Stack depth at entry; a root call has depth 0.
    pub depth: u32,
    /// Number of direct children (calls entered while this one was the
    /// innermost open call).
    pub n_children: u32,
    /// Where this call's attachments sit in its step's arenas.
    pub attach: AttachRange,
    /// Ran on a GPU virtual thread.
    pub is_gpu: bool,
    /// Class of the bytes its messages moved (`detect::size_classes`).
    pub size_class: u8,
}

/// `(step, idx)` of an execution of the same stream in 8 bytes (a step
/// holds hundreds of thousands of executions, and every pass over them is
/// bound by memory traffic). Ids beyond 32 bits read as "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
struct PackedId {
    step: u32,
    idx: u32,
}

impl PackedId {
    const NONE: PackedId = PackedId {
        step: u32::MAX,
        idx: u32::MAX,
    };

    fn pack(id: Option<ExecId>) -> PackedId {
        match id {
            Some(id) => match (u32::try_from(id.step), u32::try_from(id.idx)) {
                (Ok(step), Ok(idx)) if step != u32::MAX => PackedId { step, idx },
                _ => PackedId::NONE,
            },
            None => PackedId::NONE,
        }
    }

    fn unpack(self, rank: u64) -> Option<ExecId> {
        (self != PackedId::NONE).then_some(ExecId {
            rank,
            step: self.step as u64,
            idx: self.idx as u64,
        })
    }
}

/// A `start..start + len` range into one of the arenas of a [`StepEvents`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Span {
    /// First element in the arena.
    pub start: u32,
    /// Number of elements.
    pub len: u32,
}

impl Span {
    /// The slice of `arena` this span names; empty when out of range (a
    /// span read against the wrong step's arenas never panics).
    #[inline]
    pub fn of<'a, T>(&self, arena: &'a [T]) -> &'a [T] {
        let start = self.start as usize;
        start
            .checked_add(self.len as usize)
            .and_then(|end| arena.get(start..end))
            .unwrap_or(&[])
    }

    /// True when the span names no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What happened inside an execution besides its own timing, as ranges into
/// the [`StepEvents`] arenas (all empty for the common call with none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct AttachRange {
    /// Messages sent or received while this was the innermost open call
    /// (in [`StepEvents::comms`]).
    pub comms: Span,
    /// Counter samples taken while this was the innermost open call (in
    /// [`StepEvents::counters`]).
    pub counters: Span,
    /// Values of the `Correlation ID` counter attached to this execution
    /// (in [`StepEvents::correlation_ids`]).
    pub correlation_ids: Span,
    /// Comm/counter events not kept because of [`EventOptions::max_attached`].
    pub dropped: u32,
}

impl Execution {
    /// A completed call (for the call-stack replay and for tests).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: ExecId,
        program: u32,
        thread: u64,
        function: u32,
        entry: u64,
        exit: u64,
        exclusive: u64,
        parent: Option<ExecId>,
        depth: u32,
        n_children: u32,
        is_gpu: bool,
        attach: AttachRange,
    ) -> Self {
        Execution {
            id,
            entry,
            exit,
            exclusive,
            thread,
            parent: PackedId::pack(parent),
            program,
            function,
            depth,
            n_children,
            attach,
            is_gpu,
            size_class: 0,
        }
    }

    /// Inclusive runtime, `exit - entry` (computed, not stored: every pass
    /// over a big step's executions is bound by memory traffic).
    #[inline]
    pub fn inclusive(&self) -> u64 {
        self.exit.saturating_sub(self.entry)
    }

    /// The runtime the detectors judge: inclusive with `--use-inclusive`,
    /// otherwise exclusive.
    #[inline]
    pub fn judged_runtime(&self, use_inclusive: bool) -> u64 {
        if use_inclusive {
            self.inclusive()
        } else {
            self.exclusive
        }
    }

    /// Application rank of the stream.
    pub fn rank(&self) -> u64 {
        self.id.rank
    }

    /// The call that was open below this one (`None` for a root call).
    pub fn parent(&self) -> Option<ExecId> {
        self.parent.unpack(self.id.rank)
    }

    /// Comm/counter events not kept because of [`EventOptions::max_attached`].
    pub fn dropped_attachments(&self) -> u32 {
        self.attach.dropped
    }
}

/// An execution together with copies of its attachments, for the few
/// records that must outlive their step (whose arenas are reused); see
/// [`StepEvents::to_owned_execution`]. `exec.attach` still names ranges in
/// the original step and should not be used with other arenas.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedExecution {
    /// The execution itself.
    pub exec: Execution,
    /// Copies of its messages.
    pub comms: Vec<CommEvent>,
    /// Copies of its counter samples.
    pub counters: Vec<CounterEvent>,
    /// Copies of its `Correlation ID` values.
    pub correlation_ids: Vec<u64>,
}

/// Tuning of [`CallStackBuilder`].
#[derive(Debug, Clone)]
pub struct EventOptions {
    /// At most this many comm events, and this many counter events, are
    /// attached to one execution (a call that spans a whole run could
    /// otherwise collect millions); the rest are counted in
    /// [`Execution::dropped_attachments`].
    pub max_attached: usize,
    /// Deepest call stack kept per thread; deeper ENTRY rows are counted as
    /// [`EventIssueKind::DepthLimit`] and skipped (bounds memory when EXIT
    /// rows are lost wholesale).
    pub max_depth: usize,
    /// An unmatched correlation id is forgotten after this many steps.
    pub correlation_window_steps: u64,
    /// Hard bound on unmatched correlation ids kept (oldest go first).
    pub max_pending_correlations: usize,
}

impl Default for EventOptions {
    fn default() -> Self {
        EventOptions {
            max_attached: 256,
            max_depth: 1 << 16,
            correlation_window_steps: 1000,
            max_pending_correlations: 1 << 20,
        }
    }
}

/// What one call to [`CallStackBuilder::build_step`] produced.
///
/// Attachments (messages, counters, correlation ids) are stored in per-step
/// arenas rather than per execution: completing a call copies its
/// attachments to the end of the arenas and records the ranges in
/// [`Execution::attach`]. So building a step allocates nothing per
/// execution once the buffers have grown (see [`CallStackBuilder::recycle`]),
/// and [`StepEvents::clear`] is O(1) per field: executions are plain data
/// with nothing to drop.
#[derive(Debug, Clone, Default)]
pub struct StepEvents {
    /// Executions completed this step, in the order their EXIT rows were
    /// processed (threads in the order their rows appear in the step).
    pub executions: Vec<Execution>,
    /// Arena of the executions' messages (see [`StepEvents::comms_of`]).
    pub comms: Vec<CommEvent>,
    /// Indices (ascending) of the few executions that have messages.
    pub with_comms: Vec<u32>,
    /// Arena of the counter samples attached to this step's executions
    /// (read through [`StepEvents::counters_of`]).
    pub counters: Vec<CounterEvent>,
    /// Arena of the correlation ids attached to this step's executions
    /// (read through [`StepEvents::correlation_ids_of`]).
    pub correlation_ids: Vec<u64>,
    /// `(cpu launch, gpu kernel)` pairs matched this step; either side may
    /// have completed in an earlier step.
    pub gpu_pairs: Vec<(ExecId, ExecId)>,
    /// `(index in executions, partner)`: the other side of a CPU-launch /
    /// GPU-kernel pair for executions whose partner had completed before
    /// them (kept apart from [`Execution`]: few executions have one). In
    /// index order; see [`StepEvents::gpu_partner_of`].
    pub gpu_partners: Vec<(u32, ExecId)>,
    /// Samples of [`CounterRole::Monitoring`] counters, in row order.
    pub node_state: Vec<CounterEvent>,
    /// Broken or noteworthy input met while replaying the step.
    pub issues: EventIssues,
    /// Smallest timestamp over all rows of the step (`None`: no rows).
    pub first_ts: Option<u64>,
    /// Largest timestamp over all rows of the step (`None`: no rows).
    pub last_ts: Option<u64>,
    /// The step's rows as runs of one thread, in order: rows come grouped
    /// by thread, so a thread's entries ([`ExecId::idx`]) and its
    /// executions here are a few contiguous ranges, and a search among one
    /// thread's calls can skip the other threads' ranges whole.
    pub thread_runs: Vec<ThreadRun>,
    /// By entry ordinal ([`ExecId::idx`] of this step's ids): the index in
    /// `executions` of the call entered there if it completed this step,
    /// [`StepEvents::NOT_HERE`] otherwise. Filled as calls complete, while
    /// they are in cache (a later pass over a big step's executions would
    /// be a trip through memory).
    pub exec_of_entry: Vec<u32>,
    /// Indices in `executions` of the calls that entered in an earlier
    /// step, sorted by id.
    pub carried: Vec<u32>,
}

/// One run of a step's rows, all of `thread`: the entry ordinals
/// `first_entry..end_entry` and `executions[first_exec..end_exec]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadRun {
    /// The thread all rows of the run belong to.
    pub thread: u64,
    /// First entry ordinal ([`ExecId::idx`]) of the run.
    pub first_entry: u64,
    /// One past the last entry ordinal of the run.
    pub end_entry: u64,
    /// Index in [`StepEvents::executions`] of the run's first completed call.
    pub first_exec: usize,
    /// One past the index of the run's last completed call.
    pub end_exec: usize,
}

impl ThreadRun {
    /// The run's entry ordinals, `first_entry..end_entry`.
    pub fn entries(&self) -> std::ops::Range<usize> {
        self.first_entry as usize..self.end_entry as usize
    }

    /// The run's indices in [`StepEvents::executions`],
    /// `first_exec..end_exec`.
    pub fn executions(&self) -> std::ops::Range<usize> {
        self.first_exec..self.end_exec
    }
}

impl StepEvents {
    /// In [`StepEvents::exec_of_entry`]: no execution of this step.
    pub const NOT_HERE: u32 = u32::MAX;

    /// Index in `executions` of the execution with id `id` (`step` is this
    /// step's number), if it completed this step.
    pub fn find(&self, step: u64, id: ExecId) -> Option<usize> {
        if id.step == step {
            let k = usize::try_from(id.idx).ok()?;
            match self.exec_of_entry.get(k) {
                Some(&i) if i != Self::NOT_HERE => Some(i as usize),
                _ => None,
            }
        } else {
            self.carried
                .binary_search_by_key(&id, |&i| self.executions[i as usize].id)
                .ok()
                .map(|p| self.carried[p] as usize)
        }
    }

    /// Empties the buffers, keeping their capacity. O(1) per field: none of
    /// the element types owns heap memory.
    pub fn clear(&mut self) {
        self.executions.clear();
        self.comms.clear();
        self.counters.clear();
        self.correlation_ids.clear();
        self.gpu_pairs.clear();
        self.gpu_partners.clear();
        self.node_state.clear();
        self.issues = EventIssues::default();
        self.first_ts = None;
        self.last_ts = None;
        self.thread_runs.clear();
        self.exec_of_entry.clear();
        self.carried.clear();
        self.with_comms.clear();
    }

    /// Messages sent or received while `e` was the innermost open call
    /// (`e` must come from this step; otherwise the result is meaningless,
    /// possibly empty, but this never panics).
    pub fn comms_of(&self, e: &Execution) -> &[CommEvent] {
        e.attach.comms.of(&self.comms)
    }

    /// Counter samples taken while `e` was the innermost open call.
    pub fn counters_of(&self, e: &Execution) -> &[CounterEvent] {
        e.attach.counters.of(&self.counters)
    }

    /// Values of the `Correlation ID` counter attached to `e`.
    pub fn correlation_ids_of(&self, e: &Execution) -> &[u64] {
        e.attach.correlation_ids.of(&self.correlation_ids)
    }

    /// The other side of execution `index`'s CPU/GPU pair, when it had
    /// completed before it.
    pub fn gpu_partner_of(&self, index: usize) -> Option<ExecId> {
        let i = u32::try_from(index).ok()?;
        self.gpu_partners
            .binary_search_by_key(&i, |p| p.0)
            .ok()
            .map(|k| self.gpu_partners[k].1)
    }

    /// `e` with copies of its attachments, for keeping beyond this step.
    pub fn to_owned_execution(&self, e: &Execution) -> OwnedExecution {
        OwnedExecution {
            exec: *e,
            comms: self.comms_of(e).to_vec(),
            counters: self.counters_of(e).to_vec(),
            correlation_ids: self.correlation_ids_of(e).to_vec(),
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    /// Every pass over a step's executions is bound by memory traffic; keep
    /// the record small (it was 184 bytes before parents were packed,
    /// GPU partners moved to a side table and the inclusive time computed).
    #[test]
    fn execution_stays_small() {
        assert!(std::mem::size_of::<Execution>() <= 112);
    }

    #[test]
    fn parents_pack_and_unpack() {
        let id = ExecId {
            rank: 7,
            step: 3,
            idx: 9,
        };
        assert_eq!(PackedId::pack(Some(id)).unpack(7), Some(id));
        assert_eq!(PackedId::pack(None).unpack(7), None);
        let huge = ExecId {
            rank: 7,
            step: 1 << 40,
            idx: 1,
        };
        assert_eq!(PackedId::pack(Some(huge)).unpack(7), None);
    }
}
