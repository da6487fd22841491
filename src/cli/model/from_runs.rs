//! `model train --all-functions`, `--function` and `model scaling` on
//! chimbuko-mpi's own runs: the flags, and the provenance files read into
//! the tables that `chimbuko_mpi::model::from_runs` trains on.

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;

use chimbuko_mpi::model::from_runs::{self, RunStats, ScalingOptions};
use chimbuko_mpi::model::table::Table;
use chimbuko_mpi::model::train::TrainOptions;
use chimbuko_mpi::provenance::read_model::{function_means, read_model_samples, read_run_tags};

pub use chimbuko_mpi::model::from_runs::default_predictors;

/// The sampled executions of one function in a provenance file.
pub fn samples_of(path: &Path, function: &str) -> anyhow::Result<Table> {
    from_runs::samples_of(&read_model_samples(path)?, path, function)
}

/// `model train prov.h5 --all-functions -o DIR`.
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
    from_runs::train_all_functions(read_model_samples(&inputs[0])?, dir, min_rows, options)
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
    let options = ScalingOptions {
        target: a.target,
        at: a.at,
        top: a.top,
        out: a.out,
    };
    from_runs::scaling(&runs, &options)
}
