//! ROSS instrumentation files: the binary statistics the ROSS parallel
//! discrete-event simulator writes about its engine and its model.
//!
//! A run with instrumentation on writes, into its stats directory
//! (`--stats-path`, `stats-output` by default), up to five files named
//! `<prefix>-<suffix>.bin`: engine samples taken at GVT (`gvt`), on a
//! real-time timer (`rt`) and by analysis LPs at virtual-time intervals
//! (`analysis-lps`), the event trace (`evtrace`) and model samples
//! (`model`). The format has no header, magic or version: each file is a
//! chain of native x86_64 structs, each sized by its own length field.
//! `docs/ross-format.md` has our notes on it; the byte-level reference is
//! `ross-instrumentation-format.md` of the shared reference material.
//!
//! - [`files`]: finding a run's files ([`StatsFiles::find`]) and their kinds;
//! - [`reader`]: [`RecordReader`], a streaming reader over one file, in
//!   bounded memory, that validates every header and stops at the first bad
//!   record with its byte offset;
//! - [`records`]: the typed records ([`Record`]: PE, KP and LP engine
//!   samples, model samples, trace events, VT model samples); [`layout`]:
//!   their byte layouts, decoding and encoding;
//! - [`writer`]: [`FlushWriter`], per-PE buffers flushed in PE order, as
//!   ROSS writes its files (used by `synth ross`);
//! - [`series`]: engine samples regrouped per PE, VT model samples without
//!   rollback repeats;
//! - [`totals`]: totals of the delta counters per PE, KP and LP, and of an
//!   event trace;
//! - [`schema`]: user-supplied layouts (TOML) of the model's payloads;
//! - [`clock`]: ROSS's stdout (clock rate, end-of-run totals) and rescaling
//!   seconds to the real clock rate;
//! - [`error`]: [`RossError`], naming the file and byte offset.
//!
//! ```no_run
//! use chimbuko_mpi::trace::ross::{EngineTotals, FileKind, RecordReader, StatsFiles};
//! let files = StatsFiles::find("run-dir".as_ref())?;
//! if let Some(rt) = files.path(FileKind::Rt) {
//!     let totals = EngineTotals::read(&mut RecordReader::open(&rt, FileKind::Rt)?)?;
//!     println!("events processed: {}", totals.pe_sum().nevent_processed);
//! }
//! # Ok::<(), chimbuko_mpi::trace::ross::RossError>(())
//! ```

pub mod clock;
pub mod error;
pub mod files;
pub mod layout;
pub mod reader;
pub mod records;
pub mod schema;
pub mod series;
pub mod totals;
pub mod writer;

pub use clock::{ClockRescale, ClockSource, RossStdout, RunTotals};
pub use error::{RossError, RossErrorKind};
pub use files::{FileKind, StatsFiles};
pub use reader::RecordReader;
pub use records::{
    KpSample, LpSample, ModelSample, PeSample, Record, SampleHeader, StatsType, TraceEvent,
    VtModelSample,
};
pub use schema::{Payload, PayloadKind, PayloadLayout, Schema, Value};
pub use series::{EngineSeries, OwnedVtSample, PeSeries, VtSamples};
pub use totals::{EngineTotals, EventCounts, KpTotals, LpTotals, PeSeconds, PeTotals, TraceTotals};
pub use writer::FlushWriter;
