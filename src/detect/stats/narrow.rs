//! The central moments of [`super::exact::ExactMoments`] in 128-bit
//! integers when they fit: the same integers as the 512-bit path of
//! [`super::exact`], converted to
//! `f64` the same way, hence the same skewness and kurtosis bit for bit.
//!
//! A provenance flush writes the skewness and kurtosis of every function
//! that changed — tens of thousands at 10^5 functions — and the 512-bit
//! products were a fifth of the flush. `n³·Σx⁴` and the other terms are at
//! most a small multiple of `(n·max)⁴`, so below `n·max ≈ 2^31` (a function
//! with a million calls of up to 2 ms, or a thousand of up to 35 minutes)
//! everything fits in an `i128`; every operation is checked, and anything
//! larger takes the 512-bit path.

/// The power sums of one set of runtimes as `ExactMoments` keeps them.
pub struct PowerSums128<'a> {
    /// The count.
    pub n: u64,
    /// `Σx`.
    pub s1: u128,
    /// `Σx²`.
    pub s2: u128,
    /// `Σx³`, as the four little-endian 64-bit limbs of a 256-bit integer.
    pub s3: &'a [u64; 4],
    /// `Σx⁴`, likewise.
    pub s4: &'a [u64; 4],
}

/// `n·M2`, `n²·M3` and `n³·M4` as 128-bit integers, or `None` when a term
/// does not fit.
fn central(m: &PowerSums128) -> Option<(i128, i128, i128)> {
    let n = i128::from(m.n);
    let s1 = i128::try_from(m.s1).ok()?;
    let s2 = i128::try_from(m.s2).ok()?;
    let s3 = narrow(m.s3)?;
    let s4 = narrow(m.s4)?;
    let s1_2 = s1.checked_mul(s1)?;
    let n_m2 = n.checked_mul(s2)?.checked_sub(s1_2)?;
    let n2 = n.checked_mul(n)?;
    let n2_m3 = n2
        .checked_mul(s3)?
        .checked_sub(n.checked_mul(s1)?.checked_mul(s2)?.checked_mul(3)?)?
        .checked_add(s1_2.checked_mul(s1)?.checked_mul(2)?)?;
    let n3_m4 = n2
        .checked_mul(n)?
        .checked_mul(s4)?
        .checked_sub(n2.checked_mul(s1)?.checked_mul(s3)?.checked_mul(4)?)?
        .checked_add(n.checked_mul(s1_2)?.checked_mul(s2)?.checked_mul(6)?)?
        .checked_sub(s1_2.checked_mul(s1_2)?.checked_mul(3)?)?;
    Some((n_m2, n2_m3, n3_m4))
}

/// The value of `v` when it fits in an `i128`.
fn narrow(v: &[u64; 4]) -> Option<i128> {
    if v[2] != 0 || v[3] != 0 {
        return None;
    }
    i128::try_from(u128::from(v[0]) | (u128::from(v[1]) << 64)).ok()
}

/// `x` as `f64`, as `I512::to_f64` converts it: the magnitude's 64-bit
/// limbs from the top, `v·2^64 + limb` each (the limbs above the second are
/// zero here and leave `v` at zero), then the sign.
fn to_f64(x: i128) -> f64 {
    let a = x.unsigned_abs();
    let v = (a >> 64) as u64 as f64 * 18446744073709551616.0 + a as u64 as f64;
    if x < 0 {
        -v
    } else {
        v
    }
}

/// Skewness and kurtosis as `PowerSums::shape` computes them, or `None`
/// when the moments need the 512-bit path.
pub fn shape(m: &PowerSums128) -> Option<(f64, f64)> {
    let (n_m2, n2_m3, n3_m4) = central(m)?;
    if m.n < 2 || n_m2 <= 0 {
        return Some((0.0, 0.0));
    }
    let n = m.n as f64;
    let m2 = to_f64(n_m2) / n;
    let m3 = to_f64(n2_m3) / (n * n);
    let m4 = to_f64(n3_m4) / (n * n * n);
    Some((n.sqrt() * m3 / m2.powf(1.5), n * m4 / (m2 * m2) - 3.0))
}

#[cfg(test)]
mod tests {
    use super::super::exact::{ExactMoments, Moments};
    use super::*;
    use crate::util::hash::splitmix64;

    /// The 512-bit path's answer.
    fn wide(m: &ExactMoments) -> (f64, f64) {
        m.sums().shape_for_tests()
    }

    fn moments(values: impl IntoIterator<Item = u64>) -> ExactMoments {
        let mut m = ExactMoments::default();
        for x in values {
            m.push(x);
        }
        m
    }

    #[test]
    fn same_bits_as_the_wide_path_wherever_it_applies() {
        let mut state = 7;
        let mut narrow_cases = 0;
        for case in 0..4000u64 {
            // Sizes from one value to thousands, magnitudes from a few µs
            // to hours, and some with one huge outlier.
            let n = 1 + splitmix64(&mut state) % [3, 40, 3000][(case % 3) as usize];
            let scale = 1u64 << (splitmix64(&mut state) % 34);
            let mut values: Vec<u64> = (0..n)
                .map(|_| splitmix64(&mut state) % scale.max(1))
                .collect();
            if case % 7 == 0 {
                values.push(scale << 8);
            }
            let m = moments(values);
            let expected = wide(&m);
            if let Some(got) = shape(&m.sums_128()) {
                narrow_cases += 1;
                assert_eq!(
                    (got.0.to_bits(), got.1.to_bits()),
                    (expected.0.to_bits(), expected.1.to_bits()),
                    "case {case}: {m:?}"
                );
            }
            assert_eq!(
                {
                    let (s, k) = m.skewness_kurtosis();
                    (s.to_bits(), k.to_bits())
                },
                (expected.0.to_bits(), expected.1.to_bits())
            );
        }
        // Most cases are small enough for the fast path, not all.
        assert!((2000..4000).contains(&narrow_cases), "{narrow_cases}");
    }

    #[test]
    fn edge_cases() {
        // No value, one value, equal values: no shape.
        for m in [moments([]), moments([5]), moments([9, 9, 9])] {
            assert_eq!(shape(&m.sums_128()), Some((0.0, 0.0)));
        }
        // Negative third moment (a slow minority to the left).
        let m = moments([10, 10, 10, 1]);
        let (s, _) = shape(&m.sums_128()).unwrap();
        assert!(s < 0.0);
        assert_eq!(shape(&m.sums_128()), Some(wide(&m)));
        // Too large for 128 bits: the wide path answers.
        let m = moments([1 << 40, 3, (1 << 43) + 5]);
        assert_eq!(shape(&m.sums_128()), None);
        assert_eq!(m.skewness_kurtosis(), wide(&m));
        // The conversion matches the wide one around 2^64 and 2^127.
        for x in [
            0i128,
            1,
            -1,
            (1 << 64) - 1,
            1 << 64,
            -(1 << 100) - 12345,
            i128::MAX,
        ] {
            assert_eq!(
                to_f64(x).to_bits(),
                super::super::exact::I512::from_i128_for_tests(x)
                    .to_f64()
                    .to_bits(),
                "{x}"
            );
        }
    }
}
