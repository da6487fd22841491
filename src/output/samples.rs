//! `run --model-samples N`: the features of up to N executions per
//! function, for training performance models (`model train --provenance`).
//!
//! The sample must not depend on how the streams are split among AD ranks,
//! and memory must stay bounded however long the run. So each execution
//! gets a hash of what identifies it in the application — program,
//! application rank, thread, entry timestamp and function *name* (not the
//! global index, so that the same calls are sampled whatever else a run
//! traced) — and the sample of a function is the N executions with the
//! smallest hashes (a bottom-k sample: a uniform random sample, and
//! mergeable). Each AD rank keeps its own bottom N per function while the
//! run goes; at the end the ranks exchange them and every rank keeps the
//! global bottom N. Ties of the hash (the same call site entered twice in
//! the same microsecond) are broken by the execution's id, itself a
//! property of the stream.
//!
//! The rows go to the provenance file's `model_samples` and
//! `model_sample_counters` tables (`docs/provenance-schema.md`).

use std::collections::BinaryHeap;

use crate::collectives::Collectives;
use crate::events::features::{counter_features, fixed_features, FixedFeatures, FIXED_COUNT};
use crate::events::names::GlobalNames;
use crate::events::Execution;
use crate::util::hash::{fnv1a, mix64, splitmix64};

use super::consumer::LabelledStep;
use crate::provenance::records::{fixed, ModelSampleCounterRow, ModelSampleRow};

/// Where a candidate stands in its function's sample: smaller is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    hash: u64,
    program: u32,
    rank: u64,
    step: u64,
    idx: u64,
}

/// One sampled execution.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Candidate {
    key: Key,
    function: u32,
    entry: u64,
    features: FixedFeatures,
    /// `(global counter, value)`, sorted by counter.
    counters: Vec<(u32, u64)>,
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// The sampling hash of an execution (splitmix64's finaliser over its
/// identity; the function enters as a hash of its name).
pub fn sample_hash(program: u32, rank: u64, thread: u64, entry: u64, name_hash: u64) -> u64 {
    let mut h = name_hash;
    for w in [program as u64, rank, thread, entry] {
        // One SplitMix64 step from state `w`, mixed into the hash.
        let mut state = w;
        h = mix64(h ^ splitmix64(&mut state));
    }
    h
}

/// FNV-1a of a function name.
pub fn name_hash(name: &str) -> u64 {
    fnv1a(name.bytes())
}

/// One AD rank's bottom-N sample of every function.
#[derive(Debug)]
pub struct ModelSampler {
    per_function: usize,
    /// Max-heaps by function: the top is the candidate to drop next.
    heaps: Vec<BinaryHeap<Candidate>>,
    /// Hash of each function's name, by global index.
    name_hashes: Vec<u64>,
    counters: Vec<(u32, u64)>,
}

impl ModelSampler {
    /// A sampler keeping up to `per_function` executions per function.
    pub fn new(per_function: usize) -> Self {
        ModelSampler {
            per_function,
            heaps: Vec::new(),
            name_hashes: Vec::new(),
            counters: Vec::new(),
        }
    }

    /// Offers every execution of one stream's labelled step.
    pub fn offer_step(&mut self, s: &LabelledStep<'_>, names: &GlobalNames) {
        if self.per_function == 0 {
            return;
        }
        let n = names.functions.len();
        if self.heaps.len() < n {
            self.heaps.resize_with(n, BinaryHeap::new);
        }
        while self.name_hashes.len() < n {
            let f = self.name_hashes.len() as u32;
            self.name_hashes.push(name_hash(names.functions.name(f)));
        }
        for e in &s.events.executions {
            self.offer(e, s, s.step);
        }
    }

    #[inline]
    fn offer(&mut self, e: &Execution, s: &LabelledStep<'_>, step: u64) {
        let f = e.function as usize;
        let (Some(heap), Some(&nh)) = (self.heaps.get_mut(f), self.name_hashes.get(f)) else {
            return;
        };
        let key = Key {
            hash: sample_hash(e.program, e.rank(), e.thread, e.entry, nh),
            program: e.program,
            rank: e.id.rank,
            step: e.id.step,
            idx: e.id.idx,
        };
        if heap.len() >= self.per_function && heap.peek().is_some_and(|top| key >= top.key) {
            return;
        }
        counter_features(e, s.events, &mut self.counters);
        heap.push(Candidate {
            key,
            function: e.function,
            entry: e.entry,
            features: fixed_features(e, s.events, step),
            counters: self.counters.clone(),
        });
        if heap.len() > self.per_function {
            heap.pop();
        }
    }

    /// Executions held now (for memory checks).
    pub fn held(&self) -> usize {
        self.heaps.iter().map(BinaryHeap::len).sum()
    }

    /// The global sample (collective: every rank gets the same rows):
    /// functions in global index order, each function's executions in the
    /// order of their ids.
    pub fn merge(
        self,
        coll: &Collectives,
        names: &GlobalNames,
    ) -> (Vec<ModelSampleRow>, Vec<ModelSampleCounterRow>) {
        let mine = encode(self.heaps.iter().flat_map(|h| h.iter()));
        let all = coll.allgather_bytes(&mine);
        let mut by_function: Vec<Vec<Candidate>> = vec![Vec::new(); names.functions.len()];
        for bytes in &all {
            for c in decode(bytes) {
                if let Some(v) = by_function.get_mut(c.function as usize) {
                    v.push(c);
                }
            }
        }
        let mut rows = Vec::new();
        let mut counter_rows = Vec::new();
        for mut v in by_function {
            v.sort_unstable();
            v.truncate(self.per_function);
            v.sort_unstable_by_key(|c| (c.key.program, c.key.rank, c.key.step, c.key.idx));
            for c in v {
                rows.push(sample_row(&c, rows.len() as u64, &mut counter_rows, names));
            }
        }
        (rows, counter_rows)
    }
}

fn sample_row(
    c: &Candidate,
    row: u64,
    counter_rows: &mut Vec<ModelSampleCounterRow>,
    names: &GlobalNames,
) -> ModelSampleRow {
    let start = counter_rows.len() as u64;
    for &(counter, value) in &c.counters {
        counter_rows.push(ModelSampleCounterRow {
            sample: row,
            counter_idx: counter,
            counter: fixed(names.counters.name(counter)),
            value,
        });
    }
    let id = format!(
        "{}:{}:{}:{}",
        c.key.program, c.key.rank, c.key.step, c.key.idx
    );
    let f = &c.features;
    ModelSampleRow {
        fid: c.function,
        pid: c.key.program,
        func: fixed(names.functions.name(c.function)),
        event_id: fixed(&id),
        entry: c.entry,
        sample_hash: c.key.hash,
        exclusive_us: f[0],
        inclusive_us: f[1],
        n_children: f[2],
        children_us: f[3],
        bytes_sent: f[4],
        bytes_received: f[5],
        depth: f[6],
        rank: f[7],
        thread: f[8],
        step: f[9],
        counters_start: start,
        counters_len: c.counters.len() as u32,
    }
}

/// Words per candidate before its counters: the key (5), function, entry,
/// the fixed features and the number of counters.
const HEAD_WORDS: usize = 8 + FIXED_COUNT;

fn encode<'a>(candidates: impl Iterator<Item = &'a Candidate>) -> Vec<u8> {
    let mut words: Vec<u64> = Vec::new();
    for c in candidates {
        let k = &c.key;
        words.extend([k.hash, k.program as u64, k.rank, k.step, k.idx]);
        words.extend([c.function as u64, c.entry]);
        words.extend(c.features);
        words.push(c.counters.len() as u64);
        for &(counter, value) in &c.counters {
            words.extend([counter as u64, value]);
        }
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The candidates of [`encode`]'s bytes (a truncated tail is dropped; the
/// bytes come from this program on another rank, never from a file).
fn decode(bytes: &[u8]) -> Vec<Candidate> {
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at + HEAD_WORDS <= words.len() {
        let w = &words[at..];
        let n = w[HEAD_WORDS - 1] as usize;
        let Some(tail) = w.get(HEAD_WORDS..HEAD_WORDS + 2 * n) else {
            break;
        };
        let mut features = [0u64; FIXED_COUNT];
        features.copy_from_slice(&w[7..7 + FIXED_COUNT]);
        out.push(Candidate {
            key: Key {
                hash: w[0],
                program: w[1] as u32,
                rank: w[2],
                step: w[3],
                idx: w[4],
            },
            function: w[5] as u32,
            entry: w[6],
            features,
            counters: tail.chunks_exact(2).map(|p| (p[0] as u32, p[1])).collect(),
        });
        at += HEAD_WORDS + 2 * n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(hash: u64, counters: Vec<(u32, u64)>) -> Candidate {
        Candidate {
            key: Key {
                hash,
                program: 1,
                rank: 2,
                step: 3,
                idx: hash % 7,
            },
            function: 4,
            entry: 99,
            features: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            counters,
        }
    }

    #[test]
    fn candidates_cross_the_wire_unchanged() {
        let c = vec![
            candidate(5, vec![]),
            candidate(u64::MAX, vec![(0, 1), (7, u64::MAX)]),
        ];
        assert_eq!(decode(&encode(c.iter())), c);
        // A cut message never panics.
        let bytes = encode(c.iter());
        assert_eq!(decode(&bytes[..bytes.len() - 3]).len(), 1);
    }

    #[test]
    fn the_hash_depends_on_every_part_of_the_identity() {
        let base = sample_hash(0, 1, 2, 3, name_hash("f"));
        assert_ne!(base, sample_hash(1, 1, 2, 3, name_hash("f")));
        assert_ne!(base, sample_hash(0, 2, 2, 3, name_hash("f")));
        assert_ne!(base, sample_hash(0, 1, 3, 3, name_hash("f")));
        assert_ne!(base, sample_hash(0, 1, 2, 4, name_hash("f")));
        assert_ne!(base, sample_hash(0, 1, 2, 3, name_hash("g")));
        assert_eq!(base, sample_hash(0, 1, 2, 3, name_hash("f")));
    }
}
