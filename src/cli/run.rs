//! The flags of `chimbuko-mpi run`, and how they become [`RunOptions`].

use std::path::PathBuf;

use chimbuko_mpi::detect::choice::{Algorithm, DetectorSettings};
use chimbuko_mpi::detect::direction::Direction;
use chimbuko_mpi::output::summary::SummaryFunctions;
use chimbuko_mpi::run::options::{seconds, RunOptions, Setting};
use chimbuko_mpi::trace::adios::Engine;
use chimbuko_mpi::trace::tau::streams::TauInputs;

/// Command-line options of `run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Stream path pattern with `{rank}` (the application rank) and
    /// optionally `{binary}`, e.g. `dir/tau-metrics-app-{rank}.bp`. Repeat
    /// for workflows with several programs (one per binary). Default: TAU's
    /// naming, `<trace-dir>/<prefix>-{binary}-{rank}.bp`, one per --binary.
    #[arg(long = "input")]
    pub inputs: Vec<String>,
    /// Application binary name(s), one per program of the workflow: fills
    /// `{binary}` in --input, or TAU's default stream names without --input.
    #[arg(long = "binary")]
    pub binaries: Vec<String>,
    /// Directory of the streams when --input is not given.
    #[arg(long, default_value = ".")]
    pub trace_dir: PathBuf,
    /// Stream name prefix (TAU_ADIOS2_FILENAME) when --input is not given.
    #[arg(long, default_value = "tau-metrics")]
    pub prefix: String,
    /// Number of application ranks (streams) per input; one value for all
    /// inputs or one per input. Default for file engines: count the files.
    #[arg(long = "app-ranks")]
    pub app_ranks: Vec<u64>,
    /// Program index of each input (default: 0, 1, ... in input order).
    #[arg(long = "program-idx")]
    pub program_idx: Vec<u32>,
    /// ADIOS2 engine: auto (BP4/BP5 from each BP file's index header, SST
    /// when `<name>.sst` appears), BPFile, BP4, BP5 or SST.
    #[arg(long, default_value = "auto")]
    pub engine: Engine,
    /// Anomaly detector: modal, sstd, hbos, copod, or model (performance
    /// models from --models; `docs/algorithms.md`).
    #[arg(long, default_value = "modal", value_parser = parse_algorithm)]
    pub algorithm: Algorithm,
    /// model: the performance models, a directory written by `model train
    /// --all-functions -o DIR` (with `index.json`) or one JSON model that
    /// names its function.
    #[arg(long, value_name = "FILE_OR_DIR")]
    pub models: Option<PathBuf>,
    /// model: the detector of the functions without a model (modal, sstd,
    /// hbos or copod).
    #[arg(long, default_value = "modal", value_parser = parse_algorithm)]
    pub model_fallback: Algorithm,
    /// SSTD: anomalies lie outside mean ± sigma·stddev.
    #[arg(long, default_value_t = 6.0)]
    pub sigma: f64,
    /// HBOS and COPOD: score threshold as a fraction of the score range
    /// (Chimbuko's hbos_thres).
    #[arg(long, default_value_t = 0.99)]
    pub hbos_threshold: f64,
    /// HBOS: bins of the labelling histogram.
    #[arg(long, default_value_t = 200)]
    pub hbos_max_bins: usize,
    /// modal: anomalies lie more than this many robust scales from every
    /// normal runtime mode.
    #[arg(long, default_value_t = 6.0)]
    pub modal_threshold: f64,
    /// modal: share of a function's executions a runtime mode needs to be
    /// normal behaviour.
    #[arg(long, default_value_t = 0.05)]
    pub modal_min_share: f64,
    /// modal: smallest scale of a mode, in ln(1 + µs) (0.025: with threshold
    /// 6, runtimes within about -14 %/+16 % of a mode are never anomalies).
    #[arg(long, default_value_t = 0.025)]
    pub modal_min_spread: f64,
    /// A function is labelled only once the global model holds this many of its executions.
    #[arg(long, default_value_t = 2)]
    pub min_count: u64,
    /// Which executions may be anomalies: slow (slower than the model
    /// predicts, the default), fast, or both (Chimbuko's two-sided
    /// detectors, for compatibility).
    #[arg(long, default_value = "slow", value_parser = parse_direction)]
    pub direction: Direction,
    /// Flag fast outliers too: the same as `--direction both`.
    #[arg(long)]
    pub flag_fast: bool,
    /// Judge inclusive instead of exclusive runtimes.
    #[arg(long)]
    pub use_inclusive: bool,
    /// Functions whose name matches this regular expression are never flagged.
    #[arg(long)]
    pub ignore_regex: Option<String>,
    /// File with function names (one per line, `#` comments) never flagged.
    #[arg(long)]
    pub ignore_file: Option<PathBuf>,
    /// File of per-function thresholds: lines `<value> <function name>`
    /// (sstd: sigma; hbos, copod: threshold; modal: robust distance).
    #[arg(long)]
    pub threshold_file: Option<PathBuf>,
    /// Write every execution's label to `<dir>/labels-<ad rank>.csv` (large).
    #[arg(long)]
    pub labels_out: Option<PathBuf>,
    /// Write the final global model (JSON) here (rank 0).
    #[arg(long)]
    pub model_out: Option<PathBuf>,
    /// Write the run summary (JSON) here (rank 0).
    #[arg(long)]
    pub summary_out: Option<PathBuf>,
    /// What the summary JSON says of each function: none, counts (name,
    /// program, executions, anomalies) or models (the counts and the final
    /// model: large with many functions; --model-out writes the same).
    #[arg(long, default_value = "counts", value_parser = SummaryFunctions::parse)]
    pub summary_functions: SummaryFunctions,
    /// Write the HTML report of the provenance file here at the end (rank
    /// 0; the same page as `chimbuko-mpi report`).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Ground-truth CSV(s) from `synth`, one per input: report precision/recall.
    #[arg(long = "truth")]
    pub truth: Vec<PathBuf>,
    /// Seconds to wait for each stream to appear.
    #[arg(long, default_value_t = 60.0)]
    pub open_timeout: f64,
    /// Seconds without a new step before a stream is declared stalled (ended).
    #[arg(long, default_value_t = 300.0)]
    pub step_timeout: f64,
    /// Stop after this many steps.
    #[arg(long)]
    pub max_steps: Option<u64>,
    /// Executions held back for lack of data, per rank, before they are
    /// emitted as unlabeled.
    #[arg(long, default_value_t = 100_000)]
    pub max_pending: usize,
    /// Rank 0 prints progress every this many steps (0: never).
    #[arg(long, default_value_t = 1)]
    pub progress_every: u64,
    /// Rows of the summary's top-functions table.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Re-judge the run's anomalies (and normal samples) against the final
    /// model at the end, as the reference's post-pruning does; both labels
    /// are kept. `--final-relabel false` keeps the in-situ labels as final.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub final_relabel: bool,
    /// Same as `--final-relabel false`.
    #[arg(long)]
    pub no_final_relabel: bool,
    /// Exit 0 when some streams failed or stalled and the others were
    /// analysed (by default such a run exits 3; one that read no stream
    /// at all exits 1 either way).
    #[arg(long)]
    pub allow_failed_streams: bool,
    /// Anomalies kept per rank for the end-of-run re-judgement; beyond this
    /// they are final as labelled in situ.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_stored_anomalies: usize,
    /// Incidents (a root delay with the waits and calls it slowed) that
    /// cost less than this share of the run's total rank time are counted,
    /// not listed (docs/incidents.md).
    #[arg(long, default_value_t = chimbuko_mpi::incidents::DEFAULT_FLOOR, value_name = "SHARE")]
    pub incident_floor: f64,
    /// Timestamps of different ranks may disagree by this much (µs) when
    /// waits are linked to the delays that caused them (clocks of
    /// different nodes).
    #[arg(long, default_value_t = chimbuko_mpi::incidents::tau::links::DEFAULT_TOLERANCE_US, value_name = "US")]
    pub incident_clock_tolerance_us: u64,
    /// Less output (no per-step progress, no reader warnings).
    #[arg(long)]
    pub quiet: bool,
    /// Provenance file (HDF5) written collectively by all AD ranks. Default:
    /// `chimbuko-<binary>-<start time>.h5` in the working directory.
    #[arg(long = "out")]
    pub out: Option<PathBuf>,
    /// Do not write a provenance file (analysis and reports only).
    #[arg(long, conflicts_with = "out")]
    pub no_provenance: bool,
    /// Replace an existing provenance file.
    #[arg(long)]
    pub overwrite: bool,
    /// Append buffered provenance to the file every this many steps (and at
    /// the end); a run killed in between keeps every flushed step.
    #[arg(long, default_value_t = 10)]
    pub flush_steps: u64,
    /// Executions on each side of a recorded execution in its window.
    #[arg(long, default_value_t = 5)]
    pub window: usize,
    /// Normal executions recorded per function with anomalies, per
    /// application rank and step (0: none).
    #[arg(long, default_value_t = 1)]
    pub normal_samples: usize,
    /// Anomalies shorter than this exclusive runtime (µs) are not recorded.
    #[arg(long, default_value_t = 0)]
    pub min_anomaly_us: u64,
    /// Live statistics (Chimbuko's visualisation stream) as JSON lines:
    /// a file, or `-` for stdout (AD rank 0).
    #[arg(long)]
    pub stats_out: Option<String>,
    /// POST each live statistics packet to this http:// URL (Chimbuko's
    /// visualisation server, or any collector); failures are reported once
    /// and never stop the analysis.
    #[arg(long)]
    pub viz_url: Option<String>,
    /// Steps between live statistics packets.
    #[arg(long, default_value_t = 1)]
    pub stats_every: u64,
    /// Record the features of up to N executions per function (the same
    /// sample for any number of AD ranks) in the provenance file's
    /// `model_samples`, to train performance models on (0: off).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub model_samples: usize,
    /// A run-level metric or label for the provenance file's `run_tags`
    /// (repeatable; numbers are kept as numbers); `app_ranks` and
    /// `ad_ranks` are recorded automatically.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<(String, String)>,
    /// Read each stream's next step while the current one is analysed.
    /// Pays off when the AD rank has cores to spare for its streams'
    /// threads; holds one more step of rows per stream in memory.
    /// Default: on when the rank has 4 or more worker threads.
    #[arg(long, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub prefetch: Option<bool>,
    /// Worker threads per AD rank for building call stacks, labelling and
    /// deriving models (MPI stays on the main thread). Default: the CPUs
    /// in the rank's affinity mask, so the job script's binding decides
    /// (Slurm `--cpus-per-task`, `jsrun -c`, `mpirun --map-by
    /// slot:PE=N`). Results are the same for any number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Bind worker thread i to the i-th CPU of the rank's affinity mask,
    /// so that a worker woken for the next part of a step never lands on
    /// a core that is busy while another sits idle. Default: on when the
    /// rank has as many worker threads (more than one) as CPUs in its
    /// mask, the usual case when the job script binds the rank.
    #[arg(long, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub bind_workers: Option<bool>,
    /// After SIGTERM/SIGINT the AD ranks stop together at the end of the
    /// step and write what they have; a rank that cannot finish within
    /// this many seconds (a peer is gone) exits anyway.
    #[arg(long, default_value_t = 30.0)]
    pub stop_grace: f64,
    /// TOML file of settings (keys: flag names). Every flag can also be set
    /// in the environment as CHIMBUKO_<FLAG> (e.g. CHIMBUKO_FLUSH_STEPS=5);
    /// a flag beats the environment, which beats the file.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// `--algorithm` as clap checks it (the names of [`Algorithm::ALL`]).
pub(super) fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    s.parse()
}

/// `--tag KEY=VALUE` as clap checks it.
fn parse_tag(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

/// `--direction` as clap checks it.
fn parse_direction(s: &str) -> Result<Direction, String> {
    s.parse()
}

impl RunArgs {
    /// The options the pipeline takes; `settings` is where each value came
    /// from (see `settings`).
    pub fn into_options(self, settings: Vec<Setting>) -> RunOptions {
        RunOptions {
            inputs: TauInputs {
                inputs: self.inputs,
                binaries: self.binaries,
                trace_dir: self.trace_dir,
                prefix: self.prefix,
                app_ranks: self.app_ranks,
                program_idx: self.program_idx,
                engine: self.engine,
                open_timeout: seconds(self.open_timeout),
            },
            step_timeout: seconds(self.step_timeout),
            max_steps: self.max_steps,
            prefetch: self.prefetch,
            threads: self.threads.map(|n| n as usize),
            bind_workers: self.bind_workers,
            detector: DetectorSettings {
                algorithm: self.algorithm,
                sigma: self.sigma,
                hbos_threshold: self.hbos_threshold,
                hbos_max_bins: self.hbos_max_bins,
                modal_threshold: self.modal_threshold,
                modal_min_share: self.modal_min_share,
                modal_min_spread: self.modal_min_spread,
                min_count: self.min_count,
                direction: if self.flag_fast {
                    Direction::Both
                } else {
                    self.direction
                },
                models: self.models,
                model_fallback: self.model_fallback,
            },
            use_inclusive: self.use_inclusive,
            ignore_regex: self.ignore_regex,
            ignore_file: self.ignore_file,
            threshold_file: self.threshold_file,
            max_pending: self.max_pending,
            final_relabel: self.final_relabel && !self.no_final_relabel,
            allow_failed_streams: self.allow_failed_streams,
            max_stored_anomalies: self.max_stored_anomalies,
            incident_floor: self.incident_floor,
            incident_tolerance_us: self.incident_clock_tolerance_us,
            out: self.out,
            no_provenance: self.no_provenance,
            overwrite: self.overwrite,
            flush_steps: self.flush_steps,
            window: self.window,
            normal_samples: self.normal_samples,
            min_anomaly_us: self.min_anomaly_us,
            labels_out: self.labels_out,
            model_out: self.model_out,
            summary_out: self.summary_out,
            summary_functions: self.summary_functions,
            report: self.report,
            truth: self.truth,
            stats_out: self.stats_out,
            viz_url: self.viz_url,
            stats_every: self.stats_every,
            model_samples: self.model_samples,
            tags: self.tags,
            progress_every: self.progress_every,
            top: self.top,
            quiet: self.quiet,
            stop_grace: seconds(self.stop_grace),
            settings,
        }
    }
}
