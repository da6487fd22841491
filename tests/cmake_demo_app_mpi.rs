//! The C demo application of `cmake/demo-app` (a trace writer that is not
//! ours, built the way HPC codes are built) analysed by chimbuko-mpi:
//! in one MPMD launch over SST, and post hoc from BP4 files.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Configures and builds the demo application; returns its path.
fn build_app(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let build = dir.join("build");
    let python = std::env::var("PYTHON")
        .unwrap_or_else(|_| root.join(".venv/bin/python").display().to_string());
    run_ok(
        Command::new("cmake")
            .arg("-S")
            .arg(root.join("cmake/demo-app"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DPython_EXECUTABLE={python}")),
    );
    run_ok(Command::new("cmake").arg("--build").arg(&build));
    build.join("tau_like_app")
}

fn summary(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn c_application_in_situ_and_post_hoc() {
    let dir = tempfile::tempdir().unwrap();
    let app = build_app(dir.path());

    // In situ: one mpirun, the application first, then the AD.
    let live = dir.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let sum = dir.path().join("live.json");
    let mut c = mpirun(2);
    c.arg(&app)
        .arg(&live)
        .args(["8", "100", "SST", ":", "-np", "1"])
        .arg(exe())
        .args(["run", "--quiet", "--engine", "SST", "--app-ranks", "2"])
        .args(["--binary", "tau_like_app", "--trace-dir"])
        .arg(&live)
        .arg("--truth")
        .arg(live.join("truth-tau_like_app.csv"))
        .arg("--summary-out")
        .arg(&sum)
        .arg("--out")
        .arg(dir.path().join("live.h5"));
    run_ok(&mut c);
    let s = summary(&sum);
    assert_eq!(s["streams"], 2);
    assert_eq!(s["steps"], 8);
    assert_eq!(s["truth"]["injected"], 20);
    assert_eq!(s["truth"]["true_positives"], 20, "{}", s["truth"]);
    assert_eq!(s["truth"]["false_positives"], 0, "{}", s["truth"]);

    // Post hoc: the application alone writes BP4 files, then 2 AD ranks.
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    run_ok(mpirun(2).arg(&app).arg(&files).args(["8", "100", "BP4"]));
    let sum2 = dir.path().join("files.json");
    run_ok(
        mpirun(2)
            .arg(exe())
            .args(["run", "--quiet", "--no-provenance", "--engine", "BP4"])
            .arg("--input")
            .arg(files.join("tau-metrics-{binary}-{rank}.bp"))
            .args(["--binary", "tau_like_app"])
            .arg("--truth")
            .arg(files.join("truth-tau_like_app.csv"))
            .arg("--summary-out")
            .arg(&sum2),
    );
    let s2 = summary(&sum2);
    for key in ["executions", "anomalies", "model_digest", "truth"] {
        assert_eq!(s2[key], s[key], "{key}: post hoc vs in situ");
    }
}
