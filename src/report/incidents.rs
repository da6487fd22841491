//! The Incidents view that opens the report of a `run` and of a `ross`
//! analysis alike: the problems that cost the run time, costliest first,
//! each with its root, cause, cost, window and evidence, and — opened —
//! its members and a drawing of its costliest occurrence: one lane per
//! rank or PE involved, each member a bar over its time on its lane,
//! coloured by role, and a line from each member to what it is linked to
//! (the message it waited for, the wait that released it, the rollbacks a
//! PE caused).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::page::{cell, escape, header, human};
use crate::incidents::model::{short, Incident, Member, Role, Source};
use crate::incidents::text::unit_of;
use crate::incidents::IncidentList;

/// Members listed per incident in its table (the drawing takes the
/// costliest occurrence's, up to [`DRAWN_MEMBERS`]).
const LISTED_MEMBERS: usize = 50;
/// Members drawn at most.
const DRAWN_MEMBERS: usize = 200;

/// The section's HTML.
pub fn incidents_section(list: &IncidentList, source: Source) -> String {
    let unit = unit_of(source);
    let whom = if source == Source::Ross {
        "PEs"
    } else {
        "ranks"
    };
    let mut html = String::from("<h2>Incidents</h2>");
    let _ = write!(
        html,
        "<p class=\"note\" id=\"incident-headline\" data-listed=\"{}\" data-below=\"{}\">{} incident(s) cost the run at least {}% of its {} {unit} each time they struck; {} smaller occurrence(s) ({} {unit}) are counted, not listed.</p>",
        list.incidents.len(),
        list.below_floor,
        list.incidents.len(),
        short(100.0 * list.floor),
        short(list.total_rank_s),
        list.below_floor,
        short(list.below_floor_cost_s),
    );
    if list.incidents.is_empty() {
        html.push_str("<p id=\"no-incident\">No problem cost the run that much.</p>");
        return html;
    }
    html.push_str("<table class=\"data sortable\" id=\"incident-table\"><thead><tr>");
    for (k, label, numeric) in [
        ("id", "#", true),
        ("cost", &format!("cost ({unit})") as &str, true),
        ("share", "share", true),
        ("cause", "cause", false),
        ("root", "root", false),
        ("when", "when", false),
        ("occurrences", "occurrences", true),
        ("involved", whom, true),
    ] {
        html += &header(k, label, numeric);
    }
    html.push_str("</tr></thead><tbody>");
    for i in &list.incidents {
        let _ = write!(html, "<tr data-incident=\"{}\">", i.id);
        html += &cell("id", i.id, &i.id.to_string());
        html += &cell("cost", i.cost_s, &human(i.cost_s));
        html += &cell("share", i.share, &format!("{}%", short(100.0 * i.share)));
        html += &cell("cause", i.cause.name(), i.cause.describe());
        html += &cell("root", i.root.label(), &i.root.label());
        html += &cell("when", i.window.first_step, &when(i));
        html += &cell("occurrences", i.occurrences, &i.occurrences.to_string());
        html += &cell("involved", i.involved.len(), &i.involved.len().to_string());
        html.push_str("</tr>");
    }
    html.push_str("</tbody></table>");
    for i in &list.incidents {
        html.push_str(&details(i, unit));
    }
    html
}

/// When an incident happened, as people read it.
fn when(i: &Incident) -> String {
    match (i.window.gvt_from, i.window.gvt_to) {
        (Some(a), Some(b)) => format!("GVT {}..{}", short(a), short(b)),
        _ if i.window.first_step == i.window.last_step => format!("step {}", i.window.first_step),
        _ => format!("steps {}..{}", i.window.first_step, i.window.last_step),
    }
}

/// One incident opened: evidence, members, the drawing.
fn details(i: &Incident, unit: &str) -> String {
    let mut html = format!(
        "<details class=\"incident\" id=\"incident-{}\" data-cause=\"{}\"><summary>#{} {} at {}: {} {unit}</summary>",
        i.id,
        i.cause.name(),
        i.id,
        escape(i.cause.describe()),
        escape(&i.root.label()),
        human(i.cost_s)
    );
    if !i.evidence.is_empty() {
        html.push_str("<ul class=\"evidence\">");
        for e in &i.evidence {
            let _ = write!(html, "<li>{}</li>", escape(&e.text()));
        }
        html.push_str("</ul>");
    }
    html.push_str(&drawing(i));
    let _ = write!(
        html,
        "<table class=\"data\"><thead><tr><th>occurrence</th><th>role</th><th>who</th><th>when</th><th>cost (s)</th><th>linked to</th><th>detail</th></tr></thead><tbody>"
    );
    for m in i.members.iter().take(LISTED_MEMBERS) {
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            m.occurrence,
            m.role.name(),
            escape(&member_label(m)),
            escape(&member_when(m)),
            human(m.cost_s),
            escape(m.linked_to.as_deref().unwrap_or("")),
            escape(&m.detail)
        );
    }
    html.push_str("</tbody></table>");
    if i.members.len() > LISTED_MEMBERS {
        let _ = write!(
            html,
            "<p class=\"note\">… and {} more member(s) in the provenance file's incident_members table.</p>",
            i.members.len() - LISTED_MEMBERS
        );
    }
    html.push_str("</details>");
    html
}

/// Who a member is: its entity, with its event id when it has one.
fn member_label(m: &Member) -> String {
    match &m.entity.event_id {
        Some(id) => format!("{} ({id})", m.entity.label()),
        None => m.entity.label(),
    }
}

/// When a member happened: its step and duration, or its GVT window.
fn member_when(m: &Member) -> String {
    match (m.window.t_from_us, m.window.t_to_us, m.window.gvt_from) {
        (Some(a), Some(b), _) => {
            format!("step {}, {} µs", m.window.first_step, b.saturating_sub(a))
        }
        (_, _, Some(g)) => format!("GVT {}..{}", short(g), short(m.window.gvt_to.unwrap_or(g))),
        _ => String::new(),
    }
}

/// The colour of a role in the drawing.
fn colour(r: Role) -> &'static str {
    match r {
        Role::Root => "#c0392b",
        Role::CoDelay => "#8e44ad",
        Role::PropagatedWait => "#e67e22",
        Role::EnclosingCall => "#7f8c8d",
        Role::Rollback => "#2980b9",
        Role::OtherEffect => "#16a085",
    }
}

/// Width of an occurrence's drawing (px).
const DRAWING_WIDTH: f64 = 760.0;
/// Height of one lane of the drawing (px).
const LANE_HEIGHT: f64 = 22.0;
/// Where the lanes start, leaving room for their labels (px).
const LANE_LEFT: f64 = 90.0;

/// The costliest occurrence drawn: lanes of ranks (PEs), members as bars
/// over time (GVT for ROSS), links as lines from a member to what it is
/// linked to.
fn drawing(i: &Incident) -> String {
    let top = i.costliest_occurrence();
    let members: Vec<&Member> = i
        .members
        .iter()
        .filter(|m| m.occurrence == top)
        .take(DRAWN_MEMBERS)
        .collect();
    let lanes = lanes_of(&members);
    let spans: Vec<(f64, f64)> = members.iter().filter_map(|m| span(m)).collect();
    if lanes.is_empty() || spans.is_empty() {
        return String::new();
    }
    let layout = Layout::new(&lanes, &spans);
    let (w, h) = (DRAWING_WIDTH, LANE_HEIGHT * lanes.len() as f64 + 30.0);
    let mut svg = format!(
        "<svg class=\"incident-drawing\" data-occurrence=\"{top}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"occurrence {top} of incident {}\">",
        i.id
    );
    let word = if i.source == Source::Ross {
        "PE"
    } else {
        "rank"
    };
    draw_lanes(&mut svg, &layout, &lanes, word);
    // Bars first, links over them.
    let ends = draw_members(&mut svg, &layout, &members);
    draw_links(&mut svg, &layout, &members, &ends);
    svg.push_str("</svg>");
    svg
}

/// A member's time span as drawn: µs when it has them, else GVT (ROSS).
fn span(m: &Member) -> Option<(f64, f64)> {
    match (m.window.t_from_us, m.window.t_to_us) {
        (Some(a), Some(b)) => Some((a as f64, b as f64)),
        _ => Some((m.window.gvt_from?, m.window.gvt_to?)),
    }
}

/// The ranks (PEs) that get a lane, in order: those of the members and
/// those they are linked to.
fn lanes_of(members: &[&Member]) -> Vec<u64> {
    let mut l: Vec<u64> = members
        .iter()
        .filter_map(|m| m.entity.rank_or_pe())
        .chain(members.iter().filter_map(|m| m.linked_rank))
        .collect();
    l.sort_unstable();
    l.dedup();
    l
}

/// Where things go in an occurrence's drawing: time across, from the
/// earliest start to the latest end of the members; one lane per rank
/// (PE) down.
struct Layout {
    t0: f64,
    t1: f64,
    /// The lane of each rank (PE), top to bottom.
    lane_of: BTreeMap<u64, usize>,
}

impl Layout {
    /// The layout of `lanes` for members over `spans` (not empty).
    fn new(lanes: &[u64], spans: &[(f64, f64)]) -> Self {
        Layout {
            t0: spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min),
            t1: spans.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max),
            lane_of: lanes.iter().enumerate().map(|(k, r)| (*r, k)).collect(),
        }
    }

    /// The x of time `t`.
    fn x(&self, t: f64) -> f64 {
        LANE_LEFT
            + (DRAWING_WIDTH - LANE_LEFT - 10.0) * (t - self.t0) / (self.t1 - self.t0).max(1e-9)
    }

    /// The y of the middle of rank (PE) `r`'s lane.
    fn y(&self, r: u64) -> f64 {
        10.0 + LANE_HEIGHT * self.lane_of.get(&r).copied().unwrap_or(0) as f64 + LANE_HEIGHT / 2.0
    }
}

/// Each lane's label (`word` and the rank or PE) and its line.
fn draw_lanes(svg: &mut String, layout: &Layout, lanes: &[u64], word: &str) {
    for &r in lanes {
        let _ = write!(
            svg,
            "<text x=\"4\" y=\"{}\" font-size=\"11\">{word} {r}</text><line x1=\"{LANE_LEFT}\" x2=\"{}\" y1=\"{y0}\" y2=\"{y0}\" stroke=\"#ddd\"/>",
            layout.y(r) + 4.0,
            DRAWING_WIDTH - 10.0,
            y0 = layout.y(r)
        );
    }
}

/// Each member as a bar on its lane over its span, coloured by role;
/// returns where each drawn member with an event id ends, for the links.
fn draw_members<'m>(
    svg: &mut String,
    layout: &Layout,
    members: &[&'m Member],
) -> BTreeMap<&'m str, (f64, f64)> {
    let mut ends: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for m in members {
        let (Some(r), Some((a, b))) = (m.entity.rank_or_pe(), span(m)) else {
            continue;
        };
        let (xa, xb) = (layout.x(a), layout.x(b).max(layout.x(a) + 2.0));
        let _ = write!(
            svg,
            "<rect class=\"member {}\" x=\"{xa:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"10\" fill=\"{}\"><title>{}: {}</title></rect>",
            m.role.name(),
            layout.y(r) - 5.0,
            xb - xa,
            colour(m.role),
            m.role.name(),
            escape(&member_label(m))
        );
        if let Some(id) = m.entity.event_id.as_deref() {
            ends.insert(id, (xb, layout.y(r)));
        }
    }
    ends
}

/// A line from each linked member to what it is linked to: that
/// member's end (`ends`) when it is drawn, else its lane at the member's
/// start.
fn draw_links(
    svg: &mut String,
    layout: &Layout,
    members: &[&Member],
    ends: &BTreeMap<&str, (f64, f64)>,
) {
    for m in members {
        let (Some(r), Some((a, b)), Some(to)) = (m.entity.rank_or_pe(), span(m), m.linked_rank)
        else {
            continue;
        };
        let (xt, yt) = m
            .linked_to
            .as_deref()
            .and_then(|id| ends.get(id).copied())
            .unwrap_or((layout.x(a), layout.y(to)));
        let _ = write!(
            svg,
            "<line class=\"link {}\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{xt:.1}\" y2=\"{yt:.1}\" stroke=\"#555\" stroke-width=\"1\" marker-end=\"\"><title>{} → {}</title></line>",
            m.link.name(),
            (layout.x(a) + layout.x(b)) / 2.0,
            layout.y(r),
            escape(&member_label(m)),
            escape(m.linked_to.as_deref().unwrap_or(""))
        );
    }
}
