//! The dump as tokens and statements: MySQL's quoting (`'...'` and
//! `"..."` strings with backslash escapes and doubled quotes, `` `...` ``
//! names), numbers, and the comments to skip, split into statements at
//! the `;` outside them. Kept apart from the statement parser, which sees
//! tokens, never characters.

use super::error;
use crate::model::table::TableError;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
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
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) line: usize,
}

/// A statement: its tokens, without the `;`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Statement {
    pub(super) line: usize,
    pub(super) tokens: Vec<Token>,
}

/// Splits the dump into statements at the `;` outside strings, names and
/// comments. A statement cut off by the end of the text (a truncated dump)
/// is an error at the line where it starts.
pub(super) fn statements(text: &str, source: &str) -> Result<Vec<Statement>, TableError> {
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
