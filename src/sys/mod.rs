//! The operating-system room: every call into libc lives here, and with it
//! every `unsafe` block outside the FFI layers of ADIOS2 (`trace::adios`)
//! and MPI (`collectives`).
//!
//! - [`allocator`]: glibc malloc tuning at start-up, and resident-memory
//!   readings for the reports;
//! - [`memory`]: growing a step's big buffers without a copy, with
//!   huge-page hints;
//! - [`signals`]: SIGTERM/SIGINT recorded for the step loop, with a
//!   watchdog that ends a rank whose peers are gone;
//! - [`stderr_capture`]: what a C library prints on stderr during one
//!   call, caught so that our error can say it (ADIOS2's open failures).

pub mod allocator;
pub mod memory;
pub mod signals;
pub mod stderr_capture;
