//! Deriving each function's model on one AD rank and sharing it.
//!
//! After a step's reduction every rank holds the same global histograms,
//! and deriving a function's labelling model from its histogram is a pure
//! function of them: every rank would compute the same model. With P AD
//! ranks, the step's changed functions are dealt out instead — the k-th in
//! wire order (the same order on every rank) to rank `k mod P` — and each
//! rank derives only its own, encodes them as words and shares them in one
//! more round, an allgather: each rank sends its own models (each after
//! its length) and receives the others'. Rank r's words are the models of
//! changed functions r, r + P, r + 2P, … in that order, so nothing says
//! which function a model belongs to. A rank decodes the models it did not
//! derive. Counts in a model never exceed the function's global count,
//! which every rank knows, so kernels send them in lanes that narrow
//! (HBOS: a held bin's index and count in one word below 2^32 executions;
//! COPOD: its bin counts four to a word below 2^16). The work per rank is
//! the derivation of 1/P of the changed functions plus a copy of every
//! changed model (tens of bytes each, against microseconds of derivation),
//! and every rank ends with the same models as if it had derived all of
//! them, bit for bit (the encoding carries the `f64` bits). A rank
//! receives every model but its own once, whatever P: the bytes do not
//! grow with the ranks.

use super::{Gathered, Wire};

/// One rank's part of the model sharing of a step (see the module doc).
#[derive(Debug)]
pub struct ModelSharing {
    rank: usize,
    ranks: usize,
    /// The step's functions with a new model, in wire order.
    changed: Vec<u32>,
    /// This rank's encoded models in deal order, each after its length.
    words: Vec<u64>,
    /// Whether the models' round is out (its reduced wire is the next to
    /// merge).
    out: bool,
    /// The next wire to hand out.
    pending: Option<Wire>,
}

impl Default for ModelSharing {
    fn default() -> Self {
        ModelSharing {
            rank: 0,
            ranks: 1,
            changed: Vec::new(),
            words: Vec::new(),
            out: false,
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

    /// Whether the wire being merged is the sharing round.
    pub fn awaiting(&self) -> bool {
        self.out
    }

    /// Notes the next function with a new model this step; true when this
    /// rank derives it (then its words go in with
    /// [`ModelSharing::append_own`]).
    pub fn deal(&mut self, function: u32) -> bool {
        let k = self.changed.len();
        self.changed.push(function);
        k % self.ranks == self.rank
    }

    /// Appends models of the functions dealt to this rank, each encoded
    /// with [`push_framed`] (on worker threads, say), in deal order.
    pub fn append_own(&mut self, framed: &[u64]) {
        self.words.extend_from_slice(framed);
    }

    /// After the step's histograms are merged: the models' round, if any
    /// function has a new model (all ranks agree: the list is reduced
    /// data).
    pub fn start(&mut self) {
        if self.changed.is_empty() {
            return;
        }
        self.pending = Some(Wire {
            gather: Some(Box::new(Gathered::own(std::mem::take(&mut self.words)))),
            ..Default::default()
        });
        self.out = true;
    }

    /// The wire of the sharing round, once.
    pub fn next_round(&mut self) -> Option<Wire> {
        self.pending.take()
    }

    /// Merges the gathered models: each changed function this rank did not
    /// derive with its model's words (other ranks' in rank order), for the
    /// caller to decode on whatever threads it likes; then the step's
    /// sharing is over. Words missing from a rank's part (which this
    /// program's ranks never send) decode as empty models.
    pub fn take_received<'a>(&mut self, reduced: &'a Wire) -> Vec<(u32, &'a [u64])> {
        let mut received = Vec::new();
        if !std::mem::take(&mut self.out) {
            return received;
        }
        const NONE: &[u64] = &[];
        let parts = reduced.gather.as_deref();
        for r in (0..self.ranks).filter(|&r| r != self.rank) {
            let part = parts.map_or(NONE, |g| g.part(r));
            let mut at = 0;
            for &f in self.changed.iter().skip(r).step_by(self.ranks) {
                let len = part.get(at).map_or(0, |&l| l as usize);
                let start = (at + 1).min(part.len());
                let end = start.saturating_add(len).min(part.len());
                received.push((f, &part[start..end]));
                at = end;
            }
        }
        self.changed.clear();
        self.words.clear();
        received
    }
}

/// Appends one model to `out` as the sharing round carries it: its
/// length, then the words `encode` writes.
pub fn push_framed(out: &mut Vec<u64>, encode: impl FnOnce(&mut Vec<u64>)) {
    let at = out.len();
    out.push(0);
    encode(out);
    out[at] = (out.len() - at - 1) as u64;
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
                    let mut framed = Vec::new();
                    push_framed(&mut framed, |out| out.extend(model(f)));
                    s.append_own(&framed);
                }
            }
            s.start();
        }
        let mut got = vec![Vec::new(); 3];
        let wires: Vec<Wire> = ranks.iter_mut().map(|s| s.next_round().unwrap()).collect();
        let reduced = Wire::reduce_all(&wires);
        for (r, s) in ranks.iter_mut().enumerate() {
            assert!(s.awaiting());
            let received = s.take_received(&reduced);
            got[r].extend(received.into_iter().map(|(f, w)| (f, w.to_vec())));
        }
        for (r, s) in ranks.iter_mut().enumerate() {
            assert!(!s.awaiting() && s.next_round().is_none());
            // Decoded rank by rank; the order does not matter to a model.
            got[r].sort();
            let want: Vec<(u32, Vec<u64>)> = functions
                .iter()
                .filter(|&&f| (f - 10) as usize % 3 != r)
                .map(|&f| (f, model(f)))
                .collect();
            assert_eq!(got[r], want, "rank {r}");
        }
    }

    /// A part cut short (no rank of this program sends one) decodes as
    /// empty models, never reads past the part.
    #[test]
    fn a_short_part_decodes_as_empty_models() {
        let mut s = ModelSharing::default();
        s.set_ranks(0, 2);
        for f in 0..5 {
            if s.deal(f) {
                let mut framed = Vec::new();
                push_framed(&mut framed, |out| out.push(f as u64));
                s.append_own(&framed);
            }
        }
        s.start();
        let mine = s.next_round().unwrap();
        // Rank 1 derived functions 1 and 3; its part claims 2 words for
        // the first model and holds 1, then nothing.
        let other = Wire {
            gather: Some(Box::new(Gathered::own(vec![2, 7]))),
            ..Default::default()
        };
        let reduced = Wire::reduce_all(&[mine, other]);
        let got: Vec<(u32, Vec<u64>)> = s
            .take_received(&reduced)
            .into_iter()
            .map(|(f, w)| (f, w.to_vec()))
            .collect();
        assert_eq!(got, vec![(1, vec![7]), (3, vec![])]);
        assert!(!s.awaiting());
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
