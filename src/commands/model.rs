//! `chimbuko-mpi model`: train, test, show and convert performance models
//! (Eiger-compatible), turn Eiger's storage into tables, and model how
//! functions scale over tagged runs. The tables come from CSV, Eiger's
//! MySQL dump or logs, or a provenance file's model samples.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::model::describe::describe;
use crate::model::format::{model_text, read_model, ModelFormat};
use crate::model::from_runs::{self, RunStats, ScalingOptions};
use crate::model::input::{eiger_log, sql_dump};
use crate::model::model::{Model, Statistics};
use crate::model::plot::predicted_vs_actual;
use crate::model::pyfmt::py_repr;
use crate::model::table::Table;
use crate::model::train::{train, TrainOptions, Trained};
use crate::provenance::read_model::{function_means, read_model_samples, read_run_tags};

/// `model train`: what to train on and where the model goes.
#[derive(Debug, Clone)]
pub struct TrainCommand {
    /// The input file(s) (see [`load_table`]).
    pub inputs: Vec<PathBuf>,
    /// With a provenance file: the function to model.
    pub function: Option<String>,
    /// With a provenance file: a model per sampled function, written into
    /// the directory `out` with an index.json.
    pub all_functions: bool,
    /// Fewest samples a function needs to be modelled (`all_functions`).
    pub min_rows: usize,
    /// The metric to model (default: `runtime` for tables, `exclusive_us`
    /// for provenance samples).
    pub target: Option<String>,
    /// How to train; its `target` is replaced by the target trained.
    pub training: TrainOptions,
    /// Where to write the model (default: stdout); a directory with
    /// `all_functions`.
    pub out: Option<PathBuf>,
    /// Format of the written model (default: by the extension of `out`).
    pub format: Option<ModelFormat>,
}

impl TrainCommand {
    /// The training options for `target`.
    fn options_for(&self, target: &str) -> TrainOptions {
        TrainOptions {
            target: target.to_owned(),
            ..self.training.clone()
        }
    }
}

/// `model test`: a model evaluated on a table.
#[derive(Debug, Clone)]
pub struct TestCommand {
    /// The model file (Eiger's format, legacy or current, or JSON).
    pub model: PathBuf,
    /// The input file(s) (see [`load_table`]).
    pub inputs: Vec<PathBuf>,
    /// The measured metric (default: the model's target, else `runtime`).
    pub target: Option<String>,
    /// With a provenance file: the function whose samples to test on.
    pub function: Option<String>,
    /// Print each row's actual and predicted value.
    pub show_prediction: bool,
    /// Draw predicted against actual into this PNG.
    pub plot: Option<PathBuf>,
}

fn is_provenance(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "h5" || e == "hdf5")
}

fn write_text(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The table of the input files, by extension: `.csv`, `.sql` (Eiger's
/// MySQL dump), `.log` (Eiger's instrumentation logs; several per-rank
/// logs form one table), `.h5` (a provenance file's model samples of
/// `function`).
pub fn load_table(paths: &[PathBuf], function: Option<&str>) -> anyhow::Result<Table> {
    let ext = |p: &PathBuf| {
        p.extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default()
    };
    let Some(first) = paths.first() else {
        bail!("no input file");
    };
    if is_provenance(first) {
        let Some(f) = function else {
            bail!(
                "{}: a provenance file holds samples of many functions; say which with --function NAME (or train them all with --all-functions -o DIR)",
                first.display()
            );
        };
        return from_runs::samples_of(&read_model_samples(first)?, first, f);
    }
    if paths.iter().all(|p| ext(p) == "log") {
        return Ok(eiger_log::read_logs(paths)?);
    }
    if paths.len() > 1 {
        bail!("several inputs are read together only when all are Eiger logs (.log)");
    }
    match ext(first).as_str() {
        "sql" => Ok(sql_dump::read_dump(first)?),
        _ => Ok(Table::read_csv(first)?),
    }
}

/// Runs `model train`: prints each fold's selection and the model (on
/// stderr), and writes the model to `out` or stdout.
pub fn run_train(c: &TrainCommand) -> anyhow::Result<()> {
    if c.all_functions {
        let Some(dir) = &c.out else {
            bail!("--all-functions writes one model per function: give the directory with -o DIR");
        };
        let [input] = c.inputs.as_slice() else {
            bail!("--all-functions takes one provenance file");
        };
        let samples = read_model_samples(input)?;
        return from_runs::train_all_functions(samples, dir, c.min_rows, |target| {
            c.options_for(target)
        });
    }
    let provenance = c.inputs.first().is_some_and(|p| is_provenance(p));
    let table = load_table(&c.inputs, c.function.as_deref())?;
    let default_target = if provenance {
        "exclusive_us"
    } else {
        "runtime"
    };
    let mut opts = c.options_for(c.target.as_deref().unwrap_or(default_target));
    if provenance && opts.predictors.is_none() {
        opts.predictors = Some(from_runs::default_predictors(&table));
    }
    let mut trained = train(&table, &opts)?;
    trained.model.function = c.function.clone();
    report_training(&trained, &mut std::io::stderr().lock())?;
    match &c.out {
        Some(p) => {
            let format = c.format.unwrap_or(ModelFormat::from_path(p));
            write_text(p, &model_text(&trained.model, format))?;
            eprintln!("model written to {}", p.display());
        }
        None => print!(
            "{}",
            model_text(&trained.model, c.format.unwrap_or(ModelFormat::Eiger))
        ),
    }
    Ok(())
}

/// What training printed: the selection of each fold and the kept model.
fn report_training(trained: &Trained, out: &mut dyn Write) -> std::io::Result<()> {
    let names = crate::model::format::json::column_names(&trained.model);
    for f in &trained.folds {
        let terms: Vec<String> = f.functions.iter().map(|x| x.describe(&names)).collect();
        let which = if f.fold == usize::MAX {
            "all folds".to_owned()
        } else {
            format!("fold {}", f.fold)
        };
        writeln!(
            out,
            "cluster {} {which}: R² {:.6}, adjusted {:.6}: {}",
            f.cluster,
            f.r2,
            f.adjusted_r2,
            terms.join(", ")
        )?;
    }
    write!(out, "{}", describe(&trained.model))
}

/// The target column for testing a model.
fn test_target(model: &Model, given: Option<&str>) -> String {
    given
        .map(str::to_owned)
        .or_else(|| model.target.clone())
        .unwrap_or_else(|| "runtime".into())
}

/// Runs `model test`: Eiger's statistics (and each prediction when asked)
/// on `out`, the plot when asked.
pub fn run_test(t: &TestCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    let (model, _) = read_model(&t.model)?;
    let function = t.function.clone().or_else(|| model.function.clone());
    let table = load_table(&t.inputs, function.as_deref())?;
    let target = test_target(&model, t.target.as_deref());
    let y = table.column(table.column_index(&target)?);
    let predicted = model.predict_rows(&model.inputs_from(&table)?);
    let stats = Statistics::of(&y, &predicted);
    if t.show_prediction {
        writeln!(out, "actual,predicted")?;
        for (a, p) in y.iter().zip(&predicted) {
            writeln!(out, "{},{}", py_repr(*a), py_repr(*p))?;
        }
    }
    write!(out, "{}", stats.eiger_lines())?;
    if let Some(png) = &t.plot {
        let title = format!(
            "{} on {} ({} rows)",
            t.model.file_name().unwrap_or_default().to_string_lossy(),
            table.source,
            y.len()
        );
        predicted_vs_actual(png, &title, &y, &predicted).map_err(anyhow::Error::msg)?;
        eprintln!("plot written to {}", png.display());
    }
    Ok(())
}

/// Runs `model show`: the model's formula in words, its terms and how it
/// was trained.
pub fn run_show(model: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    let (m, _) = read_model(model)?;
    write!(out, "{}", describe(&m))?;
    Ok(())
}

/// Runs `model convert`: `input` written to `output` in `format` (default:
/// by the output's extension).
pub fn run_convert(input: &Path, output: &Path, format: Option<ModelFormat>) -> anyhow::Result<()> {
    let (m, _) = read_model(input)?;
    let format = format.unwrap_or(ModelFormat::from_path(output));
    write_text(output, &model_text(&m, format))
}

/// Runs `model table`: the inputs' table as CSV, into `out` or stdout.
pub fn run_table(
    inputs: &[PathBuf],
    function: Option<&str>,
    out: Option<&Path>,
) -> anyhow::Result<()> {
    let csv = load_table(inputs, function)?.to_csv();
    match out {
        Some(p) => write_text(p, &csv),
        None => {
            std::io::stdout().lock().write_all(csv.as_bytes())?;
            Ok(())
        }
    }
}

/// Runs `model scaling` on the provenance files `files` of tagged runs.
pub fn run_scaling(files: &[PathBuf], options: &ScalingOptions) -> anyhow::Result<()> {
    let runs: Vec<RunStats> = files
        .iter()
        .map(|f| {
            Ok(RunStats {
                tags: read_run_tags(f)?,
                functions: function_means(f)?,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    from_runs::scaling(&runs, options)
}
