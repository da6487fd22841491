//! What only the serial log (`fakeeiger.log`) needs: splitting the
//! records glued onto the end of an `Execution_commit` line, and
//! rebuilding the ids that its writer kept to itself ([`SerialIds`]).
//! Kept apart because neither quirk applies to the other forms.

use std::collections::HashMap;

use super::records::Kind;

const EXECUTION_COMMIT: &str = "Execution_commit;";

/// Splits a serial-log line at the records glued onto an
/// `Execution_commit`, which ends without a newline. Its fields are two
/// ids (`<trial> ;<machine>`), so the glued record starts right after the
/// digits of the second one; keywords never start with a digit.
pub(super) fn split_glued(line: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = line;
    while let Some(after) = rest.strip_prefix(EXECUTION_COMMIT) {
        let end = EXECUTION_COMMIT.len() + two_ids_len(after);
        if end == rest.len() {
            break;
        }
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    pieces.push(rest);
    pieces
}

/// The length of the `<int> ;<int>` at the start of `s`.
fn two_ids_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = skip_int(b, skip_spaces(b, 0));
    i = skip_spaces(b, i);
    if b.get(i) != Some(&b';') {
        return i;
    }
    skip_int(b, skip_spaces(b, i + 1))
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

fn skip_int(b: &[u8], mut i: usize) -> usize {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

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
