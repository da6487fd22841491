//! The compact form of a step's fine histograms on the reduction wire.
//!
//! A step adds a few executions per function, so most of the bits of its
//! partial sums are zero: Σx⁴ of four 100 µs runtimes needs 29 bits of its
//! 256, and a bucket count of a step is a small number in a 64-bit word.
//! Sent at full width, those zeros were most of the reduction's bytes (544
//! bytes per function and step at 10^4 functions). Round 1 therefore
//! carries, besides the count, extremes and group mask, how many 32-bit
//! limbs each power sum needs on this rank ([`limb_widths`], one-hot per
//! sum, so that `MPI_BOR` over ranks yields the widest: [`widest_limbs`]),
//! and round 2 sends each power sum in that many limbs and the bucket
//! counts packed into 16- or 32-bit lanes when the step's global count
//! fits ([`lane_bits`]). Both layouts follow from reduced values only, so
//! every rank packs and unpacks alike, and the sums stay exact:
//!
//! - a limb travels in the low half of a 64-bit word, so the `SUM` over up
//!   to 2^32 ranks carries into the high half, and [`read_sums`] folds the
//!   carries on into the limbs above (the total may need one limb more
//!   than the widest rank sent);
//! - a lane never overflows: a rank's count of a bucket is at most its
//!   count of executions, and the lanes' totals are at most the step's
//!   global count, below the lane's limit by the choice of the width.

use super::{Counts, ExactMoments, GROUP};
use crate::detect::stats::exact::{fold_limbs32, U256};

/// Bits of one power sum's field in the widths word (one-hot limb count,
/// 0..=8).
const FIELD: u32 = 16;

/// The 32-bit limbs a value of 64-bit limbs `v` needs (0 for zero).
fn limbs_of(v: &[u64]) -> usize {
    let top = v.iter().rposition(|&w| w != 0);
    top.map_or(0, |i| 2 * i + 1 + usize::from(v[i] >> 32 != 0))
}

/// The power sums Σx, Σx², Σx³, Σx⁴ as little-endian 64-bit limbs.
fn sums(m: &ExactMoments) -> [[u64; 4]; 4] {
    let wide = |v: u128| [v as u64, (v >> 64) as u64, 0, 0];
    [wide(m.s1), wide(m.s2), m.s3.0, m.s4.0]
}

/// One word saying how many 32-bit limbs each power sum of `m` needs:
/// bit `16·k + L` for power sum `k + 1` needing `L` limbs. ORed over ranks
/// it holds every rank's bit; [`widest_limbs`] reads the highest.
pub(super) fn limb_widths(m: &ExactMoments) -> u64 {
    sums(m)
        .iter()
        .enumerate()
        .fold(0, |w, (k, v)| w | 1 << (FIELD as usize * k + limbs_of(v)))
}

/// The widest limb count of each power sum in an ORed widths word.
pub(super) fn widest_limbs(word: u64) -> [u8; 4] {
    let mut out = [0u8; 4];
    for (k, o) in out.iter_mut().enumerate() {
        let field = (word >> (FIELD as usize * k)) & 0xFFFF;
        *o = (u64::BITS - 1 - (field | 1).leading_zeros()) as u8;
    }
    out
}

/// Appends the power sums of `m` in `widths` 32-bit limbs each, one limb
/// per word (the high half free for the carries of the `SUM`).
pub(super) fn push_sums(m: &ExactMoments, widths: [u8; 4], out: &mut Vec<u64>) {
    for (v, &w) in sums(m).iter().zip(&widths) {
        for i in 0..usize::from(w) {
            out.push((v[i / 2] >> (32 * (i % 2))) & 0xFFFF_FFFF);
        }
    }
}

/// The global moments of a step from its reduced count, extremes, limb
/// widths and the `SUM` of the words [`push_sums`] wrote (`words` holds
/// exactly their total).
pub(super) fn read_sums(
    n: u64,
    min: u64,
    max: u64,
    widths: [u8; 4],
    words: &[u64],
) -> ExactMoments {
    let mut pos = 0;
    // Σx and Σx² fit 128 bits, Σx³ and Σx⁴ 256 (see `exact`): a carry
    // beyond is never there.
    let mut field = |w: u8, n64: usize| {
        let limbs = &words[pos..pos + usize::from(w)];
        pos += usize::from(w);
        let v = fold_limbs32(limbs, n64);
        [v[0], v[1], v[2], v[3]]
    };
    let (s1, s2, s3, s4) = (
        field(widths[0], 2),
        field(widths[1], 2),
        field(widths[2], 4),
        field(widths[3], 4),
    );
    let narrow = |v: [u64; 4]| v[0] as u128 | (v[1] as u128) << 64;
    ExactMoments {
        n,
        s1: narrow(s1),
        s2: narrow(s2),
        s3: U256(s3),
        s4: U256(s4),
        min: if n == 0 { 0 } else { min },
        max: if n == 0 { 0 } else { max },
    }
}

/// Bits per count on the wire when no count exceeds `n` (for a step's
/// buckets: the step's global count of executions of the function; for a
/// shared labelling histogram: the function's global count).
pub fn lane_bits(n: u64) -> u32 {
    if n < 1 << 16 {
        16
    } else if n < 1 << 32 {
        32
    } else {
        64
    }
}

/// Words of one bucket group with `bits`-bit lanes.
pub(super) fn words_per_group(bits: u32) -> usize {
    GROUP * bits as usize / 64
}

/// Appends `values` (each below `2^bits`) in `bits`-bit lanes: value `i`
/// in lane `i % (64 / bits)` of word `i / (64 / bits)`.
pub fn push_lanes(values: &[u64], bits: u32, out: &mut Vec<u64>) {
    let per = (64 / bits) as usize;
    for lanes in values.chunks(per) {
        let word = lanes
            .iter()
            .enumerate()
            .fold(0u64, |w, (l, &c)| w | c << (l as u32 * bits));
        out.push(word);
    }
}

/// The bits of one `bits`-bit lane.
fn lane_mask(bits: u32) -> u64 {
    u64::MAX >> (64 - bits)
}

/// The first `len` values [`push_lanes`] wrote as `words` (zeros where the
/// words run short), appended to `out`.
pub fn read_lanes(words: &[u64], len: usize, bits: u32, out: &mut Vec<u64>) {
    let (per, lane) = ((64 / bits) as usize, lane_mask(bits));
    out.extend((0..len).map(|i| {
        let w = words.get(i / per).copied().unwrap_or(0);
        (w >> ((i % per) as u32 * bits)) & lane
    }));
}

/// Appends the counts of group `g` in `bits`-bit lanes (bucket `g·16 + i`
/// as value `i` of [`push_lanes`]).
pub(super) fn push_group(counts: &Counts, g: usize, bits: u32, out: &mut Vec<u64>) {
    push_lanes(&counts.group(g), bits, out);
}

/// The non-zero `(bucket, count)` of group `g` from its reduced words, in
/// increasing bucket order, appended to `out`.
pub(super) fn read_group(words: &[u64], g: usize, bits: u32, out: &mut Vec<(usize, u64)>) {
    let (per, lane) = ((64 / bits) as usize, lane_mask(bits));
    for (j, &w) in words.iter().enumerate() {
        if w == 0 {
            continue;
        }
        for l in 0..per {
            let c = (w >> (l as u32 * bits)) & lane;
            if c > 0 {
                out.push((g * GROUP + j * per + l, c));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(values: &[u64]) -> ExactMoments {
        let mut m = ExactMoments::default();
        values.iter().for_each(|&x| m.push(x));
        m
    }

    #[test]
    fn limb_counts_are_the_widest_rank_s() {
        assert_eq!(limbs_of(&[0, 0]), 0);
        assert_eq!(limbs_of(&[1, 0]), 1);
        assert_eq!(limbs_of(&[1 << 32, 0]), 2);
        assert_eq!(limbs_of(&[0, 1, 0, 0]), 3);
        assert_eq!(limbs_of(&[0, 0, 0, u64::MAX]), 8);
        let small = moments(&[100, 100, 100, 100]);
        // Σx = 400, Σx² = 40,000, Σx³ = 4·10^6, Σx⁴ = 4·10^8: one limb each.
        assert_eq!(widest_limbs(limb_widths(&small)), [1, 1, 1, 1]);
        let big = moments(&[1 << 40, 3]);
        let both = limb_widths(&small) | limb_widths(&big);
        // Σx ≈ 2^40, Σx² ≈ 2^80, Σx³ ≈ 2^120, Σx⁴ ≈ 2^160.
        assert_eq!(widest_limbs(both), [2, 3, 4, 6]);
        assert_eq!(widest_limbs(limb_widths(&ExactMoments::default())), [0; 4]);
    }

    #[test]
    fn summed_limbs_carry_into_the_limbs_above() {
        // Each rank's Σx fits one limb, their total does not.
        let ranks: Vec<ExactMoments> = (0..5).map(|_| moments(&[0xFFFF_0000])).collect();
        let widths = widest_limbs(ranks.iter().fold(0, |w, m| w | limb_widths(m)));
        let mut summed: Vec<u64> = Vec::new();
        for m in &ranks {
            let mut words = Vec::new();
            push_sums(m, widths, &mut words);
            summed.resize(words.len(), 0);
            summed.iter_mut().zip(&words).for_each(|(s, w)| *s += w);
        }
        let mut want = ExactMoments::default();
        ranks.iter().for_each(|m| want.merge(m));
        let got = read_sums(want.n, want.min, want.max, widths, &summed);
        assert_eq!(got, want);
    }

    #[test]
    fn lanes_pack_and_unpack_every_bucket() {
        let mut counts = Counts::default();
        let mut want = Vec::new();
        for (i, b) in [480usize, 481, 486, 490, 495].into_iter().enumerate() {
            let c = 1000 * i as u64 + 7;
            counts.add(b, c);
            want.push((b, c));
        }
        for bits in [16, 32, 64] {
            let mut words = Vec::new();
            push_group(&counts, 30, bits, &mut words);
            assert_eq!(words.len(), words_per_group(bits));
            let mut got = Vec::new();
            read_group(&words, 30, bits, &mut got);
            assert_eq!(got, want, "{bits}-bit lanes");
        }
        assert_eq!((lane_bits(65_535), lane_bits(65_536)), (16, 32));
        let values: Vec<u64> = (0..7u64).map(|i| 9_000 * i + 1).collect();
        for bits in [16, 32, 64] {
            let mut words = Vec::new();
            push_lanes(&values, bits, &mut words);
            assert_eq!(words.len(), 7usize.div_ceil((64 / bits) as usize));
            let mut back = Vec::new();
            read_lanes(&words, values.len(), bits, &mut back);
            assert_eq!(back, values, "{bits}-bit lanes");
        }
        assert_eq!((lane_bits(u32::MAX as u64), lane_bits(1 << 32)), (32, 64));
    }
}
