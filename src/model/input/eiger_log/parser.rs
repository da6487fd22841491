//! Reading one log's records in order ([`Parser`]): checking each
//! record's fields against its form's layout, resolving local ids to the
//! objects they name, and filing the objects in a [`LogData`]. Separate
//! from the merge, which works on the parsed logs of several files.

use std::collections::HashMap;

use super::records::{character_action, serial_action, Action, Kind, Record};
use super::serial::SerialIds;
use super::{
    error, intern, intern_key, DatasetKey, ExecRec, LogData, LogForm, MetricDef, MetricType, Owner,
    TrialRec, ValueRec,
};
use crate::model::table::TableError;

/// Reads the records of one log in order, resolving ids as it goes.
pub(super) struct Parser<'s> {
    source: &'s str,
    pub(super) data: LogData,
    /// Local id to the newest object committed with it.
    ids: HashMap<(Kind, u64), usize>,
    serial: SerialIds,
}

impl<'s> Parser<'s> {
    pub(super) fn new(source: &'s str, form: LogForm) -> Parser<'s> {
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

    pub(super) fn record(&mut self, r: &Record<'_>) -> Result<(), TableError> {
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
