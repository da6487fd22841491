//! Row types of the provenance file (one HDF5 compound type each).
//!
//! Every table is a 1-D dataset of one of these structs; h5py reads it as a
//! NumPy structured array and `pandas.DataFrame(f["..."][:])` loads it in
//! one call. Field names follow Chimbuko's provenance schema where it has
//! one (`pid`, `rid`, `tid`, `fid`, `runtime_total`, `outlier_score`, ...).
//!
//! Strings are fixed-length (parallel HDF5 cannot write variable-length
//! data): longer values are cut at a character boundary, and the full
//! function and counter names are in `functions` / `counters`. h5py returns
//! them as `bytes`; `docs/provenance-schema.md` gives the one-liner that
//! turns them into `str`.
//!
//! Variable-length parts of a record (call stack, window, ...) are rows of
//! companion tables: each companion row names its record (`record`, the
//! row index in the collection's `records` table), and each record holds the
//! `*_start`/`*_len` of its rows in each companion table.
//!
//! This file is long because it declares every table of the file with each
//! column documented: the whole layout in one place, beside
//! `docs/provenance-schema.md`.

use hdf5::types::FixedUnicode;
use hdf5::H5Type;

use crate::provenance::columns::described_row;

/// Width of event ids (`"pid:rank:step:idx"`: a u32 and three u64 need at
/// most 73 bytes).
pub type EventIdStr = FixedUnicode<80>;
/// Width of function names inside records (full names in `functions`).
pub type NameStr = FixedUnicode<256>;
/// Width of function names in call-stack and window rows (cut at 127
/// bytes; a record has a dozen such rows, so they are kept shorter than
/// the record's own name; full names in `functions`).
pub type FrameNameStr = FixedUnicode<128>;
/// Width of short strings: host names, GPU context/device/stream, fields.
pub type ShortStr = FixedUnicode<64>;
/// Width of names in the `functions` and `counters` tables.
pub type LongNameStr = FixedUnicode<1024>;
/// Width of metadata descriptions and values.
pub type MetaStr = FixedUnicode<256>;

/// Chimbuko's label code for a normal execution (`label`, `final_label`).
pub const LABEL_NORMAL: i8 = 1;
/// Chimbuko's label code for an anomalous execution.
pub const LABEL_ANOMALY: i8 = -1;
/// Chimbuko's label code for an execution not labelled (yet).
pub const LABEL_UNLABELED: i8 = 0;

/// `model_row` of a record whose function had no model snapshot.
pub const NO_MODEL: u64 = u64::MAX;

/// Cuts `s` to at most `N - 1` bytes at a character boundary (so that the
/// stored value always ends in a NUL, as C readers expect).
pub fn fixed<const N: usize>(s: &str) -> FixedUnicode<N> {
    let mut end = s.len().min(N.saturating_sub(1));
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    // SAFETY-free: the prefix is valid UTF-8 of at most N bytes, which is
    // all `from_str` checks, so this cannot fail; fall back to empty anyway.
    s[..end].parse().unwrap_or_default()
}

described_row! {
    /// One function execution kept as provenance: an anomaly, or a normal
    /// execution sampled for comparison.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct ExecRecord {
        /// Event id `"pid:rank:step:idx"` of the execution (Chimbuko's
        /// `"rank:step:idx"` with the program index in front).
        pub event_id: EventIdStr,
        /// Application rank part of `event_id`.
        pub event_rank: u64,
        /// I/O step holding the call's ENTRY (second part of `event_id`).
        pub event_step: u64,
        /// Position of the ENTRY within that step (third part of `event_id`).
        pub event_idx: u64,
        /// Program index of the traced application.
        pub pid: u32,
        /// Application rank (MPI rank of the traced program) that ran the call.
        pub rid: u64,
        /// Thread of the call (TAU thread id; GPU streams are virtual threads).
        pub tid: u64,
        /// Global function index (row of `functions`).
        pub fid: u32,
        /// Function name, cut at 255 bytes (full name in `functions`).
        pub func: NameStr,
        /// Entry timestamp (µs since the epoch, TAU's clock).
        #[unit = "µs"]
        pub entry: u64,
        /// Exit timestamp (µs since the epoch, TAU's clock).
        #[unit = "µs"]
        pub exit: u64,
        /// Inclusive runtime, `exit - entry` (µs).
        #[unit = "µs"]
        pub runtime_total: u64,
        /// Exclusive runtime: inclusive minus the direct children's (µs).
        #[unit = "µs"]
        pub runtime_exclusive: u64,
        /// The I/O step holding the EXIT.
        pub io_step: u64,
        /// First timestamp of `io_step` on this stream (µs; 0 for a record
        /// labelled after its step).
        #[unit = "µs"]
        pub io_step_tstart: u64,
        /// Last timestamp of `io_step` on this stream (µs; 0 for a record
        /// labelled after its step).
        #[unit = "µs"]
        pub io_step_tend: u64,
        /// Step in which the label was decided (later than `io_step` when the
        /// function's model was too thin at first).
        pub labelled_step: u64,
        /// Label decided in situ (`1` normal, `-1` anomaly, `0` not labelled).
        pub label: i8,
        /// Outlier score decided in situ (scale depends on the detector).
        pub outlier_score: f64,
        /// Severity as in Chimbuko: the exclusive runtime (µs).
        #[unit = "µs"]
        pub outlier_severity: f64,
        /// Label against the final model (end-of-run re-evaluation; equal to
        /// `label` until then, or when it is off).
        pub final_label: i8,
        /// Score against the final model (equal to `outlier_score` until the
        /// end-of-run re-evaluation, or when it is off).
        pub final_score: f64,
        /// 1 when the call ran on a GPU (a TAU virtual GPU thread), else 0.
        pub is_gpu_event: u8,
        /// Class of the bytes the call's messages moved: 0 without
        /// messages, `k` for `4^(k−1)` to `4^k − 1` bytes. A call was judged
        /// against its class's model if the class is usual for its function
        /// (≥ 20 calls and ≥ 1/20 of the function's), else against the
        /// usual class nearest in size: the `functions` rows named
        /// `<function> [messages <low>–<high> B]`.
        pub size_class: u8,
        /// Host of the application rank (TAU metadata `Hostname`), cut at 63 bytes.
        pub hostname: ShortStr,
        /// Event id of the calling execution (`"root"` for a root call).
        pub parent_event_id: EventIdStr,
        /// Depth on the call stack (a root call has depth 0).
        pub depth: u32,
        /// Number of direct children (calls made by this execution).
        pub n_children: u32,
        /// Row of `model_params` with the model this record was labelled with.
        pub model_row: u64,
        /// The model detector's prediction of the execution's modelled runtime
        /// (µs; NaN when its function has no performance model, or with
        /// another detector).
        #[unit = "µs"]
        pub model_prediction_us: f64,
        /// The residual judged: `runtime / max(model_prediction_us, 1 µs)`
        /// (the modelled runtime; NaN without a prediction). Times 10⁶ and
        /// rounded, it is the exact value the detector judged.
        pub model_ratio: f64,
        /// Comm/counter events not kept (per-execution attachment cap).
        pub dropped_attachments: u32,
        /// First row of this record's frames in the `call_stack` table.
        pub call_stack_start: u64,
        /// Number of this record's rows in `call_stack`.
        pub call_stack_len: u32,
        /// First row of this record's samples in the `counter_events` table.
        pub counter_events_start: u64,
        /// Number of this record's rows in `counter_events`.
        pub counter_events_len: u32,
        /// First row of this record's executions in the `exec_window` table.
        pub exec_window_start: u64,
        /// Number of this record's rows in `exec_window`.
        pub exec_window_len: u32,
        /// First row of this record's messages in the `comm_window` table.
        pub comm_window_start: u64,
        /// Number of this record's rows in `comm_window`.
        pub comm_window_len: u32,
        /// Row of this record in the `gpu_location` table (GPU records only).
        pub gpu_location_start: u64,
        /// Number of this record's rows in `gpu_location` (1 for a GPU record
        /// whose location TAU reported, else 0).
        pub gpu_location_len: u32,
        /// Row of this record in the `gpu_parent` table (GPU records only).
        pub gpu_parent_start: u64,
        /// Number of this record's rows in `gpu_parent` (1 for a GPU record,
        /// else 0).
        pub gpu_parent_len: u32,
        /// First row of this record's values in the `node_state` table.
        pub node_state_start: u64,
        /// Number of this record's rows in `node_state`.
        pub node_state_len: u32,
    }
}

described_row! {
    /// The part of [`ExecRecord`] rewritten by the end-of-run re-evaluation
    /// (HDF5 matches compound members by name, so only these are written).
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct FinalVerdict {
        /// Label against the final model (`1` normal, `-1` anomaly).
        pub final_label: i8,
        /// Score against the final model.
        pub final_score: f64,
    }
}

described_row! {
    /// One frame of a record's call stack, the execution itself first, then
    /// its parents up to the root.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct CallStackRow {
        /// Row of the owning record in the collection's `records` table.
        pub record: u64,
        /// 0: the record's own stack; 1: the stack of its GPU host parent
        /// (rows named by `gpu_parent`).
        pub of_gpu_parent: u8,
        /// 0 for the execution itself, 1 for its parent, ...
        pub level: u32,
        /// Global function index of the frame (row of `functions`).
        pub fid: u32,
        /// Function name of the frame, cut at 127 bytes (full name in
        /// `functions`).
        pub func: FrameNameStr,
        /// Entry timestamp of the frame (µs since the epoch).
        #[unit = "µs"]
        pub entry: u64,
        /// Exit timestamp of the frame (µs); 0 while the call is still open.
        #[unit = "µs"]
        pub exit: u64,
        /// Event id `"pid:rank:step:idx"` of the frame's execution.
        pub event_id: EventIdStr,
        /// 1 when the frame was labelled anomalous when the record was written,
        /// else 0 (parents usually have no label yet: they are still running).
        pub is_anomaly: u8,
    }
}

described_row! {
    /// A counter sample taken during the execution.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct CounterEventRow {
        /// Row of the owning record in the collection's `records` table.
        pub record: u64,
        /// Program index of the traced application.
        pub pid: u32,
        /// Application rank that took the sample.
        pub rid: u64,
        /// Thread that took the sample.
        pub tid: u64,
        /// Global counter index (name in `counters`).
        pub counter_idx: u32,
        /// Sampled value, in the counter's own unit.
        pub counter_value: u64,
        /// Timestamp of the sample (µs since the epoch).
        #[unit = "µs"]
        pub ts: u64,
    }
}

described_row! {
    /// One execution of the window around the record (same thread, entry
    /// order, up to `--window` on each side).
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct ExecWindowRow {
        /// Row of the owning record in the collection's `records` table.
        pub record: u64,
        /// Position relative to the record (0: the record; negative: before it).
        pub offset: i32,
        /// Global function index of the execution (row of `functions`).
        pub fid: u32,
        /// Function name of the frame, cut at 127 bytes (full name in
        /// `functions`).
        pub func: FrameNameStr,
        /// Event id `"pid:rank:step:idx"` of the execution.
        pub event_id: EventIdStr,
        /// Entry timestamp (µs since the epoch).
        #[unit = "µs"]
        pub entry: u64,
        /// Exit timestamp (µs); 0 while the call is still open.
        #[unit = "µs"]
        pub exit: u64,
        /// Event id of the execution's caller (`"root"` for a root call).
        pub parent_event_id: EventIdStr,
        /// 1 anomaly, 0 otherwise (normal, not yet labelled, or still open).
        pub is_anomaly: u8,
    }
}

described_row! {
    /// A message sent or received by an execution of the window.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct CommWindowRow {
        /// Row of the owning record in the collection's `records` table.
        pub record: u64,
        /// 0 SEND, 1 RECV.
        pub kind: u8,
        /// Program index of the traced application.
        pub pid: u32,
        /// Application rank that recorded the message.
        pub rid: u64,
        /// Thread that recorded the message.
        pub tid: u64,
        /// Sender rank (Chimbuko's `src`).
        pub src: u64,
        /// Receiver rank (Chimbuko's `tar`).
        pub tar: u64,
        /// Message size in bytes; `u64::MAX` when TAU's byte count was
        /// implausible (unknown).
        #[unit = "bytes"]
        pub bytes: u64,
        /// MPI message tag.
        pub tag: u64,
        /// Timestamp of the send or receive event (µs since the epoch).
        #[unit = "µs"]
        pub timestamp: u64,
        /// The execution of the window the message belongs to.
        pub execdata_key: EventIdStr,
    }
}

described_row! {
    /// Where a GPU execution ran.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct GpuLocationRow {
        /// Row of the owning record in the collection's `records` table.
        pub record: u64,
        /// GPU context TAU reported for the virtual thread (empty if none).
        pub context: ShortStr,
        /// GPU device TAU reported for the virtual thread (empty if none).
        pub device: ShortStr,
        /// GPU stream (queue) TAU reported for the virtual thread (empty if none).
        pub stream: ShortStr,
        /// TAU's virtual thread of the kernel.
        pub thread: u64,
    }
}

described_row! {
    /// The CPU launch of a GPU execution.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct GpuParentRow {
        /// Row of the owning record in the collection's `records` table.
        pub record: u64,
        /// Event id of the host launch (empty when unknown, see `error`).
        pub event_id: EventIdStr,
        /// Host thread of the launch (0 when not reachable).
        pub tid: u64,
        /// Global function index of the launch (0 when not reachable).
        pub fid: u32,
        /// First row of the launch's call stack in the collection's
        /// `call_stack` table (rows with `of_gpu_parent` = 1).
        pub call_stack_start: u64,
        /// Number of those `call_stack` rows (0 when the launch is not
        /// reachable).
        pub call_stack_len: u32,
        /// Empty, or Chimbuko's message for why the host parent is missing.
        pub error: NameStr,
    }
}

described_row! {
    /// One node-state value (TAU monitoring plugin) current at the record's
    /// exit.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct NodeStateRow {
        /// Row of the owning record in the collection's `records` table.
        pub record: u64,
        /// Counter name without the `monitoring: ` prefix.
        pub field: NameStr,
        /// Latest value of the counter at the record's exit.
        pub value: u64,
        /// Timestamp of that value (µs since the epoch).
        #[unit = "µs"]
        pub timestamp: u64,
    }
}

described_row! {
    /// TAU metadata of a stream (`MetaData:<rank>:<tid>:<description>`).
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct MetadataRow {
        /// Program index of the traced application.
        pub pid: u32,
        /// Application rank named in the entry's key (`MetaData:<rank>:...`).
        pub rid: u64,
        /// Thread named in the entry's key.
        pub tid: u64,
        /// Description (the entry's name, e.g. `Hostname`), cut at 255 bytes.
        pub descr: MetaStr,
        /// Value of the entry, cut at 255 bytes.
        pub value: MetaStr,
    }
}

described_row! {
    /// A global function.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct FunctionRow {
        /// Global function index (the `fid` of every other table).
        pub fid: u32,
        /// Program index of the traced application.
        pub pid: u32,
        /// Full function name (cut only beyond 1023 bytes).
        pub name: LongNameStr,
    }
}

described_row! {
    /// A global counter.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct CounterRow {
        /// Global counter index (the `counter_idx` of every other table).
        pub counter_idx: u32,
        /// Full counter name (cut only beyond 1023 bytes).
        pub name: LongNameStr,
    }
}

/// Chimbuko's RunStats: count, accumulate (sum), minimum, maximum, mean,
/// stddev (ddof 1), skewness, excess kurtosis. Stored flattened in the
/// statistics tables (`<quantity>_<statistic>` columns).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct RunStatsRow {
    /// Number of values.
    pub count: u64,
    /// Sum of the values.
    pub accumulate: f64,
    /// Smallest value.
    pub minimum: f64,
    /// Largest value.
    pub maximum: f64,
    /// Mean of the values.
    pub mean: f64,
    /// Sample standard deviation (ddof 1).
    pub stddev: f64,
    /// Skewness of the values.
    pub skewness: f64,
    /// Excess kurtosis of the values.
    pub kurtosis: f64,
}

described_row! {
    /// Global profile and anomaly metrics of one function (RunStats flattened
    /// into `<quantity>_<statistic>` columns, so that pandas loads the table in
    /// one call).
    #[derive(H5Type, Clone, Copy, Debug, Default)]
    #[repr(C)]
    pub struct FuncStatsRow {
        /// Program index of the traced application.
        pub pid: u32,
        /// Global function index (row of `functions`).
        pub fid: u32,
        /// Function name, cut at 255 bytes (full name in `functions`).
        pub fname: NameStr,
        /// Number of completed executions (first column of the `inclusive_*`
        /// RunStats: the inclusive runtime of every execution, counted once).
        pub inclusive_count: u64,
        /// Sum of the inclusive runtimes (µs).
        #[unit = "µs"]
        pub inclusive_accumulate: f64,
        /// Smallest inclusive runtime (µs).
        #[unit = "µs"]
        pub inclusive_minimum: f64,
        /// Largest inclusive runtime (µs).
        #[unit = "µs"]
        pub inclusive_maximum: f64,
        /// Mean inclusive runtime (µs).
        #[unit = "µs"]
        pub inclusive_mean: f64,
        /// Standard deviation (ddof 1) of the inclusive runtimes (µs).
        #[unit = "µs"]
        pub inclusive_stddev: f64,
        /// Skewness of the inclusive runtimes.
        pub inclusive_skewness: f64,
        /// Excess kurtosis of the inclusive runtimes.
        pub inclusive_kurtosis: f64,
        /// Number of completed executions (first column of the `exclusive_*`
        /// RunStats: the exclusive runtime of every execution, counted once).
        pub exclusive_count: u64,
        /// Sum of the exclusive runtimes (µs).
        #[unit = "µs"]
        pub exclusive_accumulate: f64,
        /// Smallest exclusive runtime (µs).
        #[unit = "µs"]
        pub exclusive_minimum: f64,
        /// Largest exclusive runtime (µs).
        #[unit = "µs"]
        pub exclusive_maximum: f64,
        /// Mean exclusive runtime (µs).
        #[unit = "µs"]
        pub exclusive_mean: f64,
        /// Standard deviation (ddof 1) of the exclusive runtimes (µs).
        #[unit = "µs"]
        pub exclusive_stddev: f64,
        /// Skewness of the exclusive runtimes.
        pub exclusive_skewness: f64,
        /// Excess kurtosis of the exclusive runtimes.
        pub exclusive_kurtosis: f64,
        /// Number of (stream, step) pairs with at least one anomaly of the
        /// function (first column of the `anomaly_count_*` RunStats: anomalies
        /// per such pair).
        pub anomaly_count_count: u64,
        /// Sum of the anomaly counts per such (stream, step).
        pub anomaly_count_accumulate: f64,
        /// Smallest number of anomalies in one such (stream, step).
        pub anomaly_count_minimum: f64,
        /// Largest number of anomalies in one such (stream, step).
        pub anomaly_count_maximum: f64,
        /// Mean number of anomalies in one such (stream, step).
        pub anomaly_count_mean: f64,
        /// Standard deviation (ddof 1) of the anomaly counts per such (stream, step).
        pub anomaly_count_stddev: f64,
        /// Skewness of the anomaly counts per such (stream, step).
        pub anomaly_count_skewness: f64,
        /// Excess kurtosis of the anomaly counts per such (stream, step).
        pub anomaly_count_kurtosis: f64,
        /// Number of anomalies of the function over the whole run.
        pub total_anomalies: u64,
        /// First I/O step with an anomaly of the function (0 when none).
        pub first_io_step: u64,
        /// Last I/O step with an anomaly of the function (0 when none).
        pub last_io_step: u64,
        /// Earliest entry timestamp of an anomaly (µs; 0 when none).
        #[unit = "µs"]
        pub min_timestamp: u64,
        /// Latest exit timestamp of an anomaly (µs; 0 when none).
        #[unit = "µs"]
        pub max_timestamp: u64,
        /// Number of anomalies (first column of the `score_*` RunStats: the
        /// anomalies' scores, rounded to 1/1000).
        pub score_count: u64,
        /// Sum of the anomalies' scores (rounded to 1/1000).
        pub score_accumulate: f64,
        /// Smallest anomaly score (rounded to 1/1000).
        pub score_minimum: f64,
        /// Largest anomaly score (rounded to 1/1000).
        pub score_maximum: f64,
        /// Mean anomaly score (rounded to 1/1000).
        pub score_mean: f64,
        /// Standard deviation (ddof 1) of the anomalies' scores (rounded to 1/1000).
        pub score_stddev: f64,
        /// Skewness of the anomalies' scores.
        pub score_skewness: f64,
        /// Excess kurtosis of the anomalies' scores.
        pub score_kurtosis: f64,
        /// Number of anomalies (first column of the `severity_*` RunStats: the
        /// anomalies' severities, i.e. exclusive runtimes in µs).
        pub severity_count: u64,
        /// Sum of the anomalies' severities (exclusive runtime, µs).
        #[unit = "µs"]
        pub severity_accumulate: f64,
        /// Smallest anomaly severity (exclusive runtime, µs).
        #[unit = "µs"]
        pub severity_minimum: f64,
        /// Largest anomaly severity (exclusive runtime, µs).
        #[unit = "µs"]
        pub severity_maximum: f64,
        /// Mean anomaly severity (exclusive runtime, µs).
        #[unit = "µs"]
        pub severity_mean: f64,
        /// Standard deviation (ddof 1) of the anomalies' severities (exclusive runtime, µs).
        #[unit = "µs"]
        pub severity_stddev: f64,
        /// Skewness of the anomalies' severities.
        pub severity_skewness: f64,
        /// Excess kurtosis of the anomalies' severities.
        pub severity_kurtosis: f64,
    }
}

described_row! {
    /// Global statistics of one counter's values.
    #[derive(H5Type, Clone, Copy, Debug, Default)]
    #[repr(C)]
    pub struct CounterStatsRow {
        /// Global counter index (row of `counters`).
        pub counter_idx: u32,
        /// Counter name, cut at 255 bytes (full name in `counters`).
        pub counter: NameStr,
        /// Number of values recorded (first column of the `stats_*` RunStats
        /// of every value of the counter, in the counter's unit).
        pub stats_count: u64,
        /// Sum of the counter's values.
        pub stats_accumulate: f64,
        /// Smallest counter value.
        pub stats_minimum: f64,
        /// Largest counter value.
        pub stats_maximum: f64,
        /// Mean counter value.
        pub stats_mean: f64,
        /// Standard deviation (ddof 1) of the counter's values.
        pub stats_stddev: f64,
        /// Skewness of the counter's values.
        pub stats_skewness: f64,
        /// Excess kurtosis of the counter's values.
        pub stats_kurtosis: f64,
    }
}

impl FuncStatsRow {
    /// Sets the five RunStats groups.
    pub fn set_stats(
        &mut self,
        inclusive: RunStatsRow,
        exclusive: RunStatsRow,
        anomaly_count: RunStatsRow,
        score: RunStatsRow,
        severity: RunStatsRow,
    ) {
        self.inclusive_count = inclusive.count;
        self.inclusive_accumulate = inclusive.accumulate;
        self.inclusive_minimum = inclusive.minimum;
        self.inclusive_maximum = inclusive.maximum;
        self.inclusive_mean = inclusive.mean;
        self.inclusive_stddev = inclusive.stddev;
        self.inclusive_skewness = inclusive.skewness;
        self.inclusive_kurtosis = inclusive.kurtosis;
        self.exclusive_count = exclusive.count;
        self.exclusive_accumulate = exclusive.accumulate;
        self.exclusive_minimum = exclusive.minimum;
        self.exclusive_maximum = exclusive.maximum;
        self.exclusive_mean = exclusive.mean;
        self.exclusive_stddev = exclusive.stddev;
        self.exclusive_skewness = exclusive.skewness;
        self.exclusive_kurtosis = exclusive.kurtosis;
        self.anomaly_count_count = anomaly_count.count;
        self.anomaly_count_accumulate = anomaly_count.accumulate;
        self.anomaly_count_minimum = anomaly_count.minimum;
        self.anomaly_count_maximum = anomaly_count.maximum;
        self.anomaly_count_mean = anomaly_count.mean;
        self.anomaly_count_stddev = anomaly_count.stddev;
        self.anomaly_count_skewness = anomaly_count.skewness;
        self.anomaly_count_kurtosis = anomaly_count.kurtosis;
        self.score_count = score.count;
        self.score_accumulate = score.accumulate;
        self.score_minimum = score.minimum;
        self.score_maximum = score.maximum;
        self.score_mean = score.mean;
        self.score_stddev = score.stddev;
        self.score_skewness = score.skewness;
        self.score_kurtosis = score.kurtosis;
        self.severity_count = severity.count;
        self.severity_accumulate = severity.accumulate;
        self.severity_minimum = severity.minimum;
        self.severity_maximum = severity.maximum;
        self.severity_mean = severity.mean;
        self.severity_stddev = severity.stddev;
        self.severity_skewness = severity.skewness;
        self.severity_kurtosis = severity.kurtosis;
    }

    /// One RunStats group by name (`inclusive`, `exclusive`,
    /// `anomaly_count`, `score`, `severity`).
    pub fn stats(&self, group: &str) -> RunStatsRow {
        match group {
            "inclusive" => RunStatsRow {
                count: self.inclusive_count,
                accumulate: self.inclusive_accumulate,
                minimum: self.inclusive_minimum,
                maximum: self.inclusive_maximum,
                mean: self.inclusive_mean,
                stddev: self.inclusive_stddev,
                skewness: self.inclusive_skewness,
                kurtosis: self.inclusive_kurtosis,
            },
            "exclusive" => RunStatsRow {
                count: self.exclusive_count,
                accumulate: self.exclusive_accumulate,
                minimum: self.exclusive_minimum,
                maximum: self.exclusive_maximum,
                mean: self.exclusive_mean,
                stddev: self.exclusive_stddev,
                skewness: self.exclusive_skewness,
                kurtosis: self.exclusive_kurtosis,
            },
            "anomaly_count" => RunStatsRow {
                count: self.anomaly_count_count,
                accumulate: self.anomaly_count_accumulate,
                minimum: self.anomaly_count_minimum,
                maximum: self.anomaly_count_maximum,
                mean: self.anomaly_count_mean,
                stddev: self.anomaly_count_stddev,
                skewness: self.anomaly_count_skewness,
                kurtosis: self.anomaly_count_kurtosis,
            },
            "score" => RunStatsRow {
                count: self.score_count,
                accumulate: self.score_accumulate,
                minimum: self.score_minimum,
                maximum: self.score_maximum,
                mean: self.score_mean,
                stddev: self.score_stddev,
                skewness: self.score_skewness,
                kurtosis: self.score_kurtosis,
            },
            "severity" => RunStatsRow {
                count: self.severity_count,
                accumulate: self.severity_accumulate,
                minimum: self.severity_minimum,
                maximum: self.severity_maximum,
                mean: self.severity_mean,
                stddev: self.severity_stddev,
                skewness: self.severity_skewness,
                kurtosis: self.severity_kurtosis,
            },
            _ => RunStatsRow::default(),
        }
    }
}

impl CounterStatsRow {
    /// Sets the `stats_*` columns from one RunStats group.
    pub fn set_stats(&mut self, stats: RunStatsRow) {
        self.stats_count = stats.count;
        self.stats_accumulate = stats.accumulate;
        self.stats_minimum = stats.minimum;
        self.stats_maximum = stats.maximum;
        self.stats_mean = stats.mean;
        self.stats_stddev = stats.stddev;
        self.stats_skewness = stats.skewness;
        self.stats_kurtosis = stats.kurtosis;
    }

    /// The `stats_*` columns as one RunStats group.
    pub fn stats(&self) -> RunStatsRow {
        RunStatsRow {
            count: self.stats_count,
            accumulate: self.stats_accumulate,
            minimum: self.stats_minimum,
            maximum: self.stats_maximum,
            mean: self.stats_mean,
            stddev: self.stats_stddev,
            skewness: self.stats_skewness,
            kurtosis: self.stats_kurtosis,
        }
    }
}

described_row! {
    /// A detector's parameters for one function at one step (see
    /// [`crate::detect::ModelSnapshot`]); histogram counts in the companion
    /// `*_hist` dataset.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct ModelRow {
        /// Step after whose reduction the snapshot was taken (`u64::MAX` for
        /// the final model).
        pub io_step: u64,
        /// Program index of the traced application.
        pub pid: u32,
        /// Global function index (row of `functions`).
        pub fid: u32,
        /// Function name, cut at 255 bytes (full name in `functions`).
        pub func: NameStr,
        /// Executions in the global model.
        pub count: u64,
        /// Mean runtime of the model (µs).
        #[unit = "µs"]
        pub mean: f64,
        /// Standard deviation (ddof 1) of the model's runtimes (µs).
        #[unit = "µs"]
        pub stddev: f64,
        /// Skewness of the model's runtimes.
        pub skewness: f64,
        /// Excess kurtosis of the model's runtimes.
        pub kurtosis: f64,
        /// Smallest runtime in the model (µs; 0 when empty).
        #[unit = "µs"]
        pub minimum: u64,
        /// Largest runtime in the model (µs; 0 when empty).
        #[unit = "µs"]
        pub maximum: u64,
        /// SSTD: σ; HBOS/COPOD: the internal global score threshold; modal: the
        /// robust-distance threshold.
        pub threshold: f64,
        /// Left edge of the labelling histogram's first bin (µs); bin `b`
        /// covers `(first_edge + b·width, first_edge + (b+1)·width]`.
        #[unit = "µs"]
        pub hist_first_edge: f64,
        /// Width of each histogram bin (µs).
        #[unit = "µs"]
        pub hist_bin_width: f64,
        /// First row of this model's bin counts in the companion `*_hist`
        /// dataset.
        pub hist_start: u64,
        /// Number of histogram bins (0 for detectors without a labelling
        /// histogram: SSTD, modal).
        pub hist_len: u32,
    }
}

described_row! {
    /// One application stream: how far it was read and how it ended.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct StreamRow {
        /// Program index of the traced application.
        pub pid: u32,
        /// Application rank that wrote the stream.
        pub rid: u64,
        /// Path (or SST name) the stream was opened from, cut at 255 bytes.
        pub path: NameStr,
        /// `reading` (the run stopped first), `ended` (the writer closed it),
        /// `stalled` (no new step within the step timeout), `failed`.
        pub state: ShortStr,
        /// Number of steps read from the stream.
        pub steps: u64,
        /// Number of trace rows read and kept by validation (function, comm
        /// and counter rows).
        pub rows: u64,
        /// Run step of the last step read (2^64−1: none).
        pub last_step: u64,
        /// Run step at which the stream stopped (2^64−1: it did not).
        pub stopped_at: u64,
        /// Seconds without a new step after which a `stalled` stream was given
        /// up (0 otherwise).
        #[unit = "s"]
        pub stalled_after_s: f64,
        /// Input problems found (rejected or repaired rows, malformed
        /// attributes, broken call stacks), in total and by kind.
        pub issues: u64,
        /// The problems by kind, as `kind: count` joined by `; `.
        pub issue_counts: MetaStr,
        /// Why a failed stream failed.
        pub message: MetaStr,
    }
}

described_row! {
    /// What one stream delivered in one step.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct StepRow {
        /// Program index of the traced application.
        pub pid: u32,
        /// Application rank that wrote the stream.
        pub rid: u64,
        /// The I/O step.
        pub io_step: u64,
        /// Executions completed in the step.
        pub executions: u64,
        /// Anomalies recorded in the step.
        pub anomalies: u64,
        /// First timestamp of the step (µs since the epoch; 0 when empty).
        #[unit = "µs"]
        pub min_timestamp: u64,
        /// Last timestamp of the step (µs since the epoch; 0 when empty).
        #[unit = "µs"]
        pub max_timestamp: u64,
    }
}

described_row! {
    /// Seconds one AD rank spent in each stage of one step (the stages of the
    /// step loop, in order).
    #[derive(H5Type, Clone, Copy, Debug, Default)]
    #[repr(C)]
    pub struct PerfRow {
        /// Rank of the analysing process in the AD communicator.
        pub ad_rank: u32,
        /// Run step the timings belong to.
        pub io_step: u64,
        /// Seconds reading (until every AD rank has its step: includes waiting
        /// for the slowest).
        #[unit = "s"]
        pub read: f64,
        /// Seconds agreeing on new function and counter names.
        #[unit = "s"]
        pub agree: f64,
        /// Seconds building executions (and the partial model, as they complete).
        #[unit = "s"]
        pub build: f64,
        /// Seconds reducing the global model.
        #[unit = "s"]
        pub reduce: f64,
        /// Seconds labelling every execution.
        #[unit = "s"]
        pub label: f64,
        /// Seconds linking the step's anomalies of every rank into incidents.
        #[unit = "s"]
        pub link: f64,
        /// Seconds collecting provenance records.
        #[unit = "s"]
        pub collect: f64,
        /// Seconds writing (the previous step's write, trim and status come in
        /// here).
        #[unit = "s"]
        pub write: f64,
        /// Seconds trimming what no later step needs.
        #[unit = "s"]
        pub trim: f64,
        /// Seconds exchanging the status.
        #[unit = "s"]
        pub status: f64,
        /// Resident memory of the AD rank at the end of the step (MiB).
        #[unit = "MiB"]
        pub rss_mb: f64,
    }
}

described_row! {
    /// One execution sampled by `run --model-samples` (table `model_samples`):
    /// its identity and its fixed features, named as in
    /// `crate::model::features` (the column names are the feature names).
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct ModelSampleRow {
        /// Global function index (row of `functions`).
        pub fid: u32,
        /// Program index of the traced application.
        pub pid: u32,
        /// Function name, cut at 255 bytes (full name in `functions`).
        pub func: NameStr,
        /// Event id `"pid:rank:step:idx"` of the execution (Chimbuko's
        /// `"rank:step:idx"` with the program index in front).
        pub event_id: EventIdStr,
        /// Entry timestamp (µs since the epoch, TAU's clock).
        #[unit = "µs"]
        pub entry: u64,
        /// The sampling hash: the executions of a function with the smallest
        /// hashes are the sample.
        pub sample_hash: u64,
        /// Exclusive runtime (µs).
        #[unit = "µs"]
        pub exclusive_us: u64,
        /// Inclusive runtime (µs).
        #[unit = "µs"]
        pub inclusive_us: u64,
        /// Number of direct children.
        pub n_children: u64,
        /// Total inclusive runtime of the direct children (µs).
        #[unit = "µs"]
        pub children_us: u64,
        /// Bytes sent by the execution's own messages.
        #[unit = "bytes"]
        pub bytes_sent: u64,
        /// Bytes received by the execution's own messages.
        #[unit = "bytes"]
        pub bytes_received: u64,
        /// Call depth (a root call has depth 0).
        pub depth: u64,
        /// Application rank of the stream.
        pub rank: u64,
        /// TAU thread.
        pub thread: u64,
        /// The I/O step that completed the execution.
        pub step: u64,
        /// First row of this sample's counters in `model_sample_counters`.
        pub counters_start: u64,
        /// Number of this sample's rows in `model_sample_counters`.
        pub counters_len: u32,
    }
}

described_row! {
    /// One counter value of a sampled execution (table
    /// `model_sample_counters`): the feature `counter:<name>`.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct ModelSampleCounterRow {
        /// Row of the sample in `model_samples`.
        pub sample: u64,
        /// Global counter index (row of `counters`).
        pub counter_idx: u32,
        /// Counter name, cut at 255 bytes (full name in `counters`).
        pub counter: NameStr,
        /// The sum of the counter's samples during the execution.
        pub value: u64,
    }
}

described_row! {
    /// One run-level tag (table `run_tags`): `--tag KEY=VALUE` and the
    /// automatic `app_ranks` and `ad_ranks`.
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct RunTagRow {
        /// The key, cut at 255 bytes.
        pub key: NameStr,
        /// The value as a number (NaN when it is not one).
        pub value: f64,
        /// The value as given, cut at 255 bytes.
        pub text: MetaStr,
        /// 1 when the value is a number.
        pub numeric: u8,
    }
}

described_row! {
    /// One performance model the model detector (`run --algorithm model`)
    /// judged a function with (table `model_detector`; the model itself, as
    /// its JSON text, is in the bytes of `model_detector_json`).
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct ModelDetectorRow {
        /// Function name, cut at 255 bytes.
        pub func: NameStr,
        /// The modelled runtime (`exclusive_us` or `inclusive_us`).
        pub target: ShortStr,
        /// The model's input metrics, comma-separated, cut at 255 bytes.
        pub metrics: MetaStr,
        /// First byte of the model's JSON text in `model_detector_json`.
        pub json_start: u64,
        /// Length in bytes of the model's JSON text.
        #[unit = "bytes"]
        pub json_len: u64,
    }
}

/// One collection of records (`anomalies` or `normal_execs`) with its
/// companion tables. While a run buffers them (`collect`), companion rows
/// name their record by its index in `records` and records name their
/// companion rows by index, both local to the buffer, and the writer shifts
/// them to file rows; read back from a file (`read`), they are file rows.
#[derive(Debug, Default)]
pub struct CollectionTables {
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

impl CollectionTables {
    /// True when no record is waiting to be written.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Drops every row (after they were written).
    pub fn clear(&mut self) {
        *self = CollectionTables::default();
    }

    /// Functions of the records added since `from` (for model snapshots).
    pub fn functions_since(&self, from: usize) -> impl Iterator<Item = u32> + '_ {
        self.records[from.min(self.records.len())..]
            .iter()
            .map(|r| r.fid)
    }

    /// Appends record `k` of `from` with all its companion rows (call
    /// stack, counters, window, messages, GPU rows, node state), their
    /// links renumbered for this collection; returns its row here.
    pub fn copy_record_from(&mut self, from: &CollectionTables, k: usize) -> usize {
        let mut r = from.records[k];
        let at = self.records.len() as u64;
        /// Copies `len` rows from `start` of `src` to the end of `dst`,
        /// pointing them at record `at`; returns their new start.
        fn rows<T: Copy>(
            dst: &mut Vec<T>,
            src: &[T],
            start: u64,
            len: u32,
            at: u64,
            record: fn(&mut T) -> &mut u64,
        ) -> u64 {
            let new_start = dst.len() as u64;
            let lo = (start as usize).min(src.len());
            let hi = (lo + len as usize).min(src.len());
            for row in &src[lo..hi] {
                let mut x = *row;
                *record(&mut x) = at;
                dst.push(x);
            }
            new_start
        }
        let cs_shift = self.call_stack.len() as i64 - r.call_stack_start as i64;
        r.call_stack_start = rows(
            &mut self.call_stack,
            &from.call_stack,
            r.call_stack_start,
            r.call_stack_len,
            at,
            |x| &mut x.record,
        );
        r.counter_events_start = rows(
            &mut self.counter_events,
            &from.counter_events,
            r.counter_events_start,
            r.counter_events_len,
            at,
            |x| &mut x.record,
        );
        r.exec_window_start = rows(
            &mut self.exec_window,
            &from.exec_window,
            r.exec_window_start,
            r.exec_window_len,
            at,
            |x| &mut x.record,
        );
        r.comm_window_start = rows(
            &mut self.comm_window,
            &from.comm_window,
            r.comm_window_start,
            r.comm_window_len,
            at,
            |x| &mut x.record,
        );
        r.gpu_location_start = rows(
            &mut self.gpu_location,
            &from.gpu_location,
            r.gpu_location_start,
            r.gpu_location_len,
            at,
            |x| &mut x.record,
        );
        let gp = rows(
            &mut self.gpu_parent,
            &from.gpu_parent,
            r.gpu_parent_start,
            r.gpu_parent_len,
            at,
            |x| &mut x.record,
        );
        // A GPU parent's launch call stack lies in the record's call-stack
        // rows, which moved by the same amount.
        for x in &mut self.gpu_parent[gp as usize..] {
            x.call_stack_start = (x.call_stack_start as i64 + cs_shift).max(0) as u64;
        }
        r.gpu_parent_start = gp;
        r.node_state_start = rows(
            &mut self.node_state,
            &from.node_state,
            r.node_state_start,
            r.node_state_len,
            at,
            |x| &mut x.record,
        );
        self.records.push(r);
        at as usize
    }
}

/// The value the detector judged for a record: the ratio to its model's
/// prediction in ppm when it has one (model detector), else its inclusive
/// or exclusive runtime.
pub fn judged_value(r: &ExecRecord, use_inclusive: bool) -> u64 {
    if r.model_ratio.is_finite() {
        // Exact: the ratio was stored as ppm / 10⁶ (error far below 0.5).
        (r.model_ratio * 1e6).round() as u64
    } else if use_inclusive {
        r.runtime_total
    } else {
        r.runtime_exclusive
    }
}
