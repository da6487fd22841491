//! `chimbuko-mpi run` under mpirun: real TAU output, rank-count invariance,
//! detection quality against synth ground truth, and failure handling.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn synth(dir: &Path, scenario: Option<&str>, extra: &[&str]) {
    let mut c = Command::new(exe());
    c.arg("synth");
    if let Some(s) = scenario {
        c.arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios")
                .join(s),
        );
    }
    c.arg("--out").arg(dir).args(extra);
    run_ok(&mut c);
}

fn run_cmd(np: usize) -> Command {
    let mut c = mpirun(np);
    // The HDF5 output has its own tests (tests/provenance_mpi.rs).
    c.arg(exe()).args(["run", "--quiet", "--no-provenance"]);
    c
}

fn summary(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("summary written")).unwrap()
}

/// Every detector `--algorithm` accepts.
const ALGORITHMS: [&str; 4] = ["sstd", "hbos", "copod", "modal"];

/// Precision and recall from a summary's `truth` section.
fn precision_recall(sum: &serde_json::Value) -> (f64, f64) {
    let t = &sum["truth"];
    (
        t["precision"].as_f64().unwrap(),
        t["recall"].as_f64().unwrap(),
    )
}

/// Runs every detector on one synth scenario (2 AD ranks) and prints a
/// quality table; returns each algorithm's summary.
fn quality_per_algorithm(scenario: &str) -> Vec<(&'static str, serde_json::Value)> {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, Some(&format!("{scenario}.toml")), &[]);
    let mut out = Vec::new();
    for alg in ALGORITHMS {
        let sum = dir.path().join(format!("summary-{alg}.json"));
        run_ok(
            run_cmd(2)
                .args(["--algorithm", alg])
                .arg("--input")
                .arg(data.join(format!("tau-metrics-{scenario}-{{rank}}.bp")))
                .arg("--truth")
                .arg(data.join(format!("truth-{scenario}.csv")))
                .arg("--summary-out")
                .arg(&sum),
        );
        let s = summary(&sum);
        let (p, r) = precision_recall(&s);
        eprintln!(
            "{scenario} {alg}: precision {p:.4} recall {r:.4} F1 {:.4} ({})",
            if p + r > 0.0 {
                2.0 * p * r / (p + r)
            } else {
                0.0
            },
            s["truth"]
        );
        out.push((alg, s));
    }
    out
}

#[test]
fn real_tau_workflow_flags_exactly_the_200ms_calls() {
    let f = fixture_dir();
    let dir = tempfile::tempdir().unwrap();
    for alg in ALGORITHMS {
        let labels = dir.path().join(format!("labels-{alg}"));
        let sum = dir.path().join(format!("summary-{alg}.json"));
        let out = run_ok(
            run_cmd(2)
                .args(["--engine", "BP4", "--algorithm", alg])
                .arg("--input")
                .arg(f.join("tau-metrics-main1-{rank}.bp"))
                .arg("--input")
                .arg(f.join("tau-metrics-main2-{rank}.bp"))
                .arg("--truth")
                .arg(f.join("truth-main1.csv"))
                .arg("--truth")
                .arg(f.join("truth-main2.csv"))
                .arg("--labels-out")
                .arg(&labels)
                .arg("--summary-out")
                .arg(&sum),
        );
        let s = summary(&sum);
        eprintln!("real TAU fixture {alg}: {}", s["truth"]);
        assert_eq!(s["steps"], 22);
        assert_eq!(s["truth"]["injected"], 36);
        if alg == "hbos" || alg == "copod" {
            // Reported only (docs/benchmarks.md): the reference detectors
            // are not expected to be exact here.
            continue;
        }
        assert!(
            out.contains("precision 1.0000, recall 1.0000"),
            "{alg}: {out}"
        );
        assert_eq!(s["truth"]["true_positives"], 36);
        assert_eq!(s["truth"]["false_positives"], 0);
        // Every component call: 200 ms ones anomalous, 20 ms ones normal.
        let mut component_calls = 0;
        for line in sorted_labels(&labels) {
            let f = chimbuko_mpi::util::csv::split_csv(&line);
            if !f[4].starts_with("component") {
                continue;
            }
            component_calls += 1;
            let inclusive: u64 = f[7].parse().unwrap();
            let expected = if inclusive > 150_000 {
                "anomaly"
            } else {
                "normal"
            };
            assert_eq!(f[11], expected, "{alg}: {line}");
        }
        assert_eq!(component_calls, 4000);
        // Separate functions per program; the monitoring thread's never-exiting
        // calls are reported as open at the end, not as errors.
        let names: Vec<String> = s["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| format!("{}:{}", f["program"], f["name"].as_str().unwrap_or("")))
            .collect();
        assert!(names.iter().any(|n| n.starts_with("0:component1_function")));
        assert!(names.iter().any(|n| n.starts_with("1:component2_function")));
        assert!(s["open_calls_at_end"].as_u64().unwrap() >= 8);
    }
}

#[test]
fn results_do_not_depend_on_the_number_of_ad_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(
        &data,
        None,
        &["--ranks", "4", "--steps", "6", "--events-per-step", "3000"],
    );
    for alg in ALGORITHMS {
        let mut outputs = Vec::new();
        for np in [1usize, 2, 4] {
            let labels = dir.path().join(format!("labels-{alg}-{np}"));
            let model = dir.path().join(format!("model-{alg}-{np}.json"));
            run_ok(
                run_cmd(np)
                    .args(["--algorithm", alg])
                    .arg("--input")
                    .arg(data.join("tau-metrics-demo-{rank}.bp"))
                    .arg("--labels-out")
                    .arg(&labels)
                    .arg("--model-out")
                    .arg(&model),
            );
            let lines = sorted_labels(&labels);
            let model = std::fs::read_to_string(&model).unwrap();
            outputs.push((np, lines, model));
        }
        let (_, base_lines, base_model) = &outputs[0];
        assert!(base_lines.len() > 10_000, "{} executions", base_lines.len());
        assert!(
            base_lines.iter().any(|l| l.contains(",anomaly,")),
            "{alg}: no anomaly at all"
        );
        for (np, lines, model) in &outputs[1..] {
            assert_eq!(
                lines.len(),
                base_lines.len(),
                "{alg}, {np} ranks: execution count"
            );
            for (a, b) in lines.iter().zip(base_lines) {
                assert_eq!(a, b, "{alg}, {np} ranks: labels/scores differ");
            }
            assert_eq!(model, base_model, "{alg}, {np} ranks: final model differs");
        }
    }
}

#[test]
fn quality_on_unimodal_scenario() {
    for (alg, s) in quality_per_algorithm("unimodal") {
        let (p, r) = precision_recall(&s);
        assert!(s["truth"]["injected"].as_u64().unwrap() > 500);
        match alg {
            "sstd" | "modal" => assert!(p >= 0.95 && r >= 0.95, "{alg}: precision {p} recall {r}"),
            // HBOS and COPOD are reported, not held to a level.
            _ => assert!(s["truth"]["true_positives"].as_u64().unwrap() > 0, "{alg}"),
        }
    }
}

#[test]
fn quality_on_multimodal_scenario() {
    for (alg, s) in quality_per_algorithm("multimodal") {
        let (p, r) = precision_recall(&s);
        assert!(s["truth"]["injected"].as_u64().unwrap() > 100);
        match alg {
            "modal" => assert!(p >= 0.9 && r >= 0.9, "modal: precision {p} recall {r}"),
            // SSTD is known to be weak here (modes inflate sigma).
            "sstd" => assert!(p > 0.5, "sstd: precision {p}"),
            _ => assert!(s["truth"]["true_positives"].as_u64().unwrap() > 0, "{alg}"),
        }
    }
}

#[test]
fn quality_on_message_size_scenario() {
    // Two modes set by message size, a jitter tail of the short one between
    // them (normal), rare 50x payloads and slow headers in steps 0-1.
    for (alg, s) in quality_per_algorithm("msgsizes") {
        let (p, r) = precision_recall(&s);
        assert!(s["truth"]["injected"].as_u64().unwrap() > 100);
        match alg {
            "modal" => assert!(p >= 0.9 && r == 1.0, "modal: precision {p} recall {r}"),
            "sstd" => assert!(p >= 0.9 && r == 1.0, "sstd: precision {p} recall {r}"),
            _ => assert!(s["truth"]["true_positives"].as_u64().unwrap() > 0, "{alg}"),
        }
        // The classes are functions of their own, agreed by the ranks.
        let names: Vec<&str> = s["functions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["name"].as_str())
            .collect();
        for class in [
            "MPI_Sendrecv [messages 16–63 B]",
            "MPI_Sendrecv [messages 16777216–67108863 B]",
        ] {
            assert!(names.contains(&class), "{alg}: {class} not in {names:?}");
        }
    }
}

#[test]
fn size_classes_do_not_depend_on_the_number_of_ad_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, Some("msgsizes.toml"), &["--steps", "5"]);
    let mut outputs = Vec::new();
    for np in [1usize, 2, 4] {
        let labels = dir.path().join(format!("labels-{np}"));
        let model = dir.path().join(format!("model-{np}.json"));
        run_ok(
            run_cmd(np)
                .arg("--input")
                .arg(data.join("tau-metrics-msgsizes-{rank}.bp"))
                .arg("--labels-out")
                .arg(&labels)
                .arg("--model-out")
                .arg(&model),
        );
        outputs.push((
            sorted_labels(&labels),
            std::fs::read_to_string(&model).unwrap(),
        ));
    }
    assert!(outputs[0].1.contains("[messages 16–63 B]"));
    for (np, (labels, model)) in [2, 4].iter().zip(&outputs[1..]) {
        assert_eq!(labels, &outputs[0].0, "{np} AD ranks: labels");
        assert_eq!(model, &outputs[0].1, "{np} AD ranks: model");
    }
}

#[test]
fn quality_on_bursty_scenario() {
    for (alg, s) in quality_per_algorithm("bursty") {
        let (p, r) = precision_recall(&s);
        if alg == "modal" {
            assert!(p >= 0.9 && r >= 0.9, "modal: precision {p} recall {r}");
        }
    }
}

#[test]
fn per_function_thresholds_apply_to_modal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(
        &data,
        None,
        &["--ranks", "4", "--steps", "6", "--events-per-step", "2000"],
    );
    let thresholds = dir.path().join("thresholds.txt");
    // `compute` is never anomalous with an unreachable threshold; the
    // 3 ms waits of the demo still are.
    std::fs::write(&thresholds, "# robust distance\n1e9 compute\n").unwrap();
    let mut anomalies = Vec::new();
    for with_file in [false, true] {
        let sum = dir.path().join(format!("summary-{with_file}.json"));
        let mut c = run_cmd(2);
        c.args(["--algorithm", "modal"])
            .arg("--input")
            .arg(data.join("tau-metrics-demo-{rank}.bp"))
            .arg("--summary-out")
            .arg(&sum)
            .args(["--summary-functions", "models"]);
        if with_file {
            c.arg("--threshold-file").arg(&thresholds);
        }
        run_ok(&mut c);
        let s = summary(&sum);
        let of = |name: &str| {
            s["functions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == name)
                .map(|f| {
                    (
                        f["anomalies"].as_u64().unwrap(),
                        f["model"]["threshold"].clone(),
                    )
                })
                .unwrap()
        };
        anomalies.push((of("compute"), of("MPI_Waitall")));
    }
    let ((compute, th), (waits, _)) = &anomalies[0];
    assert!(*compute > 0 && *waits > 0, "{anomalies:?}");
    assert_eq!(th, 6.0);
    let ((compute, th), (waits2, _)) = &anomalies[1];
    assert_eq!(*compute, 0);
    assert_eq!(th, 1e9);
    assert_eq!(waits2, waits);
}

#[test]
fn streams_of_different_lengths_end_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    synth(
        &a,
        None,
        &["--ranks", "2", "--steps", "2", "--binary", "short"],
    );
    synth(
        &b,
        None,
        &["--ranks", "1", "--steps", "7", "--binary", "long"],
    );
    let sum = dir.path().join("summary.json");
    run_ok(
        run_cmd(3)
            .arg("--input")
            .arg(a.join("tau-metrics-short-{rank}.bp"))
            .arg("--input")
            .arg(b.join("tau-metrics-long-{rank}.bp"))
            .arg("--summary-out")
            .arg(&sum),
    );
    let s = summary(&sum);
    assert_eq!(s["steps"], 7);
    assert_eq!(s["streams"], 3);
}

#[test]
fn a_failing_rank_stops_every_rank_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, None, &["--ranks", "2", "--steps", "2"]);
    // Claim 3 application ranks: the stream of app rank 2 does not exist.
    let out = run_cmd(3)
        .arg("--input")
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .args(["--app-ranks", "3", "--open-timeout", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tau-metrics-demo-2.bp"), "{err}");
    // Why the analysis stopped, with the rank it concerns, said once.
    assert_eq!(err.matches("analysis stopped because").count(), 1, "{err}");
    assert!(
        err.contains("AD rank 2: opening stream of app rank 2"),
        "{err}"
    );
}

#[test]
fn in_situ_over_sst_with_writer_processes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("sst");
    // The writers (one process per application rank) wait for their readers.
    let mut writer = Command::new(exe())
        .arg("synth")
        .arg("--out")
        .arg(&data)
        .args([
            "--engine",
            "SST",
            "--ranks",
            "2",
            "--steps",
            "5",
            "--events-per-step",
            "1500",
            "--pace-ms",
            "30",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start SST writers");
    let sum = dir.path().join("summary.json");
    let result = run_cmd(2)
        .args([
            "--engine",
            "SST",
            "--app-ranks",
            "2",
            "--open-timeout",
            "60",
        ])
        .arg("--input")
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .arg("--truth")
        .arg(data.join("truth-demo.csv"))
        .arg("--summary-out")
        .arg(&sum)
        .output()
        .unwrap();
    let status = writer.wait().unwrap();
    assert!(
        result.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(status.success(), "SST writers failed");
    let s = summary(&sum);
    assert_eq!(s["steps"], 5);
    assert_eq!(s["streams"], 2);
    assert!(s["executions"].as_u64().unwrap() > 5000);
    // Live analysis gives exactly what a post hoc analysis of the same
    // (deterministic) trace written to files gives.
    let files = dir.path().join("bp");
    synth(
        &files,
        None,
        &["--ranks", "2", "--steps", "5", "--events-per-step", "1500"],
    );
    let bp_sum = dir.path().join("summary-bp.json");
    run_ok(
        run_cmd(2)
            .arg("--input")
            .arg(files.join("tau-metrics-demo-{rank}.bp"))
            .arg("--truth")
            .arg(files.join("truth-demo.csv"))
            .arg("--summary-out")
            .arg(&bp_sum),
    );
    let b = summary(&bp_sum);
    for key in ["executions", "anomalies", "model_digest"] {
        assert_eq!(s[key], b[key], "{key}: SST vs BP");
    }
    assert_eq!(s["truth"], b["truth"]);
    assert!(s["truth"]["true_positives"].as_u64().unwrap() > 0);
}

/// Precision and recall of `alg` (with `extra` flags) on a synth scenario
/// already written to `data`, at `np` AD ranks; the labels go to `labels`.
fn score(
    np: usize,
    data: &Path,
    scenario: &str,
    alg: &str,
    extra: &[&str],
    labels: Option<&Path>,
) -> (f64, f64) {
    let sum = data.join(format!(
        "summary-{scenario}-{alg}-{np}-{}.json",
        extra.join("")
    ));
    let mut c = run_cmd(np);
    c.args(["--algorithm", alg])
        .args(extra)
        .arg("--input")
        .arg(data.join(format!("tau-metrics-{scenario}-{{rank}}.bp")))
        .arg("--truth")
        .arg(data.join(format!("truth-{scenario}.csv")))
        .arg("--summary-out")
        .arg(&sum);
    if let Some(dir) = labels {
        c.arg("--labels-out").arg(dir);
    }
    run_ok(&mut c);
    let (p, r) = precision_recall(&summary(&sum));
    eprintln!("{scenario} {alg} {extra:?} {np} AD rank(s): precision {p:.4} recall {r:.4}");
    (p, r)
}

fn f1((p, r): (f64, f64)) -> f64 {
    if p + r > 0.0 {
        2.0 * p * r / (p + r)
    } else {
        0.0
    }
}

#[test]
fn the_default_detector_handles_what_real_traces_do() {
    // ring: a rare fast path (normal), tiny noisy bookkeeping calls, and
    // 50x slow exchanges that recur from the second I/O step on;
    // twomodes: two normal code paths and rare 10x outliers.
    for scenario in ["ring", "twomodes"] {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        synth(&data, Some(&format!("{scenario}.toml")), &[]);
        for np in [1, 2] {
            let (p, r) = score(np, &data, scenario, "modal", &[], None);
            assert!(
                p >= 0.95 && r >= 0.95,
                "{scenario} at {np} AD ranks: precision {p} recall {r}"
            );
        }
        let modal = score(2, &data, scenario, "modal", &[], None);
        let sstd = score(2, &data, scenario, "sstd", &[], None);
        assert!(
            f1(modal) >= f1(sstd),
            "{scenario}: modal {modal:?} sstd {sstd:?}"
        );
    }
}

#[test]
fn direction_both_is_the_union_of_slow_and_fast() {
    // Two-sided labels (Chimbuko's) are exactly the slow anomalies plus the
    // fast ones, and the default flags no fast call of the ring exchange.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, Some("ring.toml"), &[]);
    let anomalies = |direction: &str| -> std::collections::BTreeSet<String> {
        let out = dir.path().join(format!("labels-{direction}"));
        score(
            2,
            &data,
            "ring",
            "modal",
            &["--direction", direction],
            Some(&out),
        );
        sorted_labels(&out)
            .into_iter()
            .filter(|l| l.contains(",anomaly,"))
            .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(","))
            .collect()
    };
    let (slow, fast, both) = (anomalies("slow"), anomalies("fast"), anomalies("both"));
    assert!(slow.is_disjoint(&fast));
    let union: std::collections::BTreeSet<String> = slow.union(&fast).cloned().collect();
    assert_eq!(union, both);
    assert!(
        !slow.is_empty() && !fast.is_empty(),
        "{} slow, {} fast",
        slow.len(),
        fast.len()
    );
    // --flag-fast is --direction both.
    let out = dir.path().join("labels-flag-fast");
    score(2, &data, "ring", "modal", &["--flag-fast"], Some(&out));
    let flagged: std::collections::BTreeSet<String> = sorted_labels(&out)
        .into_iter()
        .filter(|l| l.contains(",anomaly,"))
        .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(flagged, both);
}
