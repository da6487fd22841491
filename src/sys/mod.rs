//! The operating-system room: every call into libc (and LAPACK) lives here, and with it
//! every `unsafe` block outside the FFI layers of ADIOS2 (`trace::adios`)
//! and MPI (`collectives`).
//!
//! - [`affinity`]: the CPUs the process is bound to (the default size of
//!   an AD rank's worker pool);
//! - [`allocator`]: glibc malloc tuning at start-up, and resident-memory
//!   readings for the reports;
//! - [`lapack`]: LAPACK's SVD (`dgesdd`), for Eiger's rotation;
//! - [`memory`]: growing a step's big buffers without a copy, with
//!   huge-page hints;
//! - [`signals`]: SIGTERM/SIGINT recorded for the step loop, with a
//!   watchdog that ends a rank whose peers are gone;
//! - [`stderr_capture`]: what a C library prints on stderr during one
//!   call, caught so that our error can say it (ADIOS2's open failures).

pub mod affinity;
pub mod allocator;
pub mod lapack;
pub mod memory;
pub mod signals;
pub mod stderr_capture;
