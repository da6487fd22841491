//! The provenance file: one HDF5 file per run, written collectively by
//! every AD rank and read back by the commands that show it. Everything
//! that knows its layout is here, and nothing else calls HDF5:
//! - the schema: the row types of every table ([`records`]; TAU runs'
//!   incidents in [`incidents`], ROSS runs' tables in [`ross`]), each
//!   declared with its description and units ([`columns`]);
//! - writing: [`hdf5file`] (files, datasets, collective appends; HDF5's raw
//!   C API where the safe wrapper cannot express a call), [`writer`] (the
//!   buffered tables of a TAU run, flushed every few steps, with the
//!   global tables built from [`stats`] and [`anomaly_stats`]; rows
//!   rewritten in [`spans`]);
//! - reading: [`read`] (a TAU run's file whole), [`table`] (one table, the
//!   root attributes), [`read_model`] (what performance models train on),
//!   [`export_csv`] (any table as CSV).
//!
//! The layout is documented in `docs/provenance-schema.md`. What is put in
//! the file comes from `crate::output` (the consumers of labels) and
//! `crate::ross`; what users see of it, from `crate::inspect` and
//! `crate::report`.

pub mod anomaly_stats;
pub mod columns;
pub mod export_csv;
pub mod hdf5file;
pub mod incidents;
pub mod read;
pub mod read_model;
pub mod records;
pub mod ross;
pub mod spans;
pub mod stats;
pub mod table;
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
