//! Training tables from the logs that Eiger's instrumentation library
//! writes when it has no database to talk to.
//!
//! Three writers produced three forms, all `;`-separated lines without
//! escaping, told apart by their first lines ([`LogForm`]):
//!
//! - the serial log (`fakeeiger.log`, 2012-2013): full keywords, a line for
//!   every constructor and every commit, and no ids at all: the writer
//!   numbered objects with per-kind maps keyed by the commit text, so the
//!   ids that later records use are rebuilt here the same way. Its
//!   `Execution_commit` writes no newline, so the next record is glued onto
//!   the end of that line;
//! - the per-rank MPI log (`mpifakeeiger.<rank>.log`): `VERSION;2`,
//!   `FORMAT;character`, one-letter keywords, commits only, each ending
//!   with the object's id local to the file;
//! - the single file that the 2016 library writes at disconnect:
//!   `CONNECT;<dbfile>`, records grouped by kind, `DISCONNECT`, and no
//!   executions (values belong to trials).
//!
//! Ids are local to a file and reused: the writers key them on the commit
//! text, so every trial of an experiment whose trials share their machine,
//! dataset and so on carries the same id. Eiger's loader replays each
//! commit into the database, creating a new trial or execution each time
//! and pointing the local id at the newest; this reader does the same.
//! Metrics, machines, applications, data collections and datasets are
//! matched across files by name, so several rank logs merge into one
//! table. Id 0 is the null id; an id that no earlier record defined is an
//! error, as it is for Eiger's loader.
//!
//! The table has `trial_id` (trials numbered 1, 2, ... in order of
//! appearance, file by file) and one column per metric that has values,
//! in order of first declaration; one row per execution (per trial for the
//! 2016 form). An execution's row takes the execution's own values, then
//! those of its trial's dataset (deterministic metrics), then those of its
//! trial's machine (machine metrics). A row without a value for some metric
//! is an error: Eiger cannot model incomplete rows.

use std::path::PathBuf;

use crate::model::table::{Table, TableError};

mod merge;
mod parser;
mod records;
mod serial;

pub use super::eiger_table::{default_target, EigerTable, MetricType};
pub use merge::merge_logs;
use parser::Parser;
use records::{split_records, Record};

/// Which writer produced a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogForm {
    /// `fakeeiger.log`: full keywords, constructor and commit lines, no ids.
    Serial,
    /// `mpifakeeiger.<rank>.log`: one-letter keywords, commits with ids.
    PerRank,
    /// The 2016 single file: one-letter keywords, no executions.
    SingleFile,
}

/// Reads logs (any mix of forms) and merges them into one table.
pub fn read_logs(paths: &[PathBuf]) -> Result<Table, TableError> {
    Ok(load_logs(paths)?.table)
}

/// Reads logs and merges them, keeping the metric types and the file of
/// each row.
pub fn load_logs(paths: &[PathBuf]) -> Result<EigerTable, TableError> {
    let mut logs = Vec::with_capacity(paths.len());
    for path in paths {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| error(&source, None, format!("cannot read: {e}")))?;
        logs.push(parse_log(&text, &source)?);
    }
    merge_logs(&logs)
}

/// Parses one log; `source` names it in errors.
pub fn parse_log(text: &str, source: &str) -> Result<LogData, TableError> {
    let records = split_records(text);
    let form = detect_form(&records, source)?;
    let mut parser = Parser::new(source, form);
    for record in &records {
        parser.record(record)?;
    }
    Ok(parser.data)
}

/// Tells the forms apart: the serial log starts with its keywords, the
/// others with `VERSION` or `FORMAT`; of those, the 2016 file connects to
/// a database file (`CONNECT;<dbfile>`, one field) and ends with
/// `DISCONNECT`, where the per-rank log connects with the four MySQL
/// parameters.
fn detect_form(records: &[Record<'_>], source: &str) -> Result<LogForm, TableError> {
    let Some(first) = records.first() else {
        return Err(error(source, None, "empty log: no records"));
    };
    if first.keyword != "VERSION" && first.keyword != "FORMAT" {
        return Ok(LogForm::Serial);
    }
    let single_connect = records
        .iter()
        .find(|r| r.keyword == "CONNECT")
        .is_some_and(|r| r.fields.len() == 1);
    let disconnect = records.iter().any(|r| r.keyword == "DISCONNECT");
    Ok(if single_connect || disconnect {
        LogForm::SingleFile
    } else {
        LogForm::PerRank
    })
}

/// One log, parsed: its objects with the local ids resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct LogData {
    /// The file (or description) the log came from, for errors.
    pub source: String,
    /// Which writer produced it.
    pub form: LogForm,
    metrics: Vec<MetricDef>,
    machines: Vec<String>,
    applications: Vec<String>,
    data_collections: Vec<String>,
    datasets: Vec<DatasetKey>,
    properties: usize,
    trials: Vec<TrialRec>,
    executions: Vec<ExecRec>,
    values: Vec<ValueRec>,
}

impl LogData {
    /// How many trials the log commits.
    pub fn trial_count(&self) -> usize {
        self.trials.len()
    }

    /// How many executions the log commits (none in the 2016 form).
    pub fn execution_count(&self) -> usize {
        self.executions.len()
    }

    /// The metrics the log declares, with their types, in order.
    pub fn metric_types(&self) -> Vec<(String, MetricType)> {
        self.metrics
            .iter()
            .map(|m| (m.name.clone(), m.kind))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq)]
struct MetricDef {
    name: String,
    kind: MetricType,
    line: usize,
}

/// What identifies a dataset across files: Eiger's MPI loader relies on
/// dataset names encoding the experiment's parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DatasetKey {
    application: Option<String>,
    name: String,
}

#[derive(Debug, Clone, PartialEq)]
struct TrialRec {
    machine: Option<usize>,
    dataset: Option<usize>,
    line: usize,
}

#[derive(Debug, Clone, PartialEq)]
struct ExecRec {
    trial: usize,
    line: usize,
}

/// What a value belongs to (indices into the log's lists).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Owner {
    Execution(usize),
    Trial(usize),
    Dataset(usize),
    Machine(usize),
}

#[derive(Debug, Clone, PartialEq)]
struct ValueRec {
    owner: Owner,
    metric: usize,
    value: f64,
    line: usize,
}

/// An error about a log.
fn error(source: &str, line: Option<usize>, message: impl Into<String>) -> TableError {
    TableError::new(source, line, message)
}

/// The index of `name` in `names`, added at the end if new.
fn intern(names: &mut Vec<String>, name: &str) -> usize {
    match names.iter().position(|n| n == name) {
        Some(i) => i,
        None => {
            names.push(name.to_owned());
            names.len() - 1
        }
    }
}

/// The index of `key` in `keys`, added at the end if new.
fn intern_key(keys: &mut Vec<DatasetKey>, key: &DatasetKey) -> usize {
    match keys.iter().position(|k| k == key) {
        Some(i) => i,
        None => {
            keys.push(key.clone());
            keys.len() - 1
        }
    }
}

#[cfg(test)]
mod tests;
