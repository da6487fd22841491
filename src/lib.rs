//! chimbuko-mpi: in situ performance anomaly detection for TAU traces,
//! bulk-synchronous over MPI. See `docs/` and the README for the user view.

pub mod collectives;
pub mod detect;
pub mod dump;
pub mod events;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod output;
pub mod run;
pub mod synth;
pub mod sys;
pub mod trace;
pub mod util;
