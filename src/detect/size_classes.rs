//! Judging by message size: a function whose calls move messages of very
//! different sizes (an 8-byte header and an 8 MiB payload through one
//! `MPI_Sendrecv`) has one runtime mode per size, and a call is only slow
//! or fast against calls that moved as much data.
//!
//! Each execution carries the class of the bytes its messages moved
//! (`Execution::size_class`: 0 without messages, `k` for `[4^(k−1), 4^k)`
//! bytes). Every execution feeds its function's model as before; one with
//! messages also feeds the model of its function's size class, a function
//! of its own in the name table (`MPI_Sendrecv() [messages 16–63 B]`),
//! agreed by all ranks like any new name, a step after a rank first saw
//! the class. A call is judged against its class's model once that class
//! is usual for the function — at least [`MIN_CLASS_COUNT`] calls and
//! 1/[`MIN_CLASS_SHARE`] of the function's. A call of a rare class is
//! judged against the usual class nearest in size: a size that is itself
//! rare is unusual input, and a rare call with a 50× payload that took 50×
//! as long is the problem to flag, although its time is normal for its
//! size. A function without a usual class is judged as a whole.
//!
//! A call judged slow against its class's model is an anomaly only if the
//! time it lost (its runtime less what its class's model expects) is at
//! least [`MIN_LOST_SHARE`] of the function's mean time per call over all
//! sizes; a call of a rare class is an anomaly whenever it lost more than
//! a whole mean call's time against the usual class it is compared with
//! (the rare size is what is wrong, whatever the score says). The short
//! class of a function with a long one has a jitter tail (message tracking
//! adds tens of microseconds to an 8-byte exchange of a few) that its own
//! narrow model calls slow, though such a call costs nothing next to the
//! function's payload calls; a late partner that holds an 8-byte exchange
//! for milliseconds loses far more.
//!
//! The detector methods that judge take the function and class together as
//! one id ([`sized`]); the [`SizeClassed`] wrapper turns it into the key to
//! judge by. Everything else sees plain function ids. A call whose class
//! has no id yet is judged as a call of a rare class when its function has
//! a usual class, and otherwise waits for the next step's agreement (it is
//! held, like a call of a function without enough data); at the end of the
//! run, such calls are judged with their function.

use super::forward::forward_to_inner;
use std::collections::{BTreeSet, HashMap};

use super::{Detector, Label, Verdict};

/// Bits of a function id below the size class in a [`sized`] id.
pub const CLASS_SHIFT: u32 = 26;
/// Calls a size class needs before its calls are judged by its own model.
pub const MIN_CLASS_COUNT: u64 = 20;
/// Share of the function's calls a size class needs for that (1 in 20).
pub const MIN_CLASS_SHARE: u64 = 20;
/// A call judged slow for its size class is an anomaly only if it lost at
/// least this share of the function's mean time per call (all sizes).
pub const MIN_LOST_SHARE: f64 = 0.1;

/// The size class of a call that moved `bytes` bytes in its messages: 0
/// for none, `k` for `4^(k−1) ≤ bytes < 4^k`.
pub fn class_of_bytes(bytes: u64) -> u8 {
    if bytes == 0 {
        0
    } else {
        1 + (63 - bytes.leading_zeros()) as u8 / 2
    }
}

/// The bytes `[low, high)` of size class `class` (≥ 1).
pub fn class_bytes(class: u8) -> (u64, u64) {
    let k = u32::from(class.max(1) - 1);
    let low = 1u64.checked_shl(2 * k).unwrap_or(u64::MAX);
    let high = 1u64.checked_shl(2 * k + 2).unwrap_or(u64::MAX);
    (low, high)
}

/// `function` with its call's size class, as the judging methods of
/// [`Detector`] take it (the plain function without a class, or for an id
/// too large to carry one).
#[inline]
pub fn sized(function: u32, class: u8) -> u32 {
    if class == 0 || function >= 1 << CLASS_SHIFT {
        function
    } else {
        function | (u32::from(class) << CLASS_SHIFT)
    }
}

/// The function and size class of a [`sized`] id.
#[inline]
pub fn unsized_id(id: u32) -> (u32, u8) {
    (id & ((1 << CLASS_SHIFT) - 1), (id >> CLASS_SHIFT) as u8)
}

/// What a size class's function is called in the name table.
pub fn class_name(function: &str, class: u8) -> String {
    let (low, high) = class_bytes(class);
    format!("{function} [messages {low}–{} B]", high - 1)
}

/// The function name and class of a name made by [`class_name`].
pub fn parse_class_name(name: &str) -> Option<(&str, u8)> {
    let (function, rest) = name.rsplit_once(" [messages ")?;
    let (low, rest) = rest.split_once('–')?;
    let high = rest.strip_suffix(" B]")?;
    let (low, high): (u64, u64) = (low.parse().ok()?, high.parse().ok()?);
    let class = class_of_bytes(low);
    (class_bytes(class) == (low, high.checked_add(1)?)).then_some((function, class))
}

/// A detector that judges calls with messages by their size class (see
/// the module documentation); everything else goes to `inner` unchanged.
pub struct SizeClassed {
    inner: Box<dyn Detector>,
    /// `(function, class)` → the class's function id, once agreed.
    keys: HashMap<(u32, u8), u32>,
    /// By function: its agreed `(class, id)`s, in increasing class.
    classes: HashMap<u32, Vec<(u8, u32)>>,
    /// Classes seen on this rank that have no id yet (for the next
    /// agreement).
    pending: BTreeSet<(u32, u8)>,
    /// No more agreements (end of the run).
    ended: bool,
}

impl SizeClassed {
    /// `inner`, judging by size class.
    pub fn new(inner: Box<dyn Detector>) -> Self {
        SizeClassed {
            inner,
            keys: HashMap::new(),
            classes: HashMap::new(),
            pending: BTreeSet::new(),
            ended: false,
        }
    }

    /// The function whose model judges a call of `id` ([`sized`]): its
    /// size class once that class is usual for the function; for a call
    /// of a rare class, the usual class nearest in size (a 50× payload is
    /// compared with the payloads); the function itself when it has no
    /// usual class. The same on every rank: the counts are global.
    pub fn judging(&self, id: u32) -> u32 {
        let (function, class) = unsized_id(id);
        if class == 0 {
            return function;
        }
        let Some(classes) = self.classes.get(&function) else {
            return function;
        };
        let all = self.inner.count(function);
        let usual = |key: u32| {
            let n = self.inner.count(key);
            n >= MIN_CLASS_COUNT && n * MIN_CLASS_SHARE >= all
        };
        // Nearest in size, the larger class on a tie.
        classes
            .iter()
            .filter(|&&(_, key)| usual(key))
            .min_by_key(|&&(c, _)| (c.abs_diff(class), std::cmp::Reverse(c)))
            .map_or(function, |&(_, key)| key)
    }
}

impl Detector for SizeClassed {
    forward_to_inner!(plumbing);
    forward_to_inner!(model);
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn ensure_functions(&mut self, n: usize) {
        self.inner.ensure_functions(n);
    }
    fn observe(&mut self, id: u32, value: u64) {
        let (function, class) = unsized_id(id);
        self.inner.observe(function, value);
        if class > 0 {
            match self.keys.get(&(function, class)) {
                Some(&key) => self.inner.observe(key, value),
                None => {
                    self.pending.insert((function, class));
                }
            }
        }
    }
    fn size_key(&self, function: u32, class: u8) -> Option<u32> {
        self.keys.get(&(function, class)).copied()
    }
    fn note_size_classes(&mut self, classes: &[(u32, u8)]) {
        self.pending.extend(classes.iter().copied());
    }
    fn take_new_size_classes(&mut self) -> Vec<(u32, u8)> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .filter(|k| !self.keys.contains_key(k))
            .collect()
    }
    fn add_size_class(&mut self, function: u32, class: u8, key: u32) {
        if self.keys.insert((function, class), key).is_none() {
            let list = self.classes.entry(function).or_default();
            list.push((class, key));
            list.sort_unstable();
        }
    }
    fn end_size_classes(&mut self) {
        self.ended = true;
    }
    fn label(&self, id: u32, value: u64) -> Verdict {
        let (function, class) = unsized_id(id);
        let key = self.judging(id);
        if key == function
            && class > 0
            && !self.ended
            && !self.keys.contains_key(&(function, class))
        {
            // No class of the function to compare with yet, and this one
            // is agreed at the next step: the call waits for it, as a call
            // of a function without enough data does. (A new class of a
            // function that has a usual one is compared with that one at
            // once, as a rare class.)
            return Verdict {
                label: Label::Unlabeled,
                score: 0.0,
            };
        }
        let v = self.inner.label(key, value);
        if key == function || v.label == Label::Unlabeled || !self.inner.is_slow(key, value) {
            return v;
        }
        // What the call lost against the class it is compared with, at
        // the function's scale (see the module documentation).
        let lost = value as f64 - self.inner.expected(key, value);
        let per_call = self.inner.mean(function);
        let rare = self.keys.get(&(function, class)) != Some(&key);
        let label = match v.label {
            Label::Anomaly if lost < MIN_LOST_SHARE * per_call => Label::Normal,
            Label::Normal if rare && lost >= per_call => Label::Anomaly,
            l => l,
        };
        Verdict {
            label,
            score: v.score,
        }
    }
    fn is_slow(&self, id: u32, value: u64) -> bool {
        self.inner.is_slow(self.judging(id), value)
    }
    fn expected(&self, id: u32, value: u64) -> f64 {
        self.inner.expected(self.judging(id), value)
    }
    fn model_json(&self, function: u32) -> serde_json::Value {
        self.inner.model_json(function)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::choice::{Algorithm, DetectorSettings};
    use crate::detect::{reduce_step, Wire};

    #[test]
    fn classes_are_powers_of_four_and_names_round_trip() {
        assert_eq!(class_of_bytes(0), 0);
        assert_eq!(class_of_bytes(1), 1);
        assert_eq!(class_of_bytes(3), 1);
        assert_eq!(class_of_bytes(4), 2);
        assert_eq!(class_of_bytes(8), 2);
        assert_eq!(class_of_bytes(8 << 20), 12);
        assert_eq!(class_of_bytes(400 << 20), 15);
        assert_eq!(class_of_bytes(u64::MAX), 32);
        assert_eq!(class_bytes(2), (4, 16));
        for class in 1..=31u8 {
            let name = class_name("MPI_Sendrecv()", class);
            assert_eq!(
                parse_class_name(&name),
                Some(("MPI_Sendrecv()", class)),
                "{name}"
            );
        }
        assert_eq!(class_name("f", 2), "f [messages 4–15 B]");
        assert_eq!(parse_class_name("f [messages 4–16 B]"), None);
        assert_eq!(parse_class_name("plain name"), None);
        assert_eq!(unsized_id(sized(7, 3)), (7, 3));
        assert_eq!(sized(7, 0), 7);
    }

    /// Function 0 with two size classes (ids 1: 8-byte calls of ~40 µs,
    /// 2: 8 MiB calls of ~5 ms, 400 each) and 2 calls of a 400 MiB class
    /// (id 3) of ~120 ms.
    fn trained(algorithm: Algorithm) -> SizeClassed {
        let inner = DetectorSettings {
            algorithm,
            ..Default::default()
        }
        .build()
        .unwrap();
        let mut d = SizeClassed::new(inner);
        d.ensure_functions(4);
        let (small, large, huge) = (
            class_of_bytes(8),
            class_of_bytes(8 << 20),
            class_of_bytes(400 << 20),
        );
        d.add_size_class(0, small, 1);
        d.add_size_class(0, large, 2);
        d.add_size_class(0, huge, 3);
        for i in 0..400u64 {
            d.observe(sized(0, small), 35 + i % 11);
            d.observe(sized(0, large), 4800 + (i * 37) % 400);
        }
        d.observe(sized(0, huge), 118_000);
        d.observe(sized(0, huge), 121_000);
        let w = d.take_partial();
        reduce_step(&mut d, w, Wire::clone);
        d
    }

    #[test]
    fn calls_are_judged_against_their_size_and_rare_sizes_against_all() {
        // (HBOS and COPOD judge 400 calls of 11 distinct values by their
        // own rules; their quality is measured on scenarios instead.)
        for algorithm in [Algorithm::Modal, Algorithm::Sstd] {
            let d = trained(algorithm);
            let (small, large, huge) = (
                class_of_bytes(8),
                class_of_bytes(8 << 20),
                class_of_bytes(400 << 20),
            );
            assert_eq!(d.count(0), 802, "{algorithm}");
            assert_eq!(d.judging(sized(0, small)), 1);
            assert_eq!(d.judging(sized(0, large)), 2);
            // Two calls of 802: judged against the nearest usual class.
            assert_eq!(d.judging(sized(0, huge)), 2);
            // A class never seen falls back to the nearest usual one too.
            assert_eq!(d.judging(sized(0, small + 1)), 1);
            // An 8-byte exchange that took 2 ms is slow for 8 bytes, though
            // normal for the function as a whole.
            assert_eq!(
                d.label(sized(0, small), 2000).label,
                Label::Anomaly,
                "{algorithm}"
            );
            assert_eq!(
                d.label(sized(0, small), 40).label,
                Label::Normal,
                "{algorithm}"
            );
            assert_eq!(
                d.label(sized(0, large), 5000).label,
                Label::Normal,
                "{algorithm}"
            );
            // The rare 50× payload is flagged against all sizes.
            assert_eq!(
                d.label(sized(0, huge), 120_000).label,
                Label::Anomaly,
                "{algorithm}"
            );
        }
    }

    #[test]
    fn unknown_classes_wait_for_the_next_agreement() {
        let mut d = SizeClassed::new(DetectorSettings::default().build().unwrap());
        d.ensure_functions(1);
        d.observe(sized(0, 2), 40);
        d.note_size_classes(&[(0, 5), (0, 2)]);
        assert_eq!(d.take_new_size_classes(), [(0, 2), (0, 5)]);
        assert!(d.take_new_size_classes().is_empty());
        d.add_size_class(0, 2, 1);
        d.note_size_classes(&[(0, 2)]);
        assert!(d.take_new_size_classes().is_empty(), "already agreed");
    }
}
