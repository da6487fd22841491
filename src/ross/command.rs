//! `chimbuko-mpi ross` as a library entry point: the whole command — check
//! the options, analyse (after the run, or following the files while ROSS
//! writes them), write the provenance file, print the summary and write
//! its JSON — given plain options and the AD ranks' collectives. The
//! command line (`src/cli/ross.rs`) only parses flags into a
//! [`RossCommand`].

use crate::util::same_on_every_rank::SameOnEveryRank;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::collectives::Collectives;
use crate::sys::allocator::peak_rss_kb;
use crate::sys::signals;
use crate::util::utc::unix_seconds;

use super::follow::{follow, FollowOptions, LiveAnomaly, LiveFinding};
use super::summary::RossSummary;
use super::{analyse_shared, provenance, Findings, RossOptions};

/// Everything `ross` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct RossCommand {
    /// What to analyse and how.
    pub analysis: RossOptions,
    /// Follow the files while ROSS writes them (`--follow`), or `None` to
    /// analyse them as they are.
    pub follow: Option<FollowOptions>,
    /// With `follow`: append each live finding to this JSON-lines file.
    pub live_out: Option<PathBuf>,
    /// The provenance file to write (`None`: `<prefix>-provenance.h5` in
    /// the current directory), unless `no_provenance`.
    pub out: Option<PathBuf>,
    /// Replace the provenance file if it exists.
    pub overwrite: bool,
    /// Write no provenance file.
    pub no_provenance: bool,
    /// Write the summary as JSON here.
    pub summary_out: Option<PathBuf>,
}

impl RossCommand {
    /// Refuses values that cannot work, before any file is read.
    pub fn check(&self) -> anyhow::Result<()> {
        let rule = &self.analysis.rule;
        if !(rule.threshold.is_finite() && rule.threshold > 0.0) {
            anyhow::bail!(
                "--threshold must be a positive number, got {}",
                rule.threshold
            );
        }
        if !(rule.rel_floor.is_finite() && rule.rel_floor >= 0.0) {
            anyhow::bail!(
                "--rel-floor must be a non-negative number, got {}",
                rule.rel_floor
            );
        }
        if let Some(hz) = self.analysis.clock_rate {
            if !(hz.is_finite() && hz > 0.0) {
                anyhow::bail!("--clock-rate must be a positive number of Hz, got {hz}");
            }
        }
        self.analysis.detector.build()?;
        Ok(())
    }
}

/// Runs `ross` on a communicator of its own (what `chimbuko-mpi ross`
/// does). An error every rank found alike is returned by rank 0 alone,
/// after every rank got there, so that it is said once.
pub fn ross_on_mpi(cmd: &RossCommand) -> anyhow::Result<()> {
    cmd.check()?;
    let coll = Collectives::init()?;
    match run_ross(cmd, &coll) {
        Ok(_) => Ok(()),
        Err(e) if e.is::<SameOnEveryRank>() => {
            coll.barrier();
            if coll.rank() == 0 {
                Err(e)
            } else {
                Ok(())
            }
        }
        Err(e) => Err(e),
    }
}

/// Runs `ross` on the AD ranks of `coll` (every rank calls it): returns
/// the findings, after rank 0 printed the summary and every output was
/// written.
pub fn run_ross(cmd: &RossCommand, coll: &Collectives) -> anyhow::Result<Findings> {
    cmd.check()?;
    let started = unix_seconds();
    let findings = match &cmd.follow {
        Some(fo) => follow_live(cmd, fo, coll)?,
        None => analyse_shared(&cmd.analysis, coll)?,
    };
    let report = RossSummary::new(&findings);
    if !cmd.no_provenance {
        let out = cmd.out.clone().unwrap_or_else(|| {
            PathBuf::from(format!("{}-provenance.h5", findings.run.files.prefix))
        });
        provenance::write(
            &out,
            coll,
            cmd.overwrite,
            &findings,
            &report.json["run"],
            started,
        )?;
        if coll.rank() == 0 {
            eprintln!("ross: provenance in {}", out.display());
        }
    }
    let peak_mb = coll.allreduce_max(&[peak_rss_kb()])[0] as f64 / 1024.0;
    if coll.rank() == 0 {
        if let Some(t) = &findings.trace {
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
        // A reader that stopped early (`ross DIR | head`) gets no panic:
        // the summary JSON is still written, then `main` ends quietly.
        let printed = std::io::stdout()
            .lock()
            .write_all(report.full_text(&findings).as_bytes());
        if let Some(p) = &cmd.summary_out {
            std::fs::write(p, report.summary_json_text())
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))?;
        }
        printed?;
    }
    Ok(findings)
}

/// `--follow`: analyses the files while ROSS writes them, printing each
/// live finding (and appending it to `--live-out`) as it is found.
fn follow_live(
    cmd: &RossCommand,
    fo: &FollowOptions,
    coll: &Collectives,
) -> anyhow::Result<Findings> {
    signals::install(coll.rank(), Duration::from_secs(30));
    let mut live_file = match &cmd.live_out {
        Some(p) if coll.rank() == 0 => Some(
            std::fs::File::create(p)
                .map_err(|e| anyhow::anyhow!("creating {}: {e}", p.display()))?,
        ),
        _ => None,
    };
    let mut on_live = |l: &LiveAnomaly| {
        let line = live_line(l);
        // Not println!: a reader that stopped early must not end the
        // analysis (the final summary's write then ends it quietly).
        let _ = writeln!(std::io::stdout().lock(), "{}", live_text(&line));
        if let Some(f) = live_file.as_mut() {
            let _ = writeln!(f, "{line}");
            let _ = f.flush();
        }
    };
    let (findings, end) = follow(&cmd.analysis, fo, coll, &mut on_live)?;
    if coll.rank() == 0 {
        eprintln!("ross: stopped following: {}", end.describe());
    }
    Ok(findings)
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
            x.window.span,
            x.window.score,
        ),
        LiveFinding::RunWide(x) => (
            "run",
            x.caused_by_pe,
            "whole run".to_string(),
            x.signal,
            x.window.span,
            x.window.score,
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
