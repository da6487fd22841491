//! Reading a provenance file back ([`Provenance`]; `inspect`'s summary is
//! in [`super::inspect`]) and `chimbuko-mpi export --json` (Chimbuko's JSON
//! documents, so that existing Chimbuko analysis scripts work on our
//! output).
//!
//! Reads with the serial HDF5 driver: no MPI needed.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use hdf5::H5Type;
use serde_json::{json, Value};

use super::records::*;
use super::COLLECTIONS;

/// Whether `path` is a provenance file written by this project (an HDF5
/// file with a `schema_version` root attribute); an error when it is not
/// an HDF5 file at all.
pub fn is_provenance_file(path: &Path) -> anyhow::Result<bool> {
    let f = hdf5::File::open(path).with_context(|| {
        format!(
            "{} is not a provenance file of chimbuko-mpi (not an HDF5 file)",
            path.display()
        )
    })?;
    Ok(f.attr("schema_version").is_ok())
}

/// Everything in a provenance file.
pub struct Provenance {
    /// Root attributes (`schema_version`, `algorithm`, ...), as text.
    pub attrs: BTreeMap<String, String>,
    /// `anomalies/` then `normal_execs/` (the order of [`COLLECTIONS`]).
    pub collections: Vec<CollectionTables>,
    /// The `functions` table (full names by global index).
    pub functions: Vec<FunctionRow>,
    /// The `counters` table (full names by global index).
    pub counters: Vec<CounterRow>,
    /// The `func_stats` table.
    pub func_stats: Vec<FuncStatsRow>,
    /// The `counter_stats` table.
    pub counter_stats: Vec<CounterStatsRow>,
    /// The `ad_model` table: the final model of every function.
    pub ad_model: Vec<ModelRow>,
    /// Histogram bin counts of `ad_model` (`hist_start`/`hist_len`).
    pub ad_model_hist: Vec<u64>,
    /// The `model_params` table: the models the labels came from.
    pub model_params: Vec<ModelRow>,
    /// Histogram bin counts of `model_params`.
    pub model_params_hist: Vec<u64>,
    /// The `metadata` table.
    pub metadata: Vec<MetadataRow>,
    /// The `steps` table.
    pub steps: Vec<StepRow>,
    /// The `streams` table.
    pub streams: Vec<StreamRow>,
    /// The `ad_perf` table.
    pub ad_perf: Vec<PerfRow>,
    /// The incidents (tables `incidents`, `incident_evidence`,
    /// `incident_members`; empty in files written before schema 5).
    pub incidents: crate::incidents::IncidentList,
}

/// The root attributes as text (those that are not text or numbers are
/// skipped).
pub(super) fn root_attrs(f: &hdf5::File) -> BTreeMap<String, String> {
    let mut attrs = BTreeMap::new();
    for name in f.attr_names().unwrap_or_default() {
        let Ok(a) = f.attr(&name) else { continue };
        // Floats first by their type: HDF5 would convert one read as an
        // integer.
        let is_float = matches!(
            a.dtype().and_then(|t| t.to_descriptor()),
            Ok(hdf5::types::TypeDescriptor::Float(_))
        );
        let text = if let Ok(s) = a.read_scalar::<hdf5::types::VarLenUnicode>() {
            s.as_str().to_owned()
        } else if is_float {
            match a.read_scalar::<f64>() {
                Ok(x) => x.to_string(),
                Err(_) => continue,
            }
        } else if let Ok(x) = a.read_scalar::<u64>() {
            x.to_string()
        } else if let Ok(x) = a.read_scalar::<f64>() {
            x.to_string()
        } else {
            continue;
        };
        attrs.insert(name, text);
    }
    attrs
}

/// Every row of table `name` (a missing table reads as empty).
pub(crate) fn table<T: H5Type>(f: &hdf5::File, name: &str) -> anyhow::Result<Vec<T>> {
    if !f.link_exists(name) {
        return Ok(Vec::new());
    }
    f.dataset(name)
        .and_then(|d| d.read_raw::<T>())
        .with_context(|| format!("reading {name}"))
}

impl Provenance {
    /// Reads every table of the file at `path` (a missing table reads as
    /// empty; root attributes that are not text or numbers are skipped).
    pub fn load(path: &Path) -> anyhow::Result<Provenance> {
        let f = hdf5::File::open(path)
            .with_context(|| format!("opening provenance file {}", path.display()))?;
        let attrs = root_attrs(&f);
        let mut collections = Vec::new();
        for c in COLLECTIONS {
            collections.push(CollectionTables {
                records: table(&f, &format!("{c}/records"))?,
                call_stack: table(&f, &format!("{c}/call_stack"))?,
                counter_events: table(&f, &format!("{c}/counter_events"))?,
                exec_window: table(&f, &format!("{c}/exec_window"))?,
                comm_window: table(&f, &format!("{c}/comm_window"))?,
                gpu_location: table(&f, &format!("{c}/gpu_location"))?,
                gpu_parent: table(&f, &format!("{c}/gpu_parent"))?,
                node_state: table(&f, &format!("{c}/node_state"))?,
            });
        }
        Ok(Provenance {
            collections,
            functions: table(&f, "functions")?,
            counters: table(&f, "counters")?,
            func_stats: table(&f, "func_stats")?,
            counter_stats: table(&f, "counter_stats")?,
            ad_model: table(&f, "ad_model")?,
            ad_model_hist: table(&f, "ad_model_hist")?,
            model_params: table(&f, "model_params")?,
            model_params_hist: table(&f, "model_params_hist")?,
            metadata: table(&f, "metadata")?,
            steps: table(&f, "steps")?,
            streams: table(&f, "streams")?,
            ad_perf: table(&f, "ad_perf")?,
            incidents: super::incidents::read_incidents(&f, &|k| {
                attrs.get(k).and_then(|v| v.parse().ok())
            })?,
            attrs,
        })
    }

    /// Full name of a function (records hold a possibly cut copy).
    pub fn function_name(&self, fid: u32) -> String {
        self.functions.get(fid as usize).map_or_else(
            || format!("<function {fid}>"),
            |f| f.name.as_str().to_owned(),
        )
    }

    /// Full name of a counter.
    pub fn counter_name(&self, c: u32) -> String {
        self.counters
            .get(c as usize)
            .map_or_else(|| format!("<counter {c}>"), |x| x.name.as_str().to_owned())
    }

    /// Records of collection `c` that keep their label after the end-of-run
    /// re-evaluation (anomalies still anomalous, normal samples still normal).
    pub fn kept(&self, c: usize) -> impl Iterator<Item = (usize, &ExecRecord)> {
        let want = if c == 0 { LABEL_ANOMALY } else { LABEL_NORMAL };
        self.collections[c]
            .records
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.final_label == want)
    }
}

/// Rows `start .. start + len` of a companion table (empty when out of
/// range).
pub fn slice<T>(v: &[T], start: u64, len: u32) -> &[T] {
    let s = (start as usize).min(v.len());
    let e = (s + len as usize).min(v.len());
    &v[s..e]
}

/// Chimbuko's RunStats JSON.
fn run_stats_json(s: &RunStatsRow) -> Value {
    json!({
        "accumulate": s.accumulate,
        "count": s.count,
        "kurtosis": s.kurtosis,
        "maximum": s.maximum,
        "mean": s.mean,
        "minimum": s.minimum,
        "skewness": s.skewness,
        "stddev": s.stddev,
    })
}

/// `algo_params` / `model` of Chimbuko's schema: RunStats for SSTD-like
/// models, a histogram with the internal threshold for histogram models.
fn model_json(m: &ModelRow, hist: &[u64]) -> Value {
    let counts = slice(hist, m.hist_start, m.hist_len);
    if counts.is_empty() {
        return json!({
            "accumulate": m.mean * m.count as f64,
            "count": m.count,
            "kurtosis": m.kurtosis,
            "maximum": m.maximum,
            "mean": m.mean,
            "minimum": m.minimum,
            "skewness": m.skewness,
            "stddev": m.stddev,
        });
    }
    let edges: Vec<f64> = (0..=counts.len())
        .map(|b| m.hist_first_edge + b as f64 * m.hist_bin_width)
        .collect();
    json!({
        "histogram": {
            "Histogram Bin Counts": counts,
            "Histogram Bin Edges": edges,
        },
        "internal_global_threshold": m.threshold,
    })
}

fn call_stack_json(p: &Provenance, rows: &[CallStackRow]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "entry": r.entry,
                    "exit": r.exit,
                    "fid": r.fid,
                    "func": p.function_name(r.fid),
                    "event_id": chimbuko_event_id(r.event_id.as_str()),
                    "is_anomaly": r.is_anomaly != 0,
                })
            })
            .collect(),
    )
}

/// One record as Chimbuko's function event JSON (schema version 2).
pub fn record_json(p: &Provenance, c: usize, index: usize) -> Value {
    let d = &p.collections[c];
    let r = &d.records[index];
    let counters: Vec<Value> = slice(
        &d.counter_events,
        r.counter_events_start,
        r.counter_events_len,
    )
    .iter()
    .map(|x| {
        json!({
            "counter_idx": x.counter_idx,
            "counter_name": p.counter_name(x.counter_idx),
            "counter_value": x.counter_value,
            "pid": x.pid, "rid": x.rid, "tid": x.tid, "ts": x.ts,
        })
    })
    .collect();
    let exec_window: Vec<Value> = slice(&d.exec_window, r.exec_window_start, r.exec_window_len)
        .iter()
        .map(|w| {
            json!({
                "entry": w.entry,
                "exit": w.exit,
                "fid": w.fid,
                "func": p.function_name(w.fid),
                "event_id": chimbuko_event_id(w.event_id.as_str()),
                "parent_event_id": chimbuko_event_id(w.parent_event_id.as_str()),
                "is_anomaly": w.is_anomaly != 0,
            })
        })
        .collect();
    let comm_window: Vec<Value> = slice(&d.comm_window, r.comm_window_start, r.comm_window_len)
        .iter()
        .map(|m| {
            json!({
                "type": if m.kind == 0 { "SEND" } else { "RECV" },
                "pid": m.pid, "rid": m.rid, "tid": m.tid,
                "src": m.src, "tar": m.tar,
                "bytes": if m.bytes == u64::MAX { Value::Null } else { json!(m.bytes) },
                "tag": m.tag,
                "timestamp": m.timestamp,
                "execdata_key": chimbuko_event_id(m.execdata_key.as_str()),
            })
        })
        .collect();
    let gpu_location = slice(&d.gpu_location, r.gpu_location_start, r.gpu_location_len)
        .first()
        .map_or(Value::Null, |g| {
            json!({
                "context": g.context.as_str(),
                "device": g.device.as_str(),
                "stream": g.stream.as_str(),
                "thread": g.thread,
            })
        });
    let gpu_parent = slice(&d.gpu_parent, r.gpu_parent_start, r.gpu_parent_len)
        .first()
        .map_or(Value::Null, |g| {
            if !g.error.as_str().is_empty() {
                return json!(g.error.as_str());
            }
            json!({
                "event_id": chimbuko_event_id(g.event_id.as_str()),
                "tid": g.tid,
                "call_stack": call_stack_json(p, slice(&d.call_stack, g.call_stack_start, g.call_stack_len)),
            })
        });
    let node = slice(&d.node_state, r.node_state_start, r.node_state_len);
    let node_state = if node.is_empty() {
        Value::Null
    } else {
        json!({
            "timestamp": node.iter().map(|n| n.timestamp).max().unwrap_or(0),
            "data": node.iter().map(|n| json!({"field": n.field.as_str(), "value": n.value})).collect::<Vec<_>>(),
        })
    };
    let algo_params = p
        .model_params
        .get(r.model_row as usize)
        .map_or(Value::Null, |m| model_json(m, &p.model_params_hist));
    json!({
        "__id": index,
        "version": 2,
        "pid": r.pid, "rid": r.rid, "tid": r.tid,
        "event_id": chimbuko_event_id(r.event_id.as_str()),
        "fid": r.fid,
        "func": p.function_name(r.fid),
        "entry": r.entry,
        "exit": r.exit,
        "runtime_total": r.runtime_total,
        "runtime_exclusive": r.runtime_exclusive,
        "io_step": r.io_step,
        "io_step_tstart": r.io_step_tstart,
        "io_step_tend": r.io_step_tend,
        "outlier_score": r.final_score,
        "outlier_severity": r.outlier_severity,
        "hostname": r.hostname.as_str(),
        "is_gpu_event": r.is_gpu_event != 0,
        "call_stack": call_stack_json(p, own_stack(slice(&d.call_stack, r.call_stack_start, r.call_stack_len))),
        "counter_events": counters,
        "gpu_location": gpu_location,
        "gpu_parent": gpu_parent,
        "event_window": {"exec_window": exec_window, "comm_window": comm_window},
        "node_state": node_state,
        "algo_params": algo_params,
    })
}

/// The record's own frames (its GPU parent's stack follows them).
pub fn own_stack(rows: &[CallStackRow]) -> &[CallStackRow] {
    let n = rows.iter().take_while(|r| r.of_gpu_parent == 0).count();
    &rows[..n]
}

fn write_array(dir: &Path, name: &str, items: impl Iterator<Item = Value>) -> anyhow::Result<u64> {
    let path = dir.join(name);
    let file =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let mut n = 0u64;
    let res = (|| -> std::io::Result<()> {
        out.write_all(b"[")?;
        for (i, v) in items.enumerate() {
            if i > 0 {
                out.write_all(b",\n")?;
            }
            serde_json::to_writer(&mut out, &v)?;
            n += 1;
        }
        out.write_all(b"]\n")?;
        out.flush()
    })();
    res.with_context(|| format!("writing {}", path.display()))?;
    Ok(n)
}

/// Writes Chimbuko's collections as JSON arrays into `dir`; returns the
/// files written with their number of documents.
pub fn export_json(p: &Provenance, dir: &Path) -> anyhow::Result<Vec<(String, u64)>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut done = Vec::new();
    let n = write_array(
        dir,
        "anomalies.json",
        p.kept(0).map(|(i, _)| record_json(p, 0, i)),
    )?;
    done.push(("anomalies.json".to_owned(), n));
    let n = write_array(
        dir,
        "normalexecs.json",
        p.kept(1).map(|(i, _)| record_json(p, 1, i)),
    )?;
    done.push(("normalexecs.json".to_owned(), n));
    let n = write_array(
        dir,
        "metadata.json",
        p.metadata.iter().enumerate().map(|(i, m)| {
            json!({"__id": i, "pid": m.pid, "rid": m.rid, "tid": m.tid,
                   "descr": m.descr.as_str(), "value": m.value.as_str()})
        }),
    )?;
    done.push(("metadata.json".to_owned(), n));
    let n = write_array(
        dir,
        "func_stats.json",
        p.func_stats.iter().enumerate().map(|(i, f)| {
            let metrics = if f.total_anomalies == 0 {
                Value::Null
            } else {
                json!({
                    "anomaly_count": run_stats_json(&f.stats("anomaly_count")),
                    "first_io_step": f.first_io_step,
                    "last_io_step": f.last_io_step,
                    "min_timestamp": f.min_timestamp,
                    "max_timestamp": f.max_timestamp,
                    "score": run_stats_json(&f.stats("score")),
                    "severity": run_stats_json(&f.stats("severity")),
                })
            };
            json!({
                "__id": i,
                "app": f.pid,
                "fid": f.fid,
                "fname": p.function_name(f.fid),
                "anomaly_metrics": metrics,
                "runtime_profile": {
                    "exclusive_runtime": run_stats_json(&f.stats("exclusive")),
                    "inclusive_runtime": run_stats_json(&f.stats("inclusive")),
                },
            })
        }),
    )?;
    done.push(("func_stats.json".to_owned(), n));
    let n = write_array(
        dir,
        "counter_stats.json",
        p.counter_stats.iter().enumerate().map(|(i, c)| {
            json!({"__id": i, "app": 0, "counter": p.counter_name(c.counter_idx),
                   "stats": run_stats_json(&c.stats())})
        }),
    )?;
    done.push(("counter_stats.json".to_owned(), n));
    let n = write_array(
        dir,
        "ad_model.json",
        p.ad_model.iter().enumerate().map(|(i, m)| {
            json!({"__id": i, "pid": m.pid, "fid": m.fid,
                   "func_name": p.function_name(m.fid),
                   "model": model_json(m, &p.ad_model_hist)})
        }),
    )?;
    done.push(("ad_model.json".to_owned(), n));
    let n = write_array(
        dir,
        "incidents.json",
        p.incidents.incidents.iter().map(|i| i.to_json()),
    )?;
    done.push(("incidents.json".to_owned(), n));
    Ok(done)
}

/// An event id of the file (`pid:rank:step:idx`) in Chimbuko's form
/// (`rank:step:idx`) for the Chimbuko-compatible JSON; `root`, empty ids
/// and ids of files written before the program index was added pass
/// unchanged.
pub fn chimbuko_event_id(id: &str) -> &str {
    if id.bytes().filter(|&b| b == b':').count() == 3 {
        id.split_once(':').map_or(id, |(_, rest)| rest)
    } else {
        id
    }
}

#[cfg(test)]
mod event_id_tests {
    use super::chimbuko_event_id;

    #[test]
    fn json_ids_drop_the_program() {
        assert_eq!(chimbuko_event_id("2:13:4:77"), "13:4:77");
        assert_eq!(chimbuko_event_id("13:4:77"), "13:4:77");
        assert_eq!(chimbuko_event_id("root"), "root");
        assert_eq!(chimbuko_event_id(""), "");
    }
}
