//! What `chimbuko-mpi ross` tells the user: the anomalies with their entity,
//! signal, GVT and real-time window, score and evidence, and the PEs ranked
//! by the run time they cost; as a text summary and as the JSON of
//! `--summary-out`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::hotspots::HotspotLp;
use super::peers::PeerAnomaly;
use super::signals::{Entity, RunSeries};
use crate::trace::ross::{RossStdout, StatsFiles};

/// The result of the analysis of one run.
#[derive(Debug, Clone)]
pub struct RossReport {
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

impl RossReport {
    /// Builds the report.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        files: &StatsFiles,
        series: &RunSeries,
        anomalies: Vec<PeerAnomaly>,
        caused: Vec<Option<u32>>,
        costs: BTreeMap<u32, f64>,
        hotspots: Vec<HotspotLp>,
        stdout: Option<&RossStdout>,
        clock_factor: Option<f64>,
    ) -> Self {
        let mut list: Vec<Value> = anomalies
            .iter()
            .zip(&caused)
            .map(|(a, cause)| {
                let (kind, kp) = match a.entity {
                    Entity::Pe(_) => ("pe", Value::Null),
                    Entity::Kp(_, k) => ("kp", json!(k)),
                };
                json!({
                    "kind": kind,
                    "pe": a.entity.pe(),
                    "kp": kp,
                    "lp": Value::Null,
                    "signal": a.signal.name(),
                    "gvt_from": real(a.span.gvt_from),
                    "gvt_to": real(a.span.gvt_to),
                    "real_from": real(a.span.real_from),
                    "real_to": real(a.span.real_to),
                    "intervals": [a.first, a.last],
                    "score": real(a.score),
                    "caused_by_pe": cause,
                    "evidence": {
                        "value": real(a.value),
                        "peer_median": real(a.peer_median),
                        "first_interval": a.context.0,
                        "values": a.context.1.iter().map(|v| real(*v)).collect::<Vec<_>>(),
                    },
                })
            })
            .collect();
        for h in &hotspots {
            list.push(json!({
                "kind": "lp",
                "pe": Value::Null,
                "kp": Value::Null,
                "lp": h.lp,
                "signal": "trace_events_received",
                "gvt_from": real(h.span.gvt_from),
                "gvt_to": real(h.span.gvt_to),
                "real_from": real(h.span.real_from),
                "real_to": real(h.span.real_to),
                "intervals": [h.first, h.last],
                "score": real(h.score),
                "caused_by_pe": Value::Null,
                "evidence": {
                    "value": h.events,
                    "peer_median": real(h.peer_median),
                    "top_senders": h.top_senders.iter().map(|(lp, n)| json!({"lp": lp, "events": n})).collect::<Vec<_>>(),
                },
            }));
        }
        let mut ranked: Vec<(u32, f64)> = costs.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let count = |pe: u32| {
            anomalies
                .iter()
                .zip(&caused)
                .filter(|(a, c)| a.entity.pe() == pe || **c == Some(pe))
                .count()
        };
        let entities: Vec<Value> = ranked
            .iter()
            .map(|(pe, s)| json!({"pe": pe, "cost_s": real(*s), "anomalies": count(*pe)}))
            .collect();
        let intervals = series.intervals.values().map(Vec::len).max().unwrap_or(0);
        let json = json!({
            "run": {
                "stats_dir": files.dir.display().to_string(),
                "prefix": files.prefix,
                "files": files.kinds.iter().map(|k| k.suffix()).collect::<Vec<_>>(),
                "pes": series.intervals.len(),
                "gvt_intervals": intervals,
                "clock_rate_hz": stdout.and_then(|s| s.clock_rate_hz),
                "clock_rescale_factor": clock_factor,
                "ross_totals": stdout.map(|s| json!({
                    "events_processed": s.totals.events_processed,
                    "events_rolled_back": s.totals.events_rolled_back,
                    "net_events": s.totals.net_events,
                    "efficiency_percent": s.totals.efficiency_percent,
                })),
            },
            "anomalies": list,
            "entities": entities,
        });
        RossReport { json }
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
                Some("lp") => format!("LP {}", a["lp"]),
                Some("kp") => format!("PE {} KP {}", a["pe"], a["kp"]),
                _ => format!("PE {}", a["pe"]),
            };
            let cause = a["caused_by_pe"]
                .as_u64()
                .map(|p| format!(" (caused by PE {p})"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {who}: {} at GVT {}..{} (real {}..{} s), score {:.1}{cause}\n",
                a["signal"].as_str().unwrap_or(""),
                fmt(&a["gvt_from"]),
                fmt(&a["gvt_to"]),
                fmt(&a["real_from"]),
                fmt(&a["real_to"]),
                a["score"].as_f64().unwrap_or(0.0),
            ));
        }
        if let Some(top) = self.json["entities"].as_array().and_then(|e| e.first()) {
            if top["cost_s"].as_f64().unwrap_or(0.0) > 0.0 {
                out.push_str(&format!(
                    "  costliest PE: {} ({:.3} s of run time)\n",
                    top["pe"],
                    top["cost_s"].as_f64().unwrap_or(0.0)
                ));
            }
        }
        out
    }
}

fn fmt(v: &Value) -> String {
    v.as_f64().map_or("?".into(), |x| format!("{x:.3}"))
}
