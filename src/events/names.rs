//! Global function and counter tables, agreed by all AD ranks every step.
//!
//! TAU numbers functions per process in order of first use, so the same
//! function has different local indices on different streams. Each step every
//! rank offers the names it has not seen in the global table; the
//! collectives return the sorted union, which every rank appends in that
//! order. The set of names new in a step is a property of the streams, not of
//! how they are split among AD ranks, so the global indices are identical on
//! every rank for any number of ranks.

use std::collections::HashMap;

use crate::util::hash::HashKeyed;

use crate::events::{CounterRole, IndexMap};
use crate::trace::dictionary::MAX_NAME_INDEX;
use crate::trace::format::{Attribute, EventKind};

/// A name as the AD ranks agree on it: (program index, or [`COUNTER_MARK`]
/// for counters, name).
pub type NameKey = (u32, String);

/// Program value used to mark counter names in the shared agreement list.
pub const COUNTER_MARK: u32 = u32::MAX;

/// One global table: index -> key, key -> index.
///
/// Built for 10^5 names of template-heavy codes: the names sit end to end
/// in one string, and the lookup maps a 64-bit hash of the key to its
/// index (16 bytes per name, no second copy of the name); the rare key
/// whose hash another key already holds goes to a small map of its own.
#[derive(Debug, Default, Clone)]
pub struct NameTable {
    /// Every name, end to end, in index order.
    text: String,
    /// By global index: (program, start of the name in `text`).
    spans: Vec<(u32, u32)>,
    /// Hash of a key -> index of the first key with that hash (the hash is
    /// mixed already: not hashed again).
    index: HashKeyed<u32>,
    /// Keys whose hash was taken by an earlier, different key.
    clashes: HashMap<NameKey, u32>,
}

/// The lookup hash of a key.
fn key_hash(program: u32, name: &str) -> u64 {
    crate::util::hash::name_hash(program, name)
}

impl NameTable {
    /// Global index of `key`, if agreed.
    pub fn get(&self, key: &NameKey) -> Option<u32> {
        self.find(key.0, &key.1)
    }

    /// Global index of `name` of `program`, if agreed.
    pub fn find(&self, program: u32, name: &str) -> Option<u32> {
        let i = *self.index.get(&key_hash(program, name))?;
        if self.program(i) == program && self.name(i) == name {
            Some(i)
        } else {
            self.clashes.get(&(program, name.to_string())).copied()
        }
    }

    /// Number of names in the table.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when the table has no name.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    fn push(&mut self, key: NameKey) -> u32 {
        // One probe of the index: a new key's hash is usually free.
        let i = self.spans.len() as u32;
        match self.index.entry(key_hash(key.0, &key.1)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
            }
            std::collections::hash_map::Entry::Occupied(o) => {
                let first = *o.get();
                if self.program(first) == key.0 && self.name(first) == key.1 {
                    return first;
                }
                if let Some(&known) = self.clashes.get(&key) {
                    return known;
                }
                self.clashes.insert(key.clone(), i);
            }
        }
        self.spans.push((key.0, self.text.len() as u32));
        self.text.push_str(&key.1);
        i
    }

    /// Name of global index `i` (`?` when out of range).
    pub fn name(&self, i: u32) -> &str {
        let i = i as usize;
        let Some(&(_, start)) = self.spans.get(i) else {
            return "?";
        };
        let end = self
            .spans
            .get(i + 1)
            .map_or(self.text.len(), |&(_, next)| next as usize);
        &self.text[start as usize..end]
    }

    /// Program index of global index `i` (0 for counters, which all
    /// programs share, and when out of range).
    pub fn program(&self, i: u32) -> u32 {
        self.spans.get(i as usize).map_or(0, |k| k.0)
    }
}

/// Global functions (per program) and counters (shared by all programs).
#[derive(Debug, Default, Clone)]
pub struct GlobalNames {
    /// Global functions, keyed by (program, name).
    pub functions: NameTable,
    /// Global counters, keyed by (0, name).
    pub counters: NameTable,
}

impl GlobalNames {
    /// Names in `attrs` (of a stream of `program`) that the global tables
    /// do not have yet, in the shared agreement format. `found` receives,
    /// for each attribute, the global index of a function or counter name
    /// already agreed (`None` otherwise), for [`GlobalNames::update_map`]:
    /// each name is looked up once in the step, not twice.
    pub fn unknown_names(
        &self,
        program: u32,
        attrs: &[Attribute],
        found: &mut Vec<Option<u32>>,
        out: &mut Vec<NameKey>,
    ) {
        found.clear();
        for a in attrs {
            let (g, key) = match a {
                Attribute::Function { name, .. } => {
                    (self.functions.find(program, name), (program, name))
                }
                Attribute::Counter { name, .. } => {
                    (self.counters.find(0, name), (COUNTER_MARK, name))
                }
                _ => {
                    found.push(None);
                    continue;
                }
            };
            if g.is_none() {
                out.push((key.0, key.1.clone()));
            }
            found.push(g);
        }
    }

    /// Appends the agreed (sorted, deduplicated) new names.
    pub fn extend(&mut self, agreed: Vec<NameKey>) -> Vec<u32> {
        let mut new_functions = Vec::new();
        for key in agreed {
            if key.0 == COUNTER_MARK {
                self.counters.push((0, key.1));
            } else {
                let before = self.functions.len();
                let i = self.functions.push(key);
                if self.functions.len() > before {
                    new_functions.push(i);
                }
            }
        }
        new_functions
    }

    /// Updates a stream's local -> global map from its new attributes;
    /// `found` is what [`GlobalNames::unknown_names`] found for them before
    /// the step's new names were agreed (the others are looked up now).
    pub fn update_map(
        &self,
        program: u32,
        attrs: &[Attribute],
        found: &[Option<u32>],
        map: &mut IndexMap,
    ) {
        fn set<T: Clone + Default>(v: &mut Vec<T>, i: u64, x: T) {
            // The reader rejects larger indices; sizing the map by them
            // would cost what the reader saved.
            if i >= MAX_NAME_INDEX {
                return;
            }
            let i = i as usize;
            if v.len() <= i {
                v.resize(i + 1, T::default());
            }
            v[i] = x;
        }
        for (k, a) in attrs.iter().enumerate() {
            let known = found.get(k).copied().flatten();
            match a {
                Attribute::Function { index, name } => {
                    let g = known.or_else(|| self.functions.find(program, name));
                    set(&mut map.functions, *index, g);
                }
                Attribute::Counter { index, name } => {
                    let g = known.or_else(|| self.counters.find(0, name));
                    set(&mut map.counters, *index, g);
                    set(
                        &mut map.counter_roles,
                        *index,
                        IndexMap::role_of_counter_name(name),
                    );
                }
                Attribute::EventType { index, name } => {
                    set(&mut map.event_types, *index, EventKind::from_name(name));
                }
                _ => {}
            }
        }
    }

    /// Role of a global counter (for reports).
    pub fn counter_role(&self, i: u32) -> CounterRole {
        IndexMap::role_of_counter_name(self.counters.name(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_back_by_index_and_by_key() {
        let mut t = NameTable::default();
        assert_eq!(t.push((0, "main".into())), 0);
        assert_eq!(t.push((1, "main".into())), 1);
        assert_eq!(t.push((0, "".into())), 2);
        assert_eq!(t.push((0, "kernel<int>".into())), 3);
        assert_eq!(t.push((0, "main".into())), 0, "a known key keeps its index");
        assert_eq!(t.len(), 4);
        assert_eq!((t.name(1), t.program(1)), ("main", 1));
        assert_eq!(t.name(2), "");
        assert_eq!(t.name(3), "kernel<int>");
        assert_eq!(t.name(4), "?");
        assert_eq!(t.find(1, "main"), Some(1));
        assert_eq!(t.find(0, ""), Some(2));
        assert_eq!(t.find(2, "main"), None);
        assert_eq!(t.get(&(0, "kernel<int>".into())), Some(3));
    }

    #[test]
    fn a_key_whose_hash_is_taken_is_still_found() {
        let mut t = NameTable::default();
        t.push((0, "a".into()));
        // Pretend "b" hashes like "a": it must land among the clashes.
        let h = key_hash(0, "b");
        t.index.insert(h, 0);
        assert_eq!(t.find(0, "b"), None);
        assert_eq!(t.push((0, "b".into())), 1);
        assert_eq!(t.find(0, "b"), Some(1));
        assert_eq!(t.find(0, "a"), Some(0));
        assert_eq!(t.push((0, "b".into())), 1);
        assert_eq!(t.len(), 2);
    }
}
