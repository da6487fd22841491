//! Stage 8, trim: drop what no later step can need. The outputs keep only
//! the executions later windows can reach; a stream that has ended gives
//! its step buffers back (rows, executions, verdicts), so later steps and
//! the end-of-run write do not carry them.

use super::StepStreams;
use crate::output::consumer::Outputs;
use crate::run::streams::OwnedStream;

/// Trims the outputs' history and the ended streams' buffers.
pub(super) fn trim(outputs: &mut Outputs, streams: &mut [OwnedStream], this: StepStreams<'_>) {
    for &i in this.active {
        outputs.trim_stream(&streams[i].labelled(i, this.step));
    }
    for s in streams.iter_mut().filter(|s| s.done()) {
        s.release_step_buffers();
    }
}
