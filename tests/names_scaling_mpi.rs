//! Name agreement at scale: the bytes a rank receives to agree on names
//! must not grow with the number of AD ranks that offer the same names
//! (an allgather hands every rank P copies), and the global numbering,
//! labels, models and provenance must not depend on the number of ranks,
//! for every detector. Measured by
//! the collectives' own byte counters (`collective_bytes_received_per_step`
//! of the run summary), under mpirun with up to 16 AD ranks. Two names
//! with the same hash must both be agreed (the fallback to the plain
//! allgather).

mod common;

use std::path::Path;
use std::process::Command;

use chimbuko_mpi::provenance::read::Provenance;
use common::*;

/// 16 streams whose every rank calls the same 3,000 functions.
const SPMD: &str = r#"
seed = 7
binary = "spmd"
ranks = 16
steps = 2
events_per_step = 14000
root = "step"
shuffle_indices = true

[[function]]
name = "main"
runtime = { dist = "constant", value = 5 }

[[function]]
name = "step"
runtime = { dist = "normal", mean = 40, std = 4 }
children = [{ function = "kernel_with_a_long_templated_name_typical_of_cxx", calls = 50 }]

[[family]]
name = "kernel_with_a_long_templated_name_typical_of_cxx"
count = 3000
runtime = { dist = "normal", mean = 12, std = 1 }
zipf = 0.0
"#;

/// The SPMD scenario's streams, written under `dir`: their directory.
fn synth_spmd(dir: &Path) -> std::path::PathBuf {
    let scenario = dir.join("spmd.toml");
    std::fs::write(&scenario, SPMD).unwrap();
    let data = dir.join("data");
    synth_scenario(&scenario, &data);
    data
}

/// The run summary of `np` AD ranks on `data`, with the label files.
fn summary(np: usize, data: &Path, labels: &Path) -> serde_json::Value {
    let sum = data.join(format!("summary-{np}.json"));
    run_ok(
        mpirun(np)
            .arg(exe())
            .args(["run", "--quiet", "--no-provenance", "--input"])
            .arg(data.join("tau-metrics-spmd-{rank}.bp"))
            .arg("--summary-out")
            .arg(&sum)
            .arg("--labels-out")
            .arg(labels),
    );
    serde_json::from_str(&std::fs::read_to_string(&sum).unwrap()).unwrap()
}

#[test]
fn the_summary_says_of_functions_what_was_asked_and_stays_small_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let data = synth_spmd(dir.path());
    let mut sizes = Vec::new();
    for which in ["models", "counts", "none"] {
        let sum = dir.path().join(format!("summary-{which}.json"));
        let mut c = mpirun(1);
        c.arg(exe())
            .args(["run", "--quiet", "--no-provenance", "--input"])
            .arg(data.join("tau-metrics-spmd-{rank}.bp"))
            .arg("--summary-out")
            .arg(&sum);
        if which != "counts" {
            c.args(["--summary-functions", which]);
        }
        run_ok(&mut c);
        let text = std::fs::read_to_string(&sum).unwrap();
        sizes.push(text.len());
        let s: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(s["functions_written"], which);
        assert!(s["executions"].as_u64().unwrap() > 0);
        match which {
            "none" => assert!(s.get("functions").is_none()),
            _ => {
                let f = s["functions"].as_array().unwrap();
                assert!(f.len() > 3000, "{}", f.len());
                let kernels: u64 = f.iter().map(|x| x["executions"].as_u64().unwrap()).sum();
                assert_eq!(kernels, s["executions"].as_u64().unwrap());
                assert_eq!(f[0].get("model").is_some(), which == "models");
            }
        }
    }
    // The models are most of the bytes: the default leaves them out.
    assert!(sizes[0] > 4 * sizes[1], "models, counts, none: {sizes:?}");
    assert!(sizes[2] < 100_000, "{sizes:?}");
}

#[test]
fn received_name_bytes_stay_flat_from_2_to_16_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let data = synth_spmd(dir.path());
    let mut received = Vec::new();
    let mut reduce_received = Vec::new();
    let mut labels = Vec::new();
    let mut digests = Vec::new();
    for np in [2usize, 4, 16] {
        let dir_labels = dir.path().join(format!("labels-{np}"));
        let s = summary(np, &data, &dir_labels);
        received.push(
            s["collective_bytes_received_per_step"]["agree"]
                .as_f64()
                .unwrap(),
        );
        reduce_received.push(
            s["collective_bytes_received_per_step"]["reduce"]
                .as_f64()
                .unwrap(),
        );
        digests.push(s["model_digest"].as_str().unwrap().to_owned());
        labels.push(sorted_labels(&dir_labels));
    }
    // The model reduction and the sharing of the derived models do not grow
    // with the ranks either: each rank derives 1/P of the models and
    // receives the others' once (over the grid at 16 ranks), (P − 1)/P of
    // them, from half at 2 ranks to 15/16 at 16 (measured: +18 %).
    assert!(
        reduce_received[2] < 1.25 * reduce_received[0],
        "model reduction bytes received per step at 2, 4, 16 ranks: {reduce_received:?}"
    );
    // Every rank offers all 3,000 names in the first step. The union, as
    // it travels (8 bytes of program and length per name), averaged over
    // the 2 steps:
    let family = "kernel_with_a_long_templated_name_typical_of_cxx";
    let union: usize = (0..3000).map(|k| 8 + format!("{family}<{k}>").len()).sum();
    let unique_per_step = union as f64 / 2.0;
    // A rank receives the union (less what it publishes itself) and 8-byte
    // hashes: bounded by a constant of the names, whatever the number of
    // ranks. An allgather would deliver P - 1 copies (15 at 16 ranks).
    for (np, r) in [2, 4, 16].iter().zip(&received) {
        assert!(
            *r < 1.25 * unique_per_step,
            "{np} ranks: {r} bytes received per step for {unique_per_step} bytes of unique names"
        );
    }
    // The same global model and labels at every rank count.
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");
    assert!(labels.windows(2).all(|w| w[0] == w[1]));
}

/// 8 streams; each rank favours different members of a 2,000-function
/// family (`by_rank`), and rare members first appear in late steps.
const SUBSETS: &str = r#"
seed = 11
binary = "subsets"
ranks = 8
steps = 6
events_per_step = 1500
root = "step"

[[function]]
name = "main"
runtime = { dist = "constant", value = 5 }

[[function]]
name = "step"
runtime = { dist = "normal", mean = 40, std = 4 }
children = [{ function = "tmpl", calls = 12 }, { function = "exchange" }]

[[function]]
name = "exchange"
runtime = { dist = "lognormal", median = 30, sigma = 0.3 }

[[family]]
name = "tmpl"
count = 2000
runtime = { dist = "normal", mean = 12, std = 2 }
zipf = 1.0
by_rank = true

[[anomaly]]
function = "exchange"
rate = 0.01
factor = 6
"#;

/// A performance model of `exchange` (28 µs plus its call depth), for the
/// model detector.
fn write_exchange_model(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("0000-exchange.json"),
        r#"{"format": "chimbuko-mpi-model", "version": 1, "target": "exclusive_us",
            "metrics": ["depth"], "rotation": [[1.0]],
            "clusters": [{"centre": [], "terms": [{"function": "0", "weight": 28.0},
                                                  {"function": "1 0 1", "weight": 1.0}]}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("index.json"),
        r#"{"models": [{"function": "exchange", "file": "0000-exchange.json"}]}"#,
    )
    .unwrap();
}

/// What of a provenance file must not depend on the number of AD ranks:
/// the records (sorted: their order follows the ranks), and the global
/// tables — functions, statistics and final models, each histogram read
/// through its row (where it lies in `ad_model_hist` is bookkeeping).
fn provenance_digest(path: &Path) -> Vec<String> {
    let p = Provenance::load(path).unwrap();
    let mut out = Vec::new();
    for c in 0..p.collections.len() {
        out.extend(invariant_records(&p, c));
    }
    out.extend(p.functions.iter().map(|f| format!("{f:?}")));
    out.extend(p.func_stats.iter().map(|f| format!("{f:?}")));
    let hist = |all: &[u64], start: u64, len: u32| -> Vec<u64> {
        all[start as usize..start as usize + len as usize].to_vec()
    };
    for m in &p.ad_model {
        let mut row = *m;
        row.hist_start = 0;
        out.push(format!(
            "{row:?} {:?}",
            hist(&p.ad_model_hist, m.hist_start, m.hist_len)
        ));
    }
    for m in &p.model_params {
        out.push(format!(
            "{} {} {:?}",
            m.io_step,
            m.fid,
            hist(&p.model_params_hist, m.hist_start, m.hist_len)
        ));
    }
    out
}

#[test]
fn every_detector_gives_the_same_labels_models_and_provenance_at_1_2_4_and_8_ranks_with_late_names()
{
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("subsets.toml");
    std::fs::write(&scenario, SUBSETS).unwrap();
    let data = dir.path().join("data");
    synth_scenario(&scenario, &data);
    let models = dir.path().join("models");
    write_exchange_model(&models);
    for algorithm in ["modal", "sstd", "hbos", "copod", "model"] {
        let mut reference: Option<(Vec<String>, String, Vec<String>)> = None;
        for np in [1usize, 2, 4, 8] {
            let labels = dir.path().join(format!("{algorithm}-{np}"));
            let sum = dir.path().join(format!("{algorithm}-{np}.json"));
            let out = dir.path().join(format!("{algorithm}-{np}.h5"));
            let mut cmd = mpirun(np);
            cmd.arg(exe())
                .args(["run", "--quiet", "--algorithm", algorithm])
                .arg("--input")
                .arg(data.join("tau-metrics-subsets-{rank}.bp"))
                .arg("--labels-out")
                .arg(&labels)
                .arg("--summary-out")
                .arg(&sum)
                .arg("--out")
                .arg(&out)
                // Several writes of the global tables: rows of new and
                // changed functions only.
                .args(["--flush-steps", "2"]);
            if algorithm == "model" {
                cmd.arg("--models").arg(&models);
            }
            run_ok(&mut cmd);
            let s: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&sum).unwrap()).unwrap();
            let got = (
                sorted_labels(&labels),
                s["model_digest"].as_str().unwrap().to_owned(),
                provenance_digest(&out),
            );
            assert!(got.0.len() > 10_000, "{algorithm}: {} labels", got.0.len());
            assert!(
                got.2.len() > 2_000,
                "{algorithm}: {} provenance rows",
                got.2.len()
            );
            match &reference {
                None => reference = Some(got),
                Some(r) => {
                    assert_eq!(r.1, got.1, "{algorithm}: model at {np} ranks");
                    assert!(r.0 == got.0, "{algorithm}: labels at {np} ranks differ");
                    if let Some(k) =
                        (0..r.2.len().max(got.2.len())).find(|&k| r.2.get(k) != got.2.get(k))
                    {
                        panic!(
                            "{algorithm}: provenance at {np} ranks differs from 1 rank at row {k}:\n  {:?}\n  {:?}",
                            r.2.get(k),
                            got.2.get(k)
                        );
                    }
                }
            }
        }
    }
}

/// Two function names of 16 bytes with the same 64-bit name hash (the
/// byte hash under `name_hash` multiplies the two 8-byte halves, offset by
/// constants; these halves were searched so that one product equals the
/// other, 3·a times b/3).
const CLASHING: [&str; 2] = ["4n8sznN>QCkU0HUw", "f<qfPdlkCcyqqaw2"];

/// Four application ranks that call `kernel` under the name given.
fn clash_scenario(kernel: &str) -> String {
    format!(
        r#"
seed = 5
binary = "clash"
ranks = 4
steps = 4
events_per_step = 600
root = "step"

[[function]]
name = "main"
runtime = {{ dist = "constant", value = 5 }}

[[function]]
name = "step"
runtime = {{ dist = "normal", mean = 40, std = 4 }}
children = [{{ function = "{kernel}", calls = 8 }}]

[[function]]
name = "{kernel}"
runtime = {{ dist = "normal", mean = 20, std = 2 }}

[[anomaly]]
function = "{kernel}"
rate = 0.02
factor = 8
"#
    )
}

/// Two streams offer, in the same step, two different names with one
/// hash. The hashed agreement publishes one name per hash, so one of them
/// would be lost; every rank checks its own names against the union and
/// the step falls back to the plain allgather. Both names must reach the
/// global table, the run must say that it fell back, and nothing may
/// depend on the number of AD ranks.
#[test]
fn names_that_share_a_hash_are_both_agreed_at_any_rank_count() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Streams 0 and 1 from a run that calls the first name, 2 and 3 from
    // one that calls the second: the AD ranks read blocks of streams, so
    // at 2 and 4 AD ranks some ranks offer only the one name and others
    // only the other.
    for (k, kernel) in CLASHING.iter().enumerate() {
        let scenario = dir.path().join(format!("clash-{k}.toml"));
        std::fs::write(&scenario, clash_scenario(kernel)).unwrap();
        let out = dir.path().join(format!("synth-{k}"));
        run_ok(
            Command::new(exe())
                .arg("synth")
                .arg(&scenario)
                .arg("--out")
                .arg(&out),
        );
        // A BP "file" is a directory: moved whole into the data folder.
        std::fs::create_dir_all(&data).unwrap();
        for rank in [2 * k, 2 * k + 1] {
            let stream = format!("tau-metrics-clash-{rank}.bp");
            std::fs::rename(out.join(&stream), data.join(&stream)).unwrap();
        }
    }
    let mut reference: Option<(Vec<String>, String, Vec<String>)> = None;
    for np in [1usize, 2, 4] {
        let labels = dir.path().join(format!("labels-{np}"));
        let sum = dir.path().join(format!("summary-{np}.json"));
        let h5 = dir.path().join(format!("clash-{np}.h5"));
        let out = mpirun(np)
            .arg(exe())
            .args(["run", "--input"])
            .arg(data.join("tau-metrics-clash-{rank}.bp"))
            .arg("--labels-out")
            .arg(&labels)
            .arg("--summary-out")
            .arg(&sum)
            .arg("--out")
            .arg(&h5)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{np} AD ranks:\n{stderr}");
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&sum).unwrap()).unwrap();
        // One rank agrees alone (nothing to lose); from two ranks on, the
        // first step's names went the slow way, and the run says so.
        let fell_back = s["name_hash_collisions"].as_u64().unwrap();
        let warned = stderr.contains("share a 64-bit name hash");
        if np == 1 {
            assert_eq!((fell_back, warned), (0, false), "{stderr}");
        } else {
            assert_eq!((fell_back, warned), (1, true), "{np} AD ranks:\n{stderr}");
        }
        let p = Provenance::load(&h5).unwrap();
        let names: Vec<&str> = p.functions.iter().map(|f| f.name.as_str()).collect();
        for name in CLASHING {
            assert!(names.contains(&name), "{np} AD ranks: {names:?}");
        }
        // Each name keeps its own executions: two streams of 4 steps.
        let count = |name: &str| {
            let fid = p
                .functions
                .iter()
                .find(|f| f.name.as_str() == name)
                .unwrap()
                .fid;
            p.func_stats
                .iter()
                .find(|r| r.fid == fid)
                .unwrap()
                .inclusive_count
        };
        assert!(count(CLASHING[0]) > 1000, "{}", count(CLASHING[0]));
        assert!(count(CLASHING[1]) > 1000, "{}", count(CLASHING[1]));
        let got = (
            sorted_labels(&labels),
            s["model_digest"].as_str().unwrap().to_owned(),
            provenance_digest(&h5),
        );
        match &reference {
            None => reference = Some(got),
            Some(r) => {
                assert_eq!(r.1, got.1, "model at {np} AD ranks");
                assert!(r.0 == got.0, "labels at {np} AD ranks differ");
                assert!(r.2 == got.2, "provenance at {np} AD ranks differs");
            }
        }
    }
}
