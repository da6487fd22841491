//! chimbuko-mpi: in situ performance anomaly detection for TAU traces,
//! bulk-synchronous over MPI. See `docs/` and the README for the user view.

pub mod collectives;
pub mod detect;
pub mod dump;
pub mod events;
pub mod fuzzing;
pub mod memory;
pub mod output;
pub mod run;
pub mod synth;
pub mod trace;
pub mod tuning;
