//! `chimbuko-mpi model`: the flags, parsed into the plain options of
//! `chimbuko_mpi::commands::model`, which does the work.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use chimbuko_mpi::commands::model::{self as command, TestCommand, TrainCommand};
use chimbuko_mpi::model::folds::CrossValidation;
use chimbuko_mpi::model::format::ModelFormat;
use chimbuko_mpi::model::from_runs::ScalingOptions;
use chimbuko_mpi::model::function::PoolFamilies;
use chimbuko_mpi::model::train::{Profile, TrainOptions};

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
    Scaling(ScalingArgs),
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

/// The flags of `model scaling`.
#[derive(Args)]
struct ScalingArgs {
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

/// Runs `model`.
pub fn run_model(a: ModelArgs) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match a.command {
        ModelCommand::Train(t) => command::run_train(&t.into_command()),
        ModelCommand::Test(t) => {
            let c = TestCommand {
                model: t.model,
                inputs: t.input.input,
                target: t.target,
                function: t.function,
                show_prediction: t.show_prediction,
                plot: t.plot,
            };
            command::run_test(&c, &mut stdout)
        }
        ModelCommand::Show(s) => command::run_show(&s.model, &mut stdout),
        ModelCommand::Convert(c) => command::run_convert(&c.input, &c.output, c.format),
        ModelCommand::Table(t) => {
            command::run_table(&t.input.input, t.function.as_deref(), t.out.as_deref())
        }
        ModelCommand::Scaling(s) => {
            let options = ScalingOptions {
                target: s.target,
                at: s.at,
                top: s.top,
                out: s.out,
            };
            command::run_scaling(&s.files, &options)
        }
    }
}

impl TrainArgs {
    /// The plain options of `model train`.
    fn into_command(self) -> TrainCommand {
        let mut training = TrainOptions::new("", self.profile);
        training.predictors = self.predictors;
        training.threshold = self.threshold;
        training.clusters = self.clusters;
        training.seed = self.seed;
        training.cross_validation = if self.no_cv {
            Some(CrossValidation::None)
        } else if let Some(rows) = self.test_rows {
            Some(CrossValidation::TestRows(rows))
        } else {
            self.nfolds
                .map(|k| CrossValidation::KFold { k, seed: self.seed })
        };
        training.families = PoolFamilies {
            unary: true,
            products: !self.no_products,
            quotients: !self.no_quotients,
        };
        TrainCommand {
            inputs: self.provenance.map_or(self.input, |p| vec![p]),
            function: self.function,
            all_functions: self.all_functions,
            min_rows: self.min_rows,
            target: self.target,
            training,
            out: self.out,
            format: self.format,
        }
    }
}
