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

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

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

/// The kinds of object that records name by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
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
    fn noun(self) -> &'static str {
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
enum Action {
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
fn serial_action(keyword: &str) -> Option<Action> {
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
fn character_action(keyword: &str) -> Option<Action> {
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
struct Record<'a> {
    line: usize,
    keyword: &'a str,
    fields: Vec<&'a str>,
}

/// An error about a log.
fn error(source: &str, line: Option<usize>, message: impl Into<String>) -> TableError {
    TableError {
        source: source.to_owned(),
        line,
        column: None,
        message: message.into(),
    }
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

/// The records of a log, with the glued lines of the serial form split.
fn split_records(text: &str) -> Vec<Record<'_>> {
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
fn split_glued(line: &str) -> Vec<&str> {
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

/// Rebuilds the ids of the serial log, which writes none: its writer
/// numbered the objects of each kind 1, 2, ... by distinct commit text.
/// A log appended to by several runs restarts those maps at each run's
/// `CONNECT`, except that trials and executions go on from where the last
/// run stopped (the writer kept the next ids in `fakeeiger.offsets`).
#[derive(Debug, Default)]
struct SerialIds {
    maps: HashMap<Kind, HashMap<String, u64>>,
    offsets: HashMap<Kind, u64>,
}

impl SerialIds {
    fn new_run(&mut self) {
        for kind in [Kind::Trial, Kind::Execution] {
            let used = self.maps.get(&kind).map_or(0, |m| m.len() as u64);
            *self.offsets.entry(kind).or_default() += used;
        }
        self.maps.clear();
    }

    fn id(&mut self, kind: Kind, key: String) -> u64 {
        let offset = self.offsets.get(&kind).copied().unwrap_or(0);
        let map = self.maps.entry(kind).or_default();
        let next = offset + map.len() as u64 + 1;
        *map.entry(key).or_insert(next)
    }
}

/// Reads the records of one log in order, resolving ids as it goes.
struct Parser<'s> {
    source: &'s str,
    data: LogData,
    /// Local id to the newest object committed with it.
    ids: HashMap<(Kind, u64), usize>,
    serial: SerialIds,
}

impl<'s> Parser<'s> {
    fn new(source: &'s str, form: LogForm) -> Parser<'s> {
        Parser {
            source,
            data: LogData {
                source: source.to_owned(),
                form,
                metrics: Vec::new(),
                machines: Vec::new(),
                applications: Vec::new(),
                data_collections: Vec::new(),
                datasets: Vec::new(),
                properties: 0,
                trials: Vec::new(),
                executions: Vec::new(),
                values: Vec::new(),
            },
            ids: HashMap::new(),
            serial: SerialIds::default(),
        }
    }

    fn err(&self, r: &Record<'_>, message: impl Into<String>) -> TableError {
        error(self.source, Some(r.line), message)
    }

    fn record(&mut self, r: &Record<'_>) -> Result<(), TableError> {
        let form = self.data.form;
        let action = match form {
            LogForm::Serial => serial_action(r.keyword),
            LogForm::PerRank | LogForm::SingleFile => character_action(r.keyword),
        };
        let Some(action) = action else {
            return Err(self.err(r, format!("unknown record {:?}", r.keyword)));
        };
        match action {
            Action::Version => self.version(r),
            Action::Format => self.format(r),
            Action::Connect => {
                if form == LogForm::Serial {
                    self.serial.new_run();
                }
                Ok(())
            }
            Action::Disconnect | Action::Constructor => Ok(()),
            Action::Define(kind) => self.define(r, kind),
            Action::Value(owner) => {
                // The 2016 library has no executions: its `N` values
                // belong to trials.
                let owner = if form == LogForm::SingleFile && owner == Kind::Execution {
                    Kind::Trial
                } else {
                    owner
                };
                self.value(r, owner)
            }
        }
    }

    fn version(&self, r: &Record<'_>) -> Result<(), TableError> {
        self.expect_fields(r, &["version"])?;
        match r.fields[0].trim() {
            "2" => Ok(()),
            v => Err(self.err(
                r,
                format!("log format version {v:?}; only version 2 is known"),
            )),
        }
    }

    fn format(&self, r: &Record<'_>) -> Result<(), TableError> {
        self.expect_fields(r, &["format"])?;
        match r.fields[0].trim() {
            "character" => Ok(()),
            f => Err(self.err(
                r,
                format!("keyword format {f:?}; only \"character\" (one-letter keywords) is known"),
            )),
        }
    }

    /// The fields each form writes for a committed object, in order; the
    /// per-rank and 2016 forms end with the local id, the serial one has
    /// none.
    fn layout(&self, kind: Kind) -> &'static [&'static str] {
        let form = self.data.form;
        match (kind, form) {
            (Kind::DataCollection | Kind::Application | Kind::Machine, LogForm::Serial) => {
                &["name", "description"]
            }
            (Kind::DataCollection | Kind::Application | Kind::Machine, _) => {
                &["name", "description", "id"]
            }
            (Kind::Dataset, LogForm::Serial) => &["application id", "name", "description", "url"],
            (Kind::Dataset, _) => &["application id", "name", "description", "url", "id"],
            (Kind::Metric, LogForm::Serial) => &["type", "name", "description"],
            (Kind::Metric, _) => &["type", "name", "description", "id"],
            (Kind::Trial, LogForm::Serial) => &[
                "data collection id",
                "machine id",
                "application id",
                "dataset id",
                "properties id",
            ],
            (Kind::Trial, LogForm::PerRank) => &[
                "data collection id",
                "machine id",
                "application id",
                "dataset id",
                "properties id",
                "id",
            ],
            (Kind::Trial, LogForm::SingleFile) => &[
                "data collection id",
                "machine id",
                "application id",
                "dataset id",
                "id",
            ],
            (Kind::Execution, LogForm::Serial) => &["trial id", "machine id"],
            (Kind::Execution, _) => &["trial id", "machine id", "id"],
            (Kind::Property, LogForm::Serial) => &["name", "trial id", "properties id"],
            (Kind::Property, _) => &["name", "trial id", "properties id", "id"],
        }
    }

    fn expect_fields(&self, r: &Record<'_>, layout: &[&str]) -> Result<(), TableError> {
        if r.fields.len() == layout.len() {
            return Ok(());
        }
        Err(self.err(
            r,
            format!(
                "{} record with {} fields; expected {} ({})",
                r.keyword,
                r.fields.len(),
                layout.len(),
                layout.join(";")
            ),
        ))
    }

    /// A committed object: checks its fields, finds the local id it is
    /// known by, and files it.
    fn define(&mut self, r: &Record<'_>, kind: Kind) -> Result<(), TableError> {
        if kind == Kind::Execution && self.data.form == LogForm::SingleFile {
            return Err(self.err(
                r,
                "execution record in a 2016 single-file log, which has no executions",
            ));
        }
        let layout = self.layout(kind);
        self.expect_fields(r, layout)?;
        let local = if self.data.form == LogForm::Serial {
            self.serial.id(kind, r.fields.join(";"))
        } else {
            let id = self.id_field(r, layout.len() - 1)?;
            if id == 0 {
                return Err(self.err(
                    r,
                    format!("a {} committed with id 0, the null id", kind.noun()),
                ));
            }
            id
        };
        let index = match kind {
            Kind::DataCollection => intern(&mut self.data.data_collections, r.fields[0]),
            Kind::Application => intern(&mut self.data.applications, r.fields[0]),
            Kind::Machine => intern(&mut self.data.machines, r.fields[0]),
            Kind::Dataset => self.dataset(r)?,
            Kind::Metric => self.metric(r)?,
            Kind::Trial => self.trial(r)?,
            Kind::Execution => self.execution(r)?,
            Kind::Property => self.property(r)?,
        };
        self.ids.insert((kind, local), index);
        Ok(())
    }

    fn dataset(&mut self, r: &Record<'_>) -> Result<usize, TableError> {
        let application = self
            .optional(r, 0, Kind::Application)?
            .map(|a| self.data.applications[a].clone());
        let key = DatasetKey {
            application,
            name: r.fields[1].to_owned(),
        };
        Ok(intern_key(&mut self.data.datasets, &key))
    }

    fn metric(&mut self, r: &Record<'_>) -> Result<usize, TableError> {
        let kind = MetricType::from_name(r.fields[0].trim()).ok_or_else(|| {
            self.err(
                r,
                format!(
                    "unknown metric type {:?} (Eiger's types: result, deterministic, \
                     nondeterministic, machine, other)",
                    r.fields[0]
                ),
            )
        })?;
        let name = r.fields[1];
        if name.trim().is_empty() {
            return Err(self.err(r, "metric with an empty name"));
        }
        if let Some(i) = self.data.metrics.iter().position(|m| m.name == name) {
            let earlier = &self.data.metrics[i];
            if earlier.kind != kind {
                return Err(self.err(
                    r,
                    format!(
                        "metric {name:?} is {kind} here but was {} at line {}",
                        earlier.kind, earlier.line
                    ),
                ));
            }
            return Ok(i);
        }
        self.data.metrics.push(MetricDef {
            name: name.to_owned(),
            kind,
            line: r.line,
        });
        Ok(self.data.metrics.len() - 1)
    }

    /// A trial is a new trial each time it is committed, even with the same
    /// fields: Eiger's loader inserts a row per commit.
    fn trial(&mut self, r: &Record<'_>) -> Result<usize, TableError> {
        self.optional(r, 0, Kind::DataCollection)?;
        let machine = self.optional(r, 1, Kind::Machine)?;
        self.optional(r, 2, Kind::Application)?;
        let dataset = self.optional(r, 3, Kind::Dataset)?;
        // The properties id (per-rank and serial forms) is not checked:
        // properties name their trial, so they are committed after it.
        if self.data.form != LogForm::SingleFile {
            self.id_field(r, 4)?;
        }
        self.data.trials.push(TrialRec {
            machine,
            dataset,
            line: r.line,
        });
        Ok(self.data.trials.len() - 1)
    }

    fn execution(&mut self, r: &Record<'_>) -> Result<usize, TableError> {
        let trial = self.required(r, 0, Kind::Trial)?;
        self.optional(r, 1, Kind::Machine)?;
        self.data.executions.push(ExecRec {
            trial,
            line: r.line,
        });
        Ok(self.data.executions.len() - 1)
    }

    /// Properties do not enter the table; their trial must exist.
    fn property(&mut self, r: &Record<'_>) -> Result<usize, TableError> {
        self.required(r, 1, Kind::Trial)?;
        self.id_field(r, 2)?;
        self.data.properties += 1;
        Ok(self.data.properties - 1)
    }

    /// A metric value: `<owner id> ;<metric id> ;<value>`.
    fn value(&mut self, r: &Record<'_>, owner: Kind) -> Result<(), TableError> {
        self.expect_fields(r, &[&format!("{} id", owner.noun()), "metric id", "value"])?;
        let index = self.required(r, 0, owner)?;
        let metric = self.required(r, 1, Kind::Metric)?;
        let value = self.number_field(r, 2)?;
        let owner = match owner {
            Kind::Execution => Owner::Execution(index),
            Kind::Trial => Owner::Trial(index),
            Kind::Dataset => Owner::Dataset(index),
            _ => Owner::Machine(index),
        };
        self.data.values.push(ValueRec {
            owner,
            metric,
            value,
            line: r.line,
        });
        Ok(())
    }

    /// Field `i` as an id (the writers put a space before the `;`).
    fn id_field(&self, r: &Record<'_>, i: usize) -> Result<u64, TableError> {
        let text = r.fields.get(i).map_or("", |f| f.trim());
        text.parse::<u64>().map_err(|_| {
            self.err(
                r,
                format!("field {} of {}: {text:?} is not an id", i + 1, r.keyword),
            )
        })
    }

    /// Field `i` as a finite number.
    fn number_field(&self, r: &Record<'_>, i: usize) -> Result<f64, TableError> {
        let text = r.fields.get(i).map_or("", |f| f.trim());
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            Ok(_) => Err(self.err(
                r,
                format!(
                    "value {text:?} is not a finite number (NaN and infinities cannot be modelled)"
                ),
            )),
            Err(_) => Err(self.err(r, format!("value {text:?} is not a number"))),
        }
    }

    /// Field `i` as a reference to an object of `kind`; 0 is the null id.
    fn optional(&self, r: &Record<'_>, i: usize, kind: Kind) -> Result<Option<usize>, TableError> {
        let id = self.id_field(r, i)?;
        if id == 0 {
            return Ok(None);
        }
        match self.ids.get(&(kind, id)) {
            Some(&index) => Ok(Some(index)),
            None => Err(self.err(
                r,
                format!(
                    "unknown {noun} id {id}: no {noun} was committed with it before this line",
                    noun = kind.noun()
                ),
            )),
        }
    }

    /// Like [`Parser::optional`], where the null id is not allowed.
    fn required(&self, r: &Record<'_>, i: usize, kind: Kind) -> Result<usize, TableError> {
        self.optional(r, i, kind)?.ok_or_else(|| {
            self.err(
                r,
                format!(
                    "{} id 0 (the null id) where a {} is needed",
                    kind.noun(),
                    kind.noun()
                ),
            )
        })
    }
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

/// Merges parsed logs into one table; objects are matched across logs by
/// name, trials and executions are all distinct.
pub fn merge_logs(logs: &[LogData]) -> Result<EigerTable, TableError> {
    let mut merge = Merge::default();
    for log in logs {
        merge.add(log)?;
    }
    let source = logs
        .iter()
        .map(|l| l.source.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let rows = merge.finish();
    assemble(&merge.metrics, rows, &source)
}

/// A value with where it was recorded, to report a contradicting one.
#[derive(Debug, Clone)]
struct Fact {
    value: f64,
    source: String,
    line: usize,
}

/// Values by metric (global index).
type Facts = HashMap<usize, Fact>;

/// A row whose dataset and machine values may still come from later logs.
struct Draft {
    trial_id: usize,
    machine: Option<usize>,
    dataset: Option<usize>,
    own: Facts,
    source: String,
    line: usize,
    trial_line: usize,
}

/// The state of a merge: global objects, their values, and the rows.
#[derive(Default)]
struct Merge {
    metrics: Vec<(String, MetricType)>,
    metric_origin: Vec<(String, usize)>,
    machines: Vec<String>,
    datasets: Vec<DatasetKey>,
    dataset_values: HashMap<usize, Facts>,
    machine_values: HashMap<usize, Facts>,
    trials: usize,
    drafts: Vec<Draft>,
}

impl Merge {
    fn add(&mut self, log: &LogData) -> Result<(), TableError> {
        let metrics = self.merge_metrics(log)?;
        let machines: Vec<usize> = log
            .machines
            .iter()
            .map(|m| intern(&mut self.machines, m))
            .collect();
        let datasets: Vec<usize> = log
            .datasets
            .iter()
            .map(|d| intern_key(&mut self.datasets, d))
            .collect();

        // The rows of this log: one per execution, or per trial in the
        // 2016 form, each with its trial.
        let (row_trials, row_lines, owner_noun): (Vec<usize>, Vec<usize>, &str) = match log.form {
            LogForm::SingleFile => (
                (0..log.trials.len()).collect(),
                log.trials.iter().map(|t| t.line).collect(),
                "this trial",
            ),
            LogForm::Serial | LogForm::PerRank => (
                log.executions.iter().map(|e| e.trial).collect(),
                log.executions.iter().map(|e| e.line).collect(),
                "this execution",
            ),
        };
        let mut own: Vec<Facts> = vec![Facts::new(); row_trials.len()];
        for v in &log.values {
            let metric = metrics[v.metric];
            let fact = Fact {
                value: v.value,
                source: log.source.clone(),
                line: v.line,
            };
            let (slot, what) = match v.owner {
                Owner::Execution(i) | Owner::Trial(i) => (&mut own[i], owner_noun),
                Owner::Dataset(d) => (
                    self.dataset_values.entry(datasets[d]).or_default(),
                    "this dataset",
                ),
                Owner::Machine(m) => (
                    self.machine_values.entry(machines[m]).or_default(),
                    "this machine",
                ),
            };
            put(slot, metric, fact, &self.metrics[metric].0, what)?;
        }

        for ((trial, line), own) in row_trials.into_iter().zip(row_lines).zip(own) {
            let t = &log.trials[trial];
            self.drafts.push(Draft {
                trial_id: self.trials + trial + 1,
                machine: t.machine.map(|m| machines[m]),
                dataset: t.dataset.map(|d| datasets[d]),
                own,
                source: log.source.clone(),
                line,
                trial_line: t.line,
            });
        }
        self.trials += log.trials.len();
        Ok(())
    }

    /// Maps the log's metrics to global ones by name.
    fn merge_metrics(&mut self, log: &LogData) -> Result<Vec<usize>, TableError> {
        let mut map = Vec::with_capacity(log.metrics.len());
        for m in &log.metrics {
            match self.metrics.iter().position(|(name, _)| *name == m.name) {
                Some(i) => {
                    let (_, kind) = self.metrics[i];
                    if kind != m.kind {
                        let (src, line) = &self.metric_origin[i];
                        return Err(error(
                            &log.source,
                            Some(m.line),
                            format!(
                                "metric {:?} is {} here but {kind} in {src}, line {line}",
                                m.name, m.kind
                            ),
                        ));
                    }
                    map.push(i);
                }
                None => {
                    self.metrics.push((m.name.clone(), m.kind));
                    self.metric_origin.push((log.source.clone(), m.line));
                    map.push(self.metrics.len() - 1);
                }
            }
        }
        Ok(map)
    }

    /// The rows with all their values: the machine's, overridden by the
    /// dataset's, overridden by the row's own (what was measured for the
    /// execution itself is the most specific).
    fn finish(&mut self) -> Vec<PendingRow> {
        let empty = Facts::new();
        let mut rows = Vec::with_capacity(self.drafts.len());
        for d in self.drafts.drain(..) {
            let machine = d.machine.and_then(|m| self.machine_values.get(&m));
            let dataset = d.dataset.and_then(|s| self.dataset_values.get(&s));
            let mut values = HashMap::new();
            for facts in [machine.unwrap_or(&empty), dataset.unwrap_or(&empty), &d.own] {
                values.extend(facts.iter().map(|(m, f)| (*m, f.value)));
            }
            rows.push(PendingRow {
                trial_id: d.trial_id as f64,
                values,
                source: d.source,
                line: d.line,
                trial_name: format!("trial {}", d.trial_id),
                trial_line: d.trial_line,
            });
        }
        rows
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

/// Records `fact` for `metric`, refusing a different value for the same
/// metric of the same object.
fn put(
    facts: &mut Facts,
    metric: usize,
    fact: Fact,
    name: &str,
    what: &str,
) -> Result<(), TableError> {
    if let Some(old) = facts.get(&metric) {
        if old.value.to_bits() != fact.value.to_bits() {
            return Err(error(
                &fact.source,
                Some(fact.line),
                format!(
                    "metric {name:?} of {what} is {} here but was {} at {}, line {}",
                    fact.value, old.value, old.source, old.line
                ),
            ));
        }
        return Ok(());
    }
    facts.insert(metric, fact);
    Ok(())
}

/// A row before the table's columns are known.
#[derive(Debug, Clone)]
pub(crate) struct PendingRow {
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
pub(crate) fn assemble(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<EigerTable, TableError> {
        merge_logs(&[parse_log(text, "t.log")?])
    }

    const SERIAL_HEAD: &str = "CONNECT;localhost;test;user;pw\n\
        DataCollection;example;test dc\n\
        DataCollection_commit;example;test dc\n\
        Machine;test;test machine\n\
        Machine_commit;test;test machine\n\
        Application;test;test application\n\
        Application_commit;test;test application\n\
        Dataset;1;test;test dataset;test dataset url\n\
        Dataset_commit;1;test;test dataset;test dataset url\n\
        Metric;2 ;size;matrix size\n\
        Metric_commit;nondeterministic;size;matrix size\n\
        Metric;0 ;runtime;runtime of this matmul\n\
        Metric_commit;result;runtime;runtime of this matmul\n";

    /// The serial writer's record of one trial (all trials share ids 1).
    fn serial_trial(size: &str, runtime: &str) -> String {
        format!(
            "Trial;1 ;1 ;1 ;1 ;0\nTrial_commit;1 ;1 ;1 ;1 ;0\nExecution;1 ;1\n\
             Execution_commit;1 ;1NondeterministicMetric;1 ;1 ;{size}\n\
             NondeterministicMetric_commit;1 ;1 ;{size}\n\
             NondeterministicMetric;1 ;2 ;{runtime}\n\
             NondeterministicMetric_commit;1 ;2 ;{runtime}\n"
        )
    }

    #[test]
    fn serial_log_with_glued_lines_and_repeated_ids() {
        let text = format!(
            "{SERIAL_HEAD}{}{}",
            serial_trial("10", "1.35740001496742479e-05"),
            serial_trial("20", "8.63530003698542714e-05")
        );
        let log = parse_log(&text, "t.log").unwrap();
        assert_eq!(log.form, LogForm::Serial);
        assert_eq!(log.trial_count(), 2);
        assert_eq!(log.execution_count(), 2);
        let t = merge_logs(&[log]).unwrap();
        assert_eq!(t.table.columns, ["trial_id", "size", "runtime"]);
        assert_eq!(
            t.table.rows,
            vec![
                vec![1.0, 10.0, 1.3574000149674248e-05],
                vec![2.0, 20.0, 8.635300036985427e-05]
            ]
        );
        // The rows' lines are those of the glued execution commits.
        assert_eq!(t.table.lines, [17, 24]);
        assert_eq!(
            t.metric_types,
            [
                ("size".to_owned(), MetricType::Nondeterministic),
                ("runtime".to_owned(), MetricType::Result)
            ]
        );
        assert_eq!(t.default_target(), Some("runtime"));
    }

    #[test]
    fn glued_lines_split_after_the_second_id() {
        assert_eq!(
            split_glued("Execution_commit;12 ;3NondeterministicMetric;1 ;1 ;10"),
            ["Execution_commit;12 ;3", "NondeterministicMetric;1 ;1 ;10"]
        );
        // Two executions committed in a row, then the end of the file.
        assert_eq!(
            split_glued("Execution_commit;1 ;1Execution_commit;2 ;1"),
            ["Execution_commit;1 ;1", "Execution_commit;2 ;1"]
        );
        assert_eq!(
            split_glued("Execution_commit;1 ;1"),
            ["Execution_commit;1 ;1"]
        );
        assert_eq!(split_glued("Trial_commit;1 ;1"), ["Trial_commit;1 ;1"]);
        let records = split_records("Execution_commit;1 ;1Trial;1\r\n\nCONNECT;x\n");
        let keywords: Vec<_> = records.iter().map(|r| (r.line, r.keyword)).collect();
        assert_eq!(
            keywords,
            [(1, "Execution_commit"), (1, "Trial"), (3, "CONNECT")]
        );
    }

    #[test]
    fn serial_ids_follow_the_writer_maps() {
        // Distinct trial keys get distinct ids; an execution refers to the
        // trial by that id, and a value to the execution by its id.
        let text = "Machine_commit;m1;a\nMachine_commit;m2;b\n\
            Metric_commit;nondeterministic;x;d\nMetric_commit;result;y;d\n\
            MachineMetric_commit;2 ;1 ;7\n\
            Trial_commit;0 ;1 ;0 ;0 ;0\nTrial_commit;0 ;2 ;0 ;0 ;0\n\
            Execution_commit;2 ;2Execution_commit;1 ;1\n\
            NondeterministicMetric_commit;1 ;2 ;5\n\
            NondeterministicMetric_commit;2 ;2 ;6\n\
            NondeterministicMetric_commit;1 ;1 ;0.25\n\
            MachineMetric_commit;1 ;1 ;9\n";
        let t = load(text).unwrap();
        assert_eq!(t.table.columns, ["trial_id", "x", "y"]);
        // Execution 1 belongs to trial 2 (machine m2), execution 2 to
        // trial 1 (machine m1); rows come in trial order. Execution 2 has
        // no x of its own and takes m1's; execution 1's own x overrides
        // m2's.
        assert_eq!(
            t.table.rows,
            vec![vec![1.0, 9.0, 6.0], vec![2.0, 0.25, 5.0]]
        );
    }

    #[test]
    fn serial_runs_appended_continue_trial_ids() {
        // The second run restarts the metric map (its metric 1 is "b") but
        // numbers trials and executions after the first run's, so its
        // execution 1 is still the first run's.
        let text = "CONNECT;h;d;u;p\nMetric_commit;result;a;d\n\
            Trial_commit;0 ;0 ;0 ;0 ;0\nExecution_commit;1 ;0\n\
            NondeterministicMetric_commit;1 ;1 ;1\n\
            CONNECT;h;d;u;p\nMetric_commit;result;b;d\nMetric_commit;result;a;d\n\
            Trial_commit;0 ;0 ;0 ;0 ;0\nExecution_commit;2 ;0\n\
            NondeterministicMetric_commit;2 ;1 ;2\nNondeterministicMetric_commit;2 ;2 ;3\n\
            NondeterministicMetric_commit;1 ;1 ;4\n";
        let t = load(text).unwrap();
        assert_eq!(t.table.columns, ["trial_id", "a", "b"]);
        assert_eq!(t.table.rows, vec![vec![1.0, 1.0, 4.0], vec![2.0, 3.0, 2.0]]);
        assert_eq!(t.table.lines, [4, 10]);
    }

    const RANK_HEAD: &str = "VERSION;2\nFORMAT;character\nCONNECT;localhost;test;user;pw\n\
        C;example;test dc;1\nH;test;test machine;1\nA;test;test application;1\n\
        S;1;test;test dataset;test dataset url;1\n\
        v;nondeterministic;size;matrix size;1\nv;result;runtime;runtime of this matmul;2\n";

    #[test]
    fn per_rank_logs_merge_by_name_with_local_ids() {
        let rank0 = format!(
            "{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;10\nN;1 ;2 ;0.5\n\
             T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;20\nN;1 ;2 ;0.75\nVERSION;2\n"
        );
        // Rank 1 declares the metrics in the other order, so its local ids
        // differ; names match them up.
        let rank1 = "VERSION;2\nFORMAT;character\nCONNECT;localhost;test;user;pw\n\
            v;result;runtime;runtime of this matmul;1\nv;nondeterministic;size;matrix size;2\n\
            H;test;test machine;4\nT;0 ;4 ;0 ;0 ;0;9\nE;9 ;4;3\nN;3 ;2 ;30\nN;3 ;1 ;1.5\n\
            VERSION;2\n";
        let logs = [
            parse_log(&rank0, "r0.log").unwrap(),
            parse_log(rank1, "r1.log").unwrap(),
        ];
        assert_eq!(logs[0].form, LogForm::PerRank);
        let t = merge_logs(&logs).unwrap();
        assert_eq!(t.table.columns, ["trial_id", "size", "runtime"]);
        assert_eq!(
            t.table.rows,
            vec![
                vec![1.0, 10.0, 0.5],
                vec![2.0, 20.0, 0.75],
                vec![3.0, 30.0, 1.5]
            ]
        );
        assert_eq!(t.table.source, "r0.log, r1.log");
        assert_eq!(t.row_origins[2], ("r1.log".to_owned(), 8));
    }

    #[test]
    fn dataset_and_machine_values_fill_rows() {
        let text = "VERSION;2\nFORMAT;character\nCONNECT;h;d;u;p\n\
            A;app;x;1\nS;1;small;x;u;1\nS;1;large;x;u;2\nH;m;x;1\n\
            v;deterministic;n;x;1\nv;machine;ghz;x;2\nv;result;t;x;3\n\
            D;1 ;1 ;100\nD;2 ;1 ;1000\nR;1 ;2 ;2.5\n\
            T;0 ;1 ;1 ;2 ;0;1\nE;1 ;1;1\nN;1 ;3 ;9\n\
            T;0 ;1 ;1 ;1 ;0;2\nE;2 ;1;2\nN;2 ;3 ;1\nE;2 ;1;3\nN;3 ;3 ;1.25\n";
        let t = load(text).unwrap();
        assert_eq!(t.table.columns, ["trial_id", "n", "ghz", "t"]);
        assert_eq!(
            t.table.rows,
            vec![
                vec![1.0, 1000.0, 2.5, 9.0],
                vec![2.0, 100.0, 2.5, 1.0],
                vec![2.0, 100.0, 2.5, 1.25]
            ]
        );
        assert_eq!(t.default_target(), Some("t"));
    }

    #[test]
    fn single_file_form_values_belong_to_trials() {
        let text = "VERSION;2\nFORMAT;character\nCONNECT;eiger.db\n\
            C;dc;x;1\nA;app;x;1\nS;1;ds;x;u;1\nH;m;x;1\n\
            T;1;1;1;1;1\nT;1;1;1;1;2\n\
            v;nondeterministic;size;x;1\nv;nondeterministic;runtime;x;2\n\
            N;2;1;20\nN;2;2;0.2\nN;1;1;10\nN;1;2;0.1\nDISCONNECT\n";
        let log = parse_log(text, "t.log").unwrap();
        assert_eq!(log.form, LogForm::SingleFile);
        let t = merge_logs(&[log]).unwrap();
        assert_eq!(
            t.table.rows,
            vec![vec![1.0, 10.0, 0.1], vec![2.0, 20.0, 0.2]]
        );
        assert_eq!(t.table.lines, [8, 9]);
        assert_eq!(t.default_target(), None);
        // Executions are not part of this form.
        let bad = text.replace("DISCONNECT", "E;1;1;1\nDISCONNECT");
        let e = load(&bad).unwrap_err();
        assert_eq!(e.line, Some(16));
        assert!(e.message.contains("no executions"), "{e}");
    }

    #[test]
    fn unknown_and_null_ids_are_refused() {
        let cases = [
            ("E;2 ;1;1\n", "unknown trial id 2"),
            ("E;1 ;1;1\nN;5 ;1 ;3\n", "unknown execution id 5"),
            ("E;1 ;1;1\nN;1 ;7 ;3\n", "unknown metric id 7"),
            ("E;0 ;1;1\n", "trial id 0 (the null id)"),
            ("T;1 ;3 ;1 ;1 ;0;2\n", "unknown machine id 3"),
            ("D;4 ;1 ;3\n", "unknown dataset id 4"),
            ("H;m;x;0\n", "id 0, the null id"),
        ];
        for (tail, message) in cases {
            let text = format!("{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\n{tail}");
            let e = load(&text).unwrap_err();
            assert!(e.message.contains(message), "{tail:?}: {e}");
            assert_eq!(e.source, "t.log");
            assert_eq!(e.line, Some(10 + tail.lines().count()), "{tail:?}: {e}");
        }
    }

    #[test]
    fn malformed_records_are_refused() {
        let cases = [
            ("N;1 ;1 ;fast\n", "\"fast\" is not a number"),
            ("N;1 ;1 ;nan\n", "not a finite number"),
            ("N;1 ;1\n", "N record with 2 fields; expected 3"),
            ("E;x ;1;1\n", "\"x\" is not an id"),
            ("E;-1 ;1;1\n", "\"-1\" is not an id"),
            ("Q;1\n", "unknown record \"Q\""),
            ("v;fast;speed;x;3\n", "unknown metric type \"fast\""),
            (
                "v;result;size;x;3\n",
                "\"size\" is result here but was nondeterministic at line 8",
            ),
            ("FORMAT;full\n", "only \"character\""),
            ("VERSION;3\n", "only version 2"),
        ];
        for (tail, message) in cases {
            let text = format!("{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\n{tail}");
            let e = load(&text).unwrap_err();
            assert!(e.message.contains(message), "{tail:?}: {e}");
            assert_eq!(e.line, Some(12), "{tail:?}: {e}");
        }
        let e = load("").unwrap_err();
        assert!(e.message.contains("empty log"), "{e}");
        // A serial log has no one-letter records.
        let e = load("CONNECT;a;b;c;d\nT;1\n").unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (Some(2), "unknown record \"T\"")
        );
        let e = load("Metric_commit;result;a;b;c\n").unwrap_err();
        assert!(
            e.message.contains("expected 3 (type;name;description)"),
            "{e}"
        );
    }

    #[test]
    fn incomplete_rows_name_the_trial() {
        let text = format!(
            "{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;10\nN;1 ;2 ;1\n\
             T;1 ;1 ;1 ;1 ;0;2\nE;2 ;1;2\nN;2 ;1 ;20\n"
        );
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(14));
        assert_eq!(e.column.as_deref(), Some("runtime"));
        assert!(
            e.message
                .contains("trial 2 has no value for metric \"runtime\""),
            "{e}"
        );
    }

    #[test]
    fn contradicting_values_are_refused() {
        let text = format!("{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;10\nN;1 ;1 ;11\n");
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(13));
        assert!(e.message.contains("is 11 here but was 10"), "{e}");
        // The same value twice is only a repetition.
        let text =
            format!("{RANK_HEAD}T;1 ;1 ;1 ;1 ;0;1\nE;1 ;1;1\nN;1 ;1 ;10\nN;1 ;1 ;10\nN;1 ;2 ;1\n");
        assert_eq!(load(&text).unwrap().table.rows, vec![vec![1.0, 10.0, 1.0]]);
    }

    #[test]
    fn metric_types_must_agree_across_logs() {
        let a = parse_log("Metric_commit;result;t;x\n", "a.log").unwrap();
        let b = parse_log("Metric_commit;other;t;x\n", "b.log").unwrap();
        let e = merge_logs(&[a, b]).unwrap_err();
        assert_eq!((e.source.as_str(), e.line), ("b.log", Some(1)));
        assert!(
            e.message.contains("other here but result in a.log, line 1"),
            "{e}"
        );
    }

    #[test]
    fn metric_names_cannot_clash_with_trial_id() {
        let e = load(
            "Metric_commit;result;trial_id;x\nTrial_commit;0 ;0 ;0 ;0 ;0\n\
             Execution_commit;1 ;0NondeterministicMetric_commit;1 ;1 ;3\n",
        )
        .unwrap_err();
        assert_eq!(e.column.as_deref(), Some("trial_id"));
    }

    #[test]
    fn metric_types_by_name() {
        for t in [
            MetricType::Result,
            MetricType::Deterministic,
            MetricType::Nondeterministic,
            MetricType::Machine,
            MetricType::Other,
        ] {
            assert_eq!(MetricType::from_name(t.name()), Some(t));
        }
        assert_eq!(MetricType::from_name("Result"), None);
        let types = [
            ("a".to_owned(), MetricType::Other),
            ("b".to_owned(), MetricType::Result),
        ];
        assert_eq!(default_target(&types), Some("b"));
    }
}
