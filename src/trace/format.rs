//! The TAU-over-ADIOS2 stream format: variable names, row layouts and the
//! meaning of attributes (see `docs/stream-format.md`).

use serde::{Deserialize, Serialize};

/// ADIOS2 IO name TAU uses.
pub const TAU_IO_NAME: &str = "tau-metrics";

/// Variable (uint64 scalar) holding the number of function event rows in
/// the step.
pub const VAR_FUNC_COUNT: &str = "timer_event_count";
/// Variable (uint64 `[n, 6]`) holding the step's function event rows
/// ([`FuncRow`]); absent when the count is 0.
pub const VAR_FUNC_ROWS: &str = "event_timestamps";
/// Variable (uint64 scalar) holding the number of communication rows in
/// the step.
pub const VAR_COMM_COUNT: &str = "comm_count";
/// Variable (uint64 `[n, 8]`) holding the step's communication rows
/// ([`CommRow`]); absent when the count is 0.
pub const VAR_COMM_ROWS: &str = "comm_timestamps";
/// Variable (uint64 scalar) holding the number of counter rows in the step.
pub const VAR_COUNTER_COUNT: &str = "counter_event_count";
/// Variable (uint64 `[n, 6]`) holding the step's counter rows
/// ([`CounterRow`]); absent when the count is 0.
pub const VAR_COUNTER_ROWS: &str = "counter_values";
/// Int32 scalar TAU writes: number of timers (functions) defined so far.
pub const VAR_TIMER_COUNT: &str = "timer_count";
/// Int32 scalar TAU writes: number of counters defined so far.
pub const VAR_COUNTER_DEF_COUNT: &str = "counter_count";
/// Int32 scalar TAU writes: number of event types defined so far.
pub const VAR_EVENT_TYPE_COUNT: &str = "event_type_count";
/// Int32 scalar TAU writes: number of threads seen so far.
pub const VAR_THREAD_COUNT: &str = "thread_count";
/// Int32 scalar TAU writes: number of programs defined so far.
pub const VAR_PROGRAM_COUNT: &str = "program_count";
/// Int32 scalar TAU writes: size of the application's MPI communicator
/// (TAU's `comm_size`).
pub const VAR_COMM_RANK_COUNT: &str = "comm_rank_count";

/// Columns of a function row ([`FuncRow`], `event_timestamps`).
pub const FUNC_WIDTH: usize = 6;
/// Columns of a communication row ([`CommRow`], `comm_timestamps`).
pub const COMM_WIDTH: usize = 8;
/// Columns of a counter row ([`CounterRow`], `counter_values`).
pub const COUNTER_WIDTH: usize = 6;

/// A function event: `[program, rank, thread, event type, function, timestamp]`.
pub type FuncRow = [u64; FUNC_WIDTH];
/// A communication event:
/// `[program, rank, thread, event type, tag, partner, bytes, timestamp]`.
pub type CommRow = [u64; COMM_WIDTH];
/// A counter event: `[program, rank, thread, counter, value, timestamp]`.
pub type CounterRow = [u64; COUNTER_WIDTH];

/// A function event as the analysis holds it once the reader has checked
/// it: 24 bytes instead of the stream's 48. The program is the same for
/// every row of a stream (the reader overrides TAU's defunct column), and
/// the checks bound thread, rank, event type and function far below 2^32.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FuncEvent {
    /// Event time (µs since the epoch, TAU's clock).
    pub timestamp: u64,
    /// TAU thread id (GPU streams are virtual threads).
    pub thread: u32,
    /// Application rank from the row (checked against the stream's rank).
    pub rank: u32,
    /// The stream's local event-type index (an ENTRY or EXIT type).
    pub event_type: u32,
    /// The stream's local function index.
    pub function: u32,
}

impl FuncEvent {
    /// Narrows a stream row; columns beyond `u32` saturate to `u32::MAX`,
    /// which no checked row carries (the reader rejects such rows first).
    pub fn from_row(row: &FuncRow) -> Self {
        let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        FuncEvent {
            timestamp: row[FUNC_COL_TIMESTAMP],
            thread: narrow(row[COL_THREAD]),
            rank: narrow(row[COL_RANK]),
            event_type: narrow(row[FUNC_COL_EVENT_TYPE]),
            function: narrow(row[FUNC_COL_FUNCTION]),
        }
    }

    /// The stream row this event came from, with the stream's program.
    pub fn to_row(&self, program: u64) -> FuncRow {
        [
            program,
            u64::from(self.rank),
            u64::from(self.thread),
            u64::from(self.event_type),
            u64::from(self.function),
            self.timestamp,
        ]
    }
}

/// Column of every row kind: program index (defunct in TAU output; the
/// reader overrides it with `--program-idx`).
pub const COL_PROGRAM: usize = 0;
/// Column of every row kind: application (MPI world) rank.
pub const COL_RANK: usize = 1;
/// Column of every row kind: TAU thread id.
pub const COL_THREAD: usize = 2;
/// Function row column: local event-type index (ENTRY or EXIT).
pub const FUNC_COL_EVENT_TYPE: usize = 3;
/// Function row column: local function index (`timer <i>`).
pub const FUNC_COL_FUNCTION: usize = 4;
/// Function row column: timestamp (µs since the epoch).
pub const FUNC_COL_TIMESTAMP: usize = 5;
/// Comm row column: local event-type index (SEND or RECV).
pub const COMM_COL_EVENT_TYPE: usize = 3;
/// Comm row column: MPI message tag.
pub const COMM_COL_TAG: usize = 4;
/// Comm row column: partner rank (receiver of a SEND, sender of a RECV).
pub const COMM_COL_PARTNER: usize = 5;
/// Comm row column: message size in bytes (unreliable for receives).
pub const COMM_COL_BYTES: usize = 6;
/// Comm row column: timestamp (µs since the epoch).
pub const COMM_COL_TIMESTAMP: usize = 7;
/// Counter row column: local counter index (`counter <i>`).
pub const COUNTER_COL_COUNTER: usize = 3;
/// Counter row column: sampled value (unsigned integer).
pub const COUNTER_COL_VALUE: usize = 4;
/// Counter row column: timestamp (µs since the epoch).
pub const COUNTER_COL_TIMESTAMP: usize = 5;

/// The four event types TAU names through `event_type <i>` attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    /// `ENTRY`: a function starts (function rows).
    Entry,
    /// `EXIT`: a function returns (function rows).
    Exit,
    /// `SEND`: a message is sent (comm rows).
    Send,
    /// `RECV`: a message is received (comm rows).
    Recv,
}

impl EventKind {
    /// The kind named by an `event_type <i>` value (`ENTRY`, `EXIT`,
    /// `SEND`, `RECV`; surrounding whitespace ignored), or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim() {
            "ENTRY" => Some(EventKind::Entry),
            "EXIT" => Some(EventKind::Exit),
            "SEND" => Some(EventKind::Send),
            "RECV" => Some(EventKind::Recv),
            _ => None,
        }
    }

    /// TAU's name of the kind, as in `event_type <i>` attributes.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Entry => "ENTRY",
            EventKind::Exit => "EXIT",
            EventKind::Send => "SEND",
            EventKind::Recv => "RECV",
        }
    }

    /// True for ENTRY/EXIT (valid in function rows).
    pub fn is_function(self) -> bool {
        matches!(self, EventKind::Entry | EventKind::Exit)
    }
}

/// Name of the counter TAU uses to pair a CPU launch with its GPU kernel.
pub const CORRELATION_ID_COUNTER: &str = "Correlation ID";
/// Prefix of the counters TAU's monitoring plugin writes.
pub const MONITORING_PREFIX: &str = "monitoring: ";

/// One `MetaData:<rank>:<thread>:<description>` attribute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataEntry {
    /// Application rank named in the key.
    pub rank: u64,
    /// Thread named in the key (a GPU virtual thread for GPU metadata).
    pub thread: u64,
    /// Description part of the key (may contain colons), e.g. `Hostname`
    /// or `CUDA Device`.
    pub description: String,
    /// The attribute's value, with one pair of surrounding quotes removed.
    pub value: String,
}

/// What one attribute means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attribute {
    /// `timer <i>`: name of the stream's local function index `i`.
    Function {
        /// Local function index.
        index: u64,
        /// Function name (TAU's timer name, often with source location).
        name: String,
    },
    /// `event_type <i>`: name of the local event-type index `i`.
    EventType {
        /// Local event-type index.
        index: u64,
        /// `ENTRY`, `EXIT`, `SEND` or `RECV` (the reader reports anything else
        /// as a malformed attribute).
        name: String,
    },
    /// `counter <i>`: name of the local counter index `i`.
    Counter {
        /// Local counter index.
        index: u64,
        /// Counter name (e.g. `Correlation ID`, `monitoring: ...`).
        name: String,
    },
    /// `MetaData:<rank>:<thread>:<description>`.
    Metadata(MetadataEntry),
    /// Anything else (`program_name 0`, ...), kept verbatim.
    Other {
        /// Attribute key.
        key: String,
        /// Attribute value, quotes stripped.
        value: String,
    },
    /// A key that looks like one of ours but does not parse (e.g. `timer x`).
    Malformed {
        /// Attribute key.
        key: String,
        /// Attribute value, quotes stripped.
        value: String,
    },
}

/// Strips one pair of surrounding quotes, as TAU quotes some values.
pub fn strip_quotes(v: &str) -> &str {
    let t = v.trim();
    if t.len() >= 2
        && ((t.starts_with('"') && t.ends_with('"')) || (t.starts_with('\'') && t.ends_with('\'')))
    {
        &t[1..t.len() - 1]
    } else {
        t
    }
}

fn indexed(key: &str, prefix: &str) -> Option<Option<u64>> {
    key.strip_prefix(prefix)
        .map(|rest| rest.trim().parse::<u64>().ok())
}

/// Interprets one attribute key/value pair.
pub fn parse_attribute(key: &str, value: &str) -> Attribute {
    let value_s = strip_quotes(value).to_owned();
    let malformed = || Attribute::Malformed {
        key: key.to_owned(),
        value: value_s.clone(),
    };
    if let Some(idx) = indexed(key, "timer ") {
        return match idx {
            Some(index) => Attribute::Function {
                index,
                name: value_s,
            },
            None => malformed(),
        };
    }
    if let Some(idx) = indexed(key, "event_type ") {
        return match idx {
            Some(index) => Attribute::EventType {
                index,
                name: value_s,
            },
            None => malformed(),
        };
    }
    if let Some(idx) = indexed(key, "counter ") {
        return match idx {
            Some(index) => Attribute::Counter {
                index,
                name: value_s,
            },
            None => malformed(),
        };
    }
    if let Some(rest) = key.strip_prefix("MetaData:") {
        let mut parts = rest.splitn(3, ':');
        let (r, t, d) = (parts.next(), parts.next(), parts.next());
        return match (
            r.and_then(|r| r.parse().ok()),
            t.and_then(|t| t.parse().ok()),
            d,
        ) {
            (Some(rank), Some(thread), Some(description)) => Attribute::Metadata(MetadataEntry {
                rank,
                thread,
                description: description.to_owned(),
                value: value_s,
            }),
            _ => malformed(),
        };
    }
    Attribute::Other {
        key: key.to_owned(),
        value: value_s,
    }
}

/// Splits a TAU stream name `<prefix>-<binary>-<rank>.bp` (or the SST
/// name without `.bp`) into `<prefix>-<binary>` and the application rank.
pub fn split_stream_name(path: &std::path::Path) -> Option<(&str, u64)> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".sst").unwrap_or(name);
    let stem = stem.strip_suffix(".bp").unwrap_or(stem);
    let (head, rank) = stem.rsplit_once('-')?;
    Some((head, rank.parse().ok()?))
}

/// Extracts the application rank from a TAU stream name (see
/// [`split_stream_name`]).
pub fn rank_from_stream_name(path: &std::path::Path) -> Option<u64> {
    split_stream_name(path).map(|(_, rank)| rank)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_attribute_kind() {
        assert_eq!(
            parse_attribute("timer 4", "component1_function(int) [{main.C} {19,0}]"),
            Attribute::Function {
                index: 4,
                name: "component1_function(int) [{main.C} {19,0}]".into()
            }
        );
        assert_eq!(
            parse_attribute("event_type 1", "EXIT"),
            Attribute::EventType {
                index: 1,
                name: "EXIT".into()
            }
        );
        assert_eq!(
            parse_attribute("counter 0", "Correlation ID"),
            Attribute::Counter {
                index: 0,
                name: "Correlation ID".into()
            }
        );
        assert_eq!(
            parse_attribute("MetaData:3:7:CUDA Device", "\"0\""),
            Attribute::Metadata(MetadataEntry {
                rank: 3,
                thread: 7,
                description: "CUDA Device".into(),
                value: "0".into()
            })
        );
        // Descriptions may contain colons.
        match parse_attribute("MetaData:0:0:GPU[0] a:b", "x") {
            Attribute::Metadata(m) => assert_eq!(m.description, "GPU[0] a:b"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_attribute("timer x", "f"),
            Attribute::Malformed { .. }
        ));
        assert!(matches!(
            parse_attribute("MetaData:a:0:x", "f"),
            Attribute::Malformed { .. }
        ));
        assert!(matches!(
            parse_attribute("program_name 0", "main1"),
            Attribute::Other { .. }
        ));
    }

    #[test]
    fn rank_from_names() {
        use std::path::Path;
        assert_eq!(
            rank_from_stream_name(Path::new("/a/tau-metrics-main1-12.bp")),
            Some(12)
        );
        assert_eq!(
            rank_from_stream_name(Path::new("tau-metrics-main1-3")),
            Some(3)
        );
        assert_eq!(
            rank_from_stream_name(Path::new("tau-metrics-main1-3.bp.sst")),
            Some(3)
        );
        assert_eq!(rank_from_stream_name(Path::new("weird.bp")), None);
    }
}
