//! `--labels-out DIR`: every execution's final label, one CSV file per AD
//! rank (`labels-<rank>.csv`), in the order the labels became final.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::consumer::{LabelConsumer, LabelledStep, LateLabel, RunContext, RunEnd};
use crate::detect::{Label, Verdict};
use crate::events::names::GlobalNames;
use crate::events::Execution;
use crate::util::csv::csv_field;

/// Writes `labels-<rank>.csv`: one line per labelled execution.
pub struct LabelWriter {
    out: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
}

/// The header line of the label CSVs.
pub const LABEL_HEADER: &str = "program,rank,thread,event_id,function,entry,exit,inclusive,exclusive,exit_step,labelled_step,label,score,severity,in_situ_label";

impl LabelWriter {
    /// Creates `<dir>/labels-<rank>.csv` with its header line.
    pub fn create(dir: &Path, rank: usize) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("labels-{rank}.csv"));
        let f =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
        writeln!(out, "{LABEL_HEADER}")?;
        Ok(LabelWriter { out, path })
    }

    /// One execution's line.
    pub fn write(
        &mut self,
        e: &Execution,
        exit_step: u64,
        labelled_step: u64,
        in_situ: Label,
        v: Verdict,
        names: &GlobalNames,
    ) -> anyhow::Result<()> {
        writeln!(
            self.out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{:?},{},{}",
            e.program,
            e.rank(),
            e.thread,
            e.id,
            csv_field(names.functions.name(e.function)),
            e.entry,
            e.exit,
            e.inclusive(),
            e.exclusive,
            exit_step,
            labelled_step,
            v.label.name(),
            v.score,
            e.exclusive,
            in_situ.name()
        )
        .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Flushes the file.
    pub fn finish(&mut self) -> anyhow::Result<()> {
        self.out
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))
    }
}

impl LabelConsumer for LabelWriter {
    fn late_labels(&mut self, labels: &[LateLabel], names: &GlobalNames) -> anyhow::Result<()> {
        for l in labels.iter().filter(|l| l.settled) {
            self.write(
                &l.execution,
                l.exit_step,
                l.labelled_step,
                l.in_situ,
                l.verdict,
                names,
            )?;
        }
        Ok(())
    }

    fn labelled_step(&mut self, s: &LabelledStep<'_>, names: &GlobalNames) -> anyhow::Result<()> {
        for ((e, v), _) in s
            .events
            .executions
            .iter()
            .zip(s.verdicts)
            .zip(s.settled)
            .filter(|(_, settled)| **settled)
        {
            self.write(e, s.step, s.step, v.label, *v, names)?;
        }
        Ok(())
    }

    fn finish(&mut self, _ctx: &RunContext<'_>, _end: &RunEnd) -> anyhow::Result<()> {
        LabelWriter::finish(self)
    }
}
