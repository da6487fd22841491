//! The stages of one step, in the order the loop runs them, one file each:
//!
//! 1. [`read`](Pipeline::read) — every stream's next step, in parallel;
//! 2. [`agree`](Pipeline::agree) — names first seen in the step, agreed by
//!    all ranks;
//! 3. [`build`](Pipeline::build) — call stacks replayed into executions,
//!    each fed to the partial model as it completes;
//! 4. [`reduce`](Pipeline::reduce) — the partial models of all ranks
//!    reduced into the global model;
//! 5. [`label`](Pipeline::label) — every execution judged against it and
//!    shown to the outputs;
//! 6. [`link`](Pipeline::link) — the step's anomalies of every rank linked
//!    to the delays that caused them (incidents);
//! 7. [`collect`](Pipeline::collect) — the outputs pick what they keep;
//! 8. [`write`](Pipeline::write) — the outputs write, collectively;
//! 9. [`trim`](Pipeline::trim) — what no later step can need is dropped;
//! 10. [`status`](Pipeline::status) — who still has data, who failed or was
//!     signalled; progress.
//!
//! Nothing returns early before the status exchange: every rank must take
//! part in every collective of the step, so errors go to
//! `RunState::failure` and stop all ranks together there.

mod agree;
mod build;
mod collect;
mod label;
mod link;
mod read;
mod reduce;
mod status;
mod trim;
mod write;

use super::pipeline::Pipeline;
use crate::trace::step::TraceStep;

pub(super) use status::Next;

/// What one step carries from stage to stage.
#[derive(Debug, Default)]
pub(super) struct StepWork {
    /// The run's step.
    pub step: u64,
    /// The steps read, by stream index on this rank (until the build).
    pub traces: Vec<(usize, TraceStep)>,
    /// Rows read on this rank.
    pub rows: u64,
    /// The streams that delivered a step.
    pub active: Vec<usize>,
    /// Executions that got a label, and anomalies among them.
    pub labels: crate::run::held::LabelCounts,
    /// Anomalies of earlier steps labelled in this one (held back for a
    /// fuller model), for the incidents.
    pub late_anomalies: Vec<crate::output::consumer::LateLabel>,
}

impl StepWork {
    /// A step about to be read.
    pub fn new(step: u64) -> Self {
        StepWork {
            step,
            ..Default::default()
        }
    }
}
