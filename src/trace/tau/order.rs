//! Per-thread time order of a step's rows: counted, and repaired by a
//! stable sort when a thread's rows arrive out of order.

use crate::trace::format::*;
use crate::trace::issues::{IssueKind, StepIssues};

/// Small map thread id → last timestamp, dense for small ids.
#[derive(Debug, Default)]
pub(super) struct LastTimestamp {
    dense: Vec<u64>,
    sparse: std::collections::HashMap<u64, u64>,
}

impl LastTimestamp {
    fn merge_max(&mut self, other: &LastTimestamp) {
        for (thread, &ts) in other.dense.iter().enumerate() {
            let t = self.get_mut(thread as u64);
            *t = (*t).max(ts);
        }
        for (&thread, &ts) in &other.sparse {
            let t = self.get_mut(thread);
            *t = (*t).max(ts);
        }
    }

    /// Inlined with the growth out of line: rows whose threads interleave
    /// (counter rows, in time order across threads) call this per row.
    #[inline(always)]
    fn get_mut(&mut self, thread: u64) -> &mut u64 {
        let t = thread as usize;
        if thread < 4096 && t < self.dense.len() {
            return &mut self.dense[t];
        }
        self.get_mut_slow(thread)
    }

    #[inline(never)]
    fn get_mut_slow(&mut self, thread: u64) -> &mut u64 {
        if thread < 4096 {
            let t = thread as usize;
            if self.dense.len() <= t {
                self.dense.resize(t + 1, 0);
            }
            &mut self.dense[t]
        } else {
            self.sparse.entry(thread).or_insert(0)
        }
    }
}

/// What the time-order check needs of a row of any kind.
pub(super) trait ThreadTimed: std::fmt::Debug {
    fn thread(&self) -> u64;
    fn timestamp(&self) -> u64;
}

/// Stream rows: the timestamp is the last column of all three kinds.
impl<const W: usize> ThreadTimed for [u64; W] {
    #[inline]
    fn thread(&self) -> u64 {
        self[COL_THREAD]
    }
    #[inline]
    fn timestamp(&self) -> u64 {
        self[W - 1]
    }
}

impl ThreadTimed for FuncEvent {
    #[inline]
    fn thread(&self) -> u64 {
        u64::from(self.thread)
    }
    #[inline]
    fn timestamp(&self) -> u64 {
        self.timestamp
    }
}

// The timestamp is the last column of every stream row kind.
const _: () = assert!(
    FUNC_COL_TIMESTAMP == FUNC_WIDTH - 1
        && COMM_COL_TIMESTAMP == COMM_WIDTH - 1
        && COUNTER_COL_TIMESTAMP == COUNTER_WIDTH - 1
);

/// The per-thread time-order check of one row kind over one step, fed a
/// row at a time: counts rows earlier than their thread's previous row of
/// the step (repaired by sorting) and rows older than the thread's last row
/// of an earlier step (counted, kept).
#[derive(Debug)]
pub(super) struct OrderScan {
    step_last: LastTimestamp,
    /// The thread of the run of rows being scanned (`u64::MAX`: none yet)
    /// and its newest timestamp so far; rows come grouped by thread, so the
    /// maps are touched only when the thread changes.
    thread: u64,
    newest: u64,
    /// The thread's last timestamp of earlier steps.
    previous_step: u64,
    out_of_order: u64,
    first_bad: Option<usize>,
    stale: u64,
    first_stale: Option<usize>,
    /// Rows observed so far (the index of the next one).
    pub(super) seen: usize,
}

impl Default for OrderScan {
    fn default() -> Self {
        OrderScan {
            step_last: LastTimestamp::default(),
            thread: u64::MAX,
            newest: 0,
            previous_step: 0,
            out_of_order: 0,
            first_bad: None,
            stale: 0,
            first_stale: None,
            seen: 0,
        }
    }
}

impl OrderScan {
    /// Takes the next row; `last` holds the threads' last timestamps of
    /// earlier steps.
    #[inline(always)]
    pub(super) fn observe<R: ThreadTimed>(&mut self, row: &R, last: &mut LastTimestamp) {
        let i = self.seen;
        self.seen += 1;
        if row.thread() != self.thread {
            if self.thread != u64::MAX {
                *self.step_last.get_mut(self.thread) = self.newest;
            }
            self.thread = row.thread();
            self.newest = *self.step_last.get_mut(self.thread);
            self.previous_step = *last.get_mut(self.thread);
        }
        let ts = row.timestamp();
        if ts < self.previous_step {
            self.stale += 1;
            self.first_stale.get_or_insert(i);
        }
        if ts < self.newest {
            self.out_of_order += 1;
            self.first_bad.get_or_insert(i);
        } else {
            self.newest = ts;
        }
    }

    /// Counts the issues of the observed `rows` (with an example), sorts
    /// them stably by (thread, timestamp) if some thread is out of order,
    /// and moves `last` on to this step.
    pub(super) fn finish<R: ThreadTimed>(
        mut self,
        rows: &mut [R],
        last: &mut LastTimestamp,
        what: &str,
        issues: &mut StepIssues,
    ) {
        if self.thread != u64::MAX {
            *self.step_last.get_mut(self.thread) = self.newest;
        }
        issues.add(IssueKind::OutOfOrderAcrossSteps, self.stale, || {
            let i = self.first_stale.unwrap_or(0);
            format!(
                "{what} row {i} = {:?} is earlier than its thread's last row of a previous step",
                rows[i]
            )
        });
        if self.out_of_order > 0 {
            issues.add(IssueKind::OutOfOrder, self.out_of_order, || {
                let i = self.first_bad.unwrap_or(0);
                format!(
                    "{what} row {i} = {:?} is earlier than its thread's previous row",
                    rows[i]
                )
            });
            // Stable: rows with equal timestamps keep their stream order.
            rows.sort_by_key(|r| (r.thread(), r.timestamp()));
        }
        last.merge_max(&self.step_last);
    }
}

/// Checks that each thread's rows are in time order; if not, sorts the rows
/// stably by (thread, timestamp). Also counts rows older than the thread's
/// last row of an earlier step (those cannot be repaired here; they are kept).
pub(super) fn order_by_thread<R: ThreadTimed>(
    rows: &mut [R],
    last: &mut LastTimestamp,
    what: &str,
    issues: &mut StepIssues,
) {
    let mut scan = OrderScan::default();
    for row in rows.iter() {
        scan.observe(row, last);
    }
    scan.finish(rows, last, what, issues);
}
