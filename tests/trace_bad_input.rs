//! Bad input is counted, reported with context and skipped; never a panic.

mod common;

use std::time::{Duration, Instant};

use chimbuko_mpi::trace::adios::{Engine, ReadOptions};
use chimbuko_mpi::trace::issues::IssueKind;
use chimbuko_mpi::trace::source::TraceError;
use chimbuko_mpi::trace::tau::{TauReaderOptions, TauStreamReader};
use chimbuko_mpi::trace::writer::{StepData, TauStreamWriter};
use common::*;

fn attrs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const T0: u64 = 1_700_000_000_000_000;

/// Step 0: valid rows mixed with garbage; step 1: a function used before its
/// name is defined; step 2: the name arrives (late attribute) and is used.
fn crafted_steps() -> Vec<StepData> {
    let e = |thread: u64, et: u64, f: u64, ts: u64| [0u64, 3, thread, et, f, T0 + ts];
    let step0 = StepData {
        funcs: vec![
            e(0, 0, 0, 10),                 // ok: ENTRY main
            [1 << 40, 3, 0, 0, 1, T0 + 11], // bad program
            [0, 99, 0, 0, 1, T0 + 12],      // bad rank (stream is rank 3)
            [0, 3, 1 << 30, 0, 1, T0 + 13], // bad thread
            e(0, 9, 1, 14),                 // unknown event type
            e(0, 2, 1, 15),                 // SEND in a function row
            e(0, 0, 77, 16),                // unknown function index
            e(0, 0, 1, 30),                 // ok, but out of order:
            e(0, 1, 1, 20),                 //   this EXIT is earlier
            e(1, 0, 1, 25),                 // ok, other thread
            e(0, 0, 1, 40),
        ],
        comms: vec![
            [0, 3, 0, 2, 7, 4, 1024, T0 + 31], // ok SEND
            [0, 3, 0, 0, 7, 4, 1024, T0 + 32], // ENTRY in a comm row
        ],
        counters: vec![
            [0, 3, 0, 0, 5, T0 + 33],  // ok
            [0, 3, 0, 42, 5, T0 + 34], // unknown counter
        ],
        new_attributes: attrs(&[
            ("event_type 0", "ENTRY"),
            ("event_type 1", "EXIT"),
            ("event_type 2", "SEND"),
            ("event_type 3", "RECV"),
            ("timer 0", "main"),
            ("timer 1", "solve"),
            ("counter 0", "PAPI_TOT_CYC"),
            ("timer x", "not an index"),
        ]),
    };
    let step1 = StepData {
        funcs: vec![e(0, 1, 1, 50), e(0, 0, 5, 60), e(0, 1, 5, 70)],
        ..Default::default()
    };
    let step2 = StepData {
        funcs: vec![e(0, 0, 5, 80), e(0, 1, 5, 90), e(0, 1, 0, 5)],
        new_attributes: attrs(&[("timer 5", "late_function")]),
        ..Default::default()
    };
    vec![step0, step1, step2]
}

fn check_crafted(engine: Engine) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tau-metrics-bad-3.bp");
    let mut w = TauStreamWriter::create(&path, engine, vec![]).unwrap();
    for s in crafted_steps() {
        w.write_step(&s).unwrap();
    }
    w.close().unwrap();

    let mut opts = reader_options(Engine::BPFile);
    opts.program_idx = 2;
    let (steps, reader) = read_all(&path, opts);
    assert_eq!(steps.len(), 3);

    let s0 = &steps[0];
    let i = &s0.issues;
    assert_eq!(i.count(IssueKind::BadProgram), 1);
    assert_eq!(i.count(IssueKind::BadRank), 1);
    assert_eq!(i.count(IssueKind::BadThread), 1);
    assert_eq!(i.count(IssueKind::BadEventType), 3, "{i:?}");
    assert_eq!(i.count(IssueKind::UnknownFunction), 1);
    assert_eq!(i.count(IssueKind::UnknownCounter), 1);
    assert_eq!(i.count(IssueKind::OutOfOrder), 1);
    assert_eq!(i.count(IssueKind::MalformedAttribute), 1);
    // The report names the stream, step and offending row.
    let line = i.summary(reader.stream(), 0);
    assert!(
        line.contains("tau-metrics-bad-3.bp") && line.contains("step 0"),
        "{line}"
    );
    assert!(line.contains("event_timestamps row 6"), "{line}");
    // Kept rows: program overridden, thread 0 sorted by time, stable.
    let ts: Vec<(u64, u64)> = s0.func_rows().iter().map(|r| (r[2], r[5] - T0)).collect();
    assert_eq!(ts, vec![(0, 10), (0, 20), (0, 30), (0, 40), (1, 25)]);
    assert!(s0.func_rows().iter().all(|r| r[0] == 2));
    assert_eq!(s0.comms.len(), 1);
    assert_eq!(s0.counters.len(), 1);

    let announces_late = |s: &chimbuko_mpi::trace::step::TraceStep| {
        s.new_attributes
            .iter()
            .any(|a| format!("{a:?}").contains("late_function"))
    };
    if engine == Engine::BP5 {
        // BP5 reveals attributes step by step. Step 1 uses function 5 before
        // its name exists: skipped, counted.
        assert_eq!(steps[1].issues.count(IssueKind::UnknownFunction), 2);
        assert_eq!(steps[1].funcs.len(), 1);
        // Step 2: the late name is picked up and its rows are accepted.
        assert!(announces_late(&steps[2]));
        assert_eq!(steps[2].issues.count(IssueKind::UnknownFunction), 0);
    } else {
        // BP4 readers see every attribute from the first step on.
        assert!(announces_late(&steps[0]));
        assert_eq!(steps[1].funcs.len(), 3);
    }
    // A row older than an earlier step is kept but reported.
    let s2 = &steps[2];
    assert_eq!(s2.issues.count(IssueKind::OutOfOrderAcrossSteps), 1);
    assert_eq!(s2.funcs.len(), 3);
    assert_eq!(reader.dictionary().function(5), Some("late_function"));
}

#[test]
fn garbage_rows_are_counted_and_skipped_bp4() {
    check_crafted(Engine::BP4);
}

#[test]
fn garbage_rows_are_counted_and_skipped_bp5() {
    check_crafted(Engine::BP5);
}

/// Function rows are checked a read chunk (16 Ki rows) at a time: bad rows
/// on both sides of a chunk boundary and in the last, partial chunk are
/// dropped and reported with their row index in the whole step, and the
/// kept rows are exactly the good ones, in order.
#[test]
fn bad_rows_across_read_chunks_keep_their_step_row_index() {
    const ROWS: u64 = 40_000;
    let bad = [16_383u64, 16_384, 32_768, ROWS - 1];
    let row = |i: u64| {
        // ENTRY/EXIT pairs of `main` on thread 0, one µs apart.
        let function = if bad.contains(&i) { 77 } else { 0 };
        [0u64, 3, 0, i % 2, function, T0 + i]
    };
    let step = StepData {
        funcs: (0..ROWS).map(row).collect(),
        new_attributes: attrs(&[
            ("event_type 0", "ENTRY"),
            ("event_type 1", "EXIT"),
            ("timer 0", "main"),
        ]),
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tau-metrics-chunks-3.bp");
    let mut w = TauStreamWriter::create(&path, Engine::BP5, vec![]).unwrap();
    w.write_step(&step).unwrap();
    w.close().unwrap();

    let (steps, _) = read_all(&path, reader_options(Engine::BPFile));
    let s0 = &steps[0];
    assert_eq!(s0.declared.timer_events, Some(ROWS));
    assert_eq!(s0.issues.count(IssueKind::UnknownFunction), 4);
    assert_eq!(s0.issues.dropped_rows(), 4);
    let example = &s0.issues.first_example[&IssueKind::UnknownFunction];
    assert!(
        example.starts_with("event_timestamps row 16383 "),
        "{example}"
    );
    let want: Vec<_> = (0..ROWS)
        .filter(|i| !bad.contains(i))
        .map(|i| {
            let mut r = row(i);
            r[0] = s0.program;
            r
        })
        .collect();
    assert_eq!(s0.func_rows(), want);
}

#[test]
fn missing_stream_is_a_clear_error_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-stream-0.bp");
    for engine in [Engine::BPFile, Engine::SST] {
        let opts = TauReaderOptions {
            engine,
            adios: ReadOptions {
                open_timeout: Duration::from_secs(1),
                ..Default::default()
            },
            ..Default::default()
        };
        let start = Instant::now();
        let err = match TauStreamReader::open(&path, opts) {
            Err(e) => e,
            Ok(_) => panic!("opened a stream that does not exist"),
        };
        // Sanity bound only (the wait is 1 s): it must not hang.
        assert!(start.elapsed() < Duration::from_secs(30));
        assert!(matches!(err, TraceError::Open(_)));
        let msg = err.to_string();
        assert!(msg.contains("no-such-stream-0.bp"), "{msg}");
    }
}

#[test]
fn not_a_bp_file_is_an_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk-0.bp");
    std::fs::write(&path, b"this is not ADIOS2 data").unwrap();
    let opts = TauReaderOptions {
        adios: ReadOptions {
            open_timeout: Duration::from_secs(1),
            ..Default::default()
        },
        ..Default::default()
    };
    let err = TauStreamReader::open(&path, opts)
        .err()
        .expect("junk must not open");
    assert!(err.to_string().contains("junk-0.bp"), "{err}");
}

#[test]
fn dump_reports_issues_and_exits_cleanly_on_missing_stream() {
    let out = std::process::Command::new(exe())
        .args([
            "dump",
            "--open-timeout",
            "1",
            "/nonexistent/dir/tau-metrics-x-0.bp",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/dir/tau-metrics-x-0.bp"), "{err}");
}

#[test]
fn dump_of_a_truncated_stream_ends_within_its_step_timeout() {
    // The metadata promises data that `data.0` no longer holds: ADIOS2's
    // read waits for it forever; `dump` gives up after --step-timeout.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    run_ok(
        std::process::Command::new(exe())
            .args(["synth", "--steps", "3", "--ranks", "1", "--out"])
            .arg(&data),
    );
    let stream = data.join("tau-metrics-demo-0.bp");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(stream.join("data.0"))
        .unwrap();
    f.set_len(100).unwrap();
    let start = Instant::now();
    let out = std::process::Command::new(exe())
        .args(["dump", "--step-timeout", "2"])
        .arg(&stream)
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(30), "bounded time");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("made no progress for 2."), "{err}");
    assert!(err.contains("truncated"), "{err}");
}
