//! `chimbuko-mpi ross`: what slowed a ROSS simulation, from its
//! instrumentation files. The flags become a
//! `chimbuko_mpi::ross::command::RossCommand`, which the library runs.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use chimbuko_mpi::detect::choice::{Algorithm, DetectorSettings};
use chimbuko_mpi::ross::command::{ross_on_mpi, RossCommand};
use chimbuko_mpi::ross::follow::FollowOptions;
use chimbuko_mpi::ross::peers::PeerRule;
use chimbuko_mpi::ross::RossOptions;

/// The flags of `ross`.
#[derive(Args)]
pub struct RossArgs {
    /// ROSS's stats directory (`--stats-path`, `stats-output` by default),
    /// or the directory holding it.
    pub path: PathBuf,
    /// The run's `--stats-prefix`, when the directory holds several runs.
    #[arg(long)]
    prefix: Option<String>,
    /// Peer score at or above which an entity is flagged.
    #[arg(long, default_value_t = 6.0)]
    threshold: f64,
    /// Smallest scale of the peer score, as a share of the peers' median
    /// (0.25: a value must be at least 2.5× the median to be flagged).
    #[arg(long, default_value_t = 0.25)]
    rel_floor: f64,
    /// Consecutive flagged GVT intervals an anomaly needs.
    #[arg(long, default_value_t = 2)]
    min_intervals: usize,
    /// Detector of run-wide slowdowns (every PE slow at once), as in `run`:
    /// modal, sstd, hbos or copod.
    #[arg(long, default_value = "modal", value_parser = super::run::parse_algorithm)]
    algorithm: Algorithm,
    /// sstd: a run-wide value is anomalous beyond mean + sigma·stddev.
    #[arg(long, default_value_t = 6.0)]
    sigma: f64,
    /// hbos and copod: score threshold as a fraction of the score range.
    #[arg(long, default_value_t = 0.99)]
    hbos_threshold: f64,
    /// modal: robust distance from every normal mode beyond which a
    /// run-wide value is anomalous.
    #[arg(long, default_value_t = 6.0)]
    modal_threshold: f64,
    /// The real TSC rate in Hz, when ROSS ran with another `--clock-rate`
    /// (its default on x86_64 is 1e9 whatever the real rate).
    #[arg(long)]
    clock_rate: Option<f64>,
    /// A copy of ROSS's stdout: the clock rate it used, its totals.
    #[arg(long)]
    ross_stdout: Option<PathBuf>,
    /// Incidents that cost less than this share of the run's total PE time
    /// are counted, not listed (docs/incidents.md).
    #[arg(long, default_value_t = chimbuko_mpi::incidents::DEFAULT_FLOOR, value_name = "SHARE")]
    incident_floor: f64,
    /// Write the summary (incidents, anomalies, entities ranked by cost) as
    /// JSON here.
    #[arg(long)]
    summary_out: Option<PathBuf>,
    /// The provenance file (HDF5) to write; `<prefix>-provenance.h5` in the
    /// current directory by default.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the provenance file if it exists.
    #[arg(long)]
    overwrite: bool,
    /// Analyse the files while ROSS is still writing them: report
    /// anomalies as they appear, end at the final real-time sample, after
    /// `--idle-timeout` without growth, or on SIGTERM.
    #[arg(long)]
    follow: bool,
    /// With `--follow`: seconds without any file growing after which the
    /// run is taken as over (counted once ROSS's first samples were read).
    #[arg(long, default_value_t = 60.0)]
    idle_timeout: f64,
    /// With `--follow`: seconds to wait for ROSS's first samples (its
    /// files appear at its first flush) before giving up with an error.
    #[arg(long, default_value_t = 600.0)]
    start_timeout: f64,
    /// With `--follow`: milliseconds between polls of the files.
    #[arg(long, default_value_t = 200)]
    poll_ms: u64,
    /// With `--follow`: append each live anomaly, with when its flush
    /// landed and when it was found, to this JSON-lines file.
    #[arg(long)]
    live_out: Option<PathBuf>,
    /// Write no provenance file.
    #[arg(long, conflicts_with_all = ["out", "overwrite"])]
    no_provenance: bool,
}

/// Runs `ross`.
pub fn run_ross(a: RossArgs) -> anyhow::Result<()> {
    for (flag, v) in [
        ("--idle-timeout", a.idle_timeout),
        ("--start-timeout", a.start_timeout),
    ] {
        if !(v.is_finite() && v > 0.0) {
            anyhow::bail!("{flag} must be a positive number of seconds, got {v}");
        }
    }
    let cmd = RossCommand {
        analysis: RossOptions {
            path: a.path,
            prefix: a.prefix,
            rule: PeerRule {
                threshold: a.threshold,
                rel_floor: a.rel_floor,
                min_intervals: a.min_intervals,
            },
            detector: DetectorSettings {
                algorithm: a.algorithm,
                sigma: a.sigma,
                hbos_threshold: a.hbos_threshold,
                modal_threshold: a.modal_threshold,
                ..Default::default()
            },
            clock_rate: a.clock_rate,
            ross_stdout: a.ross_stdout,
            incident_floor: a.incident_floor,
        },
        follow: a.follow.then(|| FollowOptions {
            idle_timeout: Duration::from_secs_f64(a.idle_timeout),
            start_timeout: Duration::from_secs_f64(a.start_timeout),
            poll: Duration::from_millis(a.poll_ms.max(1)),
        }),
        live_out: a.live_out,
        out: a.out,
        overwrite: a.overwrite,
        no_provenance: a.no_provenance,
        summary_out: a.summary_out,
    };
    ross_on_mpi(&cmd)
}
