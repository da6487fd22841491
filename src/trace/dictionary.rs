//! The names a stream has defined so far, by the stream's own (local)
//! indices: functions, counters, event types, metadata and other
//! attributes. A source fills it from the name definitions it reads; the
//! analysis maps local indices to the globally agreed ones.

use super::format::{EventKind, MetadataEntry};

/// Name indices accepted in name definitions (TAU's `timer <i>` / `counter <i>` /
/// `event_type <i>` attributes) are below this. TAU numbers them densely from 0 in order of
/// first use, so a million is far beyond any real process. The bound is
/// also what one bad attribute can cost: names are stored by index, so an
/// index `i` sizes the stream's tables to `i` entries (at 2^24, one
/// attribute cost ~0.5 GB per stream and 0.7 s per step).
pub const MAX_NAME_INDEX: u64 = 1 << 20;

/// Names known so far for one stream, by local index.
#[derive(Debug, Clone, Default)]
pub struct Dictionary {
    /// Function names (`timer <i>`) by local index; `None` where undefined.
    pub functions: Vec<Option<String>>,
    /// Counter names (`counter <i>`) by local index; `None` where undefined.
    pub counters: Vec<Option<String>>,
    /// Event kinds (`event_type <i>`) by local index; `None` where undefined.
    pub event_types: Vec<Option<EventKind>>,
    /// `MetaData:` entries, in the order they appeared.
    pub metadata: Vec<MetadataEntry>,
    /// Every other attribute as `(key, value)`, in the order they appeared.
    pub other: Vec<(String, String)>,
}

/// Stores `value` at index `i`, growing the table as needed.
pub(crate) fn set_at<T: Clone>(v: &mut Vec<Option<T>>, i: u64, value: T) {
    let i = i as usize;
    if v.len() <= i {
        v.resize(i + 1, None);
    }
    v[i] = Some(value);
}

impl Dictionary {
    /// The name of local function `idx`, if defined.
    pub fn function(&self, idx: u64) -> Option<&str> {
        self.functions.get(idx as usize)?.as_deref()
    }
    /// The name of local counter `idx`, if defined.
    pub fn counter(&self, idx: u64) -> Option<&str> {
        self.counters.get(idx as usize)?.as_deref()
    }
    /// The kind of local event type `idx`, if defined.
    pub fn event_type(&self, idx: u64) -> Option<EventKind> {
        *self.event_types.get(idx as usize)?
    }
}

/// The entry of a table indexed by a stream's local index, or `default`
/// for an index past its end (a name not defined, or not yet).
#[inline]
pub fn lookup<T: Copy>(table: &[T], idx: u64, default: T) -> T {
    usize::try_from(idx)
        .ok()
        .and_then(|i| table.get(i).copied())
        .unwrap_or(default)
}
