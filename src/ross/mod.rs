//! The ROSS analysis: which PE, KP or LP of a parallel discrete-event
//! simulation was slow, rolled back or hot, when (in GVT and in wall-clock
//! time), and what it cost the run.
//!
//! The steps, one file each:
//! 1. read the run's engine samples at GVT (`trace::ross`), rescaled to the
//!    real clock rate when it is known;
//! 2. [`signals`]: time series per PE and KP, one point per GVT interval;
//! 3. [`peers`]: each entity against its peers in the same interval;
//! 4. [`hotspots`]: the event trace's destination LPs against each other;
//! 5. [`attribution`]: victims' rollbacks attributed to the slow PE that
//!    caused them, and the run time each PE cost;
//! 6. [`report`]: the summary (text and JSON).
//!
//! This first version analyses finished files in one process. Work
//! sharing over AD ranks, the provenance file, following files while ROSS
//! writes them and the real-time (RT) file's series are still to come.

pub mod attribution;
pub mod hotspots;
pub mod peers;
pub mod report;
pub mod signals;

use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::trace::ross::{
    ClockRescale, EngineSeries, FileKind, Record, RecordReader, RossStdout, StatsFiles,
};
use peers::PeerRule;
use report::RossReport;
use signals::RunSeries;

/// What `chimbuko-mpi ross` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct RossOptions {
    /// The stats directory, or a directory holding one `stats-output*`.
    pub path: PathBuf,
    /// The `--stats-prefix` of the run, when the directory holds several.
    pub prefix: Option<String>,
    /// How far from its peers an entity must be to be flagged.
    pub rule: PeerRule,
    /// The real TSC rate (Hz), when ROSS ran with the wrong `--clock-rate`.
    pub clock_rate: Option<f64>,
    /// A copy of ROSS's stdout: the clock rate it used, its totals.
    pub ross_stdout: Option<PathBuf>,
}

/// ROSS's default clock rate on x86_64, used when neither its stdout nor
/// the user says which rate it ran with.
const ROSS_DEFAULT_CLOCK_HZ: f64 = 1e9;

/// Analyses a finished ROSS run.
pub fn analyse(opts: &RossOptions) -> anyhow::Result<RossReport> {
    let files = match &opts.prefix {
        Some(p) => StatsFiles::find_with_prefix(&opts.path, p)?,
        None => StatsFiles::find(&opts.path)?,
    };
    let Some(gvt) = files.path(FileKind::Gvt) else {
        bail!(
            "{}: no GVT engine file ({}-gvt.bin): run ROSS with --engine-stats=1 or 4",
            files.dir.display(),
            files.prefix
        );
    };
    let stdout = opts
        .ross_stdout
        .as_ref()
        .map(|p| RossStdout::read(p))
        .transpose()?;
    let used_hz = stdout
        .as_ref()
        .and_then(|s| s.clock_rate_hz)
        .unwrap_or(ROSS_DEFAULT_CLOCK_HZ);
    let rescale = opts
        .clock_rate
        .and_then(|real| ClockRescale::new(used_hz, real));
    let mut reader = RecordReader::open(&gvt, FileKind::Gvt)?;
    let mut engine = EngineSeries::default();
    while let Some(rec) = reader.next_record()? {
        let mut rec: Record<'_> = rec;
        if let Some(r) = &rescale {
            r.apply(&mut rec);
        }
        engine.add(&rec);
    }
    let series = RunSeries::from_engine(&engine);
    let anomalies = peers::find(&series, &opts.rule);
    let caused = attribution::causes(&anomalies);
    let costs = attribution::costs(&series, &anomalies, &caused);
    let grid = series
        .intervals
        .values()
        .next()
        .cloned()
        .unwrap_or_default();
    let hot = match files.path(FileKind::EvTrace) {
        Some(p) => {
            hotspots::TraceCounts::read(&p, &grid, stdout.as_ref().and_then(|s| s.total_lps))
                .with_context(|| format!("reading the event trace {}", p.display()))?
                .hotspots(&grid, &opts.rule)
        }
        None => Vec::new(),
    };
    Ok(RossReport::new(
        &files,
        &series,
        anomalies,
        caused,
        costs,
        hot,
        stdout.as_ref(),
        rescale.map(|r| r.factor()),
    ))
}
