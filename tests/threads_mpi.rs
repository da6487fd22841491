//! Threads inside an AD rank: every detector gives byte-identical results
//! at 1, 2 and 4 worker threads, on 1 and 2 AD ranks (labels, scores, the
//! final model, and the provenance file's whole JSON export but its
//! command line and times); and by default a rank takes one thread per CPU
//! of its affinity mask.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::*;

/// Every detector `--algorithm` accepts that judges runtimes.
const ALGORITHMS: [&str; 4] = ["sstd", "hbos", "copod", "modal"];

/// Every file under `dir` (relative path → bytes), but `metadata.json`
/// (the command line and the run's times).
fn files_under(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    common::files_in(dir)
        .into_iter()
        .filter(|p| p.file_name().unwrap() != "metadata.json")
        .map(|p| {
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            (rel, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// What a run leaves: sorted label lines, the model file, the export.
struct Outcome {
    labels: Vec<String>,
    model: String,
    export: BTreeMap<String, Vec<u8>>,
}

fn run_with(dir: &Path, data: &Path, alg: &str, np: usize, threads: usize) -> Outcome {
    let tag = format!("{alg}-{np}-{threads}");
    let (labels, model) = (
        dir.join(format!("labels-{tag}")),
        dir.join(format!("model-{tag}.json")),
    );
    let (prov, json) = (
        dir.join(format!("prov-{tag}.h5")),
        dir.join(format!("json-{tag}")),
    );
    run_ok(
        mpirun(np)
            .arg(exe())
            .args(["run", "--quiet", "--overwrite", "--algorithm", alg])
            .args(["--threads", &threads.to_string()])
            .arg("--input")
            .arg(data.join("tau-metrics-demo-{rank}.bp"))
            .arg("--labels-out")
            .arg(&labels)
            .arg("--model-out")
            .arg(&model)
            .arg("--out")
            .arg(&prov),
    );
    run_ok(
        Command::new(exe())
            .arg("export")
            .arg("--json")
            .arg(&prov)
            .arg(&json),
    );
    Outcome {
        labels: sorted_labels(&labels),
        model: std::fs::read_to_string(&model).unwrap(),
        export: files_under(&json),
    }
}

#[test]
fn results_do_not_depend_on_threads_or_ad_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Four application ranks of two threads each: 4 streams to build in
    // parallel on one AD rank, 2 on each of two.
    synth(
        &data,
        &["--ranks", "4", "--steps", "6", "--events-per-step", "3000"],
    );
    for alg in ALGORITHMS {
        let base = run_with(dir.path(), &data, alg, 1, 1);
        std::fs::remove_dir_all(dir.path().join(format!("json-{alg}-1-1"))).unwrap();
        assert!(
            base.labels.len() > 10_000,
            "{alg}: {} executions",
            base.labels.len()
        );
        assert!(
            base.labels.iter().any(|l| l.contains(",anomaly,")),
            "{alg}: no anomaly at all"
        );
        assert!(
            base.export.len() > 3,
            "{alg}: export {:?}",
            base.export.keys()
        );
        for np in [1usize, 2] {
            let same_ranks = run_with(dir.path(), &data, alg, np, 1);
            for threads in [1usize, 2, 4] {
                let o = if threads == 1 {
                    &same_ranks
                } else {
                    &run_with(dir.path(), &data, alg, np, threads)
                };
                let case = format!("{alg}, {np} AD rank(s), {threads} thread(s)");
                assert_eq!(o.labels, base.labels, "{case}: labels/scores differ");
                assert_eq!(o.model, base.model, "{case}: final model differs");
                // The file itself (rows in writing order, incidents, ...)
                // is byte-identical for the same number of AD ranks.
                assert_eq!(
                    o.export.keys().collect::<Vec<_>>(),
                    same_ranks.export.keys().collect::<Vec<_>>(),
                    "{case}: exported files"
                );
                for (name, bytes) in &o.export {
                    assert!(bytes == &same_ranks.export[name], "{case}: {name} differs");
                }
            }
        }
    }
}

/// What the "run: ... × N thread(s)[ bound to CPUs]" line of a run
/// started under `taskset` with `extra` flags says of the rank's threads.
fn threads_announced(cpus: &str, dir: &Path, extra: &[&str]) -> String {
    let data = dir.join("small");
    if !data.exists() {
        synth(
            &data,
            &["--ranks", "1", "--steps", "2", "--events-per-step", "500"],
        );
    }
    let out = mpirun(1)
        .args(["--bind-to", "none", "taskset", "-c", cpus])
        .arg(exe())
        .args(["run", "--no-provenance"])
        .args(extra)
        .arg("--input")
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let line = stderr
        .lines()
        .find(|l| l.contains(" thread(s)"))
        .unwrap_or("")
        .to_owned();
    line.split(" × ")
        .nth(1)
        .unwrap_or("")
        .split(',')
        .next()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn by_default_a_rank_takes_the_cpus_it_is_bound_to() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(threads_announced("0", d, &[]), "1 thread(s)");
    if std::thread::available_parallelism().map_or(1, usize::from) >= 2 {
        // As many workers as CPUs: each bound to its own.
        assert_eq!(
            threads_announced("0,1", d, &[]),
            "2 thread(s) bound to CPUs"
        );
        let off = ["--bind-workers", "false"];
        assert_eq!(threads_announced("0,1", d, &off), "2 thread(s)");
        // More workers than CPUs: left to the kernel, unless asked.
        assert_eq!(
            threads_announced("0,1", d, &["--threads", "3"]),
            "3 thread(s)"
        );
        let on = ["--threads", "3", "--bind-workers", "true"];
        assert_eq!(
            threads_announced("0,1", d, &on),
            "3 thread(s) bound to CPUs"
        );
    }
}
