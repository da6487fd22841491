//! Models from chimbuko-mpi's own runs: per-function models of the
//! execution features sampled by `run --model-samples`, and scaling
//! models across runs tagged with `run --tag`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;

use chimbuko_mpi::model::describe::{short_number, signed_term};
use chimbuko_mpi::model::features;
use chimbuko_mpi::model::format::json::column_names;
use chimbuko_mpi::model::format::{model_text, ModelFormat};
use chimbuko_mpi::model::library::{model_file_name, Index, IndexEntry, ModelLibrary};
use chimbuko_mpi::model::model::{Model, Statistics};
use chimbuko_mpi::model::table::Table;
use chimbuko_mpi::model::train::{train, Profile, TrainOptions};
use chimbuko_mpi::output::read_model::{function_means, read_model_samples, read_run_tags};

/// The sampled executions of one function in a provenance file.
pub fn samples_of(path: &Path, function: &str) -> anyhow::Result<Table> {
    let all = read_model_samples(path)?;
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

/// `model train prov.h5 --all-functions -o DIR`: a JSON model per
/// function with enough samples and a varying input, an `index.json`, and
/// a table of the models on stdout.
pub fn train_all_functions(
    inputs: &[PathBuf],
    out: &Option<PathBuf>,
    min_rows: usize,
    options: impl Fn(&str) -> TrainOptions,
) -> anyhow::Result<()> {
    let Some(dir) = out else {
        bail!("--all-functions writes one model per function: give the directory with -o DIR");
    };
    if inputs.len() != 1 {
        bail!("--all-functions takes one provenance file");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut index = Index::default();
    println!(
        "{:<40} {:>7} {:>9} {:>10}  terms",
        "function", "samples", "R²", "MAPE %"
    );
    for (function, table) in read_model_samples(&inputs[0])? {
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
    let r2 = chimbuko_mpi::model::model::r_squared(&y, &p);
    let names = column_names(model);
    let terms = model.clusters[0]
        .terms
        .iter()
        .map(|t| signed_term(t, &names))
        .collect();
    Ok((r2, Statistics::of(&y, &p).mape, terms))
}

/// The flags of `model scaling`.
#[derive(Args)]
pub struct ScalingArgs {
    /// Provenance files of runs of the same application at different
    /// scales, each tagged with `run --tag KEY=VALUE`.
    #[arg(required = true, num_args = 2..)]
    files: Vec<PathBuf>,
    /// The per-function statistic to model: mean_exclusive_us,
    /// mean_inclusive_us, total_exclusive_us or calls.
    #[arg(long, default_value = "mean_exclusive_us")]
    target: String,
    /// The scale to predict at, e.g. `app_ranks=1024,size=4096` (default:
    /// the largest value of each tag among the runs).
    #[arg(long, value_delimiter = ',')]
    at: Vec<String>,
    /// Rows of the ranking.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Where to write the per-function models (a directory; optional).
    #[arg(short, long)]
    out: Option<PathBuf>,
}

/// One run: its tags and per-function statistics.
struct RunStats {
    tags: BTreeMap<String, f64>,
    functions: BTreeMap<String, (u64, f64, f64)>,
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

/// `model scaling`.
pub fn run_scaling(a: ScalingArgs) -> anyhow::Result<()> {
    let runs: Vec<RunStats> = a
        .files
        .iter()
        .map(|f| {
            Ok(RunStats {
                tags: read_run_tags(f)?,
                functions: function_means(f)?,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    // Tags that vary across the runs are the inputs of the scaling models.
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
    for kv in &a.at {
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
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let names: BTreeSet<&String> = runs.iter().flat_map(|r| r.functions.keys()).collect();
    let mut ranking = Vec::new();
    for name in names {
        let mut columns = varying.clone();
        columns.push(a.target.clone());
        let mut table = Table::new(columns, format!("{} runs of {name}", runs.len()));
        for r in &runs {
            if let Some(s) = r.functions.get(name) {
                let mut row: Vec<f64> = varying.iter().map(|k| r.tags[k]).collect();
                row.push(statistic(&a.target, s)?);
                table.rows.push(row);
            }
        }
        if table.rows.len() < 2 {
            continue;
        }
        let mut opts = TrainOptions::new(&a.target, Profile::Default);
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
            continue;
        }
        let Ok(mut trained) = train(&table, &opts) else {
            continue;
        };
        trained.model.function = Some(name.clone());
        let x: Vec<f64> = trained.model.metrics.iter().map(|k| at[k]).collect();
        let predicted = trained.model.predict_one(&x);
        let (r2, _, terms) = scores(&trained.model, &table, &a.target)?;
        if let Some(dir) = &a.out {
            let file = model_file_name(name, ranking.len());
            std::fs::write(
                dir.join(file),
                model_text(&trained.model, ModelFormat::Json),
            )?;
        }
        ranking.push((predicted, name.clone(), table.rows.len(), r2, terms));
    }
    ranking.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let scale: Vec<String> = at.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!(
        "{} at {} (models of {} runs):",
        a.target,
        scale.join(", "),
        runs.len()
    );
    println!(
        "{:<40} {:>14} {:>5} {:>8}  model",
        "function", "predicted", "runs", "R²"
    );
    for (p, name, n, r2, terms) in ranking.iter().take(a.top) {
        println!(
            "{:<40} {:>14} {:>5} {:>8.4}  {}",
            short(name),
            short_number(*p),
            n,
            r2,
            terms.join(" + ")
        );
    }
    Ok(())
}
