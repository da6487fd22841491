//! The features of one completed execution, by the names of
//! `model::features`: what `run --model-samples` records and what the model
//! detector evaluates a model on. One extraction for both, so that a model
//! trained on recorded samples reads the same quantities when it judges a
//! live execution.
//!
//! Everything is an integer (µs, bytes, counts, counter values): the
//! recorded samples are exact, and a prediction made from them is the same
//! on every AD rank.

use super::{CommDirection, Execution, StepEvents};
use crate::model::features::FIXED;

/// Number of fixed features ([`FIXED`]).
pub const FIXED_COUNT: usize = FIXED.len();

/// Positions in [`Features::fixed`], in the order of [`FIXED`].
pub mod at {
    /// `exclusive_us`.
    pub const EXCLUSIVE_US: usize = 0;
    /// `inclusive_us`.
    pub const INCLUSIVE_US: usize = 1;
    /// `n_children`.
    pub const N_CHILDREN: usize = 2;
    /// `children_us`.
    pub const CHILDREN_US: usize = 3;
    /// `bytes_sent`.
    pub const BYTES_SENT: usize = 4;
    /// `bytes_received`.
    pub const BYTES_RECEIVED: usize = 5;
    /// `depth`.
    pub const DEPTH: usize = 6;
    /// `rank`.
    pub const RANK: usize = 7;
    /// `thread`.
    pub const THREAD: usize = 8;
    /// `step`.
    pub const STEP: usize = 9;
}

/// The fixed features of an execution, in [`FIXED`] order.
pub type FixedFeatures = [u64; FIXED_COUNT];

/// The fixed features of `e`, an execution of `events` completed in `step`.
///
/// - `children_us` is `inclusive − exclusive`: the children's total
///   inclusive time (capped at the execution's own, as the exclusive time
///   is never negative);
/// - `bytes_sent`/`bytes_received` add the sizes of the execution's own
///   messages (those sent or received while it was the innermost open
///   call); a size TAU got wrong ([`super::MAX_PLAUSIBLE_BYTES`]) adds 0.
#[inline]
pub fn fixed_features(e: &Execution, events: &StepEvents, step: u64) -> FixedFeatures {
    let inclusive = e.inclusive();
    let (mut sent, mut received) = (0u64, 0u64);
    for c in events.comms_of(e) {
        let b = c.bytes.unwrap_or(0);
        match c.direction {
            CommDirection::Send => sent = sent.saturating_add(b),
            CommDirection::Recv => received = received.saturating_add(b),
        }
    }
    let mut f = [0u64; FIXED_COUNT];
    f[at::EXCLUSIVE_US] = e.exclusive;
    f[at::INCLUSIVE_US] = inclusive;
    f[at::N_CHILDREN] = e.n_children as u64;
    f[at::CHILDREN_US] = inclusive.saturating_sub(e.exclusive);
    f[at::BYTES_SENT] = sent;
    f[at::BYTES_RECEIVED] = received;
    f[at::DEPTH] = e.depth as u64;
    f[at::RANK] = e.rank();
    f[at::THREAD] = e.thread;
    f[at::STEP] = step;
    f
}

/// The counter features of `e`: `(global counter index, value)` sorted by
/// counter, each counter once. A counter sampled several times during the
/// execution counts the sum of its samples (most counters are sampled
/// once per call; for those sampled per message, such as TAU's message
/// sizes, the sum is the execution's total). `out` is cleared first.
pub fn counter_features(e: &Execution, events: &StepEvents, out: &mut Vec<(u32, u64)>) {
    out.clear();
    for c in events.counters_of(e) {
        out.push((c.counter, c.value));
    }
    if out.len() > 1 {
        out.sort_unstable_by_key(|&(c, _)| c);
        out.dedup_by(|later, kept| {
            if later.0 == kept.0 {
                kept.1 = kept.1.saturating_add(later.1);
                true
            } else {
                false
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{AttachRange, CommEvent, CounterEvent, ExecId, Span};
    use crate::model::features;

    #[test]
    fn positions_follow_the_contract() {
        let names = [
            (at::EXCLUSIVE_US, features::EXCLUSIVE_US),
            (at::INCLUSIVE_US, features::INCLUSIVE_US),
            (at::N_CHILDREN, features::N_CHILDREN),
            (at::CHILDREN_US, features::CHILDREN_US),
            (at::BYTES_SENT, features::BYTES_SENT),
            (at::BYTES_RECEIVED, features::BYTES_RECEIVED),
            (at::DEPTH, features::DEPTH),
            (at::RANK, features::RANK),
            (at::THREAD, features::THREAD),
            (at::STEP, features::STEP),
        ];
        for (i, name) in names {
            assert_eq!(FIXED[i], name);
        }
    }

    #[test]
    fn features_of_an_execution_with_messages_and_counters() {
        let mut ev = StepEvents::default();
        let comm = |direction, bytes| CommEvent {
            direction,
            src: 0,
            dst: 1,
            tag: 0,
            bytes,
            ts: 5,
        };
        ev.comms = vec![
            comm(CommDirection::Send, Some(100)),
            comm(CommDirection::Recv, Some(40)),
            comm(CommDirection::Send, Some(28)),
            comm(CommDirection::Recv, None),
        ];
        let ctr = |counter, value| CounterEvent {
            counter,
            value,
            ts: 5,
        };
        ev.counters = vec![ctr(3, 7), ctr(1, 2), ctr(3, 5)];
        let attach = AttachRange {
            comms: Span { start: 0, len: 4 },
            counters: Span { start: 0, len: 3 },
            ..Default::default()
        };
        let id = ExecId {
            rank: 2,
            step: 1,
            idx: 9,
        };
        let e = Execution::new(id, 0, 4, 0, 1000, 1300, 120, None, 3, 2, false, attach);
        let f = fixed_features(&e, &ev, 2);
        assert_eq!(f, [120, 300, 2, 180, 128, 40, 3, 2, 4, 2]);
        let mut c = Vec::new();
        counter_features(&e, &ev, &mut c);
        assert_eq!(c, [(1, 2), (3, 12)]);
    }
}
