//! Incidents as a terminal shows them: one headline per incident (cost,
//! share, cause, root, window), its evidence, and what it caused.

use std::fmt::Write;

use super::model::{short, EntityKind, Incident, Role, Source};
use super::ranking::IncidentList;

/// The headline of the list and up to `top` incidents, a few lines each;
/// `source` says whether costs are rank-seconds (TAU) or PE-seconds (ROSS).
pub fn list_text(list: &IncidentList, source: Source, top: usize) -> String {
    let mut out = String::new();
    let n = list.incidents.len();
    let unit = unit_of(source);
    let _ = writeln!(
        out,
        "incidents: {n} listed, {} below the floor ({}% of {} {unit}; {} {unit} in all)",
        list.below_floor,
        short(100.0 * list.floor),
        short(list.total_rank_s),
        short(list.below_floor_cost_s),
    );
    if n == 0 {
        let _ = writeln!(
            out,
            "  no problem cost the run {}% of its time or more",
            short(100.0 * list.floor)
        );
    }
    for i in list.incidents.iter().take(top) {
        out.push_str(&incident_text(i, unit));
    }
    if n > top {
        let _ = writeln!(out, "  ... and {} more", n - top);
    }
    out
}

/// The unit of costs: rank-seconds (TAU) or PE-seconds (ROSS).
pub fn unit_of(source: Source) -> &'static str {
    match source {
        Source::Ross => "PE-s",
        Source::Tau => "rank-s",
    }
}

/// One incident: its headline, evidence and members.
pub fn incident_text(i: &Incident, unit: &str) -> String {
    let mut out = String::new();
    let when = match (i.window.t_from_us, i.window.gvt_from) {
        (Some(_), _) if i.window.first_step == i.window.last_step => {
            format!("step {}", i.window.first_step)
        }
        (Some(_), _) => format!("steps {}..{}", i.window.first_step, i.window.last_step),
        (None, Some(g)) => format!(
            "GVT {}..{} (real {}..{} s)",
            short(g),
            short(i.window.gvt_to.unwrap_or(g)),
            short(i.window.real_from_s.unwrap_or(0.0)),
            short(i.window.real_to_s.unwrap_or(0.0)),
        ),
        (None, None) => String::new(),
    };
    let times = if i.occurrences > 1 {
        format!(", {} occurrences", i.occurrences)
    } else {
        String::new()
    };
    let at = if i.root.kind == EntityKind::EveryPe {
        String::new()
    } else {
        format!(" at {}", i.root.label())
    };
    let _ = writeln!(
        out,
        "  #{} {} {unit} ({}%): {}{at}, {when}{times}",
        i.id,
        short(i.cost_s),
        short(100.0 * i.share),
        i.cause.describe(),
    );
    if !i.evidence.is_empty() {
        let ev: Vec<String> = i.evidence.iter().map(|e| e.text()).collect();
        let _ = writeln!(out, "      evidence: {}", ev.join("; "));
    }
    let parts: Vec<String> = [
        (Role::CoDelay, "co-delay"),
        (Role::PropagatedWait, "propagated wait"),
        (Role::EnclosingCall, "enclosing call"),
        (Role::Rollback, "rollback"),
        (Role::OtherEffect, "other effect"),
    ]
    .iter()
    .filter(|(r, _)| i.counts.get(*r) > 0)
    .map(|(r, name)| {
        let n = i.counts.get(*r);
        format!("{n} {name}{}", if n == 1 { "" } else { "s" })
    })
    .collect();
    let whom = if i.source == Source::Ross {
        "PEs"
    } else {
        "ranks"
    };
    let involved: Vec<String> = i.involved.iter().map(u64::to_string).collect();
    let _ = writeln!(
        out,
        "      caused: {}; {whom} involved: {}",
        if parts.is_empty() {
            "nothing else".to_owned()
        } else {
            parts.join(", ")
        },
        involved.join(", ")
    );
    out
}
