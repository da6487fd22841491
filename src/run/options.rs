//! What a run is asked to do: plain data, no command-line parsing.
//!
//! The `cli` room fills a [`RunOptions`] from flags, `CHIMBUKO_*`
//! environment variables and a TOML file (and records where each value
//! came from in [`RunOptions::settings`]); tests and other front ends build
//! one directly. The pipeline reads nothing else.

use std::path::PathBuf;
use std::time::Duration;

use crate::detect::choice::DetectorSettings;
use crate::trace::tau::streams::TauInputs;

/// Where one setting's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A command-line flag.
    Flag,
    /// A `CHIMBUKO_<FLAG>` environment variable.
    Env,
    /// The `--config` TOML file.
    File,
    /// The flag's default.
    Default,
}

impl Source {
    /// How the settings listing names the source.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Env => "environment",
            Source::File => "config file",
            Source::Default => "default",
        }
    }
}

/// One setting as the run uses it (printed at start, stored in the
/// provenance file as `configuration`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Setting {
    /// The flag name, without `--`.
    pub name: String,
    /// Its value as text (lists comma-separated).
    pub value: String,
    /// Where the value came from.
    pub source: Source,
}

/// Worker threads from which an AD rank reads its streams' next step
/// while analysing this one, unless `--prefetch` says otherwise: with
/// fewer, the reading takes cores the analysis needs (measured on 2 and 16
/// cores, `docs/benchmarks.md`).
pub const PREFETCH_FROM_THREADS: usize = 4;

/// Every option of `chimbuko-mpi run` (the flags of the same names; see
/// the README for what each does).
#[derive(Debug, Clone)]
pub struct RunOptions {
    // --- inputs ---
    /// Which streams (`--input`, `--binary`, `--trace-dir`, `--prefix`,
    /// `--app-ranks`, `--program-idx`), their engine and open time-out.
    pub inputs: TauInputs,
    /// How long without a new step before a stream counts as stalled.
    pub step_timeout: Duration,
    /// Stop after this many steps.
    pub max_steps: Option<u64>,
    /// Read each stream's next step while the current one is analysed
    /// (`None`: when the rank has [`PREFETCH_FROM_THREADS`] or more worker
    /// threads).
    pub prefetch: Option<bool>,
    /// Worker threads of the AD rank's analysis (`None`: the CPUs in the
    /// rank's affinity mask).
    pub threads: Option<usize>,
    /// Bind each worker thread to its own CPU of the rank's affinity mask
    /// (`None`: when there are as many worker threads as CPUs in it).
    pub bind_workers: Option<bool>,

    // --- detection ---
    /// The detector and its parameters.
    pub detector: DetectorSettings,
    /// Judge inclusive instead of exclusive runtimes.
    pub use_inclusive: bool,
    /// Functions matching this regular expression are never flagged.
    pub ignore_regex: Option<String>,
    /// File of function names never flagged.
    pub ignore_file: Option<PathBuf>,
    /// File of per-function thresholds.
    pub threshold_file: Option<PathBuf>,
    /// Executions held back for a fuller model, per rank, at most.
    pub max_pending: usize,
    /// Re-judge the run's anomalies against the final model at the end.
    pub final_relabel: bool,
    /// Exit 0 when some streams failed or stalled (the others analysed);
    /// without it such a run exits with [`crate::run::STREAMS_FAILED_EXIT`].
    pub allow_failed_streams: bool,
    /// Anomalies kept per rank for that re-judgement.
    pub max_stored_anomalies: usize,
    /// Incidents cheaper than this share of the run's total rank time are
    /// counted, not listed.
    pub incident_floor: f64,
    /// Clocks of different ranks may disagree by this much (µs) when
    /// anomalies are linked into incidents.
    pub incident_tolerance_us: u64,

    // --- outputs ---
    /// Provenance file; `None` with `no_provenance` false: a default name.
    pub out: Option<PathBuf>,
    /// Write no provenance file.
    pub no_provenance: bool,
    /// Replace an existing provenance file.
    pub overwrite: bool,
    /// Append buffered provenance every this many steps.
    pub flush_steps: u64,
    /// Executions on each side of a recorded execution.
    pub window: usize,
    /// Normal executions recorded per function with anomalies, per
    /// application rank and step.
    pub normal_samples: usize,
    /// Anomalies shorter than this exclusive runtime (µs) are not recorded.
    pub min_anomaly_us: u64,
    /// Directory for the per-rank label CSVs.
    pub labels_out: Option<PathBuf>,
    /// File for the final global model (JSON).
    pub model_out: Option<PathBuf>,
    /// File for the run summary (JSON).
    pub summary_out: Option<PathBuf>,
    /// What the run summary says of each function.
    pub summary_functions: crate::output::summary::SummaryFunctions,
    /// File for the HTML report of the provenance file, written at the end.
    pub report: Option<PathBuf>,
    /// Ground-truth CSVs, one per input.
    pub truth: Vec<PathBuf>,
    /// Live statistics as JSON lines: a file, or `-` for stdout.
    pub stats_out: Option<String>,
    /// POST each live statistics packet to this URL.
    pub viz_url: Option<String>,
    /// Steps between live statistics packets.
    pub stats_every: u64,
    /// Executions per function whose features go to the provenance
    /// file's `model_samples` (0: none).
    pub model_samples: usize,
    /// Run-level tags (`--tag KEY=VALUE`), in the order given.
    pub tags: Vec<(String, String)>,

    // --- running ---
    /// Rank 0 prints progress every this many steps (0: never).
    pub progress_every: u64,
    /// Rows of the summary's top-functions table.
    pub top: usize,
    /// Less output.
    pub quiet: bool,
    /// How long a rank may take to stop together with the others after a
    /// signal before it exits anyway.
    pub stop_grace: Duration,
    /// The effective settings and where each came from.
    pub settings: Vec<Setting>,
}

impl Default for RunOptions {
    /// The defaults of the `run` flags, with no input.
    fn default() -> Self {
        RunOptions {
            inputs: TauInputs {
                trace_dir: PathBuf::from("."),
                prefix: "tau-metrics".into(),
                open_timeout: Duration::from_secs(60),
                ..Default::default()
            },
            step_timeout: Duration::from_secs(300),
            max_steps: None,
            prefetch: None,
            threads: None,
            bind_workers: None,
            detector: DetectorSettings::default(),
            use_inclusive: false,
            ignore_regex: None,
            ignore_file: None,
            threshold_file: None,
            max_pending: 100_000,
            final_relabel: true,
            allow_failed_streams: false,
            max_stored_anomalies: 1_000_000,
            incident_floor: crate::incidents::DEFAULT_FLOOR,
            incident_tolerance_us: crate::incidents::tau::links::DEFAULT_TOLERANCE_US,
            out: None,
            no_provenance: false,
            overwrite: false,
            flush_steps: 10,
            window: 5,
            normal_samples: 1,
            min_anomaly_us: 0,
            labels_out: None,
            model_out: None,
            summary_out: None,
            summary_functions: Default::default(),
            report: None,
            truth: Vec::new(),
            stats_out: None,
            viz_url: None,
            stats_every: 1,
            model_samples: 0,
            tags: Vec::new(),
            progress_every: 1,
            top: 10,
            quiet: false,
            stop_grace: Duration::from_secs(30),
            settings: Vec::new(),
        }
    }
}

/// Seconds as given on the command line (negative counts as 0).
pub fn seconds(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() { s.max(0.0) } else { 0.0 })
}
