//! The findings of a ROSS analysis as the rows and attributes of the
//! provenance file (`provenance::ross` writes them).
//!
//! Every rank holds the same findings, so every rank builds the same rows;
//! the rows depend on nothing but the input files and the settings, which
//! is what makes the file the same for any number of AD ranks (only the
//! `ad_ranks`, `command_line` and time attributes tell runs apart).

use std::collections::BTreeMap;
use std::path::Path;

use super::attribution::{hotspot_cause, lp_homes, ranked_entities};
use super::hotspots::HotspotLp;
use super::peers::{median, median_sorted, peer_groups, PeerAnomaly};
use super::signals::{Entity, RunSeries};
use super::Findings;
use crate::collectives::Collectives;
use crate::provenance::hdf5file::FileAttr;
use crate::provenance::ross::*;
use crate::util::utc::{unix_seconds, utc_iso8601};

/// `(pe, kp, lp)` of an entity, -1 where it does not apply.
fn ids(e: Entity) -> (u64, i64, i64) {
    match e {
        Entity::Pe(p) => (u64::from(p), -1, -1),
        Entity::Kp(p, k) => (u64::from(p), i64::from(k), -1),
        Entity::Lp(p, k, l) => (u64::from(p), i64::from(k), i64::from(l)),
    }
}

/// Builds the tables of the findings.
pub fn tables(f: &Findings) -> RossTables {
    let mut t = RossTables::default();
    let homes = lp_homes(&f.gvt);
    let push_peer = |t: &mut RossTables, a: &PeerAnomaly, cause: Option<u32>, series: &str| {
        let (pe, kp, lp) = ids(a.entity);
        let id = t.anomalies.len() as u64;
        let mut r = RossAnomalyRow::new(a.entity.kind(), a.signal.name(), series);
        r.id = id;
        r.pe = pe as i64;
        r.kp = kp;
        r.lp = lp;
        (r.gvt_from, r.gvt_to) = (a.window.span.gvt_from, a.window.span.gvt_to);
        (r.real_from, r.real_to) = (a.window.span.real_from, a.window.span.real_to);
        (r.first_interval, r.last_interval) = (a.window.first as u64, a.window.last as u64);
        (r.score, r.value, r.peer_median) = (a.window.score, a.window.value, a.peer_median);
        r.caused_by_pe = cause.map_or(-1, i64::from);
        r.caused_by_lp = hotspot_cause(a, &f.hotspots, &homes).map_or(-1, i64::from);
        (r.evidence_start, r.evidence_len) = push_evidence(&mut t.evidence, id, &a.context);
        t.anomalies.push(r);
    };
    for (a, c) in &f.gvt_anomalies {
        push_peer(&mut t, a, *c, "gvt");
    }
    for (a, c) in &f.rt_anomalies {
        push_peer(&mut t, a, *c, "rt");
    }
    for h in &f.hotspots {
        push_hotspot(&mut t, h, &homes);
    }
    for (i, r) in ranked_entities(f).iter().enumerate() {
        let id = |x: Option<u32>| x.map_or(-1, i64::from);
        t.entities.push(EntityRow {
            rank: i as u64 + 1,
            kind: label(r.entity.kind.name()),
            pe: id(r.entity.pe),
            kp: id(r.entity.kp),
            lp: id(r.entity.lp),
            cost_s: r.cost_s,
            incidents: r.incidents as u64,
            anomalies: r.anomalies as u64,
        });
    }
    for (name, series) in [("gvt", Some(&f.gvt)), ("rt", f.rt.as_ref())] {
        if let Some(s) = series {
            series_rows(&mut t, name, s);
        }
    }
    if let Some(tr) = &f.trace {
        t.trace_per_interval = tr.tally.per_interval.clone();
    }
    run_wide_rows(&mut t, f);
    t.incidents = f.incidents.clone();
    t
}

/// The run-wide slowdowns, their evidence and the detector's record of
/// every interval.
fn run_wide_rows(t: &mut RossTables, f: &Findings) {
    for a in &f.run_wide.windows {
        let id = t.run_wide.len() as u64;
        let mut r = RunWideRow::new(a.signal.name());
        r.id = id;
        (r.gvt_from, r.gvt_to) = (a.window.span.gvt_from, a.window.span.gvt_to);
        (r.real_from, r.real_to) = (a.window.span.real_from, a.window.span.real_to);
        (r.first_interval, r.last_interval) = (a.window.first as u64, a.window.last as u64);
        (r.score, r.value, r.usual) = (a.window.score, a.window.value, a.usual);
        (r.excess, r.share_of_run) = (a.excess, a.share);
        r.caused_by_pe = a.caused_by_pe.map_or(-1, i64::from);
        r.caused_by_lp = a.caused_by_lp.map_or(-1, i64::from);
        (r.evidence_start, r.evidence_len) =
            push_evidence(&mut t.run_wide_evidence, id, &a.context);
        t.run_wide.push(r);
    }
    for p in &f.run_wide.points {
        t.run_model.push(RunModelRow::new(
            p.signal.name(),
            p.interval as u64,
            p.value,
            p.usual,
            p.score,
            p.anomalous,
        ));
    }
}

/// Appends the evidence rows of anomaly `id` (its values from interval
/// `context.0` on); returns their first row and count.
fn push_evidence(rows: &mut Vec<EvidenceRow>, id: u64, context: &(usize, Vec<f64>)) -> (u64, u64) {
    let start = rows.len() as u64;
    rows.extend(context.1.iter().enumerate().map(|(i, v)| EvidenceRow {
        anomaly: id,
        interval: (context.0 + i) as u64,
        value: *v,
    }));
    (start, context.1.len() as u64)
}

fn push_hotspot(t: &mut RossTables, h: &HotspotLp, homes: &BTreeMap<u32, (u32, u32)>) {
    let id = t.anomalies.len() as u64;
    let mut r = RossAnomalyRow::new("lp", "trace_events_received", "evtrace");
    r.id = id;
    r.lp = i64::from(h.lp);
    // Where the LP lives, when LP samples say.
    if let Some((p, k)) = homes.get(&h.lp) {
        r.pe = i64::from(*p);
        r.kp = i64::from(*k);
    }
    (r.gvt_from, r.gvt_to) = (h.span.gvt_from, h.span.gvt_to);
    (r.real_from, r.real_to) = (h.span.real_from, h.span.real_to);
    (r.first_interval, r.last_interval) = (h.first as u64, h.last as u64);
    (r.score, r.value, r.peer_median) = (h.score, h.events as f64, h.peer_median);
    r.evidence_start = t.evidence.len() as u64;
    let (lo, values) = h.evidence();
    for (k, v) in values.iter().enumerate() {
        t.evidence.push(EvidenceRow {
            anomaly: id,
            interval: (lo + k) as u64,
            value: *v as f64,
        });
    }
    r.evidence_len = values.len() as u64;
    r.senders_start = t.senders.len() as u64;
    for (lp, n) in &h.top_senders {
        t.senders.push(SenderRow {
            anomaly: id,
            lp: u64::from(*lp),
            events: *n,
        });
    }
    r.senders_len = h.top_senders.len() as u64;
    t.anomalies.push(r);
}

/// Statistics, interval bounds and the peer model of one set of series.
fn series_rows(t: &mut RossTables, name: &str, s: &RunSeries) {
    for ((e, sig), v) in &s.values {
        t.stats
            .push(SeriesStatsRow::of(name, e.kind(), ids(*e), sig.name(), v));
    }
    for (pe, ivs) in &s.intervals {
        for (k, iv) in ivs.iter().enumerate() {
            t.intervals.push(IntervalRow::new(
                name,
                u64::from(*pe),
                k as u64,
                [iv.gvt_from, iv.gvt_to, iv.real_from, iv.real_to],
            ));
        }
    }
    for g in peer_groups(s) {
        for (k, col) in g.columns.iter().enumerate() {
            let m = median_sorted(col);
            let mad = median(&mut col.iter().map(|v| (v - m).abs()).collect::<Vec<_>>());
            t.model.push(PeerModelRow::new(
                name,
                g.kind,
                g.signal.name(),
                k as u64,
                [g.members.len() as f64, m, mad],
            ));
        }
    }
}

/// The root attributes of the file (the same on every rank).
pub fn attributes(
    f: &Findings,
    coll: &Collectives,
    run_json: &serde_json::Value,
    started_at: u64,
    ended_at: u64,
) -> Vec<(&'static str, FileAttr)> {
    let mine: Vec<String> = std::env::args().collect();
    let command_line = coll.rank0_string(&mine.join(" "));
    let inputs: Vec<String> = f
        .run
        .files
        .kinds
        .iter()
        .filter_map(|k| f.run.files.path(*k))
        .map(|p| p.display().to_string())
        .collect();
    let params = serde_json::json!({
        "threshold": f.rule.threshold,
        "rel_floor": f.rule.rel_floor,
        "min_intervals": f.rule.min_intervals,
        "rt_bridge": super::peers::RT_BRIDGE,
        "run_wide_algorithm": f.detector.algorithm.name(),
        "run_wide_threshold": super::summary::run_wide_threshold(&f.detector),
        "run_wide_warmup_intervals": super::run_wide::WARMUP_INTERVALS,
        "run_wide_min_share": super::run_wide::MIN_SHARE,
        "clock_rescale_factor": f.run.rescale.map(|r| r.factor()),
    });
    vec![
        (
            "schema_version",
            FileAttr::U64(crate::provenance::SCHEMA_VERSION),
        ),
        ("source", FileAttr::Str("ross".into())),
        (
            "program",
            FileAttr::Str(format!("chimbuko-mpi {}", env!("CARGO_PKG_VERSION"))),
        ),
        ("algorithm", FileAttr::Str("peer".into())),
        ("algorithm_params", FileAttr::Str(params.to_string())),
        ("ad_ranks", FileAttr::U64(coll.size() as u64)),
        (
            "input_streams",
            FileAttr::Str(serde_json::to_string(&inputs).unwrap_or_default()),
        ),
        ("command_line", FileAttr::Str(command_line)),
        ("start_time", FileAttr::Str(utc_iso8601(started_at))),
        ("end_time", FileAttr::Str(utc_iso8601(ended_at))),
        ("ross_run", FileAttr::Str(run_json.to_string())),
        (
            "warnings",
            FileAttr::Str(serde_json::to_string(&f.warnings).unwrap_or_default()),
        ),
    ]
}

/// Writes the provenance file of the findings (collective).
pub fn write(
    path: &Path,
    coll: &Collectives,
    overwrite: bool,
    f: &Findings,
    run_json: &serde_json::Value,
    started_at: u64,
) -> anyhow::Result<()> {
    // Attributes are written collectively and must be the same on every
    // rank: the latest start and end.
    let times = coll.allreduce_max(&[started_at, unix_seconds()]);
    let attrs = attributes(f, coll, run_json, times[0], times[1]);
    write_ross_provenance(path, coll, overwrite, &attrs, &tables(f))
}
