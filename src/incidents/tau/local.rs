//! What one stream contributes to the linking: the ordinal of every message
//! it sends or receives, the bytes its functions usually send, and the
//! [`Node`] of each of its anomalous executions.
//!
//! A stream is read by one AD rank from its start, so what it keeps here
//! does not depend on how streams are spread over the AD ranks.

use rustc_hash::FxHashMap;

use super::node::{CallClass, MsgEnd, Node};
use crate::events::{CommDirection, Execution, StepEvents};

/// Log₂ classes of a call's sent bytes (class 0: nothing sent).
const SIZE_CLASSES: usize = 65;

/// A size class is rare below this share of a function's calls.
const RARE_SHARE: f64 = 0.1;

/// A function's calls must have sent this often before a size can be
/// called rare.
const MIN_CALLS_FOR_RARE: u64 = 10;

/// How an anomalous execution was judged, as its [`Node`] records it.
#[derive(Debug, Clone, Copy)]
pub struct Judgement {
    /// What kind of call it is.
    pub class: CallClass,
    /// The runtime it was judged at (µs).
    pub runtime_us: u64,
    /// What its model expected of it (µs).
    pub expected_us: u64,
    /// The detector's score.
    pub score: f64,
    /// The step in which it was labelled.
    pub labelled_step: u64,
}

/// The sizes one function's calls sent, by log₂ class.
#[derive(Debug, Clone)]
struct SizeClasses {
    calls: [u32; SIZE_CLASSES],
    bytes: [u64; SIZE_CLASSES],
    total: u64,
}

impl Default for SizeClasses {
    fn default() -> Self {
        SizeClasses {
            calls: [0; SIZE_CLASSES],
            bytes: [0; SIZE_CLASSES],
            total: 0,
        }
    }
}

fn size_class(bytes: u64) -> usize {
    (u64::BITS - bytes.leading_zeros()) as usize
}

impl SizeClasses {
    fn add(&mut self, bytes: u64) {
        let c = size_class(bytes);
        self.calls[c] = self.calls[c].saturating_add(1);
        self.bytes[c] = self.bytes[c].saturating_add(bytes);
        self.total += 1;
    }

    /// The usual bytes of a call that sent `bytes`: the mean size of the
    /// largest common class at or below its own (a function that sends
    /// 8-byte headers and 8 MiB payloads compares a 400 MiB payload with
    /// the payloads), or of the class holding the median call when none
    /// is (0 when nothing was sent).
    fn usual(&self, bytes: u64) -> u64 {
        let mean = |c: usize| self.bytes[c] / u64::from(self.calls[c]).max(1);
        let common = |c: usize| {
            self.calls[c] > 0 && f64::from(self.calls[c]) >= RARE_SHARE * self.total as f64
        };
        if let Some(c) = (0..=size_class(bytes)).rev().find(|&c| common(c)) {
            return mean(c);
        }
        let half = self.total.div_ceil(2);
        let mut seen = 0u64;
        for c in 0..SIZE_CLASSES {
            seen += u64::from(self.calls[c]);
            if seen >= half && self.calls[c] > 0 {
                return mean(c);
            }
        }
        0
    }

    /// Whether a call that sent `bytes` is of a rare size.
    fn rare(&self, bytes: u64) -> bool {
        let c = size_class(bytes);
        self.total >= MIN_CALLS_FOR_RARE
            && (f64::from(self.calls[c]) / self.total as f64) < RARE_SHARE
    }
}

/// A stream's state for the linking, kept from step to step.
#[derive(Debug, Default)]
pub struct StreamLinks {
    /// The next ordinal of each (sent?, peer, tag).
    next: FxHashMap<(bool, u64, u64), u64>,
    /// This step's ordinal of each message in the step's arena.
    ordinals: Vec<u64>,
    /// Per global function that sends: its size classes.
    sizes: FxHashMap<u32, SizeClasses>,
}

impl StreamLinks {
    /// Numbers the step's messages (in the order of the step's arena:
    /// calls in the order they completed, their messages in time order)
    /// and counts what each sending call sent.
    pub fn observe_step(&mut self, events: &StepEvents) {
        self.ordinals.clear();
        if events.comms.is_empty() {
            return;
        }
        self.ordinals.reserve(events.comms.len());
        for c in &events.comms {
            let (send, peer) = match c.direction {
                CommDirection::Send => (true, c.dst),
                CommDirection::Recv => (false, c.src),
            };
            let n = self.next.entry((send, peer, c.tag)).or_insert(0);
            self.ordinals.push(*n);
            *n += 1;
        }
        for &k in &events.with_comms {
            let Some(e) = events.executions.get(k as usize) else {
                continue;
            };
            let sent = sent_bytes(events, e);
            if sent > 0 {
                self.sizes.entry(e.function).or_default().add(sent);
            }
        }
    }

    /// The node of anomalous execution `e` of this step (program
    /// `program`), judged as `judgement` says.
    pub fn node(
        &self,
        program: u32,
        events: &StepEvents,
        e: &Execution,
        judgement: Judgement,
    ) -> Node {
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        let span = e.attach.comms;
        for (k, c) in events.comms_of(e).iter().enumerate() {
            let ordinal = self
                .ordinals
                .get(span.start as usize + k)
                .copied()
                .unwrap_or(u64::MAX);
            match c.direction {
                CommDirection::Send => sends.push(MsgEnd {
                    peer: c.dst,
                    tag: c.tag,
                    ordinal,
                }),
                CommDirection::Recv => recvs.push(MsgEnd {
                    peer: c.src,
                    tag: c.tag,
                    ordinal,
                }),
            }
        }
        let bytes_sent = sent_bytes(events, e);
        let sizes = self.sizes.get(&e.function);
        // The execution's own fields are a late node's; only the messages
        // and their sizes are added while the step is still at hand.
        let own = Self::late_node(program, e, judgement);
        Node {
            bytes_sent,
            usual_bytes: sizes.map_or(0, |s| s.usual(bytes_sent)),
            bytes_rare: bytes_sent > 0 && sizes.is_some_and(|s| s.rare(bytes_sent)),
            sends,
            recvs,
            ..own
        }
    }

    /// The node of an execution labelled after its step (its messages are
    /// gone with the step: no keys, no bytes).
    pub fn late_node(program: u32, e: &Execution, judgement: Judgement) -> Node {
        let Judgement {
            class,
            runtime_us,
            expected_us,
            score,
            labelled_step,
        } = judgement;
        Node {
            program,
            id: e.id,
            thread: e.thread,
            function: e.function,
            depth: e.depth,
            class,
            entry: e.entry,
            exit: e.exit,
            runtime_us,
            expected_us,
            excess_us: runtime_us.saturating_sub(expected_us),
            score,
            labelled_step,
            bytes_sent: 0,
            usual_bytes: 0,
            bytes_rare: false,
            sends: Vec::new(),
            recvs: Vec::new(),
        }
    }
}

/// Bytes `e` sent (its own SEND events with a known size).
fn sent_bytes(events: &StepEvents, e: &Execution) -> u64 {
    events
        .comms_of(e)
        .iter()
        .filter(|c| c.direction == CommDirection::Send)
        .filter_map(|c| c.bytes)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_is_the_median_class_and_rare_sizes_are_told() {
        let mut s = SizeClasses::default();
        for _ in 0..45 {
            s.add(8);
        }
        for _ in 0..50 {
            s.add(200_000);
        }
        for _ in 0..5 {
            s.add(10_000_000);
        }
        assert_eq!(s.usual(10_000_000), 200_000);
        assert_eq!(s.usual(300_000), 200_000);
        assert_eq!(s.usual(9), 8);
        assert!(s.rare(10_000_000));
        assert!(!s.rare(8));
        assert!(!s.rare(200_001));
    }
}
