//! How one stream's local name indices map to the globally agreed ones,
//! and the role each counter plays.

use crate::trace::format::EventKind;

/// How a counter's samples are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CounterRole {
    /// Attached to the innermost open call.
    #[default]
    Plain,
    /// `Correlation ID`: attached, and its value pairs CPU launches with GPU
    /// kernels.
    CorrelationId,
    /// `monitoring: ...` node-state counters from TAU's monitoring plugin:
    /// describe the node, not a call, so they are never attached.
    Monitoring,
}

/// How this stream's local indices map to global ones; rebuilt by the
/// caller every step (entries may grow between steps as new names appear).
///
/// `None` (or an index past the end) means "not (yet) known": the row is
/// counted as an issue and skipped. The reader normally drops such rows
/// already, but the global agreement on names may lag a step behind.
#[derive(Debug, Clone, Default)]
pub struct IndexMap {
    /// Local TAU function index → global function index.
    pub functions: Vec<Option<u32>>,
    /// Local counter index → global counter index.
    pub counters: Vec<Option<u32>>,
    /// Role of each counter, by LOCAL counter index (missing = `Plain`).
    pub counter_roles: Vec<CounterRole>,
    /// Local event-type index → kind.
    pub event_types: Vec<Option<EventKind>>,
}

impl IndexMap {
    /// The role a counter name implies ([`CORRELATION_ID_COUNTER`] or the
    /// [`MONITORING_PREFIX`]).
    ///
    /// [`CORRELATION_ID_COUNTER`]: crate::trace::format::CORRELATION_ID_COUNTER
    /// [`MONITORING_PREFIX`]: crate::trace::format::MONITORING_PREFIX
    pub fn role_of_counter_name(name: &str) -> CounterRole {
        use crate::trace::format::{CORRELATION_ID_COUNTER, MONITORING_PREFIX};
        if name == CORRELATION_ID_COUNTER {
            CounterRole::CorrelationId
        } else if name.starts_with(MONITORING_PREFIX) {
            CounterRole::Monitoring
        } else {
            CounterRole::Plain
        }
    }

    /// A map with identity function/counter indices, for a stream analysed
    /// on its own (tests, single-rank tools). Roles follow the names.
    pub fn identity(dict: &crate::trace::dictionary::Dictionary) -> Self {
        let ident = |names: &[Option<String>]| -> Vec<Option<u32>> {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| n.as_ref().and_then(|_| u32::try_from(i).ok()))
                .collect()
        };
        IndexMap {
            functions: ident(&dict.functions),
            counters: ident(&dict.counters),
            counter_roles: dict
                .counters
                .iter()
                .map(|n| {
                    n.as_deref()
                        .map_or(CounterRole::Plain, Self::role_of_counter_name)
                })
                .collect(),
            event_types: dict.event_types.clone(),
        }
    }
}
