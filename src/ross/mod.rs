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
//! 6. [`run_wide`]: the project's detectors (`--algorithm`) on the series of
//!    the whole run, for slowdowns that hit every PE at once;
//! 7. [`report`]: the summary (text and JSON).
//!
//! Besides, [`share`] says how AD ranks share the work, [`trace_counts`]
//! counts the event trace, [`follow`] reads files while ROSS writes them
//! and [`provenance`] writes what was found into the HDF5 provenance file.

pub mod attribution;
pub mod command;
pub mod follow;
pub mod hotspots;
pub mod incidents;
pub mod peers;
pub mod provenance;
pub mod run_wide;
pub mod share;
pub mod signals;
pub mod summary;
pub mod trace_counts;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::detect::choice::DetectorSettings;
use crate::trace::ross::{
    ClockRescale, EngineSeries, FileKind, RecordReader, RossError, RossStdout, StatsFiles,
};
use hotspots::HotspotLp;
use peers::{PeerAnomaly, PeerRule};
use share::{agree_ranges, guess_ranges, Alone, Ranges, WorkShare};
use signals::RunSeries;
use summary::RossSummary;
use trace_counts::{gvt_grid, GridIndex, HotTally, TraceTally};

/// What `chimbuko-mpi ross` is asked to do.
#[derive(Debug, Clone)]
pub struct RossOptions {
    /// The stats directory, or a directory holding one `stats-output*`.
    pub path: PathBuf,
    /// The `--stats-prefix` of the run, when the directory holds several.
    pub prefix: Option<String>,
    /// How far from its peers an entity must be to be flagged.
    pub rule: PeerRule,
    /// The detector of run-wide slowdowns ([`run_wide`]).
    pub detector: DetectorSettings,
    /// The real TSC rate (Hz), when ROSS ran with the wrong `--clock-rate`.
    pub clock_rate: Option<f64>,
    /// A copy of ROSS's stdout: the clock rate it used, its totals.
    pub ross_stdout: Option<PathBuf>,
    /// Incidents cheaper than this share of the run's total PE time are
    /// counted, not listed.
    pub incident_floor: f64,
}

impl Default for RossOptions {
    fn default() -> Self {
        RossOptions {
            path: PathBuf::new(),
            prefix: None,
            rule: PeerRule::default(),
            detector: DetectorSettings::default(),
            clock_rate: None,
            ross_stdout: None,
            incident_floor: crate::incidents::DEFAULT_FLOOR,
        }
    }
}

/// ROSS's default clock rate on x86_64, used when neither its stdout nor
/// the user says which rate it ran with.
const ROSS_DEFAULT_CLOCK_HZ: f64 = 1e9;

/// A run's files and what is known about how ROSS ran.
#[derive(Debug, Clone)]
pub struct RunFiles {
    /// The stats files.
    pub files: StatsFiles,
    /// ROSS's stdout, when a copy was given.
    pub stdout: Option<RossStdout>,
    /// Rescaling of seconds to the real clock rate, when `--clock-rate`
    /// was given.
    pub rescale: Option<ClockRescale>,
}

impl RunFiles {
    /// Finds the run's files; refuses a run without engine samples.
    pub fn find(opts: &RossOptions) -> anyhow::Result<Self> {
        Self::with_files(Self::find_files(opts)?, opts)
    }

    /// The stats files of the run (no GVT or RT file is an error).
    pub fn find_files(opts: &RossOptions) -> anyhow::Result<StatsFiles> {
        let files = match &opts.prefix {
            Some(p) => StatsFiles::find_with_prefix(&opts.path, p)?,
            None => StatsFiles::find(&opts.path)?,
        };
        if files.path(FileKind::Gvt).is_none() && files.path(FileKind::Rt).is_none() {
            bail!(
                "{}: no GVT or real-time engine file ({}-gvt.bin, -rt.bin): run ROSS with \
                 --engine-stats=1, 2 or 4",
                files.dir.display(),
                files.prefix
            );
        }
        Ok(files)
    }

    /// The run of `files`, with ROSS's stdout and the clock rescaling
    /// `opts` give.
    pub fn with_files(files: StatsFiles, opts: &RossOptions) -> anyhow::Result<Self> {
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
        Ok(RunFiles {
            files,
            stdout,
            rescale,
        })
    }

    /// The number of model LPs, when ROSS's stdout gave it.
    pub fn model_lps(&self) -> Option<u64> {
        self.stdout.as_ref().and_then(|s| s.total_lps)
    }
}

/// What the event trace held.
#[derive(Debug, Clone, Default)]
pub struct TraceSummary {
    /// The file.
    pub path: PathBuf,
    /// Records and bytes counted, events per GVT interval.
    pub tally: TraceTally,
    /// Seconds pass 1 took on this rank (a timing: reported on stderr,
    /// never in the summary, which must not depend on the machine).
    pub seconds: f64,
}

/// Everything the analysis found: the input of the report and of the
/// provenance file.
#[derive(Debug, Clone)]
pub struct Findings {
    /// The run's files.
    pub run: RunFiles,
    /// The options the analysis ran with.
    pub rule: PeerRule,
    /// The detector of run-wide slowdowns.
    pub detector: DetectorSettings,
    /// Series per GVT interval (GVT file).
    pub gvt: RunSeries,
    /// Anomalies in the GVT series, and the PE each is attributed to.
    pub gvt_anomalies: Vec<(PeerAnomaly, Option<u32>)>,
    /// Series per real-time step (RT file), if there is one.
    pub rt: Option<RunSeries>,
    /// Anomalies in the RT series, with their attribution.
    pub rt_anomalies: Vec<(PeerAnomaly, Option<u32>)>,
    /// Hotspot LPs of the event trace.
    pub hotspots: Vec<HotspotLp>,
    /// Slowdowns of the whole run, with their cause when one was found.
    pub run_wide: run_wide::RunWide,
    /// Run time each PE cost, seconds.
    pub costs: BTreeMap<u32, f64>,
    /// The event trace, if there is one.
    pub trace: Option<TraceSummary>,
    /// Problems met that did not stop the analysis (a bad record ends a
    /// file; what came before it is kept).
    pub warnings: Vec<String>,
    /// The incidents: each problem with its root, effects and cost.
    pub incidents: crate::incidents::IncidentList,
}

/// Analyses a finished ROSS run in this process alone.
pub fn analyse(opts: &RossOptions) -> anyhow::Result<RossSummary> {
    Ok(RossSummary::new(&analyse_shared(opts, &Alone)?))
}

/// Analyses a finished ROSS run, the work shared by the ranks of `share`
/// (see [`share`]); every rank returns the same findings.
pub fn analyse_shared(opts: &RossOptions, share: &dyn WorkShare) -> anyhow::Result<Findings> {
    let run = RunFiles::find(opts)?;
    let mut warnings = Vec::new();
    let mut engine = |kind: FileKind| -> anyhow::Result<Option<EngineSeries>> {
        let Some(path) = run.files.path(kind) else {
            return Ok(None);
        };
        let (series, err) = read_engine(&path, kind, run.rescale.as_ref())?;
        warnings.extend(err.map(|e| e.to_string()));
        Ok(Some(series))
    };
    let gvt = engine(FileKind::Gvt)?.unwrap_or_default();
    let rt = engine(FileKind::Rt)?;
    conclude_with_trace(run, opts, gvt, rt, warnings, share)
}

/// From the engine samples to the findings: the series, the event trace's
/// counts (shared by the ranks), then [`conclude`].
pub fn conclude_with_trace(
    run: RunFiles,
    opts: &RossOptions,
    gvt: EngineSeries,
    rt: Option<EngineSeries>,
    mut warnings: Vec<String>,
    share: &dyn WorkShare,
) -> anyhow::Result<Findings> {
    let series = RunSeries::from_engine(&gvt);
    let grid = gvt_grid(&first_grid(&series));
    let trace = match run.files.path(FileKind::EvTrace) {
        Some(path) => {
            let clock = std::time::Instant::now();
            let (tally, err, ranges) = count_trace(share, &path, &grid)?;
            warnings.extend(err.map(|e| e.to_string()));
            let seconds = clock.elapsed().as_secs_f64();
            Some((
                TraceSummary {
                    path,
                    tally,
                    seconds,
                },
                ranges,
            ))
        }
        None => None,
    };
    conclude(
        run,
        opts,
        (&gvt, series),
        rt.as_ref(),
        trace,
        warnings,
        share,
    )
}

/// The intervals of the first PE: the GVT intervals of the run.
fn first_grid(series: &RunSeries) -> Vec<signals::Interval> {
    series
        .intervals
        .values()
        .next()
        .cloned()
        .unwrap_or_default()
}

/// Reads an engine file whole, rescaling its seconds; a bad record ends
/// it, the samples before it kept.
pub fn read_engine(
    path: &Path,
    kind: FileKind,
    rescale: Option<&ClockRescale>,
) -> anyhow::Result<(EngineSeries, Option<RossError>)> {
    let mut reader = RecordReader::open(path, kind)?;
    let mut series = EngineSeries::default();
    let err = add_records(&mut reader, &mut series, rescale).err();
    Ok((series, err))
}

/// Adds the records `reader` has (to its end, its limit, or for a
/// followed file what has landed) to `series`.
pub fn add_records<R: std::io::Read>(
    reader: &mut RecordReader<R>,
    series: &mut EngineSeries,
    rescale: Option<&ClockRescale>,
) -> Result<u64, RossError> {
    let mut n = 0;
    while let Some(mut rec) = reader.next_record()? {
        if let Some(r) = rescale {
            r.apply(&mut rec);
        }
        series.add(&rec);
        n += 1;
    }
    Ok(n)
}

/// Pass 1 over the event trace, shared as [`share`] describes: returns the
/// summed tally, the error that ended the file, and the proven ranges.
fn count_trace(
    share: &dyn WorkShare,
    path: &Path,
    grid: &[f64],
) -> anyhow::Result<(TraceTally, Option<RossError>, Ranges)> {
    let index = GridIndex::new(grid);
    let count = |ranges: &Ranges| -> anyhow::Result<(TraceTally, Option<RossError>)> {
        let (from, to) = ranges.of(share.rank());
        let mut tally = TraceTally::new(grid.len());
        let mut err = None;
        if to > from {
            let mut reader = RecordReader::open_range(path, FileKind::EvTrace, from, to)?;
            err = tally.read(&mut reader, &index).err();
        }
        Ok((tally, err))
    };
    let mut ranges = guess_ranges(share, path, FileKind::EvTrace)?;
    let (mut tally, mut err) = count(&ranges)?;
    if share.size() > 1 {
        let failed = share.max(&[u64::from(err.is_some())])[0] > 0;
        if failed {
            // A guess was wrong or the file has a bad record: count again
            // on ranges walked from the start.
            ranges = agree_ranges(share, path, FileKind::EvTrace)?;
            (tally, _) = count(&ranges)?;
            err = ranges.error.clone();
        }
    }
    let lps = share.max(&[tally.to_lp.len() as u64])[0] as usize;
    let summed = share.sum(&tally.to_words(lps));
    Ok((TraceTally::from_words(&summed, grid.len()), err, ranges))
}

/// Pass 2: per-interval and per-sender counts of the candidate LPs.
fn count_hot(
    share: &dyn WorkShare,
    path: &Path,
    ranges: &Ranges,
    grid: &[f64],
    lps: &[u32],
    payload_only: bool,
) -> anyhow::Result<HotTally> {
    let (from, to) = ranges.of(share.rank());
    let mut hot = HotTally::new(lps, grid.len());
    if to > from {
        let mut reader = RecordReader::open_range(path, FileKind::EvTrace, from, to)?;
        // The same records as pass 1: an error here was reported there.
        let _ = hot.read(&mut reader, &GridIndex::new(grid), payload_only);
    }
    let per_interval = share.sum(hot.interval_words());
    let senders: Vec<u64> = share
        .all_bytes(&words_to_bytes(&hot.sender_words()))
        .iter()
        .flat_map(|b| bytes_to_words(b))
        .collect();
    let mut total = HotTally::new(lps, grid.len());
    total.per_interval = per_interval;
    total.add_sender_words(&senders);
    Ok(total)
}

fn words_to_bytes(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_to_words(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

/// From the series and the trace's pass-1 tally to the findings: peer
/// comparison, attribution, costs, the hotspots (with pass 2) and the
/// run-wide slowdowns.
pub fn conclude(
    run: RunFiles,
    opts: &RossOptions,
    (engine, gvt): (&EngineSeries, RunSeries),
    rt: Option<&EngineSeries>,
    trace: Option<(TraceSummary, Ranges)>,
    warnings: Vec<String>,
    share: &dyn WorkShare,
) -> anyhow::Result<Findings> {
    let rule = opts.rule;
    let found = peers::find(&gvt, &rule, true);
    let caused = attribution::causes(&found);
    let costs = attribution::costs(&gvt, &found, &caused);
    let rt = rt.map(|r| RunSeries::from_rt(r, gvt.rt_step_floor()));
    let rt_anomalies = match &rt {
        Some(s) => {
            let f = peers::find(s, &rule, false);
            let c = attribution::causes(&f);
            f.into_iter().zip(c).collect()
        }
        None => Vec::new(),
    };
    let grid = first_grid(&gvt);
    let hotspots = match &trace {
        Some((t, ranges)) => {
            let cands = hotspots::candidates(&t.tally, run.model_lps(), &rule);
            if cands.is_empty() {
                Vec::new()
            } else {
                let lps: Vec<u32> = cands.iter().map(|c| c.lp).collect();
                let payload_only = t.tally.payload_only(run.model_lps());
                let hot = count_hot(share, &t.path, ranges, &gvt_grid(&grid), &lps, payload_only)?;
                hotspots::hotspots(&cands, &hot, &grid)
            }
        }
        None => Vec::new(),
    };
    let run_wide = run_wide::find(&gvt, &opts.detector, &found, &hotspots)?;
    let incidents = incidents::find(engine, &hotspots, opts.incident_floor);
    Ok(Findings {
        incidents,
        run,
        rule,
        detector: opts.detector.clone(),
        run_wide,
        gvt_anomalies: found.into_iter().zip(caused).collect(),
        gvt,
        rt,
        rt_anomalies,
        hotspots,
        costs,
        trace: trace.map(|(t, _)| t),
        warnings,
    })
}
