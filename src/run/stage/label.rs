//! Stage 5, label: executions held back in earlier steps are judged first,
//! in their original order, then every execution of the step; the outputs
//! see the late labels and each stream's labelled step as they are made.
//!
//! The step's verdicts are pure functions of the execution and the global
//! model, so the streams' steps are judged in parallel on the rank's worker
//! threads, in chunks of executions; what is held, stored and counted is then decided on the main
//! thread in stream order, as it is shown to the outputs.

use rayon::prelude::*;

use crate::detect::{Label, Prediction};
use crate::util::disjoint::many_mut;

use super::StepStreams;
use crate::events::names::GlobalNames;
use crate::output::consumer::{LateLabel, Outputs};
use crate::run::held::{Disposition, HeldExecutions, LabelCounts};
use crate::run::options::RunOptions;
use crate::run::pipeline::ModelState;
use crate::run::streams::OwnedStream;

/// What the label makes besides each stream's verdicts.
pub(super) struct Labelled {
    /// Executions that got a label, and anomalies among them.
    pub counts: LabelCounts,
    /// Anomalies of earlier steps labelled in this one (held back for a
    /// fuller model), for the incidents.
    pub late: Vec<LateLabel>,
}

/// Labels the held executions and every execution of the step against the
/// global model, showing the outputs each stream's labelled step.
pub(super) fn label(
    (opts, pool): (&RunOptions, &rayon::ThreadPool),
    this: StepStreams<'_>,
    (streams, held, model): (&mut [OwnedStream], &mut HeldExecutions, &ModelState),
    names: &GlobalNames,
    outputs: &mut Outputs,
) -> Labelled {
    let step = this.step;
    let mut counts = LabelCounts::default();
    let judge = |e: &_, p| model.judge(opts.use_inclusive, e, p);
    let late = held.judge_held(step, judge, &mut counts);
    outputs.late_labels(&late, names);
    let late_anomalies = late
        .iter()
        .filter(|l| l.verdict.label == crate::detect::Label::Anomaly && !l.rejudged)
        .copied()
        .collect();
    let use_inclusive = opts.use_inclusive;
    let judged = judge_streams(pool, streams, this.active, model, use_inclusive);
    for (&i, judged) in this.active.iter().zip(judged) {
        let Some(s) = streams.get_mut(i) else {
            continue;
        };
        counts.labelled += judged.normal;
        // Only unlabelled executions and anomalies may be held or stored,
        // in execution order, stream after stream: as if every execution
        // had been disposed of here.
        for k in judged.to_dispose {
            let k = k as usize;
            let (e, verdict) = (&s.out.executions[k], s.verdicts[k]);
            let prediction = Prediction::of_execution(&s.predictions, k);
            let disposition = held.dispose(e, prediction, step, step, verdict, &mut counts);
            s.settled[k] = disposition == Disposition::Settled;
        }
    }
    let steps: Vec<_> = this
        .active
        .iter()
        .map(|&i| streams[i].labelled(i, step))
        .collect();
    outputs.labelled_steps(&steps, names, pool);
    Labelled {
        counts,
        late: late_anomalies,
    }
}

/// What judging a stream's step on the worker threads leaves for the main
/// thread (the verdicts themselves go into the stream).
#[derive(Default)]
struct JudgedStream {
    /// How many executions are normal (labelled, final).
    normal: u64,
    /// Indices of the unlabelled and anomalous ones, increasing.
    to_dispose: Vec<u32>,
}

/// The fewest executions in a unit of the verdicts' parallel work.
const MIN_JUDGE_CHUNK: usize = 1024;

/// One chunk of a stream's step to judge: its executions from `start`,
/// their predictions and where their verdicts go.
struct JudgeChunk<'a> {
    /// The stream's place in `active`.
    slot: usize,
    start: usize,
    executions: &'a [crate::events::Execution],
    predictions: &'a [(u32, Prediction)],
    verdicts: &'a mut [crate::detect::Verdict],
    settled: &'a mut [bool],
}

/// Judges every execution of the `active` streams' steps into their
/// `verdicts`, with `settled` true for the normal ones (the others are
/// decided by `HeldExecutions::dispose`), in chunks on the worker threads;
/// one [`JudgedStream`] per active stream, in `active`'s order.
fn judge_streams(
    pool: &rayon::ThreadPool,
    streams: &mut [OwnedStream],
    active: &[usize],
    model: &ModelState,
    use_inclusive: bool,
) -> Vec<JudgedStream> {
    // A stream's step is cut in chunks of executions, about four per
    // thread over the rank's streams, so that a rank with fewer streams
    // than threads still uses them all.
    let total: usize = active
        .iter()
        .filter_map(|&i| streams.get(i))
        .map(|s| s.out.executions.len())
        .sum();
    let chunk = total
        .div_ceil(4 * pool.current_num_threads())
        .max(MIN_JUDGE_CHUNK);
    let mut chunks = Vec::new();
    for (slot, s) in many_mut(streams, active).into_iter().enumerate() {
        let Some(s) = s else { continue };
        let n = s.out.executions.len();
        let unset = crate::detect::Verdict {
            label: Label::Unlabeled,
            score: 0.0,
        };
        // Not cleared first: every verdict and flag is written by its
        // chunk below, so only a step longer than the last one pays for
        // filling (a clear would refill all of them here, on one thread).
        s.verdicts.resize(n, unset);
        s.settled.resize(n, false);
        let (executions, predictions) = (&s.out.executions, &s.predictions);
        let parts = s
            .verdicts
            .chunks_mut(chunk)
            .zip(s.settled.chunks_mut(chunk));
        for (c, (verdicts, settled)) in parts.enumerate() {
            let start = c * chunk;
            let end = start + verdicts.len();
            let from = predictions.partition_point(|p| (p.0 as usize) < start);
            let to = predictions.partition_point(|p| (p.0 as usize) < end);
            chunks.push(JudgeChunk {
                slot,
                start,
                executions: &executions[start..end],
                predictions: &predictions[from..to],
                verdicts,
                settled,
            });
        }
    }
    let judged: Vec<(usize, JudgedStream)> = pool.install(|| {
        chunks
            .into_par_iter()
            .map(|c| (c.slot, judge_chunk(c, model, use_inclusive)))
            .collect()
    });
    // The chunks are in stream order, each stream's in execution order.
    let mut out: Vec<JudgedStream> = (0..active.len()).map(|_| JudgedStream::default()).collect();
    for (slot, j) in judged {
        out[slot].normal += j.normal;
        out[slot].to_dispose.extend(j.to_dispose);
    }
    out
}

/// Judges one chunk of a stream's step.
fn judge_chunk(c: JudgeChunk<'_>, model: &ModelState, use_inclusive: bool) -> JudgedStream {
    let mut judged = JudgedStream::default();
    let mut predicted = c.predictions.iter().peekable();
    for (i, e) in c.executions.iter().enumerate() {
        let k = c.start + i;
        let prediction = predicted.next_if(|p| p.0 as usize == k).map(|p| p.1);
        let verdict = model.judge(use_inclusive, e, prediction);
        let normal = verdict.label == Label::Normal;
        judged.normal += u64::from(normal);
        if !normal {
            judged.to_dispose.push(k as u32);
        }
        c.verdicts[i] = verdict;
        c.settled[i] = normal;
    }
    judged
}
