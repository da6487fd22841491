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
//! Until the first GVT or real-time sample has been read, following waits
//! for ROSS to create its files and flush (at most the start timeout),
//! and the idle timeout does not run: a follower started before the
//! simulation is not ended by the simulation's slow start. If nothing came
//! by then, the command fails, said once; it never ends successfully
//! having read nothing.
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
use crate::trace::ross::{EngineSeries, FileKind, RecordReader, StatsFiles};
use crate::util::same_on_every_rank::SameOnEveryRank;

/// How `--follow` polls and when it gives up.
#[derive(Debug, Clone, Copy)]
pub struct FollowOptions {
    /// Once a sample was read: end when no file grew for this long.
    pub idle_timeout: Duration,
    /// Fail when no sample was read for this long after the start.
    pub start_timeout: Duration,
    /// Time between polls.
    pub poll: Duration,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions {
            idle_timeout: Duration::from_secs(60),
            start_timeout: Duration::from_secs(600),
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
    /// No sample came within the start timeout.
    NothingCame,
}

impl FollowEnd {
    fn code(self) -> u64 {
        match self {
            FollowEnd::FinalSample => 1,
            FollowEnd::Idle => 2,
            FollowEnd::Signal => 3,
            FollowEnd::NothingCame => 4,
        }
    }

    fn of(code: u64) -> Self {
        match code {
            1 => FollowEnd::FinalSample,
            2 => FollowEnd::Idle,
            4 => FollowEnd::NothingCame,
            _ => FollowEnd::Signal,
        }
    }

    /// For messages.
    pub fn describe(self) -> &'static str {
        match self {
            FollowEnd::FinalSample => "the final real-time samples landed",
            FollowEnd::Idle => "no file grew for the idle timeout",
            FollowEnd::Signal => "a signal asked to stop",
            FollowEnd::NothingCame => "no sample came within the start timeout",
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
    let mut state = FollowState::new();
    let mut waited_said = 0u64;
    let end = loop {
        state.open_new_files(opts, fo)?;
        let new_gvt = state.read_landed_records();
        let grew = state.note_growth();
        if grew {
            state.last_growth = Instant::now();
        }
        if new_gvt && share.rank() == 0 {
            state.report_live(opts, live)?;
        }
        // Rank 0 decides; a signal on any rank stops every rank.
        let mine = state.proposed_end(share.rank(), grew, fo);
        let decided = share.max(&[mine])[0];
        if decided != 0 {
            break FollowEnd::of(decided);
        }
        // Rank 0 says, every 10 s, that it is still waiting for ROSS.
        let waited = state.started.elapsed().as_secs() / 10;
        if share.rank() == 0 && !state.read_any() && waited > waited_said {
            waited_said = waited;
            eprintln!(
                "ross: waiting for ROSS's first samples in {} ({} s; --start-timeout {} s; files \
             there not written within --idle-timeout before the start are an earlier run's)",
                opts.path.display(),
                waited * 10,
                fo.start_timeout.as_secs()
            );
        }
        std::thread::sleep(fo.poll);
    };
    if end == FollowEnd::NothingCame {
        return Err(SameOnEveryRank::wrap(anyhow::anyhow!(
            "{}: no ROSS sample appeared within --start-timeout ({} s): is ROSS running, \
             with --engine-stats, and writing its stats there (ROSS makes stats-output, or \
             <path>-<pid>-<time> when the path exists)?",
            opts.path.display(),
            fo.start_timeout.as_secs()
        )));
    }
    let findings = state.conclude(opts, share)?;
    let empty = |s: &RunSeries| s.intervals.is_empty();
    if empty(&findings.gvt) && findings.rt.as_ref().is_none_or(empty) {
        return Err(SameOnEveryRank::wrap(anyhow::anyhow!(
            "{}: following ended ({}) before any GVT or real-time sample landed: nothing was \
             analysed",
            opts.path.display(),
            end.describe()
        )));
    }
    Ok((findings, end))
}

/// What following keeps from one poll to the next.
struct FollowState {
    /// The run's files, once any has appeared.
    files: Option<RunFiles>,
    /// The engine files read as they grow.
    followed: Vec<Followed>,
    /// The size seen at the last poll of each of the run's files.
    sizes: Vec<(PathBuf, u64)>,
    /// When a file of the run last grew.
    last_growth: Instant,
    /// When following started.
    started: Instant,
    /// The same, on the file system's clock (files last written an idle
    /// timeout before it are an earlier run's).
    since: SystemTime,
    /// The windows reported: (entity, or none for the whole run; signal;
    /// first interval).
    reported: BTreeSet<(Option<Entity>, Signal, usize)>,
    /// (cause, root, occurrences) of the incidents reported.
    reported_incidents: BTreeSet<(&'static str, String, u64)>,
}

impl FollowState {
    /// Nothing found or read yet; the idle clock starts now.
    fn new() -> Self {
        FollowState {
            files: None,
            followed: Vec::new(),
            sizes: Vec::new(),
            last_growth: Instant::now(),
            started: Instant::now(),
            since: SystemTime::now(),
            reported: BTreeSet::new(),
            reported_incidents: BTreeSet::new(),
        }
    }

    /// Picks up the files that appeared since the last poll (ROSS creates
    /// each at its first flush) and starts following the engine files
    /// among them.
    fn open_new_files(&mut self, opts: &RossOptions, fo: &FollowOptions) -> anyhow::Result<()> {
        let found = match &self.files {
            // The run's directory is known: only its files can appear.
            Some(run) => files_in(opts, run.files.dir.clone()),
            None => fresh_files(opts, self.since, fo.idle_timeout),
        };
        let Some(stats) = found else {
            return Ok(());
        };
        // ROSS's stdout is read once, the directory at every poll.
        let run = match self.files.as_mut() {
            Some(run) => {
                run.files = stats;
                run
            }
            None => self.files.insert(RunFiles::with_files(stats, opts)?),
        };
        for kind in [FileKind::Gvt, FileKind::Rt] {
            if self.followed.iter().any(|f| f.kind == kind) {
                continue;
            }
            if let Some(p) = run.files.path(kind) {
                if let Ok(r) = RecordReader::open(&p, kind) {
                    self.followed.push(Followed {
                        kind,
                        reader: r.following(),
                        series: EngineSeries::default(),
                        seen: u64::MAX,
                    });
                }
            }
        }
        Ok(())
    }

    /// Reads the records that landed in the followed files: only up to a
    /// size seen at two polls in a row (see the module doc). Returns
    /// whether new GVT samples came in.
    fn read_landed_records(&mut self) -> bool {
        let Some(run) = &self.files else {
            return false;
        };
        let mut new_gvt = false;
        for f in self.followed.iter_mut() {
            let size = std::fs::metadata(f.reader.path()).map_or(0, |m| m.len());
            if size == f.seen && size > f.reader.offset() {
                // Bytes read ahead at the last poll may have been an
                // unwritten region then.
                let _ = f.reader.refresh();
                f.reader.set_limit(size);
                let n =
                    add_records(&mut f.reader, &mut f.series, run.rescale.as_ref()).unwrap_or(0);
                new_gvt |= n > 0 && f.kind == FileKind::Gvt;
            }
            f.seen = size;
        }
        new_gvt
    }

    /// Whether any of the run's files, the trace included, grew (or
    /// appeared) since the last poll; remembers the sizes for the next.
    fn note_growth(&mut self) -> bool {
        let Some(run) = &self.files else {
            return false;
        };
        let mut grew = false;
        for kind in run.files.kinds.clone() {
            let Some(p) = run.files.path(kind) else {
                continue;
            };
            let size = std::fs::metadata(&p).map_or(0, |m| m.len());
            match self.sizes.iter_mut().find(|(q, _)| *q == p) {
                Some((_, s)) if *s == size => {}
                Some((_, s)) => {
                    *s = size;
                    grew = true;
                }
                None => {
                    self.sizes.push((p, size));
                    grew = true;
                }
            }
        }
        grew
    }

    /// On rank 0, after new GVT samples: compares the series so far and
    /// calls `live` for each peer anomaly, run-wide slowdown and incident
    /// (or new occurrence of one) not reported before.
    fn report_live(
        &mut self,
        opts: &RossOptions,
        live: &mut dyn FnMut(&LiveAnomaly),
    ) -> anyhow::Result<()> {
        let (Some(f), Some(run)) = (
            self.followed.iter().find(|f| f.kind == FileKind::Gvt),
            self.files.as_ref(),
        ) else {
            return Ok(());
        };
        let series = RunSeries::from_engine(&f.series);
        let landed_at = run.files.path(FileKind::Gvt).map_or(0.0, |p| mtime(&p));
        let mut report = |finding: LiveFinding| {
            live(&LiveAnomaly {
                finding,
                found_at: unix_now(),
                landed_at,
            });
        };
        let found = peers::find(&series, &opts.rule, true);
        for a in &found {
            if self
                .reported
                .insert((Some(a.entity), a.signal, a.window.first))
            {
                report(LiveFinding::Peer(a.clone()));
            }
        }
        // An interval's run-wide label depends on the intervals before it
        // only, so a window found now stays found.
        let wide = run_wide::find(&series, &opts.detector, &found, &[])?;
        for w in wide.windows {
            if self.reported.insert((None, w.signal, w.window.first)) {
                report(LiveFinding::RunWide(w));
            }
        }
        // Incidents (the event trace's hotspots come at the end).
        let list = super::incidents::find(&f.series, &[], opts.incident_floor);
        for i in list.incidents {
            let key = (i.cause.name(), i.root.label(), i.occurrences);
            if self.reported_incidents.insert(key) {
                report(LiveFinding::Incident(Box::new(i)));
            }
        }
        Ok(())
    }

    /// This rank's vote on ending (a [`FollowEnd::code`], 0 to go on): a
    /// signal on any rank stops; otherwise only rank 0 decides, on the
    /// final samples having landed with no file growing, or on idleness.
    fn proposed_end(&self, rank: usize, grew: bool, fo: &FollowOptions) -> u64 {
        if signals::received().is_some() {
            FollowEnd::Signal.code()
        } else if rank != 0 {
            0
        } else if !self.read_any() {
            // Nothing to analyse yet: waiting for ROSS is not idleness.
            if self.started.elapsed() >= fo.start_timeout {
                FollowEnd::NothingCame.code()
            } else {
                0
            }
        } else if final_samples_landed(&self.followed) && !grew {
            FollowEnd::FinalSample.code()
        } else if self.last_growth.elapsed() >= fo.idle_timeout {
            FollowEnd::Idle.code()
        } else {
            0
        }
    }

    /// Whether any GVT or real-time sample has been read.
    fn read_any(&self) -> bool {
        self.followed.iter().any(|f| !f.series.pes.is_empty())
    }

    /// Once following ended: reads each engine file to its end as a
    /// finished file and concludes exactly as a post-hoc analysis would.
    fn conclude(mut self, opts: &RossOptions, share: &dyn WorkShare) -> anyhow::Result<Findings> {
        let run = match self.files {
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
            let mut f = match self.followed.iter_mut().position(|f| f.kind == kind) {
                Some(i) => self.followed.swap_remove(i),
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
        conclude_with_trace(run, opts, gvt, rt, warnings, share)
    }
}

/// The stats files of the run to follow: those `opts` names, unless none
/// of them was written within the idle timeout before following started
/// (`since`; a second of slack for coarse file times). Such files are an
/// earlier, finished run: ROSS then writes the new run beside them, into
/// `<path>-<pid>-<time>`, so the directories of that form (or
/// `stats-output*` ones, when `opts` names the directory holding them)
/// written since are taken instead. `None` until the run's first file
/// appears.
fn fresh_files(opts: &RossOptions, since: SystemTime, idle: Duration) -> Option<StatsFiles> {
    let since = since
        .checked_sub(idle + Duration::from_secs(1))
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let fresh = |files: &StatsFiles| {
        files.kinds.iter().any(|&k| {
            files
                .path(k)
                .and_then(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
                .is_some_and(|t| t >= since)
        })
    };
    let at = |path: PathBuf| files_in(opts, path).filter(|f| fresh(f));
    if let Some(files) = at(opts.path.clone()) {
        return Some(files);
    }
    // Directories inside (or beside) the one named that were written since.
    let mut dirs = vec![(opts.path.clone(), "stats-output".to_owned())];
    if let Some(name) = opts.path.file_name() {
        let parent = match opts.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        dirs.push((parent, format!("{}-", name.to_string_lossy())));
    }
    let mut candidates: Vec<PathBuf> = dirs
        .into_iter()
        .flat_map(|(dir, start)| {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(move |p| {
                    p.is_dir()
                        && p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(start.as_str()))
                })
        })
        .collect();
    candidates.sort();
    candidates.into_iter().find_map(at)
}

/// The stats files of the run `opts` asks for, looked for in `path`.
fn files_in(opts: &RossOptions, path: PathBuf) -> Option<StatsFiles> {
    RunFiles::find_files(&RossOptions {
        path,
        ..opts.clone()
    })
    .ok()
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
