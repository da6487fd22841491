//! The incidents of a run in the provenance file: tables `incidents` (one
//! row per incident, costliest first), `incident_evidence` (what makes each
//! root the root) and `incident_members` (the members listed, with their
//! role and link), written by `run` and `ross` alike, and read back as an
//! [`IncidentList`] by `inspect`, `export --json` and the report.
//!
//! Fields that do not apply to an incident's source are -1 (integers) or
//! NaN (reals): TAU incidents have programs, ranks and event ids; ROSS
//! incidents PEs, KPs, LPs and GVT windows.

use hdf5::H5Type;

use super::columns::described_row;
use super::records::{fixed, EventIdStr, MetaStr, NameStr, ShortStr};
use crate::incidents::model::{
    Cause, Entity, EntityKind, Evidence, Incident, Link, Member, Role, RoleCounts, Source, Window,
};
use crate::incidents::IncidentList;

described_row! {
    /// One incident: a problem of the run with its root, cause, window and
    /// cost (table `incidents`, costliest first; the floor's counts are the
    /// root attributes `incidents_below_floor` and `incident_floor`).
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct IncidentRow {
        /// Incident id: 1 for the costliest, 2 for the next, ...
        pub id: u64,
        /// Which analysis found it: `tau` or `ross`.
        pub source: ShortStr,
        /// What started it (`slow_execution`, `oversized_message`,
        /// `stalled_in_mpi`, `untraced_wait`, `slow_pe`, `paused_pe`,
        /// `hotspot_lp`, `cpu_heavy_lp`, `run_wide_stall`, `rollback_storm`).
        pub cause: ShortStr,
        /// What the root is: `execution`, `pe`, `kp`, `lp` or `every_pe`.
        pub root_kind: ShortStr,
        /// TAU: program index of the root (-1 for ROSS).
        pub program: i64,
        /// TAU: application rank of the root (-1 for ROSS).
        pub rank: i64,
        /// TAU: thread of the root (-1 for ROSS).
        pub thread: i64,
        /// TAU: function of the root, cut at 255 bytes (empty for ROSS).
        pub func: NameStr,
        /// TAU: event id `"program:rank:step:idx"` of the root execution of
        /// the costliest occurrence (as in `anomalies/records`).
        pub event_id: EventIdStr,
        /// ROSS: PE of the root (-1 when none or TAU).
        pub pe: i64,
        /// ROSS: KP of the root (-1 when none or TAU).
        pub kp: i64,
        /// ROSS: LP of the root (-1 when none or TAU).
        pub lp: i64,
        /// First I/O step (TAU) or GVT interval (ROSS) of the incident.
        pub first_step: u64,
        /// Last I/O step or GVT interval.
        pub last_step: u64,
        /// TAU: earliest timestamp (µs since the epoch; 0 for ROSS).
        #[unit = "µs"]
        pub t_from: u64,
        /// TAU: latest timestamp (µs since the epoch; 0 for ROSS).
        #[unit = "µs"]
        pub t_to: u64,
        /// ROSS: GVT at the start (NaN for TAU).
        pub gvt_from: f64,
        /// ROSS: GVT at the end (NaN for TAU).
        pub gvt_to: f64,
        /// ROSS: real time at the start, seconds since the run started (NaN
        /// for TAU).
        #[unit = "s"]
        pub real_from: f64,
        /// ROSS: real time at the end (NaN for TAU).
        #[unit = "s"]
        pub real_to: f64,
        /// How often the same root (and cause) started it.
        pub occurrences: u64,
        /// Time lost, in rank-seconds (TAU) or PE-seconds (ROSS): every
        /// member's excess over what is usual for it, counted once.
        #[unit = "s"]
        pub cost: f64,
        /// `cost` as a share of the run's total rank (PE) time.
        pub share: f64,
        /// Members of every role.
        pub members: u64,
        /// Co-delays: other delays of the root's rank or PE at the same time.
        pub co_delays: u64,
        /// Waits on other ranks caused by the root, directly or through
        /// other waits.
        pub propagated_waits: u64,
        /// Calls slow because a call they made was.
        pub enclosing_calls: u64,
        /// ROSS: rollbacks the root caused on other entities.
        pub rollbacks: u64,
        /// ROSS: other effects (GVT waits, KPs running ahead, surges).
        pub other_effects: u64,
        /// Ranks (TAU) or PEs (ROSS) involved.
        pub involved: u64,
        /// First row of its listed members in `incident_members`.
        pub members_start: u64,
        /// Number of its rows in `incident_members` (the costliest members,
        /// up to a cap; `members` counts all).
        pub members_len: u64,
        /// First row of its evidence in `incident_evidence`.
        pub evidence_start: u64,
        /// Number of its rows in `incident_evidence`.
        pub evidence_len: u64,
    }
}

described_row! {
    /// One fact that makes an incident's root the root: its value against
    /// the usual one (table `incident_evidence`).
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct IncidentEvidenceRow {
        /// The incident (`incidents.id`).
        pub incident: u64,
        /// What was measured: `runtime_us`, `bytes_sent`, `event_process_s`,
        /// `events_received`, `rollbacks`, ...
        pub what: ShortStr,
        /// The root's value.
        pub value: f64,
        /// The usual value it is compared with (its model's expectation, the
        /// function's usual bytes on that rank, the peers' median, the
        /// run's usual).
        pub usual: f64,
        /// Unit of both (`µs`, `bytes`, `s`, `events`, or empty).
        pub unit: ShortStr,
    }
}

described_row! {
    /// One member of an incident with its role and what it is linked to
    /// (table `incident_members`).
    #[derive(H5Type, Clone, Copy, Debug)]
    #[repr(C)]
    pub struct IncidentMemberRow {
        /// The incident (`incidents.id`).
        pub incident: u64,
        /// Which occurrence of the incident it belongs to (from 1).
        pub occurrence: u64,
        /// `root`, `co_delay`, `propagated_wait`, `enclosing_call`,
        /// `rollback` or `other_effect`.
        pub role: ShortStr,
        /// How it is tied to what it is linked to: `none` (a root),
        /// `same_rank`, `nesting`, `message`, `release`, `together`,
        /// `rollback` or `window`.
        pub link: ShortStr,
        /// What the member is: `execution`, `pe`, `kp`, `lp` or `every_pe`.
        pub kind: ShortStr,
        /// TAU: program index (-1 for ROSS).
        pub program: i64,
        /// TAU: application rank (-1 for ROSS).
        pub rank: i64,
        /// TAU: thread (-1 for ROSS).
        pub thread: i64,
        /// TAU: function, cut at 255 bytes.
        pub func: NameStr,
        /// TAU: event id `"program:rank:step:idx"` (as in
        /// `anomalies/records`).
        pub event_id: EventIdStr,
        /// ROSS: PE (-1 when none).
        pub pe: i64,
        /// ROSS: KP (-1 when none).
        pub kp: i64,
        /// ROSS: LP (-1 when none).
        pub lp: i64,
        /// I/O step (TAU) or first GVT interval (ROSS).
        pub step: u64,
        /// TAU: entry timestamp (µs since the epoch; 0 for ROSS).
        #[unit = "µs"]
        pub t_from: u64,
        /// TAU: exit timestamp (µs since the epoch; 0 for ROSS).
        #[unit = "µs"]
        pub t_to: u64,
        /// ROSS: GVT at the start (NaN for TAU).
        pub gvt_from: f64,
        /// ROSS: GVT at the end (NaN for TAU).
        pub gvt_to: f64,
        /// ROSS: real time at the start (s since the run started; NaN for TAU).
        #[unit = "s"]
        pub real_from: f64,
        /// ROSS: real time at the end (NaN for TAU).
        #[unit = "s"]
        pub real_to: f64,
        /// Time the member lost (s): its excess over what is usual for it
        /// (a nested execution's is counted in its own row, never twice).
        #[unit = "s"]
        pub cost: f64,
        /// The event id (TAU) or entity (ROSS) it is linked to; empty for
        /// a root.
        pub linked_to: EventIdStr,
        /// The rank (TAU) or PE (ROSS) of what it is linked to (-1 for a
        /// root).
        pub linked_rank: i64,
        /// A short detail (the bytes it sent, the signal).
        pub detail: MetaStr,
    }
}

fn int<T: Into<i64>>(v: Option<T>) -> i64 {
    v.map_or(-1, Into::into)
}

fn int_u64(v: Option<u64>) -> i64 {
    v.map_or(-1, |x| i64::try_from(x).unwrap_or(i64::MAX))
}

fn nat(v: Option<i64>) -> Option<u64> {
    v.and_then(|x| u64::try_from(x).ok())
}

fn real(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

fn opt_real(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn opt_text(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// The three tables of a list.
pub fn incident_rows(
    list: &IncidentList,
) -> (
    Vec<IncidentRow>,
    Vec<IncidentEvidenceRow>,
    Vec<IncidentMemberRow>,
) {
    let (mut rows, mut evidence, mut members) = (Vec::new(), Vec::new(), Vec::new());
    for i in &list.incidents {
        let (ev_start, m_start) = (evidence.len() as u64, members.len() as u64);
        evidence.extend(i.evidence.iter().map(|e| IncidentEvidenceRow {
            incident: i.id,
            what: fixed(&e.what),
            value: e.value,
            usual: e.usual,
            unit: fixed(&e.unit),
        }));
        members.extend(i.members.iter().map(|m| member_row(i.id, m)));
        let r = &i.root;
        rows.push(IncidentRow {
            id: i.id,
            source: fixed(i.source.name()),
            cause: fixed(i.cause.name()),
            root_kind: fixed(r.kind.name()),
            program: int(r.program),
            rank: int_u64(r.rank),
            thread: int_u64(r.thread),
            func: fixed(r.function.as_deref().unwrap_or("")),
            event_id: fixed(r.event_id.as_deref().unwrap_or("")),
            pe: int(r.pe),
            kp: int(r.kp),
            lp: int(r.lp),
            first_step: i.window.first_step,
            last_step: i.window.last_step,
            t_from: i.window.t_from_us.unwrap_or(0),
            t_to: i.window.t_to_us.unwrap_or(0),
            gvt_from: real(i.window.gvt_from),
            gvt_to: real(i.window.gvt_to),
            real_from: real(i.window.real_from_s),
            real_to: real(i.window.real_to_s),
            occurrences: i.occurrences,
            cost: i.cost_s,
            share: i.share,
            members: i.counts.total(),
            co_delays: i.counts.co_delay,
            propagated_waits: i.counts.propagated_wait,
            enclosing_calls: i.counts.enclosing_call,
            rollbacks: i.counts.rollback,
            other_effects: i.counts.other_effect,
            involved: i.involved.len() as u64,
            members_start: m_start,
            members_len: members.len() as u64 - m_start,
            evidence_start: ev_start,
            evidence_len: evidence.len() as u64 - ev_start,
        });
    }
    (rows, evidence, members)
}

fn member_row(incident: u64, m: &Member) -> IncidentMemberRow {
    let e = &m.entity;
    IncidentMemberRow {
        incident,
        occurrence: m.occurrence,
        role: fixed(m.role.name()),
        link: fixed(m.link.name()),
        kind: fixed(e.kind.name()),
        program: int(e.program),
        rank: int_u64(e.rank),
        thread: int_u64(e.thread),
        func: fixed(e.function.as_deref().unwrap_or("")),
        event_id: fixed(e.event_id.as_deref().unwrap_or("")),
        pe: int(e.pe),
        kp: int(e.kp),
        lp: int(e.lp),
        step: m.window.first_step,
        t_from: m.window.t_from_us.unwrap_or(0),
        t_to: m.window.t_to_us.unwrap_or(0),
        gvt_from: real(m.window.gvt_from),
        gvt_to: real(m.window.gvt_to),
        real_from: real(m.window.real_from_s),
        real_to: real(m.window.real_to_s),
        cost: m.cost_s,
        linked_to: fixed(m.linked_to.as_deref().unwrap_or("")),
        linked_rank: int_u64(m.linked_rank),
        detail: fixed(&m.detail),
    }
}

fn entity(kind: &str, ids: [i64; 6], function: &str, event_id: &str) -> Entity {
    let [program, rank, thread, pe, kp, lp] = ids;
    let kind = match kind {
        "pe" => EntityKind::Pe,
        "kp" => EntityKind::Kp,
        "lp" => EntityKind::Lp,
        "every_pe" => EntityKind::EveryPe,
        _ => EntityKind::Execution,
    };
    Entity {
        kind,
        program: nat(Some(program)).and_then(|p| u32::try_from(p).ok()),
        rank: nat(Some(rank)),
        thread: nat(Some(thread)),
        function: opt_text(function),
        event_id: opt_text(event_id),
        pe: nat(Some(pe)).and_then(|p| u32::try_from(p).ok()),
        kp: nat(Some(kp)).and_then(|p| u32::try_from(p).ok()),
        lp: nat(Some(lp)).and_then(|p| u32::try_from(p).ok()),
    }
}

fn window(step: (u64, u64), t: (u64, u64), gvt: (f64, f64), real_s: (f64, f64)) -> Window {
    let tau = t != (0, 0);
    Window {
        first_step: step.0,
        last_step: step.1,
        t_from_us: tau.then_some(t.0),
        t_to_us: tau.then_some(t.1),
        gvt_from: opt_real(gvt.0),
        gvt_to: opt_real(gvt.1),
        real_from_s: opt_real(real_s.0),
        real_to_s: opt_real(real_s.1),
    }
}

/// The incidents of a file's tables, as they were written (`floor`,
/// `below_floor`, `below_floor_cost_s` and `total_rank_s` come from the
/// root attributes; the involved ranks from the listed members).
pub fn incidents_of_rows(
    rows: &[IncidentRow],
    evidence: &[IncidentEvidenceRow],
    members: &[IncidentMemberRow],
) -> Vec<Incident> {
    rows.iter()
        .map(|r| {
            let slice = |start: u64, len: u64, n: usize| {
                let s = (start as usize).min(n);
                s..(s + len as usize).min(n)
            };
            let ms: Vec<Member> = members[slice(r.members_start, r.members_len, members.len())]
                .iter()
                .map(|m| Member {
                    role: Role::from_name(m.role.as_str()).unwrap_or(Role::OtherEffect),
                    link: link_of(m.link.as_str()),
                    entity: entity(
                        m.kind.as_str(),
                        [m.program, m.rank, m.thread, m.pe, m.kp, m.lp],
                        m.func.as_str(),
                        m.event_id.as_str(),
                    ),
                    window: window(
                        (m.step, m.step),
                        (m.t_from, m.t_to),
                        (m.gvt_from, m.gvt_to),
                        (m.real_from, m.real_to),
                    ),
                    cost_s: m.cost,
                    linked_to: opt_text(m.linked_to.as_str()),
                    linked_rank: nat(Some(m.linked_rank)),
                    occurrence: m.occurrence,
                    detail: m.detail.as_str().to_owned(),
                })
                .collect();
            let ev: Vec<Evidence> = evidence
                [slice(r.evidence_start, r.evidence_len, evidence.len())]
            .iter()
            .map(|e| Evidence::new(e.what.as_str(), e.value, e.usual, e.unit.as_str()))
            .collect();
            let root = entity(
                r.root_kind.as_str(),
                [r.program, r.rank, r.thread, r.pe, r.kp, r.lp],
                r.func.as_str(),
                r.event_id.as_str(),
            );
            let mut involved: Vec<u64> = ms
                .iter()
                .filter_map(|m| m.entity.rank_or_pe())
                .chain(root.rank_or_pe())
                .collect();
            involved.sort_unstable();
            involved.dedup();
            Incident {
                id: r.id,
                source: if r.source.as_str() == "ross" {
                    Source::Ross
                } else {
                    Source::Tau
                },
                cause: Cause::from_name(r.cause.as_str()).unwrap_or(Cause::SlowExecution),
                root,
                evidence: ev,
                window: window(
                    (r.first_step, r.last_step),
                    (r.t_from, r.t_to),
                    (r.gvt_from, r.gvt_to),
                    (r.real_from, r.real_to),
                ),
                occurrences: r.occurrences,
                cost_s: r.cost,
                share: r.share,
                involved,
                counts: RoleCounts {
                    root: r.occurrences,
                    co_delay: r.co_delays,
                    propagated_wait: r.propagated_waits,
                    enclosing_call: r.enclosing_calls,
                    rollback: r.rollbacks,
                    other_effect: r.other_effects,
                },
                members: ms,
            }
        })
        .collect()
}

fn link_of(s: &str) -> Link {
    [
        Link::None,
        Link::SameRank,
        Link::Nesting,
        Link::Message,
        Link::Release,
        Link::Together,
        Link::Rollback,
        Link::Window,
    ]
    .into_iter()
    .find(|l| l.name() == s)
    .unwrap_or(Link::None)
}

/// The root attributes that say what the floor left out.
pub fn floor_attrs(list: &IncidentList) -> [(&'static str, f64); 4] {
    [
        ("incident_floor", list.floor),
        ("incidents_below_floor", list.below_floor as f64),
        ("incidents_below_floor_cost_s", list.below_floor_cost_s),
        ("total_rank_s", list.total_rank_s),
    ]
}

/// The list of a file: its tables and the floor's root attributes (`attr`
/// reads a numeric root attribute).
pub fn read_incidents(
    f: &hdf5::File,
    attr: &dyn Fn(&str) -> Option<f64>,
) -> anyhow::Result<IncidentList> {
    let rows: Vec<IncidentRow> = super::table::table(f, "incidents")?;
    let ev: Vec<IncidentEvidenceRow> = super::table::table(f, "incident_evidence")?;
    let members: Vec<IncidentMemberRow> = super::table::table(f, "incident_members")?;
    Ok(IncidentList {
        incidents: incidents_of_rows(&rows, &ev, &members),
        floor: attr("incident_floor").unwrap_or(crate::incidents::DEFAULT_FLOOR),
        total_rank_s: attr("total_rank_s").unwrap_or(0.0),
        below_floor: attr("incidents_below_floor").unwrap_or(0.0) as u64,
        below_floor_cost_s: attr("incidents_below_floor_cost_s").unwrap_or(0.0),
    })
}
