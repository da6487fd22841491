//! `run --algorithm model` under mpirun: labels and provenance identical
//! at 1, 2 and 4 AD ranks, predictions recorded beside the runtimes of
//! modelled functions, the models kept in the file, and a model that reads
//! something that is not a feature refused before the first step.

mod common;

use std::path::Path;
use std::process::Command;

use chimbuko_mpi::provenance::read::Provenance;
use chimbuko_mpi::provenance::read_model::read_model_detector;
use chimbuko_mpi::provenance::records::LABEL_ANOMALY;
use common::*;

/// `compute` from its instruction counter, `MPI_Isend` from its bytes.
fn write_models(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("0000-compute.json"),
        r#"{"format": "chimbuko-mpi-model", "version": 1, "target": "exclusive_us",
            "metrics": ["counter:PAPI_TOT_INS"], "rotation": [[1.0]],
            "clusters": [{"centre": [], "terms": [{"function": "1 0 1", "weight": 0.00025}]}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("0001-isend.json"),
        r#"{"format": "chimbuko-mpi-model", "version": 1,
            "metrics": ["bytes_sent"], "rotation": [[1.0]],
            "clusters": [{"centre": [], "terms": [{"function": "0", "weight": 1.0},
                                                  {"function": "1 0 1", "weight": 0.00007}]}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("index.json"),
        r#"{"models": [{"function": "compute", "file": "0000-compute.json"},
                       {"function": "MPI_Isend", "file": "0001-isend.json"}]}"#,
    )
    .unwrap();
}

fn run_cmd(np: usize, data: &Path, models: &Path, out: &Path) -> Command {
    let mut c = mpirun(np);
    c.arg(exe())
        .args(["run", "--quiet", "--input"])
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .args(["--algorithm", "model", "--models"])
        .arg(models)
        .arg("--out")
        .arg(out)
        .args(["--flush-steps", "2"]);
    c
}

/// The demo scenario (`steps` steps of `events` events) and the models of
/// [`write_models`], in `dir`.
fn demo_with_models(
    dir: &Path,
    steps: u32,
    events: u32,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let data = dir.join("data");
    run_ok(
        Command::new(exe())
            .arg("synth")
            .arg("--out")
            .arg(&data)
            .args([
                "--steps",
                &steps.to_string(),
                "--events-per-step",
                &events.to_string(),
            ]),
    );
    let models = dir.join("models");
    write_models(&models);
    (data, models)
}

#[test]
fn model_detector_labels_do_not_depend_on_the_number_of_ad_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let (data, models) = demo_with_models(dir.path(), 5, 2000);
    let mut seen = Vec::new();
    for np in [1usize, 2, 4] {
        let out = dir.path().join(format!("prov-{np}.h5"));
        let labels = dir.path().join(format!("labels-{np}"));
        run_ok(
            run_cmd(np, &data, &models, &out)
                .arg("--labels-out")
                .arg(&labels),
        );
        let p = Provenance::load(&out).unwrap();
        assert_eq!(p.attrs["algorithm"], "model");
        let params: serde_json::Value = serde_json::from_str(&p.attrs["algorithm_params"]).unwrap();
        assert_eq!(params["algorithm"], "model");
        assert_eq!(params["model_fallback"], "modal");

        // The models used, as JSON, by function.
        let docs = read_model_detector(&out).unwrap();
        let names: Vec<&str> = docs.iter().map(|d| d.function.as_str()).collect();
        assert_eq!(names, ["MPI_Isend", "compute"]);
        assert_eq!(docs[1].metrics, ["counter:PAPI_TOT_INS"]);
        assert_eq!(docs[0].target, "exclusive_us");
        let j: serde_json::Value = serde_json::from_str(&docs[1].json).unwrap();
        assert_eq!(j["format"], "chimbuko-mpi-model");

        // Records of modelled functions carry the prediction and the ratio;
        // the others NaN.
        let anomalies = &p.collections[0].records;
        let compute: Vec<_> = anomalies
            .iter()
            .filter(|r| r.func.as_str() == "compute" && r.label == LABEL_ANOMALY)
            .collect();
        assert!(!compute.is_empty(), "the 10x compute calls are found");
        for r in &compute {
            assert!(r.model_prediction_us > 100.0, "{}", r.model_prediction_us);
            let ratio = r.runtime_exclusive as f64 / r.model_prediction_us;
            assert!(
                (r.model_ratio - ratio).abs() < 1e-6,
                "{} vs {ratio}",
                r.model_ratio
            );
            assert!(r.model_ratio > 3.0, "{}", r.model_ratio);
        }
        for r in anomalies.iter().chain(&p.collections[1].records) {
            let modelled = matches!(r.func.as_str(), "compute" | "MPI_Isend");
            assert_eq!(
                r.model_prediction_us.is_finite(),
                modelled,
                "{}",
                r.func.as_str()
            );
            assert_eq!(r.model_ratio.is_finite(), modelled);
        }
        // The model snapshots of modelled functions are of the ratios (ppm).
        let m = p
            .ad_model
            .iter()
            .find(|m| m.func.as_str() == "compute")
            .unwrap();
        assert!(m.mean > 0.5e6 && m.mean < 2e6, "{}", m.mean);

        seen.push((
            sorted_labels(&labels),
            invariant_records(&p, 0),
            invariant_records(&p, 1),
        ));
    }
    for (np, s) in [(2, &seen[1]), (4, &seen[2])] {
        assert_eq!(s.0, seen[0].0, "labels at {np} AD ranks");
        assert_eq!(s.1, seen[0].1, "anomalies at {np} AD ranks");
        assert_eq!(s.2, seen[0].2, "normal samples at {np} AD ranks");
    }
}

#[test]
fn a_model_of_something_that_is_not_a_feature_stops_the_run_before_the_first_step() {
    let dir = tempfile::tempdir().unwrap();
    let (data, models) = demo_with_models(dir.path(), 2, 500);
    std::fs::write(
        models.join("0001-isend.json"),
        r#"{"format": "chimbuko-mpi-model", "version": 1, "target": "exclusive_us",
            "metrics": ["message_size"], "rotation": [[1.0]],
            "clusters": [{"centre": [], "terms": [{"function": "0", "weight": 1.0}]}]}"#,
    )
    .unwrap();
    let out = dir.path().join("prov.h5");
    let o = run_cmd(2, &data, &models, &out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("0001-isend.json"), "{err}");
    assert!(err.contains("\"message_size\""), "{err}");
    assert!(!out.exists(), "stopped before the file was created");
    // Without --models the algorithm says what it needs.
    let o = mpirun(1)
        .arg(exe())
        .args(["run", "--quiet", "--algorithm", "model", "--input"])
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .arg("--no-provenance")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--models"));
}
