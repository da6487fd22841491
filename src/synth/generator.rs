//! Generates the event timeline of one simulated application rank.
//!
//! Each thread runs the scenario's root function in a loop under the wrapper
//! functions (`main`), walking the call tree with an explicit stack. Steps
//! are cut on thread 0's event count; the other threads contribute every
//! event up to thread 0's last timestamp, so calls freely span steps, as in
//! real TAU output.

use std::collections::HashMap;

use super::family::{Child, FamilyDraw};
use super::law::{self, as_count, CallInputs};
use super::local_names::LocalNames;
use super::rng::Rng;
use super::scenario::{CommKind, Partner, Scenario};
use crate::trace::format::*;
use crate::trace::writer::StepData;

/// Local event-type index of ENTRY (`event_type 0`; TAU's usual order).
pub const ET_ENTRY: u64 = 0;
/// Local event-type index of EXIT (`event_type 1`).
pub const ET_EXIT: u64 = 1;
/// Local event-type index of SEND (`event_type 2`).
pub const ET_SEND: u64 = 2;
/// Local event-type index of RECV (`event_type 3`).
pub const ET_RECV: u64 = 3;

/// One injected anomalous execution (a row of the ground-truth CSV).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruthRow {
    /// Application rank of the execution.
    pub rank: u64,
    /// Thread of the execution.
    pub thread: u64,
    /// Step in which the execution completed (its EXIT row's step).
    pub step: u64,
    /// Function name.
    pub function: String,
    /// ENTRY timestamp (µs since the epoch).
    pub entry_us: u64,
    /// EXIT timestamp (µs since the epoch).
    pub exit_us: u64,
    /// Exclusive (self) time drawn for it, anomaly included (µs).
    pub exclusive_us: u64,
}

/// The scenario resolved to indices.
struct Compiled {
    names: Vec<String>,
    children: Vec<Vec<Child>>,
    /// Families by the index `Child::Pick` holds.
    families: Vec<FamilyDraw>,
    root: usize,
    wrappers: Vec<usize>,
    counter_names: Vec<String>,
    /// Per function: the global index of each of its counters, in spec order.
    counters: Vec<Vec<usize>>,
    /// Per function: which of its counters its `runtime_law` reads.
    law_counter: Vec<Option<usize>>,
}

impl Compiled {
    /// The function a child call calls.
    fn resolve(&self, child: &Child, rng: &mut Rng, (rank, step): (u64, u64)) -> usize {
        match child {
            Child::Fixed(f) => *f,
            Child::Pick(fam) => self.families[*fam].draw(rng, rank, step),
        }
    }

    fn new(sc: &Scenario) -> Compiled {
        let idx: HashMap<&str, usize> = sc
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_str(), i))
            .collect();
        let mut counter_names: Vec<String> = Vec::new();
        let mut counters = Vec::new();
        for f in &sc.functions {
            let mut mine = Vec::new();
            for c in &f.counters {
                let ci = match counter_names.iter().position(|n| *n == c.name) {
                    Some(i) => i,
                    None => {
                        counter_names.push(c.name.clone());
                        counter_names.len() - 1
                    }
                };
                mine.push(ci);
            }
            counters.push(mine);
        }
        let families: Vec<FamilyDraw> =
            sc.families.iter().map(|f| FamilyDraw::new(sc, f)).collect();
        let child = |name: &str| match idx.get(name) {
            Some(&i) => Child::Fixed(i),
            None => Child::Pick(sc.families.iter().position(|f| f.name == name).unwrap_or(0)),
        };
        Compiled {
            names: sc.functions.iter().map(|f| f.name.clone()).collect(),
            children: sc
                .functions
                .iter()
                .map(|f| {
                    f.children
                        .iter()
                        .flat_map(|c| std::iter::repeat_n(child(&c.function), c.calls as usize))
                        .collect()
                })
                .collect(),
            families,
            root: idx[sc.root.as_str()],
            wrappers: sc.wrappers.iter().map(|w| idx[w.as_str()]).collect(),
            counter_names,
            counters,
            law_counter: sc.functions.iter().map(law::law_counter).collect(),
        }
    }
}

/// An open call.
struct Frame {
    func: usize,
    entry: u64,
    /// Self time between consecutive child calls (the last gap takes the remainder).
    chunk: u64,
    last_chunk: u64,
    self_time: u64,
    next_child: usize,
    anomalous: bool,
    wrapper: bool,
    /// Value of the `runtime_law` counter, drawn at entry because the self
    /// time depends on it, written at exit like every counter sample.
    law_counter: Option<u64>,
}

/// A function event about to be emitted.
#[derive(Clone, Copy)]
struct Pending {
    ts: u64,
    entry: bool,
    func: usize,
}

struct ThreadGen {
    thread: u64,
    rng: Rng,
    stack: Vec<Frame>,
    next: Option<Pending>,
    closing: bool,
}

/// Generator of one rank's steps.
pub struct RankGenerator<'a> {
    sc: &'a Scenario,
    c: Compiled,
    rank: u64,
    threads: Vec<ThreadGen>,
    names: LocalNames,
    step: u64,
    /// Anomalies injected so far, in the order their EXIT rows were written.
    pub truth: Vec<TruthRow>,
}

/// Output rows of one step before attribute bookkeeping.
#[derive(Default)]
struct Rows {
    funcs: Vec<FuncRow>,
    comms: Vec<CommRow>,
    counters: Vec<CounterRow>,
}

impl<'a> RankGenerator<'a> {
    /// The generator of rank `rank` of scenario `sc`, before its first step.
    pub fn new(sc: &'a Scenario, rank: u64) -> Self {
        let c = Compiled::new(sc);
        // Start times differ slightly per rank, like real processes.
        let start = sc.start_time_us + rank * 7;
        let threads = (0..sc.threads)
            .map(|t| ThreadGen {
                thread: t,
                rng: Rng::new(&[sc.seed, rank, t]),
                stack: Vec::new(),
                next: Some(Pending {
                    ts: start + t * 3,
                    entry: true,
                    func: *c.wrappers.first().unwrap_or(&c.root),
                }),
                closing: false,
            })
            .collect();
        RankGenerator {
            sc,
            rank,
            threads,
            names: LocalNames::new(sc.shuffle_indices, c.names.len(), c.counter_names.len()),
            c,
            step: 0,
            truth: Vec::new(),
        }
    }

    /// The rank's metadata and event-type attributes (defined in step 0).
    fn initial_attributes(&self) -> Vec<(String, String)> {
        let r = self.rank;
        let node = r / self.sc.ranks_per_node.max(1);
        let mut a = vec![
            ("event_type 0".to_string(), "ENTRY".to_string()),
            ("event_type 1".into(), "EXIT".into()),
            ("event_type 2".into(), "SEND".into()),
            ("event_type 3".into(), "RECV".into()),
            ("program_name 0".into(), self.sc.binary.clone()),
            (
                format!("MetaData:{r}:0:Hostname"),
                format!("{}{:03}", self.sc.hostname_prefix, node),
            ),
            (
                format!("MetaData:{r}:0:Local Rank"),
                (r % self.sc.ranks_per_node.max(1)).to_string(),
            ),
            (
                format!("MetaData:{r}:0:CPU Cores"),
                self.sc.ranks_per_node.max(1).to_string(),
            ),
        ];
        for t in 0..self.sc.threads {
            a.push((format!("MetaData:{r}:{t}:Thread Type"), "CPU".into()));
        }
        a
    }

    /// Generates the next step; `None` after the last one.
    pub fn next_step(&mut self) -> Option<StepData> {
        if self.step >= self.sc.steps {
            return None;
        }
        let last = self.step + 1 == self.sc.steps;
        let mut rows = Rows::default();
        let mut attrs = if self.step == 0 {
            self.initial_attributes()
        } else {
            Vec::new()
        };
        let share = (self.sc.events_in_step(self.step) / self.sc.threads).max(2);
        // Thread 0 decides where the step ends.
        let mut boundary = 0u64;
        let mut ti = 0;
        self.run_thread(
            ti,
            &mut rows,
            &mut attrs,
            |_, n| n < share,
            &mut boundary,
            last,
        );
        ti += 1;
        while ti < self.threads.len() {
            let b = boundary;
            self.run_thread(
                ti,
                &mut rows,
                &mut attrs,
                move |ts, _| ts <= b,
                &mut 0,
                last,
            );
            ti += 1;
        }
        rows.comms.sort_by_key(|r| r[COMM_COL_TIMESTAMP]);
        rows.counters.sort_by_key(|r| r[COUNTER_COL_TIMESTAMP]);
        self.step += 1;
        Some(StepData {
            funcs: rows.funcs,
            comms: rows.comms,
            counters: rows.counters,
            new_attributes: attrs,
        })
    }

    /// Emits events of thread `ti` while `more(next_ts, emitted)` holds; in
    /// the last step, then closes the current root call and the wrappers.
    fn run_thread(
        &mut self,
        ti: usize,
        rows: &mut Rows,
        attrs: &mut Vec<(String, String)>,
        more: impl Fn(u64, u64) -> bool,
        last_ts: &mut u64,
        last_step: bool,
    ) {
        let mut emitted = 0u64;
        while let Some(p) = self.threads[ti].next {
            if !more(p.ts, emitted) {
                break;
            }
            self.emit(ti, p, rows, attrs);
            *last_ts = p.ts;
            emitted += 1;
        }
        if last_step {
            self.threads[ti].closing = true;
            while let Some(p) = self.threads[ti].next {
                self.emit(ti, p, rows, attrs);
            }
        }
    }

    fn define_function(&mut self, f: usize, attrs: &mut Vec<(String, String)>) -> u64 {
        let (local, new) = self.names.function(f);
        if new {
            attrs.push((format!("timer {local}"), self.c.names[f].clone()));
        }
        local
    }

    fn define_counter(&mut self, ci: usize, attrs: &mut Vec<(String, String)>) -> u64 {
        let (local, new) = self.names.counter(ci);
        if new {
            attrs.push((format!("counter {local}"), self.c.counter_names[ci].clone()));
        }
        local
    }

    /// Emits the pending event `p` of thread `ti` and computes the next one.
    fn emit(&mut self, ti: usize, p: Pending, rows: &mut Rows, attrs: &mut Vec<(String, String)>) {
        let (rank, thread) = (self.rank, self.threads[ti].thread);
        let local = self.define_function(p.func, attrs);
        let et = if p.entry { ET_ENTRY } else { ET_EXIT };
        rows.funcs.push([0, rank, thread, et, local, p.ts]);
        if p.entry {
            self.open_call(ti, p, rows);
        } else {
            self.close_call(ti, p, rows, attrs);
        }
    }

    fn open_call(&mut self, ti: usize, p: Pending, rows: &mut Rows) {
        let f = p.func;
        let is_wrapper = self.threads[ti].stack.len() < self.c.wrappers.len();
        let nchildren = self.c.children[f].len() as u64;
        let inputs = law::draw_inputs(&self.sc.functions[f], &mut self.threads[ti].rng);
        let (self_time, anomalous, bytes) = if is_wrapper {
            (2 * (nchildren + 1), false, inputs.bytes)
        } else {
            self.draw_self_time(ti, f, nchildren, inputs)
        };
        let chunk = self_time / (nchildren + 1);
        let last_chunk = self_time - chunk * nchildren;
        let (rank, thread) = (self.rank, self.threads[ti].thread);
        // Messages happen early in the call, before its first child.
        let spec = &self.sc.functions[f];
        for (k, m) in spec.comm.iter().enumerate() {
            let partner = match &m.partner {
                Partner::Rank(r) => *r,
                Partner::Named(n) if n == "prev" => (rank + self.sc.ranks - 1) % self.sc.ranks,
                Partner::Named(_) => (rank + 1) % self.sc.ranks,
            };
            let et = if m.kind == CommKind::Send {
                ET_SEND
            } else {
                ET_RECV
            };
            let ts = p.ts + (1 + k as u64).min(chunk.saturating_sub(1)).max(1);
            let bytes = m.bytes.unwrap_or(bytes);
            rows.comms
                .push([0, rank, thread, et, m.tag, partner, bytes, ts]);
        }
        let t = &mut self.threads[ti];
        t.stack.push(Frame {
            func: f,
            entry: p.ts,
            chunk,
            last_chunk,
            self_time,
            next_child: 0,
            anomalous,
            wrapper: is_wrapper,
            law_counter: inputs.counter,
        });
        self.schedule_after_entry(ti);
    }

    /// Self time of a new execution of `f` with `inputs`, possibly an
    /// injected anomaly, and the size of its messages (an anomaly's
    /// `bytes_factor` scales the draw).
    fn draw_self_time(
        &mut self,
        ti: usize,
        f: usize,
        nchildren: u64,
        inputs: CallInputs,
    ) -> (u64, bool, u64) {
        let spec = &self.sc.functions[f];
        let t = &mut self.threads[ti];
        let mut x = match (&spec.runtime_law, &spec.runtime) {
            (Some(l), _) => law::sample(l, inputs, &mut t.rng),
            (None, Some(d)) => d.sample(&mut t.rng),
            // Refused by validation; a zero self time is raised to the floor.
            (None, None) => 0.0,
        };
        if spec.drift_per_step != 0.0 {
            x *= (1.0 + spec.drift_per_step * self.step as f64).max(0.0);
        }
        for sd in &self.sc.slowdowns {
            let here = sd.ranks.contains(&self.rank)
                && sd
                    .functions
                    .as_ref()
                    .is_none_or(|fs| fs.contains(&spec.name));
            if here {
                x *= sd.factor.max(0.0);
            }
        }
        let mut anomalous = false;
        let mut bytes = inputs.bytes;
        for a in &self.sc.anomalies {
            if a.function != spec.name
                || a.ranks.as_ref().is_some_and(|r| !r.contains(&self.rank))
                || a.threads.as_ref().is_some_and(|r| !r.contains(&t.thread))
                || a.steps
                    .is_some_and(|[lo, hi]| self.step < lo || self.step > hi)
                || !law::in_ranges(a, inputs)
            {
                continue;
            }
            if t.rng.uniform() < a.rate {
                x = x * a.factor + a.add_us;
                bytes = as_count(bytes as f64 * a.bytes_factor);
                anomalous |= !a.normal;
            }
        }
        // At least 2 µs per gap so that messages and counters fall strictly
        // inside the call and never share a timestamp with a child's ENTRY.
        let min = 2 * (nchildren + 1);
        ((x.round().max(0.0) as u64).max(min), anomalous, bytes)
    }

    /// After an ENTRY: the next event is the first child's ENTRY or the EXIT.
    fn schedule_after_entry(&mut self, ti: usize) {
        let at = (self.rank, self.step);
        let c = &self.c;
        let t = &mut self.threads[ti];
        let depth = t.stack.len();
        let Some(top) = t.stack.last_mut() else {
            return;
        };
        // A wrapper's child is the next wrapper, or the root (looped).
        let next_func = if top.wrapper {
            Some(if depth < c.wrappers.len() {
                c.wrappers[depth]
            } else {
                c.root
            })
        } else {
            c.children[top.func]
                .get(top.next_child)
                .map(|ch| c.resolve(ch, &mut t.rng, at))
        };
        let ts = top.entry + top.chunk;
        t.next = Some(match next_func {
            Some(func) => {
                top.next_child += 1;
                Pending {
                    ts,
                    entry: true,
                    func,
                }
            }
            None => Pending {
                ts: top.entry + top.self_time,
                entry: false,
                func: top.func,
            },
        });
    }

    fn close_call(
        &mut self,
        ti: usize,
        p: Pending,
        rows: &mut Rows,
        attrs: &mut Vec<(String, String)>,
    ) {
        let (rank, step) = (self.rank, self.step);
        let Some(frame) = self.threads[ti].stack.pop() else {
            return;
        };
        let thread = self.threads[ti].thread;
        // Counters are sampled late in the call, after its last child.
        let nc = self.c.counters[frame.func].len();
        for k in 0..nc {
            let ci = self.c.counters[frame.func][k];
            let local = self.define_counter(ci, attrs);
            let v = match frame.law_counter {
                Some(v) if self.c.law_counter[frame.func] == Some(k) => v,
                _ => law::as_count(
                    self.sc.functions[frame.func].counters[k]
                        .value
                        .sample(&mut self.threads[ti].rng),
                ),
            };
            let back = (frame.last_chunk / 2).max(1);
            rows.counters.push([0, rank, thread, local, v, p.ts - back]);
        }
        if frame.anomalous {
            self.truth.push(TruthRow {
                rank,
                thread,
                step,
                function: self.c.names[frame.func].clone(),
                entry_us: frame.entry,
                exit_us: p.ts,
                exclusive_us: frame.self_time,
            });
        }
        self.schedule_after_exit(ti, p.ts);
    }

    /// After an EXIT at `ts`: the parent's next child, the parent's EXIT, or
    /// (under the wrappers) the next root call.
    fn schedule_after_exit(&mut self, ti: usize, ts: u64) {
        let at = (self.rank, self.step);
        let c = &self.c;
        let gap = self.sc.gap_us.max(1);
        let t = &mut self.threads[ti];
        let innermost_wrapper = t.stack.len() == c.wrappers.len();
        let Some(top) = t.stack.last_mut() else {
            t.next = None;
            return;
        };
        if top.wrapper {
            t.next = Some(if innermost_wrapper && !t.closing {
                Pending {
                    ts: ts + gap,
                    entry: true,
                    func: c.root,
                }
            } else {
                Pending {
                    ts: ts + gap,
                    entry: false,
                    func: top.func,
                }
            });
            return;
        }
        let next_child = c.children[top.func]
            .get(top.next_child)
            .map(|ch| c.resolve(ch, &mut t.rng, at));
        // Each gap between children is `chunk`; the EXIT follows the last
        // child after `last_chunk`.
        t.next = Some(match next_child {
            Some(func) => {
                top.next_child += 1;
                Pending {
                    ts: ts + top.chunk,
                    entry: true,
                    func,
                }
            }
            None => Pending {
                ts: ts + top.last_chunk,
                entry: false,
                func: top.func,
            },
        });
    }
}
