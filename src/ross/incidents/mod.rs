//! The incidents of a ROSS run: each problem that cost the run time, with
//! its root (a PE, an LP, or every PE when nothing singles one out), its
//! window of GVT and real time, its effects on the other PEs and its cost
//! in PE-seconds — the same model as TAU runs' (`crate::incidents`).
//!
//! From the GVT file's accounts (`accounts`), `detect` finds the slow
//! windows of virtual time and the PE that held the others back. Each slow
//! window is one incident:
//!
//! - one interval holds most of the lost time: a stall, rooted at the PE
//!   that stopped outside GVT while the others waited there (**paused
//!   PE**), or at **every PE** (**run-wide stall**);
//! - else a culprit PE in the window: a **slow PE**, or the **hotspot LP**
//!   it holds when the event trace names one there;
//! - else rollbacks per unit of GVT surged over the window on every PE: a
//!   **rollback storm**;
//! - else every PE slowed at once (**run-wide stall**).
//!
//! A window costs the real time the run took beyond its usual pace, for
//! every PE. Outside the slow windows, a PE that held the others back
//! without slowing the run that much — over a stretch of 5 % of the
//! virtual time or more, or over the rest of the run (a PE slow from
//! start to end, a hotspot that never stops) — is one more incident,
//! costing its excess handler time and the time its peers waited for it in
//! GVT.

pub mod accounts;
pub mod detect;

use accounts::Accounts;
use detect::{
    culprit, culprit_windows, dominant_interval, rollback_ratio, slow_windows, stalled_pe, Culprit,
    Pace,
};

use super::hotspots::HotspotLp;
use crate::incidents::model::{
    Cause, Entity, Evidence, Incident, Link, Member, Role, RoleCounts, Source, Window,
};
use crate::incidents::IncidentList;
use crate::trace::ross::EngineSeries;

/// Rollbacks per unit of GVT at least this many times the usual make a
/// slow window with no culprit a rollback storm.
pub const STORM_RATIO: f64 = 3.0;

/// Intervals outside the slow windows needed to look for a PE slow over
/// the rest of the run.
const MIN_REST_INTERVALS: usize = 8;

/// The incidents of a run whose GVT file holds `gvt`, with the event
/// trace's hotspot LPs, ranked; occurrences cheaper than `floor` of the
/// run's total PE time are counted, not listed.
pub fn find(gvt: &EngineSeries, hotspots: &[HotspotLp], floor: f64) -> IncidentList {
    let acc = Accounts::of(gvt);
    let total = acc.total_pe_s();
    let mut all = Vec::new();
    if acc.len() >= 3 {
        let pace = Pace::of(&acc);
        let windows = slow_windows(&acc, &pace);
        let mut in_window = vec![false; acc.len()];
        for &(a, b) in &windows {
            let ks: Vec<usize> = (a..=b).collect();
            in_window[a..=b].iter_mut().for_each(|x| *x = true);
            all.push(window_incident(&acc, &pace, &ks, hotspots));
        }
        // Stretches where one PE held the others back without slowing the
        // run as much.
        for (a, b, _) in culprit_windows(&acc) {
            if in_window[a..=b].iter().any(|x| *x) {
                continue;
            }
            let ks: Vec<usize> = (a..=b).collect();
            if let Some(c) = culprit(&acc, &ks) {
                in_window[a..=b].iter_mut().for_each(|x| *x = true);
                all.push(run_long_incident(&acc, &ks, &c, hotspots));
            }
        }
        let rest: Vec<usize> = (1..acc.len()).filter(|&k| !in_window[k]).collect();
        if rest.len() >= MIN_REST_INTERVALS {
            if let Some(c) = culprit(&acc, &rest) {
                all.push(run_long_incident(&acc, &rest, &c, hotspots));
            }
        }
    }
    let (listed, below): (Vec<Incident>, Vec<Incident>) = all
        .into_iter()
        .partition(|i| i.cost_s > 0.0 && i.cost_s >= floor * total);
    IncidentList::rank(
        recurring(listed),
        total,
        floor,
        below.len() as u64,
        below.iter().map(|i| i.cost_s).sum(),
    )
}

/// Occurrences with the same cause and root are one recurring incident:
/// its evidence is its costliest occurrence's, its window spans them all,
/// its members are theirs (numbered by occurrence, in GVT order).
fn recurring(mut all: Vec<Incident>) -> Vec<Incident> {
    all.sort_by(|a, b| {
        (a.cause, a.root.label())
            .cmp(&(b.cause, b.root.label()))
            .then(a.window.first_step.cmp(&b.window.first_step))
    });
    let mut out: Vec<Incident> = Vec::new();
    for mut i in all {
        match out.last_mut() {
            Some(o) if o.cause == i.cause && o.root == i.root => {
                let n = o.occurrences + 1;
                for m in &mut i.members {
                    m.occurrence = n;
                }
                if i.cost_s > o.occurrence_cost(o.costliest_occurrence()) {
                    o.evidence = i.evidence.clone();
                }
                o.occurrences = n;
                o.cost_s += i.cost_s;
                o.window = o.window.join(&i.window);
                for r in crate::incidents::Role::ALL {
                    for _ in 0..i.counts.get(r) {
                        o.counts.add(r);
                    }
                }
                o.involved.extend(i.involved);
                o.involved.sort_unstable();
                o.involved.dedup();
                o.members.extend(i.members);
            }
            _ => out.push(i),
        }
    }
    out
}

/// The window of intervals `ks`.
fn window_of(acc: &Accounts, ks: &[usize]) -> Window {
    let (a, b) = (ks[0], ks[ks.len() - 1]);
    Window::ross(
        a as u64,
        b as u64,
        (acc.bounds[a].gvt_from, acc.bounds[b].gvt_to),
        (acc.bounds[a].real_from, acc.bounds[b].real_to),
    )
}

/// The hotspot LP of the event trace that lives on PE `pe` (when LP
/// samples say where LPs live; else the strongest hotspot) and was hot
/// during intervals `ks`.
fn hotspot_on<'a>(
    acc: &Accounts,
    pe: u32,
    ks: &[usize],
    hotspots: &'a [HotspotLp],
) -> Option<&'a HotspotLp> {
    let (a, b) = (ks[0], ks[ks.len() - 1]);
    hotspots
        .iter()
        .filter(|h| h.first <= b && a <= h.last)
        .find(|h| match acc.lp_homes.get(&h.lp) {
            Some((p, _)) => *p == pe,
            None => acc.lp_homes.is_empty(),
        })
}

/// Evidence that a PE held the others back.
fn culprit_evidence(c: &Culprit) -> Vec<Evidence> {
    vec![
        Evidence::new("event_process_s", c.own.process_s, c.peers.process_s, "s"),
        Evidence::new("events_processed", c.own.events, c.peers.events, "events"),
        Evidence::new("gvt_s", c.own.gvt_s, c.peers.gvt_s, "s"),
    ]
}

/// The root of a culprit PE's incident: the PE, or the hotspot LP it
/// holds (then the PE's surge is one of its effects).
fn culprit_root(
    acc: &Accounts,
    c: &Culprit,
    ks: &[usize],
    hotspots: &[HotspotLp],
) -> (Cause, Entity, Vec<Evidence>) {
    let pe = acc.pes[c.pe];
    let mut evidence = culprit_evidence(c);
    match hotspot_on(acc, pe, ks, hotspots) {
        Some(h) => {
            evidence.insert(
                0,
                Evidence::new("events_received", h.events as f64, h.peer_median, "events"),
            );
            let kp = acc.lp_homes.get(&h.lp).map(|x| x.1);
            (Cause::HotspotLp, Entity::lp(Some(pe), kp, h.lp), evidence)
        }
        None => (Cause::SlowPe, Entity::pe(pe), evidence),
    }
}

/// Per-PE members of an incident over `ks`, each with its own cost; the
/// root PE (if any) first.
fn pe_members(
    acc: &Accounts,
    ks: &[usize],
    root_pe: Option<usize>,
    root_is_pe: bool,
    cost_of: &dyn Fn(usize) -> f64,
    other_role: Role,
) -> Vec<Member> {
    let w = window_of(acc, ks);
    let mut members: Vec<Member> = (0..acc.pes.len())
        .map(|p| {
            let a = acc.sum(p, ks);
            let is_root = root_pe == Some(p);
            let role = match (is_root, root_is_pe) {
                (true, true) => Role::Root,
                (true, false) => Role::OtherEffect,
                (false, _) => other_role,
            };
            Member {
                role,
                link: if role == Role::Root {
                    Link::None
                } else if role == Role::Rollback {
                    Link::Rollback
                } else {
                    Link::Window
                },
                entity: Entity::pe(acc.pes[p]),
                window: w,
                cost_s: cost_of(p),
                linked_to: None,
                linked_rank: root_pe.map(|r| u64::from(acc.pes[r])),
                occurrence: 1,
                detail: format!(
                    "event_process_s {:.3}, rollback_s {:.3}, gvt_s {:.3}, events {:.0}, rolled back {:.0}",
                    a.process_s, a.rollback_s, a.gvt_s, a.events, a.rolled_back
                ),
            }
        })
        .collect();
    members.sort_by_key(|m| m.role != Role::Root);
    members
}

fn incident(
    cause: Cause,
    root: Entity,
    evidence: Vec<Evidence>,
    window: Window,
    mut members: Vec<Member>,
) -> Incident {
    let root_label = root.label();
    for m in &mut members {
        if m.role != Role::Root {
            m.linked_to = Some(root_label.clone());
        }
    }
    let mut counts = RoleCounts::default();
    for m in &members {
        counts.add(m.role);
    }
    if counts.root == 0 {
        counts.root = 1;
    }
    let mut involved: Vec<u64> = members
        .iter()
        .filter_map(|m| m.entity.rank_or_pe())
        .collect();
    involved.sort_unstable();
    involved.dedup();
    Incident {
        id: 0,
        source: Source::Ross,
        cause,
        root,
        evidence,
        window,
        occurrences: 1,
        cost_s: members.iter().map(|m| m.cost_s).sum(),
        share: 0.0,
        involved,
        counts,
        members,
    }
}

/// The incident of a slow window.
fn window_incident(acc: &Accounts, pace: &Pace, ks: &[usize], hotspots: &[HotspotLp]) -> Incident {
    let lost = pace.lost_pe_s(acc, ks);
    let share = lost / acc.pes.len().max(1) as f64;
    let each = |_: usize| share;
    let w = window_of(acc, ks);
    let real: f64 = ks.iter().map(|&k| acc.bounds[k].gap()).sum();
    let dg: f64 = ks.iter().map(|&k| acc.bounds[k].dg()).sum();
    let pace_evidence = Evidence::new("real_s", real, dg * pace.seconds_per_gvt, "s");
    if let Some((k, true)) = dominant_interval(acc, pace, ks) {
        let usual = acc.bounds[k].dg() * pace.seconds_per_gvt;
        let stall = Evidence::new("interval_real_s", acc.bounds[k].gap(), usual, "s");
        return match stalled_pe(acc, k) {
            Some(p) => {
                let own = acc.pe_accounts[p][k];
                let peers: Vec<f64> = (0..acc.pes.len())
                    .filter(|&q| q != p)
                    .map(|q| acc.pe_accounts[q][k].gvt_s)
                    .collect();
                let peer_gvt = peers.iter().sum::<f64>() / peers.len().max(1) as f64;
                let evidence = vec![stall, Evidence::new("gvt_s", own.gvt_s, peer_gvt, "s")];
                let members = pe_members(acc, ks, Some(p), true, &each, Role::OtherEffect);
                incident(
                    Cause::PausedPe,
                    Entity::pe(acc.pes[p]),
                    evidence,
                    w,
                    members,
                )
            }
            None => {
                let members = pe_members(acc, ks, None, false, &each, Role::OtherEffect);
                incident(
                    Cause::RunWideStall,
                    Entity::every_pe(),
                    vec![stall],
                    w,
                    members,
                )
            }
        };
    }
    if let Some(c) = culprit(acc, ks) {
        let (cause, root, mut evidence) = culprit_root(acc, &c, ks, hotspots);
        evidence.push(pace_evidence);
        let members = culprit_members(acc, ks, &c, &root, &each);
        return incident(cause, root, evidence, w, members);
    }
    let ratio = rollback_ratio(acc, pace, ks);
    let (cause, role) = if ratio >= STORM_RATIO {
        (Cause::RollbackStorm, Role::Rollback)
    } else {
        (Cause::RunWideStall, Role::OtherEffect)
    };
    let rb: f64 = ks
        .iter()
        .map(|&k| {
            acc.pe_accounts
                .iter()
                .map(|p| p[k].rolled_back)
                .sum::<f64>()
        })
        .sum();
    let evidence = vec![
        pace_evidence,
        Evidence::new("rolled_back", rb, dg * pace.rollbacks_per_gvt, "events"),
    ];
    let members = pe_members(acc, ks, None, false, &each, role);
    incident(cause, Entity::every_pe(), evidence, w, members)
}

/// The incident of a PE that held the others back over the rest of the
/// run: its excess handler time, and the GVT time each peer spent beyond
/// its own (they waited there for it).
fn run_long_incident(
    acc: &Accounts,
    ks: &[usize],
    c: &Culprit,
    hotspots: &[HotspotLp],
) -> Incident {
    let (cause, root, evidence) = culprit_root(acc, c, ks, hotspots);
    let cost = |p: usize| {
        if p == c.pe {
            (c.own.process_s - c.peers.process_s).max(0.0)
        } else {
            (acc.sum(p, ks).gvt_s - c.own.gvt_s).max(0.0)
        }
    };
    let members = culprit_members(acc, ks, c, &root, &cost);
    incident(cause, root, evidence, window_of(acc, ks), members)
}

/// The members of a culprit's incident: an LP root first when the root is
/// an LP (its PE's surge is then an effect), then every PE.
fn culprit_members(
    acc: &Accounts,
    ks: &[usize],
    c: &Culprit,
    root: &Entity,
    cost_of: &dyn Fn(usize) -> f64,
) -> Vec<Member> {
    let root_is_pe = root.lp.is_none();
    let mut members = pe_members(acc, ks, Some(c.pe), root_is_pe, cost_of, Role::OtherEffect);
    if !root_is_pe {
        members.insert(
            0,
            Member {
                role: Role::Root,
                link: Link::None,
                entity: root.clone(),
                window: window_of(acc, ks),
                cost_s: 0.0,
                linked_to: None,
                linked_rank: None,
                occurrence: 1,
                detail: format!("hot LP of PE {}", acc.pes[c.pe]),
            },
        );
    }
    members
}
