//! `chimbuko-mpi ross`: what slowed a ROSS simulation, from its
//! instrumentation files.

use std::path::PathBuf;

use clap::Args;

use chimbuko_mpi::collectives::Collectives;
use chimbuko_mpi::detect::choice::{Algorithm, DetectorSettings};
use chimbuko_mpi::ross::peers::PeerRule;
use chimbuko_mpi::ross::report::RossReport;
use std::io::Write;
use std::time::Duration;

use chimbuko_mpi::ross::follow::{follow, FollowOptions, LiveAnomaly, LiveFinding};
use chimbuko_mpi::ross::{analyse_shared, provenance, RossOptions};
use chimbuko_mpi::sys::allocator::peak_rss_kb;
use chimbuko_mpi::sys::signals;
use chimbuko_mpi::util::utc::unix_seconds;

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
    /// run is taken as over.
    #[arg(long, default_value_t = 60.0)]
    idle_timeout: f64,
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
    if !(a.threshold.is_finite() && a.threshold > 0.0) {
        anyhow::bail!("--threshold must be a positive number, got {}", a.threshold);
    }
    if !(a.rel_floor.is_finite() && a.rel_floor >= 0.0) {
        anyhow::bail!(
            "--rel-floor must be a non-negative number, got {}",
            a.rel_floor
        );
    }
    if let Some(hz) = a.clock_rate {
        if !(hz.is_finite() && hz > 0.0) {
            anyhow::bail!("--clock-rate must be a positive number of Hz, got {hz}");
        }
    }
    let opts = RossOptions {
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
    };
    // Bad detector values stop the run here, before any file is read.
    opts.detector.build()?;
    let started = unix_seconds();
    if !(a.idle_timeout.is_finite() && a.idle_timeout > 0.0) {
        anyhow::bail!(
            "--idle-timeout must be a positive number of seconds, got {}",
            a.idle_timeout
        );
    }
    let coll = Collectives::init()?;
    let findings = if a.follow {
        signals::install(coll.rank(), Duration::from_secs(30));
        let fo = FollowOptions {
            idle_timeout: Duration::from_secs_f64(a.idle_timeout),
            poll: Duration::from_millis(a.poll_ms.max(1)),
        };
        let mut live_file = match &a.live_out {
            Some(p) if coll.rank() == 0 => Some(
                std::fs::File::create(p)
                    .map_err(|e| anyhow::anyhow!("creating {}: {e}", p.display()))?,
            ),
            _ => None,
        };
        let mut on_live = |l: &LiveAnomaly| {
            let line = live_line(l);
            println!("{}", live_text(&line));
            if let Some(f) = live_file.as_mut() {
                let _ = writeln!(f, "{line}");
                let _ = f.flush();
            }
        };
        let (findings, end) = follow(&opts, &fo, &coll, &mut on_live)?;
        if coll.rank() == 0 {
            eprintln!("ross: stopped following: {}", end.describe());
        }
        findings
    } else {
        analyse_shared(&opts, &coll)?
    };
    let report = RossReport::new(&findings);
    if !a.no_provenance {
        let out = a.out.clone().unwrap_or_else(|| {
            PathBuf::from(format!("{}-provenance.h5", findings.run.files.prefix))
        });
        provenance::write(
            &out,
            &coll,
            a.overwrite,
            &findings,
            &report.json["run"],
            started,
        )?;
        if coll.rank() == 0 {
            eprintln!("ross: provenance in {}", out.display());
        }
    }
    let peak_mb = coll.allreduce_max(&[peak_rss_kb()])[0] as f64 / 1024.0;
    if let Some(t) = &findings.trace {
        if coll.rank() == 0 {
            let mb = t.tally.bytes as f64 / 1e6;
            eprintln!(
                "ross: event trace: {mb:.1} MB, {} records counted in {:.3} s on {} rank(s) \
                 ({:.0} MB/s); peak RSS {peak_mb:.1} MB (largest rank)",
                t.tally.records,
                t.seconds,
                coll.size(),
                mb / t.seconds.max(1e-9)
            );
        }
    }
    if coll.rank() == 0 {
        print!("{}", report.full_text(&findings));
        if let Some(p) = &a.summary_out {
            std::fs::write(p, report.summary_json_text())
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))?;
        }
    }
    Ok(())
}

/// A live finding as one JSON line of `--live-out`: what, where, and when
/// its flush landed and when it was found.
fn live_line(l: &LiveAnomaly) -> serde_json::Value {
    let (kind, pe, entity, signal, span, score) = match &l.finding {
        LiveFinding::Incident(i) => {
            return serde_json::json!({
                "kind": "incident",
                "incident": i.to_json(),
                "entity": i.root.label(),
                "cause": i.cause.name(),
                "cost_s": i.cost_s,
                "occurrences": i.occurrences,
                "gvt_from": i.window.gvt_from,
                "gvt_to": i.window.gvt_to,
                "real_from": i.window.real_from_s,
                "real_to": i.window.real_to_s,
                "landed_at": l.landed_at,
                "found_at": l.found_at,
                "latency_s": l.found_at - l.landed_at,
            })
        }
        LiveFinding::Peer(x) => (
            x.entity.kind(),
            Some(x.entity.pe()),
            x.entity.label(),
            x.signal,
            x.span,
            x.score,
        ),
        LiveFinding::RunWide(x) => (
            "run",
            x.caused_by_pe,
            "whole run".to_string(),
            x.signal,
            x.span,
            x.score,
        ),
    };
    serde_json::json!({
        "kind": kind,
        "pe": pe,
        "entity": entity,
        "signal": signal.name(),
        "gvt_from": span.gvt_from,
        "gvt_to": span.gvt_to,
        "real_from": span.real_from,
        "real_to": span.real_to,
        "score": score,
        "landed_at": l.landed_at,
        "found_at": l.found_at,
        "latency_s": l.found_at - l.landed_at,
    })
}

/// The line printed for a live finding.
fn live_text(v: &serde_json::Value) -> String {
    let num = |k: &str| v[k].as_f64().unwrap_or(0.0);
    if v["kind"] == "incident" {
        return format!(
            "live: incident: {} at {}, GVT {:.3}..{:.3} (real {:.3}..{:.3} s), {} occurrence(s), {:.3} PE-s so far",
            v["cause"].as_str().unwrap_or(""),
            v["entity"].as_str().unwrap_or(""),
            num("gvt_from"),
            num("gvt_to"),
            num("real_from"),
            num("real_to"),
            v["occurrences"],
            num("cost_s")
        );
    }
    format!(
        "live: {} {} at GVT {:.3}..{:.3} (real {:.3}..{:.3} s), score {:.1}",
        v["entity"].as_str().unwrap_or(""),
        v["signal"].as_str().unwrap_or(""),
        num("gvt_from"),
        num("gvt_to"),
        num("real_from"),
        num("real_to"),
        num("score")
    )
}
