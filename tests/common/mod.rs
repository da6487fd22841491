//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use chimbuko_mpi::trace::adios::{Engine, ReadOptions};
use chimbuko_mpi::trace::source::NextStep;
use chimbuko_mpi::trace::step::TraceStep;
use chimbuko_mpi::trace::tau::{TauReaderOptions, TauStreamReader};

/// Directory of the real TAU fixture.
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tau/simple_workflow")
}

pub fn reader_options(engine: Engine) -> TauReaderOptions {
    TauReaderOptions {
        engine,
        adios: ReadOptions {
            open_timeout: Duration::from_secs(60),
            ..Default::default()
        },
        report_issues: false,
        ..Default::default()
    }
}

/// Reads every step of a stream.
pub fn read_all(path: &Path, opts: TauReaderOptions) -> (Vec<TraceStep>, TauStreamReader) {
    let mut r = TauStreamReader::open(path, opts)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut steps = Vec::new();
    let mut idle = 0;
    loop {
        match r.next_step(Duration::from_millis(500)).expect("next_step") {
            NextStep::Step(s) => {
                idle = 0;
                steps.push(*s)
            }
            NextStep::NotReady => {
                idle += 1;
                assert!(idle < 240, "no step for 120 s from {}", path.display());
            }
            NextStep::EndOfStream => break,
        }
    }
    (steps, r)
}

/// Path of the binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_chimbuko-mpi")
}

/// `chimbuko-mpi synth SCENARIO --out OUT`, which must succeed.
pub fn synth_scenario(scenario: &Path, out: &Path) {
    run_ok(
        std::process::Command::new(exe())
            .arg("synth")
            .arg(scenario)
            .arg("--out")
            .arg(out),
    );
}

/// `mpirun -np <n>` with the flags this machine needs (`--oversubscribe`
/// always, `--allow-run-as-root` only when running as root).
pub fn mpirun(n: usize) -> std::process::Command {
    let mut c = std::process::Command::new("mpirun");
    c.arg("--oversubscribe");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        c.arg("--allow-run-as-root");
    }
    c.args(["-np", &n.to_string()]);
    c
}

/// Runs a command, panicking with its output if it fails; returns stdout.
pub fn run_ok(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().expect("start command");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "command failed: {cmd:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

/// All lines of `labels-*.csv` in `dir` (headers removed), sorted.
pub fn sorted_labels(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).expect("labels dir") {
        let p = entry.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("labels-")
        {
            let text = std::fs::read_to_string(&p).unwrap();
            lines.extend(text.lines().skip(1).map(str::to_owned));
        }
    }
    lines.sort();
    lines
}

/// Parent pid of a process, from `/proc/<pid>/stat`.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces: parse after its ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// SIGKILLs `pid` and all its descendants at once (mpirun puts each rank
/// in a process group of its own, so a group kill would miss them).
pub fn kill_tree(pid: u32) {
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut tree = vec![pid];
    let mut grew = true;
    while grew {
        grew = false;
        for &p in &all {
            if !tree.contains(&p) && parent_of(p).is_some_and(|pp| tree.contains(&pp)) {
                tree.push(p);
                grew = true;
            }
        }
    }
    for p in tree {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
}

/// CPU seconds (user + system) of this process's finished, reaped
/// children (a job measured before its helpers are reaped).
pub fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// The records of collection `c` of a provenance file as sorted lines of
/// every field that must not depend on the number of AD ranks (scores as
/// their bits: equal means bit for bit).
pub fn invariant_records(p: &chimbuko_mpi::provenance::read::Provenance, c: usize) -> Vec<String> {
    let mut v: Vec<String> = p.collections[c]
        .records
        .iter()
        .map(|r| {
            format!(
                "{c} {} {} {} {} {} {} {:?} {:?} {:?} {:?} {} {}",
                r.rid,
                r.event_id.as_str(),
                r.func.as_str(),
                r.label,
                r.final_label,
                r.labelled_step,
                r.outlier_score.to_bits(),
                r.final_score.to_bits(),
                r.model_prediction_us.to_bits(),
                r.model_ratio.to_bits(),
                r.runtime_exclusive,
                r.model_row,
            )
        })
        .collect();
    v.sort();
    v
}

/// `chimbuko-mpi synth --out dir extra...` (the demo scenario unless
/// `extra` names another), which must succeed.
pub fn synth(dir: &Path, extra: &[&str]) {
    let mut c = std::process::Command::new(exe());
    c.arg("synth").arg("--out").arg(dir).args(extra);
    run_ok(&mut c);
}

/// Every file under `dir`, recursively, in path order.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
