//! `chimbuko-mpi inspect` and `export`: reading a provenance file back.

use std::path::PathBuf;

use clap::Args;

use chimbuko_mpi::output::read::{export_json, print_inspect, Provenance};
use chimbuko_mpi::output::ross::{is_ross_file, RossProvenance};

/// The flags of `inspect`.
#[derive(Args)]
pub struct InspectArgs {
    /// Provenance file written by `run` or `ross`.
    file: PathBuf,
    /// Rows of the per-function table.
    #[arg(long, default_value_t = 10)]
    top: usize,
}

/// The flags of `export`.
#[derive(Args)]
pub struct ExportArgs {
    /// Write JSON documents (anomalies, normalexecs, metadata, func_stats,
    /// counter_stats, ad_model) with the field names of Chimbuko's schema;
    /// for the file of a ROSS analysis: anomalies, entities, series_stats,
    /// metadata.
    #[arg(long, required = true)]
    json: bool,
    /// Provenance file written by `run`.
    file: PathBuf,
    /// Directory for the JSON files (created if missing).
    out: PathBuf,
}

/// Runs `inspect`.
pub fn run_inspect(a: InspectArgs) -> anyhow::Result<()> {
    if is_ross_file(&a.file)? {
        let p = RossProvenance::load(&a.file)?;
        p.print_inspect(&mut std::io::stdout().lock(), a.top)?;
        return Ok(());
    }
    let p = Provenance::load(&a.file)?;
    let stdout = std::io::stdout();
    print_inspect(&p, &mut stdout.lock(), a.top)?;
    Ok(())
}

/// Runs `export`.
pub fn run_export(a: ExportArgs) -> anyhow::Result<()> {
    let written = if is_ross_file(&a.file)? {
        RossProvenance::load(&a.file)?.export_json(&a.out)?
    } else {
        export_json(&Provenance::load(&a.file)?, &a.out)?
    };
    for (name, n) in written {
        println!("{}: {n} documents", a.out.join(name).display());
    }
    Ok(())
}
