//! `ceil` of an `f64` as an index, without a call.
//!
//! On baseline x86-64 (SSE2, no `roundsd`) `f64::ceil` is a library call,
//! and the detectors take a ceiling or two per function they derive (a
//! grid's cells, a kernel's reach, a histogram's bins): a few percent of a
//! model update. A float-to-integer cast truncates in one instruction, and
//! the ceiling follows from it exactly.

/// `x.ceil() as usize`, the same for every `f64` (NaN and values below 1
/// give what the cast gives: 0 for NaN and anything at or below 0; values
/// past `usize::MAX`, infinity included, give `usize::MAX`).
#[inline]
pub fn ceil_usize(x: f64) -> usize {
    // The cast truncates towards zero and saturates; below 2^53 the
    // truncation is exact in `f64`, so it is below `x` exactly when `x`
    // has a fraction. From 2^53 on every `f64` is an integer.
    let t = x as usize;
    if (t as f64) < x {
        t.saturating_add(1)
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::ceil_usize;

    #[test]
    fn equals_the_cast_of_the_ceiling() {
        let mut seed = 5u64;
        let mut special = vec![
            0.0,
            -0.0,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            1.0 - f64::EPSILON / 2.0,
            -0.5,
            -1.5,
            4_095.999_999_999,
            4096.0,
            9007199254740991.5,
            9007199254740993.0,
            1.8446744073709552e19,
            1e300,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for _ in 0..100_000 {
            let bits = crate::util::hash::splitmix64(&mut seed);
            special.push(f64::from_bits(bits));
            special.push((bits >> 11) as f64 / (1u64 << (bits % 50)) as f64);
        }
        for x in special {
            assert_eq!(ceil_usize(x), x.ceil() as usize, "{x:e}");
        }
    }
}
