//! Per-function counts of final labels (executions, anomalies, unlabeled),
//! summed over ranks at the end for the summary and `--model-out`.

use crate::collectives::Collectives;
use crate::detect::{Label, Verdict};
use crate::events::Execution;
use crate::util::slots::Touched;

/// Per-function counts of this rank, reduced at the end.
#[derive(Debug, Default, Clone)]
pub struct FunctionTotals {
    /// Executions per function.
    pub executions: Vec<u64>,
    /// Anomalies per function.
    pub anomalies: Vec<u64>,
    /// Executions that could not be labelled, per function.
    pub unlabeled: Vec<u64>,
}

impl FunctionTotals {
    /// Makes room for functions `0..n`.
    #[inline]
    pub fn ensure(&mut self, n: usize) {
        if self.executions.len() < n {
            self.grow(n);
        }
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        self.executions.resize(n, 0);
        self.anomalies.resize(n, 0);
        self.unlabeled.resize(n, 0);
    }

    /// Adds the counts of the functions in `step` (see [`StepCounts`]).
    pub fn add_step(&mut self, step: &StepCounts) {
        for (f, c) in step.by_function.iter() {
            let f = f as usize;
            self.ensure(f + 1);
            self.executions[f] += c.executions;
            self.anomalies[f] += c.anomalies;
            self.unlabeled[f] += c.unlabeled;
        }
    }

    /// Counts one execution with its final label.
    #[inline]
    pub fn record(&mut self, e: &Execution, label: Label) {
        let f = e.function as usize;
        self.ensure(f + 1);
        self.executions[f] += 1;
        match label {
            Label::Anomaly => self.anomalies[f] += 1,
            Label::Unlabeled => self.unlabeled[f] += 1,
            Label::Normal => {}
        }
    }

    /// The totals over all ranks (collective).
    pub fn reduce(&self, coll: &Collectives) -> FunctionTotals {
        let n = self.executions.len();
        let mut words = Vec::with_capacity(3 * n);
        words.extend_from_slice(&self.executions);
        words.extend_from_slice(&self.anomalies);
        words.extend_from_slice(&self.unlabeled);
        let g = coll.allreduce_sum(&words);
        FunctionTotals {
            executions: g[..n].to_vec(),
            anomalies: g[n..2 * n].to_vec(),
            unlabeled: g[2 * n..].to_vec(),
        }
    }
}

/// One stream's counts of a step, for the functions it ran only (a
/// stream's step touches few of a run's functions): made on a worker
/// thread, added to the rank's [`FunctionTotals`] on the main thread.
#[derive(Debug, Default)]
pub struct StepCounts {
    by_function: Touched<LabelTally>,
}

/// Executions, anomalies and unlabelled executions of one function.
#[derive(Debug, Default, Clone, Copy)]
struct LabelTally {
    executions: u64,
    anomalies: u64,
    unlabeled: u64,
}

impl StepCounts {
    /// Counts the executions whose label is final (`settled`) with their
    /// verdicts' labels.
    pub fn record_settled(
        &mut self,
        executions: &[Execution],
        verdicts: &[Verdict],
        settled: &[bool],
    ) {
        for ((e, v), &settled) in executions.iter().zip(verdicts).zip(settled) {
            if settled {
                let t = self.by_function.entry(e.function);
                t.executions += 1;
                match v.label {
                    Label::Anomaly => t.anomalies += 1,
                    Label::Unlabeled => t.unlabeled += 1,
                    Label::Normal => {}
                }
            }
        }
    }

    /// Forgets the counts (keeping the buffers).
    pub fn clear(&mut self) {
        self.by_function.reset(|t| *t = LabelTally::default());
    }
}
