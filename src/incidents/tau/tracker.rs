//! Incidents built step by step from the anomalous executions of every
//! rank, the same on every AD rank.
//!
//! Each step the AD ranks exchange the step's [`Node`]s; every rank feeds
//! the same sorted list to its [`Tracker`]. A node's cause may be on a
//! rank whose step ran a little ahead or behind (a send lands in the step
//! before its receive), so nodes are decided one step late, against a
//! window of three steps, and joined to the occurrence of their root:
//!
//! - roots of one rank close together in time are one occurrence: the
//!   costliest is its root, the others co-delays (a starved rank is slow in
//!   every function at once);
//! - a linked node joins the occurrence of the node it is linked to;
//! - occurrences with the same program, rank, root function and kind of
//!   cause are one recurring incident.
//!
//! Costs are integer microseconds, so that sums do not depend on the
//! order they are made in.

use std::collections::{BTreeMap, BTreeSet};

use super::links::{break_cycles, decide, Decided, Decision, LinkSettings, WindowIndex};
use super::node::Node;
pub use super::occurrence::BelowFloor;
use super::occurrence::{
    close, close_occurrence, to_incident, Closed, IncidentKey, MemberRec, Occurrence,
};
use super::open::{OpenOccurrences, Span};
use crate::events::ExecId;
use crate::incidents::model::{Incident, Link, Role};

/// Steps a node stays in the window after the step it was gathered in.
const WINDOW_STEPS: u64 = 2;

/// One node in the window.
#[derive(Debug, Clone)]
struct Slot {
    node: Node,
    /// The step it was gathered in.
    step: u64,
    decided: Option<Decided>,
    /// The occurrence it belongs to, once resolved.
    occurrence: Option<u64>,
}

/// The incidents of a TAU run, as they form.
#[derive(Debug)]
pub struct Tracker {
    settings: LinkSettings,
    window: Vec<Slot>,
    occurrences: OpenOccurrences,
    next_occurrence: u64,
    /// Closed occurrences that may reach the floor, by recurrence key.
    incidents: BTreeMap<IncidentKey, Vec<Closed>>,
    /// Occurrences that cannot reach it.
    below: BelowFloor,
    /// The floor, as a share of the run's total rank time.
    floor: f64,
    /// The run's total rank time so far (µs), the same on every rank.
    rank_time_us: u64,
    /// Occurrences found in the last call to [`Tracker::step`].
    found_last_step: u64,
    /// Nodes seen, all steps.
    nodes_seen: u64,
}

impl Tracker {
    /// A tracker linking with `settings`, keeping the occurrences that
    /// cost at least `floor` of the run's total rank time.
    pub fn new(settings: LinkSettings, floor: f64) -> Self {
        Tracker {
            settings,
            below: BelowFloor::default(),
            floor,
            rank_time_us: 0,
            window: Vec::new(),
            occurrences: OpenOccurrences::default(),
            next_occurrence: 0,
            incidents: BTreeMap::new(),
            found_last_step: 0,
            nodes_seen: 0,
        }
    }

    /// The run's total rank time so far (µs; the same on every rank):
    /// an occurrence that costs less than the floor's share of it can
    /// never be listed, and is only counted.
    pub fn set_rank_time(&mut self, total_us: u64) {
        self.rank_time_us = self.rank_time_us.max(total_us);
    }

    /// Adds the nodes of `step` (every rank's, in any order), decides the
    /// nodes of the step before, and joins what can be joined.
    pub fn step(&mut self, step: u64, mut nodes: Vec<Node>) {
        nodes.sort_by_key(Node::sort_key);
        self.nodes_seen += nodes.len() as u64;
        self.window.extend(nodes.into_iter().map(|node| Slot {
            node,
            step,
            decided: None,
            occurrence: None,
        }));
        let before = self.next_occurrence;
        self.decide_up_to(step.checked_sub(1));
        self.resolve(step);
        self.forget_before(step.saturating_sub(WINDOW_STEPS), step);
        self.found_last_step = self.next_occurrence - before;
    }

    /// Decides and joins everything left (the end of the run).
    pub fn finish(&mut self) {
        let before = self.next_occurrence;
        self.decide_up_to(Some(u64::MAX));
        self.resolve(u64::MAX);
        self.forget_before(u64::MAX, u64::MAX);
        self.found_last_step += self.next_occurrence - before;
    }

    /// Occurrences found in the last step processed.
    pub fn found_last_step(&self) -> u64 {
        self.found_last_step
    }

    /// Anomalous executions linked so far.
    pub fn nodes_seen(&self) -> u64 {
        self.nodes_seen
    }

    /// Occurrences found so far.
    pub fn occurrences_found(&self) -> u64 {
        self.next_occurrence
    }

    /// Decides the undecided nodes gathered at or before `up_to`.
    fn decide_up_to(&mut self, up_to: Option<u64>) {
        let Some(up_to) = up_to else {
            return;
        };
        let nodes: Vec<Node> = self.window.iter().map(|s| s.node.clone()).collect();
        let ix = WindowIndex::new(&nodes);
        let mut decided: Vec<Option<Decided>> = self.window.iter().map(|s| s.decided).collect();
        for (i, s) in self.window.iter().enumerate() {
            if s.decided.is_none() && s.step <= up_to {
                decided[i] = Some(decide(&ix, i, &self.settings));
            }
        }
        break_cycles(&nodes, &mut decided);
        for (s, d) in self.window.iter_mut().zip(decided) {
            s.decided = d;
        }
    }

    /// Joins decided nodes to occurrences: roots first (close roots of a
    /// rank together), then the nodes linked to them.
    fn resolve(&mut self, step: u64) {
        self.resolve_roots(step);
        for i in 0..self.window.len() {
            self.resolve_linked(i);
        }
    }

    fn resolve_roots(&mut self, step: u64) {
        let mut roots: Vec<usize> = (0..self.window.len())
            .filter(|&i| {
                let s = &self.window[i];
                s.occurrence.is_none()
                    && matches!(s.decided.map(|d| d.decision), Some(Decision::Root))
            })
            .collect();
        roots.sort_by_key(|&i| {
            let n = &self.window[i].node;
            (n.program, n.id.rank, n.entry, n.exit, i)
        });
        // Clusters: roots of one rank, each close to one before it (see
        // `close`).
        let mut k = 0;
        while k < roots.len() {
            let first = &self.window[roots[k]].node;
            let (program, rank) = (first.program, first.id.rank);
            let mut cluster = vec![roots[k]];
            k += 1;
            while k < roots.len() {
                let n = &self.window[roots[k]].node;
                if n.program != program || n.id.rank != rank {
                    break;
                }
                // The latest member first: roots come in time order.
                let near = cluster.iter().rev().any(|&c| {
                    let m = &self.window[c].node;
                    close(
                        (n.entry, n.exit, n.excess_us),
                        (m.entry, m.exit, m.excess_us),
                    )
                });
                if !near {
                    break;
                }
                cluster.push(roots[k]);
                k += 1;
            }
            self.place_cluster(&cluster, step);
        }
    }

    /// Joins a cluster of roots of one rank to an open occurrence of that
    /// rank close in time, or starts one.
    fn place_cluster(&mut self, cluster: &[usize], step: u64) {
        let spans: Vec<Span> = cluster
            .iter()
            .map(|&i| {
                let n = &self.window[i].node;
                (n.entry, n.exit, n.excess_us)
            })
            .collect();
        let first = &self.window[cluster[0]].node;
        let (program, rank) = (first.program, first.id.rank);
        let near = self.occurrences.nearest(program, rank, &spans);
        let occ = near.unwrap_or_else(|| {
            let id = self.next_occurrence;
            self.next_occurrence += 1;
            self.occurrences.open(
                id,
                Occurrence {
                    program,
                    rank,
                    members: Vec::new(),
                    candidates: Vec::new(),
                    reach: (u64::MAX, 0, 0),
                    last_step: step,
                },
            );
            id
        });
        for &i in cluster {
            let node = self.window[i].node.clone();
            self.occurrences.add_candidate(occ, node);
            self.join(i, occ, Role::Root, Link::None, None);
        }
    }

    /// Joins node `i` to the occurrence of its cause, if that is known.
    fn resolve_linked(&mut self, i: usize) {
        let mut path = Vec::new();
        let mut at = i;
        let occ = loop {
            let s = &self.window[at];
            if let Some(o) = s.occurrence {
                break Some(o);
            }
            match s.decided.map(|d| d.decision) {
                Some(Decision::Linked { to, .. })
                    if to < self.window.len() && !path.contains(&at) =>
                {
                    path.push(at);
                    at = to;
                }
                _ => break None,
            }
        };
        let Some(occ) = occ else {
            return;
        };
        for &p in path.iter().rev() {
            let Some(Decision::Linked { to, link, role }) =
                self.window[p].decided.map(|d| d.decision)
            else {
                continue;
            };
            let cause = &self.window[to].node;
            let linked = Some((cause.program, cause.id));
            self.join(p, occ, role, link, linked);
        }
    }

    /// Records node `i` as a member of occurrence `occ`.
    fn join(&mut self, i: usize, occ: u64, role: Role, link: Link, linked: Option<(u32, ExecId)>) {
        let slot = &mut self.window[i];
        slot.occurrence = Some(occ);
        let n = &slot.node;
        let rec = MemberRec {
            role,
            link,
            program: n.program,
            id: n.id,
            thread: n.thread,
            function: n.function,
            step: slot.step,
            entry: n.entry,
            exit: n.exit,
            cost_us: slot.decided.map_or(n.excess_us, |d| d.own_us),
            linked,
            bytes_sent: n.bytes_sent,
        };
        if let Some(o) = self.occurrences.get_mut(occ) {
            o.last_step = o.last_step.max(slot.step);
            o.members.push(rec);
        }
    }

    /// Folds a closed occurrence into its recurring incident, or counts it
    /// when it can never reach the floor.
    fn fold(&mut self, o: Occurrence) {
        let Some((key, closed)) = close_occurrence(o) else {
            return;
        };
        if (closed.cost_us as f64) < self.floor * self.rank_time_us as f64 {
            self.below.occurrences += 1;
            self.below.cost_us += closed.cost_us;
            return;
        }
        self.incidents.entry(key).or_default().push(closed);
    }

    /// Drops the nodes gathered before `keep_from`; one still unresolved
    /// becomes a root of its own (its cause left the window undecided).
    fn forget_before(&mut self, keep_from: u64, step: u64) {
        loop {
            let stale: Vec<usize> = (0..self.window.len())
                .filter(|&i| self.window[i].step < keep_from && self.window[i].occurrence.is_none())
                .collect();
            let Some(&i) = stale.first() else {
                break;
            };
            let d = self.window[i]
                .decided
                .map_or(self.window[i].node.excess_us, |d| d.own_us);
            self.window[i].decided = Some(Decided {
                decision: Decision::Root,
                own_us: d,
            });
            self.resolve(step);
        }
        // Window indices shift: links are renumbered, and a link to a
        // dropped node (whose follower is resolved already) points nowhere.
        let mut new_index = vec![usize::MAX; self.window.len()];
        let mut next = 0;
        for (i, s) in self.window.iter().enumerate() {
            if s.step >= keep_from {
                new_index[i] = next;
                next += 1;
            }
        }
        self.window.retain(|s| s.step >= keep_from);
        for s in &mut self.window {
            if let Some(Decided {
                decision: Decision::Linked { to, .. },
                ..
            }) = s.decided.as_mut()
            {
                *to = new_index.get(*to).copied().unwrap_or(usize::MAX);
            }
        }
        // An occurrence stays open while a later root of its rank may join
        // it or a node in the window may; then it is folded.
        let oldest = keep_from.saturating_sub(1);
        let live: BTreeSet<u64> = self.window.iter().filter_map(|s| s.occurrence).collect();
        let mut closed: Vec<u64> = self
            .occurrences
            .iter()
            .filter(|(id, o)| o.last_step < oldest && !live.contains(id))
            .map(|(id, _)| *id)
            .collect();
        if step == u64::MAX {
            closed = self.occurrences.ids();
        }
        closed.sort_unstable();
        for id in closed {
            if let Some(o) = self.occurrences.remove(id) {
                self.fold(o);
            }
        }
        self.occurrences.tighten();
    }

    /// The incidents whose occurrences cost at least the floor's share of
    /// `total_us` (the run's total rank time), their entities named with
    /// `function_name`, and what the floor left out.
    pub fn incidents(
        &self,
        total_us: u64,
        function_name: &dyn Fn(u32) -> String,
    ) -> (Vec<Incident>, BelowFloor) {
        let min = self.floor * total_us as f64;
        let mut below = self.below;
        let mut out = Vec::new();
        for (key, all) in &self.incidents {
            let (kept, left): (Vec<&Closed>, Vec<&Closed>) =
                all.iter().partition(|c| c.cost_us as f64 >= min);
            below.occurrences += left.len() as u64;
            below.cost_us += left.iter().map(|c| c.cost_us).sum::<u64>();
            if !kept.is_empty() {
                out.push(to_incident(key, &kept, function_name));
            }
        }
        (out, below)
    }
}
