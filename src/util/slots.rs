//! Per-function values that exist only for the functions touched since the
//! last reset: what one rank adds to the model or the profile in a step.
//!
//! With 10^5 distinct functions of which a few hundred run in a step, a
//! dense array of partials would cost its full size per function ever seen
//! and a sweep over all of them at every reset. Here a function costs a
//! 4-byte slot; the values live in a short list in order of first touch,
//! and a reset visits only that list. The values are kept for reuse (their
//! own buffers included), so a steady run allocates nothing per step.

/// Values of type `T` for the functions touched since the last
/// [`Touched::reset`].
#[derive(Debug, Clone)]
pub struct Touched<T> {
    /// By function: 1 + its place in `entries`; 0 when untouched.
    slot: Vec<u32>,
    /// The touched functions and their values, in order of first touch.
    entries: Vec<(u32, T)>,
    /// Values of earlier steps, cleared, waiting for reuse.
    spare: Vec<T>,
}

impl<T> Default for Touched<T> {
    fn default() -> Self {
        Touched {
            slot: Vec::new(),
            entries: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl<T: Default> Touched<T> {
    /// The value of function `f`, created (empty) at its first touch.
    #[inline]
    pub fn entry(&mut self, f: u32) -> &mut T {
        let fi = f as usize;
        if fi >= self.slot.len() {
            self.slot.resize((fi + 1).next_power_of_two(), 0);
        }
        let at = match self.slot[fi] {
            0 => {
                let value = self.spare.pop().unwrap_or_default();
                self.entries.push((f, value));
                self.slot[fi] = self.entries.len() as u32;
                self.entries.len() - 1
            }
            s => s as usize - 1,
        };
        &mut self.entries[at].1
    }
}

impl<T> Touched<T> {
    /// The value of function `f`, if it was touched.
    #[inline]
    pub fn get(&self, f: usize) -> Option<&T> {
        match self.slot.get(f) {
            Some(&s) if s > 0 => Some(&self.entries[s as usize - 1].1),
            _ => None,
        }
    }

    /// The value of function `f`, if it was touched.
    #[inline]
    pub fn get_mut(&mut self, f: usize) -> Option<&mut T> {
        match self.slot.get(f) {
            Some(&s) if s > 0 => Some(&mut self.entries[s as usize - 1].1),
            _ => None,
        }
    }

    /// The touched functions and their values, in order of first touch.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.entries.iter().map(|(f, v)| (*f, v))
    }

    /// How many functions were touched.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no function was touched.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every touch; `clear` empties each value before it is kept
    /// for reuse.
    pub fn reset(&mut self, mut clear: impl FnMut(&mut T)) {
        for (f, mut v) in self.entries.drain(..) {
            self.slot[f as usize] = 0;
            clear(&mut v);
            self.spare.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touched_functions_only_and_reset_forgets_them() {
        let mut t: Touched<Vec<u64>> = Touched::default();
        t.entry(70_000).push(1);
        t.entry(3).push(2);
        t.entry(70_000).push(3);
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(70_000), Some(&vec![1, 3]));
        assert_eq!(t.get(3), Some(&vec![2]));
        assert_eq!(t.get(4), None);
        assert_eq!(t.get(1 << 30), None);
        let order: Vec<u32> = t.iter().map(|(f, _)| f).collect();
        assert_eq!(order, [70_000, 3]);
        t.reset(Vec::clear);
        assert!(t.is_empty());
        assert_eq!(t.get(70_000), None);
        // A reused value comes back empty.
        assert!(t.entry(5).is_empty());
        assert_eq!(t.get_mut(5).map(|v| v.len()), Some(0));
    }
}
