//! The flags of `chimbuko-mpi synth`, and how they become [`SynthOptions`].

use std::path::PathBuf;

use chimbuko_mpi::synth::SynthOptions;
use chimbuko_mpi::trace::adios::Engine;

/// The flags of `chimbuko-mpi synth`.
#[derive(Debug, Clone, clap::Args)]
pub struct SynthArgs {
    /// Scenario file (TOML). Without it, the built-in demo scenario.
    pub scenario: Option<PathBuf>,
    /// Output directory for streams and ground truth.
    #[arg(long, default_value = "out/synth")]
    pub out: PathBuf,
    /// ADIOS2 engine: BPFile, BP4, BP5 or SST.
    #[arg(long, default_value = "BPFile")]
    pub engine: Engine,
    /// Stream name prefix (TAU's `TAU_ADIOS2_FILENAME`).
    #[arg(long, default_value = "tau-metrics")]
    pub prefix: String,
    /// Write only this rank (e.g. one process per rank).
    #[arg(long)]
    pub only_rank: Option<u64>,
    /// Take the rank to write from the MPI launcher's environment
    /// (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID), so that
    /// `mpirun -np N chimbuko-mpi synth --rank-from-env` acts as an N-rank application.
    #[arg(long)]
    pub rank_from_env: bool,
    /// Run as an MPI application: each rank of this program's communicator
    /// (split from MPI_COMM_WORLD by MPI_APPNUM, so that it works in an MPMD
    /// launch beside the AD) writes the stream of its rank; the ranks meet
    /// in a barrier on that communicator every step, like an application's
    /// own collectives, and rank 0 writes the ground truth first.
    #[arg(long, conflicts_with_all = ["only_rank", "rank_from_env"])]
    pub mpi: bool,
    /// Sleep this long between steps (to emulate an application's I/O period).
    #[arg(long)]
    pub pace_ms: Option<f64>,
    /// Override the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override the scenario's rank count.
    #[arg(long)]
    pub ranks: Option<u64>,
    /// Override the scenario's step count.
    #[arg(long)]
    pub steps: Option<u64>,
    /// One step with more events: `STEP:FACTOR` (e.g. `5:100`).
    #[arg(long, value_parser = parse_burst)]
    pub burst: Option<(u64, u64)>,
    /// Override the scenario's function events per rank per step.
    #[arg(long)]
    pub events_per_step: Option<u64>,
    /// Override the binary name used in stream names.
    #[arg(long)]
    pub binary: Option<String>,
    /// Do not write the ground truth (used for the per-rank writer
    /// processes of SST runs, whose parent writes it up front).
    #[arg(long, hide = true)]
    pub no_truth: bool,
    /// Extra ADIOS2 engine parameter KEY=VALUE (repeatable).
    #[arg(long = "adios-param", value_parser = parse_key_value)]
    pub adios_params: Vec<(String, String)>,
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))
}

fn parse_burst(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: expected STEP:FACTOR"))?;
    let step = a.trim().parse().map_err(|_| format!("{a:?}: not a step"))?;
    let factor = b
        .trim()
        .parse()
        .map_err(|_| format!("{b:?}: not a factor"))?;
    Ok((step, factor))
}

impl SynthArgs {
    /// The options `synth` takes.
    pub fn into_options(self) -> SynthOptions {
        SynthOptions {
            scenario: self.scenario,
            out: self.out,
            engine: self.engine,
            prefix: self.prefix,
            only_rank: self.only_rank,
            rank_from_env: self.rank_from_env,
            mpi: self.mpi,
            pace_ms: self.pace_ms,
            seed: self.seed,
            ranks: self.ranks,
            steps: self.steps,
            burst: self.burst,
            events_per_step: self.events_per_step,
            binary: self.binary,
            no_truth: self.no_truth,
            adios_params: self.adios_params,
        }
    }
}
