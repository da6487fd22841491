//! Faults under mpirun: broken, stalled or dying streams, a dying AD rank,
//! SIGTERM, bad input rows, an output file system that fills up, streams
//! that appear late or never. The AD finishes what it can, never hangs,
//! and the provenance file says what happened.
//!
//! The file is long because each fault needs its own run under mpirun,
//! with its own way of breaking things and its own checks.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chimbuko_mpi::provenance::read::Provenance;
use chimbuko_mpi::trace::adios::Engine;
use chimbuko_mpi::trace::writer::{StepData, TauStreamWriter};
use common::*;

/// One writer process per application rank (so that each can be stopped
/// or killed alone), paced like an application.
fn writers(dir: &Path, engine: &str, ranks: u64, steps: u64) -> Vec<Child> {
    (0..ranks)
        .map(|r| {
            Command::new(exe())
                .arg("synth")
                .arg("--out")
                .arg(dir)
                .args(["--engine", engine, "--only-rank", &r.to_string()])
                .args(["--ranks", &ranks.to_string(), "--steps", &steps.to_string()])
                .args(["--events-per-step", "800", "--pace-ms", "100"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect()
}

/// `chimbuko-mpi run` on `np` AD ranks, with its progress lines.
fn ad_cmd(np: usize, pattern: &Path, out: &Path) -> Command {
    let mut c = mpirun(np);
    c.arg(exe())
        .args(["run", "--input"])
        .arg(pattern)
        .arg("--out")
        .arg(out);
    c
}

/// [`ad_cmd`] without progress lines.
fn run_cmd(np: usize, pattern: &Path, out: &Path) -> Command {
    let mut c = ad_cmd(np, pattern, out);
    c.arg("--quiet");
    c
}

/// (state, steps) of each stream, by application rank.
fn stream_states(p: &Provenance) -> Vec<(String, u64)> {
    let mut rows: Vec<_> = p.streams.iter().collect();
    rows.sort_by_key(|r| r.rid);
    rows.iter()
        .map(|r| (r.state.as_str().to_owned(), r.steps))
        .collect()
}

#[test]
fn corrupt_and_foreign_streams_fail_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, &["--steps", "3", "--events-per-step", "1500"]);
    // Stream 2: data cut short (ADIOS2 waits for it to grow: a stall).
    let data2 = data.join("tau-metrics-demo-2.bp/data.0");
    let len = std::fs::metadata(&data2).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&data2)
        .unwrap()
        .set_len(len / 3)
        .unwrap();
    // Stream 1: not ADIOS2 at all.
    let s1 = data.join("tau-metrics-demo-1.bp");
    std::fs::remove_dir_all(&s1).unwrap();
    std::fs::create_dir(&s1).unwrap();
    for f in ["md.idx", "md.0", "data.0"] {
        std::fs::write(s1.join(f), b"this is not an ADIOS2 file at all, sorry").unwrap();
    }
    let out = dir.path().join("prov.h5");
    let (html, summary) = (dir.path().join("r.html"), dir.path().join("s.json"));
    let start = Instant::now();
    let result = run_cmd(2, &data.join("tau-metrics-demo-{rank}.bp"), &out)
        .args(["--step-timeout", "3", "--open-timeout", "5", "--report"])
        .arg(&html)
        .arg("--summary-out")
        .arg(&summary)
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    // The run ends, but says (once) that not every stream was analysed,
    // and its exit status says so too.
    assert_eq!(result.status.code(), Some(3), "{stderr}");
    assert!(stdout.contains("streams that failed: "), "{stdout}");
    assert_eq!(
        stderr
            .matches("the others were analysed to their end")
            .count(),
        1,
        "{stderr}"
    );
    // Only rank 0 carries the verdict, after every rank has finished: no
    // process is killed, and the outputs rank 0 writes last are whole.
    assert!(!stderr.contains("exited on signal"), "{stderr}");
    if stderr.contains("Process name:") {
        assert!(
            stderr.contains(",1],0]"),
            "the first non-zero exit is rank 0's:\n{stderr}"
        );
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.trim_end().ends_with("</html>"), "the report is whole");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert!(json.is_object(), "the summary is whole");
    let p = Provenance::load(&out).unwrap();
    assert_eq!(p.attrs["completed"], "1");
    let states = stream_states(&p);
    assert_eq!(states[0], ("ended".into(), 3));
    assert_eq!(states[3], ("ended".into(), 3));
    // ADIOS2 either rejects the foreign files or waits on them like on the
    // truncated data: failed (with the reason) or stalled, never analysed
    // past the damage.
    for r in [1, 2] {
        assert!(
            states[r].0 == "failed" || states[r].0 == "stalled",
            "stream {r}: {states:?}"
        );
        assert!(states[r].1 < 3, "stream {r}: {states:?}");
    }
    for s in p.streams.iter().filter(|s| s.state.as_str() == "failed") {
        assert!(!s.message.as_str().is_empty());
    }
    // The healthy streams were analysed completely.
    assert_eq!(p.steps.iter().filter(|s| s.rid == 0).count(), 3);
}

#[test]
fn a_run_that_reads_no_stream_fails_and_partial_runs_can_exit_0() {
    // BP5 streams read with the BP4 engine: said once, at once, before any
    // file is created (the BP version is in each stream's index header).
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, &["--steps", "2", "--engine", "BP5"]);
    let out = dir.path().join("prov.h5");
    let start = std::time::Instant::now();
    let result = run_cmd(2, &data.join("tau-metrics-demo-{rank}.bp"), &out)
        .args(["--engine", "BP4", "--open-timeout", "30"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(start.elapsed() < Duration::from_secs(20), "{stderr}");
    let said = "this is a BP5 stream (its index header says so) but --engine is BP4";
    assert_eq!(
        stderr.matches(said).count(),
        1,
        "once, not per rank:\n{stderr}"
    );
    assert!(!stderr.contains("AD rank"), "{stderr}");
    assert!(!out.exists(), "no output file is left behind");
    // The default engine reads them.
    run_ok(&mut run_cmd(
        2,
        &data.join("tau-metrics-demo-{rank}.bp"),
        &out,
    ));

    // Every stream foreign: one error, exit 1; each stream's ADIOS2
    // message, cleaned of its terminal codes and timestamps, is in the
    // file (and, without --quiet, in a warning naming the stream).
    let junk = dir.path().join("junk");
    synth(&junk, &["--steps", "2"]);
    for r in 0..4 {
        let s = junk.join(format!("tau-metrics-demo-{r}.bp"));
        for f in ["md.idx", "md.0", "data.0"] {
            std::fs::write(s.join(f), b"not ADIOS2").unwrap();
        }
    }
    let out = dir.path().join("junk.h5");
    let result = run_cmd(2, &junk.join("tau-metrics-demo-{rank}.bp"), &out)
        .args(["--open-timeout", "3", "--step-timeout", "3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.matches("no stream could be read").count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "terminal codes:\n{stderr}");
    let p = Provenance::load(&out).unwrap();
    assert_eq!(p.streams.len(), 4);
    for s in &p.streams {
        let m = s.message.as_str();
        assert!(m.contains("ADIOS2 could not open the stream"), "{m}");
        assert!(!m.contains('\u{1b}') && !m.contains("[ADIOS2"), "{m}");
    }

    // With one stream broken and --allow-failed-streams: status 0.
    let good = dir.path().join("good");
    synth(&good, &["--steps", "2"]);
    let s1 = good.join("tau-metrics-demo-1.bp");
    std::fs::remove_dir_all(&s1).unwrap();
    std::fs::create_dir(&s1).unwrap();
    for f in ["md.idx", "md.0", "data.0"] {
        std::fs::write(s1.join(f), b"not ADIOS2").unwrap();
    }
    let out2 = dir.path().join("prov2.h5");
    let mut c = run_cmd(2, &good.join("tau-metrics-demo-{rank}.bp"), &out2);
    c.args([
        "--open-timeout",
        "5",
        "--step-timeout",
        "3",
        "--allow-failed-streams",
    ]);
    run_ok(&mut c);
}

#[test]
fn bad_rows_are_counted_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tau-metrics-bad-0.bp");
    let t0 = 1_700_000_000_000_000u64;
    let e = |et: u64, f: u64, ts: u64| [0u64, 0, 0, et, f, ts];
    let attrs: Vec<(String, String)> = [
        ("event_type 0", "ENTRY"),
        ("event_type 1", "EXIT"),
        ("timer 0", "main"),
        ("timer 1", "solve"),
        ("timer x", "malformed"),
        ("MetaData:0:0:Hostname", "node1"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let steps = vec![
        StepData {
            funcs: vec![
                e(0, 0, t0),
                e(0, 1, t0 + 10),
                e(1, 1, t0 + 20),
                [0, 5, 0, 0, 1, t0 + 21], // rank disagrees with the name
                e(0, 77, t0 + 22),        // unknown function
                e(0, 1, 0),               // timestamp 0 (goes backwards)
                e(1, 1, u64::MAX),        // absurd timestamp, EXIT w/o ENTRY
                e(1, 0, u64::MAX),        // EXIT of a function not open
            ],
            new_attributes: attrs,
            ..Default::default()
        },
        StepData {
            funcs: vec![e(0, 1, t0 + 5), e(1, 1, t0 + 100)], // back in time
            ..Default::default()
        },
    ];
    let mut w = TauStreamWriter::create(&path, Engine::BP4, vec![]).unwrap();
    for s in &steps {
        w.write_step(s).unwrap();
    }
    w.close().unwrap();
    let out = dir.path().join("prov.h5");
    run_ok(&mut run_cmd(
        1,
        &dir.path().join("tau-metrics-bad-{rank}.bp"),
        &out,
    ));
    let p = Provenance::load(&out).unwrap();
    assert_eq!(p.attrs["completed"], "1");
    let s = &p.streams[0];
    assert_eq!(s.state.as_str(), "ended");
    let counts = s.issue_counts.as_str();
    for kind in ["bad rank", "unknown function", "malformed attribute"] {
        assert!(counts.contains(kind), "{kind:?} not in {counts:?}");
    }
    assert!(s.issues >= 5, "{counts}");
}

#[test]
fn stalled_and_killed_writers_end_their_streams_only() {
    for engine in ["BP4", "SST"] {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut apps = writers(&data, engine, 4, 40);
        let out = dir.path().join("prov.h5");
        let mut ad = ad_cmd(2, &data.join("tau-metrics-demo-{rank}.bp"), &out);
        ad.args([
            "--engine",
            engine,
            "--app-ranks",
            "4",
            "--step-timeout",
            "3",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut ad = ad.spawn().unwrap();
        // The faults come mid-run: once rank 0 has reported a step, every
        // stream is open and has delivered one (a writer that hangs while
        // its reader opens it is another fault).
        let stdout = ad.stdout.take().unwrap();
        let (first_step, reported) = std::sync::mpsc::channel();
        let progress = std::thread::spawn(move || {
            use std::io::BufRead;
            let mut first_step = Some(first_step);
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("step ") {
                    if let Some(tx) = first_step.take() {
                        let _ = tx.send(());
                    }
                }
            }
        });
        let waited = reported.recv_timeout(Duration::from_secs(60));
        assert!(waited.is_ok(), "{engine}: no step reported within 60 s");
        // Rank 1's writer hangs (SIGSTOP); rank 2's dies mid-run.
        // SAFETY: kill(2) on our own child processes.
        unsafe {
            libc::kill(apps[1].id() as i32, libc::SIGSTOP);
            libc::kill(apps[2].id() as i32, libc::SIGKILL);
        }
        let start = Instant::now();
        let result = ad.wait_with_output().unwrap();
        let _ = progress.join();
        // SAFETY: as above.
        unsafe { libc::kill(apps[1].id() as i32, libc::SIGKILL) };
        for a in &mut apps {
            let _ = a.wait();
        }
        let stderr = String::from_utf8_lossy(&result.stderr);
        // The run ends; a stalled and a dead stream give exit status 3.
        assert_eq!(result.status.code(), Some(3), "{engine}: {stderr}");
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{engine}: no hang"
        );
        let p = Provenance::load(&out).unwrap();
        let states = stream_states(&p);
        assert_eq!(
            states[0],
            ("ended".into(), 40),
            "{engine}: {states:?} {stderr}"
        );
        assert_eq!(
            states[3],
            ("ended".into(), 40),
            "{engine}: {states:?} {stderr}"
        );
        for r in [1, 2] {
            assert!(
                states[r].1 < 40 && states[r].0 != "reading",
                "{engine}: stream {r}: {states:?} {stderr}"
            );
        }
        // The hung writer is recognised as stalled; where and when is kept.
        assert_eq!(states[1].0, "stalled", "{engine}: {states:?} {stderr}");
        let stalled = p.streams.iter().find(|r| r.rid == 1).unwrap();
        assert!(stalled.stopped_at < 40 && stalled.stalled_after_s >= 3.0);
    }
}

/// Four stalled streams on one AD rank are given up together, one
/// `--step-timeout` after their last step, not one after the other (which
/// took four timeouts), and each records how long it really waited.
#[test]
fn stalled_streams_of_one_rank_time_out_together() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut apps = writers(&data, "BP4", 8, 40);
    let out = dir.path().join("prov.h5");
    let mut ad = run_cmd(2, &data.join("tau-metrics-demo-{rank}.bp"), &out);
    ad.args(["--engine", "BP4", "--app-ranks", "8", "--step-timeout", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let ad = ad.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // AD rank 1 reads application ranks 4..8: all four writers hang.
    for a in &apps[4..8] {
        // SAFETY: kill(2) on our own child processes.
        unsafe { libc::kill(a.id() as i32, libc::SIGSTOP) };
    }
    let stopped = Instant::now();
    let result = ad.wait_with_output().unwrap();
    let waited = stopped.elapsed();
    for a in &mut apps {
        // SAFETY: as above.
        unsafe { libc::kill(a.id() as i32, libc::SIGKILL) };
        let _ = a.wait();
    }
    let err = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(3), "{err}");
    // One timeout (3 s) and the others' last steps, not four timeouts.
    assert!(waited < Duration::from_secs(9), "{waited:?}\n{err}");
    let p = Provenance::load(&out).unwrap();
    let states = stream_states(&p);
    for r in 0..4 {
        assert_eq!(states[r], ("ended".into(), 40), "{states:?}");
    }
    for row in p.streams.iter().filter(|r| r.rid >= 4) {
        assert_eq!(row.state.as_str(), "stalled", "{states:?}");
        assert!(
            (3.0..4.5).contains(&row.stalled_after_s),
            "stream {}: stalled after {} s",
            row.rid,
            row.stalled_after_s
        );
    }
    // `inspect` says it first, for people and for scripts.
    let text = run_ok(Command::new(exe()).arg("inspect").arg(&out));
    let second = text.lines().nth(1).unwrap_or("");
    assert!(
        second.starts_with("warning: 4 of 8 stream(s) did not end cleanly"),
        "{text}"
    );
    assert_eq!(text.matches("stalled at step").count(), 4, "{text}");
    let json = run_ok(Command::new(exe()).args(["inspect", "--json"]).arg(&out));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let states: Vec<&str> = doc["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states.iter().filter(|s| **s == "stalled").count(),
        4,
        "{json}"
    );
}

/// A slow in-situ run (3 SST writer processes, 3 AD ranks) whose rank-0
/// progress lines are read as they come, so that a test acts once the run
/// is as far as it needs instead of after a fixed sleep (which a loaded
/// machine overruns).
struct SlowRun {
    apps: Vec<Child>,
    ad: Child,
    out: PathBuf,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl SlowRun {
    fn start(dir: &Path) -> SlowRun {
        let data = dir.join("data");
        let apps = writers(&data, "SST", 3, 200);
        let out = dir.join("prov.h5");
        let mut ad = ad_cmd(3, &data.join("tau-metrics-demo-{rank}.bp"), &out);
        ad.args(["--engine", "SST", "--app-ranks", "3", "--flush-steps", "5"])
            .args(["--progress-every", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut ad = ad.spawn().unwrap();
        // Progress lines come on stdout, passed on while the test still
        // listens; stderr is kept whole for the assertions.
        let progress = ad.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(progress)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        let mut pipe = ad.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            use std::io::Read;
            let mut all = String::new();
            let _ = pipe.read_to_string(&mut all);
            all
        });
        SlowRun {
            apps,
            ad,
            out,
            lines,
            stderr,
        }
    }

    /// Waits until rank 0 reports step `step` (0-based) done: its flushes
    /// up to it are on disk.
    fn wait_for_step(&self, step: u64) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let done = line
                        .strip_prefix("step ")
                        .and_then(|r| r.split(':').next()?.parse::<u64>().ok());
                    if done.is_some_and(|s| s >= step) {
                        return;
                    }
                    seen.push(line);
                }
                Err(e) => panic!(
                    "the run never reported step {step} ({e:?}); its output:\n{}",
                    seen.join("\n")
                ),
            }
        }
    }

    /// Sends `signal` to every AD process of the job.
    fn signal_ad_ranks(&self, signal: i32) {
        for pid in ad_ranks(self.ad.id()) {
            // SAFETY: kill(2) on processes of the job we started.
            unsafe { libc::kill(pid as i32, signal) };
        }
    }

    /// Waits for the AD job to end: its status, how long that took and
    /// its whole stderr; stops the writers.
    fn wait(mut self) -> (std::process::ExitStatus, Duration, String) {
        let start = Instant::now();
        let status = self.ad.wait().unwrap();
        let waited = start.elapsed();
        finish(self.apps);
        (status, waited, self.stderr.join().unwrap())
    }
}

/// The AD processes (children of mpirun), by rank order of their pids.
fn ad_ranks(mpirun: u32) -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&p: &u32| parent_of(p) == Some(mpirun))
        .collect();
    pids.sort();
    pids
}

fn finish(apps: Vec<Child>) {
    for a in apps {
        kill_tree(a.id());
        let mut a = a;
        let _ = a.wait();
    }
}

#[test]
fn a_dead_ad_rank_stops_the_others_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let run = SlowRun::start(dir.path());
    // Past the first flush (every 5 steps).
    run.wait_for_step(6);
    let ranks = ad_ranks(run.ad.id());
    assert_eq!(ranks.len(), 3, "{ranks:?}");
    // SAFETY: kill(2) on a process of the job we started.
    unsafe { libc::kill(ranks[1] as i32, libc::SIGKILL) };
    let out = run.out.clone();
    let (status, waited, err) = run.wait();
    assert!(!status.success());
    assert!(waited < Duration::from_secs(60), "stopped after {waited:?}");
    assert!(
        err.contains("received SIGTERM") || err.contains("exited on signal 9"),
        "no clear message:\n{err}"
    );
    let p = Provenance::load(&out).expect("the file is readable after a rank died");
    assert_eq!(p.attrs["completed"], "0");
    let flushed: u64 = p.attrs["steps_written"].parse().unwrap();
    assert!(flushed >= 5 && flushed % 5 == 0, "{flushed}");
    assert_eq!(p.steps.len() as u64, 3 * flushed);
}

#[test]
fn an_analysis_killed_before_its_first_flush_leaves_a_readable_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = SlowRun::start(dir.path());
    // Before the first flush (--flush-steps 5).
    run.wait_for_step(1);
    run.signal_ad_ranks(libc::SIGKILL);
    let out = run.out.clone();
    let (status, _, _) = run.wait();
    assert!(!status.success());
    // The file as it was created: its settings, not completed, no steps.
    let p = Provenance::load(&out).unwrap();
    assert_eq!(p.attrs["completed"], "0");
    assert_eq!(p.attrs["steps_written"], "0");
    assert!(p.steps.is_empty());
}

#[test]
fn sigterm_stops_every_rank_together_and_marks_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = SlowRun::start(dir.path());
    // Two flushes in, and steps since the last one.
    run.wait_for_step(12);
    // The batch system signals every process of the job at its time limit.
    run.signal_ad_ranks(libc::SIGTERM);
    let out = run.out.clone();
    let (status, waited, err) = run.wait();
    assert!(!status.success());
    assert!(waited < Duration::from_secs(20), "stopped after {waited:?}");
    for r in 0..3 {
        assert!(
            err.contains(&format!("AD rank {r}: error: stopped by SIGTERM")),
            "{err}"
        );
    }
    let p = Provenance::load(&out).unwrap();
    assert_eq!(p.attrs["completed"], "0");
    assert_eq!(p.attrs["stopped_by"], "SIGTERM");
    // Everything up to the stop was written, not only the flushed steps.
    let steps: u64 = p.attrs["steps_written"].parse().unwrap();
    assert!(steps >= 10, "{steps}");
    assert!(p.steps.len() as u64 >= 3 * (steps - 1));
    // The count and the message name exactly the steps whose data is in
    // the file (a read the signal interrupted is not one of them).
    let last = p.steps.iter().map(|s| s.io_step).max().unwrap();
    assert_eq!(last + 1, steps);
    assert!(
        err.contains(&format!("holds steps 0..={last} and")),
        "{err}"
    );
    assert!(p.streams.iter().all(|s| s.state.as_str() == "reading"));
    // inspect --json: a stream the stop caught reading stopped at no step.
    let shown = Command::new(exe())
        .args(["inspect", "--json"])
        .arg(&out)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let streams = json["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 3, "{json}");
    for s in streams {
        assert!(s["stopped_at"].is_null(), "{s}");
        assert_eq!(s["ended"], "still reading when the run stopped", "{s}");
    }
}

#[test]
fn a_full_output_file_system_stops_the_run_with_the_file_readable() {
    // A small file system of our own (1.2 MB: room for the first steps,
    // not for the whole run) (needs the privilege to mount tmpfs,
    // as root in CI; elsewhere /dev/full in provenance_mpi.rs covers the
    // error path).
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1200k", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipping: cannot mount a tmpfs here (not root?)");
        return;
    }
    let data = dir.path().join("data");
    synth(&data, &["--steps", "12", "--events-per-step", "6000"]);
    let out = mnt.join("prov.h5");
    let result = run_cmd(2, &data.join("tau-metrics-demo-{rank}.bp"), &out)
        .args(["--flush-steps", "1"])
        .output()
        .unwrap();
    let p = Provenance::load(&out);
    let _ = Command::new("umount").arg(&mnt).status();
    assert!(
        !result.status.success(),
        "the file system cannot hold the run"
    );
    let err = String::from_utf8_lossy(&result.stderr);
    // Every rank's reason, in one message.
    assert_eq!(err.matches("analysis stopped because").count(), 1, "{err}");
    assert!(
        err.contains("AD rank 0: ") && err.contains("AD rank 1: "),
        "{err}"
    );
    let p = p.expect("readable up to the last good flush");
    assert_eq!(p.attrs["completed"], "0");
    let written: u64 = p.attrs["steps_written"].parse().unwrap();
    assert!((1..12).contains(&written), "{written}");
}

#[test]
fn a_stalled_stream_costs_the_waiting_ranks_no_cpu() {
    // Two AD ranks, one stream each; one writer hangs (SIGSTOP). Until the
    // step timeout (10 s) gives it up, the other rank waits for it: asleep,
    // not spinning in MPI (which burnt a core for the whole timeout).
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut apps = writers(&data, "BP4", 2, 200);
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child process.
    unsafe { libc::kill(apps[1].id() as i32, libc::SIGSTOP) };
    let before = children_cpu_seconds();
    let out = dir.path().join("prov.h5");
    let result = run_cmd(2, &data.join("tau-metrics-demo-{rank}.bp"), &out)
        .args([
            "--app-ranks",
            "2",
            "--step-timeout",
            "10",
            "--max-steps",
            "40",
        ])
        .output()
        .unwrap();
    // Measured before the writers are reaped: the AD job only.
    let cpu = children_cpu_seconds() - before;
    for a in &mut apps {
        let _ = a.kill();
        let _ = a.wait();
    }
    let err = String::from_utf8_lossy(&result.stderr);
    let p = Provenance::load(&out).unwrap();
    let states = stream_states(&p);
    assert_eq!(states[1].0, "stalled", "{states:?}\n{err}");
    assert!(cpu < 5.0, "{cpu:.1} s of CPU over a 10 s stall\n{err}");
}

#[test]
fn waiting_for_late_streams_says_so_and_costs_no_cpu() {
    // 4 streams announced, 2 there: rank 0 reports progress while it
    // waits, the other rank sleeps, nobody waits twice, missing streams
    // fail.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    run_ok(
        std::process::Command::new(exe())
            .args([
                "synth",
                "--steps",
                "2",
                "--ranks",
                "2",
                "--events-per-step",
                "300",
                "--out",
            ])
            .arg(&data),
    );
    let before = children_cpu_seconds();
    let start = Instant::now();
    let out = mpirun(2)
        .arg(exe())
        .args([
            "run",
            "--no-provenance",
            "--app-ranks",
            "4",
            "--open-timeout",
            "8",
            "--input",
        ])
        .arg(data.join("tau-metrics-demo-{rank}.bp"))
        .output()
        .unwrap();
    let waited = start.elapsed();
    let cpu = children_cpu_seconds() - before;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("waiting for streams: 2 of 4 found after 5 s"),
        "{err}"
    );
    assert!(
        err.contains("2 of 4 stream(s) found within the open timeout"),
        "{err}"
    );
    assert!(
        waited < Duration::from_secs(8 + 12),
        "one wait, not two: {waited:?}"
    );
    // Spinning in MPI while rank 0 waits would burn ~8 s of CPU.
    assert!(cpu < 4.0, "{cpu:.1} s of CPU while waiting\n{err}");
}
