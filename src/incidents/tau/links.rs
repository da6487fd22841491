//! The rules that give an anomalous execution its cause, among the
//! anomalous executions of every rank in a window of steps.
//!
//! A node is linked to at most one other node, nearer the root:
//!
//! 1. **Nesting** (runtimes judged inclusive): a call whose excess is
//!    mostly its anomalous callees' is an *enclosing call* of the callee
//!    with the largest excess.
//! 2. A node that sent a rare, oversized message is a root: the bytes are
//!    its evidence.
//! 3. **Messages**: a wait that received (or sent) a message whose other
//!    end is an anomalous execution is linked to it (the other end that
//!    finished last, when several) — unless a partner's delay of rule 4
//!    ended clearly later, which then held the wait.
//! 4. **Release by a partner**: a point-to-point wait whose partners' end
//!    of the message was not anomalous is linked to the partner's latest
//!    anomalous execution that ended before the wait did, not long before:
//!    the partner was late because of it.
//! 5. **Release at a collective**: a collective wait is linked to the
//!    costliest anomalous execution, ending shortly before the wait ended,
//!    of another rank.
//!
//!    In both, a rank that has a wait *released with* this one (waiting
//!    at the same time, ending at about the same time) is not a
//!    candidate: it had arrived early, it did not hold anybody up. Waits
//!    released together with no such cause are linked to one of them that
//!    has one, or else to the one that entered first: a rank that was
//!    inside MPI all along while the others arrived, and held them there
//!    (a process stopped or descheduled inside the call).
//! 6. Anything else is a root: a slow execution, or a wait whose cause
//!    the trace does not show.
//!
//! Every rule is a function of the window alone, so every AD rank decides
//! the same. Links of rules 4 and 5 point to a node that ended strictly
//! earlier; rule 3 may close a circle (a ring of `MPI_Sendrecv`s), which
//! [`break_cycles`] opens at its earliest-ending node.

use std::collections::HashMap;

use super::node::{CallClass, MsgKey, Node};
use crate::incidents::model::{Link, Role};

/// How the linking judges time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSettings {
    /// Timestamps of different ranks may disagree by this much (µs):
    /// different nodes' clocks are not synchronised.
    pub tolerance_us: u64,
    /// Runtimes were judged inclusive: a call's excess contains its
    /// callees'.
    pub inclusive: bool,
}

impl Default for LinkSettings {
    fn default() -> Self {
        LinkSettings {
            tolerance_us: DEFAULT_TOLERANCE_US,
            inclusive: false,
        }
    }
}

/// Default `--incident-clock-tolerance-us`.
pub const DEFAULT_TOLERANCE_US: u64 = 100;

/// A release can come this long after the releasing execution ended at
/// least (µs): the message or the collective's own latency.
const MIN_RELEASE_GAP_US: u64 = 1000;

/// What was decided of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing in the trace caused it: it starts an occurrence.
    Root,
    /// Node `to` (an index into the window) caused it.
    Linked {
        /// The cause.
        to: usize,
        /// How.
        link: Link,
        /// What the node is to the cause's incident.
        role: Role,
    },
}

/// A node's decision and its own share of its excess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    /// Root, or linked to what.
    pub decision: Decision,
    /// The time the node lost itself (µs): its excess, less its anomalous
    /// callees' when runtimes are judged inclusive (they count in their
    /// own right, never twice).
    pub own_us: u64,
}

/// The nodes of a window, indexed for the rules.
pub struct WindowIndex<'a> {
    nodes: &'a [Node],
    /// `(program, rank)` → nodes, by exit time.
    by_rank: HashMap<(u32, u64), Vec<usize>>,
    /// Program → its ranks that have nodes, sorted.
    ranks_of: HashMap<u32, Vec<u64>>,
    /// Message → the nodes that sent it.
    senders: HashMap<MsgKey, Vec<usize>>,
    /// Message → the nodes that received it.
    receivers: HashMap<MsgKey, Vec<usize>>,
}

impl<'a> WindowIndex<'a> {
    /// Indexes `nodes`.
    pub fn new(nodes: &'a [Node]) -> Self {
        let mut by_rank: HashMap<(u32, u64), Vec<usize>> = HashMap::new();
        let mut senders: HashMap<MsgKey, Vec<usize>> = HashMap::new();
        let mut receivers: HashMap<MsgKey, Vec<usize>> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            by_rank.entry((n.program, n.id.rank)).or_default().push(i);
            for m in &n.sends {
                senders.entry(n.send_key(m)).or_default().push(i);
            }
            for m in &n.recvs {
                receivers.entry(n.recv_key(m)).or_default().push(i);
            }
        }
        let mut ranks_of: HashMap<u32, Vec<u64>> = HashMap::new();
        for (list_key, list) in by_rank.iter_mut() {
            list.sort_by_key(|&i| (nodes[i].exit, i));
            ranks_of.entry(list_key.0).or_default().push(list_key.1);
        }
        for r in ranks_of.values_mut() {
            r.sort_unstable();
        }
        WindowIndex {
            nodes,
            by_rank,
            ranks_of,
            senders,
            receivers,
        }
    }

    /// The nodes.
    pub fn nodes(&self) -> &'a [Node] {
        self.nodes
    }

    /// Nodes of `(program, rank)` with an exit in `lo..=hi`, by exit.
    fn ending_between(&self, program: u32, rank: u64, lo: u64, hi: u64) -> &[usize] {
        let Some(list) = self.by_rank.get(&(program, rank)) else {
            return &[];
        };
        let a = list.partition_point(|&i| self.nodes[i].exit < lo);
        let b = list.partition_point(|&i| self.nodes[i].exit <= hi);
        &list[a..b.max(a)]
    }

    /// The anomalous callees of node `i` that no other anomalous callee
    /// encloses (same rank and thread, inside its time, deeper).
    pub fn top_descendants(&self, i: usize) -> Vec<usize> {
        let n = &self.nodes[i];
        let inside: Vec<usize> = self
            .ending_between(n.program, n.id.rank, n.entry, n.exit)
            .iter()
            .copied()
            .filter(|&j| {
                let d = &self.nodes[j];
                j != i && d.thread == n.thread && d.entry >= n.entry && d.depth > n.depth
            })
            .collect();
        inside
            .iter()
            .copied()
            .filter(|&j| {
                let d = &self.nodes[j];
                !inside.iter().any(|&k| {
                    let e = &self.nodes[k];
                    k != j && e.depth < d.depth && e.entry <= d.entry && d.exit <= e.exit
                })
            })
            .collect()
    }

    /// The nodes at the other end of node `i`'s messages: the senders of
    /// what it received, or for a call that received nothing the receivers
    /// of what it sent (a wait is released by what it receives; a blocking
    /// send waits on its receiver).
    fn message_partners(&self, i: usize) -> Vec<usize> {
        let n = &self.nodes[i];
        let ends = |keys: Vec<&Vec<usize>>| -> Vec<usize> {
            let mut out: Vec<usize> = keys
                .into_iter()
                .flatten()
                .copied()
                .filter(|&j| j != i)
                .collect();
            out.sort_unstable();
            out.dedup();
            out
        };
        let senders = ends(
            n.recvs
                .iter()
                .filter_map(|m| self.senders.get(&n.recv_key(m)))
                .collect(),
        );
        if !n.recvs.is_empty() {
            return senders;
        }
        ends(
            n.sends
                .iter()
                .filter_map(|m| self.receivers.get(&n.send_key(m)))
                .collect(),
        )
    }

    /// The waits of other ranks of node `i`'s program released with it:
    /// waiting at the same time, and ending within [`together_us`] of it.
    pub fn released_with(&self, i: usize, s: &LinkSettings) -> Vec<usize> {
        let n = &self.nodes[i];
        if !n.class.is_wait() {
            return Vec::new();
        }
        let w = together_us(n, s);
        self.ranks_of
            .get(&n.program)
            .into_iter()
            .flatten()
            .filter(|&&r| r != n.id.rank)
            .flat_map(|&r| self.ending_between(n.program, r, n.exit.saturating_sub(w), n.exit + w))
            .copied()
            .filter(|&j| {
                let o = &self.nodes[j];
                o.class.is_wait() && o.entry < n.exit && n.entry < o.exit
            })
            .collect()
    }
}

/// How far apart the ends of two waits released by the same event may be:
/// the clock tolerance, plus the spread of the release as ranks get the
/// CPU back (at least 2 ms, or a twentieth of the wait's excess).
fn together_us(w: &Node, s: &LinkSettings) -> u64 {
    s.tolerance_us + (w.excess_us / 20).max(2000)
}

/// How long before a wait ended its releaser may have ended: the wait's
/// usual duration (the message or collective itself), plus a quarter of
/// its excess (at least [`MIN_RELEASE_GAP_US`]), plus the clock tolerance.
fn release_gap_us(w: &Node, s: &LinkSettings) -> u64 {
    w.expected_us + (w.excess_us / 4).max(MIN_RELEASE_GAP_US) + s.tolerance_us
}

/// Decides node `i` of the window (see the module doc).
pub fn decide(ix: &WindowIndex<'_>, i: usize, s: &LinkSettings) -> Decided {
    let n = &ix.nodes[i];
    let mut own_us = n.excess_us;
    if s.inclusive {
        let below = ix.top_descendants(i);
        let callees: u64 = below.iter().map(|&j| ix.nodes[j].excess_us).sum();
        own_us = n.excess_us.saturating_sub(callees);
        // Rule 1: most of its excess is its callees'.
        if let Some(&to) = below
            .iter()
            .max_by_key(|&&j| (ix.nodes[j].excess_us, std::cmp::Reverse(j)))
        {
            if 2 * callees >= n.excess_us {
                return Decided {
                    decision: Decision::Linked {
                        to,
                        link: Link::Nesting,
                        role: Role::EnclosingCall,
                    },
                    own_us,
                };
            }
        }
    }
    let decision = if n.oversized() || !n.class.is_wait() {
        // Rule 2, and rule 6 for the rank's own work.
        Decision::Root
    } else {
        wait_cause(ix, i, s)
    };
    Decided { decision, own_us }
}

/// Rules 3–5 for a wait.
fn wait_cause(ix: &WindowIndex<'_>, i: usize, s: &LinkSettings) -> Decision {
    let n = &ix.nodes[i];
    // Rule 3: the other end of a message, the one that ended last.
    let ends = ix.message_partners(i);
    let message = ends
        .iter()
        .copied()
        .filter(|&j| ix.nodes[j].entry <= n.exit + s.tolerance_us)
        .max_by_key(|&j| (ix.nodes[j].exit, std::cmp::Reverse(j)));
    // Rules 4 and 5: what released it, from a rank that was not waiting
    // with it.
    let group = ix.released_with(i, s);
    let released = releaser(ix, i, &group, s);
    // A matched message explains the wait unless a partner's delay ended
    // clearly later: then that held it (a late receiver of its send, when
    // its own message had arrived).
    match (message, released) {
        (Some(m), Some(r)) if ix.nodes[r].exit > ix.nodes[m].exit + s.tolerance_us => {
            return Decision::Linked {
                to: r,
                link: Link::Release,
                role: Role::PropagatedWait,
            }
        }
        (Some(to), _) => {
            return Decision::Linked {
                to,
                link: Link::Message,
                role: Role::PropagatedWait,
            }
        }
        (None, Some(to)) => {
            return Decision::Linked {
                to,
                link: Link::Release,
                role: Role::PropagatedWait,
            }
        }
        (None, None) => {}
    }
    // Released together with others, none of them by anything traced
    // outside the group: to one that was (then all share its cause), or
    // else to the one that entered first — the rank that was in MPI all
    // along while the others arrived, and that held them there.
    if let Some(&to) = group.iter().find(|&&j| {
        let theirs = ix.released_with(j, s);
        releaser(ix, j, &theirs, s).is_some()
    }) {
        return Decision::Linked {
            to,
            link: Link::Together,
            role: Role::PropagatedWait,
        };
    }
    let first = group
        .iter()
        .copied()
        .chain(std::iter::once(i))
        .min_by_key(|&j| (ix.nodes[j].entry, j))
        .unwrap_or(i);
    if first == i {
        Decision::Root
    } else {
        Decision::Linked {
            to: first,
            link: Link::Together,
            role: Role::PropagatedWait,
        }
    }
}

/// What released wait `i`, from a rank none of whose waits were released
/// with it (`group`): a rank that waited too had arrived early.
///
/// - A point-to-point wait with known partners (rule 4): the partners'
///   latest anomalous execution that ended before the wait did, within
///   its release gap plus four times its excess (a partner's lateness
///   carries through its normal work up to the send).
/// - Any other wait (rule 5): the costliest anomalous execution of any
///   rank of the program that ended before the wait did and after it
///   began, within the release gap plus twice its excess.
fn releaser(ix: &WindowIndex<'_>, i: usize, group: &[usize], s: &LinkSettings) -> Option<usize> {
    let n = &ix.nodes[i];
    let hi = n.exit.saturating_sub(1);
    let waited: Vec<u64> = group.iter().map(|&j| ix.nodes[j].id.rank).collect();
    let mut peers: Vec<u64> = n.recvs.iter().chain(&n.sends).map(|m| m.peer).collect();
    peers.sort_unstable();
    peers.dedup();
    peers.retain(|&p| p != n.id.rank && !waited.contains(&p));
    if n.class == CallClass::PointToPoint && !(n.recvs.is_empty() && n.sends.is_empty()) {
        let lo = n
            .exit
            .saturating_sub(release_gap_us(n, s) + 4 * n.excess_us);
        return peers
            .iter()
            .flat_map(|&p| ix.ending_between(n.program, p, lo, hi))
            .copied()
            .max_by_key(|&j| (ix.nodes[j].exit, std::cmp::Reverse(j)));
    }
    let lo = n
        .exit
        .saturating_sub(release_gap_us(n, s) + 2 * n.excess_us)
        .max(n.entry.saturating_sub(s.tolerance_us));
    ix.ranks_of
        .get(&n.program)
        .into_iter()
        .flatten()
        .filter(|&&r| r != n.id.rank && !waited.contains(&r))
        .flat_map(|&r| ix.ending_between(n.program, r, lo, hi))
        .copied()
        .max_by_key(|&j| (ix.nodes[j].excess_us, std::cmp::Reverse(j)))
}

/// Opens every circle of links: the node of the circle that ended first
/// (then the first in window order) becomes a root. `decided[i]` is `None`
/// for nodes not decided yet (they end a chain).
pub fn break_cycles(nodes: &[Node], decided: &mut [Option<Decided>]) {
    // 0 unvisited, 1 on the current path, 2 done.
    let mut colour = vec![0u8; nodes.len()];
    for start in 0..nodes.len() {
        if colour[start] != 0 {
            continue;
        }
        let mut path = Vec::new();
        let mut at = start;
        loop {
            if colour[at] == 1 {
                // A circle: from `at`'s place on the path to the end.
                let from = path.iter().position(|&p| p == at).unwrap_or(0);
                let circle: &[usize] = &path[from..];
                if let Some(&first) = circle.iter().min_by_key(|&&k| (nodes[k].exit, k)) {
                    if let Some(d) = decided[first].as_mut() {
                        d.decision = Decision::Root;
                    }
                }
                break;
            }
            if colour[at] == 2 {
                break;
            }
            colour[at] = 1;
            path.push(at);
            match decided[at].map(|d| d.decision) {
                Some(Decision::Linked { to, .. }) if to < nodes.len() => at = to,
                _ => break,
            }
        }
        for p in path {
            colour[p] = 2;
        }
    }
}
