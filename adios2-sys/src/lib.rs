//! Raw FFI bindings to the ADIOS2 C API, generated at build time by bindgen
//! from the `adios2_c.h` of the ADIOS2 installation that `build.rs` finds.
//!
//! Everything here is `unsafe`; the safe layer lives in
//! `chimbuko_mpi::trace::adios`.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

/// Version string of the ADIOS2 headers the bindings were generated from.
pub const ADIOS2_HEADER_VERSION: &str = env!("ADIOS2_SYS_VERSION");
