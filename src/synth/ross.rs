//! `chimbuko-mpi synth ross`: synthetic ROSS instrumentation files of a
//! PHOLD-like optimistic run, with injected anomalies and their ground
//! truth, for tests and benchmarks of the ROSS trace source.
//!
//! The files are `<out>/<prefix>-{gvt,rt,evtrace,model}.bin` in ROSS's
//! byte layout (`docs/ross-format.md`), written as ROSS writes them: each
//! PE's records go into its own buffer, and whenever a record would make a
//! buffer exceed `buffer_size` every buffer is flushed, PE 0 first, so small
//! buffers give many flushes with the PEs' blocks interleaved. Files are
//! written while they are generated, in memory bounded by the buffers, so a
//! run can write gigabytes of event trace. The same scenario and seed give
//! the same bytes. The ground truth is `<out>/truth-ross.csv`.
//!
//! # Scenario format
//!
//! ```toml
//! description = "free text"
//!
//! [ross]                       # every key optional; defaults shown
//! seed = 1
//! pes = 4                      # MPI ranks
//! kps_per_pe = 4               # KP ids local to their PE
//! lps_per_kp = 4               # LP ids global: pe*kps*lps + kp*lps + i
//! intervals = 100              # GVT intervals: one GVT sample per PE each
//! gvt_step = 1.0               # virtual time GVT advances per interval
//! events_per_interval = 256    # each PE's constant batch per interval
//! remote_fraction = 0.25       # events sent to / read from other PEs
//! rollback_fraction = 0.05     # processed events rolled back (baseline)
//! events_per_rollback = 4.0    # rolled-back events per rollback (mean)
//! secondary_fraction = 0.25    # rollbacks that are secondary
//! lookahead = 0.1              # an event's virtual delay: lookahead
//! mean_delay = 1.0             #   + exponential of this mean
//! interval_real_s = 0.02       # real seconds per interval
//! event_s = 2e-5               # real seconds per forward handler
//! rt_interval_s = 0.1          # real-time sampler period (--rt-interval)
//! start_real_time = 1000.0     # real_time at the start (s since boot)
//! buffer_size = 8000000        # per-PE buffer bytes (--buffer-size)
//! prefix = "ross-stats"        # file prefix (--stats-prefix)
//!
//! [ross.files]
//! gvt = true                   # <prefix>-gvt.bin
//! rt = true                    # <prefix>-rt.bin (ends with ts = DBL_MAX)
//! evtrace = "full"             # "none", "full", "rollback" or "commit"
//! model = "none"               # "none", "gvt", "rt" or "both"
//! pe_data = true               # PE / KP / LP records in engine files
//! kp_data = true
//! lp_data = false
//! model_sz = 4                 # model payload bytes (first 4: u32 events
//!                              #   the LP processed since its last sample)
//! event_payload_sz = 0         # event-trace payload bytes (zeros)
//!
//! [[anomaly]]                  # active in the intervals whose starting
//! kind = "slow_pe"             #   GVT is in [gvt_from, gvt_to)
//! pe = 2
//! gvt_from = 40.0
//! gvt_to = 60.0
//! factor = 100.0               # the PE's handlers take factor x longer
//!
//! [[anomaly]]
//! kind = "hotspot_lp"
//! lp = 37                      # global LP id
//! gvt_from = 20.0
//! gvt_to = 30.0
//! factor = 48.0                # events sent to it: factor x an LP's share
//!
//! [[anomaly]]
//! kind = "slow_run"
//! gvt_from = 70.0
//! gvt_to = 80.0
//! factor = 10.0                # every PE's handlers take factor x longer
//!
//! [[anomaly]]
//! kind = "paused_pe"
//! pe = 1
//! gvt_from = 30.0
//! gvt_to = 31.0
//! factor = 0.5                 # seconds stopped per interval, in a handler
//!
//! [[anomaly]]
//! kind = "cpu_heavy_lp"
//! lp = 22
//! gvt_from = 40.0
//! gvt_to = 60.0
//! factor = 200.0               # the LP's handlers take factor x longer
//!
//! [[anomaly]]
//! kind = "remote_storm"
//! gvt_from = 50.0
//! gvt_to = 70.0
//! factor = 20.0                # events per GVT step, most rolled back
//! ```
//!
//! What the anomalies do (the shapes of the reference's §9):
//! - `slow_pe`: the PE's `event_process_s` is `factor` times higher; every
//!   PE's rollback probability is multiplied by `1 + log2(factor)`, and the
//!   other PEs' stragglers mostly come from the slow PE; the interval lasts
//!   as long as the slow PE needs, so GVT advances less per real second and
//!   the others wait in GVT (`gvt_s`) while the slow PE keeps taking
//!   real-time samples.
//! - `hotspot_lp`: the LP receives `(factor - 1) * events_per_interval /
//!   lps_per_pe` extra remote events per interval: its PE's
//!   `nevent_processed` and `pq_qsize` rise in proportion; those events are
//!   rolled back with probability `rollback * sqrt(factor)`, so the
//!   rollback trace's stragglers point at the LP.
//! - `slow_run`: every PE's `event_process_s` is `factor` times higher at
//!   once, so every interval lasts longer in real time (GVT advances less
//!   per real second) while no PE stands out from its peers.
//! - `paused_pe`: the PE is stopped `factor` seconds inside a handler (its
//!   `event_process_s` runs on), so the interval lasts that much longer and
//!   every other PE spends it in GVT.
//! - `cpu_heavy_lp`: the LP's events take `factor` times longer, so its
//!   PE's `event_process_s` grows by the LP's share of its events and the
//!   others wait in GVT. ROSS times no LP: the files show its PE.
//! - `remote_storm`: every PE processes `factor` times its events per GVT
//!   step, the extra ones rolled back: rollbacks per unit of GVT surge on
//!   every PE and GVT advances less per real second, no PE standing out.
//!
//! Counters of engine samples are deltas since the file's previous sample
//! (`pq_qsize` and `time_ahead_gvt` instantaneous), KP and LP sums equal
//! PE sums, the full trace has one record per processed event and the
//! commit trace one per net event, the rollback trace one straggler per
//! primary rollback.

mod emit;
pub mod generator;
mod sampling;
pub mod scenario;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::trace::ross::{FileKind, FlushWriter};
use crate::util::csv::csv_field;
pub use generator::{RossGenerator, RossWriters, Span};
pub use scenario::{RossAnomaly, RossScenario, DEFAULT_ROSS_SCENARIO};

/// What `synth ross` is asked to write (its flags).
#[derive(Debug, Clone, Default)]
pub struct RossOptions {
    /// Scenario file (TOML); without it, `scenarios/ross-phold.toml`.
    pub scenario: Option<PathBuf>,
    /// Output directory.
    pub out: PathBuf,
    /// Override the scenario's seed.
    pub seed: Option<u64>,
    /// Override the number of PEs.
    pub pes: Option<u32>,
    /// Override the number of GVT intervals.
    pub intervals: Option<u32>,
    /// Override the file prefix.
    pub prefix: Option<String>,
    /// Sleep this long after each flush (so a follower reads growing files).
    pub pace_ms: Option<f64>,
}

/// Loads the scenario the options name, applies the overrides and
/// validates the result.
pub fn load_ross_scenario(o: &RossOptions) -> anyhow::Result<RossScenario> {
    let (text, name) = match &o.scenario {
        Some(p) => (
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
            p.display().to_string(),
        ),
        None => (
            DEFAULT_ROSS_SCENARIO.to_owned(),
            "built-in ross-phold".into(),
        ),
    };
    let mut sc = RossScenario::from_toml(&text).with_context(|| format!("scenario {name}"))?;
    if let Some(v) = o.seed {
        sc.ross.seed = v;
    }
    if let Some(v) = o.pes {
        sc.ross.pes = v;
    }
    if let Some(v) = o.intervals {
        sc.ross.intervals = v;
    }
    if let Some(v) = &o.prefix {
        sc.ross.prefix = v.clone();
    }
    sc.validate()
        .with_context(|| format!("scenario {name} (with overrides)"))?;
    Ok(sc)
}

/// One ground-truth row: an injected anomaly and where a detector should
/// find it.
#[derive(Debug, Clone, PartialEq)]
pub struct RossTruthRow {
    /// `slow_pe`, `hotspot_lp` or `slow_run`.
    pub kind: &'static str,
    /// The PE (of the LP, for a hotspot); none for a run-wide slowdown.
    pub pe: Option<u32>,
    /// The LP's KP (local id), for a hotspot.
    pub kp: Option<u32>,
    /// The LP (global id), for a hotspot.
    pub lp: Option<u32>,
    /// GVT at the start of the first affected interval.
    pub gvt_from: f64,
    /// GVT at the end of the last affected interval.
    pub gvt_to: f64,
    /// Real time (seconds, as in the files) at the start of the window.
    pub real_from: f64,
    /// Real time at its end.
    pub real_to: f64,
    /// What the anomaly does to the data.
    pub signal: String,
}

/// The truth rows of a generated run.
pub fn truth_rows(sc: &RossScenario, spans: &[Span]) -> Vec<RossTruthRow> {
    let step = sc.ross.gvt_step;
    let lps = sc.lps_per_pe();
    sc.anomaly
        .iter()
        .zip(spans)
        .map(|(a, s)| {
            let r = sc.intervals_in(a.window());
            let (pe, kp, lp, signal) = match *a {
                RossAnomaly::SlowPe { pe, factor, .. } => (
                    Some(pe),
                    None,
                    None,
                    format!(
                        "event_process_s x{factor} on PE {pe}; rollbacks up on every PE; \
                         GVT per real second down; more RT samples from PE {pe}"
                    ),
                ),
                RossAnomaly::HotspotLp { lp, factor, .. } => (
                    Some(lp / lps),
                    Some(lp % lps / sc.ross.lps_per_kp),
                    Some(lp),
                    format!(
                        "events to LP {lp} x{factor}; PE {} nevent_processed and pq_qsize up; \
                         rollback-trace stragglers with dest_lp {lp}",
                        lp / lps
                    ),
                ),
                RossAnomaly::SlowRun { factor, .. } => (
                    None,
                    None,
                    None,
                    format!(
                        "event_process_s x{factor} on every PE at once; \
                         GVT per real second down; no PE stands out"
                    ),
                ),
                RossAnomaly::PausedPe { pe, factor, .. } => (
                    Some(pe),
                    None,
                    None,
                    format!(
                        "PE {pe} stopped {factor} s per interval inside a handler; \
                         every other PE waits in GVT (gvt_s up)"
                    ),
                ),
                RossAnomaly::CpuHeavyLp { lp, factor, .. } => (
                    Some(lp / lps),
                    Some(lp % lps / sc.ross.lps_per_kp),
                    Some(lp),
                    format!(
                        "LP {lp}'s handlers x{factor}: PE {} event_process_s up, \
                         the others wait in GVT (ROSS does not time LPs)",
                        lp / lps
                    ),
                ),
                RossAnomaly::RemoteStorm { factor, .. } => (
                    None,
                    None,
                    None,
                    format!(
                        "every PE processes x{factor} events per GVT step, most rolled back; \
                         no PE stands out"
                    ),
                ),
            };
            RossTruthRow {
                kind: a.kind(),
                pe,
                kp,
                lp,
                gvt_from: f64::from(r.start) * step,
                gvt_to: f64::from(r.end) * step,
                real_from: s.real_from,
                real_to: s.real_to,
                signal,
            }
        })
        .collect()
}

/// Header of `truth-ross.csv`.
pub const ROSS_TRUTH_HEADER: &str = "kind,pe,kp,lp,gvt_from,gvt_to,real_from,real_to,signal";

/// Writes the ground truth as CSV.
pub fn write_ross_truth(path: &Path, rows: &[RossTruthRow]) -> anyhow::Result<()> {
    let mut f = std::io::BufWriter::new(
        File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    writeln!(f, "{ROSS_TRUTH_HEADER}")?;
    let opt = |v: Option<u32>| v.map_or(String::new(), |v| v.to_string());
    for r in rows {
        writeln!(
            f,
            "{},{},{},{},{},{},{:.6},{:.6},{}",
            r.kind,
            opt(r.pe),
            opt(r.kp),
            opt(r.lp),
            r.gvt_from,
            r.gvt_to,
            r.real_from,
            r.real_to,
            csv_field(&r.signal)
        )?;
    }
    f.flush()?;
    Ok(())
}

/// One file written.
#[derive(Debug, Clone, PartialEq)]
pub struct RossFileReport {
    /// Its kind.
    pub kind: FileKind,
    /// Its path.
    pub path: PathBuf,
    /// Bytes written.
    pub bytes: u64,
    /// Records written.
    pub records: u64,
    /// Collective flushes.
    pub flushes: u64,
}

/// What [`write_ross`] wrote.
#[derive(Debug, Clone)]
pub struct RossReport {
    /// The files, in [`FileKind`] order.
    pub files: Vec<RossFileReport>,
    /// The ground truth.
    pub truth: Vec<RossTruthRow>,
    /// Path of `truth-ross.csv`.
    pub truth_path: PathBuf,
}

/// Generates `sc` (validated) into `out`: the files and the ground truth.
pub fn write_ross(
    sc: &RossScenario,
    out: &Path,
    pace: Option<Duration>,
) -> anyhow::Result<RossReport> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let f = &sc.ross.files;
    let open = |on: bool, kind: FileKind| -> anyhow::Result<Option<FlushWriter<File>>> {
        if !on {
            return Ok(None);
        }
        let path = out.join(kind.file_name(&sc.ross.prefix));
        let file = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let w = FlushWriter::new(file, sc.ross.pes as usize, sc.ross.buffer_size as usize);
        Ok(Some(w.with_pace(pace)))
    };
    let writers = RossWriters {
        gvt: open(f.gvt, FileKind::Gvt)?,
        rt: open(f.rt, FileKind::Rt)?,
        evtrace: open(f.evtrace != scenario::TraceMode::None, FileKind::EvTrace)?,
        model: open(f.model != scenario::ModelMode::None, FileKind::Model)?,
    };
    let (w, spans) = RossGenerator::new(sc, writers)
        .run()
        .with_context(|| format!("writing ROSS files to {}", out.display()))?;
    let mut files = Vec::new();
    for (kind, w) in [
        (FileKind::Gvt, w.gvt),
        (FileKind::Rt, w.rt),
        (FileKind::EvTrace, w.evtrace),
        (FileKind::Model, w.model),
    ] {
        let Some(w) = w else { continue };
        files.push(RossFileReport {
            kind,
            path: out.join(kind.file_name(&sc.ross.prefix)),
            bytes: w.bytes_written(),
            records: w.records(),
            flushes: w.flushes(),
        });
        w.finish()?;
    }
    let truth = truth_rows(sc, &spans);
    let truth_path = out.join("truth-ross.csv");
    write_ross_truth(&truth_path, &truth)?;
    Ok(RossReport {
        files,
        truth,
        truth_path,
    })
}

/// `chimbuko-mpi synth ross`: writes the files and the ground truth and
/// prints a one-line summary.
pub fn run_ross(o: &RossOptions) -> anyhow::Result<()> {
    let sc = load_ross_scenario(o)?;
    let pace = o
        .pace_ms
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1e3));
    let start = Instant::now();
    let rep = write_ross(&sc, &o.out, pace)?;
    let files: Vec<String> = rep
        .files
        .iter()
        .map(|f| {
            format!(
                "{} {:.1} MB {} records {} flushes",
                f.kind.suffix(),
                f.bytes as f64 / 1e6,
                f.records,
                f.flushes
            )
        })
        .collect();
    println!(
        "synth ross: {} PEs x {} intervals into {} (prefix {}): {}; {} injected anomalies ({}); {:.2} s",
        sc.ross.pes,
        sc.ross.intervals,
        o.out.display(),
        sc.ross.prefix,
        files.join(", "),
        rep.truth.len(),
        rep.truth_path.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
