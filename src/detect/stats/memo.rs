//! A memo of a pure `f64` function by the exact bits of its argument.
//!
//! The detectors re-derive thousands of models per step, and some of the
//! numbers they need recur from one function to the next: HBOS scores
//! `log2(c/n + α)` for small bin counts `c` of functions with the same
//! number of executions `n`, `modal` weighs its kernel with
//! `exp(−½(d·step/h)²)` whose arguments differ only in their last bits. A
//! memo returns exactly what the function returned for the same argument,
//! so using one changes no result, only how often the function is called.

/// `f(x)` for recently seen `x`, in a direct-mapped table.
#[derive(Debug, Clone)]
pub struct Memo {
    f: fn(f64) -> f64,
    keys: Vec<u64>,
    values: Vec<f64>,
}

impl Memo {
    /// A memo of `f` with `slots` entries (a power of two).
    pub fn new(f: fn(f64) -> f64, slots: usize) -> Self {
        debug_assert!(slots.is_power_of_two());
        // A NaN key: only finite arguments are looked up.
        Memo {
            f,
            keys: vec![u64::MAX; slots],
            values: vec![0.0; slots],
        }
    }

    /// `f(x)`, from the table when `x` was seen (and not evicted).
    #[inline]
    pub fn get(&mut self, x: f64) -> f64 {
        if !x.is_finite() {
            return (self.f)(x);
        }
        let bits = x.to_bits();
        let slot =
            (bits.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & (self.keys.len() - 1);
        if self.keys[slot] != bits {
            self.keys[slot] = bits;
            self.values[slot] = (self.f)(x);
        }
        self.values[slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_what_the_function_returns() {
        let mut m = Memo::new(f64::exp, 16);
        for i in 0..1000 {
            let x = -((i * 7919) % 300) as f64 / 17.0;
            assert_eq!(m.get(x).to_bits(), x.exp().to_bits());
        }
        assert!(m.get(f64::NAN).is_nan());
        assert_eq!(m.get(f64::NEG_INFINITY), 0.0);
    }
}
