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

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::eiger_log::{assemble, EigerTable, MetricType, PendingRow};
use crate::model::table::{Table, TableError};

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
    TableError {
        source: source.to_owned(),
        line,
        column: None,
        message: message.into(),
    }
}

// ---------------------------------------------------------------------
// Tokens and statements

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A bare word: a keyword, `NULL`, an unquoted name.
    Word(String),
    /// A `` `quoted` `` name.
    Name(String),
    /// A string literal, unescaped.
    Str(String),
    /// A number, as written.
    Num(String),
    /// Any other character: `(`, `)`, `,`, `=`, `-`, `.` ...
    Punct(char),
}

#[derive(Debug, Clone, PartialEq)]
struct Token {
    tok: Tok,
    line: usize,
}

/// A statement: its tokens, without the `;`.
#[derive(Debug, Clone, PartialEq)]
struct Statement {
    line: usize,
    tokens: Vec<Token>,
}

/// Splits the dump into statements at the `;` outside strings, names and
/// comments. A statement cut off by the end of the text (a truncated dump)
/// is an error at the line where it starts.
fn statements(text: &str, source: &str) -> Result<Vec<Statement>, TableError> {
    let mut lexer = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        line: 1,
        source,
    };
    let mut out = Vec::new();
    let mut current: Vec<Token> = Vec::new();
    while let Some(token) = lexer.next_token()? {
        if token.tok == Tok::Punct(';') {
            if let Some(first) = current.first() {
                out.push(Statement {
                    line: first.line,
                    tokens: std::mem::take(&mut current),
                });
            }
        } else {
            current.push(token);
        }
    }
    if let Some(first) = current.first() {
        return Err(error(
            source,
            Some(first.line),
            "statement not ended by ';' (is the dump truncated?)",
        ));
    }
    Ok(out)
}

struct Lexer<'s> {
    chars: Vec<char>,
    pos: usize,
    line: usize,
    source: &'s str,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    /// The next token, past blanks and comments; `None` at the end.
    fn next_token(&mut self) -> Result<Option<Token>, TableError> {
        self.skip_blanks_and_comments()?;
        let line = self.line;
        let Some(c) = self.peek(0) else {
            return Ok(None);
        };
        let tok = match c {
            '\'' | '"' => Tok::Str(self.quoted(c, true)?),
            '`' => Tok::Name(self.quoted('`', false)?),
            c if c.is_ascii_digit() => Tok::Num(self.number()),
            '.' if self.peek(1).is_some_and(|d| d.is_ascii_digit()) => Tok::Num(self.number()),
            c if c.is_alphabetic() || c == '_' || c == '@' => Tok::Word(self.word()),
            c => {
                self.bump();
                Tok::Punct(c)
            }
        };
        Ok(Some(Token { tok, line }))
    }

    /// Skips white space, `-- ` and `#` comments to the end of the line,
    /// and `/* */` comments (MySQL's `/*!40101 SET ... */` included: they
    /// set session options, not data).
    fn skip_blanks_and_comments(&mut self) -> Result<(), TableError> {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('-'), Some('-'))
                    if self
                        .peek(2)
                        .is_none_or(|c| c.is_whitespace() || c.is_control()) =>
                {
                    self.skip_line()
                }
                (Some('#'), _) => self.skip_line(),
                (Some('/'), Some('*')) => {
                    let line = self.line;
                    self.bump();
                    self.bump();
                    loop {
                        match self.bump() {
                            Some('*') if self.peek(0) == Some('/') => {
                                self.bump();
                                break;
                            }
                            Some(_) => {}
                            None => {
                                return Err(error(
                                    self.source,
                                    Some(line),
                                    "comment not closed by */ (is the dump truncated?)",
                                ))
                            }
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.bump() {
            if c == '\n' {
                break;
            }
        }
    }

    /// A quoted string or name; `quote` doubled stands for itself, and in
    /// strings a backslash escapes the next character.
    fn quoted(&mut self, quote: char, escapes: bool) -> Result<String, TableError> {
        let line = self.line;
        self.bump();
        let mut out = String::new();
        loop {
            let Some(c) = self.bump() else {
                let what = if escapes { "string" } else { "name" };
                return Err(error(
                    self.source,
                    Some(line),
                    format!("{what} not closed by {quote} (is the dump truncated?)"),
                ));
            };
            if c == quote {
                if self.peek(0) == Some(quote) {
                    self.bump();
                    out.push(quote);
                    continue;
                }
                return Ok(out);
            }
            if c == '\\' && escapes {
                let Some(e) = self.bump() else { continue };
                out.push(match e {
                    '0' => '\0',
                    'b' => '\u{8}',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'Z' => '\u{1a}',
                    other => other,
                });
                continue;
            }
            out.push(c);
        }
    }

    /// Digits, a fraction and an exponent, as far as they go.
    fn number(&mut self) -> String {
        let mut out = String::new();
        let digits = |l: &mut Self, out: &mut String| {
            while let Some(d) = l.peek(0).filter(char::is_ascii_digit) {
                out.push(d);
                l.bump();
            }
        };
        digits(self, &mut out);
        if self.peek(0) == Some('.') {
            out.push('.');
            self.bump();
            digits(self, &mut out);
        }
        if matches!(self.peek(0), Some('e' | 'E')) {
            let sign = matches!(self.peek(1), Some('+' | '-'));
            let first = if sign { self.peek(2) } else { self.peek(1) };
            if first.is_some_and(|d| d.is_ascii_digit()) {
                for _ in 0..(1 + usize::from(sign)) {
                    if let Some(c) = self.bump() {
                        out.push(c);
                    }
                }
                digits(self, &mut out);
            }
        }
        out
    }

    fn word(&mut self) -> String {
        let mut out = String::new();
        while let Some(c) = self
            .peek(0)
            .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '@'))
        {
            out.push(c);
            self.bump();
        }
        out
    }
}

// ---------------------------------------------------------------------
// Tables and rows

/// A value of a row.
#[derive(Debug, Clone, PartialEq)]
enum SqlValue {
    Null,
    Number(f64),
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
struct SqlRow {
    line: usize,
    values: Vec<SqlValue>,
}

/// An `INSERT` statement.
#[derive(Debug, Clone, PartialEq)]
struct Insert {
    table: String,
    /// The column list, when the statement names the columns.
    columns: Option<Vec<String>>,
    rows: Vec<SqlRow>,
}

/// The rows of one table, each a map from column (lower case, as MySQL
/// compares names without case) to value.
#[derive(Debug, Default)]
struct SqlTable {
    rows: Vec<(usize, HashMap<String, SqlValue>)>,
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
fn read_tables(
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

/// Walks the tokens of one statement.
struct Cursor<'a> {
    tokens: &'a [Token],
    pos: usize,
    source: &'a str,
    /// The line to blame when the statement ends early.
    end_line: usize,
}

impl<'a> Cursor<'a> {
    fn new(st: &'a Statement, source: &'a str) -> Cursor<'a> {
        Cursor {
            tokens: &st.tokens,
            pos: 0,
            source,
            end_line: st.tokens.last().map_or(st.line, |t| t.line),
        }
    }

    fn peek(&self) -> Option<&'a Token> {
        self.tokens.get(self.pos)
    }

    fn line(&self) -> usize {
        self.peek().map_or(self.end_line, |t| t.line)
    }

    fn err(&self, message: impl Into<String>) -> TableError {
        error(self.source, Some(self.line()), message)
    }

    /// Steps over the keyword `kw` (any case) if it comes next.
    fn keyword(&mut self, kw: &str) -> bool {
        match self.peek() {
            Some(Token {
                tok: Tok::Word(w), ..
            }) if w.eq_ignore_ascii_case(kw) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }

    fn punct(&mut self, c: char) -> bool {
        if self.peek().is_some_and(|t| t.tok == Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char, context: &str) -> Result<(), TableError> {
        if self.punct(c) {
            return Ok(());
        }
        Err(self.err(format!(
            "expected '{c}' {context}, found {}",
            self.describe()
        )))
    }

    fn describe(&self) -> String {
        match self.peek().map(|t| &t.tok) {
            None => "the end of the statement".into(),
            Some(Tok::Word(w)) => format!("{w:?}"),
            Some(Tok::Name(n)) => format!("`{n}`"),
            Some(Tok::Str(s)) => format!("the string {s:?}"),
            Some(Tok::Num(n)) => format!("the number {n}"),
            Some(Tok::Punct(c)) => format!("'{c}'"),
        }
    }

    /// A name, quoted or not, lower-cased; `db`.`table` gives `table`.
    fn name(&mut self, what: &str) -> Result<String, TableError> {
        let mut name = self.one_name(what)?;
        while self.punct('.') {
            name = self.one_name(what)?;
        }
        Ok(name.to_ascii_lowercase())
    }

    fn one_name(&mut self, what: &str) -> Result<String, TableError> {
        match self.peek().map(|t| &t.tok) {
            Some(Tok::Name(n) | Tok::Word(n)) => {
                self.pos += 1;
                Ok(n.clone())
            }
            _ => Err(self.err(format!("expected {what}, found {}", self.describe()))),
        }
    }

    /// After `CREATE TABLE`: the table's name and its columns in order.
    /// Column definitions are the items of the parenthesised list that
    /// start with a name (not `PRIMARY KEY`, `KEY`, `UNIQUE KEY`, ...).
    fn create_table(&mut self) -> Result<(String, Vec<String>), TableError> {
        if self.keyword("IF") {
            self.keyword("NOT");
            self.keyword("EXISTS");
        }
        let name = self.name("a table name")?;
        self.expect('(', "after the table name")?;
        let mut columns = Vec::new();
        loop {
            let starts_column = matches!(self.peek().map(|t| &t.tok), Some(Tok::Name(_)));
            if starts_column {
                columns.push(self.name("a column name")?);
            }
            // Skip the rest of the item, minding nested parentheses.
            let mut depth = 0usize;
            loop {
                let Some(t) = self.peek() else {
                    return Err(self.err("CREATE TABLE without its closing ')'"));
                };
                match t.tok {
                    Tok::Punct('(') => depth += 1,
                    Tok::Punct(')') if depth == 0 => break,
                    Tok::Punct(')') => depth -= 1,
                    Tok::Punct(',') if depth == 0 => break,
                    _ => {}
                }
                self.pos += 1;
            }
            if self.punct(')') {
                return Ok((name, columns));
            }
            self.expect(',', "between column definitions")?;
        }
    }

    /// After `INSERT INTO`: the table's name, its column list if given,
    /// and the rows.
    fn insert(&mut self) -> Result<Insert, TableError> {
        let name = self.name("a table name")?;
        let mut columns = None;
        if self.punct('(') {
            let mut cols = Vec::new();
            loop {
                cols.push(self.name("a column name")?);
                if self.punct(')') {
                    break;
                }
                self.expect(',', "between column names")?;
            }
            columns = Some(cols);
        }
        if !(self.keyword("VALUES") || self.keyword("VALUE")) {
            return Err(self.err(format!(
                "expected VALUES in the INSERT into `{name}`, found {}",
                self.describe()
            )));
        }
        let mut rows = Vec::new();
        loop {
            rows.push(self.tuple()?);
            if !self.punct(',') {
                break;
            }
        }
        // `ON DUPLICATE KEY UPDATE ...` changes nothing in a fresh load.
        if self.peek().is_some() && !self.keyword("ON") {
            return Err(self.err(format!(
                "expected ',' or ';' after a row, found {}",
                self.describe()
            )));
        }
        Ok(Insert {
            table: name,
            columns,
            rows,
        })
    }

    /// `(value, value, ...)`.
    fn tuple(&mut self) -> Result<SqlRow, TableError> {
        let line = self.line();
        self.expect('(', "to open a row")?;
        let mut values = Vec::new();
        if !self.punct(')') {
            loop {
                values.push(self.value()?);
                if self.punct(')') {
                    break;
                }
                self.expect(',', "between values")?;
            }
        }
        Ok(SqlRow { line, values })
    }

    fn value(&mut self) -> Result<SqlValue, TableError> {
        let negative = if self.punct('-') {
            true
        } else {
            self.punct('+');
            false
        };
        let Some(t) = self.peek() else {
            return Err(self.err("expected a value, found the end of the statement"));
        };
        let value = match &t.tok {
            Tok::Num(n) => {
                let v: f64 = n
                    .parse()
                    .map_err(|_| self.err(format!("{n:?} is not a number")))?;
                SqlValue::Number(if negative { -v } else { v })
            }
            Tok::Str(s) if !negative => SqlValue::Text(s.clone()),
            Tok::Word(w) if !negative && w.eq_ignore_ascii_case("NULL") => SqlValue::Null,
            _ => return Err(self.err(format!("expected a value, found {}", self.describe()))),
        };
        self.pos += 1;
        Ok(value)
    }
}

// ---------------------------------------------------------------------
// Eiger's tables to a training table

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

#[derive(Debug)]
struct TrialInfo {
    machine: Option<i64>,
    dataset: Option<i64>,
    line: usize,
}

/// The training table from the dump's tables.
fn build(tables: &HashMap<String, SqlTable>, source: &str) -> Result<EigerTable, TableError> {
    // Metrics, in id order; a value names its metric by id.
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
    let metric_index: HashMap<i64, usize> =
        by_id.keys().enumerate().map(|(i, id)| (*id, i)).collect();
    let metrics: Vec<(String, MetricType)> = by_id.into_values().collect();
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

    let exec_rows = Rows::of(tables, "executions", source);
    // (trial, execution) -> line: the order of the table's rows.
    let mut executions: BTreeMap<(i64, i64), usize> = BTreeMap::new();
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

    let values = |table: &'static str, owner: &str| {
        values_by_owner(
            &Rows::of(tables, table, source),
            owner,
            &metric_of,
            &metrics,
        )
    };
    let exec_values = values("nondeterministic_metrics", "executionID")?;
    let dataset_values = values("deterministic_metrics", "datasetID")?;
    let machine_values = values("machine_metrics", "machineID")?;
    // Values of executions the dump does not have would be silently
    // dropped by the join; they point at a damaged dump.
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

    let mut rows = Vec::with_capacity(executions.len());
    for ((trial, exec), line) in executions {
        let Some(t) = trials.get(&trial) else {
            continue;
        };
        let mut values = HashMap::new();
        // Most specific last, so that it wins: machine, dataset, execution.
        for (owner, map) in [
            (t.machine, &machine_values),
            (t.dataset, &dataset_values),
            (Some(exec), &exec_values),
        ] {
            if let Some(found) = owner.and_then(|o| map.get(&o)) {
                values.extend(found.values.iter().map(|(m, v)| (*m, *v)));
            }
        }
        rows.push(PendingRow {
            trial_id: trial as f64,
            values,
            source: source.to_owned(),
            line,
            trial_name: format!("trial {trial} (execution {exec})"),
            trial_line: t.line,
        });
    }
    assemble(&metrics, rows, source)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A small Eiger database: two trials on two datasets, three
    /// executions, inserted out of order.
    const SMALL: &str = "-- MySQL dump\n\
        /*!40101 SET NAMES utf8 */;\n\
        CREATE TABLE `metrics` (\n  `ID` int(11) NOT NULL AUTO_INCREMENT,\n  \
        `type` enum('result','deterministic','nondeterministic','machine','other') DEFAULT NULL,\n  \
        `name` varchar(256) DEFAULT NULL,\n  `description` text,\n  PRIMARY KEY (`ID`),\n  \
        UNIQUE KEY `name` (`name`)\n) ENGINE=InnoDB;\n\
        INSERT INTO `metrics` VALUES (3,'result','time','it''s \\'t\\''),(1,'deterministic','n','a;b'),(2,'machine','ghz',NULL);\n\
        CREATE TABLE `executions` (`trialID` int, `ID` int, `machineID` int);\n\
        INSERT INTO `executions` VALUES (2,5,1),(1,4,1),(2,3,1);\n\
        INSERT INTO `trials` VALUES (2,1,1,1,20,0),(1,1,1,1,10,0);\n\
        INSERT INTO `deterministic_metrics` VALUES (10,1,100),(20,1,-2.5e3);\n\
        INSERT INTO `machine_metrics` (`metricID`, `metric`, `machineID`) VALUES (2,2.5,1);\n\
        # another comment\n\
        INSERT INTO `nondeterministic_metrics` VALUES (4,3,0.5),(3,3,1.5),(5,3,.25);\n";

    /// The 1-based line of the first line of `text` that contains `needle`.
    fn line_of(text: &str, needle: &str) -> usize {
        1 + text.lines().position(|l| l.contains(needle)).unwrap()
    }

    #[test]
    fn small_dump() {
        let t = parse_dump_with_types(SMALL, "s.sql").unwrap();
        assert_eq!(t.table.columns, ["trial_id", "n", "ghz", "time"]);
        // Ordered by trial, then execution (3 before 5); the executions'
        // column order comes from their CREATE TABLE, the machine values'
        // from the INSERT's column list, the trials' from Eiger's schema.
        assert_eq!(
            t.table.rows,
            vec![
                vec![1.0, 100.0, 2.5, 0.5],
                vec![2.0, -2500.0, 2.5, 1.5],
                vec![2.0, -2500.0, 2.5, 0.25]
            ]
        );
        let line = line_of(SMALL, "INSERT INTO `executions`");
        assert_eq!(t.table.lines, [line, line, line]);
        assert_eq!(t.default_target(), Some("time"));
        assert_eq!(
            t.metric_types[0],
            ("n".to_owned(), MetricType::Deterministic)
        );
        assert_eq!(t.table.to_csv().lines().nth(1), Some("1,100.0,2.5,0.5"));
    }

    #[test]
    fn lexer_reads_mysql_quoting() {
        let st = statements(
            "INSERT INTO `a``b` VALUES ('x\\'y''z\\\\\\n', \"q\", -1.5e-3, NULL, 7);",
            "q.sql",
        )
        .unwrap();
        let toks: Vec<Tok> = st[0].tokens.iter().map(|t| t.tok.clone()).collect();
        assert_eq!(toks[2], Tok::Name("a`b".into()));
        assert_eq!(toks[5], Tok::Str("x'y'z\\\n".into()));
        assert_eq!(toks[7], Tok::Str("q".into()));
        assert_eq!(toks[9], Tok::Punct('-'));
        assert_eq!(toks[10], Tok::Num("1.5e-3".into()));
        // Comments and the statements they end are skipped; ';' inside a
        // string does not end a statement.
        let st = statements(
            "/*!40101 SET x=1 */;\n-- a; comment\nA 'b;c';\n#x;\nB;",
            "q.sql",
        )
        .unwrap();
        assert_eq!(st.len(), 2);
        assert_eq!((st[0].line, st[1].line), (3, 5));
    }

    #[test]
    fn truncated_text_is_an_error_at_its_start() {
        let e = statements("A;\nINSERT INTO `t` VALUES\n(1,2", "t.sql").unwrap_err();
        assert_eq!((e.line, e.source.as_str()), (Some(2), "t.sql"));
        assert!(e.message.contains("truncated"), "{e}");
        let e = statements("A;\n\nINSERT INTO t VALUES ('abc", "t.sql").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("string not closed"), "{e}");
        let e = statements("A;\n/* x", "t.sql").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("comment not closed"), "{e}");
        let e = statements("INSERT INTO `t", "t.sql").unwrap_err();
        assert!(e.message.contains("name not closed"), "{e}");
    }

    #[test]
    fn malformed_statements_name_the_line() {
        let cases = [
            (
                "INSERT INTO `metrics` VALUES (1,'result','x','d'\n(2);",
                2,
                "expected ','",
            ),
            (
                "INSERT INTO `metrics` VALUES (1,'result','x');",
                1,
                "3 values",
            ),
            (
                "INSERT INTO `metrics` VALUES (1,'result',x,'d');",
                1,
                "expected a value",
            ),
            ("INSERT INTO `metrics` SET ID=1;", 1, "expected VALUES"),
            (
                "INSERT INTO `metrics` VALUES (1,'result','x','d') 7;",
                1,
                "after a row",
            ),
            ("CREATE TABLE `metrics` (`ID` int;", 1, "closing ')'"),
        ];
        for (text, line, words) in cases {
            let e = parse_dump(text, "m.sql").unwrap_err();
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(e.message.contains(words), "{text}: {e}");
        }
    }

    #[test]
    fn inconsistent_data_is_refused() {
        let cases = [
            (
                SMALL.replace("(4,3,0.5)", "(9,3,0.5)"),
                "`nondeterministic_metrics`",
                "names execution 9",
            ),
            (
                SMALL.replace("(4,3,0.5)", "(4,8,0.5)"),
                "`nondeterministic_metrics`",
                "metric 8",
            ),
            (
                SMALL.replace("(1,4,1)", "(7,4,1)"),
                "`executions` VALUES",
                "names trial 7",
            ),
            (
                SMALL.replace("(3,3,1.5)", "(3,3,1.5),(3,3,1.75)"),
                "`nondeterministic_metrics`",
                "two values for metric \"time\"",
            ),
            (
                SMALL.replace("'machine','ghz'", "'mach','ghz'"),
                "INSERT INTO `metrics`",
                "unknown type \"mach\"",
            ),
            (
                SMALL.replace("(1,4,1)", "(1,5,1)"),
                "`executions` VALUES",
                "execution id 5 appears twice",
            ),
            (
                SMALL.replace("(20,1,-2.5e3)", "(20,1,'x')"),
                "`deterministic_metrics`",
                "not a finite number",
            ),
            (
                SMALL.replace("(2,1,1,1,20,0)", "(2,1,1,1,20)"),
                "INSERT INTO `trials`",
                "5 values",
            ),
        ];
        for (text, statement, words) in cases {
            let line = line_of(&text, statement);
            let e = parse_dump(&text, "m.sql").unwrap_err();
            assert_eq!(e.line, Some(line), "{words}: {e}");
            assert!(e.message.contains(words), "{words}: {e}");
        }
    }

    #[test]
    fn missing_values_name_the_trial() {
        // NULL is no value; trial 2's executions then lack "n".
        let text = SMALL.replace("(20,1,-2.5e3)", "(20,1,NULL)");
        let e = parse_dump(&text, "m.sql").unwrap_err();
        assert_eq!(e.line, Some(line_of(SMALL, "INSERT INTO `trials`")));
        assert_eq!(e.column.as_deref(), Some("n"));
        assert!(
            e.message.contains("trial 2 (execution 3) has no value"),
            "{e}"
        );
        // A metric without any value is no column.
        let text = SMALL.replace(
            "(2,'machine','ghz',NULL)",
            "(2,'machine','ghz',NULL),(4,'other','unused','')",
        );
        let t = parse_dump(&text, "m.sql").unwrap();
        assert_eq!(t.columns, ["trial_id", "n", "ghz", "time"]);
    }

    #[test]
    fn dumps_without_create_table_use_eiger_columns() {
        let text = "INSERT INTO `test`.`metrics` VALUES (1,'result','t','');\n\
            INSERT INTO trials VALUES (1,0,NULL,0,NULL,0);\n\
            INSERT INTO executions VALUES (1,NULL,1);\n\
            INSERT INTO `nondeterministic_metrics` VALUES (1,1,3);\n\
            INSERT INTO `other_table` VALUES (1,2,3,4);\n";
        let t = parse_dump(text, "m.sql").unwrap();
        assert_eq!(t.columns, ["trial_id", "t"]);
        assert_eq!(t.rows, vec![vec![1.0, 3.0]]);
        // An empty database is an empty table.
        let t = parse_dump("-- nothing\n", "m.sql").unwrap();
        assert_eq!((t.columns.len(), t.rows.len()), (1, 0));
    }
}
