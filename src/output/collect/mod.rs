//! The collect stage for the provenance file: turning labelled executions
//! into records (no HDF5 here; `writer` writes what this module collects).
//!
//! For each stream and step, [`StreamProvenance::collect_step`] picks
//! - every anomaly (exclusive runtime at least `min_anomaly_us`), and
//! - normal samples: for each function with an anomaly in this stream and
//!   step, the `normal_samples` normal executions with the lowest score (as
//!   Chimbuko keeps its lowest-score normal event); a function whose
//!   anomaly found no normal execution in its step gets one from the next
//!   step that has one,
//!
//! and builds for each the call stack (the execution, then its parents up
//! to the root), its counter samples, the window of executions around it on
//! its thread (entry order, `window` each side) with their messages, its
//! GPU location and host parent, and the node state at its exit.
//!
//! Everything depends only on the stream's own data, never on which AD rank
//! reads it, so the records are the same for any number of AD ranks.
//!
//! Entry order: ids `(step, idx)` are assigned in ENTRY order within a
//! stream, so sorting by id is sorting by entry. Executions completed this
//! step that also entered this step are placed by direct addressing on
//! `idx` (no sort); the few that entered earlier are sorted apart.
//!
//! Layout: this file picks what to record (anomalies, normal samples);
//! `record` builds one record with its link tables; `window` the window
//! around it and the history kept between steps; `ids` formats event ids.

use std::collections::{BTreeMap, HashMap};

use crate::detect::{Label, Prediction, Verdict};
use crate::events::names::GlobalNames;
use crate::events::{CallStackBuilder, CommDirection, CommEvent, ExecId, Execution, StepEvents};
use crate::trace::format::{Attribute, MONITORING_PREFIX};

use crate::provenance::label_code;
use crate::provenance::records::*;

mod ids;
mod record;
mod window;

pub use record::MULTIPLE_HOST_IDS;

use ids::{id_str, parent_str};
use window::WindowEntry;

/// What to keep.
#[derive(Debug, Clone)]
pub struct ProvenanceOptions {
    /// Executions on each side of a record in its window.
    pub window: usize,
    /// Normal executions kept per function with anomalies, per stream and step.
    pub normal_samples: usize,
    /// Anomalies with a shorter exclusive runtime (µs) are not recorded.
    pub min_anomaly_us: u64,
    /// Keep candidate records for the end-of-run re-judgement (see
    /// [`YOUNG_STEPS`]).
    pub end_candidates: bool,
    /// Executions are judged on their inclusive runtime (else exclusive).
    pub use_inclusive: bool,
}

impl Default for ProvenanceOptions {
    fn default() -> Self {
        ProvenanceOptions {
            window: 5,
            normal_samples: 1,
            min_anomaly_us: 0,
            end_candidates: false,
            use_inclusive: false,
        }
    }
}

/// End-of-run candidates: a function's model is *young* during the first
/// `YOUNG_STEPS` steps in which it runs on a stream. In those steps the
/// slowest [`YOUNG_SLOTS`] executions of each function that were labelled
/// normal get their full record built (call stack, counters, window,
/// messages, GPU rows) into a side buffer; at the end of the run those the
/// final model finds anomalous join the anomalies, marked as found at the
/// end (`label` normal, `final_label` anomaly). The records are built when
/// the step's context is there, because it is gone at the end.
pub const YOUNG_STEPS: u32 = 2;
/// Candidates per function per young step (the slowest).
pub const YOUNG_SLOTS: usize = 2;
/// Most candidate records kept per stream over the run (the memory bound:
/// a record with a window of 5 is a few kB).
pub const MAX_CANDIDATES_PER_STREAM: usize = 64;

/// Per-stream state carried from step to step.
#[derive(Debug, Default)]
pub struct StreamProvenance {
    program: u32,
    rank: u64,
    hostname: String,
    /// The last `window` executions (entry order) completed before this
    /// step, per thread.
    history: HashMap<u64, Vec<WindowEntry>>,
    /// Latest value and timestamp of each monitoring counter.
    node_state: BTreeMap<u32, (u64, u64)>,
    /// Functions whose anomalies still wait for a normal sample.
    outstanding_normal: Vec<u32>,
    /// This step's anomalies (indices into its executions).
    anomalies: Vec<u32>,
    /// By function: 1 + its place in `step_functions`, 0 when it has not
    /// run in this step (4 bytes per function; reset for this step's
    /// functions only, so a step costs what ran in it, not every function).
    slot: Vec<u32>,
    /// The functions that ran in this step, in order of first execution.
    step_functions: Vec<u32>,
    /// Normal-sample candidates: `samples` per function of the step (by
    /// place), the lowest scores first, `cand_len[k]` of them used.
    cand: Vec<Candidate>,
    cand_len: Vec<u32>,
    samples: usize,
    min_anomaly_us: u64,
    /// End-of-run candidates: whether to keep them, the judged runtime.
    end_candidates: bool,
    use_inclusive: bool,
    /// By function: steps in which it ran on this stream so far, counted
    /// up to `YOUNG_STEPS + 1` (all the candidates need; 1 byte).
    steps_with: Vec<u8>,
    /// This step's candidates: [`YOUNG_SLOTS`] per function of the step
    /// (by place), the slowest first, `young_len[k]` of them used.
    young: Vec<YoungCandidate>,
    young_len: Vec<u32>,
    /// Candidate records built on this stream so far.
    young_kept: usize,
}

/// A candidate for the end-of-run re-judgement.
#[derive(Debug, Clone, Copy, Default)]
struct YoungCandidate {
    value: u64,
    id: ExecId,
    index: u32,
}

impl YoungCandidate {
    /// Slower first, then lower id (deterministic).
    fn before(&self, o: &YoungCandidate) -> bool {
        self.value > o.value || (self.value == o.value && self.id < o.id)
    }
}

/// Everything `collect_step` reads.
pub struct StepContext<'a> {
    /// The I/O step being collected.
    pub step: u64,
    /// The stream's executions completed this step, with their attachments.
    pub events: &'a StepEvents,
    /// One per `events.executions`.
    pub verdicts: &'a [Verdict],
    /// The model detector's predictions, `(index in events.executions,
    /// prediction)` sorted by index (empty with the other detectors).
    pub predictions: &'a [(u32, Prediction)],
    /// The stream's call stacks: calls still open, GPU locations.
    pub stream: &'a CallStackBuilder,
    /// The global function and counter names.
    pub names: &'a GlobalNames,
    /// What to keep.
    pub opts: &'a ProvenanceOptions,
}

impl StreamProvenance {
    /// The state of a stream of program `program` and application rank
    /// `rank`, before its first step.
    pub fn new(program: u32, rank: u64) -> Self {
        StreamProvenance {
            program,
            rank,
            ..Default::default()
        }
    }

    /// Notes the stream's host name and returns its new metadata as rows.
    pub fn observe_metadata(&mut self, attrs: &[Attribute], out: &mut Vec<MetadataRow>) {
        for a in attrs {
            let Attribute::Metadata(m) = a else { continue };
            if m.description == "Hostname" && self.hostname.is_empty() {
                self.hostname = m.value.clone();
            }
            out.push(MetadataRow {
                pid: self.program,
                rid: m.rank,
                tid: m.thread,
                descr: fixed(&m.description),
                value: fixed(&m.value),
            });
        }
    }

    /// Starts a step: forgets the previous step's candidates. Then call
    /// [`StreamProvenance::offer`] for every execution as it is labelled,
    /// [`StreamProvenance::collect_step`] once, and
    /// [`StreamProvenance::trim`] once.
    pub fn begin_step(&mut self, opts: &ProvenanceOptions) {
        self.anomalies.clear();
        self.samples = opts.normal_samples;
        self.min_anomaly_us = opts.min_anomaly_us;
        self.end_candidates = opts.end_candidates;
        self.use_inclusive = opts.use_inclusive;
        for f in self.step_functions.drain(..) {
            self.slot[f as usize] = 0;
        }
        self.cand.clear();
        self.cand_len.clear();
        self.young.clear();
        self.young_len.clear();
    }

    /// The place of function `f` among this step's functions, made on its
    /// first execution of the step (which also counts the step for the
    /// end-of-run candidates).
    #[inline]
    fn place(&mut self, f: u32) -> usize {
        let fi = f as usize;
        if fi >= self.slot.len() {
            self.slot.resize((fi + 1).next_power_of_two(), 0);
        }
        if self.slot[fi] > 0 {
            return self.slot[fi] as usize - 1;
        }
        self.step_functions.push(f);
        self.slot[fi] = self.step_functions.len() as u32;
        self.cand
            .extend(std::iter::repeat_n(Candidate::default(), self.samples));
        self.cand_len.push(0);
        if self.end_candidates {
            if fi >= self.steps_with.len() {
                self.steps_with.resize(self.slot.len(), 0);
            }
            let s = &mut self.steps_with[fi];
            *s = (*s + 1).min(YOUNG_STEPS as u8 + 1);
            self.young.extend([YoungCandidate::default(); YOUNG_SLOTS]);
            self.young_len.push(0);
        }
        self.step_functions.len() - 1
    }

    /// Notes an execution for the end-of-run candidates: counts the steps
    /// its function runs in, and keeps it among its function's slowest
    /// this step when it was labelled normal while the model was young.
    #[inline]
    fn offer_young(&mut self, i: usize, e: &Execution, v: Verdict, prediction: Option<Prediction>) {
        let k = self.place(e.function);
        let steps = self.steps_with[e.function as usize];
        if steps as u32 > YOUNG_STEPS || v.label != Label::Normal {
            return;
        }
        let c = YoungCandidate {
            value: match prediction {
                Some(p) => p.ratio_ppm,
                None => e.judged_runtime(self.use_inclusive),
            },
            id: e.id,
            index: i as u32,
        };
        let list = &mut self.young[k * YOUNG_SLOTS..(k + 1) * YOUNG_SLOTS];
        let used = self.young_len[k] as usize;
        if used == YOUNG_SLOTS && !c.before(&list[YOUNG_SLOTS - 1]) {
            return;
        }
        let mut at = used.min(YOUNG_SLOTS - 1);
        list[at] = c;
        while at > 0 && list[at].before(&list[at - 1]) {
            list.swap(at, at - 1);
            at -= 1;
        }
        self.young_len[k] = (used + 1).min(YOUNG_SLOTS) as u32;
    }

    /// Notes execution `i` of the step with its verdict: an anomaly to
    /// record, or a candidate normal sample of its function (the lowest
    /// scores are kept). Done while labelling, so that picking costs no
    /// pass of its own over the step's executions. `prediction`: the model
    /// detector's, whose ratio (not the runtime) ranks the end-of-run
    /// candidates of a modelled function.
    #[inline]
    pub fn offer(&mut self, i: usize, e: &Execution, v: Verdict, prediction: Option<Prediction>) {
        if self.end_candidates {
            self.offer_young(i, e, v, prediction);
        }
        match v.label {
            Label::Anomaly if e.exclusive >= self.min_anomaly_us => {
                self.anomalies.push(i as u32);
            }
            Label::Normal if self.samples > 0 => {
                let k = self.place(e.function);
                let n = self.samples;
                let len = &mut self.cand_len[k];
                let list = &mut self.cand[k * n..(k + 1) * n];
                let c = Candidate {
                    score: v.score,
                    id: e.id,
                    index: i as u32,
                };
                let used = *len as usize;
                if used == n && !c.less(&list[n - 1]) {
                    return;
                }
                // Insertion into a short sorted list.
                let mut at = used.min(n - 1);
                list[at] = c;
                while at > 0 && list[at].less(&list[at - 1]) {
                    list.swap(at, at - 1);
                    at -= 1;
                }
                *len = (used + 1).min(n) as u32;
            }
            _ => {}
        }
    }

    /// Collects the records of one step; returns the number of anomalies
    /// recorded.
    pub fn collect_step(
        &mut self,
        ctx: &StepContext<'_>,
        anomalies: &mut CollectionTables,
        normals: &mut CollectionTables,
        candidates: &mut CollectionTables,
    ) -> u64 {
        let execs = &ctx.events.executions;
        let picked_anomalies = std::mem::take(&mut self.anomalies);
        let picked_normals = self.pick_normals(execs, &picked_anomalies);
        for &i in &picked_anomalies {
            self.record(ctx, i as usize, anomalies);
        }
        for &i in &picked_normals {
            self.record(ctx, i as usize, normals);
        }
        // End-of-run candidates, in function order (deterministic), those
        // already recorded as normal samples left out.
        let mut by_function: Vec<(u32, usize)> = (0..self.young_len.len())
            .map(|k| (self.step_functions[k], k))
            .collect();
        by_function.sort_unstable();
        for (_, p) in by_function {
            for k in 0..self.young_len[p] as usize {
                if self.young_kept >= MAX_CANDIDATES_PER_STREAM {
                    break;
                }
                let i = self.young[p * YOUNG_SLOTS + k].index;
                if picked_normals.binary_search(&i).is_err() {
                    self.record(ctx, i as usize, candidates);
                    self.young_kept += 1;
                }
            }
        }
        self.update_node_state(ctx.events);
        let n = picked_anomalies.len() as u64;
        self.anomalies = picked_anomalies;
        n
    }

    /// The trim of a step, after its records are collected: keeps, per
    /// thread, the last `window` executions a later step's windows can
    /// need, and forgets the rest.
    pub fn trim(&mut self, events: &StepEvents, verdicts: &[Verdict], window: usize) {
        self.update_history(events, verdicts, window);
    }

    /// Normal samples for the functions with anomalies this step (and those
    /// still waiting from earlier steps), from the candidates offered.
    fn pick_normals(&mut self, execs: &[Execution], anomalies: &[u32]) -> Vec<u32> {
        let mut wanted: Vec<u32> = anomalies
            .iter()
            .map(|&i| execs[i as usize].function)
            .chain(self.outstanding_normal.drain(..))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let n = self.samples;
        let mut normals = Vec::new();
        if n == 0 {
            return normals;
        }
        for f in wanted {
            let place = match self.slot.get(f as usize) {
                Some(&s) if s > 0 => s as usize - 1,
                _ => {
                    self.outstanding_normal.push(f);
                    continue;
                }
            };
            let used = self.cand_len[place] as usize;
            if used == 0 {
                self.outstanding_normal.push(f);
            }
            let start = place * n;
            normals.extend(self.cand[start..start + used].iter().map(|c| c.index));
        }
        normals.sort_unstable();
        normals
    }

    fn update_node_state(&mut self, events: &StepEvents) {
        for s in &events.node_state {
            let cur = self.node_state.entry(s.counter).or_insert((s.value, s.ts));
            if s.ts >= cur.1 {
                *cur = (s.value, s.ts);
            }
        }
    }

    /// Program index of the stream.
    pub fn program(&self) -> u32 {
        self.program
    }

    /// Application rank of the stream.
    pub fn rank(&self) -> u64 {
        self.rank
    }
}

/// A candidate normal sample.
#[derive(Debug, Clone, Copy, Default)]
struct Candidate {
    score: f64,
    id: ExecId,
    index: u32,
}

impl Candidate {
    /// Lower score first, then lower id (deterministic).
    fn less(&self, o: &Candidate) -> bool {
        match self.score.total_cmp(&o.score) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => self.id < o.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_format_like_their_display() {
        for (rank, step, idx) in [
            (0, 0, 0),
            (3, 17, 123_456),
            (9, 10, 100),
            (u64::MAX, u64::MAX, u64::MAX),
        ] {
            let id = ExecId { rank, step, idx };
            for pid in [0, 7, u32::MAX] {
                assert_eq!(id_str(pid, &id), fixed(&format!("{pid}:{id}")), "{id}");
            }
        }
    }
}
