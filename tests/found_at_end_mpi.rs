//! Early anomalies recovered at the end of the run: an execution judged
//! normal while its function's model was young (SSTD cannot flag one
//! outlier among fewer than 38 executions) but anomalous against the final
//! model is written to the `anomalies` collection with its full provenance
//! (call stack, window), marked as found at the end: `label` normal (its
//! in-situ label), `final_label` anomaly. The same records for 1, 2 and 4
//! AD ranks; none with `--no-final-relabel`.

mod common;

use std::path::Path;

use chimbuko_mpi::provenance::read::Provenance;
use chimbuko_mpi::trace::adios::Engine;
use chimbuko_mpi::trace::writer::{StepData, TauStreamWriter};
use common::*;

const T0: u64 = 1_700_000_000_000_000;
const MAIN: u64 = 0;
const WORK: u64 = 1;

/// One stream: `main` open over the run, `work` called in it; step 0 has
/// 20 calls of about 100 µs and one of 1000 µs, steps 1-5 have 200 calls
/// of about 100 µs each.
fn write_stream(dir: &Path, rank: u64) {
    let f = |et: u64, func: u64, ts: u64| [0, rank, 0, et, func, ts];
    let attrs: Vec<(String, String)> = [
        ("event_type 0", "ENTRY"),
        ("event_type 1", "EXIT"),
        ("timer 0", "main"),
        ("timer 1", "work"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let path = dir.join(format!("tau-metrics-early-{rank}.bp"));
    let mut w = TauStreamWriter::create(&path, Engine::BP4, vec![]).unwrap();
    let mut t = T0;
    for step in 0..6u64 {
        let mut s = StepData::default();
        if step == 0 {
            s.new_attributes = attrs.clone();
            s.funcs.push(f(0, MAIN, t));
            t += 1;
        }
        let calls = if step == 0 { 21 } else { 200 };
        for k in 0..calls {
            let dur = if step == 0 && k == 10 {
                1000
            } else {
                100 + (k + rank) % 5
            };
            s.funcs.push(f(0, WORK, t));
            s.funcs.push(f(1, WORK, t + dur));
            t += dur + 3;
        }
        if step == 5 {
            s.funcs.push(f(1, MAIN, t));
        }
        w.write_step(&s).unwrap();
    }
    w.close().unwrap();
}

fn run(dir: &Path, np: usize, extra: &[&str]) -> Provenance {
    let out = dir.join(format!("prov-{np}-{}.h5", extra.len()));
    let mut c = mpirun(np);
    c.arg(exe())
        .args(["run", "--quiet", "--algorithm", "sstd", "--input"])
        .arg(dir.join("tau-metrics-early-{rank}.bp"))
        .arg("--out")
        .arg(&out)
        .args(extra);
    run_ok(&mut c);
    Provenance::load(&out).unwrap()
}

/// The records found at the end: (event id, io step, runtime, call stack
/// rows, window rows).
fn found_at_end(p: &Provenance) -> Vec<(String, u64, u64, u32, u32)> {
    let mut v: Vec<_> = p.collections[0]
        .records
        .iter()
        .filter(|r| r.label == 1 && r.final_label == -1)
        .map(|r| {
            (
                r.event_id.as_str().to_string(),
                r.io_step,
                r.runtime_exclusive,
                r.call_stack_len,
                r.exec_window_len,
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn an_outlier_judged_against_a_young_model_is_found_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    for rank in 0..4 {
        write_stream(dir.path(), rank);
    }
    let p1 = run(dir.path(), 1, &[]);
    let found = found_at_end(&p1);
    // One per stream: the 1000 µs call of step 0, with its call stack
    // (itself and main) and its window of neighbours.
    assert_eq!(found.len(), 4, "{found:?}");
    for (id, step, runtime, stack, window) in &found {
        assert_eq!((*step, *runtime), (0, 1000), "{id}");
        assert!(*stack >= 2, "{id}: call stack of {stack} rows");
        assert!(*window >= 5, "{id}: window of {window} rows");
    }
    // The stack and window rows point at the record.
    let a = &p1.collections[0];
    for (k, r) in a.records.iter().enumerate() {
        let s = r.call_stack_start as usize;
        for row in &a.call_stack[s..s + r.call_stack_len as usize] {
            assert_eq!(row.record, k as u64);
        }
        let w = r.exec_window_start as usize;
        for row in &a.exec_window[w..w + r.exec_window_len as usize] {
            assert_eq!(row.record, k as u64);
        }
    }
    // The same records whatever the number of AD ranks.
    for np in [2, 4] {
        let p = run(dir.path(), np, &[]);
        assert_eq!(found_at_end(&p), found, "{np} AD ranks");
    }
    // Without the end-of-run re-judgement, nothing is found at the end.
    let off = run(dir.path(), 1, &["--no-final-relabel"]);
    assert!(found_at_end(&off).is_empty());
}
