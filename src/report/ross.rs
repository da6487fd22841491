//! The report of a ROSS analysis (`chimbuko-mpi ross`): what ran, the PEs
//! ranked by the run time they cost, each anomaly's signal against its
//! peers' median (the window shaded), and the run-wide slowdowns over the
//! whole run.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use super::charts::{self, Series};
use super::page::{cell, escape, header, human, stat, Page};
use crate::provenance::ross::{RossAnomalyRow, RossProvenance};

/// One run-wide signal: its value and usual level per interval, and the
/// anomalous intervals to shade.
type SignalSeries = (Vec<(f64, f64)>, Vec<(f64, f64)>, Vec<(f64, f64)>);

/// Anomalies drawn with their evidence (the highest scores).
const CHARTED_ANOMALIES: usize = 40;

/// The peers' median of each (series, kind, signal, interval), from the
/// model table: the line an anomaly's own values are drawn against.
type PeerMedians = BTreeMap<(String, String, String, u64), f64>;

/// Builds the page of a ROSS analysis' provenance file.
pub fn ross_page(p: &RossProvenance, file: &Path) -> Page {
    let t = &p.tables;
    let complete = attr(p, "completed") != "0";
    let overview = overview_section(p, file);
    let ranking = ranking_section(p);
    let anomalies = anomalies_section(p);
    let run_wide = run_wide_section(p);
    Page {
        title: format!("chimbuko-mpi report (ROSS): {}", file.display()),
        warning: (!complete).then(|| "This analysis is incomplete (completed = 0).".to_owned()),
        sections: vec![
            (
                "incidents".into(),
                "Incidents".into(),
                super::incidents::incidents_section(&t.incidents, crate::incidents::Source::Ross),
            ),
            ("overview".into(), "Overview".into(), overview),
            ("ranking".into(), "Ranking".into(), ranking),
            ("over-time".into(), "Over time".into(), run_wide),
            ("anomalies".into(), "Anomalies".into(), anomalies),
        ],
        data: json!({"kind": "ross"}),
    }
}

/// The root attribute `k` of the file as text, or "" when it is missing.
fn attr<'a>(p: &'a RossProvenance, k: &str) -> &'a str {
    p.attrs.get(k).map_or("", String::as_str)
}

/// The overview section: counts of anomalies, slowdowns, PEs and AD ranks,
/// then what ran (file, program, command line, times, detector, inputs).
fn overview_section(p: &RossProvenance, file: &Path) -> String {
    let t = &p.tables;
    let a = |k: &str| attr(p, k);
    let mut overview = String::from("<h2>Overview</h2><div class=\"stats\">");
    overview += &stat("anomalies", "anomalies", t.anomalies.len());
    overview += &stat("run_wide", "run-wide slowdowns", t.run_wide.len());
    let pes = t
        .entities
        .iter()
        .filter(|e| e.kind.as_str() == "pe")
        .count();
    overview += &stat("pes", "PEs", pes);
    overview += &stat("ad_ranks", "AD ranks", a("ad_ranks"));
    overview += "</div><table class=\"kv\">";
    for (k, v) in [
        ("file", file.display().to_string()),
        ("written by", a("program").into()),
        ("command line", a("command_line").into()),
        ("started", a("start_time").into()),
        ("ended", a("end_time").into()),
        ("detector", a("algorithm").into()),
        ("inputs", a("input_streams").into()),
    ] {
        overview += &format!("<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(&v));
    }
    overview += "</table>";
    overview
}

/// The ranking section: a sortable table of the entities (PEs, LPs, or
/// every PE at once) by the PE time of the incidents rooted at them.
fn ranking_section(p: &RossProvenance) -> String {
    let mut ranking = String::from(
        "<h2>Ranking</h2><p class=\"note\">Entities by the PE time of the incidents rooted at them (click a header to sort).</p><table class=\"data sortable\" id=\"pe-table\"><thead><tr>",
    );
    ranking += &header("entity", "entity", false);
    ranking += &header("cost_s", "cost (s)", true);
    ranking += &header("incidents", "incidents", true);
    ranking += &header("anomalies", "anomalies", true);
    ranking += "</tr></thead><tbody>";
    for e in &p.tables.entities {
        let who = match (e.kind.as_str(), e.pe) {
            ("pe", _) => format!("PE {}", e.pe),
            ("every_pe", _) => "every PE".to_owned(),
            (_, -1) => format!("LP {}", e.lp),
            _ => format!("LP {} (PE {} KP {})", e.lp, e.pe, e.kp),
        };
        ranking += "<tr>";
        ranking += &cell("entity", e.rank, &who);
        ranking += &cell("cost_s", e.cost_s, &human(e.cost_s));
        ranking += &cell("incidents", e.incidents, &human(e.incidents as f64));
        ranking += &cell("anomalies", e.anomalies, &human(e.anomalies as f64));
        ranking += "</tr>";
    }
    ranking += "</tbody></table>";
    ranking
}

/// The anomalies section: every anomaly in a sortable table, highest
/// score first, then the charts of the [`CHARTED_ANOMALIES`] highest.
fn anomalies_section(p: &RossProvenance) -> String {
    let t = &p.tables;
    let mut order: Vec<&RossAnomalyRow> = t.anomalies.iter().collect();
    order.sort_by(|x, y| y.score.total_cmp(&x.score).then(x.id.cmp(&y.id)));
    let mut anomalies = anomaly_table(&order);
    anomalies += "<div class=\"charts\">";
    let medians = peer_medians(p);
    for r in order.iter().take(CHARTED_ANOMALIES) {
        anomalies += &anomaly_chart(p, r, &medians);
    }
    anomalies += "</div>";
    anomalies
}

/// The heading and table of the anomalies section, rows in `order`.
fn anomaly_table(order: &[&RossAnomalyRow]) -> String {
    let mut anomalies = String::from(
        "<h2>Anomalies</h2><table class=\"data sortable\" id=\"ross-anomaly-table\"><thead><tr>",
    );
    for (k, l, n) in [
        ("kind", "kind", false),
        ("entity", "PE/KP/LP", false),
        ("signal", "signal", false),
        ("series", "series", false),
        ("gvt", "GVT window", false),
        ("score", "score", true),
    ] {
        anomalies += &header(k, l, n);
    }
    anomalies += "</tr></thead><tbody>";
    for r in order {
        let entity = format!("pe {} kp {} lp {}", r.pe, r.kp, r.lp);
        anomalies += "<tr>";
        anomalies += &cell("kind", r.kind.as_str(), r.kind.as_str());
        anomalies += &cell("entity", &entity, &entity);
        anomalies += &cell("signal", r.signal.as_str(), r.signal.as_str());
        anomalies += &cell("series", r.series.as_str(), r.series.as_str());
        let w = format!("{:.1} – {:.1}", r.gvt_from, r.gvt_to);
        anomalies += &cell("gvt", r.gvt_from, &w);
        anomalies += &cell("score", r.score, &human(r.score));
        anomalies += "</tr>";
    }
    anomalies += "</tbody></table>";
    anomalies
}

/// The peers' medians of the file's model table, looked up by chart.
fn peer_medians(p: &RossProvenance) -> PeerMedians {
    let mut medians = PeerMedians::new();
    for m in &p.tables.model {
        medians.insert(
            (
                m.series.as_str().into(),
                m.kind.as_str().into(),
                m.signal.as_str().into(),
                m.interval,
            ),
            m.median,
        );
    }
    medians
}

/// One anomaly's chart: its value over the intervals around it (its
/// evidence) against the peers' median, the anomalous window shaded.
fn anomaly_chart(p: &RossProvenance, r: &RossAnomalyRow, medians: &PeerMedians) -> String {
    let ev =
        crate::provenance::read::slice(&p.tables.evidence, r.evidence_start, r.evidence_len as u32);
    let key = |i: u64| {
        (
            r.series.as_str().to_owned(),
            r.kind.as_str().to_owned(),
            r.signal.as_str().to_owned(),
            i,
        )
    };
    let values: Vec<(f64, f64)> = ev.iter().map(|e| (e.interval as f64, e.value)).collect();
    let peers: Vec<(f64, f64)> = ev
        .iter()
        .filter_map(|e| {
            medians
                .get(&key(e.interval))
                .map(|&m| (e.interval as f64, m))
        })
        .collect();
    charts::lines(
        &format!(
            "{} {} (pe {}, kp {}, lp {}), score {}",
            r.signal.as_str(),
            r.kind.as_str(),
            r.pe,
            r.kp,
            r.lp,
            human(r.score)
        ),
        "interval",
        r.signal.as_str(),
        &[
            Series {
                name: "this entity".into(),
                points: values,
            },
            Series {
                name: "peers' median".into(),
                points: peers,
            },
        ],
        &[(r.first_interval as f64, r.last_interval as f64)],
    )
}

/// The "Over time" section: each run-wide signal over the whole run, its
/// value against its usual level, anomalous intervals shaded.
fn run_wide_section(p: &RossProvenance) -> String {
    let t = &p.tables;
    let mut run_wide = String::from("<h2>Over time</h2><p class=\"note\">The run as a whole, per signal: its value and its usual level; slowdowns shaded.</p>");
    let mut signals: BTreeMap<String, SignalSeries> = BTreeMap::new();
    for m in &t.run_model {
        let e = signals.entry(m.signal.as_str().to_owned()).or_default();
        let x = m.interval as f64;
        e.0.push((x, m.value));
        e.1.push((x, m.usual));
        if m.anomalous != 0 {
            e.2.push((x - 0.5, x + 0.5));
        }
    }
    for (signal, (value, usual, shade)) in signals {
        run_wide += &charts::lines(
            &signal,
            "interval",
            &signal,
            &[
                Series {
                    name: "value".into(),
                    points: value,
                },
                Series {
                    name: "usual".into(),
                    points: usual,
                },
            ],
            &shade,
        );
    }
    if t.run_model.is_empty() {
        run_wide += "<p>No run-wide series in this file.</p>";
    }
    run_wide
}
