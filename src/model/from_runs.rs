//! Models from chimbuko-mpi's own runs: per-function models of the
//! execution features sampled by `run --model-samples`, and scaling
//! models across runs tagged with `run --tag` (`model train
//! --all-functions`, `model scaling`). The tables come from the
//! provenance files (`crate::provenance::read_model`); this file trains,
//! scores, ranks and writes the models.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::describe::{short_number, signed_term};
use super::features;
use super::format::json::column_names;
use super::format::{model_text, ModelFormat};
use super::library::{model_file_name, Index, IndexEntry, ModelLibrary};
use super::model::{Model, Statistics};
use super::table::Table;
use super::train::{train, Profile, TrainOptions};

/// The sampled executions of `function` among `all` (the model samples
/// of the provenance file `path`, for the messages).
pub fn samples_of(all: &[(String, Table)], path: &Path, function: &str) -> anyhow::Result<Table> {
    if all.is_empty() {
        bail!(
            "{}: no model samples (the run was made without --model-samples N)",
            path.display()
        );
    }
    let names: Vec<&str> = all.iter().map(|(f, _)| f.as_str()).collect();
    match all.iter().find(|(f, _)| f == function) {
        Some((_, t)) => Ok(t.clone()),
        None => bail!(
            "{}: no samples of function {function:?}; sampled functions: {}{}",
            path.display(),
            names
                .iter()
                .take(12)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            if names.len() > 12 { ", …" } else { "" }
        ),
    }
}

/// The default predictors of a samples table: features that are neither
/// runtimes nor places, and that vary (a constant feature says nothing
/// and would make the design singular).
pub fn default_predictors(table: &Table) -> Vec<String> {
    features::default_predictors(&table.columns)
        .into_iter()
        .filter(|c| {
            let Ok(i) = table.column_index(c) else {
                return false;
            };
            let first = table.rows.first().map(|r| r[i]);
            table.rows.iter().any(|r| Some(r[i]) != first)
        })
        .collect()
}

/// `model train prov.h5 --all-functions -o DIR`: from the model samples
/// of a run (one table per function), a JSON model in `dir` per function
/// with enough samples and a varying input, an `index.json`, and a table
/// of the models on stdout.
pub fn train_all_functions(
    samples: Vec<(String, Table)>,
    dir: &Path,
    min_rows: usize,
    options: impl Fn(&str) -> TrainOptions,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut index = Index::default();
    println!(
        "{:<40} {:>7} {:>9} {:>10}  terms",
        "function", "samples", "R²", "MAPE %"
    );
    for (function, table) in samples {
        let mut opts = options(features::EXCLUSIVE_US);
        if opts.predictors.is_none() {
            opts.predictors = Some(default_predictors(&table));
        }
        let why_not = if table.rows.len() < min_rows {
            Some(format!(
                "{} samples (< --min-rows {min_rows})",
                table.rows.len()
            ))
        } else if opts.predictors.as_ref().is_some_and(Vec::is_empty) {
            Some("no input varies".to_owned())
        } else {
            None
        };
        if let Some(why) = why_not {
            println!(
                "{:<40} {:>7} {:>9} {:>10}  not modelled: {why}",
                short(&function),
                table.rows.len(),
                "-",
                "-"
            );
            continue;
        }
        let mut trained = match train(&table, &opts) {
            Ok(t) => t,
            Err(e) => {
                println!(
                    "{:<40} {:>7} {:>9} {:>10}  not modelled: {}",
                    short(&function),
                    table.rows.len(),
                    "-",
                    "-",
                    e.message
                );
                continue;
            }
        };
        trained.model.function = Some(function.clone());
        let (r2, mape, terms) = scores(&trained.model, &table, &opts.target)?;
        println!(
            "{:<40} {:>7} {:>9.4} {:>10.2}  {}",
            short(&function),
            table.rows.len(),
            r2,
            mape,
            terms.join(" + ")
        );
        let file = model_file_name(&function, index.models.len());
        std::fs::write(
            dir.join(&file),
            model_text(&trained.model, ModelFormat::Json),
        )
        .with_context(|| format!("cannot write {}", dir.join(&file).display()))?;
        index.models.push(IndexEntry {
            function,
            file,
            target: opts.target.clone(),
            rows: table.rows.len(),
            r2,
            mape,
            terms,
        });
    }
    ModelLibrary::write_index(dir, &index)
        .with_context(|| format!("cannot write the index in {}", dir.display()))?;
    eprintln!("{} models written to {}", index.models.len(), dir.display());
    Ok(())
}

/// A long function name cut for the table.
fn short(name: &str) -> String {
    if name.chars().count() > 40 {
        let s: String = name.chars().take(39).collect();
        format!("{s}…")
    } else {
        name.to_owned()
    }
}

/// R² and MAPE of a model on its table, and its terms in words.
fn scores(model: &Model, table: &Table, target: &str) -> anyhow::Result<(f64, f64, Vec<String>)> {
    let y = table.column(table.column_index(target)?);
    let p = model.predict_rows(&model.inputs_from(table)?);
    let r2 = super::model::r_squared(&y, &p);
    let names = column_names(model);
    let terms = model.clusters[0]
        .terms
        .iter()
        .map(|t| signed_term(t, &names))
        .collect();
    Ok((r2, Statistics::of(&y, &p).mape, terms))
}

/// One run: its tags and per-function statistics.
pub struct RunStats {
    /// `run --tag` values, with `app_ranks` and `ad_ranks`.
    pub tags: BTreeMap<String, f64>,
    /// Per function: calls, mean exclusive and mean inclusive time (µs).
    pub functions: BTreeMap<String, (u64, f64, f64)>,
}

/// What `model scaling` is asked for.
#[derive(Debug, Clone)]
pub struct ScalingOptions {
    /// The per-function statistic to model: `mean_exclusive_us`,
    /// `mean_inclusive_us`, `total_exclusive_us` or `calls`.
    pub target: String,
    /// The scale to predict at, `KEY=VALUE` each (default: the largest
    /// value of each varying tag among the runs).
    pub at: Vec<String>,
    /// Rows of the ranking.
    pub top: usize,
    /// Where to write the per-function models (a directory; optional).
    pub out: Option<PathBuf>,
}

fn statistic(target: &str, s: &(u64, f64, f64)) -> anyhow::Result<f64> {
    Ok(match target {
        "mean_exclusive_us" => s.1,
        "mean_inclusive_us" => s.2,
        "total_exclusive_us" => s.0 as f64 * s.1,
        "calls" => s.0 as f64,
        other => bail!("unknown --target {other:?} (mean_exclusive_us, mean_inclusive_us, total_exclusive_us, calls)"),
    })
}

/// `model scaling`: per function, a model of `a.target` against the tags
/// that vary across `runs`, and the functions ranked by what their model
/// predicts at the scale asked for (printed; the models written to
/// `a.out`).
pub fn scaling(runs: &[RunStats], a: &ScalingOptions) -> anyhow::Result<()> {
    let varying = varying_tags(runs)?;
    let at = scale_to_predict_at(runs, &varying, &a.at)?;
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let names: BTreeSet<&String> = runs.iter().flat_map(|r| r.functions.keys()).collect();
    let mut ranking = Vec::new();
    for name in names {
        let table = scaling_table(runs, name, &varying, &a.target)?;
        let Some(mut model) = scaling_model(&table, &varying, &a.target) else {
            continue;
        };
        model.function = Some(name.clone());
        let x: Vec<f64> = model.metrics.iter().map(|k| at[k]).collect();
        let predicted = model.predict_one(&x);
        let (r2, _, terms) = scores(&model, &table, &a.target)?;
        if let Some(dir) = &a.out {
            let file = model_file_name(name, ranking.len());
            std::fs::write(dir.join(file), model_text(&model, ModelFormat::Json))?;
        }
        ranking.push(Ranked {
            predicted,
            function: name.clone(),
            runs: table.rows.len(),
            r2,
            terms,
        });
    }
    ranking.sort_by(|a, b| {
        b.predicted
            .total_cmp(&a.predicted)
            .then_with(|| a.function.cmp(&b.function))
    });
    print_ranking(&ranking, &at, runs.len(), a);
    Ok(())
}

/// One function of the `model scaling` ranking.
struct Ranked {
    predicted: f64,
    function: String,
    runs: usize,
    r2: f64,
    terms: Vec<String>,
}

/// The tags that vary across the runs (and that every run has): the
/// inputs of the scaling models.
fn varying_tags(runs: &[RunStats]) -> anyhow::Result<Vec<String>> {
    let keys: BTreeSet<&String> = runs.iter().flat_map(|r| r.tags.keys()).collect();
    let varying: Vec<String> = keys
        .into_iter()
        .filter(|k| {
            let vals: Vec<Option<&f64>> = runs.iter().map(|r| r.tags.get(*k)).collect();
            vals.iter().all(Option::is_some) && vals.iter().any(|v| *v != vals[0])
        })
        .cloned()
        .collect();
    if varying.is_empty() {
        bail!("no tag varies across the runs (tag them with `run --tag KEY=VALUE`; app_ranks and ad_ranks are recorded by every run)");
    }
    Ok(varying)
}

/// The scale to predict at: each varying tag's largest value among the
/// runs, unless `--at KEY=VALUE` says otherwise.
fn scale_to_predict_at(
    runs: &[RunStats],
    varying: &[String],
    asked: &[String],
) -> anyhow::Result<BTreeMap<String, f64>> {
    let mut at: BTreeMap<String, f64> = varying
        .iter()
        .map(|k| {
            (
                k.clone(),
                runs.iter()
                    .filter_map(|r| r.tags.get(k))
                    .copied()
                    .fold(f64::MIN, f64::max),
            )
        })
        .collect();
    for kv in asked {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--at {kv:?}: not KEY=VALUE"))?;
        let v: f64 = v
            .trim()
            .parse()
            .with_context(|| format!("--at {kv:?}: not a number"))?;
        if !at.contains_key(k.trim()) {
            bail!(
                "--at {kv:?}: {k:?} is not a varying tag (varying: {})",
                varying.join(", ")
            );
        }
        at.insert(k.trim().to_owned(), v);
    }
    Ok(at)
}

/// One function's table: a row per run that has it, the varying tags and
/// the target statistic.
fn scaling_table(
    runs: &[RunStats],
    name: &str,
    varying: &[String],
    target: &str,
) -> anyhow::Result<Table> {
    let mut columns = varying.to_vec();
    columns.push(target.to_owned());
    let mut table = Table::new(columns, format!("{} runs of {name}", runs.len()));
    for r in runs {
        if let Some(s) = r.functions.get(name) {
            let mut row: Vec<f64> = varying.iter().map(|k| r.tags[k]).collect();
            row.push(statistic(target, s)?);
            table.rows.push(row);
        }
    }
    Ok(table)
}

/// The scaling model of one function's table, or `None` when it cannot
/// have one (fewer than two runs, no tag varies among its runs, or the
/// training fails).
fn scaling_model(table: &Table, varying: &[String], target: &str) -> Option<Model> {
    if table.rows.len() < 2 {
        return None;
    }
    let mut opts = TrainOptions::new(target, Profile::Default);
    opts.predictors = Some(
        varying
            .iter()
            .filter(|k| {
                let i = table.column_index(k).unwrap_or(0);
                table.rows.iter().any(|r| r[i] != table.rows[0][i])
            })
            .cloned()
            .collect(),
    );
    if opts.predictors.as_ref().is_some_and(Vec::is_empty) {
        return None;
    }
    train(table, &opts).ok().map(|t| t.model)
}

/// Prints the ranking of `model scaling`.
fn print_ranking(ranking: &[Ranked], at: &BTreeMap<String, f64>, runs: usize, a: &ScalingOptions) {
    let scale: Vec<String> = at.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!(
        "{} at {} (models of {} runs):",
        a.target,
        scale.join(", "),
        runs
    );
    println!(
        "{:<40} {:>14} {:>5} {:>8}  model",
        "function", "predicted", "runs", "R²"
    );
    for r in ranking.iter().take(a.top) {
        println!(
            "{:<40} {:>14} {:>5} {:>8.4}  {}",
            short(&r.function),
            short_number(r.predicted),
            r.runs,
            r.r2,
            r.terms.join(" + ")
        );
    }
}
