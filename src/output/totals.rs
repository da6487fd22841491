//! Per-function counts of final labels (executions, anomalies, unlabeled),
//! summed over ranks at the end for the summary and `--model-out`.

use crate::collectives::Collectives;
use crate::detect::{Label, Verdict};
use crate::events::Execution;

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
                self.record(e, v.label);
            }
        }
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &FunctionTotals) {
        self.ensure(other.executions.len());
        let sums = [
            (&mut self.executions, &other.executions),
            (&mut self.anomalies, &other.anomalies),
            (&mut self.unlabeled, &other.unlabeled),
        ];
        for (to, from) in sums {
            to.iter_mut().zip(from).for_each(|(t, f)| *t += f);
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
