//! The report of a `run` (TAU traces): incidents, overview, ranking of
//! ranks, anomalies over time, functions, the anomaly list with one
//! anomaly's detail, and — for runs of the model detector — predicted
//! against actual runtimes.
//!
//! Everything comes from the provenance file through
//! [`crate::provenance::read::Provenance`]; the headline numbers are those of
//! `inspect --json`, computed by the same code.
//!
//! This file is long because it builds every section of the page from the
//! same loaded file: splitting it would pass that state between files for
//! no gain in clarity.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::{json, Value};

use super::charts::{self, ModelShape, Series};
use super::page::{cell, escape, header, human, stat, Page};
use crate::inspect::{completed, in_situ, program_names, rank_label};
use crate::provenance::read::{own_stack, slice, Provenance};
use crate::provenance::records::ExecRecord;

/// Anomalies whose execution window and messages are kept in the page (the
/// worst by score); every anomaly keeps its call stack.
pub const DETAILED_ANOMALIES: usize = 5000;
/// Functions with their own charts (those with anomalies first).
const CHARTED_FUNCTIONS: usize = 80;
/// Ranks in the heatmap and with their own over-time chart.
const HEATMAP_RANKS: usize = 40;
const RANK_CHARTS: usize = 8;
/// Columns of the heatmap at most (steps are binned beyond).
const HEATMAP_COLUMNS: usize = 200;

/// Builds the page of a TAU run's provenance file.
pub fn tau_page(p: &Provenance, file: &Path, file_bytes: u64) -> Page {
    let names = program_names(p);
    let ranks = RankIndex::new(p, &names);
    let anomalies: Vec<&ExecRecord> = p.kept(0).map(|(_, r)| r).collect();
    let use_inclusive = algorithm_param(p, "use_inclusive").and_then(|v| v.as_bool()) == Some(true);
    let runtime = |r: &ExecRecord| {
        if use_inclusive {
            r.runtime_total
        } else {
            r.runtime_exclusive
        }
    };
    let t0 = p
        .steps
        .iter()
        .map(|s| s.min_timestamp)
        .filter(|&t| t > 0)
        .min()
        .or_else(|| anomalies.iter().map(|r| r.entry).min())
        .unwrap_or(0);

    let mut sections = vec![
        (
            "incidents".to_owned(),
            "Incidents".to_owned(),
            super::incidents::incidents_section(&p.incidents, crate::incidents::Source::Tau),
        ),
        (
            "overview".to_owned(),
            "Overview".to_owned(),
            overview(p, file, file_bytes, &anomalies),
        ),
    ];
    sections.push((
        "ranking".into(),
        "Ranking".into(),
        ranking(p, &ranks, &anomalies),
    ));
    sections.push((
        "over-time".into(),
        "Over time".into(),
        over_time(&ranks, &anomalies),
    ));
    let (functions_html, func_charts) = functions(p, &anomalies, use_inclusive, runtime, t0);
    sections.push(("functions".into(), "Functions".into(), functions_html));
    sections.push((
        "anomalies".into(),
        "Anomalies".into(),
        anomaly_section(anomalies.len()),
    ));
    if let Some(m) = model_section(p, &anomalies, runtime) {
        sections.push(("models".into(), "Models".into(), m));
    }
    let data = json!({
        "kind": "tau",
        "runtime": if use_inclusive { "inclusive" } else { "exclusive" },
        "t0": t0,
        "functions": p.functions.iter().map(|f| json!([f.fid, f.name.as_str()])).collect::<Vec<_>>(),
        "counters": p.counters.iter().map(|c| json!([c.counter_idx, c.name.as_str()])).collect::<Vec<_>>(),
        "func_charts": func_charts,
        "ranks": ranks.labels,
        "anomalies": anomaly_data(p, &ranks, &anomalies),
    });
    let warning = (!completed(p)).then(|| {
        format!(
            "This run is incomplete (completed = 0{}): the file holds the steps written before it stopped ({} step(s)).",
            p.attrs
                .get("stopped_by")
                .map_or(String::new(), |s| format!(", stopped by {s}")),
            p.attrs.get("steps_written").map_or("?", String::as_str)
        )
    });
    Page {
        title: format!("chimbuko-mpi report: {}", file.display()),
        warning,
        sections,
        data,
    }
}

/// A value of the `algorithm_params` attribute.
fn algorithm_param(p: &Provenance, key: &str) -> Option<Value> {
    let params: Value = serde_json::from_str(p.attrs.get("algorithm_params")?).ok()?;
    params.get(key).cloned()
}

/// Ranks (program, application rank) in a fixed order, with their labels.
struct RankIndex {
    labels: Vec<String>,
    index: HashMap<(u32, u64), usize>,
}

impl RankIndex {
    fn new(p: &Provenance, names: &BTreeMap<u32, String>) -> RankIndex {
        let mut keys: Vec<(u32, u64)> = p.streams.iter().map(|s| (s.pid, s.rid)).collect();
        keys.extend(p.steps.iter().map(|s| (s.pid, s.rid)));
        keys.extend(p.collections[0].records.iter().map(|r| (r.pid, r.rid)));
        keys.sort_unstable();
        keys.dedup();
        RankIndex {
            labels: keys
                .iter()
                .map(|&(pid, rid)| rank_label(names, pid, rid))
                .collect(),
            index: keys.iter().enumerate().map(|(i, &k)| (k, i)).collect(),
        }
    }

    fn of(&self, pid: u32, rid: u64) -> usize {
        self.index.get(&(pid, rid)).copied().unwrap_or(0)
    }
}

fn overview(p: &Provenance, file: &Path, file_bytes: u64, anomalies: &[&ExecRecord]) -> String {
    let a = |k: &str| p.attrs.get(k).map_or("", String::as_str);
    let executions: u64 = p.steps.iter().map(|s| s.executions).sum();
    let rows: u64 = p.streams.iter().map(|s| s.rows).sum();
    let programs = program_names(p);
    let mut html = String::from("<h2>Overview</h2><div class=\"stats\">");
    html += &stat("anomalies", "anomalies", anomalies.len());
    html += &stat("labelled_in_situ", "labelled in situ", in_situ(p));
    html += &stat("normal_samples", "normal samples", p.kept(1).count());
    html += &stat("executions", "executions", executions);
    html += &stat("functions", "functions", p.functions.len());
    html += &stat("programs", "programs", programs.len());
    html += &stat("streams", "streams", p.streams.len());
    html += &stat("steps_written", "steps", a("steps_written"));
    html += &stat("ad_ranks", "AD ranks", a("ad_ranks"));
    html += "</div>";

    // What ran.
    html += "<h3>What ran</h3><table class=\"kv\">";
    let mut kv = |k: &str, v: &str| {
        html += &format!("<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v))
    };
    kv("file", &file.display().to_string());
    kv("written by", a("program"));
    kv("command line", a("command_line"));
    kv("started", a("start_time"));
    kv("ended", a("end_time"));
    kv("completed", if completed(p) { "yes" } else { "no" });
    kv("detector", a("algorithm"));
    let prog_list: Vec<String> = programs.iter().map(|(i, n)| format!("{i}: {n}")).collect();
    kv("programs", &prog_list.join(", "));
    kv("schema version", a("schema_version"));
    html += "</table>";

    // Data reduction.
    let trace_bytes = input_bytes(p);
    html += "<h3>Data</h3><table class=\"kv\">";
    let (trace, how) = match trace_bytes {
        Some(b) => (b, "the input streams on disk"),
        None => (rows * 48, "estimated: 48 bytes per row read"),
    };
    html += &format!(
        "<tr><th>trace rows read</th><td data-stat=\"rows\" data-value=\"{rows}\">{}</td></tr>",
        human(rows as f64)
    );
    html += &format!(
        "<tr><th>trace bytes</th><td>{} ({how})</td></tr><tr><th>provenance file</th><td>{}</td></tr>",
        human_bytes(trace),
        human_bytes(file_bytes)
    );
    if file_bytes > 0 {
        html += &format!(
            "<tr><th>reduction</th><td>{:.1}× (trace bytes per file byte)</td></tr>",
            trace as f64 / file_bytes as f64
        );
    }
    html += "</table>";

    html += &health(p);
    html += &cost(p);
    html += &settings(p);
    html
}

/// Bytes of the input streams that are still on disk (BP directories), or
/// `None` when any is not there (SST, moved or deleted files).
fn input_bytes(p: &Provenance) -> Option<u64> {
    let mut total = 0;
    for s in &p.streams {
        let path = Path::new(s.path.as_str());
        let dir = std::fs::read_dir(path).ok()?;
        for e in dir.flatten() {
            total += e.metadata().map_or(0, |m| m.len());
        }
    }
    (!p.streams.is_empty()).then_some(total)
}

fn human_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.2} GB", b as f64 / 1e9),
        b if b >= 1 << 20 => format!("{:.2} MB", b as f64 / 1e6),
        b if b >= 1 << 10 => format!("{:.1} kB", b as f64 / 1e3),
        b => format!("{b} B"),
    }
}

/// Streams that ended, stalled or failed, and the reader's issue counts.
fn health(p: &Provenance) -> String {
    let mut by_state: BTreeMap<&str, u64> = BTreeMap::new();
    for s in &p.streams {
        *by_state.entry(s.state.as_str()).or_default() += 1;
    }
    let issues: u64 = p.streams.iter().map(|s| s.issues).sum();
    let mut html = String::from("<h3>Health</h3><div class=\"stats\">");
    for (state, n) in &by_state {
        html += &stat(&format!("streams_{state}"), &format!("streams {state}"), n);
    }
    html += &stat("reader_issues", "reader issues", issues);
    html += "</div>";
    let troubled: Vec<_> = p
        .streams
        .iter()
        .filter(|s| s.state.as_str() != "ended" || s.issues > 0)
        .take(50)
        .collect();
    if !troubled.is_empty() {
        html += "<table class=\"data\"><thead><tr><th>stream</th><th>state</th><th>steps</th><th>issues</th><th>message</th></tr></thead><tbody>";
        for s in troubled {
            html += &format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(s.path.as_str()),
                escape(s.state.as_str()),
                s.steps,
                escape(s.issue_counts.as_str()),
                escape(s.message.as_str())
            );
        }
        html += "</tbody></table>";
    }
    html
}

/// The AD's own cost per step (the slowest AD rank) and per stage.
fn cost(p: &Provenance) -> String {
    if p.ad_perf.is_empty() {
        return String::new();
    }
    let stages = [
        "read", "agree", "build", "reduce", "label", "link", "collect", "write", "trim", "status",
    ];
    let mut per_step: BTreeMap<u64, f64> = BTreeMap::new();
    let mut sums = [0.0f64; 10];
    for r in &p.ad_perf {
        let v = [
            r.read, r.agree, r.build, r.reduce, r.label, r.link, r.collect, r.write, r.trim,
            r.status,
        ];
        let total: f64 = v.iter().sum();
        let e = per_step.entry(r.io_step).or_default();
        *e = e.max(total * 1e3);
        for (s, x) in sums.iter_mut().zip(v) {
            *s += x;
        }
    }
    let n = p.ad_perf.len() as f64;
    let mut html = String::from("<h3>The AD's own cost</h3><table class=\"data\"><thead><tr>");
    for s in stages {
        html += &format!("<th>{s}</th>");
    }
    html += "</tr></thead><tbody><tr>";
    for s in sums {
        html += &format!("<td>{:.3} ms</td>", s / n * 1e3);
    }
    html += "</tr></tbody></table><p class=\"note\">Mean per AD rank and step.</p>";
    html += &charts::lines(
        "Time per step (slowest AD rank)",
        "step",
        "ms",
        &[Series {
            name: "all stages".into(),
            points: per_step.iter().map(|(&s, &ms)| (s as f64, ms)).collect(),
        }],
        &[],
    );
    html
}

/// The run's settings and where each came from.
fn settings(p: &Provenance) -> String {
    let Some(conf) = p
        .attrs
        .get("configuration")
        .and_then(|c| serde_json::from_str::<Vec<Value>>(c).ok())
    else {
        return String::new();
    };
    let mut html = String::from(
        "<details><summary>Settings and their sources</summary><table class=\"data\"><thead><tr><th>setting</th><th>value</th><th>from</th></tr></thead><tbody>",
    );
    for c in conf {
        let s = |k: &str| match &c[k] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            v => v.to_string(),
        };
        html += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&s("name")),
            escape(&s("value")),
            escape(&s("source"))
        );
    }
    html + "</tbody></table></details>"
}

/// Ranks by anomaly count and anomalous time, and the rank × step heatmap.
fn ranking(p: &Provenance, ranks: &RankIndex, anomalies: &[&ExecRecord]) -> String {
    let n = ranks.labels.len();
    let mut count = vec![0u64; n];
    let mut time = vec![0u64; n];
    let mut executions = vec![0u64; n];
    for r in anomalies {
        let i = ranks.of(r.pid, r.rid);
        count[i] += 1;
        time[i] += r.runtime_exclusive;
    }
    for s in &p.steps {
        executions[ranks.of(s.pid, s.rid)] += s.executions;
    }
    let mut html = String::from("<h2>Ranking</h2><p class=\"note\">Ranks as program:rank, by anomalies (click a header to sort).</p>");
    html += "<table class=\"data sortable\" id=\"rank-table\"><thead><tr>";
    html += &header("rank", "rank", false);
    html += &header("anomalies", "anomalies", true);
    html += &header("anomalous_ms", "anomalous time (ms, exclusive)", true);
    html += &header("executions", "executions", true);
    html += &header("rate", "anomalies per 10⁴ executions", true);
    html += "</tr></thead><tbody>";
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        count[b]
            .cmp(&count[a])
            .then(time[b].cmp(&time[a]))
            .then(a.cmp(&b))
    });
    for &i in &order {
        let rate = if executions[i] > 0 {
            count[i] as f64 * 1e4 / executions[i] as f64
        } else {
            0.0
        };
        html += &format!("<tr data-rank=\"{}\">", escape(&ranks.labels[i]));
        html += &cell("rank", &ranks.labels[i], &ranks.labels[i]);
        html += &cell("anomalies", count[i], &human(count[i] as f64));
        html += &cell(
            "anomalous_ms",
            time[i] as f64 / 1e3,
            &human(time[i] as f64 / 1e3),
        );
        html += &cell("executions", executions[i], &human(executions[i] as f64));
        html += &cell("rate", rate, &human(rate));
        html += "</tr>";
    }
    html += "</tbody></table>";

    // Heatmap of the ranks with the most anomalies.
    let rows: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| count[i] > 0)
        .take(HEATMAP_RANKS)
        .collect();
    let max_step = anomalies.iter().map(|r| r.io_step).max().unwrap_or(0);
    let width = (max_step as usize + 1).div_ceil(HEATMAP_COLUMNS).max(1);
    let cols: Vec<u64> = (0..=max_step as usize)
        .step_by(width)
        .map(|s| s as u64)
        .collect();
    let pos: HashMap<usize, usize> = rows.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let mut cells = vec![vec![0u64; cols.len()]; rows.len()];
    for r in anomalies {
        if let Some(&k) = pos.get(&ranks.of(r.pid, r.rid)) {
            cells[k][r.io_step as usize / width] += 1;
        }
    }
    let labels: Vec<String> = rows.iter().map(|&i| ranks.labels[i].clone()).collect();
    html += &format!(
        "<h3>Anomalies per rank and step</h3><div class=\"chart\">{}</div>",
        charts::heatmap(
            &format!(
                "{} rank(s) with the most anomalies{}",
                rows.len(),
                if width > 1 {
                    format!(", {width} steps per column")
                } else {
                    String::new()
                }
            ),
            &labels,
            &cols,
            &cells
        )
    );
    html
}

/// Anomalies per step, for all ranks and for the ranks with the most.
fn over_time(ranks: &RankIndex, anomalies: &[&ExecRecord]) -> String {
    let max_step = anomalies.iter().map(|r| r.io_step).max().unwrap_or(0);
    let per_step = |filter: &dyn Fn(&ExecRecord) -> bool| -> Vec<(f64, f64)> {
        let mut v = vec![0u64; max_step as usize + 1];
        for r in anomalies.iter().filter(|r| filter(r)) {
            v[r.io_step as usize] += 1;
        }
        v.iter()
            .enumerate()
            .map(|(s, &c)| (s as f64, c as f64))
            .collect()
    };
    let mut html = String::from("<h2>Over time</h2>");
    html += &charts::lines(
        "Anomalies per step, all ranks",
        "step",
        "anomalies",
        &[Series {
            name: "all ranks".into(),
            points: if anomalies.is_empty() {
                Vec::new()
            } else {
                per_step(&|_| true)
            },
        }],
        &[],
    );
    let mut counts: BTreeMap<usize, u64> = BTreeMap::new();
    for r in anomalies {
        *counts.entry(ranks.of(r.pid, r.rid)).or_default() += 1;
    }
    let mut top: Vec<(usize, u64)> = counts.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(RANK_CHARTS);
    if top.is_empty() {
        return html;
    }
    html += "<p><label for=\"rank-select\">Rank: </label><select id=\"rank-select\">";
    for (k, (i, n)) in top.iter().enumerate() {
        html += &format!(
            "<option value=\"{k}\">{} ({n} anomalies)</option>",
            escape(&ranks.labels[*i])
        );
    }
    html += "</select></p>";
    for (k, (i, _)) in top.iter().enumerate() {
        let idx = *i;
        let svg = charts::lines(
            &format!("Anomalies per step, {}", ranks.labels[idx]),
            "step",
            "anomalies",
            &[Series {
                name: ranks.labels[idx].clone(),
                points: per_step(&|r| ranks.of(r.pid, r.rid) == idx),
            }],
            &[],
        );
        html += &format!(
            "<div class=\"chart rank-chart\" data-rank-chart=\"{k}\"{}>{svg}</div>",
            if k == 0 { "" } else { " hidden" }
        );
    }
    html
}

/// The function table, and the charts of the functions that have them
/// (by function index, for the script).
fn functions(
    p: &Provenance,
    anomalies: &[&ExecRecord],
    use_inclusive: bool,
    runtime: impl Fn(&ExecRecord) -> u64,
    t0: u64,
) -> (String, Value) {
    let per_func = anomalies_per_function(anomalies);
    let html = function_table(p, &per_func, use_inclusive);
    let chosen = charted_functions(p, &per_func, use_inclusive);
    let charts = function_charts(p, anomalies, chosen, &runtime, t0);
    (html, charts)
}

/// Per function index: (number of anomalies, worst score) over `anomalies`.
fn anomalies_per_function(anomalies: &[&ExecRecord]) -> HashMap<u32, (u64, f64)> {
    let mut per_func: HashMap<u32, (u64, f64)> = HashMap::new();
    for r in anomalies {
        let e = per_func.entry(r.fid).or_insert((0, f64::NEG_INFINITY));
        e.0 += 1;
        e.1 = e.1.max(r.final_score);
    }
    per_func
}

/// A function's (calls, mean, standard deviation) of the runtime the
/// report shows: inclusive or exclusive.
fn runtime_stats(
    s: &crate::provenance::records::FuncStatsRow,
    use_inclusive: bool,
) -> (u64, f64, f64) {
    if use_inclusive {
        (s.inclusive_count, s.inclusive_mean, s.inclusive_stddev)
    } else {
        (s.exclusive_count, s.exclusive_mean, s.exclusive_stddev)
    }
}

/// The heading, filter and sortable table of every function (calls,
/// runtime statistics, anomalies), with the empty box its charts go in.
fn function_table(
    p: &Provenance,
    per_func: &HashMap<u32, (u64, f64)>,
    use_inclusive: bool,
) -> String {
    let stats: HashMap<u32, &_> = p.func_stats.iter().map(|s| (s.fid, s)).collect();
    let mut html = String::from(
        "<h2>Functions</h2><p><input id=\"function-filter\" type=\"search\" placeholder=\"filter by name\"> <span class=\"note\">Click a header to sort, a row for its charts.</span></p>",
    );
    html += "<table class=\"data sortable\" id=\"function-table\"><thead><tr>";
    html += &header("name", "function", false);
    html += &header("calls", "calls", true);
    html += &header("mean_us", "mean (µs)", true);
    html += &header("stddev_us", "σ (µs)", true);
    html += &header("anomalies", "anomalies", true);
    html += &header("worst_score", "worst score", true);
    html += "</tr></thead><tbody>";
    for f in &p.functions {
        let (calls, mean, sd) = stats
            .get(&f.fid)
            .map_or((0, f64::NAN, f64::NAN), |s| runtime_stats(s, use_inclusive));
        let (n, worst) = per_func.get(&f.fid).copied().unwrap_or((0, f64::NAN));
        html += &format!("<tr data-fid=\"{}\">", f.fid);
        html += &cell("name", f.name.as_str(), f.name.as_str());
        html += &cell("calls", calls, &human(calls as f64));
        html += &cell("mean_us", num(mean), &human(mean));
        html += &cell("stddev_us", num(sd), &human(sd));
        html += &cell("anomalies", n, &human(n as f64));
        html += &cell("worst_score", num(worst), &human(worst));
        html += "</tr>";
    }
    html += "</tbody></table><div id=\"function-detail\" hidden><h3 data-role=\"function-name\"></h3><div class=\"charts\"></div></div>";
    html
}

/// The functions that get charts, at most [`CHARTED_FUNCTIONS`]: those
/// with anomalies (most first), then the most called.
fn charted_functions(
    p: &Provenance,
    per_func: &HashMap<u32, (u64, f64)>,
    use_inclusive: bool,
) -> Vec<u32> {
    let mut chosen: Vec<u32> = {
        let mut v: Vec<(u32, u64)> = per_func.iter().map(|(&f, &(n, _))| (f, n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.into_iter().map(|(f, _)| f).collect()
    };
    let mut by_calls: Vec<(u32, u64)> = p
        .func_stats
        .iter()
        .map(|s| (s.fid, runtime_stats(s, use_inclusive).0))
        .collect();
    by_calls.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (f, _) in by_calls {
        if !chosen.contains(&f) {
            chosen.push(f);
        }
    }
    chosen.truncate(CHARTED_FUNCTIONS);
    chosen
}

/// The two charts of each function in `chosen`, by function index: its
/// runtimes against its model, and its runtimes over the run (entry time
/// in seconds since `t0`), normal and anomalous executions apart.
fn function_charts(
    p: &Provenance,
    anomalies: &[&ExecRecord],
    chosen: Vec<u32>,
    runtime: &dyn Fn(&ExecRecord) -> u64,
    t0: u64,
) -> Value {
    let mut normals: HashMap<u32, Vec<&ExecRecord>> = HashMap::new();
    for (_, r) in p.kept(1) {
        normals.entry(r.fid).or_default().push(r);
    }
    let mut anomalous: HashMap<u32, Vec<&ExecRecord>> = HashMap::new();
    for r in anomalies {
        anomalous.entry(r.fid).or_default().push(r);
    }
    let sigma = algorithm_param(p, "sigma").and_then(|v| v.as_f64());
    let sstd = p
        .attrs
        .get("algorithm")
        .is_some_and(|a| a.eq_ignore_ascii_case("sstd"));
    // The SSTD detector's threshold, drawn on its model.
    let cut_sigma = sigma.filter(|_| sstd);
    let mut out = serde_json::Map::new();
    for fid in chosen {
        let name = p.function_name(fid);
        let normal = normals.get(&fid).map_or(&[][..], |v| v);
        let bad = anomalous.get(&fid).map_or(&[][..], |v| v);
        let rt = |v: &[&ExecRecord]| v.iter().map(|r| runtime(r) as f64).collect::<Vec<_>>();
        let dist = match model_shape(p, fid, cut_sigma) {
            Some(s) => charts::distribution(
                &format!("Runtimes and the model: {}", short(&name)),
                &s,
                &rt(normal),
                &rt(bad),
            ),
            None => charts::placeholder(&name, "no model in the file"),
        };
        let scatter = entry_runtime_chart(&name, normal, bad, runtime, t0);
        out.insert(fid.to_string(), json!([dist, scatter]));
    }
    Value::Object(out)
}

/// Function `fid`'s model in the file, as the distribution chart draws
/// it: its histogram, or its mean and deviation (with the threshold at
/// `cut_sigma` deviations, when given). `None` when it has no model.
fn model_shape(p: &Provenance, fid: u32, cut_sigma: Option<f64>) -> Option<ModelShape> {
    p.ad_model.iter().find(|m| m.fid == fid).map(|m| {
        if m.hist_len > 0 {
            ModelShape::Bins {
                first: m.hist_first_edge,
                width: m.hist_bin_width,
                counts: slice(&p.ad_model_hist, m.hist_start, m.hist_len).to_vec(),
            }
        } else {
            ModelShape::Moments {
                mean: m.mean,
                stddev: m.stddev,
                cut: cut_sigma.map(|s| m.mean + s * m.stddev),
            }
        }
    })
}

/// The scatter chart of a function's executions: entry time (seconds
/// since `t0`) against runtime, the anomalous ones marked.
fn entry_runtime_chart(
    name: &str,
    normal: &[&ExecRecord],
    bad: &[&ExecRecord],
    runtime: &dyn Fn(&ExecRecord) -> u64,
    t0: u64,
) -> String {
    let points: Vec<(f64, f64, bool)> = normal
        .iter()
        .map(|r| (r, false))
        .chain(bad.iter().map(|r| (r, true)))
        .map(|(r, a)| {
            (
                r.entry.saturating_sub(t0) as f64 / 1e6,
                runtime(r) as f64,
                a,
            )
        })
        .collect();
    charts::scatter(
        &format!("Entry time against runtime: {}", short(name)),
        "entry (s since the run's first event)",
        "runtime (µs)",
        &points,
    )
}

/// A float for a sort key: NaN sorts as the lowest value.
fn num(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        f64::MIN
    }
}

/// A name short enough for a chart title.
fn short(name: &str) -> String {
    if name.chars().count() > 60 {
        format!("{}…", name.chars().take(59).collect::<String>())
    } else {
        name.to_owned()
    }
}

/// The anomaly list (filled by the script) and the detail panel.
fn anomaly_section(n: usize) -> String {
    format!(
        "<h2>Anomalies</h2><p><input id=\"anomaly-filter\" type=\"search\" placeholder=\"filter by function or rank\"> \
         <span class=\"note\">{n} anomalies, worst first; click one for its call stack and timeline, or link to it with <code>#anomaly=EVENT_ID</code>.</span></p>\
         <table class=\"data\" id=\"anomaly-table\"><thead><tr><th>event</th><th>function</th><th>rank</th><th>thread</th><th>step</th><th>runtime (µs)</th><th>score</th></tr></thead><tbody></tbody></table>\
         <p><button id=\"anomaly-more\" type=\"button\" hidden>show more</button></p>\
         <div id=\"anomaly-detail\" hidden>\
         <h3>Anomaly <span data-role=\"event-id\"></span></h3><table class=\"kv\" data-role=\"facts\"></table>\
         <h4>Call stack (root first)</h4><ol id=\"anomaly-call-stack\"></ol>\
         <h4>Timeline</h4><div data-role=\"timeline\"></div>\
         <div data-role=\"extras\"></div></div>"
    )
}

/// The anomalies as columns for the script, worst first, with the call
/// stack of each and the window, messages, counters and GPU context of
/// the [`DETAILED_ANOMALIES`] worst.
fn anomaly_data(p: &Provenance, ranks: &RankIndex, anomalies: &[&ExecRecord]) -> Value {
    let d = &p.collections[0];
    let mut order: Vec<&ExecRecord> = anomalies.to_vec();
    order.sort_by(|a, b| {
        b.final_score
            .total_cmp(&a.final_score)
            .then(a.event_id.as_str().cmp(b.event_id.as_str()))
    });
    let mut cols: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    let mut details = Vec::new();
    for (k, r) in order.iter().enumerate() {
        let stack = own_stack(slice(&d.call_stack, r.call_stack_start, r.call_stack_len));
        let mut push = |key: &'static str, v: Value| cols.entry(key).or_default().push(v);
        push("event_id", json!(r.event_id.as_str()));
        push("fid", json!(r.fid));
        push("rank", json!(ranks.of(r.pid, r.rid)));
        push("thread", json!(r.tid));
        push("step", json!(r.io_step));
        push("exclusive_us", json!(r.runtime_exclusive));
        push("inclusive_us", json!(r.runtime_total));
        push(
            "score",
            json!(if r.final_score.is_finite() {
                r.final_score
            } else {
                0.0
            }),
        );
        push("entry", json!(r.entry));
        // Root first: the file lists the execution itself first.
        push(
            "stack",
            json!(stack.iter().rev().map(|f| f.fid).collect::<Vec<_>>()),
        );
        if k < DETAILED_ANOMALIES {
            push("detail", json!(details.len()));
            details.push(detail(p, r, stack));
        } else {
            push("detail", json!(-1));
        }
    }
    json!({ "columns": cols, "details": details })
}

/// What the page keeps of one anomaly beyond its row: frames, window,
/// messages, counters, GPU context, and the model's prediction.
fn detail(
    p: &Provenance,
    r: &ExecRecord,
    stack: &[crate::provenance::records::CallStackRow],
) -> Value {
    let d = &p.collections[0];
    let frames: Vec<Value> = stack
        .iter()
        .map(|f| json!([f.level, f.fid, f.entry, f.exit, f.event_id.as_str()]))
        .collect();
    let window: Vec<Value> = slice(&d.exec_window, r.exec_window_start, r.exec_window_len)
        .iter()
        .map(|w| {
            json!([
                w.offset,
                w.fid,
                w.entry,
                w.exit,
                w.is_anomaly,
                w.event_id.as_str()
            ])
        })
        .collect();
    let comms: Vec<Value> = slice(&d.comm_window, r.comm_window_start, r.comm_window_len)
        .iter()
        .map(|m| {
            json!([
                m.kind,
                m.src,
                m.tar,
                if m.bytes == u64::MAX {
                    Value::Null
                } else {
                    json!(m.bytes)
                },
                m.tag,
                m.timestamp,
                m.execdata_key.as_str()
            ])
        })
        .collect();
    let counters: Vec<Value> = slice(
        &d.counter_events,
        r.counter_events_start,
        r.counter_events_len,
    )
    .iter()
    .map(|c| json!([p.counter_name(c.counter_idx), c.counter_value, c.ts]))
    .collect();
    let gpu = slice(&d.gpu_location, r.gpu_location_start, r.gpu_location_len)
        .first()
        .map(|g| json!({"context": g.context.as_str(), "device": g.device.as_str(), "stream": g.stream.as_str(), "thread": g.thread}));
    let gpu_parent = slice(&d.gpu_parent, r.gpu_parent_start, r.gpu_parent_len)
        .first()
        .map(|g| json!({"event_id": g.event_id.as_str(), "thread": g.tid, "function": p.function_name(g.fid), "error": g.error.as_str()}));
    let mut v = json!({
        "frames": frames,
        "window": window,
        "comms": comms,
        "counters": counters,
        "gpu": gpu,
        "gpu_parent": gpu_parent,
        "exit": r.exit,
        "host": r.hostname.as_str(),
    });
    if r.model_prediction_us.is_finite() {
        v["prediction_us"] = json!(r.model_prediction_us);
        v["ratio"] = json!(r.model_ratio);
    }
    v
}

/// Predicted against actual runtimes per modelled function (runs of the
/// model detector), from the records that carry a prediction.
fn model_section(
    p: &Provenance,
    anomalies: &[&ExecRecord],
    runtime: impl Fn(&ExecRecord) -> u64,
) -> Option<String> {
    let mut per_func: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    let normals = p.kept(1).map(|(_, r)| r);
    for r in anomalies.iter().copied().chain(normals) {
        if r.model_prediction_us.is_finite() {
            per_func
                .entry(r.fid)
                .or_default()
                .push((r.model_prediction_us, runtime(r) as f64));
        }
    }
    if per_func.is_empty() {
        return None;
    }
    let mut html = String::from(
        "<h2>Models</h2><p class=\"note\">Each execution kept in the file (anomalies and normal samples) that the performance model judged: its prediction against its runtime.</p><div class=\"charts\">",
    );
    for (fid, points) in per_func.iter().take(CHARTED_FUNCTIONS) {
        html += &charts::predicted_vs_actual(&short(&p.function_name(*fid)), points);
    }
    Some(html + "</div>")
}
