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
    /// The slot of `x`: the top bits of `bits(x)·K`, which depend on every
    /// bit of `x` (arguments a power of two apart differ in their top
    /// bits only), this many bits down.
    shift: u32,
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
            shift: 64 - slots.trailing_zeros(),
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
        let slot = slot_of(bits, self.shift);
        if self.keys[slot] != bits {
            self.keys[slot] = bits;
            self.values[slot] = (self.f)(x);
        }
        self.values[slot]
    }
}

/// The slot of argument bits `bits` (see `Memo`'s `shift`; one slot: 0).
#[inline]
fn slot_of(bits: u64, shift: u32) -> usize {
    bits.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .checked_shr(shift)
        .unwrap_or(0) as usize
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
        let mut one = Memo::new(f64::log2, 1);
        assert_eq!(one.get(8.0), 3.0);
        assert_eq!(one.get(4.0), 2.0);
    }

    #[test]
    fn arguments_a_power_of_two_apart_get_slots_of_their_own() {
        // −d²/18 for d = 1, 2, 4, 8 (kernel weights) differ in their
        // exponents only.
        let m = Memo::new(f64::exp, 2048);
        let slots: std::collections::HashSet<usize> = [1.0f64, 2.0, 4.0, 8.0]
            .iter()
            .map(|d| slot_of((-d * d / 18.0).to_bits(), m.shift))
            .collect();
        assert_eq!(slots.len(), 4);
    }
}
