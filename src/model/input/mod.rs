//! Training tables from Eiger's own storage: its instrumentation logs
//! ([`eiger_log`]: the serial log, the per-rank MPI logs and the 2016
//! single-file form) and its MySQL database dump ([`sql_dump`]).
//! Both end in the same [`eiger_log::EigerTable`], built from their rows
//! by `eiger_table`.
//! CSV tables are read by [`crate::model::table::Table::read_csv`]; the
//! `model_samples` table of a provenance file is read in `output`.

pub mod eiger_log;
mod eiger_table;
pub mod sql_dump;
