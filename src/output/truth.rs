//! Scoring a run against ground truth: the CSVs `synth` writes (or the
//! fixtures' with their column names), matched on program, rank, thread,
//! function, entry and exit.

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;

use crate::collectives::Collectives;
use crate::detect::Label;
use crate::events::names::GlobalNames;
use crate::events::Execution;
use crate::trace::source::StreamSpec;
use crate::util::csv::split_csv;

/// Key of an execution in the ground truth.
type TruthKey = (u32, u64, u64, String, u64, u64);

/// Ground truth to score the run against. The truth files are read only at
/// the end of the run: with SST they are written when the application
/// finishes. During the run each rank just notes its anomalies.
#[derive(Debug, Default)]
pub struct TruthSet {
    /// (truth file, program index of its input).
    files: Vec<(PathBuf, u32)>,
    found: Vec<TruthKey>,
}

/// Precision/recall numbers over all ranks.
#[derive(Debug, Clone, Serialize)]
pub struct TruthCounts {
    /// Injected anomalies (rows of the truth files).
    pub injected: u64,
    /// Injected anomalies the run flagged.
    pub true_positives: u64,
    /// Anomalies the run flagged that were not injected.
    pub false_positives: u64,
    /// Injected anomalies the run missed.
    pub false_negatives: u64,
    /// TP / (TP + FP).
    pub precision: f64,
    /// TP / injected.
    pub recall: f64,
}

impl TruthSet {
    /// One truth CSV per input (synth's, or the fixture's column names).
    pub fn load(paths: &[PathBuf], specs: &[StreamSpec]) -> anyhow::Result<Option<TruthSet>> {
        if paths.is_empty() {
            return Ok(None);
        }
        let programs: Vec<u32> = {
            let mut v: Vec<(usize, u32)> = specs.iter().map(|s| (s.input, s.program)).collect();
            v.dedup();
            v.into_iter().map(|(_, p)| p).collect()
        };
        let files = paths
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), programs.get(i).copied().unwrap_or(i as u32)))
            .collect();
        Ok(Some(TruthSet {
            files,
            found: Vec::new(),
        }))
    }

    fn read_keys(&self) -> anyhow::Result<HashSet<TruthKey>> {
        let mut keys = HashSet::new();
        for (p, program) in &self.files {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading truth {}", p.display()))?;
            let mut lines = text.lines();
            let header = split_csv(lines.next().unwrap_or(""));
            let col = |names: &[&str]| -> anyhow::Result<usize> {
                header
                    .iter()
                    .position(|h| names.contains(&h.trim()))
                    .with_context(|| format!("{}: no column {names:?}", p.display()))
            };
            let (c_rank, c_thread, c_func) = (
                col(&["rank"])?,
                col(&["thread", "tid"])?,
                col(&["function", "func"])?,
            );
            let (c_entry, c_exit) = (
                col(&["entry_us", "entry_ts"])?,
                col(&["exit_us", "exit_ts"])?,
            );
            for (no, line) in lines.enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let f = split_csv(line);
                let num = |c: usize| -> anyhow::Result<u64> {
                    f.get(c)
                        .and_then(|v| v.trim().parse().ok())
                        .with_context(|| {
                            format!("{}:{}: bad number in column {c}", p.display(), no + 2)
                        })
                };
                keys.insert((
                    *program,
                    num(c_rank)?,
                    num(c_thread)?,
                    f.get(c_func).cloned().unwrap_or_default(),
                    num(c_entry)?,
                    num(c_exit)?,
                ));
            }
        }
        Ok(keys)
    }

    /// Notes one execution's final label (only anomalies are kept).
    pub fn observe(&mut self, e: &Execution, label: Label, names: &GlobalNames) {
        if label == Label::Anomaly {
            self.found.push((
                e.program,
                e.rank(),
                e.thread,
                names.functions.name(e.function).to_owned(),
                e.entry,
                e.exit,
            ));
        }
    }

    /// Reads the truth files (every rank) and counts hits over all ranks.
    pub fn reduce(&self, coll: &Collectives) -> anyhow::Result<TruthCounts> {
        let keys = self.read_keys();
        let (tp, fp) = match &keys {
            Ok(k) => {
                let tp = self.found.iter().filter(|f| k.contains(*f)).count() as u64;
                (tp, self.found.len() as u64 - tp)
            }
            Err(_) => (0, 0),
        };
        let g = coll.allreduce_sum(&[tp, fp]);
        let keys = keys?;
        let injected = keys.len() as u64;
        let (tp, fp) = (g[0], g[1]);
        Ok(TruthCounts {
            injected,
            true_positives: tp,
            false_positives: fp,
            false_negatives: injected.saturating_sub(tp),
            precision: if tp + fp > 0 {
                tp as f64 / (tp + fp) as f64
            } else {
                0.0
            },
            recall: if injected > 0 {
                tp as f64 / injected as f64
            } else {
                0.0
            },
        })
    }
}
