//! Reading a TAU run's provenance file back whole ([`Provenance`]), for
//! `inspect`, `export --json` and the report (`crate::inspect`,
//! `crate::report`).
//!
//! Reads with the serial HDF5 driver: no MPI needed.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

use super::records::*;
use super::table::{root_attrs, table};
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

/// The record's own frames (its GPU parent's stack follows them).
pub fn own_stack(rows: &[CallStackRow]) -> &[CallStackRow] {
    let n = rows.iter().take_while(|r| r.of_gpu_parent == 0).count();
    &rows[..n]
}
