//! The stages of one step, in the order the loop runs them, one file each:
//!
//! 1. [`read`](read::read) — every stream's next step, in parallel;
//! 2. [`agree`](agree::agree) — names first seen in the step, agreed by
//!    all ranks;
//! 3. [`build`](build::build) — call stacks replayed into executions,
//!    each fed to the partial model as it completes;
//! 4. [`reduce`](reduce::reduce) — the partial models of all ranks
//!    reduced into the global model;
//! 5. [`label`](label::label) — every execution judged against it and
//!    shown to the outputs;
//! 6. [`link`](link::link) — the step's anomalies of every rank linked
//!    to the delays that caused them (incidents);
//! 7. [`collect`](collect::collect) — the outputs pick what they keep;
//! 8. [`write`](write::write) — the outputs write, collectively;
//! 9. [`trim`](trim::trim) — what no later step can need is dropped;
//! 10. [`status`](Pipeline::status) — who still has data, who failed or was
//!     signalled; progress.
//!
//! Each stage is a function of the parts of the state it reads or evolves
//! (its signature says which), returning what it makes for the later
//! stages; [`Pipeline::step`] shows the whole flow. Nothing returns early
//! before the status exchange: every rank must take part in every
//! collective of the step, so errors go to `RunState::failure` and stop
//! all ranks together there.

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
use super::timings::Stage;

pub(super) use status::Next;

/// The streams of this rank that delivered data in step `step` (indices
/// into `RunState::streams`): what the stages after the build walk.
#[derive(Clone, Copy)]
pub(super) struct StepStreams<'s> {
    /// The run's step.
    pub step: u64,
    /// The streams that delivered it.
    pub active: &'s [usize],
}

impl Pipeline<'_> {
    /// Runs one step: every stage in order, timed, each handed the parts
    /// of the state it reads or evolves and what earlier stages made.
    pub(in crate::run) fn step(&mut self, step: u64) -> anyhow::Result<Next> {
        let delivered = self.timed(Stage::Read, |p| {
            let st = &mut p.state;
            read::read(&st.run, &mut st.streams, step, st.failure.is_some())
        });
        let traces = self.timed(Stage::Agree, |p| {
            let st = &mut p.state;
            let parts = (&mut st.names, &mut st.model, &mut st.streams[..]);
            agree::agree(&st.run, step, &delivered.traces, parts);
            delivered.traces
        });
        let active = self.timed(Stage::Build, |p| {
            let st = &mut p.state;
            let into = (&mut st.model, &mut st.profiling, &mut st.issues);
            build::build(
                (st.run.opts, &st.run.pool),
                step,
                traces,
                &mut st.streams,
                into,
            )
        });
        let this = StepStreams {
            step,
            active: &active,
        };
        self.timed(Stage::Reduce, |p| {
            let st = &mut p.state;
            st.totals.active_functions += reduce::reduce(st.run.coll, &st.names, &mut st.model);
        });
        let labelled = self.timed(Stage::Label, |p| {
            let st = &mut p.state;
            let judged = (&mut st.streams[..], &mut st.held, &st.model);
            label::label(
                (st.run.opts, &st.run.pool),
                this,
                judged,
                &st.names,
                &mut p.outputs,
            )
        });
        self.timed(Stage::Link, |p| {
            let st = &mut p.state;
            let read = (&st.model, &st.names);
            link::link(
                &st.run,
                this,
                &labelled.late,
                &mut st.streams,
                read,
                &mut st.links,
            );
        });
        self.timed(Stage::Collect, |p| {
            collect::collect(&mut p.outputs, &p.state, this)
        });
        self.timed(Stage::Write, |p| {
            write::write(&mut p.outputs, &mut p.state, step)
        });
        self.timed(Stage::Trim, |p| {
            trim::trim(&mut p.outputs, &mut p.state.streams, this);
        });
        let status = self.timed(Stage::Status, |p| {
            p.status(delivered.rows, &labelled.counts)
        });
        self.after_status(step, status)
    }
}
