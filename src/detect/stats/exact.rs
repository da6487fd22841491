//! Exact statistics: integer power sums of integer-microsecond runtimes.
//!
//! Floating-point running moments (Welford, Chan/Pébay merges) give results
//! that depend on the order in which data are merged, so the model would
//! depend on how many AD ranks read the streams. Here every partial model is
//! a set of integers — count, Σx, Σx², Σx³, Σx⁴, min, max — whose merge is
//! integer addition: associative, commutative, and therefore bit-identical
//! for any split of the data and any merge order. Floating point appears
//! only when a statistic is read, computed from the exact totals.
//!
//! Widths: runtimes are below 2^44 µs (200 days) and counts below 2^40, so
//! Σx < 2^84, Σx² < 2^128, Σx³ and Σx⁴ fit in 256 bits. Central moments are
//! formed exactly in 512-bit signed arithmetic before the one conversion.
//!
//! This file is long because the wide-integer arithmetic (`U256`, `I512`)
//! and both moment kinds belong together — the moments are exact only
//! through it — and because of its unit tests.

use std::cmp::Ordering;

/// Unsigned 256-bit integer, little-endian 64-bit limbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct U256(pub [u64; 4]);

impl U256 {
    /// Zero.
    pub const ZERO: U256 = U256([0; 4]);

    /// The value of `v`, zero-extended.
    pub fn from_u128(v: u128) -> Self {
        U256([v as u64, (v >> 64) as u64, 0, 0])
    }

    /// Wrapping addition (our sums never reach 2^256).
    #[inline]
    pub fn add(&mut self, other: &U256) {
        // The carry out of 256 bits is dropped: that is the wrapping.
        let _ = self.add_carry(other);
    }

    /// Adds a 128-bit value (wrapping, like [`U256::add`]).
    #[inline]
    pub fn add_u128(&mut self, v: u128) {
        let (lo, c0) = self.0[0].overflowing_add(v as u64);
        self.0[0] = lo;
        let (mid, c1) = self.0[1].overflowing_add((v >> 64) as u64);
        let (mid, c2) = mid.overflowing_add(c0 as u64);
        self.0[1] = mid;
        let carry = (c1 as u64) + (c2 as u64);
        if carry != 0 {
            let (hi, c3) = self.0[2].overflowing_add(carry);
            self.0[2] = hi;
            self.0[3] = self.0[3].wrapping_add(c3 as u64);
        }
    }

    /// Adds `other`; returns whether the sum carried out of 256 bits.
    #[inline]
    pub fn add_carry(&mut self, other: &U256) -> bool {
        let mut carry = 0u64;
        for i in 0..4 {
            let (s1, c1) = self.0[i].overflowing_add(other.0[i]);
            let (s2, c2) = s1.overflowing_add(carry);
            self.0[i] = s2;
            carry = (c1 as u64) + (c2 as u64);
        }
        carry != 0
    }

    /// `a * b` for 128-bit operands (exact, < 2^256).
    #[inline]
    pub fn mul_u128(a: u128, b: u128) -> U256 {
        let (a0, a1) = (a as u64 as u128, (a >> 64) as u64 as u128);
        let (b0, b1) = (b as u64 as u128, (b >> 64) as u64 as u128);
        let mut r = U256::from_u128(a0 * b0);
        let mid1 = a0 * b1;
        let mid2 = a1 * b0;
        r.add(&U256([0, mid1 as u64, (mid1 >> 64) as u64, 0]));
        r.add(&U256([0, mid2 as u64, (mid2 >> 64) as u64, 0]));
        let hi = a1 * b1;
        r.add(&U256([0, 0, hi as u64, (hi >> 64) as u64]));
        r
    }

    /// `self − other`, or `None` when `other` is larger.
    pub fn checked_sub(&self, other: &U256) -> Option<U256> {
        let mut out = [0u64; 4];
        let mut borrow = false;
        for (i, o) in out.iter_mut().enumerate() {
            let (d1, b1) = self.0[i].overflowing_sub(other.0[i]);
            let (d2, b2) = d1.overflowing_sub(u64::from(borrow));
            *o = d2;
            borrow = b1 || b2;
        }
        (!borrow).then_some(U256(out))
    }

    /// The value as `f64` (rounded; deterministic).
    pub fn to_f64(&self) -> f64 {
        I512::from_u256(self).to_f64()
    }

    /// Decimal digits, for JSON output of exact totals.
    pub fn to_decimal(&self) -> String {
        I512::from_u256(self).to_decimal()
    }
}

/// Signed 512-bit integer in two's complement, little-endian limbs; used
/// only to form central moments exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct I512(pub [u64; 8]);

impl I512 {
    /// Zero.
    pub const ZERO: I512 = I512([0; 8]);

    /// The value of `v`, zero-extended.
    pub fn from_u128(v: u128) -> Self {
        let mut l = [0u64; 8];
        l[0] = v as u64;
        l[1] = (v >> 64) as u64;
        I512(l)
    }

    /// The value of `v`, zero-extended.
    pub fn from_u64(v: u64) -> Self {
        Self::from_u128(v as u128)
    }

    /// The value of `v`, zero-extended (always non-negative).
    pub fn from_u256(v: &U256) -> Self {
        let mut l = [0u64; 8];
        l[..4].copy_from_slice(&v.0);
        I512(l)
    }

    /// The value of `v`, sign-extended (for tests).
    #[cfg(test)]
    pub(super) fn from_i128_for_tests(v: i128) -> Self {
        let fill = if v < 0 { u64::MAX } else { 0 };
        let mut l = [fill; 8];
        l[0] = v as u64;
        l[1] = (v >> 64) as u64;
        I512(l)
    }

    /// True when the sign bit is set.
    pub fn is_negative(&self) -> bool {
        (self.0[7] >> 63) == 1
    }

    /// `self + o`, wrapping at 512 bits.
    pub fn add(&self, o: &I512) -> I512 {
        let mut r = [0u64; 8];
        let mut carry = 0u64;
        for (i, out) in r.iter_mut().enumerate() {
            let (s1, c1) = self.0[i].overflowing_add(o.0[i]);
            let (s2, c2) = s1.overflowing_add(carry);
            *out = s2;
            carry = (c1 as u64) + (c2 as u64);
        }
        I512(r)
    }

    /// `-self` (two's complement).
    pub fn neg(&self) -> I512 {
        let mut inv = [0u64; 8];
        for (i, out) in inv.iter_mut().enumerate() {
            *out = !self.0[i];
        }
        I512(inv).add(&I512::from_u64(1))
    }

    /// `self - o`, wrapping at 512 bits.
    pub fn sub(&self, o: &I512) -> I512 {
        self.add(&o.neg())
    }

    fn abs_limbs(&self) -> [u64; 8] {
        if self.is_negative() {
            self.neg().0
        } else {
            self.0
        }
    }

    /// Product truncated to 512 bits (exact for our magnitudes, < 2^400).
    /// Only the limbs in use are multiplied: runtime sums of a few thousand
    /// values fill one or two of the eight, and the statistics of every
    /// function that changed are formed from these products at each
    /// provenance flush.
    pub fn mul(&self, o: &I512) -> I512 {
        let negative = self.is_negative() != o.is_negative();
        let (a, b) = (self.abs_limbs(), o.abs_limbs());
        let used = |l: &[u64; 8]| l.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
        let (la, lb) = (used(&a), used(&b));
        let mut r = [0u64; 8];
        for i in 0..la {
            if a[i] == 0 {
                continue;
            }
            let mut carry = 0u128;
            let top = lb.min(8 - i);
            for j in 0..top {
                let t = a[i] as u128 * b[j] as u128 + r[i + j] as u128 + carry;
                r[i + j] = t as u64;
                carry = t >> 64;
            }
            // b's limbs above `top` are zero: only the carry moves on.
            for slot in r.iter_mut().skip(i + top) {
                if carry == 0 {
                    break;
                }
                let t = *slot as u128 + carry;
                *slot = t as u64;
                carry = t >> 64;
            }
        }
        let p = I512(r);
        if negative {
            p.neg()
        } else {
            p
        }
    }

    /// `self * k` (truncated to 512 bits, like [`I512::mul`]).
    pub fn mul_u64(&self, k: u64) -> I512 {
        self.mul(&I512::from_u64(k))
    }

    /// Nearest-ish f64 (sums limbs from the top; deterministic).
    pub fn to_f64(&self) -> f64 {
        let l = self.abs_limbs();
        let mut v = 0.0f64;
        for i in (0..8).rev() {
            v = v * 18446744073709551616.0 + l[i] as f64;
        }
        if self.is_negative() {
            -v
        } else {
            v
        }
    }

    /// Sign of the value, as an ordering against zero.
    pub fn cmp_zero(&self) -> Ordering {
        if self.is_negative() {
            Ordering::Less
        } else if self.0.iter().all(|&x| x == 0) {
            Ordering::Equal
        } else {
            Ordering::Greater
        }
    }

    /// Decimal digits, with a leading `-` when negative.
    pub fn to_decimal(&self) -> String {
        let mut l = self.abs_limbs();
        if l.iter().all(|&x| x == 0) {
            return "0".into();
        }
        let mut digits = Vec::new();
        while l.iter().any(|&x| x != 0) {
            // Divide by 10^19 (largest power of ten in a u64).
            let mut rem = 0u128;
            for i in (0..8).rev() {
                let cur = (rem << 64) | l[i] as u128;
                l[i] = (cur / 10_000_000_000_000_000_000u128) as u64;
                rem = cur % 10_000_000_000_000_000_000u128;
            }
            digits.push(rem as u64);
        }
        let mut s = String::new();
        if self.is_negative() {
            s.push('-');
        }
        s.push_str(&digits.pop().unwrap_or(0).to_string());
        for d in digits.iter().rev() {
            s.push_str(&format!("{d:019}"));
        }
        s
    }
}

/// Count, power sums, min and max of integer runtimes: the exact, mergeable
/// state behind every statistic we report (mean, stddev, skewness, kurtosis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ExactMoments {
    /// Number of values.
    pub n: u64,
    /// Σx.
    pub s1: u128,
    /// Σx².
    pub s2: u128,
    /// Σx³.
    pub s3: U256,
    /// Σx⁴.
    pub s4: U256,
    /// Smallest value; valid only when `n > 0`.
    pub min: u64,
    /// Largest value; valid only when `n > 0`.
    pub max: u64,
}

/// Number of 32-bit limbs (stored in u64 words) of the SUM-reduced part.
pub const MOMENT_SUM_WORDS: usize = 2 + 4 + 4 + 8 + 8;

impl ExactMoments {
    /// The sums as [`super::narrow`] takes them.
    pub(crate) fn sums_128(&self) -> super::narrow::PowerSums128<'_> {
        super::narrow::PowerSums128 {
            n: self.n,
            s1: self.s1,
            s2: self.s2,
            s3: &self.s3.0,
            s4: &self.s4.0,
        }
    }

    /// Adds one value (below 2^44, the range the sums are sized for).
    // Always inlined: called up to three times per execution (the model,
    // the inclusive and the exclusive profile).
    #[inline(always)]
    pub fn push(&mut self, x: u64) {
        count_values(&mut self.n, &mut self.min, &mut self.max, 1, [x, x]);
        if x < 1 << 32 {
            // The common case (runtimes below 71 minutes): x² fits 64 bits
            // and x³, x⁴ fit 128, so three plain multiplications suffice.
            let x2 = x * x;
            let x3 = x2 as u128 * x as u128;
            let x4 = x2 as u128 * x2 as u128;
            self.s1 += x as u128;
            self.s2 = self.s2.wrapping_add(x2 as u128);
            self.s3.add_u128(x3);
            self.s4.add_u128(x4);
            return;
        }
        let x = x as u128;
        let x2 = x * x; // < 2^128 for x < 2^64
        self.s1 += x;
        self.s2 = self.s2.wrapping_add(x2);
        self.s3.add(&U256::mul_u128(x2, x));
        self.s4.add(&U256::mul_u128(x2, x2));
    }

    /// Exact merge (integer sums; order never matters).
    pub fn merge(&mut self, o: &ExactMoments) {
        if !merge_counts(self, o) {
            return;
        }
        self.s1 += o.s1;
        self.s2 = self.s2.wrapping_add(o.s2);
        self.s3.add(&o.s3);
        self.s4.add(&o.s4);
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean of the values; 0 when empty.
    pub fn mean(&self) -> f64 {
        mean_of(self.n, self.s1)
    }

    /// Appends the SUM-reducible part as 32-bit limbs in u64 words, so that
    /// an MPI `SUM` over ranks cannot overflow a word (carries are resolved
    /// by [`from_words`](Self::from_words)).
    pub fn sum_words(&self, out: &mut Vec<u64>) {
        push_count_and_sum(out, self.n, self.s1);
        push_limbs32(out, &[self.s2 as u64, (self.s2 >> 64) as u64]);
        push_limbs32(out, &self.s3.0);
        push_limbs32(out, &self.s4.0);
    }

    /// Rebuilds from reduced words plus the reduced min and max.
    pub fn from_words(words: &[u64], min: u64, max: u64) -> ExactMoments {
        let mut limbs = Limbs32 { words, pos: 0 };
        let n = limbs.take(1)[0];
        let (min, max) = extremes_of(n, min, max);
        ExactMoments {
            n,
            s1: limbs.take_u128(),
            s2: limbs.take_u128(),
            s3: limbs.take_u256(),
            s4: limbs.take_u256(),
            min,
            max,
        }
    }
}

/// Count and power sums Σx..Σx⁴ of a set of values as 512-bit integers:
/// what [`Moments`] derives its statistics from, exactly.
pub struct PowerSums {
    n: u64,
    s1: I512,
    s2: I512,
    s3: I512,
    s4: I512,
}

impl PowerSums {
    /// [`PowerSums::shape`], for the tests of the narrow path.
    #[cfg(test)]
    pub(super) fn shape_for_tests(&self) -> (f64, f64) {
        self.shape()
    }

    /// n·M2 = n·Σx² − (Σx)².
    fn n_m2(&self) -> I512 {
        let n = I512::from_u64(self.n);
        n.mul(&self.s2).sub(&self.s1.mul(&self.s1))
    }

    /// n²·M3 = n²Σx³ − 3nΣxΣx² + 2(Σx)³.
    fn n2_m3(&self) -> I512 {
        let n = I512::from_u64(self.n);
        let s1 = &self.s1;
        n.mul(&n)
            .mul(&self.s3)
            .sub(&n.mul(s1).mul(&self.s2).mul_u64(3))
            .add(&s1.mul(s1).mul(s1).mul_u64(2))
    }

    /// n³·M4 = n³Σx⁴ − 4n²ΣxΣx³ + 6n(Σx)²Σx² − 3(Σx)⁴.
    fn n3_m4(&self) -> I512 {
        let n = I512::from_u64(self.n);
        let s1_2 = self.s1.mul(&self.s1);
        n.mul(&n)
            .mul(&n)
            .mul(&self.s4)
            .sub(&n.mul(&n).mul(&self.s1).mul(&self.s3).mul_u64(4))
            .add(&n.mul(&s1_2).mul(&self.s2).mul_u64(6))
            .sub(&s1_2.mul(&s1_2).mul_u64(3))
    }

    fn variance(&self, ddof: u64) -> f64 {
        if self.n <= ddof {
            return 0.0;
        }
        let nm2 = self.n_m2();
        if nm2.cmp_zero() != Ordering::Greater {
            return 0.0;
        }
        nm2.to_f64() / (self.n as f64 * (self.n - ddof) as f64)
    }

    fn skewness(&self) -> f64 {
        let nm2 = self.n_m2();
        if self.n < 2 || nm2.cmp_zero() != Ordering::Greater {
            return 0.0;
        }
        let n = self.n as f64;
        let m2 = nm2.to_f64() / n;
        let m3 = self.n2_m3().to_f64() / (n * n);
        n.sqrt() * m3 / m2.powf(1.5)
    }

    fn kurtosis(&self) -> f64 {
        self.shape().1
    }

    /// Skewness and kurtosis (as [`PowerSums::skewness`] and
    /// [`PowerSums::kurtosis`] compute them) from one `n·M2`.
    fn shape(&self) -> (f64, f64) {
        let nm2 = self.n_m2();
        if self.n < 2 || nm2.cmp_zero() != Ordering::Greater {
            return (0.0, 0.0);
        }
        let n = self.n as f64;
        let m2 = nm2.to_f64() / n;
        let m3 = self.n2_m3().to_f64() / (n * n);
        let m4 = self.n3_m4().to_f64() / (n * n * n);
        (n.sqrt() * m3 / m2.powf(1.5), n * m4 / (m2 * m2) - 3.0)
    }
}

/// Like [`ExactMoments`] for values over the whole `u64` range (counter
/// values: byte counts, instruction counts, ids), with wider sums: Σx² and
/// Σx³ in 256 bits, Σx⁴ in 320. A little slower, so runtimes (always
/// below 2^44 µs) keep the narrower type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct WideMoments {
    /// Number of values.
    pub n: u64,
    /// Σx.
    pub s1: u128,
    /// Σx².
    pub s2: U256,
    /// Σx³.
    pub s3: U256,
    /// Low 256 bits of Σx⁴ (Σx⁴ = s4 + s4_carry·2^256).
    pub s4: U256,
    /// Bits of Σx⁴ above 256 (see `s4`).
    pub s4_carry: u64,
    /// Smallest value; valid only when `n > 0`.
    pub min: u64,
    /// Largest value; valid only when `n > 0`.
    pub max: u64,
}

/// Words of [`WideMoments::sum_words`].
pub const WIDE_SUM_WORDS: usize = 2 + 4 + 8 + 8 + 8 + 2;

impl WideMoments {
    /// Adds one value (any `u64`).
    #[inline]
    pub fn push(&mut self, x: u64) {
        count_values(&mut self.n, &mut self.min, &mut self.max, 1, [x, x]);
        let x = x as u128;
        let x2 = x * x; // exact: x < 2^64
        self.s1 += x;
        self.s2.add(&U256::from_u128(x2));
        self.s3.add(&U256::mul_u128(x2, x));
        if self.s4.add_carry(&U256::mul_u128(x2, x2)) {
            self.s4_carry += 1;
        }
    }

    /// Exact merge (integer sums; order never matters).
    pub fn merge(&mut self, o: &WideMoments) {
        if !merge_counts(self, o) {
            return;
        }
        self.s1 += o.s1;
        self.s2.add(&o.s2);
        self.s3.add(&o.s3);
        if self.s4.add_carry(&o.s4) {
            self.s4_carry += 1;
        }
        self.s4_carry += o.s4_carry;
    }

    /// Mean of the values; 0 when empty.
    pub fn mean(&self) -> f64 {
        mean_of(self.n, self.s1)
    }

    /// The SUM-reducible part as 32-bit limbs (see
    /// [`ExactMoments::sum_words`]).
    pub fn sum_words(&self, out: &mut Vec<u64>) {
        push_count_and_sum(out, self.n, self.s1);
        push_limbs32(out, &self.s2.0);
        push_limbs32(out, &self.s3.0);
        push_limbs32(out, &self.s4.0);
        push_limbs32(out, &[self.s4_carry]);
    }

    /// Rebuilds from reduced words plus the reduced min and max. The carry
    /// out of Σx⁴'s low 256 bits lands in its last limb.
    pub fn from_words(words: &[u64], min: u64, max: u64) -> WideMoments {
        let mut limbs = Limbs32 { words, pos: 0 };
        let n = limbs.take(1)[0];
        let (min, max) = extremes_of(n, min, max);
        let (s1, s2, s3) = (limbs.take_u128(), limbs.take_u256(), limbs.take_u256());
        // Σx⁴ and its carry word fold together as one 320-bit number.
        let s4 = limbs.take(5);
        WideMoments {
            n,
            s1,
            s2,
            s3,
            s4: U256([s4[0], s4[1], s4[2], s4[3]]),
            s4_carry: s4[4],
            min,
            max,
        }
    }
}

/// Mean of `n` values that sum to `s1`; 0 when there are none. Both
/// moment kinds keep the count and Σx alike, so they share it.
#[inline]
fn mean_of(n: u64, s1: u128) -> f64 {
    if n == 0 {
        return 0.0;
    }
    s1 as f64 / n as f64
}

/// Counts `added` more values lying in `[lo, hi]` (one value, or the
/// extremes of other values): adds them to the count `n` and widens the
/// extremes `[min, max]` to take them; the first values set them.
// Always inlined: `push` is, and calls it for every value.
#[inline(always)]
fn count_values(n: &mut u64, min: &mut u64, max: &mut u64, added: u64, [lo, hi]: [u64; 2]) {
    if *n == 0 {
        *min = lo;
        *max = hi;
    } else {
        *min = (*min).min(lo);
        *max = (*max).max(hi);
    }
    *n += added;
}

/// What both kinds of moments keep besides their sums: how many values
/// and their extremes.
trait Counted: Copy {
    /// `[n, min, max]`.
    fn counts(&self) -> [u64; 3];
    /// `n`, `min` and `max`, to update.
    fn counts_mut(&mut self) -> (&mut u64, &mut u64, &mut u64);
}

impl Counted for ExactMoments {
    fn counts(&self) -> [u64; 3] {
        [self.n, self.min, self.max]
    }
    fn counts_mut(&mut self) -> (&mut u64, &mut u64, &mut u64) {
        (&mut self.n, &mut self.min, &mut self.max)
    }
}

impl Counted for WideMoments {
    fn counts(&self) -> [u64; 3] {
        [self.n, self.min, self.max]
    }
    fn counts_mut(&mut self) -> (&mut u64, &mut u64, &mut u64) {
        (&mut self.n, &mut self.min, &mut self.max)
    }
}

/// The part of a merge both kinds of moments share: empty `other` adds
/// nothing, empty `this` becomes a copy of `other`, and otherwise the
/// counts and extremes are merged. Returns whether the sums are still to
/// be added (both held values).
#[inline]
fn merge_counts<T: Counted>(this: &mut T, other: &T) -> bool {
    let [added, lo, hi] = other.counts();
    if added == 0 {
        return false;
    }
    if this.counts()[0] == 0 {
        *this = *other;
        return false;
    }
    let (n, min, max) = this.counts_mut();
    count_values(n, min, max, added, [lo, hi]);
    true
}

/// The reduced min and max as stored: 0 and 0 when there are no values
/// (the reduced extremes of empty ranks mean nothing).
#[inline]
fn extremes_of(n: u64, min: u64, max: u64) -> (u64, u64) {
    if n == 0 {
        (0, 0)
    } else {
        (min, max)
    }
}

/// Appends the count and Σx as 32-bit limbs: the words every moment
/// kind's SUM-reducible part begins with.
fn push_count_and_sum(out: &mut Vec<u64>, n: u64, s1: u128) {
    push_limbs32(out, &[n]);
    push_limbs32(out, &[s1 as u64, (s1 >> 64) as u64]);
}

/// Appends 64-bit limbs as pairs of 32-bit limbs, low half first.
fn push_limbs32(out: &mut Vec<u64>, limbs64: &[u64]) {
    for &l in limbs64 {
        out.push(l & 0xFFFF_FFFF);
        out.push(l >> 32);
    }
}

/// Reads SUM-reduced 32-bit limbs back, one field at a time.
struct Limbs32<'a> {
    words: &'a [u64],
    pos: usize,
}

impl Limbs32<'_> {
    /// The next field of `n64` 64-bit limbs (at most [`MAX_FIELD_LIMBS`];
    /// the rest of the array is zero).
    #[inline]
    fn take(&mut self, n64: usize) -> [u64; MAX_FIELD_LIMBS] {
        let v = fold_limbs32(&self.words[self.pos..self.pos + 2 * n64], n64);
        self.pos += 2 * n64;
        v
    }

    /// The next field as a `u128` (two 64-bit limbs).
    #[inline]
    fn take_u128(&mut self) -> u128 {
        let l = self.take(2);
        l[0] as u128 | (l[1] as u128) << 64
    }

    /// The next field as a [`U256`] (four 64-bit limbs).
    #[inline]
    fn take_u256(&mut self) -> U256 {
        let l = self.take(4);
        U256([l[0], l[1], l[2], l[3]])
    }
}

/// The widest field read back (Σx⁴ of [`WideMoments`] with its carry
/// word). A fixed array, not a `Vec`: every function of every step reads
/// five fields, and their allocations showed in the merge's profile.
const MAX_FIELD_LIMBS: usize = 5;

/// Sums of 32-bit limbs (each possibly > 2^32 after a SUM) back to `n64`
/// 64-bit limbs. `words` may hold fewer than `2·n64` limbs (the compact
/// wire sends only as many as the widest rank needs): the carries then
/// move on into the limbs above the last one sent.
#[inline]
pub(super) fn fold_limbs32(words: &[u64], n64: usize) -> [u64; MAX_FIELD_LIMBS] {
    let mut out = [0u64; MAX_FIELD_LIMBS];
    let mut carry: u128 = 0;
    for i in 0..2 * n64 {
        if i >= words.len() && carry == 0 {
            break;
        }
        let v = words.get(i).copied().unwrap_or(0) as u128 + carry;
        let limb32 = (v & 0xFFFF_FFFF) as u64;
        carry = v >> 32;
        out[i / 2] |= limb32 << (32 * (i % 2));
    }
    out
}

/// The statistics derived from exact power sums, the same for every kind of
/// exact moments: computed when read, from the exact sums, so they do not
/// depend on the order the values were merged in.
pub trait Moments {
    /// The power sums Σx⁰..Σx⁴ as wide integers.
    fn sums(&self) -> PowerSums;

    /// Variance with `ddof` (Chimbuko uses 1); 0 when `n <= ddof`.
    #[inline]
    fn variance(&self, ddof: u64) -> f64 {
        self.sums().variance(ddof)
    }

    /// Standard deviation with `ddof` (the square root of
    /// [`variance`](Self::variance)).
    #[inline]
    fn stddev(&self, ddof: u64) -> f64 {
        self.variance(ddof).sqrt()
    }

    /// Population skewness g1 = √n·M3 / M2^{3/2}; 0 if all values are equal.
    #[inline]
    fn skewness(&self) -> f64 {
        self.sums().skewness()
    }

    /// Excess population kurtosis n·M4 / M2² − 3; 0 if all values are equal.
    #[inline]
    fn kurtosis(&self) -> f64 {
        self.sums().kurtosis()
    }

    /// [`skewness`](Self::skewness) and [`kurtosis`](Self::kurtosis)
    /// together, sharing their power sums and `n·M2`.
    #[inline]
    fn skewness_kurtosis(&self) -> (f64, f64) {
        self.sums().shape()
    }
}

impl Moments for ExactMoments {
    /// The 512-bit default's answer, in 128-bit integers when they suffice
    /// (see [`super::narrow`]): the same bits.
    fn skewness(&self) -> f64 {
        super::narrow::shape(&self.sums_128()).map_or_else(|| self.sums().skewness(), |s| s.0)
    }

    fn kurtosis(&self) -> f64 {
        self.skewness_kurtosis().1
    }

    fn skewness_kurtosis(&self) -> (f64, f64) {
        super::narrow::shape(&self.sums_128()).unwrap_or_else(|| self.sums().shape())
    }

    #[inline]
    fn sums(&self) -> PowerSums {
        PowerSums {
            n: self.n,
            s1: I512::from_u128(self.s1),
            s2: I512::from_u128(self.s2),
            s3: I512::from_u256(&self.s3),
            s4: I512::from_u256(&self.s4),
        }
    }

    /// What the default computes — `n·Σx² − (Σx)²` formed exactly, then
    /// converted — with 256-bit products instead of 512-bit ones: runtime
    /// sums are small enough (`n·Σx² < 2^192`, `(Σx)² < 2^256`), the
    /// difference is the same integer, so its conversion is the same
    /// number. SSTD asks for it for every function that ran, every step.
    #[inline]
    fn variance(&self, ddof: u64) -> f64 {
        if self.n <= ddof {
            return 0.0;
        }
        let n_s2 = U256::mul_u128(self.n as u128, self.s2);
        let s1_s1 = U256::mul_u128(self.s1, self.s1);
        match n_s2.checked_sub(&s1_s1) {
            Some(nm2) if nm2 != U256::ZERO => {
                nm2.to_f64() / (self.n as f64 * (self.n - ddof) as f64)
            }
            _ => 0.0,
        }
    }
}

impl Moments for WideMoments {
    #[inline]
    fn sums(&self) -> PowerSums {
        let mut s4 = I512::from_u256(&self.s4);
        s4.0[4] = self.s4_carry;
        PowerSums {
            n: self.n,
            s1: I512::from_u128(self.s1),
            s2: I512::from_u256(&self.s2),
            s3: I512::from_u256(&self.s3),
            s4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_and_wide_paths_agree() {
        // Values on both sides of 2^32 and near the U256 carries.
        let xs = [
            0u64,
            1,
            2,
            3,
            1 << 20,
            (1 << 32) - 1,
            1 << 32,
            (1 << 40) + 7,
            123_456_789,
        ];
        let mut m = ExactMoments::default();
        let (mut s3, mut s4) = (U256::ZERO, U256::ZERO);
        for _ in 0..1000 {
            for &x in &xs {
                m.push(x);
                let x = x as u128;
                s3.add(&U256::mul_u128(x * x, x));
                s4.add(&U256::mul_u128(x * x, x * x));
            }
        }
        assert_eq!((m.s3, m.s4), (s3, s4));
        let mut u = U256([u64::MAX, u64::MAX, 5, 0]);
        u.add_u128(1);
        assert_eq!(u, U256([0, 0, 6, 0]));
    }

    fn direct(xs: &[u64]) -> (f64, f64, f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
        let m = |k: i32| xs.iter().map(|&x| (x as f64 - mean).powi(k)).sum::<f64>() / n;
        let (m2, m3, m4) = (m(2), m(3), m(4));
        let var1 = m2 * n / (n - 1.0);
        (
            mean,
            var1.sqrt(),
            n.sqrt() * m3 * n / (m2 * n).powf(1.5),
            m4 / (m2 * m2) - 3.0,
        )
    }

    fn sample(seed: u64, n: usize) -> Vec<u64> {
        let mut r = crate::synth::rng::Rng::new(&[seed]);
        (0..n)
            .map(|_| (200.0 * (0.5 * r.normal()).exp()).round() as u64 + 1)
            .collect()
    }

    #[test]
    fn moments_match_two_pass() {
        let xs = sample(1, 10_000);
        let mut m = ExactMoments::default();
        xs.iter().for_each(|&x| m.push(x));
        let (mean, sd, skew, kurt) = direct(&xs);
        let rel = |a: f64, b: f64| ((a - b) / b).abs();
        assert!(rel(m.mean(), mean) < 1e-12);
        assert!(rel(m.stddev(1), sd) < 1e-10);
        assert!(rel(m.skewness(), skew) < 1e-8, "{} {}", m.skewness(), skew);
        assert!(rel(m.kurtosis(), kurt) < 1e-8, "{} {}", m.kurtosis(), kurt);
        assert_eq!(m.min, *xs.iter().min().unwrap());
        assert_eq!(m.max, *xs.iter().max().unwrap());
    }

    #[test]
    fn any_split_and_order_is_bit_identical() {
        let xs = sample(2, 5_000);
        let mut whole = ExactMoments::default();
        xs.iter().for_each(|&x| whole.push(x));
        for parts in [2usize, 3, 7, 64] {
            let mut partials: Vec<ExactMoments> = xs
                .chunks(xs.len().div_ceil(parts))
                .map(|c| {
                    let mut m = ExactMoments::default();
                    c.iter().for_each(|&x| m.push(x));
                    m
                })
                .collect();
            partials.reverse();
            let mut merged = ExactMoments::default();
            partials.iter().for_each(|p| merged.merge(p));
            assert_eq!(merged, whole);
            assert_eq!(merged.stddev(1).to_bits(), whole.stddev(1).to_bits());
            assert_eq!(merged.kurtosis().to_bits(), whole.kurtosis().to_bits());
        }
    }

    #[test]
    fn words_roundtrip_and_sum_like_mpi() {
        let xs = sample(3, 1000);
        let (a, b) = xs.split_at(400);
        let mut ma = ExactMoments::default();
        a.iter().for_each(|&x| ma.push(x));
        let mut mb = ExactMoments::default();
        b.iter().for_each(|&x| mb.push(x));
        let (mut wa, mut wb) = (Vec::new(), Vec::new());
        ma.sum_words(&mut wa);
        mb.sum_words(&mut wb);
        assert_eq!(wa.len(), MOMENT_SUM_WORDS);
        let summed: Vec<u64> = wa.iter().zip(&wb).map(|(x, y)| x + y).collect();
        let got = ExactMoments::from_words(&summed, ma.min.min(mb.min), ma.max.max(mb.max));
        let mut want = ma;
        want.merge(&mb);
        assert_eq!(got, want);
    }

    #[test]
    fn variance_in_256_bits_is_the_512_bit_one() {
        let mut seed = 9u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed
        };
        for case in 0..2000 {
            let mut m = ExactMoments::default();
            let scale = [1u64 << 4, 1 << 20, 1 << 43][case % 3];
            let base = next() % scale;
            for _ in 0..(next() % 60) {
                m.push(if next() % 3 == 0 {
                    base
                } else {
                    next() % scale
                });
            }
            for ddof in [0, 1] {
                let want = m.sums().variance(ddof);
                assert_eq!(m.variance(ddof).to_bits(), want.to_bits(), "{m:?}");
            }
        }
    }

    #[test]
    fn product_of_the_limbs_in_use_is_the_full_product() {
        // Every limb times every limb, as a reference for `mul`'s skipping
        // of the limbs that are zero.
        fn schoolbook(x: &I512, y: &I512) -> I512 {
            let negative = x.is_negative() != y.is_negative();
            let (a, b) = (x.abs_limbs(), y.abs_limbs());
            let mut r = [0u64; 8];
            for i in 0..8 {
                let mut carry = 0u128;
                for j in 0..(8 - i) {
                    let t = a[i] as u128 * b[j] as u128 + r[i + j] as u128 + carry;
                    r[i + j] = t as u64;
                    carry = t >> 64;
                }
            }
            if negative {
                I512(r).neg()
            } else {
                I512(r)
            }
        }
        let mut r = crate::synth::rng::Rng::new(&[77]);
        let mut half = || (r.uniform() * 2f64.powi(32)) as u64;
        let mut word = || half() << 32 | half() | 1;
        for case in 0..400 {
            let mut x = I512::ZERO;
            let mut y = I512::ZERO;
            // Operands of 1 to 4 limbs, some limbs zero, either sign.
            for (k, v) in [&mut x, &mut y].into_iter().enumerate() {
                let len = 1 + (case / (1 + 3 * k)) % 4;
                for i in 0..len {
                    v.0[i] = if (case + i) % 5 == 0 { 0 } else { word() };
                }
                if (case >> k) % 3 == 0 {
                    *v = v.neg();
                }
            }
            assert_eq!(x.mul(&y), schoolbook(&x, &y), "case {case}");
            assert_eq!(y.mul(&x), schoolbook(&y, &x), "case {case}");
        }
    }

    #[test]
    fn huge_values_stay_exact() {
        let mut m = ExactMoments::default();
        for x in [1u64 << 43, (1u64 << 43) + 1, (1u64 << 43) + 2] {
            m.push(x);
        }
        assert_eq!(m.mean(), (1u64 << 43) as f64 + 1.0);
        assert!((m.variance(1) - 1.0).abs() < 1e-12, "{}", m.variance(1));
        assert!(m.skewness().abs() < 1e-12);
        assert_eq!(
            I512::from_u128(12345678901234567890123456789).to_decimal(),
            "12345678901234567890123456789"
        );
        assert_eq!(I512::from_u64(5).neg().to_decimal(), "-5");
    }

    #[test]
    fn empty_and_single() {
        let mut m = ExactMoments::default();
        assert_eq!(m.variance(1), 0.0);
        m.push(7);
        assert_eq!(
            (m.mean(), m.stddev(1), m.skewness(), m.kurtosis()),
            (7.0, 0.0, 0.0, 0.0)
        );
    }
}
