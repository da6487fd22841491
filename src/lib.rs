//! In situ performance anomaly detection for HPC applications, as an
//! MPI-native, bulk-synchronous program.
//!
//! Each application rank streams its trace (TAU over ADIOS2, SST in situ or
//! BP files); the AD ranks form their own MPI communicator, rebuild call
//! stacks and label every function execution against one global model that
//! all ranks agree on each step with collectives. Results do not depend on
//! the number of AD ranks. Provenance of each anomaly goes collectively into
//! one HDF5 file. The user's view is in the README; the design, with the
//! module map and what each room may import, in `docs/architecture.md`.
//!
//! # How the pieces fit
//!
//! One step of [`run::run`] passes every event through the rooms in order:
//!
//! - [`trace`] reads it: a [`trace::source::TraceSource`] (TAU over ADIOS2
//!   is [`trace::tau`]) delivers each stream's step as a source-neutral
//!   [`trace::step::TraceStep`] of rows and name definitions;
//! - [`collectives`] agrees on names ([`events::names::GlobalNames`]) and
//!   reduces the model — it is the only room that calls MPI;
//! - [`events`] replays the rows on call stacks
//!   ([`events::CallStackBuilder`]) into [`events::Execution`]s;
//! - [`detect`] holds the detectors behind [`detect::Detector`]: partial
//!   models that merge exactly over ranks, and a [`detect::Verdict`] per
//!   execution;
//! - [`output`] consumes the labels through [`output::consumer::LabelConsumer`]:
//!   the HDF5 provenance file, live statistics, label CSVs, the run's summary.
//!
//! [`run`] is the driver that calls the stages in order, configured by a
//! plain [`run::options::RunOptions`]. [`ross`] analyses the instrumentation
//! files of the ROSS simulator (read by [`trace::ross`]). Beside it: [`synth`] writes synthetic
//! TAU streams with known anomalies, [`dump`] shows what a stream holds,
//! [`report`] draws a provenance file as one self-contained HTML page,
//! [`sys`] is the room for libc calls (signals, allocator, memory hints),
//! and [`util`] holds small text formats.
//!
//! # Example
//!
//! Analyse two TAU streams written as BP5 files, with the SSTD detector, on
//! however many AD ranks `mpirun` starts:
//!
//! ```no_run
//! use chimbuko_mpi::detect::choice::{Algorithm, DetectorSettings};
//! use chimbuko_mpi::run::options::RunOptions;
//! use chimbuko_mpi::trace::adios::Engine;
//!
//! let mut opts = RunOptions {
//!     detector: DetectorSettings {
//!         algorithm: Algorithm::Sstd,
//!         sigma: 6.0,
//!         ..Default::default()
//!     },
//!     out: Some("provenance.h5".into()),
//!     ..Default::default()
//! };
//! opts.inputs.inputs = vec!["traces/tau-metrics-app-{rank}.bp".into()];
//! opts.inputs.engine = Engine::BP5;
//! chimbuko_mpi::run::run_on_mpi(&opts)?;
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! A new trace source implements [`trace::source::TraceSource`] and
//! [`trace::source::SourceOpener`] and is passed to [`run::run`]; a new
//! output implements [`output::consumer::LabelConsumer`]; a new detector
//! implements [`detect::Detector`] (`docs/architecture.md` walks through
//! each).

#![warn(missing_docs)]

pub mod collectives;
pub mod commands;
pub mod detect;
pub mod dump;
pub mod events;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod incidents;
pub mod inspect;
pub mod model;
pub mod output;
pub mod provenance;
pub mod report;
pub mod ross;
pub mod run;
pub mod synth;
pub mod sys;
pub mod trace;
pub mod util;
