//! The bucket counts of a fine histogram: a window of buckets that grows
//! as needed, and the group marks of the two-round reduction.

use super::{GROUP, NUM_BUCKETS};

/// Counts over a contiguous window of buckets that grows as needed (most
/// functions touch a few hundred buckets, not all 7424). Two `Counts` are
/// equal when their non-zero buckets are, whatever their windows.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    offset: usize,
    counts: Vec<u64>,
}

impl Counts {
    /// Adds `c` to the count of `bucket` (growing the window if needed).
    #[inline]
    pub fn add(&mut self, bucket: usize, c: u64) {
        if bucket < self.offset || bucket >= self.offset + self.counts.len() {
            self.grow_to(bucket);
        }
        self.counts[bucket - self.offset] += c;
    }

    /// Widens the window to include `bucket`, with slack on the growing
    /// side so that a spreading distribution does not reallocate often.
    fn grow_to(&mut self, bucket: usize) {
        if self.counts.is_empty() {
            self.offset = bucket.saturating_sub(8);
            let end = (bucket + 9).min(NUM_BUCKETS);
            self.counts = vec![0; end - self.offset];
            return;
        }
        let slack = self.counts.len().max(16);
        let (old_lo, old_hi) = (self.offset, self.offset + self.counts.len());
        let lo = if bucket < old_lo {
            bucket.saturating_sub(slack)
        } else {
            old_lo
        };
        let hi = if bucket >= old_hi {
            (bucket + 1 + slack).min(NUM_BUCKETS)
        } else {
            old_hi
        };
        let mut counts = vec![0; hi - lo];
        counts[old_lo - lo..old_hi - lo].copy_from_slice(&self.counts);
        self.offset = lo;
        self.counts = counts;
    }

    /// The count of `bucket` (0 outside the window).
    pub fn get(&self, bucket: usize) -> u64 {
        bucket
            .checked_sub(self.offset)
            .and_then(|i| self.counts.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Non-zero buckets in increasing order, as (bucket, count).
    pub fn iter(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(move |(i, &c)| (self.offset + i, c))
    }

    /// Zeroes the counts but keeps the window (the next step of the same
    /// function most likely touches the same buckets).
    pub fn clear(&mut self) {
        self.counts.iter_mut().for_each(|c| *c = 0);
    }

    /// Zeroes the count of `bucket` (nothing outside the window).
    pub(super) fn zero(&mut self, bucket: usize) {
        if let Some(c) = bucket
            .checked_sub(self.offset)
            .and_then(|i| self.counts.get_mut(i))
        {
            *c = 0;
        }
    }

    /// Sets bit `g` of `mask` for every group holding a count.
    pub(super) fn mark_groups(&self, mask: &mut [u64]) {
        for (b, _) in self.iter() {
            mark_group(mask, b);
        }
    }

    /// The 16 counts of group `g`.
    pub(super) fn group(&self, g: usize) -> [u64; GROUP] {
        // The window's part of the group copied whole, zeros around it
        // (what `get` gives bucket by bucket, without a bounds check each).
        let mut out = [0u64; GROUP];
        let (lo, hi) = (g * GROUP, (g + 1) * GROUP);
        let end = self.offset + self.counts.len();
        let from = lo.max(self.offset).min(hi);
        let to = hi.min(end).max(from);
        if from < to {
            out[from - lo..to - lo]
                .copy_from_slice(&self.counts[from - self.offset..to - self.offset]);
        }
        out
    }
}

/// Sets the bit of `bucket`'s group in a group mask.
#[inline]
pub(super) fn mark_group(mask: &mut [u64], bucket: usize) {
    let g = bucket / GROUP;
    mask[g / 64] |= 1u64 << (g % 64);
}

impl PartialEq for Counts {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Counts {}
