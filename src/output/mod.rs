//! Outputs: what users keep from a run, behind one seam.
//!
//! The step loop hands labelled executions to the [`consumer::LabelConsumer`]s
//! of [`consumer::Outputs`]; this crate's consumers are
//! - the provenance file ([`provenance::ProvenanceOutput`]): [`collect`]
//!   turns labelled executions into records, [`writer::ProvenanceWriter`]
//!   buffers them and appends them collectively to one HDF5 file,
//!   with the global tables ([`stats`]) and models;
//! - live statistics ([`viz`]): Chimbuko's visualisation stream;
//! - label CSVs ([`labels_csv`]);
//! - the run report ([`report`]): per-function totals ([`totals`]),
//!   ground-truth scores ([`truth`]) and the summary ([`summary`]).
//!
//! [`read`] loads a provenance file back (`inspect`, `export --json`);
//! [`read_model`] reads what performance models are trained on (the
//! `model_samples`, the run's tags, the functions' mean runtimes).
//! [`samples`] is the bottom-k sampler of `--model-samples`.
//! [`hdf5file`] (writing) and [`read`] (reading) are the only code that
//! calls HDF5. The layout is documented in `docs/provenance-schema.md`.

pub mod anomaly_stats;
pub mod collect;
pub mod columns;
pub mod consumer;
pub mod export_csv;
pub mod hdf5file;
pub mod incidents;
pub mod inspect;
pub mod labels_csv;
pub mod provenance;
pub mod read;
pub mod read_model;
pub mod records;
pub mod report;
pub mod ross;
pub mod samples;
pub mod spans;
pub mod stats;
pub mod summary;
pub mod totals;
pub mod truth;
pub mod truth_incidents;
pub mod viz;
pub mod writer;

use crate::detect::Label;
use records::{LABEL_ANOMALY, LABEL_NORMAL, LABEL_UNLABELED};

/// Version of the file layout (root attribute `schema_version`).
/// 2: `ad_perf` has the stages of the step loop (`trim` instead of
/// `summarize`). 3: records have `model_prediction_us` and `model_ratio`;
/// new tables `run_tags`, `model_samples`, `model_sample_counters`,
/// `model_detector`, `model_detector_json`. 4: null-terminated strings,
/// column description attributes, `func` in `call_stack` and
/// `exec_window`, event ids `pid:rank:step:idx`. 5: `ad_perf` has `link`;
/// new tables `incidents`, `incident_evidence`, `incident_members` and
/// root attributes `incident_floor`, `incidents_below_floor`,
/// `incidents_below_floor_cost_s`, `total_rank_s`.
pub const SCHEMA_VERSION: u64 = 5;

/// The two record collections, as group names in the file.
pub const COLLECTIONS: [&str; 2] = ["anomalies", "normal_execs"];

/// Chimbuko's label code of a label.
pub fn label_code(l: Label) -> i8 {
    match l {
        Label::Normal => LABEL_NORMAL,
        Label::Anomaly => LABEL_ANOMALY,
        Label::Unlabeled => LABEL_UNLABELED,
    }
}
