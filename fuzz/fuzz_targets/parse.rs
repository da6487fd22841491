//! Arbitrary text as an attribute key/value, stream name and event id,
//! through the parsers; see `chimbuko_mpi::fuzzing::run_parse`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    chimbuko_mpi::fuzzing::run_parse(data);
});
