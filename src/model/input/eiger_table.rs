//! What both readers of Eiger's storage produce: the [`EigerTable`] with
//! the [`MetricType`] of each metric column, and the step both end with,
//! `assemble`, which turns rows whose values are all gathered
//! (`PendingRow`) into that table. It sits beside the readers rather than
//! in either because the log reader and the dump reader each gather their
//! rows their own way and share only this.

use std::collections::HashMap;
use std::fmt;

use crate::model::table::{Table, TableError};

/// The type Eiger gives each metric (the `type` of its `metrics` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricType {
    /// A measured outcome, the usual modelling target (`runtime`).
    Result,
    /// A property of the dataset, the same for every run on it.
    Deterministic,
    /// Measured per execution (problem size as run, counters).
    Nondeterministic,
    /// A property of the machine.
    Machine,
    /// Anything else.
    Other,
}

impl MetricType {
    /// Eiger's name for the type.
    pub fn name(self) -> &'static str {
        match self {
            MetricType::Result => "result",
            MetricType::Deterministic => "deterministic",
            MetricType::Nondeterministic => "nondeterministic",
            MetricType::Machine => "machine",
            MetricType::Other => "other",
        }
    }

    /// The type with this name, as the logs and the database spell it.
    pub fn from_name(name: &str) -> Option<MetricType> {
        [
            MetricType::Result,
            MetricType::Deterministic,
            MetricType::Nondeterministic,
            MetricType::Machine,
            MetricType::Other,
        ]
        .into_iter()
        .find(|t| t.name() == name)
    }
}

impl fmt::Display for MetricType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A training table read from Eiger's storage, with what Eiger knows about
/// its columns and rows.
#[derive(Debug, Clone, PartialEq)]
pub struct EigerTable {
    /// `trial_id`, then one column per metric.
    pub table: Table,
    /// The name and type of each metric column, in column order (the
    /// `trial_id` column has none).
    pub metric_types: Vec<(String, MetricType)>,
    /// The file and 1-based line each row came from (when several logs
    /// merge, `table.lines` alone cannot say which file a line is in).
    pub row_origins: Vec<(String, usize)>,
}

impl EigerTable {
    /// The metric Eiger would model by default; see [`default_target`].
    pub fn default_target(&self) -> Option<&str> {
        default_target(&self.metric_types)
    }
}

/// The first metric of type `result`, the one Eiger models by default;
/// `None` when no metric has that type (the 2016 library has none).
pub fn default_target(metric_types: &[(String, MetricType)]) -> Option<&str> {
    metric_types
        .iter()
        .find(|(_, t)| *t == MetricType::Result)
        .map(|(name, _)| name.as_str())
}

/// A row before the table's columns are known.
#[derive(Debug, Clone)]
pub(super) struct PendingRow {
    /// The `trial_id` cell.
    pub trial_id: f64,
    /// Values by metric index.
    pub values: HashMap<usize, f64>,
    /// The file and line of the row's record (execution, or trial).
    pub source: String,
    pub line: usize,
    /// The trial as errors should name it, and its record's line (in
    /// `source`).
    pub trial_name: String,
    pub trial_line: usize,
}

/// Builds the table from rows: one column per metric (in the order of
/// `metrics`) that has a value in some row; every row must then have all
/// of them. Rows are put in trial order (stable, so a trial's executions
/// keep their order).
pub(super) fn assemble(
    metrics: &[(String, MetricType)],
    mut rows: Vec<PendingRow>,
    source: &str,
) -> Result<EigerTable, TableError> {
    let used: Vec<usize> = (0..metrics.len())
        .filter(|m| rows.iter().any(|r| r.values.contains_key(m)))
        .collect();
    let mut columns = vec!["trial_id".to_owned()];
    for &m in &used {
        let name = &metrics[m].0;
        if columns.contains(name) {
            return Err(TableError {
                source: source.to_owned(),
                line: None,
                column: Some(name.clone()),
                message: "two metrics with this name, or a metric named like the trial_id column"
                    .into(),
            });
        }
        columns.push(name.clone());
    }
    rows.sort_by(|a, b| a.trial_id.total_cmp(&b.trial_id));
    let mut table = Table::new(columns, source);
    let mut row_origins = Vec::with_capacity(rows.len());
    for r in rows {
        let mut cells = Vec::with_capacity(used.len() + 1);
        cells.push(r.trial_id);
        for &m in &used {
            let Some(v) = r.values.get(&m) else {
                return Err(TableError {
                    source: r.source,
                    line: Some(r.trial_line),
                    column: Some(metrics[m].0.clone()),
                    message: format!(
                        "{} has no value for metric {:?} (Eiger cannot model incomplete rows)",
                        r.trial_name, metrics[m].0
                    ),
                });
            };
            cells.push(*v);
        }
        table.rows.push(cells);
        table.lines.push(r.line);
        row_origins.push((r.source, r.line));
    }
    let metric_types = used.iter().map(|&m| metrics[m].clone()).collect();
    Ok(EigerTable {
        table,
        metric_types,
        row_origins,
    })
}
