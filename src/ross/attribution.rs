//! Attribution: name the cause, not the victims.
//!
//! A slow PE makes every PE roll back: its stragglers arrive late at the
//! others, which then undo work. In the peer comparison the slow PE stands
//! out in event-processing time, and its victims in rollbacks. A rollback
//! window of a PE that overlaps an event-time window of *another* PE is
//! attributed to that PE (the one with the highest score when several
//! overlap). The cost of a PE — how much run time it cost — is its excess
//! event-processing time over its peers' median in its own windows plus
//! the excess rollback time of the windows attributed to it.

use std::collections::BTreeMap;

use super::peers::PeerAnomaly;
use super::signals::{Entity, RunSeries, Signal};

/// Whether an anomaly's signal is one a slow PE inflicts on the others.
fn is_victim_signal(sig: Signal) -> bool {
    matches!(
        sig,
        Signal::Rollbacks
            | Signal::SecondaryRollbacks
            | Signal::EventsRolledBack
            | Signal::RollbackTime
            | Signal::Efficiency
    )
}

/// For each anomaly, the PE it is attributed to when another PE caused it.
pub fn causes(anomalies: &[PeerAnomaly]) -> Vec<Option<u32>> {
    anomalies
        .iter()
        .map(|a| {
            if !is_victim_signal(a.signal) {
                return None;
            }
            anomalies
                .iter()
                .filter(|c| {
                    c.signal == Signal::EventProcessTime
                        && matches!(c.entity, Entity::Pe(_))
                        && c.entity.pe() != a.entity.pe()
                        && c.first <= a.last
                        && a.first <= c.last
                })
                .max_by(|x, y| x.score.total_cmp(&y.score))
                .map(|c| c.entity.pe())
        })
        .collect()
}

/// Seconds of run time each PE cost (see the module doc), for every PE of
/// the run (0 for PEs without anomalies).
pub fn costs(
    series: &RunSeries,
    anomalies: &[PeerAnomaly],
    caused: &[Option<u32>],
) -> BTreeMap<u32, f64> {
    let mut cost: BTreeMap<u32, f64> = series.intervals.keys().map(|p| (*p, 0.0)).collect();
    let excess = |a: &PeerAnomaly, sig: Signal| -> f64 {
        let Some(v) = series.values.get(&(a.entity, sig)) else {
            return 0.0;
        };
        // The window's excess over the peer median at its peak, per
        // interval (a robust, if rough, estimate of the time lost).
        let n = (a.last - a.first + 1) as f64;
        let mean = v[a.first..=a.last.min(v.len() - 1)].iter().sum::<f64>() / n;
        (mean - a.peer_median).max(0.0) * n
    };
    for (a, cause) in anomalies.iter().zip(caused) {
        match (a.signal, a.entity, cause) {
            (Signal::EventProcessTime, Entity::Pe(p), _) => {
                *cost.entry(p).or_default() += excess(a, Signal::EventProcessTime);
            }
            (Signal::RollbackTime, _, Some(c)) => {
                *cost.entry(*c).or_default() += excess(a, Signal::RollbackTime);
            }
            _ => {}
        }
    }
    cost
}
