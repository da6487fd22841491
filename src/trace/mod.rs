//! Reading and writing TAU traces carried over ADIOS2.
//!
//! `adios` is the only module with `unsafe` code: a thin safe layer over the
//! ADIOS2 C API. `format` describes the TAU stream layout, `tau` reads it
//! with validation, and `writer` produces it (used by `synth`).

pub mod adios;
pub mod format;
pub mod tau;
pub mod threaded;
pub mod writer;
