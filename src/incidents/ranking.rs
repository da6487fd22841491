//! Incidents in cost order, and the floor below which they are counted,
//! not listed.
//!
//! Every run has small delays: a descheduled process, a page fault storm,
//! a call a little slower than its model allows. They are real, but they
//! are not what a user looks for; listing them buries the problems that
//! cost the run. The floor is a share of the run's total rank time (the
//! sum over ranks or PEs of the time each was traced): an occurrence that
//! cost less is counted, not listed, and an incident is listed with its
//! occurrences that reach it. Noise recurs, so a floor on an incident's
//! total would let a thousand small delays of one rank add up to a
//! "problem"; a real one costs the run much more each time it strikes.
//! `docs/incidents.md` says why the default is what it is.

use serde::Serialize;

use super::model::Incident;

/// Default `--incident-floor`: an occurrence must cost at least this share
/// of the run's total rank time to be listed (see `docs/incidents.md`).
pub const DEFAULT_FLOOR: f64 = 0.001;

/// The incidents of a run, costliest first, with what the floor left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IncidentList {
    /// The listed incidents, costliest first; `id` is the position from 1.
    pub incidents: Vec<Incident>,
    /// The floor, as a share of the run's total rank time.
    pub floor: f64,
    /// The run's total rank (PE) time, seconds.
    pub total_rank_s: f64,
    /// Occurrences below the floor (counted, not listed): each cost less
    /// than the floor's share of the run's total rank time.
    pub below_floor: u64,
    /// Their cost, summed (s).
    pub below_floor_cost_s: f64,
}

impl IncidentList {
    /// Ranks `all` by cost (ties: source, cause, root label, window start,
    /// so that the order is the same on every rank and run), sets each
    /// incident's share of `total_rank_s` and numbers them. The incidents
    /// are those whose occurrences reach `floor`; `below` and `below_cost_s`
    /// count the occurrences that did not.
    pub fn rank(
        mut all: Vec<Incident>,
        total_rank_s: f64,
        floor: f64,
        below: u64,
        below_cost_s: f64,
    ) -> Self {
        for i in &mut all {
            i.share = if total_rank_s > 0.0 {
                i.cost_s / total_rank_s
            } else {
                0.0
            };
        }
        all.sort_by(|a, b| {
            b.cost_s
                .total_cmp(&a.cost_s)
                .then(a.source.cmp(&b.source))
                .then(a.cause.cmp(&b.cause))
                .then_with(|| a.root.label().cmp(&b.root.label()))
                .then(a.window.first_step.cmp(&b.window.first_step))
        });
        for (k, i) in all.iter_mut().enumerate() {
            i.id = k as u64 + 1;
        }
        IncidentList {
            incidents: all,
            floor,
            total_rank_s,
            below_floor: below,
            below_floor_cost_s: below_cost_s,
        }
    }

    /// The list as JSON: `floor`, `total_rank_s`, `below_floor`,
    /// `below_floor_cost_s` and `incidents` (each with its members).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The cost of every listed incident, summed (s).
    pub fn listed_cost_s(&self) -> f64 {
        self.incidents.iter().map(|i| i.cost_s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::incidents::model::*;

    fn incident(rank: u64, cost_s: f64) -> Incident {
        Incident {
            id: 0,
            source: Source::Tau,
            cause: Cause::SlowExecution,
            root: Entity::execution(0, rank, 0, "f", format!("0:{rank}:0:0")),
            evidence: Vec::new(),
            window: Window::tau(0, 0, 0, 1),
            occurrences: 1,
            cost_s,
            share: 0.0,
            involved: vec![rank],
            counts: RoleCounts::default(),
            members: Vec::new(),
        }
    }

    #[test]
    fn costliest_first_with_their_share() {
        let all = vec![incident(0, 0.5), incident(1, 3.0), incident(2, 0.05)];
        let l = IncidentList::rank(all, 100.0, 0.01, 7, 0.2);
        let ranks: Vec<_> = l.incidents.iter().map(|i| i.root.rank).collect();
        assert_eq!(ranks, vec![Some(1), Some(0), Some(2)]);
        assert_eq!(l.incidents[0].id, 1);
        assert_eq!(l.incidents[2].id, 3);
        assert_eq!(l.incidents[0].share, 0.03);
        assert_eq!((l.below_floor, l.below_floor_cost_s), (7, 0.2));
    }
}
