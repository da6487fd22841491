//! Occurrences: the delays of one rank close together in time (its root
//! candidates) and everything linked to them. While it can still grow an
//! occurrence is an [`Occurrence`]; once closed, its costliest candidate
//! is its root, the others co-delays ([`close_occurrence`]), and closed
//! occurrences with the same program, rank, root function and kind of
//! cause make one recurring [`Incident`] ([`to_incident`]).

use std::collections::BTreeSet;

use super::node::Node;
use crate::events::ExecId;
use crate::incidents::model::{
    Cause, Entity, Evidence, Incident, Link, Member, Role, RoleCounts, Source, Window,
};

/// Members kept per incident (their counts and costs are complete; the
/// provenance file, the summary and the report list these).
pub const MAX_MEMBERS: usize = 2000;

/// What kind of root an incident has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum RootKind {
    Slow,
    Oversized,
    Wait,
}

/// Whether two delays of one rank, `(entry, exit, excess)`, are one
/// slowdown: the gap between them is at most the larger of their excesses
/// (a rank starved of CPU is slow in one call after the other; a delay far
/// shorter than the time between two is a separate event).
pub(super) fn close(a: (u64, u64, u64), b: (u64, u64, u64)) -> bool {
    let gap = a.0.saturating_sub(b.1).max(b.0.saturating_sub(a.1));
    gap <= a.2.max(b.2)
}

/// Recurrence: the same program, rank, root function and kind of cause.
pub(super) type IncidentKey = (u32, u64, u32, RootKind);

/// One occurrence while it can still grow: the delays of one rank close
/// together in time (its root candidates) and what joined them.
#[derive(Debug, Clone)]
pub(super) struct Occurrence {
    /// The rank of its delays.
    pub(super) program: u32,
    pub(super) rank: u64,
    /// Its members so far; the root candidates have role `Root` until the
    /// occurrence closes and its costliest candidate becomes the root.
    pub(super) members: Vec<MemberRec>,
    /// The nodes of the root candidates, in member order.
    pub(super) candidates: Vec<Node>,
    /// The earliest entry, latest exit and largest excess of the
    /// candidates: a delay not [`close`] to this is close to none of them
    /// (the gap to any candidate is at least the gap to their span), so
    /// the search for an occurrence to join skips this one.
    pub(super) reach: (u64, u64, u64),
    pub(super) last_step: u64,
}

/// A member, compactly, until the names are known.
#[derive(Debug, Clone)]
pub(super) struct MemberRec {
    pub(super) role: Role,
    pub(super) link: Link,
    pub(super) program: u32,
    pub(super) id: ExecId,
    pub(super) thread: u64,
    pub(super) function: u32,
    pub(super) step: u64,
    pub(super) entry: u64,
    pub(super) exit: u64,
    pub(super) cost_us: u64,
    pub(super) linked: Option<(u32, ExecId)>,
    pub(super) bytes_sent: u64,
}

/// A closed occurrence that may reach the floor.
#[derive(Debug, Clone)]
pub(super) struct Closed {
    pub(super) cost_us: u64,
    pub(super) root: Node,
    /// It held waits on other ranks (a wait root that did stalled inside
    /// MPI).
    pub(super) held_others: bool,
    pub(super) members: Vec<MemberRec>,
}

/// What the floor left out: occurrences and their cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BelowFloor {
    /// Occurrences below the floor.
    pub occurrences: u64,
    /// Their cost (µs of rank time).
    pub cost_us: u64,
}

/// Closes an occurrence: its costliest root candidate becomes its root,
/// the others co-delays linked to it; `None` for one without candidates.
pub(super) fn close_occurrence(o: Occurrence) -> Option<(IncidentKey, Closed)> {
    let Occurrence {
        mut members,
        candidates,
        ..
    } = o;
    let roots: Vec<usize> = (0..members.len())
        .filter(|&k| members[k].role == Role::Root)
        .collect();
    let &top = roots
        .iter()
        .max_by_key(|&&k| (members[k].cost_us, std::cmp::Reverse(members[k].entry)))?;
    let root = candidates[roots.iter().position(|&k| k == top).unwrap_or(0)].clone();
    let root_id = (root.program, root.id);
    for &k in &roots {
        if k != top {
            members[k].role = Role::CoDelay;
            members[k].link = Link::SameRank;
            members[k].linked = Some(root_id);
        }
    }
    let kind = if root.oversized() {
        RootKind::Oversized
    } else if root.class.is_wait() {
        RootKind::Wait
    } else {
        RootKind::Slow
    };
    let key = (root.program, root.id.rank, root.function, kind);
    let held_others = members
        .iter()
        .any(|m| m.role == Role::PropagatedWait && m.id.rank != root.id.rank);
    Some((
        key,
        Closed {
            cost_us: members.iter().map(|m| m.cost_us).sum(),
            root,
            held_others,
            members,
        },
    ))
}

/// A recurring incident of its kept occurrences (oldest first).
pub(super) fn to_incident(
    key: &IncidentKey,
    kept: &[&Closed],
    name: &dyn Fn(u32) -> String,
) -> Incident {
    let top = kept
        .iter()
        .max_by_key(|c| (c.cost_us, std::cmp::Reverse(c.root.entry)))
        .copied()
        .unwrap_or(kept[0]);
    let root = &top.root;
    let cause = match key.3 {
        RootKind::Slow => Cause::SlowExecution,
        RootKind::Oversized => Cause::OversizedMessage,
        RootKind::Wait if top.held_others => Cause::StalledInMpi,
        RootKind::Wait => Cause::UntracedWait,
    };
    let mut window: Option<Window> = None;
    let mut involved = BTreeSet::new();
    let mut counts = RoleCounts::default();
    let mut recs: Vec<(u64, &MemberRec)> = Vec::new();
    for (k, c) in kept.iter().enumerate() {
        for m in &c.members {
            let w = Window::tau(m.step, m.step, m.entry, m.exit);
            window = Some(window.map_or(w, |x| x.join(&w)));
            if m.program == key.0 {
                involved.insert(m.id.rank);
            }
            counts.add(m.role);
            if recs.len() < MAX_MEMBERS {
                recs.push((k as u64 + 1, m));
            }
        }
    }
    let mut evidence = vec![Evidence::new(
        "runtime_us",
        root.runtime_us as f64,
        root.expected_us as f64,
        "µs",
    )];
    if root.bytes_sent > 0 && root.usual_bytes > 0 {
        let bytes = Evidence::new(
            "bytes_sent",
            root.bytes_sent as f64,
            root.usual_bytes as f64,
            "bytes",
        );
        if cause == Cause::OversizedMessage {
            evidence.insert(0, bytes);
        } else {
            evidence.push(bytes);
        }
    }
    let members = recs
        .iter()
        .map(|&(occurrence, m)| Member {
            role: m.role,
            link: m.link,
            entity: Entity::execution(
                m.program,
                m.id.rank,
                m.thread,
                &name(m.function),
                format!("{}:{}", m.program, m.id),
            ),
            window: Window::tau(m.step, m.step, m.entry, m.exit),
            cost_s: m.cost_us as f64 / 1e6,
            linked_to: m.linked.map(|(p, id)| format!("{p}:{id}")),
            linked_rank: m.linked.map(|(_, id)| id.rank),
            occurrence,
            detail: if m.bytes_sent > 0 {
                format!("sent {} bytes", m.bytes_sent)
            } else {
                String::new()
            },
        })
        .collect();
    Incident {
        id: 0,
        source: Source::Tau,
        cause,
        root: Entity::execution(
            root.program,
            root.id.rank,
            root.thread,
            &name(root.function),
            root.event_id(),
        ),
        evidence,
        window: window.unwrap_or_default(),
        occurrences: kept.len() as u64,
        cost_s: kept.iter().map(|c| c.cost_us).sum::<u64>() as f64 / 1e6,
        share: 0.0,
        involved: involved.into_iter().collect(),
        counts,
        members,
    }
}
