//! Outputs: what the step loop hands its labelled executions to, behind
//! one seam.
//!
//! The step loop hands labelled executions to the [`consumer::LabelConsumer`]s
//! of [`consumer::Outputs`]; this crate's consumers are
//! - the provenance file ([`provenance_output::ProvenanceOutput`]):
//!   [`collect`] turns labelled executions into records and
//!   `crate::provenance` writes them;
//! - live statistics ([`viz`]): Chimbuko's visualisation stream;
//! - label CSVs ([`labels_csv`]);
//! - the run's summary ([`summary_output::SummaryOutput`]): per-function
//!   totals ([`totals`]), ground-truth scores ([`truth`],
//!   [`truth_incidents`]) and the end-of-run table and JSON ([`summary`]).
//!
//! [`samples`] is the bottom-k sampler of `--model-samples`.

pub mod collect;
pub mod consumer;
pub mod labels_csv;
pub mod provenance_output;
pub mod samples;
pub mod summary;
pub mod summary_output;
pub mod totals;
pub mod truth;
pub mod truth_incidents;
pub mod viz;
