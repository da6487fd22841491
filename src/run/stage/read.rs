//! Stage 1, read: every stream of this rank delivers its next step. All
//! streams are asked first, then waited for, so they are read in parallel
//! (each on its own thread); a stream that ends, stalls or fails stops
//! delivering and the others go on.

use crate::run::pipeline::RunSetup;
use crate::run::streams::OwnedStream;
use crate::trace::step::TraceStep;

/// What the read delivers: each stream's step, by stream index on this
/// rank, and the rows read.
pub(super) struct Delivered {
    /// The steps read.
    pub traces: Vec<(usize, TraceStep)>,
    /// Rows read on this rank.
    pub rows: u64,
}

/// Reads step `step` of every stream still delivering (nothing after a
/// failure on this rank, which stops the run at the status exchange).
pub(super) fn read(
    run: &RunSetup<'_>,
    streams: &mut [OwnedStream],
    step: u64,
    failed: bool,
) -> Delivered {
    let mut delivered = Delivered {
        traces: Vec::new(),
        rows: 0,
    };
    if !failed {
        for s in streams.iter_mut().filter(|s| !s.done()) {
            s.request_step();
        }
        for (i, s) in streams.iter_mut().enumerate() {
            if s.done() {
                continue;
            }
            if let Some(trace) = s.wait_step(run.opts, step) {
                delivered.rows += trace.row_count();
                delivered.traces.push((i, trace));
                if run.prefetch {
                    // The stream's thread reads the next step while this
                    // one is analysed.
                    s.request_step();
                }
            }
        }
    }
    // Every rank has its step: waiting here for the slowest one counts as
    // reading, so that the collectives' times of the later stages are the
    // exchanges themselves, not the ranks' imbalance. The wait sleeps: a
    // stalled stream elsewhere costs this rank no CPU.
    run.coll.idle_barrier();
    delivered
}
