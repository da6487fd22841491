//! Stage 7, write: the outputs write what they buffered (collectively; the
//! provenance file every `--flush-steps` steps), with this rank's cost of
//! the step as a row of the `ad_perf` table.

use super::{Pipeline, StepWork};

impl Pipeline<'_> {
    /// Lets the outputs write.
    pub(in crate::run) fn write(&mut self, work: &StepWork) {
        let rank = self.state.coll.rank();
        let perf = self.state.timings.take_step(rank, work.step);
        self.outputs.write(&self.state.context(), work.step, &perf);
    }
}
