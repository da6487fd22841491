//! `synth` writes TAU streams with ADIOS2; our reader must return every row
//! and attribute exactly, for BP4, BP5 and SST.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use chimbuko_mpi::synth::{generate_rank, stream_path, write_rank, Scenario, DEMO_SCENARIO};
use chimbuko_mpi::trace::adios::Engine;
use chimbuko_mpi::trace::format::{parse_attribute, Attribute};
use common::*;

fn small_demo() -> Scenario {
    let mut sc = Scenario::from_toml(DEMO_SCENARIO).unwrap();
    sc.ranks = 3;
    sc.steps = 5;
    sc.events_per_step = 1500;
    sc
}

fn key_of(a: &Attribute) -> String {
    format!("{a:?}")
}

fn roundtrip(engine: Engine) {
    let dir = tempfile::tempdir().unwrap();
    let sc = small_demo();
    for rank in 0..sc.ranks {
        let path = stream_path(dir.path(), "tau-metrics", &sc.binary, rank);
        let report = write_rank(&sc, rank, &path, engine, vec![], None).unwrap();
        let (expected, truth) = generate_rank(&sc, rank);
        assert_eq!(report.truth, truth, "ground truth is deterministic");
        let (steps, reader) = read_all(&path, reader_options(Engine::BPFile));
        assert_eq!(steps.len(), expected.len(), "{engine}: step count");
        let mut defined: BTreeMap<String, Attribute> = BTreeMap::new();
        let mut seen: BTreeMap<String, Attribute> = BTreeMap::new();
        for (got, want) in steps.iter().zip(&expected) {
            assert!(
                got.issues.is_empty(),
                "{engine}: unexpected issues {:?}",
                got.issues
            );
            assert_eq!(
                got.func_rows(),
                want.funcs,
                "{engine}: rank {rank} step {} function rows",
                got.step
            );
            assert_eq!(
                got.comms, want.comms,
                "{engine}: rank {rank} step {} comm rows",
                got.step
            );
            assert_eq!(
                got.counters, want.counters,
                "{engine}: rank {rank} step {} counter rows",
                got.step
            );
            assert_eq!(got.declared.timer_events, Some(want.funcs.len() as u64));
            for (k, v) in &want.new_attributes {
                let a = parse_attribute(k, v);
                defined.insert(key_of(&a), a);
            }
            for a in &got.new_attributes {
                // Nothing may appear before the writer defined it.
                assert!(
                    defined.contains_key(&key_of(a)),
                    "{engine}: {a:?} read before it was written"
                );
                assert!(
                    seen.insert(key_of(a), a.clone()).is_none(),
                    "{engine}: {a:?} reported twice"
                );
            }
        }
        assert_eq!(seen, defined, "{engine}: every attribute read exactly once");
        assert!(reader.dictionary().functions.iter().flatten().count() == sc.functions.len());
        assert!(report.func_rows > 0 && report.comm_rows > 0 && report.counter_rows > 0);
    }
}

#[test]
fn roundtrip_bp4() {
    roundtrip(Engine::BP4);
}

#[test]
fn roundtrip_bp5() {
    roundtrip(Engine::BP5);
}

#[test]
fn synth_is_deterministic_and_ranks_differ() {
    let sc = small_demo();
    let (a, ta) = generate_rank(&sc, 1);
    let (b, tb) = generate_rank(&sc, 1);
    assert_eq!(ta, tb);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.funcs, y.funcs);
    }
    // Like TAU, a rank numbers its functions in the order it first calls
    // them: the indices of its first step are 0, 1, 2, ...
    let timers = |s: &chimbuko_mpi::trace::writer::StepData| {
        let mut v: Vec<(u64, String)> = s
            .new_attributes
            .iter()
            .filter_map(|(k, name)| Some((k.strip_prefix("timer ")?.parse().ok()?, name.clone())))
            .collect();
        v.sort();
        v
    };
    let first = timers(&a[0]);
    assert!(!first.is_empty());
    assert!(first.iter().enumerate().all(|(i, t)| t.0 == i as u64));
    // Ranks that call functions in different orders (here each favours
    // other members of a family) number them differently.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/manyfuncs.toml"),
    )
    .unwrap()
    .replace("count = 100000", "count = 1000");
    let mut fam = Scenario::from_toml(&text).unwrap();
    (fam.steps, fam.events_per_step) = (1, 400);
    let (r0, _) = generate_rank(&fam, 0);
    let (r1, _) = generate_rank(&fam, 1);
    assert_ne!(timers(&r0[0]), timers(&r1[0]));
}

#[test]
fn ground_truth_matches_the_trace() {
    // Every truth row is a real execution: an ENTRY and EXIT of that
    // function on that rank/thread at those timestamps.
    let sc = small_demo();
    for rank in 0..sc.ranks {
        let (steps, truth) = generate_rank(&sc, rank);
        let mut names = BTreeMap::new();
        for s in &steps {
            for (k, v) in &s.new_attributes {
                if let Attribute::Function { index, name } = parse_attribute(k, v) {
                    names.insert(index, name);
                }
            }
        }
        let rows: Vec<_> = steps
            .iter()
            .flat_map(|s| s.funcs.iter().map(move |r| (s, r)))
            .collect();
        for t in &truth {
            let find = |et: u64, ts: u64| {
                rows.iter().any(|(_, r)| {
                    r[2] == t.thread && r[3] == et && r[5] == ts && names[&r[4]] == t.function
                })
            };
            assert!(
                find(0, t.entry_us) && find(1, t.exit_us),
                "truth row {t:?} not in trace"
            );
            assert!(t.exclusive_us <= t.exit_us - t.entry_us);
        }
        assert!(truth.iter().all(|t| t.rank == rank));
    }
    let all: usize = (0..sc.ranks).map(|r| generate_rank(&sc, r).1.len()).sum();
    assert!(all > 10, "the demo injects anomalies ({all})");
}

#[test]
fn sst_writer_process_and_reader_stream_steps() {
    let dir = tempfile::tempdir().unwrap();
    let mut sc = small_demo();
    sc.ranks = 1;
    sc.steps = 4;
    let toml_path = dir.path().join("s.toml");
    std::fs::write(&toml_path, DEMO_SCENARIO).unwrap();
    let mut writer = Command::new(exe())
        .args(["synth"])
        .arg(&toml_path)
        .arg("--out")
        .arg(dir.path())
        .args([
            "--engine",
            "SST",
            "--ranks",
            "1",
            "--steps",
            "4",
            "--events-per-step",
            "1500",
            "--pace-ms",
            "50",
        ])
        .spawn()
        .expect("start SST writer");
    let path = stream_path(dir.path(), "tau-metrics", &sc.binary, 0);
    // The reader opens the stream name (the writer adds `.sst` for its
    // contact file) and waits for the writer to appear.
    let (steps, _) = read_all(&path, reader_options(Engine::SST));
    let status = writer.wait().unwrap();
    assert!(status.success(), "SST writer failed");
    let (expected, _) = generate_rank(&sc, 0);
    assert_eq!(steps.len(), 4);
    for (got, want) in steps.iter().zip(&expected) {
        assert_eq!(got.func_rows(), want.funcs);
        assert_eq!(got.comms, want.comms);
        assert_eq!(got.counters, want.counters);
    }
    assert!(dir.path().join("truth-demo.csv").exists());
}
