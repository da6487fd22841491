//! `chimbuko-mpi inspect` and `export` with plain options: the file's kind
//! (a TAU run's or a ROSS analysis's) decides what is shown or written.

use std::io::Write;
use std::path::PathBuf;

use super::export_json::export_json;
use super::{inspect_json, print_inspect, InspectOptions};
use crate::provenance::export_csv::export_csv;
use crate::provenance::read::{is_provenance_file, Provenance};
use crate::provenance::ross::{is_ross_file, RossProvenance};

/// `inspect`: what to show of which file.
#[derive(Debug, Clone)]
pub struct InspectCommand {
    /// Provenance file written by `run` or `ross`.
    pub file: PathBuf,
    /// One JSON document instead of text (TAU runs only).
    pub json: bool,
    /// Rows, worst anomalies and whether to show the settings.
    pub options: InspectOptions,
}

/// `export`: which file, where, in which formats.
#[derive(Debug, Clone)]
pub struct ExportCommand {
    /// Provenance file written by `run` or `ross`.
    pub file: PathBuf,
    /// Directory for the exported files (created if missing).
    pub out: PathBuf,
    /// JSON documents (Chimbuko's field names; a ROSS file's tables).
    pub json: bool,
    /// Every table as one CSV file.
    pub csv: bool,
}

/// Runs `inspect`, writing to `out`.
pub fn run_inspect(c: &InspectCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    if !is_provenance_file(&c.file)? {
        anyhow::bail!(
            "{} is not a provenance file of chimbuko-mpi (an HDF5 file without the schema_version attribute that `run` and `ross` write)",
            c.file.display()
        );
    }
    if is_ross_file(&c.file)? {
        if c.json {
            anyhow::bail!(
                "{}: the file of a ROSS analysis has no JSON summary; `export --json` writes its tables as JSON",
                c.file.display()
            );
        }
        let p = RossProvenance::load(&c.file)?;
        p.print_inspect(out, c.options.top, c.options.settings)?;
        return Ok(());
    }
    let p = Provenance::load(&c.file)?;
    if c.json {
        serde_json::to_writer_pretty(&mut *out, &inspect_json(&p, c.options))?;
        writeln!(out)?;
    } else {
        print_inspect(&p, out, c.options)?;
    }
    Ok(())
}

/// Runs `export`, naming each file written (and its documents or rows) on
/// `out`.
pub fn run_export(c: &ExportCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    if c.json {
        let written = if is_ross_file(&c.file)? {
            RossProvenance::load(&c.file)?.export_json(&c.out)?
        } else {
            export_json(&Provenance::load(&c.file)?, &c.out)?
        };
        for (name, n) in written {
            writeln!(out, "{}: {n} documents", c.out.join(name).display())?;
        }
    }
    if c.csv {
        for (name, n) in export_csv(&c.file, &c.out)? {
            writeln!(out, "{}: {n} rows", c.out.join(name).display())?;
        }
    }
    Ok(())
}
