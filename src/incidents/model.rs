//! The incident model shared by the TAU and the ROSS analyses.
//!
//! An [`Incident`] is one problem: its [`Cause`], its root [`Entity`] (an
//! execution for TAU; a PE, KP, LP or "every PE" for ROSS) with the
//! [`Evidence`] that makes it the root, its [`Window`], how often it
//! recurred, its [`Member`]s with their [`Role`] and [`Link`], and its
//! cost. Entities are in `entity`, evidence and windows in `evidence`.

use serde::Serialize;

pub use super::entity::{Entity, EntityKind};
pub use super::evidence::{short, Evidence, Window};

/// Which analysis found the incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A TAU trace (`chimbuko-mpi run`).
    Tau,
    /// A ROSS run (`chimbuko-mpi ross`).
    Ross,
}

impl Source {
    /// `tau` or `ross`.
    pub fn name(self) -> &'static str {
        match self {
            Source::Tau => "tau",
            Source::Ross => "ross",
        }
    }
}

/// What started an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// TAU: an execution took far longer than its model expects, in its
    /// own code (not in a callee, not waiting for a partner).
    SlowExecution,
    /// TAU: an execution sent far more bytes than its function usually
    /// does on that rank (a rare message size).
    OversizedMessage,
    /// TAU: a rank sat in an MPI call long after its partners arrived,
    /// releasing their waits when it came out (a process stopped or
    /// descheduled inside MPI).
    StalledInMpi,
    /// TAU: a wait whose partner's delay the trace does not show (it ran
    /// untraced code, or was late by less than a detector flags).
    UntracedWait,
    /// ROSS: a PE's event processing took far longer than its peers'.
    SlowPe,
    /// ROSS: a PE stopped (no samples, or its real time passed outside
    /// event handlers and GVT) while the others waited for it.
    PausedPe,
    /// ROSS: an LP received far more events than its peers.
    HotspotLp,
    /// ROSS: an LP's events took far longer to process than its peers'.
    CpuHeavyLp,
    /// ROSS: every PE stalled at once, none singled out by its counters.
    RunWideStall,
    /// ROSS: rollbacks surged on every PE over a window of virtual time.
    RollbackStorm,
}

impl Cause {
    /// The snake_case name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Cause::SlowExecution => "slow_execution",
            Cause::OversizedMessage => "oversized_message",
            Cause::StalledInMpi => "stalled_in_mpi",
            Cause::UntracedWait => "untraced_wait",
            Cause::SlowPe => "slow_pe",
            Cause::PausedPe => "paused_pe",
            Cause::HotspotLp => "hotspot_lp",
            Cause::CpuHeavyLp => "cpu_heavy_lp",
            Cause::RunWideStall => "run_wide_stall",
            Cause::RollbackStorm => "rollback_storm",
        }
    }

    /// A few words for people.
    pub fn describe(self) -> &'static str {
        match self {
            Cause::SlowExecution => "slow execution",
            Cause::OversizedMessage => "oversized message",
            Cause::StalledInMpi => "stalled inside MPI",
            Cause::UntracedWait => "wait with no traced cause",
            Cause::SlowPe => "slow PE",
            Cause::PausedPe => "paused PE",
            Cause::HotspotLp => "hotspot LP",
            Cause::CpuHeavyLp => "CPU-heavy LP",
            Cause::RunWideStall => "every PE stalled",
            Cause::RollbackStorm => "rollback storm",
        }
    }

    /// Every cause, in table order.
    pub const ALL: [Cause; 10] = [
        Cause::SlowExecution,
        Cause::OversizedMessage,
        Cause::StalledInMpi,
        Cause::UntracedWait,
        Cause::SlowPe,
        Cause::PausedPe,
        Cause::HotspotLp,
        Cause::CpuHeavyLp,
        Cause::RunWideStall,
        Cause::RollbackStorm,
    ];

    /// The cause of a name written by [`Cause::name`].
    pub fn from_name(s: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// What a member is to its incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The root itself (one per occurrence).
    Root,
    /// Another delay on the root's rank or PE at the same time (a starved
    /// rank is slow in every function; a slow PE in all its KPs).
    CoDelay,
    /// A wait on another rank that the root's delay caused, directly or
    /// through other waits.
    PropagatedWait,
    /// A call slow because a call it made was (its excess is the callee's).
    EnclosingCall,
    /// ROSS: rollbacks another entity suffered because of the root.
    Rollback,
    /// ROSS: any other consequence (GVT waits, KPs running ahead, a PE's
    /// surge behind a hotspot LP).
    OtherEffect,
}

impl Role {
    /// The snake_case name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Role::Root => "root",
            Role::CoDelay => "co_delay",
            Role::PropagatedWait => "propagated_wait",
            Role::EnclosingCall => "enclosing_call",
            Role::Rollback => "rollback",
            Role::OtherEffect => "other_effect",
        }
    }

    /// Every role, in table order.
    pub const ALL: [Role; 6] = [
        Role::Root,
        Role::CoDelay,
        Role::PropagatedWait,
        Role::EnclosingCall,
        Role::Rollback,
        Role::OtherEffect,
    ];

    /// The role of a name written by [`Role::name`].
    pub fn from_name(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == s)
    }
}

/// How a member is tied to what it is linked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// The root: linked to nothing.
    None,
    /// Same rank or PE, at the same time.
    SameRank,
    /// The member encloses the call it is linked to.
    Nesting,
    /// A matched message: the member received (or sent) it, the linked
    /// execution is the other end.
    Message,
    /// The linked execution came out last before the member's wait ended
    /// (a collective, or a partner without a matched message).
    Release,
    /// Both waited at the same collective, and the linked one arrived
    /// last: neither shows what held the collective up.
    Together,
    /// ROSS: rollbacks overlapping the root's window on another PE.
    Rollback,
    /// ROSS: same window, another signal of the run.
    Window,
}

impl Link {
    /// The snake_case name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Link::None => "none",
            Link::SameRank => "same_rank",
            Link::Nesting => "nesting",
            Link::Message => "message",
            Link::Release => "release",
            Link::Together => "together",
            Link::Rollback => "rollback",
            Link::Window => "window",
        }
    }
}

/// One member of an incident.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Member {
    /// What it is to the incident.
    pub role: Role,
    /// How it is tied to what it is linked to.
    pub link: Link,
    /// Who.
    pub entity: Entity,
    /// When.
    pub window: Window,
    /// The time it lost (s): its excess over what its model expects
    /// (TAU), or over its peers or its usual (ROSS).
    pub cost_s: f64,
    /// The execution or entity it is linked to (`event_id` for TAU, the
    /// entity's label for ROSS), none for a root.
    pub linked_to: Option<String>,
    /// The rank or PE of what it is linked to (for drawing the link).
    pub linked_rank: Option<u64>,
    /// Which occurrence of its incident it belongs to (from 1).
    pub occurrence: u64,
    /// A short detail: the message's bytes and tag, the signal, ...
    pub detail: String,
}

/// Members per role.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RoleCounts {
    /// Roots: one per occurrence.
    pub root: u64,
    /// Co-delays.
    pub co_delay: u64,
    /// Propagated waits.
    pub propagated_wait: u64,
    /// Enclosing calls.
    pub enclosing_call: u64,
    /// Rollbacks.
    pub rollback: u64,
    /// Other effects.
    pub other_effect: u64,
}

impl RoleCounts {
    /// Counts one more member of `role`.
    pub fn add(&mut self, role: Role) {
        *self.slot(role) += 1;
    }

    /// The count of `role`.
    pub fn get(&self, role: Role) -> u64 {
        match role {
            Role::Root => self.root,
            Role::CoDelay => self.co_delay,
            Role::PropagatedWait => self.propagated_wait,
            Role::EnclosingCall => self.enclosing_call,
            Role::Rollback => self.rollback,
            Role::OtherEffect => self.other_effect,
        }
    }

    fn slot(&mut self, role: Role) -> &mut u64 {
        match role {
            Role::Root => &mut self.root,
            Role::CoDelay => &mut self.co_delay,
            Role::PropagatedWait => &mut self.propagated_wait,
            Role::EnclosingCall => &mut self.enclosing_call,
            Role::Rollback => &mut self.rollback,
            Role::OtherEffect => &mut self.other_effect,
        }
    }

    /// Every member.
    pub fn total(&self) -> u64 {
        Role::ALL.iter().map(|r| self.get(*r)).sum()
    }
}

/// One problem of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Incident {
    /// 1 for the costliest incident listed, 2 for the next, ...
    pub id: u64,
    /// Which analysis found it.
    pub source: Source,
    /// What started it.
    pub cause: Cause,
    /// Where it started (for a recurring incident, the root of its
    /// costliest occurrence).
    pub root: Entity,
    /// What makes the root the root.
    pub evidence: Vec<Evidence>,
    /// From its first occurrence to its last.
    pub window: Window,
    /// How often the same root (program, rank, function and cause; or
    /// entity and cause) started it.
    pub occurrences: u64,
    /// Time lost, in rank-seconds (TAU) or PE-seconds (ROSS), every member
    /// counted once, nested executions never twice.
    pub cost_s: f64,
    /// `cost_s` as a share of the run's total rank (PE) time.
    pub share: f64,
    /// The ranks (TAU, of the root's program) or PEs involved, sorted.
    pub involved: Vec<u64>,
    /// Members by role, all of them.
    pub counts: RoleCounts,
    /// The members listed (the costliest; `counts` has them all).
    pub members: Vec<Member>,
}

impl Incident {
    /// The incident as JSON, members included.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// What the listed members of occurrence `k` (from 1) cost, seconds.
    pub fn occurrence_cost(&self, k: u64) -> f64 {
        self.members
            .iter()
            .filter(|m| m.occurrence == k)
            .map(|m| m.cost_s)
            .sum()
    }

    /// The occurrence (from 1) whose listed members cost the most; the
    /// first of those when several cost the same (1 when none).
    pub fn costliest_occurrence(&self) -> u64 {
        (1..=self.occurrences.max(1))
            .max_by(|a, b| {
                let (ca, cb) = (self.occurrence_cost(*a), self.occurrence_cost(*b));
                ca.total_cmp(&cb).then(b.cmp(a))
            })
            .unwrap_or(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for c in Cause::ALL {
            assert_eq!(Cause::from_name(c.name()), Some(c));
        }
        for r in Role::ALL {
            assert_eq!(Role::from_name(r.name()), Some(r));
        }
    }
}
