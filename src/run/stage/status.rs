//! Stage 9, status: one small allreduce tells every rank who still has
//! data, who failed and who was signalled, and the step's progress numbers.
//! A failure or a signal anywhere stops every rank here, together, with
//! what was written kept; otherwise the outputs finish the step (live
//! statistics) and rank 0 prints the progress line.

use crate::output::consumer::RunEnd;
use crate::run::attributes::unix_seconds;
use crate::run::collective_failure;
use crate::run::held::LabelCounts;
use crate::run::pipeline::Pipeline;
use crate::sys::signals;

/// Index of the status vector shared every step.
mod field {
    pub const EXECUTIONS: usize = 0;
    pub const ANOMALIES: usize = 1;
    pub const ACTIVE_STREAMS: usize = 2;
    pub const FAILED: usize = 3;
    pub const ROWS: usize = 4;
    /// Some rank received SIGTERM/SIGINT.
    pub const STOP: usize = 5;
    pub const LEN: usize = 6;
}

/// What the loop does after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::run) enum Next {
    /// Some stream still delivers: go on with the next step.
    Step,
    /// Every stream has ended: finish the run.
    Finish,
}

/// The status of a step, summed over all ranks.
pub(in crate::run) struct GlobalStatus([u64; field::LEN]);

impl Pipeline<'_> {
    /// The status exchange (collective).
    /// `rows` were read on this rank and `labels` made in the step.
    pub(in crate::run) fn status(&mut self, rows: u64, labels: &LabelCounts) -> GlobalStatus {
        let st = &mut self.state;
        let failure = self.outputs.take_failure();
        st.fail(failure);
        let mut mine = [0u64; field::LEN];
        mine[field::EXECUTIONS] = labels.labelled;
        mine[field::ANOMALIES] = labels.anomalies;
        mine[field::ACTIVE_STREAMS] = st.streams.iter().filter(|s| !s.done()).count() as u64;
        mine[field::FAILED] = st.failure.is_some() as u64;
        mine[field::ROWS] = rows;
        mine[field::STOP] = signals::received().is_some() as u64;
        let g = st.run.coll.allreduce_sum(&mine);
        GlobalStatus(std::array::from_fn(|i| g[i]))
    }

    /// Acts on the status: stops every rank on a failure or a signal
    /// (the outputs keep what they can), else finishes the step.
    pub(in crate::run) fn after_status(
        &mut self,
        step: u64,
        status: GlobalStatus,
    ) -> anyhow::Result<Next> {
        let g = status.0;
        if g[field::FAILED] > 0 {
            let err = collective_failure(self.state.run.coll, self.state.failure.as_deref());
            self.abort(self.state.totals.steps_done, None);
            return Err(err);
        }
        let any_data = g[field::ROWS] > 0;
        self.outputs
            .step_done(&self.state.context(), step, any_data);
        if g[field::STOP] > 0 {
            let sig = signals::received().map_or("a signal on another AD rank", signals::name);
            // A step whose read the signal interrupted brought no data: it
            // is not one of the steps the file holds.
            let steps = if any_data {
                step + 1
            } else {
                self.state.totals.steps_done
            };
            self.abort(steps, Some(sig.to_owned()));
            let held = match steps {
                0 => "no step".to_owned(),
                n => format!("steps 0..={}", n - 1),
            };
            let when = if any_data { "after" } else { "while reading" };
            anyhow::bail!(
                "stopped by {sig} {when} step {step}; the provenance file holds {held} and says completed = 0"
            );
        }
        let (run, totals) = (&self.state.run, &mut self.state.totals);
        totals.rows += g[field::ROWS];
        totals.executions += g[field::EXECUTIONS];
        totals.anomalies += g[field::ANOMALIES];
        if any_data {
            totals.steps_done = step + 1;
        }
        let (opts, every) = (run.opts, run.opts.progress_every);
        if run.coll.rank() == 0 && !opts.quiet && every > 0 && step % every == 0 && any_data {
            let secs = run.start.elapsed().as_secs_f64().max(1e-9);
            let line = format!(
                "step {step}: {} rows, {} executions, {} anomalies (total {}); {:.2} M rows/s overall",
                g[field::ROWS],
                g[field::EXECUTIONS],
                g[field::ANOMALIES],
                totals.anomalies,
                totals.rows as f64 / secs / 1e6
            );
            // stdout carries only the live statistics with `--stats-out -`.
            if opts.stats_out.as_deref() == Some("-") {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
        }
        Ok(if g[field::ACTIVE_STREAMS] == 0 {
            Next::Finish
        } else {
            Next::Step
        })
    }

    /// Stops the run early: the outputs keep what they can and say the run
    /// did not complete (collective).
    fn abort(&mut self, steps: u64, stopped_by: Option<String>) {
        let st = &self.state;
        let ended_at = st.run.coll.allreduce_max(&[unix_seconds()])[0];
        let end = RunEnd {
            steps,
            ended_at,
            completed: false,
            stopped_by,
        };
        self.outputs.abort(&st.context(), &end);
    }
}
