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

use crate::events::{CounterRole, IndexMap};
use crate::trace::dictionary::MAX_NAME_INDEX;
use crate::trace::format::{Attribute, EventKind};

/// A name as the AD ranks agree on it: (program index, or [`COUNTER_MARK`]
/// for counters, name).
pub type NameKey = (u32, String);

/// Program value used to mark counter names in the shared agreement list.
pub const COUNTER_MARK: u32 = u32::MAX;

/// One global table: index -> key, key -> index.
#[derive(Debug, Default, Clone)]
pub struct NameTable {
    /// Key of each global index, in index order.
    pub keys: Vec<NameKey>,
    index: HashMap<NameKey, u32>,
}

impl NameTable {
    /// Global index of `key`, if agreed.
    pub fn get(&self, key: &NameKey) -> Option<u32> {
        self.index.get(key).copied()
    }

    /// Number of names in the table.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when the table has no name.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn push(&mut self, key: NameKey) -> u32 {
        if let Some(i) = self.index.get(&key) {
            return *i;
        }
        let i = self.keys.len() as u32;
        self.index.insert(key.clone(), i);
        self.keys.push(key);
        i
    }

    /// Name of global index `i` (`?` when out of range).
    pub fn name(&self, i: u32) -> &str {
        self.keys.get(i as usize).map_or("?", |k| k.1.as_str())
    }

    /// Program index of global index `i` (0 for counters, which all
    /// programs share, and when out of range).
    pub fn program(&self, i: u32) -> u32 {
        self.keys.get(i as usize).map_or(0, |k| k.0)
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
    /// do not have yet, in the shared agreement format.
    pub fn unknown_names(&self, program: u32, attrs: &[Attribute], out: &mut Vec<NameKey>) {
        for a in attrs {
            match a {
                Attribute::Function { name, .. } => {
                    let key = (program, name.clone());
                    if self.functions.get(&key).is_none() {
                        out.push(key);
                    }
                }
                Attribute::Counter { name, .. } => {
                    let key = (COUNTER_MARK, name.clone());
                    if self.counters.get(&key).is_none() {
                        out.push(key);
                    }
                }
                _ => {}
            }
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

    /// Updates a stream's local -> global map from its new attributes.
    pub fn update_map(&self, program: u32, attrs: &[Attribute], map: &mut IndexMap) {
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
        for a in attrs {
            match a {
                Attribute::Function { index, name } => {
                    let g = self.functions.get(&(program, name.clone()));
                    set(&mut map.functions, *index, g);
                }
                Attribute::Counter { index, name } => {
                    let g = self.counters.get(&(0, name.clone()));
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
