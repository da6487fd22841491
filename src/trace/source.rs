//! The trace-source seam: how the analysis reads steps, whatever wrote them.
//!
//! The step loop knows nothing of ADIOS2 or of any file format. It is given
//! a [`SourceOpener`], which lists the [`StreamSpec`]s of the run; each AD
//! rank opens its block of them through the opener (on a thread per stream, see
//! [`super::threaded`]) and asks each for its next [`TraceStep`]. A source
//! delivers validated, source-neutral rows in the layouts of
//! [`super::format`] plus the name definitions ([`Attribute`]s) new in the
//! step, and counts what it had to drop in [`TraceStep::issues`].
//!
//! TAU traces over ADIOS2 ([`super::tau`]) are the first implementation.
//! Adding a source means implementing [`TraceSource`] (read one step) and
//! [`SourceOpener`] (open one stream of the run) and passing the opener to
//! `run::run`: the pipeline does not change. `docs/architecture.md` shows
//! how ROSS instrumentation files map onto these rows.
//!
//! [`Attribute`]: super::format::Attribute

use std::path::PathBuf;
use std::time::Duration;

use super::adios::AdiosError;
use super::step::TraceStep;

/// An error that stops reading a stream.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// ADIOS2 failed on a step of an open stream.
    #[error("{stream}: step {step}: {source}")]
    Adios {
        /// The stream (its path).
        stream: String,
        /// The source's own step number.
        step: usize,
        /// What ADIOS2 said.
        #[source]
        source: AdiosError,
    },
    /// The stream could not be opened through ADIOS2.
    #[error(transparent)]
    Open(#[from] AdiosError),
    /// A file-based source found input it cannot read on: not its format, a
    /// truncated record, a size field that breaks the chain. What was read
    /// before `offset` has been delivered.
    #[error("{stream}: byte {offset}: {message}")]
    Format {
        /// The file.
        stream: String,
        /// Byte offset of the fault in the file.
        offset: u64,
        /// What is wrong there.
        message: String,
    },
    /// The stream does not exist (and did not appear within the open
    /// timeout): a setup error, not a fault of the stream.
    #[error("{stream}: not found")]
    NotFound {
        /// The path that was looked for.
        stream: String,
    },
}

impl TraceError {
    /// Whether the stream was never there (a wrong path or a missing
    /// application), as opposed to a stream that exists but fails.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            TraceError::NotFound { .. } | TraceError::Open(AdiosError::NotFound { .. })
        )
    }
}

/// Result of [`TraceSource::next_step`].
#[derive(Debug)]
pub enum NextStep {
    /// The next step, read completely.
    Step(Box<TraceStep>),
    /// Nothing arrived within the timeout; try again later.
    NotReady,
    /// The writer closed the stream.
    EndOfStream,
}

/// One stream of a trace source, read step by step.
///
/// Implementations block in [`TraceSource::next_step`] for at most the
/// timeout they are given; the run's reader thread calls it in a loop, so a
/// source that waits for data (a stream still being written) answers
/// [`NextStep::NotReady`] and is asked again.
pub trait TraceSource {
    /// The stream's name for messages (its path).
    fn name(&self) -> &str;

    /// Waits up to `timeout` for the next step and reads it completely.
    fn next_step(&mut self, timeout: Duration) -> Result<NextStep, TraceError>;

    /// Takes back a finished step's buffers for reuse by the next step
    /// (optional: saves the page faults of fresh multi-megabyte buffers).
    fn recycle(&mut self, step: TraceStep) {
        drop(step);
    }
}

/// One application stream of a run: which program and application rank it
/// belongs to and where it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StreamSpec {
    /// Program index of the workflow the stream belongs to.
    pub program: u32,
    /// The application rank that wrote it.
    pub app_rank: u64,
    /// Where it is (for streaming engines, the stream's name).
    pub path: PathBuf,
    /// Position in the list of all streams of the run.
    pub global_index: usize,
    /// Which input (`--input`) it came from.
    pub input: usize,
    /// Rank 0 already waited the whole open timeout for this stream while
    /// listing, and it did not appear: opening it should not wait again.
    #[serde(default)]
    pub waited_in_vain: bool,
}

/// Opens the streams of a run: one kind of trace source, with its settings.
///
/// Called on each stream's own reader thread, so it may block (waiting for
/// a stream to appear); a stream that never appears is
/// [`TraceError::is_not_found`].
pub trait SourceOpener: Send + Sync {
    /// Every stream of the run, in a fixed order (called on AD rank 0 only,
    /// whose list every rank then uses).
    fn list_streams(&self) -> anyhow::Result<Vec<StreamSpec>>;

    /// Opens one stream.
    fn open(&self, stream: &StreamSpec) -> Result<Box<dyn TraceSource>, TraceError>;
}
