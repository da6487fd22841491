//! Sets of function indices as bits, 64 to a word: the form in which ranks
//! agree on a set with one bitwise-OR reduction (n/8 bytes for n
//! functions) and then visit only its members; and [`MarkedSet`], the set
//! a rank builds while it works (what ran, what changed), taken and cleared
//! in time proportional to its members.

/// The words of a set over `0..n` holding `indices` (those ≥ `n` are left
/// out).
pub fn bitset_of(n: usize, indices: impl IntoIterator<Item = u32>) -> Vec<u64> {
    let mut words = vec![0u64; n.div_ceil(64)];
    for i in indices {
        if (i as usize) < n {
            words[i as usize / 64] |= 1 << (i % 64);
        }
    }
    words
}

/// The indices of the set bits of `words`, in increasing order: a visit
/// costs the words and the members, not a test of every bit.
pub fn set_bits(words: &[u64]) -> impl Iterator<Item = u32> + '_ {
    words.iter().enumerate().flat_map(|(w, &bits)| {
        let mut rest = bits;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let i = rest.trailing_zeros();
            rest &= rest - 1;
            Some(w as u32 * 64 + i)
        })
    })
}

/// True when `i` is in the set `words` (false beyond its words).
#[inline]
pub fn contains(words: &[u64], i: u32) -> bool {
    words
        .get(i as usize / 64)
        .is_some_and(|w| w >> (i % 64) & 1 == 1)
}

/// Adds `i` to the set `words`, growing it to hold `i`; true when `i` was
/// not in it before.
#[inline]
pub fn insert(words: &mut Vec<u64>, i: u32) -> bool {
    let w = i as usize / 64;
    if w >= words.len() {
        words.resize(w + 1, 0);
    }
    let bit = 1 << (i % 64);
    let new = words[w] & bit == 0;
    words[w] |= bit;
    new
}

/// Removes `i` from the set `words` (nothing beyond its words).
#[inline]
pub fn remove(words: &mut [u64], i: u32) {
    if let Some(w) = words.get_mut(i as usize / 64) {
        *w &= !(1 << (i % 64));
    }
}

/// The indices marked since the set was last taken: a bit per index (one
/// test per mark) and the list of members in the order first marked, so
/// that taking the set costs its members, not a pass over every index.
#[derive(Debug, Default, Clone)]
pub struct MarkedSet {
    bits: Vec<u64>,
    list: Vec<u32>,
}

impl MarkedSet {
    /// Adds `i`; true when it was not in the set.
    #[inline]
    pub fn mark(&mut self, i: u32) -> bool {
        let new = insert(&mut self.bits, i);
        if new {
            self.list.push(i);
        }
        new
    }

    /// The members in the order first marked, and an empty set after.
    pub fn take(&mut self) -> Vec<u32> {
        for &i in &self.list {
            remove(&mut self.bits, i);
        }
        std::mem::take(&mut self.list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_come_back_in_order_and_out_of_range_ones_are_left_out() {
        let words = bitset_of(200, [130, 3, 64, 3, 0, 199, 200, 5000]);
        assert_eq!(words.len(), 4);
        assert_eq!(set_bits(&words).collect::<Vec<_>>(), [0, 3, 64, 130, 199]);
        assert!(bitset_of(0, [0]).is_empty());
        assert_eq!(set_bits(&[0, u64::MAX << 63]).collect::<Vec<_>>(), [127]);
    }

    #[test]
    fn insert_grows_contains_tests_and_remove_clears() {
        let mut words = Vec::new();
        assert!(!contains(&words, 70));
        assert!(insert(&mut words, 70));
        assert!(!insert(&mut words, 70));
        assert_eq!(words.len(), 2);
        assert!(contains(&words, 70) && !contains(&words, 6) && !contains(&words, 500));
        remove(&mut words, 70);
        remove(&mut words, 500);
        assert_eq!(words, [0, 0]);
    }

    #[test]
    fn a_marked_set_keeps_first_marks_in_order_and_empties_when_taken() {
        let mut m = MarkedSet::default();
        let new: Vec<bool> = [130, 3, 64, 3, 0, 130].iter().map(|&i| m.mark(i)).collect();
        assert_eq!(new, [true, true, true, false, true, false]);
        assert_eq!(m.take(), vec![130, 3, 64, 0]);
        assert_eq!(m.take(), Vec::<u32>::new());
        assert!(m.mark(3), "a taken member can be marked again");
        assert_eq!(m.take(), vec![3]);
    }
}
