//! `chimbuko-mpi export --json` of a TAU run's provenance file: Chimbuko's
//! JSON documents, so that existing Chimbuko analysis scripts work on our
//! output, and the ids they join on.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde_json::{json, Value};

use crate::provenance::read::{own_stack, slice, Provenance};
use crate::provenance::records::*;

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
                    "exec_key": r.event_id.as_str(),
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
    let (counters, exec_window, comm_window) = windows_json(p, d, r);
    let (gpu_location, gpu_parent) = gpu_json(p, d, r);
    let node_state = node_state_json(d, r);
    let algo_params = p
        .model_params
        .get(r.model_row as usize)
        .map_or(Value::Null, |m| model_json(m, &p.model_params_hist));
    json!({
        "__id": index,
        "version": 2,
        "pid": r.pid, "rid": r.rid, "tid": r.tid,
        "event_id": chimbuko_event_id(r.event_id.as_str()),
        "exec_key": r.event_id.as_str(),
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
        "size_class": r.size_class,
        "call_stack": call_stack_json(p, own_stack(slice(&d.call_stack, r.call_stack_start, r.call_stack_len))),
        "counter_events": counters,
        "gpu_location": gpu_location,
        "gpu_parent": gpu_parent,
        "event_window": {"exec_window": exec_window, "comm_window": comm_window},
        "node_state": node_state,
        "algo_params": algo_params,
    })
}

/// A record's counter events, execution window and communication window
/// in Chimbuko's JSON.
fn windows_json(
    p: &Provenance,
    d: &CollectionTables,
    r: &ExecRecord,
) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
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
                "exec_key": w.event_id.as_str(),
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
    (counters, exec_window, comm_window)
}

/// A GPU record's location and its CPU parent (with the parent's call
/// stack) in Chimbuko's JSON; null for CPU records.
fn gpu_json(p: &Provenance, d: &CollectionTables, r: &ExecRecord) -> (Value, Value) {
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
    (gpu_location, gpu_parent)
}

/// The node's state around a record in Chimbuko's JSON (null when not
/// recorded).
fn node_state_json(d: &CollectionTables, r: &ExecRecord) -> Value {
    let node = slice(&d.node_state, r.node_state_start, r.node_state_len);
    if node.is_empty() {
        Value::Null
    } else {
        json!({
            "timestamp": node.iter().map(|n| n.timestamp).max().unwrap_or(0),
            "data": node.iter().map(|n| json!({"field": n.field.as_str(), "value": n.value})).collect::<Vec<_>>(),
        })
    }
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
/// (`rank:step:idx`) for the Chimbuko-compatible JSON's `event_id`; the
/// documents carry the file's id whole as `exec_key`, the key to join
/// them with the file on. `root`, empty ids and ids of files written
/// before the program index was added pass unchanged.
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
