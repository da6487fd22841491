//! Running beside the application: in situ over SST with the application
//! as an MPI job (MPMD in one MPI_COMM_WORLD, and two separate launches),
//! streaming reads of BP files still being written, wrong setups, and the
//! configuration layers.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use chimbuko_mpi::provenance::read::Provenance;
use chimbuko_mpi::provenance::records::LABEL_ANOMALY;
use common::*;

/// Application arguments: 4 ranks of the demo scenario, paced.
const APP: [&str; 6] = [
    "--steps",
    "5",
    "--events-per-step",
    "1500",
    "--pace-ms",
    "40",
];

fn summary(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("summary written")).unwrap()
}

/// What the post hoc analysis gives of the (deterministic) trace of
/// `ranks` application ranks that `synth` writes with `steps` (its
/// step-count and step-size flags).
fn reference(dir: &Path, ranks: usize, steps: &[&str]) -> serde_json::Value {
    let data = dir.join("bp");
    synth(&data, &[&["--ranks", &ranks.to_string()], steps].concat());
    let sum = dir.join("reference.json");
    run_ok(
        mpirun(2)
            .arg(exe())
            .args(["run", "--quiet", "--no-provenance", "--input"])
            .arg(data.join("tau-metrics-demo-{rank}.bp"))
            .arg("--truth")
            .arg(data.join("truth-demo.csv"))
            .arg("--summary-out")
            .arg(&sum),
    );
    summary(&sum)
}

fn ad_args(c: &mut Command, data: &Path, out: &Path, sum: &Path) {
    c.arg(exe())
        .args(["run", "--quiet", "--engine", "SST", "--app-ranks", "4"])
        .arg("--input")
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .arg("--truth")
        .arg(data.join("truth-demo.csv"))
        .arg("--out")
        .arg(out)
        .arg("--summary-out")
        .arg(sum);
}

/// The live result equals the post hoc one, and the provenance file holds
/// the injected anomalies.
fn check_live(sum: &Path, out: &Path, reference: &serde_json::Value, ad_ranks: usize) {
    let s = summary(sum);
    assert_eq!(s["ad_ranks"], ad_ranks);
    assert_eq!(s["streams"], 4);
    for key in ["steps", "executions", "anomalies", "model_digest", "truth"] {
        assert_eq!(s[key], reference[key], "{key}: live vs post hoc");
    }
    assert!(
        s["truth"]["recall"].as_f64().unwrap() > 0.9,
        "{}",
        s["truth"]
    );
    let p = Provenance::load(out).unwrap();
    assert_eq!(p.attrs["completed"], "1");
    let kept = p.collections[0]
        .records
        .iter()
        .filter(|r| r.final_label == LABEL_ANOMALY)
        .count() as u64;
    assert_eq!(kept, s["anomalies"].as_u64().unwrap());
    assert_eq!(p.steps.len(), 4 * 5);
}

#[test]
fn in_situ_sst_in_one_mpmd_launch() {
    let dir = tempfile::tempdir().unwrap();
    let reference = reference(dir.path(), 4, &APP[..4]);
    for np in [1usize, 2, 4] {
        let data = dir.path().join(format!("mpmd-{np}"));
        let (out, sum) = (
            dir.path().join(format!("mpmd-{np}.h5")),
            dir.path().join(format!("mpmd-{np}.json")),
        );
        // mpirun -np 4 synth --mpi ... : -np N chimbuko-mpi run ...
        let mut c = mpirun(4);
        c.arg(exe())
            .args(["synth", "--mpi", "--engine", "SST", "--out"])
            .arg(&data)
            .args(APP)
            .args([":", "-np", &np.to_string()]);
        ad_args(&mut c, &data, &out, &sum);
        let stdout = run_ok(&mut c);
        assert!(stdout.contains("world of"), "{stdout}");
        check_live(&sum, &out, &reference, np);
    }
}

/// Eight SST streams into one AD rank, which reads each on a thread of its
/// own: SST's streams in one process share state that ADIOS2 does not guard
/// for calls from several threads, and concurrent opens and closes
/// corrupted the heap in about one launch in three. Three launches, each
/// clean and equal to the post hoc analysis of the same trace.
#[test]
fn many_sst_streams_into_one_ad_rank() {
    let dir = tempfile::tempdir().unwrap();
    let app = [
        "--steps",
        "4",
        "--events-per-step",
        "800",
        "--pace-ms",
        "20",
    ];
    let reference = reference(dir.path(), 8, &app[..4]);
    for launch in 0..3 {
        let data = dir.path().join(format!("sst-{launch}"));
        let sum = dir.path().join(format!("sst-{launch}.json"));
        let mut c = mpirun(8);
        c.arg(exe())
            .args(["synth", "--mpi", "--engine", "SST", "--out"])
            .arg(&data)
            .args(app)
            .args([":", "-np", "1"])
            .arg(exe())
            .args(["run", "--quiet", "--no-provenance", "--engine", "SST"])
            .args(["--app-ranks", "8", "--input"])
            .arg(data.join("tau-metrics-demo-{rank}.bp"))
            .arg("--summary-out")
            .arg(&sum);
        run_ok(&mut c);
        let s = summary(&sum);
        assert_eq!(s["streams"], 8, "launch {launch}");
        assert_eq!(s["streams_failed"], 0, "launch {launch}");
        assert_eq!(s["streams_stalled"], 0, "launch {launch}");
        for key in ["steps", "rows", "executions", "anomalies", "model_digest"] {
            assert_eq!(
                s[key], reference[key],
                "launch {launch}, {key}: live vs post hoc"
            );
        }
    }
}

#[test]
fn in_situ_sst_with_two_launches() {
    let dir = tempfile::tempdir().unwrap();
    let reference = reference(dir.path(), 4, &APP[..4]);
    for np in [1usize, 2, 4] {
        let data = dir.path().join(format!("two-{np}"));
        let (out, sum) = (
            dir.path().join(format!("two-{np}.h5")),
            dir.path().join(format!("two-{np}.json")),
        );
        let mut app = mpirun(4);
        app.arg(exe())
            .args(["synth", "--mpi", "--engine", "SST", "--out"])
            .arg(&data)
            .args(APP)
            .stdout(Stdio::null());
        let mut app = app.spawn().unwrap();
        let mut ad = mpirun(np);
        ad_args(&mut ad, &data, &out, &sum);
        let result = ad.output().unwrap();
        let app_status = app.wait().unwrap();
        assert!(
            result.status.success(),
            "{}",
            String::from_utf8_lossy(&result.stderr)
        );
        assert!(app_status.success());
        check_live(&sum, &out, &reference, np);
    }
}

#[test]
fn bp_files_are_followed_while_the_application_writes_them() {
    for engine in ["BP4", "BP5"] {
        let dir = tempfile::tempdir().unwrap();
        let reference = reference(dir.path(), 4, &APP[..4]);
        let data = dir.path().join("live");
        let mut app = Command::new(exe());
        app.arg("synth")
            .arg("--out")
            .arg(&data)
            .args(["--engine", engine, "--ranks", "4"])
            .args(APP)
            .stdout(Stdio::null());
        let mut app = app.spawn().unwrap();
        let sum = dir.path().join("live.json");
        let out = run_ok(
            mpirun(2)
                .arg(exe())
                .args(["run", "--engine", engine, "--app-ranks", "4"])
                .args(["--no-provenance", "--step-timeout", "20", "--input"])
                .arg(data.join("tau-metrics-demo-{rank}.bp"))
                .arg("--truth")
                .arg(data.join("truth-demo.csv"))
                .arg("--summary-out")
                .arg(&sum),
        );
        assert!(app.wait().unwrap().success());
        let s = summary(&sum);
        for key in ["steps", "executions", "anomalies", "model_digest"] {
            assert_eq!(
                s[key], reference[key],
                "{engine} {key}: live vs post hoc\n{out}"
            );
        }
    }
}

fn fails_everywhere(np: usize, args: &[&str], expect: &str) {
    let out = mpirun(np)
        .arg(exe())
        .args(["run", "--quiet", "--no-provenance"])
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(expect), "{expect:?} not in:\n{err}");
    // The same on every rank: said once, by AD rank 0 for all.
    assert_eq!(err.matches("chimbuko-mpi: error: ").count(), 1, "{err}");
    let _ = np;
}

#[test]
fn wrong_setups_fail_fast_on_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(
        &data,
        &["--ranks", "2", "--steps", "2", "--events-per-step", "500"],
    );
    let pattern = data.join("tau-metrics-demo-{rank}.bp");
    let pattern = pattern.to_str().unwrap();
    // More AD ranks than streams.
    fails_everywhere(3, &["--input", pattern], "3 AD ranks but only 2 stream(s)");
    // A pattern that matches nothing within the open timeout.
    let missing = data.join("tau-metrics-nothing-{rank}.bp");
    let start = std::time::Instant::now();
    fails_everywhere(
        2,
        &["--input", missing.to_str().unwrap(), "--open-timeout", "1"],
        "no stream found within the open timeout",
    );
    assert!(start.elapsed().as_secs() < 30, "no hang");
    // Two inputs naming the same streams: two AD ranks would claim them.
    fails_everywhere(
        2,
        &["--input", pattern, "--input", pattern],
        "each stream can be read by one AD rank only",
    );
    // {binary} without --binary.
    let with_binary = data.join("tau-metrics-{binary}-{rank}.bp");
    fails_everywhere(
        2,
        &["--input", with_binary.to_str().unwrap()],
        "give --binary",
    );
    // ... and with it, or TAU's default naming from --binary alone.
    run_ok(
        mpirun(2)
            .arg(exe())
            .args(["run", "--quiet", "--no-provenance", "--binary", "demo"])
            .arg("--input")
            .arg(&with_binary),
    );
    run_ok(
        mpirun(2)
            .arg(exe())
            .args(["run", "--quiet", "--no-provenance", "--binary", "demo"])
            .arg("--trace-dir")
            .arg(&data),
    );
}

#[test]
fn settings_come_from_flags_environment_and_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(
        &data,
        &["--ranks", "2", "--steps", "2", "--events-per-step", "500"],
    );
    let cfg = dir.path().join("ad.toml");
    std::fs::write(
        &cfg,
        format!(
            "input = ['{}']\nsigma = 9.0\nwindow = 2\nflush_steps = 4\n",
            data.join("tau-metrics-demo-{rank}.bp").display()
        ),
    )
    .unwrap();
    let out = dir.path().join("prov.h5");
    let result = mpirun(2)
        .arg("-x")
        .arg("CHIMBUKO_WINDOW=3")
        .arg("-x")
        .arg("CHIMBUKO_NORMAL_SAMPLES=2")
        .arg(exe())
        .args(["run", "--normal-samples", "4", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(result.status.success());
    // The settings are printed at start, on stderr with the other opening
    // lines.
    let stderr = String::from_utf8_lossy(&result.stderr);
    for line in [
        "sigma = 9 (config file)",
        "window = 3 (environment)",
        "normal-samples = 4 (flag)",
        "flush-steps = 4 (config file)",
        "min-count = 2 (default)",
    ] {
        assert!(stderr.contains(line), "{line:?} not in:\n{stderr}");
    }
    let p = Provenance::load(&out).unwrap();
    let conf: serde_json::Value = serde_json::from_str(&p.attrs["configuration"]).unwrap();
    let get = |name: &str| {
        conf.as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(get("window")["value"], "3");
    assert_eq!(get("window")["source"], "env");
    assert_eq!(get("sigma")["source"], "file");
    assert_eq!(get("normal-samples")["value"], "4");
}
