//! Incidents: the few problems that cost a run its time, each with where it
//! started (its root), what it caused (its members) and what it cost.
//!
//! A detector labels executions (TAU) or intervals of an entity (ROSS) one
//! by one; a slowdown shows up as many labels: the delayed rank's slow
//! call, the waits it caused on its partners, the calls enclosing them.
//! An [`Incident`] gathers them under one root with its evidence and the
//! time the whole chain lost, in rank-seconds (TAU) or PE-seconds (ROSS),
//! and as a share of the run's total rank time. Both analyses produce the
//! same model, so every output (the HDF5 tables `incidents` and
//! `incident_members`, `--summary-out`, `inspect`, `export --json`, the
//! HTML report) shows them alike.
//!
//! Layout: [`model`] (the types), [`ranking`] (cost order, ids and the
//! floor below which incidents are counted, not listed), [`text`] (the
//! lines a terminal shows), [`tau`] (linking TAU executions into
//! incidents: nesting, messages, collectives, recurrence). The ROSS
//! analysis builds its incidents in `ross::incidents`. The design is in
//! `docs/incidents.md`.

pub mod entity;
pub mod evidence;
pub mod model;
pub mod ranking;
pub mod tau;
pub mod text;

pub use model::{
    Cause, Entity, EntityKind, Evidence, Incident, Link, Member, Role, Source, Window,
};
pub use ranking::{IncidentList, DEFAULT_FLOOR};
