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
//!
//! A hotspot LP makes its PE (and KP) process and queue more events: a
//! PE or KP anomaly overlapping the window of a hotspot LP that lives
//! there is attributed to that LP ([`hotspot_cause`]).

use std::collections::BTreeMap;

use super::hotspots::HotspotLp;
use super::peers::PeerAnomaly;
use super::signals::{Entity, RunSeries, Signal};
use super::Findings;

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
                        && c.window.first <= a.window.last
                        && a.window.first <= c.window.last
                })
                .max_by(|x, y| x.window.score.total_cmp(&y.window.score))
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
        let n = (a.window.last - a.window.first + 1) as f64;
        let mean = v[a.window.first..=a.window.last.min(v.len() - 1)]
            .iter()
            .sum::<f64>()
            / n;
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

/// Where each LP lives (PE, KP), as the LP samples of `series` say.
pub fn lp_homes(series: &RunSeries) -> BTreeMap<u32, (u32, u32)> {
    series
        .values
        .keys()
        .filter_map(|(e, _)| match e {
            Entity::Lp(p, k, l) => Some((*l, (*p, *k))),
            _ => None,
        })
        .collect()
}

/// The hotspot LP behind a PE's or KP's anomaly: a hot LP that lives on
/// that PE (and KP) and was hot in an overlapping GVT window — the PE's
/// event and queue surge is the hotspot's doing, not the PE's. Needs to
/// know where LPs live (LP samples); `None` otherwise.
pub fn hotspot_cause(
    a: &PeerAnomaly,
    hotspots: &[HotspotLp],
    homes: &BTreeMap<u32, (u32, u32)>,
) -> Option<u32> {
    let (pe, kp) = match a.entity {
        Entity::Pe(p) => (p, None),
        Entity::Kp(p, k) => (p, Some(k)),
        Entity::Lp(..) => return None,
    };
    hotspots
        .iter()
        .filter(|h| {
            homes
                .get(&h.lp)
                .is_some_and(|(hp, hk)| *hp == pe && kp.is_none_or(|k| k == *hk))
                && h.span.gvt_from < a.window.span.gvt_to
                && a.window.span.gvt_from < h.span.gvt_to
        })
        .max_by(|x, y| x.score.total_cmp(&y.score))
        .map(|h| h.lp)
}

/// An entity and the run time the incidents rooted at it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedEntity {
    /// The entity: a PE, an LP, or every PE.
    pub entity: crate::incidents::Entity,
    /// Seconds of PE time its incidents cost.
    pub cost_s: f64,
    /// Incidents rooted at it.
    pub incidents: usize,
    /// Anomalies of it (a PE's own, its KPs' and LPs', the hotspot LPs it
    /// holds) or attributed to it.
    pub anomalies: usize,
}

/// Every PE of the run and every other root of an incident (an LP, every
/// PE), by the cost of the incidents rooted there, costliest first (ties:
/// kind, then id).
pub fn ranked_entities(f: &Findings) -> Vec<RankedEntity> {
    use crate::incidents::{Entity, EntityKind};
    let homes = lp_homes(&f.gvt);
    let pe_anomalies = |pe: u32| {
        f.gvt_anomalies
            .iter()
            .chain(&f.rt_anomalies)
            .filter(|(a, c)| a.entity.pe() == pe || *c == Some(pe))
            .count()
            + f.hotspots
                .iter()
                .filter(|h| homes.get(&h.lp).map(|x| x.0) == Some(pe))
                .count()
    };
    let mut out: Vec<RankedEntity> = f
        .costs
        .keys()
        .map(|&pe| RankedEntity {
            entity: Entity::pe(pe),
            cost_s: 0.0,
            incidents: 0,
            anomalies: pe_anomalies(pe),
        })
        .collect();
    for i in &f.incidents.incidents {
        let at = out.iter().position(|e| e.entity == i.root);
        let e = match at {
            Some(k) => &mut out[k],
            None => {
                let anomalies = match i.root.kind {
                    EntityKind::Lp => f
                        .hotspots
                        .iter()
                        .filter(|h| Some(h.lp) == i.root.lp)
                        .count(),
                    _ => 0,
                };
                out.push(RankedEntity {
                    entity: i.root.clone(),
                    cost_s: 0.0,
                    incidents: 0,
                    anomalies,
                });
                out.last_mut().expect("just pushed")
            }
        };
        e.cost_s += i.cost_s;
        e.incidents += 1;
    }
    out.sort_by(|a, b| {
        b.cost_s
            .total_cmp(&a.cost_s)
            .then(a.entity.kind.cmp(&b.entity.kind))
            .then(a.entity.pe.cmp(&b.entity.pe))
            .then(a.entity.lp.cmp(&b.entity.lp))
    });
    out
}
