//! The harness the benchmark sections share. `Bench` writes the scenarios
//! with `chimbuko-mpi synth` (once per scenario and arguments, kept between
//! runs), runs `chimbuko-mpi run` under mpirun and reads its run summary,
//! and builds the report: sections, tables, plots and the project's targets
//! as measured. Also the small helpers several sections use (number
//! formatting, fields of the run summary, the detectors and the phases of a
//! step) and the machine and date of the report's header.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};
use serde_json::Value;

pub(crate) struct Bench {
    pub(crate) bin: PathBuf,
    pub(crate) work: PathBuf,
    pub(crate) img: PathBuf,
    pub(crate) quick: bool,
    pub(crate) report: String,
    /// Summary of the modal run on 2 AD ranks (for the output section).
    pub(crate) write_summary: Option<Value>,
    /// Quality bars missed (quick mode fails on any).
    pub(crate) missed: Vec<String>,
    /// The project's targets as measured: (what, target, measured, met).
    pub(crate) targets: Vec<[String; 4]>,
    pub(crate) root: PathBuf,
    /// Thread counts of the scaling section (`--thread-counts`).
    pub(crate) thread_counts: Vec<usize>,
    /// Runs per measurement of the scaling section (`--repeats`).
    pub(crate) repeats: Option<usize>,
}

/// One section of the report.
pub(crate) type Section = fn(&mut Bench) -> anyhow::Result<()>;

/// The run summary and the wall time of the command.
pub(crate) struct Run {
    pub(crate) summary: Value,
    pub(crate) wall: f64,
}

impl Bench {
    pub(crate) fn mpirun(&self, np: usize) -> Command {
        let mut c = Command::new("mpirun");
        c.arg("--oversubscribe");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            c.arg("--allow-run-as-root");
        }
        c.args(["-np", &np.to_string()]);
        c
    }

    /// Writes scenario `scenario` (from `scenarios/`, or the built-in one)
    /// with `chimbuko-mpi synth` into `work/data/<name>`, unless that was
    /// already done with the same arguments.
    pub(crate) fn synth(
        &self,
        name: &str,
        scenario: Option<&str>,
        extra: &[&str],
    ) -> anyhow::Result<PathBuf> {
        let mut args = vec![std::ffi::OsString::from("synth")];
        args.extend(scenario.map(|s| self.root.join("scenarios").join(s).into_os_string()));
        self.generate(name, &format!("{scenario:?} {extra:?}"), &args, extra)
    }

    /// The `large.toml` streams the throughput and incident sections run
    /// on (BP5; with `--quick`, three steps of 200,000 events), as the
    /// `--input` pattern of `run`. Generated once, shared by both.
    pub(crate) fn large_input(&self) -> anyhow::Result<String> {
        let extra: &[&str] = if self.quick {
            &[
                "--engine",
                "BP5",
                "--steps",
                "3",
                "--events-per-step",
                "200000",
            ]
        } else {
            &["--engine", "BP5"]
        };
        let data = self.synth("large", Some("large.toml"), extra)?;
        Ok(data
            .join("tau-metrics-large-{rank}.bp")
            .display()
            .to_string())
    }

    /// Runs `chimbuko-mpi <args> --out work/data/<name> <extra>` unless the
    /// directory holds the output of a run with the same `key`.
    pub(crate) fn generate(
        &self,
        name: &str,
        key: &str,
        args: &[std::ffi::OsString],
        extra: &[&str],
    ) -> anyhow::Result<PathBuf> {
        let dir = self.work.join("data").join(name);
        let stamp = dir.join(".args");
        if std::fs::read_to_string(&stamp).ok().as_deref() == Some(key) {
            return Ok(dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new(&self.bin)
            .args(args)
            .arg("--out")
            .arg(&dir)
            .args(extra)
            .output()
            .context("running synth")?;
        if !out.status.success() {
            bail!(
                "synth {name} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::write(&stamp, key)?;
        Ok(dir)
    }

    /// Writes the scenario `text` to `work/<name>.toml` and runs `synth` on
    /// it into `work/data/<name>`, unless that directory holds the streams
    /// of the same text already.
    pub(crate) fn synth_text(&self, name: &str, text: &str) -> anyhow::Result<PathBuf> {
        let scen = self.work.join(format!("{name}.toml"));
        let dir = self.work.join("data").join(name);
        if std::fs::read_to_string(dir.join(".args")).ok().as_deref() == Some(text) {
            return Ok(dir);
        }
        std::fs::write(&scen, text)?;
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new(&self.bin)
            .arg("synth")
            .arg(&scen)
            .arg("--out")
            .arg(&dir)
            .output()
            .context("running synth")?;
        if !out.status.success() {
            bail!("synth {name}: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::fs::write(dir.join(".args"), text)?;
        Ok(dir)
    }

    pub(crate) fn run(&self, np: usize, args: &[String]) -> anyhow::Result<Run> {
        self.run_launched(self.mpirun(np), np, args)
    }

    /// [`Bench::run`] with `threads` worker threads per AD rank, each rank
    /// bound to that many cores (`--map-by slot:PE=threads`).
    pub(crate) fn run_threads(
        &self,
        np: usize,
        threads: usize,
        args: &[String],
    ) -> anyhow::Result<Run> {
        let mut c = Command::new("mpirun");
        c.arg("--oversubscribe");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            c.arg("--allow-run-as-root");
        }
        // Each rank bound to `threads` cores, unless the machine cannot
        // bind (some containers): then `--threads` alone sets the count.
        if std::env::var_os("CHIMBUKO_BENCH_NO_BINDING").is_some() {
            c.args(["--bind-to", "none"]);
        } else {
            c.args(["--map-by", &format!("slot:PE={threads}")]);
        }
        c.args(["-np", &np.to_string()]);
        let mut args = args.to_vec();
        args.extend(["--threads".to_string(), threads.to_string()]);
        self.run_launched(c, np, &args)
    }

    fn run_launched(&self, mut c: Command, np: usize, args: &[String]) -> anyhow::Result<Run> {
        let sum = self.work.join("summary.json");
        let _ = std::fs::remove_file(&sum);
        c.arg(&self.bin)
            .args(["run", "--quiet", "--summary-out"])
            .arg(&sum)
            .args(args);
        let t = Instant::now();
        let out = c.output().context("running mpirun")?;
        let wall = t.elapsed().as_secs_f64();
        if !out.status.success() {
            bail!(
                "run {args:?} on {np} ranks failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let summary = serde_json::from_str(&std::fs::read_to_string(&sum)?)?;
        Ok(Run { summary, wall })
    }

    pub(crate) fn section(&mut self, title: &str, text: &str) {
        let _ = write!(self.report, "\n## {title}\n\n{}\n", text.trim());
    }

    pub(crate) fn table(&mut self, header: &[&str], rows: &[Vec<String>]) {
        let _ = writeln!(self.report, "\n| {} |", header.join(" | "));
        let _ = writeln!(self.report, "|{}", "---|".repeat(header.len()));
        for r in rows {
            let _ = writeln!(self.report, "| {} |", r.join(" | "));
        }
    }

    pub(crate) fn image(&mut self, file: &str, alt: &str) {
        let _ = writeln!(self.report, "\n![{alt}](img/{file})");
    }

    /// Records a measured value against one of the project's targets.
    pub(crate) fn target(&mut self, what: &str, target: &str, measured: String, met: bool) {
        self.targets.push([
            what.to_string(),
            target.to_string(),
            measured,
            if met { "yes" } else { "no" }.to_string(),
        ]);
    }

    pub(crate) fn note(&mut self, text: &str) {
        let _ = writeln!(self.report, "\n{}", text.trim());
    }

    pub(crate) fn png(&self, name: &str) -> PathBuf {
        self.img.join(name)
    }
}

pub(crate) fn f(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}

pub(crate) fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

pub(crate) fn timing(s: &Value, phase: &str) -> f64 {
    s["timings"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t[0] == phase))
        .map_or(0.0, |t| num(&t[1]))
}

/// The arguments of a run of `alg` on `input`, writing the provenance
/// file `out` (overwritten).
pub(crate) fn large_args(input: &str, alg: &str, out: &Path) -> Vec<String> {
    [
        "--input",
        input,
        "--algorithm",
        alg,
        "--out",
        &out.display().to_string(),
        "--overwrite",
    ]
    .map(String::from)
    .to_vec()
}

pub(crate) const ALGORITHMS: [&str; 4] = ["modal", "sstd", "hbos", "copod"];
/// The stages of a step, as the run's summary and `ad_perf` name them.
pub(crate) const PHASES: [&str; 10] = [
    "read", "agree", "build", "reduce", "label", "link", "collect", "write", "trim", "status",
];

pub(crate) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!("{cpu}, {cores} cores, {mem:.0} GiB RAM")
}

pub(crate) fn today() -> String {
    let out = Command::new("date").args(["-u", "+%Y-%m-%d"]).output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
