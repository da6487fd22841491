//! Finding the files of a ROSS run: `<dir>/<prefix>-<suffix>.bin`.
//!
//! ROSS writes no index or README: the file kind is only in the suffix, and
//! the prefix is whatever `--stats-prefix` said (`ross-stats` by default).
//! The directory is `--stats-path` (`stats-output` by default), or
//! `<path>-<pid>-<time>` when that already existed, so a run directory may
//! hold several `stats-output*` directories; we take one only when the
//! choice is unambiguous and otherwise say what we found.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::{RossError, RossErrorKind};

/// The kinds of ROSS instrumentation file, by suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// `-gvt.bin`: engine samples taken at GVT.
    Gvt,
    /// `-rt.bin`: engine samples taken on a real-time timer.
    Rt,
    /// `-analysis-lps.bin`: engine samples taken by the analysis LPs at
    /// virtual-time intervals, plus any VT model samples.
    AnalysisLps,
    /// `-evtrace.bin`: the event trace.
    EvTrace,
    /// `-model.bin`: GVT- and real-time model samples.
    Model,
}

impl FileKind {
    /// Every kind, in the order the files are listed.
    pub const ALL: [FileKind; 5] = [
        FileKind::Gvt,
        FileKind::Rt,
        FileKind::AnalysisLps,
        FileKind::EvTrace,
        FileKind::Model,
    ];

    /// The part of the file name after `<prefix>-`, without `.bin`.
    pub fn suffix(self) -> &'static str {
        match self {
            FileKind::Gvt => "gvt",
            FileKind::Rt => "rt",
            FileKind::AnalysisLps => "analysis-lps",
            FileKind::EvTrace => "evtrace",
            FileKind::Model => "model",
        }
    }

    /// Whether the file holds engine samples (PE, KP, LP records).
    pub fn is_engine(self) -> bool {
        matches!(self, FileKind::Gvt | FileKind::Rt | FileKind::AnalysisLps)
    }

    /// The file name of this kind for `prefix`.
    pub fn file_name(self, prefix: &str) -> String {
        format!("{prefix}-{}.bin", self.suffix())
    }

    /// The prefix and kind a file name says, if it is a ROSS stats name.
    pub fn parse_file_name(name: &str) -> Option<(&str, FileKind)> {
        let stem = name.strip_suffix(".bin")?;
        FileKind::ALL.into_iter().find_map(|k| {
            let prefix = stem.strip_suffix(k.suffix())?.strip_suffix('-')?;
            Some((prefix, k))
        })
    }
}

/// The stats files of one run: one directory, one prefix, the kinds found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsFiles {
    /// The directory holding the files.
    pub dir: PathBuf,
    /// The `--stats-prefix` of the run.
    pub prefix: String,
    /// The kinds present (each file may be empty: 0 bytes is no records).
    pub kinds: Vec<FileKind>,
}

impl StatsFiles {
    /// Finds the stats files under `path`: either the stats directory itself
    /// or a directory holding exactly one `stats-output*` directory with
    /// stats files. The prefix is taken from the file names and must be
    /// the only one there (else use [`StatsFiles::find_with_prefix`]).
    pub fn find(path: &Path) -> Result<Self, RossError> {
        Self::find_impl(path, None)
    }

    /// As [`StatsFiles::find`], for the files of one `prefix` only.
    pub fn find_with_prefix(path: &Path, prefix: &str) -> Result<Self, RossError> {
        Self::find_impl(path, Some(prefix))
    }

    /// The path of the file of `kind`, if the run has one.
    pub fn path(&self, kind: FileKind) -> Option<PathBuf> {
        self.kinds
            .contains(&kind)
            .then(|| self.dir.join(kind.file_name(&self.prefix)))
    }

    fn find_impl(path: &Path, prefix: Option<&str>) -> Result<Self, RossError> {
        let not_found = |msg: String| RossError::new(RossErrorKind::NotFound, path, None, msg);
        if !path.exists() {
            return Err(not_found("does not exist".into()));
        }
        if !path.is_dir() {
            return Err(not_found(
                "not a directory: give the ROSS stats directory (--stats-path, \
                 `stats-output` by default) or the directory that holds it"
                    .into(),
            ));
        }
        let mut found = BTreeMap::new();
        let here = runs_in(path, prefix)?;
        if !here.is_empty() {
            found.insert(path.to_path_buf(), here);
        } else {
            for sub in stats_dirs(path)? {
                let runs = runs_in(&sub, prefix)?;
                if !runs.is_empty() {
                    found.insert(sub, runs);
                }
            }
        }
        let wanted = match prefix {
            Some(p) => format!("{p}-{{gvt,rt,analysis-lps,evtrace,model}}.bin"),
            None => "<prefix>-{gvt,rt,analysis-lps,evtrace,model}.bin".into(),
        };
        let mut dirs = found.into_iter();
        let (dir, runs) = match (dirs.next(), dirs.next()) {
            (None, _) => {
                return Err(not_found(format!(
                    "no ROSS stats files ({wanted}) here or in a stats-output* directory"
                )))
            }
            (Some(one), None) => one,
            (Some((a, _)), Some((b, _))) => {
                let mut all = vec![a, b];
                all.extend(dirs.map(|(d, _)| d));
                let list: Vec<String> = all.iter().map(|d| d.display().to_string()).collect();
                return Err(not_found(format!(
                    "several ROSS stats directories: {}; give one of them",
                    list.join(", ")
                )));
            }
        };
        if runs.len() > 1 {
            let names: Vec<&str> = runs.keys().map(String::as_str).collect();
            return Err(RossError::new(
                RossErrorKind::NotFound,
                &dir,
                None,
                format!(
                    "stats files of several runs (prefixes {}); choose one prefix",
                    names.join(", ")
                ),
            ));
        }
        let Some((prefix, mut kinds)) = runs.into_iter().next() else {
            return Err(not_found(format!("no ROSS stats files ({wanted})")));
        };
        kinds.sort();
        Ok(StatsFiles { dir, prefix, kinds })
    }
}

/// The runs (prefix → kinds) whose stats files are directly in `dir`.
fn runs_in(dir: &Path, only: Option<&str>) -> Result<BTreeMap<String, Vec<FileKind>>, RossError> {
    let mut runs: BTreeMap<String, Vec<FileKind>> = BTreeMap::new();
    for entry in read_dir(dir)? {
        let p = entry.path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some((prefix, kind)) = FileKind::parse_file_name(name) else {
            continue;
        };
        if only.is_some_and(|o| o != prefix) || !p.is_file() {
            continue;
        }
        runs.entry(prefix.to_owned()).or_default().push(kind);
    }
    Ok(runs)
}

/// The `stats-output*` directories directly in `dir`, sorted.
fn stats_dirs(dir: &Path) -> Result<Vec<PathBuf>, RossError> {
    let mut out: Vec<PathBuf> = read_dir(dir)?
        .into_iter()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("stats-output"))
        })
        .collect();
    out.sort();
    Ok(out)
}

fn read_dir(dir: &Path) -> Result<Vec<std::fs::DirEntry>, RossError> {
    let entries = std::fs::read_dir(dir).map_err(|e| RossError::io(dir, None, &e))?;
    entries
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RossError::io(dir, None, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_with_dashes_in_the_prefix() {
        assert_eq!(
            FileKind::parse_file_name("ross-stats-analysis-lps.bin"),
            Some(("ross-stats", FileKind::AnalysisLps))
        );
        assert_eq!(
            FileKind::parse_file_name("r1-gvt.bin"),
            Some(("r1", FileKind::Gvt))
        );
        assert_eq!(FileKind::parse_file_name("r1-gvt.txt"), None);
        assert_eq!(FileKind::parse_file_name("gvt.bin"), None);
        for k in FileKind::ALL {
            assert_eq!(
                FileKind::parse_file_name(&k.file_name("a-b")),
                Some(("a-b", k))
            );
        }
    }
}
