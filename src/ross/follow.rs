//! `ross --follow`: analysing a run while ROSS is still writing its files.
//!
//! ROSS appends to its files at collective flushes (at GVT, when a PE's
//! buffer fills, and at the end). Every AD rank polls the engine files
//! (GVT, RT) and reads each complete record once it has landed:
//!
//! - a size is read from only once it has been seen twice in a row (one
//!   poll apart): a collective write lands rank by rank, and a region a
//!   later rank has not written yet reads as zeros until it has;
//! - a record not yet complete at that size waits for the next poll
//!   ([`RecordReader::following`]), so no half-written record is ever
//!   decoded.
//!
//! After each poll that brought new GVT samples, rank 0 compares the
//! entities with their peers on the series so far and reports the windows
//! it has not reported before (the *live* anomalies, provisional: a later
//! sample can change an entity's usual distance from its peers), the
//! run-wide slowdowns found so far (stable: an interval is judged against
//! the intervals before it only), and each incident or new occurrence of
//! one (provisional: judged against the run's pace so far).
//!
//! The run ends, on every rank at once (rank 0's decision, shared by a
//! reduction), when the final real-time samples (`ts = DBL_MAX`) of every
//! PE have landed and a poll saw no file grow; or when no file grew for
//! the idle timeout; or on SIGTERM/SIGINT. Then every rank reads the
//! engine files to their end as finished files, and the analysis concludes
//! exactly as a post-hoc one: the event trace (which only feeds the
//! hotspot analysis, and whose per-interval counts need the final GVT
//! grid) is counted then, its ranges shared by the ranks. So the findings
//! equal those of the post-hoc analysis of the finished files, and nothing
//! that landed is lost.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use super::peers::{self, PeerAnomaly};
use super::run_wide::{self, RunWideAnomaly};
use super::share::WorkShare;
use super::signals::{Entity, RunSeries, Signal};
use super::{add_records, conclude_with_trace, Findings, RossOptions, RunFiles};
use crate::sys::signals;
use crate::trace::ross::{EngineSeries, FileKind, RecordReader};

/// How `--follow` polls and when it gives up.
#[derive(Debug, Clone, Copy)]
pub struct FollowOptions {
    /// End when no file grew for this long.
    pub idle_timeout: Duration,
    /// Time between polls.
    pub poll: Duration,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions {
            idle_timeout: Duration::from_secs(60),
            poll: Duration::from_millis(200),
        }
    }
}

/// What was found while following.
#[derive(Debug, Clone)]
pub enum LiveFinding {
    /// An entity that stood out from its peers.
    Peer(PeerAnomaly),
    /// A slowdown of the whole run.
    RunWide(RunWideAnomaly),
    /// An incident, or one more occurrence of one (provisional: the run's
    /// usual pace is judged on the samples so far).
    Incident(Box<crate::incidents::Incident>),
}

/// An anomaly found while following, with when it was seen.
#[derive(Debug, Clone)]
pub struct LiveAnomaly {
    /// The window (in the GVT series so far).
    pub finding: LiveFinding,
    /// When it was found (seconds since the Unix epoch).
    pub found_at: f64,
    /// When the GVT file was last written before that (its mtime): the
    /// landing of the flush that showed the anomaly.
    pub landed_at: f64,
}

/// Why following ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowEnd {
    /// The final real-time samples landed.
    FinalSample,
    /// No file grew for the idle timeout.
    Idle,
    /// SIGTERM or SIGINT.
    Signal,
}

impl FollowEnd {
    fn code(self) -> u64 {
        match self {
            FollowEnd::FinalSample => 1,
            FollowEnd::Idle => 2,
            FollowEnd::Signal => 3,
        }
    }

    fn of(code: u64) -> Self {
        match code {
            1 => FollowEnd::FinalSample,
            2 => FollowEnd::Idle,
            _ => FollowEnd::Signal,
        }
    }

    /// For messages.
    pub fn describe(self) -> &'static str {
        match self {
            FollowEnd::FinalSample => "the final real-time samples landed",
            FollowEnd::Idle => "no file grew for the idle timeout",
            FollowEnd::Signal => "a signal asked to stop",
        }
    }
}

/// One engine file being followed.
struct Followed {
    kind: FileKind,
    reader: RecordReader,
    series: EngineSeries,
    /// The size seen at the previous poll.
    seen: u64,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn mtime(path: &std::path::Path) -> f64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Follows the run of `opts` until it ends (see the module doc), calling
/// `live` on rank 0 for each new anomaly; returns the findings (the same
/// on every rank, and the same as a post-hoc analysis of the files) and
/// why following ended.
pub fn follow(
    opts: &RossOptions,
    fo: &FollowOptions,
    share: &dyn WorkShare,
    live: &mut dyn FnMut(&LiveAnomaly),
) -> anyhow::Result<(Findings, FollowEnd)> {
    let mut files: Option<RunFiles> = None;
    let mut followed: Vec<Followed> = Vec::new();
    let mut sizes: Vec<(PathBuf, u64)> = Vec::new();
    let mut last_growth = Instant::now();
    // (entity, or none for the whole run; signal; first interval).
    let mut reported: BTreeSet<(Option<Entity>, Signal, usize)> = BTreeSet::new();
    // (cause, root, occurrences) of the incidents reported.
    let mut reported_incidents: BTreeSet<(&'static str, String, u64)> = BTreeSet::new();
    let end = loop {
        // Files that appeared since the last poll (ROSS creates each at its
        // first flush).
        if let Ok(stats) = RunFiles::find_files(opts) {
            // ROSS's stdout is read once, the directory at every poll.
            let run = match files.as_mut() {
                Some(run) => {
                    run.files = stats;
                    run
                }
                None => files.insert(RunFiles::with_files(stats, opts)?),
            };
            for kind in [FileKind::Gvt, FileKind::Rt] {
                if followed.iter().any(|f| f.kind == kind) {
                    continue;
                }
                if let Some(p) = run.files.path(kind) {
                    if let Ok(r) = RecordReader::open(&p, kind) {
                        followed.push(Followed {
                            kind,
                            reader: r.following(),
                            series: EngineSeries::default(),
                            seen: u64::MAX,
                        });
                    }
                }
            }
        }
        let mut grew = false;
        let mut new_gvt = false;
        if let Some(run) = &files {
            for f in followed.iter_mut() {
                let size = std::fs::metadata(f.reader.path()).map_or(0, |m| m.len());
                if size == f.seen && size > f.reader.offset() {
                    // Bytes read ahead at the last poll may have been an
                    // unwritten region then.
                    let _ = f.reader.refresh();
                    f.reader.set_limit(size);
                    let n = add_records(&mut f.reader, &mut f.series, run.rescale.as_ref())
                        .unwrap_or(0);
                    new_gvt |= n > 0 && f.kind == FileKind::Gvt;
                }
                f.seen = size;
            }
            // Growth of any of the run's files, the trace included.
            for kind in run.files.kinds.clone() {
                let Some(p) = run.files.path(kind) else {
                    continue;
                };
                let size = std::fs::metadata(&p).map_or(0, |m| m.len());
                match sizes.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, s)) if *s == size => {}
                    Some((_, s)) => {
                        *s = size;
                        grew = true;
                    }
                    None => {
                        sizes.push((p, size));
                        grew = true;
                    }
                }
            }
        }
        if grew {
            last_growth = Instant::now();
        }
        if new_gvt && share.rank() == 0 {
            if let (Some(f), Some(run)) = (
                followed.iter().find(|f| f.kind == FileKind::Gvt),
                files.as_ref(),
            ) {
                let series = RunSeries::from_engine(&f.series);
                let landed_at = run.files.path(FileKind::Gvt).map_or(0.0, |p| mtime(&p));
                let found = peers::find(&series, &opts.rule, true);
                for a in &found {
                    if reported.insert((Some(a.entity), a.signal, a.first)) {
                        live(&LiveAnomaly {
                            finding: LiveFinding::Peer(a.clone()),
                            found_at: unix_now(),
                            landed_at,
                        });
                    }
                }
                // An interval's run-wide label depends on the intervals
                // before it only, so a window found now stays found.
                let wide = run_wide::find(&series, &opts.detector, &found, &[])?;
                for w in wide.windows {
                    if reported.insert((None, w.signal, w.first)) {
                        live(&LiveAnomaly {
                            finding: LiveFinding::RunWide(w),
                            found_at: unix_now(),
                            landed_at,
                        });
                    }
                }
                // Incidents (the event trace's hotspots come at the end).
                let list = super::incidents::find(&f.series, &[], opts.incident_floor);
                for i in list.incidents {
                    let key = (i.cause.name(), i.root.label(), i.occurrences);
                    if reported_incidents.insert(key) {
                        live(&LiveAnomaly {
                            finding: LiveFinding::Incident(Box::new(i)),
                            found_at: unix_now(),
                            landed_at,
                        });
                    }
                }
            }
        }
        // Rank 0 decides; a signal on any rank stops every rank.
        let mine = if signals::received().is_some() {
            FollowEnd::Signal.code()
        } else if share.rank() != 0 {
            0
        } else if final_samples_landed(&followed) && !grew {
            FollowEnd::FinalSample.code()
        } else if last_growth.elapsed() >= fo.idle_timeout {
            FollowEnd::Idle.code()
        } else {
            0
        };
        let decided = share.max(&[mine])[0];
        if decided != 0 {
            break FollowEnd::of(decided);
        }
        std::thread::sleep(fo.poll);
    };
    let run = match files {
        Some(r) => r,
        None => RunFiles::find(opts)?,
    };
    // The files are final: read each to its end as a finished file.
    let mut warnings = Vec::new();
    let mut gvt = EngineSeries::default();
    let mut rt = None;
    for kind in [FileKind::Gvt, FileKind::Rt] {
        let Some(path) = run.files.path(kind) else {
            continue;
        };
        let mut f = match followed.iter_mut().position(|f| f.kind == kind) {
            Some(i) => followed.swap_remove(i),
            None => Followed {
                kind,
                reader: RecordReader::open(&path, kind)?,
                series: EngineSeries::default(),
                seen: 0,
            },
        };
        let _ = f.reader.refresh();
        f.reader.stop_following();
        if let Err(e) = add_records(&mut f.reader, &mut f.series, run.rescale.as_ref()) {
            warnings.push(e.to_string());
        }
        match kind {
            FileKind::Gvt => gvt = f.series,
            _ => rt = Some(f.series),
        }
    }
    let findings = conclude_with_trace(run, opts, gvt, rt, warnings, share)?;
    Ok((findings, end))
}

/// Whether every PE of the RT file has written its final sample.
fn final_samples_landed(followed: &[Followed]) -> bool {
    followed
        .iter()
        .find(|f| f.kind == FileKind::Rt)
        .is_some_and(|f| {
            !f.series.pes.is_empty() && f.series.pes.values().all(|p| p.final_pe.is_some())
        })
}
