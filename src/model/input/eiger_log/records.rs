//! A log as records: the split into lines (and of the serial form's records
//! glued onto an `Execution_commit` line) and `;`-separated fields, and
//! what the keywords of each form mean ([`Action`], on the [`Kind`] of
//! object they name). Kept apart from the parser so that the keyword
//! tables of the forms read side by side, and the parser reads actions,
//! not spellings.

/// The kinds of object that records name by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    DataCollection,
    Application,
    Dataset,
    Machine,
    Metric,
    Trial,
    Execution,
    Property,
}

impl Kind {
    pub(super) fn noun(self) -> &'static str {
        match self {
            Kind::DataCollection => "data collection",
            Kind::Application => "application",
            Kind::Dataset => "dataset",
            Kind::Machine => "machine",
            Kind::Metric => "metric",
            Kind::Trial => "trial",
            Kind::Execution => "execution",
            Kind::Property => "property",
        }
    }
}

/// What a record does, whatever its keyword in a given form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Version,
    Format,
    Connect,
    Disconnect,
    /// A constructor line: what it says is repeated by the commit, and an
    /// object constructed but never committed never reached the database.
    Constructor,
    Define(Kind),
    /// A value of a metric; the kind is what the value belongs to.
    Value(Kind),
}

/// The serial log's keywords.
pub(super) fn serial_action(keyword: &str) -> Option<Action> {
    use Action::*;
    Some(match keyword {
        "CONNECT" => Connect,
        "DataCollection"
        | "Application"
        | "Dataset"
        | "Machine"
        | "Metric"
        | "Trial"
        | "Execution"
        | "Properties"
        | "NondeterministicMetric"
        | "DeterministicMetric"
        | "MachineMetric" => Constructor,
        "DataCollection_commit" => Define(Kind::DataCollection),
        "Application_commit" => Define(Kind::Application),
        "Dataset_commit" => Define(Kind::Dataset),
        "Machine_commit" => Define(Kind::Machine),
        "Metric_commit" => Define(Kind::Metric),
        "Trial_commit" => Define(Kind::Trial),
        "Execution_commit" => Define(Kind::Execution),
        "Properties_commit" => Define(Kind::Property),
        "NondeterministicMetric_commit" => Value(Kind::Execution),
        "DeterministicMetric_commit" => Value(Kind::Dataset),
        "MachineMetric_commit" => Value(Kind::Machine),
        _ => return None,
    })
}

/// The one-letter keywords of the per-rank and 2016 forms: capitals are
/// commits, lower case constructors, except that the metric commit is `v`
/// and its constructor `V`.
pub(super) fn character_action(keyword: &str) -> Option<Action> {
    use Action::*;
    Some(match keyword {
        "VERSION" => Version,
        "FORMAT" => Format,
        "CONNECT" => Connect,
        "DISCONNECT" => Disconnect,
        "c" | "a" | "s" | "h" | "V" | "t" | "e" | "p" | "n" | "d" | "r" => Constructor,
        "C" => Define(Kind::DataCollection),
        "A" => Define(Kind::Application),
        "S" => Define(Kind::Dataset),
        "H" => Define(Kind::Machine),
        "v" => Define(Kind::Metric),
        "T" => Define(Kind::Trial),
        "E" => Define(Kind::Execution),
        "P" => Define(Kind::Property),
        "N" => Value(Kind::Execution),
        "D" => Value(Kind::Dataset),
        "R" => Value(Kind::Machine),
        _ => return None,
    })
}

/// One record: a keyword and its fields (the fields still carry the
/// writers' spaces, as in `1 ;`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Record<'a> {
    pub(super) line: usize,
    pub(super) keyword: &'a str,
    pub(super) fields: Vec<&'a str>,
}

/// The records of a log, with the glued lines of the serial form split.
pub(super) fn split_records(text: &str) -> Vec<Record<'_>> {
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        for piece in split_glued(line) {
            let mut fields = piece.split(';');
            let keyword = fields.next().unwrap_or("").trim();
            records.push(Record {
                line: i + 1,
                keyword,
                fields: fields.collect(),
            });
        }
    }
    records
}

const EXECUTION_COMMIT: &str = "Execution_commit;";

/// Splits a serial-log line at the records glued onto an
/// `Execution_commit`, which ends without a newline. Its fields are two
/// ids (`<trial> ;<machine>`), so the glued record starts right after the
/// digits of the second one; keywords never start with a digit.
pub(super) fn split_glued(line: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = line;
    while let Some(after) = rest.strip_prefix(EXECUTION_COMMIT) {
        let end = EXECUTION_COMMIT.len() + two_ids_len(after);
        if end == rest.len() {
            break;
        }
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    pieces.push(rest);
    pieces
}

/// The length of the `<int> ;<int>` at the start of `s`.
fn two_ids_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = skip_int(b, skip_spaces(b, 0));
    i = skip_spaces(b, i);
    if b.get(i) != Some(&b';') {
        return i;
    }
    skip_int(b, skip_spaces(b, i + 1))
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

fn skip_int(b: &[u8], mut i: usize) -> usize {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}
