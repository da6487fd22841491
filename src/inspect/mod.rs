//! `chimbuko-mpi inspect`: a provenance file summarised for people (text)
//! and for scripts (`--json`, the same content as one JSON document):
//! whether the run completed, what it was in one line, its incidents (the
//! problems that cost it time, costliest first), then anomalies per
//! function and per rank (labelled with their program) and the worst
//! anomalies with their call stacks — and, for runs of the model detector,
//! what the model predicted for them. The run's settings (every root
//! attribute, the configuration pretty-printed) come with `--settings`.
//!
//! This room holds what users read of a provenance file from the command
//! line: this summary, `export --json` of TAU runs ([`export_json`]) and
//! what `inspect` and `export` show of ROSS runs ([`ross`]). The file
//! itself is read by `crate::provenance`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

pub mod command;
pub mod export_json;
pub mod ross;

use crate::provenance::read::{own_stack, slice, Provenance};
use crate::provenance::records::{ExecRecord, StreamRow, LABEL_ANOMALY};
use crate::trace::format::{split_stream_name, TAU_IO_NAME};

/// What `inspect` shows.
#[derive(Debug, Clone, Copy)]
pub struct InspectOptions {
    /// Rows of the per-function table.
    pub top: usize,
    /// Worst anomalies listed with their call stacks.
    pub worst: usize,
    /// Show every root attribute (the run's settings) in the text.
    pub settings: bool,
}

/// A program's short name from one of its streams' paths:
/// `…/tau-metrics-main1-0.bp` → `main1` (TAU's default prefix and the
/// rank removed; a name that is not TAU's keeps its file name).
fn program_name(path: &str) -> String {
    let p = Path::new(path);
    let head = match split_stream_name(p) {
        Some((head, _)) => head.to_owned(),
        None => {
            let file = p
                .file_name()
                .map_or(path.into(), |f| f.to_string_lossy().into_owned());
            file.strip_suffix(".bp").map_or(file.clone(), str::to_owned)
        }
    };
    let tau = format!("{TAU_IO_NAME}-");
    head.strip_prefix(&tau).map_or(head.clone(), str::to_owned)
}

/// Each program's name, by program index, from the `streams` table.
pub fn program_names(p: &Provenance) -> BTreeMap<u32, String> {
    let mut out = BTreeMap::new();
    for s in &p.streams {
        out.entry(s.pid)
            .or_insert_with(|| program_name(s.path.as_str()));
    }
    out
}

/// `main1:3` (program name, or index when unknown, and application rank).
pub fn rank_label(names: &BTreeMap<u32, String>, pid: u32, rid: u64) -> String {
    match names.get(&pid) {
        Some(n) if !n.is_empty() => format!("{n}:{rid}"),
        _ => format!("{pid}:{rid}"),
    }
}

/// An attribute's value: JSON when it holds a JSON object or list, else
/// the text.
fn attr_value(v: &str) -> Value {
    let t = v.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        if let Ok(j) = serde_json::from_str(v) {
            return j;
        }
    }
    Value::String(v.to_owned())
}

/// Whether the run wrote its final state (`completed = 1`).
pub fn completed(p: &Provenance) -> bool {
    p.attrs.get("completed").map(String::as_str) != Some("0")
}

/// The summary as one JSON document.
pub fn inspect_json(p: &Provenance, o: InspectOptions) -> Value {
    let names = program_names(p);
    let anomalies: Vec<&ExecRecord> = p.kept(0).map(|(_, r)| r).collect();
    let attrs: serde_json::Map<String, Value> = p
        .attrs
        .iter()
        .map(|(k, v)| (k.clone(), attr_value(v)))
        .collect();
    let (funcs, ranks) = tallies(&anomalies);
    let d = &p.collections[0];
    let worst: Vec<Value> = worst(p, o.worst)
        .into_iter()
        .map(|r| {
            let stack: Vec<Value> =
                own_stack(slice(&d.call_stack, r.call_stack_start, r.call_stack_len))
                    .iter()
                    .map(|f| {
                        json!({"function": p.function_name(f.fid), "event_id": f.event_id.as_str(),
                           "level": f.level, "running": f.exit == 0})
                    })
                    .collect();
            let mut w = json!({
                "event_id": r.event_id.as_str(),
                "function": p.function_name(r.fid),
                "program": r.pid,
                "program_name": names.get(&r.pid),
                "rank": r.rid,
                "thread": r.tid,
                "exclusive_us": r.runtime_exclusive,
                "inclusive_us": r.runtime_total,
                "score": r.final_score,
                "step": r.io_step,
                "call_stack": stack,
            });
            if r.model_prediction_us.is_finite() {
                w["model_prediction_us"] = json!(r.model_prediction_us);
                w["model_ratio"] = json!(r.model_ratio);
            }
            w
        })
        .collect();
    json!({
        "completed": completed(p),
        "streams": p.streams.iter().map(|r| stream_json(&names, r)).collect::<Vec<_>>(),
        "incidents": p.incidents.to_json(),
        "attributes": attrs,
        "anomalies": anomalies.len(),
        "labelled_in_situ": in_situ(p),
        "normal_samples": p.kept(1).count(),
        "functions": p.functions.len(),
        "per_function": funcs.iter().take(o.top).map(|(fid, (n, max))| json!({
            "function": p.function_name(*fid), "anomalies": n, "max_score": max})).collect::<Vec<_>>(),
        "per_rank": ranks.iter().map(|((pid, rid), n)| json!({
            "program": pid, "program_name": names.get(pid), "rank": rid,
            "label": rank_label(&names, *pid, *rid), "anomalies": n})).collect::<Vec<_>>(),
        "worst": worst,
    })
}

/// Anomalies labelled in situ (before the end-of-run re-judgement).
pub fn in_situ(p: &Provenance) -> usize {
    p.collections[0]
        .records
        .iter()
        .filter(|r| r.label == LABEL_ANOMALY)
        .count()
}

type Tallies = (Vec<(u32, (u64, f64))>, BTreeMap<(u32, u64), u64>);

/// Anomalies per function (most first, with the highest score) and per
/// (program, rank).
fn tallies(anomalies: &[&ExecRecord]) -> Tallies {
    let mut by_func: BTreeMap<u32, (u64, f64)> = BTreeMap::new();
    let mut by_rank: BTreeMap<(u32, u64), u64> = BTreeMap::new();
    for r in anomalies {
        let e = by_func.entry(r.fid).or_default();
        e.0 += 1;
        e.1 = e.1.max(r.final_score);
        *by_rank.entry((r.pid, r.rid)).or_default() += 1;
    }
    let mut funcs: Vec<(u32, (u64, f64))> = by_func.into_iter().collect();
    funcs.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    (funcs, by_rank)
}

/// The `n` highest-scoring kept anomalies (ties by event id).
fn worst(p: &Provenance, n: usize) -> Vec<&ExecRecord> {
    let mut all: Vec<&ExecRecord> = p.kept(0).map(|(_, r)| r).collect();
    all.sort_by(|a, b| {
        b.final_score
            .total_cmp(&a.final_score)
            .then(a.event_id.as_str().cmp(b.event_id.as_str()))
    });
    all.truncate(n);
    all
}

/// Prints the summary for people.
pub fn print_inspect(
    p: &Provenance,
    out: &mut dyn Write,
    o: InspectOptions,
) -> std::io::Result<()> {
    let names = program_names(p);
    print_run_line(p, &names, out)?;
    print_stream_health(p, &names, out)?;
    out.write_all(
        crate::incidents::text::list_text(&p.incidents, crate::incidents::Source::Tau, o.top)
            .as_bytes(),
    )?;
    if o.settings {
        print_settings(p, out)?;
    }
    let anomalies: Vec<&ExecRecord> = p.kept(0).map(|(_, r)| r).collect();
    writeln!(
        out,
        "\n{} anomalies ({} labelled in situ; {} normal samples), {} functions, {} steps x streams",
        anomalies.len(),
        in_situ(p),
        p.kept(1).count(),
        p.functions.len(),
        p.steps.len()
    )?;
    print_tallies(p, &names, &anomalies, out, o.top)?;
    print_worst(p, &names, out, o.worst)
}

/// How a stream ended, in words: `ended`, `failed at step N: why`,
/// `stalled at step N after S s`, or `still reading` (the run stopped
/// first).
fn stream_end(r: &StreamRow) -> String {
    match r.state.as_str() {
        "failed" => format!("failed at step {}: {}", r.stopped_at, r.message.as_str()),
        "stalled" => format!(
            "stalled at step {} after {:.1} s without a new step",
            r.stopped_at, r.stalled_after_s
        ),
        "reading" => "still reading when the run stopped".to_owned(),
        other => other.to_owned(),
    }
}

/// One stream of the file as `inspect --json` shows it.
fn stream_json(names: &BTreeMap<u32, String>, r: &StreamRow) -> Value {
    json!({
        "program": r.pid,
        "rank": r.rid,
        "label": rank_label(names, r.pid, r.rid),
        "state": r.state.as_str(),
        "ended": stream_end(r),
        "steps": r.steps,
        "rows": r.rows,
        // The file's 2^64-1 ("did not stop") is no step: null.
        "stopped_at": (r.state.as_str() != "ended" && r.stopped_at != u64::MAX)
            .then_some(r.stopped_at),
        "stalled_after_s": (r.state.as_str() == "stalled").then_some(r.stalled_after_s),
        "message": (!r.message.as_str().is_empty()).then(|| r.message.as_str().to_owned()),
    })
}

/// When any stream did not end cleanly, says so right after the run's
/// line: how many, and how each of them ended.
fn print_stream_health(
    p: &Provenance,
    names: &BTreeMap<u32, String>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let bad: Vec<&StreamRow> = p
        .streams
        .iter()
        .filter(|r| r.state.as_str() != "ended")
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "warning: {} of {} stream(s) did not end cleanly:",
        bad.len(),
        p.streams.len()
    )?;
    for r in bad {
        writeln!(
            out,
            "  {} ({} steps read): {}",
            rank_label(names, r.pid, r.rid),
            r.steps,
            stream_end(r)
        )?;
    }
    Ok(())
}

/// Whether the run completed (a warning when it did not), and the run in
/// one line.
fn print_run_line(
    p: &Provenance,
    names: &BTreeMap<u32, String>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if !completed(p) {
        let why = p
            .attrs
            .get("stopped_by")
            .map(|s| format!(" (stopped by {s})"))
            .unwrap_or_default();
        writeln!(
            out,
            "warning: the run did not complete{why}: completed = 0, the file holds the {} step(s) flushed before it stopped\n",
            p.attrs.get("steps_written").map_or("?", String::as_str)
        )?;
    }
    let a = |k: &str| p.attrs.get(k).map_or("?", String::as_str);
    let programs: Vec<&str> = names.values().map(String::as_str).collect();
    writeln!(
        out,
        "{}: {} stream(s) on {} AD rank(s), {} step(s), detector {}, {} .. {}",
        programs.join(", "),
        p.streams.len(),
        a("ad_ranks"),
        a("steps_written"),
        a("algorithm"),
        a("start_time"),
        a("end_time"),
    )
}

/// Every root attribute, JSON values pretty-printed (`--settings`).
fn print_settings(p: &Provenance, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "\nrun")?;
    for (k, v) in &p.attrs {
        match attr_value(v) {
            Value::String(s) => writeln!(out, "  {k}: {s}")?,
            j => {
                let pretty = serde_json::to_string_pretty(&j).unwrap_or_else(|_| v.clone());
                writeln!(out, "  {k}:")?;
                for line in pretty.lines() {
                    writeln!(out, "    {line}")?;
                }
            }
        }
    }
    Ok(())
}

/// The anomalies per function (the `top` first) and per rank.
fn print_tallies(
    p: &Provenance,
    names: &BTreeMap<u32, String>,
    anomalies: &[&ExecRecord],
    out: &mut dyn Write,
    top: usize,
) -> std::io::Result<()> {
    let (funcs, ranks) = tallies(anomalies);
    writeln!(out, "\nanomalies per function")?;
    writeln!(out, "{:>9} {:>10}  function", "anomalies", "max score")?;
    for (fid, (n, max)) in funcs.iter().take(top) {
        writeln!(out, "{n:>9} {max:>10.2}  {}", p.function_name(*fid))?;
    }
    writeln!(out, "\nanomalies per rank (program:rank)")?;
    let line: Vec<String> = ranks
        .iter()
        .map(|((pid, rid), n)| format!("{}={n}", rank_label(names, *pid, *rid)))
        .collect();
    writeln!(out, "  {}", line.join("  "))
}

/// The `n` worst anomalies, each with its call stack.
fn print_worst(
    p: &Provenance,
    names: &BTreeMap<u32, String>,
    out: &mut dyn Write,
    n: usize,
) -> std::io::Result<()> {
    writeln!(out, "\nworst anomalies")?;
    let d = &p.collections[0];
    for r in worst(p, n) {
        let model = if r.model_prediction_us.is_finite() {
            format!(
                ", model predicted {:.1} us ({:.2}x)",
                r.model_prediction_us, r.model_ratio
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "  {} {} on {} thread {}: exclusive {} us, total {} us, score {:.2}, step {}{model}",
            r.event_id.as_str(),
            p.function_name(r.fid),
            rank_label(names, r.pid, r.rid),
            r.tid,
            r.runtime_exclusive,
            r.runtime_total,
            r.final_score,
            r.io_step
        )?;
        for f in own_stack(slice(&d.call_stack, r.call_stack_start, r.call_stack_len)) {
            writeln!(
                out,
                "      {:indent$}{} ({}{})",
                "",
                p.function_name(f.fid),
                f.event_id.as_str(),
                if f.exit == 0 { ", still running" } else { "" },
                indent = 2 * f.level as usize
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_names_from_stream_paths() {
        assert_eq!(program_name("/x/tau-metrics-main1-12.bp"), "main1");
        assert_eq!(program_name("tau-metrics-large-0.bp"), "large");
        assert_eq!(program_name("/x/app.bp"), "app");
        assert_eq!(program_name("run-a-b-3.bp"), "run-a-b");
    }

    #[test]
    fn json_attributes_are_parsed() {
        assert_eq!(attr_value("[1,2]"), json!([1, 2]));
        assert_eq!(attr_value("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(attr_value("modal"), json!("modal"));
        assert_eq!(attr_value("[not json"), json!("[not json"));
    }
}
