//! What a run reports: per-function totals, timings, label files, the final
//! model, the summary table, and precision/recall against ground truth.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

use super::config::StreamSpec;
use super::names::GlobalNames;
use crate::collectives::Collectives;
use crate::detect::{Detector, Label, Verdict};
use crate::events::Execution;

/// Per-function counts of this rank, reduced at the end.
#[derive(Debug, Default, Clone)]
pub struct FunctionTotals {
    pub executions: Vec<u64>,
    pub anomalies: Vec<u64>,
    pub unlabeled: Vec<u64>,
}

impl FunctionTotals {
    pub fn ensure(&mut self, n: usize) {
        if self.executions.len() < n {
            self.executions.resize(n, 0);
            self.anomalies.resize(n, 0);
            self.unlabeled.resize(n, 0);
        }
    }

    pub fn record(&mut self, e: &Execution, label: Label) {
        let f = e.function as usize;
        self.ensure(f + 1);
        self.executions[f] += 1;
        match label {
            Label::Anomaly => self.anomalies[f] += 1,
            Label::Unlabeled => self.unlabeled[f] += 1,
            Label::Normal => {}
        }
    }

    pub fn reduce(&self, coll: &Collectives) -> FunctionTotals {
        let n = self.executions.len();
        let mut words = Vec::with_capacity(3 * n);
        words.extend_from_slice(&self.executions);
        words.extend_from_slice(&self.anomalies);
        words.extend_from_slice(&self.unlabeled);
        let g = coll.allreduce_sum(&words);
        FunctionTotals {
            executions: g[..n].to_vec(),
            anomalies: g[n..2 * n].to_vec(),
            unlabeled: g[2 * n..].to_vec(),
        }
    }
}

/// Phases of a step, as in the architecture doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Read,
    Agree,
    Build,
    Summarize,
    Reduce,
    Label,
    Collect,
    Write,
    Status,
}

const PHASES: [(Phase, &str); 9] = [
    (Phase::Read, "read"),
    (Phase::Agree, "agree"),
    (Phase::Build, "build"),
    (Phase::Summarize, "summarize"),
    (Phase::Reduce, "reduce"),
    (Phase::Label, "label"),
    (Phase::Collect, "collect"),
    (Phase::Write, "write"),
    (Phase::Status, "status"),
];

/// Time spent per phase on this rank.
#[derive(Debug, Default, Clone)]
pub struct Timings {
    ns: [u64; 9],
    /// The current step's share of `ns`.
    step_ns: [u64; 9],
}

impl Timings {
    pub fn add(&mut self, p: Phase, d: Duration) {
        let i = PHASES.iter().position(|(q, _)| *q == p).unwrap_or(0);
        let ns = d.as_nanos() as u64;
        self.ns[i] += ns;
        self.step_ns[i] += ns;
    }

    /// Seconds per phase of the step since the last call, then resets them
    /// (phases in [`Phase`] order).
    pub fn take_step(&mut self) -> [f64; 9] {
        let s = self.step_ns.map(|ns| ns as f64 / 1e9);
        self.step_ns = [0; 9];
        s
    }

    /// Slowest rank's seconds per phase (what bounds a lockstep run).
    pub fn reduce_max(&self, coll: &Collectives) -> Vec<(String, f64)> {
        let g = coll.allreduce_max(&self.ns);
        PHASES
            .iter()
            .zip(g)
            .map(|((_, name), ns)| (name.to_string(), ns as f64 / 1e9))
            .collect()
    }
}

/// Writes `labels-<rank>.csv`: one line per labelled execution.
pub struct LabelWriter {
    out: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
}

pub const LABEL_HEADER: &str = "program,rank,thread,event_id,function,entry,exit,inclusive,exclusive,exit_step,labelled_step,label,score,severity,in_situ_label";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

impl LabelWriter {
    pub fn create(dir: &Path, rank: usize) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("labels-{rank}.csv"));
        let f =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
        writeln!(out, "{LABEL_HEADER}")?;
        Ok(LabelWriter { out, path })
    }

    pub fn write(
        &mut self,
        e: &Execution,
        exit_step: u64,
        labelled_step: u64,
        in_situ: Label,
        v: Verdict,
        names: &GlobalNames,
    ) -> anyhow::Result<()> {
        writeln!(
            self.out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{:?},{},{}",
            e.program,
            e.rank(),
            e.thread,
            e.id,
            csv_field(names.functions.name(e.function)),
            e.entry,
            e.exit,
            e.inclusive(),
            e.exclusive,
            exit_step,
            labelled_step,
            v.label.name(),
            v.score,
            e.exclusive,
            in_situ.name()
        )
        .with_context(|| format!("writing {}", self.path.display()))
    }

    pub fn finish(mut self) -> anyhow::Result<()> {
        self.out
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))
    }
}

/// Where final labels go: per-function totals, truth counts, label file.
pub struct Sink {
    pub totals: FunctionTotals,
    pub truth: Option<TruthSet>,
    pub labels: Option<LabelWriter>,
}

impl Sink {
    /// Records one execution's final label (`in_situ`: the label it got in its step).
    pub fn emit(
        &mut self,
        e: &Execution,
        exit_step: u64,
        labelled_step: u64,
        in_situ: Label,
        v: Verdict,
        names: &GlobalNames,
    ) -> anyhow::Result<()> {
        self.totals.record(e, v.label);
        if let Some(t) = &mut self.truth {
            t.observe(e, v.label, names);
        }
        if let Some(w) = &mut self.labels {
            w.write(e, exit_step, labelled_step, in_situ, v, names)?;
        }
        Ok(())
    }
}

/// Splits one CSV line (RFC 4180 quoting).
pub fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Key of an execution in the ground truth.
type TruthKey = (u32, u64, u64, String, u64, u64);

/// Ground truth to score the run against. The truth files are read only at
/// the end of the run: with SST they are written when the application
/// finishes. During the run each rank just notes its anomalies.
#[derive(Debug, Default)]
pub struct TruthSet {
    /// (truth file, program index of its input).
    files: Vec<(PathBuf, u32)>,
    found: Vec<TruthKey>,
}

/// Precision/recall numbers over all ranks.
#[derive(Debug, Clone, Serialize)]
pub struct TruthCounts {
    pub injected: u64,
    pub true_positives: u64,
    pub false_positives: u64,
    pub false_negatives: u64,
    pub precision: f64,
    pub recall: f64,
}

impl TruthSet {
    /// One truth CSV per input (synth's, or the fixture's column names).
    pub fn load(paths: &[PathBuf], specs: &[StreamSpec]) -> anyhow::Result<Option<TruthSet>> {
        if paths.is_empty() {
            return Ok(None);
        }
        let programs: Vec<u32> = {
            let mut v: Vec<(usize, u32)> = specs.iter().map(|s| (s.input, s.program)).collect();
            v.dedup();
            v.into_iter().map(|(_, p)| p).collect()
        };
        let files = paths
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), programs.get(i).copied().unwrap_or(i as u32)))
            .collect();
        Ok(Some(TruthSet {
            files,
            found: Vec::new(),
        }))
    }

    fn read_keys(&self) -> anyhow::Result<HashSet<TruthKey>> {
        let mut keys = HashSet::new();
        for (p, program) in &self.files {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading truth {}", p.display()))?;
            let mut lines = text.lines();
            let header = split_csv(lines.next().unwrap_or(""));
            let col = |names: &[&str]| -> anyhow::Result<usize> {
                header
                    .iter()
                    .position(|h| names.contains(&h.trim()))
                    .with_context(|| format!("{}: no column {names:?}", p.display()))
            };
            let (c_rank, c_thread, c_func) = (
                col(&["rank"])?,
                col(&["thread", "tid"])?,
                col(&["function", "func"])?,
            );
            let (c_entry, c_exit) = (
                col(&["entry_us", "entry_ts"])?,
                col(&["exit_us", "exit_ts"])?,
            );
            for (no, line) in lines.enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let f = split_csv(line);
                let num = |c: usize| -> anyhow::Result<u64> {
                    f.get(c)
                        .and_then(|v| v.trim().parse().ok())
                        .with_context(|| {
                            format!("{}:{}: bad number in column {c}", p.display(), no + 2)
                        })
                };
                keys.insert((
                    *program,
                    num(c_rank)?,
                    num(c_thread)?,
                    f.get(c_func).cloned().unwrap_or_default(),
                    num(c_entry)?,
                    num(c_exit)?,
                ));
            }
        }
        Ok(keys)
    }

    pub fn observe(&mut self, e: &Execution, label: Label, names: &GlobalNames) {
        if label == Label::Anomaly {
            self.found.push((
                e.program,
                e.rank(),
                e.thread,
                names.functions.name(e.function).to_owned(),
                e.entry,
                e.exit,
            ));
        }
    }

    /// Reads the truth files (every rank) and counts hits over all ranks.
    pub fn reduce(&self, coll: &Collectives) -> anyhow::Result<TruthCounts> {
        let keys = self.read_keys();
        let (tp, fp) = match &keys {
            Ok(k) => {
                let tp = self.found.iter().filter(|f| k.contains(*f)).count() as u64;
                (tp, self.found.len() as u64 - tp)
            }
            Err(_) => (0, 0),
        };
        let g = coll.allreduce_sum(&[tp, fp]);
        let keys = keys?;
        let injected = keys.len() as u64;
        let (tp, fp) = (g[0], g[1]);
        Ok(TruthCounts {
            injected,
            true_positives: tp,
            false_positives: fp,
            false_negatives: injected.saturating_sub(tp),
            precision: if tp + fp > 0 {
                tp as f64 / (tp + fp) as f64
            } else {
                0.0
            },
            recall: if injected > 0 {
                tp as f64 / injected as f64
            } else {
                0.0
            },
        })
    }
}

/// The run's headline numbers (rank 0).
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub ad_ranks: usize,
    pub streams: usize,
    pub steps: u64,
    pub rows: u64,
    pub executions: u64,
    /// Anomalies as labelled during the run, step by step.
    pub anomalies_in_situ: u64,
    /// Final anomalies (after the end-of-run re-judgement).
    pub anomalies: u64,
    /// In-situ anomalies that the final model judges normal.
    pub anomalies_pruned_at_end: u64,
    pub open_calls_at_end: u64,
    pub event_issues: u64,
    /// Streams that failed (unreadable data, writer gone) or stalled (no
    /// step within the step timeout); the others were analysed to the end.
    pub streams_failed: u64,
    pub streams_stalled: u64,
    pub seconds: f64,
    pub model_digest: String,
    /// Largest peak resident set size of any AD rank.
    pub peak_rss_mb: f64,
    /// Slowest rank's seconds per phase.
    pub timings: Vec<(String, f64)>,
    pub truth: Option<TruthCounts>,
    /// The provenance file, if one was written.
    pub provenance: Option<String>,
    /// Bytes per step one AD rank contributes to each collective phase
    /// (largest rank).
    pub collective_bytes_per_step: CollectiveBytes,
    /// Collective calls per step (agreement, reduction, status, outputs).
    pub collective_calls_per_step: f64,
}

/// Collective payload per step of one rank.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct CollectiveBytes {
    pub agree: f64,
    pub reduce: f64,
    pub status: f64,
}

impl CollectiveBytes {
    pub fn per_step(totals: &[u64], steps: u64) -> CollectiveBytes {
        let s = steps.max(1) as f64;
        let get = |i: usize| totals.get(i).copied().unwrap_or(0) as f64 / s;
        CollectiveBytes {
            agree: get(0),
            reduce: get(1),
            status: get(2),
        }
    }
}

fn top_functions(totals: &FunctionTotals, top: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..totals.executions.len())
        .filter(|&f| totals.executions[f] > 0)
        .collect();
    idx.sort_by(|&a, &b| {
        totals.anomalies[b]
            .cmp(&totals.anomalies[a])
            .then(a.cmp(&b))
    });
    idx.truncate(top);
    idx
}

/// The end-of-run table on rank 0.
pub fn print_summary(
    s: &RunSummary,
    totals: &FunctionTotals,
    names: &GlobalNames,
    det: &dyn Detector,
    top: usize,
) {
    println!(
        "chimbuko-mpi run: {} AD rank(s), {} stream(s), {} step(s), {} rows, {} executions, {} anomalies ({} in situ, {} pruned at end) in {:.2} s ({:.2} M rows/s)",
        s.ad_ranks,
        s.streams,
        s.steps,
        s.rows,
        s.executions,
        s.anomalies,
        s.anomalies_in_situ,
        s.anomalies_pruned_at_end,
        s.seconds,
        s.rows as f64 / s.seconds.max(1e-9) / 1e6
    );
    if let Some(t) = &s.truth {
        println!(
            "ground truth: {} injected; precision {:.4}, recall {:.4} (TP {}, FP {}, FN {})",
            t.injected,
            t.precision,
            t.recall,
            t.true_positives,
            t.false_positives,
            t.false_negatives
        );
    }
    println!(
        "{:>4} {:>10} {:>9} {:>12} {:>12}  function",
        "prog", "executions", "anomalies", "mean_us", "stddev_us"
    );
    for f in top_functions(totals, top) {
        let m = det.model_json(f as u32);
        println!(
            "{:>4} {:>10} {:>9} {:>12.1} {:>12.1}  {}",
            names.functions.program(f as u32),
            totals.executions[f],
            totals.anomalies[f],
            m["mean"].as_f64().unwrap_or(0.0),
            m["stddev"].as_f64().unwrap_or(0.0),
            names.functions.name(f as u32)
        );
    }
    let steps = s.steps.max(1) as f64;
    let parts: Vec<String> = s
        .timings
        .iter()
        .map(|(n, secs)| format!("{n} {:.3}", secs * 1e3 / steps))
        .collect();
    println!(
        "ms per step (slowest rank): {}; peak RSS {:.0} MB (largest rank)",
        parts.join(", "),
        s.peak_rss_mb
    );
    if s.streams_failed > 0 || s.streams_stalled > 0 {
        println!(
            "streams that failed: {}; stalled: {} (see the `streams` table of the provenance file)",
            s.streams_failed, s.streams_stalled
        );
    }
    if s.open_calls_at_end > 0 || s.event_issues > 0 {
        println!(
            "calls still open at end of stream: {}; event issues: {}",
            s.open_calls_at_end, s.event_issues
        );
    }
}

fn functions_json(
    names: &GlobalNames,
    det: &dyn Detector,
    totals: &FunctionTotals,
) -> Vec<serde_json::Value> {
    (0..names.functions.len())
        .map(|f| {
            serde_json::json!({
                "index": f,
                "program": names.functions.program(f as u32),
                "name": names.functions.name(f as u32),
                "executions": totals.executions.get(f).copied().unwrap_or(0),
                "anomalies": totals.anomalies.get(f).copied().unwrap_or(0),
                "unlabeled": totals.unlabeled.get(f).copied().unwrap_or(0),
                "model": det.model_json(f as u32),
            })
        })
        .collect()
}

/// The final global model as JSON.
pub fn write_model(
    p: &Path,
    names: &GlobalNames,
    det: &dyn Detector,
    totals: &FunctionTotals,
) -> anyhow::Result<()> {
    let v = serde_json::json!({
        "algorithm": det.name(),
        "digest": format!("{:016x}", det.digest()),
        "functions": functions_json(names, det, totals),
    });
    std::fs::write(p, serde_json::to_string_pretty(&v)?)
        .with_context(|| format!("writing {}", p.display()))
}

/// The run summary as JSON (for benchmarks and scripts).
pub fn write_summary(
    p: &Path,
    s: &RunSummary,
    totals: &FunctionTotals,
    names: &GlobalNames,
    det: &dyn Detector,
) -> anyhow::Result<()> {
    let mut v = serde_json::to_value(s)?;
    v["functions"] = serde_json::Value::Array(functions_json(names, det, totals));
    std::fs::write(p, serde_json::to_string_pretty(&v)?)
        .with_context(|| format!("writing {}", p.display()))
}

/// Civil date of a Unix time (UTC): (year, month, day, hour, min, sec).
fn civil_utc(secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days since 1970-01-01 to a proleptic Gregorian date.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    (
        year,
        month,
        day,
        (rem / 3600) as u32,
        (rem / 60 % 60) as u32,
        (rem % 60) as u32,
    )
}

/// `2026-11-22T19:47:16Z`.
pub fn utc_iso8601(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = civil_utc(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `20261122T194716Z`, for file names.
pub fn utc_compact(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = civil_utc(secs);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

#[cfg(test)]
mod time_tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc_iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_iso8601(1_795_339_282), "2026-11-22T09:21:22Z");
        assert_eq!(utc_compact(1_795_339_282), "20261122T092122Z");
    }
}
