//! What `inspect` and `export --json` show of a ROSS analysis's provenance
//! file: a summary for people (the run in a line, its incidents, the
//! anomalies, the entities by cost) and the JSON documents.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde_json::{json, Value};

use crate::provenance::ross::{text, RossAnomalyRow, RossProvenance, RunWideRow};

impl RossProvenance {
    /// One anomaly as JSON, with its evidence and senders.
    pub fn anomaly_json(&self, a: &RossAnomalyRow) -> Value {
        let opt = |x: i64| if x < 0 { Value::Null } else { json!(x) };
        let span = |start: u64, len: u64| start as usize..(start + len) as usize;
        let evidence: Vec<Value> = self
            .tables
            .evidence
            .get(span(a.evidence_start, a.evidence_len))
            .unwrap_or(&[])
            .iter()
            .map(|e| json!({"interval": e.interval, "value": e.value}))
            .collect();
        let senders: Vec<Value> = self
            .tables
            .senders
            .get(span(a.senders_start, a.senders_len))
            .unwrap_or(&[])
            .iter()
            .map(|s| json!({"lp": s.lp, "events": s.events}))
            .collect();
        json!({
            "id": a.id,
            "kind": text(&a.kind),
            "pe": opt(a.pe),
            "kp": opt(a.kp),
            "lp": opt(a.lp),
            "signal": text(&a.signal),
            "series": text(&a.series),
            "gvt_from": a.gvt_from,
            "gvt_to": a.gvt_to,
            "real_from": a.real_from,
            "real_to": a.real_to,
            "intervals": [a.first_interval, a.last_interval],
            "score": a.score,
            "value": a.value,
            "peer_median": a.peer_median,
            "caused_by_pe": opt(a.caused_by_pe),
            "caused_by_lp": opt(a.caused_by_lp),
            "evidence": evidence,
            "top_senders": senders,
        })
    }

    /// One run-wide slowdown as JSON, with its evidence.
    pub fn run_wide_json(&self, r: &RunWideRow) -> Value {
        let opt = |x: i64| if x < 0 { Value::Null } else { json!(x) };
        let lo = r.evidence_start as usize;
        let evidence: Vec<Value> = self
            .tables
            .run_wide_evidence
            .get(lo..lo + r.evidence_len as usize)
            .unwrap_or(&[])
            .iter()
            .map(|e| json!({"interval": e.interval, "value": e.value}))
            .collect();
        json!({
            "id": r.id,
            "signal": text(&r.signal),
            "gvt_from": r.gvt_from,
            "gvt_to": r.gvt_to,
            "real_from": r.real_from,
            "real_to": r.real_to,
            "intervals": [r.first_interval, r.last_interval],
            "score": r.score,
            "value": r.value,
            "usual": r.usual,
            "excess": r.excess,
            "share_of_run": r.share_of_run,
            "caused_by_pe": opt(r.caused_by_pe),
            "caused_by_lp": opt(r.caused_by_lp),
            "evidence": evidence,
        })
    }

    /// Writes the JSON documents (`anomalies`, `run_wide`, `entities`,
    /// `series_stats`, `metadata`, `incidents`) into `dir`; returns each
    /// file's name and document count.
    pub fn export_json(&self, dir: &Path) -> anyhow::Result<Vec<(String, u64)>> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let t = &self.tables;
        let docs: Vec<(&str, Vec<Value>)> = vec![
            (
                "anomalies.json",
                t.anomalies.iter().map(|a| self.anomaly_json(a)).collect(),
            ),
            (
                "run_wide.json",
                t.run_wide.iter().map(|r| self.run_wide_json(r)).collect(),
            ),
            (
                "entities.json",
                t.entities
                    .iter()
                    .map(|e| {
                        let opt = |x: i64| if x < 0 { Value::Null } else { json!(x) };
                        json!({"rank": e.rank, "kind": text(&e.kind), "pe": opt(e.pe), "kp": opt(e.kp),
                               "lp": opt(e.lp), "cost_s": e.cost_s, "incidents": e.incidents,
                               "anomalies": e.anomalies})
                    })
                    .collect(),
            ),
            (
                "series_stats.json",
                t.stats
                    .iter()
                    .map(|s| {
                        json!({"series": text(&s.series), "kind": text(&s.kind), "pe": s.pe,
                               "kp": s.kp, "lp": s.lp, "signal": text(&s.signal), "count": s.count,
                               "sum": s.sum, "mean": s.mean, "std": s.std, "min": s.min, "max": s.max})
                    })
                    .collect(),
            ),
            ("metadata.json", vec![json!(self.attrs)]),
            (
                "incidents.json",
                t.incidents.incidents.iter().map(|i| i.to_json()).collect(),
            ),
        ];
        let mut out = Vec::new();
        for (name, items) in docs {
            let p = dir.join(name);
            let n = items.len() as u64;
            let text = serde_json::to_string_pretty(&Value::Array(items))?;
            std::fs::write(&p, text + "\n").with_context(|| format!("writing {}", p.display()))?;
            out.push((name.to_owned(), n));
        }
        Ok(out)
    }

    /// A summary for people: the run in a line, its incidents, the
    /// anomalies, the entities by cost (the settings with `settings`).
    pub fn print_inspect(
        &self,
        out: &mut dyn Write,
        top: usize,
        settings: bool,
    ) -> std::io::Result<()> {
        let a = |k: &str| self.attrs.get(k).cloned().unwrap_or_default();
        writeln!(
            out,
            "{} (ROSS analysis, schema {}) of {}: {} AD rank(s), completed {}, {} .. {}",
            a("program"),
            a("schema_version"),
            a("input_streams"),
            a("ad_ranks"),
            a("completed"),
            a("start_time"),
            a("end_time")
        )?;
        let t = &self.tables;
        out.write_all(
            crate::incidents::text::list_text(&t.incidents, crate::incidents::Source::Ross, top)
                .as_bytes(),
        )?;
        if settings {
            writeln!(out, "settings: {}", a("algorithm_params"))?;
        }
        writeln!(out, "anomalies: {}", t.anomalies.len())?;
        for r in t.anomalies.iter().take(top) {
            let who = match (text(&r.kind).as_str(), r.pe) {
                ("pe", _) => format!("PE {}", r.pe),
                ("kp", _) => format!("PE {} KP {}", r.pe, r.kp),
                (_, -1) => format!("LP {}", r.lp),
                _ => format!("LP {} (PE {} KP {})", r.lp, r.pe, r.kp),
            };
            writeln!(
                out,
                "  {who}: {} [{}] GVT {:.3}..{:.3}, real {:.3}..{:.3} s, score {:.1}{}",
                text(&r.signal),
                text(&r.series),
                r.gvt_from,
                r.gvt_to,
                r.real_from,
                r.real_to,
                r.score,
                if r.caused_by_pe >= 0 {
                    format!(", caused by PE {}", r.caused_by_pe)
                } else if r.caused_by_lp >= 0 {
                    format!(", caused by hotspot LP {}", r.caused_by_lp)
                } else {
                    String::new()
                }
            )?;
        }
        writeln!(out, "run-wide slowdowns: {}", t.run_wide.len())?;
        for r in t.run_wide.iter().take(top) {
            writeln!(
                out,
                "  {}: GVT {:.3}..{:.3}, real {:.3}..{:.3} s, {:.4} against a usual {:.4}, score {:.1}{}",
                text(&r.signal),
                r.gvt_from,
                r.gvt_to,
                r.real_from,
                r.real_to,
                r.value,
                r.usual,
                r.score,
                if r.caused_by_lp >= 0 {
                    format!(", caused by hotspot LP {}", r.caused_by_lp)
                } else if r.caused_by_pe >= 0 {
                    format!(", caused by PE {}", r.caused_by_pe)
                } else {
                    ", every PE at once".to_string()
                }
            )?;
        }
        writeln!(out, "entities by the cost of their incidents:")?;
        for e in t.entities.iter().take(top) {
            let who = match (text(&e.kind).as_str(), e.pe) {
                ("pe", _) => format!("PE {}", e.pe),
                ("every_pe", _) => "every PE".to_owned(),
                (_, -1) => format!("LP {}", e.lp),
                _ => format!("LP {} (PE {} KP {})", e.lp, e.pe, e.kp),
            };
            writeln!(
                out,
                "  {}. {who}: {:.3} s, {} incident(s), {} anomalies",
                e.rank, e.cost_s, e.incidents, e.anomalies
            )?;
        }
        writeln!(
            out,
            "series statistics: {} rows; intervals: {} rows; peer model: {} rows",
            t.stats.len(),
            t.intervals.len(),
            t.model.len()
        )
    }
}
