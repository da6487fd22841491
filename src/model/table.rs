//! A training table: named numeric columns, one row per trial (run or
//! sampled execution), with where each row came from so that errors can
//! name a file and line.
//!
//! Tables come from CSV files with a header row ([`Table::read_csv`]), from
//! Eiger's instrumentation logs and MySQL dump (`model::input`) and from
//! the `model_samples` table of a provenance file. They are written back as
//! CSV with numbers in Python's `repr` form ([`Table::to_csv`]), the form of
//! Eiger's example `training.csv`, so a table rebuilt from Eiger's dump is
//! byte-identical to it.

use std::fmt;
use std::path::Path;

use crate::model::pyfmt::py_repr;
use crate::util::csv::{csv_field, split_csv};

/// A table of numbers with named columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Column names, in file order.
    pub columns: Vec<String>,
    /// Rows; each has one value per column.
    pub rows: Vec<Vec<f64>>,
    /// Where the table came from (a path, or a description), for errors.
    pub source: String,
    /// The line of the source each row came from (1-based), when known.
    pub lines: Vec<usize>,
}

/// A table that could not be read or used, with the place that says why.
#[derive(Debug, Clone, PartialEq)]
pub struct TableError {
    /// File or description of the source.
    pub source: String,
    /// 1-based line, when the problem is on one line.
    pub line: Option<usize>,
    /// Column name (or 1-based number), when the problem is in one column.
    pub column: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.source)?;
        if let Some(l) = self.line {
            write!(f, ", line {l}")?;
        }
        if let Some(c) = &self.column {
            write!(f, ", column {c:?}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for TableError {}

impl TableError {
    /// An error about a whole line (or the whole source, without a line).
    pub fn new(source: &str, line: Option<usize>, message: impl Into<String>) -> TableError {
        TableError {
            source: source.to_owned(),
            line,
            column: None,
            message: message.into(),
        }
    }
}

impl Table {
    /// An empty table with these columns.
    pub fn new(columns: Vec<String>, source: impl Into<String>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
            source: source.into(),
            lines: Vec::new(),
        }
    }

    /// An error about this table.
    pub fn error(
        &self,
        line: Option<usize>,
        column: Option<&str>,
        message: impl Into<String>,
    ) -> TableError {
        TableError {
            source: self.source.clone(),
            line,
            column: column.map(str::to_owned),
            message: message.into(),
        }
    }

    /// Reads a CSV file with a header row; every other cell must be a
    /// finite number (`nan`, `inf` and text are refused with file, line and
    /// column). Blank lines are skipped.
    pub fn read_csv(path: &Path) -> Result<Table, TableError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            TableError::new(
                &path.display().to_string(),
                None,
                format!("cannot read: {e}"),
            )
        })?;
        Table::parse_csv(&text, &path.display().to_string())
    }

    /// Parses CSV text (see [`Table::read_csv`]); `source` names it in errors.
    pub fn parse_csv(text: &str, source: &str) -> Result<Table, TableError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((_, header)) = lines.next() else {
            return Err(TableError::new(source, None, "empty table: no header row"));
        };
        let columns: Vec<String> = split_csv(header.trim_end_matches('\r'))
            .into_iter()
            .map(|c| c.trim().to_owned())
            .collect();
        let mut table = Table::new(columns, source);
        if let Some(dup) = first_duplicate(&table.columns) {
            return Err(table.error(Some(1), Some(&dup), "column name appears twice"));
        }
        for (i, line) in lines {
            let cells = split_csv(line.trim_end_matches('\r'));
            if cells.len() != table.columns.len() {
                return Err(table.error(
                    Some(i + 1),
                    None,
                    format!(
                        "{} cells where the header has {} columns",
                        cells.len(),
                        table.columns.len()
                    ),
                ));
            }
            let mut row = Vec::with_capacity(cells.len());
            for (c, cell) in cells.iter().enumerate() {
                let v = parse_number(cell)
                    .map_err(|why| table.error(Some(i + 1), Some(&table.columns[c]), why))?;
                row.push(v);
            }
            table.rows.push(row);
            table.lines.push(i + 1);
        }
        Ok(table)
    }

    /// The index of a column by name.
    pub fn column_index(&self, name: &str) -> Result<usize, TableError> {
        self.columns.iter().position(|c| c == name).ok_or_else(|| {
            self.error(
                None,
                Some(name),
                format!(
                    "no such column (the table has: {})",
                    self.columns.join(", ")
                ),
            )
        })
    }

    /// The values of one column.
    pub fn column(&self, index: usize) -> Vec<f64> {
        self.rows.iter().map(|r| r[index]).collect()
    }

    /// The line of row `r` in the source, when known.
    pub fn line_of(&self, r: usize) -> Option<usize> {
        self.lines.get(r).copied()
    }

    /// The table as CSV: the header, then each row with numbers in Python's
    /// `repr` form (`10.0`, `1.3574000149674248e-05`); columns whose every
    /// value is integral and whose name ends in `id` are written as
    /// integers, as Eiger's `trial_id` is.
    pub fn to_csv(&self) -> String {
        let integral: Vec<bool> = (0..self.columns.len())
            .map(|c| {
                let name = self.columns[c].to_ascii_lowercase();
                (name == "id" || name.ends_with("_id"))
                    && self
                        .rows
                        .iter()
                        .all(|r| r[c].fract() == 0.0 && r[c].abs() < 9.0e15)
            })
            .collect();
        let mut out = String::new();
        let header: Vec<String> = self.columns.iter().map(|c| csv_field(c)).collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for row in &self.rows {
            let cells: Vec<String> = row
                .iter()
                .zip(&integral)
                .map(|(v, int)| {
                    if *int {
                        format!("{}", *v as i64)
                    } else {
                        py_repr(*v)
                    }
                })
                .collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }
}

/// A cell as a finite number.
fn parse_number(cell: &str) -> Result<f64, String> {
    let t = cell.trim();
    if t.is_empty() {
        return Err("empty cell where a number is expected".into());
    }
    let v: f64 = t.parse().map_err(|_| format!("{t:?} is not a number"))?;
    if !v.is_finite() {
        return Err(format!(
            "{t:?} is not a finite number (NaN and infinities cannot be modelled)"
        ));
    }
    Ok(v)
}

/// The first name that appears twice.
fn first_duplicate(names: &[String]) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    names.iter().find(|n| !seen.insert(n.as_str())).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_writes_back() {
        let text =
            "trial_id,size,runtime\n1,10.0,1.3574000149674248e-05\n2,20.0,8.635300036985427e-05\n";
        let t = Table::parse_csv(text, "t.csv").unwrap();
        assert_eq!(t.columns, ["trial_id", "size", "runtime"]);
        assert_eq!(t.rows[1], vec![2.0, 20.0, 8.635300036985427e-05]);
        assert_eq!(t.to_csv(), text);
    }

    #[test]
    fn bad_cells_name_line_and_column() {
        let e = Table::parse_csv("a,b\n1,2\n3,x\n", "t.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.csv, line 3, column \"b\": \"x\" is not a number"
        );
        let e = Table::parse_csv("a,b\n1,nan\n", "t.csv").unwrap_err();
        assert!(e.to_string().contains("line 2, column \"b\""), "{e}");
        let e = Table::parse_csv("a,b\n1\n", "t.csv").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = Table::parse_csv("", "t.csv").unwrap_err();
        assert!(e.to_string().contains("empty table"), "{e}");
    }
}
