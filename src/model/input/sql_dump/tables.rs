//! The dump's tables by name ([`read_tables`]): every `INSERT` row as a
//! map from column name to value, its columns named by the statement's
//! column list, the table's `CREATE TABLE`, or else Eiger's schema. Tables
//! Eiger's training data does not come from are dropped here.

use std::collections::HashMap;

use super::error;
use super::lexer::Statement;
use super::statements::{Cursor, Insert, SqlValue};
use crate::model::table::TableError;

/// The rows of one table, each a map from column (lower case, as MySQL
/// compares names without case) to value.
#[derive(Debug, Default)]
pub(super) struct SqlTable {
    pub(super) rows: Vec<(usize, HashMap<String, SqlValue>)>,
}

/// The column order of Eiger's schema, for dumps without `CREATE TABLE`.
fn eiger_columns(table: &str) -> Option<&'static [&'static str]> {
    Some(match table {
        "trials" => &[
            "ID",
            "dataCollectionID",
            "machineID",
            "applicationID",
            "datasetID",
            "propertiesID",
        ],
        "executions" => &["ID", "machineID", "trialID"],
        "metrics" => &["ID", "type", "name", "description"],
        "nondeterministic_metrics" => &["executionID", "metricID", "metric"],
        "deterministic_metrics" => &["datasetID", "metricID", "metric"],
        "machine_metrics" => &["machineID", "metricID", "metric"],
        _ => return None,
    })
}

/// Reads the `CREATE TABLE` and `INSERT` statements into tables.
pub(super) fn read_tables(
    statements: &[Statement],
    source: &str,
) -> Result<HashMap<String, SqlTable>, TableError> {
    let mut columns: HashMap<String, Vec<String>> = HashMap::new();
    let mut tables: HashMap<String, SqlTable> = HashMap::new();
    for st in statements {
        let mut c = Cursor::new(st, source);
        if c.keyword("CREATE") && c.keyword("TABLE") {
            let (name, cols) = c.create_table()?;
            columns.insert(name, cols);
            continue;
        }
        let mut c = Cursor::new(st, source);
        if !(c.keyword("INSERT") || c.keyword("REPLACE")) {
            continue;
        }
        while c.keyword("IGNORE") || c.keyword("LOW_PRIORITY") || c.keyword("DELAYED") {}
        c.keyword("INTO");
        let Insert {
            table: name,
            columns: explicit,
            rows,
        } = c.insert()?;
        let cols = match explicit {
            Some(cols) => cols,
            None => match columns.get(&name) {
                Some(cols) => cols.clone(),
                None => match eiger_columns(&name) {
                    Some(cols) => cols.iter().map(|s| s.to_ascii_lowercase()).collect(),
                    // A table Eiger's training data does not come from.
                    None => continue,
                },
            },
        };
        let table = tables.entry(name.clone()).or_default();
        for row in rows {
            if row.values.len() != cols.len() {
                return Err(error(
                    source,
                    Some(row.line),
                    format!(
                        "a row of {} values for table `{name}`, which has {} columns",
                        row.values.len(),
                        cols.len()
                    ),
                ));
            }
            table
                .rows
                .push((row.line, cols.iter().cloned().zip(row.values).collect()));
        }
    }
    Ok(tables)
}
