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

use hdf5::types::FixedUnicode;
use hdf5::H5Type;

/// Width of event ids (`"rank:step:idx"`; three u64 need at most 62 bytes).
pub type EventIdStr = FixedUnicode<64>;
/// Width of function names inside records (full names in `functions`).
pub type NameStr = FixedUnicode<256>;
/// Width of short strings: host names, GPU context/device/stream, fields.
pub type ShortStr = FixedUnicode<64>;
/// Width of names in the `functions` and `counters` tables.
pub type LongNameStr = FixedUnicode<1024>;
/// Width of metadata descriptions and values.
pub type MetaStr = FixedUnicode<256>;

/// Chimbuko's label codes.
pub const LABEL_NORMAL: i8 = 1;
pub const LABEL_ANOMALY: i8 = -1;
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

/// One function execution kept as provenance: an anomaly, or a normal
/// execution sampled for comparison.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct ExecRecord {
    /// Chimbuko's event label `"rank:step:idx"` and its three parts.
    pub event_id: EventIdStr,
    pub event_rank: u64,
    pub event_step: u64,
    pub event_idx: u64,
    /// Program index, application rank, thread.
    pub pid: u32,
    pub rid: u64,
    pub tid: u64,
    /// Global function index and name.
    pub fid: u32,
    pub func: NameStr,
    /// Timestamps (µs) and runtimes (µs).
    pub entry: u64,
    pub exit: u64,
    pub runtime_total: u64,
    pub runtime_exclusive: u64,
    /// The I/O step holding the EXIT, and that step's first/last timestamp
    /// on this stream.
    pub io_step: u64,
    pub io_step_tstart: u64,
    pub io_step_tend: u64,
    /// Step in which the label was decided (later than `io_step` when the
    /// function's model was too thin at first).
    pub labelled_step: u64,
    /// Label and score decided in situ.
    pub label: i8,
    pub outlier_score: f64,
    /// Severity as in Chimbuko: the exclusive runtime (µs).
    pub outlier_severity: f64,
    /// Label and score against the final model (end-of-run re-evaluation;
    /// equal to the in-situ ones until then, or when it is off).
    pub final_label: i8,
    pub final_score: f64,
    pub is_gpu_event: u8,
    pub hostname: ShortStr,
    /// Parent execution (`"root"` for a root call), depth, direct children.
    pub parent_event_id: EventIdStr,
    pub depth: u32,
    pub n_children: u32,
    /// Row of `model_params` with the model this record was labelled with.
    pub model_row: u64,
    /// Comm/counter events not kept (per-execution attachment cap).
    pub dropped_attachments: u32,
    pub call_stack_start: u64,
    pub call_stack_len: u32,
    pub counter_events_start: u64,
    pub counter_events_len: u32,
    pub exec_window_start: u64,
    pub exec_window_len: u32,
    pub comm_window_start: u64,
    pub comm_window_len: u32,
    pub gpu_location_start: u64,
    pub gpu_location_len: u32,
    pub gpu_parent_start: u64,
    pub gpu_parent_len: u32,
    pub node_state_start: u64,
    pub node_state_len: u32,
}

/// The part of [`ExecRecord`] rewritten by the end-of-run re-evaluation
/// (HDF5 matches compound members by name, so only these are written).
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct FinalVerdict {
    pub final_label: i8,
    pub final_score: f64,
}

/// One frame of a record's call stack, the execution itself first, then
/// its parents up to the root.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct CallStackRow {
    pub record: u64,
    /// 0: the record's own stack; 1: the stack of its GPU host parent
    /// (rows named by `gpu_parent`).
    pub of_gpu_parent: u8,
    /// 0 for the execution itself, 1 for its parent, ...
    pub level: u32,
    pub fid: u32,
    pub entry: u64,
    /// 0 while the call is still open.
    pub exit: u64,
    pub event_id: EventIdStr,
    /// Label known when the record was written (parents usually have none
    /// yet: they are still running).
    pub is_anomaly: u8,
}

/// A counter sample taken during the execution.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct CounterEventRow {
    pub record: u64,
    pub pid: u32,
    pub rid: u64,
    pub tid: u64,
    /// Global counter index (name in `counters`).
    pub counter_idx: u32,
    pub counter_value: u64,
    pub ts: u64,
}

/// One execution of the window around the record (same thread, entry
/// order, up to `--window` on each side).
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct ExecWindowRow {
    pub record: u64,
    /// Position relative to the record (negative: before it).
    pub offset: i32,
    pub fid: u32,
    pub event_id: EventIdStr,
    pub entry: u64,
    /// 0 while the call is still open.
    pub exit: u64,
    pub parent_event_id: EventIdStr,
    /// 1 anomaly, 0 otherwise (normal, not yet labelled, or still open).
    pub is_anomaly: u8,
}

/// A message sent or received by an execution of the window.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct CommWindowRow {
    pub record: u64,
    /// 0 SEND, 1 RECV.
    pub kind: u8,
    pub pid: u32,
    pub rid: u64,
    pub tid: u64,
    /// Sender and receiver ranks (Chimbuko's `src`/`tar`).
    pub src: u64,
    pub tar: u64,
    /// `u64::MAX` when TAU's byte count was implausible (unknown).
    pub bytes: u64,
    pub tag: u64,
    pub timestamp: u64,
    /// The execution of the window the message belongs to.
    pub execdata_key: EventIdStr,
}

/// Where a GPU execution ran.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct GpuLocationRow {
    pub record: u64,
    pub context: ShortStr,
    pub device: ShortStr,
    pub stream: ShortStr,
    /// TAU's virtual thread of the kernel.
    pub thread: u64,
}

/// The CPU launch of a GPU execution.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct GpuParentRow {
    pub record: u64,
    /// Event id of the host launch (empty when unknown, see `error`).
    pub event_id: EventIdStr,
    pub tid: u64,
    pub fid: u32,
    /// Rows of the launch's call stack in the collection's `call_stack`
    /// table (`gpu_parent_call_stack_len` = 0 when not reachable).
    pub call_stack_start: u64,
    pub call_stack_len: u32,
    /// Empty, or Chimbuko's message for why the host parent is missing.
    pub error: NameStr,
}

/// One node-state value (TAU monitoring plugin) current at the record's
/// exit.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct NodeStateRow {
    pub record: u64,
    /// Counter name without the `monitoring: ` prefix.
    pub field: NameStr,
    pub value: u64,
    pub timestamp: u64,
}

/// TAU metadata of a stream (`MetaData:<rank>:<tid>:<description>`).
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct MetadataRow {
    pub pid: u32,
    pub rid: u64,
    pub tid: u64,
    pub descr: MetaStr,
    pub value: MetaStr,
}

/// A global function.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct FunctionRow {
    pub fid: u32,
    pub pid: u32,
    pub name: LongNameStr,
}

/// A global counter.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct CounterRow {
    pub counter_idx: u32,
    pub name: LongNameStr,
}

/// Chimbuko's RunStats: count, accumulate (sum), minimum, maximum, mean,
/// stddev (ddof 1), skewness, excess kurtosis. Stored flattened in the
/// statistics tables (`<quantity>_<statistic>` columns).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct RunStatsRow {
    pub count: u64,
    pub accumulate: f64,
    pub minimum: f64,
    pub maximum: f64,
    pub mean: f64,
    pub stddev: f64,
    pub skewness: f64,
    pub kurtosis: f64,
}

/// Global profile and anomaly metrics of one function (RunStats flattened
/// into `<quantity>_<statistic>` columns, so that pandas loads the table in
/// one call).
#[derive(H5Type, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct FuncStatsRow {
    pub pid: u32,
    pub fid: u32,
    pub fname: NameStr,
    /// Inclusive runtime (µs) of every execution: RunStats (count, accumulate = sum, minimum, maximum, mean,
    /// stddev with ddof 1, skewness, excess kurtosis).
    pub inclusive_count: u64,
    pub inclusive_accumulate: f64,
    pub inclusive_minimum: f64,
    pub inclusive_maximum: f64,
    pub inclusive_mean: f64,
    pub inclusive_stddev: f64,
    pub inclusive_skewness: f64,
    pub inclusive_kurtosis: f64,
    /// Exclusive runtime (µs) of every execution: RunStats (count, accumulate = sum, minimum, maximum, mean,
    /// stddev with ddof 1, skewness, excess kurtosis).
    pub exclusive_count: u64,
    pub exclusive_accumulate: f64,
    pub exclusive_minimum: f64,
    pub exclusive_maximum: f64,
    pub exclusive_mean: f64,
    pub exclusive_stddev: f64,
    pub exclusive_skewness: f64,
    pub exclusive_kurtosis: f64,
    /// Anomalies per (rank, step) with at least one: RunStats (count, accumulate = sum, minimum, maximum, mean,
    /// stddev with ddof 1, skewness, excess kurtosis).
    pub anomaly_count_count: u64,
    pub anomaly_count_accumulate: f64,
    pub anomaly_count_minimum: f64,
    pub anomaly_count_maximum: f64,
    pub anomaly_count_mean: f64,
    pub anomaly_count_stddev: f64,
    pub anomaly_count_skewness: f64,
    pub anomaly_count_kurtosis: f64,
    pub total_anomalies: u64,
    pub first_io_step: u64,
    pub last_io_step: u64,
    pub min_timestamp: u64,
    pub max_timestamp: u64,
    /// Scores of the anomalies: RunStats (count, accumulate = sum, minimum, maximum, mean,
    /// stddev with ddof 1, skewness, excess kurtosis).
    pub score_count: u64,
    pub score_accumulate: f64,
    pub score_minimum: f64,
    pub score_maximum: f64,
    pub score_mean: f64,
    pub score_stddev: f64,
    pub score_skewness: f64,
    pub score_kurtosis: f64,
    /// Severities (exclusive runtime, µs) of the anomalies: RunStats (count, accumulate = sum, minimum, maximum, mean,
    /// stddev with ddof 1, skewness, excess kurtosis).
    pub severity_count: u64,
    pub severity_accumulate: f64,
    pub severity_minimum: f64,
    pub severity_maximum: f64,
    pub severity_mean: f64,
    pub severity_stddev: f64,
    pub severity_skewness: f64,
    pub severity_kurtosis: f64,
}

/// Global statistics of one counter's values.
#[derive(H5Type, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct CounterStatsRow {
    pub counter_idx: u32,
    pub counter: NameStr,
    /// Values: RunStats (count, accumulate = sum, minimum, maximum, mean,
    /// stddev with ddof 1, skewness, excess kurtosis).
    pub stats_count: u64,
    pub stats_accumulate: f64,
    pub stats_minimum: f64,
    pub stats_maximum: f64,
    pub stats_mean: f64,
    pub stats_stddev: f64,
    pub stats_skewness: f64,
    pub stats_kurtosis: f64,
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

/// A detector's parameters for one function at one step (see
/// [`crate::detect::ModelSnapshot`]); histogram counts in the companion
/// `*_hist` dataset.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct ModelRow {
    /// Step after whose reduction the snapshot was taken (`u64::MAX` for
    /// the final model).
    pub io_step: u64,
    pub pid: u32,
    pub fid: u32,
    pub func: NameStr,
    pub count: u64,
    pub mean: f64,
    pub stddev: f64,
    pub skewness: f64,
    pub kurtosis: f64,
    pub minimum: u64,
    pub maximum: u64,
    pub threshold: f64,
    pub hist_first_edge: f64,
    pub hist_bin_width: f64,
    pub hist_start: u64,
    pub hist_len: u32,
}

/// One application stream: how far it was read and how it ended.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct StreamRow {
    pub pid: u32,
    pub rid: u64,
    pub path: NameStr,
    /// `reading` (the run stopped first), `ended` (the writer closed it),
    /// `stalled` (no new step within the step timeout), `failed`.
    pub state: ShortStr,
    /// Steps and rows read.
    pub steps: u64,
    pub rows: u64,
    /// Run step of the last step read, and the run step at which the stream
    /// stopped (2^64−1: none).
    pub last_step: u64,
    pub stopped_at: u64,
    pub stalled_after_s: f64,
    /// Input problems found (rejected or repaired rows, malformed
    /// attributes, broken call stacks), in total and by kind.
    pub issues: u64,
    pub issue_counts: MetaStr,
    /// Why a failed stream failed.
    pub message: MetaStr,
}

/// What one stream delivered in one step.
#[derive(H5Type, Clone, Copy, Debug)]
#[repr(C)]
pub struct StepRow {
    pub pid: u32,
    pub rid: u64,
    pub io_step: u64,
    pub executions: u64,
    pub anomalies: u64,
    pub min_timestamp: u64,
    pub max_timestamp: u64,
}

/// Seconds one AD rank spent in each stage of one step (the stages of the
/// step loop, in order).
#[derive(H5Type, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct PerfRow {
    /// The AD rank.
    pub ad_rank: u32,
    /// The step.
    pub io_step: u64,
    /// Reading (until every AD rank has its step).
    pub read: f64,
    /// Agreeing on new names.
    pub agree: f64,
    /// Building executions (and the partial model, as they complete).
    pub build: f64,
    /// Reducing the global model.
    pub reduce: f64,
    /// Labelling every execution.
    pub label: f64,
    /// Collecting provenance records.
    pub collect: f64,
    /// Writing (the previous step's write, trim and status come in here).
    pub write: f64,
    /// Trimming what no later step needs.
    pub trim: f64,
    /// Exchanging the status.
    pub status: f64,
    /// Resident memory of the AD rank at the end of the step (MiB).
    pub rss_mb: f64,
}
