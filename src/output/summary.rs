//! The run's headline numbers, the end-of-run table rank 0 prints, and
//! the JSON files `--model-out` and `--summary-out` write.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use super::totals::FunctionTotals;
use super::truth::TruthCounts;
use crate::detect::Detector;
use crate::events::names::GlobalNames;

/// The run's headline numbers (rank 0).
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Number of AD ranks that analysed the streams.
    pub ad_ranks: usize,
    /// Number of application streams analysed.
    pub streams: usize,
    /// Steps that delivered data.
    pub steps: u64,
    /// Trace rows read and kept by validation (function, comm and
    /// counter), all ranks.
    pub rows: u64,
    /// Executions labelled, all ranks.
    pub executions: u64,
    /// Anomalies as labelled during the run, step by step.
    pub anomalies_in_situ: u64,
    /// Final anomalies (after the end-of-run re-judgement).
    pub anomalies: u64,
    /// In-situ anomalies that the final model judges normal.
    pub anomalies_pruned_at_end: u64,
    /// Calls still open when the streams ended (TAU's monitoring thread
    /// always leaves some), all ranks.
    pub open_calls_at_end: u64,
    /// Broken or repaired input met while rebuilding executions, all ranks.
    pub event_issues: u64,
    /// Streams that failed (unreadable data, writer gone) or stalled (no
    /// step within the step timeout); the others were analysed to the end.
    pub streams_failed: u64,
    /// Streams that stalled (see `streams_failed`).
    pub streams_stalled: u64,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// Digest of the final global model, 16 hex digits (equal on every
    /// rank, checked at the end).
    pub model_digest: String,
    /// Largest peak resident set size of any AD rank.
    pub peak_rss_mb: f64,
    /// Slowest rank's seconds per phase.
    pub timings: Vec<(String, f64)>,
    /// Precision and recall against the injected anomalies (`--truth`).
    pub truth: Option<TruthCounts>,
    /// The incidents against the ground truth of a coupled scenario
    /// (`incidents-<binary>.csv` beside a `--truth` file).
    pub incident_truth: Option<super::truth_incidents::IncidentScore>,
    /// The provenance file, if one was written.
    pub provenance: Option<String>,
    /// Bytes per step one AD rank contributes to each collective phase
    /// (largest rank).
    pub collective_bytes_per_step: CollectiveBytes,
    /// Collective payload received per step by the rank that receives the
    /// most, per stage (what must stay flat as AD ranks are added).
    pub collective_bytes_received_per_step: CollectiveBytes,
    /// Steps whose new names were agreed by the plain allgather because two
    /// different names shared a 64-bit hash (rare; results are the same,
    /// only that step's agreement traffic grows with the AD ranks).
    pub name_hash_collisions: u64,
    /// Collective calls per step (agreement, reduction, status, outputs).
    pub collective_calls_per_step: f64,
    /// Functions executed (on some rank) per step, on average: what the
    /// per-step work follows, rather than the functions seen.
    pub active_functions_per_step: f64,
}

/// Collective payload per step of the rank with the most (sent, or
/// received), per stage.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct CollectiveBytes {
    /// Name agreement.
    pub agree: f64,
    /// Model reduction.
    pub reduce: f64,
    /// Status exchange.
    pub status: f64,
    /// The incident nodes' exchange (stage `link`).
    pub link: f64,
}

impl CollectiveBytes {
    /// Per-step averages of byte totals (agree, reduce, status, link).
    pub fn per_step(totals: &[u64], steps: u64) -> CollectiveBytes {
        let s = steps.max(1) as f64;
        let get = |i: usize| totals.get(i).copied().unwrap_or(0) as f64 / s;
        CollectiveBytes {
            agree: get(0),
            reduce: get(1),
            status: get(2),
            link: get(3),
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

/// The end-of-run table that rank 0 prints.
pub fn summary_text(
    s: &RunSummary,
    totals: &FunctionTotals,
    names: &GlobalNames,
    det: &dyn Detector,
    top: usize,
) -> String {
    use std::fmt::Write;
    let mut text = String::new();
    let _ = writeln!(text,
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
    if let Some(t) = &s.incident_truth {
        let _ = writeln!(
            text,
            "incidents against ground truth: root recall {:.4} ({} of {}), root precision {:.4} ({} of {} occurrences); waits linked {}, in their root's incident {}, as roots {}",
            t.root_recall,
            t.roots_found,
            t.roots,
            t.root_precision,
            t.occurrences_true,
            t.occurrences,
            t.waits_linked,
            t.waits_right,
            t.waits_as_roots
        );
    }
    if let Some(t) = &s.truth {
        let _ = writeln!(
            text,
            "ground truth: {} injected; precision {:.4}, recall {:.4} (TP {}, FP {}, FN {})",
            t.injected,
            t.precision,
            t.recall,
            t.true_positives,
            t.false_positives,
            t.false_negatives
        );
    }
    function_table(&mut text, totals, names, det, top);
    let steps = s.steps.max(1) as f64;
    let parts: Vec<String> = s
        .timings
        .iter()
        .map(|(n, secs)| format!("{n} {:.3}", secs * 1e3 / steps))
        .collect();
    let _ = writeln!(
        text,
        "ms per step (slowest rank): {}; peak RSS {:.0} MB (largest rank)",
        parts.join(", "),
        s.peak_rss_mb
    );
    if s.streams_failed > 0 || s.streams_stalled > 0 {
        let _ =
            writeln!(text,
            "streams that failed: {}; stalled: {} (see the `streams` table of the provenance file)",
            s.streams_failed, s.streams_stalled
        );
    }
    if s.open_calls_at_end > 0 || s.event_issues > 0 {
        let _ = writeln!(
            text,
            "calls still open at end of stream: {}; event issues: {}",
            s.open_calls_at_end, s.event_issues
        );
    }
    text
}

/// The table of the `top` functions by anomalies: executions, anomalies
/// and the model's mean and spread of each.
fn function_table(
    text: &mut String,
    totals: &FunctionTotals,
    names: &GlobalNames,
    det: &dyn Detector,
    top: usize,
) {
    use std::fmt::Write;
    let _ = writeln!(
        *text,
        "{:>4} {:>10} {:>9} {:>12} {:>12}  function",
        "prog", "executions", "anomalies", "mean_us", "stddev_us"
    );
    for f in top_functions(totals, top) {
        let m = det.model_json(f as u32);
        // Functions the model detector judges by their ratio to a
        // performance model show the ratio's statistics.
        let (mean, stddev, prec, note) = match (m.get("mean_ratio"), m.get("stddev_ratio")) {
            (Some(r), Some(s)) => (r, s, 3, "  (runtime / model prediction)"),
            _ => (&m["mean"], &m["stddev"], 1, ""),
        };
        let _ = writeln!(
            *text,
            "{:>4} {:>10} {:>9} {:>12.prec$} {:>12.prec$}  {}{note}",
            names.functions.program(f as u32),
            totals.executions[f],
            totals.anomalies[f],
            mean.as_f64().unwrap_or(0.0),
            stddev.as_f64().unwrap_or(0.0),
            names.functions.name(f as u32)
        );
    }
}

/// One function of the model and summary files.
fn function_json(
    f: u32,
    names: &GlobalNames,
    det: &dyn Detector,
    totals: &FunctionTotals,
    with_model: bool,
) -> serde_json::Value {
    let i = f as usize;
    let mut v = serde_json::json!({
        "index": f,
        "program": names.functions.program(f),
        "name": names.functions.name(f),
        "executions": totals.executions.get(i).copied().unwrap_or(0),
        "anomalies": totals.anomalies.get(i).copied().unwrap_or(0),
        "unlabeled": totals.unlabeled.get(i).copied().unwrap_or(0),
    });
    if with_model {
        v["model"] = det.model_json(f);
    }
    v
}

/// What the run summary's JSON (`--summary-out`) says of each function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SummaryFunctions {
    /// No `functions` array: the run's numbers and incidents only.
    None,
    /// Each function's name, program and counts (the name and about 90
    /// bytes each).
    #[default]
    Counts,
    /// The counts and each function's final model (its histogram or
    /// moments: kilobytes each; `--model-out` writes the same models).
    Models,
}

impl SummaryFunctions {
    /// From `none`, `counts` or `models`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(SummaryFunctions::None),
            "counts" => Ok(SummaryFunctions::Counts),
            "models" => Ok(SummaryFunctions::Models),
            _ => Err(format!("{s:?}: give none, counts or models")),
        }
    }
}

impl std::fmt::Display for SummaryFunctions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SummaryFunctions::None => "none",
            SummaryFunctions::Counts => "counts",
            SummaryFunctions::Models => "models",
        })
    }
}

/// Writes `first` (a member written before the others, when given),
/// `head`'s members and then a `functions` array to `p`, one function at a
/// time: with 10^5 functions the whole document as one JSON value would
/// take hundreds of megabytes, streamed it takes one function.
fn write_with_functions(
    p: &Path,
    (first, head): (Option<(&str, serde_json::Value)>, serde_json::Value),
    which: SummaryFunctions,
    names: &GlobalNames,
    det: &dyn Detector,
    totals: &FunctionTotals,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    let write = || -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(std::fs::File::create(p)?);
        w.write_all(b"{\n")?;
        let mut members: Vec<(String, serde_json::Value)> =
            first.map(|(k, v)| (k.to_owned(), v)).into_iter().collect();
        if let serde_json::Value::Object(head) = head {
            members.extend(head);
        }
        let n = members.len();
        for (i, (k, v)) in members.into_iter().enumerate() {
            // Every member is followed by another, but the last one when no
            // functions follow.
            let sep = if i + 1 == n && which == SummaryFunctions::None {
                ""
            } else {
                ","
            };
            writeln!(w, "  {}: {v}{sep}", serde_json::Value::String(k))?;
        }
        if which == SummaryFunctions::None {
            w.write_all(b"}\n")?;
            return w.flush();
        }
        let with_model = which == SummaryFunctions::Models;
        w.write_all(b"  \"functions\": [")?;
        for f in 0..names.functions.len() as u32 {
            let sep = if f == 0 { "" } else { "," };
            let v = function_json(f, names, det, totals, with_model);
            write!(w, "{sep}\n    {v}")?;
        }
        w.write_all(b"\n  ]\n}\n")?;
        w.flush()
    };
    write().with_context(|| format!("writing {}", p.display()))
}

/// The final global model as JSON.
pub fn write_model(
    p: &Path,
    names: &GlobalNames,
    det: &dyn Detector,
    totals: &FunctionTotals,
) -> anyhow::Result<()> {
    let head = serde_json::json!({
        "algorithm": det.name(),
        "digest": format!("{:016x}", det.digest()),
    });
    let which = SummaryFunctions::Models;
    write_with_functions(p, (None, head), which, names, det, totals)
}

/// The run summary as JSON (for benchmarks and scripts), the incidents
/// first.
pub fn write_summary(
    (p, which): (&Path, SummaryFunctions),
    s: &RunSummary,
    incidents: Option<&crate::incidents::IncidentList>,
    totals: &FunctionTotals,
    names: &GlobalNames,
    det: &dyn Detector,
) -> anyhow::Result<()> {
    let first = incidents.map(|l| ("incidents", l.to_json()));
    let mut head = serde_json::to_value(s)?;
    // Says which form the functions take (`--summary-functions`).
    head["functions_written"] = serde_json::Value::String(which.to_string());
    let parts = (first, head);
    write_with_functions(p, parts, which, names, det, totals)
}
