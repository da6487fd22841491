//! `chimbuko-mpi ross`: what slowed a ROSS simulation, from its
//! instrumentation files.

use std::path::PathBuf;

use clap::Args;

use chimbuko_mpi::collectives::Collectives;
use chimbuko_mpi::ross::peers::PeerRule;
use chimbuko_mpi::ross::report::RossReport;
use std::io::Write;
use std::time::Duration;

use chimbuko_mpi::ross::follow::{follow, FollowOptions, LiveAnomaly};
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
    /// The real TSC rate in Hz, when ROSS ran with another `--clock-rate`
    /// (its default on x86_64 is 1e9 whatever the real rate).
    #[arg(long)]
    clock_rate: Option<f64>,
    /// A copy of ROSS's stdout: the clock rate it used, its totals.
    #[arg(long)]
    ross_stdout: Option<PathBuf>,
    /// Write the summary (anomalies, PEs ranked by cost) as JSON here.
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
        clock_rate: a.clock_rate,
        ross_stdout: a.ross_stdout,
    };
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
            let x = &l.anomaly;
            println!(
                "live: {:?} {} at GVT {:.3}..{:.3} (real {:.3}..{:.3} s), score {:.1}",
                x.entity,
                x.signal.name(),
                x.span.gvt_from,
                x.span.gvt_to,
                x.span.real_from,
                x.span.real_to,
                x.score
            );
            if let Some(f) = live_file.as_mut() {
                let line = serde_json::json!({
                    "kind": x.entity.kind(),
                    "pe": x.entity.pe(),
                    "signal": x.signal.name(),
                    "gvt_from": x.span.gvt_from,
                    "gvt_to": x.span.gvt_to,
                    "score": x.score,
                    "landed_at": l.landed_at,
                    "found_at": l.found_at,
                    "latency_s": l.found_at - l.landed_at,
                });
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
        print!("{}", report.text());
        if let Some(p) = &a.summary_out {
            let text = serde_json::to_string_pretty(&report.json)?;
            std::fs::write(p, text + "\n")
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))?;
        }
    }
    Ok(())
}
