//! Trace sources: reading the steps the analysis works on.
//!
//! - [`source`]: the seam, the [`source::TraceSource`] trait the pipeline
//!   reads steps through and the [`source::SourceOpener`] that opens the
//!   streams of a run;
//! - [`step`], [`dictionary`], [`issues`], [`format`](mod@format): the source-neutral
//!   step data (rows, name definitions, reading issues) and the row layouts;
//! - [`tau`]: TAU traces over ADIOS2, the first source; [`adios`] is the
//!   thin safe layer over the ADIOS2 C API (the only `unsafe` of this room,
//!   and the only caller of ADIOS2 outside `adios2-sys`); [`writer`] writes
//!   the TAU layout (used by `synth` and tests);
//! - [`ross`]: ROSS instrumentation files (engine samples, model samples,
//!   event traces), read record by record in bounded memory;
//! - [`threaded`]: any source read on a thread of its own, with time-outs.

pub mod adios;
pub mod dictionary;
pub mod format;
pub mod issues;
pub mod ross;
pub mod source;
pub mod step;
pub mod tau;
pub mod threaded;
pub mod writer;
