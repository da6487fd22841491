//! `chimbuko-mpi inspect` and `export`: reading a provenance file back.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use chimbuko_mpi::inspect::export_json::export_json;
use chimbuko_mpi::inspect::{inspect_json, print_inspect, InspectOptions};
use chimbuko_mpi::provenance::export_csv::export_csv;
use chimbuko_mpi::provenance::read::{is_provenance_file, Provenance};
use chimbuko_mpi::provenance::ross::{is_ross_file, RossProvenance};

/// The flags of `inspect`.
#[derive(Args)]
pub struct InspectArgs {
    /// Provenance file written by `run` or `ross`.
    file: PathBuf,
    /// Rows of the per-function table.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Worst anomalies listed with their call stacks.
    #[arg(long, default_value_t = 5)]
    worst: usize,
    /// One JSON document on stdout instead of text (for scripts).
    #[arg(long)]
    json: bool,
    /// Also show the run's settings (every root attribute of the file,
    /// the configuration pretty-printed).
    #[arg(long)]
    settings: bool,
}

/// The flags of `export`.
#[derive(Args)]
#[command(group = clap::ArgGroup::new("format").required(true).multiple(true).args(["json", "csv"]))]
pub struct ExportArgs {
    /// Write JSON documents (anomalies, normalexecs, metadata, func_stats,
    /// counter_stats, ad_model) with the field names of Chimbuko's schema,
    /// and incidents; for the file of a ROSS analysis: anomalies,
    /// run_wide, entities, series_stats, metadata, incidents.
    #[arg(long)]
    json: bool,
    /// Write every table of the file as one CSV file named after its path
    /// (`anomalies/records` → `anomalies.records.csv`), strings as text.
    #[arg(long)]
    csv: bool,
    /// Provenance file written by `run` or `ross`.
    file: PathBuf,
    /// Directory for the exported files (created if missing).
    out: PathBuf,
}

/// Runs `inspect`.
pub fn run_inspect(a: InspectArgs) -> anyhow::Result<()> {
    if !is_provenance_file(&a.file)? {
        anyhow::bail!(
            "{} is not a provenance file of chimbuko-mpi (an HDF5 file without the schema_version attribute that `run` and `ross` write)",
            a.file.display()
        );
    }
    if is_ross_file(&a.file)? {
        if a.json {
            anyhow::bail!(
                "{}: the file of a ROSS analysis has no JSON summary; `export --json` writes its tables as JSON",
                a.file.display()
            );
        }
        let p = RossProvenance::load(&a.file)?;
        p.print_inspect(&mut std::io::stdout().lock(), a.top, a.settings)?;
        return Ok(());
    }
    let p = Provenance::load(&a.file)?;
    let o = InspectOptions {
        top: a.top,
        worst: a.worst,
        settings: a.settings,
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &inspect_json(&p, o))?;
        writeln!(out)?;
    } else {
        print_inspect(&p, &mut out, o)?;
    }
    Ok(())
}

/// Runs `export`.
pub fn run_export(a: ExportArgs) -> anyhow::Result<()> {
    if a.json {
        let written = if is_ross_file(&a.file)? {
            RossProvenance::load(&a.file)?.export_json(&a.out)?
        } else {
            export_json(&Provenance::load(&a.file)?, &a.out)?
        };
        for (name, n) in written {
            println!("{}: {n} documents", a.out.join(name).display());
        }
    }
    if a.csv {
        for (name, n) in export_csv(&a.file, &a.out)? {
            println!("{}: {n} rows", a.out.join(name).display());
        }
    }
    Ok(())
}
