//! What `chimbuko-mpi ross` tells the user: the anomalies with their entity,
//! signal, GVT and real-time window, score and evidence, and the PEs ranked
//! by the run time they cost; as a text summary and as the JSON of
//! `--summary-out`.

use serde_json::{json, Value};

use super::attribution::{hotspot_cause, lp_homes, ranked_entities};
use super::hotspots::HotspotLp;
use super::peers::PeerAnomaly;
use super::run_wide::{RunWideAnomaly, MIN_SHARE, WARMUP_INTERVALS};
use super::signals::Entity;
use super::Findings;
use crate::detect::choice::{Algorithm, DetectorSettings};

/// The result of the analysis of one run.
#[derive(Debug, Clone)]
pub struct RossSummary {
    /// The summary as JSON (the `--summary-out` document).
    pub json: Value,
}

fn real(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// One anomaly of the GVT or RT series as JSON.
fn anomaly_json(a: &PeerAnomaly, cause: Option<u32>, lp_cause: Option<u32>, series: &str) -> Value {
    let (kp, lp) = match a.entity {
        Entity::Pe(_) => (Value::Null, Value::Null),
        Entity::Kp(_, k) => (json!(k), Value::Null),
        Entity::Lp(_, k, l) => (json!(k), json!(l)),
    };
    json!({
        "kind": a.entity.kind(),
        "pe": a.entity.pe(),
        "kp": kp,
        "lp": lp,
        "signal": a.signal.name(),
        "series": series,
        "gvt_from": real(a.window.span.gvt_from),
        "gvt_to": real(a.window.span.gvt_to),
        "real_from": real(a.window.span.real_from),
        "real_to": real(a.window.span.real_to),
        "intervals": [a.window.first, a.window.last],
        "score": real(a.window.score),
        "caused_by_pe": cause,
        "caused_by_lp": lp_cause,
        "evidence": {
            "value": real(a.window.value),
            "peer_median": real(a.peer_median),
            "first_interval": a.context.0,
            "values": a.context.1.iter().map(|v| real(*v)).collect::<Vec<_>>(),
        },
    })
}

/// A run-wide slowdown as JSON.
fn run_wide_json(a: &RunWideAnomaly, algorithm: &str) -> Value {
    json!({
        "signal": a.signal.name(),
        "gvt_from": real(a.window.span.gvt_from),
        "gvt_to": real(a.window.span.gvt_to),
        "real_from": real(a.window.span.real_from),
        "real_to": real(a.window.span.real_to),
        "intervals": [a.window.first, a.window.last],
        "algorithm": algorithm,
        "score": real(a.window.score),
        "caused_by_pe": a.caused_by_pe,
        "caused_by_lp": a.caused_by_lp,
        "evidence": {
            "value": real(a.window.value),
            "usual": real(a.usual),
            "excess": real(a.excess),
            "share_of_run": real(a.share),
            "first_interval": a.context.0,
            "values": a.context.1.iter().map(|v| real(*v)).collect::<Vec<_>>(),
        },
    })
}

/// A hotspot LP as JSON.
fn hotspot_json(h: &HotspotLp, lp_home: Option<(u32, u32)>) -> Value {
    let (first_interval, values) = h.evidence();
    json!({
        "kind": "lp",
        "pe": lp_home.map(|(p, _)| p),
        "kp": lp_home.map(|(_, k)| k),
        "lp": h.lp,
        "signal": "trace_events_received",
        "series": "evtrace",
        "gvt_from": real(h.span.gvt_from),
        "gvt_to": real(h.span.gvt_to),
        "real_from": real(h.span.real_from),
        "real_to": real(h.span.real_to),
        "intervals": [h.first, h.last],
        "score": real(h.score),
        "caused_by_pe": Value::Null,
        "caused_by_lp": Value::Null,
        "evidence": {
            "value": h.events,
            "peer_median": real(h.peer_median),
            "first_interval": first_interval,
            "values": values,
            "top_senders": h.top_senders.iter().map(|(lp, n)| json!({"lp": lp, "events": n})).collect::<Vec<_>>(),
        },
    })
}

/// The threshold the run-wide detector used, on its own scale.
pub fn run_wide_threshold(d: &DetectorSettings) -> f64 {
    match d.algorithm {
        Algorithm::Sstd => d.sigma,
        Algorithm::Hbos | Algorithm::Copod => d.hbos_threshold,
        Algorithm::Modal => d.modal_threshold,
        // Not a run-wide detector (it needs trace features); its σ.
        Algorithm::Model => d.sigma,
    }
}

impl RossSummary {
    /// Builds the report of the findings.
    pub fn new(f: &Findings) -> Self {
        let files = &f.run.files;
        let stdout = f.run.stdout.as_ref();
        // Where each LP lives, from the LP samples (when there are some).
        let homes = lp_homes(&f.gvt);
        let lp_cause = |a: &PeerAnomaly| hotspot_cause(a, &f.hotspots, &homes);
        let mut list: Vec<Value> = f
            .gvt_anomalies
            .iter()
            .map(|(a, c)| anomaly_json(a, *c, lp_cause(a), "gvt"))
            .chain(
                f.rt_anomalies
                    .iter()
                    .map(|(a, c)| anomaly_json(a, *c, lp_cause(a), "rt")),
            )
            .collect();
        list.extend(
            f.hotspots
                .iter()
                .map(|h| hotspot_json(h, homes.get(&h.lp).copied())),
        );
        let entities: Vec<Value> = ranked_entities(f)
            .iter()
            .enumerate()
            .map(|(i, r)| {
                json!({
                    "rank": i + 1,
                    "kind": r.entity.kind.name(),
                    "pe": r.entity.pe,
                    "kp": r.entity.kp,
                    "lp": r.entity.lp,
                    "cost_s": real(r.cost_s),
                    "incidents": r.incidents,
                    "anomalies": r.anomalies,
                })
            })
            .collect();
        let intervals = f.gvt.intervals.values().map(Vec::len).max().unwrap_or(0);
        let rt_steps =
            f.rt.as_ref()
                .map(|s| s.intervals.values().map(Vec::len).max().unwrap_or(0));
        let trace = f.trace.as_ref().map(|t| {
            json!({
                "file": t.path.display().to_string(),
                "records": t.tally.records,
                "bytes": t.tally.bytes,
                "lps": t.tally.to_lp.iter().filter(|c| c.iter().sum::<u64>() > 0).count(),
                "events_per_gvt_interval": t.tally.per_interval,
                "untracked_lp_events": t.tally.untracked,
            })
        });
        let json = json!({
            "incidents": f.incidents.to_json(),
            "run": {
                "stats_dir": files.dir.display().to_string(),
                "prefix": files.prefix,
                "files": files.kinds.iter().map(|k| k.suffix()).collect::<Vec<_>>(),
                "pes": f.gvt.intervals.len().max(f.rt.as_ref().map_or(0, |r| r.intervals.len())),
                "gvt_intervals": intervals,
                "rt_steps": rt_steps,
                "clock_rate_hz": stdout.and_then(|s| s.clock_rate_hz),
                "clock_rescale_factor": f.run.rescale.map(|r| r.factor()),
                "ross_totals": stdout.map(|s| json!({
                    "events_processed": s.totals.events_processed,
                    "events_rolled_back": s.totals.events_rolled_back,
                    "net_events": s.totals.net_events,
                    "efficiency_percent": s.totals.efficiency_percent,
                })),
                "trace": trace,
            },
            "settings": {
                "threshold": f.rule.threshold,
                "rel_floor": f.rule.rel_floor,
                "min_intervals": f.rule.min_intervals,
                "run_wide_algorithm": f.detector.algorithm.name(),
                "run_wide_threshold": run_wide_threshold(&f.detector),
                "run_wide_warmup_intervals": WARMUP_INTERVALS,
                "run_wide_min_share": MIN_SHARE,
            },
            "anomalies": list,
            "run_wide": f.run_wide.windows.iter().map(|a| run_wide_json(a, f.detector.algorithm.name())).collect::<Vec<_>>(),
            "entities": entities,
            "warnings": f.warnings,
        });
        RossSummary { json }
    }

    /// The summary as pretty JSON, its `incidents` first (what a reader
    /// looks for), the other members after it in their usual order.
    pub fn summary_json_text(&self) -> String {
        let pretty = |v: &Value| {
            serde_json::to_string_pretty(v)
                .unwrap_or_default()
                .replace('\n', "\n  ")
        };
        let mut parts = Vec::new();
        if let Some(i) = self.json.get("incidents") {
            parts.push(format!("  \"incidents\": {}", pretty(i)));
        }
        if let Value::Object(m) = &self.json {
            for (k, v) in m.iter().filter(|(k, _)| k.as_str() != "incidents") {
                parts.push(format!("  {}: {}", Value::String(k.clone()), pretty(v)));
            }
        }
        format!("{{\n{}\n}}\n", parts.join(",\n"))
    }

    /// The anomalies of the report.
    pub fn anomalies(&self) -> &[Value] {
        self.json["anomalies"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The text summary.
    pub fn text(&self) -> String {
        let run = &self.json["run"];
        let mut out = format!(
            "ross: {} PE(s), {} GVT interval(s) in {}; {} anomal{}\n",
            run["pes"],
            run["gvt_intervals"],
            run["stats_dir"].as_str().unwrap_or(""),
            self.anomalies().len(),
            if self.anomalies().len() == 1 {
                "y"
            } else {
                "ies"
            }
        );
        for a in self.anomalies().iter().take(20) {
            let who = match a["kind"].as_str() {
                Some("lp") if a["pe"].is_null() => format!("LP {}", a["lp"]),
                Some("lp") => format!("LP {} (PE {} KP {})", a["lp"], a["pe"], a["kp"]),
                Some("kp") => format!("PE {} KP {}", a["pe"], a["kp"]),
                _ => format!("PE {}", a["pe"]),
            };
            let cause = match (a["caused_by_pe"].as_u64(), a["caused_by_lp"].as_u64()) {
                (Some(p), _) => format!(" (caused by PE {p})"),
                (None, Some(l)) => format!(" (caused by hotspot LP {l})"),
                _ => String::new(),
            };
            let series = match a["series"].as_str() {
                Some("rt") => " [real-time series]",
                Some("evtrace") => " [event trace]",
                _ => "",
            };
            out.push_str(&format!(
                "  {who}: {}{series} at GVT {}..{} (real {}..{} s), score {:.1}{cause}\n",
                a["signal"].as_str().unwrap_or(""),
                fmt(&a["gvt_from"]),
                fmt(&a["gvt_to"]),
                fmt(&a["real_from"]),
                fmt(&a["real_to"]),
                a["score"].as_f64().unwrap_or(0.0),
            ));
        }
        for a in self.json["run_wide"].as_array().into_iter().flatten() {
            // A hotspot LP makes its PE slow too: the LP is the cause.
            let cause = match (a["caused_by_pe"].as_u64(), a["caused_by_lp"].as_u64()) {
                (_, Some(l)) => format!("caused by hotspot LP {l}"),
                (Some(p), None) => format!("caused by slow PE {p}"),
                _ => "no PE stands out: every PE slowed at once".to_string(),
            };
            out.push_str(&format!(
                "  whole run: {} at GVT {}..{} (real {}..{} s) was {} against a usual {} ({} score {:.1}; {:.0}% of the run's total); {cause}\n",
                a["signal"].as_str().unwrap_or(""),
                fmt(&a["gvt_from"]),
                fmt(&a["gvt_to"]),
                fmt(&a["real_from"]),
                fmt(&a["real_to"]),
                fmt(&a["evidence"]["value"]),
                fmt(&a["evidence"]["usual"]),
                a["algorithm"].as_str().unwrap_or(""),
                a["score"].as_f64().unwrap_or(0.0),
                100.0 * a["evidence"]["share_of_run"].as_f64().unwrap_or(0.0),
            ));
        }
        for w in self.json["warnings"].as_array().into_iter().flatten() {
            out.push_str(&format!("  warning: {}\n", w.as_str().unwrap_or("")));
        }
        out
    }

    /// The run's line, its incidents, then the anomalies
    /// ([`RossSummary::text`]).
    pub fn full_text(&self, f: &Findings) -> String {
        let text = self.text();
        let (head, rest) = text.split_once('\n').unwrap_or((&text, ""));
        let mut out = format!("{head}\n");
        out.push_str(&crate::incidents::text::list_text(
            &f.incidents,
            crate::incidents::Source::Ross,
            10,
        ));
        if !rest.is_empty() {
            out.push_str("anomalies:\n");
            out.push_str(rest);
        }
        out
    }
}

fn fmt(v: &Value) -> String {
    v.as_f64().map_or("?".into(), |x| format!("{x:.3}"))
}
