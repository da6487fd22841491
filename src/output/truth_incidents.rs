//! Incidents scored against the ground truth of a coupled synthetic run
//! (`incidents-<binary>.csv`, written by `synth` beside `truth-<binary>.csv`).
//!
//! The truth lists each injected occurrence's root execution and the waits
//! it caused on other ranks. A listed occurrence's root is right when it is
//! an injected root (same rank and function, overlapping in time); a truth
//! root is found when some occurrence's root is it. A truth wait that the
//! run linked (it is a member of some occurrence) is right when that
//! occurrence's root is the truth root of its injection, and wrong when it
//! is a member elsewhere — or a root itself. A wait that two injections
//! lengthened is right in the occurrence of either.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::incidents::{IncidentList, Role};
use crate::util::csv::split_csv;

/// One row of the incident truth.
#[derive(Debug, Clone, PartialEq)]
pub struct TruthExecution {
    /// The injected occurrence it belongs to.
    pub incident: u64,
    /// Root or wait.
    pub is_root: bool,
    /// Application rank.
    pub rank: u64,
    /// Function name.
    pub function: String,
    /// ENTRY (µs).
    pub entry: u64,
    /// EXIT (µs).
    pub exit: u64,
}

/// The incident truth of a run.
#[derive(Debug, Clone, Default)]
pub struct IncidentTruth {
    /// Every row.
    pub rows: Vec<TruthExecution>,
}

/// How the listed incidents compare with the truth.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IncidentScore {
    /// Injected root occurrences.
    pub roots: u64,
    /// Of them, the root of some listed occurrence.
    pub roots_found: u64,
    /// Listed occurrences.
    pub occurrences: u64,
    /// Of them, rooted at an injected root.
    pub occurrences_true: u64,
    /// Truth waits the run linked into some occurrence.
    pub waits_linked: u64,
    /// Of them, in the occurrence of their own root.
    pub waits_right: u64,
    /// Truth waits that are the root of a listed occurrence.
    pub waits_as_roots: u64,
    /// Root recall: `roots_found / roots`.
    pub root_recall: f64,
    /// Root precision: `occurrences_true / occurrences`.
    pub root_precision: f64,
}

impl IncidentTruth {
    /// The truth file beside a `truth-<binary>.csv`, if there is one.
    pub fn beside(truth: &Path) -> Option<PathBuf> {
        let name = truth.file_name()?.to_str()?;
        let binary = name.strip_prefix("truth-")?.strip_suffix(".csv")?;
        let p = truth.with_file_name(format!("incidents-{binary}.csv"));
        p.exists().then_some(p)
    }

    /// Reads `incidents-<binary>.csv`.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut rows = Vec::new();
        for (n, line) in text.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let f = split_csv(line);
            let num = |i: usize| -> anyhow::Result<u64> {
                f.get(i)
                    .and_then(|v| v.trim().parse().ok())
                    .with_context(|| {
                        format!("{} line {}: bad field {}", path.display(), n + 1, i + 1)
                    })
            };
            rows.push(TruthExecution {
                incident: num(0)?,
                is_root: f.get(1).is_some_and(|r| r == "root"),
                rank: num(2)?,
                function: f.get(4).cloned().unwrap_or_default(),
                entry: num(6)?,
                exit: num(7)?,
            });
        }
        Ok(IncidentTruth { rows })
    }

    /// Scores the listed incidents of `list` (TAU incidents of program 0).
    pub fn score(&self, list: &IncidentList) -> IncidentScore {
        let same = |t: &TruthExecution, rank: Option<u64>, f: Option<&str>, from: u64, to: u64| {
            rank == Some(t.rank)
                && f == Some(t.function.as_str())
                && from <= t.exit
                && t.entry <= to
        };
        let roots: Vec<&TruthExecution> = self.rows.iter().filter(|r| r.is_root).collect();
        let root_of: BTreeMap<u64, &TruthExecution> =
            roots.iter().map(|r| (r.incident, *r)).collect();
        // Every listed occurrence's root, by (incident id, occurrence).
        let mut occ_roots = BTreeMap::new();
        for i in &list.incidents {
            for m in i.members.iter().filter(|m| m.role == Role::Root) {
                occ_roots.insert((i.id, m.occurrence), m);
            }
        }
        let span = |m: &crate::incidents::Member| {
            (
                m.window.t_from_us.unwrap_or(0),
                m.window.t_to_us.unwrap_or(0),
            )
        };
        let truth_of_member = |m: &crate::incidents::Member, is_root: bool| {
            let (from, to) = span(m);
            self.rows.iter().find(|t| {
                t.is_root == is_root
                    && same(t, m.entity.rank, m.entity.function.as_deref(), from, to)
            })
        };
        let mut s = IncidentScore {
            roots: roots.len() as u64,
            occurrences: occ_roots.len() as u64,
            ..Default::default()
        };
        s.roots_found = roots
            .iter()
            .filter(|t| {
                occ_roots.values().any(|m| {
                    let (from, to) = span(m);
                    same(t, m.entity.rank, m.entity.function.as_deref(), from, to)
                })
            })
            .count() as u64;
        s.occurrences_true = occ_roots
            .values()
            .filter(|m| truth_of_member(m, true).is_some())
            .count() as u64;
        s.waits_as_roots = occ_roots
            .values()
            .filter(|m| truth_of_member(m, false).is_some())
            .count() as u64;
        for i in &list.incidents {
            for m in i.members.iter().filter(|m| m.role != Role::Root) {
                let (from, to) = span(m);
                // A wait two injections lengthened is listed under both:
                // either root is right.
                let causes: Vec<&TruthExecution> = self
                    .rows
                    .iter()
                    .filter(|t| {
                        !t.is_root && same(t, m.entity.rank, m.entity.function.as_deref(), from, to)
                    })
                    .filter_map(|w| root_of.get(&w.incident).copied())
                    .collect();
                if causes.is_empty() {
                    continue;
                }
                s.waits_linked += 1;
                let right = occ_roots.get(&(i.id, m.occurrence)).is_some_and(|o| {
                    let (from, to) = span(o);
                    causes
                        .iter()
                        .any(|t| same(t, o.entity.rank, o.entity.function.as_deref(), from, to))
                });
                s.waits_right += u64::from(right);
            }
        }
        let ratio = |a: u64, b: u64| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        s.root_recall = ratio(s.roots_found, s.roots);
        s.root_precision = ratio(s.occurrences_true, s.occurrences);
        s
    }
}
