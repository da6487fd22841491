//! Stage 8, trim: drop what no later step can need. The outputs keep only
//! the executions later windows can reach; a stream that has ended gives
//! its step buffers back (rows, executions, verdicts), so later steps and
//! the end-of-run write do not carry them.

use super::{Pipeline, StepWork};

impl Pipeline<'_> {
    /// Trims the outputs' history and the ended streams' buffers.
    pub(in crate::run) fn trim(&mut self, work: &StepWork) {
        for &i in &work.active {
            self.outputs
                .trim_stream(&self.state.streams[i].labelled(i, work.step));
        }
        for s in self.state.streams.iter_mut().filter(|s| s.done()) {
            s.release_step_buffers();
        }
    }
}
