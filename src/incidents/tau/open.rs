//! The open occurrences, indexed by rank and time.
//!
//! Each step every root cluster looks for an open occurrence of its rank
//! that it is [`close`] to. A trace with many slow executions (a detector
//! that flags thousands a step) keeps thousands of occurrences open, and
//! testing each cluster against every one of them cost more than the rest
//! of the step. So the occurrences of each rank are kept in order of the
//! earliest entry of their reach, with bounds on their length and excess
//! that say how far from a cluster an occurrence close to it can start;
//! only those in that range are tested. The answer is the same occurrence
//! as a test against all of them (the smallest id among the close ones).

use std::collections::{BTreeSet, HashMap};

use super::node::Node;
use super::occurrence::{close, Occurrence};

/// `(entry, exit, excess)` in µs, as [`close`] takes it.
pub(super) type Span = (u64, u64, u64);

/// One rank's open occurrences.
#[derive(Debug, Default)]
struct RankIndex {
    /// `(earliest entry of the reach, id)` of each.
    by_entry: BTreeSet<(u64, u64)>,
    /// At least the longest reach (exit − entry) of any of them.
    longest: u64,
    /// At least the largest excess of any of them.
    largest_excess: u64,
}

impl RankIndex {
    /// Raises the bounds to cover an occurrence of reach `r`.
    fn cover(&mut self, r: Span) {
        self.longest = self.longest.max(r.1.saturating_sub(r.0));
        self.largest_excess = self.largest_excess.max(r.2);
    }
}

/// The occurrences that can still grow, by id, with the index.
#[derive(Debug, Default)]
pub(super) struct OpenOccurrences {
    by_id: HashMap<u64, Occurrence>,
    by_rank: HashMap<(u32, u64), RankIndex>,
}

impl OpenOccurrences {
    /// The occurrence `id`.
    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut Occurrence> {
        self.by_id.get_mut(&id)
    }

    /// Every open occurrence, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&u64, &Occurrence)> {
        self.by_id.iter()
    }

    /// The ids of every open occurrence, in no particular order.
    pub(super) fn ids(&self) -> Vec<u64> {
        self.by_id.keys().copied().collect()
    }

    /// The smallest id among the occurrences of `(program, rank)` that one
    /// of `spans` is close to, both to their reach and to one of their root
    /// candidates.
    pub(super) fn nearest(&self, program: u32, rank: u64, spans: &[Span]) -> Option<u64> {
        let index = self.by_rank.get(&(program, rank))?;
        let lo = spans.iter().map(|s| s.0).min()?;
        let hi = spans.iter().map(|s| s.1).max()?;
        let excess = spans.iter().map(|s| s.2).max()?;
        // An occurrence close to a span starts at most `bound` after its
        // exit and ends at least `bound` before its entry, so it starts at
        // least `bound + longest` before it.
        let bound = excess.max(index.largest_excess);
        let first = lo.saturating_sub(bound).saturating_sub(index.longest);
        let last = hi.saturating_add(bound);
        index
            .by_entry
            .range((first, 0)..=(last, u64::MAX))
            .map(|&(_, id)| id)
            .filter(|id| {
                let Some(o) = self.by_id.get(id) else {
                    return false;
                };
                spans.iter().any(|&a| close(a, o.reach))
                    // The newest candidates first: a slowdown that goes on
                    // is close to its latest delays.
                    && o.candidates.iter().rev().any(|c| {
                        spans
                            .iter()
                            .any(|&a| close(a, (c.entry, c.exit, c.excess_us)))
                    })
            })
            .min()
    }

    /// Opens occurrence `id` with no candidates yet.
    pub(super) fn open(&mut self, id: u64, occurrence: Occurrence) {
        let index = self
            .by_rank
            .entry((occurrence.program, occurrence.rank))
            .or_default();
        index.by_entry.insert((occurrence.reach.0, id));
        self.by_id.insert(id, occurrence);
    }

    /// Adds `node` to the root candidates of occurrence `id`, widening its
    /// reach.
    pub(super) fn add_candidate(&mut self, id: u64, node: Node) {
        let Some(o) = self.by_id.get_mut(&id) else {
            return;
        };
        let Some(index) = self.by_rank.get_mut(&(o.program, o.rank)) else {
            return;
        };
        index.by_entry.remove(&(o.reach.0, id));
        let r = &mut o.reach;
        *r = (
            r.0.min(node.entry),
            r.1.max(node.exit),
            r.2.max(node.excess_us),
        );
        index.by_entry.insert((r.0, id));
        index.cover(*r);
        o.candidates.push(node);
    }

    /// Takes occurrence `id` out.
    pub(super) fn remove(&mut self, id: u64) -> Option<Occurrence> {
        let o = self.by_id.remove(&id)?;
        let key = (o.program, o.rank);
        if let Some(index) = self.by_rank.get_mut(&key) {
            index.by_entry.remove(&(o.reach.0, id));
            if index.by_entry.is_empty() {
                self.by_rank.remove(&key);
            }
        }
        Some(o)
    }

    /// Brings each rank's bounds down to its open occurrences (they only
    /// grow as candidates join; closing the longest leaves them loose).
    pub(super) fn tighten(&mut self) {
        for index in self.by_rank.values_mut() {
            (index.longest, index.largest_excess) = (0, 0);
        }
        for o in self.by_id.values() {
            if let Some(index) = self.by_rank.get_mut(&(o.program, o.rank)) {
                index.cover(o.reach);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occurrence(rank: u64) -> Occurrence {
        Occurrence {
            program: 0,
            rank,
            members: Vec::new(),
            candidates: Vec::new(),
            reach: (u64::MAX, 0, 0),
            last_step: 0,
        }
    }

    fn node(entry: u64, exit: u64, excess_us: u64) -> Node {
        Node {
            program: 0,
            id: crate::events::ExecId {
                rank: 0,
                step: 0,
                idx: entry,
            },
            thread: 0,
            function: 0,
            depth: 0,
            class: super::super::node::CallClass::Compute,
            entry,
            exit,
            runtime_us: exit - entry,
            expected_us: 0,
            excess_us,
            score: 0.0,
            labelled_step: 0,
            bytes_sent: 0,
            usual_bytes: 0,
            bytes_rare: false,
            sends: Vec::new(),
            recvs: Vec::new(),
        }
    }

    /// The straightforward search the index replaces.
    fn nearest_by_scan(open: &OpenOccurrences, rank: u64, spans: &[Span]) -> Option<u64> {
        open.iter()
            .filter(|(_, o)| o.program == 0 && o.rank == rank)
            .filter(|(_, o)| spans.iter().any(|&a| close(a, o.reach)))
            .filter(|(_, o)| {
                o.candidates.iter().any(|c| {
                    spans
                        .iter()
                        .any(|&a| close(a, (c.entry, c.exit, c.excess_us)))
                })
            })
            .map(|(id, _)| *id)
            .min()
    }

    /// Occurrences of two ranks with reaches of every length and excess,
    /// some closed again; every query span answers as the full scan does.
    #[test]
    fn nearest_equals_a_scan_of_every_occurrence() {
        let mut open = OpenOccurrences::default();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for id in 0..400u64 {
            open.open(id, occurrence(id % 2));
            for _ in 0..1 + next(3) {
                let entry = next(10_000_000);
                let len = if next(40) == 0 {
                    next(200_000)
                } else {
                    next(500)
                };
                let excess = if next(20) == 0 {
                    next(50_000)
                } else {
                    next(300)
                };
                open.add_candidate(id, node(entry, entry + len, excess));
            }
        }
        for id in (0..400u64).filter(|id| id % 7 == 3) {
            assert!(open.remove(id).is_some());
        }
        open.tighten();
        let mut found = 0;
        for _ in 0..3000 {
            let entry = next(10_050_000);
            let spans: Vec<Span> = (0..1 + next(3))
                .map(|k| (entry + 50 * k, entry + 50 * k + next(400), next(200)))
                .collect();
            let rank = next(2);
            let want = nearest_by_scan(&open, rank, &spans);
            found += usize::from(want.is_some());
            assert_eq!(open.nearest(0, rank, &spans), want, "{spans:?}");
        }
        // The queries test both answers.
        assert!(found > 300 && found < 2700, "{found}");
    }
}
