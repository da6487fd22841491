//! The source-neutral data of one step: rows of function, communication and
//! counter events, the name definitions that became visible, the counts
//! the source declared and the issues found while reading it.

use super::format::*;
use super::issues::StepIssues;

/// Counts a source declares beside its rows (TAU's scalars); `None` where
/// absent or where the source has no such count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeclaredCounts {
    /// `timer_event_count`: function rows declared for the step.
    pub timer_events: Option<u64>,
    /// `comm_count`: comm rows declared for the step.
    pub comm_events: Option<u64>,
    /// `counter_event_count`: counter rows declared for the step.
    pub counter_events: Option<u64>,
    /// `timer_count`: functions defined so far.
    pub timers: Option<i64>,
    /// `counter_count`: counters defined so far.
    pub counters: Option<i64>,
    /// `event_type_count`: event types defined so far.
    pub event_types: Option<i64>,
    /// `thread_count`: threads seen so far.
    pub threads: Option<i64>,
    /// `program_count`: programs defined so far.
    pub programs: Option<i64>,
    /// `comm_rank_count`: size of the application's MPI communicator.
    pub comm_ranks: Option<i64>,
}

/// One step of a trace source, validated: what every source delivers to the
/// analysis. Rows use the layouts of [`super::format`] (TAU's, which other
/// sources fill too); names are defined by [`Attribute`]s with the stream's
/// local indices.
#[derive(Debug, Clone, Default)]
pub struct TraceStep {
    /// Step number, counted from 0 in the order steps were read.
    pub step: usize,
    /// The program every row of the stream belongs to (`--program-idx`).
    pub program: u64,
    /// Function rows, checked and narrowed (see [`FuncEvent`]).
    pub funcs: Vec<FuncEvent>,
    /// Comm and counter rows as the stream has them, program column set.
    pub comms: Vec<CommRow>,
    /// Counter rows as the stream has them, program column set.
    pub counters: Vec<CounterRow>,
    /// Attributes that became visible in this step (first step: all so far).
    pub new_attributes: Vec<Attribute>,
    /// The counts the source declared for this step.
    pub declared: DeclaredCounts,
    /// Rows rejected or repaired while reading the step, by kind.
    pub issues: StepIssues,
}

/// One step's rows as a stream has them, before any check: how tests and
/// the fuzz targets hand a step to `StepValidator::accept` (TAU) without an
/// ADIOS2 stream.
#[derive(Debug, Clone, Default)]
pub struct RawStep {
    /// Step number, counted from 0.
    pub step: usize,
    /// Function rows (`event_timestamps`).
    pub funcs: Vec<FuncRow>,
    /// Comm rows (`comm_timestamps`).
    pub comms: Vec<CommRow>,
    /// Counter rows (`counter_values`).
    pub counters: Vec<CounterRow>,
    /// Attributes that became visible in this step.
    pub new_attributes: Vec<Attribute>,
}

impl TraceStep {
    /// Rows of all three kinds.
    pub fn row_count(&self) -> u64 {
        (self.funcs.len() + self.comms.len() + self.counters.len()) as u64
    }

    /// The function rows in the stream's layout (dumps, tests).
    pub fn func_rows(&self) -> Vec<FuncRow> {
        self.funcs.iter().map(|e| e.to_row(self.program)).collect()
    }

    /// Smallest and largest timestamp over all rows of the step.
    pub fn time_range(&self) -> Option<(u64, u64)> {
        let ts = self
            .funcs
            .iter()
            .map(|r| r.timestamp)
            .chain(self.comms.iter().map(|r| r[COMM_COL_TIMESTAMP]))
            .chain(self.counters.iter().map(|r| r[COUNTER_COL_TIMESTAMP]));
        ts.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((a, b)) => Some((a.min(t), b.max(t))),
        })
    }
}
