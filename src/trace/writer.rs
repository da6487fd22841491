//! Writes TAU-format streams, laid out exactly as TAU's ADIOS2 plugin does
//! (variables, int32 definition counters, string attributes defined on first
//! use). Used by `synth` and by tests that need crafted input.

use std::path::Path;

use super::adios::{AdiosError, Engine, StreamWriter, WriteOptions};
use super::format::*;

/// One step's content.
#[derive(Debug, Clone, Default)]
pub struct StepData {
    /// Function rows (`event_timestamps`).
    pub funcs: Vec<FuncRow>,
    /// Comm rows (`comm_timestamps`).
    pub comms: Vec<CommRow>,
    /// Counter rows (`counter_values`).
    pub counters: Vec<CounterRow>,
    /// Attributes to define in this step (key, value), e.g. `("timer 3", "foo")`.
    pub new_attributes: Vec<(String, String)>,
}

/// Definition totals TAU writes every step as int32 scalars.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefinitionCounts {
    /// `timer_count`: `timer <i>` attributes defined so far.
    pub timers: i32,
    /// `counter_count`: `counter <i>` attributes defined so far.
    pub counters: i32,
    /// `event_type_count`: `event_type <i>` attributes defined so far.
    pub event_types: i32,
    /// `thread_count`: one more than the highest thread id written so far.
    pub threads: i32,
    /// `program_count`: programs (always 1 for one stream).
    pub programs: i32,
    /// `comm_rank_count`: size of the application's MPI communicator (left
    /// at 0).
    pub comm_ranks: i32,
}

/// A TAU stream being written.
pub struct TauStreamWriter {
    writer: StreamWriter,
    counts: DefinitionCounts,
}

impl TauStreamWriter {
    /// Creates the stream. With SST this blocks until a reader connects
    /// (engine parameter `RendezvousReaderCount`, default 1).
    pub fn create(
        path: &Path,
        engine: Engine,
        params: Vec<(String, String)>,
    ) -> Result<Self, AdiosError> {
        let opts = WriteOptions {
            io_name: TAU_IO_NAME.into(),
            params,
        };
        Ok(TauStreamWriter {
            writer: StreamWriter::create(path, engine, &opts)?,
            counts: DefinitionCounts {
                programs: 1,
                threads: 1,
                ..Default::default()
            },
        })
    }

    /// Writes one step. Attribute keys are counted into `timer_count`,
    /// `counter_count` and `event_type_count` as TAU does.
    pub fn write_step(&mut self, step: &StepData) -> Result<(), AdiosError> {
        for (k, v) in &step.new_attributes {
            self.writer.define_attribute(k, v)?;
            if k.starts_with("timer ") {
                self.counts.timers += 1;
            } else if k.starts_with("counter ") {
                self.counts.counters += 1;
            } else if k.starts_with("event_type ") {
                self.counts.event_types += 1;
            }
        }
        let max_thread = step
            .funcs
            .iter()
            .map(|r| r[COL_THREAD])
            .chain(step.counters.iter().map(|r| r[COL_THREAD]))
            .max()
            .map_or(0, |t| t.min(i32::MAX as u64 - 1) as i32 + 1);
        self.counts.threads = self.counts.threads.max(max_thread);
        let c = self.counts;
        let w = &mut self.writer;
        w.begin_step()?;
        w.put_scalar(VAR_FUNC_COUNT, step.funcs.len() as u64)?;
        w.put_rows(VAR_FUNC_ROWS, &step.funcs)?;
        w.put_scalar(VAR_COMM_COUNT, step.comms.len() as u64)?;
        w.put_rows(VAR_COMM_ROWS, &step.comms)?;
        w.put_scalar(VAR_COUNTER_COUNT, step.counters.len() as u64)?;
        w.put_rows(VAR_COUNTER_ROWS, &step.counters)?;
        w.put_scalar(VAR_TIMER_COUNT, c.timers)?;
        w.put_scalar(VAR_COUNTER_DEF_COUNT, c.counters)?;
        w.put_scalar(VAR_EVENT_TYPE_COUNT, c.event_types)?;
        w.put_scalar(VAR_THREAD_COUNT, c.threads)?;
        w.put_scalar(VAR_PROGRAM_COUNT, c.programs)?;
        w.put_scalar(VAR_COMM_RANK_COUNT, c.comm_ranks)?;
        w.end_step()
    }

    /// Closes the stream (readers then see end of stream).
    pub fn close(self) -> Result<(), AdiosError> {
        self.writer.close()
    }
}
