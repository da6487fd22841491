//! The functions that had an execution on this rank in the current step,
//! and the step's *active set*: those that had one on any rank.
//!
//! The model reduction covers only the active set (see
//! `detect::Detector::set_active`): a step's wire and work follow what ran
//! in the step, not every function ever seen. The set is agreed with one
//! bitwise-OR reduction of a bit per known function (n/8 bytes: 12.5 kB at
//! 10⁵ functions), identical on every rank and in function order, so the
//! reduced models are the same as with the dense reduction.

use crate::util::bits::{bitset_of, MarkedSet};

/// This rank's functions with an execution in the current step.
#[derive(Debug, Default)]
pub struct TouchedFunctions(MarkedSet);

impl TouchedFunctions {
    /// Notes an execution of `function`.
    #[inline]
    pub fn mark(&mut self, function: u32) {
        self.0.mark(function);
    }

    /// The step's set as `ceil(n / 64)` words for the OR reduction over
    /// ranks (functions `0..n`), then cleared for the next step; costs the
    /// words and the functions touched, not a pass over every function.
    pub fn take_words(&mut self, n: usize) -> Vec<u64> {
        bitset_of(n, self.0.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::bits::set_bits;

    #[test]
    fn the_set_is_taken_in_order_and_cleared() {
        let mut t = TouchedFunctions::default();
        for f in [130, 3, 64, 3, 0] {
            t.mark(f);
        }
        let w = t.take_words(200);
        assert_eq!(w.len(), 4);
        assert_eq!(set_bits(&w).collect::<Vec<_>>(), vec![0, 3, 64, 130]);
        // Cleared: the next step starts empty.
        assert_eq!(set_bits(&t.take_words(200)).count(), 0);
        t.mark(5);
        assert_eq!(set_bits(&t.take_words(10)).collect::<Vec<_>>(), vec![5]);
    }
}
