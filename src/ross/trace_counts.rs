//! Counting an event trace: the validate-and-accumulate passes over what
//! can be gigabytes of 24-byte records.
//!
//! Pass 1 ([`TraceTally`]) counts, for every destination LP, the events it
//! received, split by whether they carry a model payload and whether they
//! came from another LP, plus the events per GVT interval. It keeps dense
//! arrays indexed by LP id, so a record costs a few loads and increments
//! and memory follows the number of LPs, never the size of the file.
//!
//! Pass 2 ([`HotTally`]) runs only when pass 1 found candidate hotspots: for
//! those few LPs it counts the events per GVT interval and per sending LP
//! (the evidence of a hotspot). Keeping those for every LP would cost
//! LPs × intervals (or LPs² for senders) of memory; a second pass over the
//! page cache costs far less.
//!
//! Every count is an integer, so the tallies of byte ranges read by
//! different AD ranks add up to exactly what one rank counts alone.

use std::collections::BTreeMap;

use super::signals::Interval;
use crate::trace::ross::{RecordReader, RossError};

/// Highest LP id counted (2^24 LPs: 512 MiB of arrays at most). Larger
/// ids are not from any ROSS run we know of; they are counted apart.
pub const MAX_TRACKED_LP: u32 = (1 << 24) - 1;

/// Finds which GVT interval a virtual time falls in, in O(1) for the
/// usual nearly even grid: a table of buckets over the grid's range (8 per
/// interval) gives the first interval that can hold a time with the next
/// two interval bounds beside it, so two branch-free compares on one
/// cache line finish (a bucket and its neighbour rarely hold more than
/// two bounds; a very uneven grid falls back to a binary search past
/// them). A plain binary search per event was most of the cost of a trace
/// pass; a scan with an exit branch per step mispredicted on every other
/// event, and looking the bounds up apart made a chain of dependent loads.
#[derive(Debug, Clone, Default)]
pub struct GridIndex {
    /// Upper GVT bound of each interval, in order, then two `+inf`
    /// sentinels (so a step past the last interval stays in bounds).
    upper: Vec<f64>,
    /// Number of intervals.
    intervals: usize,
    /// Per bucket: the first interval whose upper bound reaches the start
    /// of the bucket before it, and that interval's and the next one's
    /// upper bounds.
    buckets: Vec<Bucket>,
    lo: f64,
    per_unit: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    first: usize,
    bounds: [f64; 2],
}

/// Buckets per interval of the lookup table.
const BUCKETS_PER_INTERVAL: usize = 8;

/// Most buckets of a lookup table (24 MB).
const MAX_BUCKETS: usize = 1 << 20;

impl GridIndex {
    /// The index of a grid of upper bounds (non-decreasing).
    pub fn new(grid: &[f64]) -> Self {
        let mut upper = grid.to_vec();
        upper.extend([f64::INFINITY; 2]);
        let intervals = grid.len();
        let (lo, hi) = match (grid.first(), grid.last()) {
            (Some(a), Some(b)) if b > a && a.is_finite() && b.is_finite() => (*a, *b),
            _ => {
                return GridIndex {
                    upper,
                    intervals,
                    ..Default::default()
                }
            }
        };
        let buckets = (intervals * BUCKETS_PER_INTERVAL).min(MAX_BUCKETS);
        let per_unit = buckets as f64 / (hi - lo);
        // Bucket b starts at or before a time that maps to it, so the
        // answer is at or after the first interval reaching the bucket
        // before it (one bucket of slack for the rounding of the position).
        let buckets = (0..=buckets)
            .map(|b| {
                let start = lo + b.saturating_sub(1) as f64 / per_unit;
                let first = grid.partition_point(|g| *g < start);
                Bucket {
                    first,
                    bounds: [upper[first], upper[first + 1]],
                }
            })
            .collect();
        GridIndex {
            upper,
            intervals,
            buckets,
            lo,
            per_unit,
        }
    }

    /// Number of intervals.
    pub fn len(&self) -> usize {
        self.intervals
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.intervals == 0
    }

    /// The interval of virtual time `t`: the first whose upper bound is at
    /// least `t`; times after the last bound count in the last interval.
    #[inline(always)]
    pub fn interval_of(&self, t: f64) -> usize {
        let last = self.intervals.saturating_sub(1);
        let grid = &self.upper[..self.intervals];
        if self.buckets.is_empty() {
            return grid.partition_point(|g| *g < t).min(last);
        }
        if t.is_nan() {
            // No bound is below NaN (validated records never hold one).
            return 0;
        }
        let pos = (t - self.lo) * self.per_unit;
        // Times before the grid go to bucket 0, after it to the last one
        // (`as` saturates).
        let b = if pos > 0.0 { pos as usize } else { 0 };
        // Stepping up from the bucket's first interval is exact on a
        // non-decreasing grid; the sentinels stop the steps.
        let bucket = &self.buckets[b.min(self.buckets.len() - 1)];
        let [u0, u1] = bucket.bounds;
        let mut k = bucket.first + usize::from(u0 < t) + usize::from(u1 < t);
        if u1 < t && self.upper[k] < t {
            // More than two bounds between the bucket's start and t.
            k += grid[k..].partition_point(|g| *g < t);
        }
        k.min(last)
    }
}

/// The upper GVT bounds of a run's intervals.
pub fn gvt_grid(grid: &[Interval]) -> Vec<f64> {
    grid.iter().map(|iv| iv.gvt_to).collect()
}

/// Pass 1: events per destination LP and per interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceTally {
    /// Per destination LP: events `[with payload from another LP, with
    /// payload from itself, without payload from another LP, without
    /// payload from itself]`.
    pub to_lp: Vec<[u64; 4]>,
    /// Events per GVT interval (the grid's length; empty without a grid).
    pub per_interval: Vec<u64>,
    /// Records read.
    pub records: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Events to LP ids above [`MAX_TRACKED_LP`].
    pub untracked: u64,
}

impl TraceTally {
    /// An empty tally for a run with `intervals` GVT intervals.
    pub fn new(intervals: usize) -> Self {
        TraceTally {
            per_interval: vec![0; intervals],
            ..Default::default()
        }
    }

    /// Counts the records of `reader` (to its end or its limit).
    pub fn read<R: std::io::Read>(
        &mut self,
        reader: &mut RecordReader<R>,
        grid: &GridIndex,
    ) -> Result<(), RossError> {
        let start = reader.offset();
        let counting_intervals = !self.per_interval.is_empty();
        // Inlined into the event loop: a call per record was a tenth of
        // the pass.
        let result = reader.for_each_event(
            #[inline(always)]
            |e| {
                self.records += 1;
                if e.dest_lp > MAX_TRACKED_LP {
                    self.untracked += 1;
                    return;
                }
                let lp = e.dest_lp as usize;
                if lp >= self.to_lp.len() {
                    self.to_lp.resize(lp + 1, [0; 4]);
                }
                let slot =
                    usize::from(e.payload.is_empty()) * 2 + usize::from(e.src_lp == e.dest_lp);
                self.to_lp[lp][slot] += 1;
                if counting_intervals {
                    let k = grid.interval_of(f64::from(e.recv_vts));
                    if let Some(n) = self.per_interval.get_mut(k) {
                        *n += 1;
                    }
                }
            },
        );
        self.bytes += reader.offset() - start;
        result
    }

    /// The tally as words, for summing over AD ranks: `[records, bytes,
    /// untracked, per_interval…, to_lp…]`, the LP array padded to `lps`
    /// entries (every rank has the same number of intervals).
    pub fn to_words(&self, lps: usize) -> Vec<u64> {
        let mut w = vec![self.records, self.bytes, self.untracked];
        w.extend(&self.per_interval);
        for lp in 0..lps {
            w.extend(self.to_lp.get(lp).copied().unwrap_or([0; 4]));
        }
        w
    }

    /// The tally of summed words (the inverse of [`TraceTally::to_words`]
    /// for a run of `intervals` GVT intervals).
    pub fn from_words(w: &[u64], intervals: usize) -> Self {
        let get = |i: usize| w.get(i).copied().unwrap_or(0);
        let n = intervals;
        let per_interval = w.get(3..3 + n).map_or_else(Vec::new, <[u64]>::to_vec);
        let rest = w.get(3 + n..).unwrap_or(&[]);
        let mut to_lp: Vec<[u64; 4]> = rest
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect();
        while to_lp.last() == Some(&[0; 4]) {
            to_lp.pop();
        }
        TraceTally {
            to_lp,
            per_interval,
            records: get(0),
            bytes: get(1),
            untracked: get(2),
        }
    }

    /// Whether only events with a model payload are the model's: when
    /// ROSS's stdout did not give the number of model LPs and some event
    /// carries a payload (see [`TraceTally::model_lps`]).
    pub fn payload_only(&self, model_lps: Option<u64>) -> bool {
        model_lps.is_none() && self.to_lp.iter().any(|c| c[0] + c[1] > 0)
    }

    /// Events each model LP received, and from other LPs, `(lp, received,
    /// from others)`. Model LPs are those below `model_lps` when ROSS's
    /// stdout gave the count; otherwise only events with a model payload
    /// count, if any has one (analysis LPs, numbered after the model's,
    /// have no model type and so no payload).
    pub fn model_lps(&self, model_lps: Option<u64>) -> Vec<(u32, u64, u64)> {
        let payload_only = self.payload_only(model_lps);
        self.to_lp
            .iter()
            .enumerate()
            .filter(|(lp, _)| model_lps.is_none_or(|n| (*lp as u64) < n))
            .map(|(lp, c)| {
                let (other, all) = if payload_only {
                    (c[0], c[0] + c[1])
                } else {
                    (c[0] + c[2], c.iter().sum())
                };
                (lp as u32, all, other)
            })
            .filter(|(_, all, _)| *all > 0)
            .collect()
    }
}

/// Pass 2: for a few LPs, events per interval and per sender.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HotTally {
    /// The LPs counted, in order.
    pub lps: Vec<u32>,
    /// `lps.len() × intervals` counts, LP-major.
    pub per_interval: Vec<u64>,
    /// Events per (index in `lps`, sending LP).
    pub senders: BTreeMap<(u32, u32), u64>,
    intervals: usize,
    /// LP id → index in `lps` (u32::MAX: not counted).
    index: Vec<u32>,
}

impl HotTally {
    /// A tally of `lps` over `intervals` GVT intervals.
    pub fn new(lps: &[u32], intervals: usize) -> Self {
        let top = lps.iter().max().map_or(0, |m| *m as usize + 1);
        let mut index = vec![u32::MAX; top];
        for (i, lp) in lps.iter().enumerate() {
            index[*lp as usize] = i as u32;
        }
        HotTally {
            lps: lps.to_vec(),
            per_interval: vec![0; lps.len() * intervals.max(1)],
            senders: BTreeMap::new(),
            intervals: intervals.max(1),
            index,
        }
    }

    /// Counts the records of `reader` sent to the tally's LPs. Only events
    /// that pass 1 counted for the model are counted here (`payload_only`:
    /// those with a payload).
    pub fn read<R: std::io::Read>(
        &mut self,
        reader: &mut RecordReader<R>,
        grid: &GridIndex,
        payload_only: bool,
    ) -> Result<(), RossError> {
        let intervals = self.intervals;
        let (index, per_interval, senders) =
            (&self.index, &mut self.per_interval, &mut self.senders);
        reader.for_each_event(|e| {
            let Some(&i) = index.get(e.dest_lp as usize) else {
                return;
            };
            if i == u32::MAX || (payload_only && e.payload.is_empty()) {
                return;
            }
            let k = if grid.is_empty() {
                0
            } else {
                grid.interval_of(f64::from(e.recv_vts))
            };
            if let Some(n) = per_interval.get_mut(i as usize * intervals + k) {
                *n += 1;
            }
            *senders.entry((i, e.src_lp)).or_default() += 1;
        })
    }

    /// The per-interval counts as words (summed over AD ranks as they are).
    pub fn interval_words(&self) -> &[u64] {
        &self.per_interval
    }

    /// The sender counts as words `(index, sender, count)…`.
    pub fn sender_words(&self) -> Vec<u64> {
        self.senders
            .iter()
            .flat_map(|((i, s), c)| [u64::from(*i), u64::from(*s), *c])
            .collect()
    }

    /// Adds sender counts given as words.
    pub fn add_sender_words(&mut self, w: &[u64]) {
        for c in w.chunks_exact(3) {
            *self.senders.entry((c[0] as u32, c[1] as u32)).or_default() += c[2];
        }
    }

    /// The counts of the `i`-th LP per interval.
    pub fn intervals_of(&self, i: usize) -> &[u64] {
        &self.per_interval[i * self.intervals..(i + 1) * self.intervals]
    }

    /// The LPs that sent the `i`-th LP the most events (up to `n`, most
    /// first, ties by LP id).
    pub fn top_senders(&self, i: usize, n: usize) -> Vec<(u32, u64)> {
        let mut v: Vec<(u32, u64)> = self
            .senders
            .range((i as u32, 0)..=(i as u32, u32::MAX))
            .map(|((_, s), c)| (*s, *c))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_lookup_agrees_with_a_binary_search() {
        let grids: [&[f64]; 5] = [
            &[1.0, 2.0, 4.0, 8.0],
            &[5.0],
            &[],
            &[0.0, 0.0, 1.0, 1.0, 1.0, 1000.0],
            &[0.001, 0.002, 0.5, 0.5001, 0.9, 1e6, 1e6 + 1.0],
        ];
        for grid in grids {
            let idx = GridIndex::new(grid);
            let last = grid.len().saturating_sub(1);
            let mut ts: Vec<f64> = vec![-1.0, f64::NAN, 1e300, f64::INFINITY];
            for g in grid {
                ts.extend([*g - 1e-9, *g, *g + 1e-9, g * 0.5, g * 1.5]);
            }
            for t in ts {
                let want = grid.partition_point(|g| *g < t).min(last);
                assert_eq!(idx.interval_of(t), want, "grid {grid:?} t {t}");
            }
        }
    }

    #[test]
    fn words_round_trip_and_add_up() {
        let mut a = TraceTally::new(2);
        a.to_lp = vec![[1, 2, 3, 4], [0; 4], [5, 0, 0, 0]];
        a.per_interval = vec![7, 8];
        a.records = 15;
        a.bytes = 360;
        let w = a.to_words(5);
        assert_eq!(TraceTally::from_words(&w, 2), a);
        let sum: Vec<u64> = w.iter().map(|x| x * 2).collect();
        assert_eq!(TraceTally::from_words(&sum, 2).to_lp[2], [10, 0, 0, 0]);
    }
}
