//! `chimbuko-mpi model`: train, test, show and convert performance models
//! (Eiger-compatible), and turn Eiger's storage into tables.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use chimbuko_mpi::model::describe::describe;
use chimbuko_mpi::model::folds::CrossValidation;
use chimbuko_mpi::model::format::{model_text, read_model, ModelFormat};
use chimbuko_mpi::model::function::PoolFamilies;
use chimbuko_mpi::model::input::{eiger_log, sql_dump};
use chimbuko_mpi::model::model::{Model, Statistics};
use chimbuko_mpi::model::plot::predicted_vs_actual;
use chimbuko_mpi::model::pyfmt::py_repr;
use chimbuko_mpi::model::table::Table;
use chimbuko_mpi::model::train::{train, Profile, TrainOptions, Trained};

mod from_runs;

/// The flags of `model`.
#[derive(Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Subcommand)]
enum ModelCommand {
    /// Train a model of one metric from a table (CSV, Eiger's MySQL dump or
    /// logs), or per function from a provenance file's model samples.
    Train(Box<TrainArgs>),
    /// Evaluate a model on a table: Eiger's statistics (trials, MAPE, MSE,
    /// RMSE), optionally every prediction and a predicted-against-actual PNG.
    Test(TestArgs),
    /// Print a model's formula in words, its terms and how it was trained.
    Show(ShowArgs),
    /// Convert a model between Eiger's text format and JSON (Eiger's legacy
    /// format is read too).
    Convert(ConvertArgs),
    /// Write the table an input holds (Eiger's dump or logs, a CSV) as CSV.
    Table(TableArgs),
    /// Per function, model how a statistic scales with the runs' tags
    /// (`run --tag`), and rank functions by predicted cost at a given scale.
    Scaling(from_runs::ScalingArgs),
}

/// Where a table comes from: one or more paths, by extension — `.csv`,
/// `.sql` (Eiger's MySQL dump), `.log` (Eiger's instrumentation logs;
/// several per-rank logs form one table), `.h5` (a provenance file's model
/// samples, with `--function` or `--all-functions`).
#[derive(Args, Clone)]
struct InputArgs {
    /// The input file(s).
    #[arg(required = true)]
    input: Vec<PathBuf>,
}

#[derive(Args)]
struct TrainArgs {
    /// The input file(s) (see `model table`).
    #[arg(required_unless_present = "provenance")]
    input: Vec<PathBuf>,
    /// A provenance file of `run --model-samples N` (the same as giving it
    /// as the input).
    #[arg(long, conflicts_with = "input")]
    provenance: Option<PathBuf>,
    /// The metric to model (default: `runtime` for tables, `exclusive_us`
    /// for provenance samples).
    #[arg(long)]
    target: Option<String>,
    /// Input metrics, comma-separated (default: every column but the
    /// target and the id columns; for provenance samples, every feature
    /// but the runtimes and rank/thread/step).
    #[arg(long, value_delimiter = ',')]
    predictors: Option<Vec<String>>,
    /// eiger-2013 (the golden models' algorithm), eiger-2016 (Eiger's last
    /// version) or default (see docs/models.md).
    #[arg(long, default_value = "default", value_parser = Profile::parse)]
    profile: Profile,
    /// Minimum gain in held-out adjusted R² for one more term (default: 0
    /// for Eiger's profiles, 0.001 for the default profile).
    #[arg(long)]
    threshold: Option<f64>,
    /// Number of k-means clusters, each with its own model.
    #[arg(long, default_value_t = 1)]
    clusters: usize,
    /// K-fold cross-validation with K folds (default: 4 for eiger-2013, 5
    /// for default from 10 rows, none for eiger-2016).
    #[arg(long, conflicts_with_all = ["test_rows", "no_cv"])]
    nfolds: Option<usize>,
    /// Seed of the folds and clusters.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// One fold with these test rows (0-based, comma-separated).
    #[arg(long, value_delimiter = ',', conflicts_with = "no_cv")]
    test_rows: Option<Vec<usize>>,
    /// No cross-validation: train = test = all rows.
    #[arg(long)]
    no_cv: bool,
    /// Leave products x_i·x_j out of the pool.
    #[arg(long)]
    no_products: bool,
    /// Leave quotients x_i/x_j out of the pool.
    #[arg(long)]
    no_quotients: bool,
    /// With a provenance file: the function to model.
    #[arg(long, conflicts_with = "all_functions")]
    function: Option<String>,
    /// With a provenance file: a model per sampled function, written into
    /// the directory given by -o with an index.json.
    #[arg(long)]
    all_functions: bool,
    /// Fewest samples a function needs to be modelled (--all-functions).
    #[arg(long, default_value_t = 20)]
    min_rows: usize,
    /// Where to write the model (default: Eiger's text format on stdout);
    /// a directory with --all-functions.
    #[arg(short, long)]
    out: Option<PathBuf>,
    /// Format of the written model: eiger or json (default: by the
    /// extension of -o, `.json` being JSON).
    #[arg(long, value_parser = ModelFormat::parse)]
    format: Option<ModelFormat>,
}

#[derive(Args)]
struct TestArgs {
    /// The model file (Eiger's format, legacy or current, or JSON).
    model: PathBuf,
    #[command(flatten)]
    input: InputArgs,
    /// The measured metric (default: the model's target, else `runtime`).
    #[arg(long)]
    target: Option<String>,
    /// With a provenance file: the function whose samples to test on.
    #[arg(long)]
    function: Option<String>,
    /// Print each row's actual and predicted value.
    #[arg(long)]
    show_prediction: bool,
    /// Draw predicted against actual into this PNG.
    #[arg(long)]
    plot: Option<PathBuf>,
}

#[derive(Args)]
struct ShowArgs {
    /// The model file.
    model: PathBuf,
}

#[derive(Args)]
struct ConvertArgs {
    /// The model file to read.
    input: PathBuf,
    /// The file to write.
    output: PathBuf,
    /// eiger or json (default: by the output's extension).
    #[arg(long, value_parser = ModelFormat::parse)]
    format: Option<ModelFormat>,
}

#[derive(Args)]
struct TableArgs {
    #[command(flatten)]
    input: InputArgs,
    /// With a provenance file: the function whose samples to write.
    #[arg(long)]
    function: Option<String>,
    /// Where to write the CSV (default: stdout).
    #[arg(short, long)]
    out: Option<PathBuf>,
}

/// Runs `model`.
pub fn run_model(a: ModelArgs) -> anyhow::Result<()> {
    match a.command {
        ModelCommand::Train(t) => run_train(*t),
        ModelCommand::Test(t) => run_test(t),
        ModelCommand::Show(s) => {
            let (m, _) = read_model(&s.model)?;
            print!("{}", describe(&m));
            Ok(())
        }
        ModelCommand::Convert(c) => {
            let (m, _) = read_model(&c.input)?;
            let format = c.format.unwrap_or(ModelFormat::from_path(&c.output));
            write_text(&c.output, &model_text(&m, format))
        }
        ModelCommand::Table(t) => {
            let table = load_table(&t.input.input, t.function.as_deref())?;
            let csv = table.to_csv();
            match &t.out {
                Some(p) => write_text(p, &csv),
                None => {
                    std::io::stdout().lock().write_all(csv.as_bytes())?;
                    Ok(())
                }
            }
        }
        ModelCommand::Scaling(s) => from_runs::run_scaling(s),
    }
}

fn write_text(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn is_provenance(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "h5" || e == "hdf5")
}

/// The table of the input files (see [`InputArgs`]).
fn load_table(paths: &[PathBuf], function: Option<&str>) -> anyhow::Result<Table> {
    let ext = |p: &PathBuf| {
        p.extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default()
    };
    let first = &paths[0];
    if is_provenance(first) {
        let Some(f) = function else {
            bail!(
                "{}: a provenance file holds samples of many functions; say which with --function NAME (or train them all with --all-functions -o DIR)",
                first.display()
            );
        };
        return from_runs::samples_of(first, f);
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

fn train_options(t: &TrainArgs, target: &str) -> TrainOptions {
    let mut o = TrainOptions::new(target, t.profile);
    o.predictors = t.predictors.clone();
    o.threshold = t.threshold;
    o.clusters = t.clusters;
    o.seed = t.seed;
    o.cross_validation = if t.no_cv {
        Some(CrossValidation::None)
    } else if let Some(rows) = &t.test_rows {
        Some(CrossValidation::TestRows(rows.clone()))
    } else {
        t.nfolds.map(|k| CrossValidation::KFold { k, seed: t.seed })
    };
    o.families = PoolFamilies {
        unary: true,
        products: !t.no_products,
        quotients: !t.no_quotients,
    };
    o
}

/// What training printed: the selection of each fold and the kept model.
fn report_training(trained: &Trained, out: &mut dyn Write) -> std::io::Result<()> {
    let names = chimbuko_mpi::model::format::json::column_names(&trained.model);
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

fn run_train(mut t: TrainArgs) -> anyhow::Result<()> {
    if let Some(p) = t.provenance.take() {
        t.input = vec![p];
    }
    if t.all_functions {
        return from_runs::train_all_functions(&t.input, &t.out, t.min_rows, |target| {
            train_options(&t, target)
        });
    }
    let provenance = is_provenance(&t.input[0]);
    let table = load_table(&t.input, t.function.as_deref())?;
    let target = t.target.clone().unwrap_or_else(|| {
        if provenance {
            "exclusive_us"
        } else {
            "runtime"
        }
        .into()
    });
    let mut opts = train_options(&t, &target);
    if provenance && opts.predictors.is_none() {
        opts.predictors = Some(from_runs::default_predictors(&table));
    }
    let mut trained = train(&table, &opts)?;
    trained.model.function = t.function.clone();
    report_training(&trained, &mut std::io::stderr().lock())?;
    match &t.out {
        Some(p) => {
            let format = t.format.unwrap_or(ModelFormat::from_path(p));
            write_text(p, &model_text(&trained.model, format))?;
            eprintln!("model written to {}", p.display());
        }
        None => print!(
            "{}",
            model_text(&trained.model, t.format.unwrap_or(ModelFormat::Eiger))
        ),
    }
    Ok(())
}

/// The target column for testing a model.
fn test_target(model: &Model, given: Option<&str>) -> String {
    given
        .map(str::to_owned)
        .or_else(|| model.target.clone())
        .unwrap_or_else(|| "runtime".into())
}

fn run_test(t: TestArgs) -> anyhow::Result<()> {
    let (model, _) = read_model(&t.model)?;
    let function = t.function.clone().or_else(|| model.function.clone());
    let table = load_table(&t.input.input, function.as_deref())?;
    let target = test_target(&model, t.target.as_deref());
    let y = table.column(table.column_index(&target)?);
    let predicted = model.predict_rows(&model.inputs_from(&table)?);
    let stats = Statistics::of(&y, &predicted);
    let mut out = std::io::stdout().lock();
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
