//! Training tables from a MySQL dump of Eiger's database (`mysqldump`
//! output, as Eiger's examples ship it).
//!
//! Only the statements that carry data are read: `CREATE TABLE` for the
//! column order and `INSERT INTO ... VALUES (...),(...);` for the rows
//! (MySQL quoting: `'...'` strings with backslash escapes and doubled
//! quotes, `` `...` `` names, `NULL`, numbers); comments, `SET`, `LOCK` and
//! the rest are skipped. A dump without `CREATE TABLE` statements is read
//! with the column order of Eiger's schema.
//!
//! The table is the one Eiger trains on: `trial_id` (the database's trial
//! id), then one column per metric that has values, in metric-id order;
//! one row per execution, ordered by trial id then execution id. A row
//! takes its execution's nondeterministic values, then its trial's
//! dataset's deterministic ones and its trial's machine's machine ones.
//! A row without a value for some metric is an error, as is a value that
//! refers to an execution or metric the dump does not have.

use std::path::Path;

use super::eiger_table::EigerTable;
use crate::model::table::{Table, TableError};

mod join;
mod lexer;
mod statements;
mod tables;

use join::build;
use lexer::statements;
use tables::read_tables;

/// Reads a dump into a training table.
pub fn read_dump(path: &Path) -> Result<Table, TableError> {
    Ok(load_dump(path)?.table)
}

/// Reads a dump, keeping the metric types.
pub fn load_dump(path: &Path) -> Result<EigerTable, TableError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| error(&source, None, format!("cannot read: {e}")))?;
    parse_dump_with_types(&text, &source)
}

/// Parses dump text into a training table; `source` names it in errors.
pub fn parse_dump(text: &str, source: &str) -> Result<Table, TableError> {
    Ok(parse_dump_with_types(text, source)?.table)
}

/// Parses dump text, keeping the metric types.
pub fn parse_dump_with_types(text: &str, source: &str) -> Result<EigerTable, TableError> {
    let statements = statements(text, source)?;
    let tables = read_tables(&statements, source)?;
    build(&tables, source)
}

fn error(source: &str, line: Option<usize>, message: impl Into<String>) -> TableError {
    TableError::new(source, line, message)
}

#[cfg(test)]
mod tests;
