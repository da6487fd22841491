//! The provenance file of a ROSS analysis (`chimbuko-mpi ross --out`):
//! its tables, writing them (collectively, through parallel HDF5) and
//! reading them back for `inspect` and `export --json`.
//!
//! The file follows the layout of TAU runs where it applies: the same root
//! attributes (`schema_version`, `program`, `algorithm`,
//! `algorithm_params`, `ad_ranks`, `input_streams`, `command_line`,
//! `start_time`, `end_time`, `completed`) plus `source = "ross"`, and the
//! tables under `ross/`: the anomaly records with their context (the
//! neighbouring samples, the straggler senders), the PEs ranked by cost,
//! the per-entity statistics of every series, the interval bounds, and the
//! detector's model (each interval's peer median and spread).
//!
//! The analysis is the same on every AD rank, so rank 0 writes every row;
//! the others take part in the collective calls only.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use hdf5::types::FixedUnicode;
use hdf5::H5Type;
use serde_json::{json, Value};

use super::hdf5file::{FileAttr, ProvenanceFile};
use super::read::{root_attrs, table};
use crate::collectives::Collectives;

/// Short text columns (kinds, signals, series names).
pub type Label = FixedUnicode<32>;

fn label(s: &str) -> Label {
    super::records::fixed(s)
}

fn text(l: &Label) -> String {
    l.as_str().to_owned()
}

/// One anomaly: an entity that stood out from its peers over a window.
#[derive(H5Type, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct RossAnomalyRow {
    /// Row index (the `anomaly` of companion rows).
    pub id: u64,
    /// `pe`, `kp` or `lp`.
    pub kind: Label,
    /// PE id (-1 when unknown: a hotspot LP seen only in the trace).
    pub pe: i64,
    /// Local KP index (-1 for a PE anomaly).
    pub kp: i64,
    /// Global LP id (-1 unless an LP anomaly).
    pub lp: i64,
    /// The signal (`event_process_s`, `rollbacks`, ...).
    pub signal: Label,
    /// Which series: `gvt`, `rt` (real-time grid) or `evtrace`.
    pub series: Label,
    /// GVT at the window's start and end.
    pub gvt_from: f64,
    /// GVT at the window's end.
    pub gvt_to: f64,
    /// Real time (s) at the window's start.
    pub real_from: f64,
    /// Real time (s) at the window's end.
    pub real_to: f64,
    /// First interval of the window.
    pub first_interval: u64,
    /// Last interval of the window.
    pub last_interval: u64,
    /// Highest score in the window.
    pub score: f64,
    /// The entity's value at that interval.
    pub value: f64,
    /// The peers' median there.
    pub peer_median: f64,
    /// The PE the anomaly is attributed to (-1: none).
    pub caused_by_pe: i64,
    /// The hotspot LP the anomaly is attributed to (-1: none).
    pub caused_by_lp: i64,
    /// Rows of `ross/evidence` (the neighbouring samples).
    pub evidence_start: u64,
    /// Number of them.
    pub evidence_len: u64,
    /// Rows of `ross/senders` (a hotspot's top senders).
    pub senders_start: u64,
    /// Number of them.
    pub senders_len: u64,
}

/// One sample around an anomaly's window.
#[derive(H5Type, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct EvidenceRow {
    /// The anomaly (row of `ross/anomalies`).
    pub anomaly: u64,
    /// Interval index.
    pub interval: u64,
    /// The entity's value.
    pub value: f64,
}

/// An LP that sent events to a hotspot LP.
#[derive(H5Type, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct SenderRow {
    /// The anomaly (row of `ross/anomalies`).
    pub anomaly: u64,
    /// Sending LP.
    pub lp: u64,
    /// Events it sent to the hotspot.
    pub events: u64,
}

/// A PE and the run time it cost.
#[derive(H5Type, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct EntityRow {
    /// 1 for the costliest.
    pub rank: u64,
    /// PE id.
    pub pe: u64,
    /// Seconds of run time it cost.
    pub cost_s: f64,
    /// Anomalies of it or attributed to it.
    pub anomalies: u64,
}

/// Statistics of one series of one entity.
#[derive(H5Type, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct SeriesStatsRow {
    /// `gvt` or `rt`.
    pub series: Label,
    /// `pe`, `kp` or `lp`.
    pub kind: Label,
    /// PE id.
    pub pe: u64,
    /// KP index (-1 for a PE).
    pub kp: i64,
    /// LP id (-1 unless an LP).
    pub lp: i64,
    /// The signal.
    pub signal: Label,
    /// Points.
    pub count: u64,
    /// Sum of the points.
    pub sum: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation (population).
    pub std: f64,
    /// Smallest point.
    pub min: f64,
    /// Largest point.
    pub max: f64,
}

/// The bounds of one interval of one PE's series.
#[derive(H5Type, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct IntervalRow {
    /// `gvt` or `rt`.
    pub series: Label,
    /// PE id.
    pub pe: u64,
    /// Interval index.
    pub interval: u64,
    /// GVT at its start.
    pub gvt_from: f64,
    /// GVT at its end.
    pub gvt_to: f64,
    /// Real time (s) at its start.
    pub real_from: f64,
    /// Real time (s) at its end.
    pub real_to: f64,
}

/// The detector's model at one interval: the peers' median and spread.
#[derive(H5Type, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct PeerModelRow {
    /// `gvt` or `rt`.
    pub series: Label,
    /// `pe`, `kp` or `lp`.
    pub kind: Label,
    /// The signal.
    pub signal: Label,
    /// Interval index.
    pub interval: u64,
    /// Entities compared.
    pub entities: u64,
    /// Their median.
    pub median: f64,
    /// Their median absolute deviation.
    pub mad: f64,
}

/// Everything a ROSS provenance file holds besides its attributes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RossTables {
    /// `ross/anomalies`.
    pub anomalies: Vec<RossAnomalyRow>,
    /// `ross/evidence`.
    pub evidence: Vec<EvidenceRow>,
    /// `ross/senders`.
    pub senders: Vec<SenderRow>,
    /// `ross/entities`.
    pub entities: Vec<EntityRow>,
    /// `ross/series_stats`.
    pub stats: Vec<SeriesStatsRow>,
    /// `ross/intervals`.
    pub intervals: Vec<IntervalRow>,
    /// `ross/peer_model`.
    pub model: Vec<PeerModelRow>,
    /// `ross/trace_events_per_interval`: events of the trace per GVT
    /// interval.
    pub trace_per_interval: Vec<u64>,
}

impl RossAnomalyRow {
    /// A row with the text columns set and every number zero (ids -1).
    pub fn new(kind: &str, signal: &str, series: &str) -> Self {
        RossAnomalyRow {
            id: 0,
            kind: label(kind),
            pe: -1,
            kp: -1,
            lp: -1,
            signal: label(signal),
            series: label(series),
            gvt_from: 0.0,
            gvt_to: 0.0,
            real_from: 0.0,
            real_to: 0.0,
            first_interval: 0,
            last_interval: 0,
            score: 0.0,
            value: 0.0,
            peer_median: 0.0,
            caused_by_pe: -1,
            caused_by_lp: -1,
            evidence_start: 0,
            evidence_len: 0,
            senders_start: 0,
            senders_len: 0,
        }
    }
}

impl SeriesStatsRow {
    /// The statistics of `values`.
    pub fn of(
        series: &str,
        kind: &str,
        ids: (u64, i64, i64),
        signal: &str,
        values: &[f64],
    ) -> Self {
        let n = values.len() as f64;
        let sum: f64 = values.iter().sum();
        let mean = if values.is_empty() { 0.0 } else { sum / n };
        let var = if values.is_empty() {
            0.0
        } else {
            values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n
        };
        SeriesStatsRow {
            series: label(series),
            kind: label(kind),
            pe: ids.0,
            kp: ids.1,
            lp: ids.2,
            signal: label(signal),
            count: values.len() as u64,
            sum,
            mean,
            std: var.sqrt(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

impl IntervalRow {
    /// A row of `series`.
    pub fn new(series: &str, pe: u64, interval: u64, bounds: [f64; 4]) -> Self {
        IntervalRow {
            series: label(series),
            pe,
            interval,
            gvt_from: bounds[0],
            gvt_to: bounds[1],
            real_from: bounds[2],
            real_to: bounds[3],
        }
    }
}

impl PeerModelRow {
    /// A row of `series`.
    pub fn new(series: &str, kind: &str, signal: &str, interval: u64, col: [f64; 3]) -> Self {
        PeerModelRow {
            series: label(series),
            kind: label(kind),
            signal: label(signal),
            interval,
            entities: col[0] as u64,
            median: col[1],
            mad: col[2],
        }
    }
}

/// Table names, in the order they are written.
const TABLES: [&str; 7] = [
    "ross/anomalies",
    "ross/evidence",
    "ross/senders",
    "ross/entities",
    "ross/series_stats",
    "ross/intervals",
    "ross/peer_model",
];

/// Writes the provenance file of a ROSS analysis (collective: every rank
/// calls it with the same tables; rank 0 writes the rows).
pub fn write_ross_provenance(
    path: &Path,
    coll: &Collectives,
    overwrite: bool,
    attrs: &[(&str, FileAttr)],
    t: &RossTables,
) -> anyhow::Result<()> {
    let mut f = ProvenanceFile::create(path, coll, overwrite)?;
    let write = coll.rank() == 0;
    f.set_attrs(attrs)?;
    f.set_attrs(&[("completed", FileAttr::U64(0))])?;
    fn put<T: H5Type>(
        f: &mut ProvenanceFile,
        write: bool,
        name: &str,
        rows: &[T],
    ) -> anyhow::Result<()> {
        f.recreate::<T>(name, rows.len() as u64)?;
        if write {
            f.write_rows(name, 0, rows)?;
        }
        Ok(())
    }
    let ctx = |name: &str| format!("{}: writing {name}", path.display());
    put(&mut f, write, TABLES[0], &t.anomalies).with_context(|| ctx(TABLES[0]))?;
    put(&mut f, write, TABLES[1], &t.evidence).with_context(|| ctx(TABLES[1]))?;
    put(&mut f, write, TABLES[2], &t.senders).with_context(|| ctx(TABLES[2]))?;
    put(&mut f, write, TABLES[3], &t.entities).with_context(|| ctx(TABLES[3]))?;
    put(&mut f, write, TABLES[4], &t.stats).with_context(|| ctx(TABLES[4]))?;
    put(&mut f, write, TABLES[5], &t.intervals).with_context(|| ctx(TABLES[5]))?;
    put(&mut f, write, TABLES[6], &t.model).with_context(|| ctx(TABLES[6]))?;
    let per = "ross/trace_events_per_interval";
    put(&mut f, write, per, &t.trace_per_interval).with_context(|| ctx(per))?;
    f.set_attrs(&[("completed", FileAttr::U64(1))])?;
    f.flush()?;
    f.close()
}

/// A ROSS provenance file read back.
#[derive(Debug, Clone, Default)]
pub struct RossProvenance {
    /// Root attributes as text.
    pub attrs: BTreeMap<String, String>,
    /// The tables.
    pub tables: RossTables,
}

/// Whether the provenance file at `path` is that of a ROSS analysis.
pub fn is_ross_file(path: &Path) -> anyhow::Result<bool> {
    let f = hdf5::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    Ok(f.attr("source")
        .and_then(|a| a.read_scalar::<hdf5::types::VarLenUnicode>())
        .is_ok_and(|s| s.as_str() == "ross"))
}

impl RossProvenance {
    /// Reads the file at `path` (serial HDF5: no MPI needed).
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let f = hdf5::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let attrs = root_attrs(&f);
        let tables = RossTables {
            anomalies: table(&f, TABLES[0])?,
            evidence: table(&f, TABLES[1])?,
            senders: table(&f, TABLES[2])?,
            entities: table(&f, TABLES[3])?,
            stats: table(&f, TABLES[4])?,
            intervals: table(&f, TABLES[5])?,
            model: table(&f, TABLES[6])?,
            trace_per_interval: table(&f, "ross/trace_events_per_interval")?,
        };
        Ok(RossProvenance { attrs, tables })
    }

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

    /// Writes the JSON documents (`anomalies`, `entities`, `series_stats`,
    /// `metadata`) into `dir`; returns each file's name and document count.
    pub fn export_json(&self, dir: &Path) -> anyhow::Result<Vec<(String, u64)>> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let t = &self.tables;
        let docs: Vec<(&str, Vec<Value>)> = vec![
            (
                "anomalies.json",
                t.anomalies.iter().map(|a| self.anomaly_json(a)).collect(),
            ),
            (
                "entities.json",
                t.entities
                    .iter()
                    .map(|e| json!({"rank": e.rank, "kind": "pe", "pe": e.pe, "cost_s": e.cost_s, "anomalies": e.anomalies}))
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

    /// A summary for people: the run, the anomalies, the costliest PEs.
    pub fn print_inspect(&self, out: &mut dyn Write, top: usize) -> std::io::Result<()> {
        let a = |k: &str| self.attrs.get(k).cloned().unwrap_or_default();
        writeln!(
            out,
            "{} (ROSS analysis, schema {})",
            a("program"),
            a("schema_version")
        )?;
        writeln!(out, "  inputs: {}", a("input_streams"))?;
        writeln!(out, "  settings: {}", a("algorithm_params"))?;
        writeln!(
            out,
            "  AD ranks: {}; completed: {}; {} .. {}",
            a("ad_ranks"),
            a("completed"),
            a("start_time"),
            a("end_time")
        )?;
        let t = &self.tables;
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
        writeln!(out, "PEs by run time cost:")?;
        for e in t.entities.iter().take(top) {
            writeln!(
                out,
                "  {}. PE {}: {:.3} s, {} anomalies",
                e.rank, e.pe, e.cost_s, e.anomalies
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
