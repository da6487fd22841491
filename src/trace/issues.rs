//! Rejected or repaired input rows of one step, counted per kind with the
//! first example of each, so that one log line per step can say what was
//! wrong and where. Every trace source reports through these.

use std::collections::BTreeMap;

/// Kinds of rejected or repaired input, counted per step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum IssueKind {
    /// Program column implausibly large.
    BadProgram,
    /// Rank column differs from the stream's rank (or is implausible).
    BadRank,
    /// Thread column implausibly large.
    BadThread,
    /// Event-type index undefined, or a comm type in a function row (and vice versa).
    BadEventType,
    /// Function index with no `timer <i>` attribute (yet).
    UnknownFunction,
    /// Counter index with no `counter <i>` attribute (yet).
    UnknownCounter,
    /// Rows of a thread out of time order within the step (repaired by sorting).
    OutOfOrder,
    /// A row earlier than the thread's last row of a previous step (kept).
    OutOfOrderAcrossSteps,
    /// Declared count differs from the array's rows (the smaller is used).
    CountMismatch,
    /// A count says rows exist but the array is absent.
    MissingArray,
    /// An attribute key that looks like ours but does not parse.
    MalformedAttribute,
    /// An array of the wrong type or shape (the whole group is skipped).
    BadArray,
}

impl IssueKind {
    /// Whether an issue of this kind removes the row (the others repair or
    /// only count it).
    pub fn drops_row(self) -> bool {
        matches!(
            self,
            IssueKind::BadProgram
                | IssueKind::BadRank
                | IssueKind::BadThread
                | IssueKind::BadEventType
                | IssueKind::UnknownFunction
                | IssueKind::UnknownCounter
        )
    }

    /// Short description used in log lines and in the `streams` table.
    pub fn name(self) -> &'static str {
        match self {
            IssueKind::BadProgram => "bad program",
            IssueKind::BadRank => "bad rank",
            IssueKind::BadThread => "bad thread",
            IssueKind::BadEventType => "bad event type",
            IssueKind::UnknownFunction => "unknown function index",
            IssueKind::UnknownCounter => "unknown counter index",
            IssueKind::OutOfOrder => "out-of-order rows (sorted)",
            IssueKind::OutOfOrderAcrossSteps => "row older than previous step",
            IssueKind::CountMismatch => "count/array mismatch",
            IssueKind::MissingArray => "missing array",
            IssueKind::MalformedAttribute => "malformed attribute",
            IssueKind::BadArray => "bad array",
        }
    }
}

/// Issues found in one step: a count per kind and the first example of each.
#[derive(Debug, Clone, Default)]
pub struct StepIssues {
    /// Occurrences per kind.
    pub counts: BTreeMap<IssueKind, u64>,
    /// Description of the first occurrence of each kind (array, row, values).
    pub first_example: BTreeMap<IssueKind, String>,
}

impl StepIssues {
    /// Counts one occurrence; `example` is only built for the first one.
    pub fn record(&mut self, kind: IssueKind, example: impl FnOnce() -> String) {
        let c = self.counts.entry(kind).or_insert(0);
        *c += 1;
        if *c == 1 {
            self.first_example.insert(kind, example());
        }
    }

    pub(crate) fn add(&mut self, kind: IssueKind, n: u64, example: impl FnOnce() -> String) {
        if n == 0 {
            return;
        }
        *self.counts.entry(kind).or_insert(0) += n;
        self.first_example.entry(kind).or_insert_with(example);
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Occurrences of `kind` (0 when none).
    pub fn count(&self, kind: IssueKind) -> u64 {
        self.counts.get(&kind).copied().unwrap_or(0)
    }

    /// Rows dropped (issues that remove a row).
    pub fn dropped_rows(&self) -> u64 {
        self.counts
            .iter()
            .filter(|(k, _)| k.drops_row())
            .map(|(_, n)| n)
            .sum()
    }

    /// One line for the log: `stream: step s: 3 unknown function index (first: ...); ...`.
    pub fn summary(&self, stream: &str, step: usize) -> String {
        let parts: Vec<String> = self
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {} (first: {})", k.name(), self.first_example[k]))
            .collect();
        format!("{stream}: step {step}: {}", parts.join("; "))
    }
}
