//! Reading back what performance models are trained and judged on: the
//! executions sampled by `run --model-samples` (one training table per
//! function), the run's tags (`--tag`, `app_ranks`, `ad_ranks`) and the
//! functions' mean runtimes — for `model train --provenance` and `model
//! scaling` — and the models a model-detector run judged with.
//!
//! Reads with the serial HDF5 driver: no MPI needed.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context};

use super::records::{
    CounterRow, FuncStatsRow, FunctionRow, ModelDetectorRow, ModelSampleCounterRow, ModelSampleRow,
    RunTagRow,
};
use super::table::table;
use crate::detect::model::ModelDocument;
use crate::model::features::{counter_feature, FIXED};
use crate::model::table::Table;

fn open(path: &Path) -> anyhow::Result<hdf5::File> {
    hdf5::File::open(path).with_context(|| format!("opening provenance file {}", path.display()))
}

/// Full names by index from a names table (cut names from elsewhere when
/// the table lacks the index).
fn full_names<T>(
    rows: &[T],
    index: impl Fn(&T) -> u32,
    name: impl Fn(&T) -> String,
) -> BTreeMap<u32, String> {
    rows.iter().map(|r| (index(r), name(r))).collect()
}

/// The sampled executions of a provenance file written with `run
/// --model-samples N`, one [`Table`] per function name, by name: columns
/// are the fixed features in [`FIXED`] order, then one `counter:<name>`
/// column per counter any sample of the function carried (by name; 0 for
/// an execution without a value). Rows are in the file's order (program,
/// application rank, step, entry position); [`Table::lines`] holds each
/// row's 1-based row in `model_samples`. A function name used by several
/// programs of a workflow gives one table with all their samples (models
/// are matched to functions by name).
pub fn read_model_samples(path: &Path) -> anyhow::Result<Vec<(String, Table)>> {
    let f = open(path)?;
    if !f.link_exists("model_samples") {
        bail!(
            "{}: no model_samples table (the run was not given --model-samples N)",
            path.display()
        );
    }
    let samples: Vec<ModelSampleRow> = table(&f, "model_samples")?;
    let counters: Vec<ModelSampleCounterRow> = table(&f, "model_sample_counters")?;
    let functions: Vec<FunctionRow> = table(&f, "functions")?;
    let counter_names: Vec<CounterRow> = table(&f, "counters")?;
    let fname = full_names(&functions, |r| r.fid, |r| r.name.as_str().to_owned());
    let cname = full_names(
        &counter_names,
        |r| r.counter_idx,
        |r| r.name.as_str().to_owned(),
    );
    let file = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );

    // Rows of each function, and the counters each function's samples carry.
    let mut by_function: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, s) in samples.iter().enumerate() {
        let name = fname
            .get(&s.fid)
            .cloned()
            .unwrap_or_else(|| s.func.as_str().to_owned());
        by_function.entry(name).or_default().push(i);
    }
    let counters_of = |s: &ModelSampleRow| -> Vec<(String, f64)> {
        let start = (s.counters_start as usize).min(counters.len());
        let end = (start + s.counters_len as usize).min(counters.len());
        counters[start..end]
            .iter()
            .map(|c| {
                let name = cname
                    .get(&c.counter_idx)
                    .cloned()
                    .unwrap_or_else(|| c.counter.as_str().to_owned());
                (counter_feature(&name), c.value as f64)
            })
            .collect()
    };
    let mut out = Vec::with_capacity(by_function.len());
    for (name, rows) in by_function {
        let mut counter_columns: Vec<String> = rows
            .iter()
            .flat_map(|&i| counters_of(&samples[i]).into_iter().map(|(c, _)| c))
            .collect();
        counter_columns.sort();
        counter_columns.dedup();
        let mut columns: Vec<String> = FIXED.iter().map(|c| c.to_string()).collect();
        columns.extend(counter_columns.iter().cloned());
        let mut t = Table::new(columns, format!("{file}: model_samples of {name}"));
        for &i in &rows {
            let s = &samples[i];
            let mut row = vec![
                s.exclusive_us as f64,
                s.inclusive_us as f64,
                s.n_children as f64,
                s.children_us as f64,
                s.bytes_sent as f64,
                s.bytes_received as f64,
                s.depth as f64,
                s.rank as f64,
                s.thread as f64,
                s.step as f64,
            ];
            row.resize(FIXED.len() + counter_columns.len(), 0.0);
            for (c, v) in counters_of(s) {
                if let Ok(k) = counter_columns.binary_search(&c) {
                    row[FIXED.len() + k] = v;
                }
            }
            t.rows.push(row);
            t.lines.push(i + 1);
        }
        out.push((name, t));
    }
    Ok(out)
}

/// The `model_samples` and `model_sample_counters` tables as stored.
pub fn read_model_sample_rows(
    path: &Path,
) -> anyhow::Result<(Vec<ModelSampleRow>, Vec<ModelSampleCounterRow>)> {
    let f = open(path)?;
    Ok((
        table(&f, "model_samples")?,
        table(&f, "model_sample_counters")?,
    ))
}

fn tag_rows(path: &Path) -> anyhow::Result<Vec<RunTagRow>> {
    let f = open(path)?;
    if !f.link_exists("run_tags") {
        bail!(
            "{}: no run_tags table (written by `run` since tags were added)",
            path.display()
        );
    }
    table(&f, "run_tags")
}

/// The numeric run tags of a provenance file (`--tag KEY=NUMBER`, and the
/// automatic `app_ranks` and `ad_ranks`), by key.
pub fn read_run_tags(path: &Path) -> anyhow::Result<BTreeMap<String, f64>> {
    Ok(tag_rows(path)?
        .iter()
        .filter(|t| t.numeric != 0)
        .map(|t| (t.key.as_str().to_owned(), t.value))
        .collect())
}

/// Every run tag of a provenance file as given, numbers or not, by key.
pub fn read_run_tag_texts(path: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(tag_rows(path)?
        .iter()
        .map(|t| (t.key.as_str().to_owned(), t.text.as_str().to_owned()))
        .collect())
}

/// Per function name: (executions, mean exclusive runtime µs, mean
/// inclusive runtime µs) over the whole run, from the file's `func_stats`
/// (every execution counted once). A name used by several programs
/// combines their executions.
pub fn function_means(path: &Path) -> anyhow::Result<BTreeMap<String, (u64, f64, f64)>> {
    let f = open(path)?;
    if !f.link_exists("func_stats") {
        bail!("{}: no func_stats table", path.display());
    }
    let stats: Vec<FuncStatsRow> = table(&f, "func_stats")?;
    let functions: Vec<FunctionRow> = table(&f, "functions")?;
    let fname = full_names(&functions, |r| r.fid, |r| r.name.as_str().to_owned());
    // Sums, so that programs sharing a name combine exactly.
    let mut sums: BTreeMap<String, (u64, f64, f64)> = BTreeMap::new();
    for s in &stats {
        let name = fname
            .get(&s.fid)
            .cloned()
            .unwrap_or_else(|| s.fname.as_str().to_owned());
        let e = sums.entry(name).or_default();
        e.0 += s.exclusive_count;
        e.1 += s.exclusive_accumulate;
        e.2 += s.inclusive_accumulate;
    }
    Ok(sums
        .into_iter()
        .filter(|(_, (n, _, _))| *n > 0)
        .map(|(k, (n, ex, inc))| (k, (n, ex / n as f64, inc / n as f64)))
        .collect())
}

/// The performance models the model detector judged with (`run
/// --algorithm model`), from `model_detector`: function, target, input
/// metrics and the model's JSON text.
pub fn read_model_detector(path: &Path) -> anyhow::Result<Vec<ModelDocument>> {
    let f = open(path)?;
    let rows: Vec<ModelDetectorRow> = table(&f, "model_detector")?;
    let text: Vec<u8> = table(&f, "model_detector_json")?;
    Ok(rows
        .iter()
        .map(|r| {
            let start = (r.json_start as usize).min(text.len());
            let end = (start + r.json_len as usize).min(text.len());
            ModelDocument {
                function: r.func.as_str().to_owned(),
                target: r.target.as_str().to_owned(),
                metrics: r
                    .metrics
                    .as_str()
                    .split(',')
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned)
                    .collect(),
                json: String::from_utf8_lossy(&text[start..end]).into_owned(),
            }
        })
        .collect())
}
