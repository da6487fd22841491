//! `chimbuko-mpi ross` under mpirun: the AD ranks share the event trace
//! and the summary and provenance are the same for 1, 2 and 4 ranks — on
//! the real fixtures, on a generated run with a full event trace, and on a
//! trace with a bad record in its middle (where the guessed ranges fail
//! and the ranks fall back to ranges walked from the start).

mod common;

use std::path::{Path, PathBuf};

use common::{exe, mpirun, run_ok};

fn fixture(run: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ross")
        .join(run)
}

/// Runs `ross` on `np` ranks; returns (summary JSON, exported JSON files
/// without the attributes that name the run itself, stderr).
fn analyse(run: &Path, np: usize, work: &Path, extra: &[&str]) -> (String, Vec<(String, String)>) {
    let summary = work.join(format!("summary-{np}.json"));
    let h5 = work.join(format!("prov-{np}.h5"));
    let mut cmd = mpirun(np);
    cmd.arg(exe())
        .arg("ross")
        .arg(run)
        .arg("--summary-out")
        .arg(&summary)
        .arg("--out")
        .arg(&h5)
        .args(extra);
    run_ok(&mut cmd);
    let export = work.join(format!("export-{np}"));
    run_ok(
        std::process::Command::new(exe())
            .arg("export")
            .arg("--json")
            .arg(&h5)
            .arg(&export),
    );
    let mut docs = Vec::new();
    for name in [
        "anomalies.json",
        "entities.json",
        "series_stats.json",
        "metadata.json",
    ] {
        let text = std::fs::read_to_string(export.join(name)).unwrap();
        let text = if name == "metadata.json" {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let m = v[0].as_object_mut().unwrap();
            assert_eq!(m["ad_ranks"], np.to_string());
            assert_eq!(m["source"], "ross");
            assert_eq!(m["completed"], "1");
            for k in ["ad_ranks", "command_line", "start_time", "end_time"] {
                m.remove(k);
            }
            v.to_string()
        } else {
            text
        };
        docs.push((name.to_owned(), text));
    }
    (std::fs::read_to_string(summary).unwrap(), docs)
}

fn same_for_1_2_4(run: &Path, extra: &[&str]) -> serde_json::Value {
    let work = tempfile::tempdir().unwrap();
    let (s1, d1) = analyse(run, 1, work.path(), extra);
    for np in [2, 4] {
        let (s, d) = analyse(run, np, work.path(), extra);
        assert_eq!(s, s1, "summary differs with {np} ranks");
        for ((name, a), (_, b)) in d1.iter().zip(&d) {
            assert_eq!(a, b, "{name} differs with {np} ranks");
        }
    }
    serde_json::from_str(&s1).unwrap()
}

#[test]
fn fixtures_give_the_same_results_on_1_2_and_4_ranks() {
    for run in [
        "phold-np4-opt-gvt-kplp-rbtrace",
        "phold-np4-opt-rt-kp-committrace",
        "phold-np2-cons-all",
    ] {
        let dir = fixture(run);
        let stdout = dir.join("ross-stdout.txt");
        let v = same_for_1_2_4(&dir, &["--ross-stdout", stdout.to_str().unwrap()]);
        assert!(v["run"]["trace"]["records"].as_u64().unwrap() > 0, "{run}");
    }
}

#[test]
fn a_generated_full_trace_is_shared_exactly() {
    // 4 PEs, a hotspot LP and a full event trace of some megabytes: enough
    // records that every rank gets a real share.
    let work = tempfile::tempdir().unwrap();
    let sc = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/ross-hotspot.toml");
    let toml = std::fs::read_to_string(&sc)
        .unwrap()
        .replace("evtrace = \"rollback\"", "evtrace = \"full\"")
        .replace("events_per_interval = 256", "events_per_interval = 4096");
    let sc2 = work.path().join("hot-full.toml");
    std::fs::write(&sc2, toml).unwrap();
    let out = work.path().join("run");
    run_ok(
        std::process::Command::new(exe())
            .args(["synth", "ross"])
            .arg(&sc2)
            .arg("--out")
            .arg(&out),
    );
    let trace = std::fs::metadata(out.join("hotspot-evtrace.bin"))
        .unwrap()
        .len();
    assert!(trace > 4 << 20, "{trace} bytes");
    let v = same_for_1_2_4(&out, &[]);
    let hot: Vec<&serde_json::Value> = v["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["series"] == "evtrace")
        .collect();
    assert_eq!(hot.len(), 1, "{v:#}");
    assert_eq!(hot[0]["lp"], 37);
    assert_eq!(v["run"]["trace"]["bytes"], trace);
}

#[test]
fn a_bad_record_mid_trace_ends_the_file_at_the_same_place_for_any_rank_count() {
    let work = tempfile::tempdir().unwrap();
    let run = work.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let src = fixture("phold-np4-opt-gvt-kplp-rbtrace").join("stats-output");
    for f in ["r2-gvt.bin", "r2-evtrace.bin"] {
        std::fs::copy(src.join(f), run.join(f)).unwrap();
    }
    // A NaN send time in record 700 (of 24-byte records, no payload).
    let path = run.join("r2-evtrace.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = 700 * 24;
    bytes[at + 8..at + 12].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let v = same_for_1_2_4(&run, &[]);
    assert_eq!(v["run"]["trace"]["records"], 700);
    let w = v["warnings"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    let w = w[0].as_str().unwrap();
    assert!(
        w.contains("r2-evtrace.bin") && w.contains(&format!("byte {at}")),
        "{w}"
    );
}
