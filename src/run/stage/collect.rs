//! Stage 6, collect: each output picks what it keeps of the step's labelled
//! executions (provenance records with their call stacks and windows), then
//! the collective part (the model snapshots the records refer to).

use super::{Pipeline, StepWork};

impl Pipeline<'_> {
    /// Lets the outputs collect the step.
    pub(in crate::run) fn collect(&mut self, work: &StepWork) {
        let st = &self.state;
        for &i in &work.active {
            self.outputs
                .collect_stream(&st.streams[i].labelled(i, work.step), &st.names);
        }
        self.outputs.collect(&st.context(), work.step);
    }
}
