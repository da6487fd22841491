//! Problems found while replaying a stream's rows on its call stacks,
//! counted per kind with the first example of each (so one log line per
//! step can say what was wrong and where).

use std::collections::BTreeMap;

/// Kinds of broken or noteworthy input met while rebuilding executions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum EventIssueKind {
    /// EXIT while the thread has no open call (skipped).
    EmptyStackExit,
    /// EXIT of a function that is not open on the thread at all (skipped).
    MismatchedExit,
    /// Function index not in the [`IndexMap`] (row skipped).
    UnknownFunction,
    /// Counter index not in the [`IndexMap`] (row skipped).
    UnknownCounter,
    /// Event-type index unknown, or not valid for the row's kind (an ENTRY
    /// in a comm row, a SEND in a function row); row skipped.
    UnknownEventType,
    /// EXIT earlier than the entry of the call(s) it would close (skipped).
    ExitBeforeEntry,
    /// Comm row while the thread had no open call (dropped).
    UnattachedComm,
    /// Counter row while the thread had no open call (dropped).
    UnattachedCounter,
    /// A GPU execution with more than one correlation id (the first is used).
    MultipleCorrelationIdsOnGpu,
    /// A call closed because an EXIT for a call below it arrived (repair;
    /// the call is emitted with exit = that EXIT's timestamp).
    ClosedImplicitly,
    /// ENTRY beyond [`EventOptions::max_depth`] (skipped).
    DepthLimit,
    /// A correlation id seen twice on the same side (CPU or GPU) before the
    /// other side arrived; the newer execution replaces the older one.
    DuplicateCorrelationId,
    /// An unmatched correlation id forgotten after
    /// [`EventOptions::correlation_window_steps`] or because of
    /// [`EventOptions::max_pending_correlations`].
    CorrelationExpired,
    /// Informational, from [`CallStackBuilder::finish`]: calls still open at the
    /// end of the stream (normal: TAU's monitoring thread never exits).
    OpenAtEnd,
    /// Informational, from [`CallStackBuilder::finish`]: correlation ids never
    /// matched.
    UnmatchedCorrelationAtEnd,
}

impl EventIssueKind {
    /// Short description used in log lines and issue counts.
    pub fn name(self) -> &'static str {
        use EventIssueKind::*;
        match self {
            EmptyStackExit => "EXIT with empty stack",
            MismatchedExit => "EXIT of a function that is not open",
            UnknownFunction => "unknown function index",
            UnknownCounter => "unknown counter index",
            UnknownEventType => "unknown or misplaced event type",
            ExitBeforeEntry => "EXIT before ENTRY",
            UnattachedComm => "comm event outside any call",
            UnattachedCounter => "counter event outside any call",
            MultipleCorrelationIdsOnGpu => "GPU execution with several correlation ids",
            ClosedImplicitly => "call closed implicitly",
            DepthLimit => "ENTRY beyond the depth limit",
            DuplicateCorrelationId => "duplicate correlation id",
            CorrelationExpired => "unmatched correlation id expired",
            OpenAtEnd => "call still open at end of stream",
            UnmatchedCorrelationAtEnd => "correlation id unmatched at end of stream",
        }
    }

    /// False for kinds that describe normal situations rather than broken
    /// input (what is still open or unmatched when the stream ends).
    pub fn is_problem(self) -> bool {
        !matches!(
            self,
            EventIssueKind::OpenAtEnd | EventIssueKind::UnmatchedCorrelationAtEnd
        )
    }
}

/// Issues met in one step (or at the end of a stream): a count per kind,
/// with the first example and the thread it happened on.
#[derive(Debug, Clone, Default)]
pub struct EventIssues {
    /// Occurrences per kind.
    pub counts: BTreeMap<EventIssueKind, u64>,
    /// Description of the first occurrence of each kind (the offending row).
    pub first_example: BTreeMap<EventIssueKind, String>,
    /// Thread of the first example, where the issue belongs to a thread.
    pub first_thread: BTreeMap<EventIssueKind, u64>,
}

impl EventIssues {
    /// Counts one occurrence; `example` is only built for the first one, so
    /// a flood of broken rows costs no formatting.
    pub fn record(
        &mut self,
        kind: EventIssueKind,
        thread: Option<u64>,
        example: impl FnOnce() -> String,
    ) {
        self.add(kind, 1, thread, example);
    }

    /// Counts `n` occurrences (nothing when `n == 0`).
    pub fn add(
        &mut self,
        kind: EventIssueKind,
        n: u64,
        thread: Option<u64>,
        example: impl FnOnce() -> String,
    ) {
        if n == 0 {
            return;
        }
        let c = self.counts.entry(kind).or_insert(0);
        *c += n;
        if let std::collections::btree_map::Entry::Vacant(e) = self.first_example.entry(kind) {
            e.insert(example());
            if let Some(t) = thread {
                self.first_thread.insert(kind, t);
            }
        }
    }

    /// Adds another set (its first examples only where this one has none).
    pub fn merge(&mut self, other: &EventIssues) {
        for (&kind, &n) in &other.counts {
            let thread = other.first_thread.get(&kind).copied();
            self.add(kind, n, thread, || {
                other.first_example.get(&kind).cloned().unwrap_or_default()
            });
        }
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Occurrences of `kind` (0 when none).
    pub fn count(&self, kind: EventIssueKind) -> u64 {
        self.counts.get(&kind).copied().unwrap_or(0)
    }

    /// Occurrences of every kind together.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// True if any kind other than the informational ones was counted.
    pub fn has_problems(&self) -> bool {
        self.counts.keys().any(|k| k.is_problem())
    }

    /// One log line, e.g.
    /// `stream: step 3: thread 0: 2 EXIT with empty stack (first: ...); ...`
    /// (the thread is the one of the first example).
    pub fn summary(&self, stream: &str, step: u64) -> String {
        let parts: Vec<String> = self
            .counts
            .iter()
            .map(|(k, n)| {
                let thread = self
                    .first_thread
                    .get(k)
                    .map(|t| format!("thread {t}: "))
                    .unwrap_or_default();
                let example = self.first_example.get(k).map_or("", String::as_str);
                format!("{thread}{n} {} (first: {example})", k.name())
            })
            .collect();
        format!("{stream}: step {step}: {}", parts.join("; "))
    }
}
