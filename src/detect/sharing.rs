//! Deriving each function's model on one AD rank and sharing it.
//!
//! After a step's reduction every rank holds the same global histograms,
//! and deriving a function's labelling model from its histogram is a pure
//! function of them: every rank would compute the same model. With P AD
//! ranks, the step's changed functions are dealt out instead — the k-th in
//! wire order (the same order on every rank) to rank `k mod P` — and each
//! rank derives only its own, encodes them as words and shares them in two
//! more reduction rounds (SUM, where every other rank adds zeros): the
//! length of each model, then the models at their offsets. A rank decodes
//! the models it did not derive. Counts in a model never exceed the
//! function's global count, which every rank knows, so kernels send them
//! in lanes that narrow (HBOS: a held bin's index and count in one word
//! below 2^32 executions; COPOD: its bin counts four to a word below
//! 2^16). The work per rank is the derivation of 1/P of the changed
//! functions plus a copy of every changed model (tens of bytes each,
//! against microseconds of derivation), and every rank ends with the same
//! models as if it had derived all of them, bit for bit (the encoding
//! carries the `f64` bits).

use super::Wire;

/// Where the sharing rounds of the current step stand.
#[derive(Debug, Default)]
enum Round {
    /// No sharing round is under way.
    #[default]
    Idle,
    /// The lengths wire is out.
    Lengths,
    /// The models wire is out; changed model `k` lies at
    /// `bounds[k]..bounds[k + 1]` in it.
    Models { bounds: Vec<usize> },
}

/// One rank's part of the model sharing of a step (see the module doc).
#[derive(Debug)]
pub struct ModelSharing {
    rank: usize,
    ranks: usize,
    /// The step's functions with a new model, in wire order.
    changed: Vec<u32>,
    /// This rank's models: (position in `changed`, end in `words`); each
    /// starts where the previous one ends.
    own: Vec<(usize, usize)>,
    /// This rank's encoded models, end to end.
    words: Vec<u64>,
    round: Round,
    /// The next wire to hand out.
    pending: Option<Wire>,
}

impl Default for ModelSharing {
    fn default() -> Self {
        ModelSharing {
            rank: 0,
            ranks: 1,
            changed: Vec::new(),
            own: Vec::new(),
            words: Vec::new(),
            round: Round::Idle,
            pending: None,
        }
    }
}

impl ModelSharing {
    /// This rank's index among `ranks` AD ranks.
    pub fn set_ranks(&mut self, rank: usize, ranks: usize) {
        self.ranks = ranks.max(1);
        self.rank = rank.min(self.ranks - 1);
    }

    /// Whether models are dealt out (more than one rank).
    pub fn enabled(&self) -> bool {
        self.ranks > 1
    }

    /// Whether the wire being merged is one of the sharing rounds.
    pub fn awaiting(&self) -> bool {
        !matches!(self.round, Round::Idle)
    }

    /// Notes the next function with a new model this step; true when this
    /// rank derives it (then [`ModelSharing::push_own`] takes its words).
    pub fn deal(&mut self, function: u32) -> bool {
        let k = self.changed.len();
        self.changed.push(function);
        k % self.ranks == self.rank
    }

    /// Encodes the model of the function just dealt to this rank.
    pub fn push_own(&mut self, encode: impl FnOnce(&mut Vec<u64>)) {
        encode(&mut self.words);
        self.own.push((self.changed.len() - 1, self.words.len()));
    }

    /// After the step's histograms are merged: the lengths round, if any
    /// function has a new model (all ranks agree: the list is reduced
    /// data).
    pub fn start(&mut self) {
        if self.changed.is_empty() {
            return;
        }
        let mut lens = vec![0u64; self.changed.len()];
        let mut start = 0;
        for &(k, end) in &self.own {
            lens[k] = (end - start) as u64;
            start = end;
        }
        self.pending = Some(Wire {
            sum: lens,
            ..Default::default()
        });
        self.round = Round::Lengths;
    }

    /// The wire of the next sharing round, once.
    pub fn next_round(&mut self) -> Option<Wire> {
        self.pending.take()
    }

    /// Merges a reduced sharing round. After the models round, `decode`
    /// receives each changed function this rank did not derive with its
    /// model's words; then the step's sharing is over.
    pub fn merge_reduced(&mut self, reduced: &Wire, mut decode: impl FnMut(u32, &[u64])) {
        match std::mem::take(&mut self.round) {
            Round::Idle => {}
            Round::Lengths => {
                // Every rank contributes the same lengths, so a wire of
                // another shape cannot come from this program's ranks:
                // missing lengths count as empty models.
                let mut bounds = Vec::with_capacity(self.changed.len() + 1);
                bounds.push(0);
                for k in 0..self.changed.len() {
                    let len = reduced.sum.get(k).copied().unwrap_or(0) as usize;
                    bounds.push(bounds[k] + len);
                }
                let mut sum = vec![0u64; bounds[self.changed.len()]];
                let mut start = 0;
                for &(k, end) in &self.own {
                    let at = bounds[k];
                    sum[at..at + end - start].copy_from_slice(&self.words[start..end]);
                    start = end;
                }
                self.pending = Some(Wire {
                    sum,
                    ..Default::default()
                });
                self.round = Round::Models { bounds };
            }
            Round::Models { bounds } => {
                for (k, &f) in self.changed.iter().enumerate() {
                    if k % self.ranks == self.rank {
                        continue;
                    }
                    decode(f, reduced.sum.get(bounds[k]..bounds[k + 1]).unwrap_or(&[]));
                }
                self.changed.clear();
                self.own.clear();
                self.words.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three ranks deal out five functions and share models of different
    /// lengths: every rank ends with every other rank's words.
    #[test]
    fn every_rank_receives_the_models_it_did_not_derive() {
        let functions = [10u32, 11, 12, 13, 14];
        let model = |f: u32| -> Vec<u64> {
            (0..(f % 3) as u64 + 1)
                .map(|i| f as u64 * 100 + i)
                .collect()
        };
        let mut ranks: Vec<ModelSharing> = (0..3)
            .map(|r| {
                let mut s = ModelSharing::default();
                s.set_ranks(r, 3);
                s
            })
            .collect();
        for (r, s) in ranks.iter_mut().enumerate() {
            for &f in &functions {
                if s.deal(f) {
                    assert_eq!((f - 10) as usize % 3, r);
                    s.push_own(|out| out.extend(model(f)));
                }
            }
            s.start();
        }
        let mut got = vec![Vec::new(); 3];
        for _round in 0..2 {
            let wires: Vec<Wire> = ranks.iter_mut().map(|s| s.next_round().unwrap()).collect();
            let reduced = Wire::reduce_all(&wires);
            for (r, s) in ranks.iter_mut().enumerate() {
                assert!(s.awaiting());
                s.merge_reduced(&reduced, |f, w| got[r].push((f, w.to_vec())));
            }
        }
        for (r, s) in ranks.iter_mut().enumerate() {
            assert!(!s.awaiting() && s.next_round().is_none());
            let want: Vec<(u32, Vec<u64>)> = functions
                .iter()
                .filter(|&&f| (f - 10) as usize % 3 != r)
                .map(|&f| (f, model(f)))
                .collect();
            assert_eq!(got[r], want, "rank {r}");
        }
    }

    #[test]
    fn nothing_changed_means_no_round_and_one_rank_derives_everything() {
        let mut s = ModelSharing::default();
        s.set_ranks(1, 2);
        s.start();
        assert!(!s.awaiting() && s.next_round().is_none());
        let mut one = ModelSharing::default();
        assert!(!one.enabled());
        assert!((0..5).all(|f| one.deal(f)));
    }
}
