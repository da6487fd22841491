//! The plain-mpirun job scripts of `jobscripts/`, run as users run them
//! (with `synth --mpi` standing in for the TAU-instrumented application).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn run_script(script: &str, dir: &Path) -> serde_json::Value {
    let trace = dir.join("trace");
    let summary = dir.join("summary.json");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut flags = String::from("--oversubscribe");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        flags.push_str(" --allow-run-as-root");
    }
    let app = format!(
        "{} synth --mpi --engine SST --out {} --steps 4 --events-per-step 1500 --pace-ms 30",
        exe(),
        trace.display()
    );
    let out = run_ok(
        Command::new("bash")
            .arg(root.join("jobscripts").join(script))
            .current_dir(dir)
            .env("APP_NAME", "demo")
            .env("APP_RANKS", "4")
            .env("AD_RANKS", "2")
            .env("TRACE_DIR", &trace)
            .env("CHIMBUKO_BIN", exe())
            .env("APP_CMD", app)
            .env("MPIRUN_FLAGS", flags)
            .env("CHIMBUKO_QUIET", "true")
            .env("CHIMBUKO_TRUTH", trace.join("truth-demo.csv"))
            .env("CHIMBUKO_SUMMARY_OUT", &summary),
    );
    assert!(out.contains("provenance: "), "{out}");
    assert!(
        dir.join("chimbuko-demo.h5").exists(),
        "default provenance path"
    );
    serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap()
}

/// What both mpirun job scripts must produce: 2 AD ranks on the demo's 4
/// streams, all 4 steps, and the injected anomalies found.
fn assert_in_situ_summary(s: &serde_json::Value) {
    assert_eq!(
        (s["ad_ranks"].as_u64(), s["streams"].as_u64()),
        (Some(2), Some(4))
    );
    assert_eq!(s["steps"], 4);
    assert!(
        s["truth"]["recall"].as_f64().unwrap() > 0.9,
        "{}",
        s["truth"]
    );
}

#[test]
fn mpmd_job_script_runs_the_in_situ_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let s = run_script("mpirun-mpmd.sh", dir.path());
    assert_in_situ_summary(&s);
}

#[test]
fn two_launch_job_script_runs_the_in_situ_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let s = run_script("mpirun-two-launches.sh", dir.path());
    assert_in_situ_summary(&s);
}
