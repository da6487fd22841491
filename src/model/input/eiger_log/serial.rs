//! What only the serial log (`fakeeiger.log`) needs: rebuilding the ids
//! that its writer kept to itself ([`SerialIds`]). Kept apart because the
//! quirk applies to no other form (its other quirk, records glued onto an
//! `Execution_commit` line, is split in `records.rs` with the rest).

use std::collections::HashMap;

use super::records::Kind;

/// Rebuilds the ids of the serial log, which writes none: its writer
/// numbered the objects of each kind 1, 2, ... by distinct commit text.
/// A log appended to by several runs restarts those maps at each run's
/// `CONNECT`, except that trials and executions go on from where the last
/// run stopped (the writer kept the next ids in `fakeeiger.offsets`).
#[derive(Debug, Default)]
pub(super) struct SerialIds {
    maps: HashMap<Kind, HashMap<String, u64>>,
    offsets: HashMap<Kind, u64>,
}

impl SerialIds {
    pub(super) fn new_run(&mut self) {
        for kind in [Kind::Trial, Kind::Execution] {
            let used = self.maps.get(&kind).map_or(0, |m| m.len() as u64);
            *self.offsets.entry(kind).or_default() += used;
        }
        self.maps.clear();
    }

    pub(super) fn id(&mut self, kind: Kind, key: String) -> u64 {
        let offset = self.offsets.get(&kind).copied().unwrap_or(0);
        let map = self.maps.entry(kind).or_default();
        let next = offset + map.len() as u64 + 1;
        *map.entry(key).or_insert(next)
    }
}
