//! Merging parsed logs into one table ([`merge_logs`]): metrics, machines
//! and datasets matched across files by name, and each row's values
//! gathered from its execution (or trial), its dataset and its machine.
//! Separate from parsing, which sees one file at a time.

use std::collections::HashMap;

use super::{error, intern, intern_key, DatasetKey, LogData, LogForm, Owner};
use crate::model::input::eiger_table::{assemble, EigerTable, MetricType, PendingRow};
use crate::model::table::TableError;

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
