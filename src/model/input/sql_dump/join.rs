//! Eiger's tables joined into the training table ([`build`]): metrics in
//! id order, one row per execution with its own, its dataset's and its
//! machine's values, and the checks that every id a row names exists.
//! Separate from reading the dump, since this is where the rows get their
//! meaning.

use std::collections::{BTreeMap, HashMap};

use super::error;
use super::statements::SqlValue;
use super::tables::SqlTable;
use crate::model::input::eiger_table::{assemble, EigerTable, MetricType, PendingRow};
use crate::model::table::TableError;

/// A row's value in `column`: a missing column is an error (the dump's
/// table is not Eiger's).
fn cell<'r>(
    row: &'r HashMap<String, SqlValue>,
    table: &str,
    column: &str,
    source: &str,
    line: usize,
) -> Result<&'r SqlValue, TableError> {
    row.get(&column.to_ascii_lowercase()).ok_or_else(|| {
        error(
            source,
            Some(line),
            format!("table `{table}` has no column `{column}`"),
        )
    })
}

/// Reads the cells of a table's rows by column name.
struct Rows<'t> {
    table: &'static str,
    rows: &'t [(usize, HashMap<String, SqlValue>)],
    source: &'t str,
}

impl<'t> Rows<'t> {
    fn of(tables: &'t HashMap<String, SqlTable>, table: &'static str, source: &'t str) -> Self {
        Rows {
            table,
            rows: tables.get(table).map_or(&[][..], |t| &t.rows[..]),
            source,
        }
    }

    /// An id cell: a whole number, or `None` for NULL.
    fn id(&self, row: usize, column: &str) -> Result<Option<i64>, TableError> {
        let (line, cells) = &self.rows[row];
        let v = cell(cells, self.table, column, self.source, *line)?;
        let bad = || {
            error(
                self.source,
                Some(*line),
                format!("`{}`.`{column}` is {v:?}, not an id", self.table),
            )
        };
        match v {
            SqlValue::Null => Ok(None),
            SqlValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Ok(Some(*n as i64)),
            SqlValue::Text(t) => t.trim().parse::<i64>().map(Some).map_err(|_| bad()),
            SqlValue::Number(_) => Err(bad()),
        }
    }

    /// A value cell: a finite number (MySQL reads numeric text as a
    /// number), or `None` for NULL.
    fn number(&self, row: usize, column: &str) -> Result<Option<f64>, TableError> {
        let (line, cells) = &self.rows[row];
        let v = match cell(cells, self.table, column, self.source, *line)? {
            SqlValue::Null => return Ok(None),
            SqlValue::Number(n) => Some(*n),
            SqlValue::Text(t) => t.trim().parse::<f64>().ok(),
        };
        match v {
            Some(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(error(
                self.source,
                Some(*line),
                format!("`{}`.`{column}` is not a finite number", self.table),
            )),
        }
    }

    fn text(&self, row: usize, column: &str) -> Result<Option<String>, TableError> {
        let (line, cells) = &self.rows[row];
        Ok(match cell(cells, self.table, column, self.source, *line)? {
            SqlValue::Null => None,
            SqlValue::Text(t) => Some(t.clone()),
            SqlValue::Number(n) => Some(n.to_string()),
        })
    }

    fn line(&self, row: usize) -> usize {
        self.rows[row].0
    }

    fn err(&self, row: usize, message: impl Into<String>) -> TableError {
        error(self.source, Some(self.line(row)), message)
    }

    /// An id that must be there.
    fn required(&self, row: usize, column: &str) -> Result<i64, TableError> {
        self.id(row, column)?
            .ok_or_else(|| self.err(row, format!("`{}`.`{column}` is NULL", self.table)))
    }
}

/// What a row of `trials` says about the trial.
#[derive(Debug)]
struct TrialInfo {
    machine: Option<i64>,
    dataset: Option<i64>,
    line: usize,
}

/// The training table from the dump's tables.
pub(super) fn build(
    tables: &HashMap<String, SqlTable>,
    source: &str,
) -> Result<EigerTable, TableError> {
    let (metrics, metric_index) = read_metrics(tables, source)?;
    let metric_of = |rows: &Rows<'_>, r: usize| -> Result<usize, TableError> {
        let id = rows.required(r, "metricID")?;
        metric_index.get(&id).copied().ok_or_else(|| {
            rows.err(
                r,
                format!(
                    "`{}` names metric {id}, which `metrics` does not have",
                    rows.table
                ),
            )
        })
    };
    let trials = read_trials(tables, source)?;
    let (executions, trial_of) = read_executions(tables, source, &trials)?;

    let values = |table: &'static str, owner: &str| {
        values_by_owner(
            &Rows::of(tables, table, source),
            owner,
            &metric_of,
            &metrics,
        )
    };
    let values = MetricValues {
        execution: values("nondeterministic_metrics", "executionID")?,
        dataset: values("deterministic_metrics", "datasetID")?,
        machine: values("machine_metrics", "machineID")?,
    };
    check_executions_exist(&values.execution, &trial_of, source)?;
    let rows = join_rows(executions, &trials, &values, source);
    assemble(&metrics, rows, source)
}

/// Metric id → the metric's index among the metrics in id order.
type MetricIndex = HashMap<i64, usize>;

/// (trial, execution) → line of the execution's row, in the order the
/// training table's rows take.
type ExecutionLines = BTreeMap<(i64, i64), usize>;

/// The metrics in id order (name, type), and each metric id's index in
/// that order: a value names its metric by id.
fn read_metrics(
    tables: &HashMap<String, SqlTable>,
    source: &str,
) -> Result<(Vec<(String, MetricType)>, MetricIndex), TableError> {
    let metrics_rows = Rows::of(tables, "metrics", source);
    let mut by_id: BTreeMap<i64, (String, MetricType)> = BTreeMap::new();
    for r in 0..metrics_rows.rows.len() {
        let id = metrics_rows.required(r, "ID")?;
        let name = metrics_rows
            .text(r, "name")?
            .ok_or_else(|| metrics_rows.err(r, format!("metric {id} has no name")))?;
        let kind = match metrics_rows.text(r, "type")? {
            None => MetricType::Other,
            Some(t) => MetricType::from_name(&t).ok_or_else(|| {
                metrics_rows.err(r, format!("metric {id} has the unknown type {t:?}"))
            })?,
        };
        if by_id.insert(id, (name, kind)).is_some() {
            return Err(metrics_rows.err(r, format!("metric id {id} appears twice")));
        }
    }
    let metric_index: MetricIndex = by_id.keys().enumerate().map(|(i, id)| (*id, i)).collect();
    let metrics: Vec<(String, MetricType)> = by_id.into_values().collect();
    Ok((metrics, metric_index))
}

/// The trials by id: the machine and dataset each ran on, and its line.
fn read_trials(
    tables: &HashMap<String, SqlTable>,
    source: &str,
) -> Result<BTreeMap<i64, TrialInfo>, TableError> {
    let trial_rows = Rows::of(tables, "trials", source);
    let mut trials: BTreeMap<i64, TrialInfo> = BTreeMap::new();
    for r in 0..trial_rows.rows.len() {
        let id = trial_rows.required(r, "ID")?;
        let info = TrialInfo {
            machine: trial_rows.id(r, "machineID")?,
            dataset: trial_rows.id(r, "datasetID")?,
            line: trial_rows.line(r),
        };
        if trials.insert(id, info).is_some() {
            return Err(trial_rows.err(r, format!("trial id {id} appears twice")));
        }
    }
    Ok(trials)
}

/// The executions: (trial, execution) → line, in the order of the rows
/// of the training table, and each execution's trial; every trial an
/// execution names must exist.
fn read_executions(
    tables: &HashMap<String, SqlTable>,
    source: &str,
    trials: &BTreeMap<i64, TrialInfo>,
) -> Result<(ExecutionLines, HashMap<i64, i64>), TableError> {
    let exec_rows = Rows::of(tables, "executions", source);
    let mut executions = ExecutionLines::new();
    let mut trial_of: HashMap<i64, i64> = HashMap::new();
    for r in 0..exec_rows.rows.len() {
        let id = exec_rows.required(r, "ID")?;
        let trial = exec_rows.required(r, "trialID")?;
        if !trials.contains_key(&trial) {
            return Err(exec_rows.err(
                r,
                format!("execution {id} names trial {trial}, which `trials` does not have"),
            ));
        }
        if trial_of.insert(id, trial).is_some() {
            return Err(exec_rows.err(r, format!("execution id {id} appears twice")));
        }
        executions.insert((trial, id), exec_rows.line(r));
    }
    Ok((executions, trial_of))
}

/// The values of the three `*_metrics` tables, by owner id.
struct MetricValues {
    /// `nondeterministic_metrics`: by execution.
    execution: HashMap<i64, OwnerValues>,
    /// `deterministic_metrics`: by dataset.
    dataset: HashMap<i64, OwnerValues>,
    /// `machine_metrics`: by machine.
    machine: HashMap<i64, OwnerValues>,
}

/// Fails on values of executions the dump does not have (the first by
/// line): the join would drop them silently, and they point at a damaged
/// dump.
fn check_executions_exist(
    exec_values: &HashMap<i64, OwnerValues>,
    trial_of: &HashMap<i64, i64>,
    source: &str,
) -> Result<(), TableError> {
    if let Some((exec, line)) = exec_values
        .iter()
        .filter(|(e, _)| !trial_of.contains_key(e))
        .map(|(e, v)| (*e, v.line))
        .min_by_key(|(_, line)| *line)
    {
        return Err(error(
            source,
            Some(line),
            format!("`nondeterministic_metrics` names execution {exec}, which `executions` does not have"),
        ));
    }
    Ok(())
}

/// One row per execution, in `executions` order, with its machine's, its
/// dataset's and its own values.
fn join_rows(
    executions: ExecutionLines,
    trials: &BTreeMap<i64, TrialInfo>,
    values: &MetricValues,
    source: &str,
) -> Vec<PendingRow> {
    let mut rows = Vec::with_capacity(executions.len());
    for ((trial, exec), line) in executions {
        let Some(t) = trials.get(&trial) else {
            continue;
        };
        let mut row_values = HashMap::new();
        // Most specific last, so that it wins: machine, dataset, execution.
        for (owner, map) in [
            (t.machine, &values.machine),
            (t.dataset, &values.dataset),
            (Some(exec), &values.execution),
        ] {
            if let Some(found) = owner.and_then(|o| map.get(&o)) {
                row_values.extend(found.values.iter().map(|(m, v)| (*m, *v)));
            }
        }
        rows.push(PendingRow {
            trial_id: trial as f64,
            values: row_values,
            source: source.to_owned(),
            line,
            trial_name: format!("trial {trial} (execution {exec})"),
            trial_line: t.line,
        });
    }
    rows
}

/// The values one owner (an execution, dataset or machine) has, by
/// metric index, with the line of its first value.
#[derive(Debug, Default)]
struct OwnerValues {
    values: HashMap<usize, f64>,
    line: usize,
}

/// The values of a `*_metrics` table by owner id; a value given twice
/// must agree.
fn values_by_owner(
    rows: &Rows<'_>,
    owner_column: &str,
    metric_of: &dyn Fn(&Rows<'_>, usize) -> Result<usize, TableError>,
    metrics: &[(String, MetricType)],
) -> Result<HashMap<i64, OwnerValues>, TableError> {
    let mut out: HashMap<i64, OwnerValues> = HashMap::new();
    for r in 0..rows.rows.len() {
        let Some(owner) = rows.id(r, owner_column)? else {
            continue;
        };
        let metric = metric_of(rows, r)?;
        // NULL is no value: the row will be incomplete unless the metric
        // has a value elsewhere.
        let Some(v) = rows.number(r, "metric")? else {
            continue;
        };
        let slot = out.entry(owner).or_insert_with(|| OwnerValues {
            values: HashMap::new(),
            line: rows.line(r),
        });
        match slot.values.get(&metric) {
            Some(old) if old.to_bits() != v.to_bits() => {
                return Err(rows.err(
                    r,
                    format!(
                        "{owner_column} {owner} has two values for metric {:?}: {old} and {v}",
                        metrics[metric].0
                    ),
                ));
            }
            _ => {
                slot.values.insert(metric, v);
            }
        }
    }
    Ok(out)
}
