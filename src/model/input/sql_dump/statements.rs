//! The statements that carry data, parsed from their tokens ([`Cursor`]):
//! `CREATE TABLE` for the order of a table's columns, and `INSERT` (or
//! `REPLACE`) for its rows of values. Separate from the lexer below it and
//! from what the rows mean to Eiger above it.

use super::error;
use super::lexer::{Statement, Tok, Token};
use crate::model::table::TableError;

/// A value of a row.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum SqlValue {
    Null,
    Number(f64),
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct SqlRow {
    pub(super) line: usize,
    pub(super) values: Vec<SqlValue>,
}

/// An `INSERT` statement.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Insert {
    pub(super) table: String,
    /// The column list, when the statement names the columns.
    pub(super) columns: Option<Vec<String>>,
    pub(super) rows: Vec<SqlRow>,
}

/// Walks the tokens of one statement.
pub(super) struct Cursor<'a> {
    tokens: &'a [Token],
    pos: usize,
    source: &'a str,
    /// The line to blame when the statement ends early.
    end_line: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(st: &'a Statement, source: &'a str) -> Cursor<'a> {
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
    pub(super) fn keyword(&mut self, kw: &str) -> bool {
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
    pub(super) fn create_table(&mut self) -> Result<(String, Vec<String>), TableError> {
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
    pub(super) fn insert(&mut self) -> Result<Insert, TableError> {
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
