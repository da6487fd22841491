//! `chimbuko-mpi ross --follow`: a writer process appends flush blocks
//! (`synth ross --pace-ms`, small buffers so that it flushes often) while
//! `ross --follow` reads them; the result equals the post-hoc analysis of
//! the finished files. Following ends at the final real-time samples, at
//! the idle timeout when there are none, and on SIGTERM.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{exe, mpirun, run_ok};

/// The hotspot scenario with small buffers (many flushes), `rt` on or off.
fn scenario(dir: &Path, rt: bool) -> std::path::PathBuf {
    let sc = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/ross-hotspot.toml");
    let mut toml = std::fs::read_to_string(sc).unwrap().replace(
        "prefix = \"hotspot\"",
        "prefix = \"hotspot\"\nbuffer_size = 8192",
    );
    if !rt {
        toml = toml.replace("rt = true", "rt = false");
    }
    let p = dir.join("scenario.toml");
    std::fs::write(&p, toml).unwrap();
    p
}

fn follower(np: usize, run: &Path, work: &Path, extra: &[&str]) -> Command {
    let mut c = mpirun(np);
    c.arg(exe())
        .arg("ross")
        .arg(run)
        .args(["--follow", "--poll-ms", "20"])
        .arg("--summary-out")
        .arg(work.join("live.json"))
        .arg("--live-out")
        .arg(work.join("live.jsonl"))
        .arg("--out")
        .arg(work.join("live.h5"))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn post_hoc(run: &Path, work: &Path) -> String {
    run_ok(
        Command::new(exe())
            .arg("ross")
            .arg(run)
            .arg("--summary-out")
            .arg(work.join("post.json"))
            .arg("--no-provenance"),
    );
    std::fs::read_to_string(work.join("post.json")).unwrap()
}

fn write_paced(sc: &Path, run: &Path, pace_ms: &str) {
    run_ok(
        Command::new(exe())
            .args(["synth", "ross"])
            .arg(sc)
            .arg("--out")
            .arg(run)
            .args(["--pace-ms", pace_ms]),
    );
}

#[test]
fn following_a_growing_run_gives_the_post_hoc_result() {
    let work = tempfile::tempdir().unwrap();
    let sc = scenario(work.path(), true);
    let run = work.path().join("run");
    // The follower starts before the files exist.
    let child = follower(2, &run, work.path(), &["--idle-timeout", "30"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    write_paced(&sc, &run, "40");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("final real-time samples landed"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("live: LP 37 (PE 2, KP 1) events_processed"),
        "{stdout}"
    );
    let live = std::fs::read_to_string(work.path().join("live.json")).unwrap();
    assert_eq!(live, post_hoc(&run, work.path()));
    // Each live anomaly says when its flush landed and when it was found.
    let lines = std::fs::read_to_string(work.path().join("live.jsonl")).unwrap();
    assert!(lines.lines().count() >= 3, "{lines}");
    for l in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let lat = v["latency_s"].as_f64().unwrap();
        assert!((0.0..30.0).contains(&lat), "{l}");
    }
}

#[test]
fn without_real_time_samples_following_ends_at_the_idle_timeout() {
    let work = tempfile::tempdir().unwrap();
    let sc = scenario(work.path(), false);
    let run = work.path().join("run");
    let child = follower(1, &run, work.path(), &["--idle-timeout", "2"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    write_paced(&sc, &run, "10");
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("idle timeout"), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(20));
    let live = std::fs::read_to_string(work.path().join("live.json")).unwrap();
    assert_eq!(live, post_hoc(&run, work.path()));
}

#[test]
fn sigterm_ends_following_with_what_has_landed() {
    let work = tempfile::tempdir().unwrap();
    let sc = scenario(work.path(), false);
    let run = work.path().join("run");
    write_paced(&sc, &run, "0");
    // Not launched by mpirun, so the signal reaches the process itself.
    let mut child = Command::new(exe())
        .arg("ross")
        .arg(&run)
        .args(["--follow", "--poll-ms", "20", "--idle-timeout", "600"])
        .arg("--summary-out")
        .arg(work.path().join("live.json"))
        .arg("--no-provenance")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill with a valid pid and signal has no preconditions.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(t.elapsed() < Duration::from_secs(10));
    let live = std::fs::read_to_string(work.path().join("live.json")).unwrap();
    assert_eq!(live, post_hoc(&run, work.path()));
}

#[test]
fn a_follower_started_long_before_ross_waits_for_its_first_samples() {
    let work = tempfile::tempdir().unwrap();
    let sc = scenario(work.path(), true);
    let run = work.path().join("run");
    // ROSS starts 3 s after the follower, longer than the idle timeout:
    // waiting for the first samples is not idleness.
    let child = follower(2, &run, work.path(), &["--idle-timeout", "1"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    write_paced(&sc, &run, "10");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let live = std::fs::read_to_string(work.path().join("live.json")).unwrap();
    assert_eq!(live, post_hoc(&run, work.path()));
    // Live lines name entities as the rest of the output does.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("live: "), "{stdout}");
    assert!(!stdout.contains("Pe("), "{stdout}");
}

#[test]
fn a_follower_that_reads_nothing_fails_and_says_so_once() {
    let work = tempfile::tempdir().unwrap();
    let run = work.path().join("run");
    let t = Instant::now();
    let out = follower(2, &run, work.path(), &["--start-timeout", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(30));
    assert_eq!(
        stderr.matches("no ROSS sample appeared").count(),
        1,
        "{stderr}"
    );
    assert!(!work.path().join("live.json").exists());
}

#[test]
fn an_earlier_runs_files_are_not_followed_but_the_new_run_beside_them() {
    let work = tempfile::tempdir().unwrap();
    // An earlier run finished two hours ago in `run`; ROSS, finding the
    // path taken, writes the new run into `run-<pid>-<time>`.
    let old = work.path().join("run");
    let slowpe = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/ross-slowpe.toml");
    write_paced(&slowpe, &old, "0");
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    for e in walk(&old) {
        let f = std::fs::File::options().write(true).open(&e).unwrap();
        f.set_modified(two_hours_ago).unwrap();
    }
    let sc = scenario(work.path(), true);
    let child = follower(2, &old, work.path(), &["--idle-timeout", "5"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let new = work.path().join("run-4242-1700000000");
    write_paced(&sc, &new, "10");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let live = std::fs::read_to_string(work.path().join("live.json")).unwrap();
    assert_eq!(live, post_hoc(&new, work.path()));
    assert_ne!(live, post_hoc(&old, work.path()));
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
