//! Arbitrary bytes as a TAU stream of several steps (rows and attributes),
//! through the reader's validation and the call-stack replay; see
//! `chimbuko_mpi::fuzzing` for the byte layout and the invariants checked.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    chimbuko_mpi::fuzzing::run_steps(data);
});
