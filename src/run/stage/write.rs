//! Stage 7, write: the outputs write what they buffered (collectively; the
//! provenance file every `--flush-steps` steps), with this rank's cost of
//! the step as a row of the `ad_perf` table.

use crate::output::consumer::Outputs;
use crate::run::pipeline::RunState;

/// Lets the outputs write step `step`, with this rank's cost of the step
/// (taken from the state's timings) as its `ad_perf` row.
pub(super) fn write(outputs: &mut Outputs, st: &mut RunState<'_>, step: u64) {
    let perf = st.timings.take_step(st.run.coll.rank(), step);
    outputs.write(&st.context(), step, &perf);
}
