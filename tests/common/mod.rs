//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use chimbuko_mpi::trace::adios::{Engine, ReadOptions};
use chimbuko_mpi::trace::tau::{NextStep, TauReaderOptions, TauStep, TauStreamReader};

/// Directory of the real TAU fixture.
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tau/simple_workflow")
}

pub fn reader_options(engine: Engine) -> TauReaderOptions {
    TauReaderOptions {
        engine,
        adios: ReadOptions {
            open_timeout: Duration::from_secs(60),
            ..Default::default()
        },
        report_issues: false,
        ..Default::default()
    }
}

/// Reads every step of a stream.
pub fn read_all(path: &Path, opts: TauReaderOptions) -> (Vec<TauStep>, TauStreamReader) {
    let mut r = TauStreamReader::open(path, opts)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut steps = Vec::new();
    let mut idle = 0;
    loop {
        match r.next_step(Duration::from_millis(500)).expect("next_step") {
            NextStep::Step(s) => {
                idle = 0;
                steps.push(*s)
            }
            NextStep::NotReady => {
                idle += 1;
                assert!(idle < 240, "no step for 120 s from {}", path.display());
            }
            NextStep::EndOfStream => break,
        }
    }
    (steps, r)
}

/// Path of the binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_chimbuko-mpi")
}
