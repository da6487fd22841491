//! `run`'s settings from the environment as a job script sets them: a bad
//! value names the variable it came from, a misspelt `CHIMBUKO_*` variable
//! is warned about once (not by every rank), and enumerated values are
//! case-insensitive.

mod common;

use std::process::Command;

use common::*;

/// `run` on 2 AD ranks with `vars` set, on a stream that does not exist
/// (the run fails fast); returns (exit code, stderr).
fn run_with(vars: &[(&str, &str)], extra: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut c: Command = mpirun(2);
    c.arg(exe())
        .args(["run", "--quiet", "--no-provenance", "--open-timeout", "0"])
        .arg("--input")
        .arg(dir.path().join("missing-{rank}.bp"))
        .args(extra);
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_bad_value_from_the_environment_names_the_variable() {
    let (code, err) = run_with(&[("CHIMBUKO_ALGORITHM", "foo")], &[]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("environment variable CHIMBUKO_ALGORITHM = \"foo\""),
        "{err}"
    );
    assert!(err.contains("modal"), "the valid names are listed: {err}");
    assert_eq!(
        err.matches("CHIMBUKO_ALGORITHM").count(),
        1,
        "one voice, not one line per rank: {err}"
    );
}

#[test]
fn errors_the_ranks_share_are_said_once() {
    // A stream list every rank agrees on, and an MPMD launch where the
    // first AD process is not world rank 0: one line each time.
    let (code, err) = run_with(&[], &[]);
    assert_ne!(code, Some(0));
    assert_eq!(err.matches("chimbuko-mpi: error: ").count(), 1, "{err}");
    assert!(!err.contains("AD rank"), "{err}");
    let out = mpirun(1)
        .arg("true")
        .arg(":")
        .args(["-np", "2"])
        .arg(exe())
        .args(["run", "--algorithm", "nonsense", "--input", "x-{rank}.bp"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.matches("invalid value 'nonsense'").count(), 1, "{err}");
}

#[test]
fn a_misspelt_variable_is_warned_about_once() {
    let (_, err) = run_with(&[("CHIMBUKO_SIGM", "3")], &[]);
    let warnings = err
        .lines()
        .filter(|l| l.contains("warning") && l.contains("CHIMBUKO_SIGM"))
        .count();
    assert_eq!(warnings, 1, "{err}");
}

#[test]
fn enumerated_values_ignore_case() {
    // The run then fails on the missing stream, not on the values.
    let (_, err) = run_with(&[("CHIMBUKO_DIRECTION", "BOTH")], &["--algorithm", "SSTD"]);
    assert!(!err.contains("invalid value"), "{err}");
    assert!(err.contains("missing-"), "{err}");
}

#[test]
fn stats_on_stdout_are_pure_json_lines() {
    // With `--stats-out -` stdout carries the live statistics alone: the
    // progress lines and the end-of-run table go to stderr.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    run_ok(Command::new(exe()).args(["synth", "--out"]).arg(&data));
    let input = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with("-0.bp"))
        .expect("a stream of rank 0")
        .replace("-0.bp", "-{rank}.bp");
    let out = mpirun(2)
        .arg(exe())
        .args(["run", "--no-provenance", "--stats-out", "-", "--input"])
        .arg(data.join(input))
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.lines().count() > 1, "{stdout}");
    for line in stdout.lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "not JSON on stdout: {line:?}"
        );
    }
    assert!(
        stderr.contains("chimbuko-mpi run:"),
        "the table is on stderr: {stderr}"
    );
}

#[test]
fn an_input_in_a_missing_directory_fails_at_once() {
    // Not after the 60 s open timeout.
    let start = std::time::Instant::now();
    let out = mpirun(2)
        .arg(exe())
        .args(["run", "--quiet", "--no-provenance", "--input"])
        .arg("/nonexistent-trace-dir/tau-metrics-app-{rank}.bp")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("directory /nonexistent-trace-dir does not exist"),
        "{err}"
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
}
