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

/// Builds the page of a ROSS analysis' provenance file.
pub fn ross_page(p: &RossProvenance, file: &Path) -> Page {
    let t = &p.tables;
    let a = |k: &str| p.attrs.get(k).map_or("", String::as_str);
    let complete = a("completed") != "0";

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

    let mut ranking = String::from(
        "<h2>Ranking</h2><p class=\"note\">Entities by the PE time of the incidents rooted at them (click a header to sort).</p><table class=\"data sortable\" id=\"pe-table\"><thead><tr>",
    );
    ranking += &header("entity", "entity", false);
    ranking += &header("cost_s", "cost (s)", true);
    ranking += &header("incidents", "incidents", true);
    ranking += &header("anomalies", "anomalies", true);
    ranking += "</tr></thead><tbody>";
    for e in &t.entities {
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

    // Each anomaly: its value over the intervals around it against the
    // peers' median, the window shaded.
    let mut medians: BTreeMap<(String, String, String, u64), f64> = BTreeMap::new();
    for m in &t.model {
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
    let mut order: Vec<&RossAnomalyRow> = t.anomalies.iter().collect();
    order.sort_by(|x, y| y.score.total_cmp(&x.score).then(x.id.cmp(&y.id)));
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
    for r in &order {
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
    anomalies += "</tbody></table><div class=\"charts\">";
    for r in order.iter().take(CHARTED_ANOMALIES) {
        let ev =
            crate::provenance::read::slice(&t.evidence, r.evidence_start, r.evidence_len as u32);
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
        anomalies += &charts::lines(
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
        );
    }
    anomalies += "</div>";

    // Run-wide slowdowns: each signal over the whole run, anomalous
    // intervals shaded.
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
