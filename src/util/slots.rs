//! Per-function values that exist only for the functions touched since the
//! last reset: what one rank adds to the model or the profile in a step.
//!
//! With 10^5 distinct functions of which a few hundred run in a step, a
//! dense array of partials would cost its full size per function ever seen
//! and a sweep over all of them at every reset. Here a function costs a
//! 4-byte slot; the values live in a short list in order of first touch,
//! and a reset visits only that list. The values stay where they are,
//! emptied, and the next step's first touches take them in the same order:
//! in a steady run the same function gets the same value back (its buffers
//! already sized for it), nothing is moved and nothing allocated.

/// Values of type `T` for the functions touched since the last
/// [`Touched::reset`].
#[derive(Debug, Clone)]
pub struct Touched<T> {
    /// By function: 1 + its place in `entries`; 0 when untouched.
    slot: Vec<u32>,
    /// The touched functions and their values, in order of first touch
    /// (`entries[..live]`); after them, values of earlier steps, emptied,
    /// waiting for reuse.
    entries: Vec<(u32, T)>,
    /// How many functions were touched.
    live: usize,
}

impl<T> Default for Touched<T> {
    fn default() -> Self {
        Touched {
            slot: Vec::new(),
            entries: Vec::new(),
            live: 0,
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
                let at = self.live;
                if at < self.entries.len() {
                    self.entries[at].0 = f;
                } else {
                    self.entries.push((f, T::default()));
                }
                self.live += 1;
                self.slot[fi] = self.live as u32;
                at
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
        self.entries[..self.live].iter().map(|(f, v)| (*f, v))
    }

    /// How many functions were touched.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no function was touched.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Forgets every touch like [`Touched::reset`], but hands out the
    /// values of functions `fs` in the order of `fs` (`None` for one not
    /// touched, or asked for again) for the caller to use and then empty,
    /// on whatever threads it likes;
    /// `clear` empties at once the values of touched functions that `fs`
    /// lacks. A value the caller leaves full comes back full at a later
    /// first touch.
    pub fn take_all_mut(
        &mut self,
        fs: &[usize],
        mut clear: impl FnMut(&mut T),
    ) -> Vec<Option<&mut T>> {
        let live = std::mem::take(&mut self.live);
        // Where each touched value goes in the answer (the values lie in
        // order of first touch, not of `fs`): one walk, no sort.
        let mut place = vec![usize::MAX; live];
        for (k, &f) in fs.iter().enumerate() {
            if let Some(&s) = self.slot.get(f) {
                if s > 0 && place[s as usize - 1] == usize::MAX {
                    place[s as usize - 1] = k;
                }
            }
        }
        let mut out: Vec<Option<&mut T>> = std::iter::repeat_with(|| None).take(fs.len()).collect();
        for ((f, v), &k) in self.entries[..live].iter_mut().zip(&place) {
            self.slot[*f as usize] = 0;
            match out.get_mut(k) {
                Some(o) => *o = Some(v),
                // A touched function the caller did not ask for (none when
                // `fs` is the step's active set).
                None => clear(v),
            }
        }
        out
    }

    /// Forgets every touch; `clear` empties each value, which stays for
    /// reuse.
    pub fn reset(&mut self, mut clear: impl FnMut(&mut T)) {
        for (f, v) in &mut self.entries[..self.live] {
            self.slot[*f as usize] = 0;
            clear(v);
        }
        self.live = 0;
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
        // A reused value comes back empty, the first touched first.
        assert!(t.entry(5).is_empty());
        assert_eq!(t.get_mut(5).map(|v| v.len()), Some(0));
        t.entry(5).push(4);
        t.entry(6).push(5);
        t.entry(7).push(6);
        assert_eq!(t.len(), 3);
        let all: Vec<(u32, Vec<u64>)> = t.iter().map(|(f, v)| (f, v.clone())).collect();
        assert_eq!(all, [(5, vec![4]), (6, vec![5]), (7, vec![6])]);
        t.reset(Vec::clear);
        assert_eq!(t.get(7), None);
        assert!(t.iter().next().is_none());
    }

    #[test]
    fn taking_all_hands_out_the_asked_and_empties_the_rest() {
        let mut t: Touched<Vec<u64>> = Touched::default();
        t.entry(9).push(1);
        t.entry(2).push(2);
        t.entry(5).push(3);
        let mut taken = t.take_all_mut(&[2, 4, 9], Vec::clear);
        assert_eq!(taken.len(), 3);
        assert_eq!(taken[0].as_deref(), Some(&vec![2]));
        assert!(taken[1].is_none());
        assert_eq!(taken[2].as_deref(), Some(&vec![1]));
        taken.iter_mut().flatten().for_each(|v| v.clear());
        assert!(t.is_empty());
        assert_eq!(t.get(9), None);
        // Every value comes back empty: the unasked one (5) was cleared.
        for f in [7, 8, 6] {
            assert!(t.entry(f).is_empty());
        }
        assert_eq!(t.len(), 3);
    }
}
