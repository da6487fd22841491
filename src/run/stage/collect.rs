//! Stage 6, collect: each output picks what it keeps of the step's labelled
//! executions (provenance records with their call stacks and windows), then
//! the collective part (the model snapshots the records refer to).

use super::StepStreams;
use crate::output::consumer::Outputs;
use crate::run::pipeline::RunState;

/// Lets the outputs collect the step's labelled executions, then the
/// collective part (which sees the run as `st` holds it).
pub(super) fn collect(outputs: &mut Outputs, st: &RunState<'_>, this: StepStreams<'_>) {
    for &i in this.active {
        outputs.collect_stream(&st.streams[i].labelled(i, this.step), &st.names);
    }
    outputs.collect(&st.context(), this.step);
}
