//! Replays, without libFuzzer, every input kept from fuzzing
//! (`tests/fuzz-regressions/<target>/`) and the seed corpus
//! (`fuzz/seeds/<target>/`) through the harness the fuzz targets use
//! (`chimbuko_mpi::fuzzing`), so CI re-runs them. See `scripts/fuzz.sh` and
//! `docs/reliability.md`.
//!
//! The seed corpus is written by the ignored test `write_seed_corpus`:
//! `cargo test --test fuzz_regressions -- --ignored write_seed_corpus`.

mod common;

use std::path::{Path, PathBuf};

use chimbuko_mpi::fuzzing::{self, FuzzInput, FuzzStep, T0};
use chimbuko_mpi::trace::adios::Engine;
use chimbuko_mpi::trace::dictionary::MAX_NAME_INDEX;
use chimbuko_mpi::trace::format::Attribute;
use chimbuko_mpi::trace::issues::IssueKind;
use chimbuko_mpi::trace::step::{RawStep, TraceStep};
use chimbuko_mpi::trace::tau::StepValidator;
use common::*;

const TARGETS: [&str; 2] = ["steps", "parse"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir`, sorted (none if it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.is_file());
    v.sort();
    v
}

fn replay(target: &str, dir: &Path) -> usize {
    let inputs = files(&dir.join(target));
    for path in &inputs {
        let data = std::fs::read(path).unwrap();
        // A panic names the input, so the failing file is easy to find.
        let run = std::panic::catch_unwind(|| match target {
            "steps" => {
                fuzzing::run_steps(&data);
            }
            "parse" => fuzzing::run_parse(&data),
            _ => unreachable!(),
        });
        assert!(run.is_ok(), "{} fails", path.display());
    }
    inputs.len()
}

#[test]
fn kept_crashing_inputs_still_pass() {
    for target in TARGETS {
        replay(target, &root().join("tests/fuzz-regressions"));
    }
}

#[test]
fn seed_corpus_passes() {
    let n: usize = TARGETS
        .iter()
        .map(|t| replay(t, &root().join("fuzz/seeds")))
        .sum();
    assert!(n >= 5, "seed corpus missing ({n} files)");
}

/// Found by the `steps` target: `timer 16777215` was accepted (the cap was
/// 2^24), sizing the stream's name tables to 16M entries: ~0.5 GB and
/// 0.7 s per step from one attribute. Now such an index is over
/// `MAX_NAME_INDEX`, counted as malformed and not stored.
#[test]
fn a_huge_name_index_is_rejected_without_growing_the_dictionary() {
    let data =
        std::fs::read(root().join("tests/fuzz-regressions/steps/timer-index-just-below-old-cap"))
            .unwrap();
    let input = fuzzing::decode(&data);
    assert_eq!(input.steps[0].attributes[0].0, "timer 16777215");
    fuzzing::check(&input);

    let mut v = StepValidator::new(0, Some(1));
    for index in [(1 << 24) - 1, MAX_NAME_INDEX, u64::MAX] {
        let step = v.accept(RawStep {
            new_attributes: vec![
                Attribute::Function {
                    index,
                    name: "f".into(),
                },
                Attribute::Counter {
                    index,
                    name: "c".into(),
                },
            ],
            ..Default::default()
        });
        assert_eq!(step.issues.count(IssueKind::MalformedAttribute), 2);
    }
    assert!(v.dictionary().functions.is_empty() && v.dictionary().counters.is_empty());
    let step = v.accept(RawStep {
        new_attributes: vec![Attribute::Function {
            index: MAX_NAME_INDEX - 1,
            name: "f".into(),
        }],
        ..Default::default()
    });
    assert!(step.issues.is_empty());
    assert_eq!(v.dictionary().function(MAX_NAME_INDEX - 1), Some("f"));
}

// ---------------------------------------------------------------------
// Seed corpus

fn attrs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Nested calls, messages, counters, a GPU kernel paired with its launch
/// and a call left open across steps (standard attributes: timers f0..f11,
/// ENTRY/EXIT/SEND/RECV = 0..3, counter 0 = Correlation ID).
fn nested_with_gpu() -> FuzzInput {
    let f = |thread, et, func, ts| [0, 1, thread, et, func, T0 + ts];
    FuzzInput {
        preamble: true,
        expected_rank: Some(1),
        program_idx: 1,
        steps: vec![
            FuzzStep {
                attributes: attrs(&[
                    ("MetaData:1:2:CUDA Context", "\"1\""),
                    ("MetaData:1:2:CUDA Stream", "\"7\""),
                ]),
                funcs: vec![
                    f(0, 0, 0, 0),
                    f(0, 0, 1, 3),
                    f(0, 0, 2, 5),
                    f(0, 1, 2, 9),
                    f(0, 1, 1, 20),
                    f(2, 0, 5, 22),
                ],
                comms: vec![
                    [0, 1, 0, 2, 1, 0, 4096, T0 + 4],
                    [0, 1, 0, 3, 1, 2, 64, T0 + 6],
                ],
                counters: vec![[0, 1, 0, 0, 5, T0 + 7], [0, 1, 2, 0, 5, T0 + 23]],
            },
            FuzzStep {
                funcs: vec![f(2, 1, 5, 30), f(0, 0, 3, 40), f(0, 1, 3, 45)],
                comms: vec![[0, 1, 0, 2, 1, 0, 8, T0 + 42]],
                ..Default::default()
            },
            FuzzStep {
                funcs: vec![f(0, 1, 0, 60)],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

/// Everything wrong at once: garbage columns, unknown indices, malformed
/// attributes, EXIT without ENTRY, mismatched EXITs, out-of-order rows and
/// absurd timestamps.
fn broken() -> FuzzInput {
    let f = |thread, et, func, ts| [0, 0, thread, et, func, ts];
    FuzzInput {
        preamble: true,
        expected_rank: Some(0),
        tight_limits: true,
        steps: vec![
            FuzzStep {
                attributes: attrs(&[
                    ("timer x", "bad"),
                    ("MetaData:a:0:Host", "h"),
                    ("event_type 4", "BOGUS"),
                    ("counter 99999999999", "c"),
                ]),
                funcs: vec![
                    f(0, 1, 3, T0),                 // EXIT without ENTRY
                    f(0, 0, 1, T0 + 10),            //
                    f(0, 0, 2, T0 + 11),            //
                    f(0, 1, 1, T0 + 12),            // closes f2 implicitly
                    f(0, 1, 7, T0 + 13),            // not open
                    [1 << 40, 0, 0, 0, 1, T0 + 14], // bad program
                    [0, 9, 0, 0, 1, T0 + 15],       // bad rank
                    [0, 0, u64::MAX, 0, 1, T0 + 16],
                    f(0, 9, 1, T0 + 17),   // unknown event type
                    f(0, 0, 999, T0 + 18), // unknown function
                    f(0, 0, 4, T0 + 30),
                    f(0, 1, 4, T0 + 25), // out of order
                    f(1, 0, 4, u64::MAX),
                    f(1, 1, 4, 0), // exit before entry
                ],
                comms: vec![[0, 0, 0, 2, 0, 1, 18_446_744_071_900_455_069, T0 + 20]],
                counters: vec![[0, 0, 0, 42, 1, T0 + 21], [0, 0, 3, 2, 1, 0]],
            },
            FuzzStep {
                funcs: vec![f(0, 0, 5, T0 + 1), f(0, 1, 5, T0 + 2)], // older than step 0
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

/// The first steps of the real TAU trace (`tests/fixtures/tau/`), cut to a
/// few KB: its name attributes spread over leading attribute-only steps,
/// then rows of the first two data steps.
fn real_tau() -> FuzzInput {
    let path = fixture_dir().join("tau-metrics-main1-0.bp");
    let (steps, _) = read_all(&path, reader_options(Engine::BP4));
    let keys = |s: &TraceStep| -> Vec<(String, String)> {
        s.new_attributes
            .iter()
            .filter_map(|a| match a {
                Attribute::Function { index, name } => Some((format!("timer {index}"), name)),
                Attribute::EventType { index, name } => Some((format!("event_type {index}"), name)),
                Attribute::Counter { index, name } if *index < 6 => {
                    Some((format!("counter {index}"), name))
                }
                _ => None,
            })
            .map(|(k, v)| (k, v.clone()))
            .collect()
    };
    let mut input = FuzzInput {
        expected_rank: Some(0),
        ..Default::default()
    };
    for chunk in keys(&steps[0]).chunks(7) {
        input.steps.push(FuzzStep {
            attributes: chunk.to_vec(),
            ..Default::default()
        });
    }
    for s in &steps[..2] {
        input.steps.push(FuzzStep {
            funcs: s.func_rows().into_iter().take(40).collect(),
            comms: s.comms.iter().take(4).copied().collect(),
            counters: s
                .counters
                .iter()
                .filter(|r| r[3] < 6)
                .take(6)
                .copied()
                .collect(),
            ..Default::default()
        });
    }
    input
}

fn seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let mut v = vec![
        (
            "steps",
            "nested-with-gpu",
            fuzzing::encode(&nested_with_gpu()),
        ),
        ("steps", "broken", fuzzing::encode(&broken())),
        ("steps", "real-tau-main1-0", fuzzing::encode(&real_tau())),
    ];
    for (name, text) in [
        (
            "timer",
            "timer 4\ncomponent1_function(int) [{main.C} {19,0}]",
        ),
        ("metadata", "MetaData:0:2:CUDA Stream\n\"7\""),
        ("event-type", "event_type 1\nEXIT"),
        ("event-id", "3:12:456"),
        ("stream-name", "tau-metrics-main1-3.bp.sst"),
    ] {
        v.push(("parse", name, text.as_bytes().to_vec()));
    }
    v
}

/// Seed inputs say what they were built from (checked, not only written).
#[test]
fn seed_inputs_decode_to_what_they_encode() {
    for input in [nested_with_gpu(), broken()] {
        assert_eq!(fuzzing::decode(&fuzzing::encode(&input)), input);
        fuzzing::check(&input);
    }
    let o = fuzzing::check(&nested_with_gpu());
    assert_eq!(o.gpu_pairs, 2, "{o:?}"); // one pair in each of the two replays
    let real = real_tau();
    assert_eq!(
        fuzzing::decode(&fuzzing::encode(&real)).steps.len(),
        real.steps.len()
    );
    let o = fuzzing::check(&real);
    assert!(o.executions > 20, "{o:?}");
}

#[test]
#[ignore = "writes fuzz/seeds/; run by hand after changing the seeds or the byte layout"]
fn write_seed_corpus() {
    for (target, name, data) in seeds() {
        let dir = root().join("fuzz/seeds").join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), data).unwrap();
    }
}
