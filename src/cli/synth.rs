//! The flags of `chimbuko-mpi synth`, and how they become [`SynthOptions`].

use std::path::PathBuf;

use chimbuko_mpi::synth::ross::RossOptions;
use chimbuko_mpi::synth::SynthOptions;
use chimbuko_mpi::trace::adios::Engine;

/// The flags of `chimbuko-mpi synth` (TAU streams), or its `ross`
/// subcommand.
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SynthArgs {
    /// Another kind of synthetic trace.
    #[command(subcommand)]
    pub kind: Option<SynthKind>,
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

/// The subcommands of `synth`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum SynthKind {
    /// Write synthetic ROSS instrumentation files (gvt, rt, evtrace, model)
    /// of a PHOLD-like run, with injected anomalies and `truth-ross.csv`.
    Ross(RossArgs),
}

/// The flags of `chimbuko-mpi synth ross`.
#[derive(Debug, Clone, clap::Args)]
pub struct RossArgs {
    /// Scenario file (TOML, a `[ross]` table). Without it, the built-in
    /// `scenarios/ross-phold.toml`.
    pub scenario: Option<PathBuf>,
    /// Output directory for the files and the ground truth.
    #[arg(long)]
    pub out: PathBuf,
    /// Override the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override the scenario's number of PEs.
    #[arg(long)]
    pub pes: Option<u32>,
    /// Override the scenario's number of GVT intervals.
    #[arg(long)]
    pub intervals: Option<u32>,
    /// Override the scenario's file prefix.
    #[arg(long)]
    pub prefix: Option<String>,
    /// Sleep this long after each flush, so that a follower can read the
    /// files while they grow.
    #[arg(long)]
    pub pace_ms: Option<f64>,
}

impl RossArgs {
    /// The options `synth ross` takes.
    pub fn into_options(self) -> RossOptions {
        RossOptions {
            scenario: self.scenario,
            out: self.out,
            seed: self.seed,
            pes: self.pes,
            intervals: self.intervals,
            prefix: self.prefix,
            pace_ms: self.pace_ms,
        }
    }
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
    /// Runs `synth` or its subcommand.
    pub fn run(self) -> anyhow::Result<()> {
        match self.kind {
            Some(SynthKind::Ross(a)) => chimbuko_mpi::synth::ross::run_ross(&a.into_options()),
            None => chimbuko_mpi::synth::run(self.into_options()),
        }
    }

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
